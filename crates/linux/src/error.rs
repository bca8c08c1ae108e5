//! Errors of the readers, the syscall wrappers and the journal.
//!
//! Every error renders as one line naming what failed: the file (full path, root prefix
//! included) for the readers and the journal, the operation and the PID or TID for the
//! syscalls. A process that exits while it is being read or acted on is *not* an error: see
//! [`Live::Gone`](crate::Live::Gone).

use std::io;
use std::path::{Path, PathBuf};

use nix::errno::Errno;

use crate::{Pid, Tid};

pub use topo::error::ParseError;

/// A `/proc` or `/sys` file that could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// The file (or directory) exists but could not be read, for a reason other than the
    /// process having exited.
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },

    /// The file was read but its text is not what the kernel writes (truncated, a field
    /// missing, a number that is not a number).
    #[error("{}: {reason}", path.display())]
    Parse { path: PathBuf, reason: String },
}

impl ProcError {
    pub(crate) fn io(path: &Path, error: io::Error) -> Self {
        ProcError::Io {
            path: path.to_path_buf(),
            error,
        }
    }

    pub(crate) fn parse(path: &Path, reason: impl std::fmt::Display) -> Self {
        ProcError::Parse {
            path: path.to_path_buf(),
            reason: one_line(&reason.to_string()),
        }
    }

    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ProcError::Io { path, .. } | ProcError::Parse { path, .. } => path,
        }
    }
}

/// A syscall wrapper that failed (other than because the target exited, which is
/// [`Live::Gone`](crate::Live::Gone)).
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// EPERM or EACCES: the caller may not act on this task (another user's process without
    /// CAP_SYS_NICE, a task whose affinity the kernel fixes, ...).
    #[error("{op} on pid {pid}: permission denied ({errno})")]
    Permission {
        op: &'static str,
        pid: Pid,
        errno: Errno,
    },

    /// EINVAL from `sched_setaffinity`: the mask holds no CPU that is online and allowed to the
    /// task by its cpuset.
    #[error("{op} on pid {pid}: CPU mask `{mask}` holds no online CPU the task's cpuset allows")]
    InvalidCpus {
        op: &'static str,
        pid: Pid,
        mask: String,
    },

    /// A node that does not exist, is offline, has no memory, or is outside the target's
    /// allowed memory nodes (ENODEV, or EACCES/EINVAL from the node checks).
    #[error("{op} on pid {pid}: bad node {nodes}: {reason}")]
    BadNode {
        op: &'static str,
        pid: Pid,
        nodes: String,
        reason: &'static str,
    },

    /// ENOSYS: a kernel built without NUMA support (`CONFIG_NUMA=n`) or a seccomp filter.
    #[error("{op}: not supported by this kernel ({errno})")]
    Unsupported { op: &'static str, errno: Errno },

    /// An argument rejected before calling the kernel (a PID that does not fit `pid_t`, an
    /// empty mask, lengths that differ).
    #[error("{op}: {reason}")]
    InvalidArgument { op: &'static str, reason: String },

    /// Any other error number.
    #[error("{op} on pid {pid}: {errno}")]
    Os {
        op: &'static str,
        pid: Pid,
        errno: Errno,
    },
}

impl SysError {
    /// The error number the kernel returned, if the kernel was called.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            SysError::Permission { errno, .. }
            | SysError::Unsupported { errno, .. }
            | SysError::Os { errno, .. } => Some(*errno),
            SysError::InvalidCpus { .. } => Some(Errno::EINVAL),
            SysError::BadNode { .. } | SysError::InvalidArgument { .. } => None,
        }
    }

    /// The default mapping of an errno: EPERM/EACCES to [`SysError::Permission`], ENOSYS to
    /// [`SysError::Unsupported`], anything else to [`SysError::Os`]. ESRCH must have been
    /// turned into [`Live::Gone`](crate::Live::Gone) before.
    pub(crate) fn from_errno(op: &'static str, pid: Pid, errno: Errno) -> Self {
        match errno {
            Errno::EPERM | Errno::EACCES => SysError::Permission { op, pid, errno },
            Errno::ENOSYS => SysError::Unsupported { op, errno },
            _ => SysError::Os { op, pid, errno },
        }
    }
}

/// `sched_getattr` or `sched_setattr` failed on a thread (other than because the thread
/// exited, which is [`Live::Gone`]).
#[derive(Debug, thiserror::Error)]
pub enum SliceError {
    /// EPERM or EACCES: the caller may not change this thread (another user's without
    /// `CAP_SYS_NICE`, a security module).
    #[error("{op} on thread {tid}: permission denied ({errno})")]
    Permission {
        op: &'static str,
        tid: Tid,
        errno: Errno,
    },
    /// ENOSYS: a kernel before 3.14, or a seccomp filter.
    #[error("{op} on thread {tid}: not supported by this kernel ({errno})")]
    Unsupported {
        op: &'static str,
        tid: Tid,
        errno: Errno,
    },
    /// EINVAL (or E2BIG) from `sched_setattr`: the kernel refused the attributes.
    #[error(
        "{op} on thread {tid}: the kernel refused policy {policy}, nice {nice}, runtime {runtime_ns} ns ({errno})"
    )]
    Refused {
        op: &'static str,
        tid: Tid,
        policy: u32,
        nice: i32,
        runtime_ns: u64,
        errno: Errno,
    },
    /// A thread ID that is not one (0, or beyond `pid_t`): refused before calling the kernel,
    /// so that a missing ID never targets the caller.
    #[error("{op}: {tid} is not a valid thread ID")]
    InvalidTid { op: &'static str, tid: Tid },
    /// Any other error number.
    #[error("{op} on thread {tid}: {errno}")]
    Os {
        op: &'static str,
        tid: Tid,
        errno: Errno,
    },
    /// The thread that measures the kernel's base slice could not be started (or died).
    #[error("measuring the kernel's base slice: cannot run a probe thread ({errno})")]
    Probe { errno: Errno },
}

impl SliceError {
    /// The thread the error is about (0 for the probe).
    pub fn tid(&self) -> Tid {
        match self {
            SliceError::Permission { tid, .. }
            | SliceError::Unsupported { tid, .. }
            | SliceError::Refused { tid, .. }
            | SliceError::InvalidTid { tid, .. }
            | SliceError::Os { tid, .. } => *tid,
            SliceError::Probe { .. } => 0,
        }
    }

    pub(crate) fn from_errno(op: &'static str, tid: Tid, errno: Errno) -> Self {
        match errno {
            Errno::EPERM | Errno::EACCES => SliceError::Permission { op, tid, errno },
            Errno::ENOSYS => SliceError::Unsupported { op, tid, errno },
            _ => SliceError::Os { op, tid, errno },
        }
    }
}

/// The undo journal could not be read, parsed or written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The file was read but is not a journal this version understands (truncated, edited,
    /// another format or version). Nothing was restored from it; the caller decides whether to
    /// start afresh (and lose the originals it held) or stop.
    #[error("{}: corrupt journal: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },

    /// Writing the temporary file, syncing it or renaming it over the journal failed; the
    /// previous journal (if any) is intact.
    #[error("{}: cannot write the journal: {step}: {error}", path.display())]
    Write {
        path: PathBuf,
        step: &'static str,
        error: io::Error,
    },

    /// The file (or its directory) is not one root may act on: a link, another user's file,
    /// writable by group or others, or not a regular file.
    #[error(transparent)]
    Untrusted(#[from] crate::trust::TrustError),
}

/// Collapses line breaks so that every error stays on one line.
pub(crate) fn one_line(s: &str) -> String {
    if s.contains(['\n', '\r']) {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        s.to_string()
    }
}

/// Any error of this crate, for operations that both read `/proc` and call the kernel
/// (setting every thread's affinity or slice, restoring the journal).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Proc(#[from] ProcError),
    #[error(transparent)]
    Sys(#[from] SysError),
    #[error(transparent)]
    Slice(#[from] SliceError),
    #[error(transparent)]
    Journal(#[from] JournalError),
}
