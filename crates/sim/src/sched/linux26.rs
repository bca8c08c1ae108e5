//! `linux-2.6-numa`: the NUMA scheduler of Linux 2.6.0 (merged in 2.5.59 from Hohnbaum's
//! and Focht's work), before sched_domains.
//!
//! Two balancing levels on the O(1) balancer. Inside the node: every 1 ms when idle, every
//! 200 ms when busy, and at once when a CPU runs out of work. Across nodes: every 5 ms when
//! idle and every 400 ms when busy, the CPU finds the busiest node by a decaying load
//! (`previous / 2 + now`, more than 125% of its own node's) and balances over that node's
//! CPUs plus itself; a running-out-of-work CPU never looks across nodes. When both fall due
//! on the same tick the cross-node pass runs first. A busy CPU acts when the queue length
//! difference is at least a quarter of the busiest queue; idle CPUs may take cache-hot
//! tasks. At exec a task whose CPU holds more than two runnable tasks moves to the least
//! loaded node's least loaded CPU.

use super::balance::{QueueBalancer, Threshold};
use super::domain::{BalanceLevel, Domains, DueLevels};
use super::node_balance::{NodeLoads, least_loaded_exec, node_plus, pass};
use super::o1::{Era, O1Params};
use super::options::{SchedOptions, fmt_duration};
use super::{CpuScheduler, ExecPlacement, IdleType};
use crate::kernel::{Kernel, KernelParams, TaskId};
use crate::sched::error::OptionError;
use crate::time::{MS, Ns};
use topo::{CpuId, Topology};

/// Level indices.
const NODE: usize = 0;
const NUMA: usize = 1;

pub struct Linux26Numa {
    p: O1Params,
    threshold: u32,
    /// Exec leaves a task alone when its CPU holds at most this many runnable tasks.
    exec_stay: usize,
    d: Domains,
    qb: QueueBalancer,
    loads: NodeLoads,
}

impl Linux26Numa {
    pub fn new(topo: &Topology, o: &mut SchedOptions) -> Result<Self, OptionError> {
        let p = O1Params::for_era(o, Era::LINUX_2_6_0, 0)?;
        let n = topo.nr_cpus();
        let node_idle = o.duration("node_idle_interval", 5 * MS)?.max(1);
        let node_busy = o.duration("node_busy_interval", 400 * MS)?.max(1);
        let spans = super::domain::node_spans(topo);
        let numa = BalanceLevel {
            name: "NUMA".into(),
            spans: vec![topo.all_cpus(); n],
            busy_interval: node_busy,
            idle_interval: node_idle,
            imbalance_pct: p.imbalance_pct,
            cache_nice_tries: None,
        };
        Ok(Linux26Numa {
            threshold: o.uint("node_threshold", 125)?.clamp(100, 1000) as u32,
            exec_stay: o.uint("exec_stay", 2)? as usize,
            d: Domains::new(vec![p.level("NODE", spans), numa], n),
            qb: QueueBalancer::new(n),
            loads: NodeLoads::new(n, topo.nr_nodes(), true),
            p,
        })
    }

    fn cross_node(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType) {
        let Some(node) = self.loads.busiest_node(k, cpu, self.threshold) else {
            return;
        };
        let runs = node_plus(k, node, cpu);
        let rule = Threshold::Diff(self.p.imbalance_pct);
        pass(
            k,
            &mut self.qb,
            &self.p,
            cpu,
            &runs,
            idle,
            rule,
            idle.is_idle(),
        );
    }
}

impl CpuScheduler for Linux26Numa {
    fn name(&self) -> &'static str {
        "linux-2.6-numa"
    }

    fn options(&self) -> Vec<(String, String)> {
        let mut v = self.p.describe();
        let numa = &self.d.levels[NUMA];
        v.push((
            "node_idle_interval".into(),
            fmt_duration(numa.idle_interval),
        ));
        v.push((
            "node_busy_interval".into(),
            fmt_duration(numa.busy_interval),
        ));
        v.push(("node_threshold".into(), self.threshold.to_string()));
        v.push(("exec_stay".into(), self.exec_stay.to_string()));
        v
    }

    fn kernel_params(&self) -> KernelParams {
        self.p.kernel.clone()
    }

    fn balance_interval(&self, _k: &Kernel, _cpu: CpuId, idle: bool) -> Ns {
        self.d.tick_interval(idle)
    }

    fn balance(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType) {
        let due = if idle == IdleType::NewIdle {
            DueLevels::of(&[NODE])
        } else {
            self.d
                .due(k.tick_no(cpu), k.params.tick, idle.is_idle(), false)
        };
        if due.contains(NUMA) {
            self.cross_node(k, cpu, idle);
        }
        if due.contains(NODE) {
            let rule = Threshold::Diff(self.p.imbalance_pct);
            pass(
                k,
                &mut self.qb,
                &self.p,
                cpu,
                self.d.span_runs(NODE, cpu),
                idle,
                rule,
                idle.is_idle(),
            );
        }
    }

    fn exec(&mut self, k: &Kernel, task: TaskId, cpu: CpuId) -> ExecPlacement {
        least_loaded_exec(k, task, cpu, Some(self.exec_stay))
    }
}
