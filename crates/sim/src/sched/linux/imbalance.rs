//! The NUMA imbalance rule (`numa_imbalance=`): how much imbalance between NUMA groups the
//! balancer tolerates when the machine is lightly loaded, so that tasks sharing data stay on
//! one node. Each variant is one stage of the kernel's history (docs/POLICIES.md):
//!
//! - `none`: balance NUMA groups like any others (spread by task count or idle CPUs).
//! - `rfc2020`: the 2020 proposal: no NUMA-level move while the source group runs at most a
//!   quarter of its CPUs' worth of tasks and the destination group is idle. It was written
//!   against a kernel that already had the `two-tasks` rule (its diff context keeps the call
//!   of `adjust_numa_imbalance`), so it applies on top of that rule: either one keeps tasks.
//! - `two-tasks` (5.6): an imbalance is ignored while the busiest group runs at most 2 tasks.
//! - `quarter` (5.11): an imbalance of at most 2 tasks is ignored while the busiest group runs
//!   fewer tasks than a quarter of its CPUs.
//! - `imb_numa_nr` (5.18, 12.5% form of 6.0): an imbalance of at most 2 tasks is ignored while
//!   the destination would run at most `imb_numa_nr` tasks.
//!
//! The same test gates fork/exec placement across NUMA groups (`find_idlest_group`), as the
//! kernel does since 5.11; for the two earlier forms this is our choice, so that one rule
//! decides both paths.

use crate::sched::error::OptionError;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaImbalance {
    None,
    Rfc2020,
    TwoTasks,
    Quarter,
    ImbNumaNr,
}

/// The kernel's NUMA_IMBALANCE_MIN.
const IMBALANCE_MIN: usize = 2;

/// Task counts of the groups a decision is about.
#[derive(Clone, Copy, Debug)]
pub struct Pair {
    /// Tasks and CPUs of the group tasks would leave (the busiest group when balancing, the
    /// local group, counting the new task, at fork).
    pub src_running: usize,
    pub src_weight: usize,
    /// Tasks on the group that would receive them (before the move).
    pub dst_running: usize,
    /// Tasks on the local group (the balancing CPU's, or the forking CPU's without the child).
    pub local_running: usize,
    /// CPUs of the NUMA domain.
    pub span_weight: usize,
    pub imb_numa_nr: usize,
}

impl NumaImbalance {
    pub const NAMES: &'static str = "none, rfc2020, two-tasks, quarter, imb_numa_nr";

    /// The rule called `s`, as given to option `numa_imbalance` of scheduler `linux`.
    pub fn parse(s: &str) -> Result<Self, OptionError> {
        Ok(match s {
            "none" => Self::None,
            "rfc2020" => Self::Rfc2020,
            "two-tasks" => Self::TwoTasks,
            "quarter" => Self::Quarter,
            "imb_numa_nr" => Self::ImbNumaNr,
            _ => {
                return Err(OptionError::BadValue {
                    scheduler: "linux".into(),
                    key: "numa_imbalance".into(),
                    value: s.into(),
                    expected: format!("one of {}", Self::NAMES),
                });
            }
        })
    }

    /// Tasks to move when balancing a NUMA level, from the raw task-count (or idle-CPU)
    /// difference `diff`. The kernel halves the difference to get the tasks to move; the
    /// `imb_numa_nr` form (6.0) tests the difference before halving, the others after.
    pub fn lb_tasks(self, diff: usize, p: Pair) -> usize {
        let half = diff / 2;
        match self {
            Self::None => half,
            Self::Rfc2020 if p.src_running * 4 <= p.src_weight && p.dst_running == 0 => 0,
            Self::TwoTasks | Self::Rfc2020 if p.src_running <= IMBALANCE_MIN => 0,
            Self::Quarter if half <= IMBALANCE_MIN && p.src_running < p.src_weight / 4 => 0,
            Self::ImbNumaNr if diff <= IMBALANCE_MIN && p.local_running < p.imb_numa_nr => 0,
            _ => half,
        }
    }

    /// Whether fork/exec placement keeps a new task in the local NUMA group although a group
    /// with more idle CPUs exists (`idle_diff` more).
    pub fn fork_stays(self, idle_diff: usize, p: Pair) -> bool {
        match self {
            Self::None => false,
            Self::Rfc2020 => {
                (p.src_running * 4 <= p.src_weight && p.dst_running == 0)
                    || p.src_running <= IMBALANCE_MIN
            }
            Self::TwoTasks => p.src_running <= IMBALANCE_MIN,
            // 5.11: the local group runs fewer tasks than a quarter of the NUMA domain.
            Self::Quarter => p.local_running < p.span_weight / 4,
            Self::ImbNumaNr => idle_diff <= IMBALANCE_MIN && p.local_running < p.imb_numa_nr,
        }
    }
}

impl fmt::Display for NumaImbalance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::None => "none",
            Self::Rfc2020 => "rfc2020",
            Self::TwoTasks => "two-tasks",
            Self::Quarter => "quarter",
            Self::ImbNumaNr => "imb_numa_nr",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(src: usize, dst: usize) -> Pair {
        Pair {
            src_running: src,
            src_weight: 24,
            dst_running: dst,
            local_running: dst,
            span_weight: 96,
            imb_numa_nr: 3,
        }
    }

    #[test]
    fn rules() {
        use NumaImbalance as R;
        assert_eq!(R::None.lb_tasks(4, pair(4, 0)), 2);
        assert_eq!(R::Rfc2020.lb_tasks(4, pair(4, 0)), 0);
        assert_eq!(R::Rfc2020.lb_tasks(4, pair(4, 1)), 2);
        assert_eq!(R::Rfc2020.lb_tasks(7, pair(7, 0)), 3);
        assert_eq!(R::TwoTasks.lb_tasks(2, pair(2, 0)), 0);
        assert_eq!(R::TwoTasks.lb_tasks(4, pair(4, 0)), 2);
        assert_eq!(R::Quarter.lb_tasks(4, pair(4, 0)), 0);
        assert_eq!(R::Quarter.lb_tasks(6, pair(6, 0)), 3);
        assert_eq!(
            R::ImbNumaNr.lb_tasks(4, pair(4, 0)),
            2,
            "diff 4 > 2 before halving"
        );
        assert_eq!(R::ImbNumaNr.lb_tasks(2, pair(3, 1)), 0);
        assert!(R::ImbNumaNr.fork_stays(2, pair(3, 2)));
        assert!(!R::ImbNumaNr.fork_stays(2, pair(4, 3)));
        assert!(R::Rfc2020.fork_stays(4, pair(4, 0)));
        // The RFC patched a kernel with the two-task rule: that rule still holds under it,
        // where the RFC's own test (destination idle) does not.
        assert_eq!(R::Rfc2020.lb_tasks(2, pair(2, 1)), 0);
        assert!(R::Rfc2020.fork_stays(2, pair(2, 1)));
        assert_eq!(R::Rfc2020.lb_tasks(6, pair(3, 1)), 3);
        assert!(!R::None.fork_stays(1, pair(1, 0)));
        let e = NumaImbalance::parse("half").unwrap_err().to_string();
        assert!(
            e.contains("numa_imbalance") && e.contains("imb_numa_nr"),
            "{e}"
        );
    }
}
