//! The numa_test report, shared by the simulator (`sim::numa_test`) and the benchmark on a real
//! host (`bench::numa_test`), so that a simulation and a benchmark print the same tables and
//! the same `--json` document (field names are the stable schema) and can be compared figure
//! by figure (see docs/ARCHITECTURE.md, §1.6, and docs/BENCH.md).
//!
//! | Item | What it is |
//! | --- | --- |
//! | [`JobRow`] | one job: share of its user time per node, iSched, MSched, times, memory per node |
//! | [`RunFigures`] | one run: the job rows and AverageUserTime, ElapsedTime, TotalUserTime, TotalSysTime, ... |
//! | [`CellSummary`], [`MeanStd`], [`summarise`] | one (scheduler, N) cell over its repetitions |
//! | [`job_table`], [`summary_block`], [`comparison_table`] | the text tables |
//! | [`node_pct`], [`node_share_pct`], [`mem_pct`], [`busiest_node`], [`RunFigures::from_jobs`] | the per-job and per-run arithmetic both producers use |
//! | [`seed`] | the seed tree, and the seed of each run ([`run_seed`]) |
//! | [`median`] | the median every report quotes |
//!
//! Nothing here measures or simulates: the producers fill the rows, this crate does the
//! arithmetic and the layout.

pub mod seed;
pub mod stats;

pub use seed::{SeedTree, run_seed};
pub use stats::median;

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

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
    /// Of `events`, idle balance ticks the simulator accounted without handling each one
    /// (0 unless set after [`RunFigures::from_jobs`]).
    pub skipped_ticks: u64,
    pub node_migrations: u64,
    pub refused: [u64; 3],
    /// Every job had exited before the disturbance did, so ElapsedTime is the disturbance's
    /// end, not the jobs' (false unless set after [`RunFigures::from_jobs`]).
    pub jobs_ended_first: bool,
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
    /// Of `events`, idle balance ticks accounted without being handled one by one (mean;
    /// for the speed figures only, not part of the report).
    #[serde(skip)]
    pub skipped_ticks: f64,
    /// Repetitions in which every job had exited before the disturbance did: their
    /// ElapsedTime is the disturbance's end, not the jobs'.
    #[serde(default)]
    pub jobs_ended_first: u32,
}

/// Percent of the total on each node, computed as `100 x t / total` (the simulator's
/// rounding: its reports are reproduced to the last bit); all 0 when the total is 0.
pub fn node_pct(time_per_node: &[f64]) -> Vec<f64> {
    let total: f64 = time_per_node.iter().sum();
    time_per_node
        .iter()
        .map(|x| if total > 0.0 { 100.0 * x / total } else { 0.0 })
        .collect()
}

/// Percent of the total on each node, computed as the share first, `t / total x 100` (the
/// benchmark's rounding: a job that ran on one node shows exactly 100, never a hair above);
/// all 0 when the total is 0. Differs from [`node_pct`] only in the last bit.
pub fn node_share_pct(time_per_node: &[f64]) -> Vec<f64> {
    let total: f64 = time_per_node.iter().sum();
    time_per_node
        .iter()
        .map(|x| if total > 0.0 { x / total * 100.0 } else { 0.0 })
        .collect()
}

/// Percent of `total` bytes in each column: `100 x b / total`, all 0 when `total` is 0.
/// `total` may exceed the columns' sum (memory on nodes without a column counts in it).
pub fn mem_pct(bytes_per_column: &[u64], total: u64) -> Vec<f64> {
    bytes_per_column
        .iter()
        .map(|&b| {
            if total > 0 {
                100.0 * b as f64 / total as f64
            } else {
                0.0
            }
        })
        .collect()
}

/// MSched: the node of `0..nr_nodes` with the largest value, the lowest node on a tie.
pub fn busiest_node(per_node: &[f64], nr_nodes: usize) -> usize {
    (0..nr_nodes)
        .max_by(|&a, &b| per_node[a].total_cmp(&per_node[b]).then(b.cmp(&a)))
        .unwrap_or(0)
}

impl RunFigures {
    /// The figures of a run from its job rows: TotalUserTime and TotalSysTime are the jobs'
    /// sums, AverageUserTime their mean (0 without jobs).
    pub fn from_jobs(
        jobs: Vec<JobRow>,
        elapsed_s: f64,
        hackbench_s: f64,
        events: u64,
        node_migrations: u64,
        refused: [u64; 3],
    ) -> RunFigures {
        let total_user: f64 = jobs.iter().map(|j| j.user_s).sum();
        let total_sys: f64 = jobs.iter().map(|j| j.sys_s).sum();
        RunFigures {
            avg_user_s: if jobs.is_empty() {
                0.0
            } else {
                total_user / jobs.len() as f64
            },
            elapsed_s,
            total_user_s: total_user,
            total_sys_s: total_sys,
            hackbench_s,
            events,
            skipped_ticks: 0,
            node_migrations,
            refused,
            jobs_ended_first: false,
            jobs,
        }
    }
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
        skipped_ticks: runs.iter().map(|r| r.skipped_ticks as f64).sum::<f64>() / nr,
        jobs_ended_first: runs.iter().filter(|r| r.jobs_ended_first).count() as u32,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_math() {
        assert_eq!(node_pct(&[1.0, 3.0]), vec![25.0, 75.0]);
        assert_eq!(node_pct(&[0.0, 0.0]), vec![0.0, 0.0]);
        assert_eq!(node_share_pct(&[1.0, 3.0]), vec![25.0, 75.0]);
        assert_eq!(node_share_pct(&[0.0]), vec![0.0]);
        // One node: exactly 100 with the share first.
        for t in [0.1, 0.3, 2.73, 1e-7, 123.456] {
            assert_eq!(node_share_pct(&[t, 0.0])[0], 100.0, "{t}");
        }
        assert_eq!(mem_pct(&[1, 1], 4), vec![25.0, 25.0]);
        assert_eq!(mem_pct(&[0, 0], 0), vec![0.0, 0.0]);
        assert_eq!(busiest_node(&[1.0, 3.0, 3.0], 3), 1);
        assert_eq!(busiest_node(&[], 0), 0);
    }

    #[test]
    fn run_figures_and_summary() {
        let row = |user_s: f64| JobRow {
            node_pct: vec![100.0],
            isched: Some(0),
            msched: 0,
            user_s,
            sys_s: 0.5,
            mem_pct: vec![],
            home_node: None,
            node_migrations: 0,
        };
        let f = RunFigures::from_jobs(vec![row(1.0), row(3.0)], 5.0, 0.0, 7, 2, [0; 3]);
        assert_eq!(
            (f.avg_user_s, f.total_user_s, f.total_sys_s),
            (2.0, 4.0, 1.0)
        );
        let empty = RunFigures::from_jobs(vec![], 1.0, 0.0, 0, 0, [0; 3]);
        assert_eq!(empty.avg_user_s, 0.0);
        let early = RunFigures {
            jobs_ended_first: true,
            ..f.clone()
        };
        let c = summarise("host", &[], 2, &[early, f]);
        assert_eq!((c.reps, c.avg_user_s.mean, c.avg_user_s.std), (2, 2.0, 0.0));
        assert_eq!(c.jobs_ended_first, 1);
        assert_eq!(c.jobs.len(), 2);
        assert_eq!(MeanStd::of(&[1.0, 3.0]).to_string(), "2.00(1.41)");
    }
}
