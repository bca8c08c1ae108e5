//! Which NUMA node each CPU belongs to, in the kernel's numbering: [`CpuNodeMap`] turns "the
//! CPU a task was seen on" (`processor` of `/proc/PID/stat`) into "the node it ran on", and
//! "the kernel node a page is on" (`numa_maps`) into a node column of a report.
//!
//! The host is read by the topology crate's sysfs reader ([`topo::read_host_detailed`], the
//! reader behind `homenode sim --machine host`, so the daemon's, the benchmark's and the
//! simulator's node numbers agree), optionally split into pseudo-nodes by
//! [`topo::fake_numa`] ([`host_cpu_nodes`]). The topology numbers CPUs and nodes densely from
//! 0; the kernel's numbers may have holes (offline CPUs, memory-only nodes). The map
//! translates.

use std::path::Path;

use topo::{CpuSet, HostTopology, TopoError, Topology};

/// A per-node CPU list that cannot make a map ([`CpuNodeMap::try_from_node_cpus`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NodeMapError {
    #[error("no NUMA nodes")]
    NoNodes,
    #[error("no node has a CPU")]
    NoCpus,
    #[error("CPU {cpu} is in node {first} and node {second}")]
    CpuInTwoNodes {
        cpu: usize,
        first: usize,
        second: usize,
    },
}

/// Kernel CPU number to node index, and kernel memory node to node index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuNodeMap {
    /// `node[kernel cpu]`; `None` for a CPU the map does not know (offline).
    node: Vec<Option<usize>>,
    /// `mem_node[kernel node]`: the node index of memory on that kernel node; `None` for a
    /// node the topology leaves out (memory-only nodes).
    mem_node: Vec<Option<usize>>,
    nr_nodes: usize,
    /// Split into pseudo-nodes.
    fake: bool,
}

impl CpuNodeMap {
    /// `nodes[n]` holds the kernel CPUs of node `n` (kernel node numbers = node indexes). A
    /// CPU listed twice keeps its first node.
    pub fn from_node_cpus(nodes: &[CpuSet]) -> CpuNodeMap {
        let mut node: Vec<Option<usize>> = Vec::new();
        for (n, cpus) in nodes.iter().enumerate() {
            for c in cpus.iter() {
                if c >= node.len() {
                    node.resize(c + 1, None);
                }
                node[c].get_or_insert(n);
            }
        }
        CpuNodeMap {
            node,
            mem_node: (0..nodes.len()).map(Some).collect(),
            nr_nodes: nodes.len(),
            fake: false,
        }
    }

    /// Like [`from_node_cpus`](Self::from_node_cpus), but refuses an empty list, a list
    /// without CPUs and a CPU listed in two nodes.
    pub fn try_from_node_cpus(nodes: &[CpuSet]) -> Result<CpuNodeMap, NodeMapError> {
        if nodes.is_empty() {
            return Err(NodeMapError::NoNodes);
        }
        let mut seen: Vec<Option<usize>> = Vec::new();
        for (n, cpus) in nodes.iter().enumerate() {
            for c in cpus.iter() {
                if c >= seen.len() {
                    seen.resize(c + 1, None);
                }
                if let Some(first) = seen[c] {
                    return Err(NodeMapError::CpuInTwoNodes {
                        cpu: c,
                        first,
                        second: n,
                    });
                }
                seen[c] = Some(n);
            }
        }
        if seen.iter().all(Option::is_none) {
            return Err(NodeMapError::NoCpus);
        }
        Ok(CpuNodeMap::from_node_cpus(nodes))
    }

    /// A topology whose CPU numbers are the kernel's (a spec, or a host without holes).
    pub fn from_topology(t: &Topology) -> CpuNodeMap {
        let nodes: Vec<CpuSet> = t.nodes.iter().map(|n| n.cpus.clone()).collect();
        CpuNodeMap::from_node_cpus(&nodes)
    }

    /// A host read from sysfs (or split by `topo::fake_numa`): kernel CPU `os_cpu[i]` belongs
    /// to the node of topology CPU `i`, memory on kernel node `os_node[i]` to node `i`. Node
    /// indexes are the topology's.
    pub fn from_host(h: &HostTopology) -> CpuNodeMap {
        CpuNodeMap::build(h, &h.topology, false)
    }

    /// The map of a host split into `fake` pseudo-nodes (which the topology crate allows only
    /// on a one-node host); `None` is [`from_host`](Self::from_host). Under a split the memory
    /// stays in the host's one node: node index 0.
    pub fn from_host_split(h: &HostTopology, fake: Option<usize>) -> Result<CpuNodeMap, TopoError> {
        match fake {
            None => Ok(CpuNodeMap::from_host(h)),
            Some(k) => Ok(CpuNodeMap::build(
                h,
                &topo::fake_numa(&h.topology, k)?,
                true,
            )),
        }
    }

    fn build(h: &HostTopology, t: &Topology, fake: bool) -> CpuNodeMap {
        let max_cpu = h.os_cpu.iter().copied().max().unwrap_or(0);
        let mut node = vec![None; max_cpu + 1];
        for (i, &os) in h.os_cpu.iter().enumerate() {
            node[os] = t.cpus.get(i).map(|c| c.node);
        }
        let max_node = h.os_node.iter().copied().max().unwrap_or(0);
        let mut mem_node = vec![None; max_node + 1];
        for (i, &os) in h.os_node.iter().enumerate() {
            mem_node[os] = Some(if fake { 0 } else { i });
        }
        CpuNodeMap {
            node,
            mem_node,
            nr_nodes: t.nr_nodes(),
            fake,
        }
    }

    /// One node holding CPUs `0..nr_cpus`.
    pub fn single(nr_cpus: usize) -> CpuNodeMap {
        CpuNodeMap {
            node: vec![Some(0); nr_cpus.max(1)],
            mem_node: vec![Some(0)],
            nr_nodes: 1,
            fake: false,
        }
    }

    /// The node of kernel CPU `cpu`; `None` for a CPU the map does not know (offline).
    pub fn node_of(&self, cpu: usize) -> Option<usize> {
        self.node.get(cpu).copied().flatten()
    }

    /// The node of kernel CPU `cpu`, a CPU the map does not know (brought online after the
    /// map was read) counting as node 0.
    pub fn node_or_zero(&self, cpu: usize) -> usize {
        self.node_of(cpu).unwrap_or(0)
    }

    pub fn nr_nodes(&self) -> usize {
        self.nr_nodes
    }

    /// Split into pseudo-nodes ([`from_host_split`](Self::from_host_split)).
    pub fn is_fake(&self) -> bool {
        self.fake
    }

    /// Kernel numbers of the CPUs that belong to a node, ascending.
    pub fn cpus(&self) -> Vec<usize> {
        (0..self.node.len())
            .filter(|&c| self.node[c].is_some())
            .collect()
    }

    /// The node index of memory on kernel node `node`; `None` for a node left out of the
    /// topology (a memory-only node).
    pub fn mem_column(&self, node: usize) -> Option<usize> {
        self.mem_node.get(node).copied().flatten()
    }

    /// Bytes per kernel node (as `numa_maps` gives them) to bytes per node index, plus the
    /// bytes on nodes that have no index.
    pub fn mem_columns(&self, per_kernel_node: &[u64]) -> (Vec<u64>, u64) {
        let mut v = vec![0u64; self.nr_nodes];
        let mut other = 0u64;
        for (k, &b) in per_kernel_node.iter().enumerate() {
            match self.mem_column(k).filter(|&c| c < v.len()) {
                Some(c) => v[c] += b,
                None => other += b,
            }
        }
        (v, other)
    }

    /// The kernel CPUs of each node, in the kernel's list format (`0-3,8`).
    pub fn node_lists(&self) -> Vec<String> {
        (0..self.nr_nodes)
            .map(|n| {
                (0..self.node.len())
                    .filter(|&c| self.node[c] == Some(n))
                    .collect::<CpuSet>()
                    .to_list_string()
            })
            .collect()
    }
}

/// The host's CPU to node map: the topology crate's reader of `ROOT/sys/devices/system`
/// (`ROOT` is `/` on a live host, a captured tree in tests), split into `fake` pseudo-nodes
/// when asked. Errors name the file.
pub fn host_cpu_nodes(root: &Path, fake: Option<usize>) -> Result<CpuNodeMap, TopoError> {
    let h = topo::read_host_detailed(root)?;
    CpuNodeMap::from_host_split(&h, fake)
}
