//! Group statistics and classification (`update_sg_lb_stats`, `group_classify`).
//!
//! Load is counted in tasks: every task has nice-0 weight and PELT averages are replaced by
//! the instantaneous state (a CPU's utilisation is 1 when it runs something, 0 when idle; its
//! runnable load is its number of runnable tasks).

use super::topology::Level;
use crate::kernel::Kernel;
use topo::{CpuId, CpuSet};

/// The kernel's group types, least busy first (the ones the model can produce).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    /// Idle capacity left.
    HasSpare,
    /// Every CPU busy, nobody waiting for long.
    FullyBusy,
    /// More runnable tasks than CPUs.
    Overloaded,
}

#[derive(Clone, Copy, Debug)]
pub struct GroupStats {
    /// Runnable tasks (`sum_nr_running`).
    pub nr: usize,
    /// CPUs (`group_weight`).
    pub weight: usize,
    pub idle_cpus: usize,
    pub kind: GroupType,
}

impl GroupStats {
    /// Statistics of each group of `cpu`'s domain at level `lv`, the local group first.
    pub fn of_groups(k: &Kernel, lv: &Level, cpu: CpuId) -> Vec<Self> {
        lv.groups[cpu]
            .iter()
            .map(|g| GroupStats::of(k, g, lv.imbalance_pct))
            .collect()
    }

    pub fn of(k: &Kernel, group: &CpuSet, imbalance_pct: u32) -> Self {
        let (mut nr, mut weight, mut idle) = (0, 0, 0);
        for c in group.iter() {
            let n = k.nr_running(c);
            nr += n;
            weight += 1;
            idle += usize::from(n == 0);
        }
        let busy = weight - idle;
        let pct = imbalance_pct as usize;
        let kind = if nr > weight && weight * 100 < nr * pct {
            GroupType::Overloaded
        } else if nr < weight || weight * 100 > busy * pct {
            GroupType::HasSpare
        } else {
            GroupType::FullyBusy
        };
        GroupStats {
            nr,
            weight,
            idle_cpus: idle,
            kind,
        }
    }

    /// Tasks per CPU (`avg_load` over the capacity).
    pub fn avg_load(&self) -> f64 {
        self.nr as f64 / self.weight.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify() {
        let s = |nr, weight, idle| {
            let busy = weight - idle;
            let mut g = GroupStats {
                nr,
                weight,
                idle_cpus: idle,
                kind: GroupType::HasSpare,
            };
            g.kind = if nr > weight {
                GroupType::Overloaded
            } else if nr < weight || weight * 100 > busy * 117 {
                GroupType::HasSpare
            } else {
                GroupType::FullyBusy
            };
            g
        };
        assert_eq!(s(3, 4, 1).kind, GroupType::HasSpare);
        assert_eq!(s(4, 4, 0).kind, GroupType::FullyBusy);
        assert_eq!(s(5, 4, 0).kind, GroupType::Overloaded);
        assert!((s(5, 4, 0).avg_load() - 1.25).abs() < 1e-9);
    }
}
