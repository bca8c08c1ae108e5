//! Wake-up placement helpers of the multi-queue schedulers (`aa`, `pmqs`): find an idle CPU
//! or a CPU whose current task the woken task would preempt, within a node or across nodes
//! in order of distance.

use crate::kernel::{Kernel, TaskId};
use topo::{CpuId, NodeId};

/// The CPU runs nothing and has nothing queued.
pub fn cpu_idle(k: &Kernel, cpu: CpuId) -> bool {
    k.rqs[cpu].curr.is_none() && k.rqs[cpu].queue.is_empty()
}

/// An idle CPU of `node` that `t` may use: its last CPU if that one is idle, else the lowest.
pub fn idle_on_node(k: &Kernel, t: TaskId, node: NodeId) -> Option<CpuId> {
    let task = &k.tasks[t];
    let ok = |c: CpuId| task.affinity.contains(c) && cpu_idle(k, c);
    if k.node_of(task.cpu) == node && ok(task.cpu) {
        return Some(task.cpu);
    }
    k.topo.node_cpus(node).iter().find(|&c| ok(c))
}

/// A CPU of `node` whose current task `t` would preempt (its last CPU first, then the CPU
/// where it gains most, lowest number on ties): under the O(1) base the current task has a
/// worse priority, under the 2.4 base a lower goodness (`preemption_goodness > 0`).
pub fn preemptable_on_node(k: &Kernel, t: TaskId, node: NodeId) -> Option<CpuId> {
    let task = &k.tasks[t];
    let gain = |c: CpuId| k.preemption_gain(t, c);
    let ok = |c: CpuId| task.affinity.contains(c) && gain(c).is_some_and(|g| g > 0);
    if k.node_of(task.cpu) == node && ok(task.cpu) {
        return Some(task.cpu);
    }
    k.topo
        .node_cpus(node)
        .iter()
        .filter(|&c| ok(c))
        .max_by_key(|&c| (gain(c), std::cmp::Reverse(c)))
}

/// Other nodes than `node`, nearest first (ties: lowest number).
pub fn other_nodes_by_distance(k: &Kernel, node: NodeId) -> Vec<NodeId> {
    let mut v: Vec<NodeId> = (0..k.topo.nr_nodes()).filter(|&n| n != node).collect();
    v.sort_by_key(|&n| (k.topo.distance(node, n), n));
    v
}

/// An idle CPU on another node than `node`, nearest node first.
pub fn idle_elsewhere(k: &Kernel, t: TaskId, node: NodeId) -> Option<CpuId> {
    other_nodes_by_distance(k, node)
        .into_iter()
        .find_map(|n| idle_on_node(k, t, n))
}
