//! The validation set: published NUMA-scheduling measurements (`validation/*.toml`, one case
//! each) run on the simulator and scored, so that a model change can be judged against real
//! numbers rather than against this host.
//!
//! - [`case`]: the case file format and its strict reader;
//! - [`run`]: every configuration of every case, in parallel, in a fixed order;
//! - [`score`]: effects, direction agreement, effect ratios and the summary;
//! - [`report`]: the table, the JSON document and the scatter plot.

pub mod case;
pub mod report;
pub mod run;
pub mod score;

pub use case::{Case, CaseError, Config, MetricKind, Source};
pub use run::{CaseResult, ConfigResult};
pub use score::{Comparison, Summary};

use std::path::Path;

/// Read every `*.toml` of `dir`, sorted by file name; each case is named by its file's stem.
pub fn load_all(dir: &Path) -> Result<Vec<Case>, CaseError> {
    let io = |path: &Path, msg: String| CaseError::Io {
        path: path.display().to_string(),
        msg,
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io(dir, e.to_string()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut cases: Vec<Case> = Vec::new();
    for p in &files {
        let text = crate::budget::read_input(p).map_err(|e| {
            io(
                p,
                match e {
                    crate::budget::InputError::Io { error, .. } => error.to_string(),
                    crate::budget::InputError::Refused { why, .. } => why,
                },
            )
        })?;
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let case = Case::parse(&text, &p.display().to_string(), &stem)?;
        if let Some(first) = cases.iter().find(|c| c.name == case.name) {
            return Err(CaseError::Duplicate {
                name: case.name.clone(),
                first: first.file.clone(),
                second: case.file.clone(),
            });
        }
        cases.push(case);
    }
    Ok(cases)
}

/// The cases named in `names`, in that order (all of them when `names` is empty).
pub fn select(all: &[Case], names: &[String]) -> Result<Vec<Case>, CaseError> {
    if names.is_empty() {
        return Ok(all.to_vec());
    }
    names
        .iter()
        .map(|n| {
            all.iter()
                .find(|c| &c.name == n)
                .cloned()
                .ok_or_else(|| CaseError::Unknown {
                    name: n.clone(),
                    available: all
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
        })
        .collect()
}
