//! The host as the daemon sees it: its topology (from sysfs, or split into pseudo-nodes by
//! `--fake-numa`), the translation between the kernel's CPU and node numbers and the
//! topology's dense ones, and the per-node facts read each interval (free memory, idle CPU).
//!
//! Numbering: policies and snapshots use topology numbers; syscalls, `/proc` and the journal
//! use the kernel's. Everything crosses here.

use std::path::Path;

use topo::{CpuSet, HostTopology, NodeId};

use crate::error::ProcError;
use crate::exclude::Machine;
use crate::procfs::cpustat::{self, CpuTimes};
use crate::rates::CpuNodeMap;
use crate::sysfs;

/// Why the host cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(transparent)]
    Topo(#[from] topo::TopoError),
    #[error(transparent)]
    Proc(#[from] ProcError),
}

/// The host.
#[derive(Clone, Debug)]
pub struct Host {
    pub host: HostTopology,
    /// Split by fake NUMA: memory placement is not observable and memory is never moved.
    pub fake: bool,
    pub map: CpuNodeMap,
    /// Facts for the exclusion rules: CPUs in kernel numbering, `node_cpus` indexed by
    /// topology node (pseudo-nodes under fake NUMA), memory nodes in kernel numbering.
    pub machine: Machine,
}

impl Host {
    /// Reads the host under `root`, split into `fake_numa` pseudo-nodes when asked.
    pub fn read(root: &Path, fake_numa: Option<usize>) -> Result<Host, HostError> {
        let mut host = topo::read_host_detailed(root)?;
        if let Some(n) = fake_numa {
            let split = topo::fake_numa(&host.topology, n)?;
            host.os_node = vec![host.os_node.first().copied().unwrap_or(0); n];
            host.topology = split;
        }
        let map = CpuNodeMap::from_host(&host);
        let node_cpus: Vec<CpuSet> = (0..host.topology.nr_nodes())
            .map(|n| {
                host.topology
                    .node_cpus(n)
                    .iter()
                    .map(|c| host.os_cpu[c])
                    .collect()
            })
            .collect();
        let machine = Machine {
            default_cpus: sysfs::default_cpus(root)?,
            memory_nodes: sysfs::memory_nodes(root)?,
            node_cpus,
        };
        Ok(Host {
            host,
            fake: fake_numa.is_some(),
            map,
            machine,
        })
    }

    pub fn topology(&self) -> &topo::Topology {
        &self.host.topology
    }

    pub fn nr_nodes(&self) -> usize {
        self.host.topology.nr_nodes()
    }

    /// Kernel CPU numbers -> topology CPU numbers (CPUs the topology lacks are dropped).
    pub fn topo_cpus(&self, kernel: &CpuSet) -> CpuSet {
        self.host
            .os_cpu
            .iter()
            .enumerate()
            .filter(|(_, os)| kernel.contains(**os))
            .map(|(i, _)| i)
            .collect()
    }

    /// Topology CPU numbers -> kernel CPU numbers.
    pub fn kernel_cpus(&self, cpus: &CpuSet) -> CpuSet {
        cpus.iter()
            .filter_map(|c| self.host.os_cpu.get(c).copied())
            .collect()
    }

    /// Kernel node of topology node `n` (under fake NUMA, the one real node).
    pub fn kernel_node(&self, n: NodeId) -> Option<usize> {
        self.host.os_node.get(n).copied()
    }

    /// Topology node of kernel node `k` (`None` for a node left out, or under fake NUMA).
    pub fn topo_node(&self, k: usize) -> Option<NodeId> {
        if self.fake {
            return None;
        }
        self.host.os_node.iter().position(|&o| o == k)
    }

    /// Resident bytes per topology node from bytes per kernel node. Under fake NUMA where the
    /// memory is cannot be told, so the total is spread evenly over the pseudo-nodes.
    pub fn node_bytes(&self, kernel_bytes: &[u64]) -> Vec<u64> {
        let n = self.nr_nodes();
        if self.fake {
            let total: u64 = kernel_bytes.iter().fold(0, |a, &b| a.saturating_add(b));
            return (0..n as u64)
                .map(|i| total / n as u64 + u64::from(i < total % n as u64))
                .collect();
        }
        let mut out = vec![0u64; n];
        for (k, &b) in kernel_bytes.iter().enumerate() {
            if let Some(t) = self.topo_node(k) {
                out[t] = out[t].saturating_add(b);
            }
        }
        out
    }

    /// Free memory per topology node. Nodes without a `meminfo` (or a kernel without NUMA)
    /// get the topology's size; pseudo-nodes share the real node's free memory evenly.
    pub fn free_bytes(&self, root: &Path) -> Result<Vec<u64>, ProcError> {
        let t = self.topology();
        if self.fake {
            let k = self.kernel_node(0).unwrap_or(0);
            let free = sysfs::node_memory(root, k)?.map_or(t.total_mem_bytes(), |m| m.free);
            let n = self.nr_nodes() as u64;
            return Ok((0..n).map(|_| free / n).collect());
        }
        (0..self.nr_nodes())
            .map(|n| {
                let k = self.kernel_node(n).unwrap_or(n);
                Ok(sysfs::node_memory(root, k)?.map_or(t.nodes[n].mem_bytes, |m| m.free))
            })
            .collect()
    }

    /// Idle CPUs per topology node between two `/proc/stat` reads (a CPU absent from either
    /// read counts as idle: it did nothing the daemon saw).
    pub fn node_idle(&self, earlier: &[CpuTimes], later: &[CpuTimes]) -> Vec<f64> {
        let fracs = cpustat::idle_fractions(earlier, later);
        (0..self.nr_nodes())
            .map(|n| {
                self.machine.node_cpus[n]
                    .iter()
                    .map(|os| {
                        fracs
                            .iter()
                            .find(|(c, _)| *c == os)
                            .map_or(1.0, |(_, f)| *f)
                    })
                    .sum()
            })
            .collect()
    }
}
