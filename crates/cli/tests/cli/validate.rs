//! `homenode validate`.

use crate::common::*;

/// The repository's validation set.
const SET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../validation");

#[test]
fn the_ci_cut_runs_and_prints_the_summary() {
    let out = ok(&["validate", "--ci", "--dir", SET]);
    let summary = out
        .lines()
        .find(|l| l.starts_with("validation: "))
        .unwrap_or_else(|| panic!("no summary line in:\n{out}"));
    for w in ["cases", "direction agrees", "within 2x", "within 1.3x"] {
        assert!(summary.contains(w), "{summary}");
    }
    assert!(!summary.contains("FAILED"), "{out}");
    assert!(out.starts_with("case "), "{out}");
}

const CASE: &str = r#"title = "tiny"
machine = "nodes=2,cpus-per-node=2"
workload = "w/pair.toml"
metric = "elapsed"
unit = "ms"
assumptions = ["made up for the test"]

[source]
title = "none"
author = "nobody"
date = "2026"
url = "https://example.org/"

[[config]]
name = "off"
sched = "linux:numa_balancing=off"
published = 10.0

[[config]]
name = "bound"
sched = "linux:numa_balancing=off"
workload = "w/pair-bound.toml"
published = 8.0
"#;

const PAIR: &str = r#"name = "pair"
[[program]]
name = "w"
job = true
region = [{ name = "a", mib = 8 }]
phase = [
  { touch = "a" },
  { memory = { ops = 2e5, cycles = 2, access = [{ region = "a", pattern = "random", bytes = 8 }] } },
]
[[launch]]
program = "w"
count = 2
"#;

#[test]
fn writes_table_json_and_plot_the_same_every_time() {
    // Files of an earlier run would be read as cases.
    let _ = std::fs::remove_dir_all(concat!(env!("CARGO_TARGET_TMPDIR"), "/validate-ok"));
    let file = scratch_in("validate-ok", "tiny.toml", CASE);
    scratch_in("validate-ok/w", "pair.toml", PAIR);
    scratch_in(
        "validate-ok/w",
        "pair-bound.toml",
        &PAIR.replace("mib = 8 }", "mib = 8, policy = \"interleave\" }"),
    );
    let dir = std::path::Path::new(&file).parent().expect("dir");
    let d = dir.to_string_lossy().into_owned();
    let out = dir.join("out");
    let o = out.to_string_lossy().into_owned();
    let text = ok(&["validate", "--dir", &d, "--out", &o]);
    assert!(text.contains("tiny") && text.contains("bound"), "{text}");
    assert!(
        text.contains("validation: 1 cases, 1 comparisons"),
        "{text}"
    );
    for f in ["report.txt", "results.json", "effects.svg"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let json = ok(&["validate", "tiny", "--dir", &d, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["summary"]["comparisons"], 1);
    assert_eq!(v["cases"][0]["configs"][1]["published"], 8.0);
    assert_eq!(json, ok(&["validate", "tiny", "--dir", &d, "--json"]));
}

#[test]
fn a_bad_case_file_or_name_is_one_line() {
    let file = scratch_in(
        "validate-bad",
        "bad.toml",
        &CASE.replace("published = 8.0", "published = 8.0\nmodel_fudge = 2"),
    );
    let d = std::path::Path::new(&file)
        .parent()
        .expect("dir")
        .to_string_lossy()
        .into_owned();
    fails_at_runtime(&["validate", "--dir", &d], &["bad.toml:24:", "model_fudge"]);
    fails_with(
        &["validate", "nope", "--dir", SET],
        &["unknown case `nope`", "kunpeng-memset-numab"],
    );
}
