//! `pmqs`: IBM's pooled multi-queue scheduler of the 2.4 era.
//!
//! Per-CPU runqueues are grouped in pools, one per node. A CPU looking for work only ever
//! searches the runqueues of its own pool (modelled as the O(1) balancer over the pool, as
//! for `aa`); nothing moves between pools on that path. A waking task goes to an idle CPU
//! of its pool (its last CPU first), else to an idle CPU of another pool (nearest first),
//! else to a CPU of its pool whose current task it preempts, else back to its last CPU.
//!
//! Load moves between pools only through a machine-wide balancer that runs every
//! `balance_period` (500 ms, or `off`): it takes the most and the least loaded pool
//! (runnable tasks per CPU) and moves waiting tasks, one at a time, from the longest runqueue
//! of the first to the shortest runqueue of the second, as long as the move does not make
//! the receiving pool the more loaded one ("remote push").

use super::balance::{QueueBalancer, pull_order};
use super::domain::Domains;
use super::o1::{O1Params, balance_level};
use super::options::{SchedOptions, fmt_duration};
use super::wake::{idle_elsewhere, idle_on_node, preemptable_on_node};
use super::{CpuScheduler, IdleType};
use crate::kernel::{Kernel, KernelParams, TaskId};
use crate::sched::error::OptionError;
use crate::time::{MS, Ns};
use topo::{CpuId, NodeId, Topology};

pub struct Pmqs {
    p: O1Params,
    period: Option<Ns>,
    d: Domains,
    qb: QueueBalancer,
}

impl Pmqs {
    pub fn new(topo: &Topology, o: &mut SchedOptions) -> Result<Self, OptionError> {
        let p = O1Params::for_2_4(o)?;
        let n = topo.nr_cpus();
        let spans = super::domain::node_spans(topo);
        Ok(Pmqs {
            period: o
                .duration_or_off("balance_period", Some(500 * MS))?
                .map(|x| x.max(1)),
            d: Domains::new(vec![p.level("POOL", spans)], n),
            qb: QueueBalancer::new(n),
            p,
        })
    }
}

/// (runnable tasks, CPUs) of a pool.
fn pool_load(k: &Kernel, node: NodeId) -> (usize, usize) {
    (k.node_nr_running(node), k.topo.node_cpus(node).count())
}

/// One move of the inter-pool balancer; false when there is nothing (more) to move.
fn push_one(k: &mut Kernel) -> bool {
    let nodes: Vec<NodeId> = (0..k.topo.nr_nodes())
        .filter(|&n| k.topo.node_cpus(n).count() > 0)
        .collect();
    // Compare t_a / c_a with t_b / c_b without division.
    let per_cpu = |k: &Kernel, a: NodeId, b: NodeId| {
        let ((ta, ca), (tb, cb)) = (pool_load(k, a), pool_load(k, b));
        (ta * cb).cmp(&(tb * ca))
    };
    let Some(&busiest) = nodes
        .iter()
        .min_by(|&&a, &&b| per_cpu(k, b, a).then(a.cmp(&b)))
    else {
        return false;
    };
    let Some(&idlest) = nodes
        .iter()
        .min_by(|&&a, &&b| per_cpu(k, a, b).then(a.cmp(&b)))
    else {
        return false;
    };
    let ((tb, cb), (ti, ci)) = (pool_load(k, busiest), pool_load(k, idlest));
    if busiest == idlest || tb == 0 || (tb - 1) * ci < (ti + 1) * cb {
        return false;
    }
    let longest = |k: &Kernel, n: NodeId| {
        k.topo
            .node_cpus(n)
            .iter()
            .max_by_key(|&c| (k.nr_running(c), std::cmp::Reverse(c)))
    };
    let shortest = |k: &Kernel, n: NodeId| {
        k.topo
            .node_cpus(n)
            .iter()
            .min_by_key(|&c| (k.nr_running(c), c))
    };
    let (Some(src), Some(dst)) = (longest(k, busiest), shortest(k, idlest)) else {
        return false;
    };
    for t in pull_order(k, src) {
        match k.can_migrate(t, dst, false) {
            Ok(()) => {
                k.migrate_queued(t, dst);
                return true;
            }
            Err(r) => k.counters.refuse(r),
        }
    }
    false
}

impl CpuScheduler for Pmqs {
    fn name(&self) -> &'static str {
        "pmqs"
    }

    fn options(&self) -> Vec<(String, String)> {
        let mut v = self.p.describe();
        let period = self.period.map_or("off".to_string(), fmt_duration);
        v.push(("balance_period".into(), period));
        v
    }

    fn kernel_params(&self) -> KernelParams {
        self.p.kernel.clone()
    }

    fn balance_interval(&self, _k: &Kernel, _cpu: CpuId, idle: bool) -> Ns {
        self.d.tick_interval(idle)
    }

    fn balance(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType) {
        balance_level(k, &mut self.d, &mut self.qb, &self.p, cpu, 0, idle);
    }

    fn wake_cpu(&mut self, k: &Kernel, task: TaskId) -> CpuId {
        let last = k.tasks[task].cpu;
        let node = k.node_of(last);
        idle_on_node(k, task, node)
            .or_else(|| idle_elsewhere(k, task, node))
            .or_else(|| preemptable_on_node(k, task, node))
            .unwrap_or(last)
    }

    fn timer_period(&self) -> Option<Ns> {
        self.period
    }

    fn on_timer(&mut self, k: &mut Kernel) {
        // Each move changes the loads; at most as many moves as tasks wait.
        for _ in 0..k.nr_waiting {
            if !push_one(k) {
                break;
            }
        }
    }
}
