//! `homenode experiments`.

use crate::common::*;

const TINY: &str = r#"
name = "tiny"
title = "tiny numa_test"
machine = "nodes=2,cpus-per-node=2"
schedulers = ["o1", "aa"]
reps = 1

[numa_test]
tasks = [2]
problem_size = 20000
tables = ["average_user_time", "elapsed_time"]
"#;

#[test]
fn lists_the_shipped_experiments() {
    let out = ok(&["experiments", "list"]);
    for n in [
        "azusa-a-to-f",
        "tx7-node-affine",
        "wildfire-pmqs-vs-aa",
        "light-load-2020",
        "oltp-numa",
        "autonuma-bench",
        "convergence",
    ] {
        assert!(out.contains(n), "{out}");
    }
}

#[test]
fn runs_one_and_writes_report_charts_and_json() {
    let file = scratch_in("exp-ok", "tiny.toml", TINY);
    let dir = std::path::Path::new(&file)
        .parent()
        .expect("dir")
        .to_path_buf();
    let out = dir.join("out");
    let d = dir.to_string_lossy().into_owned();
    let o = out.to_string_lossy().into_owned();
    let md = ok(&["experiments", "--dir", &d, "run", "tiny", "--out", &o]);
    assert!(
        md.contains("# tiny numa_test") && md.contains("| N | `o1` | `aa` |"),
        "{md}"
    );
    for f in [
        "report.md",
        "results.json",
        "average_user_time.svg",
        "elapsed_time.svg",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let run_json = || {
        ok(&[
            "experiments",
            "--dir",
            &d,
            "run",
            "tiny",
            "--out",
            &o,
            "--json",
        ])
    };
    let json = run_json();
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["spec"]["name"], "tiny");
    // Same seed, same bytes.
    assert_eq!(json, run_json());
}

#[test]
fn bad_experiment_file_is_one_line() {
    let file = scratch_in("exp-bad", "bad.toml", &TINY.replace("reps = 1", "repz = 1"));
    let dir = std::path::Path::new(&file)
        .parent()
        .expect("dir")
        .to_string_lossy()
        .into_owned();
    fails_at_runtime(
        &["experiments", "--dir", &dir, "list"],
        &["bad.toml:6:", "repz"],
    );
    fails_with(
        &["experiments", "run", "nope"],
        &["unknown experiment `nope`", "azusa-a-to-f"],
    );
    fails_with(&["experiments", "run"], &["--all"]);
}

const TINY_STUDY: &str = r#"
name = "tiny-study"
title = "tiny convergence study"
machine = "nodes=2,cpus-per-node=2"

[study]
kind = "convergence"
shapes = ["2x1"]
modes = ["on"]
watch_s = 1
"#;

#[test]
fn runs_a_study_and_refuses_a_bad_study_key() {
    let file = scratch_in("exp-study", "study.toml", TINY_STUDY);
    let dir = std::path::Path::new(&file)
        .parent()
        .expect("dir")
        .to_path_buf();
    let d = dir.to_string_lossy().into_owned();
    let o = dir.join("out").to_string_lossy().into_owned();
    let run = || ok(&["experiments", "--dir", &d, "run", "tiny-study", "--out", &o]);
    let md = run();
    assert!(
        md.contains("| processes x threads |") && md.contains("| 2x1 | on |"),
        "{md}"
    );
    assert_eq!(md, run());
    for f in ["report.md", "results.json"] {
        assert!(dir.join("out").join(f).is_file(), "{f} missing");
    }
    let bad = scratch_in(
        "exp-study-bad",
        "bad.toml",
        &TINY_STUDY.replace("watch_s = 1", "watch = 1"),
    );
    let bd = std::path::Path::new(&bad)
        .parent()
        .expect("dir")
        .to_string_lossy()
        .into_owned();
    fails_at_runtime(
        &["experiments", "--dir", &bd, "list"],
        &["bad.toml:10:", "watch"],
    );
}
