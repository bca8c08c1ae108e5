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
use crate::sched::linux::imbalance::NumaImbalance;
use crate::time::SEC;
use topo::{CpuId, NodeId};

/// `SMALLIMP`: swaps improving less than this (in 1/1000 of faults) are not worth it.
const SMALLIMP: i64 = 30;

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

    /// Node load in tasks and CPUs.
    fn node_load(k: &Kernel, n: NodeId) -> (i64, i64) {
        (
            k.node_nr_running(n) as i64,
            k.topo.node_cpus(n).count() as i64,
        )
    }

    /// Would moving load this way make the two nodes' imbalance worse?
    fn too_imbalanced(src: (i64, i64), dst: (i64, i64), src_after: i64, dst_after: i64) -> bool {
        let imb = (dst_after * src.1 - src_after * dst.1).abs();
        let old = (dst.0 * src.1 - src.0 * dst.1).abs();
        imb > old
    }

    fn may_move(&self, k: &Kernel, src_n: NodeId, dst_n: NodeId) -> bool {
        let src = Self::node_load(k, src_n);
        let dst = Self::node_load(k, dst_n);
        if dst.0 < dst.1 {
            let (sr, dr) = (src.0 - 1, dst.0 + 1);
            let imb = (dr - sr).max(0) as usize;
            let nr = k.topo.node_cpus(dst_n).count();
            let imb_nr = self.imb_numa_nr.get(src_n).copied().unwrap_or(1);
            let tolerated = match self.rule {
                NumaImbalance::None => imb == 0,
                NumaImbalance::ImbNumaNr => imb == 0 || (imb <= 2 && dr as usize <= imb_nr),
                NumaImbalance::Quarter => imb == 0 || (imb <= 2 && (dr as usize) < nr / 4),
                NumaImbalance::TwoTasks => imb == 0 || sr <= 2,
                NumaImbalance::Rfc2020 => imb == 0 || (sr as usize + 1) * 4 <= nr,
            };
            if tolerated {
                return true;
            }
        }
        !Self::too_imbalanced(src, dst, src.0 - 1, dst.0 + 1)
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
        let maymove = self.may_move(k, src_n, dst_n);
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

    /// Would moving `t` to `dst` take it away from where its faults are? (Treated as cache hot
    /// by the load balancer.)
    pub fn degrades_locality(&self, k: &Kernel, t: TaskId, dst: CpuId) -> bool {
        if !self.enabled() {
            return false;
        }
        let Some(pref) = self.preferred(t) else {
            return false;
        };
        let (src_n, dst_n) = (k.node_of(k.tasks[t].cpu), k.node_of(dst));
        if src_n == dst_n || dst_n == pref {
            return false;
        }
        if src_n == pref {
            return true;
        }
        let w = |n| {
            self.group_weight(k, t, n)
                .unwrap_or_else(|| self.task_weight(t, n))
        };
        w(dst_n) < w(src_n)
    }
}
