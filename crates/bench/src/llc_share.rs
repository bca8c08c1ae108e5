//! Whether the cache a core holds alone is its own or shared with the other CPUs of its LLC.
//!
//! The probe's latency curve gives the random footprint up to which one core, alone, hits
//! (the knee, [`crate::probe::effective_llc_kib`]). The cost model's `llc_kib` is the size of
//! one LLC, which it shares out among the memory-bound tasks running on the LLC's CPUs. The
//! knee is that size only if the capacity behind it is shared: on this project's development
//! guest it sits at 8-16 MiB under a 32 MiB L3 that `/sys` says both vCPUs share, which may be
//! the part of the L3 the guest gets, or the reach of a core's own TLB. So the probe runs the
//! random-update loop on one thread per CPU of the first CPU's LLC at once, each on its own
//! buffer of three quarters of the knee: one alone fits; all together overflow a shared cache
//! of the knee's size, and then a third or more of their updates miss. If they keep their
//! rate alone, the capacity is each core's own: the model's `llc_kib` is the knee with
//! `llc_private` (each CPU holds the knee whether or not the others run, and they do not evict
//! it), else the knee shared out.

use crate::BenchError;
use crate::probe::{CoRunLoad, Lap, co_run_threads, median, slowdown};
use serde::Serialize;

/// The updates of one LLC's CPUs together against one alone, on buffers of 3/4 of the knee.
#[derive(Clone, Debug, Serialize)]
pub struct LlcShare {
    /// Threads that ran together (the CPUs of the first CPU's LLC the probe may use).
    pub threads: usize,
    /// Each thread's buffer, KiB.
    pub buffer_kib: usize,
    /// ns per random update: one thread alone, and each of them together (median).
    pub alone_gather_ns: f64,
    pub gather_ns: f64,
    /// `gather_ns / alone_gather_ns`.
    pub slowdown: f64,
    /// The slowdown a shared cache of the knee's size would cause, from the probe's own hit
    /// and miss times: a third of the updates miss ([`expected_shared_slowdown`]).
    pub shared_slowdown: f64,
}

/// The slowdown of threads that each update `3/4` of a shared cache at random: together they
/// ask for 1.5 times what it holds, so at least a third of their updates miss, each costing
/// `miss_ns` instead of `hit_ns`.
pub fn expected_shared_slowdown(hit_ns: f64, miss_ns: f64) -> f64 {
    if hit_ns <= 0.0 {
        return 1.0;
    }
    let missed = 1.0 - 1.0 / 1.5;
    1.0 + missed * (miss_ns / hit_ns - 1.0).max(0.0)
}

impl LlcShare {
    /// The capacity is each core's own: the threads slowed down by less than half of what a
    /// shared cache would cost them.
    pub fn private(&self) -> bool {
        self.threads > 1 && self.slowdown < 1.0 + (self.shared_slowdown - 1.0) / 2.0
    }

    /// The cache all the threads hold together for a knee of `knee_kib`: the knee times the
    /// threads when the capacity is each core's own, else the knee (what a probe that wants
    /// to evict everything must go beyond).
    pub fn capacity_kib(&self, knee_kib: usize) -> usize {
        if self.private() {
            knee_kib * self.threads
        } else {
            knee_kib
        }
    }
}

/// Run the test on `cpus` (kernel numbers, one LLC's) for a knee of `knee_kib`, with the
/// probe's hit and miss times per update; `None` with fewer than two CPUs.
pub fn measure(
    cpus: &[usize],
    knee_kib: usize,
    (hit_ns, miss_ns): (f64, f64),
    (updates, rounds, seed): (u64, usize, u64),
) -> Result<Option<LlcShare>, BenchError> {
    if cpus.len() < 2 || knee_kib == 0 {
        return Ok(None);
    }
    let buffer_kib = (knee_kib * 3 / 4).max(1);
    let load = CoRunLoad {
        words: (buffer_kib << 10) / std::mem::size_of::<usize>(),
        passes: 1,
        updates,
        rounds,
        seed,
    };
    let gather = |laps: &[Vec<Lap>]| {
        let v: Vec<f64> = laps.iter().flatten().map(|l| l.gather_ns).collect();
        if v.is_empty() { 0.0 } else { median(&v) }
    };
    let alone_gather_ns = gather(&co_run_threads(&cpus[..1], load)?);
    let gather_ns = gather(&co_run_threads(cpus, load)?);
    Ok(Some(LlcShare {
        threads: cpus.len(),
        buffer_kib,
        alone_gather_ns,
        gather_ns,
        slowdown: slowdown(gather_ns, alone_gather_ns),
        shared_slowdown: expected_shared_slowdown(hit_ns, miss_ns),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(threads: usize, slowdown: f64) -> LlcShare {
        LlcShare {
            threads,
            buffer_kib: 6144,
            alone_gather_ns: 1.0,
            gather_ns: slowdown,
            slowdown,
            shared_slowdown: expected_shared_slowdown(1.0, 7.0),
        }
    }

    #[test]
    fn a_shared_cache_of_the_knee_would_cost_a_third_of_the_updates_a_miss() {
        // 1 ns hits, 7 ns misses: a third of the updates pay 6 ns more.
        assert!((expected_shared_slowdown(1.0, 7.0) - 3.0).abs() < 1e-12);
        assert_eq!(expected_shared_slowdown(0.0, 7.0), 1.0);
        assert_eq!(expected_shared_slowdown(2.0, 1.0), 1.0);
    }

    #[test]
    fn threads_that_keep_their_rate_have_caches_of_their_own() {
        // Threshold half-way from 1 to 3: 2.
        let own = share(2, 1.05);
        assert!(own.private());
        assert_eq!(own.capacity_kib(8192), 16384);
        let shared = share(2, 2.6);
        assert!(!shared.private());
        assert_eq!(shared.capacity_kib(8192), 8192);
        // One CPU alone says nothing: the knee as it is.
        assert!(!share(1, 1.0).private());
        assert_eq!(share(1, 1.0).capacity_kib(8192), 8192);
    }
}
