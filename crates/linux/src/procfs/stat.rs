//! `/proc/PID/stat` and `/proc/PID/task/TID/stat`: one line of space-separated fields
//! (`man 5 proc_pid_stat`).
//!
//! For a process, the CPU times count every thread, living or exited; `processor` is the main
//! thread's. For a thread (`task/TID/stat`) every field is the thread's own.
//!
//! The second field, `comm`, is in parentheses and may itself hold spaces, parentheses and
//! even newlines or bytes that are not UTF-8 (a process names itself as it likes with
//! `prctl(PR_SET_NAME)`): it runs from the first `(` to the *last* `)` of the line, and the
//! file is parsed as bytes.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::ProcError;
use crate::{Live, Pid, Tid};

/// `PF_KTHREAD` in the `flags` field: the task is a kernel thread.
pub const PF_KTHREAD: u32 = 0x0020_0000;

/// Whether a task is a kernel thread: `PF_KTHREAD` set, or `kthreadd` (PID 2) or one of its
/// children. The one definition homenode uses (the scanner, the daemon's light pass and the
/// exclusion rules all ask here).
pub fn is_kernel_thread(pid: Pid, ppid: Pid, flags: u32) -> bool {
    flags & PF_KTHREAD != 0 || pid == 2 || ppid == 2
}

/// A scheduling policy (field 41 of `stat`, `SCHED_*` of `sched.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SchedPolicy {
    /// `SCHED_OTHER` (`SCHED_NORMAL`), 0.
    Other,
    /// `SCHED_FIFO`, 1: real time.
    Fifo,
    /// `SCHED_RR`, 2: real time.
    RoundRobin,
    /// `SCHED_BATCH`, 3.
    Batch,
    /// `SCHED_IDLE`, 5.
    Idle,
    /// `SCHED_DEADLINE`, 6: real time.
    Deadline,
    /// `SCHED_EXT`, 7: a BPF scheduler (sched_ext).
    Ext,
    /// A number this version does not know.
    Unknown(u32),
}

impl SchedPolicy {
    pub fn from_raw(v: u32) -> SchedPolicy {
        match v {
            0 => SchedPolicy::Other,
            1 => SchedPolicy::Fifo,
            2 => SchedPolicy::RoundRobin,
            3 => SchedPolicy::Batch,
            5 => SchedPolicy::Idle,
            6 => SchedPolicy::Deadline,
            7 => SchedPolicy::Ext,
            n => SchedPolicy::Unknown(n),
        }
    }

    /// `SCHED_FIFO`, `SCHED_RR` or `SCHED_DEADLINE`.
    pub fn is_realtime(self) -> bool {
        matches!(
            self,
            SchedPolicy::Fifo | SchedPolicy::RoundRobin | SchedPolicy::Deadline
        )
    }
}

impl fmt::Display for SchedPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedPolicy::Other => f.write_str("SCHED_OTHER"),
            SchedPolicy::Fifo => f.write_str("SCHED_FIFO"),
            SchedPolicy::RoundRobin => f.write_str("SCHED_RR"),
            SchedPolicy::Batch => f.write_str("SCHED_BATCH"),
            SchedPolicy::Idle => f.write_str("SCHED_IDLE"),
            SchedPolicy::Deadline => f.write_str("SCHED_DEADLINE"),
            SchedPolicy::Ext => f.write_str("SCHED_EXT"),
            SchedPolicy::Unknown(n) => write!(f, "policy {n}"),
        }
    }
}

/// The fields of `stat` homenode uses. Times are in clock ticks (`sysconf(_SC_CLK_TCK)`,
/// 100 per second on every mainstream configuration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Field 1: the PID (the TID in a thread's file).
    pub pid: Pid,
    /// Field 2, without the parentheses; bytes that are not UTF-8 are replaced.
    pub comm: String,
    /// Field 3: `R`, `S`, `D`, `Z`, `T`, `t`, `X`, `I`, ...
    pub state: char,
    /// Field 4: parent PID (0 for PID 1 and PID 2).
    pub ppid: Pid,
    /// Field 9: `PF_*` flags; [`PF_KTHREAD`] marks kernel threads.
    pub flags: u32,
    /// Field 10: minor faults.
    pub minflt: u64,
    /// Field 12: major faults.
    pub majflt: u64,
    /// Field 14: user time, ticks.
    pub utime: u64,
    /// Field 15: system time, ticks.
    pub stime: u64,
    /// Field 19: nice value, -20..19.
    pub nice: i32,
    /// Field 20: threads in the process.
    pub num_threads: u32,
    /// Field 22: start time after boot, ticks. With the PID it names a process uniquely
    /// across PID reuse.
    pub starttime: u64,
    /// Field 39: the CPU the task last ran on (kernel numbering).
    pub processor: usize,
    /// Field 40: real-time priority, 1..99 for real-time policies, else 0.
    pub rt_priority: u32,
    /// Field 41: scheduling policy.
    pub policy: SchedPolicy,
}

impl Stat {
    /// A kernel thread ([`is_kernel_thread`]).
    pub fn is_kernel_thread(&self) -> bool {
        is_kernel_thread(self.pid, self.ppid, self.flags)
    }

    /// User plus system time, ticks.
    pub fn cpu_ticks(&self) -> u64 {
        self.utime.saturating_add(self.stime)
    }
}

/// Parses the text of a `stat` file.
pub fn parse(text: &[u8]) -> Result<Stat, crate::error::ParseError> {
    let open = text
        .iter()
        .position(|&b| b == b'(')
        .ok_or("no `(` opening the command name")?;
    let close = text
        .iter()
        .rposition(|&b| b == b')')
        .filter(|&c| c > open)
        .ok_or("no `)` closing the command name (truncated?)")?;
    let head = std::str::from_utf8(&text[..open]).map_err(|_| "pid is not ASCII")?;
    let pid = head.trim().parse::<Pid>().map_err(|_| {
        crate::error::ParseError::from(format!("pid `{}` is not a number", head.trim()))
    })?;
    let comm = String::from_utf8_lossy(&text[open + 1..close]).into_owned();
    let rest = std::str::from_utf8(&text[close + 1..])
        .map_err(|_| "fields after the command name are not ASCII")?;
    // Field k is rest[k - 3].
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let field = |k: usize| -> Result<&str, crate::error::ParseError> {
        fields.get(k - 3).copied().ok_or_else(|| {
            crate::error::ParseError::from(format!(
                "only {} fields, field {k} missing (truncated?)",
                fields.len() + 2
            ))
        })
    };
    fn parse_num<T: std::str::FromStr>(
        k: usize,
        name: &str,
        v: &str,
    ) -> Result<T, crate::error::ParseError> {
        v.parse::<T>().map_err(|_| {
            crate::error::ParseError::from(format!("field {k} ({name}) `{v}` is not a number"))
        })
    }
    let num = |k: usize, name: &str| -> Result<u64, crate::error::ParseError> {
        parse_num(k, name, field(k)?)
    };
    let state_field = field(3)?;
    let mut chars = state_field.chars();
    let state = match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() => c,
        _ => {
            return Err(crate::error::ParseError::from(format!(
                "field 3 (state) `{state_field}` is not a state letter"
            )));
        }
    };
    let small = |k: usize, name: &str| -> Result<u32, crate::error::ParseError> {
        u32::try_from(num(k, name)?)
            .map_err(|_| crate::error::ParseError::from(format!("field {k} ({name}) out of range")))
    };
    Ok(Stat {
        pid,
        comm,
        state,
        ppid: small(4, "ppid")?,
        flags: small(9, "flags")?,
        minflt: num(10, "minflt")?,
        majflt: num(12, "majflt")?,
        utime: num(14, "utime")?,
        stime: num(15, "stime")?,
        nice: parse_num(19, "nice", field(19)?)?,
        num_threads: small(20, "num_threads")?,
        starttime: num(22, "starttime")?,
        processor: usize::try_from(num(39, "processor")?)
            .map_err(|_| "field 39 (processor) out of range".to_string())?,
        rt_priority: small(40, "rt_priority")?,
        policy: SchedPolicy::from_raw(small(41, "policy")?),
    })
}

/// Reads `ROOT/proc/PID/stat`. `Gone` when the process has exited.
pub fn read(root: &Path, pid: Pid) -> Result<Live<Stat>, ProcError> {
    super::with_dir(root, pid, |d| d.stat())
}

/// Reads `ROOT/proc/PID/task/TID/stat`. `Gone` when the thread or the process has exited.
pub fn read_task(root: &Path, pid: Pid, tid: Tid) -> Result<Live<Stat>, ProcError> {
    super::with_dir(root, pid, |d| d.task_stat(tid))
}

/// `ROOT/proc/PID/stat`.
pub fn path(root: &Path, pid: Pid) -> PathBuf {
    super::proc_dir(root).join(pid.to_string()).join("stat")
}

/// One `stat` file kept open and re-read in place (`pread` at offset 0) at each call: cheaper
/// than opening it each time (about 3 us instead of 8 us per read on a 6.x kernel), for a
/// sampler that reads the same few processes every few milliseconds. The file is opened by
/// path, without a [`ProcDir`](super::ProcDir): once open, it stays the file of the process
/// it was opened for.
#[derive(Debug)]
pub struct StatReader {
    path: PathBuf,
    file: Option<std::fs::File>,
    buf: Vec<u8>,
}

/// The longest `stat` file the reader accepts.
pub(crate) const MAX_STAT_BYTES: u64 = 1 << 16;

impl StatReader {
    /// A reader of the file at `path` (opened at the first read).
    pub fn new(path: PathBuf) -> Self {
        StatReader {
            path,
            file: None,
            buf: Vec::with_capacity(1024),
        }
    }

    /// A reader of `ROOT/proc/PID/stat`.
    pub fn of_pid(root: &Path, pid: Pid) -> Self {
        StatReader::new(path(root, pid))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads and parses the file again. `Gone` when the process has exited (the file cannot
    /// be opened or read, or reads empty).
    pub fn read(&mut self) -> Result<Live<Stat>, ProcError> {
        use std::os::unix::fs::FileExt as _;
        if self.file.is_none() {
            match topo::input::open_regular(&self.path) {
                Ok(f) => self.file = Some(f),
                Err(e) if e.io_error().is_some_and(super::is_gone) => return Ok(Live::Gone),
                Err(e) => return Err(super::input_error(e)),
            }
        }
        let Some(f) = &self.file else {
            return Ok(Live::Gone);
        };
        self.buf.clear();
        let mut chunk = [0u8; 1024];
        loop {
            match f.read_at(&mut chunk, self.buf.len() as u64) {
                Ok(0) => break,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if super::is_gone(&e) => return Ok(Live::Gone),
                Err(e) => return Err(ProcError::io(&self.path, e)),
            }
            if self.buf.len() as u64 > MAX_STAT_BYTES {
                return Err(ProcError::parse(&self.path, "longer than 64 KiB"));
            }
        }
        if self.buf.is_empty() {
            return Ok(Live::Gone);
        }
        parse(&self.buf)
            .map(Live::Alive)
            .map_err(|r| ProcError::parse(&self.path, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NORMAL: &str = "1234 (bash) S 1000 1234 1234 34816 1235 4194560 1953 18260 0 3 4 2 \
        11 6 20 0 1 0 5011 9875456 1280 18446744073709551615 94 95 140 0 0 0 65536 3686404 \
        1266761467 0 0 0 17 1 0 0 0 0 0 96 97 98 140 141 142 143 0\n";

    #[test]
    fn normal_line() {
        let s = parse(NORMAL.as_bytes()).expect("parses");
        assert_eq!(s.pid, 1234);
        assert_eq!(s.comm, "bash");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1000);
        assert_eq!(s.flags, 4194560);
        assert!(!s.is_kernel_thread());
        assert_eq!((s.minflt, s.majflt), (1953, 0));
        assert_eq!((s.utime, s.stime), (4, 2));
        assert_eq!(s.nice, 0);
        assert_eq!(s.num_threads, 1);
        assert_eq!(s.starttime, 5011);
        assert_eq!(s.processor, 1);
        assert_eq!(s.rt_priority, 0);
        assert_eq!(s.policy, SchedPolicy::Other);
        assert_eq!(s.cpu_ticks(), 6);
    }

    #[test]
    fn comm_with_spaces_parentheses_newline_and_bad_utf8() {
        let line = NORMAL.replace("(bash)", "(a) b (c\nd)");
        let s = parse(line.as_bytes()).expect("parses");
        assert_eq!(s.comm, "a) b (c\nd");
        assert_eq!(s.starttime, 5011);
        let mut bytes = NORMAL.replace("(bash)", "(x\u{1}y)").into_bytes();
        let at = bytes.iter().position(|&b| b == 1).expect("marker");
        bytes[at] = 0xff;
        let s = parse(&bytes).expect("parses");
        assert_eq!(s.comm, "x\u{fffd}y");
        let s = parse(NORMAL.replace("(bash)", "()").as_bytes()).expect("empty comm");
        assert_eq!(s.comm, "");
    }

    #[test]
    fn kernel_thread_and_realtime() {
        // migration/0, captured on a 6.x kernel: PF_KTHREAD, SCHED_FIFO priority 99.
        let line = "18 (migration/0) S 2 0 0 0 -1 69238848 0 0 0 0 0 196 0 0 -100 0 1 0 3 0 0 \
            18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 99 1 0 0 0 0 0 0 0 0 0 0 0\n";
        let s = parse(line.as_bytes()).expect("parses");
        assert!(s.is_kernel_thread());
        assert_eq!(s.policy, SchedPolicy::Fifo);
        assert!(s.policy.is_realtime());
        assert_eq!(s.rt_priority, 99);
        assert_eq!(s.nice, 0);
    }

    #[test]
    fn malformed() {
        let err = |t: &str| parse(t.as_bytes()).unwrap_err();
        assert!(err("").contains("no `(`"));
        assert!(err("12 (bash S 1").contains("no `)`"));
        assert!(err("x (bash) S 1").contains("pid `x`"));
        assert!(err("12 (bash) S 1 2 3").contains("field 9 missing"));
        assert!(err("12 (bash) SS 1").contains("state"));
        let truncated = &NORMAL[..NORMAL.len() / 2];
        assert!(err(truncated).contains("missing"), "{}", err(truncated));
        let bad = NORMAL.replace(" 5011 ", " 50x1 ");
        assert!(err(&bad).contains("field 22 (starttime) `50x1`"));
        assert!(SchedPolicy::from_raw(42) == SchedPolicy::Unknown(42));
    }
}
