//! Balancing levels (scheduling domains as the balancer sees them): each level has a span per
//! CPU, its own busy and idle intervals, its own `imbalance_pct`, and a `cache_nice_tries`
//! budget: after that many failed passes in a row on a level, the next pass there may move a
//! cache-hot task (as the 2.6 kernel's `nr_balance_failed > cache_nice_tries` test does; the
//! 2.5 O(1) scheduler never did, which is `None`).
//!
//! Periodic balancing runs the levels whose interval has elapsed, lowest first; an idle CPU's
//! new-idle pass runs all of them.

use super::balance::span_runs;
use crate::time::Ns;
use std::ops::Range;
use topo::{CpuId, CpuSet};

/// One balancing level.
#[derive(Clone, Debug)]
pub struct BalanceLevel {
    pub name: String,
    /// Span of each CPU's domain at this level.
    pub spans: Vec<CpuSet>,
    pub busy_interval: Ns,
    pub idle_interval: Ns,
    pub imbalance_pct: u32,
    /// Failed passes after which cache-hot tasks may move (None: never).
    pub cache_nice_tries: Option<u32>,
}

#[derive(Clone, Copy, Debug, Default)]
struct LevelState {
    nr_balance_failed: u32,
}

/// The levels of a scheduler and each CPU's balancing state on them.
#[derive(Clone, Debug)]
pub struct Domains {
    pub levels: Vec<BalanceLevel>,
    state: Vec<Vec<LevelState>>,
    /// `runs[level][cpu]`: the span's runs of consecutive CPUs, as the O(1) balancer's scan
    /// reads them ([`span_runs`]).
    runs: Vec<Vec<Vec<Range<CpuId>>>>,
}

/// A set of level indices (the levels due for a pass), ascending; a bit mask, so that the
/// balance pass of every tick allocates nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DueLevels(u64);

impl DueLevels {
    /// The set of these levels.
    pub fn of(levels: &[usize]) -> Self {
        let mut d = DueLevels::default();
        for &l in levels {
            d.insert(l);
        }
        d
    }

    fn insert(&mut self, level: usize) {
        self.0 |= 1 << level;
    }

    pub fn contains(&self, level: usize) -> bool {
        level < 64 && self.0 & (1 << level) != 0
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The levels, lowest first.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            Some(i)
        })
    }
}

impl Domains {
    pub fn new(levels: Vec<BalanceLevel>, nr_cpus: usize) -> Self {
        let n = levels.len();
        assert!(n <= 64, "at most 64 balancing levels");
        let runs = levels.iter().map(|l| runs_per_cpu(&l.spans)).collect();
        Domains {
            levels,
            state: vec![vec![LevelState::default(); n]; nr_cpus],
            runs,
        }
    }

    /// The span of `cpu` at `level` as runs of consecutive CPUs.
    pub fn span_runs(&self, level: usize, cpu: CpuId) -> &[Range<CpuId>] {
        &self.runs[level][cpu]
    }

    /// Shortest interval of any level: how often the CPU's balance tick must come.
    pub fn tick_interval(&self, idle: bool) -> Ns {
        self.levels
            .iter()
            .map(|l| {
                if idle {
                    l.idle_interval
                } else {
                    l.busy_interval
                }
            })
            .min()
            .unwrap_or(Ns::MAX)
    }

    /// Levels to balance at timer tick number `tick_no` (ticks of length `tick`), lowest
    /// first: a level is due on ticks that are a multiple of its interval, as the 2.5
    /// kernel's `jiffies % interval` test. `new_idle` passes take every level.
    pub fn due(&self, tick_no: u64, tick: Ns, idle: bool, new_idle: bool) -> DueLevels {
        let mut due = DueLevels::default();
        for (i, l) in self.levels.iter().enumerate() {
            let interval = if idle {
                l.idle_interval
            } else {
                l.busy_interval
            };
            // An interval of at most one tick is due every tick (the idle passes): no divisions.
            if new_idle || interval <= tick.max(1) || tick_no % (interval / tick.max(1)) == 0 {
                due.insert(i);
            }
        }
        due
    }

    /// Whether a pass on `level` may move cache-hot tasks.
    pub fn hot_ok(&self, cpu: CpuId, level: usize) -> bool {
        self.levels[level]
            .cache_nice_tries
            .is_some_and(|tries| self.state[cpu][level].nr_balance_failed > tries)
    }

    /// Record the outcome of a pass that found an imbalance on `level`.
    pub fn record(&mut self, cpu: CpuId, level: usize, moved: usize) {
        let st = &mut self.state[cpu][level];
        if moved > 0 {
            st.nr_balance_failed = 0;
        } else {
            st.nr_balance_failed += 1;
        }
    }
}

/// [`span_runs`] of each CPU's span; a span equal to the previous CPU's (every CPU's, on a
/// flat level) takes a copy of its runs instead of walking its bits again.
fn runs_per_cpu(spans: &[CpuSet]) -> Vec<Vec<Range<CpuId>>> {
    let mut runs: Vec<Vec<Range<CpuId>>> = Vec::with_capacity(spans.len());
    for (cpu, span) in spans.iter().enumerate() {
        let r = match runs.last() {
            Some(prev) if spans[cpu - 1] == *span => prev.clone(),
            _ => span_runs(span),
        };
        runs.push(r);
    }
    runs
}

/// The span of the node level for every CPU: the CPUs of its node.
pub fn node_spans(topo: &topo::Topology) -> Vec<topo::CpuSet> {
    topo.cpus
        .iter()
        .map(|c| topo.node_cpus(c.node).clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn levels() -> Vec<BalanceLevel> {
        let span = CpuSet::full(2);
        vec![
            BalanceLevel {
                name: "NODE".into(),
                spans: vec![span.clone(); 2],
                busy_interval: 10 * MS,
                idle_interval: MS,
                imbalance_pct: 125,
                cache_nice_tries: Some(1),
            },
            BalanceLevel {
                name: "NUMA".into(),
                spans: vec![span; 2],
                busy_interval: 40 * MS,
                idle_interval: 4 * MS,
                imbalance_pct: 125,
                cache_nice_tries: None,
            },
        ]
    }

    #[test]
    fn levels_fall_due_by_their_own_interval() {
        let d = Domains::new(levels(), 2);
        assert_eq!(d.tick_interval(false), 10 * MS);
        assert_eq!(d.tick_interval(true), MS);
        assert_eq!(d.due(0, MS, false, false), DueLevels::of(&[0, 1]));
        let mut numa = 0;
        for t in 1..=8u64 {
            let due = d.due(t * 10, MS, false, false);
            assert!(due.contains(0));
            numa += usize::from(due.contains(1));
        }
        assert_eq!(numa, 2, "NUMA level every 4th busy tick");
        assert_eq!(d.due(3, MS, true, false), DueLevels::of(&[0]));
        assert_eq!(d.due(4, MS, true, false), DueLevels::of(&[0, 1]));
        assert_eq!(d.due(7, MS, false, true), DueLevels::of(&[0, 1]));
    }

    #[test]
    fn cache_nice_tries() {
        let mut d = Domains::new(levels(), 2);
        assert!(!d.hot_ok(1, 0));
        d.record(1, 0, 0);
        assert!(!d.hot_ok(1, 0));
        d.record(1, 0, 0);
        assert!(d.hot_ok(1, 0), "after more than cache_nice_tries failures");
        d.record(1, 0, 1);
        assert!(!d.hot_ok(1, 0));
        d.record(1, 1, 0);
        d.record(1, 1, 0);
        assert!(!d.hot_ok(1, 1), "None never allows hot moves");
    }
}
