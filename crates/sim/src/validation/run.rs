//! Running a case: each configuration once on the case's machine, with the case's seed, in
//! parallel over all cases; results come back in file order, so the same cases give the same
//! bytes.

use super::case::{Case, Config, MetricKind, parse_bind};
use crate::placement::PlacementSpec;
use crate::sim::RunResult;
use crate::studies;
use crate::workload::autonuma::{AutonumaParams, numa01, numa02};
use crate::workload::light_load::{LightLoadParams, light_load};
use rayon::prelude::*;
use serde::Serialize;
use std::path::Path;

/// One configuration's simulated figure, or why it could not be had.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigResult {
    pub name: String,
    pub published: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
    /// The simulated figure in the case's unit; `Err` says why the run failed.
    pub simulated: Result<f64, String>,
}

/// A case and its configurations' results, in the file's order.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub case: Case,
    pub configs: Vec<ConfigResult>,
}

/// Run every configuration of every case; `tick` is called after each run.
pub fn run(cases: &[Case], tick: &(dyn Fn() + Sync)) -> Vec<CaseResult> {
    let jobs: Vec<(usize, usize)> = cases
        .iter()
        .enumerate()
        .flat_map(|(i, c)| (0..c.configs.len()).map(move |j| (i, j)))
        .collect();
    let figures: Vec<Result<f64, String>> = jobs
        .par_iter()
        .map(|&(i, j)| {
            let f = one(&cases[i], &cases[i].configs[j]);
            tick();
            f
        })
        .collect();
    let mut it = figures.into_iter();
    cases
        .iter()
        .map(|c| CaseResult {
            case: c.clone(),
            configs: c
                .configs
                .iter()
                .map(|cf| ConfigResult {
                    name: cf.name.clone(),
                    published: cf.published,
                    spread: cf.spread,
                    simulated: it.next().unwrap_or_else(|| Err("missing run".into())),
                })
                .collect(),
        })
        .collect()
}

/// The number of runs `run` does for `cases`.
pub fn runs(cases: &[Case]) -> u64 {
    cases.iter().map(|c| c.configs.len() as u64).sum()
}

/// Simulate one configuration and take the case's figure from it.
fn one(case: &Case, c: &Config) -> Result<f64, String> {
    let topo = studies::machine(&case.machine).map_err(|e| e.to_string())?;
    let workload = load_workload(case, c, &topo)?;
    let placement = match c.placement.as_str() {
        "none" => None,
        p => Some(PlacementSpec::parse(p).map_err(|e| e.to_string())?),
    };
    let r = studies::run_placed(&topo, workload, &c.sched, placement.as_ref(), case.seed)
        .map_err(|e| e.to_string())?;
    if let Some(p) = &case.program {
        if !r.tasks.iter().any(|t| &t.program == p) {
            return Err(format!("no task of program `{p}` in the run"));
        }
    }
    Ok(figure(case, &r))
}

/// The case's figure of one run, in its unit.
pub fn figure(case: &Case, r: &RunResult) -> f64 {
    let mine = |t: &&crate::sim::TaskReport| case.program.as_ref().is_none_or(|p| &t.program == p);
    let tasks: Vec<_> = r.tasks.iter().filter(mine).collect();
    let elapsed_ns = match &case.program {
        None => r.end_ns as f64,
        Some(_) => {
            let start = tasks.iter().map(|t| t.created).min().unwrap_or(0);
            let end = tasks.iter().map(|t| t.exited).max().unwrap_or(0);
            end.saturating_sub(start) as f64
        }
    };
    let elapsed_s = elapsed_ns / 1e9;
    let seconds = match case.metric {
        MetricKind::Rate => return case.work / elapsed_s.max(1e-12),
        MetricKind::Elapsed => elapsed_s,
        MetricKind::User => tasks.iter().map(|t| t.user_ns).sum::<f64>() / 1e9,
        MetricKind::Sys => tasks.iter().map(|t| t.sys_ns).sum::<f64>() / 1e9,
    };
    seconds / case.seconds_per_unit().unwrap_or(1.0) / case.work
}

fn load_workload(
    case: &Case,
    c: &Config,
    topo: &topo::Topology,
) -> Result<crate::program::Workload, String> {
    let bind = parse_bind(&c.bind).map_err(|e| e.to_string())?;
    let mut p = AutonumaParams::default();
    match case.workload_of(c) {
        "numa01" => {
            if let Some(l) = case.loops {
                p.loops = l;
            }
            Ok(numa01(topo, bind, &p))
        }
        "numa02" => {
            if let Some(l) = case.loops {
                p.numa02_loops = l;
            }
            Ok(numa02(topo, bind, &p))
        }
        "light-load" => Ok(light_load(&LightLoadParams::default())),
        file => {
            // Relative to the case file's directory.
            let dir = Path::new(&case.file).parent().unwrap_or(Path::new("."));
            let path = dir.join(file);
            let text = crate::budget::read_input(&path).map_err(|e| e.to_string())?;
            crate::workload::parse_workload(&text, &path.display().to_string())
                .map_err(|e| e.to_string())
        }
    }
}
