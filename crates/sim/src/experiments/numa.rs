//! numa_test experiments: each scheduler column's matrix with hackbench, and without it for
//! the cells listed in `no_hackbench`, merged in scheduler then task-count order. Every
//! (task count, repetition) has its own seed whatever the column, so splitting the matrix
//! by column changes no figure.

use super::spec::{ExperimentSpec, NumaTestSection};
use crate::numa_test::{CellSummary, Matrix, run_matrix};
use crate::workload::NumaTestParams;
use std::sync::Arc;
use topo::Topology;

pub fn run(
    spec: &ExperimentSpec,
    n: &NumaTestSection,
    topo: &Arc<Topology>,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<CellSummary>, String> {
    let scheds = spec.sched_specs();
    let mut cells = Vec::new();
    for disturb in [true, false] {
        for (name, sched) in spec.schedulers.iter().zip(&scheds) {
            let tasks: Vec<u32> = n
                .tasks
                .iter()
                .copied()
                .filter(|&t| n.quiet(name, t) != disturb)
                .collect();
            if tasks.is_empty() {
                continue;
            }
            let m = Matrix {
                scheds: vec![sched.clone()],
                tasks,
                reps: spec.reps,
                seed: spec.seed,
                params: NumaTestParams {
                    problem_size: n.problem_size,
                    disturb,
                    ..Default::default()
                },
            };
            cells.extend(run_matrix(topo, &m, tick)?);
        }
    }
    let col = |c: &CellSummary| spec.schedulers.iter().position(|s| *s == c.scheduler);
    let row = |c: &CellSummary| n.tasks.iter().position(|&t| t == c.tasks);
    cells.sort_by_key(|c| (col(c), row(c)));
    Ok(cells)
}
