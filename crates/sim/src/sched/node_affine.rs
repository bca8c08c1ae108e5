//! Schedulers E and F: the node-affine NUMA scheduler (pooling scheduler with homenodes).
//!
//! CPUs are pooled by node. A CPU balances inside its own node exactly like the O(1)
//! scheduler; only when that finds nothing does it look at other nodes, and it may steal
//! from a remote node only once the remote imbalance has persisted for a delay that is short
//! when the CPU is idle and longer when it is busy, scaled by the node distance.
//!
//! Every task has a homenode. When a CPU looks at remote runqueues, each task there whose
//! homenode is the CPU's node adds `home_bonus` to that queue's load, so queues holding "our"
//! tasks look busier; from the chosen queue it takes its own node's tasks first. Tasks pushed
//! off their node by a load peak are thus pulled back home once their node has room.
//!
//! - `node-affine-static` (E): at exec the task gets the least loaded node as homenode, is
//!   moved to that node's least loaded CPU, and its memory is allocated there.
//! - `node-affine-dynamic` (F): no exec placement; the homenode is recomputed whenever it is
//!   needed as the node holding most of the task's memory.
//! - `pool` (D): the pooling scheduler underneath, without homenodes (no bonus, nothing is
//!   drawn home); exec placement on the least loaded node only with `initial_lb=on`.

use super::balance::{QueueBalancer, pull, pull_order};
use super::domain::Domains;
use super::o1::{O1Params, balance_level};
use super::options::{SchedOptions, fmt_duration};
use super::{CpuScheduler, ExecPlacement, IdleType};
use crate::kernel::{Kernel, KernelParams, TaskId, TaskState};
use crate::sched::error::OptionError;
use crate::time::{MS, Ns};
use topo::{CpuId, CpuSet, NodeId, Topology};

/// Which scheduler of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// E: homenode chosen at exec, memory allocated there.
    Static,
    /// F: homenode = node holding most of the memory.
    Dynamic,
    /// D: pools without homenodes; exec balancing when `initial_lb`.
    Pool { initial_lb: bool },
}

pub struct NodeAffine {
    flavor: Flavor,
    p: O1Params,
    /// Remote steal delay for an idle CPU (scaled by distance / 10).
    delay_idle: Ns,
    /// Remote steal delay for a busy CPU (scaled by distance / 10).
    delay_busy: Ns,
    /// Load bonus of a remote queue per task whose homenode is the balancing CPU's node.
    home_bonus: usize,
    /// Levels: 0 = inside the node, 1 = across nodes.
    d: Domains,
    node_qb: QueueBalancer,
    remote_qb: QueueBalancer,
    /// Since when each CPU has seen a remote imbalance.
    imbalanced_since: Vec<Option<Ns>>,
    node_spans: Vec<CpuSet>,
}

impl NodeAffine {
    pub fn new(topo: &Topology, dynamic: bool, o: &mut SchedOptions) -> Result<Self, OptionError> {
        let flavor = if dynamic {
            Flavor::Dynamic
        } else {
            Flavor::Static
        };
        Self::with_flavor(topo, flavor, o)
    }

    /// Scheduler D, `pool`: options `pool_delay` (idle CPUs), `pool_delay_busy` and
    /// `initial_lb` (off by default, as in the A-F comparison).
    pub fn pool(topo: &Topology, o: &mut SchedOptions) -> Result<Self, OptionError> {
        let initial_lb = o.flag("initial_lb", false)?;
        Self::with_flavor(topo, Flavor::Pool { initial_lb }, o)
    }

    fn with_flavor(
        topo: &Topology,
        flavor: Flavor,
        o: &mut SchedOptions,
    ) -> Result<Self, OptionError> {
        let p = O1Params::from_options(o)?;
        let pool = matches!(flavor, Flavor::Pool { .. });
        let n = topo.nr_cpus();
        let node_spans: Vec<CpuSet> = (0..topo.nr_nodes())
            .map(|i| topo.node_cpus(i).clone())
            .collect();
        let per_cpu_node: Vec<CpuSet> = topo
            .cpus
            .iter()
            .map(|c| node_spans[c.node].clone())
            .collect();
        let levels = vec![
            p.level("NODE", per_cpu_node),
            p.level("NUMA", vec![topo.all_cpus(); n]),
        ];
        let idle_key = if pool {
            "pool_delay"
        } else {
            "pool_delay_idle"
        };
        Ok(NodeAffine {
            flavor,
            delay_idle: o.duration(idle_key, 0)?,
            delay_busy: o.duration("pool_delay_busy", 200 * MS)?,
            home_bonus: if pool {
                0
            } else {
                o.uint("home_bonus", 1)? as usize
            },
            d: Domains::new(levels, n),
            node_qb: QueueBalancer::new(n),
            remote_qb: QueueBalancer::new(n),
            imbalanced_since: vec![None; n],
            node_spans,
            p,
        })
    }

    fn home(&self, k: &Kernel, t: TaskId) -> Option<NodeId> {
        match self.flavor {
            Flavor::Static => return k.tasks[t].home_node,
            Flavor::Pool { .. } => return None,
            Flavor::Dynamic => {}
        }
        let task = &k.tasks[t];
        if task.state != TaskState::Exited {
            return k.task_mem_node(t);
        }
        // An exited task's memory is gone: its home was where its memory was at exit.
        let (node, &bytes) = task
            .mem_at_exit
            .iter()
            .enumerate()
            .max_by_key(|(i, b)| (**b, usize::MAX - i))?;
        (bytes > 0).then_some(node)
    }

    /// Waiting tasks on `cpu` whose homenode is `node`.
    fn homed_on(&self, k: &Kernel, cpu: CpuId, node: NodeId) -> usize {
        k.rqs[cpu]
            .queue
            .iter()
            .filter(|&t| self.home(k, t) == Some(node))
            .count()
    }

    /// The remote CPUs to search: those of nodes at least as loaded (per CPU) as ours.
    fn remote_span(&self, k: &Kernel, node: NodeId) -> CpuSet {
        let load =
            |n: NodeId| k.node_nr_running(n) as f64 / self.node_spans[n].count().max(1) as f64;
        let mine = load(node);
        let mut span = CpuSet::new();
        for (n, cpus) in self.node_spans.iter().enumerate() {
            if n != node && load(n) >= mine {
                span = span.union(cpus);
            }
        }
        span
    }

    fn steal_remote(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType) -> usize {
        let node = k.node_of(cpu);
        let span = self.remote_span(k, node);
        let bonus = self.home_bonus;
        let weights: Vec<usize> = (0..k.rqs.len())
            .map(|c| bonus * self.homed_on(k, c, node))
            .collect();
        let pct = self.d.levels[1].imbalance_pct;
        let found = self
            .remote_qb
            .find_busiest(k, cpu, &span, idle, pct, |c| weights[c]);
        let Some(b) = found else {
            self.imbalanced_since[cpu] = None;
            return 0;
        };
        let since = *self.imbalanced_since[cpu].get_or_insert(k.now);
        let base = if idle.is_idle() {
            self.delay_idle
        } else {
            self.delay_busy
        };
        let dist = u64::from(k.topo.distance(node, k.node_of(b.cpu)));
        if k.now - since < base * dist / 10 {
            return 0;
        }
        let mut cands = pull_order(k, b.cpu);
        // Own tasks first, the rest in the usual order (stable sort keeps it).
        cands.sort_by_key(|&t| self.home(k, t) != Some(node));
        let hot_ok = self.d.hot_ok(cpu, 1);
        let moved = pull(k, cpu, &cands, self.p.pull_limit(idle, b.imbalance), hot_ok);
        self.d.record(cpu, 1, moved);
        if moved > 0 {
            self.imbalanced_since[cpu] = None;
        }
        moved
    }
}

impl CpuScheduler for NodeAffine {
    fn name(&self) -> &'static str {
        match self.flavor {
            Flavor::Static => "node-affine-static",
            Flavor::Dynamic => "node-affine-dynamic",
            Flavor::Pool { .. } => "pool",
        }
    }

    fn options(&self) -> Vec<(String, String)> {
        let mut v = self.p.describe();
        if let Flavor::Pool { initial_lb } = self.flavor {
            v.push(("pool_delay".into(), fmt_duration(self.delay_idle)));
            v.push(("pool_delay_busy".into(), fmt_duration(self.delay_busy)));
            v.push(("initial_lb".into(), on_off(initial_lb).into()));
            return v;
        }
        v.push(("pool_delay_idle".into(), fmt_duration(self.delay_idle)));
        v.push(("pool_delay_busy".into(), fmt_duration(self.delay_busy)));
        v.push(("home_bonus".into(), self.home_bonus.to_string()));
        v
    }

    fn kernel_params(&self) -> KernelParams {
        self.p.kernel.clone()
    }

    fn balance_interval(&self, _k: &Kernel, _cpu: CpuId, idle: bool) -> Ns {
        self.d.tick_interval(idle)
    }

    fn balance(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType) {
        for level in self.d.due(
            k.tick_no(cpu),
            k.params.tick,
            idle.is_idle(),
            idle == IdleType::NewIdle,
        ) {
            let moved = if level == 0 {
                balance_level(k, &mut self.d, &mut self.node_qb, &self.p, cpu, 0, idle)
            } else {
                self.steal_remote(k, cpu, idle)
            };
            if moved > 0 {
                return;
            }
        }
    }

    fn exec(&mut self, k: &Kernel, task: TaskId, _cpu: CpuId) -> ExecPlacement {
        let with_home = match self.flavor {
            Flavor::Static => true,
            Flavor::Pool { initial_lb: true } => false,
            Flavor::Dynamic | Flavor::Pool { initial_lb: false } => {
                return ExecPlacement::default();
            }
        };
        // Least loaded node per CPU among the nodes the task may run on (ties: lowest id),
        // then its least loaded allowed CPU.
        let allowed = &k.tasks[task].affinity;
        let load = |n: NodeId| k.node_nr_running(n) as f64 / self.node_spans[n].count() as f64;
        let node = (0..self.node_spans.len())
            .filter(|&n| self.node_spans[n].intersects(allowed))
            .min_by(|&a, &b| load(a).total_cmp(&load(b)).then(a.cmp(&b)));
        let Some(node) = node else {
            return ExecPlacement::default();
        };
        let cpu = self.node_spans[node]
            .iter()
            .filter(|&c| allowed.contains(c))
            .min_by_key(|&c| (k.nr_running(c), c));
        ExecPlacement {
            cpu,
            home: with_home.then_some(node),
            alloc_on_home: with_home,
        }
    }

    fn home_node(&self, k: &Kernel, task: TaskId) -> Option<NodeId> {
        self.home(k, task)
    }
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}
