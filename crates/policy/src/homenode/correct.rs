//! Step 2b, *correct*: a home that is clearly wrong is corrected without waiting out
//! `min_dwell_s`. Clearly wrong: at least `correct_memory_pct` of the process's memory is on
//! another node, and that node is the home rule 1 would give it now (it has room and stays
//! balanced, with the process taken out of its current home). Rather than migrate nearly all
//! of its memory to a home that was only second best when it was chosen (the memory node was
//! full then), the process goes back to its memory.
//!
//! Not when the kernel's NUMA balancing prefers the current home: it migrates the pages
//! there itself, and moving the process would pull against it.
//!
//! Nor within `min_dwell_s` of a rebalancing move: the rebalancer chose to move the process
//! away from its memory, weighing the bytes to migrate, and its memory follows it.
//!
//! Also clearly wrong: a home with fewer CPUs than the process has busy threads (its width),
//! when a home for its width exists now. A process homed while it had one thread and then
//! started more is otherwise confined for good: the rebalancer moves a process only to one
//! node that fits all of it (the repository's `shared-writer.toml` under `sim workload
//! --placement ... --notes`: eight busy threads on a home of four CPUs while three nodes
//! idled). The new home is the one step 2 would give it now, the process taken out of its
//! current home, and is taken only if it has more CPUs for it.
//!
//! The widening's counterpart is not urgent: a home *set* whose process now fits fewer of its
//! nodes (its busy threads went back down: a parallel phase ended) is narrowed to the home
//! step 2 would give it now, when that is a part of the set. Its memory on the nodes dropped
//! then comes home at step 4's rate. Kept on a set, the process keeps running on, and
//! first-touching memory on, nodes it no longer needs. As a set is not clearly wrong, it
//! waits out `min_dwell_s` since the process's last move, and the same streak.
//!
//! Hysteresis: the verdict, with the same target node, must hold for `correct_intervals`
//! decisions in a row (one decision can see a transient: a burst, memory sampled mid-move),
//! a process is corrected at most once per `min_dwell_s`, and a correction counts as a move
//! for the rebalancer's dwell, so a corrected process is not moved on by the rebalancer
//! either.

use topo::NodeId;

use super::homes::{HomeChoice, threads};
use super::{Decision, HomenodePolicy, comm};
use crate::action::Action;
use crate::common::{fmt_bytes, fmt_home, fmt_nodes, pct};

impl HomenodePolicy {
    /// Corrects clearly wrong homes, at most `max_moves_per_interval` per decision (a count the
    /// rebalancer then shares).
    pub(super) fn correct(&mut self, d: &mut Decision<'_, '_>) {
        for i in 0..d.procs.len() {
            let wider = self.outgrown(d, i);
            let narrower = wider.is_none().then(|| self.narrowed(d, i)).flatten();
            if let Some(st) = self.procs.get_mut(&d.procs[i].pid) {
                st.outgrown_streak = if wider.is_some() {
                    st.outgrown_streak.saturating_add(1)
                } else {
                    0
                };
                st.narrow_streak = if narrower.is_some() {
                    st.narrow_streak.saturating_add(1)
                } else {
                    0
                };
                let due = |streak: u32| {
                    streak >= self.cfg.correct_intervals
                        && d.moves < self.cfg.max_moves_per_interval
                };
                if let Some(choice) = wider {
                    if due(st.outgrown_streak) {
                        self.rehome_for_width(d, i, choice);
                    }
                    continue;
                }
                if let Some(choice) = narrower {
                    if due(st.narrow_streak) {
                        self.rehome_for_width(d, i, choice);
                    }
                    continue;
                }
            }
            let verdict = self.wrong_home(d, i);
            let Some(st) = self.procs.get_mut(&d.procs[i].pid) else {
                continue;
            };
            match verdict {
                Some(x) if st.wrong_target == Some(x) => {
                    st.wrong_streak = st.wrong_streak.saturating_add(1);
                }
                Some(x) => {
                    st.wrong_target = Some(x);
                    st.wrong_streak = 1;
                }
                None => {
                    st.wrong_target = None;
                    st.wrong_streak = 0;
                }
            }
            let due = st.wrong_streak >= self.cfg.correct_intervals;
            if let (Some(x), true) = (verdict, due) {
                if d.moves < self.cfg.max_moves_per_interval {
                    self.rehome_to_memory(d, i, x);
                }
            }
        }
    }

    /// The node `i`'s home should clearly be on, if its single-node home is clearly wrong.
    fn wrong_home(&self, d: &Decision<'_, '_>, i: usize) -> Option<NodeId> {
        let p = &d.procs[i];
        if p.leave_alone || d.touched[i] || !self.significant(p) || p.rss == 0 {
            return None;
        }
        let h = match d.homes[i].as_deref() {
            Some(&[h]) => h,
            _ => return None,
        };
        let st = self.procs.get(&p.pid)?;
        let now = d.snap.now_ns;
        let recent = |t: Option<u64>| {
            t.is_some_and(|t| (now.saturating_sub(t) as f64) < self.cfg.min_dwell_s * 1e9)
        };
        if recent(st.corrected_ns) || recent(st.rebalanced_ns) {
            return None;
        }
        // The kernel's NUMA balancing agrees with the home: it brings the memory itself.
        if p.hint == Some(h) {
            return None;
        }
        let x = p.memory_node().filter(|&x| x != h)?;
        if (p.bytes[x] as f64) * 100.0 < f64::from(self.cfg.correct_memory_pct) * p.rss as f64 {
            return None;
        }
        let mut base = d.model.clone();
        base.apply(d.snap.topo, p, Some(&[h]), -1.0);
        self.memory_home_now(d.snap.topo, &d.m, p, &base)
            .filter(|&n| n == x)
    }

    /// The home for `i`'s width now, if its busy threads outnumber its home's CPUs and step 2
    /// would give it a home with more CPUs for it.
    fn outgrown(&self, d: &Decision<'_, '_>, i: usize) -> Option<HomeChoice> {
        let p = &d.procs[i];
        if p.leave_alone || d.touched[i] || !self.significant(p) {
            return None;
        }
        let h = d.homes[i].as_deref()?;
        let have = p.cpu_count_of(h);
        if p.width as usize <= have {
            return None;
        }
        let st = self.procs.get(&p.pid)?;
        let now = d.snap.now_ns;
        if st
            .corrected_ns
            .is_some_and(|t| (now.saturating_sub(t) as f64) < self.cfg.min_dwell_s * 1e9)
        {
            return None;
        }
        let mut base = d.model.clone();
        base.apply(d.snap.topo, p, Some(h), -1.0);
        self.choose_home(d.snap.topo, &d.m, p, &base)
            .filter(|c| p.cpu_count_of(&c.nodes) > have)
    }

    /// The part of `i`'s home set that step 2 would give it now, if its busy threads fit
    /// fewer of the set's nodes and it last moved at least `min_dwell_s` ago.
    fn narrowed(&self, d: &Decision<'_, '_>, i: usize) -> Option<HomeChoice> {
        let p = &d.procs[i];
        if p.leave_alone || d.touched[i] || !self.significant(p) {
            return None;
        }
        let h = d.homes[i].as_deref().filter(|h| h.len() > 1)?;
        let largest = h.iter().map(|&n| p.node_cpus[n]).max().unwrap_or(0);
        if p.width as usize > largest {
            return None;
        }
        let st = self.procs.get(&p.pid)?;
        let now = d.snap.now_ns;
        let dwelt = |t: Option<u64>| {
            t.is_none_or(|t| (now.saturating_sub(t) as f64) >= self.cfg.min_dwell_s * 1e9)
        };
        if !dwelt(st.last_move_ns) || !dwelt(st.corrected_ns) {
            return None;
        }
        let mut base = d.model.clone();
        base.apply(d.snap.topo, p, Some(h), -1.0);
        self.choose_home(d.snap.topo, &d.m, p, &base).filter(|c| {
            c.nodes.len() < h.len()
                && c.nodes.iter().all(|n| h.contains(n))
                && p.cpu_count_of(&c.nodes) >= p.width as usize
        })
    }

    /// Gives `i` the home `choice` for its width: wider when its busy threads outgrew its
    /// home, a part of its home set when they fit one.
    fn rehome_for_width(&mut self, d: &mut Decision<'_, '_>, i: usize, choice: HomeChoice) {
        let p = &d.procs[i];
        let h = d.homes[i].clone().unwrap_or_default();
        let have = p.cpu_count_of(&h);
        let (pid, comm, n) = (p.pid, comm(d.snap, p), self.cfg.correct_intervals);
        let reason = if p.width as usize > have {
            format!(
                "correct: pid {pid} ({comm}) has {} busy threads, more than the {have} CPUs of its home {}, for {n} decisions in a row (without waiting out min_dwell_s); {}",
                p.width,
                fmt_home(&h),
                choice.reason,
            )
        } else {
            let fit = if p.width == 1 { "fits" } else { "fit" };
            format!(
                "correct: pid {pid} ({comm}) has {} busy, which {fit} a part of its home {} ({have} CPUs), for {n} decisions in a row, min_dwell_s after its last move; {}",
                threads(p.width),
                fmt_home(&h),
                choice.reason,
            )
        };
        self.correct_to(d, i, choice.nodes, reason);
    }

    /// Moves `i`'s home to node `x`, where its memory is.
    fn rehome_to_memory(&mut self, d: &mut Decision<'_, '_>, i: usize, x: NodeId) {
        let p = &d.procs[i];
        let h = d.homes[i].clone().unwrap_or_default();
        let reason = format!(
            "correct: pid {} ({}) has {} of its {} on node {x}, which has room for it and stays balanced, for {} decisions in a row; home node {x} instead of {} (without waiting out min_dwell_s)",
            p.pid,
            comm(d.snap, p),
            pct(p.bytes[x], p.rss),
            fmt_bytes(p.rss),
            self.cfg.correct_intervals,
            fmt_nodes(&h),
        );
        self.correct_to(d, i, vec![x], reason);
    }

    /// The `SetHome` of a correction of `i`'s home to `nodes`, and its bookkeeping: the model
    /// counts it there, the dwell starts, and both verdicts' streaks start again.
    fn correct_to(
        &mut self,
        d: &mut Decision<'_, '_>,
        i: usize,
        nodes: Vec<NodeId>,
        reason: String,
    ) {
        let (topo, now) = (d.snap.topo, d.snap.now_ns);
        let p = &d.procs[i];
        let h = d.homes[i].clone().unwrap_or_default();
        d.model.apply(topo, p, Some(&h), -1.0);
        d.model.apply(topo, p, Some(&nodes), 1.0);
        let allowed_cpus = &d.snap.processes[p.idx].allowed_cpus;
        d.actions.push(Action::SetHome {
            pid: p.pid,
            start_time: p.start_time,
            cpus: p.cpus_of(topo, &nodes, allowed_cpus),
            nodes: nodes.clone(),
            reason,
        });
        let st = self.procs.get_mut(&p.pid).expect("state made above");
        st.homed_at(now);
        st.corrected_ns = Some(now);
        st.outgrown_streak = 0;
        st.narrow_streak = 0;
        st.wrong_target = None;
        st.wrong_streak = 0;
        d.homes[i] = Some(nodes);
        d.touched[i] = true;
        d.moves += 1;
    }
}
