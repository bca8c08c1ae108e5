//! What one line of a job's random array costs to fetch again after another job's turn on the
//! same CPU: the cost model's `cpu.refill_ns` (docs/model/caches.md, "Turns on a cache"), measured the
//! way the turns happen.
//!
//! The refill test ([`crate::refill`]) pushes a buffer out with one large sweep of the same
//! thread and times the buffer's return. A job back from another job's turn finds more to
//! fetch again than its random array's lines: its pages' translations and whatever else of
//! its working set the other job pushed out. This test runs two numa_test jobs' arrays
//! (`a[ix[i]] += b[i]` at the benchmark's default PROBLEMSIZE) in one thread on one CPU: first
//! one alone, then both in turns of one pass each. No context switch happens, so what the
//! turns cost is the caches and the TLB. The extra time of a turn, over the lines of `a` the
//! turn touches (`lines x (1 - exp(-updates / lines))`), is the figure per line the model
//! charges.

use crate::BenchError;
use crate::probe::{bind, median};
use crate::refill::{lines_touched, per_line_ns};
use crate::worker::{Arrays, DEFAULT_SIZE};
use serde::Serialize;
use std::time::Instant;
use topo::CpuSet;

/// Turns each job takes per timed round.
const TURNS: u32 = 20;

/// The test's result on one CPU.
#[derive(Clone, Debug, Serialize)]
pub struct TurnRefill {
    pub cpu: usize,
    /// PROBLEMSIZE of each job, and the updates of one turn (one pass).
    pub size: u64,
    pub turn_updates: u64,
    /// ns per update, one job alone and two in turns (medians over the rounds).
    pub alone_ns: f64,
    pub turns_ns: f64,
    /// What a turn costs the job coming back, us, and that over the lines it fetches again.
    pub per_turn_us: f64,
    pub per_line_ns: f64,
}

/// Lines of `a` (8-byte elements, `line` bytes a line).
pub fn array_lines(size: u64, line: u64) -> f64 {
    (size * 8).div_ceil(line.max(1)) as f64
}

/// Run the test on `cpu`, `rounds` times, with cache lines of `line` bytes.
pub fn measure(
    cpu: usize,
    line: u64,
    rounds: usize,
    seed: u64,
) -> Result<Option<TurnRefill>, BenchError> {
    if rounds == 0 {
        return Ok(None);
    }
    bind(&[cpu].into_iter().collect::<CpuSet>())?;
    let size = DEFAULT_SIZE;
    let mut x = Arrays::init(size, seed)?;
    let mut y = Arrays::init(size, seed ^ 0x5eed)?;
    let turn = size;
    // Warm both, then time.
    x.updates(0, turn);
    y.updates(0, turn);
    let (mut alone, mut turns) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        x.updates(0, u64::from(TURNS) * turn);
        alone.push(t.elapsed().as_nanos() as f64 / (f64::from(TURNS) * turn as f64));
        let t = Instant::now();
        for _ in 0..TURNS {
            x.updates(0, turn);
            y.updates(0, turn);
        }
        turns.push(t.elapsed().as_nanos() as f64 / (2.0 * f64::from(TURNS) * turn as f64));
    }
    let (alone_ns, turns_ns) = (median(&alone), median(&turns));
    let lines = array_lines(size, line);
    let per_line = per_line_ns(turns_ns, alone_ns, turn as f64, lines);
    let touched = lines_touched(lines, turn as f64);
    Ok(Some(TurnRefill {
        cpu,
        size,
        turn_updates: turn,
        alone_ns,
        turns_ns,
        per_turn_us: per_line * touched / 1e3,
        per_line_ns: per_line,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_touches_nearly_every_line_of_the_array() {
        // 10^6 elements of 8 bytes: 125,000 lines of 64 bytes; 10^6 updates touch all but
        // exp(-8) of them.
        let lines = array_lines(1_000_000, 64);
        let t = lines_touched(lines, 1e6);
        assert!(
            (t - 125_000.0 * (1.0 - (-8.0f64).exp())).abs() < 1e-6,
            "{t}"
        );
        assert_eq!(lines_touched(lines, 0.0), 0.0);
    }

    #[test]
    fn the_extra_time_of_a_turn_is_shared_by_the_lines_it_fetches_again() {
        // 1 ns more per update over 10^6 updates is 1 ms, over the lines they touch.
        let lines = array_lines(1_000_000, 64);
        let p = per_line_ns(2.0, 1.0, 1e6, lines);
        assert!((p - 1e6 / lines_touched(lines, 1e6)).abs() < 1e-9, "{p}");
        assert_eq!(per_line_ns(1.0, 2.0, 1e6, lines), 0.0);
        assert_eq!(per_line_ns(2.0, 1.0, 1e6, 0.0), 0.0);
    }
}
