//! Fake NUMA: a one-node machine split into pseudo-nodes, so that a one-node development box
//! can exercise multi-node code paths (the daemon's and benchmark's `--fake-numa N`), like the
//! kernel's `numa=fake=N`.
//!
//! The split, for `N` pseudo-nodes of a machine with `C` CPUs:
//! - CPUs in id order, consecutive runs: the first `C % N` pseudo-nodes get `C / N + 1` CPUs,
//!   the others `C / N`. CPU ids are kept.
//! - Memory split evenly (to the byte; the first pseudo-nodes take the remainder).
//! - SLIT 10 local, 20 remote for every pair (a pretend distance: the memory really is one
//!   node's); latency = the machine's local latency x SLIT / 10, as everywhere.
//! - Each pseudo-node's local and remote bandwidth = the node's x its share of the CPUs.
//! - Cores and LLCs are cut at pseudo-node boundaries (SMT siblings or LLC sharers that land on
//!   different pseudo-nodes become separate cores / LLCs, so the nesting core ⊆ LLC ⊆ node
//!   holds); `llc_bytes` is rescaled so that the machine's total LLC capacity is unchanged.
//! - Everything else (clock, MLP, page size, line-transfer and fault costs) is kept.
//!
//! Only one-node machines are split: a machine that already has nodes is refused, since the
//! point is to pretend nodes where there are none.

use std::collections::BTreeMap;

use crate::error::TopoError;
use crate::spec::{LOCAL_DISTANCE, MAX_NODES};
use crate::{Cpu, CpuSet, Node, Topology};

/// SLIT distance between two different pseudo-nodes.
pub const FAKE_REMOTE_DISTANCE: u32 = 20;

/// Splits the one-node machine `topo` into `nodes` pseudo-nodes of consecutive CPUs (see the
/// module documentation). Refuses `nodes == 0`, more nodes than CPUs, and machines that already
/// have more than one node.
pub fn fake_numa(topo: &Topology, nodes: usize) -> Result<Topology, TopoError> {
    let err = |reason: String| TopoError::FakeNuma {
        machine: topo.name.clone(),
        nodes,
        reason,
    };
    if topo.nr_nodes() != 1 {
        return Err(err(format!(
            "the machine already has {} nodes; fake NUMA splits a one-node machine",
            topo.nr_nodes()
        )));
    }
    let ncpu = topo.nr_cpus();
    if nodes == 0 {
        return Err(err("needs at least 1 node".to_string()));
    }
    if nodes > ncpu || nodes > MAX_NODES {
        return Err(err(format!(
            "more nodes than the machine's {ncpu} CPUs (at most {})",
            ncpu.min(MAX_NODES)
        )));
    }
    let orig = &topo.nodes[0];
    let (per, extra) = (ncpu / nodes, ncpu % nodes);
    let mut node_of = Vec::with_capacity(ncpu);
    for k in 0..nodes {
        node_of.extend(std::iter::repeat_n(k, per + usize::from(k < extra)));
    }

    let (cpus, new_llc_count) = split_cpus(topo, &node_of);
    let new_nodes = split_nodes(orig, &node_of, nodes);
    let distance = fake_slit(nodes);
    let local = topo.latency_ns[0][0];
    let latency_ns = distance
        .iter()
        .map(|row| row.iter().map(|&d| local * f64::from(d) / 10.0).collect())
        .collect();

    let old_llcs = {
        let mut v: Vec<usize> = topo.cpus.iter().map(|c| c.llc).collect();
        v.sort_unstable();
        v.dedup();
        v.len().max(1) as u128
    };
    let new_llcs = new_llc_count.max(1) as u128;
    let llc_bytes = u64::try_from(u128::from(topo.cpu_model.llc_bytes) * old_llcs / new_llcs)
        .unwrap_or(u64::MAX);
    let mut cpu_model = topo.cpu_model.clone();
    cpu_model.llc_bytes = llc_bytes.max(1);

    Ok(Topology {
        name: format!("{}-fake-numa-{nodes}", topo.name),
        description: format!(
            "{}; fake NUMA: split into {nodes} pseudo-nodes of consecutive CPUs, memory split \
             evenly, SLIT {LOCAL_DISTANCE} local / {FAKE_REMOTE_DISTANCE} remote (pretend: the \
             memory is one node's)",
            topo.description
        ),
        cpus,
        nodes: new_nodes,
        distance,
        latency_ns,
        cpu_model,
        memory: topo.memory.clone(),
    })
}

/// The CPUs renumbered onto their pseudo-nodes: a core or LLC split by a node boundary
/// becomes one per node. Also the number of LLCs after the split.
fn split_cpus(topo: &Topology, node_of: &[usize]) -> (Vec<Cpu>, usize) {
    let mut cores: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let mut llcs: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let cpus: Vec<Cpu> = topo
        .cpus
        .iter()
        .enumerate()
        .map(|(id, c)| {
            let node = node_of[id];
            let next = cores.len();
            let core = *cores.entry((c.core, node)).or_insert(next);
            let next = llcs.len();
            let llc = *llcs.entry((c.llc, node)).or_insert(next);
            Cpu {
                id,
                node,
                llc,
                core,
            }
        })
        .collect();

    (cpus, llcs.len())
}

/// The pseudo-nodes: their CPUs, an even share of the memory (the remainder a byte each to the
/// first nodes) and of the bandwidth by CPU count.
fn split_nodes(orig: &Node, node_of: &[usize], nodes: usize) -> Vec<Node> {
    let ncpu = node_of.len();
    let mem = orig.mem_bytes;
    let n64 = nodes as u64;
    let new_nodes: Vec<Node> = (0..nodes)
        .map(|k| {
            let set: CpuSet = (0..ncpu).filter(|&c| node_of[c] == k).collect();
            let share = set.count() as f64 / ncpu as f64;
            Node {
                id: k,
                cpus: set,
                mem_bytes: mem / n64 + u64::from((k as u64) < mem % n64),
                bandwidth_gbps: orig.bandwidth_gbps * share,
                remote_bandwidth_gbps: orig.remote_bandwidth_gbps * share,
            }
        })
        .collect();

    new_nodes
}

/// The pretend SLIT: local on the diagonal, [`FAKE_REMOTE_DISTANCE`] elsewhere.
fn fake_slit(nodes: usize) -> Vec<Vec<u32>> {
    (0..nodes)
        .map(|a| {
            (0..nodes)
                .map(|b| {
                    if a == b {
                        LOCAL_DISTANCE
                    } else {
                        FAKE_REMOTE_DISTANCE
                    }
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::parse_synthetic;

    #[test]
    fn splits_consecutively_and_unevenly() {
        let t = parse_synthetic("nodes=1,cpus-per-node=10,smt=2,mem-gib=1").unwrap();
        let f = fake_numa(&t, 3).unwrap();
        let lists: Vec<String> = f.nodes.iter().map(|n| n.cpus.to_list_string()).collect();
        assert_eq!(lists, ["0-3", "4-6", "7-9"]);
        assert_eq!(f.name, format!("{}-fake-numa-3", t.name));
        assert_eq!(f.total_mem_bytes(), t.total_mem_bytes());
        assert_eq!(f.nodes[0].mem_bytes, (1 << 30) / 3 + 1);
        assert_eq!(f.distance[0], vec![10, 20, 20]);
        assert_eq!(f.latency_ns[1][2], t.latency_ns[0][0] * 2.0);
        // SMT pair (6, 7) is cut by the 4-6 / 7-9 boundary: two cores.
        assert_eq!(f.core_cpus(6).to_list_string(), "6");
        assert_eq!(f.core_cpus(4).to_list_string(), "4-5");
        assert_eq!(f.llc_cpus(5), *f.node_cpus(1));
        // One LLC became three; the total capacity is kept.
        assert_eq!(f.cpu_model.llc_bytes * 3, t.cpu_model.llc_bytes);
        let bw: f64 = f.nodes.iter().map(|n| n.bandwidth_gbps).sum();
        assert!((bw - t.nodes[0].bandwidth_gbps).abs() < 1e-9);
        assert!(f.description.contains("fake NUMA"));
    }

    #[test]
    fn refuses_impossible_splits() {
        let t = parse_synthetic("nodes=1,cpus-per-node=2").unwrap();
        for (n, expect) in [
            (0, "at least 1"),
            (3, "more nodes than the machine's 2 CPUs"),
        ] {
            let e = fake_numa(&t, n).unwrap_err().to_string();
            assert!(e.contains(expect) && e.starts_with("fake NUMA with"), "{e}");
        }
        let two = parse_synthetic("nodes=2,cpus-per-node=2").unwrap();
        let e = fake_numa(&two, 2).unwrap_err().to_string();
        assert!(e.contains("already has 2 nodes"), "{e}");
        assert_eq!(fake_numa(&t, 2).unwrap().nr_nodes(), 2);
        assert_eq!(fake_numa(&t, 1).unwrap().nr_nodes(), 1);
    }
}
