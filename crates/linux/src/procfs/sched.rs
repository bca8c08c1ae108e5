//! `/proc/PID/sched`: the scheduler's debug view of a task (`KEY : VALUE` lines), read for
//! its NUMA balancing state.
//!
//! ```text
//! se.nr_migrations                             :                   12
//! mm->numa_scan_seq                            :                    3
//! numa_pages_migrated                          :                  120
//! numa_preferred_nid                           :                    1
//! total_numa_faults                            :                  512
//! current_node=1, numa_group_id=0
//! numa_faults node=0 task_private=3 task_shared=0 group_private=0 group_shared=0
//! ```
//!
//! The file exists only with `CONFIG_SCHED_DEBUG` (always on since Linux 6.x in practice);
//! the NUMA lines only with `CONFIG_NUMA_BALANCING`, and `numa_faults` lines only once the task
//! took hinting faults. Every field is optional. The format is a debugging interface that
//! changes between kernels: unknown lines are ignored, and only a known key with a value that
//! is not a number is an error.

use std::path::Path;

use crate::error::ProcError;
use crate::{Live, Pid};

/// Hinting faults of a task on one node (a `numa_faults` line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeFaults {
    pub node: usize,
    pub task_private: u64,
    pub task_shared: u64,
    pub group_private: u64,
    pub group_shared: u64,
}

/// The NUMA balancing figures of `sched`, raw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedNuma {
    /// `se.nr_migrations`: times the task moved between CPUs.
    pub nr_migrations: Option<u64>,
    /// `mm->numa_scan_seq`: NUMA balancing scan passes over the address space.
    pub numa_scan_seq: Option<u64>,
    /// `numa_pages_migrated`: pages NUMA balancing moved for this task.
    pub numa_pages_migrated: Option<u64>,
    /// `numa_preferred_nid`: the node NUMA balancing prefers for the task; `None` for -1
    /// (no preference) or when absent.
    pub numa_preferred_nid: Option<usize>,
    /// `total_numa_faults`.
    pub total_numa_faults: Option<u64>,
    /// `current_node=`.
    pub current_node: Option<usize>,
    /// `numa_group_id=` (0: no group).
    pub numa_group_id: Option<u64>,
    /// The `numa_faults` lines.
    pub faults: Vec<NodeFaults>,
}

/// Parses the text of `sched`.
pub fn parse(text: &str) -> Result<SchedNuma, crate::error::ParseError> {
    let mut s = SchedNuma::default();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if let Some(rest) = line.strip_prefix("numa_faults ") {
            let mut f = NodeFaults::default();
            for kv in rest.split_ascii_whitespace() {
                let (k, v) = kv.split_once('=').ok_or_else(|| {
                    crate::error::ParseError::from(format!("line {ln}: `{kv}` is not KEY=VALUE"))
                })?;
                let n: u64 = v.parse().map_err(|_| {
                    crate::error::ParseError::from(format!(
                        "line {ln}: numa_faults {k} `{v}` is not a number"
                    ))
                })?;
                match k {
                    "node" => f.node = to_usize(n, ln)?,
                    "task_private" => f.task_private = n,
                    "task_shared" => f.task_shared = n,
                    "group_private" => f.group_private = n,
                    "group_shared" => f.group_shared = n,
                    _ => {}
                }
            }
            s.faults.push(f);
            continue;
        }
        if line.starts_with("current_node=") {
            for kv in line.split(',').map(str::trim) {
                let Some((k, v)) = kv.split_once('=') else {
                    continue;
                };
                let n: i64 = v.parse().map_err(|_| {
                    crate::error::ParseError::from(format!("line {ln}: {k} `{v}` is not a number"))
                })?;
                match k {
                    "current_node" => s.current_node = usize::try_from(n).ok(),
                    "numa_group_id" => s.numa_group_id = u64::try_from(n).ok(),
                    _ => {}
                }
            }
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        let int = |v: &str| -> Result<i64, crate::error::ParseError> {
            v.parse::<i64>().map_err(|_| {
                crate::error::ParseError::from(format!("line {ln}: {k} `{v}` is not a number"))
            })
        };
        match k {
            "se.nr_migrations" => s.nr_migrations = Some(unsigned(int(v)?, ln)?),
            "mm->numa_scan_seq" => s.numa_scan_seq = Some(unsigned(int(v)?, ln)?),
            "numa_pages_migrated" => s.numa_pages_migrated = Some(unsigned(int(v)?, ln)?),
            "total_numa_faults" => s.total_numa_faults = Some(unsigned(int(v)?, ln)?),
            "numa_preferred_nid" => s.numa_preferred_nid = usize::try_from(int(v)?).ok(),
            _ => {}
        }
    }
    Ok(s)
}

fn unsigned(n: i64, ln: usize) -> Result<u64, crate::error::ParseError> {
    u64::try_from(n)
        .map_err(|_| crate::error::ParseError::from(format!("line {ln}: negative count {n}")))
}

fn to_usize(n: u64, ln: usize) -> Result<usize, crate::error::ParseError> {
    usize::try_from(n)
        .map_err(|_| crate::error::ParseError::from(format!("line {ln}: node {n} out of range")))
}

/// Reads `ROOT/proc/PID/sched`. `Alive(None)` when the kernel has no such file, `Gone` when the
/// process has exited.
pub fn read(root: &Path, pid: Pid) -> Result<Live<Option<SchedNuma>>, ProcError> {
    super::with_dir(root, pid, |d| d.sched())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
worker (4242, #threads: 3)
-------------------------------------------------------------------
se.exec_start                                :       5092430.400486
se.nr_migrations                             :                   12
nr_switches                                  :                  100
policy                                       :                    0
mm->numa_scan_seq                            :                    3
numa_pages_migrated                          :                  120
numa_preferred_nid                           :                    1
total_numa_faults                            :                  512
current_node=1, numa_group_id=7
numa_faults node=0 task_private=3 task_shared=1 group_private=0 group_shared=0
numa_faults node=1 task_private=500 task_shared=8 group_private=2 group_shared=1
";

    #[test]
    fn fields() {
        let s = parse(TEXT).expect("parses");
        assert_eq!(s.nr_migrations, Some(12));
        assert_eq!(s.numa_scan_seq, Some(3));
        assert_eq!(s.numa_pages_migrated, Some(120));
        assert_eq!(s.numa_preferred_nid, Some(1));
        assert_eq!(s.total_numa_faults, Some(512));
        assert_eq!(s.current_node, Some(1));
        assert_eq!(s.numa_group_id, Some(7));
        assert_eq!(s.faults.len(), 2);
        assert_eq!(s.faults[1].task_private, 500);
        let none = parse(&TEXT.replace(
            "nid                           :                    1",
            "nid : -1",
        ))
        .expect("parses");
        assert_eq!(none.numa_preferred_nid, None);
        // Without NUMA balancing: nothing.
        assert_eq!(
            parse("x (1, #threads: 1)\nnr_switches : 3\n").expect("ok"),
            SchedNuma::default()
        );
    }

    #[test]
    fn malformed() {
        let e = parse(&TEXT.replace(":                   12", ": twelve")).unwrap_err();
        assert!(e.contains("se.nr_migrations `twelve`"), "{e}");
        let e = parse("numa_faults node=x\n").unwrap_err();
        assert!(e.contains("numa_faults node `x`"), "{e}");
        let e = parse("numa_faults node\n").unwrap_err();
        assert!(e.contains("not KEY=VALUE"), "{e}");
        let e = parse("total_numa_faults : -4\n").unwrap_err();
        assert!(e.contains("negative"), "{e}");
    }
}
