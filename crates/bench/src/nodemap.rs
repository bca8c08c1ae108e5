//! Which NUMA node each CPU belongs to: the only topology the benchmark needs, to turn "the
//! CPU a worker was seen on" into "the node it ran on", and "the node a page is on" into a
//! column of the report.
//!
//! [`host_cpu_nodes`] is the one place that reads the host: the topology crate's sysfs reader
//! (`topo::read_host_detailed`, the same reader behind `homenode sim --machine host`, so the
//! benchmark's node columns are the simulation's), split into pseudo-nodes by
//! `topo::fake_numa` for `--fake-numa K`.
//!
//! The topology numbers CPUs and nodes densely from 0; the kernel's numbers (in
//! `/proc/PID/stat` and `numa_maps`) may have holes. The map translates.

use crate::error::BenchError;
use std::path::Path;
use topo::{CpuSet, HostTopology, Topology};

/// Kernel CPU to report node, and kernel memory node to report node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuNodeMap {
    /// `node[kernel cpu]`; `None` for a CPU the topology does not have (offline).
    node: Vec<Option<usize>>,
    /// `mem_node[kernel node]`: the report column of memory on that node; `None` for a node
    /// the topology leaves out (memory-only nodes).
    mem_node: Vec<Option<usize>>,
    nr_nodes: usize,
    /// Split into pseudo-nodes.
    fake: bool,
}

impl CpuNodeMap {
    /// A map from per-node CPU sets, kernel numbering = report numbering: `nodes[n]` holds the
    /// CPUs of node `n`.
    pub fn from_node_cpus(nodes: &[CpuSet]) -> Result<CpuNodeMap, String> {
        if nodes.is_empty() {
            return Err("no NUMA nodes".into());
        }
        let mut node: Vec<Option<usize>> = Vec::new();
        for (n, cpus) in nodes.iter().enumerate() {
            for c in cpus.iter() {
                if c >= node.len() {
                    node.resize(c + 1, None);
                }
                if let Some(other) = node[c] {
                    return Err(format!("CPU {c} is in node {other} and node {n}"));
                }
                node[c] = Some(n);
            }
        }
        if node.iter().all(Option::is_none) {
            return Err("no node has a CPU".into());
        }
        Ok(CpuNodeMap {
            node,
            mem_node: (0..nodes.len()).map(Some).collect(),
            nr_nodes: nodes.len(),
            fake: false,
        })
    }

    /// The map of a machine description whose CPU and node numbers are the kernel's.
    pub fn from_topology(t: &Topology) -> CpuNodeMap {
        let sets: Vec<CpuSet> = t.nodes.iter().map(|n| n.cpus.clone()).collect();
        CpuNodeMap::from_node_cpus(&sets).unwrap_or_else(|_| CpuNodeMap::single(t.nr_cpus()))
    }

    /// The map of a host read from sysfs, optionally split into `fake` pseudo-nodes (which
    /// the topology crate allows only on a one-node host). Under a split the memory stays in
    /// the host's one node: it shows in column 0.
    pub fn from_host(h: &HostTopology, fake: Option<usize>) -> Result<CpuNodeMap, BenchError> {
        let split;
        let t = match fake {
            None => &h.topology,
            Some(k) => {
                split = topo::fake_numa(&h.topology, k)?;
                &split
            }
        };
        let max_cpu = h.os_cpu.iter().copied().max().unwrap_or(0);
        let mut node = vec![None; max_cpu + 1];
        for (i, &os) in h.os_cpu.iter().enumerate() {
            node[os] = t.cpus.get(i).map(|c| c.node);
        }
        let max_node = h.os_node.iter().copied().max().unwrap_or(0);
        let mut mem_node = vec![None; max_node + 1];
        for (i, &os) in h.os_node.iter().enumerate() {
            mem_node[os] = Some(if fake.is_some() { 0 } else { i });
        }
        Ok(CpuNodeMap {
            node,
            mem_node,
            nr_nodes: t.nr_nodes(),
            fake: fake.is_some(),
        })
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

    pub fn nr_nodes(&self) -> usize {
        self.nr_nodes
    }

    pub fn is_fake(&self) -> bool {
        self.fake
    }

    /// Kernel numbers of the CPUs that belong to a node, ascending.
    pub fn cpus(&self) -> Vec<usize> {
        (0..self.node.len())
            .filter(|&c| self.node[c].is_some())
            .collect()
    }

    /// The node of kernel CPU `cpu`. A CPU the map does not know (brought online after the
    /// map was read) counts as node 0.
    pub fn node_of(&self, cpu: usize) -> usize {
        self.node.get(cpu).copied().flatten().unwrap_or(0)
    }

    /// The report column of memory on kernel node `node`; `None` for a node left out of the
    /// topology (a memory-only node).
    pub fn mem_column(&self, node: usize) -> Option<usize> {
        self.mem_node.get(node).copied().flatten()
    }

    /// Bytes per kernel node (as `numa_maps` gives them) to bytes per report column, plus the
    /// bytes on nodes that have no column.
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
/// when asked.
pub fn host_cpu_nodes(root: &Path, fake: Option<usize>) -> Result<CpuNodeMap, BenchError> {
    let h = topo::read_host_detailed(root)?;
    CpuNodeMap::from_host(&h, fake)
}
