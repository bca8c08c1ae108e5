//! Experiments: the classic comparisons, each described by a TOML file in `experiments/`,
//! run on the simulator and written up as a markdown report with SVG charts ([`crate::charts`]) and a JSON
//! document.
//!
//! Three kinds exist: a numa_test matrix (schedulers x task counts x repetitions, summarised as
//! the benchmark's own tables), a mix of kernel builds and bonnie processes (the builds'
//! wall times per scheduler), and a `[study]`: one of the NUMA-balancing studies of
//! [`crate::studies`], run once per machine with the file's seed. Every repetition has its own seed derived from the experiment's
//! seed, the same for every scheduler; runs go in parallel but results are gathered in a fixed
//! order, so the same file and seed always give the same bytes.

mod assumptions;
pub mod error;
pub mod mix_sweep;
mod mixrun;
mod numa;
mod report;
pub mod scoreboard;
pub mod scoreboard_report;
pub mod scoreboard_run;
pub mod spec;
mod study_report;
pub mod study_spec;
mod studyrun;
pub mod sweep;

pub use error::{RunFailure, SweepError, ValueError};
pub use mixrun::{BuildTimes, MixCell};
pub use scoreboard::ScoreboardSection;
pub use scoreboard_run::ScoreboardResults;
pub use spec::{ExperimentSpec, Metric};
pub use study_spec::{StudyKind, StudySection};
pub use studyrun::StudyResults;

use serde::Serialize;
use std::path::Path;

/// What can go wrong with an experiment; each is one line.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("{file}:{line}: {msg}")]
    Parse {
        file: String,
        line: usize,
        msg: String,
    },
    #[error("cannot read {path}: {msg}")]
    Io { path: String, msg: String },
    #[error("unknown experiment `{name}` (available: {available})")]
    Unknown { name: String, available: String },
    #[error("experiment `{name}`: {source}")]
    Run {
        name: String,
        source: Box<RunFailure>,
    },
    #[error("experiment `{name}`: {source}")]
    Chart {
        name: String,
        source: crate::charts::ChartError,
    },
    #[error("{second}: experiment name `{name}` is already used by {first}")]
    Duplicate {
        name: String,
        first: String,
        second: String,
    },
}

/// The experiment files shipped with homenode, built into the binary.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "autonuma-bench.toml",
        include_str!("../../../../experiments/autonuma-bench.toml"),
    ),
    (
        "azusa-a-to-f.toml",
        include_str!("../../../../experiments/azusa-a-to-f.toml"),
    ),
    (
        "convergence.toml",
        include_str!("../../../../experiments/convergence.toml"),
    ),
    (
        "light-load-2020.toml",
        include_str!("../../../../experiments/light-load-2020.toml"),
    ),
    (
        "oltp-numa.toml",
        include_str!("../../../../experiments/oltp-numa.toml"),
    ),
    (
        "placement.toml",
        include_str!("../../../../experiments/placement.toml"),
    ),
    (
        "tx7-node-affine.toml",
        include_str!("../../../../experiments/tx7-node-affine.toml"),
    ),
    (
        "wildfire-pmqs-vs-aa.toml",
        include_str!("../../../../experiments/wildfire-pmqs-vs-aa.toml"),
    ),
];

/// Read every `*.toml` of `dir` (sorted by file name), or the built-in files when `dir` is
/// None.
pub fn load_all(dir: Option<&Path>) -> Result<Vec<ExperimentSpec>, ExperimentError> {
    let Some(dir) = dir else {
        return BUILTIN
            .iter()
            .map(|(f, text)| ExperimentSpec::parse(text, &format!("experiments/{f}")))
            .collect();
    };
    let io = |e: std::io::Error| ExperimentError::Io {
        path: dir.display().to_string(),
        msg: e.to_string(),
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let specs = files
        .iter()
        .map(|p| {
            let text = crate::budget::read_input(p).map_err(|e| ExperimentError::Io {
                path: p.display().to_string(),
                msg: match e {
                    crate::budget::InputError::Io { error, .. } => error.to_string(),
                    crate::budget::InputError::Refused { why, .. } => why,
                },
            })?;
            ExperimentSpec::parse(&text, &p.display().to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    no_two_named_alike(&specs, &files)?;
    Ok(specs)
}

/// Two files with the same `name` would write the same output directory.
fn no_two_named_alike(
    specs: &[ExperimentSpec],
    files: &[std::path::PathBuf],
) -> Result<(), ExperimentError> {
    for (i, s) in specs.iter().enumerate() {
        if let Some(j) = specs[..i].iter().position(|o| o.name == s.name) {
            return Err(ExperimentError::Duplicate {
                name: s.name.clone(),
                first: files[j].display().to_string(),
                second: files[i].display().to_string(),
            });
        }
    }
    Ok(())
}

/// Find an experiment by name.
pub fn find(all: &[ExperimentSpec], name: &str) -> Result<ExperimentSpec, ExperimentError> {
    all.iter()
        .find(|e| e.name == name)
        .cloned()
        .ok_or_else(|| ExperimentError::Unknown {
            name: name.into(),
            available: all
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// What made a report: homenode's version, the command line and the seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GeneratedBy {
    pub version: String,
    pub command: String,
    pub seed: u64,
}

/// The results of one experiment.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// What made the report, once [`Outcome::stamp`] has recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_by: Option<GeneratedBy>,
    pub spec: ExperimentSpec,
    /// Effective options of every scheduler, in column order.
    pub options: Vec<(String, Vec<(String, String)>)>,
    /// The kernel base each scheduler runs on in the model, in column order (report only).
    #[serde(skip)]
    pub kernels: Vec<&'static str>,
    /// numa_test: the size every cell ran at (PROBLEMSIZE, passes, chosen automatically or not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa_size: Option<crate::numa_test::JobSize>,
    pub numa_test: Vec<crate::numa_test::CellSummary>,
    pub mix: Vec<MixCell>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub study: Option<StudyResults>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scoreboard: Option<ScoreboardResults>,
    /// Sensitivity sweeps, in the file's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sweeps: Vec<sweep::SweepResult>,
    /// Sensitivity sweeps of a `[mix]` experiment, in the file's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mix_sweeps: Vec<mix_sweep::MixSweepResult>,
    /// Markdown report.
    #[serde(skip)]
    pub markdown: String,
    /// SVG charts: (file name, content).
    #[serde(skip)]
    pub charts: Vec<(String, String)>,
}

impl Outcome {
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Records what made the report, `version` and `command` (the command line as typed),
    /// in the JSON (`generated_by`) and in the markdown, under the title.
    pub fn stamp(&mut self, version: &str, command: &str) {
        let by = GeneratedBy {
            version: version.into(),
            command: command.into(),
            seed: self.spec.seed,
        };
        let fence = if command.contains('`') { "``" } else { "`" };
        let line = format!(
            "Generated by homenode {version} with {fence}{command}{fence} (seed {}).\n\n",
            by.seed
        );
        let at = self.markdown.find("\n\n").map_or(0, |i| i + 2);
        self.markdown.insert_str(at, &line);
        self.generated_by = Some(by);
    }
}

/// How many simulation runs [`run`] makes (how often it calls its `tick`), with `reps`
/// overriding the file's repetitions as there: the figure a progress bar counts up to.
pub fn planned_runs(spec: &ExperimentSpec, reps: Option<u32>) -> u64 {
    let reps = u64::from(reps.unwrap_or(spec.reps).max(1));
    let columns = spec.schedulers.len() as u64;
    if let Some(b) = &spec.scoreboard {
        return scoreboard_run::planned(b, reps as u32);
    }
    if let Some(s) = &spec.study {
        return studyrun::planned(s, &spec.machine);
    }
    if let Some(n) = &spec.numa_test {
        let sweeps: u64 = spec
            .sweep
            .iter()
            .map(|w| (w.values.len() * w.tasks.len()) as u64 * u64::from(w.reps))
            .sum();
        return columns * n.tasks.len() as u64 * reps + sweeps;
    }
    let sweeps: u64 = spec
        .mix_sweep
        .iter()
        .map(|w| w.values.len() as u64 * columns * u64::from(w.reps))
        .sum();
    columns * reps + sweeps
}

/// Run an experiment; `reps` overrides the file's repetition count (a study has none: there
/// it is ignored).
pub fn run(
    spec: &ExperimentSpec,
    reps: Option<u32>,
    tick: &(dyn Fn() + Sync),
) -> Result<Outcome, ExperimentError> {
    let mut spec = spec.clone();
    if let Some(r) = reps
        && spec.study.is_none()
    {
        spec.reps = r.max(1);
    }
    let fail = |e: RunFailure| ExperimentError::Run {
        name: spec.name.clone(),
        source: Box::new(e),
    };
    if let Some(b) = &spec.scoreboard {
        return run_scoreboard(&spec, b, tick);
    }
    let topo = std::sync::Arc::new(
        topo::resolve_machine(&spec.machine).map_err(|e| fail(RunFailure::from(e)))?,
    );
    let mut options = Vec::new();
    let mut kernels = Vec::new();
    let names: Vec<String> = match &spec.study {
        Some(s) => s.linux_specs(),
        None => spec.schedulers.clone(),
    };
    for name in names {
        let s = crate::sched::SchedSpec::parse(&name).map_err(|e| fail(e.into()))?;
        let built = crate::sched::build(&s, &topo).map_err(|e| fail(e.into()))?;
        options.push((s.to_string(), built.options()));
        kernels.push(built.kernel_base());
    }
    let mut out = Outcome {
        generated_by: None,
        options,
        kernels,
        numa_size: None,
        numa_test: Vec::new(),
        mix: Vec::new(),
        study: None,
        scoreboard: None,
        sweeps: Vec::new(),
        mix_sweeps: Vec::new(),
        markdown: String::new(),
        charts: Vec::new(),
        spec: spec.clone(),
    };
    if let Some(n) = &spec.numa_test {
        let size = numa::size(n, &topo).map_err(|e| fail(e.into()))?;
        out.numa_size = Some(size);
        out.numa_test = numa::run(&spec, n, &size, &topo, tick).map_err(|e| fail(e.into()))?;
        for w in &spec.sweep {
            out.sweeps
                .push(w.run(n, &size, spec.seed, &topo, tick).map_err(&fail)?);
        }
    } else if let Some(m) = &spec.mix {
        out.mix = mixrun::run(&spec, m, &topo, tick).map_err(&fail)?;
        for w in &spec.mix_sweep {
            out.mix_sweeps
                .push(w.run(&spec, m, &topo, tick).map_err(&fail)?);
        }
    } else if let Some(s) = &spec.study {
        out.study = Some(studyrun::run(s, &spec.machine, spec.seed, tick).map_err(fail)?);
    }
    let (md, charts) = match &out.study {
        Some(r) => study_report::write(&out, r),
        None => report::write(&out, &topo),
    }
    .map_err(|source| ExperimentError::Chart {
        name: spec.name.clone(),
        source,
    })?;
    out.markdown = md;
    out.charts = charts;
    Ok(out)
}

/// A `[scoreboard]`: every row's configurations, then its report. A configuration that
/// cannot run is reported as failed in its row; it does not stop the board.
fn run_scoreboard(
    spec: &ExperimentSpec,
    b: &ScoreboardSection,
    tick: &(dyn Fn() + Sync),
) -> Result<Outcome, ExperimentError> {
    let results = scoreboard_run::run(b, spec.reps, spec.seed, tick);
    let mut out = Outcome {
        generated_by: None,
        spec: spec.clone(),
        options: Vec::new(),
        kernels: Vec::new(),
        numa_size: None,
        numa_test: Vec::new(),
        mix: Vec::new(),
        study: None,
        scoreboard: None,
        sweeps: Vec::new(),
        mix_sweeps: Vec::new(),
        markdown: String::new(),
        charts: Vec::new(),
    };
    let (md, charts) =
        scoreboard_report::write(&out, b, &results).map_err(|source| ExperimentError::Chart {
            name: spec.name.clone(),
            source,
        })?;
    out.scoreboard = Some(results);
    out.markdown = md;
    out.charts = charts;
    Ok(out)
}
