//! The numa_test experiment: run the benchmark for each scheduler, task count and
//! repetition (spread over the cores, results in a fixed order), then summarise as the
//! original benchmark did: per job, the share of its user time on each node, the node it
//! started on (iSched) and the one it ran on most (MSched), and per run AverageUserTime,
//! ElapsedTime, TotalUserTime and TotalSysTime, plus the disturbance's own time.
//!
//! The report types, the row arithmetic and the tables are the `report` crate's, shared with
//! the benchmark; they are re-exported here.

use crate::placement::{PlacementError, PlacementSpec};
use crate::sched::{self, SchedError, SchedSpec};
use crate::sim::{RunError, RunResult, Sim};
use crate::time::secs;
use crate::workload::{NumaTestParams, numa_test};
use rayon::prelude::*;
use std::sync::Arc;
use topo::Topology;

mod size;

pub use size::{
    JobSize, LONE_JOB_SPAN, MAX_PASSES, ORIGINAL_PASSES, ORIGINAL_PROBLEM_SIZE, auto_size,
    lone_job_ns, resolve as resolve_size,
};

pub use report::{
    CellSummary, JobRow, MeanStd, RunFigures, comparison_table, job_table, run_seed, summarise,
    summary_block,
};

/// What to run.
#[derive(Clone, Debug)]
pub struct Matrix {
    pub scheds: Vec<SchedSpec>,
    pub tasks: Vec<u32>,
    pub reps: u32,
    pub seed: u64,
    pub params: NumaTestParams,
}

/// A failed cell, named.
#[derive(Debug, thiserror::Error)]
#[error("{sched} N={tasks} rep {rep}: {err}")]
pub struct CellError {
    pub sched: String,
    pub tasks: u32,
    pub rep: u32,
    pub err: RunError,
}

/// Figures of one run.
pub fn figures(r: &RunResult, nr_nodes: usize) -> RunFigures {
    let jobs: Vec<JobRow> = r
        .tasks
        .iter()
        .filter(|t| t.job)
        .map(|t| job_row(t, nr_nodes))
        .collect();
    let mut f = RunFigures::from_jobs(
        jobs,
        secs(r.end_ns),
        r.disturbance_ns.map_or(0.0, secs),
        r.events,
        r.counters.node_migrations,
        r.counters.refused,
    );
    f.skipped_ticks = r.skipped_ticks;
    f.jobs_ended_first = jobs_ended_first(r);
    f
}

/// Whether every job of the run had exited before its disturbance did (ElapsedTime is then
/// the disturbance's end). False without a disturbance or without jobs.
pub fn jobs_ended_first(r: &RunResult) -> bool {
    let jobs_end = r.tasks.iter().filter(|t| t.job).map(|t| t.exited).max();
    matches!((jobs_end, r.disturbance_end_ns), (Some(j), Some(d)) if j < d)
}

fn job_row(t: &crate::sim::TaskReport, nr_nodes: usize) -> JobRow {
    let mem_total: u64 = t.mem_node_bytes.iter().sum();
    JobRow {
        node_pct: report::node_pct(&t.node_user_ns),
        isched: t.first_node,
        msched: report::busiest_node(&t.node_user_ns, nr_nodes),
        user_s: t.user_ns / 1e9,
        sys_s: t.sys_ns / 1e9,
        mem_pct: report::mem_pct(&t.mem_node_bytes, mem_total),
        home_node: t.home_node,
        node_migrations: t.node_migrations,
    }
}

/// The report's line for a cell whose jobs ended before the disturbance did in some
/// repetition (ElapsedTime is then the disturbance's), naming the cell and `fix`, the setting
/// to change; `None` when every repetition measured its jobs.
pub fn early_end_warning(c: &CellSummary, fix: &str) -> Option<String> {
    (c.jobs_ended_first > 0).then(|| {
        format!(
            "warning: {} N={}: the jobs ended before hackbench did in {} of {}, so \
             ElapsedTime is hackbench's, not the jobs'; {fix}",
            c.scheduler,
            c.tasks,
            c.jobs_ended_first,
            topo::count(c.reps, "rep")
        )
    })
}

/// Why a numa_test run (or a matrix of them) failed. A failed run of a matrix is reported as
/// [`NumaTestError::Cell`], naming the scheduler, task count and repetition.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum NumaTestError {
    #[error(transparent)]
    Sched(#[from] SchedError),
    #[error(transparent)]
    Placement(#[from] PlacementError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("{sched} N={tasks} rep {rep}: {source}")]
    Cell {
        /// The scheduler spec (with its options).
        sched: String,
        tasks: u32,
        rep: u32,
        source: Box<NumaTestError>,
    },
    #[error(
        "numa_test on {machine}: a pass of a lone job takes no simulated time, so no number of \
         passes outlasts the disturbance; give --passes"
    )]
    PassTakesNoTime { machine: String },
    #[error("{sched} N={tasks}: missing")]
    Missing { sched: String, tasks: u32 },
}

/// Run one numa_test.
pub fn run_one(
    topo: &Arc<Topology>,
    spec: &SchedSpec,
    params: &NumaTestParams,
    seed: u64,
) -> Result<RunResult, NumaTestError> {
    run_one_placed(topo, spec, None, params, seed)
}

/// Run one numa_test with a node-level placement policy on top of the scheduler.
pub fn run_one_placed(
    topo: &Arc<Topology>,
    spec: &SchedSpec,
    placement: Option<&PlacementSpec>,
    params: &NumaTestParams,
    seed: u64,
) -> Result<RunResult, NumaTestError> {
    let s = sched::build(spec, topo)?;
    let w = Arc::new(numa_test(params));
    let mut sim =
        Sim::new(topo.clone(), w, s, seed).with_contention_period(params.contention_period);
    if let Some(p) = placement {
        sim = sim.with_placement(p.build()?);
    }
    Ok(sim.run()?)
}

/// Column label of a scheduler with a placement policy: `o1+homenode`.
pub fn placed_label(spec: &SchedSpec, placement: Option<&PlacementSpec>) -> String {
    match placement {
        Some(p) => format!("{spec}+{p}"),
        None => spec.to_string(),
    }
}

/// Run every cell of the matrix, in parallel, and summarise in matrix order.
pub fn run_matrix(
    topo: &Arc<Topology>,
    m: &Matrix,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<CellSummary>, NumaTestError> {
    run_matrix_placed(topo, m, None, tick)
}

/// [`run_matrix`] with a node-level placement policy on top of every scheduler.
pub fn run_matrix_placed(
    topo: &Arc<Topology>,
    m: &Matrix,
    placement: Option<&PlacementSpec>,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<CellSummary>, NumaTestError> {
    // Validate every scheduler spec (and the placement) before running anything.
    let mut options = Vec::new();
    for s in &m.scheds {
        let mut o = sched::build(s, topo)?.options();
        if let Some(p) = placement {
            p.build()?;
            o.push(("placement".into(), p.to_string()));
            o.push((
                "placement.interval_s".into(),
                format!("{}", p.config.interval_s),
            ));
        }
        options.push(o);
    }
    let mut jobs = Vec::new();
    for (si, s) in m.scheds.iter().enumerate() {
        for &n in &m.tasks {
            for rep in 0..m.reps {
                jobs.push((si, s, n, rep));
            }
        }
    }
    let results: Vec<Result<RunFigures, NumaTestError>> =
        jobs.par_iter()
            .map(|&(_, s, n, rep)| {
                let params = NumaTestParams {
                    tasks: n,
                    ..m.params.clone()
                };
                let r = run_one_placed(topo, s, placement, &params, run_seed(m.seed, n, rep))
                    .map_err(|e| NumaTestError::Cell {
                        sched: s.to_string(),
                        tasks: n,
                        rep,
                        source: Box::new(e),
                    });
                tick();
                r.map(|r| figures(&r, topo.nr_nodes()))
            })
            .collect();
    let mut out = Vec::new();
    let mut it = results.into_iter();
    for (si, s) in m.scheds.iter().enumerate() {
        for &n in &m.tasks {
            let runs: Vec<RunFigures> = (0..m.reps)
                .map(|_| {
                    it.next().unwrap_or_else(|| {
                        Err(NumaTestError::Missing {
                            sched: s.to_string(),
                            tasks: n,
                        })
                    })
                })
                .collect::<Result<_, _>>()?;
            out.push(summarise(
                &placed_label(s, placement),
                &options[si],
                n,
                &runs,
            ));
        }
    }
    Ok(out)
}
