//! `/proc/PID/status` (and `task/TID/status`): `Key:\tvalue` lines (`man 5 proc_pid_status`).
//!
//! Read for the allowed CPUs and memory nodes (the effective affinity, cpuset included), the
//! user, the thread count and the resident size. `VmRSS` is absent for kernel threads and
//! zombies (no memory map); `Kthread` exists only since Linux 6.2.

use std::path::Path;

use topo::CpuSet;

use super::{key_values, num};
use crate::error::ProcError;
use crate::{Live, Pid};

/// The fields of `status` homenode uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// `Name` (escaped by the kernel: `\n` and `\\` appear as two characters).
    pub name: String,
    /// `Tgid`: the process ID.
    pub tgid: Pid,
    /// `Pid`: the thread ID (equal to `tgid` in the process's own file).
    pub pid: Pid,
    /// `PPid`.
    pub ppid: Pid,
    /// `Uid`: real, effective, saved set, filesystem.
    pub uid: [u32; 4],
    /// `Gid`: real, effective, saved set, filesystem.
    pub gid: [u32; 4],
    /// `Threads`.
    pub threads: u32,
    /// `VmRSS` in bytes; `None` for tasks without memory (kernel threads, zombies).
    pub vm_rss_bytes: Option<u64>,
    /// `Cpus_allowed_list`: the CPUs the task may run on (its affinity within its cpuset).
    pub cpus_allowed: CpuSet,
    /// `Mems_allowed_list`: the memory nodes its cpuset allows.
    pub mems_allowed: CpuSet,
    /// `Kthread` (Linux 6.2+): `Some(true)` for kernel threads.
    pub kthread: Option<bool>,
}

impl Status {
    /// Real user ID.
    pub fn real_uid(&self) -> u32 {
        self.uid[0]
    }

    /// Effective user ID (what `ps` shows as USER).
    pub fn effective_uid(&self) -> u32 {
        self.uid[1]
    }
}

/// Parses the text of a `status` file.
pub fn parse(text: &str) -> Result<Status, crate::error::ParseError> {
    let mut name = None;
    let mut tgid = None;
    let mut pid = None;
    let mut ppid = None;
    let mut uid = None;
    let mut gid = None;
    let mut threads = None;
    let mut vm_rss_bytes = None;
    let mut cpus = None;
    let mut mems = None;
    let mut kthread = None;
    for (ln, key, v) in key_values(text) {
        let at =
            |r: crate::error::ParseError| crate::error::ParseError::from(format!("line {ln}: {r}"));
        match key {
            "Name" => name = Some(v.to_string()),
            "Tgid" => tgid = Some(num::<Pid>("Tgid", v).map_err(at)?),
            "Pid" => pid = Some(num::<Pid>("Pid", v).map_err(at)?),
            "PPid" => ppid = Some(num::<Pid>("PPid", v).map_err(at)?),
            "Uid" => uid = Some(ids("Uid", v).map_err(at)?),
            "Gid" => gid = Some(ids("Gid", v).map_err(at)?),
            "Threads" => threads = Some(num::<u32>("Threads", v).map_err(at)?),
            "VmRSS" => {
                let kb = v
                    .strip_suffix("kB")
                    .map(str::trim)
                    .ok_or_else(|| at(format!("VmRSS `{v}` is not in kB").into()))?;
                vm_rss_bytes = Some(num::<u64>("VmRSS", kb).map_err(at)?.saturating_mul(1024));
            }
            "Cpus_allowed_list" => {
                cpus = Some(
                    CpuSet::parse_list(v)
                        .map_err(|e| at(format!("Cpus_allowed_list: {e}").into()))?,
                )
            }
            "Mems_allowed_list" => {
                mems = Some(
                    CpuSet::parse_list(v)
                        .map_err(|e| at(format!("Mems_allowed_list: {e}").into()))?,
                )
            }
            "Kthread" => kthread = Some(num::<u8>("Kthread", v).map_err(at)? != 0),
            _ => {}
        }
    }
    let missing = |k: &str| format!("no `{k}:` line (truncated?)");
    Ok(Status {
        name: name.ok_or_else(|| missing("Name"))?,
        tgid: tgid.ok_or_else(|| missing("Tgid"))?,
        pid: pid.ok_or_else(|| missing("Pid"))?,
        ppid: ppid.ok_or_else(|| missing("PPid"))?,
        uid: uid.ok_or_else(|| missing("Uid"))?,
        gid: gid.ok_or_else(|| missing("Gid"))?,
        threads: threads.ok_or_else(|| missing("Threads"))?,
        vm_rss_bytes,
        cpus_allowed: cpus.ok_or_else(|| missing("Cpus_allowed_list"))?,
        mems_allowed: mems.ok_or_else(|| missing("Mems_allowed_list"))?,
        kthread,
    })
}

/// Four tab-separated IDs (`Uid:` and `Gid:` lines).
fn ids(key: &str, v: &str) -> Result<[u32; 4], crate::error::ParseError> {
    let mut out = [0u32; 4];
    let mut it = v.split_ascii_whitespace();
    for slot in &mut out {
        let f = it.next().ok_or_else(|| {
            crate::error::ParseError::from(format!("{key} `{v}` has fewer than 4 IDs"))
        })?;
        *slot = num::<u32>(key, f)?;
    }
    Ok(out)
}

/// Reads `ROOT/proc/PID/status`. `Gone` when the process has exited.
pub fn read(root: &Path, pid: Pid) -> Result<Live<Status>, ProcError> {
    super::with_dir(root, pid, |d| d.status())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "Name:\tmy worker\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\n\
        Ngid:\t0\nPid:\t4242\nPPid:\t1\nTracerPid:\t0\nUid:\t1000\t1001\t1000\t1000\n\
        Gid:\t100\t100\t100\t100\nFDSize:\t64\nVmRSS:\t   10240 kB\nThreads:\t3\n\
        Cpus_allowed:\tff\nCpus_allowed_list:\t0-3,64-67\nMems_allowed:\t3\n\
        Mems_allowed_list:\t0-1\nKthread:\t0\n";

    #[test]
    fn fields() {
        let s = parse(TEXT).expect("parses");
        assert_eq!(s.name, "my worker");
        assert_eq!((s.tgid, s.pid, s.ppid), (4242, 4242, 1));
        assert_eq!(s.real_uid(), 1000);
        assert_eq!(s.effective_uid(), 1001);
        assert_eq!(s.gid, [100; 4]);
        assert_eq!(s.threads, 3);
        assert_eq!(s.vm_rss_bytes, Some(10240 * 1024));
        assert_eq!(s.cpus_allowed.to_list_string(), "0-3,64-67");
        assert_eq!(s.mems_allowed.to_list_string(), "0-1");
        assert_eq!(s.kthread, Some(false));
    }

    #[test]
    fn kernel_thread_has_no_rss() {
        let text = TEXT
            .replace("VmRSS:\t   10240 kB\n", "")
            .replace("Kthread:\t0", "Kthread:\t1");
        let s = parse(&text).expect("parses");
        assert_eq!(s.vm_rss_bytes, None);
        assert_eq!(s.kthread, Some(true));
        let old = TEXT.replace("Kthread:\t0\n", "");
        assert_eq!(parse(&old).expect("parses").kthread, None);
    }

    #[test]
    fn malformed() {
        let e = parse(&TEXT.replace("Threads:\t3", "Threads:\tthree")).unwrap_err();
        assert!(e.contains("Threads `three`"), "{e}");
        let e = parse(&TEXT.replace("0-3,64-67", "0-x")).unwrap_err();
        assert!(e.contains("Cpus_allowed_list"), "{e}");
        let e = parse(&TEXT.replace("1000\t1001\t1000\t1000", "1000")).unwrap_err();
        assert!(e.contains("fewer than 4"), "{e}");
        let e = parse(&TEXT[..TEXT.find("Cpus_allowed_list").expect("key")]).unwrap_err();
        assert!(e.contains("no `Cpus_allowed_list:` line"), "{e}");
        let e = parse(&TEXT.replace(" 10240 kB", " 10240 pages")).unwrap_err();
        assert!(e.contains("VmRSS"), "{e}");
        assert!(parse("").unwrap_err().contains("Name"));
    }
}
