//! What one core pays to fetch again the lines of a random-access buffer after another task's
//! turn on its cache evicted them: the per-line refill of the cost model (docs/model/caches.md, "Turns
//! on a cache"), which it takes as a miss instead of a hit, `(latency - llc_latency) / MLP`,
//! that is the probe's own `local_gather_ns - llc_gather_ns`.
//!
//! On one CPU, each round: a buffer of half the knee is updated at random until it is warm;
//! a buffer of four times the LLC is updated at random, two updates per line, and read
//! through (the other task's turn: its lines and its pages push out the buffer's lines and
//! TLB entries; a read-through alone may not, where the LLC keeps streamed lines at low
//! priority); then `3 x lines` random updates of the buffer are timed, and the same updates
//! again, warm. A random update touches one line, so after `k` updates the lines touched
//! (each evicted one a miss) are `lines x (1 - exp(-k / lines))`. The time over the warm run,
//! divided by that, is what one evicted line costs, TLB walks and all: the figure to compare
//! with the model's.

use crate::BenchError;
use crate::probe::{bind, chase_buffer_kib, gather, gather_indices, median, stream};
use serde::Serialize;
use topo::CpuSet;

/// Updates timed after the eviction, per line of the buffer.
const UPDATES_PER_LINE: u64 = 3;

/// The refill measured on one CPU.
#[derive(Clone, Debug, Serialize)]
pub struct Refill {
    pub cpu: usize,
    /// The random buffer, KiB (half the knee), and the one read through to evict it.
    pub buffer_kib: usize,
    pub evict_kib: usize,
    /// ns per update, warm and right after the eviction (medians over the rounds).
    pub warm_ns: f64,
    pub cold_ns: f64,
    /// ns per evicted line fetched again (median over the rounds).
    pub per_line_ns: f64,
}

/// Evicted lines that `updates` random updates over `lines` lines touch.
pub fn lines_touched(lines: f64, updates: f64) -> f64 {
    if lines <= 0.0 {
        return 0.0;
    }
    lines * (1.0 - (-updates / lines).exp())
}

/// ns per line fetched again: the extra time of `updates` updates after the eviction over
/// the same updates warm, over the lines they touched.
pub fn per_line_ns(cold_ns: f64, warm_ns: f64, updates: f64, lines: f64) -> f64 {
    let touched = lines_touched(lines, updates);
    if touched <= 0.0 {
        return 0.0;
    }
    ((cold_ns - warm_ns) * updates / touched).max(0.0)
}

/// Run the test on `cpu` for a knee of `knee_kib` and an LLC of `llc_kib`.
pub fn measure(
    cpu: usize,
    knee_kib: usize,
    llc_kib: usize,
    rounds: usize,
    seed: u64,
) -> Result<Option<Refill>, BenchError> {
    let buffer_kib = knee_kib / 2;
    if buffer_kib == 0 || rounds == 0 {
        return Ok(None);
    }
    let evict_kib = 4 * llc_kib.max(knee_kib);
    bind(&[cpu].into_iter().collect::<CpuSet>())?;
    let mut buf = chase_buffer_kib(buffer_kib, seed);
    let mut other = chase_buffer_kib(evict_kib, seed ^ 1);
    // Two random updates per line of the other buffer touch 86% of its lines and its pages,
    // as another task's random updates would; a read through it follows (its streams).
    let evict_idx = gather_indices(
        &other,
        2 * ((evict_kib << 10) / crate::probe::LINE) as u64,
        seed ^ 2,
    );
    let lines = ((buffer_kib << 10) / crate::probe::LINE) as u64;
    let idx = gather_indices(&buf, UPDATES_PER_LINE * lines, seed);
    gather(&mut buf, &idx); // first touches and a warm cache
    let (mut warm, mut cold, mut per_line) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        gather(&mut other, &evict_idx);
        stream(&other);
        let c = gather(&mut buf, &idx);
        let w = gather(&mut buf, &idx);
        per_line.push(per_line_ns(c, w, idx.len() as f64, lines as f64));
        cold.push(c);
        warm.push(w);
    }
    Ok(Some(Refill {
        cpu,
        buffer_kib,
        evict_kib,
        warm_ns: median(&warm),
        cold_ns: median(&cold),
        per_line_ns: median(&per_line),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_touch_lines_as_random_draws_do() {
        // k = lines: 1 - 1/e of them.
        let t = lines_touched(1000.0, 1000.0);
        assert!((t - 1000.0 * (1.0 - (-1.0f64).exp())).abs() < 1e-9);
        // Many updates touch them all, none touch none.
        assert!((lines_touched(1000.0, 1e7) - 1000.0).abs() < 1e-6);
        assert_eq!(lines_touched(1000.0, 0.0), 0.0);
        assert_eq!(lines_touched(0.0, 10.0), 0.0);
    }

    #[test]
    fn the_extra_time_is_shared_by_the_lines_touched() {
        // 3000 updates over 1000 lines touch 950.2 of them; 1 ns more per update is 3000 ns.
        let touched = lines_touched(1000.0, 3000.0);
        let p = per_line_ns(2.0, 1.0, 3000.0, 1000.0);
        assert!((p - 3000.0 / touched).abs() < 1e-9, "{p}");
        // No slower after the eviction: nothing to pay.
        assert_eq!(per_line_ns(1.0, 1.2, 3000.0, 1000.0), 0.0);
    }
}
