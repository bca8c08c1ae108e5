//! Experiments: the classic comparisons, each described by a TOML file in `experiments/`,
//! run on the simulator and written up as a markdown report with SVG charts and a JSON
//! document.
//!
//! Two kinds exist: a numa_test matrix (schedulers x task counts x repetitions, summarised as
//! the benchmark's own tables) and a mix of kernel builds and bonnie processes (the builds'
//! wall times per scheduler). Every repetition has its own seed derived from the experiment's
//! seed, the same for every scheduler; runs go in parallel but results are gathered in a fixed
//! order, so the same file and seed always give the same bytes.

mod assumptions;
mod mixrun;
mod numa;
mod report;
pub mod spec;
mod svg;

pub use mixrun::{BuildTimes, MixCell};
pub use spec::{ExperimentSpec, Metric};

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
    #[error("experiment `{name}`: {msg}")]
    Run { name: String, msg: String },
}

/// The experiment files shipped with homenode, built into the binary.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "azusa-a-to-f.toml",
        include_str!("../../../../experiments/azusa-a-to-f.toml"),
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
    files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).map_err(|e| ExperimentError::Io {
                path: p.display().to_string(),
                msg: e.to_string(),
            })?;
            ExperimentSpec::parse(&text, &p.display().to_string())
        })
        .collect()
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

/// The results of one experiment.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub spec: ExperimentSpec,
    /// Effective options of every scheduler, in column order.
    pub options: Vec<(String, Vec<(String, String)>)>,
    pub numa_test: Vec<crate::numa_test::CellSummary>,
    pub mix: Vec<MixCell>,
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
}

/// Run an experiment; `reps` overrides the file's repetition count.
pub fn run(
    spec: &ExperimentSpec,
    reps: Option<u32>,
    tick: &(dyn Fn() + Sync),
) -> Result<Outcome, ExperimentError> {
    let mut spec = spec.clone();
    if let Some(r) = reps {
        spec.reps = r.max(1);
    }
    let fail = |msg: String| ExperimentError::Run {
        name: spec.name.clone(),
        msg,
    };
    let topo =
        std::sync::Arc::new(topo::resolve_machine(&spec.machine).map_err(|e| fail(e.to_string()))?);
    let mut options = Vec::new();
    for s in spec.sched_specs() {
        let built = crate::sched::build(&s, &topo).map_err(&fail)?;
        options.push((s.to_string(), built.options()));
    }
    let mut out = Outcome {
        options,
        numa_test: Vec::new(),
        mix: Vec::new(),
        markdown: String::new(),
        charts: Vec::new(),
        spec: spec.clone(),
    };
    if let Some(n) = &spec.numa_test {
        out.numa_test = numa::run(&spec, n, &topo, tick).map_err(fail)?;
    } else if let Some(m) = &spec.mix {
        out.mix = mixrun::run(&spec, m, &topo, tick).map_err(fail)?;
    }
    let (md, charts) = report::write(&out, &topo);
    out.markdown = md;
    out.charts = charts;
    Ok(out)
}
