//! `linux`: a model of today's Linux CFS/EEVDF load balancer and wake-up placement, with
//! automatic NUMA balancing and the NUMA imbalance rule as options.
//!
//! - Domains come from the topology with the kernel's attributes ([`topology`]).
//! - Wake-up placement: wake-affine between the waker's and the previous CPU, then an idle
//!   sibling in the target's LLC; fork and exec: the idlest group from the highest level with
//!   fork balancing down to the idlest CPU ([`wake`]).
//! - Periodic balancing per level at its own interval (span weight in ms idle, x16 busy), by
//!   one CPU per group; idle CPUs are balanced by a busy CPU's tick while the kernel's
//!   nohz-kick condition holds (2+ tasks on it or 2+ busy CPUs in its LLC), as the idle load
//!   balancer does; new-idle balancing walks all levels ([`lb`]).
//! - NUMA balancing ([`numab`]) runs from the running task's tick.
//!
//! Run order is the kernel model's fair class (`crate::kernel::fair`): EEVDF by default,
//! CFS with `class=cfs`. Every load decision reads PELT signals (`crate::kernel::pelt`): the
//! group statistics ([`stats`]), the imbalance and the tasks it moves ([`lb`]), fork/exec and
//! wake-up placement ([`wake`]) and NUMA balancing's moves ([`numab`]); docs/POLICIES.md has
//! the kernel version of each rule.

pub mod imbalance;
mod lb;
pub mod numab;
pub use crate::kernel::pelt;
pub mod stats;
pub mod topology;
mod wake;

use super::options::{SchedOptions, fmt_duration};
use super::{CpuScheduler, ExecPlacement, IdleType};
use crate::kernel::fair::{FairClass, FairParams};
use crate::kernel::{Kernel, KernelParams, TaskId};
use crate::sched::error::OptionError;
use crate::time::{MS, Ns, US};
use imbalance::NumaImbalance;
use numab::{Mode, NumaBalancing};
use topo::{CpuId, NodeId, Topology};
use topology::Level;

/// `CONFIG_HZ` values the kernel offers (`kernel/Kconfig.hz`).
const HZ_CHOICES: [&str; 4] = ["100", "250", "300", "1000"];

pub struct Linux {
    levels: Vec<Level>,
    rule: NumaImbalance,
    kernel: KernelParams,
    /// `[cpu][level]`: failed balancing passes in a row (`nr_balance_failed`).
    failed: Vec<Vec<u32>>,
    /// `[cpu][level]`: when the level is next due.
    next_balance: Vec<Vec<Ns>>,
    /// Earliest time an idle CPU's level is due (`nohz.next_balance`).
    nohz_next: Ns,
    pub numab: NumaBalancing,
    /// Scratch of `load_balance`: the statistics of the groups of the level being balanced
    /// (kept between passes, so a pass allocates nothing).
    groups: Vec<stats::GroupStats>,
}

impl Linux {
    pub fn new(topo: &Topology, o: &mut SchedOptions) -> Result<Self, OptionError> {
        let mode = Mode::parse(&o.string("numa_balancing", "on"))?;
        let rule = NumaImbalance::parse(&o.string("numa_imbalance", "imb_numa_nr"))?;
        let class = o.choice("class", "eevdf", &FairClass::NAMES)?;
        let class = FairClass::parse(class).unwrap_or(FairClass::Eevdf);
        let mut fair = FairParams::for_cpus(class, topo.nr_cpus());
        fair.base_slice = o.duration("base_slice", fair.base_slice)?.max(1);
        fair.hrtick = o.flag("hrtick", false)?;
        let hz = o.choice("hz", "1000", &HZ_CHOICES)?;
        let kernel = KernelParams {
            timeslice: fair.base_slice,
            tick: 1_000_000_000 / hz.parse::<Ns>().unwrap_or(1000),
            cache_decay: o.duration("migration_cost", 500 * US)?,
            fair: Some(fair),
            ..KernelParams::default()
        };
        let np = numab::Params::from_options(o)?;
        let levels = topology::build(topo);
        let n = topo.nr_cpus();
        let imb: Vec<usize> = (0..topo.nr_nodes())
            .map(|node| {
                let cpu = topo.node_cpus(node).first().unwrap_or(0);
                levels
                    .iter()
                    .find(|l| l.numa)
                    .map_or(1, |l| l.imb_numa_nr[cpu].max(1))
            })
            .collect();
        Ok(Linux {
            failed: vec![vec![0; levels.len()]; n],
            next_balance: vec![vec![0; levels.len()]; n],
            groups: Vec::new(),
            nohz_next: 0,
            numab: NumaBalancing::new(mode, np, rule, n, imb),
            levels,
            rule,
            kernel,
        })
    }

    fn fair(&self) -> FairParams {
        self.kernel
            .fair
            .unwrap_or(FairParams::for_cpus(FairClass::Eevdf, 8))
    }

    /// One `load_balance()` of `cpu` at level `l`. Returns tasks moved.
    fn load_balance(&mut self, k: &mut Kernel, cpu: CpuId, l: usize, idle: IdleType) -> usize {
        let lv = &self.levels[l];
        if !lb::should_balance(k, &lv.groups[cpu][0], cpu, idle) {
            return 0;
        }
        let Some(plan) = lb::plan(k, lv, cpu, idle, self.rule, &mut self.groups) else {
            self.failed[cpu][l] = 0;
            return 0;
        };
        let group = &lv.groups[cpu][plan.group];
        let Some(src) = lb::busiest_queue(k, group, cpu, &plan) else {
            return 0;
        };
        let failed = self.failed[cpu][l];
        let tries = lv.cache_nice_tries;
        let numab = &self.numab;
        let numa = lv.numa;
        let det = lb::detach(k, src, cpu, &plan, idle, failed, failed > tries, |k, t| {
            numab.degrades_locality(k, t, cpu, idle, numa)
        });
        if det.moved > 0 {
            self.failed[cpu][l] = 0;
            return det.moved;
        }
        if idle != IdleType::NewIdle {
            self.failed[cpu][l] += 1;
        }
        let active = plan.kind == lb::Migration::Task
            && self.failed[cpu][l] > tries + 2
            && k.rqs[cpu].curr.is_none();
        if let Some(t) = k.rqs[src]
            .curr
            .filter(|&t| active && k.tasks[t].affinity.contains(cpu))
        {
            k.move_task(t, cpu);
            k.counters.numa.migrations_active_balance += 1;
            self.failed[cpu][l] = tries + 1;
            return 1;
        }
        0
    }

    /// Periodic balancing of `cpu`'s due levels, lowest first.
    fn rebalance(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType) {
        let busy = idle == IdleType::Busy;
        for l in 0..self.levels.len() {
            if k.now < self.next_balance[cpu][l] {
                continue;
            }
            self.next_balance[cpu][l] = k.now + self.levels[l].interval(cpu, busy, k.params.tick);
            if self.load_balance(k, cpu, l, idle) > 0 && !busy {
                return;
            }
        }
    }

    /// The idle load balancer: a busy CPU with company balances the idle CPUs' due levels.
    fn nohz_balance(&mut self, k: &mut Kernel, cpu: CpuId) {
        if k.now < self.nohz_next {
            return;
        }
        let llc = k.topo.llc_cpus(cpu);
        let busy_in_llc = llc.iter().filter(|&c| k.nr_running(c) > 0).count();
        if k.nr_running(cpu) < 2 && busy_in_llc < 2 {
            return;
        }
        let mut next = Ns::MAX;
        for c in 0..k.rqs.len() {
            if k.rqs[c].curr.is_some() {
                continue;
            }
            self.rebalance(k, c, IdleType::Idle);
            if let Some(&n) = self.next_balance[c].iter().min() {
                next = next.min(n);
            }
        }
        self.nohz_next = if next == Ns::MAX { k.now + MS } else { next };
    }
}

impl CpuScheduler for Linux {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn options(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("numa_balancing".into(), self.numab.mode.to_string()),
            ("numa_imbalance".into(), self.rule.to_string()),
            ("class".into(), self.fair().class.name().into()),
            ("base_slice".into(), fmt_duration(self.fair().base_slice)),
            (
                "hz".into(),
                (1_000_000_000 / self.kernel.tick.max(1)).to_string(),
            ),
            (
                "hrtick".into(),
                if self.fair().hrtick { "on" } else { "off" }.into(),
            ),
            (
                "migration_cost".into(),
                fmt_duration(self.kernel.cache_decay),
            ),
        ];
        v.extend(self.numab.p.describe());
        v
    }

    fn kernel_params(&self) -> KernelParams {
        self.kernel.clone()
    }

    fn numa_preferred_nid(&self, task: TaskId) -> Option<NodeId> {
        self.numab.preferred(task)
    }

    fn numa_balancing(&self) -> bool {
        self.numab.mode != Mode::Off
    }

    fn kernel_base(&self) -> &'static str {
        match self.fair().class {
            FairClass::Eevdf => "EEVDF fair class (6.6+), PELT load",
            FairClass::Cfs => "CFS fair class (vruntime, before 6.6), PELT load",
        }
    }

    fn balance_interval(&self, k: &Kernel, cpu: CpuId, idle: bool) -> Ns {
        let tick = k.params.tick;
        let lv = self
            .levels
            .iter()
            .map(|l| l.interval(cpu, !idle, tick))
            .min()
            .unwrap_or(tick);
        if !idle && self.numab.enabled() {
            lv.min(self.numab.p.numa_tick)
        } else {
            lv
        }
    }

    fn balance(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType) {
        match idle {
            IdleType::NewIdle => {
                for l in 0..self.levels.len() {
                    if self.load_balance(k, cpu, l, idle) > 0 {
                        return;
                    }
                }
            }
            IdleType::Idle => self.rebalance(k, cpu, idle),
            IdleType::Busy => {
                self.numab.tick(k, cpu);
                self.rebalance(k, cpu, idle);
                self.nohz_balance(k, cpu);
            }
        }
    }

    fn fork_cpu(&mut self, k: &Kernel, parent_cpu: CpuId, child: TaskId) -> CpuId {
        wake::idlest_cpu(&self.levels, k, child, parent_cpu, self.rule)
    }

    fn exec(&mut self, k: &Kernel, task: TaskId, cpu: CpuId) -> ExecPlacement {
        ExecPlacement {
            cpu: Some(wake::idlest_cpu(&self.levels, k, task, cpu, self.rule)),
            ..Default::default()
        }
    }

    fn wake_cpu(&mut self, k: &Kernel, task: TaskId) -> CpuId {
        wake::wake_cpu(&self.levels, k, task, k.waker_cpu)
    }

    fn home_node(&self, k: &Kernel, task: TaskId) -> Option<topo::NodeId> {
        self.numab.preferred(task).or(k.tasks[task].home_node)
    }
}
