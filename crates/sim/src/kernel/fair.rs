//! Today's fair class, the run order of the `linux` model: EEVDF (Linux 6.6 and later, the
//! default) or CFS (2.6.23 to 6.5), chosen by `linux:class=eevdf|cfs`.
//!
//! Both order tasks by virtual runtime: a running task's `vruntime` advances by its real run
//! time times `1024 / weight` (`calc_delta_fair`), the weight coming from its nice value
//! ([`super::pelt::NICE_TO_WEIGHT`]). Over time every CPU-bound task gets CPU in proportion
//! to its weight.
//!
//! **EEVDF** (`kernel/sched/fair.c`, 6.6):
//! - Each task has a virtual deadline, `vruntime + base_slice * 1024 / weight`, renewed when
//!   its `vruntime` reaches it (`update_deadline`); then the CPU is rescheduled.
//! - A task is eligible when its `vruntime` is not past the weighted average `V` of the
//!   runqueue's tasks (running one included): it has received no more than its share
//!   (`entity_eligible`). The next task is the eligible one with the earliest deadline
//!   (`pick_eevdf`).
//! - A task leaving a runqueue keeps its lag `V - vruntime`, clamped to the virtual time of
//!   two slices (`update_entity_lag`); placed again (wake-up, migration) it gets
//!   `vruntime = V - lag * (W + w) / W` so that adding it does not move `V` (`place_entity`,
//!   `PLACE_LAG`). A new task has no lag and half a slice to its first deadline
//!   (`PLACE_DEADLINE_INITIAL`).
//! - Wake-up preemption: the woken task preempts when the pick would now be it
//!   (`check_preempt_wakeup`); the running task keeps the CPU while it is eligible and has not
//!   started a new slice since it was picked (`RUN_TO_PARITY`).
//! - `base_slice` = 0.75 ms times `1 + ilog2(min(CPUs, 8))` (`sysctl_sched_base_slice`,
//!   `SCHED_TUNABLESCALING_LOG`): 3 ms from 8 CPUs on.
//!
//! **CFS** (5.x):
//! - The next task is the one with the smallest `vruntime`. It runs for its share of the
//!   period, `sched_slice = period * weight / runqueue weight` with
//!   `period = max(latency, nr_running * min_granularity)` (`check_preempt_tick`).
//! - A woken task is placed no earlier than `min_vruntime - latency / 2`
//!   (`GENTLE_FAIR_SLEEPERS`); a new one one virtual slice after `min_vruntime`
//!   (`START_DEBIT`); a migrating task keeps its `vruntime - min_vruntime`.
//! - Wake-up preemption when the running task's `vruntime` exceeds the woken one's by more
//!   than `wakeup_granularity` in the woken task's virtual time.
//! - `latency` 6 ms, `min_granularity` 0.75 ms and `wakeup_granularity` 1 ms, each times the
//!   same factor (24, 3 and 4 ms from 8 CPUs on).
//!
//! Simplifications: the slice and deadline are checked when they run out, not at the next tick
//! (the kernel notices them at the tick after, up to 1 ms later at HZ=1000); CFS's second tick
//! test (the running task more than a slice ahead of the leftmost) and the buddies are not
//! modelled; there are no cgroups (one flat runqueue per CPU).

use super::{Kernel, TaskId};
use crate::time::{Ns, US};
use topo::CpuId;

/// Which fair class orders the runqueues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairClass {
    Eevdf,
    Cfs,
}

impl FairClass {
    pub const NAMES: [&'static str; 2] = ["eevdf", "cfs"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "eevdf" => Some(Self::Eevdf),
            "cfs" => Some(Self::Cfs),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Eevdf => "eevdf",
            Self::Cfs => "cfs",
        }
    }
}

/// The fair class's tunables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FairParams {
    pub class: FairClass,
    /// EEVDF's request size (`sysctl_sched_base_slice`).
    pub base_slice: Ns,
    /// CFS's period for up to `nr_latency` tasks (`sysctl_sched_latency`).
    pub latency: Ns,
    /// CFS's shortest slice (`sysctl_sched_min_granularity`).
    pub min_granularity: Ns,
    /// CFS's wake-up preemption margin (`sysctl_sched_wakeup_granularity`).
    pub wakeup_granularity: Ns,
    /// A slice ends exactly when it runs out (`sched_feat(HRTICK)`, off by default); else at
    /// the first tick after (the tick's `update_curr` is what notices it).
    pub hrtick: bool,
}

/// The kernel's `sched_nr_latency`: tasks that fit one `latency` period.
const NR_LATENCY: u64 = 8;

/// The load weight of a nice-0 task (`NICE_0_LOAD` after `scale_load_down`).
pub const NICE_0_LOAD: u64 = 1024;

/// Virtual time starts here so that lag placement never goes below zero.
pub const VRUNTIME_ORIGIN: u64 = 1 << 50;

impl FairParams {
    /// The kernel's defaults on a machine of `nr_cpus` CPUs: each base value times
    /// `1 + ilog2(min(nr_cpus, 8))` (`get_update_sysctl_factor`, `SCHED_TUNABLESCALING_LOG`).
    pub fn for_cpus(class: FairClass, nr_cpus: usize) -> Self {
        let factor = 1 + u64::from(nr_cpus.clamp(1, 8).ilog2());
        FairParams {
            class,
            base_slice: 750 * US * factor,
            latency: 6_000 * US * factor,
            min_granularity: 750 * US * factor,
            wakeup_granularity: 1_000 * US * factor,
            hrtick: false,
        }
    }
}

/// `calc_delta_fair`: real time `delta` in the virtual time of a task of `weight`.
pub fn calc_delta_fair(delta: Ns, weight: u64) -> u64 {
    if weight == NICE_0_LOAD {
        return delta;
    }
    ((u128::from(delta) * u128::from(NICE_0_LOAD)) / u128::from(weight.max(1))) as u64
}

/// Real time a task of `weight` runs to advance its `vruntime` by `vdelta` (rounded up).
fn real_of_virtual(vdelta: u64, weight: u64) -> Ns {
    (u128::from(vdelta) * u128::from(weight)).div_ceil(u128::from(NICE_0_LOAD)) as Ns
}

/// Per-runqueue fair-class state: the queued tasks' weight and weighted `vruntime` sums
/// (the running task is added when `V` is computed) and `min_vruntime`.
#[derive(Clone, Copy, Debug)]
pub struct FairRq {
    /// Sum of the weights of the waiting tasks.
    pub load: u64,
    /// Sum of weight x vruntime of the waiting tasks.
    pub wv: i128,
    /// Monotonic floor of the runqueue's virtual time: `V` of an empty runqueue.
    pub min_vruntime: u64,
}

impl Default for FairRq {
    fn default() -> Self {
        FairRq {
            load: 0,
            wv: 0,
            min_vruntime: VRUNTIME_ORIGIN,
        }
    }
}

impl FairRq {
    fn add(&mut self, weight: u64, v: u64) {
        self.load += weight;
        self.wv += i128::from(weight) * i128::from(v);
    }

    fn sub(&mut self, weight: u64, v: u64) {
        self.load -= weight;
        self.wv -= i128::from(weight) * i128::from(v);
    }
}

/// Why a task is put on a runqueue (`place_entity`'s flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placing {
    /// A new task (`ENQUEUE_INITIAL`).
    New,
    /// A woken task (`ENQUEUE_WAKEUP`).
    Wakeup,
    /// A task moved from another runqueue while runnable.
    Migrated,
}

impl Kernel {
    fn fair(&self) -> FairParams {
        self.params.fair.expect("fair class in use")
    }

    /// `vruntime` of `t` now (a running task's is settled lazily).
    pub fn vruntime_now(&self, t: TaskId) -> u64 {
        let task = &self.tasks[t];
        let mut v = task.vruntime;
        if task.state == super::TaskState::Running {
            v += calc_delta_fair(self.now.saturating_sub(task.last_settle), task.weight);
        }
        v
    }

    /// The runqueue's weight and weighted vruntime sum, the running task included.
    fn fair_sums(&self, cpu: CpuId) -> (u64, i128) {
        let rq = &self.rqs[cpu];
        let (mut load, mut wv) = (rq.fair.load, rq.fair.wv);
        if let Some(c) = rq.curr {
            let w = self.tasks[c].weight;
            load += w;
            wv += i128::from(w) * i128::from(self.vruntime_now(c));
        }
        (load, wv)
    }

    /// `avg_vruntime`: the weighted average `V` of the runqueue's virtual times.
    pub fn avg_vruntime(&self, cpu: CpuId) -> u64 {
        let (load, wv) = self.fair_sums(cpu);
        if load == 0 {
            return self.rqs[cpu].fair.min_vruntime;
        }
        // Nearly always a non-negative sum that fits 64 bits: the native division, which for
        // those operands is `div_euclid`'s quotient (128-bit division is a library call).
        match u64::try_from(wv) {
            Ok(w) => w / load,
            Err(_) => (wv.div_euclid(i128::from(load))) as u64,
        }
    }

    /// `entity_eligible`: `v` is not past the runqueue's average (exact, no division).
    fn eligible(load: u64, wv: i128, v: u64) -> bool {
        load == 0 || i128::from(v) * i128::from(load) <= wv
    }

    /// The runqueue key of a waiting fair task: deadline (EEVDF) or vruntime (CFS).
    pub(super) fn fair_key(&self, t: TaskId) -> u64 {
        match self.fair().class {
            FairClass::Eevdf => self.tasks[t].deadline,
            FairClass::Cfs => self.tasks[t].vruntime,
        }
    }

    /// Account a task entering `cpu`'s queue of waiting tasks.
    pub(super) fn fair_queued(&mut self, cpu: CpuId, t: TaskId) {
        let (w, v) = (self.tasks[t].weight, self.tasks[t].vruntime);
        self.rqs[cpu].fair.add(w, v);
    }

    /// Account a task leaving `cpu`'s queue of waiting tasks (picked or moved).
    pub(super) fn fair_unqueued(&mut self, cpu: CpuId, t: TaskId) {
        let (w, v) = (self.tasks[t].weight, self.tasks[t].vruntime);
        self.rqs[cpu].fair.sub(w, v);
    }

    /// `place_entity`: the task's vruntime and deadline as it joins `cpu`'s runqueue.
    pub(super) fn fair_place(&mut self, t: TaskId, cpu: CpuId, how: Placing) {
        let p = self.fair();
        let w = self.tasks[t].weight;
        match p.class {
            FairClass::Eevdf => {
                let (load, _) = self.fair_sums(cpu);
                let avg = self.avg_vruntime(cpu);
                let lag = match how {
                    Placing::New => 0,
                    _ if load == 0 => 0,
                    // Scaled so that the average does not move when the task joins.
                    _ => {
                        let l = i128::from(self.tasks[t].vlag) * i128::from(load + w);
                        (l / i128::from(load)) as i64
                    }
                };
                let v = avg.saturating_add_signed(-lag);
                let mut vslice = calc_delta_fair(self.task_slice(t), w);
                if how == Placing::New {
                    vslice /= 2;
                }
                let task = &mut self.tasks[t];
                task.vruntime = v;
                task.deadline = v + vslice;
            }
            FairClass::Cfs => {
                self.update_min_vruntime(cpu);
                let min_v = self.rqs[cpu].fair.min_vruntime;
                let v = match how {
                    Placing::New => {
                        let nr = self.rqs[cpu].nr_running() as u64 + 1;
                        let (load, _) = self.fair_sums(cpu);
                        min_v + calc_delta_fair(self.cfs_slice(nr, load + w, w), w)
                    }
                    Placing::Migrated => min_v.saturating_add_signed(self.tasks[t].vlag),
                    Placing::Wakeup => {
                        let rel = min_v.saturating_add_signed(self.tasks[t].vlag);
                        rel.max(min_v.saturating_sub(p.latency / 2))
                    }
                };
                self.tasks[t].vruntime = v;
            }
        }
    }

    /// `update_entity_lag` (EEVDF) or the `vruntime - min_vruntime` a migrating task keeps
    /// (CFS): called while the task is still counted on `cpu`'s runqueue.
    pub(super) fn fair_save_lag(&mut self, t: TaskId, cpu: CpuId) {
        let p = self.fair();
        let v = self.tasks[t].vruntime;
        match p.class {
            FairClass::Eevdf => {
                let avg = self.avg_vruntime(cpu);
                let w = self.tasks[t].weight;
                let limit =
                    calc_delta_fair((2 * self.task_slice(t)).max(self.params.tick), w) as i64;
                let lag = (i128::from(avg) - i128::from(v)).clamp(-i128::MAX, i128::MAX) as i64;
                self.tasks[t].vlag = lag.clamp(-limit, limit);
                if self.rqs[cpu].nr_running() <= 1 {
                    // The runqueue empties: its floor keeps the last task's virtual time.
                    let f = &mut self.rqs[cpu].fair;
                    f.min_vruntime = f.min_vruntime.max(v);
                }
            }
            FairClass::Cfs => {
                self.update_min_vruntime(cpu);
                let min_v = self.rqs[cpu].fair.min_vruntime;
                self.tasks[t].vlag = (i128::from(v) - i128::from(min_v)) as i64;
            }
        }
    }

    /// CFS `update_min_vruntime`: the smallest vruntime of the running and the leftmost
    /// waiting task, never going back.
    fn update_min_vruntime(&mut self, cpu: CpuId) {
        let rq = &self.rqs[cpu];
        let curr = rq.curr.map(|c| self.vruntime_now(c));
        let left = rq.queue.iter().next().map(|t| self.tasks[t].vruntime);
        let m = match (curr, left) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return,
        };
        let f = &mut self.rqs[cpu].fair;
        f.min_vruntime = f.min_vruntime.max(m);
    }

    /// CFS `sched_slice` of a task of weight `w` among `nr` tasks of total weight `load`.
    fn cfs_slice(&self, nr: u64, load: u64, w: u64) -> Ns {
        let p = self.fair();
        let period = if nr > NR_LATENCY {
            nr * p.min_granularity
        } else {
            p.latency
        };
        ((u128::from(period) * u128::from(w)) / u128::from(load.max(1))) as Ns
    }

    /// `set_next_entity`: `t` starts running on `cpu`; returns the real time until its slice
    /// or deadline runs out.
    pub(super) fn fair_pick_slice(&mut self, t: TaskId, cpu: CpuId) -> Ns {
        let p = self.fair();
        let w = self.tasks[t].weight;
        match p.class {
            FairClass::Eevdf => {
                let end = self.protect_end(t, cpu);
                let task = &mut self.tasks[t];
                task.protect = true;
                task.vprot_short = (end < task.deadline).then_some(end);
                real_of_virtual(end.saturating_sub(task.vruntime), w).max(1)
            }
            FairClass::Cfs => {
                let nr = self.rqs[cpu].nr_running() as u64;
                let (load, _) = self.fair_sums(cpu);
                self.cfs_slice(nr, load, w).max(1)
            }
        }
    }

    /// The running task's slice ran out: EEVDF gives it a new deadline (`update_deadline`).
    /// A protection shorter than its slice that ran out before its deadline renews nothing:
    /// the task goes back to the queue with its deadline, and the pick decides.
    pub(super) fn fair_renew(&mut self, t: TaskId) {
        let p = self.fair();
        if p.class == FairClass::Eevdf {
            let slice = self.task_slice(t);
            let task = &mut self.tasks[t];
            let short = task.vprot_short.take().is_some() && task.vruntime < task.deadline;
            if !short {
                task.deadline = task.vruntime + calc_delta_fair(slice, task.weight);
            }
            task.protect = false;
        }
    }

    /// `update_protect_slice` (Linux 6.17): `t` joined `cpu`'s runqueue without preempting its
    /// running task `c`; if it asked for a shorter slice, `c`'s protection ends that slice
    /// from now, and the pick is made again at the tick after (where `t` runs if it is then
    /// eligible with the earlier deadline).
    pub(super) fn fair_shorten_protection(&mut self, cpu: CpuId, c: TaskId, t: TaskId) {
        if self.fair().class != FairClass::Eevdf {
            return;
        }
        let slice = self.task_slice(t);
        if slice >= self.task_slice(c) {
            return;
        }
        self.settle(c);
        let task = &self.tasks[c];
        let end = task.vruntime + calc_delta_fair(slice, task.weight);
        if end >= task.vprot_short.unwrap_or(task.deadline) {
            return;
        }
        let real = real_of_virtual(end - task.vruntime, task.weight).max(1);
        let left = self.slice_to_tick(cpu, real);
        if left >= task.slice_left {
            return;
        }
        let task = &mut self.tasks[c];
        task.vprot_short = Some(end);
        task.slice_left = left;
        self.post_boundary(cpu, c);
    }

    /// EEVDF: the task's request size, its own (`se.custom_slice`) or the base slice.
    pub(super) fn task_slice(&self, t: TaskId) -> Ns {
        match self.tasks[t].slice_req {
            0 => self.fair().base_slice,
            s => s,
        }
    }

    /// `set_protect_slice` with `RUN_TO_PARITY` (Linux 6.17): the virtual time up to which
    /// `t`, picked on `cpu`, runs before the pick is made again: its deadline, or sooner when
    /// a queued task asked for a shorter slice than its own (the protection is the shortest
    /// slice of the runqueue). Before 6.17 the protection was the whole slice; with equal
    /// slices the two are the same.
    fn protect_end(&self, t: TaskId, cpu: CpuId) -> u64 {
        let task = &self.tasks[t];
        if !self.custom_slices {
            return task.deadline;
        }
        let own = self.task_slice(t);
        let shortest = self.rqs[cpu]
            .queue
            .iter()
            .map(|q| self.task_slice(q))
            .fold(own, Ns::min);
        if shortest == own {
            return task.deadline;
        }
        task.deadline
            .min(task.vruntime + calc_delta_fair(shortest, task.weight))
    }

    /// Take the task `cpu` runs next (`pick_eevdf`, or CFS's leftmost).
    pub(super) fn fair_pop(&mut self, cpu: CpuId) -> Option<TaskId> {
        let t = match self.fair().class {
            FairClass::Cfs => self.rqs[cpu].queue.iter().next(),
            FairClass::Eevdf => self.eevdf_pick(cpu),
        }?;
        let key = self.tasks[t].rq_key;
        self.rqs[cpu].queue.remove(key, t);
        self.rq_changed(cpu);
        self.fair_unqueued(cpu, t);
        Some(t)
    }

    /// The eligible waiting task with the earliest deadline (the first waiting one if none is
    /// eligible, which only rounding can cause).
    fn eevdf_pick(&self, cpu: CpuId) -> Option<TaskId> {
        let (load, wv) = self.fair_sums(cpu);
        let q = &self.rqs[cpu].queue;
        q.iter()
            .find(|&t| Self::eligible(load, wv, self.tasks[t].vruntime))
            .or_else(|| q.iter().next())
    }

    /// Whether waiting task `t` preempts `cpu`'s running task (`check_preempt_wakeup`).
    pub(super) fn fair_preempts(&self, t: TaskId, cpu: CpuId) -> bool {
        let Some(c) = self.rqs[cpu].curr else {
            return false;
        };
        let p = self.fair();
        let cv = self.vruntime_now(c);
        match p.class {
            FairClass::Eevdf => {
                let (load, wv) = self.fair_sums(cpu);
                let curr_eligible = Self::eligible(load, wv, cv);
                // `PREEMPT_SHORT` (6.12): an eligible task that asked for a shorter slice and
                // is due first (or the running task is not eligible) cancels the protection.
                let short = self.custom_slices
                    && self.task_slice(t) < self.task_slice(c)
                    && Self::eligible(load, wv, self.tasks[t].vruntime)
                    && (self.tasks[t].deadline < self.tasks[c].deadline || !curr_eligible);
                if curr_eligible && self.tasks[c].protect && !short {
                    return false;
                }
                if self.eevdf_pick(cpu) != Some(t)
                    || !Self::eligible(load, wv, self.tasks[t].vruntime)
                {
                    return false;
                }
                !(curr_eligible && self.tasks[c].deadline < self.tasks[t].deadline)
            }
            FairClass::Cfs => {
                let tw = &self.tasks[t];
                let gran = calc_delta_fair(p.wakeup_granularity, tw.weight);
                cv > tw.vruntime && cv - tw.vruntime > gran
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunables_scale_with_the_log_of_the_cpus_up_to_eight() {
        let at = |n| FairParams::for_cpus(FairClass::Eevdf, n);
        assert_eq!(at(1).base_slice, 750 * US);
        assert_eq!(at(2).base_slice, 1_500 * US);
        assert_eq!(at(4).base_slice, 2_250 * US);
        assert_eq!(at(8).base_slice, 3_000 * US);
        assert_eq!(at(768).base_slice, 3_000 * US);
        let c = FairParams::for_cpus(FairClass::Cfs, 64);
        assert_eq!(
            (c.latency, c.min_granularity, c.wakeup_granularity),
            (24_000 * US, 3_000 * US, 4_000 * US)
        );
    }

    #[test]
    fn virtual_time_runs_slower_for_heavier_tasks() {
        assert_eq!(calc_delta_fair(1_000, 1024), 1_000);
        assert_eq!(calc_delta_fair(1_000, 2048), 500);
        assert_eq!(calc_delta_fair(335, 335), 1024);
        assert_eq!(real_of_virtual(1024, 335), 335);
        assert_eq!(
            real_of_virtual(calc_delta_fair(3_000_000, 335), 335),
            3_000_000
        );
    }
}
