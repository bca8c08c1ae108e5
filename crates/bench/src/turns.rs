//! How long the kernel lets one of two CPU-bound tasks on one CPU run before the other gets
//! its turn, and the `CONFIG_HZ` that says it to the `linux` model.
//!
//! Two threads bound to the same CPU spin until each has used `cpu_s` of CPU time; each
//! then reads its CPU time and its involuntary context switches (`getrusage(RUSAGE_THREAD)`).
//! CPU time over switches is the length of a turn. Without the high-resolution tick the
//! kernel ends a fair slice at the first tick after it ran out (docs/POLICIES.md, "A slice
//! ends at the tick"), so a turn is the base slice (`0.75 ms x (1 + ilog2(min(CPUs, 8)))`)
//! rounded up to whole ticks; the `hz` whose turn is nearest the measured one, if within
//! 15% of it, is the model's `--sched linux:hz=...`.

use crate::BenchError;
use serde::Serialize;
use std::sync::Barrier;
use topo::CpuSet;

/// `CONFIG_HZ` values the kernel offers (`kernel/Kconfig.hz`).
pub const HZ_CHOICES: [u32; 4] = [100, 250, 300, 1000];

/// The turns measured on one CPU.
#[derive(Clone, Debug, Serialize)]
pub struct Turns {
    pub cpu: usize,
    /// Median over the two threads: ms of CPU time per involuntary switch.
    pub turn_ms: f64,
    /// The `hz` whose tick-rounded base slice is nearest `turn_ms` (None: none within 15%).
    pub hz: Option<u32>,
}

/// EEVDF's base slice on `cpus` CPUs, ms (`sysctl_sched_base_slice` scaled by
/// `SCHED_TUNABLESCALING_LOG`).
pub fn base_slice_ms(cpus: usize) -> f64 {
    0.75 * f64::from(1 + cpus.clamp(1, 8).ilog2())
}

/// A slice of `slice_ms` ending at the first tick of `hz` after it ran out, ms.
pub fn turn_at_tick_ms(slice_ms: f64, hz: u32) -> f64 {
    let tick = 1000.0 / f64::from(hz.max(1));
    (slice_ms / tick).ceil().max(1.0) * tick
}

/// The `hz` of [`HZ_CHOICES`] whose turn on `cpus` CPUs is nearest `turn_ms`, if within 15%.
pub fn hz_for_turn(turn_ms: f64, cpus: usize) -> Option<u32> {
    let slice = base_slice_ms(cpus);
    let off = |hz: u32| {
        let want = turn_at_tick_ms(slice, hz);
        (turn_ms - want).abs() / want
    };
    HZ_CHOICES
        .iter()
        .copied()
        .min_by(|&a, &b| off(a).total_cmp(&off(b)))
        .filter(|&hz| off(hz) <= 0.15)
}

/// One thread's spin on `cpu` until it used `cpu_s`: (CPU seconds, involuntary switches).
fn spin(cpu: usize, cpu_s: f64, barrier: &Barrier) -> Result<(f64, i64), BenchError> {
    crate::probe::bind(&CpuSet::single(cpu))?;
    barrier.wait();
    let used = || {
        crate::probe::thread_usage()
            .ok_or_else(|| BenchError::Config("turns: getrusage failed".into()))
    };
    let start = used()?;
    let mut x = 0u64;
    loop {
        for _ in 0..100_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let now = used()?;
        if now.0 - start.0 >= cpu_s {
            return Ok((now.0 - start.0, now.1 - start.1));
        }
    }
}

/// Measure the turns on `cpu` of a machine of `cpus` CPUs, each thread using `cpu_s`.
pub fn measure(cpu: usize, cpus: usize, cpu_s: f64) -> Result<Option<Turns>, BenchError> {
    let barrier = Barrier::new(2);
    let results: Vec<Result<(f64, i64), BenchError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| s.spawn(|| spin(cpu, cpu_s, &barrier)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::Config("turns: a thread panicked".into())))
            })
            .collect()
    });
    let mut per_switch = Vec::new();
    for r in results {
        let (secs, switches) = r?;
        if switches > 0 {
            per_switch.push(secs * 1e3 / switches as f64);
        }
    }
    if per_switch.len() < 2 {
        return Ok(None);
    }
    let turn_ms = report::median(&per_switch);
    Ok(Some(Turns {
        cpu,
        turn_ms,
        hz: hz_for_turn(turn_ms, cpus),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_slice_grows_with_the_log_of_the_cpus_up_to_eight() {
        assert_eq!(base_slice_ms(1), 0.75);
        assert_eq!(base_slice_ms(2), 1.5);
        assert_eq!(base_slice_ms(8), 3.0);
        assert_eq!(base_slice_ms(256), 3.0);
    }

    #[test]
    fn a_turn_is_the_slice_rounded_up_to_whole_ticks() {
        assert_eq!(turn_at_tick_ms(1.5, 250), 4.0);
        assert_eq!(turn_at_tick_ms(1.5, 1000), 2.0);
        assert_eq!(turn_at_tick_ms(3.0, 1000), 3.0);
        assert!((turn_at_tick_ms(3.0, 300) - 10.0 / 3.0).abs() < 1e-12);
        assert_eq!(turn_at_tick_ms(1.5, 100), 10.0);
    }

    #[test]
    fn the_measured_turn_names_its_hz_or_none() {
        // This project's development guest: 2 CPUs, turns of 3.8-3.9 ms.
        assert_eq!(hz_for_turn(3.85, 2), Some(250));
        assert_eq!(hz_for_turn(2.05, 2), Some(1000));
        assert_eq!(hz_for_turn(9.7, 2), Some(100));
        // The high-resolution tick: turns of the base slice itself, no tick explains them.
        assert_eq!(hz_for_turn(1.5, 2), None);
        // 8 CPUs: the 3 ms slice is a whole number of 1 ms ticks.
        assert_eq!(hz_for_turn(3.0, 8), Some(1000));
        assert_eq!(hz_for_turn(4.1, 8), Some(250));
    }
}
