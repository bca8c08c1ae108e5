//! numad's process table: the processes above `min_rss_mib`, each with its CPU use at the last
//! `cpu_samples` cycles (numad judges a process by the largest, so one quiet sample does not
//! drop it), and the candidates of a cycle in numad's order: unbound ones first, largest
//! (CPU x memory) first, then bound ones, the longest-bound first.

use std::collections::{BTreeMap, VecDeque};

use topo::NodeId;

use super::NumadPolicy;
use crate::common::{MIB, Proc};

/// What the model remembers of one process.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct NumadProc {
    start_time: u64,
    /// CPU use at the last cycles, newest last.
    samples: VecDeque<f64>,
    /// When this model last bound it.
    pub(super) bind_ns: Option<u64>,
    /// The nodes this model last bound it to.
    pub(super) nodes: Vec<NodeId>,
}

impl NumadPolicy {
    /// Updates the table: processes above the memory threshold, one CPU sample per cycle (a
    /// process seen for the first time gets none). Returns the tracked PIDs with their start
    /// times.
    pub(super) fn update_table(&mut self, procs: &[Proc]) -> BTreeMap<u32, u64> {
        let min_rss = self.cfg.min_rss_mib.saturating_mul(MIB);
        let tracked: BTreeMap<u32, u64> = procs
            .iter()
            .filter(|p| !p.leave_alone && p.rss > min_rss)
            .map(|p| (p.pid, p.start_time))
            .collect();
        self.procs
            .retain(|pid, st| tracked.get(pid) == Some(&st.start_time));
        for p in procs.iter().filter(|p| tracked.contains_key(&p.pid)) {
            match self.procs.get_mut(&p.pid) {
                Some(st) => {
                    st.samples.push_back(p.cpu);
                    while st.samples.len() > self.cfg.cpu_samples as usize {
                        st.samples.pop_front();
                    }
                }
                None => {
                    self.procs.insert(
                        p.pid,
                        NumadProc {
                            start_time: p.start_time,
                            ..Default::default()
                        },
                    );
                }
            }
        }
        tracked
    }

    /// A process's CPU use as numad sees it: the largest of its samples (0 without one).
    pub(super) fn cpu_used(&self, pid: u32) -> f64 {
        self.procs
            .get(&pid)
            .map_or(0.0, |s| s.samples.iter().copied().fold(0.0, f64::max))
    }

    /// Where it is bound: the home the mechanism reports, else this model's last binding.
    pub(super) fn bound_to(&self, p: &Proc) -> Vec<NodeId> {
        if p.home.is_empty() {
            self.procs
                .get(&p.pid)
                .map(|s| s.nodes.clone())
                .unwrap_or_default()
        } else {
            p.home.clone()
        }
    }

    /// The tracked processes using more than `min_cpu`, in numad's order.
    pub(super) fn candidates<'p>(
        &self,
        procs: &'p [Proc],
        tracked: &BTreeMap<u32, u64>,
    ) -> Vec<&'p Proc> {
        let mut cands: Vec<&Proc> = procs
            .iter()
            .filter(|p| {
                tracked.contains_key(&p.pid)
                    && self.cpu_used(p.pid) > self.cfg.min_cpu
                    && p.allowed.iter().any(|&a| a)
            })
            .collect();
        let magn = |p: &Proc| self.cpu_used(p.pid) * (p.rss / MIB) as f64;
        let bind_ns = |p: &Proc| self.procs.get(&p.pid).and_then(|s| s.bind_ns).unwrap_or(0);
        cands.sort_by(|a, b| {
            let (ua, ub) = (self.bound_to(a).is_empty(), self.bound_to(b).is_empty());
            ub.cmp(&ua).then_with(|| {
                if ua {
                    magn(b).total_cmp(&magn(a)).then(a.pid.cmp(&b.pid))
                } else {
                    bind_ns(a)
                        .cmp(&bind_ns(b))
                        .then(magn(b).total_cmp(&magn(a)))
                        .then(a.pid.cmp(&b.pid))
                }
            })
        });
        cands
    }
}
