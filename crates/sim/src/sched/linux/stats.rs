//! Group statistics and classification (`update_sg_lb_stats`, `group_classify`), on PELT.
//!
//! A group's load, utilisation and runnable signals are the sums of its CPUs' PELT averages
//! (`cpu_load`, `cpu_util_cfs`, `cpu_runnable`), its capacity 1024 per CPU; task counts and
//! idle CPUs are instantaneous, as in the kernel. The group type (6.6 `group_classify`):
//! - overloaded: more tasks than CPUs, and either the utilisation exceeds the capacity
//!   less the `imbalance_pct` margin or the runnable signal exceeds the capacity plus it;
//! - has spare: fewer tasks than CPUs, or neither signal near the capacity;
//! - fully busy: otherwise.
//!
//! `avg_load`, load per 1024 of capacity, is computed for overloaded groups only (the kernel
//! computes it for a fully busy group only when it is the local one, in
//! `calculate_imbalance`); [`GroupStats::load_per_cap`] gives it for any group.

use super::topology::Level;
use crate::kernel::pelt::CAPACITY_SCALE;
use crate::kernel::{Kernel, TaskId};
use topo::{CpuId, CpuSet};

/// The kernel's group types, least busy first (the ones the model can produce).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    /// Idle capacity left.
    HasSpare,
    /// Every CPU busy, nobody waiting for long.
    FullyBusy,
    /// More runnable tasks than CPUs, and the signals show it.
    Overloaded,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Signals {
    /// Runnable tasks (`sum_nr_running`).
    pub nr: usize,
    /// CPUs (`group_weight`).
    pub weight: usize,
    pub idle_cpus: usize,
    /// Sums of the CPUs' PELT `load_avg`, `util_avg` (capped per CPU) and `runnable_avg`.
    pub load: f64,
    pub util: f64,
    pub runnable: f64,
}

#[derive(Clone, Copy, Debug)]
pub struct GroupStats {
    pub nr: usize,
    pub weight: usize,
    pub idle_cpus: usize,
    pub load: f64,
    pub util: f64,
    pub kind: GroupType,
    /// Load per 1024 of capacity when overloaded, else 0 (`avg_load`).
    pub avg_load: f64,
}

/// `group_classify` on the group's signals.
pub fn classify(s: &Signals, imbalance_pct: u32) -> GroupType {
    let cap = s.weight as f64 * CAPACITY_SCALE;
    let pct = f64::from(imbalance_pct);
    let util_high = cap * 100.0 < s.util * pct;
    let runnable_high = cap * pct < s.runnable * 100.0;
    if s.nr > s.weight && (util_high || runnable_high) {
        GroupType::Overloaded
    } else if s.nr < s.weight || (!util_high && !runnable_high) {
        GroupType::HasSpare
    } else {
        GroupType::FullyBusy
    }
}

impl GroupStats {
    /// Statistics of each group of `cpu`'s domain at level `lv`, the local group first, into
    /// `out` (cleared first).
    pub fn of_groups_into(k: &Kernel, lv: &Level, cpu: CpuId, out: &mut Vec<Self>) {
        out.clear();
        out.extend(
            lv.groups[cpu]
                .iter()
                .map(|g| GroupStats::of(k, g, lv.imbalance_pct, None)),
        );
    }

    /// Statistics of `group`; with `without`, as if that task were not there
    /// (`update_sg_wakeup_stats`: `cpu_load_without` and the like).
    pub fn of(k: &Kernel, group: &CpuSet, imbalance_pct: u32, without: Option<TaskId>) -> Self {
        let mut s = Signals::default();
        for c in group.iter() {
            let mut n = k.nr_running(c);
            let mut p = k.rq_pelt(c);
            if let Some(t) = without.filter(|&t| k.tasks[t].pelt_cpu == Some(c)) {
                let tp = k.task_pelt(t);
                p.load_avg = (p.load_avg - tp.load_avg).max(0.0);
                p.util_avg = (p.util_avg - tp.util_avg).max(0.0);
                p.runnable_avg = (p.runnable_avg - tp.runnable_avg).max(0.0);
                if k.tasks[t].is_runnable() && k.tasks[t].cpu == c {
                    n -= 1;
                }
            }
            s.nr += n;
            s.weight += 1;
            s.idle_cpus += usize::from(n == 0);
            s.load += p.load_avg;
            s.util += p.util_avg.min(CAPACITY_SCALE);
            s.runnable += p.runnable_avg;
        }
        Self::from_signals(s, imbalance_pct)
    }

    pub fn from_signals(s: Signals, imbalance_pct: u32) -> Self {
        let kind = classify(&s, imbalance_pct);
        let mut g = GroupStats {
            nr: s.nr,
            weight: s.weight,
            idle_cpus: s.idle_cpus,
            load: s.load,
            util: s.util,
            kind,
            avg_load: 0.0,
        };
        if kind == GroupType::Overloaded {
            g.avg_load = g.load_per_cap();
        }
        g
    }

    /// Load per 1024 of capacity.
    pub fn load_per_cap(&self) -> f64 {
        self.load * CAPACITY_SCALE / self.capacity().max(1.0)
    }

    /// `group_capacity`: 1024 per CPU.
    pub fn capacity(&self) -> f64 {
        self.weight as f64 * CAPACITY_SCALE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group of `weight` CPUs running `nr` always-runnable nice-0 tasks spread one per CPU
    /// where they fit: each busy CPU's util converges to 1024, its runnable signal to 1024 per
    /// task on it.
    fn steady(nr: usize, weight: usize) -> Signals {
        let busy = nr.min(weight);
        Signals {
            nr,
            weight,
            idle_cpus: weight - busy,
            load: 1024.0 * nr as f64,
            util: 1024.0 * busy as f64,
            runnable: 1024.0 * nr as f64,
        }
    }

    #[test]
    fn classify_on_signals() {
        // Two tasks on a 4-CPU node: spare capacity.
        assert_eq!(classify(&steady(2, 4), 117), GroupType::HasSpare);
        // One task per CPU: fully busy (util at capacity, runnable not above it).
        assert_eq!(classify(&steady(4, 4), 117), GroupType::FullyBusy);
        // Five on four: runnable 5120 > 4096 x 1.17: overloaded.
        assert_eq!(classify(&steady(5, 4), 117), GroupType::Overloaded);
        // Five tasks that mostly sleep (util and runnable low): not overloaded, and with no
        // signal near capacity it has spare capacity although it has more tasks than CPUs.
        let light = Signals {
            util: 1000.0,
            runnable: 1200.0,
            ..steady(5, 4)
        };
        assert_eq!(classify(&light, 117), GroupType::HasSpare);
        let g = GroupStats::from_signals(steady(5, 4), 117);
        assert!((g.avg_load - 1280.0).abs() < 1e-9);
        assert_eq!(GroupStats::from_signals(steady(4, 4), 117).avg_load, 0.0);
    }
}
