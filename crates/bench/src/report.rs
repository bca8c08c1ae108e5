//! The `--json` document shared with `homenode sim numa-test`, reading it back, and
//! `homenode bench compare`: a simulation and a benchmark side by side with the prediction
//! error per figure.

use crate::error::BenchError;
use ::report::{CellSummary, MeanStd, comparison_table};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The whole `--json` document: `{"machine", "problem_size", "passes", "disturb", "seed",
/// "results": [CellSummary...]}`, as `homenode sim numa-test --json` prints it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub machine: String,
    pub problem_size: u64,
    pub passes: u32,
    pub disturb: bool,
    pub seed: u64,
    pub results: Vec<CellSummary>,
}

/// The read side of [`Report`].
#[derive(Deserialize)]
struct ReportIn {
    machine: String,
    problem_size: u64,
    passes: u32,
    disturb: bool,
    seed: u64,
    results: Vec<CellSummary>,
}

impl Report {
    /// The document as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string())
    }

    /// Parse a numa-test document (from `sim numa-test --json` or `bench numa-test --json`);
    /// `origin` (the file name) prefixes the error.
    pub fn parse(text: &str, origin: &str) -> Result<Report, BenchError> {
        let bad = |m: String| BenchError::Parse {
            path: origin.to_string(),
            msg: format!("not a numa-test --json report: {m}"),
        };
        let t = text.trim_start();
        if !t.is_empty() && !t.starts_with('{') {
            return Err(bad(
                "expected a JSON object `{\"machine\": ..., \"results\": [...]}`".into(),
            ));
        }
        let r: ReportIn = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        Ok(Report {
            machine: r.machine,
            problem_size: r.problem_size,
            passes: r.passes,
            disturb: r.disturb,
            seed: r.seed,
            results: r.results,
        })
    }

    /// Read and parse a report file (a regular file of at most
    /// [`MAX_INPUT_BYTES`](topo::input::MAX_INPUT_BYTES)).
    pub fn read(path: &str) -> Result<Report, BenchError> {
        let p = std::path::Path::new(path);
        let text = topo::input::read_input(p).map_err(|e| match e {
            topo::input::InputError::Io { error, .. } => BenchError::io(p, error),
            topo::input::InputError::Refused { why, .. } => BenchError::parse(p, why),
        })?;
        Report::parse(&text, path)
    }

    fn describe(&self) -> String {
        format!(
            "machine {}, PROBLEMSIZE {}, {} passes, hackbench {}, seed {}",
            self.machine,
            self.problem_size,
            self.passes,
            if self.disturb { "on" } else { "off" },
            self.seed
        )
    }
}

/// Whether a benchmark report's load peak ran as threads (its cells' `hackbench` option,
/// "G groups of threads at T s, ...").
fn peak_of_threads(r: &Report) -> bool {
    r.results.iter().any(|c| {
        c.options
            .iter()
            .any(|(k, v)| k == "hackbench" && v.contains(" groups of threads "))
    })
}

type Figure = (&'static str, fn(&CellSummary) -> MeanStd);

/// The figures whose prediction error `compare` prints.
pub const FIGURES: [Figure; 4] = [
    ("AverageUserTime", |c| c.avg_user_s),
    ("ElapsedTime", |c| c.elapsed_s),
    ("TotalUserTime", |c| c.total_user_s),
    ("TotalSysTime", |c| c.total_sys_s),
];

/// Prediction error of `sim` against `bench`, in percent: `(sim / bench - 1) x 100`; `None`
/// when the benchmark's figure is zero.
pub fn prediction_error_pct(sim: f64, bench: f64) -> Option<f64> {
    (bench != 0.0 && bench.is_finite() && sim.is_finite()).then(|| (sim / bench - 1.0) * 100.0)
}

/// `homenode bench compare`: both reports' summary tables side by side (one column per
/// scheduler, the benchmark's `host` among them), then the prediction error of each
/// simulated scheduler against each benchmark column, per task count and figure.
pub fn compare(sim: &Report, sim_name: &str, bench: &Report, bench_name: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "simulation: {sim_name}: {}", sim.describe());
    let _ = writeln!(s, "benchmark:  {bench_name}: {}", bench.describe());
    let mut notes = Vec::new();
    if sim.problem_size != bench.problem_size {
        notes.push(format!(
            "PROBLEMSIZE differs ({} vs {})",
            sim.problem_size, bench.problem_size
        ));
    }
    if sim.passes != bench.passes {
        notes.push(format!(
            "passes differ ({} vs {})",
            sim.passes, bench.passes
        ));
    }
    if sim.disturb != bench.disturb {
        notes.push("one has the hackbench peak and the other not".into());
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}: the figures are not comparable as they stand");
    }
    if sim.disturb && bench.disturb && peak_of_threads(bench) {
        let _ = writeln!(
            s,
            "note: the benchmark's hackbench ran as threads (--hackbench-threads); the \
             simulator models its processes"
        );
    }
    // Same column name in both: tell them apart.
    let sim_scheds = schedulers(&sim.results);
    let bench_scheds = schedulers(&bench.results);
    let clash = sim_scheds.iter().any(|x| bench_scheds.contains(x));
    let label = |prefix: &str, c: &CellSummary| {
        let mut c = c.clone();
        if clash {
            c.scheduler = format!("{prefix}:{}", c.scheduler);
        }
        c
    };
    let sim_cells: Vec<CellSummary> = sim.results.iter().map(|c| label("sim", c)).collect();
    let bench_cells: Vec<CellSummary> = bench.results.iter().map(|c| label("bench", c)).collect();
    let mut merged = sim_cells.clone();
    merged.extend(bench_cells.iter().cloned());
    s.push('\n');
    let _ = writeln!(s, "== Side by side: mean(stddev) in seconds");
    s.push_str(&comparison_table(&merged));

    let sim_cols = schedulers(&sim_cells);
    let w = sim_cols.iter().map(|x| x.len()).max().unwrap_or(0).max(10);
    for b in schedulers(&bench_cells) {
        let _ = writeln!(s, "== Prediction error against {b}: sim / bench - 1");
        for n in task_counts(&merged) {
            let Some(bc) = bench_cells
                .iter()
                .find(|c| c.tasks == n && c.scheduler == b)
            else {
                let _ = writeln!(s, "N={n:<3} not in {bench_name}\n");
                continue;
            };
            let _ = write!(s, "N={n:<3} {:<16}", "");
            for sc in &sim_cols {
                let _ = write!(s, " {sc:>w$}");
            }
            s.push('\n');
            for (name, f) in FIGURES {
                let _ = write!(s, "      {name:<16}");
                for sc in &sim_cols {
                    let cell = sim_cells
                        .iter()
                        .find(|c| c.tasks == n && c.scheduler == *sc);
                    let v = match cell {
                        None => "-".to_string(),
                        Some(c) => prediction_error_pct(f(c).mean, f(bc).mean)
                            .map_or("n/a".to_string(), |e| format!("{e:+.1}%")),
                    };
                    let _ = write!(s, " {v:>w$}");
                }
                s.push('\n');
            }
            s.push('\n');
        }
    }
    for b in schedulers(&bench_cells) {
        growth_section(&mut s, &b, &bench_cells, &sim_cells, &sim_cols);
    }
    s
}

/// How each column's AverageUserTime grows from the smallest task count to each larger one,
/// the benchmark's and each simulated scheduler's, with the prediction error of that ratio: a
/// host that runs uniformly faster or slower than its probe said (other tenants, a clock
/// that moved) cancels out of it, what the tasks do to each other does not.
fn growth_section(
    s: &mut String,
    b: &str,
    bench_cells: &[CellSummary],
    sim_cells: &[CellSummary],
    sim_cols: &[String],
) {
    let user = |cells: &[CellSummary], sched: &str, n: u32| {
        cells
            .iter()
            .find(|c| c.tasks == n && c.scheduler == sched)
            .map(|c| c.avg_user_s.mean)
    };
    let ns: Vec<u32> = task_counts(bench_cells)
        .into_iter()
        .filter(|&n| user(bench_cells, b, n).is_some())
        .collect();
    let Some((&n0, rest)) = ns.split_first() else {
        return;
    };
    if rest.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "== How AverageUserTime grows with N against {b}: U(N) / U(N={n0}), and sim / bench - 1 \
         of that ratio"
    );
    for &n in rest {
        let bench_ratio = growth_ratio(user(bench_cells, b, n), user(bench_cells, b, n0));
        let _ = write!(s, "N={n:<3} {b} {}", fmt_ratio(bench_ratio));
        for sc in sim_cols {
            let r = growth_ratio(user(sim_cells, sc, n), user(sim_cells, sc, n0));
            let e = r
                .zip(bench_ratio)
                .and_then(|(r, br)| prediction_error_pct(r, br))
                .map_or(String::new(), |e| format!(" ({e:+.1}%)"));
            let _ = write!(s, "   {sc} {}{e}", fmt_ratio(r));
        }
        s.push('\n');
    }
    s.push('\n');
}

/// `u / u0`, when both are known and `u0` is not zero.
pub fn growth_ratio(u: Option<f64>, u0: Option<f64>) -> Option<f64> {
    let (u, u0) = (u?, u0?);
    (u0 > 0.0 && u.is_finite()).then(|| u / u0)
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("-".to_string(), |r| format!("{r:.2}x"))
}

fn schedulers(cells: &[CellSummary]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for c in cells {
        if !v.contains(&c.scheduler) {
            v.push(c.scheduler.clone());
        }
    }
    v
}

fn task_counts(cells: &[CellSummary]) -> Vec<u32> {
    let mut v: Vec<u32> = Vec::new();
    for c in cells {
        if !v.contains(&c.tasks) {
            v.push(c.tasks);
        }
    }
    v.sort_unstable();
    v
}
