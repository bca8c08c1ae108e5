//! What measuring costs the workers: the same worker set run with per-node sampling on and
//! off, alternately, and the median ratio of the workers' total user time and of the elapsed
//! time (on / off). A ratio of 1.005 means sampling cost 0.5%.
//!
//! On a shared or noisy machine those ratios scatter by several percent from run to run, so
//! the direct cost is reported as well: the CPU time the sampling thread itself used, as a
//! share of the workers' user time. When the workers occupy every CPU, that is the CPU time
//! measuring takes away from them: an upper bound of the slowdown that does not depend on
//! the noise (cache effects of the sampler aside).

use crate::error::BenchError;
use crate::numa_test::{RunConfig, run_once};
use std::time::Duration;

/// One pair of runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub user_on_s: f64,
    pub user_off_s: f64,
    pub elapsed_on_s: f64,
    pub elapsed_off_s: f64,
    /// `/proc` samples taken in the measured run.
    pub samples: u64,
    /// CPU time of the sampling thread in the measured run.
    pub sampler_cpu_s: f64,
}

impl Pair {
    pub fn user_ratio(&self) -> f64 {
        self.user_on_s / self.user_off_s
    }

    pub fn elapsed_ratio(&self) -> f64 {
        self.elapsed_on_s / self.elapsed_off_s
    }

    /// Sampler CPU time / workers' user time in the measured run.
    pub fn sampler_share(&self) -> f64 {
        self.sampler_cpu_s / self.user_on_s
    }
}

/// The result: every pair and the medians.
#[derive(Clone, Debug, PartialEq)]
pub struct Overhead {
    pub pairs: Vec<Pair>,
    pub median_user_ratio: f64,
    pub median_elapsed_ratio: f64,
    pub median_sampler_share: f64,
}

pub use report::median;

/// Run `pairs` pairs of the run `cfg` describes (without its disturbance), one with sampling
/// every `interval` and one without, alternating which goes first. `on_pair` sees each pair.
pub fn measure(
    cfg: &RunConfig,
    interval: Duration,
    pairs: u32,
    on_pair: &mut dyn FnMut(u32, &Pair),
) -> Result<Overhead, BenchError> {
    if pairs == 0 {
        return Err(BenchError::Config("--runs must be at least 1".into()));
    }
    let on = RunConfig {
        sample: Some(interval),
        disturb: None,
        ..cfg.clone()
    };
    let off = RunConfig {
        sample: None,
        ..on.clone()
    };
    let mut out = Vec::new();
    for i in 0..pairs {
        let (a, b) = if i % 2 == 0 { (&on, &off) } else { (&off, &on) };
        let ra = run_once(a, &mut |_, _| {})?;
        let rb = run_once(b, &mut |_, _| {})?;
        let (ron, roff) = if i % 2 == 0 { (ra, rb) } else { (rb, ra) };
        let p = Pair {
            user_on_s: ron.figures.total_user_s,
            user_off_s: roff.figures.total_user_s,
            elapsed_on_s: ron.figures.elapsed_s,
            elapsed_off_s: roff.figures.elapsed_s,
            samples: ron.figures.events,
            sampler_cpu_s: ron.sampler_cpu_s,
        };
        on_pair(i + 1, &p);
        out.push(p);
    }
    Ok(Overhead {
        median_user_ratio: median(&out.iter().map(Pair::user_ratio).collect::<Vec<_>>()),
        median_elapsed_ratio: median(&out.iter().map(Pair::elapsed_ratio).collect::<Vec<_>>()),
        median_sampler_share: median(&out.iter().map(Pair::sampler_share).collect::<Vec<_>>()),
        pairs: out,
    })
}

/// Column heads of [`Pair::row`].
pub fn header() -> String {
    format!(
        "{:>4} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7} {:>8} {:>9}",
        "pair",
        "user on",
        "user off",
        "ratio",
        "elap on",
        "elap off",
        "ratio",
        "samples",
        "sampler"
    )
}

impl Pair {
    /// One line of the table: seconds, ratios on/off, samples, sampler CPU share.
    pub fn row(&self, i: u32) -> String {
        format!(
            "{i:>4} {:>9.3} {:>9.3} {:>7.4} {:>9.3} {:>9.3} {:>7.4} {:>8} {:>8.3}%",
            self.user_on_s,
            self.user_off_s,
            self.user_ratio(),
            self.elapsed_on_s,
            self.elapsed_off_s,
            self.elapsed_ratio(),
            self.samples,
            self.sampler_share() * 100.0
        )
    }
}

impl Overhead {
    /// The closing lines: the medians.
    pub fn summary(&self) -> String {
        format!(
            "median ratio on/off over {} pairs: workers' user time {:.4} ({:+.2}%), elapsed {:.4} ({:+.2}%)\n\
             median sampler CPU time / workers' user time: {:.3}%",
            self.pairs.len(),
            self.median_user_ratio,
            (self.median_user_ratio - 1.0) * 100.0,
            self.median_elapsed_ratio,
            (self.median_elapsed_ratio - 1.0) * 100.0,
            self.median_sampler_share * 100.0
        )
    }
}
