//! Validation case files (`validation/*.toml`): one published comparison each, read strictly.
//! Every error is one line naming the file, the line and the key.
//!
//! A case names its source, a machine, a workload, the figure compared and its unit, and the
//! configurations (CPU scheduler with options, node-level placement, binding) with the
//! figure the source published for each. It never sets a model constant: what the source
//! leaves open is written down in `assumptions`.

use crate::experiments::error::key_line;
use crate::experiments::spec::{key_at, line_of};
use crate::placement::PlacementSpec;
use crate::sched::{self, SchedSpec};
use crate::workload::autonuma::Bind;
use serde::{Deserialize, Serialize};

/// A case file that cannot be used, or a case that cannot be found; one line each.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CaseError {
    #[error("{file}:{line}: {msg}")]
    Parse {
        file: String,
        line: usize,
        msg: String,
    },
    #[error("cannot read {path}: {msg}")]
    Io { path: String, msg: String },
    #[error("unknown case `{name}` (available: {available})")]
    Unknown { name: String, available: String },
    #[error("{second}: case name `{name}` is already used by {first}")]
    Duplicate {
        name: String,
        first: String,
        second: String,
    },
}

/// Where the published figures come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub title: String,
    pub author: String,
    /// As precise as the source gives it (`2014-01-17`, `2015-10`).
    pub date: String,
    pub url: String,
    /// Which table, figure or paragraph of the source holds the numbers.
    #[serde(default)]
    pub locator: String,
}

/// The figure taken from each run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetricKind {
    /// Wall time of the run (last task's exit), in `unit` (s, ms, us, ns), divided by `work`.
    Elapsed,
    /// User time of all tasks, as `elapsed`.
    User,
    /// System time of all tasks, as `elapsed`.
    Sys,
    /// `work` (in `unit` x seconds) over the wall time in seconds: a throughput.
    Rate,
}

impl MetricKind {
    /// Whether a larger figure is better.
    pub fn higher_is_better(self) -> bool {
        self == MetricKind::Rate
    }
}

/// The built-in workloads a case can name instead of a file.
pub const BUILTIN_WORKLOADS: &[&str] = &["numa01", "numa02", "light-load"];

/// One configuration of a case and its published figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Short label (as the source names the configuration).
    pub name: String,
    /// Scheduler spec, as `homenode sim --sched` takes it.
    pub sched: String,
    /// Node-level placement, as `--placement` takes it (`none`: no placement layer).
    #[serde(default = "none")]
    pub placement: String,
    /// This configuration's workload instead of the case's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// numa01/numa02 binding: `free`, `hard` or `inverse`.
    #[serde(default = "free")]
    pub bind: String,
    /// The figure the source published, in the case's unit.
    pub published: f64,
    /// The spread the source gives (one standard deviation or half the min-max range, as
    /// `spread_kind` says), in the case's unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
}

fn none() -> String {
    "none".into()
}

fn free() -> String {
    "free".into()
}

fn one() -> f64 {
    1.0
}

fn yes() -> bool {
    true
}

fn seed1() -> u64 {
    1
}

/// One validation case as written in its file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The file's stem; set by the loader.
    #[serde(skip)]
    pub name: String,
    /// The file's path; set by the loader.
    #[serde(skip)]
    pub file: String,
    pub title: String,
    pub source: Source,
    /// A preset, a spec file or a synthetic spec (`homenode machines`).
    pub machine: String,
    /// A built-in workload (`numa01`, `numa02`, `light-load`) or a workload file.
    pub workload: String,
    /// numa01/numa02: times each thread zeroes its memory (the run's length only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loops: Option<u32>,
    pub metric: MetricKind,
    /// Take the figure from this program's tasks only (its first start to its last exit, or
    /// their user/system time) instead of the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    pub unit: String,
    /// Operations per run (time metrics) or work per run in `unit` x s (`rate`).
    #[serde(default = "one")]
    pub work: f64,
    /// Whether the run is the source's size, so that absolute figures compare; false when
    /// only the effects between configurations can (a shortened run).
    #[serde(default = "yes")]
    pub absolute: bool,
    /// What `spread` means (`stddev`, `half-range`), when configurations give one.
    #[serde(default)]
    pub spread_kind: String,
    /// Part of the quick cut `homenode validate --ci` runs.
    #[serde(default)]
    pub ci: bool,
    #[serde(default = "seed1")]
    pub seed: u64,
    /// What the source does not say and the case assumes.
    pub assumptions: Vec<String>,
    /// Configurations; every other one is compared with the first.
    #[serde(rename = "config")]
    pub configs: Vec<Config>,
}

/// Time units a time metric can be given in, with seconds per unit.
const TIME_UNITS: [(&str, f64); 4] = [("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)];

impl Case {
    /// Parse a case file; `name` is the file's stem, `file` its path (for messages).
    pub fn parse(text: &str, file: &str, name: &str) -> Result<Case, CaseError> {
        let mut case: Case = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, |s| line_of(text, s.start));
            let msg = e.message().replace('\n', " ");
            CaseError::Parse {
                file: file.into(),
                line,
                msg: match key_at(text, line) {
                    Some(key) if !msg.contains(&format!("`{key}`")) => format!("{key}: {msg}"),
                    _ => msg,
                },
            }
        })?;
        case.name = name.into();
        case.file = file.into();
        case.check(text)?;
        Ok(case)
    }

    /// Seconds per `unit` for time metrics (`None` for `rate`).
    pub fn seconds_per_unit(&self) -> Option<f64> {
        if self.metric == MetricKind::Rate {
            return None;
        }
        TIME_UNITS
            .iter()
            .find(|(u, _)| *u == self.unit)
            .map(|(_, f)| *f)
    }

    fn check(&self, text: &str) -> Result<(), CaseError> {
        let err = |key: &str, line: usize, msg: String| CaseError::Parse {
            file: self.file.clone(),
            line,
            msg: format!("{key}: {msg}"),
        };
        let top = |key: &str, msg: String| err(key, key_line(text, key), msg);
        if self.metric != MetricKind::Rate && self.seconds_per_unit().is_none() {
            return Err(top(
                "unit",
                format!("`{}` is not a time unit (valid: s, ms, us, ns)", self.unit),
            ));
        }
        if !(self.work.is_finite() && self.work > 0.0) {
            return Err(top("work", "must be a number > 0".into()));
        }
        if self.loops == Some(0) {
            return Err(top("loops", "must be at least 1".into()));
        }
        check_workload(&self.workload).map_err(|m| top("workload", m.to_string()))?;
        let topo =
            topo::resolve_machine(&self.machine).map_err(|e| top("machine", e.to_string()))?;
        if self.configs.len() < 2 {
            return Err(top(
                "title",
                "give at least two [[config]] tables (the first is the baseline)".into(),
            ));
        }
        for (i, c) in self.configs.iter().enumerate() {
            // The line of this config's key: the n-th `key =` after the n-th [[config]].
            let at = |key: &str| config_key_line(text, i, key);
            let key = |k: &str| format!("config[{}].{k}", i + 1);
            if self.configs[..i].iter().any(|o| o.name == c.name) {
                return Err(err(
                    &key("name"),
                    at("name"),
                    format!("`{}` is used twice", c.name),
                ));
            }
            let spec = SchedSpec::parse(&c.sched)
                .map_err(|e| err(&key("sched"), at("sched"), e.to_string()))?;
            sched::build(&spec, &topo)
                .map_err(|e| err(&key("sched"), at("sched"), e.to_string()))?;
            if c.placement != "none" {
                PlacementSpec::parse(&c.placement)
                    .map_err(|e| err(&key("placement"), at("placement"), e.to_string()))?;
            }
            if let Some(w) = &c.workload {
                check_workload(w)
                    .map_err(|m| err(&key("workload"), at("workload"), m.to_string()))?;
            }
            parse_bind(&c.bind).map_err(|m| err(&key("bind"), at("bind"), m.to_string()))?;
            if !(c.published.is_finite() && c.published > 0.0) {
                return Err(err(
                    &key("published"),
                    at("published"),
                    "must be a number > 0".into(),
                ));
            }
            if c.spread.is_some_and(|s| !(s.is_finite() && s >= 0.0)) {
                return Err(err(
                    &key("spread"),
                    at("spread"),
                    "must be a number >= 0".into(),
                ));
            }
        }
        Ok(())
    }

    /// The workload of configuration `c`.
    pub fn workload_of<'a>(&'a self, c: &'a Config) -> &'a str {
        c.workload.as_deref().unwrap_or(&self.workload)
    }
}

/// A case's workload or binding that names nothing the runner knows.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CaseValueError {
    #[error("`{given}` is neither a built-in workload ({valid}) nor a .toml file")]
    Workload { given: String, valid: String },
    #[error("`{given}` is not a binding (valid: free, hard, inverse)")]
    Bind { given: String },
}

/// A built-in workload name or a path to a `.toml` file.
fn check_workload(w: &str) -> Result<(), CaseValueError> {
    if BUILTIN_WORKLOADS.contains(&w) || w.ends_with(".toml") {
        Ok(())
    } else {
        Err(CaseValueError::Workload {
            given: w.to_string(),
            valid: BUILTIN_WORKLOADS.join(", "),
        })
    }
}

/// `free`, `hard` or `inverse`.
pub fn parse_bind(s: &str) -> Result<Bind, CaseValueError> {
    match s {
        "free" => Ok(Bind::Free),
        "hard" => Ok(Bind::HardBind),
        "inverse" => Ok(Bind::InverseBind),
        _ => Err(CaseValueError::Bind {
            given: s.to_string(),
        }),
    }
}

/// Line of `key = ...` inside the `i`-th (from 0) `[[config]]` table (0 if not found).
fn config_key_line(text: &str, i: usize, key: &str) -> usize {
    let mut seen = 0;
    let mut inside = false;
    for (n, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            inside = t == "[[config]]" && {
                seen += 1;
                seen == i + 1
            };
            continue;
        }
        if inside
            && t.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
        {
            return n + 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"title = "t"
machine = "xeon2s"
workload = "numa01"
metric = "elapsed"
unit = "s"
assumptions = []

[source]
title = "s"
author = "a"
date = "2014"
url = "https://example.org/"

[[config]]
name = "off"
sched = "linux:numa_balancing=off"
published = 100.0

[[config]]
name = "on"
sched = "linux:numa_balancing=on"
published = 80.0
spread = 2.5
"#;

    fn parse(text: &str) -> Result<Case, CaseError> {
        Case::parse(text, "validation/x.toml", "x")
    }

    fn error_line(text: &str) -> String {
        let e = parse(text).unwrap_err().to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        e
    }

    #[test]
    fn a_good_case_parses_with_defaults() {
        let c = parse(GOOD).unwrap();
        assert_eq!(c.name, "x");
        assert_eq!(c.configs.len(), 2);
        assert_eq!(c.configs[0].placement, "none");
        assert_eq!(c.configs[1].spread, Some(2.5));
        assert_eq!(c.work, 1.0);
        assert!(c.absolute && !c.ci);
        assert_eq!(c.seconds_per_unit(), Some(1.0));
    }

    #[test]
    fn an_unknown_key_names_file_line_and_key() {
        let text = GOOD.replace("unit = \"s\"", "unit = \"s\"\nfudge = 1.5");
        let e = error_line(&text);
        assert!(e.starts_with("validation/x.toml:6:"), "{e}");
        assert!(e.contains("fudge"), "{e}");
    }

    #[test]
    fn a_bad_scheduler_names_the_config_and_its_line() {
        let text = GOOD.replace("linux:numa_balancing=on", "linux:numa_balancing=maybe");
        let e = error_line(&text);
        assert!(
            e.starts_with("validation/x.toml:21: config[2].sched:"),
            "{e}"
        );
        assert!(e.contains("maybe"), "{e}");
    }

    #[test]
    fn bad_values_are_one_line_each() {
        let cases = [
            (GOOD.replace("unit = \"s\"", "unit = \"hours\""), "unit:"),
            (
                GOOD.replace("published = 80.0", "published = -1.0"),
                "config[2].published",
            ),
            (
                GOOD.replace("workload = \"numa01\"", "workload = \"numa9\""),
                "workload:",
            ),
            (
                GOOD.replace("published = 80.0", "published = 80.0\nbind = \"tight\""),
                "config[2].bind",
            ),
            (
                GOOD.replace("name = \"on\"", "name = \"off\""),
                "used twice",
            ),
            (
                GOOD.replace("published = 100.0", "published = \"a lot\""),
                "published",
            ),
        ];
        for (text, want) in cases {
            let e = error_line(&text);
            assert!(e.starts_with("validation/x.toml:"), "{e}");
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    #[test]
    fn one_configuration_is_not_a_comparison() {
        let cut = GOOD.find("[[config]]\nname = \"on\"").unwrap();
        let e = error_line(&GOOD[..cut]);
        assert!(e.contains("at least two [[config]]"), "{e}");
    }
}
