//! Sensitivity sweeps of a `[mix]` experiment: the disk model's
//! parameters without a datasheet behind them, and the disk count the source does not give.
//!
//! ```toml
//! [[mix_sweep]]
//! param = "seek_ms"
//! values = [4, 6, 8]
//! reps = 3
//! why = "no datasheet of the era's 10,000 rpm disks was read for the average seek"
//! ```
//!
//! Every scheduler of the experiment runs the mix at each value, with the file's seeds; the
//! report gives each column's mean build time and load average per value.

use super::error::RunFailure;
use super::mixrun::{self, MixCell};
use super::spec::{ExperimentSpec, MixSection};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use topo::Topology;

/// One `[[mix_sweep]]` of an experiment file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixSweep {
    /// One of [`MIX_PARAMS`].
    pub param: String,
    pub values: Vec<f64>,
    pub reps: u32,
    /// Why the value is uncertain (printed with the table).
    pub why: String,
}

/// What a mix sweep can vary: the number of disks and each disk's mechanics.
pub const MIX_PARAMS: [&str; 4] = ["disks", "seek_ms", "rpm", "transfer_mb_s"];

/// A mix sweep's results: the columns' cells at each value.
#[derive(Clone, Debug, Serialize)]
pub struct MixSweepResult {
    pub sweep: MixSweep,
    pub rows: Vec<(f64, Vec<MixCell>)>,
}

impl MixSweep {
    /// Checks the parameter, the values and the repetitions; the message names the culprit.
    pub fn check(&self, m: &MixSection) -> Result<(), MixSweepError> {
        if !MIX_PARAMS.contains(&self.param.as_str()) {
            return Err(MixSweepError::UnknownParam {
                param: self.param.clone(),
                valid: MIX_PARAMS.join(", "),
            });
        }
        if m.disks.is_none() {
            return Err(MixSweepError::NoDisks);
        }
        if self.values.is_empty() {
            return Err(MixSweepError::NoValues);
        }
        if self.reps == 0 {
            return Err(MixSweepError::NoReps);
        }
        for &v in &self.values {
            section_with(m, &self.param, v)?;
        }
        Ok(())
    }

    /// Run every column of `spec` at each value.
    pub fn run(
        &self,
        spec: &ExperimentSpec,
        m: &MixSection,
        topo: &Arc<Topology>,
        tick: &(dyn Fn() + Sync),
    ) -> Result<MixSweepResult, RunFailure> {
        let mut s = spec.clone();
        s.reps = self.reps;
        let mut rows = Vec::new();
        for &v in &self.values {
            let mv =
                section_with(m, &self.param, v).map_err(|e| RunFailure::Config(e.to_string()))?;
            rows.push((v, mixrun::run(&s, &mv, topo, tick)?));
        }
        Ok(MixSweepResult {
            sweep: self.clone(),
            rows,
        })
    }
}

/// Why a `[mix.sweep]` cannot run; each names its culprit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MixSweepError {
    #[error("unknown param `{param}` (valid: {valid})")]
    UnknownParam { param: String, valid: String },
    #[error("the disk model needs `disks` in [mix]")]
    NoDisks,
    #[error("values: give at least one")]
    NoValues,
    #[error("reps: must be at least 1")]
    NoReps,
    #[error("{param} = {value}: {why}")]
    BadValue {
        param: String,
        value: f64,
        why: &'static str,
    },
}

/// `m` with `param` set to `v`, or why `v` does not fit it.
fn section_with(m: &MixSection, param: &str, v: f64) -> Result<MixSection, MixSweepError> {
    let mut out = m.clone();
    let bad = |why: &'static str| {
        Err(MixSweepError::BadValue {
            param: param.to_string(),
            value: v,
            why,
        })
    };
    if !(v.is_finite() && v > 0.0) {
        return bad("must be a positive number");
    }
    match param {
        "disks" => {
            if v.fract() != 0.0 || v > 1024.0 {
                return bad("must be a whole number of disks, 1 to 1024");
            }
            out.disks = Some(v as u32);
        }
        "seek_ms" => out.seek_ms = Some(v),
        "rpm" => {
            if v.fract() != 0.0 || v > 100_000.0 {
                return bad("must be a whole number up to 100000");
            }
            out.rpm = Some(v as u32);
        }
        "transfer_mb_s" => out.transfer_mb_s = Some(v),
        _ => return bad("unknown param"),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix() -> MixSection {
        MixSection {
            builds: 1,
            jobs: 4,
            parallelism: 2,
            bonnies: 1,
            disks: Some(1),
            seek_ms: None,
            rpm: None,
            transfer_mb_s: None,
        }
    }

    fn sweep(param: &str, values: &[f64]) -> MixSweep {
        MixSweep {
            param: param.into(),
            values: values.to_vec(),
            reps: 1,
            why: "test".into(),
        }
    }

    #[test]
    fn values_set_the_section() {
        assert_eq!(section_with(&mix(), "disks", 4.0).unwrap().disks, Some(4));
        assert_eq!(
            section_with(&mix(), "seek_ms", 8.0).unwrap().seek_ms,
            Some(8.0)
        );
        assert_eq!(section_with(&mix(), "rpm", 7200.0).unwrap().rpm, Some(7200));
        let t = section_with(&mix(), "transfer_mb_s", 40.0).unwrap();
        assert_eq!(t.transfer_mb_s, Some(40.0));
    }

    #[test]
    fn bad_sweeps_name_the_culprit() {
        let e = sweep("seek", &[1.0]).check(&mix()).unwrap_err().to_string();
        assert!(e.contains("`seek`") && e.contains("seek_ms, rpm"), "{e}");
        let e = sweep("disks", &[1.5])
            .check(&mix())
            .unwrap_err()
            .to_string();
        assert!(e.contains("disks = 1.5") && e.contains("whole"), "{e}");
        let e = sweep("seek_ms", &[-2.0])
            .check(&mix())
            .unwrap_err()
            .to_string();
        assert!(e.contains("positive"), "{e}");
        let e = sweep("seek_ms", &[]).check(&mix()).unwrap_err().to_string();
        assert!(e.contains("values"), "{e}");
        let no_disks = MixSection {
            disks: None,
            ..mix()
        };
        let e = sweep("seek_ms", &[4.0])
            .check(&no_disks)
            .unwrap_err()
            .to_string();
        assert!(e.contains("disks"), "{e}");
    }

    #[test]
    fn a_slower_disk_lengthens_the_builds() {
        let spec = ExperimentSpec {
            name: "t".into(),
            title: "t".into(),
            description: String::new(),
            machine: "wildfire8".into(),
            schedulers: vec!["aa".into()],
            reps: 1,
            seed: 1,
            numa_test: None,
            mix: Some(mix()),
            study: None,
            scoreboard: None,
            sweep: Vec::new(),
            mix_sweep: Vec::new(),
        };
        let topo = Arc::new(topo::resolve_machine("wildfire8").unwrap());
        let r = sweep("seek_ms", &[1.0, 40.0])
            .run(&spec, &mix(), &topo, &|| {})
            .unwrap();
        let fast = r.rows[0].1[0].build.mean;
        let slow = r.rows[1].1[0].build.mean;
        assert!(slow > fast, "{slow} !> {fast}");
    }
}
