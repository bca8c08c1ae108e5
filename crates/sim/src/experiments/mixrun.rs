//! kbuild + bonnie mix experiments: each scheduler runs the mix `reps` times (the same seeds
//! for every scheduler); the figure is each build's wall time (its make's life).

use super::error::RunFailure;
use super::spec::{ExperimentSpec, MixSection};
use crate::numa_test::run_seed;
use crate::sched;
use crate::sim::Sim;
use crate::time::secs;
use crate::workload::kbuild::PipelineParams;
use crate::workload::mix::{MixDisks, make_name};
use crate::workload::{BonnieParams, KbuildParams, MixParams, mix};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;
use topo::Topology;

/// Build times of one scheduler, seconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BuildTimes {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
}

/// One scheduler's column.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MixCell {
    pub scheduler: String,
    pub reps: u32,
    /// Every build's wall time, run by run (`builds` per run).
    pub build_s: Vec<f64>,
    pub build: BuildTimes,
    /// Wall time until the last task exited, mean over runs.
    pub elapsed_s: f64,
    /// Moves between nodes per run (mean).
    pub node_migrations: f64,
    /// The kernel's 1-minute load average while the builds run (5 s samples up to the end of
    /// the last build): the mean of a run's samples averaged over the runs, and the highest
    /// sample of any run; and the mean over the whole run.
    pub load_mean: f64,
    pub load_peak: f64,
    pub load_mean_run: f64,
    /// Share of the run each disk spent serving requests (mean over disks and runs; 0
    /// without a disk queue).
    pub disk_busy: f64,
}

pub fn params(m: &MixSection) -> MixParams {
    MixParams {
        builds: m.builds,
        kbuild: KbuildParams {
            jobs: m.jobs,
            parallelism: m.parallelism,
            ..Default::default()
        },
        bonnies: m.bonnies,
        bonnie: BonnieParams::default(),
        disks: m.disks.map(|count| MixDisks {
            count,
            params: disk_params(m),
            pipeline: PipelineParams::default(),
        }),
    }
}

/// The disks' mechanics: the era's defaults (docs/model/disks-and-loadavg.md) unless `[mix]` sets them.
pub fn disk_params(m: &MixSection) -> crate::disk::DiskParams {
    let d = crate::disk::DiskParams::default();
    crate::disk::DiskParams {
        seek_ns: m
            .seek_ms
            .map_or(d.seek_ns, |ms| (ms * crate::time::MS as f64).round() as u64),
        rpm: m.rpm.unwrap_or(d.rpm),
        bytes_per_s: m.transfer_mb_s.map_or(d.bytes_per_s, |mb| mb * 1e6),
    }
}

/// What one run gives.
struct RunOut {
    builds: Vec<f64>,
    elapsed_s: f64,
    node_migrations: u64,
    load_mean: f64,
    load_peak: f64,
    load_mean_run: f64,
    disk_busy: f64,
}

pub fn run(
    spec: &ExperimentSpec,
    m: &MixSection,
    topo: &Arc<Topology>,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<MixCell>, RunFailure> {
    let w = Arc::new(mix(&params(m)));
    let scheds = spec.sched_specs();
    let jobs: Vec<(usize, u32)> = (0..scheds.len())
        .flat_map(|s| (0..spec.reps).map(move |r| (s, r)))
        .collect();
    let runs: Vec<Result<RunOut, RunFailure>> = jobs
        .par_iter()
        .map(|&(s, rep)| {
            let sch = sched::build(&scheds[s], topo)?;
            let seed = run_seed(spec.seed, m.builds, rep);
            let r = Sim::new(topo.clone(), w.clone(), sch, seed)
                .run()
                .map_err(|source| RunFailure::Run {
                    sched: scheds[s].to_string(),
                    rep,
                    source,
                })?;
            tick();
            let makes: Vec<_> = (0..m.builds)
                .filter_map(|b| {
                    let name = make_name(b);
                    r.tasks.iter().find(|t| t.program == name)
                })
                .collect();
            let builds = makes.iter().map(|t| secs(t.exited - t.created)).collect();
            let builds_end = makes.iter().map(|t| t.exited).max().unwrap_or(0);
            let during = r.load.summary_until(builds_end);
            let busy = &r.disks.busy_ns;
            let disk_busy = busy.iter().map(|&b| b as f64).sum::<f64>()
                / (busy.len().max(1) as f64 * r.end_ns.max(1) as f64);
            Ok(RunOut {
                builds,
                elapsed_s: secs(r.end_ns),
                node_migrations: r.counters.node_migrations,
                load_mean: during.mean,
                load_peak: during.peak,
                load_mean_run: r.load.summary().mean,
                disk_busy,
            })
        })
        .collect();
    let mut it = runs.into_iter();
    let mut cells = Vec::new();
    for s in &scheds {
        let mine: Vec<RunOut> = (0..spec.reps)
            .map(|_| it.next().unwrap_or(Err(RunFailure::MissingRun)))
            .collect::<Result<_, _>>()?;
        let all: Vec<f64> = mine.iter().flat_map(|r| r.builds.iter().copied()).collect();
        let n = mine.len().max(1) as f64;
        cells.push(MixCell {
            scheduler: s.to_string(),
            reps: spec.reps,
            build: BuildTimes {
                min: all.iter().copied().fold(f64::INFINITY, f64::min),
                max: all.iter().copied().fold(0.0, f64::max),
                mean: all.iter().sum::<f64>() / all.len().max(1) as f64,
            },
            elapsed_s: mine.iter().map(|r| r.elapsed_s).sum::<f64>() / n,
            node_migrations: mine.iter().map(|r| r.node_migrations as f64).sum::<f64>() / n,
            load_mean: mine.iter().map(|r| r.load_mean).sum::<f64>() / n,
            load_peak: mine.iter().map(|r| r.load_peak).fold(0.0, f64::max),
            load_mean_run: mine.iter().map(|r| r.load_mean_run).sum::<f64>() / n,
            disk_busy: mine.iter().map(|r| r.disk_busy).sum::<f64>() / n,
            build_s: all,
        });
    }
    Ok(cells)
}
