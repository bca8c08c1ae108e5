//! numa_test's size: PROBLEMSIZE and passes, as given or chosen for the machine.
//!
//! The original benchmark ran jobs of about 20 s with its disturbance at 3 s, so the
//! disturbance hit jobs early in their life and ElapsedTime was the jobs'. On a machine
//! hundreds of times faster the original size ends its jobs before the disturbance starts.
//! The automatic size keeps the original PROBLEMSIZE (the same 20 MB per job, the same cache
//! behaviour) and raises the passes until one job alone on the machine runs at least
//! [`LONE_JOB_SPAN`] times the disturbance's start. How long a lone job runs comes from the
//! simulator itself: a pilot run of one job, without the disturbance, under `o1`, on a fixed
//! seed; time is linear in the passes, so two pilots give the rate. Machines where the
//! original size already runs that long keep it.

use super::{NumaTestError, run_one};
use crate::sched::SchedSpec;
use crate::time::Ns;
use crate::workload::NumaTestParams;
use serde::Serialize;
use std::sync::Arc;
use topo::Topology;

/// The original benchmark's PROBLEMSIZE.
pub const ORIGINAL_PROBLEM_SIZE: u64 = 1_000_000;
/// The original benchmark's passes.
pub const ORIGINAL_PASSES: u32 = 100;
/// How long a lone job runs under the automatic size, in multiples of the time the
/// disturbance starts at: with 2, the disturbance starts before the middle of even a lone
/// job's life, and jobs that share the machine run longer still.
pub const LONE_JOB_SPAN: f64 = 2.0;
/// The most passes the automatic size picks (the limit on `--passes`).
pub const MAX_PASSES: u32 = 1_000_000;
/// The scheduler and seed of the pilot runs (a lone job on an idle machine runs on one CPU
/// next to its memory under any scheduler; fixing both keeps the size one per machine).
const PILOT_SCHED: &str = "o1";
const PILOT_SEED: u64 = 1;

/// The size of a numa_test run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct JobSize {
    /// PROBLEMSIZE: elements per array.
    pub problem_size: u64,
    pub passes: u32,
    /// Chosen by the rule of this module: neither PROBLEMSIZE nor passes was given.
    pub auto: bool,
}

impl JobSize {
    /// The original benchmark's size, as given.
    pub const ORIGINAL: JobSize = JobSize {
        problem_size: ORIGINAL_PROBLEM_SIZE,
        passes: ORIGINAL_PASSES,
        auto: false,
    };

    /// `PROBLEMSIZE 1000000, 100 passes (automatic)`.
    pub fn describe(&self) -> String {
        format!(
            "PROBLEMSIZE {}, {} ({})",
            self.problem_size,
            topo::count(self.passes, "pass"),
            if self.auto { "automatic" } else { "given" }
        )
    }

    /// `base` with this size.
    pub fn apply(&self, base: &NumaTestParams) -> NumaTestParams {
        NumaTestParams {
            problem_size: self.problem_size,
            passes: self.passes,
            ..base.clone()
        }
    }
}

/// The size of a run: what was given (the other half at the original's), or, when neither
/// is, the automatic size for `topo` and `base`'s disturbance time.
pub fn resolve(
    topo: &Arc<Topology>,
    problem_size: Option<u64>,
    passes: Option<u32>,
    base: &NumaTestParams,
) -> Result<JobSize, NumaTestError> {
    if problem_size.is_none() && passes.is_none() {
        return auto_size(topo, base);
    }
    Ok(JobSize {
        problem_size: problem_size.unwrap_or(ORIGINAL_PROBLEM_SIZE),
        passes: passes.unwrap_or(ORIGINAL_PASSES),
        auto: false,
    })
}

/// The automatic size for `topo`: the original PROBLEMSIZE, and the original passes or more,
/// the fewest with which a lone job runs at least [`LONE_JOB_SPAN`] x `base.disturb_at`.
pub fn auto_size(topo: &Arc<Topology>, base: &NumaTestParams) -> Result<JobSize, NumaTestError> {
    let target = LONE_JOB_SPAN * base.disturb_at as f64;
    let size = |passes: u32| JobSize {
        passes,
        auto: true,
        ..JobSize::ORIGINAL
    };
    let first = lone_job_ns(topo, base, ORIGINAL_PASSES)? as f64;
    if first >= target {
        return Ok(size(ORIGINAL_PASSES));
    }
    let second = lone_job_ns(topo, base, 2 * ORIGINAL_PASSES)? as f64;
    let per_pass = (second - first) / f64::from(ORIGINAL_PASSES);
    if per_pass <= 0.0 {
        return Err(NumaTestError::PassTakesNoTime {
            machine: topo.name.clone(),
        });
    }
    let more = ((target - first) / per_pass).ceil();
    let passes = (f64::from(ORIGINAL_PASSES) + more).min(f64::from(MAX_PASSES)) as u32;
    Ok(size(passes))
}

/// How long one job alone on `topo` runs at the original PROBLEMSIZE and `passes` (from its
/// creation to its exit), ns: a pilot run without the disturbance.
pub fn lone_job_ns(
    topo: &Arc<Topology>,
    base: &NumaTestParams,
    passes: u32,
) -> Result<Ns, NumaTestError> {
    let params = NumaTestParams {
        tasks: 1,
        problem_size: ORIGINAL_PROBLEM_SIZE,
        passes,
        disturb: false,
        ..base.clone()
    };
    let spec = SchedSpec {
        name: PILOT_SCHED.into(),
        options: Vec::new(),
    };
    let r = run_one(topo, &spec, &params, PILOT_SEED)?;
    Ok(r.tasks
        .iter()
        .filter(|t| t.job)
        .map(|t| t.exited - t.created)
        .max()
        .unwrap_or(0))
}
