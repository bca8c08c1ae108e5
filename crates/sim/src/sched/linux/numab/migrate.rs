//! Moving a task to its preferred node (`numa_migrate_preferred`, `task_numa_migrate`,
//! `task_numa_find_cpu`, `task_numa_compare`), and the load balancer's locality check
//! (`migrate_degrades_locality`).
//!
//! Scores are the kernel's: a task's weight on a node is 1000 x its (or its group's) faults
//! there over all its faults; a move needs an improvement, a swap an improvement of at least
//! `SMALLIMP` over the best so far. A plain move is allowed when the destination node has
//! spare CPUs and the imbalance it leaves is tolerated by the NUMA imbalance rule, or when it
//! does not worsen the load imbalance between the two nodes (`load_too_imbalanced`).

use super::{Mode, NumaBalancing};
use crate::kernel::{Kernel, TaskId, TaskState};
use crate::sched::IdleType;
use crate::sched::linux::imbalance::NumaImbalance;
use crate::sched::linux::stats::{GroupStats, GroupType, Signals};
use crate::time::SEC;
use topo::{CpuId, NodeId};

/// `SMALLIMP`: swaps improving less than this (in 1/1000 of faults) are not worth it.
const SMALLIMP: i64 = 30;
/// `task_numa_migrate` classifies nodes with half the NUMA domain's margin:
/// `100 + (imbalance_pct - 100) / 2`, 108 for the kernel's 117.
const NUMA_IMBALANCE_PCT: u32 = 100 + (117 - 100) / 2;

#[derive(Clone, Copy)]
struct Best {
    cpu: CpuId,
    swap: Option<TaskId>,
    imp: i64,
}

impl NumaBalancing {
    fn task_weight(&self, t: TaskId, n: NodeId) -> i64 {
        let st = &self.tasks[t];
        if st.total <= 0.0 {
            return 0;
        }
        (1000.0 * (st.mem[n][0] + st.mem[n][1]) / st.total) as i64
    }

    fn group_weight(&self, k: &Kernel, t: TaskId, n: NodeId) -> Option<i64> {
        let g = self.procs[k.tasks[t].pid].group.as_ref()?;
        if !g.members.contains(&t) {
            return None;
        }
        Some(if g.total <= 0.0 {
            0
        } else {
            (1000.0 * (g.mem[n][0] + g.mem[n][1]) / g.total) as i64
        })
    }

    /// Every `min(1 s, scan_period / 16)`: a task off its preferred node tries to go there.
    pub(super) fn retry_migrate(&mut self, k: &mut Kernel, t: TaskId) {
        let st = &self.tasks[t];
        let Some(pref) = st.preferred else {
            return;
        };
        if k.now < st.migrate_retry {
            return;
        }
        let interval = SEC.min(st.scan_period / 16).max(1);
        self.tasks[t].migrate_retry = k.now + interval;
        if k.node_of(k.tasks[t].cpu) == pref {
            return;
        }
        match self.find_cpu(k, t, pref) {
            Some(b) => {
                let src = k.tasks[t].cpu;
                k.move_task(t, b.cpu);
                match b.swap {
                    Some(o) => {
                        k.move_task(o, src);
                        k.counters.numa.migrations_numa_swap += 1;
                    }
                    None => k.counters.numa.migrations_numa_move += 1,
                }
            }
            None => k.counters.numa.numa_migrate_failed += 1,
        }
    }

    /// `update_numa_stats`: a node's tasks, CPUs and PELT signals, and its type
    /// (`numa_classify`, the group rule of [`crate::sched::linux::stats`]).
    fn node_stats(k: &Kernel, n: NodeId) -> GroupStats {
        let cpus = k.topo.node_cpus(n);
        let mut s = Signals::default();
        for c in cpus.iter() {
            let nr = k.nr_running(c);
            s.nr += nr;
            s.weight += 1;
            s.idle_cpus += usize::from(nr == 0);
            s.load += k.cpu_load(c);
            s.util += k.cpu_util(c);
            s.runnable += k.cpu_runnable(c);
        }
        GroupStats::from_signals(s, NUMA_IMBALANCE_PCT)
    }

    /// `load_too_imbalanced`: would loads `src_load`, `dst_load` after a move leave the two
    /// nodes more imbalanced (relative to their capacities) than they are?
    fn too_imbalanced(src: &GroupStats, dst: &GroupStats, src_load: f64, dst_load: f64) -> bool {
        let (sc, dc) = (src.capacity(), dst.capacity());
        let imb = (dst_load * sc - src_load * dc).abs();
        let old = (dst.load * sc - src.load * dc).abs();
        imb > old
    }

    /// `task_numa_find_cpu`'s `maymove`. Since 5.7: into a node with spare capacity, when
    /// the task-count imbalance the move leaves is tolerated by the NUMA imbalance rule; into
    /// a busy node, when moving the task's load does not worsen the load imbalance. Before
    /// 5.7 (`numa_imbalance=none`), the load test alone.
    fn may_move(&self, k: &Kernel, t: TaskId, src: &GroupStats, dst: &GroupStats) -> bool {
        if dst.kind == GroupType::HasSpare && self.rule != NumaImbalance::None {
            let (sr, dr) = (src.nr as i64 - 1, dst.nr as i64 + 1);
            let imb = (dr - sr).max(0) as usize;
            let nr = dst.weight;
            let src_n = k.node_of(k.tasks[t].cpu);
            let imb_nr = self.imb_numa_nr.get(src_n).copied().unwrap_or(1);
            return match self.rule {
                NumaImbalance::None => imb == 0,
                NumaImbalance::ImbNumaNr => imb == 0 || (imb <= 2 && dr as usize <= imb_nr),
                NumaImbalance::Quarter => imb == 0 || (imb <= 2 && (dr as usize) < nr / 4),
                NumaImbalance::TwoTasks => imb == 0 || sr <= 2,
                NumaImbalance::Rfc2020 => imb == 0 || (sr as usize + 1) * 4 <= nr,
            };
        }
        let load = k.task_pelt(t).load_avg;
        !Self::too_imbalanced(src, dst, src.load - load, dst.load + load)
    }

    /// The best CPU of node `dst_n` for `t`, possibly with a task to swap.
    fn find_cpu(&self, k: &Kernel, t: TaskId, dst_n: NodeId) -> Option<Best> {
        let src_cpu = k.tasks[t].cpu;
        let src_n = k.node_of(src_cpu);
        let taskimp = self.task_weight(t, dst_n) - self.task_weight(t, src_n);
        let groupimp = self
            .group_weight(k, t, dst_n)
            .zip(self.group_weight(k, t, src_n))
            .map(|(d, s)| d - s);
        let imp0 = groupimp.unwrap_or(taskimp);
        let (src_st, dst_st) = (Self::node_stats(k, src_n), Self::node_stats(k, dst_n));
        let maymove = self.may_move(k, t, &src_st, &dst_st);
        let allowed = &k.tasks[t].affinity;
        if maymove {
            if let Some(c) = k
                .topo
                .node_cpus(dst_n)
                .iter()
                .find(|&c| allowed.contains(c) && k.nr_running(c) == 0)
            {
                return Some(Best {
                    cpu: c,
                    swap: None,
                    imp: imp0,
                });
            }
        }
        let mut best: Option<Best> = None;
        for c in k
            .topo
            .node_cpus(dst_n)
            .iter()
            .filter(|&c| allowed.contains(c))
        {
            let best_imp = best.map_or(0, |b| b.imp);
            let Some(cur) = k.rqs[c].curr.filter(|&x| x != t) else {
                if maymove && imp0 > best_imp {
                    best = Some(Best {
                        cpu: c,
                        swap: None,
                        imp: imp0,
                    });
                }
                continue;
            };
            if self.mode != Mode::On || !k.tasks[cur].affinity.contains(src_cpu) {
                continue;
            }
            let mut imp = if k.tasks[cur].pid == k.tasks[t].pid && groupimp.is_some() {
                let i = taskimp + self.task_weight(cur, src_n) - self.task_weight(cur, dst_n);
                i - i / 16
            } else {
                let cw = |n| {
                    self.group_weight(k, cur, n)
                        .unwrap_or_else(|| self.task_weight(cur, n))
                };
                imp0 + cw(src_n) - cw(dst_n)
            };
            let cur_pref = self.preferred(cur);
            if cur_pref == Some(dst_n) {
                imp -= imp / 16;
            }
            if cur_pref == Some(src_n) {
                imp += imp / 8;
            }
            if maymove && imp0 > imp && imp0 > best_imp {
                best = Some(Best {
                    cpu: c,
                    swap: None,
                    imp: imp0,
                });
                continue;
            }
            if imp < SMALLIMP || imp <= best_imp + SMALLIMP / 2 {
                continue;
            }
            // A swap must keep the two nodes' loads balanced too.
            let load = k.task_pelt(t).load_avg - k.task_pelt(cur).load_avg;
            if load != 0.0
                && Self::too_imbalanced(&src_st, &dst_st, src_st.load - load, dst_st.load + load)
            {
                continue;
            }
            if k.tasks[cur].state == TaskState::Running {
                best = Some(Best {
                    cpu: c,
                    swap: Some(cur),
                    imp,
                });
            }
        }
        best.filter(|b| b.imp > 0)
    }

    /// `migrate_degrades_locality` (6.6) for the load balancer moving `t` to `dst` at a
    /// level (`numa`: a NUMA level) in a pass of type `idle`: Some(true) if the move takes it
    /// away from where its faults are (treated as cache hot), Some(false) if it brings it to
    /// its preferred node (not hot, whatever its cache), None to decide by cache hotness.
    /// Leaving the preferred node is hot only while its CPU also runs tasks that do not
    /// prefer that node (`nr_running > nr_preferred_running`); an idle CPU's pass prefers
    /// using the CPU to locality.
    pub fn degrades_locality(
        &self,
        k: &Kernel,
        t: TaskId,
        dst: CpuId,
        idle: IdleType,
        numa: bool,
    ) -> Option<bool> {
        if !self.enabled() || !numa {
            return None;
        }
        let pref = self.preferred(t)?;
        let src = k.tasks[t].cpu;
        let (src_n, dst_n) = (k.node_of(src), k.node_of(dst));
        if src_n == dst_n {
            return None;
        }
        if src_n == pref {
            let rq = &k.rqs[src];
            let preferring = rq
                .curr
                .into_iter()
                .chain(rq.queue.iter())
                .filter(|&x| self.preferred(x) == Some(src_n))
                .count();
            return (rq.nr_running() > preferring).then_some(true);
        }
        if dst_n == pref {
            return Some(false);
        }
        if idle == IdleType::Idle {
            return None;
        }
        let w = |n| {
            self.group_weight(k, t, n)
                .unwrap_or_else(|| self.task_weight(t, n))
        };
        Some(w(dst_n) < w(src_n))
    }
}
