//! The numa_test experiment: run the benchmark for each scheduler, task count and
//! repetition (spread over the cores, results in a fixed order), then summarise as the
//! original benchmark did: per job, the share of its user time on each node, the node it
//! started on (iSched) and the one it ran on most (MSched), and per run AverageUserTime,
//! ElapsedTime, TotalUserTime and TotalSysTime, plus the disturbance's own time.

use crate::placement::{PlacementError, PlacementSpec};
use crate::rng::SeedTree;
use crate::sched::{self, SchedError, SchedSpec};
use crate::sim::{RunError, RunResult, Sim};
use crate::time::secs;
use crate::workload::{NumaTestParams, numa_test};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::sync::Arc;
use topo::Topology;

/// One job's line of the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRow {
    /// Percent of its user time spent on each node.
    pub node_pct: Vec<f64>,
    /// Node it first ran on.
    pub isched: Option<usize>,
    /// Node it spent most of its user time on.
    pub msched: usize,
    pub user_s: f64,
    pub sys_s: f64,
    /// Percent of its memory on each node at exit.
    #[serde(default)]
    pub mem_pct: Vec<f64>,
    #[serde(default)]
    pub home_node: Option<usize>,
    #[serde(default)]
    pub node_migrations: u32,
}

/// The figures of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFigures {
    pub jobs: Vec<JobRow>,
    pub avg_user_s: f64,
    pub elapsed_s: f64,
    pub total_user_s: f64,
    pub total_sys_s: f64,
    pub hackbench_s: f64,
    pub events: u64,
    pub node_migrations: u64,
    pub refused: [u64; 3],
}

/// Mean and sample standard deviation over repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanStd {
    pub mean: f64,
    pub std: f64,
}

impl MeanStd {
    pub fn of(v: &[f64]) -> MeanStd {
        let n = v.len() as f64;
        if v.is_empty() {
            return MeanStd {
                mean: 0.0,
                std: 0.0,
            };
        }
        let mean = v.iter().sum::<f64>() / n;
        let var = if v.len() > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        MeanStd {
            mean,
            std: var.sqrt(),
        }
    }
}

impl std::fmt::Display for MeanStd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2}({:.2})", self.mean, self.std)
    }
}

/// Summary of one (scheduler, N) cell over its repetitions. Field names are the stable
/// `--json` schema. Fields after `jobs` may be missing in documents read back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    pub scheduler: String,
    #[serde(default)]
    pub options: Vec<(String, String)>,
    pub tasks: u32,
    pub reps: u32,
    pub avg_user_s: MeanStd,
    pub elapsed_s: MeanStd,
    pub total_user_s: MeanStd,
    pub total_sys_s: MeanStd,
    pub hackbench_s: MeanStd,
    /// Jobs of the first repetition.
    #[serde(default)]
    pub jobs: Vec<JobRow>,
    /// Node-to-node task moves per run (mean).
    #[serde(default)]
    pub node_migrations: f64,
    /// Refused migrations per run by reason (mean): running, affinity, cache_hot.
    #[serde(default)]
    pub refused: [f64; 3],
    /// Simulated events per run (mean).
    #[serde(default)]
    pub events: f64,
}

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
    let total_user: f64 = jobs.iter().map(|j| j.user_s).sum();
    let total_sys: f64 = jobs.iter().map(|j| j.sys_s).sum();
    RunFigures {
        avg_user_s: if jobs.is_empty() {
            0.0
        } else {
            total_user / jobs.len() as f64
        },
        elapsed_s: secs(r.end_ns),
        total_user_s: total_user,
        total_sys_s: total_sys,
        hackbench_s: r.disturbance_ns.map_or(0.0, secs),
        events: r.events,
        node_migrations: r.counters.node_migrations,
        refused: r.counters.refused,
        jobs,
    }
}

fn job_row(t: &crate::sim::TaskReport, nr_nodes: usize) -> JobRow {
    let total: f64 = t.node_user_ns.iter().sum();
    let node_pct: Vec<f64> = t
        .node_user_ns
        .iter()
        .map(|x| if total > 0.0 { 100.0 * x / total } else { 0.0 })
        .collect();
    let msched = (0..nr_nodes)
        .max_by(|&a, &b| {
            t.node_user_ns[a]
                .total_cmp(&t.node_user_ns[b])
                .then(b.cmp(&a))
        })
        .unwrap_or(0);
    let mem_total: u64 = t.mem_node_bytes.iter().sum();
    let mem_pct = t
        .mem_node_bytes
        .iter()
        .map(|&b| {
            if mem_total > 0 {
                100.0 * b as f64 / mem_total as f64
            } else {
                0.0
            }
        })
        .collect();
    JobRow {
        node_pct,
        isched: t.first_node,
        msched,
        user_s: t.user_ns / 1e9,
        sys_s: t.sys_ns / 1e9,
        mem_pct,
        home_node: t.home_node,
        node_migrations: t.node_migrations,
    }
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
    let mut sim = Sim::new(topo.clone(), w, s, seed);
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

/// The seed of repetition `rep` with `tasks` tasks: the same for every scheduler, so that
/// schedulers are compared on the same draws.
pub fn run_seed(seed: u64, tasks: u32, rep: u32) -> u64 {
    let t = SeedTree::new(seed)
        .child("tasks", u64::from(tasks))
        .child("rep", u64::from(rep));
    use rand::RngCore;
    t.stream("run", 0).next_u64()
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
                format!("{}", p.interval as f64 / 1e9),
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

/// Summarise the runs of one (scheduler, N) cell: mean(stddev) of each figure, the jobs of
/// the first run. `scheduler` is the column label (the full spec, so that one scheduler with
/// two option sets gives two columns).
pub fn summarise(
    scheduler: &str,
    options: &[(String, String)],
    n: u32,
    runs: &[RunFigures],
) -> CellSummary {
    let col = |f: fn(&RunFigures) -> f64| MeanStd::of(&runs.iter().map(f).collect::<Vec<_>>());
    let nr = runs.len().max(1) as f64;
    let mut refused = [0.0; 3];
    for r in runs {
        for (i, x) in r.refused.iter().enumerate() {
            refused[i] += *x as f64 / nr;
        }
    }
    CellSummary {
        scheduler: scheduler.to_string(),
        options: options.to_vec(),
        tasks: n,
        reps: runs.len() as u32,
        avg_user_s: col(|r| r.avg_user_s),
        elapsed_s: col(|r| r.elapsed_s),
        total_user_s: col(|r| r.total_user_s),
        total_sys_s: col(|r| r.total_sys_s),
        hackbench_s: col(|r| r.hackbench_s),
        jobs: runs.first().map(|r| r.jobs.clone()).unwrap_or_default(),
        node_migrations: runs.iter().map(|r| r.node_migrations as f64).sum::<f64>() / nr,
        refused,
        events: runs.iter().map(|r| r.events as f64).sum::<f64>() / nr,
    }
}

/// The per-job table in numa_test's layout.
pub fn job_table(jobs: &[JobRow], nr_nodes: usize) -> String {
    let mut s = String::new();
    let _ = write!(s, "Job ");
    for n in 0..nr_nodes {
        let _ = write!(s, " node{n:02}");
    }
    let _ = writeln!(s, " | iSched MSched | UserTime(s)");
    for (i, j) in jobs.iter().enumerate() {
        let _ = write!(s, "{:3} ", i + 1);
        for p in &j.node_pct {
            let _ = write!(s, " {p:6.1}");
        }
        let isched = j.isched.map_or("-".to_string(), |n| n.to_string());
        let star = if j.isched != Some(j.msched) { "*" } else { " " };
        let _ = writeln!(s, " | {isched:>6} {:>5}{star} | {:.2}", j.msched, j.user_s);
    }
    s
}

/// Summary rows for one scheduler and N, numa_test style.
pub fn summary_block(c: &CellSummary) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "AverageUserTime {}", c.avg_user_s);
    let _ = writeln!(s, "ElapsedTime     {}", c.elapsed_s);
    let _ = writeln!(s, "TotalUserTime   {}", c.total_user_s);
    let _ = writeln!(s, "TotalSysTime    {}", c.total_sys_s);
    let _ = writeln!(s, "HackbenchTime   {}", c.hackbench_s);
    s
}

type Metric = fn(&CellSummary) -> MeanStd;

/// The comparison table: one block per N, one column per scheduler, mean(stddev) seconds.
pub fn comparison_table(cells: &[CellSummary]) -> String {
    let mut scheds: Vec<&str> = Vec::new();
    let mut ns: Vec<u32> = Vec::new();
    for c in cells {
        if !scheds.contains(&c.scheduler.as_str()) {
            scheds.push(&c.scheduler);
        }
        if !ns.contains(&c.tasks) {
            ns.push(c.tasks);
        }
    }
    let w = scheds.iter().map(|s| s.len()).max().unwrap_or(0).max(16);
    let mut s = String::new();
    for n in ns {
        let _ = write!(s, "N={n:<3} {:<16}", "");
        for sc in &scheds {
            let _ = write!(s, " {sc:>w$}");
        }
        s.push('\n');
        let rows: [(&str, Metric); 5] = [
            ("AverageUserTime", |c| c.avg_user_s),
            ("ElapsedTime", |c| c.elapsed_s),
            ("TotalUserTime", |c| c.total_user_s),
            ("TotalSysTime", |c| c.total_sys_s),
            ("HackbenchTime", |c| c.hackbench_s),
        ];
        for (name, f) in rows {
            let _ = write!(s, "      {name:<16}");
            for sc in &scheds {
                let cell = cells.iter().find(|c| c.tasks == n && c.scheduler == *sc);
                let v = cell.map_or("-".to_string(), |c| f(c).to_string());
                let _ = write!(s, " {v:>w$}");
            }
            s.push('\n');
        }
        s.push('\n');
    }
    s
}
