//! The nodes as the kernel lists them: `node/online` (else the `node/nodeN` directories), each
//! node's online CPUs, `MemTotal` and SLIT row, or the one node of a kernel without NUMA. Then
//! the checks that need all of them (every online CPU in exactly one node, a valid symmetric
//! SLIT) and the choice of nodes kept: those with online CPUs.

use std::collections::BTreeMap;

use super::{CPU_DIR, NODE_DIR, Reader, memtotal};
use crate::CpuSet;
use crate::error::TopoError;
use crate::spec::{LOCAL_DISTANCE, MAX_DISTANCE, MAX_NODES};

/// One node as the kernel lists it, before nodes are left out or renumbered.
pub(super) struct RawNode {
    pub(super) os_id: usize,
    /// Online CPUs (kernel numbers).
    pub(super) cpus: CpuSet,
    pub(super) mem_bytes: u64,
    /// SLIT row, one entry per entry of the node list.
    pub(super) distance: Vec<u32>,
    /// The file `distance` came from (or would have), for errors.
    pub(super) distance_rel: String,
    pub(super) cpulist_rel: String,
}

impl Reader<'_> {
    /// The nodes of a NUMA kernel, or `None` if the node directory lists none (then the host
    /// is read as a kernel without NUMA).
    pub(super) fn numa_nodes(
        &mut self,
        online: &CpuSet,
    ) -> Result<Option<Vec<RawNode>>, TopoError> {
        let online_rel = format!("{NODE_DIR}/online");
        let ids: Vec<usize> = match self.list_opt(&online_rel)? {
            Some(set) if set.is_empty() => {
                return Err(self.err(&online_rel, "lists no online node"));
            }
            Some(set) if set.count() > MAX_NODES => {
                return Err(self.err(
                    &online_rel,
                    format!(
                        "lists {} nodes; homenode handles at most {MAX_NODES}",
                        set.count()
                    ),
                ));
            }
            Some(set) => set.iter().collect(),
            None => {
                let ids = self.numbered_entries(NODE_DIR, "node")?.unwrap_or_default();
                if ids.len() > MAX_NODES {
                    return Err(self.err(
                        NODE_DIR,
                        format!(
                            "has {} node directories; homenode handles at most {MAX_NODES}",
                            ids.len()
                        ),
                    ));
                }
                if ids.is_empty() {
                    self.warnings.push(format!(
                        "{} has no node directories: read as a kernel without NUMA",
                        self.path(NODE_DIR).display()
                    ));
                    return Ok(None);
                }
                ids
            }
        };
        let mut nodes = Vec::with_capacity(ids.len());
        for &id in &ids {
            let dir = format!("{NODE_DIR}/node{id}");
            let cpulist_rel = format!("{dir}/cpulist");
            let cpus = self.list(&cpulist_rel)?.intersection(online);
            let meminfo_rel = format!("{dir}/meminfo");
            let text = self.read(&meminfo_rel)?;
            let mem_bytes =
                memtotal(&text, Some(id)).map_err(|reason| self.err(&meminfo_rel, reason))?;
            let distance_rel = format!("{dir}/distance");
            let distance = match self.read_opt(&distance_rel)? {
                Some(text) => {
                    let row = text
                        .split_whitespace()
                        .map(|t| {
                            t.parse::<u32>().map_err(|_| {
                                self.err(&distance_rel, format!("`{t}` is not a distance"))
                            })
                        })
                        .collect::<Result<Vec<u32>, _>>()?;
                    if row.len() != ids.len() {
                        let list: CpuSet = ids.iter().copied().collect();
                        return Err(self.err(
                            &distance_rel,
                            format!(
                                "has {} entries, expected {} (one per online node: {list})",
                                row.len(),
                                ids.len()
                            ),
                        ));
                    }
                    row
                }
                None if ids.len() == 1 => vec![LOCAL_DISTANCE],
                None => return Err(self.err(&distance_rel, "is missing")),
            };
            nodes.push(RawNode {
                os_id: id,
                cpus,
                mem_bytes,
                distance,
                distance_rel,
                cpulist_rel,
            });
        }
        Ok(Some(nodes))
    }

    /// The one node of a kernel without NUMA.
    pub(super) fn flat_node(&self, online: &CpuSet) -> Result<RawNode, TopoError> {
        let rel = "proc/meminfo";
        let text = self.read(rel)?;
        let mem_bytes = memtotal(&text, None).map_err(|reason| self.err(rel, reason))?;
        Ok(RawNode {
            os_id: 0,
            cpus: online.clone(),
            mem_bytes,
            distance: vec![LOCAL_DISTANCE],
            distance_rel: NODE_DIR.to_string(),
            cpulist_rel: format!("{CPU_DIR}/online"),
        })
    }

    /// Every online CPU in exactly one node.
    pub(super) fn check_cpu_owners(
        &self,
        raw: &[RawNode],
        online: &CpuSet,
    ) -> Result<(), TopoError> {
        let mut owner: BTreeMap<usize, usize> = BTreeMap::new();
        for n in raw {
            for c in n.cpus.iter() {
                if let Some(prev) = owner.insert(c, n.os_id) {
                    return Err(self.err(
                        &n.cpulist_rel,
                        format!("CPU {c} is also in node {prev}'s cpulist"),
                    ));
                }
            }
        }
        if let Some(c) = online.iter().find(|c| !owner.contains_key(c)) {
            return Err(self.err(NODE_DIR, format!("online CPU {c} is in no node's cpulist")));
        }
        Ok(())
    }

    /// The SLIT of the kept nodes, checked: 10 on the diagonal, 11..=254 elsewhere (every row
    /// first), then symmetric.
    pub(super) fn distance_matrix(
        &self,
        raw: &[RawNode],
        kept: &[usize],
    ) -> Result<Vec<Vec<u32>>, TopoError> {
        let m: Vec<Vec<u32>> = kept
            .iter()
            .map(|&a| kept.iter().map(|&b| raw[a].distance[b]).collect())
            .collect();
        for (ka, &a) in kept.iter().enumerate() {
            let rel = &raw[a].distance_rel;
            for (kb, &b) in kept.iter().enumerate() {
                let d = m[ka][kb];
                let other = raw[b].os_id;
                if a == b && d != LOCAL_DISTANCE {
                    return Err(self.err(
                        rel,
                        format!("distance to itself is {d}, must be {LOCAL_DISTANCE}"),
                    ));
                }
                if a != b && !(LOCAL_DISTANCE + 1..=MAX_DISTANCE).contains(&d) {
                    return Err(self.err(
                        rel,
                        format!(
                            "distance to node {other} is {d}, must be {}..={MAX_DISTANCE}",
                            LOCAL_DISTANCE + 1
                        ),
                    ));
                }
            }
        }
        for (ka, &a) in kept.iter().enumerate() {
            let rel = &raw[a].distance_rel;
            for (kb, &b) in kept.iter().enumerate() {
                let d = m[ka][kb];
                let other = raw[b].os_id;
                if d != m[kb][ka] {
                    return Err(self.err(
                        rel,
                        format!(
                            "distance to node {other} is {d} but node {other} gives {}: the \
                             SLIT must be symmetric",
                            m[kb][ka]
                        ),
                    ));
                }
            }
        }
        Ok(m)
    }

    /// The nodes kept (indices into `raw`): those with online CPUs. Memory-only and empty
    /// nodes are left out and memoryless ones kept, each with a warning.
    pub(super) fn keep_nodes(&mut self, raw: &[RawNode]) -> Vec<usize> {
        let mut kept: Vec<usize> = Vec::new();
        for (i, n) in raw.iter().enumerate() {
            if !n.cpus.is_empty() {
                if n.mem_bytes == 0 {
                    self.warnings.push(format!(
                        "node {} has CPUs but no memory: kept with 0 bytes, its CPUs allocate \
                         from other nodes",
                        n.os_id
                    ));
                }
                kept.push(i);
            } else if n.mem_bytes > 0 {
                self.warnings.push(format!(
                    "node {} is memory-only ({} MiB, no online CPU): left out, a homenode node \
                     needs CPUs; its memory is not counted",
                    n.os_id,
                    n.mem_bytes >> 20
                ));
            } else {
                self.warnings.push(format!(
                    "node {} has no online CPU and no memory: left out",
                    n.os_id
                ));
            }
        }
        kept
    }
}
