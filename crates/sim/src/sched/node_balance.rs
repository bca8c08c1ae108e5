//! Pieces shared by the node-aware O(1) schedulers of 2.5.4x-2.6.0 (`simple-numa`,
//! `linux-2.6-numa`): node loads, the busiest-node search, one O(1) pass over an arbitrary
//! span, and exec placement on the least loaded node.
//!
//! Node load is `10 * runnable tasks / CPUs of the node` (integer, as the kernel computed
//! it to compare nodes of different sizes). The busiest node is the most loaded other node
//! whose load exceeds the own node's by `node_threshold` percent (125 in the kernel). With
//! decay, each CPU keeps its previous view and uses `previous / 2 + now`, so a short peak on
//! a node does not make it look busiest.

use super::balance::{QueueBalancer, Threshold, pull, pull_order, span_runs};
use super::o1::O1Params;
use super::{ExecPlacement, IdleType};
use crate::kernel::{Kernel, TaskId};
use std::ops::Range;
use topo::{CpuId, NodeId};

/// `10 * nr_running / nr_cpus` of a node, as an integer.
pub fn node_load(k: &Kernel, node: NodeId) -> u64 {
    let cpus = k.topo.node_cpus(node).count().max(1) as u64;
    10 * k.node_nr_running(node) as u64 / cpus
}

/// Each CPU's view of every node's load at its previous search (for decay).
#[derive(Clone, Debug)]
pub struct NodeLoads {
    prev: Vec<Vec<u64>>,
    decay: bool,
}

impl NodeLoads {
    pub fn new(nr_cpus: usize, nr_nodes: usize, decay: bool) -> Self {
        NodeLoads {
            prev: vec![vec![0; nr_nodes]; nr_cpus],
            decay,
        }
    }

    /// The busiest node as seen from `cpu`, if one is more than `pct` percent as loaded as
    /// the CPU's own node (ties: lowest node number).
    pub fn busiest_node(&mut self, k: &Kernel, cpu: CpuId, pct: u32) -> Option<NodeId> {
        let own = k.node_of(cpu);
        let nr_nodes = k.topo.nr_nodes();
        let prev = &mut self.prev[cpu];
        let mut load_of = |n: NodeId| {
            let now = node_load(k, n);
            let l = if self.decay { prev[n] / 2 + now } else { now };
            prev[n] = l;
            l
        };
        let this_load = load_of(own);
        let mut max_load = this_load;
        let mut busiest = None;
        for n in (0..nr_nodes).filter(|&n| n != own) {
            let load = load_of(n);
            if load > max_load && 100 * load > u64::from(pct) * this_load {
                max_load = load;
                busiest = Some(n);
            }
        }
        busiest
    }
}

/// One O(1) pass of `cpu` over a span given as its runs of consecutive CPUs
/// ([`super::balance::span_runs`]): find the busiest queue by `rule`, pull from it. `hot_ok`
/// lets cache-hot tasks move. Returns how many tasks moved.
#[allow(clippy::too_many_arguments)]
pub fn pass(
    k: &mut Kernel,
    qb: &mut QueueBalancer,
    p: &O1Params,
    cpu: CpuId,
    runs: &[Range<CpuId>],
    idle: IdleType,
    rule: Threshold,
    hot_ok: bool,
) -> usize {
    let Some(b) = qb.find_busiest_by(k, cpu, runs, idle, rule) else {
        return 0;
    };
    let cands = pull_order(k, b.cpu);
    pull(k, cpu, &cands, p.pull_limit(idle, b.imbalance), hot_ok)
}

/// Exec placement on the least loaded node the task may run on (node load as above, ties:
/// lowest node), on that node's allowed CPU with the fewest runnable tasks (ties: lowest).
/// With `stay_below`, a task whose CPU would hold at most that many runnable tasks
/// (counting itself) stays where it is.
pub fn least_loaded_exec(
    k: &Kernel,
    task: TaskId,
    cpu: CpuId,
    stay_below: Option<usize>,
) -> ExecPlacement {
    // The new task is not queued yet: `nr_running + 1 <= n`.
    if stay_below.is_some_and(|n| k.nr_running(cpu) < n) {
        return ExecPlacement::default();
    }
    let allowed = &k.tasks[task].affinity;
    let node = (0..k.topo.nr_nodes())
        .filter(|&n| k.topo.node_cpus(n).intersects(allowed))
        .min_by_key(|&n| (node_load(k, n), n));
    let Some(node) = node else {
        return ExecPlacement::default();
    };
    let cpu = k
        .topo
        .node_cpus(node)
        .iter()
        .filter(|&c| allowed.contains(c))
        .min_by_key(|&c| (k.nr_running(c), c));
    ExecPlacement {
        cpu,
        home: None,
        alloc_on_home: false,
    }
}

/// The CPUs of `node` plus `cpu` itself (the span of a cross-node pass), as runs.
pub fn node_plus(k: &Kernel, node: NodeId, cpu: CpuId) -> Vec<Range<CpuId>> {
    let mut s = k.topo.node_cpus(node).clone();
    s.insert(cpu);
    span_runs(&s)
}
