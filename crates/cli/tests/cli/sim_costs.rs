//! `homenode sim` with `--machine-set`: the cost model's facts change a run, and their errors
//! name the culprit; names from input files reach the terminal escaped.

use crate::common::*;
use crate::sim::{SMALL, fails};

/// The jobs' mean user time of a one-rep, no-hackbench numa_test on SMALL.
fn user_time(extra: &[&str]) -> f64 {
    let mut args = vec![
        "sim",
        "numa-test",
        "--machine",
        SMALL,
        "--sched",
        "o1",
        "--tasks",
        "2",
        "--reps",
        "1",
        "--size",
        "200000",
        "--passes",
        "5",
        "--no-disturb",
        "--json",
    ];
    args.extend_from_slice(extra);
    let v: serde_json::Value = serde_json::from_str(&ok(&args)).expect("json");
    v["results"][0]["avg_user_s"]["mean"]
        .as_f64()
        .expect("avg_user_s")
}

#[test]
fn machine_set_changes_the_cost_model() {
    let base = user_time(&[]);
    // More stream lines in flight: the arrays' streams cost less.
    let prefetch = user_time(&["--machine-set", "stream_mlp=64"]);
    assert!(prefetch < base, "{prefetch} !< {base}");
    // A cost per LLC hit: the random array's hits now cost time.
    let hits = user_time(&["--machine-set", "llc_latency_ns=40"]);
    assert!(hits > base, "{hits} !> {base}");
    // A tiny LLC: the random accesses miss.
    let small = user_time(&["--machine-set", "llc_kib=64"]);
    assert!(small > base, "{small} !> {base}");
}

/// A CPU's own part of the LLC (`llc_private`): a job alone holds only its CPU's part, where a
/// shared LLC gives it all; two jobs on the two CPUs hold the same either way.
#[test]
fn a_private_part_of_the_llc_is_all_a_lone_job_holds() {
    let u = |tasks: &str, sets: &[&str]| {
        let mut args = vec![
            "sim",
            "numa-test",
            "--machine",
            "nodes=1,cpus-per-node=2",
            // Spread at fork, so two jobs run on the two CPUs; passes enough that the
            // memory phase dominates the first touches.
            "--sched",
            "linux",
            "--tasks",
            tasks,
            "--reps",
            "1",
            "--size",
            "200000",
            "--passes",
            "50",
            "--no-disturb",
            "--json",
        ];
        for s in sets {
            args.extend(["--machine-set", s]);
        }
        let v: serde_json::Value = serde_json::from_str(&ok(&args)).expect("json");
        v["results"][0]["avg_user_s"]["mean"]
            .as_f64()
            .expect("avg_user_s")
    };
    // The 1.6 MB array fits 2 MiB, not 1 MiB.
    let shared = ["llc_kib=2048", "llc_private=0"];
    let private = ["llc_kib=1024", "llc_private=1"];
    let (alone_shared, alone_private) = (u("1", &shared), u("1", &private));
    assert!(
        alone_private > 1.05 * alone_shared,
        "{alone_private} !> 1.05 x {alone_shared}"
    );
    // Alike but for the first touches, during which the other job alone holds a shared LLC.
    let (two_shared, two_private) = (u("2", &shared), u("2", &private));
    assert!(
        (two_private / two_shared - 1.0).abs() < 0.02,
        "{two_private} vs {two_shared}"
    );
}

#[test]
fn machine_set_errors_name_the_culprit() {
    let args = |v: &'static str| ["sim", "numa-test", "--machine", SMALL, "--machine-set", v];
    fails(&args("mpl=3"), &["mpl", "stream_mlp", "llc_kib"]);
    fails(&args("mlp"), &["`mlp`", "PARAM=VALUE"]);
    fails(&args("mlp=-1"), &["mlp=-1", "positive"]);
    fails(&args("mlp=x"), &["mlp=x", "positive"]);
}

#[test]
fn machine_set_bandwidth_slows_a_bandwidth_bound_run() {
    // SMALL's nodes get 9.8 GB/s (176/36 per CPU); at 0.5 GB/s the jobs queue for it.
    let base = user_time(&[]);
    let narrow = user_time(&["--machine-set", "bandwidth_gbps=0.5"]);
    assert!(narrow > 1.5 * base, "{narrow} !> 1.5 x {base}");
    // Halving it again slows them again: the run is bandwidth-bound.
    let narrower = user_time(&["--machine-set", "bandwidth_gbps=0.25"]);
    assert!(narrower > narrow, "{narrower} !> {narrow}");
    // Far more than the jobs can use changes little.
    let wide = user_time(&["--machine-set", "bandwidth_gbps=10000"]);
    assert!(wide <= base, "{wide} !<= {base}");
}

#[test]
fn machine_set_bandwidth_errors_give_the_range() {
    let args = |v: &'static str| ["sim", "numa-test", "--machine", SMALL, "--machine-set", v];
    for v in [
        "bandwidth_gbps=0",
        "bandwidth_gbps=-3",
        "bandwidth_gbps=0.01",
        "bandwidth_gbps=1e9",
        "bandwidth_gbps=fast",
    ] {
        fails(&args(v), &[v, "GB/s from 0.1 to 100000"]);
    }
    fails(&args("bandwidth=5"), &["`bandwidth`", "bandwidth_gbps"]);
}

/// Names read from a spec file reach the report: an escape sequence or a bidi override in
/// them must reach the terminal as text, not as a command to it.
#[test]
fn names_from_input_files_reach_the_terminal_escaped() {
    let spec = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../machines/azusa16.toml"
    ))
    .expect("azusa16.toml");
    let mut lines: Vec<String> = spec.lines().map(String::from).collect();
    for l in &mut lines {
        if l.starts_with("name = ") {
            *l = r#"name = "evil\u001b[2J\u202e""#.into();
        } else if l.starts_with("description = ") {
            *l = r#"description = "d\u001b[31m""#.into();
        }
    }
    let dir = std::env::temp_dir().join(format!("homenode-escape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("evil.toml");
    std::fs::write(&file, lines.join("\n")).expect("write");
    let file = file.to_str().expect("utf-8 path");
    for args in [
        vec!["machines", file],
        vec![
            "sim",
            "numa-test",
            "--machine",
            file,
            "--tasks",
            "2",
            "--reps",
            "1",
            "--passes",
            "1",
            "--no-disturb",
            "--summary-only",
        ],
    ] {
        let o = homenode(&args);
        let out = stdout(&o);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(out.contains(r"evil\u001b[2J\u202e"), "{args:?}: {out}");
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{202e}'),
            "{args:?}: {out:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
