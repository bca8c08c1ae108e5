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

use super::IdleType;
use crate::kernel::{Kernel, TaskId};
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

    /// Find the busiest queue among `span` as seen by `this`; `weight(cpu)` adds a bonus to a
    /// queue's load (node-affine schedulers count tasks that belong to `this`'s node).
    /// Uses the 2.5.39 threshold ([`Threshold::HalfDiff`]).
    pub fn find_busiest(
        &mut self,
        k: &Kernel,
        this: CpuId,
        span: &CpuSet,
        idle: IdleType,
        imbalance_pct: u32,
        weight: impl Fn(CpuId) -> usize,
    ) -> Option<Busiest> {
        let rule = Threshold::HalfDiff(imbalance_pct);
        self.find_busiest_by(k, this, span, idle, rule, weight)
    }

    /// [`QueueBalancer::find_busiest`] with an explicit threshold rule.
    pub fn find_busiest_by(
        &mut self,
        k: &Kernel,
        this: CpuId,
        span: &CpuSet,
        idle: IdleType,
        rule: Threshold,
        weight: impl Fn(CpuId) -> usize,
    ) -> Option<Busiest> {
        let idle = idle.is_idle();
        let prev = &mut self.prev_nr[this];
        let own = k.nr_running(this);
        let nr_running = if idle || own > prev[this] as usize {
            own
        } else {
            prev[this] as usize
        };
        let mut busiest = None;
        let mut max_load = 1usize;
        for c in span.iter() {
            let now = k.nr_running(c);
            let load = if idle || now < prev[c] as usize {
                now
            } else {
                prev[c] as usize
            };
            prev[c] = now as u32;
            let load = load + if load > 0 { weight(c) } else { 0 };
            if c != this && load > max_load {
                busiest = Some(c);
                max_load = load;
            }
        }
        let cpu = busiest?;
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
