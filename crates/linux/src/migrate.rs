//! Moving memory between nodes: `move_pages(2)` for chosen pages in bounded batches, with a
//! status per page, and `migrate_pages(2)` for all of a process's pages on some nodes.
//!
//! **Batches.** The kernel holds the target's mmap lock and isolates pages for the whole of a
//! `move_pages` call; [`move_pages`] splits the request into batches of
//! [`MoveOptions::batch`] pages (one syscall each) so that no call stalls the process for
//! long, and a caller can pace batches to a bandwidth budget. `migrate_pages` is one call over
//! the whole address space: use it only for small processes or when a long stall is fine.
//!
//! **Permissions.** Moving another user's process needs CAP_SYS_NICE (and ptrace access);
//! pages mapped by several processes move only with [`MoveOptions::move_all`] (CAP_SYS_NICE).
//! A target node outside the process's cpuset `mems` is refused.
//!
//! Node numbers are the kernel's. A process that exits during the call gives [`Live::Gone`]
//! (batches already done stay done).

use nix::errno::Errno;
use topo::CpuSet;

use crate::affinity::to_pid_t;
use crate::error::SysError;
use crate::{Live, Pid, sys};

/// Where one page is after a `move_pages` call, or why it is not there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageStatus {
    /// The page is on this node (moved, or already there).
    Node(usize),
    /// ENOENT: the page is not present (never touched, or swapped out).
    NotPresent,
    /// EFAULT: the address is not mapped, or maps the shared zero page.
    Fault,
    /// EACCES: the page is mapped by several processes and `move_all` was not asked.
    Shared,
    /// EBUSY: the page is in use (under I/O, pinned) and could not be moved now.
    Busy,
    /// ENOMEM: the target node had no free memory.
    NoMemory,
    /// EIO: a dirty file page could not be written back.
    Io,
    /// Another error number.
    Other(Errno),
}

impl PageStatus {
    fn from_raw(v: i32) -> PageStatus {
        if v >= 0 {
            return PageStatus::Node(v as usize);
        }
        match Errno::from_raw(-v) {
            Errno::ENOENT => PageStatus::NotPresent,
            Errno::EFAULT => PageStatus::Fault,
            Errno::EACCES => PageStatus::Shared,
            Errno::EBUSY => PageStatus::Busy,
            Errno::ENOMEM => PageStatus::NoMemory,
            Errno::EIO => PageStatus::Io,
            e => PageStatus::Other(e),
        }
    }

    /// The node the page is on, if it is present.
    pub fn node(self) -> Option<usize> {
        match self {
            PageStatus::Node(n) => Some(n),
            _ => None,
        }
    }
}

/// How [`move_pages`] works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveOptions {
    /// Pages per syscall (at least 1). 1024 base pages = 4 MiB.
    pub batch: usize,
    /// `MPOL_MF_MOVE_ALL`: also move pages other processes map (needs CAP_SYS_NICE).
    pub move_all: bool,
}

impl Default for MoveOptions {
    fn default() -> Self {
        MoveOptions {
            batch: 1024,
            move_all: false,
        }
    }
}

/// What a [`move_pages`] call did: the status of each page, in the order given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MoveReport {
    pub status: Vec<PageStatus>,
    /// Syscalls made.
    pub batches: usize,
}

impl MoveReport {
    /// Pages now on `node`.
    pub fn on_node(&self, node: usize) -> usize {
        self.status
            .iter()
            .filter(|s| s.node() == Some(node))
            .count()
    }

    /// Pages whose status is not a node.
    pub fn failed(&self) -> usize {
        self.status.iter().filter(|s| s.node().is_none()).count()
    }
}

/// Moves the pages at `pages` (addresses in process `pid`'s address space, page-aligned or
/// not) to `node`, in batches. `Gone` when the process exits.
pub fn move_pages(
    pid: Pid,
    pages: &[usize],
    node: usize,
    opts: MoveOptions,
) -> Result<Live<MoveReport>, SysError> {
    let n = node_i32(pid, node)?;
    let nodes = vec![n; pages.len().min(opts.batch.max(1))];
    run(pid, pages, Some(&|_| &nodes[..]), opts)
}

/// Moves each page `pages[i]` to `nodes[i]`, in batches. `Gone` when the process exits.
pub fn move_pages_to(
    pid: Pid,
    pages: &[usize],
    nodes: &[usize],
    opts: MoveOptions,
) -> Result<Live<MoveReport>, SysError> {
    if nodes.len() != pages.len() {
        return Err(SysError::InvalidArgument {
            op: "move_pages",
            reason: format!("{} pages but {} target nodes", pages.len(), nodes.len()),
        });
    }
    let raw: Vec<i32> = nodes
        .iter()
        .map(|&n| node_i32(pid, n))
        .collect::<Result<_, _>>()?;
    let batch = opts.batch.max(1);
    run(
        pid,
        pages,
        Some(&|i| &raw[i * batch..(i * batch + batch).min(raw.len())]),
        opts,
    )
}

/// The node of each page (`move_pages` with no target nodes), in batches. `Gone` when the
/// process exits.
pub fn page_nodes(pid: Pid, pages: &[usize], batch: usize) -> Result<Live<MoveReport>, SysError> {
    run(
        pid,
        pages,
        None,
        MoveOptions {
            batch,
            move_all: false,
        },
    )
}

type NodesOf<'a> = &'a dyn Fn(usize) -> &'a [i32];

fn run(
    pid: Pid,
    pages: &[usize],
    nodes: Option<NodesOf<'_>>,
    opts: MoveOptions,
) -> Result<Live<MoveReport>, SysError> {
    const OP: &str = "move_pages";
    let p = to_pid_t(OP, pid)?;
    let batch = opts.batch.max(1);
    let flags = if nodes.is_none() {
        0
    } else if opts.move_all {
        sys::MPOL_MF_MOVE_ALL
    } else {
        sys::MPOL_MF_MOVE
    };
    let mut report = MoveReport {
        status: Vec::with_capacity(pages.len()),
        batches: 0,
    };
    let mut status = vec![0i32; batch.min(pages.len())];
    for (i, chunk) in pages.chunks(batch).enumerate() {
        let st = &mut status[..chunk.len()];
        let targets = nodes.map(|f| &f(i)[..chunk.len()]);
        match sys::move_pages(p, chunk, targets, st, flags) {
            Ok(_) => {}
            Err(Errno::ESRCH) => return Ok(Live::Gone),
            Err(Errno::ENODEV) => {
                return Err(SysError::BadNode {
                    op: OP,
                    pid,
                    nodes: node_list(targets),
                    reason: "not online, or holds no memory",
                });
            }
            Err(Errno::EACCES) => {
                return Err(SysError::BadNode {
                    op: OP,
                    pid,
                    nodes: node_list(targets),
                    reason: "outside the memory nodes the process's cpuset allows",
                });
            }
            Err(e) => return Err(SysError::from_errno(OP, pid, e)),
        }
        report.batches += 1;
        report
            .status
            .extend(st.iter().map(|&s| PageStatus::from_raw(s)));
    }
    Ok(Live::Alive(report))
}

fn node_i32(pid: Pid, node: usize) -> Result<i32, SysError> {
    i32::try_from(node).map_err(|_| SysError::BadNode {
        op: "move_pages",
        pid,
        nodes: node.to_string(),
        reason: "node number out of range",
    })
}

fn node_list(targets: Option<&[i32]>) -> String {
    let set: CpuSet = targets
        .unwrap_or(&[])
        .iter()
        .filter_map(|&n| usize::try_from(n).ok())
        .collect();
    set.to_list_string()
}

/// Moves every page of process `pid` that is on a node of `from` to the nodes of `to`
/// (`migrate_pages(2)`; with several nodes on each side the kernel maps them by position as
/// `cpuset` migration does). Returns the number of pages that could not be moved. `Gone` when
/// the process exits.
///
/// A target set outside the process's cpuset needs CAP_SYS_NICE ([`SysError::Permission`]);
/// target nodes none of which is online with memory (or a node number beyond the kernel's
/// maximum) are a [`SysError::BadNode`].
pub fn migrate_pages(pid: Pid, from: &CpuSet, to: &CpuSet) -> Result<Live<u64>, SysError> {
    const OP: &str = "migrate_pages";
    let p = to_pid_t(OP, pid)?;
    if from.is_empty() || to.is_empty() {
        return Err(SysError::InvalidArgument {
            op: OP,
            reason: format!("empty node set (from `{from}`, to `{to}`)"),
        });
    }
    match sys::migrate_pages(p, from, to) {
        Ok(n) => Ok(Live::Alive(n as u64)),
        Err(Errno::ESRCH) => Ok(Live::Gone),
        Err(Errno::EINVAL) => Err(SysError::BadNode {
            op: OP,
            pid,
            nodes: format!("{from} -> {to}"),
            reason: "no target node online with memory, or a node beyond the kernel's maximum",
        }),
        Err(e) => Err(SysError::from_errno(OP, pid, e)),
    }
}
