//! The runqueue-based load balancer of the 2.5 O(1) scheduler, shared by the schedulers of
//! that era.
//!
//! `find_busiest`: every runqueue of the searched span is sampled; for a busy CPU the load of
//! a remote queue is the smaller of its length now and at the previous pass (and the CPU's own
//! load the larger), so short spikes do not trigger moves. The longest queue is the busiest;
//! the imbalance is half the difference, and a busy CPU acts only when it reaches
//! `imbalance_pct` (125: about 25% of the busiest load). `pull`: waiting tasks of the busiest
//! queue are taken, expired ones first (least likely to run soon, most likely cache-cold),
//! skipping the running task, tasks whose affinity forbids the move and cache-hot ones; an
//! idle CPU takes one task per pass, a busy one up to the imbalance.
//!
//! The scan. A span is read as its runs of consecutive CPUs (one run for the flat level of
//! `o1`, which is every CPU of the machine), and each run as slices of the kernel's dense
//! queue-length array and of `prev_nr`: first the largest load of the slice (a reduction the
//! compiler vectorises), then, only when that beats the busiest so far, the first CPU of the
//! slice with that load, then the slice's lengths copied into `prev_nr`. That is the same
//! busiest CPU as the kernel's loop (the first one with the strictly largest load above 1,
//! ascending, not the balancing CPU itself) and the same `prev_nr` afterwards (every sampled
//! queue's length now), at a few instructions per eight CPUs instead of a loop iteration and
//! a runqueue load per CPU.

use super::IdleType;
use crate::kernel::{Kernel, TaskId};
use std::ops::Range;
use topo::{CpuId, CpuSet};

/// The busiest-queue search state of every CPU (one per balancing level).
#[derive(Clone, Debug)]
pub struct QueueBalancer {
    /// `prev_nr[this][other]`: queue length of `other` seen by `this` at its previous pass.
    prev_nr: Vec<Vec<u32>>,
}

/// A runqueue found busier than the balancing CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busiest {
    pub cpu: CpuId,
    /// Tasks to move.
    pub imbalance: usize,
}

impl QueueBalancer {
    pub fn new(nr_cpus: usize) -> Self {
        QueueBalancer {
            prev_nr: vec![vec![0; nr_cpus]; nr_cpus],
        }
    }

    /// Find the busiest queue among the CPUs of `runs` (a span as [`span_runs`] gives it) as
    /// seen by `this`. Uses the 2.5.39 threshold ([`Threshold::HalfDiff`]).
    pub fn find_busiest(
        &mut self,
        k: &Kernel,
        this: CpuId,
        runs: &[Range<CpuId>],
        idle: IdleType,
        imbalance_pct: u32,
    ) -> Option<Busiest> {
        let rule = Threshold::HalfDiff(imbalance_pct);
        self.find_busiest_by(k, this, runs, idle, rule)
    }

    /// [`QueueBalancer::find_busiest`] with an explicit threshold rule.
    pub fn find_busiest_by(
        &mut self,
        k: &Kernel,
        this: CpuId,
        runs: &[Range<CpuId>],
        idle: IdleType,
        rule: Threshold,
    ) -> Option<Busiest> {
        let idle = idle.is_idle();
        let nr = k.nr_running_array();
        let prev = &mut self.prev_nr[this];
        // Read before the scan updates `prev[this]`.
        let own = nr[this];
        let nr_running = if idle { own } else { own.max(prev[this]) } as usize;
        let (cpu, max_load) = sample_runs(nr, prev, this, runs, idle)?;
        let max_load = max_load as usize;
        let diff = max_load.saturating_sub(nr_running);
        let imbalance = diff / 2;
        let refused = match rule {
            Threshold::HalfDiff(pct) => {
                let threshold = (max_load * (pct.max(100) as usize - 100)).div_ceil(100);
                !idle && imbalance < threshold
            }
            // 2.6.0: a busy CPU needs `diff * 100 >= max_load * (pct - 100)`.
            Threshold::Diff(pct) => !idle && diff * 100 < max_load * (pct.max(100) as usize - 100),
        };
        if imbalance == 0 || refused {
            return None;
        }
        Some(Busiest { cpu, imbalance })
    }
}

/// Sample every queue of `runs` into `prev` and return the busiest other than `this` with its
/// load: the first CPU, ascending, with the largest load, if that load exceeds 1. A busy CPU
/// (not `idle`) counts a queue at the shorter of its length now and at its previous pass.
fn sample_runs(
    nr: &[u32],
    prev: &mut [u32],
    this: CpuId,
    runs: &[Range<CpuId>],
    idle: bool,
) -> Option<(CpuId, u32)> {
    let mut busiest = None;
    let mut max_load = 1u32;
    for run in runs {
        // `this` is sampled (its `prev` updated) but never a candidate.
        let before = run.start..this.clamp(run.start, run.end);
        let after = (this + 1).clamp(run.start, run.end)..run.end;
        for part in [before, after] {
            let (now, seen) = (&nr[part.clone()], &prev[part.clone()]);
            let load = largest_load(now, seen, idle);
            if load > max_load {
                busiest = Some(part.start + first_with_load(now, seen, idle, load));
                max_load = load;
            }
        }
        prev[run.clone()].copy_from_slice(&nr[run.clone()]);
    }
    busiest.map(|cpu| (cpu, max_load))
}

/// A queue's load as a pass sees it: its length now, or for a busy CPU the shorter of now and
/// the previous pass.
#[inline(always)]
fn load_of(now: u32, seen: u32, idle: bool) -> u32 {
    if idle { now } else { now.min(seen) }
}

/// The largest load of a slice of queues (0 if empty); a branch-free reduction. Its lanes are
/// compared as `i32`, which the x86-64 baseline (SSE2) does in one instruction where `u32`
/// takes three; no queue holds 2^31 tasks, so the order is the same.
fn largest_load(now: &[u32], seen: &[u32], idle: bool) -> u32 {
    let seen = &seen[..now.len()];
    let largest = if idle {
        now.iter().fold(0i32, |m, &n| m.max(n as i32))
    } else {
        now.iter()
            .zip(seen)
            .fold(0i32, |m, (&n, &s)| m.max((n as i32).min(s as i32)))
    };
    largest as u32
}

/// Index of the first queue of the slice whose load is `load` (one is).
fn first_with_load(now: &[u32], seen: &[u32], idle: bool, load: u32) -> usize {
    now.iter()
        .zip(seen)
        .position(|(&n, &s)| load_of(n, s, idle) == load)
        .expect("the largest load is some queue's")
}

/// The runs of consecutive CPUs of `span`, ascending.
pub fn span_runs(span: &CpuSet) -> Vec<Range<CpuId>> {
    let mut runs: Vec<Range<CpuId>> = Vec::new();
    for c in span.iter() {
        match runs.last_mut() {
            Some(r) if r.end == c => r.end = c + 1,
            _ => runs.push(c..c + 1),
        }
    }
    runs
}

/// When a busy CPU considers an imbalance worth acting on (idle CPUs always act).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    /// 2.5.39: half the difference must reach `(pct - 100)%` of the busiest load (rounded up).
    HalfDiff(u32),
    /// 2.6.0: the whole difference must reach `(pct - 100)%` of the busiest load.
    Diff(u32),
}

/// Waiting tasks of `cpu`'s queue in the order the O(1) balancer considers them: expired
/// (later round) first, then by priority, newest first within one priority.
pub fn pull_order(k: &Kernel, cpu: CpuId) -> Vec<TaskId> {
    let q = &k.rqs[cpu].queue;
    // The non-fair runqueues keep their levels in this order already.
    if let Some(v) = q.pull_order() {
        return v;
    }
    let mut v: Vec<TaskId> = q.iter().collect();
    v.sort_by_key(|&t| {
        let (round, prio, seq) = k.tasks[t].rq_key;
        (std::cmp::Reverse(round), prio, std::cmp::Reverse(seq))
    });
    v
}

/// Pull up to `max` tasks from `candidates` (in order) to `this`, counting refusals.
/// Returns how many moved.
pub fn pull(k: &mut Kernel, this: CpuId, candidates: &[TaskId], max: usize, hot_ok: bool) -> usize {
    let mut moved = 0;
    for &t in candidates {
        if moved >= max {
            break;
        }
        match k.can_migrate(t, this, hot_ok) {
            Ok(()) => {
                k.migrate_queued(t, this);
                moved += 1;
            }
            Err(r) => k.counters.refuse(r),
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The 2.5.39 loop as the kernel writes it: one queue at a time, ascending.
    fn sample_one_by_one(
        nr: &[u32],
        prev: &mut [u32],
        this: CpuId,
        span: &CpuSet,
        idle: bool,
    ) -> Option<(CpuId, u32)> {
        let mut busiest = None;
        let mut max_load = 1;
        for c in span.iter() {
            let load = if idle || nr[c] < prev[c] {
                nr[c]
            } else {
                prev[c]
            };
            prev[c] = nr[c];
            if c != this && load > max_load {
                busiest = Some(c);
                max_load = load;
            }
        }
        busiest.map(|c| (c, max_load))
    }

    #[test]
    fn runs_of_a_span() {
        let mut span = CpuSet::full(4);
        span.insert_range(6, 7);
        span.insert(9);
        assert_eq!(span_runs(&span), vec![0..4, 6..8, 9..10]);
        assert!(span_runs(&CpuSet::new()).is_empty());
    }

    /// The sliced scan finds the same busiest queue and leaves the same `prev_nr` as the
    /// one-by-one loop, for spans of one and of many runs, idle and busy, with `this` inside
    /// and outside the span, and with ties.
    #[test]
    fn sliced_scan_matches_the_kernel_loop() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        for round in 0..4000 {
            let n = rng.gen_range(1..300);
            let mut span = CpuSet::new();
            if round % 2 == 0 {
                let a = rng.gen_range(0..n);
                span.insert_range(a, rng.gen_range(a..n));
            } else {
                for c in 0..n {
                    if rng.gen_bool(0.6) {
                        span.insert(c);
                    }
                }
            }
            let top = rng.gen_range(1..6);
            let nr: Vec<u32> = (0..n).map(|_| rng.gen_range(0..top)).collect();
            let mut prev: Vec<u32> = (0..n).map(|_| rng.gen_range(0..top)).collect();
            let mut expected_prev = prev.clone();
            let this = rng.gen_range(0..n);
            let idle = rng.gen_bool(0.5);
            let expected = sample_one_by_one(&nr, &mut expected_prev, this, &span, idle);
            let found = sample_runs(&nr, &mut prev, this, &span_runs(&span), idle);
            assert_eq!(found, expected, "round {round}");
            assert_eq!(prev, expected_prev, "round {round}");
        }
    }
}
