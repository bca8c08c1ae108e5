//! numa_test experiments: each scheduler column's matrix with hackbench, and without it for
//! the cells listed in `no_hackbench`, merged in scheduler then task-count order. Every
//! (task count, repetition) has its own seed whatever the column, so splitting the matrix
//! by column changes no figure.

use super::spec::{ExperimentSpec, NumaTestSection};
use crate::numa_test::{CellSummary, JobSize, Matrix, NumaTestError, resolve_size, run_matrix};
use crate::sched::SchedSpec;
use crate::workload::NumaTestParams;
use std::sync::Arc;
use topo::Topology;

/// The section's size on the experiment's machine: as the file gives it, or chosen for the
/// machine when it gives neither `problem_size` nor `passes`. Sweeps keep it, so that a swept
/// machine parameter changes the machine, not the work.
pub fn size(n: &NumaTestSection, topo: &Arc<Topology>) -> Result<JobSize, NumaTestError> {
    resolve_size(topo, n.problem_size, n.passes, &NumaTestParams::default())
}

pub fn run(
    spec: &ExperimentSpec,
    n: &NumaTestSection,
    size: &JobSize,
    topo: &Arc<Topology>,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<CellSummary>, NumaTestError> {
    let scheds = spec.sched_specs();
    let mut cells = Vec::new();
    for (name, sched) in spec.schedulers.iter().zip(&scheds) {
        let column = Column { n, size, name };
        cells.extend(run_column(
            &column, sched, &n.tasks, spec.reps, spec.seed, topo, tick,
        )?);
    }
    let col = |c: &CellSummary| spec.schedulers.iter().position(|s| *s == c.scheduler);
    let row = |c: &CellSummary| n.tasks.iter().position(|&t| t == c.tasks);
    cells.sort_by_key(|c| (col(c), row(c)));
    Ok(cells)
}

/// A scheduler column of a numa_test section, at the section's size.
pub(super) struct Column<'a> {
    pub n: &'a NumaTestSection,
    pub size: &'a JobSize,
    /// The column's name in the file (what `no_hackbench` refers to).
    pub name: &'a str,
}

/// One column's cells for `tasks`: those the section lists in `no_hackbench` for the column
/// run without the disturbance, the others with it. Cells come back in no particular order.
pub(super) fn run_column(
    column: &Column<'_>,
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
            .filter(|&t| column.n.quiet(column.name, t) != disturb)
            .collect();
        if these.is_empty() {
            continue;
        }
        let m = Matrix {
            scheds: vec![sched.clone()],
            tasks: these,
            reps,
            seed,
            params: column.size.apply(&NumaTestParams {
                disturb,
                ..Default::default()
            }),
        };
        cells.extend(run_matrix(topo, &m, tick)?);
    }
    Ok(cells)
}
