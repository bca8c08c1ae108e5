//! The live daemon (`homenode run`) on Linux: its building blocks (the mechanism) and the
//! daemon loop that drives them. The placement policy itself is not here: it comes from the
//! `policy` crate, the same code the simulator runs.
//!
//! | Module | What it does |
//! | --- | --- |
//! | [`procfs`] | one reader per `/proc` file: `stat`, `task/TID/stat`, `status`, `numa_maps`, `maps`, `cgroup`, `sched`, `comm`, `/proc/vmstat`, PID and TID listings; the cgroup cpuset files under `/sys/fs/cgroup` |
//! | [`sysfs`] | online CPUs, isolated CPUs, memory nodes |
//! | [`sample`] | [`Scanner`]: one pass over `/proc` into raw [`ProcessSample`]s |
//! | [`nodemap`] | kernel CPU and memory node numbers to node indexes, from the host's topology (optionally split into pseudo-nodes) |
//! | [`rates`] | CPU use per process and thread, and per-node runtime, from two scans |
//! | [`affinity`] | get/set the CPU affinity of a thread or of every thread of a process, masks of any size |
//! | [`migrate`] | `move_pages` in bounded batches with a status per page, `migrate_pages` |
//! | [`slice`] | the fair class's custom scheduling slice of a thread (Linux 6.12+): read, set on every thread of a process, taken back; the kernel's base slice measured |
//! | [`mempolicy`] | NUMA memory policies: parsed from `numa_maps`, read for this process with `get_mempolicy` |
//! | [`journal`] | the undo journal: original affinities keyed by (PID, start time), written atomically, restored |
//! | [`exclude`] | which processes to leave alone, and why |
//! | [`text`] | escaping control characters in text from processes and files before it is logged or printed |
//! | [`trust`] | which configuration and state files root may act on, and opening files without following planted links |
//! | [`daemon`] | the daemon loop (`homenode run`): sampling, snapshot, policy, actions, journal, status socket, metrics |
//! | `sys` (private) | the raw syscalls no safe crate offers; the only module with `unsafe` |
//!
//! # Conventions
//!
//! - **Roots.** Every reader takes the *filesystem root* (`/` on a live host) and reads
//!   `ROOT/proc/...` and `ROOT/sys/...`, so tests run the same code on captured fixture trees
//!   (`tests/fixtures/`, made with `tests/fixtures/capture.sh`).
//! - **Raw samples, derived rates.** Readers return what the kernel wrote (clock ticks, pages,
//!   counters since boot); rates over an interval come from two samples in [`rates`].
//! - **Processes exit at any time.** A process or thread that is gone when one of its files is
//!   read, or when a syscall targets it (ENOENT, ESRCH), yields [`Live::Gone`], never an
//!   error; callers skip it. A process's files are opened through one directory handle on
//!   `/proc/PID` ([`procfs::ProcDir`]), so a PID reused while the process is being read gives
//!   `Gone` rather than a mix of two processes.
//! - **Errors name what failed**, on one line: the full path of the file
//!   ([`ProcError`], [`JournalError`]) or the operation and PID or TID ([`SysError`],
//!   [`SliceError`]).
//! - **Masks have no size limit.** CPU and node sets are [`topo::CpuSet`] bit vectors, and the
//!   syscalls pass dynamically sized masks (not glibc's 1024-bit `cpu_set_t`).
//! - **Kernel numbering.** CPU and node numbers here are the kernel's (as in `/proc` and the
//!   syscalls). A topology with holes (offline CPUs, left-out nodes) numbers them densely;
//!   translate with [`topo::HostTopology::os_cpu`] / `os_node` (see
//!   [`nodemap::CpuNodeMap::from_host`]).

pub mod affinity;
pub mod clock;
pub mod daemon;
pub mod error;
pub mod exclude;
pub mod journal;
pub mod mempolicy;
pub mod migrate;
pub mod nodemap;
pub mod procfs;
pub mod rates;
pub mod sample;
pub mod slice;
mod sys;
pub mod sysfs;
pub mod text;
pub mod trust;

pub use error::{Error, JournalError, ProcError, SliceError, SysError};
pub use sample::{ProcessSample, ScanOptions, ScanResult, Scanner, ThreadSample};

/// A process ID (thread group ID) as the kernel numbers it.
pub type Pid = u32;
/// A thread ID (each thread of a process has one; the main thread's is the PID).
pub type Tid = u32;

/// The outcome of reading or acting on a process that may exit at any moment.
///
/// `Gone` means the process (or thread) no longer exists: its `/proc` directory or file has
/// vanished (ENOENT), or the kernel answered ESRCH. It is a normal outcome, not an error:
/// callers skip the process and count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use]
pub enum Live<T> {
    /// The process exists and this is what was read or done.
    Alive(T),
    /// The process or thread exited (or its PID now names a different process).
    Gone,
}

impl<T> Live<T> {
    /// The value, or `None` when gone.
    pub fn alive(self) -> Option<T> {
        match self {
            Live::Alive(t) => Some(t),
            Live::Gone => None,
        }
    }

    pub fn is_gone(&self) -> bool {
        matches!(self, Live::Gone)
    }

    pub fn as_ref(&self) -> Live<&T> {
        match self {
            Live::Alive(t) => Live::Alive(t),
            Live::Gone => Live::Gone,
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Live<U> {
        match self {
            Live::Alive(t) => Live::Alive(f(t)),
            Live::Gone => Live::Gone,
        }
    }

    /// The value; panics when gone. For tests.
    #[track_caller]
    pub fn expect_alive(self, what: &str) -> T {
        match self {
            Live::Alive(t) => t,
            Live::Gone => panic!("{what}: the process is gone"),
        }
    }
}

impl<T> From<Option<T>> for Live<T> {
    fn from(o: Option<T>) -> Self {
        match o {
            Some(t) => Live::Alive(t),
            None => Live::Gone,
        }
    }
}
