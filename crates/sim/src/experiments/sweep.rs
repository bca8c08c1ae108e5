//! Sensitivity sweeps: an assumption without a source that decides a result is re-run at
//! other values, so that a reader sees how much the conclusion depends on it. A sweep names
//! one scheduler column, one option, the values to try and the task counts; each value runs
//! as that column with the option replaced, on the experiment's own numa_test and seeds (so
//! the row of the default value reproduces the column's own figures).
//!
//! ```toml
//! [[sweep]]
//! scheduler = "node-affine-static"
//! option = "pool_delay_busy"
//! values = ["0", "100ms", "200ms", "400ms"]
//! tasks = [16, 64]
//! reps = 3
//! metric = "elapsed_time"
//! why = "no source gives the busy steal delay of the node-affine scheduler"
//! ```
//!
//! An `option` of the form `machine.PARAM` varies the cost model's machine instead of the
//! scheduler (the assumptions that decide whether numa_test is latency- or
//! bandwidth-bound): `machine.mlp` (memory-level parallelism of one core; of its streams too
//! unless the machine gives `stream_mlp`), `machine.stream_mlp` (lines one core keeps in
//! flight for a sequential stream), `machine.llc_latency_ns` (a random access that hits the
//! last-level cache), `machine.llc_kib` (the size of one last-level cache),
//! `machine.local_latency_ns` (the idle local latency; every node pair's latency scales with
//! it, so the remote/local ratios stay), `machine.bandwidth_gbps` (every node's memory
//! bandwidth; each node's remote bandwidth scales with it, so its ratio to the local one stays)
//! and `machine.remote_bandwidth_ratio` (each node's bandwidth for traffic from other nodes, as
//! a fraction of its local bandwidth).
//!
//! [`MACHINE_PARAMS`], [`machine_value`] and [`machine_with`] are the one list of these
//! parameters and their valid values: `homenode sim --machine-set PARAM=VALUE` uses them too.

use serde::{Deserialize, Serialize};

use super::error::{RunFailure, SweepError};
use super::spec::{Metric, NumaTestSection};
use crate::numa_test::CellSummary;
use crate::sched::{self, SchedSpec};
use std::sync::Arc;
use topo::Topology;

/// One sweep of an experiment file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// The column (one of `schedulers`, as written there).
    pub scheduler: String,
    pub option: String,
    pub values: Vec<String>,
    pub tasks: Vec<u32>,
    pub reps: u32,
    pub metric: Metric,
    /// Why the value is uncertain (printed with the table).
    pub why: String,
}

/// A sweep's results: one row of cells per value.
#[derive(Clone, Debug, Serialize)]
pub struct SweepResult {
    pub sweep: Sweep,
    pub rows: Vec<(String, Vec<CellSummary>)>,
}

/// The machine parameters a sweep can vary.
pub const MACHINE_PARAMS: [&str; 15] = [
    "freq_mhz",
    "out_of_order",
    "llc_kib",
    "mlp",
    "stream_mlp",
    "llc_latency_ns",
    "refill_ns",
    "llc_stream_share",
    "llc_ways",
    "llc_private",
    "tlb_entries",
    "tlb_walk_cycles",
    "local_latency_ns",
    "bandwidth_gbps",
    "remote_bandwidth_ratio",
];

/// Node memory bandwidth a machine parameter may set, GB/s: from a 2000-era bus well below
/// azusa16's 1.8 GB/s to HBM-class nodes, so that a typo (`0.0001`, `1e9`) is refused rather
/// than simulated for hours.
pub const BANDWIDTH_GBPS_RANGE: (f64, f64) = (0.1, 100_000.0);

/// A machine parameter or value that cannot be applied; one line naming it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MachineParamError {
    /// Not one of [`MACHINE_PARAMS`].
    #[error("unknown machine parameter `{param}` (valid: {valid})")]
    Unknown { param: String, valid: String },
    /// A value outside the parameter's range (or not a number).
    #[error("`{param}` = {value}: must be {range}")]
    BadValue {
        param: String,
        value: String,
        range: String,
    },
}

/// The values a machine parameter accepts: inclusive bounds, whole numbers only or not, and
/// how to say them.
struct ValidRange {
    lo: f64,
    hi: f64,
    whole: bool,
    text: String,
}

impl ValidRange {
    fn new(lo: f64, hi: f64, text: impl Into<String>) -> Self {
        ValidRange {
            lo,
            hi,
            whole: false,
            text: text.into(),
        }
    }

    fn contains(&self, v: f64) -> bool {
        v.is_finite() && (self.lo..=self.hi).contains(&v) && (!self.whole || v.fract() == 0.0)
    }
}

/// The values `param` accepts.
fn valid_range(param: &str) -> ValidRange {
    match param {
        "bandwidth_gbps" => {
            let (lo, hi) = BANDWIDTH_GBPS_RANGE;
            ValidRange::new(lo, hi, format!("a number of GB/s from {lo} to {hi}"))
        }
        "freq_mhz" => ValidRange::new(1.0, 100_000.0, "a clock in MHz from 1 to 100000"),
        "out_of_order" => ValidRange {
            whole: true,
            ..ValidRange::new(0.0, 1.0, "0 (in order) or 1 (out of order)")
        },
        "llc_stream_share" => ValidRange::new(0.0, 1.0, "a share from 0 to 1"),
        "llc_ways" => ValidRange {
            whole: true,
            ..ValidRange::new(0.0, 1024.0, "ways from 1 to 1024, or 0 (fully associative)")
        },
        "llc_private" => ValidRange {
            whole: true,
            ..ValidRange::new(
                0.0,
                1.0,
                "0 (the LLC's CPUs share it) or 1 (each CPU holds its own llc_kib)",
            )
        },
        "tlb_entries" => ValidRange {
            whole: true,
            ..ValidRange::new(
                0.0,
                1_000_000.0,
                "entries from 1 to 1000000, or 0 (no TLB: translation is free)",
            )
        },
        "tlb_walk_cycles" => ValidRange::new(0.0, 100_000.0, "cycles from 0 to 100000"),
        _ => ValidRange::new(f64::MIN_POSITIVE, f64::MAX, "a positive number"),
    }
}

/// `text` as a value of machine parameter `param`, checked against its range.
pub fn machine_value(param: &str, text: &str) -> Result<f64, MachineParamError> {
    if !MACHINE_PARAMS.contains(&param) {
        return Err(MachineParamError::Unknown {
            param: param.to_string(),
            valid: MACHINE_PARAMS.join(", "),
        });
    }
    let range = valid_range(param);
    match text.trim().parse::<f64>() {
        Ok(v) if range.contains(v) => Ok(v),
        _ => Err(MachineParamError::BadValue {
            param: param.to_string(),
            value: text.trim().to_string(),
            range: range.text,
        }),
    }
}

/// `topo` with machine parameter `param` (one of [`MACHINE_PARAMS`]) set to `v` (a value
/// [`machine_value`] accepted).
pub fn machine_with(topo: &Topology, param: &str, v: f64) -> Option<Topology> {
    let mut t = topo.clone();
    match param {
        "bandwidth_gbps" => {
            for n in &mut t.nodes {
                n.remote_bandwidth_gbps *= v / n.bandwidth_gbps;
                n.bandwidth_gbps = v;
            }
        }
        "freq_mhz" => t.cpu_model.freq_mhz = v,
        "out_of_order" => t.cpu_model.out_of_order = v != 0.0,
        "mlp" => t.cpu_model.mlp = v,
        "stream_mlp" => t.cpu_model.stream_mlp = Some(v),
        "llc_latency_ns" => t.cpu_model.llc_latency_ns = Some(v),
        "refill_ns" => t.cpu_model.refill_ns = Some(v),
        "llc_stream_share" => t.cpu_model.llc_stream_share = v,
        "llc_ways" => t.cpu_model.llc_ways = (v >= 1.0).then_some(v as u32),
        "llc_private" => t.cpu_model.llc_private = v != 0.0,
        "tlb_entries" => t.cpu_model.tlb_entries = (v >= 1.0).then_some(v as u32),
        "tlb_walk_cycles" => t.cpu_model.tlb_walk_cycles = v,
        "llc_kib" => t.cpu_model.llc_bytes = ((v * 1024.0).round() as u64).max(1),
        "local_latency_ns" => {
            let local = t.latency_ns[0][0];
            for row in &mut t.latency_ns {
                for l in row.iter_mut() {
                    *l *= v / local;
                }
            }
        }
        "remote_bandwidth_ratio" => {
            for n in &mut t.nodes {
                n.remote_bandwidth_gbps = n.bandwidth_gbps * v;
            }
        }
        _ => return None,
    }
    Some(t)
}

impl Sweep {
    /// The machine parameter this sweep varies, if it varies one (`machine.PARAM`).
    pub fn machine_param(&self) -> Option<&str> {
        self.option.strip_prefix("machine.")
    }

    /// The machine a value runs on.
    fn machine_for(&self, topo: &Topology, value: &str) -> Result<Topology, SweepError> {
        let Some(param) = self.machine_param() else {
            return Ok(topo.clone());
        };
        let unknown = || SweepError::UnknownMachineParam {
            option: self.option.clone(),
            valid: MACHINE_PARAMS.map(|p| format!("machine.{p}")).join(", "),
        };
        let v = machine_value(param, value).map_err(|e| match e {
            MachineParamError::Unknown { .. } => unknown(),
            MachineParamError::BadValue { value, range, .. } => SweepError::BadMachineValue {
                option: self.option.clone(),
                value,
                range,
            },
        })?;
        machine_with(topo, param, v).ok_or_else(unknown)
    }

    /// The column's spec with `option` set to `value` (a machine sweep keeps the column's).
    pub fn spec_for(&self, value: &str) -> Result<SchedSpec, SweepError> {
        if self.machine_param().is_some() {
            return Ok(SchedSpec::parse(&self.scheduler)?);
        }
        let mut s = SchedSpec::parse(&self.scheduler)?;
        s.options.retain(|(k, _)| k != &self.option);
        s.options.push((self.option.clone(), value.to_string()));
        Ok(s)
    }

    /// Checks the sweep against the experiment's columns and the machine; a message naming
    /// what is wrong.
    pub fn check(&self, schedulers: &[String], topo: &Topology) -> Result<(), SweepError> {
        if !schedulers.contains(&self.scheduler) {
            return Err(SweepError::NotAColumn {
                scheduler: self.scheduler.clone(),
            });
        }
        if self.values.is_empty() || self.tasks.is_empty() || self.tasks.contains(&0) {
            return Err(SweepError::Empty);
        }
        if self.reps == 0 {
            return Err(SweepError::NoReps);
        }
        crate::budget::reps("reps", f64::from(self.reps))?;
        for &t in &self.tasks {
            crate::budget::tasks("tasks", f64::from(t))?;
        }
        for v in &self.values {
            let s = self.spec_for(v)?;
            let topo = &self.machine_for(topo, v)?;
            sched::build(&s, topo).map_err(|source| SweepError::Value {
                option: self.option.clone(),
                value: v.clone(),
                source: Box::new(source),
            })?;
        }
        Ok(())
    }

    /// Runs every value on the experiment's numa_test (with hackbench, as the table's cells
    /// ran, unless the section runs the cell without it).
    pub fn run(
        &self,
        n: &NumaTestSection,
        size: &crate::numa_test::JobSize,
        seed: u64,
        topo: &Arc<Topology>,
        tick: &(dyn Fn() + Sync),
    ) -> Result<SweepResult, RunFailure> {
        let mut rows = Vec::new();
        for v in &self.values {
            let spec = self.spec_for(v)?;
            let machine = match self.machine_param() {
                Some(_) => Arc::new(self.machine_for(topo, v)?),
                None => topo.clone(),
            };
            let column = super::numa::Column {
                n,
                size,
                name: &self.scheduler,
            };
            let mut cells = super::numa::run_column(
                &column,
                &spec,
                &self.tasks,
                self.reps,
                seed,
                &machine,
                tick,
            )?;
            cells.sort_by_key(|c| self.tasks.iter().position(|&t| t == c.tasks));
            rows.push((v.clone(), cells));
        }
        Ok(SweepResult {
            sweep: self.clone(),
            rows,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(option: &str, values: &[&str]) -> Sweep {
        Sweep {
            scheduler: "o1".into(),
            option: option.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
            tasks: vec![4],
            reps: 1,
            metric: Metric::ElapsedTime,
            why: "test".into(),
        }
    }

    #[test]
    fn machine_sweeps_change_the_machine_not_the_scheduler() {
        let t = topo::preset("azusa16").expect("preset");
        let cols = vec!["o1".to_string()];
        let s = sweep("machine.local_latency_ns", &["125"]);
        s.check(&cols, &t).expect("valid");
        assert_eq!(s.spec_for("125").expect("spec").to_string(), "o1");
        let m = s.machine_for(&t, "125").expect("machine");
        assert!((m.latency_ns[0][0] - 125.0).abs() < 1e-9);
        // The remote/local ratio stays.
        let ratio = |x: &Topology| x.latency_ns[0][1] / x.latency_ns[0][0];
        assert!((ratio(&m) - ratio(&t)).abs() < 1e-9);
        let m = machine_with(&t, "mlp", 4.0).expect("mlp");
        assert_eq!(m.cpu_model.mlp, 4.0);
        let m = machine_with(&t, "remote_bandwidth_ratio", 0.5).expect("bw");
        assert!((m.nodes[1].remote_bandwidth_gbps - t.nodes[1].bandwidth_gbps / 2.0).abs() < 1e-9);
    }

    #[test]
    fn bandwidth_sets_every_node_and_keeps_the_remote_ratio() {
        let t = topo::preset("wildfire8").expect("preset");
        let s = sweep("machine.bandwidth_gbps", &["3.45"]);
        s.check(&["o1".to_string()], &t).expect("valid");
        let m = s.machine_for(&t, "3.45").expect("machine");
        for (a, b) in m.nodes.iter().zip(&t.nodes) {
            assert_eq!(a.bandwidth_gbps, 3.45);
            // wildfire8: 6.9 local, 4.0 remote; half the local bandwidth, half the remote.
            let want = b.remote_bandwidth_gbps * 3.45 / b.bandwidth_gbps;
            assert!((a.remote_bandwidth_gbps - want).abs() < 1e-9, "{a:?}");
        }
    }

    #[test]
    fn machine_values_are_checked_against_their_range() {
        assert_eq!(machine_value("bandwidth_gbps", " 12.5 "), Ok(12.5));
        assert_eq!(machine_value("mlp", "0.5"), Ok(0.5));
        for v in ["0", "0.01", "1e9", "inf", "NaN", "x"] {
            let e = machine_value("bandwidth_gbps", v).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("`bandwidth_gbps` = {v}: must be a number of GB/s from 0.1 to 100000")
            );
        }
        assert_eq!(machine_value("freq_mhz", "4250"), Ok(4250.0));
        assert_eq!(machine_value("out_of_order", "1"), Ok(1.0));
        for v in ["0.5", "2", "-1"] {
            let e = machine_value("out_of_order", v).unwrap_err().to_string();
            assert!(e.contains("0 (in order) or 1 (out of order)"), "{e}");
        }
        let t = topo::preset("azusa16").expect("preset");
        let m = machine_with(&t, "out_of_order", 1.0).expect("known");
        assert!(m.cpu_model.out_of_order && !t.cpu_model.out_of_order);
        let m = machine_with(&t, "tlb_entries", 0.0).expect("known");
        assert_eq!(m.cpu_model.tlb_entries, None);
        let m = machine_with(&t, "tlb_entries", 128.0).expect("known");
        assert_eq!(m.cpu_model.tlb_entries, Some(128));
        let m = machine_with(&t, "tlb_walk_cycles", 30.0).expect("known");
        assert_eq!(m.cpu_model.tlb_walk_cycles, 30.0);
        let e = machine_value("tlb_entries", "9.5").unwrap_err().to_string();
        assert!(e.contains("or 0 (no TLB"), "{e}");
        assert_eq!(
            machine_with(&t, "freq_mhz", 1600.0)
                .expect("known")
                .ns_per_cycle(),
            0.625
        );
        let e = machine_value("bw", "1").unwrap_err().to_string();
        assert!(e.contains("`bw`") && e.contains("bandwidth_gbps"), "{e}");
        let e = sweep("machine.bandwidth_gbps", &["0"])
            .check(
                &["o1".to_string()],
                &topo::preset("azusa16").expect("preset"),
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("machine.bandwidth_gbps = 0") && e.contains("0.1 to 100000"),
            "{e}"
        );
    }

    #[test]
    fn bad_machine_sweeps_name_the_choices() {
        let t = topo::preset("azusa16").expect("preset");
        let cols = vec!["o1".to_string()];
        let e = sweep("machine.tlb", &["1"])
            .check(&cols, &t)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("machine.tlb") && e.contains("machine.mlp"),
            "{e}"
        );
        for v in ["0", "-1", "fast"] {
            let e = sweep("machine.mlp", &[v])
                .check(&cols, &t)
                .unwrap_err()
                .to_string();
            assert!(e.contains("positive") && e.contains(v), "{e}");
        }
    }
}
