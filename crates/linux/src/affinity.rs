//! CPU affinity of threads, with masks of any size (`sched_getaffinity(2)`,
//! `sched_setaffinity(2)` through the private `sys` module, not glibc's 1024-bit `cpu_set_t`).
//!
//! Affinity is per *thread*: a process's threads each have their own mask, and a new thread
//! inherits its creator's. [`set_process_affinity`] therefore sets every thread listed in
//! `/proc/PID/task`, and lists again until no new thread shows up, so that a thread created
//! during the pass is not left behind (a thread created after the last listing inherits the
//! new mask from an already-set creator, or is picked up at the next call).
//!
//! The kernel intersects the requested mask with the task's cpuset and refuses (EINVAL, here
//! [`SysError::InvalidCpus`]) a mask with no online CPU that the cpuset allows. Bits beyond
//! the kernel's CPU count are ignored. CPU numbers are the kernel's.

use std::collections::BTreeMap;
use std::path::Path;

use nix::errno::Errno;
use topo::CpuSet;

use crate::error::{Error, SysError};
use crate::procfs::ProcDir;
use crate::{Live, Pid, Tid, sys};

/// The calling thread's ID (`gettid(2)`).
pub fn current_tid() -> Tid {
    nix::unistd::gettid().as_raw() as Tid
}

/// A PID or TID as the kernel's `pid_t`; 0 (the caller, for the kernel) is refused so that a
/// missing ID never silently targets the daemon itself.
pub(crate) fn to_pid_t(op: &'static str, id: u32) -> Result<libc::pid_t, SysError> {
    match libc::pid_t::try_from(id) {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(SysError::InvalidArgument {
            op,
            reason: format!("{id} is not a valid process or thread ID"),
        }),
    }
}

/// The affinity of thread `tid` (any thread of any process; the main thread's TID is the
/// PID). `Gone` when there is no such thread.
pub fn get_affinity(tid: Tid) -> Result<Live<CpuSet>, SysError> {
    const OP: &str = "sched_getaffinity";
    match sys::sched_getaffinity(to_pid_t(OP, tid)?) {
        Ok(set) => Ok(Live::Alive(set)),
        Err(Errno::ESRCH) => Ok(Live::Gone),
        Err(e) => Err(SysError::from_errno(OP, tid, e)),
    }
}

/// Sets the affinity of thread `tid`. `Gone` when there is no such thread.
pub fn set_affinity(tid: Tid, cpus: &CpuSet) -> Result<Live<()>, SysError> {
    const OP: &str = "sched_setaffinity";
    let t = to_pid_t(OP, tid)?;
    if cpus.is_empty() {
        return Err(SysError::InvalidCpus {
            op: OP,
            pid: tid,
            mask: String::new(),
        });
    }
    match sys::sched_setaffinity(t, cpus) {
        Ok(()) => Ok(Live::Alive(())),
        Err(Errno::ESRCH) => Ok(Live::Gone),
        Err(Errno::EINVAL) => Err(SysError::InvalidCpus {
            op: OP,
            pid: tid,
            mask: cpus.to_list_string(),
        }),
        Err(e) => Err(SysError::from_errno(OP, tid, e)),
    }
}

/// The affinity of every thread of process `pid` (threads listed in `ROOT/proc/PID/task`).
/// Threads that exit meanwhile are left out; `Gone` when the process has exited.
pub fn process_affinities(root: &Path, pid: Pid) -> Result<Live<BTreeMap<Tid, CpuSet>>, Error> {
    let Live::Alive(dir) = ProcDir::open(root, pid)? else {
        return Ok(Live::Gone);
    };
    let Live::Alive(tids) = dir.tids()? else {
        return Ok(Live::Gone);
    };
    let mut out = BTreeMap::new();
    for tid in tids {
        if let Live::Alive(set) = get_affinity(tid)? {
            out.insert(tid, set);
        }
    }
    if out.is_empty() {
        return Ok(Live::Gone);
    }
    Ok(Live::Alive(out))
}

/// What [`set_process_affinity`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadsSet {
    /// Threads whose affinity was set.
    pub set: Vec<Tid>,
    /// Threads that exited before they could be set.
    pub gone: Vec<Tid>,
}

/// Listings of `task/` tried before giving up on catching every new thread.
const MAX_PASSES: usize = 4;

/// Sets the affinity of every thread of process `pid`, listing its threads again after each
/// pass until no new one appears (at most 4 passes). `Gone` when the process has exited; an
/// error from any thread stops the pass (threads already set keep the new mask: the caller's
/// journal holds their originals).
pub fn set_process_affinity(
    root: &Path,
    pid: Pid,
    cpus: &CpuSet,
) -> Result<Live<ThreadsSet>, Error> {
    let Live::Alive(dir) = ProcDir::open(root, pid)? else {
        return Ok(Live::Gone);
    };
    let mut done = ThreadsSet::default();
    for _ in 0..MAX_PASSES {
        let Live::Alive(tids) = dir.tids()? else {
            return Ok(Live::Gone);
        };
        let new: Vec<Tid> = tids
            .into_iter()
            .filter(|t| !done.set.contains(t) && !done.gone.contains(t))
            .collect();
        if new.is_empty() {
            break;
        }
        for tid in new {
            match set_affinity(tid, cpus)? {
                Live::Alive(()) => done.set.push(tid),
                Live::Gone => done.gone.push(tid),
            }
        }
    }
    if done.set.is_empty() {
        return Ok(Live::Gone);
    }
    done.set.sort_unstable();
    done.gone.sort_unstable();
    Ok(Live::Alive(done))
}

/// Getting and setting thread affinity, as an interface so that the journal's restore logic
/// can be tested without touching real threads. [`SystemAffinity`] is the real one.
pub trait AffinityOps {
    fn get(&mut self, tid: Tid) -> Result<Live<CpuSet>, SysError>;
    fn set(&mut self, tid: Tid, cpus: &CpuSet) -> Result<Live<()>, SysError>;
}

/// The kernel's `sched_getaffinity` / `sched_setaffinity`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemAffinity;

impl AffinityOps for SystemAffinity {
    fn get(&mut self, tid: Tid) -> Result<Live<CpuSet>, SysError> {
        get_affinity(tid)
    }

    fn set(&mut self, tid: Tid, cpus: &CpuSet) -> Result<Live<()>, SysError> {
        set_affinity(tid, cpus)
    }
}
