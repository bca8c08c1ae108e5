//! The few machine-wide facts the exclusion rules need, from `ROOT/sys/devices/system/`:
//!
//! | Fact | File | When absent |
//! | --- | --- | --- |
//! | online CPUs | `cpu/online` | error (every kernel has it) |
//! | isolated CPUs (`isolcpus=`) | `cpu/isolated` | none isolated |
//! | nodes with memory | `node/has_memory`, else `node/online` | node 0 only (a kernel without NUMA) |
//! | a node's total and free memory | `node/nodeN/meminfo` | `None` (a kernel without NUMA: use `/proc/meminfo`) |
//!
//! The topology proper (nodes, distances, caches) is the topology crate's
//! ([`topo::read_host_detailed`]).

use std::path::Path;

use topo::CpuSet;

use crate::error::ProcError;
use crate::procfs::read_optional_text;

fn read_list(root: &Path, rel: &str) -> Result<Option<CpuSet>, ProcError> {
    let path = root.join(rel);
    match read_optional_text(&path)? {
        Some(t) => CpuSet::parse_list(&t)
            .map(Some)
            .map_err(|e| ProcError::parse(&path, e)),
        None => Ok(None),
    }
}

/// `cpu/online`.
pub fn online_cpus(root: &Path) -> Result<CpuSet, ProcError> {
    let rel = "sys/devices/system/cpu/online";
    read_list(root, rel)?.ok_or_else(|| {
        ProcError::io(
            &root.join(rel),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )
    })
}

/// `cpu/isolated` (CPUs taken out of scheduling domains by `isolcpus=`); empty when absent.
pub fn isolated_cpus(root: &Path) -> Result<CpuSet, ProcError> {
    Ok(read_list(root, "sys/devices/system/cpu/isolated")?.unwrap_or_default())
}

/// The CPUs an unrestricted user task gets by default: online minus isolated. A task whose
/// affinity leaves out some of these (within its cpuset) was pinned by someone.
pub fn default_cpus(root: &Path) -> Result<CpuSet, ProcError> {
    let online = online_cpus(root)?;
    let isolated = isolated_cpus(root)?;
    Ok(online.iter().filter(|&c| !isolated.contains(c)).collect())
}

/// Nodes that have memory (`node/has_memory`, else `node/online`, else `{0}`).
pub fn memory_nodes(root: &Path) -> Result<CpuSet, ProcError> {
    if let Some(s) = read_list(root, "sys/devices/system/node/has_memory")? {
        return Ok(s);
    }
    if let Some(s) = read_list(root, "sys/devices/system/node/online")? {
        return Ok(s);
    }
    Ok(CpuSet::single(0))
}

/// A node's memory, bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeMemory {
    pub total: u64,
    pub free: u64,
}

/// Parses a node's `meminfo` (`Node 0 MemTotal:  16384 kB` lines).
pub fn parse_node_meminfo(text: &str) -> Result<NodeMemory, crate::error::ParseError> {
    let mut total = None;
    let mut free = None;
    for (i, line) in text.lines().enumerate() {
        let Some((key, val)) = line.split_once(':') else {
            continue;
        };
        let slot = match key.split_ascii_whitespace().last() {
            Some("MemTotal") => &mut total,
            Some("MemFree") => &mut free,
            _ => continue,
        };
        let mut parts = val.split_ascii_whitespace();
        let n: u64 = parts.next().and_then(|v| v.parse().ok()).ok_or_else(|| {
            crate::error::ParseError::from(format!(
                "line {}: `{}` is not a number of kB",
                i + 1,
                val.trim()
            ))
        })?;
        if parts.next().is_some_and(|u| u != "kB") {
            return Err(crate::error::ParseError::from(format!(
                "line {}: unit is not kB",
                i + 1
            )));
        }
        *slot = Some(n.saturating_mul(1024));
    }
    match (total, free) {
        (Some(total), Some(free)) => Ok(NodeMemory { total, free }),
        (None, _) => Err("no MemTotal line".into()),
        (_, None) => Err("no MemFree line".into()),
    }
}

/// `node/nodeN/meminfo` of kernel node `node`; `None` when the file does not exist.
pub fn node_memory(root: &Path, node: usize) -> Result<Option<NodeMemory>, ProcError> {
    let path = root.join(format!("sys/devices/system/node/node{node}/meminfo"));
    match read_optional_text(&path)? {
        Some(t) => parse_node_meminfo(&t)
            .map(Some)
            .map_err(|e| ProcError::parse(&path, e)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_meminfo() {
        let t = "Node 1 MemTotal:       16384 kB\nNode 1 MemFree:         4096 kB\nNode 1 MemUsed: 12288 kB\n";
        assert_eq!(
            parse_node_meminfo(t),
            Ok(NodeMemory {
                total: 16 << 20,
                free: 4 << 20
            })
        );
        for (t, want) in [
            ("Node 0 MemTotal: 1 kB\n", "no MemFree"),
            ("Node 0 MemFree: 1 kB\n", "no MemTotal"),
            (
                "Node 0 MemTotal: x kB\nNode 0 MemFree: 1 kB\n",
                "not a number",
            ),
            ("Node 0 MemTotal: 1 MB\nNode 0 MemFree: 1 kB\n", "not kB"),
        ] {
            let e = parse_node_meminfo(t).expect_err(t);
            assert!(e.contains(want), "{t}: {e}");
        }
    }
}
