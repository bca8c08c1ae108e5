//! The kernel's load average (`kernel/timer.c`, `calc_load`, 2.4 and 2.5).
//!
//! Every `LOAD_FREQ` (5 s) the kernel counts the active tasks, those running or runnable and
//! those in uninterruptible sleep (in the model: waiting for a disk, [`crate::disk`]), and
//! folds the count into exponentially damped averages in 11-bit fixed point:
//! `load = (load * EXP + n * (FIXED_1 - EXP)) >> FSHIFT`, with `EXP_1 = 1884`,
//! `EXP_5 = 2014`, `EXP_15 = 2037` (`1 / exp(5 s / 1 min)` etc. in fixed point). The model
//! does the same integer arithmetic, starting from 0 at time 0 as at boot.

use crate::time::{Ns, SEC};
use serde::Serialize;

/// `FSHIFT`: bits of precision.
pub const FSHIFT: u32 = 11;
/// `FIXED_1`: 1.0 in fixed point.
pub const FIXED_1: u64 = 1 << FSHIFT;
/// `LOAD_FREQ`: 5 s between samples.
pub const LOAD_FREQ: Ns = 5 * SEC;
/// `EXP_1`, `EXP_5`, `EXP_15`.
pub const EXP: [u64; 3] = [1884, 2014, 2037];

/// The 1-, 5- and 15-minute averages and the samples of the 1-minute one.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadAvg {
    /// `avenrun[]`, fixed point.
    pub avenrun: [u64; 3],
    /// Time of the next sample.
    pub next: Ns,
    /// The 1-minute average after each sample.
    pub samples: Vec<f64>,
}

impl Default for LoadAvg {
    fn default() -> Self {
        LoadAvg {
            avenrun: [0; 3],
            next: LOAD_FREQ,
            samples: Vec::new(),
        }
    }
}

/// A run's 1-minute load average: mean and peak over its samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LoadSummary {
    pub samples: usize,
    pub mean: f64,
    pub peak: f64,
}

impl LoadAvg {
    /// Fold one count of active tasks into the averages (`CALC_LOAD`).
    pub fn sample(&mut self, active: usize) {
        let n = active as u64 * FIXED_1;
        for (load, exp) in self.avenrun.iter_mut().zip(EXP) {
            *load = (*load * exp + n * (FIXED_1 - exp)) >> FSHIFT;
        }
        self.samples.push(self.one_minute());
        self.next += LOAD_FREQ;
    }

    pub fn one_minute(&self) -> f64 {
        self.avenrun[0] as f64 / FIXED_1 as f64
    }

    pub fn summary(&self) -> LoadSummary {
        self.summary_until(Ns::MAX)
    }

    /// Mean and peak of the samples taken up to `end` (the first sample is at `LOAD_FREQ`).
    pub fn summary_until(&self, end: Ns) -> LoadSummary {
        let n = (end / LOAD_FREQ).min(self.samples.len() as u64) as usize;
        let s = &self.samples[..n];
        LoadSummary {
            samples: n,
            mean: s.iter().sum::<f64>() / n.max(1) as f64,
            peak: s.iter().copied().fold(0.0, f64::max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_count_is_approached_exponentially() {
        let mut l = LoadAvg::default();
        l.sample(10);
        // One sample: 10 * (1 - 1884/2048), truncated.
        assert_eq!(l.avenrun[0], 10 * 2048 * 164 / 2048);
        for _ in 0..200 {
            l.sample(10);
        }
        // Truncation leaves the fixed point a few units of 1/2048 below 10.
        assert!((l.one_minute() - 10.0).abs() < 0.01, "{}", l.one_minute());
        assert_eq!(l.next, 202 * LOAD_FREQ, "the next sample after 201");
        let early = l.summary_until(LOAD_FREQ);
        assert_eq!(early.samples, 1);
        assert!((early.mean - early.peak).abs() < 1e-12 && early.peak < 1.0);
        for _ in 0..200 {
            l.sample(0);
        }
        assert!(l.one_minute() < 0.01);
    }
}
