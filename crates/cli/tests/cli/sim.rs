//! `homenode sim`, `machines`, `schedulers`: output formats, and the one-line errors of bad
//! input.

use crate::common::*;
use std::process::{Command, Stdio};

pub(crate) const SMALL: &str = "nodes=2,cpus-per-node=2";

/// A runtime error (a file that does not read or parse): exit 1, one line, nothing printed.
pub(crate) fn fails_rt(args: &[&str], want: &[&str]) -> String {
    let (out, err) = fails_at_runtime(args, want);
    assert!(out.is_empty(), "homenode {args:?} printed: {out}");
    err
}

/// A usage error: fails with one clear line and prints nothing on stdout; returns stderr.
pub(crate) fn fails(args: &[&str], want: &[&str]) -> String {
    let (out, err) = fails_with(args, want);
    assert!(out.is_empty(), "homenode {args:?} printed: {out}");
    err
}

pub(crate) fn scratch(name: &str, text: &str) -> String {
    scratch_in("cli-tests", name, text)
}

// ---- numa-test --------------------------------------------------------------------------

#[test]
fn numa_test_json_has_the_documented_schema() {
    let out = ok(&[
        "sim",
        "numa-test",
        "--machine",
        SMALL,
        "--tasks",
        "2",
        "--reps",
        "2",
        "--size",
        "20000",
        "--passes",
        "2",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON document");
    let results = v["results"].as_array().expect("results array");
    // Default schedulers: one cell each for N=2.
    assert_eq!(results.len(), 3, "{v}");
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["scheduler"].as_str().expect("scheduler name"))
        .collect();
    assert_eq!(names, ["o1", "node-affine-static", "node-affine-dynamic"]);
    for r in results {
        let obj = r.as_object().expect("result object");
        for key in [
            "scheduler",
            "tasks",
            "reps",
            "avg_user_s",
            "elapsed_s",
            "total_user_s",
            "total_sys_s",
            "hackbench_s",
            "jobs",
        ] {
            assert!(obj.contains_key(key), "result lacks `{key}`: {r}");
        }
        assert_eq!(r["tasks"], 2);
        assert_eq!(r["reps"], 2);
        for key in [
            "avg_user_s",
            "elapsed_s",
            "total_user_s",
            "total_sys_s",
            "hackbench_s",
        ] {
            let t = r[key]
                .as_object()
                .unwrap_or_else(|| panic!("`{key}` not an object: {r}"));
            let mut keys: Vec<&str> = t.keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(keys, ["mean", "std"], "`{key}`: {r}");
            let mean = t["mean"].as_f64().expect("mean is a number");
            let std = t["std"].as_f64().expect("std is a number");
            assert!(
                mean >= 0.0 && std >= 0.0 && mean.is_finite(),
                "`{key}`: {r}"
            );
        }
        // Runs with hackbench take time; elapsed covers at least the jobs' average.
        assert!(r["elapsed_s"]["mean"].as_f64() > Some(0.0), "{r}");
        let jobs = r["jobs"].as_array().expect("jobs array");
        assert_eq!(jobs.len(), 2, "{r}");
        for j in jobs {
            let pct: f64 = j["node_pct"]
                .as_array()
                .expect("node_pct")
                .iter()
                .map(|x| x.as_f64().expect("number"))
                .sum();
            assert!((pct - 100.0).abs() < 1e-6, "{j}");
        }
    }
    assert_eq!(v["problem_size"], 20000);
    assert_eq!(v["passes"], 2);
    assert_eq!(v["size_auto"], false);
    assert!(v["warnings"].is_array(), "{v}");
}

#[test]
fn numa_test_warns_when_the_jobs_end_before_hackbench() {
    // At one pass the jobs on epyc-nps4 are done long before hackbench starts at 3 s.
    let args = [
        "sim",
        "numa-test",
        "--machine",
        "epyc-nps4",
        "--sched",
        "o1",
        "--tasks",
        "2",
        "--reps",
        "1",
        "--passes",
        "1",
        "--summary-only",
    ];
    let text = ok(&args);
    assert!(
        text.contains("PROBLEMSIZE 1000000, 1 pass (given)"),
        "{text}"
    );
    let warning = "warning: o1 N=2: the jobs ended before hackbench did in 1 of 1 rep, so \
                   ElapsedTime is hackbench's, not the jobs'; raise --passes (now 1)";
    assert!(text.contains(warning), "{text}");
    let mut json = args.to_vec();
    json.push("--json");
    let v: serde_json::Value = serde_json::from_str(&ok(&json)).expect("one JSON document");
    assert_eq!(
        v["warnings"][0]
            .as_str()
            .map(|w| w.contains("raise --passes")),
        Some(true)
    );
    assert_eq!(v["results"][0]["jobs_ended_first"], 1);
}

#[test]
fn numa_test_sizes_itself_for_the_machine() {
    let out = ok(&[
        "sim",
        "numa-test",
        "--machine",
        "xeon2s",
        "--sched",
        "o1",
        "--tasks",
        "1",
        "--reps",
        "1",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(v["size_auto"], true);
    assert_eq!(v["problem_size"], 1_000_000);
    assert!(v["passes"].as_u64() > Some(100), "{}", v["passes"]);
    assert_eq!(v["warnings"].as_array().map(Vec::len), Some(0));
    assert!(v["results"][0]["elapsed_s"]["mean"].as_f64() > Some(6.0));
}

#[test]
fn numa_test_text_report_and_determinism() {
    let args = [
        "sim",
        "numa-test",
        "--machine",
        SMALL,
        "--sched",
        "o1,node-affine-static",
        "--tasks",
        "2,3",
        "--reps",
        "2",
        "--size",
        "20000",
        "--passes",
        "2",
        "--seed",
        "5",
        "--no-disturb",
    ];
    let a = ok(&args);
    for want in [
        "== o1 N=2",
        "== node-affine-static N=3",
        "AverageUserTime",
        "ElapsedTime",
        "TotalUserTime",
        "TotalSysTime",
        "== Summary",
        "iSched MSched",
        "hackbench off",
    ] {
        assert!(a.contains(want), "`{want}` not in:\n{a}");
    }
    assert!(!a.contains("node-affine-dynamic"), "{a}");
    // Same arguments, same bytes, whatever the thread pool does.
    let mut one_thread = args.to_vec();
    one_thread.extend(["--threads", "1"]);
    assert_eq!(a, ok(&one_thread), "the report depends on the thread count");
}

// ---- bad input: one line, exit code 2 ------------------------------------------------------

#[test]
fn unknown_machine_is_named_with_the_presets() {
    fails(
        &["sim", "numa-test", "--machine", "cray-1", "--tasks", "2"],
        &["cray-1", "azusa16", "tx7-8", "epyc-nps4"],
    );
    fails(&["machines", "cray-1"], &["cray-1", "azusa16"]);
    // A synthetic spec with a bad key names the key and the valid ones.
    fails(
        &["sim", "numa-test", "--machine", "nodes=2,sockets=2"],
        &["sockets", "cpus-per-node", "remote-ratio"],
    );
}

#[test]
fn unknown_scheduler_is_named_with_the_valid_ones() {
    fails(
        &["sim", "numa-test", "--machine", SMALL, "--sched", "o1,cfs"],
        &["cfs", "o1", "node-affine-static", "node-affine-dynamic"],
    );
    let f = scratch("tiny-for-sched.toml", TINY_WORKLOAD);
    fails(
        &[
            "sim",
            "workload",
            &f,
            "--machine",
            SMALL,
            "--sched",
            "lottery",
        ],
        &["lottery", "pmqs", "node-affine-static"],
    );
}

#[test]
fn unknown_scheduler_option_is_named_with_the_valid_ones() {
    fails(
        &[
            "sim",
            "numa-test",
            "--machine",
            SMALL,
            "--sched",
            "node-affine-static:home_bonus=2,speed=9",
        ],
        &[
            "speed",
            "node-affine-static",
            "home_bonus",
            "pool_delay_busy",
        ],
    );
    fails(
        &[
            "sim",
            "numa-test",
            "--machine",
            SMALL,
            "--sched",
            "o1:busy_interval=soon",
        ],
        &["busy_interval", "soon"],
    );
}

#[test]
fn malformed_machine_files_name_line_column_and_field() {
    let f = scratch("bad-type.toml", "name = \"x\"\nnodes = \"four\"\n");
    fails_rt(&["machines", &f], &[&format!("{f}:2:"), "nodes"]);
    let f = scratch(
        "bad-syntax.toml",
        "name = \"x\"\nnodes = 2\ncpus_per_node = [\n",
    );
    fails_rt(
        &["sim", "numa-test", "--machine", &f, "--tasks", "2"],
        &[&format!("{f}:4:")],
    );
    let f = scratch(
        "bad-key.toml",
        "name = \"x\"\nnodes = 2\ncpus_per_nod = 2\n",
    );
    fails_rt(
        &["sim", "numa-test", "--machine", &f],
        &[&format!("{f}:3:"), "cpus_per_nod", "cpus_per_node"],
    );
    fails_rt(
        &["machines", "/nonexistent/machine.toml"],
        &["/nonexistent/machine.toml"],
    );
}

const TINY_WORKLOAD: &str = r#"
name = "tiny"
channels = ["pipe"]
[[program]]
name = "worker"
job = true
region = [{ name = "data", mib = 4 }]
phase = [
  { touch = "data" },
  { memory = { ops = 1e5, cycles = 4, access = [{ region = "data", pattern = "random", bytes = 8, write = true }] } },
  { loop = { count = 3, body = [{ sleep = { ms = 1 } }, { send = { channels = ["pipe"], cycles_per_msg = 1000 } }] } },
]
[[program]]
name = "reader"
phase = [{ recv = { channel = "pipe", msgs = 3, cycles_per_msg = 1000 } }]
[[launch]]
program = "worker"
count = 2
[[launch]]
program = "reader"
"#;

#[test]
fn workload_file_errors_name_the_place() {
    let run = |name: &str, text: &str, want: &[&str]| {
        let f = scratch(name, text);
        let mut w: Vec<&str> = want.to_vec();
        w.push(&f);
        fails_rt(&["sim", "workload", &f, "--machine", SMALL], &w);
    };
    // Unknown key: file, line and column, and the key.
    run(
        "unknown-key.toml",
        &TINY_WORKLOAD.replace("job = true", "job = true\nspeed = 3"),
        &[":7:", "speed"],
    );
    // TOML syntax.
    run(
        "syntax.toml",
        &TINY_WORKLOAD.replace("count = 2", "count = = 2"),
        &[":"],
    );
    // Unknown names, with what is defined.
    run(
        "unknown-program.toml",
        &TINY_WORKLOAD.replace("program = \"reader\"", "program = \"writer\""),
        &["writer", "worker, reader"],
    );
    run(
        "unknown-channel.toml",
        &TINY_WORKLOAD.replace("channel = \"pipe\"", "channel = \"sock\""),
        &["sock", "pipe"],
    );
    run(
        "bad-pattern.toml",
        &TINY_WORKLOAD.replace("\"random\"", "\"zigzag\""),
        &["zigzag", "random, stream"],
    );
    run(
        "bad-policy.toml",
        &TINY_WORKLOAD.replace("mib = 4 }", "mib = 4, policy = \"sticky\" }"),
        &["sticky", "first-touch", "bind"],
    );
    // Names that do not exist on the machine.
    run(
        "bad-cpu.toml",
        &TINY_WORKLOAD.replace("job = true", "job = true\naffinity = [7]"),
        &["CPU 7", "worker"],
    );
    run(
        "bad-node.toml",
        &TINY_WORKLOAD.replace("mib = 4 }", "mib = 4, policy = \"bind:5\" }"),
        &["node 5", "data"],
    );
    fails_rt(
        &["sim", "workload", "/nonexistent/w.toml", "--machine", SMALL],
        &["/nonexistent/w.toml"],
    );
}

#[test]
fn impossible_memory_requests_are_refused() {
    // numa_test jobs that need more than the machine.
    fails(
        &[
            "sim",
            "numa-test",
            "--machine",
            "nodes=2,cpus-per-node=2,mem-gib=1",
            "--tasks",
            "4",
            "--size",
            "100000000",
        ],
        &["--size", "MiB"],
    );
    // One region larger than the machine.
    let m = "nodes=2,cpus-per-node=2,mem-gib=1";
    let f = scratch(
        "huge-region.toml",
        &TINY_WORKLOAD.replace("mib = 4 }", "mib = 4096 }"),
    );
    fails_rt(&["sim", "workload", &f, "--machine", m], &["data", "MiB"]);
    // One process whose regions together are larger than the machine (3 GiB on 2 GiB): no
    // run of it can be what the file asks for.
    let f = scratch(
        "huge-process.toml",
        &TINY_WORKLOAD.replace(
            "region = [{ name = \"data\", mib = 4 }]",
            "region = [{ name = \"data\", mib = 1536 }, { name = \"more\", mib = 1536 }]",
        ),
    );
    fails_rt(&["sim", "workload", &f, "--machine", m], &["worker"]);
}

// ---- listings and workloads ---------------------------------------------------------------

#[test]
fn machines_lists_the_presets() {
    let out = ok(&["machines"]);
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        names,
        [
            "azusa16",
            "tx7-8",
            "wildfire8",
            "kunpeng96",
            "xeon2s",
            "epyc-nps4",
            "epyc9004-nps1",
            "epyc9004-nps4",
            "spr-snc4",
            "arm128"
        ],
        "{out}"
    );
}

#[test]
fn machines_shows_one_machine() {
    let out = ok(&["machines", "azusa16"]);
    let nodes = out.lines().filter(|l| l.starts_with("node ")).count();
    assert_eq!(nodes, 4, "{out}");
    assert!(out.contains("node 3: cpus 12-15"), "{out}");
    assert!(out.contains("distances"), "{out}");
    // The cost model's facts: the core, the LLC's ways, the TLB where one is given.
    assert!(out.contains("core: 800 MHz, in order, MLP 2"), "{out}");
    assert!(
        out.contains("4096 KiB shared by 1 CPU(s), 64 B lines, 4-way"),
        "{out}"
    );
    assert!(
        out.contains("data TLB: 96 entries x 16 KiB pages = 1.5 MiB, a walk 15 cycles"),
        "{out}"
    );
    let out = ok(&["machines", "xeon2s"]);
    assert!(out.contains("data TLB: none given"), "{out}");
    let out = ok(&["machines", "nodes=3,cpus-per-node=2"]);
    assert_eq!(out.lines().filter(|l| l.starts_with("node ")).count(), 3);
}

#[test]
fn schedulers_lists_all_three() {
    let out = ok(&["schedulers"]);
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for n in ["o1", "node-affine-static", "node-affine-dynamic"] {
        assert!(names.contains(&n), "`{n}` missing from:\n{out}");
    }
}

#[test]
fn workload_runs_a_file() {
    let f = scratch("tiny.toml", TINY_WORKLOAD);
    let out = ok(&["sim", "workload", &f, "--machine", SMALL, "--sched", "o1"]);
    assert!(out.contains("elapsed"), "{out}");
    // Two workers and the reader, one line each.
    assert_eq!(
        out.lines().filter(|l| l.contains(" worker ")).count(),
        2,
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.contains(" reader ")).count(),
        1,
        "{out}"
    );
    let json = ok(&[
        "sim",
        "workload",
        &f,
        "--machine",
        SMALL,
        "--sched",
        "node-affine-static",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let tasks = v["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 3, "{v}");
    for t in tasks {
        let exited = t["exited_s"].as_f64().expect("exited_s");
        assert!(
            exited <= v["elapsed_s"].as_f64().expect("elapsed_s") + 1e-12,
            "{t}"
        );
    }
    // The reader got the worker's messages: it waited for them, so it ended after they began.
    assert!(v["counters"]["wakeups"].as_u64() > Some(0), "{v}");
}

/// The arguments that run the repository's workload `file` on azusa16 under `linux` with
/// homenode placement for small processes, deciding every `interval_s`.
fn placed_workload(file: &str, interval_s: &str) -> Vec<String> {
    let f = format!("{}/../../workloads/{file}", env!("CARGO_MANIFEST_DIR"));
    let placement = format!("homenode:min_rss_mib=1,min_cpu=0.3,interval_s={interval_s}");
    [
        "sim",
        "workload",
        &f,
        "--machine",
        "azusa16",
        "--sched",
        "linux",
    ]
    .into_iter()
    .map(String::from)
    .chain(["--placement".to_string(), placement])
    .collect()
}

/// `--notes` lists what the placement's decisions held back: in the repository's
/// shared-writer workload one process grows to eight threads on its one-node home, an
/// imbalance that no process may correct (the text after the actions, and `notes` in JSON
/// only when asked for).
#[test]
fn workload_notes_list_what_placement_held_back() {
    let owned = placed_workload("shared-writer.toml", "0.1");
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let plain = ok(&args);
    assert!(!plain.contains("held back"), "{plain}");
    let mut with = args.to_vec();
    with.push("--notes");
    let out = ok(&with);
    let notes: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("held back ("))
        .skip(1)
        .collect();
    assert!(
        notes.iter().any(|l| l.contains("rebalance: node 0")),
        "{out}"
    );
    with.push("--json");
    let v: serde_json::Value = serde_json::from_str(&ok(&with)).expect("JSON");
    let listed = v["placement"]["notes"].as_array().expect("notes");
    assert_eq!(listed.len(), notes.len(), "{v}");
    let mut plain_json = args.to_vec();
    plain_json.push("--json");
    let v: serde_json::Value = serde_json::from_str(&ok(&plain_json)).expect("JSON");
    assert!(v["placement"].get("notes").is_none(), "{v}");
}

/// The repository's `parallel-phase.toml` through the simulator's placement layer: a home set
/// for its eight threads, narrowed to one node once one thread is left and `min_dwell_s` is
/// over (PLACEMENT.md, step 2b), and not before.
#[test]
fn workload_home_set_is_narrowed_after_the_parallel_phase() {
    let mut owned = placed_workload("parallel-phase.toml", "1");
    owned.push("--json".into());
    let out = ok(&owned.iter().map(String::as_str).collect::<Vec<_>>());
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let homes: Vec<(f64, Vec<u64>, String)> = v["placement"]["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter(|a| a["action"]["action"] == "set_home")
        .map(|a| {
            let nodes = a["action"]["nodes"].as_array().expect("nodes");
            (
                a["at_s"].as_f64().expect("time"),
                nodes.iter().map(|n| n.as_u64().expect("node")).collect(),
                a["action"]["reason"].as_str().expect("reason").to_string(),
            )
        })
        .collect();
    assert_eq!(homes.len(), 2, "{v}");
    assert_eq!(homes[0].1.len(), 2, "a home set first: {v}");
    let (at, nodes, why) = &homes[1];
    assert_eq!(nodes.len(), 1, "{v}");
    assert!(homes[0].1.contains(&nodes[0]), "a part of the set: {v}");
    assert!(*at >= homes[0].0 + 60.0, "not before min_dwell_s: {v}");
    assert!(
        why.contains("1 thread busy, which fits a part of its home"),
        "{why}"
    );
}

#[test]
fn closed_stdout_is_not_a_panic() {
    // `homenode machines azusa16 | head -1`: the reader goes away; the command must not panic.
    let mut child = Command::new(env!("CARGO_BIN_EXE_homenode"))
        .args(["machines", "azusa16"])
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("wait");
    let err = stderr(&o);
    assert!(
        !err.contains("panicked") && o.status.code() != Some(101),
        "exit {:?}, stderr: {err}",
        o.status.code()
    );
}

#[test]
fn numa_test_with_a_placement_policy() {
    let base = [
        "sim",
        "numa-test",
        "--machine",
        SMALL,
        "--sched",
        "o1",
        "--tasks",
        "4",
        "--reps",
        "1",
        "--size",
        "400000",
        "--passes",
        "20",
        "--no-disturb",
        "--summary-only",
    ];
    let mut args = base.to_vec();
    args.extend(["--placement", "homenode:min_rss_mib=4,interval_s=0.2"]);
    let out = ok(&args);
    assert!(
        out.contains("o1+homenode:min_rss_mib=4,interval_s=0.2"),
        "{out}"
    );
    assert!(out.contains("placement.interval_s=0.2"), "{out}");
    let mut bad = base.to_vec();
    bad.extend(["--placement", "homenode:min_rss=4"]);
    fails(&bad, &["--placement homenode:min_rss=4", "min_rss"]);
    let mut bad = base.to_vec();
    bad.extend(["--placement", "autonuma"]);
    fails(&bad, &["unknown placement policy `autonuma`"]);
}

// ---- --machine-set ----------------------------------------------------------------------
