//! Experiment files (`experiments/*.toml`): what to run, read strictly. Every error is one
//! line naming the file, the line and the key (unknown keys list the valid ones).

use super::ExperimentError;
use super::error::{ValueError, array_table_line, key_line};
use super::study_spec::StudySection;
use crate::budget;
use crate::sched::{self, SchedSpec};
use serde::{Deserialize, Serialize};

/// One experiment as written in its file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSpec {
    pub name: String,
    pub title: String,
    #[serde(default)]
    pub description: String,
    /// The machine; a `[scoreboard]` names one per row instead and leaves this out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub machine: String,
    /// Scheduler specs, one column each (`pool:pool_delay=0,initial_lb=off`); absent for a
    /// `[study]`, which chooses its own `linux:...` options.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedulers: Vec<String>,
    /// Repetitions per cell; absent for a `[study]` (each configuration runs once).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reps: u32,
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub numa_test: Option<NumaTestSection>,
    pub mix: Option<MixSection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<StudySection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scoreboard: Option<super::scoreboard::ScoreboardSection>,
    /// Sensitivity sweeps of assumptions without a source (numa_test experiments).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<super::sweep::Sweep>,
    /// Sensitivity sweeps of a `[mix]` experiment's disk model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mix_sweep: Vec<super::mix_sweep::MixSweep>,
}

fn default_seed() -> u64 {
    1
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// A numa_test experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumaTestSection {
    pub tasks: Vec<u32>,
    /// PROBLEMSIZE; with `passes` left out too, both are chosen for the machine
    /// (`crate::numa_test::auto_size`), else the one left out is the original's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem_size: Option<u64>,
    /// Passes over the arrays (see `problem_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<u32>,
    /// Cells run without the hackbench disturbance: a task count (every scheduler), or one
    /// scheduler's task count (`{ sched = "node-affine-static", tasks = 64 }`).
    #[serde(default)]
    pub no_hackbench: Vec<Quiet>,
    /// Tables to print, one per metric, in this order.
    pub tables: Vec<Metric>,
    /// Add a table of the relative gain of every other scheduler over this one.
    #[serde(default)]
    pub gain_over: Option<String>,
}

/// A numa_test cell run without hackbench.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Quiet {
    /// This task count, for every scheduler.
    Tasks(u32),
    /// This task count of this scheduler column only.
    Column { sched: String, tasks: u32 },
}

impl Quiet {
    pub fn tasks(&self) -> u32 {
        match self {
            Quiet::Tasks(t) | Quiet::Column { tasks: t, .. } => *t,
        }
    }

    /// Whether the cell (`sched` column, `tasks`) runs without hackbench.
    pub fn applies(&self, sched: &str, tasks: u32) -> bool {
        match self {
            Quiet::Tasks(t) => *t == tasks,
            Quiet::Column { sched: s, tasks: t } => s == sched && *t == tasks,
        }
    }
}

impl NumaTestSection {
    /// Whether the cell (`sched` column, `tasks`) runs without hackbench.
    pub fn quiet(&self, sched: &str, tasks: u32) -> bool {
        self.no_hackbench.iter().any(|q| q.applies(sched, tasks))
    }
}

/// A figure of the numa_test summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    AverageUserTime,
    TotalUserTime,
    ElapsedTime,
    TotalSysTime,
    HackbenchTime,
}

impl Metric {
    pub fn label(self) -> &'static str {
        match self {
            Metric::AverageUserTime => "AverageUserTime (U)",
            Metric::TotalUserTime => "TotalUserTime (TU)",
            Metric::ElapsedTime => "ElapsedTime (E)",
            Metric::TotalSysTime => "TotalSysTime",
            Metric::HackbenchTime => "HackbenchTime (H)",
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Metric::AverageUserTime => "average_user_time",
            Metric::TotalUserTime => "total_user_time",
            Metric::ElapsedTime => "elapsed_time",
            Metric::TotalSysTime => "total_sys_time",
            Metric::HackbenchTime => "hackbench_time",
        }
    }
}

/// A kbuild + bonnie mix experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixSection {
    pub builds: u32,
    pub jobs: u32,
    pub parallelism: u32,
    pub bonnies: u32,
    /// Disks that the builds and the bonnie processes queue on: with it,
    /// compile jobs run as the 2.4 process pipeline (sh, gcc, cpp | cc1 | as) and I/O
    /// waits queue on the disks (docs/WORKLOADS.md); without it, the earlier model (one
    /// process per compile, fixed I/O sleeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disks: Option<u32>,
    /// The disks' average seek, ms (default 6: docs/model/disks-and-loadavg.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seek_ms: Option<f64>,
    /// The disks' spindle speed (default 10,000 rpm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u32>,
    /// The disks' media transfer rate, MB/s (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_mb_s: Option<f64>,
}

impl ExperimentSpec {
    /// Parse and check an experiment file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<ExperimentSpec, ExperimentError> {
        let spec: ExperimentSpec = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, |s| line_of(text, s.start));
            let msg = e.message().replace('\n', " ");
            ExperimentError::Parse {
                file: file.into(),
                line,
                // serde names the type, not the key: add the key the line sets.
                msg: match key_at(text, line) {
                    Some(key) if !msg.contains(&format!("`{key}`")) => format!("{key}: {msg}"),
                    _ => msg,
                },
            }
        })?;
        spec.check(text, file)?;
        Ok(spec)
    }

    fn check(&self, text: &str, file: &str) -> Result<(), ExperimentError> {
        let err = |key: &str, msg: String| ExperimentError::Parse {
            file: file.into(),
            line: key_line(text, key),
            msg,
        };
        check_name(&self.name).map_err(|m| err("name", format!("name: {m}")))?;
        let sections = [
            self.numa_test.is_some(),
            self.mix.is_some(),
            self.study.is_some(),
            self.scoreboard.is_some(),
        ];
        if sections.iter().filter(|s| **s).count() != 1 {
            return Err(err(
                "name",
                "give exactly one of the sections [numa_test], [mix], [study] and [scoreboard]"
                    .into(),
            ));
        }
        if let Some(b) = &self.scoreboard {
            return self.check_scoreboard(b, text, file);
        }
        if self.machine.is_empty() {
            return Err(err("name", "missing field `machine`".into()));
        }
        let topo = topo::resolve_machine(&self.machine)
            .map_err(|e| err("machine", format!("machine: {e}")))?;
        if let Some(s) = &self.study {
            return self.check_study(s, text, file);
        }
        self.check_schedulers(&topo, &err)?;
        if self.reps == 0 {
            return Err(err("reps", "reps: must be at least 1".into()));
        }
        budget::reps("reps", f64::from(self.reps)).map_err(|e| err("reps", e.to_string()))?;
        if !self.sweep.is_empty() && self.numa_test.is_none() {
            return Err(err(
                "sweep",
                "sweep: only numa_test experiments take sweeps".into(),
            ));
        }
        let in_table = |table: &str, n: usize, msg: String| ExperimentError::Parse {
            file: file.into(),
            line: array_table_line(text, table, n),
            msg,
        };
        for (i, w) in self.sweep.iter().enumerate() {
            w.check(&self.schedulers, &topo)
                .map_err(|m| in_table("sweep", i + 1, format!("sweep {}: {m}", i + 1)))?;
        }
        match &self.mix {
            None if !self.mix_sweep.is_empty() => {
                return Err(err(
                    "mix_sweep",
                    "mix_sweep: only [mix] experiments take mix sweeps".into(),
                ));
            }
            Some(m) => {
                for (i, w) in self.mix_sweep.iter().enumerate() {
                    w.check(m).map_err(|msg| {
                        in_table("mix_sweep", i + 1, format!("mix_sweep {}: {msg}", i + 1))
                    })?;
                }
            }
            None => {}
        }
        match (&self.numa_test, &self.mix) {
            (Some(n), _) => n.check(self, &topo, text, file),
            (_, Some(m)) => m.check(text, file),
            _ => Ok(()),
        }
    }

    fn check_schedulers(
        &self,
        topo: &topo::Topology,
        err: &dyn Fn(&str, String) -> ExperimentError,
    ) -> Result<(), ExperimentError> {
        if self.schedulers.is_empty() {
            return Err(err("schedulers", "schedulers: the list is empty".into()));
        }
        for (i, s) in self.schedulers.iter().enumerate() {
            let spec = SchedSpec::parse(s).map_err(|e| err("schedulers", e.to_string()))?;
            sched::build(&spec, topo)
                .map_err(|e| err("schedulers", format!("schedulers[{i}]: {e}")))?;
            if self.schedulers[..i].contains(s) {
                return Err(err("schedulers", format!("schedulers: `{s}` given twice")));
            }
        }
        Ok(())
    }

    /// A study picks its own `linux:...` options and runs each configuration once, so
    /// `schedulers` and `reps` would only mislead: refuse them.
    fn check_study(&self, s: &StudySection, text: &str, file: &str) -> Result<(), ExperimentError> {
        let err = |key: &str, msg: &str| ExperimentError::Parse {
            file: file.into(),
            line: key_line(text, key),
            msg: format!("{key}: {msg}"),
        };
        if !self.schedulers.is_empty() {
            return Err(err(
                "schedulers",
                "not used by a [study] experiment (the study chooses its `linux:...` options); remove it",
            ));
        }
        if self.reps != 0 {
            return Err(err(
                "reps",
                "not used by a [study] experiment (each configuration runs once with `seed`); remove it",
            ));
        }
        s.check(&self.machine, text, file)
    }

    /// A scoreboard names its machines and schedulers per row; `reps` is the repetitions
    /// (or seeds) of every configuration.
    fn check_scoreboard(
        &self,
        b: &super::scoreboard::ScoreboardSection,
        text: &str,
        file: &str,
    ) -> Result<(), ExperimentError> {
        let err = |key: &str, msg: &str| ExperimentError::Parse {
            file: file.into(),
            line: key_line(text, key),
            msg: format!("{key}: {msg}"),
        };
        if !self.machine.is_empty() {
            return Err(err(
                "machine",
                "not used by a [scoreboard] experiment (each row names its machine); remove it",
            ));
        }
        if !self.schedulers.is_empty() {
            return Err(err(
                "schedulers",
                "not used at the top of a [scoreboard] experiment (give them as scoreboard.schedulers and per row as historical); remove it",
            ));
        }
        if !self.sweep.is_empty() {
            return Err(err("sweep", "only numa_test experiments take sweeps"));
        }
        if !self.mix_sweep.is_empty() {
            return Err(err("mix_sweep", "only [mix] experiments take mix sweeps"));
        }
        if self.reps == 0 {
            return Err(err("reps", "must be at least 1"));
        }
        budget::reps("reps", f64::from(self.reps)).map_err(|e| ExperimentError::Parse {
            file: file.into(),
            line: key_line(text, "reps"),
            msg: e.to_string(),
        })?;
        b.check(text, file)
    }

    pub fn sched_specs(&self) -> Vec<SchedSpec> {
        // Checked at parse time.
        self.schedulers
            .iter()
            .filter_map(|s| SchedSpec::parse(s).ok())
            .collect()
    }
}

impl NumaTestSection {
    fn check(
        &self,
        e: &ExperimentSpec,
        topo: &topo::Topology,
        text: &str,
        file: &str,
    ) -> Result<(), ExperimentError> {
        let over = |e: budget::BudgetError| ExperimentError::Parse {
            file: file.into(),
            line: key_line(text, &e.key),
            msg: e.to_string(),
        };
        for &n in &self.tasks {
            budget::tasks("tasks", f64::from(n)).map_err(over)?;
        }
        // numa_test's randupdt holds two arrays of doubles and one of ints: 20 bytes per
        // element and job (docs/WORKLOADS.md).
        let most = self.tasks.iter().copied().max().unwrap_or(0);
        let size = self
            .problem_size
            .unwrap_or(crate::numa_test::ORIGINAL_PROBLEM_SIZE);
        budget::memory(
            "problem_size",
            20.0 * size as f64 * f64::from(most),
            topo.total_mem_bytes(),
        )
        .map_err(over)?;
        let err = |key: &str, msg: &str| ExperimentError::Parse {
            file: file.into(),
            line: key_line(text, key),
            msg: format!("{key}: {msg}"),
        };
        if self.tasks.is_empty() || self.tasks.contains(&0) {
            return Err(err(
                "tasks",
                "give at least one task count, each at least 1",
            ));
        }
        if self
            .no_hackbench
            .iter()
            .any(|q| !self.tasks.contains(&q.tasks()))
        {
            return Err(err("no_hackbench", "every entry must also be in `tasks`"));
        }
        if let Some(Quiet::Column { sched, .. }) = self
            .no_hackbench
            .iter()
            .find(|q| matches!(q, Quiet::Column { sched, .. } if !e.schedulers.contains(sched)))
        {
            return Err(err(
                "no_hackbench",
                &format!("`{sched}` is not one of `schedulers`"),
            ));
        }
        if self.problem_size == Some(0) {
            return Err(err("problem_size", "must be at least 1"));
        }
        if let Some(p) = self.passes {
            let most = crate::numa_test::MAX_PASSES;
            if p == 0 || p > most {
                return Err(err("passes", &format!("must be 1 to {most}")));
            }
        }
        if self.tables.is_empty() {
            return Err(err("tables", "give at least one table"));
        }
        if let Some(g) = &self.gain_over
            && !e.schedulers.contains(g)
        {
            return Err(err("gain_over", "must be one of `schedulers`"));
        }
        Ok(())
    }
}

impl MixSection {
    fn check(&self, text: &str, file: &str) -> Result<(), ExperimentError> {
        let err = |key: &str| ExperimentError::Parse {
            file: file.into(),
            line: key_line(text, key),
            msg: format!("{key}: must be at least 1"),
        };
        for (key, v) in [
            ("builds", self.builds),
            ("jobs", self.jobs),
            ("parallelism", self.parallelism),
        ] {
            if v == 0 {
                return Err(err(key));
            }
        }
        for (key, v) in [
            ("seek_ms", self.seek_ms),
            ("transfer_mb_s", self.transfer_mb_s),
        ] {
            if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                return Err(ExperimentError::Parse {
                    file: file.into(),
                    line: key_line(text, key),
                    msg: format!("{key}: must be a positive number"),
                });
            }
        }
        if self.rpm == Some(0) {
            return Err(err("rpm"));
        }
        if self.disks == Some(0) {
            return Err(ExperimentError::Parse {
                file: file.into(),
                line: key_line(text, "disks"),
                msg: "disks: must be at least 1 (leave it out for the model without a disk queue)"
                    .into(),
            });
        }
        let over = |e: budget::BudgetError| ExperimentError::Parse {
            file: file.into(),
            line: key_line(text, &e.key),
            msg: e.to_string(),
        };
        budget::tasks("jobs", f64::from(self.jobs)).map_err(over)?;
        budget::tasks(
            "builds",
            f64::from(self.builds) * f64::from(self.parallelism),
        )
        .map_err(over)?;
        if self.disks.is_some() {
            // sh, gcc, cpp, cc1 and as per compile job.
            budget::tasks("jobs", 5.0 * f64::from(self.jobs) * f64::from(self.builds))
                .map_err(over)?;
        }
        Ok(())
    }
}

/// An experiment's name names its output directory: lower-case letters, digits and `-`
/// only, so that it can never be a path (`../../escaped`).
pub(super) fn check_name(name: &str) -> Result<(), ValueError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(ValueError::BadName { name: name.into() })
    }
}

/// 1-based line of byte offset `at`.
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// The dotted key (`numa_test.tasks`) that line `line` (1-based) sets, or whose multi-line
/// value it continues; `None` outside any `key = value`.
pub(crate) fn key_at(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let upto = line.checked_sub(1).filter(|&i| i < lines.len())?;
    let mut key = None;
    let mut section = String::new();
    for l in lines[..=upto].iter().rev() {
        let t = l.trim_start();
        if t.starts_with('[') {
            section = t
                .trim_matches(|c| c == '[' || c == ']' || c == ' ')
                .to_string();
            break;
        }
        if key.is_none() {
            if let Some((k, _)) = t.split_once('=') {
                let k = k.trim();
                if !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-.\"".contains(c))
                {
                    key = Some(k.trim_matches('"').to_string());
                }
            }
        }
    }
    let key = key?;
    Some(if section.is_empty() {
        key
    } else {
        format!("{section}.{key}")
    })
}
