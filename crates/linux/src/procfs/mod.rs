//! Readers of `/proc`, one module per file, each returning the raw sample the kernel wrote.
//!
//! | Reader | File (under `ROOT/proc/`) | Cost | Absent when |
//! | --- | --- | --- | --- |
//! | [`stat`] | `PID/stat`, `PID/task/TID/stat`; [`stat::StatReader`] keeps one open and re-reads it in place | cheap (one short line) | never: a process always has it |
//! | [`status`] | `PID/status`, `PID/task/TID/status` | cheap, about 3x `stat` | never |
//! | [`comm`](ProcDir::comm) | `PID/comm` | cheap | never |
//! | [`cgroup`] | `PID/cgroup`; `self/mountinfo`; `sys/fs/cgroup/.../cpuset.*` | cheap; the cpuset files once per distinct cgroup | `cgroup`: kernels without cgroups; cpuset files: no cpuset controller |
//! | [`numa_maps`] | `PID/numa_maps` | **costly**: the kernel walks every page table of the process (milliseconds for a process of many GB); read only for candidates | kernels without `CONFIG_NUMA` |
//! | [`maps`] | `PID/maps` | moderate: one line per mapping, no page walk | never |
//! | [`sched`] | `PID/sched` | moderate (about 40 lines) | kernels without `CONFIG_SCHED_DEBUG`; the NUMA lines without `CONFIG_NUMA_BALANCING` |
//! | [`schedstat`] | `PID/task/TID/schedstat` | cheap (one short line) | kernels without `CONFIG_SCHED_INFO` |
//! | [`uptime`] | `uptime` | cheap, machine-wide | never |
//! | [`cpustat`] | `stat` (machine-wide) | cheap: one line per CPU | never |
//! | [`meminfo`] | `meminfo` | cheap, machine-wide | never (`MemAvailable` before 3.14: `MemFree` instead) |
//! | [`read_sysctl`], [`numa_balancing_on`] | `sys/...` (one value) | cheap | the files of options the kernel lacks |
//! | [`vmstat`] | `vmstat` | cheap, machine-wide | the `numa_*` lines without `CONFIG_NUMA`, the hint-fault lines without `CONFIG_NUMA_BALANCING` |
//! | [`list_pids`] / [`ProcDir::tids`] | `ROOT/proc/`, `PID/task/` | one `getdents` per 100 or so entries | never |
//!
//! Every parser takes the file's text and returns a one-line reason on malformed input; every
//! reader adds the full path ([`ProcError`]). Fields newer kernels add are ignored, so a newer
//! kernel does not break a reader.
//!
//! A process's files are read through [`ProcDir`], a directory handle on `ROOT/proc/PID`
//! opened once: files are then opened relative to it (`openat`), so once the process has
//! exited and its PID is reused, the old handle yields ENOENT/ESRCH ([`Live::Gone`]) instead of
//! the new process's files.

pub mod cgroup;
pub mod cpustat;
pub mod loadavg;
pub mod maps;
pub mod meminfo;
pub mod numa_maps;
pub mod sched;
pub mod schedstat;
pub mod stat;
pub mod status;
pub mod uptime;
pub mod vmstat;

use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use nix::dir::Dir;
use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::Mode;

use crate::error::ProcError;
pub use topo::input::MAX_KERNEL_FILE_BYTES;

/// Bytes read from one file of a process (`PID/maps`, `PID/numa_maps`, ...). The longest is
/// `numa_maps`: one line per mapping (at most `vm.max_map_count`, 65,530 by default), each
/// under about 1 KiB even with a count for many nodes.
pub const MAX_PROC_FILE_BYTES: u64 = 64 << 20;
use crate::{Live, Pid, Tid};

pub use cgroup::{CgroupMounts, Cpuset, ProcCgroup};
pub use maps::Mapping;
pub use numa_maps::{NumaMapping, NumaMaps};
pub use sched::SchedNuma;
pub use schedstat::Schedstat;
pub use stat::Stat;
pub use status::Status;
pub use vmstat::NumaCounters;

/// Whether an I/O error means that the process (or thread) has gone away.
pub fn is_gone(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH))
        || e.kind() == io::ErrorKind::NotFound
}

/// `ROOT/proc`.
pub fn proc_dir(root: &Path) -> PathBuf {
    root.join("proc")
}

/// The PIDs (thread group IDs) listed in `ROOT/proc`, ascending. Threads other than the main
/// one are not listed there (they are hidden under `PID/task/`).
pub fn list_pids(root: &Path) -> Result<Vec<Pid>, ProcError> {
    let dir = proc_dir(root);
    let mut pids = Vec::new();
    let entries = std::fs::read_dir(&dir).map_err(|e| ProcError::io(&dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| ProcError::io(&dir, e))?;
        if let Some(pid) = parse_id(entry.file_name().as_bytes()) {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    Ok(pids)
}

/// A numeric directory name (`1234`), as PIDs and TIDs are listed.
fn parse_id(name: &[u8]) -> Option<u32> {
    if name.is_empty() || name.len() > 10 || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(name).ok()?.parse().ok()
}

fn errno_to_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// A handle on one process's directory, `ROOT/proc/PID` (or a thread's,
/// `ROOT/proc/PID/task/TID`), through which its files are read.
#[derive(Debug)]
pub struct ProcDir {
    pid: Pid,
    path: PathBuf,
    dir: OwnedFd,
}

impl ProcDir {
    /// Opens `ROOT/proc/PID`. `Gone` when there is no such process.
    pub fn open(root: &Path, pid: Pid) -> Result<Live<ProcDir>, ProcError> {
        let path = proc_dir(root).join(pid.to_string());
        match File::open(&path) {
            Ok(f) => Ok(Live::Alive(ProcDir {
                pid,
                path,
                dir: OwnedFd::from(f),
            })),
            Err(e) if is_gone(&e) => Ok(Live::Gone),
            Err(e) => Err(ProcError::io(&path, e)),
        }
    }

    /// Opens the directory of thread `tid` of this process, `task/TID`. `Gone` when the
    /// thread (or the process) has exited.
    pub fn open_task(&self, tid: Tid) -> Result<Live<ProcDir>, ProcError> {
        let rel = format!("task/{tid}");
        let path = self.path.join(&rel);
        match openat(
            &self.dir,
            rel.as_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(dir) => Ok(Live::Alive(ProcDir {
                pid: tid,
                path,
                dir,
            })),
            Err(e) => {
                let e = errno_to_io(e);
                if is_gone(&e) {
                    Ok(Live::Gone)
                } else {
                    Err(ProcError::io(&path, e))
                }
            }
        }
    }

    /// The PID (or, for a thread's directory, the TID).
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The directory's path, `ROOT/proc/PID` (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The full path of one of the directory's files (for messages).
    pub fn file_path(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Reads the whole file `name` (relative to the directory) into `buf` (cleared first).
    /// `Gone` when the file cannot be opened or read because the process exited, or when a
    /// file that is never empty (`never_empty`) reads empty (a process exiting while read).
    /// Only a regular file is opened (a FIFO or a device in a rooted tree is refused without
    /// blocking), and at most [`MAX_PROC_FILE_BYTES`] are read: the kernel reports these
    /// files' size as 0, so the bound is on the bytes read.
    pub fn read_file(
        &self,
        name: &str,
        buf: &mut Vec<u8>,
        never_empty: bool,
    ) -> Result<Live<()>, ProcError> {
        buf.clear();
        let path = || self.file_path(name);
        let gone_or = |e: Errno| {
            let e = errno_to_io(e);
            if is_gone(&e) {
                Ok(Live::Gone)
            } else {
                Err(ProcError::io(&path(), e))
            }
        };
        // Checked before opening (opening a device can have effects) and on the descriptor.
        match nix::sys::stat::fstatat(&self.dir, name, nix::fcntl::AtFlags::empty()) {
            Ok(st) => regular_mode(st.st_mode).map_err(|why| ProcError::parse(&path(), why))?,
            Err(e) => return gone_or(e),
        }
        let fd = match openat(
            &self.dir,
            name,
            OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(e) => return gone_or(e),
        };
        let f = File::from(fd);
        match f.metadata() {
            Ok(m) => topo::input::check_regular(&path(), m.file_type()).map_err(input_error)?,
            Err(e) => return Err(ProcError::io(&path(), e)),
        }
        match f.take(MAX_PROC_FILE_BYTES + 1).read_to_end(buf) {
            Ok(_) => {}
            Err(e) if is_gone(&e) => return Ok(Live::Gone),
            Err(e) => return Err(ProcError::io(&path(), e)),
        }
        if buf.len() as u64 > MAX_PROC_FILE_BYTES {
            buf.clear();
            return Err(ProcError::parse(
                &path(),
                format!("longer than the {MAX_PROC_FILE_BYTES}-byte limit"),
            ));
        }
        if never_empty && buf.is_empty() {
            return Ok(Live::Gone);
        }
        Ok(Live::Alive(()))
    }

    /// Like [`read_file`](Self::read_file) for a file that some kernels do not have:
    /// `Alive(false)` when the file does not exist although the process does.
    pub fn read_optional_file(
        &self,
        name: &str,
        buf: &mut Vec<u8>,
    ) -> Result<Live<bool>, ProcError> {
        match self.read_file(name, buf, false)? {
            Live::Alive(()) => Ok(Live::Alive(true)),
            Live::Gone => {
                // ENOENT: either the file does not exist on this kernel, or the process has
                // gone. `stat` exists for every live task.
                if self.exists("stat") {
                    Ok(Live::Alive(false))
                } else {
                    Ok(Live::Gone)
                }
            }
        }
    }

    fn exists(&self, name: &str) -> bool {
        nix::sys::stat::fstatat(&self.dir, name, nix::fcntl::AtFlags::empty()).is_ok()
    }

    fn read_text(&self, name: &str, never_empty: bool) -> Result<Live<String>, ProcError> {
        let mut buf = Vec::new();
        Ok(self
            .read_file(name, &mut buf, never_empty)?
            .map(|()| String::from_utf8_lossy(&buf).into_owned()))
    }

    /// `stat` (of the process, or of the thread for a task directory).
    pub fn stat(&self) -> Result<Live<Stat>, ProcError> {
        self.stat_file("stat", &mut Vec::new())
    }

    /// `stat` of thread `tid`: `task/TID/stat`.
    pub fn task_stat(&self, tid: Tid) -> Result<Live<Stat>, ProcError> {
        self.stat_file(&format!("task/{tid}/stat"), &mut Vec::new())
    }

    /// Reads and parses a `stat` file relative to this directory (`stat`, `task/TID/stat`),
    /// with a caller's buffer so that a scan does not allocate per file.
    pub fn stat_file(&self, name: &str, buf: &mut Vec<u8>) -> Result<Live<Stat>, ProcError> {
        match self.read_file(name, buf, true)? {
            Live::Alive(()) => stat::parse(buf)
                .map(Live::Alive)
                .map_err(|r| ProcError::parse(&self.file_path(name), r)),
            Live::Gone => Ok(Live::Gone),
        }
    }

    /// `status`.
    pub fn status(&self) -> Result<Live<Status>, ProcError> {
        self.parsed("status", true, status::parse)
    }

    /// `status` of thread `tid`: `task/TID/status` (its own `Cpus_allowed_list`).
    pub fn task_status(&self, tid: Tid) -> Result<Live<Status>, ProcError> {
        self.parsed(&format!("task/{tid}/status"), true, status::parse)
    }

    /// `comm`: the command name (at most 15 bytes, without the newline).
    pub fn comm(&self) -> Result<Live<String>, ProcError> {
        let name = "comm";
        Ok(self
            .read_text(name, true)?
            .map(|s| s.strip_suffix('\n').unwrap_or(&s).to_string()))
    }

    /// `cgroup`; `Alive(None)` on a kernel without cgroups.
    pub fn cgroup(&self) -> Result<Live<Option<ProcCgroup>>, ProcError> {
        self.parsed_optional("cgroup", cgroup::parse)
    }

    /// `numa_maps`; `Alive(None)` on a kernel without NUMA support. **Costly**: see the
    /// [module documentation](self).
    pub fn numa_maps(&self) -> Result<Live<Option<NumaMaps>>, ProcError> {
        self.parsed_optional("numa_maps", numa_maps::parse)
    }

    /// `maps`: the address ranges of the process's mappings.
    pub fn maps(&self) -> Result<Live<Vec<Mapping>>, ProcError> {
        self.parsed("maps", false, maps::parse)
    }

    /// The NUMA balancing figures of `sched`; `Alive(None)` when the kernel has no such file.
    pub fn sched(&self) -> Result<Live<Option<SchedNuma>>, ProcError> {
        self.parsed_optional("sched", sched::parse)
    }

    /// `schedstat` (the main thread's run time and run-queue wait); `Alive(None)` when the
    /// kernel has no such file.
    pub fn schedstat(&self) -> Result<Live<Option<Schedstat>>, ProcError> {
        self.parsed_optional("schedstat", schedstat::parse)
    }

    /// `schedstat` of thread `tid`: `task/TID/schedstat`.
    pub fn task_schedstat(&self, tid: Tid) -> Result<Live<Option<Schedstat>>, ProcError> {
        self.parsed_optional(&format!("task/{tid}/schedstat"), schedstat::parse)
    }

    /// The thread IDs listed in `task/`, ascending.
    pub fn tids(&self) -> Result<Live<Vec<Tid>>, ProcError> {
        let path = self.file_path("task");
        let mut dir = match Dir::openat(
            &self.dir,
            "task",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(d) => d,
            Err(e) => {
                let e = errno_to_io(e);
                return if is_gone(&e) {
                    Ok(Live::Gone)
                } else {
                    Err(ProcError::io(&path, e))
                };
            }
        };
        let mut tids = Vec::new();
        for entry in dir.iter() {
            match entry {
                Ok(entry) => {
                    if let Some(tid) = parse_id(entry.file_name().to_bytes()) {
                        tids.push(tid);
                    }
                }
                Err(e) => {
                    let e = errno_to_io(e);
                    return if is_gone(&e) {
                        Ok(Live::Gone)
                    } else {
                        Err(ProcError::io(&path, e))
                    };
                }
            }
        }
        tids.sort_unstable();
        Ok(Live::Alive(tids))
    }

    fn parsed<T>(
        &self,
        name: &str,
        never_empty: bool,
        parse: impl FnOnce(&str) -> Result<T, crate::error::ParseError>,
    ) -> Result<Live<T>, ProcError> {
        match self.read_text(name, never_empty)? {
            Live::Alive(text) => parse(&text)
                .map(Live::Alive)
                .map_err(|r| ProcError::parse(&self.file_path(name), r)),
            Live::Gone => Ok(Live::Gone),
        }
    }

    fn parsed_optional<T>(
        &self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, crate::error::ParseError>,
    ) -> Result<Live<Option<T>>, ProcError> {
        let mut buf = Vec::new();
        match self.read_optional_file(name, &mut buf)? {
            Live::Alive(true) => parse(&String::from_utf8_lossy(&buf))
                .map(|t| Live::Alive(Some(t)))
                .map_err(|r| ProcError::parse(&self.file_path(name), r)),
            Live::Alive(false) => Ok(Live::Alive(None)),
            Live::Gone => Ok(Live::Gone),
        }
    }
}

/// Reads `ROOT/proc/PID/comm`. `Gone` when the process has exited.
pub fn read_comm(root: &Path, pid: Pid) -> Result<Live<String>, ProcError> {
    match ProcDir::open(root, pid)? {
        Live::Alive(d) => d.comm(),
        Live::Gone => Ok(Live::Gone),
    }
}

/// Reads `ROOT/proc/PID/task/` and returns the thread IDs. `Gone` when the process has
/// exited.
pub fn list_tids(root: &Path, pid: Pid) -> Result<Live<Vec<Tid>>, ProcError> {
    match ProcDir::open(root, pid)? {
        Live::Alive(d) => d.tids(),
        Live::Gone => Ok(Live::Gone),
    }
}

/// Opens `ROOT/proc/PID` and applies `f` to it; `Gone` when the process does not exist.
pub(crate) fn with_dir<T>(
    root: &Path,
    pid: Pid,
    f: impl FnOnce(&ProcDir) -> Result<Live<T>, ProcError>,
) -> Result<Live<T>, ProcError> {
    match ProcDir::open(root, pid)? {
        Live::Alive(d) => f(&d),
        Live::Gone => Ok(Live::Gone),
    }
}

/// Reads a whole file that is not a process's (`ROOT/proc/vmstat`, a sysfs file) as text:
/// a regular file, at most [`MAX_KERNEL_FILE_BYTES`] read ([`topo::input::read_kernel_file`]:
/// a FIFO or a device in a rooted tree is refused without blocking). `Ok(None)` when it
/// does not exist.
pub(crate) fn read_optional_text(path: &Path) -> Result<Option<String>, ProcError> {
    match topo::input::read_kernel_file(path, MAX_KERNEL_FILE_BYTES) {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(input_error(e)),
    }
}

/// [`read_optional_text`] of a file that must exist.
pub(crate) fn read_kernel_text(path: &Path) -> Result<String, ProcError> {
    topo::input::read_kernel_file(path, MAX_KERNEL_FILE_BYTES)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(input_error)
}

/// Refuses a file mode other than a regular file, naming what it is.
fn regular_mode(mode: libc::mode_t) -> Result<(), String> {
    let what = match mode & libc::S_IFMT {
        libc::S_IFREG => return Ok(()),
        libc::S_IFIFO => "a FIFO",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFDIR => "a directory",
        libc::S_IFSOCK => "a socket",
        _ => "of an unknown type",
    };
    Err(format!("not a regular file ({what})"))
}

/// An input error as a [`ProcError`]: a refusal (not a regular file, too long) reads as a
/// malformed file.
pub(crate) fn input_error(e: topo::input::InputError) -> ProcError {
    match e {
        topo::input::InputError::Io { path, error } => ProcError::Io { path, error },
        topo::input::InputError::Refused { path, why } => ProcError::parse(&path, why),
    }
}

/// The value of one sysctl, `ROOT/proc/sys/NAME` (`name` as `kernel/osrelease`), trimmed;
/// `None` when the file cannot be read (a kernel without that option).
pub fn read_sysctl(root: &Path, name: &str) -> Option<String> {
    read_optional_text(&proc_dir(root).join("sys").join(name))
        .ok()
        .flatten()
        .map(|s| s.trim().to_string())
}

/// Whether the kernel's automatic NUMA balancing migrates pages between nodes:
/// `kernel.numa_balancing` with bit 0 (`NUMA_BALANCING_NORMAL`) set. Mode 2 alone
/// (`NUMA_BALANCING_MEMORY_TIERING`) promotes pages from slow memory tiers only; a missing or
/// unreadable file (a kernel without the option) is off.
pub fn numa_balancing_on(root: &Path) -> bool {
    read_sysctl(root, "kernel/numa_balancing")
        .and_then(|v| v.parse::<u32>().ok())
        .is_some_and(|v| v & 1 != 0)
}

/// Splits `key:\tvalue` lines (as in `status`) into (key, value-trimmed) pairs.
pub(crate) fn key_values(text: &str) -> impl Iterator<Item = (usize, &str, &str)> {
    text.lines().enumerate().filter_map(|(i, l)| {
        let (k, v) = l.split_once(':')?;
        Some((i + 1, k.trim(), v.trim()))
    })
}

/// Parses an unsigned decimal number, with a reason naming the field on failure.
pub(crate) fn num<T: std::str::FromStr>(
    field: &str,
    v: &str,
) -> Result<T, crate::error::ParseError> {
    v.parse::<T>()
        .map_err(|_| crate::error::ParseError::from(format!("{field} `{v}` is not a number")))
}
