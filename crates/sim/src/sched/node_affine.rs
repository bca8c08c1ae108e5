//! Schedulers D, E and F: Erich Focht's pooling NUMA scheduler (October 2002) and his
//! node-affine scheduler on top of it, for 2.5.39. Balancing is [`super::pooling`]: one task
//! per pass, from the own node first, from the most loaded other node after a steal delay.
//!
//! Every task of E and F has a homenode. A remote runqueue's load counts each task on it
//! homed on the balancing CPU's node once more (`home_bonus`); the task taken is the coolest
//! one, with 100 added for a task homed on the balancing CPU's node and 100 taken off for a
//! task homed on the source's node, so no task is taken away from its homenode; and a CPU
//! running one task away from its homenode pushes it home when a CPU there holds none of the
//! homenode's tasks.
//!
//! - `node-affine-static` (E): at exec the task gets a homenode by the patch's
//!   `sched_best_node` (fewest tasks per CPU, scanned round-robin from the node after the one
//!   chosen last, so ties rotate), moves to its least loaded CPU, and its memory is allocated
//!   there.
//! - `node-affine-dynamic` (F): no exec placement; the homenode is recomputed whenever it is
//!   needed as the node holding most of the task's memory.
//! - `pool` (D): the pooling scheduler without homenodes; exec placement by `sched_best_node`
//!   only with `initial_lb=on`.

use super::domain::Domains;
use super::o1::{Era, O1Params};
use super::options::{SchedOptions, fmt_duration};
use super::pooling::{Homes, PoolBalancer};
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
    /// B: the same code built without NUMA (`CONFIG_NUMA_SCHED=n`): one pool of all CPUs.
    Flat,
}

pub struct NodeAffine {
    flavor: Flavor,
    p: O1Params,
    /// Load bonus of a remote queue per task whose homenode is the balancing CPU's node.
    home_bonus: usize,
    /// One level over each node, for the balancing intervals.
    d: Domains,
    pb: PoolBalancer,
    node_spans: Vec<CpuSet>,
    /// `sched_node`: the node `sched_best_node` chose last (its round-robin start).
    last_exec_node: usize,
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

    /// Scheduler B, `o1-steal1`: Focht's scheduler built without NUMA support (one pool of
    /// every CPU): `CPUS_BALANCED`, the coolest task, one task per pass.
    pub fn flat(topo: &Topology, o: &mut SchedOptions) -> Result<Self, OptionError> {
        Self::with_flavor(topo, Flavor::Flat, o)
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
        let p = O1Params::for_era(o, Era::FOCHT_2002, 1)?;
        let pool = matches!(flavor, Flavor::Pool { .. } | Flavor::Flat);
        let n = topo.nr_cpus();
        let node_spans: Vec<CpuSet> = (0..topo.nr_nodes())
            .map(|i| topo.node_cpus(i).clone())
            .collect();
        let (pools, per_cpu_pool) = if flavor == Flavor::Flat {
            (vec![topo.all_cpus()], vec![topo.all_cpus(); n])
        } else {
            (node_spans.clone(), super::domain::node_spans(topo))
        };
        // D ran with an idle delay of 0 in the A-F comparison; the patches' POOL_DELAY_IDLE is
        // 1 ms and POOL_DELAY_BUSY 20 ms.
        let (delay_idle, delay_busy) = match flavor {
            // One pool: nothing is ever remote, so no delays.
            Flavor::Flat => (0, 0),
            Flavor::Pool { .. } => (
                o.duration("pool_delay", 0)?,
                o.duration("pool_delay_busy", 20 * MS)?,
            ),
            _ => (
                o.duration("pool_delay_idle", MS)?,
                o.duration("pool_delay_busy", 20 * MS)?,
            ),
        };
        Ok(NodeAffine {
            flavor,
            home_bonus: if pool {
                0
            } else {
                o.uint("home_bonus", 1)? as usize
            },
            d: Domains::new(vec![p.level("POOL", per_cpu_pool)], n),
            pb: PoolBalancer::new(topo, pools, (delay_idle, delay_busy), &p),
            node_spans,
            last_exec_node: 0,
            p,
        })
    }

    /// `sched_best_node`: the allowed node with the fewest tasks per CPU (100 x tasks / CPUs,
    /// integer), scanned from the node after the one chosen last; the first minimum wins.
    /// Call `f` with the pooling balancer and what the flavour's homenodes add to it (none
    /// for D and B).
    fn with_homes<R>(&mut self, f: impl FnOnce(&mut PoolBalancer, Option<&Homes>) -> R) -> R {
        let flavor = self.flavor;
        let home = move |k: &Kernel, t: TaskId| home_of(flavor, k, t);
        let homes = Homes {
            home: &home,
            bonus: self.home_bonus,
            by_memory: flavor == Flavor::Dynamic,
        };
        let with = matches!(flavor, Flavor::Static | Flavor::Dynamic);
        f(&mut self.pb, with.then_some(&homes))
    }

    fn best_node(&mut self, k: &Kernel, allowed: &CpuSet) -> Option<NodeId> {
        let n = self.node_spans.len();
        let ok = |i: usize| self.node_spans[i].intersects(allowed);
        let start = (1..=n)
            .map(|i| (self.last_exec_node + i) % n)
            .find(|&i| ok(i))?;
        let mut best: Option<(usize, NodeId)> = None;
        for i in 0..n {
            let node = (start + i) % n;
            let cpus = self.node_spans[node].count();
            if cpus == 0 || !ok(node) {
                continue;
            }
            let load = 100 * k.node_nr_running(node) / cpus;
            if best.is_none_or(|(m, _)| load < m) {
                best = Some((load, node));
            }
        }
        let (_, node) = best?;
        self.last_exec_node = node;
        Some(node)
    }
}

impl CpuScheduler for NodeAffine {
    fn name(&self) -> &'static str {
        match self.flavor {
            Flavor::Static => "node-affine-static",
            Flavor::Dynamic => "node-affine-dynamic",
            Flavor::Pool { .. } => "pool",
            Flavor::Flat => "o1-steal1",
        }
    }

    fn options(&self) -> Vec<(String, String)> {
        let mut v = self.p.describe();
        if self.flavor == Flavor::Flat {
            return v;
        }
        if let Flavor::Pool { initial_lb } = self.flavor {
            v.push(("pool_delay".into(), fmt_duration(self.pb.delay_idle)));
            v.push(("pool_delay_busy".into(), fmt_duration(self.pb.delay_busy)));
            v.push(("initial_lb".into(), on_off(initial_lb).into()));
            return v;
        }
        v.push(("pool_delay_idle".into(), fmt_duration(self.pb.delay_idle)));
        v.push(("pool_delay_busy".into(), fmt_duration(self.pb.delay_busy)));
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
        let due = self.d.due(
            k.tick_no(cpu),
            k.params.tick,
            idle.is_idle(),
            idle == IdleType::NewIdle,
        );
        if due.is_empty() {
            return;
        }
        self.with_homes(|pb, homes| pb.balance(k, cpu, idle.is_idle(), homes));
    }

    fn idle_quiet(&mut self, k: &Kernel, cpu: CpuId) -> Option<Ns> {
        // A skipped tick stands for a pass only if every idle tick runs one (some level is
        // due on each).
        if self.d.tick_interval(true) > k.params.tick.max(1) {
            return None;
        }
        self.with_homes(|pb, homes| pb.idle_quiet(k, cpu, homes))
    }

    fn replay_quiet(&mut self, k: &mut Kernel, cpu: CpuId, first: Ns, every: Ns, n: u64) {
        self.pb.replay_quiet(k, cpu, first, every, n);
    }

    fn exec(&mut self, k: &Kernel, task: TaskId, cpu: CpuId) -> ExecPlacement {
        let with_home = match self.flavor {
            Flavor::Static => true,
            Flavor::Pool { initial_lb: true } => false,
            Flavor::Dynamic | Flavor::Pool { initial_lb: false } | Flavor::Flat => {
                return ExecPlacement::default();
            }
        };
        let allowed = k.tasks[task].affinity.clone();
        let Some(node) = self.best_node(k, &allowed) else {
            return ExecPlacement::default();
        };
        // `sched_best_cpu`: the node's CPU with the shortest runqueue (first on ties), else
        // where the task is.
        let cpu = self.node_spans[node]
            .iter()
            .filter(|&c| allowed.contains(c))
            .min_by_key(|&c| (k.nr_running(c), c))
            .or(Some(cpu));
        ExecPlacement {
            cpu,
            home: with_home.then_some(node),
            alloc_on_home: with_home,
        }
    }

    fn home_node(&self, k: &Kernel, task: TaskId) -> Option<NodeId> {
        home_of(self.flavor, k, task)
    }
}

/// The homenode of `t` under `flavor`: none for D, the exec-time one for E, the node holding
/// most of its memory for F.
fn home_of(flavor: Flavor, k: &Kernel, t: TaskId) -> Option<NodeId> {
    match flavor {
        Flavor::Static => return k.tasks[t].home_node,
        Flavor::Pool { .. } | Flavor::Flat => return None,
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

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}
