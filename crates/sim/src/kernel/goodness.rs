//! The 2.4 kernel's base scheduler, for the schedulers of that era (`aa`, `pmqs`).
//!
//! Linux 2.4 picked the next task with `goodness()`: the task's `counter` (ticks left of its
//! slice) plus `20 - nice`, plus `PROC_CHANGE_PENALTY` on the CPU it last ran on, plus 1 for
//! a task of the address space the CPU already has loaded. A task whose counter is zero is
//! not picked; once every runnable task has a zero counter, all counters are recalculated
//! (`counter = counter / 2 + NICE_TO_TICKS(nice)`), sleeping tasks included, so a sleeper
//! comes back with up to twice a slice and outranks the tasks that kept running. A woken
//! task preempts a CPU's current task when its goodness there is higher
//! (`preemption_goodness > 0`, the test of `reschedule_idle`).
//!
//! In the model each runqueue keeps the O(1)-style rounds: a task whose counter ran out waits
//! for the next round, which is the recalculation; within a round tasks wait in goodness
//! order (highest first, FIFO on ties). A waiting task's counter does not change, so its
//! goodness on its queue is fixed when it is queued. A sleeper is credited, when it wakes,
//! with the recalculations its CPU went through while it slept. Every task runs at nice 0.
//! Simplification: the one-point address-space bonus is counted for preemption, not for
//! the order within a queue.

use super::task::{Pid, TaskState};
use super::{Kernel, TaskId};
use crate::fastdiv::Divisor;
use crate::time::Ns;
use topo::CpuId;

/// Tunables of the 2.4 `goodness()` base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoodnessParams {
    /// `PROC_CHANGE_PENALTY`: the bonus of a task on the CPU it last ran on (20 on alpha and
    /// ia64 in 2.4).
    pub proc_change_penalty: i32,
}

/// 2.4 on alpha and ia64 ran at HZ = 1024.
pub const HZ_2_4: Ns = 1024;
/// One tick at HZ = 1024, ns.
pub const TICK_2_4: Ns = 1_000_000_000 / HZ_2_4;
/// `NICE_TO_TICKS(0)` at HZ = 1024: `TICK_SCALE(20) + 1` with `TICK_SCALE(x) = x << 1`.
pub const NICE_TO_TICKS_0: Ns = (20 << 1) + 1;

/// A slice's worth of ticks: `ns` rounded up to whole ticks (the counter counts ticks).
fn ticks(ns: Ns, tick: Divisor) -> Ns {
    tick.divide_ceil(ns)
}

impl Kernel {
    /// The task's counter now, in ticks (the running task's slice is settled lazily).
    pub fn counter_ticks(&self, t: TaskId) -> Ns {
        let task = &self.tasks[t];
        let mut left = task.slice_left;
        if task.state == TaskState::Running {
            left = left.saturating_sub(self.now.saturating_sub(task.last_settle));
        }
        ticks(left, self.tick_div())
    }

    /// 2.4 `goodness(p, cpu, this_mm)` of a nice-0 task; 0 once its counter ran out.
    pub fn goodness(&self, t: TaskId, cpu: CpuId, this_mm: Option<Pid>) -> i32 {
        let penalty = self.params.goodness.map_or(0, |g| g.proc_change_penalty);
        let counter = self.counter_ticks(t);
        if counter == 0 {
            return 0;
        }
        let task = &self.tasks[t];
        let mut w = counter.min(i32::MAX as Ns / 2) as i32 + 20;
        if task.last_cpu == Some(cpu) {
            w += penalty;
        }
        if this_mm == Some(task.pid) {
            w += 1;
        }
        w
    }

    /// The priority that orders `t` on `cpu`'s queue (lower runs first): the O(1) dynamic
    /// priority, or minus its goodness on that CPU under the 2.4 base.
    #[inline]
    pub fn queue_prio(&self, t: TaskId, cpu: CpuId) -> i32 {
        match self.params.goodness {
            Some(_) => -self.goodness(t, cpu, None),
            None => self.prio(t),
        }
    }

    /// What `t` would gain by taking `cpu` from the task running there (None if nothing
    /// runs): it preempts when this is positive. O(1): the difference of dynamic priorities,
    /// the waking task's as of now and the current task's as it was last queued: the 2.5
    /// `try_to_wake_up` compares `p->prio`, just recomputed by `activate_task`, with
    /// `rq->curr->prio`, which is recomputed only when a task is queued or its slice runs out,
    /// not while it runs. 2.4: `preemption_goodness`, both measured with the current task's
    /// address space.
    pub fn preemption_gain(&self, t: TaskId, cpu: CpuId) -> Option<i32> {
        let c = self.rqs[cpu].curr?;
        if self.params.fair.is_some() {
            return Some(i32::from(self.fair_preempts(t, cpu)));
        }
        Some(match self.params.goodness {
            Some(_) => {
                let mm = Some(self.tasks[c].pid);
                self.goodness(t, cpu, mm) - self.goodness(c, cpu, mm)
            }
            None => self.tasks[c].rq_key.1 - self.prio(t),
        })
    }

    /// 2.4: a waking task gets the counter recalculations that happened while it slept
    /// (those of the CPU it left), `counter = counter / 2 + NICE_TO_TICKS`, each time.
    pub(super) fn credit_sleeper(&mut self, t: TaskId) {
        if self.params.goodness.is_none() {
            return;
        }
        let tick = self.tick_div();
        let base = ticks(self.params.timeslice, tick);
        let task = &self.tasks[t];
        // After about 64 halvings the counter is 2 * base - 1 or 2 * base whatever it was.
        let missed = self.rqs[task.cpu]
            .round
            .saturating_sub(task.left_round)
            .min(64);
        let mut counter = ticks(task.slice_left, tick);
        for _ in 0..missed {
            counter = counter / 2 + base;
        }
        self.tasks[t].slice_left = counter * tick.get();
    }
}
