//! The shared `--json` document read back, and `compare`.

use bench::Report;
use bench::report::{compare, prediction_error_pct};
use report::{CellSummary, JobRow, MeanStd};

fn ms(mean: f64) -> MeanStd {
    MeanStd { mean, std: 0.0 }
}

fn cell(sched: &str, tasks: u32, user: f64, elapsed: f64, hackbench: f64) -> CellSummary {
    CellSummary {
        scheduler: sched.into(),
        options: vec![("k".into(), "v".into())],
        tasks,
        reps: 2,
        avg_user_s: ms(user),
        elapsed_s: ms(elapsed),
        total_user_s: ms(user * f64::from(tasks)),
        total_sys_s: ms(0.1),
        hackbench_s: ms(hackbench),
        jobs: vec![JobRow {
            node_pct: vec![25.0, 75.0],
            isched: Some(0),
            msched: 1,
            user_s: user,
            sys_s: 0.01,
            mem_pct: vec![100.0, 0.0],
            home_node: None,
            node_migrations: 1,
        }],
        node_migrations: 1.5,
        refused: [0.0; 3],
        events: 123.0,
        skipped_ticks: 0.0,
        jobs_ended_first: 0,
    }
}

fn report(machine: &str, results: Vec<CellSummary>) -> Report {
    Report {
        machine: machine.into(),
        problem_size: 1000,
        passes: 2,
        disturb: true,
        seed: 9,
        results,
    }
}

#[test]
fn documents_round_trip_exactly() {
    let r = report(
        "host",
        vec![
            cell("host", 2, 0.1 + 0.2, 1.0 / 3.0, 0.0),
            cell("host", 4, 1e-7, 12345.678901234567, 0.25),
        ],
    );
    let back = Report::parse(&r.to_json(), "x.json").expect("parses");
    assert_eq!(back, r);
}

#[test]
fn reading_is_lenient_with_optional_fields_and_names_the_file_on_errors() {
    let text = r#"{"machine": "m", "problem_size": 1, "passes": 1, "disturb": false, "seed": 1,
        "future_key": 3,
        "results": [{"scheduler": "o1", "tasks": 2, "reps": 1,
          "avg_user_s": {"mean": 1, "std": 0}, "elapsed_s": {"mean": 2, "std": 0},
          "total_user_s": {"mean": 2, "std": 0}, "total_sys_s": {"mean": 0, "std": 0},
          "hackbench_s": {"mean": 0, "std": 0}}]}"#;
    let r = Report::parse(text, "sim.json").expect("parses");
    assert_eq!(r.results[0].avg_user_s, ms(1.0));
    assert!(r.results[0].jobs.is_empty());
    for (bad, want) in [
        ("", "EOF"),
        ("[]", "expected a JSON object"),
        (r#"{"machine": "m"}"#, "missing field"),
        (
            &text.replace(r#""tasks": 2"#, r#""tasks": -2"#),
            "invalid value",
        ),
    ] {
        let e = Report::parse(bad, "sim.json").expect_err(bad).to_string();
        assert!(
            e.starts_with("sim.json: not a numa-test --json report"),
            "{e}"
        );
        assert!(e.contains(want), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn prediction_error_is_sim_over_bench_minus_one() {
    assert_eq!(prediction_error_pct(1.5, 1.0), Some(50.0));
    assert!((prediction_error_pct(0.9, 1.2).expect("defined") + 25.0).abs() < 1e-9);
    assert_eq!(prediction_error_pct(1.0, 0.0), None);
    assert_eq!(prediction_error_pct(f64::NAN, 1.0), None);
}

#[test]
fn compare_labels_clashing_columns_and_notes_what_is_not_comparable() {
    let sim = report("sim", vec![cell("host", 2, 1.2, 5.0, 1.0)]);
    let mut bench = report("host", vec![cell("host", 2, 1.0, 2.0, 0.0)]);
    bench.passes = 3;
    let out = compare(&sim, "s.json", &bench, "b.json");
    assert!(
        out.contains("sim:host") && out.contains("bench:host"),
        "{out}"
    );
    assert!(out.contains("note: passes differ (2 vs 3)"), "{out}");
    assert!(out.contains("+20.0%") && out.contains("+150.0%"), "{out}");

    let same = compare(&sim, "s.json", &sim, "s.json");
    assert!(!same.contains("note:"), "{same}");

    // A peak of threads against the simulator's processes is said; one of processes is not.
    let mut sim = report("sim", vec![cell("host", 2, 1.2, 5.0, 1.0)]);
    sim.disturb = true;
    let mut bench = report("host", vec![cell("host", 2, 1.0, 2.0, 0.9)]);
    bench.disturb = true;
    let peak = |tasks: &str| {
        vec![(
            "hackbench".to_string(),
            format!("20 groups of {tasks} at 3 s, ran in 2 of 2 runs"),
        )]
    };
    bench.results[0].options = peak("threads");
    let out = compare(&sim, "s.json", &bench, "b.json");
    assert!(
        out.contains("note: the benchmark's hackbench ran as threads"),
        "{out}"
    );
    bench.results[0].options = peak("processes");
    let out = compare(&sim, "s.json", &bench, "b.json");
    assert!(!out.contains("note:"), "{out}");
}

#[test]
fn compare_shows_how_user_time_grows_with_n_whatever_the_host_speed() {
    // The host is 1.5x slower than the model at every N, and its jobs slow each other
    // down by 2x at N = 4 where the model's slow down by 1.5x.
    let sim = report(
        "sim",
        vec![
            cell("linux", 1, 1.0, 3.0, 0.0),
            cell("linux", 4, 1.5, 4.0, 0.0),
        ],
    );
    let bench = report(
        "host",
        vec![
            cell("host", 1, 1.5, 3.0, 0.0),
            cell("host", 4, 3.0, 6.0, 0.0),
        ],
    );
    let out = compare(&sim, "s.json", &bench, "b.json");
    let block = out
        .split("== How AverageUserTime grows with N against host: U(N) / U(N=1)")
        .nth(1)
        .unwrap_or_else(|| panic!("no growth block in:\n{out}"));
    let n4 = block
        .lines()
        .find(|l| l.starts_with("N=4"))
        .expect("N=4 row");
    assert!(
        n4.contains("host 2.00x") && n4.contains("linux 1.50x (-25.0%)"),
        "{n4}"
    );
    // One task count only: nothing to grow from.
    let one = report("host", vec![cell("host", 1, 1.5, 3.0, 0.0)]);
    assert!(!compare(&sim, "s.json", &one, "b.json").contains("grows with N"));
    assert_eq!(bench::report::growth_ratio(Some(2.0), Some(0.0)), None);
    assert_eq!(bench::report::growth_ratio(None, Some(1.0)), None);
}

/// `compare`'s inputs: a FIFO or a device is refused at once, naming the file, instead of
/// blocking forever or reading `/dev/zero` until memory runs out.
#[test]
fn a_fifo_or_device_as_a_report_is_refused_at_once() {
    let e = Report::read("/dev/zero").expect_err("device").to_string();
    assert_eq!(e, "/dev/zero: not a regular file (a character device)");
    let dir = std::env::temp_dir().join(format!("homenode-bench-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).expect("mkdir");
    let fifo = dir.join("bench.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    let result = Report::read(fifo.to_str().expect("utf-8"));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(made.success());
    let e = result.expect_err("fifo").to_string();
    assert!(
        e.ends_with("bench.json: not a regular file (a FIFO)"),
        "{e}"
    );
}
