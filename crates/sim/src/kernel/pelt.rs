//! Per-entity load tracking (PELT), the load signals every load decision of today's kernel
//! reads (`kernel/sched/pelt.c`): for a task or a runqueue, `load_avg` (runnable time weighted
//! by the nice weight), `runnable_avg` (runnable time) and `util_avg` (running time), each a
//! geometric average over 1024 us periods with decay `y` where `y^32 = 1/2`: what happened
//! 32 ms ago counts half as much as now. A signal that is always on converges to its full
//! value (the weight, or `SCHED_CAPACITY_SCALE` = 1024).
//!
//! The kernel sums whole periods and divides by the series' bound (`LOAD_AVG_MAX`). Here the
//! same average is evaluated in closed form between events, lazily: while the inputs stay
//! constant a signal moves from `v` toward its target `T` as `T + (v - T) * y^(dt / 1024 us)`,
//! so updating at any two instants gives the same value as updating at every tick in between
//! (the kernel's period rounding, at most one period's worth, is not reproduced). Nothing
//! costs anything per tick.
//!
//! Under the fair class the kernel model keeps these signals for every task and runqueue
//! ([`Kernel::pelt_task_state`] and the runqueue hooks in `run.rs`); the `linux` model's load
//! decisions read them ([`Kernel::cpu_load`], [`Kernel::cpu_util`], [`Kernel::cpu_runnable`],
//! [`Kernel::task_pelt`]). As in the kernel, a runqueue's signals are the sum of its tasks':
//! a task that sleeps leaves its decaying contribution (blocked load) on its CPU, and it
//! moves with the task when the task is placed on another CPU.

use super::{Kernel, TaskId};
use crate::time::{MS, Ns};
use std::sync::LazyLock;
use topo::CpuId;

/// PELT's period, ns (1024 us).
pub const PERIOD_NS: Ns = 1_024_000;
/// Periods after which a contribution counts half.
pub const HALF_LIFE_PERIODS: f64 = 32.0;
/// The full value of `util_avg` and `runnable_avg` (`SCHED_CAPACITY_SCALE`).
pub const CAPACITY_SCALE: f64 = 1024.0;

/// The kernel's `sched_prio_to_weight`: the load weight of nice -20 to 19 (nice 0 = 1024;
/// each step is about 1.25x, so one nice level is about 10% of CPU between two tasks).
pub const NICE_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, // -20 .. -16
    29154, 23254, 18705, 14949, 11916, // -15 .. -11
    9548, 7620, 6100, 4904, 3906, // -10 .. -6
    3121, 2501, 1991, 1586, 1277, // -5 .. -1
    1024, 820, 655, 526, 423, // 0 .. 4
    335, 272, 215, 172, 137, // 5 .. 9
    110, 87, 70, 56, 45, // 10 .. 14
    36, 29, 23, 18, 15, // 15 .. 19
];

/// The load weight of `nice` (-20..=19; outside, the nearest end).
pub fn weight_of_nice(nice: i32) -> u32 {
    NICE_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// `y^(dt / PERIOD)`: how much of the old average is left after `dt`.
fn decay(dt: Ns) -> f64 {
    let ms = dt / MS;
    if ms < DECAY_MS_LEN as Ns && ms * MS == dt {
        return DECAY_MS[ms as usize];
    }
    decay_of(dt)
}

/// [`decay`] computed.
fn decay_of(dt: Ns) -> f64 {
    (-(dt as f64 / PERIOD_NS as f64) / HALF_LIFE_PERIODS).exp2()
}

/// Whole milliseconds below this have their [`decay`] in [`DECAY_MS`].
const DECAY_MS_LEN: usize = 128;

/// [`decay_of`] of 0, 1, 2, ... ms, computed once: three quarters of a `linux` run's updates
/// span whole milliseconds (ticks, slices that end on the tick), and `exp2` took 5% of the
/// run (numa_test N = 64 on azusa16). The very values the formula gives, so nothing changes.
static DECAY_MS: LazyLock<[f64; DECAY_MS_LEN]> =
    LazyLock::new(|| std::array::from_fn(|k| decay_of(k as Ns * MS)));

/// The PELT signals of one scheduling entity (a task) or of a runqueue (its tasks' sum).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pelt {
    pub load_avg: f64,
    pub runnable_avg: f64,
    pub util_avg: f64,
    /// When the signals were last brought up to date.
    pub last_update: Ns,
}

/// What an entity was doing since the last update (constant over the interval).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeltInput {
    /// The load weight that is runnable: a runnable task's nice weight (0 while it sleeps),
    /// a runqueue's sum of its runnable tasks' weights.
    pub load: f64,
    /// Runnable (running or waiting), as a fraction: 1 for a task, the runnable count for a
    /// runqueue's `runnable_avg` (the kernel scales it by `SCHED_CAPACITY_SCALE` per task).
    pub runnable: f64,
    /// Running, as a fraction of one CPU.
    pub running: f64,
}

impl Pelt {
    /// The signals at `now` if `input` held since the last update.
    pub fn at(mut self, now: Ns, input: PeltInput) -> Self {
        self.update(now, input);
        self
    }

    fn add(&mut self, o: &Pelt) {
        self.load_avg += o.load_avg;
        self.runnable_avg += o.runnable_avg;
        self.util_avg += o.util_avg;
    }

    fn sub(&mut self, o: &Pelt) {
        self.load_avg = (self.load_avg - o.load_avg).max(0.0);
        self.runnable_avg = (self.runnable_avg - o.runnable_avg).max(0.0);
        self.util_avg = (self.util_avg - o.util_avg).max(0.0);
    }

    /// Bring the signals to `now`, the entity having done `input` since the last update.
    /// Time never goes back: an earlier `now` changes nothing.
    pub fn update(&mut self, now: Ns, input: PeltInput) {
        let dt = now.saturating_sub(self.last_update);
        if dt == 0 {
            return;
        }
        let keep = decay(dt);
        let toward = |v: f64, target: f64| target + (v - target) * keep;
        self.load_avg = toward(self.load_avg, input.load);
        self.runnable_avg = toward(self.runnable_avg, CAPACITY_SCALE * input.runnable);
        self.util_avg = toward(self.util_avg, CAPACITY_SCALE * input.running);
        self.last_update = now;
    }
}

impl Kernel {
    fn pelt_on(&self) -> bool {
        self.params.fair.is_some()
    }

    /// What `cpu`'s runqueue is doing now: the weight and number of its runnable tasks, and
    /// whether it runs one.
    fn rq_input(&self, cpu: CpuId) -> PeltInput {
        let rq = &self.rqs[cpu];
        let curr_w = rq.curr.map_or(0, |c| self.tasks[c].weight);
        PeltInput {
            load: (rq.fair.load + curr_w) as f64,
            runnable: rq.nr_running() as f64,
            running: f64::from(u8::from(rq.curr.is_some())),
        }
    }

    fn task_input(&self, t: TaskId) -> PeltInput {
        let task = &self.tasks[t];
        let runnable = f64::from(u8::from(task.pelt_runnable));
        PeltInput {
            load: task.weight as f64 * runnable,
            runnable,
            running: f64::from(u8::from(task.pelt_running)),
        }
    }

    /// Bring `cpu`'s runqueue signals to now; called before anything changes what it runs.
    pub(super) fn pelt_sync_rq(&mut self, cpu: CpuId) {
        if self.pelt_on() {
            let input = self.rq_input(cpu);

            self.rqs[cpu].pelt.update(self.now, input);
        }
    }

    /// Bring `t`'s signals to now and record what it does from now on (runnable, running).
    pub(super) fn pelt_task_state(&mut self, t: TaskId, runnable: bool, running: bool) {
        if !self.pelt_on() {
            return;
        }
        let input = self.task_input(t);
        let task = &mut self.tasks[t];
        task.pelt.update(self.now, input);
        task.pelt_runnable = runnable;
        task.pelt_running = running;
    }

    /// `t` is about to join `cpu`'s runqueue: move its signals there from the runqueue they
    /// were on (`migrate_task_rq_fair`: removed from the old CPU, attached to the new one),
    /// or give a new task its initial values (`init_entity_runnable_average`,
    /// `post_init_entity_util_avg`).
    pub(super) fn pelt_attach(&mut self, t: TaskId, cpu: CpuId) {
        if !self.pelt_on() {
            return;
        }
        self.pelt_task_state(t, false, false);
        match self.tasks[t].pelt_cpu {
            Some(old) if old == cpu => return,
            Some(old) => {
                self.pelt_sync_rq(old);
                let p = self.tasks[t].pelt;
                self.rqs[old].pelt.sub(&p);
            }
            None => self.pelt_init(t, cpu),
        }
        self.pelt_sync_rq(cpu);
        let p = self.tasks[t].pelt;
        self.rqs[cpu].pelt.add(&p);
        self.tasks[t].pelt_cpu = Some(cpu);
    }

    /// A new task starts with its full weight as load and a share of the CPU's spare
    /// utilisation: the CPU's utilisation per unit of load times its weight, at most half of
    /// what is left (`post_init_entity_util_avg`); `runnable_avg` starts equal to it.
    fn pelt_init(&mut self, t: TaskId, cpu: CpuId) {
        let rq = self.rq_pelt(cpu);
        let w = self.tasks[t].weight as f64;
        let cap = ((CAPACITY_SCALE - rq.util_avg) / 2.0).max(0.0);
        let util = if rq.util_avg > 0.0 {
            (rq.util_avg * w / (rq.load_avg + 1.0)).min(cap)
        } else {
            cap
        };
        let p = &mut self.tasks[t].pelt;
        p.load_avg = w;
        p.util_avg = util;
        p.runnable_avg = util;
        p.last_update = self.now;
    }

    /// An exited task's signals leave its runqueue (`task_dead_fair`).
    pub(super) fn pelt_detach_dead(&mut self, t: TaskId) {
        if !self.pelt_on() {
            return;
        }
        if let Some(cpu) = self.tasks[t].pelt_cpu.take() {
            self.pelt_sync_rq(cpu);
            self.pelt_task_state(t, false, false);
            let p = self.tasks[t].pelt;
            self.rqs[cpu].pelt.sub(&p);
        }
    }

    /// `cpu`'s runqueue signals now (no update stored).
    pub fn rq_pelt(&self, cpu: CpuId) -> Pelt {
        self.rqs[cpu].pelt.at(self.now, self.rq_input(cpu))
    }

    /// `cpu_load`: the runqueue's `load_avg`, blocked load included.
    pub fn cpu_load(&self, cpu: CpuId) -> f64 {
        self.rq_pelt(cpu).load_avg
    }

    /// `cpu_util_cfs`: the runqueue's `util_avg`, at most the CPU's capacity (1024).
    pub fn cpu_util(&self, cpu: CpuId) -> f64 {
        self.rq_pelt(cpu).util_avg.min(CAPACITY_SCALE)
    }

    /// `cpu_runnable`: the runqueue's `runnable_avg`.
    pub fn cpu_runnable(&self, cpu: CpuId) -> f64 {
        self.rq_pelt(cpu).runnable_avg
    }

    /// `t`'s signals now.
    pub fn task_pelt(&self, t: TaskId) -> Pelt {
        self.tasks[t].pelt.at(self.now, self.task_input(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_of_whole_milliseconds_holds_the_formulas_bits() {
        for dt in (0..200 * MS)
            .step_by(250_000)
            .chain([1, 999_999, 1_000_001, u64::MAX])
        {
            assert_eq!(decay(dt).to_bits(), decay_of(dt).to_bits(), "dt {dt} ns");
        }
    }

    const RUNNING: PeltInput = PeltInput {
        load: 1024.0,
        runnable: 1.0,
        running: 1.0,
    };
    const SLEEPING: PeltInput = PeltInput {
        load: 0.0,
        runnable: 0.0,
        running: 0.0,
    };

    #[test]
    fn a_step_reaches_half_in_32_periods_and_decays_by_half_in_32_more() {
        let half = 32 * PERIOD_NS;
        let mut p = Pelt::default();
        p.update(half, RUNNING);
        assert!((p.util_avg - 512.0).abs() < 1e-9, "{}", p.util_avg);
        p.update(50 * half, RUNNING);
        assert!((p.util_avg - 1024.0).abs() < 1e-9 * 1024.0 + 1e-3);
        let full = p.util_avg;
        p.update(51 * half, SLEEPING);
        assert!((p.util_avg - full / 2.0).abs() < 1e-9, "{}", p.util_avg);
        // The kernel's half-life in ms: 32 periods of 1.024 ms.
        assert_eq!(half, 32 * 1_024_000);
    }

    #[test]
    fn a_task_running_half_the_time_converges_to_about_512() {
        let mut p = Pelt::default();
        let mut t = 0;
        // 4 ms on, 4 ms off, for 2 s.
        for _ in 0..250 {
            t += 4 * MS;
            p.update(t, RUNNING);
            let after_on = p.util_avg;
            t += 4 * MS;
            p.update(t, SLEEPING);
            let after_off = p.util_avg;
            assert!(after_on >= after_off);
        }
        // The ripple of a 8 ms cycle against a 32 ms half-life is small: between the two
        // ends of the cycle, centred on 512.
        let mut hi = p;
        hi.update(t + 4 * MS, RUNNING);
        let mid = (hi.util_avg + p.util_avg) / 2.0;
        assert!((mid - 512.0).abs() < 2.0, "mid {mid}");
        assert!(hi.util_avg - p.util_avg < 100.0);
    }

    #[test]
    fn lazy_updates_equal_fine_updates() {
        let (mut coarse, mut fine) = (Pelt::default(), Pelt::default());
        coarse.update(37 * MS + 123, RUNNING);
        for k in 1..=37 {
            fine.update(k * MS, RUNNING);
        }
        fine.update(37 * MS + 123, RUNNING);
        assert!((coarse.util_avg - fine.util_avg).abs() < 1e-9);
        assert!((coarse.load_avg - fine.load_avg).abs() < 1e-9);
        // An earlier time changes nothing.
        let before = coarse;
        coarse.update(MS, SLEEPING);
        assert_eq!(coarse, before);
    }

    #[test]
    fn load_is_weighted_by_nice_and_runnable_is_not() {
        let mut nice5 = Pelt::default();
        let w = f64::from(weight_of_nice(5));
        nice5.update(
            2_000 * MS,
            PeltInput {
                load: w,
                runnable: 1.0,
                running: 0.5,
            },
        );
        assert!((nice5.load_avg - 335.0).abs() < 1e-6, "{}", nice5.load_avg);
        assert!((nice5.runnable_avg - 1024.0).abs() < 1e-6);
        assert!((nice5.util_avg - 512.0).abs() < 1e-6);
    }

    #[test]
    fn the_weight_table_is_the_kernels() {
        assert_eq!(weight_of_nice(0), 1024);
        assert_eq!(weight_of_nice(-20), 88761);
        assert_eq!(weight_of_nice(19), 15);
        assert_eq!(weight_of_nice(99), 15);
        // Neighbouring levels differ by about 1.25x.
        for w in NICE_TO_WEIGHT.windows(2) {
            let r = f64::from(w[0]) / f64::from(w[1]);
            assert!((1.15..1.35).contains(&r), "{w:?}");
        }
    }
}
