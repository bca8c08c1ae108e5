//! numa_test experiments: each scheduler column's matrix with hackbench, and without it for
//! the cells listed in `no_hackbench`, merged in scheduler then task-count order. Every
//! (task count, repetition) has its own seed whatever the column, so splitting the matrix
//! by column changes no figure.

use super::spec::{ExperimentSpec, NumaTestSection};
use crate::numa_test::{CellSummary, Matrix, NumaTestError, run_matrix};
use crate::sched::SchedSpec;
use crate::workload::NumaTestParams;
use std::sync::Arc;
use topo::Topology;

pub fn run(
    spec: &ExperimentSpec,
    n: &NumaTestSection,
    topo: &Arc<Topology>,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<CellSummary>, NumaTestError> {
    let scheds = spec.sched_specs();
    let mut cells = Vec::new();
    for (name, sched) in spec.schedulers.iter().zip(&scheds) {
        cells.extend(run_column(
            n, name, sched, &n.tasks, spec.reps, spec.seed, topo, tick,
        )?);
    }
    let col = |c: &CellSummary| spec.schedulers.iter().position(|s| *s == c.scheduler);
    let row = |c: &CellSummary| n.tasks.iter().position(|&t| t == c.tasks);
    cells.sort_by_key(|c| (col(c), row(c)));
    Ok(cells)
}

/// One column's cells for `tasks`: those the section lists in `no_hackbench` for `column` run
/// without the disturbance, the others with it. Cells come back in no particular order.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_column(
    n: &NumaTestSection,
    column: &str,
    sched: &SchedSpec,
    tasks: &[u32],
    reps: u32,
    seed: u64,
    topo: &Arc<Topology>,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<CellSummary>, NumaTestError> {
    let mut cells = Vec::new();
    for disturb in [true, false] {
        let these: Vec<u32> = tasks
            .iter()
            .copied()
            .filter(|&t| n.quiet(column, t) != disturb)
            .collect();
        if these.is_empty() {
            continue;
        }
        let m = Matrix {
            scheds: vec![sched.clone()],
            tasks: these,
            reps,
            seed,
            params: NumaTestParams {
                problem_size: n.problem_size,
                disturb,
                ..Default::default()
            },
        };
        cells.extend(run_matrix(topo, &m, tick)?);
    }
    Ok(cells)
}
