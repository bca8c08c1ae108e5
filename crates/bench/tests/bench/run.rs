//! Real runs of the benchmark with small jobs: the figures are consistent, the JSON document
//! round-trips, failed workers fail the run with a message naming them.

use bench::hackbench::{self, HackbenchParams};
use bench::hackbench_procs;
use bench::numa_test::{Disturbance, NumaTestSet, PeakOutcome, RunConfig, run_once, run_set};
use bench::{BenchError, CpuNodeMap, Report, WorkerCommand};
use report::MeanStd;
use std::path::PathBuf;
use std::time::Duration;

fn nodes() -> CpuNodeMap {
    let root = std::path::Path::new("/");
    let m = bench::host_cpu_nodes(root, None).expect("host nodes");
    // Two pseudo-nodes where the host has one node and two CPUs, so the attribution has
    // something to split.
    if m.nr_nodes() == 1 && m.cpus().len() >= 2 {
        bench::host_cpu_nodes(root, Some(2)).expect("fake")
    } else {
        m
    }
}

fn config(tasks: u32) -> RunConfig {
    RunConfig {
        worker: WorkerCommand {
            program: PathBuf::from(env!("CARGO_BIN_EXE_homenode-bench-worker")),
            prefix_args: vec![],
        },
        tasks,
        size: 50_000,
        passes: 3,
        seed: 7,
        sample: Some(Duration::from_millis(2)),
        disturb: None,
        nodes: nodes(),
        root: PathBuf::from("/"),
        kill_worker: None,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn per_job_rows_and_summary_are_consistent() {
    let set = NumaTestSet {
        tasks: vec![1, 3],
        reps: 2,
        seed: 3,
        run: config(1),
    };
    let nr_nodes = set.run.nodes.nr_nodes();
    let mut runs_seen = Vec::new();
    let mut cells_seen = Vec::new();
    let cells = run_set(
        &set,
        &mut |_, _, _, _| {},
        &mut |n, rep| runs_seen.push((n, rep)),
        &mut |c, runs| cells_seen.push((c.clone(), runs.to_vec())),
    )
    .expect("runs");
    assert_eq!(runs_seen, vec![(1, 1), (1, 2), (3, 1), (3, 2)]);
    assert_eq!(cells.len(), 2);
    for ((cell, runs), summary) in cells_seen.iter().zip(&cells) {
        assert_eq!(cell, summary);
        assert_eq!(cell.scheduler, "host");
        assert_eq!(cell.reps, 2);
        assert_eq!(runs.len(), 2);
        for r in runs {
            let f = &r.figures;
            assert_eq!(f.jobs.len(), cell.tasks as usize);
            assert_eq!(r.peak, PeakOutcome::Off);
            for j in &f.jobs {
                assert_eq!(j.node_pct.len(), nr_nodes);
                let sum: f64 = j.node_pct.iter().sum();
                assert!(close(sum, 100.0), "node percentages add to {sum}");
                assert!(j.node_pct.iter().all(|p| (0.0..=100.0).contains(p)));
                let most = j.node_pct[j.msched];
                assert!(
                    j.node_pct.iter().all(|&p| p <= most),
                    "msched is the node of most time"
                );
                assert!(j.isched.is_some_and(|n| n < nr_nodes));
                assert!(j.user_s >= 0.0 && j.sys_s >= 0.0 && j.user_s + j.sys_s > 0.0);
                if std::path::Path::new("/proc/self/numa_maps").exists() {
                    let mem: f64 = j.mem_pct.iter().sum();
                    assert!(close(mem, 100.0), "memory percentages add to {mem}");
                }
            }
            let total: f64 = f.jobs.iter().map(|j| j.user_s).sum();
            let sys: f64 = f.jobs.iter().map(|j| j.sys_s).sum();
            assert!(close(f.total_user_s, total));
            assert!(close(f.total_sys_s, sys));
            assert!(close(f.avg_user_s, total / f.jobs.len() as f64));
            assert!(f.elapsed_s > 0.0);
            assert!(f.events > 0, "samples were taken");
            assert_eq!(f.hackbench_s, 0.0);
            // The workers did the work: same seed, same checksum as a local run.
            for rep in &r.reports {
                assert!(rep.checksum > 0.0);
            }
        }
        let of = |g: fn(&report::RunFigures) -> f64| {
            MeanStd::of(&runs.iter().map(|r| g(&r.figures)).collect::<Vec<_>>())
        };
        assert_eq!(cell.avg_user_s, of(|f| f.avg_user_s));
        assert_eq!(cell.elapsed_s, of(|f| f.elapsed_s));
        assert_eq!(cell.total_user_s, of(|f| f.total_user_s));
        assert_eq!(cell.total_sys_s, of(|f| f.total_sys_s));
        assert_eq!(cell.jobs, runs[0].figures.jobs);
        assert!(
            cell.options
                .iter()
                .any(|(k, v)| k == "hackbench" && v == "off")
        );
    }
}

#[test]
fn json_document_round_trips() {
    let set = NumaTestSet {
        tasks: vec![2],
        reps: 1,
        seed: 1,
        run: config(2),
    };
    let cells = run_set(&set, &mut |_, _, _, _| {}, &mut |_, _| {}, &mut |_, _| {}).expect("runs");
    let r = Report {
        machine: "host".into(),
        problem_size: 50_000,
        passes: 3,
        disturb: false,
        seed: 1,
        results: cells,
    };
    let text = r.to_json();
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    for k in [
        "machine",
        "problem_size",
        "passes",
        "disturb",
        "seed",
        "results",
    ] {
        assert!(keys.contains(&k), "{k} missing from {keys:?}");
    }
    let back = Report::parse(&text, "mem").expect("parses back");
    assert_eq!(back, r);
    assert_eq!(back.to_json(), text);
}

#[test]
fn worker_killed_from_outside_fails_the_run_naming_it() {
    let cfg = RunConfig {
        size: 2_000_000,
        passes: 50,
        ..config(3)
    };
    let e = run_once(&cfg, &mut |job, pid| {
        if job == 2 {
            let pid = nix::unistd::Pid::from_raw(pid as i32);
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("kill");
        }
    })
    .expect_err("a killed worker fails the run");
    let msg = e.to_string();
    assert!(
        matches!(e, BenchError::WorkerFailed { worker: 2, .. }),
        "{msg}"
    );
    assert!(
        msg.contains("worker 2 (pid ") && msg.contains("SIGKILL"),
        "{msg}"
    );
}

#[test]
fn worker_killing_itself_fails_the_set_naming_n_and_rep() {
    let set = NumaTestSet {
        tasks: vec![2],
        reps: 3,
        seed: 1,
        run: RunConfig {
            kill_worker: Some(1),
            ..config(2)
        },
    };
    let mut cells = 0;
    let e = run_set(&set, &mut |_, _, _, _| {}, &mut |_, _| {}, &mut |_, _| {
        cells += 1
    })
    .expect_err("fails");
    assert_eq!(cells, 0, "no partial summary");
    let msg = e.to_string();
    assert!(
        msg.starts_with("numa-test N=2 rep 1: worker 1 (pid "),
        "{msg}"
    );
    assert!(msg.contains("was killed by signal 9 (SIGKILL)"), "{msg}");
    assert_eq!(msg.lines().count(), 1);
}

#[test]
fn worker_exiting_non_zero_is_reported_with_its_message() {
    let mut cfg = config(1);
    cfg.worker.prefix_args = vec!["--bogus".into(), "1".into()];
    let msg = run_once(&cfg, &mut |_, _| {})
        .expect_err("fails")
        .to_string();
    assert!(
        msg.contains("worker 1 (pid ") && msg.contains("exited with status 2"),
        "{msg}"
    );
    assert!(msg.contains("unknown argument `--bogus`"), "{msg}");

    cfg.worker.program = PathBuf::from("/nonexistent/worker");
    let msg = run_once(&cfg, &mut |_, _| {})
        .expect_err("fails")
        .to_string();
    assert!(
        msg.contains("cannot start worker 1 (/nonexistent/worker)"),
        "{msg}"
    );
}

#[test]
fn load_peak_runs_when_due_even_after_the_jobs() {
    let peak = |at_ms: u64| Disturbance {
        at: Duration::from_millis(at_ms),
        hackbench: HackbenchParams {
            loops: 10,
            ..HackbenchParams::groups(1)
        },
        processes: None,
    };
    let cfg = RunConfig {
        disturb: Some(peak(0)),
        ..config(1)
    };
    let r = run_once(&cfg, &mut |_, _| {}).expect("runs");
    let PeakOutcome::Ran(d) = r.peak else {
        panic!("peak did not run: {:?}", r.peak)
    };
    assert!(close(r.figures.hackbench_s, d.as_secs_f64()) && d > Duration::ZERO);

    // Due after the jobs have ended: it still runs (as the original script's `sleep 3;
    // hackbench` did), and the elapsed time includes the wait and the peak.
    let cfg = RunConfig {
        disturb: Some(peak(1_500)),
        ..config(1)
    };
    let r = run_once(&cfg, &mut |_, _| {}).expect("runs");
    let PeakOutcome::Ran(d) = r.peak else {
        panic!("late peak did not run: {:?}", r.peak)
    };
    assert!(
        r.figures.elapsed_s >= 1.5 + d.as_secs_f64() * 0.99,
        "{:?} {d:?}",
        r.figures.elapsed_s
    );
}

#[test]
fn without_sampling_the_worker_report_still_gives_a_full_row() {
    let cfg = RunConfig {
        sample: None,
        ..config(2)
    };
    let r = run_once(&cfg, &mut |_, _| {}).expect("runs");
    assert_eq!(r.figures.events, 0);
    for j in &r.figures.jobs {
        assert!(close(j.node_pct.iter().sum::<f64>(), 100.0));
    }
}

#[test]
fn hackbench_on_its_own() {
    let d = hackbench::run(&HackbenchParams {
        groups: 2,
        senders: 3,
        receivers: 4,
        loops: 20,
        msg_bytes: 100,
    })
    .expect("runs");
    assert!(d > Duration::ZERO);
    assert_eq!(
        hackbench::run(&HackbenchParams::groups(0)).expect("nothing"),
        Duration::ZERO
    );
    let bad = HackbenchParams {
        senders: 0,
        ..HackbenchParams::groups(1)
    };
    assert!(hackbench::run(&bad).is_err());
}

fn helper() -> WorkerCommand {
    WorkerCommand {
        program: PathBuf::from(env!("CARGO_BIN_EXE_homenode-bench-worker")),
        prefix_args: vec!["hackbench".into()],
    }
}

#[test]
fn hackbench_with_processes() {
    let p = HackbenchParams {
        groups: 2,
        senders: 3,
        receivers: 4,
        loops: 20,
        msg_bytes: 100,
    };
    let d = hackbench_procs::run(&helper(), &p).expect("runs");
    assert!(d > Duration::ZERO);
    assert_eq!(
        hackbench_procs::parse_args(&hackbench_procs::to_args(&p)).expect("args"),
        p
    );
    // A bad shape is the helper's one line; a missing helper names its path.
    let bad = HackbenchParams {
        senders: 0,
        ..HackbenchParams::groups(1)
    };
    let e = hackbench_procs::run(&helper(), &bad)
        .expect_err("no senders")
        .to_string();
    assert!(
        e.contains("the hackbench helper failed") && e.contains("senders"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    let none = WorkerCommand {
        program: PathBuf::from("/nonexistent/homenode"),
        prefix_args: vec![],
    };
    let e = hackbench_procs::run(&none, &p)
        .expect_err("no helper")
        .to_string();
    assert!(e.contains("/nonexistent/homenode"), "{e}");
}

/// The helper's children die with it: an interrupted benchmark leaves no hackbench behind.
#[test]
fn hackbench_processes_die_with_their_helper() {
    // Senders that would write for minutes.
    let p = HackbenchParams {
        groups: 1,
        senders: 2,
        receivers: 2,
        loops: u32::MAX,
        msg_bytes: 100,
    };
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_homenode-bench-worker"))
        .arg("hackbench")
        .args(hackbench_procs::to_args(&p))
        .spawn()
        .expect("helper");
    let pid = child.id();
    // Its children: the processes whose parent (field 4 of `stat`) it is.
    let kids = || -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|k| {
                std::fs::read_to_string(format!("/proc/{k}/stat")).is_ok_and(|s| {
                    s.rsplit(") ").next().and_then(|r| r.split(' ').nth(1))
                        == Some(&*pid.to_string())
                })
            })
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let forked = loop {
        let k = kids();
        if k.len() == 4 || std::time::Instant::now() > deadline {
            break k;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(forked.len(), 4, "its 4 children were forked");
    child.kill().expect("kill the helper");
    child.wait().expect("reap the helper");
    let alive = |k: &u32| {
        std::fs::read_to_string(format!("/proc/{k}/stat"))
            .is_ok_and(|s| !s.rsplit(") ").next().unwrap_or("").starts_with('Z'))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while forked.iter().any(alive) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = forked.iter().copied().filter(alive).collect();
    for &k in &left {
        // Not left running after a failure either.
        let pid = nix::unistd::Pid::from_raw(k as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    }
    assert!(
        left.is_empty(),
        "children left after the helper died: {left:?}"
    );
}

#[test]
fn overhead_pairs_give_finite_ratios() {
    // Jobs long enough (tens of ms) to have user time on a loaded machine.
    let cfg = RunConfig {
        size: 1_000_000,
        passes: 2,
        ..config(1)
    };
    let o =
        bench::overhead::measure(&cfg, Duration::from_millis(5), 2, &mut |_, _| {}).expect("runs");
    assert_eq!(o.pairs.len(), 2);
    assert!(o.median_user_ratio.is_finite() && o.median_user_ratio > 0.0);
    assert!(o.median_elapsed_ratio.is_finite() && o.median_elapsed_ratio > 0.0);
    assert_eq!(bench::overhead::median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(bench::overhead::median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
}

#[test]
fn bad_parameters_are_errors() {
    let set = NumaTestSet {
        tasks: vec![0],
        reps: 1,
        seed: 1,
        run: config(1),
    };
    let e = run_set(&set, &mut |_, _, _, _| {}, &mut |_, _| {}, &mut |_, _| {});
    assert!(
        e.expect_err("N=0")
            .to_string()
            .contains("N must be at least 1")
    );
    let huge = NumaTestSet {
        tasks: vec![4],
        run: RunConfig {
            size: u32::MAX as u64,
            ..config(1)
        },
        ..set
    };
    let e = bench::numa_test::check_memory(&huge)
        .expect_err("too big")
        .to_string();
    assert!(e.contains("--size 4294967295 with 4 jobs needs"), "{e}");
}
