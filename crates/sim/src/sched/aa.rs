//! `aa`: Andrea Arcangeli's NUMA-aware multi-queue scheduler of the 2.4 era.
//!
//! Every task belongs to the node it is on. A CPU looking for work searches the runqueues of
//! its own node first (modelled as the O(1) balancer over the node: every `idle_interval`
//! when idle, every `busy_interval` when busy, and at once when it runs out of work). Only
//! an idle CPU whose node has no waiting task at all searches other nodes, nearest first,
//! and moves one waiting task from the longest queue there to its own queue ("remote
//! pull"). A waking task goes to an idle CPU of its node (its last CPU first), else to a CPU
//! of its node whose current task it preempts, else to an idle CPU of another node, else
//! back to its last CPU.

use super::balance::{QueueBalancer, pull, pull_order};
use super::domain::Domains;
use super::o1::{O1Params, balance_level};
use super::options::SchedOptions;
use super::wake::{idle_elsewhere, idle_on_node, other_nodes_by_distance, preemptable_on_node};
use super::{CpuScheduler, IdleType};
use crate::kernel::{Kernel, KernelParams, TaskId};
use crate::sched::error::OptionError;
use crate::time::Ns;
use topo::{CpuId, NodeId, Topology};

pub struct Aa {
    p: O1Params,
    d: Domains,
    qb: QueueBalancer,
}

impl Aa {
    pub fn new(topo: &Topology, o: &mut SchedOptions) -> Result<Self, OptionError> {
        let p = O1Params::for_2_4(o)?;
        let n = topo.nr_cpus();
        let spans = super::domain::node_spans(topo);
        Ok(Aa {
            d: Domains::new(vec![p.level("NODE", spans)], n),
            qb: QueueBalancer::new(n),
            p,
        })
    }
}

/// Tasks waiting on the runqueues of `node`.
pub fn node_waiting(k: &Kernel, node: NodeId) -> usize {
    k.topo
        .node_cpus(node)
        .iter()
        .map(|c| k.rqs[c].queue.len())
        .sum()
}

/// Pull one waiting task from the nearest other node that has one (longest queue of that
/// node first, ties: lowest CPU). Returns how many moved (0 or 1).
fn remote_pull(k: &mut Kernel, cpu: CpuId) -> usize {
    for node in other_nodes_by_distance(k, k.node_of(cpu)) {
        let mut queues: Vec<CpuId> = k
            .topo
            .node_cpus(node)
            .iter()
            .filter(|&c| !k.rqs[c].queue.is_empty())
            .collect();
        queues.sort_by_key(|&c| (std::cmp::Reverse(k.rqs[c].queue.len()), c));
        for src in queues {
            let cands = pull_order(k, src);
            if pull(k, cpu, &cands, 1, false) > 0 {
                return 1;
            }
        }
    }
    0
}

impl CpuScheduler for Aa {
    fn name(&self) -> &'static str {
        "aa"
    }

    fn options(&self) -> Vec<(String, String)> {
        self.p.describe()
    }

    fn kernel_params(&self) -> KernelParams {
        self.p.kernel.clone()
    }

    fn balance_interval(&self, _k: &Kernel, _cpu: CpuId, idle: bool) -> Ns {
        self.d.tick_interval(idle)
    }

    fn balance(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType) {
        if balance_level(k, &mut self.d, &mut self.qb, &self.p, cpu, 0, idle) > 0 {
            return;
        }
        // Remote only when the own node has nothing runnable waiting, and only for a CPU
        // that needs work (a busy CPU has its own task).
        if idle.is_idle() && k.rqs[cpu].queue.is_empty() && node_waiting(k, k.node_of(cpu)) == 0 {
            remote_pull(k, cpu);
        }
    }

    fn wake_cpu(&mut self, k: &Kernel, task: TaskId) -> CpuId {
        let last = k.tasks[task].cpu;
        let node = k.node_of(last);
        idle_on_node(k, task, node)
            .or_else(|| preemptable_on_node(k, task, node))
            .or_else(|| idle_elsewhere(k, task, node))
            .unwrap_or(last)
    }
}
