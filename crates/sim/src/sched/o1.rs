//! Scheduler A: the O(1) scheduler of Linux 2.5.39, NUMA-oblivious.
//!
//! All CPUs form one balancing level: a CPU pulls from the longest runqueue anywhere,
//! every `idle_interval` (1 ms) when idle and every `busy_interval` (250 ms, HZ/4) when busy, when
//! the imbalance reaches `imbalance_pct`. Forked tasks start on their parent's CPU and exec
//! does not move them; a woken task returns to the CPU it last ran on.

use super::balance::{QueueBalancer, pull, pull_order};
use super::domain::{BalanceLevel, Domains};
use super::options::{SchedOptions, fmt_duration};
use super::{CpuScheduler, IdleType};
use crate::kernel::goodness::{self, GoodnessParams};
use crate::kernel::{Kernel, KernelParams};
use crate::sched::error::OptionError;
use crate::time::{MS, Ns};
use topo::{CpuId, CpuSet, Topology};

/// Parameters shared by the 2.5-era schedulers.
#[derive(Clone, Debug, PartialEq)]
pub struct O1Params {
    pub busy_interval: Ns,
    pub idle_interval: Ns,
    pub imbalance_pct: u32,
    /// Most tasks one pass may move (0: up to the imbalance).
    pub max_pull: usize,
    pub kernel: KernelParams,
    /// The scheduler offers the `base` option (the 2.4-era ones), so reports list it.
    pub base_option: bool,
}

/// The balancing defaults of the kernel, or the patch, a scheduler came with (docs/model/
/// §2 gives the sources). `cache_decay` is the kernel's own reading of `cache_decay_ticks`:
/// a task stays cache hot until more than that many ticks have passed, which its boot message
/// prints as `(cache_decay_ticks + 1)` ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Era {
    pub busy_interval: Ns,
    pub cache_decay: Ns,
}

impl Era {
    /// Stock 2.5 (2.5.39 to 2.5.58): `BUSY_REBALANCE_TICK` = HZ/4; ia64 `cache_decay_ticks` =
    /// 10.
    pub const STOCK_2_5: Era = Era {
        busy_interval: 250 * MS,
        cache_decay: 11 * MS,
    };
    /// Erich Focht's pooling and node-affine patches (October 2002): `BUSY_REBALANCE_TICK` =
    /// HZ/5 and ia64 `cache_decay_ticks` = 8.
    pub const FOCHT_2002: Era = Era {
        busy_interval: 200 * MS,
        cache_decay: 9 * MS,
    };
    /// 2.6.0: `BUSY_REBALANCE_TICK` = HZ/5; ia64 `cache_decay_ticks` as in stock 2.5 (10).
    pub const LINUX_2_6_0: Era = Era {
        busy_interval: 200 * MS,
        cache_decay: 11 * MS,
    };
}

impl O1Params {
    /// Read the stock 2.5 defaults and their overrides.
    pub fn from_options(o: &mut SchedOptions) -> Result<Self, OptionError> {
        Self::for_era(o, Era::STOCK_2_5, 0)
    }

    /// For a 2.4-era scheduler: option `base` picks the kernel it runs on, `goodness` (the
    /// 2.4 `goodness()` scheduler, the default: HZ = 1024, a slice of `NICE_TO_TICKS(0)` =
    /// 41 ticks, `PROC_CHANGE_PENALTY` = 20) or `o1` (the 2.5 O(1) base with its defaults).
    pub fn for_2_4(o: &mut SchedOptions) -> Result<Self, OptionError> {
        let base = o.choice("base", "goodness", &["goodness", "o1"])?;
        if base == "o1" {
            let mut p = Self::from_options(o)?;
            p.base_option = true;
            return Ok(p);
        }
        let d = KernelParams::default();
        let tick = goodness::TICK_2_4;
        Ok(O1Params {
            busy_interval: o.duration("busy_interval", 200 * MS)?.max(1),
            idle_interval: o.duration("idle_interval", MS)?.max(1),
            imbalance_pct: o.uint("imbalance_pct", 125)?.clamp(100, 1000) as u32,
            max_pull: o.uint("max_pull", 0)? as usize,
            kernel: KernelParams {
                tick,
                timeslice: o
                    .duration("timeslice", goodness::NICE_TO_TICKS_0 * tick)?
                    .max(1),
                cache_decay: o.duration("cache_decay", 10 * MS)?,
                goodness: Some(GoodnessParams {
                    // The largest the option takes keeps goodness within i32.
                    proc_change_penalty: o.uint("proc_change_penalty", 20)?.min(1 << 20) as i32,
                }),
                ..d
            },
            base_option: true,
        })
    }

    /// The O(1) defaults of `era`, with `max_pull` as the default cap of moves per pass.
    pub fn for_era(o: &mut SchedOptions, era: Era, max_pull: u64) -> Result<Self, OptionError> {
        let d = KernelParams::default();
        Ok(O1Params {
            busy_interval: o.duration("busy_interval", era.busy_interval)?.max(1),
            idle_interval: o.duration("idle_interval", MS)?.max(1),
            imbalance_pct: o.uint("imbalance_pct", 125)?.clamp(100, 1000) as u32,
            max_pull: o.uint("max_pull", max_pull)? as usize,
            kernel: KernelParams {
                // 2.5 O(1): slices from 10 ms (nice 19) to 300 ms (nice -20); nice 0 gets
                // 10 + 290 * 19/39 ms.
                timeslice: o.duration("timeslice", 151 * MS)?.max(1),
                max_sleep_avg: o.duration("max_sleep_avg", 2000 * MS)?.max(1),
                cache_decay: o.duration("cache_decay", era.cache_decay)?,
                // 2.5 STARVATION_LIMIT = 2*HZ (the same era's MAX_SLEEP_AVG; both became
                // 10*HZ in 2.5.64).
                starvation_limit: o.duration("starvation_limit", 2000 * MS)?,
                ..d
            },
            base_option: false,
        })
    }

    pub fn describe(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if self.base_option {
            let base = if self.kernel.goodness.is_some() {
                "goodness"
            } else {
                "o1"
            };
            v.push(("base".into(), base.into()));
        }
        v.extend([
            ("busy_interval".into(), fmt_duration(self.busy_interval)),
            ("idle_interval".into(), fmt_duration(self.idle_interval)),
            ("imbalance_pct".into(), self.imbalance_pct.to_string()),
            (
                "max_pull".into(),
                if self.max_pull == 0 {
                    "imbalance".into()
                } else {
                    self.max_pull.to_string()
                },
            ),
            ("timeslice".into(), fmt_duration(self.kernel.timeslice)),
        ]);
        if let Some(g) = self.kernel.goodness {
            v.push((
                "proc_change_penalty".into(),
                g.proc_change_penalty.to_string(),
            ));
        } else {
            v.push((
                "max_sleep_avg".into(),
                fmt_duration(self.kernel.max_sleep_avg),
            ));
            let limit = self.kernel.starvation_limit;
            let limit = if limit == 0 {
                "off".into()
            } else {
                fmt_duration(limit)
            };
            v.push(("starvation_limit".into(), limit));
        }
        v.push(("cache_decay".into(), fmt_duration(self.kernel.cache_decay)));
        v
    }

    /// How many tasks a pass may move given the imbalance found.
    pub fn pull_limit(&self, idle: IdleType, imbalance: usize) -> usize {
        // 2.5.39 load_balance(): an idle CPU stops after one task, a busy one after
        // `imbalance` tasks.
        let n = if idle.is_idle() { 1 } else { imbalance.max(1) };
        if self.max_pull > 0 {
            n.min(self.max_pull)
        } else {
            n
        }
    }

    /// A balancing level with these intervals and threshold over `spans` (the 2.5 balancer
    /// never moves cache-hot tasks).
    pub fn level(&self, name: &str, spans: Vec<CpuSet>) -> BalanceLevel {
        BalanceLevel {
            name: name.into(),
            spans,
            busy_interval: self.busy_interval,
            idle_interval: self.idle_interval,
            imbalance_pct: self.imbalance_pct,
            cache_nice_tries: None,
        }
    }
}

/// One O(1)-style pass on `level`: find the busiest queue of the span, pull from it.
/// Returns how many tasks moved.
pub fn balance_level(
    k: &mut Kernel,
    d: &mut Domains,
    qb: &mut QueueBalancer,
    p: &O1Params,
    cpu: CpuId,
    level: usize,
    idle: IdleType,
) -> usize {
    let pct = d.levels[level].imbalance_pct;
    let Some(b) = qb.find_busiest(k, cpu, d.span_runs(level, cpu), idle, pct) else {
        return 0;
    };
    let cands = pull_order(k, b.cpu);
    let moved = pull(
        k,
        cpu,
        &cands,
        p.pull_limit(idle, b.imbalance),
        d.hot_ok(cpu, level),
    );
    d.record(cpu, level, moved);
    moved
}

pub struct O1 {
    name: &'static str,
    p: O1Params,
    d: Domains,
    qb: QueueBalancer,
}

impl O1 {
    pub fn new(topo: &Topology, o: &mut SchedOptions) -> Result<Self, OptionError> {
        Self::build(topo, "o1", O1Params::from_options(o)?)
    }

    fn build(topo: &Topology, name: &'static str, p: O1Params) -> Result<Self, OptionError> {
        let n = topo.nr_cpus();
        let d = Domains::new(vec![p.level("FLAT", vec![topo.all_cpus(); n])], n);
        Ok(O1 {
            name,
            qb: QueueBalancer::new(n),
            d,
            p,
        })
    }
}

impl CpuScheduler for O1 {
    fn name(&self) -> &'static str {
        self.name
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
        let due = self.d.due(
            k.tick_no(cpu),
            k.params.tick,
            idle.is_idle(),
            idle == IdleType::NewIdle,
        );
        for level in due.iter() {
            if balance_level(k, &mut self.d, &mut self.qb, &self.p, cpu, level, idle) > 0 {
                return;
            }
        }
    }
}
