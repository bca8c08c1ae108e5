//! The `[scoreboard]` section: every CPU scheduler of a row with every node-level placement,
//! side by side, on a list of workload x machine rows, each configuration repeated `reps`
//! times (repetitions for numa_test, seeds for the studies). The file names the configuration
//! the board is about (`focus`, homenode on `linux`) and the one a user already has
//! (`baseline`, `linux` alone); the report marks each row's best configuration and where the
//! focus stands against it and against the baseline.
//!
//! Every key is checked when the file is read; an unknown scheduler or placement gives one
//! line with the file, the line, the key and the valid choices.

use super::ExperimentError;
use super::error::key_line;
use super::study_spec::parse_shape;
use crate::budget;
use crate::placement::PlacementSpec;
use crate::sched::{self, SchedSpec};
use serde::{Deserialize, Serialize};

/// What a row runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowWorkload {
    /// numa_test with hackbench, ElapsedTime.
    #[serde(rename = "numa_test")]
    NumaTest,
    /// The light-load program (4 threads on one cache line), run time.
    LightLoad,
    /// The convergence workload, time to converge.
    Convergence,
    /// The oltp server, transactions per second.
    Oltp,
    /// numa01 (autonuma-benchmark), elapsed time.
    Numa01,
    /// numa02 (autonuma-benchmark), elapsed time.
    Numa02,
}

impl RowWorkload {
    pub const ALL: [RowWorkload; 6] = [
        RowWorkload::NumaTest,
        RowWorkload::LightLoad,
        RowWorkload::Convergence,
        RowWorkload::Oltp,
        RowWorkload::Numa01,
        RowWorkload::Numa02,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RowWorkload::NumaTest => "numa_test",
            RowWorkload::LightLoad => "light-load",
            RowWorkload::Convergence => "convergence",
            RowWorkload::Oltp => "oltp",
            RowWorkload::Numa01 => "numa01",
            RowWorkload::Numa02 => "numa02",
        }
    }

    /// The keys this workload reads (besides `workload`, `machine` and `historical`).
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            RowWorkload::NumaTest => &["tasks", "tasks_per_cpu", "problem_size", "passes"],
            RowWorkload::LightLoad => &["iterations"],
            RowWorkload::Convergence => &["shapes", "watch_s"],
            RowWorkload::Oltp => &["threads", "tx_per_thread"],
            RowWorkload::Numa01 | RowWorkload::Numa02 => &["loops"],
        }
    }

    /// The figure of a row and whether more is better.
    pub fn metric(self) -> (&'static str, bool) {
        match self {
            RowWorkload::NumaTest => ("ElapsedTime (s)", false),
            RowWorkload::LightLoad => ("run time (s)", false),
            RowWorkload::Convergence => ("time to converge (s)", false),
            RowWorkload::Oltp => ("transactions/s", true),
            RowWorkload::Numa01 | RowWorkload::Numa02 => ("elapsed (s)", false),
        }
    }
}

/// One `[[scoreboard.rows]]` entry: a workload on a machine, expanded into one row per size
/// (task count, shape, client count).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowGroup {
    pub workload: RowWorkload,
    pub machine: String,
    /// The historical schedulers whose machine this is, run besides `scoreboard.schedulers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub historical: Vec<String>,
    /// numa_test: task counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<u32>>,
    /// numa_test: task counts as multiples of the machine's CPUs (rounded, at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_per_cpu: Option<Vec<f64>>,
    /// numa_test: PROBLEMSIZE. With `passes` left out too, both are chosen for the row's
    /// machine (`crate::numa_test::auto_size`); else the one left out is the original's
    /// (1,000,000 elements, 100 passes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem_size: Option<u64>,
    /// numa_test: passes over the arrays (see `problem_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<u32>,
    /// light-load: iterations per thread (1e9 when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<f64>,
    /// convergence: `PxT` shapes (the study's four when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shapes: Option<Vec<String>>,
    /// convergence: watch length, s (60 when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_s: Option<f64>,
    /// oltp: client thread counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<Vec<u32>>,
    /// oltp: transactions per client while clients <= CPUs (20,000 when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_per_thread: Option<u32>,
    /// numa01: `loops`; numa02: `numa02_loops` (the workload's reference when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loops: Option<u32>,
}

/// The `[scoreboard]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoreboardSection {
    /// CPU schedulers of every row (specs with options).
    pub schedulers: Vec<String>,
    /// Node-level placements of every scheduler (`--placement` specs; `none` for none).
    pub placements: Vec<String>,
    /// The configuration judged: `[scheduler, placement]`, both as written above.
    pub focus: [String; 2],
    /// What a user already has: `[scheduler, placement]`, both as written above.
    pub baseline: [String; 2],
    pub rows: Vec<RowGroup>,
}

/// The reference PROBLEMSIZE of the numa_test rows.
pub const REF_PROBLEM_SIZE: u64 = 1_000_000;

impl RowGroup {
    fn given(&self) -> Vec<&'static str> {
        [
            ("tasks", self.tasks.is_some()),
            ("tasks_per_cpu", self.tasks_per_cpu.is_some()),
            ("problem_size", self.problem_size.is_some()),
            ("passes", self.passes.is_some()),
            ("iterations", self.iterations.is_some()),
            ("shapes", self.shapes.is_some()),
            ("watch_s", self.watch_s.is_some()),
            ("threads", self.threads.is_some()),
            ("tx_per_thread", self.tx_per_thread.is_some()),
            ("loops", self.loops.is_some()),
        ]
        .iter()
        .filter(|(_, g)| *g)
        .map(|(k, _)| *k)
        .collect()
    }

    /// The numa_test task counts on a machine of `cpus` CPUs, in the file's order.
    pub fn task_counts(&self, cpus: usize) -> Vec<u32> {
        let mut v: Vec<u32> = self.tasks.clone().unwrap_or_default();
        for &m in self.tasks_per_cpu.iter().flatten() {
            v.push(((m * cpus as f64).round() as u32).max(1));
        }
        v
    }

    /// The convergence shapes.
    pub fn shape_list(&self) -> Vec<(u32, u32)> {
        match &self.shapes {
            Some(s) => s.iter().filter_map(|x| parse_shape(x).ok()).collect(),
            None => crate::studies::convergence::SHAPES.to_vec(),
        }
    }
}

impl ScoreboardSection {
    /// Every CPU scheduler of group `g`: the section's, then the group's historical ones.
    pub fn schedulers_of(&self, g: &RowGroup) -> Vec<String> {
        self.schedulers
            .iter()
            .chain(&g.historical)
            .cloned()
            .collect()
    }

    pub(super) fn check(&self, text: &str, file: &str) -> Result<(), ExperimentError> {
        let at = |line: usize, key: &str, msg: String| ExperimentError::Parse {
            file: file.into(),
            line,
            msg: format!("{key}: {msg}"),
        };
        let top = |key: &str, msg: String| at(key_line(text, key), key, msg);
        if self.schedulers.is_empty() {
            return Err(top("schedulers", "the list is empty".into()));
        }
        if self.placements.is_empty() {
            return Err(top("placements", "the list is empty".into()));
        }
        for (i, p) in self.placements.iter().enumerate() {
            PlacementSpec::parse(p)
                .and_then(|s| s.build().map(|_| ()))
                .map_err(|e| top("placements", e.to_string()))?;
            if self.placements[..i].contains(p) {
                return Err(top("placements", format!("`{p}` given twice")));
            }
        }
        for (i, s) in self.schedulers.iter().enumerate() {
            known(s).map_err(|e| top("schedulers", e.to_string()))?;
            if self.schedulers[..i].contains(s) {
                return Err(top("schedulers", format!("`{s}` given twice")));
            }
        }
        for (key, [s, p]) in [("focus", &self.focus), ("baseline", &self.baseline)] {
            if !self.schedulers.contains(s) {
                return Err(top(
                    key,
                    format!(
                        "`{s}` is not one of `schedulers` (valid: {})",
                        self.schedulers.join(", ")
                    ),
                ));
            }
            if !self.placements.contains(p) {
                return Err(top(
                    key,
                    format!(
                        "`{p}` is not one of `placements` (valid: {})",
                        self.placements.join(", ")
                    ),
                ));
            }
        }
        if self.rows.is_empty() {
            return Err(top("rows", "give at least one [[scoreboard.rows]]".into()));
        }
        for (i, g) in self.rows.iter().enumerate() {
            let line = |key: &str| row_key_line(text, i, key);
            let err = |key: &str, msg: String| at(line(key), &format!("rows[{i}].{key}"), msg);
            g.check(self, &err)?;
        }
        Ok(())
    }
}

impl RowGroup {
    fn check(
        &self,
        board: &ScoreboardSection,
        err: &dyn Fn(&str, String) -> ExperimentError,
    ) -> Result<(), ExperimentError> {
        let keys = self.workload.keys();
        if let Some(k) = self.given().into_iter().find(|k| !keys.contains(k)) {
            return Err(err(
                k,
                format!(
                    "not a key of workload `{}` (its keys: workload, machine, historical, {})",
                    self.workload.name(),
                    keys.join(", ")
                ),
            ));
        }
        let topo =
            topo::resolve_machine(&self.machine).map_err(|e| err("machine", e.to_string()))?;
        for (i, s) in self.historical.iter().enumerate() {
            known(s).map_err(|e| err("historical", e.to_string()))?;
            let spec = SchedSpec::parse(s).map_err(|e| err("historical", e.to_string()))?;
            sched::build(&spec, &topo).map_err(|e| err("historical", e.to_string()))?;
            if board.schedulers.contains(s) || self.historical[..i].contains(s) {
                return Err(err("historical", format!("`{s}` given twice")));
            }
        }
        for s in &board.schedulers {
            let spec = SchedSpec::parse(s).map_err(|e| err("machine", e.to_string()))?;
            sched::build(&spec, &topo)
                .map_err(|e| err("machine", format!("scheduler `{s}`: {e}")))?;
        }
        let positive = |key: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(err(key, "must be positive".into()))
            }
        };
        positive("problem_size", self.problem_size != Some(0))?;
        positive("passes", self.passes != Some(0))?;
        positive("iterations", self.iterations.is_none_or(|v| v >= 1.0))?;
        positive("watch_s", self.watch_s.is_none_or(|v| v > 0.0))?;
        positive("tx_per_thread", self.tx_per_thread != Some(0))?;
        positive("loops", self.loops != Some(0))?;
        positive(
            "tasks_per_cpu",
            self.tasks_per_cpu
                .iter()
                .flatten()
                .all(|m| m.is_finite() && *m > 0.0),
        )?;
        self.check_sizes(&topo, err)
    }

    /// The size keys: positive, within the budget, the ones the workload needs given.
    fn check_sizes(
        &self,
        topo: &topo::Topology,
        err: &dyn Fn(&str, String) -> ExperimentError,
    ) -> Result<(), ExperimentError> {
        let over = |e: budget::BudgetError| err(&e.key.clone(), format!("{}: {}", e.value, e.why));
        match self.workload {
            RowWorkload::NumaTest => {
                let counts = self.task_counts(topo.nr_cpus());
                if counts.is_empty() || counts.contains(&0) {
                    return Err(err(
                        "tasks",
                        "give `tasks` or `tasks_per_cpu`, each count at least 1".into(),
                    ));
                }
                for &n in &counts {
                    budget::tasks("tasks", f64::from(n)).map_err(over)?;
                }
                if let Some(p) = self.passes {
                    let most = crate::numa_test::MAX_PASSES;
                    budget::at_most("passes", f64::from(p), f64::from(most), "passes")
                        .map_err(over)?;
                }
                let most = counts.iter().copied().max().unwrap_or(0);
                let size = self.problem_size.unwrap_or(REF_PROBLEM_SIZE);
                budget::memory(
                    "problem_size",
                    20.0 * size as f64 * f64::from(most),
                    topo.total_mem_bytes(),
                )
                .map_err(over)?;
            }
            RowWorkload::Convergence => {
                if let Some(s) = &self.shapes {
                    if s.is_empty() {
                        return Err(err("shapes", "give at least one `PxT` shape".into()));
                    }
                    for x in s {
                        let (p, t) = parse_shape(x).map_err(|e| err("shapes", e.to_string()))?;
                        budget::tasks("shapes", f64::from(p) * f64::from(t)).map_err(over)?;
                    }
                }
                if let Some(w) = self.watch_s {
                    budget::sim_seconds("watch_s", w).map_err(over)?;
                }
            }
            RowWorkload::Oltp => match &self.threads {
                Some(t) if !t.is_empty() && !t.contains(&0) => {
                    for &n in t {
                        budget::tasks("threads", f64::from(n)).map_err(over)?;
                    }
                    if let Some(x) = self.tx_per_thread {
                        budget::work(
                            "tx_per_thread",
                            f64::from(x),
                            f64::from(super::study_spec::REF_OLTP_TX),
                        )
                        .map_err(over)?;
                    }
                }
                _ => {
                    return Err(err(
                        "threads",
                        "give at least one count, each at least 1".into(),
                    ));
                }
            },
            RowWorkload::LightLoad => {
                if let Some(i) = self.iterations {
                    budget::work("iterations", i, 1e9).map_err(over)?;
                }
            }
            RowWorkload::Numa01 | RowWorkload::Numa02 => {
                if let Some(l) = self.loops {
                    let reference = if self.workload == RowWorkload::Numa01 {
                        20.0
                    } else {
                        2000.0
                    };
                    budget::work("loops", f64::from(l), reference).map_err(over)?;
                }
            }
        }
        Ok(())
    }
}

/// A scheduler spec that parses and names a registered scheduler (its options are checked
/// against each row's machine).
fn known(s: &str) -> Result<(), UnknownSched> {
    let spec = SchedSpec::parse(s).map_err(UnknownSched::Spec)?;
    if sched::registry::find(&spec.name).is_none() {
        return Err(UnknownSched::Name(sched::SchedError::UnknownScheduler {
            name: spec.name.clone(),
            valid: sched::registry::names(),
        }));
    }
    Ok(())
}

/// A scheduler spec of a scoreboard that does not parse or names no scheduler.
#[derive(Debug, thiserror::Error)]
enum UnknownSched {
    #[error(transparent)]
    Spec(sched::SpecError),
    #[error(transparent)]
    Name(sched::SchedError),
}

/// Line of `key = ...` inside the `i`-th `[[scoreboard.rows]]` table (0-based), or of the
/// table's header when the key is not written there (0 if there is no such table).
pub(super) fn row_key_line(text: &str, i: usize, key: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[scoreboard.rows]]")
        .nth(i)
        .map(|(n, _)| n)
    else {
        return 0;
    };
    for (n, l) in lines.iter().enumerate().skip(start + 1) {
        let t = l.trim_start();
        if t.starts_with('[') {
            break;
        }
        if t.strip_prefix(key)
            .is_some_and(|r| r.trim_start().starts_with('='))
        {
            return n + 1;
        }
    }
    start + 1
}
