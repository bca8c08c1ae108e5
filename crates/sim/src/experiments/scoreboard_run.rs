//! Running a `[scoreboard]`: every (row, scheduler, placement, repetition) is one simulation,
//! run in parallel and gathered in a fixed order. Every configuration of a row gets the same
//! seeds (repetition `r` of a row: [`run_seed`] of the file's seed, the row's size and `r`),
//! so the configurations are compared on the same random draws. A run that fails marks its
//! configuration as failed with the reason; it never stops the board.

use super::scoreboard::{RowGroup, RowWorkload, ScoreboardSection};
use crate::numa_test::{JobSize, figures, resolve_size, run_one_placed, run_seed};
use crate::placement::PlacementSpec;
use crate::sched::SchedSpec;
use crate::studies::{self, autonuma, convergence, light_load, oltp};
use crate::time::{Ns, SEC};
use crate::workload::NumaTestParams;
use crate::workload::autonuma::{AutonumaParams, Bind};
use crate::workload::convergence::ConvergenceParams;
use crate::workload::light_load::LightLoadParams;
use crate::workload::oltp::OltpParams;
use rayon::prelude::*;
use report::MeanStd;
use serde::Serialize;
use std::sync::Arc;
use topo::Topology;

/// One configuration of a row over its repetitions.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ConfigResult {
    pub scheduler: String,
    pub placement: String,
    /// The figure of each repetition, in order (a convergence run that never converged counts
    /// as the watch length).
    pub values: Vec<f64>,
    pub mean: f64,
    pub std: f64,
    /// convergence: repetitions that did not converge within the watch.
    #[serde(skip_serializing_if = "is_zero")]
    pub never: u32,
    /// numa_test: how long its disturbance, hackbench, took (mean and stddev over the
    /// repetitions). ElapsedTime runs until the last task exits, hackbench included; when
    /// the jobs outlast hackbench it is theirs, and a scheduler that starves hackbench gains
    /// there what hackbench loses: this says so beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hackbench_s: Option<MeanStd>,
    /// numa_test: repetitions whose jobs all ended before hackbench did (their ElapsedTime is
    /// hackbench's).
    #[serde(skip_serializing_if = "is_zero")]
    pub jobs_ended_first: u32,
    /// Why the configuration could not run (its first failed repetition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// Where the focus configuration stands in a row.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Standing {
    /// How much worse than the best the focus is, percent (0 when it is the best).
    pub vs_best_pct: f64,
    /// The focus is the best, or its distance to the best is at most the larger of the two
    /// standard deviations.
    pub within_one_std: bool,
    /// How much better than the baseline the focus is, percent (negative: worse).
    pub vs_baseline_pct: Option<f64>,
    /// Better than the baseline by more than the larger of the two standard deviations.
    pub beats_baseline: Option<bool>,
}

/// One row: a workload of one size on one machine.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ScoreRow {
    pub workload: String,
    pub machine: String,
    /// The size: `N=16`, `2x2`, `64 threads`, or empty.
    pub size: String,
    /// numa_test: the task count against the machine's CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks_vs_cpus: Option<f64>,
    /// numa_test: PROBLEMSIZE and passes of every run of the row, and whether they were chosen
    /// for the machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa_size: Option<JobSize>,
    pub metric: String,
    pub higher_is_better: bool,
    pub configs: Vec<ConfigResult>,
    /// Index in `configs` of the best configuration that ran.
    pub best: Option<usize>,
    pub focus: Option<usize>,
    pub baseline: Option<usize>,
    pub standing: Option<Standing>,
}

/// The scoreboard's results, rows in the file's order.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ScoreboardResults {
    pub reps: u32,
    pub rows: Vec<ScoreRow>,
}

/// One row to run: its group and size.
struct RowPlan<'a> {
    group: &'a RowGroup,
    topo: Result<Arc<Topology>, String>,
    /// numa_test: the row's size (resolved once per row entry), or why it could not be.
    numa_size: Option<Result<JobSize, String>>,
    size: Size,
    scheds: Vec<String>,
}

#[derive(Clone, Copy)]
enum Size {
    Tasks(u32),
    Shape(u32, u32),
    Threads(u32),
    One,
}

impl Size {
    fn label(self) -> String {
        match self {
            Size::Tasks(n) => format!("N={n}"),
            Size::Shape(p, t) => format!("{p}x{t}"),
            Size::Threads(n) => topo::count(n, "thread"),
            Size::One => String::new(),
        }
    }

    /// The size's key in the seed tree.
    fn seed_key(self) -> u32 {
        match self {
            Size::Tasks(n) | Size::Threads(n) => n,
            Size::Shape(p, t) => p * 1000 + t,
            Size::One => 0,
        }
    }
}

/// One run's figure, or why it could not run.
type Figure = Result<RunFigure, String>;

/// What one run of a configuration gives.
#[derive(Clone, Copy)]
struct RunFigure {
    value: f64,
    /// Censored: a convergence run that never converged (`value` is the watch length).
    never: bool,
    /// numa_test: hackbench's time, s.
    hackbench_s: Option<f64>,
    /// numa_test: every job ended before hackbench did.
    jobs_ended_first: bool,
}

impl RunFigure {
    fn of(value: f64) -> Self {
        RunFigure {
            value,
            never: false,
            hackbench_s: None,
            jobs_ended_first: false,
        }
    }
}

/// How many runs [`run`] makes: one per row, scheduler, placement and repetition.
pub fn planned(s: &ScoreboardSection, reps: u32) -> u64 {
    plans(s)
        .iter()
        .map(|p| (p.scheds.len() * s.placements.len()) as u64 * u64::from(reps))
        .sum()
}

/// Every row of the board: each `[[scoreboard.rows]]` entry at each of its sizes.
fn plans(s: &ScoreboardSection) -> Vec<RowPlan<'_>> {
    let mut plans = Vec::new();
    for g in &s.rows {
        let topo = studies::machine(&g.machine).map_err(|e| e.to_string());
        let cpus = topo.as_ref().map_or(1, |t| t.nr_cpus());
        let numa_size = (g.workload == RowWorkload::NumaTest).then(|| {
            let t = topo.as_ref().map_err(Clone::clone)?;
            resolve_size(t, g.problem_size, g.passes, &NumaTestParams::default())
                .map_err(|e| e.to_string())
        });
        let sizes: Vec<Size> = match g.workload {
            RowWorkload::NumaTest => g.task_counts(cpus).into_iter().map(Size::Tasks).collect(),
            RowWorkload::Convergence => g
                .shape_list()
                .into_iter()
                .map(|(p, t)| Size::Shape(p, t))
                .collect(),
            RowWorkload::Oltp => g
                .threads
                .iter()
                .flatten()
                .map(|&n| Size::Threads(n))
                .collect(),
            _ => vec![Size::One],
        };
        for size in sizes {
            plans.push(RowPlan {
                group: g,
                topo: topo.clone(),
                numa_size: numa_size.clone(),
                size,
                scheds: s.schedulers_of(g),
            });
        }
    }
    plans
}

pub fn run(
    s: &ScoreboardSection,
    reps: u32,
    seed: u64,
    tick: &(dyn Fn() + Sync),
) -> ScoreboardResults {
    let placements: Vec<Option<PlacementSpec>> = s
        .placements
        .iter()
        .map(|p| PlacementSpec::parse(p).ok().filter(|p| p.policy != "none"))
        .collect();
    let plans = plans(s);
    let mut jobs = Vec::new();
    for (ri, plan) in plans.iter().enumerate() {
        for (si, _) in plan.scheds.iter().enumerate() {
            for pi in 0..s.placements.len() {
                for rep in 0..reps {
                    jobs.push((ri, si, pi, rep));
                }
            }
        }
    }
    let figs: Vec<Figure> = jobs
        .par_iter()
        .map(|&(ri, si, pi, rep)| {
            let plan = &plans[ri];
            let f = match &plan.topo {
                Ok(topo) => one(
                    plan,
                    topo,
                    &plan.scheds[si],
                    placements[pi].as_ref(),
                    run_seed(seed, plan.size.seed_key(), rep),
                ),
                Err(e) => Err(e.clone()),
            };
            tick();
            f
        })
        .collect();
    let mut it = figs.into_iter();
    let mut rows = Vec::new();
    for plan in &plans {
        let mut configs = Vec::new();
        for sched in &plan.scheds {
            for placement in &s.placements {
                let runs: Vec<Figure> = (0..reps)
                    .map(|_| it.next().unwrap_or(Err("missing run".into())))
                    .collect();
                configs.push(config(sched, placement, runs));
            }
        }
        rows.push(row(s, plan, configs));
    }
    ScoreboardResults { reps, rows }
}

fn config(sched: &str, placement: &str, runs: Vec<Figure>) -> ConfigResult {
    let error = runs.iter().find_map(|r| r.as_ref().err().cloned());
    let ok: Vec<RunFigure> = runs.into_iter().filter_map(Result::ok).collect();
    let values: Vec<f64> = ok.iter().map(|v| v.value).collect();
    let m = MeanStd::of(&values);
    let hackbench: Option<Vec<f64>> = ok.iter().map(|v| v.hackbench_s).collect();
    ConfigResult {
        scheduler: sched.into(),
        placement: placement.into(),
        mean: m.mean,
        std: m.std,
        never: ok.iter().filter(|v| v.never).count() as u32,
        jobs_ended_first: ok.iter().filter(|v| v.jobs_ended_first).count() as u32,
        hackbench_s: hackbench.filter(|h| !h.is_empty()).map(|h| MeanStd::of(&h)),
        values,
        error,
    }
}

fn row(s: &ScoreboardSection, plan: &RowPlan<'_>, configs: Vec<ConfigResult>) -> ScoreRow {
    let (metric, higher) = plan.group.workload.metric();
    let better = |a: f64, b: f64| if higher { a > b } else { a < b };
    let mut best: Option<usize> = None;
    for (i, c) in configs.iter().enumerate() {
        if c.error.is_none() && best.is_none_or(|b| better(c.mean, configs[b].mean)) {
            best = Some(i);
        }
    }
    let find = |[sc, pl]: &[String; 2]| {
        configs
            .iter()
            .position(|c| c.scheduler == *sc && c.placement == *pl && c.error.is_none())
    };
    let focus = find(&s.focus);
    let baseline = find(&s.baseline);
    // Percent by which `a` is better than `b` (positive: better).
    let gain = |a: &ConfigResult, b: &ConfigResult| {
        let d = if higher {
            a.mean - b.mean
        } else {
            b.mean - a.mean
        };
        // `+ 0.0` turns a negative zero into zero, so equal means print as +0.0%.
        100.0 * d / b.mean.abs().max(f64::MIN_POSITIVE) + 0.0
    };
    let standing = match (focus, best) {
        (Some(f), Some(b)) => {
            let (fc, bc) = (&configs[f], &configs[b]);
            let base = baseline.map(|x| &configs[x]);
            Some(Standing {
                vs_best_pct: -gain(fc, bc) + 0.0,
                within_one_std: f == b || (fc.mean - bc.mean).abs() <= fc.std.max(bc.std),
                vs_baseline_pct: base.map(|x| gain(fc, x)),
                beats_baseline: base.map(|x| {
                    let d = if higher {
                        fc.mean - x.mean
                    } else {
                        x.mean - fc.mean
                    };
                    d > fc.std.max(x.std)
                }),
            })
        }
        _ => None,
    };
    let tasks_vs_cpus = match (plan.size, &plan.topo) {
        (Size::Tasks(n), Ok(t)) => Some(f64::from(n) / t.nr_cpus() as f64),
        _ => None,
    };
    ScoreRow {
        workload: plan.group.workload.name().into(),
        machine: plan.group.machine.clone(),
        size: plan.size.label(),
        tasks_vs_cpus,
        numa_size: plan.numa_size.clone().and_then(Result::ok),
        metric: metric.into(),
        higher_is_better: higher,
        configs,
        best,
        focus,
        baseline,
        standing,
    }
}

/// One simulation of a row's configuration.
fn one(
    plan: &RowPlan<'_>,
    topo: &Arc<Topology>,
    sched: &str,
    placement: Option<&PlacementSpec>,
    seed: u64,
) -> Figure {
    let g = plan.group;
    let e = |e: &dyn std::fmt::Display| e.to_string();
    match (g.workload, plan.size) {
        (RowWorkload::NumaTest, Size::Tasks(n)) => {
            let spec = SchedSpec::parse(sched).map_err(|x| e(&x))?;
            let size = plan
                .numa_size
                .clone()
                .unwrap_or_else(|| Err("no numa_test size".into()))?;
            let params = size.apply(&NumaTestParams {
                tasks: n,
                disturb: true,
                ..Default::default()
            });
            let r = run_one_placed(topo, &spec, placement, &params, seed).map_err(|x| e(&x))?;
            let f = figures(&r, topo.nr_nodes());
            Ok(RunFigure {
                hackbench_s: Some(f.hackbench_s),
                jobs_ended_first: f.jobs_ended_first,
                ..RunFigure::of(f.elapsed_s)
            })
        }
        (RowWorkload::LightLoad, _) => {
            let mut p = LightLoadParams::default();
            if let Some(i) = g.iterations {
                p.iterations = i;
            }
            let r = light_load::run_one(topo, &p, sched, placement, seed).map_err(|x| e(&x))?;
            Ok(RunFigure::of(r.runtime_s))
        }
        (RowWorkload::Convergence, Size::Shape(procs, threads)) => {
            let watch_s = g.watch_s.unwrap_or(super::study_spec::REF_WATCH_S);
            let watch = (watch_s * SEC as f64) as Ns;
            let r = convergence::run_one(
                topo,
                (procs, threads),
                &ConvergenceParams::default(),
                watch,
                sched,
                placement,
                seed,
            )
            .map_err(|x| e(&x))?;
            Ok(match r.converged_s {
                Some(t) => RunFigure::of(t),
                None => RunFigure {
                    never: true,
                    ..RunFigure::of(watch_s)
                },
            })
        }
        (RowWorkload::Oltp, Size::Threads(n)) => {
            let base = OltpParams {
                tx_per_thread: g.tx_per_thread.unwrap_or(super::study_spec::REF_OLTP_TX),
                ..Default::default()
            };
            let (tps, _) =
                oltp::run_one(topo, n, &base, sched, placement, seed).map_err(|x| e(&x))?;
            Ok(RunFigure::of(tps))
        }
        (RowWorkload::Numa01 | RowWorkload::Numa02, _) => {
            let numa01 = g.workload == RowWorkload::Numa01;
            let mut p = AutonumaParams::default();
            if let Some(l) = g.loops {
                if numa01 {
                    p.loops = l;
                } else {
                    p.numa02_loops = l;
                }
            }
            let (r, _) = autonuma::run_one(
                topo,
                numa01,
                Bind::Free,
                &p,
                sched,
                placement,
                Ns::MAX / 4,
                seed,
            )
            .map_err(|x| e(&x))?;
            Ok(RunFigure::of(r.elapsed_s))
        }
        _ => Err("no size for this workload".into()),
    }
}
