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
//! This module is the signal and its tests; the `linux` model's decisions do not read it yet
//! (issue 13).

use crate::time::Ns;

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
    (-(dt as f64 / PERIOD_NS as f64) / HALF_LIFE_PERIODS).exp2()
}

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
    /// Its load weight (a task's nice weight; a runqueue's sum of runnable weights).
    pub weight: f64,
    /// Runnable (running or waiting), as a fraction: 1 for a task, the runnable count for a
    /// runqueue's `runnable_avg` (the kernel scales it by `SCHED_CAPACITY_SCALE` per task).
    pub runnable: f64,
    /// Running, as a fraction of one CPU.
    pub running: f64,
}

impl Pelt {
    /// Bring the signals to `now`, the entity having done `input` since the last update.
    /// Time never goes back: an earlier `now` changes nothing.
    pub fn update(&mut self, now: Ns, input: PeltInput) {
        let dt = now.saturating_sub(self.last_update);
        if dt == 0 {
            return;
        }
        let keep = decay(dt);
        let toward = |v: f64, target: f64| target + (v - target) * keep;
        self.load_avg = toward(self.load_avg, input.weight * input.runnable);
        self.runnable_avg = toward(self.runnable_avg, CAPACITY_SCALE * input.runnable);
        self.util_avg = toward(self.util_avg, CAPACITY_SCALE * input.running);
        self.last_update = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    const RUNNING: PeltInput = PeltInput {
        weight: 1024.0,
        runnable: 1.0,
        running: 1.0,
    };
    const SLEEPING: PeltInput = PeltInput {
        weight: 1024.0,
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
                weight: w,
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
