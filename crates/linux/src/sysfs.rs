//! The few machine-wide facts the exclusion rules need, from `ROOT/sys/devices/system/`:
//!
//! | Fact | File | When absent |
//! | --- | --- | --- |
//! | online CPUs | `cpu/online` | error (every kernel has it) |
//! | isolated CPUs (`isolcpus=`) | `cpu/isolated` | none isolated |
//! | nodes with memory | `node/has_memory`, else `node/online` | node 0 only (a kernel without NUMA) |
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
