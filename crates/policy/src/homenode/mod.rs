//! The homenode policy: a home node for every significant process, chosen where its memory
//! already is, kept there with CPU affinity, its memory brought home at a bounded rate, and
//! processes moved between nodes only when node loads stay apart.
//!
//! One decision ([`HomenodePolicy::decide`]) runs five steps on a sanitised copy of the
//! snapshot (`docs/PLACEMENT.md` has the whole algorithm, the formulas and every parameter):
//!
//! 1. *Release*: a homed process that used less than `min_cpu` for `release_after_s` loses
//!    its home (`ClearHome`).
//! 2. *Homes*: significant processes without a valid home get one, largest first (at most
//!    `max_new_homes_per_interval` when it is set): the node holding most of their memory if it has room,
//!    else the best node by spare CPU and memory weighted by distance to their memory; a light
//!    process is packed onto one node; a process too big for one node gets a home *set* of
//!    nearest nodes.
//!    2b. *Correct*: a home that is clearly wrong (nearly all of the memory on another node
//!    that would be its first home now, or fewer CPUs than the process has busy threads when
//!    a wider home exists now, for `correct_intervals` decisions) is corrected without
//!    waiting out `min_dwell_s`; a home set whose process's busy threads now fit a part of
//!    it is narrowed to that part once `min_dwell_s` is over (`correct.rs`).
//! 3. *Rebalance*: when the same node has been the busiest, its load above another's by
//!    `imbalance_pct` (and above `consolidate_below`), for `imbalance_intervals` decisions in
//!    a row, move the single-node process with the best score (load taken off the imbalance
//!    per byte that would migrate), at most `max_moves_per_interval`, never one that moved
//!    within `min_dwell_s` unless its node is overloaded and the destination has room for it.
//! 4. *Memory*: bring remote memory home, largest remote share first, in `MoveMemory`
//!    batches of at most `batch_mib`, at most `move_rate_mib_s` x interval in total. Where
//!    the kernel's NUMA balancing is active, its page migration is left the moving while it
//!    keeps moving the memory home (`defer_to_kernel`).
//! 5. *Slices*: a homed process whose threads are all runnable nearly all the time, and wait
//!    for a CPU part of it, gets a long scheduling slice (`slice_ms`), so that jobs sharing a
//!    CPU do not refill the cache every few milliseconds; the kernel's default comes back when
//!    it loses its home, or its threads sleep or run alone.
//!
//! Between two decisions, [`HomenodePolicy::first_look`] runs steps 2 and 4 for the processes
//! first seen since the last decision, once their thread count has settled; such a home is
//! provisional until the next decision, which places it again if the process's width changed.
//!
//! The files follow the steps: `release.rs` (1), `homes.rs` (2, with the choice of one home),
//! `rebalance.rs` (3), `memory.rs` (4), `slice.rs` (5); `model.rs` holds the load model
//! below, which every step reads and the first three update as homes change.
//!
//! The load model: each node's load (in CPUs) is its busy CPU time minus what homed processes
//! ran there, plus the demand of the processes homed on it (their CPU use, or their width when
//! larger: each busy thread needs a CPU; split over a home set by CPU count). So a homed
//! process counts where it belongs, everything else (small processes, processes left alone,
//! processes not homed yet) where it ran.
//!
//! State kept between decisions (all in this struct, so the same sequence of snapshots always
//! gives the same actions): per PID its start time, the time of its last move, the last time
//! it was busy, the memory moves asked for last time, and nodes whose memory would not move;
//! and the busiest node with the number of consecutive decisions that saw it imbalanced.

mod correct;
mod homes;
mod memory;
mod model;
mod rebalance;
mod release;
mod slice;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use topo::NodeId;

use crate::NodePolicy;
use crate::action::Action;
use crate::common::{self, MIB, Machine, Proc};
use crate::config::{ConfigError, HomenodeConfig};
use crate::snapshot::Snapshot;

use model::Model;

const EPS: f64 = 1e-9;

/// Per-process memory of the policy.
#[derive(Clone, Debug, Default, PartialEq)]
struct PidState {
    start_time: u64,
    /// When the policy first saw it (at a decision or a first look).
    first_seen_ns: u64,
    /// Homed at a first look, with the width it had then: until the next decision the home is
    /// provisional, and a change of width has it placed again (a young process may still be
    /// starting its threads).
    provisional_width: Option<u32>,
    /// Its thread count when last seen (a decision or a first look).
    seen_threads: u32,
    /// When it last got a home or moved.
    last_move_ns: Option<u64>,
    /// Last decision at which it used at least `min_cpu`.
    last_busy_ns: u64,
    /// Memory moves asked for at `requested_at_ns`: (from node, bytes asked, bytes it had there).
    requested: Vec<(NodeId, u64, u64)>,
    requested_at_ns: u64,
    /// Node -> time before which its memory on that node is not asked to move again.
    blocked: BTreeMap<NodeId, u64>,
    /// Nodes whose last request moved less than half of what was asked: a second such
    /// request in a row blocks the node.
    short: BTreeSet<NodeId>,
    /// The node its home should clearly be on, and in how many decisions in a row it was so.
    wrong_target: Option<NodeId>,
    wrong_streak: u32,
    /// When its home was last corrected (step 2b).
    corrected_ns: Option<u64>,
    /// Decisions in a row in which its busy threads outnumbered its home's CPUs (step 2b).
    outgrown_streak: u32,
    /// Decisions in a row in which its busy threads fit a part of its home set (step 2b).
    narrow_streak: u32,
    /// When the rebalancer last moved it (step 3): step 2b does not undo such a move.
    rebalanced_ns: Option<u64>,
    /// Its memory outside its home as last seen, to tell whether the kernel's NUMA balancing
    /// is moving it (step 4, `defer_to_kernel`).
    kernel_watch: Option<KernelWatch>,
}

impl PidState {
    /// It got a home, or a new one, at `now`: the dwell starts, and what was learnt about
    /// moving its memory to the old home is forgotten.
    fn homed_at(&mut self, now: u64) {
        self.last_move_ns = Some(now);
        self.blocked.clear();
        self.short.clear();
        self.kernel_watch = None;
    }
}

/// A process's memory outside its home at one reading of its per-node figures.
#[derive(Clone, Debug, PartialEq)]
struct KernelWatch {
    home: Vec<NodeId>,
    /// Bytes on nodes outside `home`.
    remote: u64,
    /// When those figures were read.
    sampled_ns: u64,
}

/// The homenode (node-affine) placement policy. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HomenodePolicy {
    cfg: HomenodeConfig,
    procs: BTreeMap<u32, PidState>,
    /// Consecutive decisions that saw `imbalance_src` as the busiest node, imbalanced.
    imbalance_streak: u32,
    imbalance_src: Option<NodeId>,
    /// The last decision's or first look's notes ([`NodePolicy::notes`]).
    notes: Vec<String>,
    /// When the last full decision ran: a first look places only processes first seen at or
    /// after it.
    last_decision_ns: Option<u64>,
    /// Bytes the first looks since the last decision asked to move: the next decision's
    /// budget is what is left of its interval's.
    look_moved: u64,
}

/// What one decision works on, handed from step to step: the sanitised processes, their homes
/// as the decision has changed them so far, the load model, and the actions so far.
struct Decision<'s, 'a> {
    snap: &'s Snapshot<'a>,
    m: Machine,
    procs: Vec<Proc>,
    homes: Vec<Option<Vec<NodeId>>>,
    model: Model,
    /// Processes that already got an action in this decision (never two SetHome for one).
    touched: Vec<bool>,
    /// Processes step 2 may home: all, or at a first look the ones first seen since the last
    /// decision.
    eligible: Vec<bool>,
    /// A first look, not a decision: homes given are provisional.
    first_look: bool,
    /// The time whose memory-moving budget this decision or look may spend, ns: the interval,
    /// or at a look the time since the last decision (less what earlier looks spent).
    budget_ns: u64,
    /// Homed processes given another home so far (steps 2b and 3 share
    /// `max_moves_per_interval`).
    moves: u32,
    actions: Vec<Action>,
}

/// The command name of `p`, for reasons.
fn comm<'s>(snap: &'s Snapshot<'_>, p: &Proc) -> &'s str {
    snap.processes[p.idx].comm.as_str()
}

impl HomenodePolicy {
    /// A policy with these parameters (checked).
    pub fn new(cfg: HomenodeConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        Ok(HomenodePolicy {
            cfg,
            ..Default::default()
        })
    }

    pub fn config(&self) -> &HomenodeConfig {
        &self.cfg
    }

    /// Consecutive decisions that have seen the same busiest node imbalanced against another
    /// (reset when a process moves or the busiest node changes).
    pub fn imbalance_streak(&self) -> u32 {
        self.imbalance_streak
    }

    /// When the policy last gave `pid` a home or moved it, ns on the snapshot clock.
    pub fn last_move_ns(&self, pid: u32) -> Option<u64> {
        self.procs.get(&pid).and_then(|s| s.last_move_ns)
    }

    /// Busy enough, and either large enough or of several busy threads (`sharing_threads`),
    /// whose sharing of one address space a single node keeps local (docs/PLACEMENT.md).
    fn significant(&self, p: &Proc) -> bool {
        p.runnable() + EPS >= self.cfg.min_cpu && (self.sharing(p) || self.large(p))
    }

    /// At least `min_rss_mib` resident.
    fn large(&self, p: &Proc) -> bool {
        p.rss >= self.cfg.min_rss_mib.saturating_mul(MIB)
    }

    /// At least `sharing_threads` busy threads (when that rule is on).
    fn sharing(&self, p: &Proc) -> bool {
        self.cfg.sharing_threads > 0 && p.width >= self.cfg.sharing_threads
    }

    fn dwell_over(&self, st: &PidState, now: u64) -> bool {
        st.last_move_ns
            .is_none_or(|t| now.saturating_sub(t) as f64 >= self.cfg.min_dwell_s * 1e9)
    }

    /// Forgets what is gone, left alone, or a reused PID; starts state for new processes and
    /// notes which ones are busy now.
    fn track(&mut self, procs: &[Proc], now: u64) {
        let keep: BTreeMap<u32, u64> = procs
            .iter()
            .filter(|p| !p.leave_alone)
            .map(|p| (p.pid, p.start_time))
            .collect();
        self.procs
            .retain(|pid, st| keep.get(pid) == Some(&st.start_time));
        for p in procs.iter().filter(|p| !p.leave_alone) {
            let st = self.procs.entry(p.pid).or_insert_with(|| PidState {
                start_time: p.start_time,
                first_seen_ns: now,
                last_busy_ns: now,
                ..Default::default()
            });
            if p.runnable() + EPS >= self.cfg.min_cpu {
                st.last_busy_ns = now;
            }
            st.seen_threads = p.threads;
        }
    }
}

impl NodePolicy for HomenodePolicy {
    fn name(&self) -> &'static str {
        "homenode"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Vec<Action> {
        let procs = common::processes(snap, self.cfg.busy_thread_cpu);
        self.track(&procs, snap.now_ns);
        self.last_decision_ns = Some(snap.now_ns);
        let eligible = vec![true; procs.len()];
        let redo = self.redo_provisional(&procs);
        for st in self.procs.values_mut() {
            st.provisional_width = None;
        }
        let mut d = Decision::new(snap, procs, eligible, &redo);
        self.notes.clear();
        self.release(&mut d);
        self.new_homes(&mut d);
        self.correct(&mut d);
        self.rebalance(&mut d);
        let moves = self.memory_moves(&d);
        self.look_moved = 0;
        d.actions.extend(moves);
        self.slices(&mut d);
        d.actions
    }

    fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Memory moves not made are taken off the requests that the next fresh reading judges
    /// (step 4's "did not take"): a dry run, whose host never changes, asks them again at
    /// every interval instead of blocking the node for `move_retry_s`.
    fn not_applied(&mut self, actions: &[Action]) {
        for a in actions {
            let Action::MoveMemory {
                pid,
                start_time,
                from,
                bytes,
                ..
            } = a
            else {
                continue;
            };
            let Some(st) = self.procs.get_mut(pid) else {
                continue;
            };
            if st.start_time != *start_time {
                continue;
            }
            for r in st.requested.iter_mut().filter(|r| r.0 == *from) {
                r.1 = r.1.saturating_sub(*bytes);
            }
            st.requested.retain(|r| r.1 > 0);
        }
    }

    fn first_look_every_ns(&self) -> Option<u64> {
        (self.cfg.first_look_s > 0.0).then(|| (self.cfg.first_look_s * 1e9).max(1.0) as u64)
    }

    /// Steps 2 and 4 alone, for processes first seen since the last decision
    /// (`docs/PLACEMENT.md`, "A first look"): homes, and their memory brought home within the
    /// budget accrued since the last decision less what earlier looks spent (taken off the
    /// next decision's). Nothing else runs: the release, the corrections and the rebalancer
    /// count decisions.
    fn first_look(&mut self, snap: &Snapshot<'_>) -> Vec<Action> {
        self.notes.clear();
        let procs = common::processes(snap, self.cfg.busy_thread_cpu);
        let now = snap.now_ns;
        let new: Vec<bool> = procs.iter().map(|p| self.new_since_decision(p)).collect();
        if !new.contains(&true) {
            return Vec::new();
        }
        // Placed only once its thread count is the one seen at the last look or decision: a
        // process still starting its threads has no width yet (one thread setting up memory
        // that many will use would be pinned to one node as they start). A provisional home
        // whose width changed is placed again at once.
        let redo = self.redo_provisional(&procs);
        let eligible: Vec<bool> = procs
            .iter()
            .zip(new.iter().zip(&redo))
            .map(|(p, (&n, &r))| {
                n && (r
                    || self.procs.get(&p.pid).is_some_and(|st| {
                        st.start_time == p.start_time && st.seen_threads == p.threads
                    }))
            })
            .collect();
        // State for the ones never seen (or a reused PID); the others keep theirs.
        for p in procs.iter().zip(&new).filter(|(_, n)| **n).map(|(p, _)| p) {
            if self
                .procs
                .get(&p.pid)
                .is_none_or(|st| st.start_time != p.start_time)
            {
                let st = PidState {
                    start_time: p.start_time,
                    first_seen_ns: now,
                    last_busy_ns: now,
                    ..Default::default()
                };
                self.procs.insert(p.pid, st);
            }
            if let Some(st) = self.procs.get_mut(&p.pid) {
                st.seen_threads = p.threads;
            }
        }
        let mut d = Decision::new(snap, procs, eligible, &redo);
        d.first_look = true;
        d.budget_ns = self
            .last_decision_ns
            .map_or(snap.interval_ns, |t| now.saturating_sub(t));
        self.new_homes(&mut d);
        let moves = self.memory_moves(&d);
        self.look_moved += moves.iter().map(Action::bytes).sum::<u64>();
        d.actions.extend(moves);
        d.actions
    }
}

impl HomenodePolicy {
    /// Per process: homed provisionally (at a first look) and its width has changed since, so
    /// it is placed again, as if it had no home.
    fn redo_provisional(&self, procs: &[Proc]) -> Vec<bool> {
        procs
            .iter()
            .map(|p| {
                !p.leave_alone
                    && p.home_valid
                    && self.procs.get(&p.pid).is_some_and(|st| {
                        st.start_time == p.start_time
                            && st.provisional_width.is_some_and(|w| w != p.width)
                    })
            })
            .collect()
    }

    /// Whether a first look may place `p`: managed, and not seen before the last decision
    /// (a reused PID is a new process).
    fn new_since_decision(&self, p: &Proc) -> bool {
        if p.leave_alone {
            return false;
        }
        match self.procs.get(&p.pid) {
            Some(st) if st.start_time == p.start_time => {
                self.last_decision_ns.is_none_or(|t| st.first_seen_ns >= t)
            }
            _ => true,
        }
    }
}

impl<'s, 'a> Decision<'s, 'a> {
    /// A decision over `procs` with their current (valid, managed) homes and the load model;
    /// the processes of `redo` count as not homed.
    fn new(snap: &'s Snapshot<'a>, procs: Vec<Proc>, eligible: Vec<bool>, redo: &[bool]) -> Self {
        let m = Machine::new(snap);
        let homes: Vec<Option<Vec<NodeId>>> = procs
            .iter()
            .zip(redo)
            .map(|(p, &r)| (!p.leave_alone && p.home_valid && !r).then(|| p.home.clone()))
            .collect();
        let model = Model::new(snap.topo, &m, &procs, &homes);
        Decision {
            snap,
            m,
            touched: vec![false; procs.len()],
            eligible,
            first_look: false,
            budget_ns: snap.interval_ns,
            moves: 0,
            procs,
            homes,
            model,
            actions: Vec::new(),
        }
    }
}
