//! Scheduler C: Hohnbaum's simple NUMA scheduler for the 2.5 O(1) scheduler (2.5.4x-2.5.5x).
//!
//! At exec a task goes to the least loaded node and that node's least loaded CPU. Load
//! balancing is the O(1) balancer with a node-sized span: every balancing call (periodic,
//! idle or new-idle) counts, and only every `node_balance_rate`-th call of a CPU looks
//! across nodes, at the busiest node (more than `node_threshold` percent of the own node's
//! load) together with the CPU itself. The kernel's default rate was 10 on most NUMA
//! machines (100 on NUMA-Q, where remote access was far slower).

use super::balance::{QueueBalancer, Threshold};
use super::domain::Domains;
use super::node_balance::{NodeLoads, least_loaded_exec, node_plus, pass};
use super::o1::O1Params;
use super::options::SchedOptions;
use super::{CpuScheduler, ExecPlacement, IdleType};
use crate::kernel::{Kernel, KernelParams, TaskId};
use crate::sched::error::OptionError;
use crate::time::Ns;
use topo::{CpuId, Topology};

pub struct SimpleNuma {
    p: O1Params,
    rate: u32,
    threshold: u32,
    d: Domains,
    qb: QueueBalancer,
    loads: NodeLoads,
    /// Balancing calls of each CPU since its last cross-node call.
    calls: Vec<u32>,
}

impl SimpleNuma {
    pub fn new(topo: &Topology, o: &mut SchedOptions) -> Result<Self, OptionError> {
        let p = O1Params::from_options(o)?;
        let n = topo.nr_cpus();
        let spans = super::domain::node_spans(topo);
        Ok(SimpleNuma {
            rate: o.uint("node_balance_rate", 10)?.clamp(1, 1_000_000) as u32,
            threshold: o.uint("node_threshold", 125)?.clamp(100, 1000) as u32,
            d: Domains::new(vec![p.level("NODE", spans)], n),
            qb: QueueBalancer::new(n),
            loads: NodeLoads::new(n, topo.nr_nodes(), false),
            calls: vec![0; n],
            p,
        })
    }
}

impl CpuScheduler for SimpleNuma {
    fn name(&self) -> &'static str {
        "simple-numa"
    }

    fn options(&self) -> Vec<(String, String)> {
        let mut v = self.p.describe();
        v.push(("node_balance_rate".into(), self.rate.to_string()));
        v.push(("node_threshold".into(), self.threshold.to_string()));
        v
    }

    fn kernel_params(&self) -> KernelParams {
        self.p.kernel.clone()
    }

    fn balance_interval(&self, _k: &Kernel, _cpu: CpuId, idle: bool) -> Ns {
        self.d.tick_interval(idle)
    }

    fn balance(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType) {
        self.calls[cpu] += 1;
        let rule = Threshold::HalfDiff(self.p.imbalance_pct);
        if self.calls[cpu] >= self.rate {
            self.calls[cpu] = 0;
            if let Some(node) = self.loads.busiest_node(k, cpu, self.threshold) {
                let runs = node_plus(k, node, cpu);
                pass(k, &mut self.qb, &self.p, cpu, &runs, idle, rule, false);
                return;
            }
        }
        let runs = self.d.span_runs(0, cpu);
        pass(k, &mut self.qb, &self.p, cpu, runs, idle, rule, false);
    }

    fn exec(&mut self, k: &Kernel, task: TaskId, cpu: CpuId) -> ExecPlacement {
        least_loaded_exec(k, task, cpu, None)
    }
}
