//! Tests of `homenode bench`: numa-test on this host with small jobs, its JSON schema (the
//! simulator's), failed workers, `bench compare`, and the one-line errors of bad input.

use crate::common::*;

/// Small jobs: 20,000 elements, 2 passes.
const SMALL: [&str; 4] = ["--size", "20000", "--passes", "2"];

/// Succeeds without a word on stderr; returns stdout.
fn ok_quiet(args: &[&str]) -> String {
    let o = homenode(args);
    assert!(
        o.status.success(),
        "homenode {args:?} failed ({:?}): {}",
        o.status.code(),
        stderr(&o)
    );
    assert!(stderr(&o).is_empty(), "homenode {args:?}: {}", stderr(&o));
    stdout(&o)
}

fn fails(args: &[&str], want: &[&str]) -> (String, String) {
    fails_with(args, want)
}

fn scratch(name: &str, text: &str) -> String {
    scratch_in("bench-cli-tests", name, text)
}

fn with(base: &[&'static str], more: &[&'static str]) -> Vec<&'static str> {
    let mut v = base.to_vec();
    v.extend_from_slice(more);
    v
}

#[test]
fn numa_test_json_has_the_simulators_schema() {
    let args = with(
        &[
            "bench",
            "numa-test",
            "1,2",
            "--reps",
            "2",
            "--no-disturb",
            "--json",
        ],
        &SMALL,
    );
    let out = ok_quiet(&with(&args, &["--fake-numa", "2"]));
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON document");
    let mut keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "disturb",
            "machine",
            "passes",
            "problem_size",
            "results",
            "seed"
        ]
    );
    assert_eq!(v["machine"], "host,fake-numa=2");
    assert_eq!(v["problem_size"], 20000);
    assert_eq!(v["passes"], 2);
    assert_eq!(v["disturb"], false);
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for (r, n) in results.iter().zip([1, 2]) {
        assert_eq!(r["scheduler"], "host");
        assert_eq!(r["tasks"], n);
        assert_eq!(r["reps"], 2);
        for key in [
            "avg_user_s",
            "elapsed_s",
            "total_user_s",
            "total_sys_s",
            "hackbench_s",
        ] {
            let mean = r[key]["mean"].as_f64().expect("mean");
            let std = r[key]["std"].as_f64().expect("std");
            assert!(mean >= 0.0 && std >= 0.0, "{key}: {r}");
        }
        let jobs = r["jobs"].as_array().expect("jobs");
        assert_eq!(jobs.len(), n);
        for j in jobs {
            let pct = j["node_pct"].as_array().expect("node_pct");
            assert_eq!(pct.len(), 2, "two pseudo-nodes");
            let sum: f64 = pct.iter().map(|x| x.as_f64().expect("number")).sum();
            assert!((sum - 100.0).abs() < 1e-6, "{j}");
            assert!(j["user_s"].as_f64() >= Some(0.0));
        }
        let opts = r["options"].as_array().expect("options");
        assert!(opts.iter().any(|o| o[0] == "kernel"), "{r}");
        assert!(opts.iter().any(|o| o[0] == "fake_numa"), "{r}");
    }
}

#[test]
fn numa_test_text_report_with_a_small_load_peak() {
    let args = with(
        &[
            "bench",
            "numa-test",
            "2",
            "--reps",
            "1",
            "--hackbench-groups",
            "1",
            "--disturb-at-ms",
            "0",
        ],
        &SMALL,
    );
    // Threads on request; processes (the original's) by default.
    let threads = ok_quiet(&with(&args, &["--hackbench-threads"]));
    assert!(
        threads.contains("hackbench 1 groups of threads at 0 s,"),
        "{threads}"
    );
    let out = ok_quiet(&args);
    for want in [
        "numa_test on host (Linux ",
        "hackbench 1 groups of processes at 0 s,",
        "== host N=2 (jobs of rep 1 of 1)",
        "Job  node00",
        "| iSched MSched | UserTime(s)",
        "AverageUserTime",
        "ElapsedTime",
        "TotalUserTime",
        "TotalSysTime",
        "HackbenchTime",
        "== Summary: mean(stddev) in seconds over 1 rep",
    ] {
        assert!(out.contains(want), "`{want}` not in:\n{out}");
    }
}

#[test]
fn a_killed_worker_fails_the_run_with_one_line_naming_it() {
    let args = with(
        &[
            "bench",
            "numa-test",
            "2",
            "--reps",
            "2",
            "--no-disturb",
            "--json",
            "--test-kill-worker",
            "2",
        ],
        &SMALL,
    );
    let (out, _) = fails_at_runtime(
        &args,
        &[
            "numa-test N=2 rep 1: worker 2 (pid ",
            "killed by signal 9 (SIGKILL)",
        ],
    );
    assert!(out.is_empty(), "no partial results: {out}");
}

#[test]
fn worker_subcommand_prints_one_report_line() {
    let out = ok_quiet(&[
        "bench", "worker", "--index", "3", "--size", "1000", "--passes", "1",
    ]);
    assert_eq!(out.lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON line");
    assert_eq!(v["index"], 3);
    assert!(v["checksum"].as_f64() > Some(0.0));
}

#[test]
fn bad_numa_test_input_is_one_line() {
    fails(&["bench", "numa-test", "0"], &["N must be at least 1"]);
    fails(&["bench", "numa-test", "2,4,2"], &["N=2 is given twice"]);
    fails(
        &["bench", "numa-test", "2", "--size", "0"],
        &["--size must be"],
    );
    fails(
        &["bench", "numa-test", "2", "--passes", "0"],
        &["--passes must be at least 1"],
    );
    fails(
        &["bench", "numa-test", "2", "--reps", "0"],
        &["--reps must be at least 1"],
    );
    fails(
        &["bench", "numa-test", "2", "--reps", "1000000000"],
        &["`--reps` = 1000000000", "limit of 1000 repetitions"],
    );
    fails(
        &["bench", "numa-test", "2", "--sample-ms", "0"],
        &["--sample-ms"],
    );
    fails(
        &["bench", "numa-test", "2", "--fake-numa", "4096"],
        &["fake NUMA with 4096 nodes"],
    );
    fails(
        &["bench", "numa-test", "2", "--size", "4000000000"],
        &["--size 4000000000 with 2 jobs needs"],
    );
    fails(
        &["bench", "numa-test", "2", "--test-kill-worker", "3"],
        &["no such worker"],
    );
    fails(
        &["bench", "worker", "--size", "x"],
        &["--size `x` is not a number"],
    );
}

const SIM_JSON: &str = r#"{"machine": "sim2", "problem_size": 20000, "passes": 2, "disturb": false, "seed": 1,
 "results": [
  {"scheduler": "o1", "options": [], "tasks": 2, "reps": 1,
   "avg_user_s": {"mean": 1.1, "std": 0.0}, "elapsed_s": {"mean": 3.0, "std": 0.0},
   "total_user_s": {"mean": 2.2, "std": 0.0}, "total_sys_s": {"mean": 0.1, "std": 0.0},
   "hackbench_s": {"mean": 0.0, "std": 0.0}, "jobs": [], "node_migrations": 0.0,
   "refused": [0.0, 0.0, 0.0], "events": 10.0},
  {"scheduler": "node-affine-static", "options": [["home_bonus", "1"]], "tasks": 2, "reps": 1,
   "avg_user_s": {"mean": 0.9, "std": 0.0}, "elapsed_s": {"mean": 2.0, "std": 0.0},
   "total_user_s": {"mean": 1.8, "std": 0.0}, "total_sys_s": {"mean": 0.0, "std": 0.0},
   "hackbench_s": {"mean": 0.0, "std": 0.0}}
 ]}"#;

const BENCH_JSON: &str = r#"{"machine": "host", "problem_size": 20000, "passes": 2, "disturb": false, "seed": 1,
 "results": [
  {"scheduler": "host", "options": [["kernel", "6.1"]], "tasks": 2, "reps": 3,
   "avg_user_s": {"mean": 1.0, "std": 0.1}, "elapsed_s": {"mean": 2.5, "std": 0.2},
   "total_user_s": {"mean": 2.0, "std": 0.2}, "total_sys_s": {"mean": 0.05, "std": 0.01},
   "hackbench_s": {"mean": 0.0, "std": 0.0},
   "jobs": [{"node_pct": [100.0], "isched": 0, "msched": 0, "user_s": 1.0, "sys_s": 0.02,
             "mem_pct": [100.0], "home_node": null, "node_migrations": 0}],
   "node_migrations": 0.0, "refused": [0.0, 0.0, 0.0], "events": 200.0},
  {"scheduler": "host", "options": [], "tasks": 4, "reps": 3,
   "avg_user_s": {"mean": 1.0, "std": 0.1}, "elapsed_s": {"mean": 2.5, "std": 0.2},
   "total_user_s": {"mean": 4.0, "std": 0.2}, "total_sys_s": {"mean": 0.05, "std": 0.01},
   "hackbench_s": {"mean": 0.0, "std": 0.0}}
 ]}"#;

#[test]
fn compare_prints_both_and_the_prediction_error() {
    let s = scratch("sim.json", SIM_JSON);
    let b = scratch("bench.json", BENCH_JSON);
    let out = ok_quiet(&["bench", "compare", &s, &b]);
    for want in [
        "simulation: ",
        "machine sim2, PROBLEMSIZE 20000, 2 passes, hackbench off",
        "benchmark:  ",
        "== Side by side",
        "== Prediction error against host: sim / bench - 1",
        "1.10(0.00)",
        "1.00(0.10)",
    ] {
        assert!(out.contains(want), "`{want}` not in:\n{out}");
    }
    let block = out
        .split("== Prediction error")
        .nth(1)
        .expect("error block");
    let line = |name: &str| {
        block
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {block}"))
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
    };
    // Columns: o1, node-affine-static.
    assert_eq!(line("AverageUserTime"), ["+10.0%", "-10.0%"]);
    assert_eq!(line("ElapsedTime"), ["+20.0%", "-20.0%"]);
    assert_eq!(line("TotalUserTime"), ["+10.0%", "-10.0%"]);
    assert_eq!(line("TotalSysTime"), ["+100.0%", "-100.0%"]);
    // N=4 is only in the benchmark: no simulated figure.
    assert!(block.contains("N=4"), "{block}");
}

#[test]
fn compare_a_real_simulation_with_a_real_benchmark() {
    let sim = ok_quiet(&with(
        &[
            "sim",
            "numa-test",
            "--machine",
            "nodes=1,cpus-per-node=2",
            "--sched",
            "o1",
            "--tasks",
            "1,2",
            "--reps",
            "1",
            "--no-disturb",
            "--json",
        ],
        &SMALL,
    ));
    let bench = ok_quiet(&with(
        &[
            "bench",
            "numa-test",
            "1,2",
            "--reps",
            "1",
            "--no-disturb",
            "--json",
        ],
        &SMALL,
    ));
    let s = scratch("real-sim.json", &sim);
    let b = scratch("real-bench.json", &bench);
    let out = ok_quiet(&["bench", "compare", &s, &b]);
    assert!(out.contains("N=1") && out.contains("N=2"), "{out}");
    assert!(out.contains("o1") && out.contains("host"), "{out}");
    assert!(!out.contains("note:"), "same parameters: {out}");
}

#[test]
fn compare_bad_files_are_named() {
    let b = scratch("bench-ok.json", BENCH_JSON);
    fails_at_runtime(
        &["bench", "compare", "/nonexistent/sim.json", &b],
        &["/nonexistent/sim.json"],
    );
    let bad = scratch("not-a-report.json", r#"{"machine": "x"}"#);
    fails_at_runtime(
        &["bench", "compare", &bad, &b],
        &[
            "not-a-report.json",
            "not a numa-test --json report",
            "missing field",
        ],
    );
    let broken = scratch("broken.json", "{ not json");
    fails_at_runtime(
        &["bench", "compare", &b, &broken],
        &["broken.json", "line 1"],
    );
}

#[test]
fn with_daemon_runs_the_set_twice_and_the_daemon_stops_cleanly() {
    let args = with(
        &[
            "bench",
            "numa-test",
            "2",
            "--reps",
            "1",
            "--no-disturb",
            "--with-daemon",
            "--daemon-set",
            "placement.homenode.min_rss_mib=1",
        ],
        &SMALL,
    );
    let out = ok_quiet(&args);
    for want in [
        "== host N=2",
        "== The same set with `homenode run --config",
        "== host+homenode run N=2",
        "daemon: ",
        "host host+homenode run",
    ] {
        assert!(out.contains(want), "`{want}` not in:\n{out}");
    }
    let mut json = args.clone();
    json.push("--json");
    let r: serde_json::Value = serde_json::from_str(&ok_quiet(&json)).expect("json");
    let labels: Vec<&str> = r["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|c| c["scheduler"].as_str().expect("label"))
        .collect();
    assert_eq!(labels, ["host", "host+homenode run"]);
    // A daemon setting it refuses is one line naming it, before any run.
    fails(
        &with(
            &[
                "bench",
                "numa-test",
                "2",
                "--with-daemon",
                "--daemon-set",
                "scan.speed=1",
            ],
            &SMALL,
        ),
        &["--with-daemon", "speed"],
    );
}

// ---- bench probe ------------------------------------------------------------------------

/// A tiny probe: every node with CPUs gets a co-run entry of one thread per CPU, whatever
/// the CPU count. Only the shape is checked, never a time.
#[test]
fn probe_runs_each_nodes_cpus_together() {
    let out = ok_quiet(&[
        "bench", "probe", "--mib", "2", "--loads", "20000", "--rounds", "1", "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON document");
    let co = v["co_run"].as_array().expect("co_run");
    assert!(!co.is_empty(), "{out}");
    for c in co {
        let threads = c["threads"].as_u64().expect("threads");
        let mib = c["buffer_mib"].as_u64().expect("buffer_mib");
        let passes = c["passes"].as_u64().expect("passes");
        assert!(threads >= 1, "{c}");
        // The threads share out --mib, each reading about --mib per round.
        assert!(mib * threads >= 2 && mib * passes >= 2, "{c}");
        for k in [
            "alone_read_gbps",
            "aggregate_read_gbps",
            "alone_gather_ns",
            "gather_ns",
        ] {
            assert!(c[k].as_f64().is_some_and(|x| x > 0.0), "{k}: {c}");
        }
        let slow = c["slowdown"].as_f64().expect("slowdown");
        let ratio =
            c["gather_ns"].as_f64().unwrap_or(0.0) / c["alone_gather_ns"].as_f64().unwrap_or(1.0);
        assert!((slow - ratio).abs() < 1e-9, "{c}");
    }
    // The clock of a chain of dependent adds, where the probe has the chain.
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        let mhz = v["core_mhz"].as_f64().expect("core_mhz");
        assert!(mhz > 0.0, "{mhz}");
    }
    // The LLC test: absent with one CPU or no knee, else its figures.
    let l = &v["llc_share"];
    if !l.is_null() {
        assert!(l["threads"].as_u64().is_some_and(|t| t >= 2), "{l}");
        for k in [
            "alone_gather_ns",
            "gather_ns",
            "slowdown",
            "shared_slowdown",
        ] {
            assert!(l[k].as_f64().is_some_and(|x| x > 0.0), "{k}: {l}");
        }
    }
}
