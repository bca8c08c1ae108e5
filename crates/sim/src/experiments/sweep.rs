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

impl Sweep {
    /// The column's spec with `option` set to `value`.
    pub fn spec_for(&self, value: &str) -> Result<SchedSpec, SweepError> {
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
        seed: u64,
        topo: &Arc<Topology>,
        tick: &(dyn Fn() + Sync),
    ) -> Result<SweepResult, RunFailure> {
        let mut rows = Vec::new();
        for v in &self.values {
            let spec = self.spec_for(v)?;
            let mut cells = super::numa::run_column(
                n,
                &self.scheduler,
                &spec,
                &self.tasks,
                self.reps,
                seed,
                topo,
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
