//! The placement scoreboard (`[scoreboard]` experiments): a small board parses, runs every
//! configuration of every row with a best mark, is reproducible to the byte, and bad input
//! gives one line naming the file, the line, the key and the valid choices.

use sim::experiments::{self, ExperimentError, ExperimentSpec};

/// A tiny board: every row kind, two schedulers, three placements, 2 repetitions (a few
/// seconds in a debug build).
const TINY_BOARD: &str = r#"
name = "tiny-board"
title = "tiny scoreboard"
reps = 2
seed = 3

[scoreboard]
schedulers = ["linux", "linux:numa_balancing=off"]
placements = ["none", "homenode:min_rss_mib=1", "numad"]
focus = ["linux", "homenode:min_rss_mib=1"]
baseline = ["linux", "none"]

[[scoreboard.rows]]
workload = "numa_test"
machine = "nodes=2,cpus-per-node=2"
tasks = [2]
tasks_per_cpu = [1]
problem_size = 20000
historical = ["o1"]

[[scoreboard.rows]]
workload = "light-load"
machine = "nodes=2,cpus-per-node=8"
iterations = 1e5

[[scoreboard.rows]]
workload = "convergence"
machine = "nodes=2,cpus-per-node=4"
shapes = ["2x1"]
watch_s = 1.5

[[scoreboard.rows]]
workload = "oltp"
machine = "nodes=2,cpus-per-node=4"
threads = [2]
tx_per_thread = 5

[[scoreboard.rows]]
workload = "numa02"
machine = "nodes=2,cpus-per-node=2"
loops = 1
"#;

fn parse_err(text: &str) -> String {
    match ExperimentSpec::parse(text, "x.toml") {
        Err(e @ ExperimentError::Parse { .. }) => e.to_string(),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn a_small_board_parses() {
    let spec = ExperimentSpec::parse(TINY_BOARD, "tiny.toml").expect("valid");
    let b = spec.scoreboard.as_ref().expect("a scoreboard");
    assert_eq!(b.rows.len(), 5);
    assert_eq!(b.placements.len(), 3);
    assert_eq!(spec.reps, 2);
    assert!(spec.machine.is_empty() && spec.schedulers.is_empty());
}

/// Runs `spec`, checking it makes as many runs as planned (what the progress bar counts to).
fn run_as_planned(spec: &ExperimentSpec) -> experiments::Outcome {
    let runs = std::sync::atomic::AtomicU64::new(0);
    let tick = || {
        runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    };
    let a = experiments::run(spec, None, &tick).expect("run");
    assert_eq!(runs.into_inner(), experiments::planned_runs(spec, None));
    a
}

#[test]
fn a_tiny_board_has_every_configuration_and_a_best_mark_and_is_reproducible() {
    let spec = ExperimentSpec::parse(TINY_BOARD, "tiny.toml").expect("valid");
    let a = run_as_planned(&spec);
    let r = a.scoreboard.as_ref().expect("scoreboard results");
    // numa_test: N=2 and N=4 (1 x 4 CPUs); then one row each.
    let sizes: Vec<(&str, &str)> = r
        .rows
        .iter()
        .map(|x| (x.workload.as_str(), x.size.as_str()))
        .collect();
    assert_eq!(
        sizes,
        [
            ("numa_test", "N=2"),
            ("numa_test", "N=4"),
            ("light-load", ""),
            ("convergence", "2x1"),
            ("oltp", "2 threads"),
            ("numa02", ""),
        ]
    );
    for row in &r.rows {
        let want = if row.workload == "numa_test" { 9 } else { 6 };
        assert_eq!(row.configs.len(), want, "{}", row.workload);
        for c in &row.configs {
            assert_eq!(
                c.error, None,
                "{} {} {}",
                row.workload, c.scheduler, c.placement
            );
            assert_eq!(c.values.len(), 2, "2 repetitions");
            assert!(c.mean > 0.0);
            // numa_test runs hackbench beside its jobs and says how long it took; the other
            // workloads have no disturbance.
            let hackbench = c.hackbench_s.map(|h| h.mean);
            if row.workload == "numa_test" {
                assert!(hackbench.is_some_and(|h| h > 0.0), "{} {c:?}", row.size);
            } else {
                assert_eq!(hackbench, None, "{}", row.workload);
            }
        }
        let best = row.best.expect("a best configuration");
        let higher = row.higher_is_better;
        assert!(row.configs.iter().all(|c| if higher {
            c.mean <= row.configs[best].mean
        } else {
            c.mean >= row.configs[best].mean
        }));
        let f = row.focus.expect("the focus ran");
        assert_eq!(row.configs[f].scheduler, "linux");
        assert_eq!(row.configs[f].placement, "homenode:min_rss_mib=1");
        let st = row.standing.as_ref().expect("standing");
        assert!(st.vs_best_pct >= 0.0);
        assert!(st.within_one_std || f != best);
    }
    let md = &a.markdown;
    assert!(
        md.contains("## Where `linux + homenode:min_rss_mib=1` stands"),
        "{md}"
    );
    assert!(md.contains("| `o1` |"), "historical scheduler row: {md}");
    assert!(
        md.contains("### hackbench beside numa_test's ElapsedTime")
            && md.contains("HackbenchTime (s), mean(stddev), the same runs:"),
        "hackbench's time beside the numa_test rows: {md}"
    );
    assert!(md.contains("**"), "a best mark: {md}");
    // The numa_test rows state their size; their tiny jobs end before hackbench, which the
    // report says per configuration with the key to change.
    let size = sim::numa_test::JobSize {
        problem_size: 20000,
        passes: 100,
        auto: false,
    };
    assert_eq!(r.rows[0].numa_size, Some(size));
    assert!(md.contains("numa_test size: PROBLEMSIZE 20000, 100 passes (given)."));
    assert!(
        md.contains(
            "warning: numa_test nodes=2,cpus-per-node=2 N=2, linux + none: the jobs ended \
             before hackbench did in 2 of 2 repetitions"
        ) && md.contains("raise `passes` of its `[[scoreboard.rows]]` entry (now 100)"),
        "{md}"
    );
    assert_eq!(r.rows[0].configs[0].jobs_ended_first, 2);
    assert!(a.charts.iter().any(|(n, _)| n == "standing.svg"));
    assert!(a.charts.iter().all(|(_, svg)| svg.starts_with("<svg")));
    assert_eq!(a.charts.len(), 1 + r.rows.len());
    // Same seed, same bytes; --reps overrides the repetitions.
    let b = experiments::run(&spec, None, &|| {}).expect("run");
    assert_eq!(a.markdown, b.markdown);
    assert_eq!(a.json(), b.json());
    assert_eq!(a.charts, b.charts);
    assert!(a.json().contains("\"scoreboard\""));
    // --reps overrides the repetitions (on the numa_test row alone, to keep the test short).
    let end = TINY_BOARD.find("[[scoreboard.rows]]\nworkload = \"light-load\"");
    let first = &TINY_BOARD[..end.expect("the light-load row")];
    let spec = ExperimentSpec::parse(first, "tiny.toml").expect("valid");
    let one = experiments::run(&spec, Some(1), &|| {}).expect("run");
    let r1 = one.scoreboard.expect("results");
    assert_eq!(r1.reps, 1);
    assert!(
        r1.rows
            .iter()
            .all(|x| x.configs.iter().all(|c| c.values.len() == 1))
    );
}

#[test]
fn bad_scoreboard_input_is_one_line_with_file_line_key_and_choices() {
    // An unknown placement: the line of `placements`, the valid policies.
    let e = parse_err(&TINY_BOARD.replace("\"numad\"]", "\"numactl\"]"));
    assert!(e.starts_with("x.toml:9:"), "{e}");
    assert!(e.contains("placements") && e.contains("numactl"), "{e}");
    assert!(e.contains("homenode") && e.contains("numad"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    // An unknown scheduler in a row: that row's line of `historical`, the valid ones.
    let e = parse_err(&TINY_BOARD.replace("[\"o1\"]", "[\"o2\"]"));
    assert!(e.starts_with("x.toml:19:"), "{e}");
    assert!(
        e.contains("rows[0].historical") && e.contains("unknown scheduler `o2`"),
        "{e}"
    );
    assert!(e.contains("simple-numa"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    // An unknown top-level scheduler.
    let e = parse_err(&TINY_BOARD.replace("[\"linux\", \"linux:", "[\"linus\", \"linux:"));
    assert!(
        e.starts_with("x.toml:8:") && e.contains("schedulers") && e.contains("linus"),
        "{e}"
    );
    // A bad placement option names the key.
    let e = parse_err(&TINY_BOARD.replace(
        "\"homenode:min_rss_mib=1\", \"numad\"",
        "\"homenode:min_rss=1\", \"numad\"",
    ));
    assert!(e.starts_with("x.toml:9:") && e.contains("min_rss"), "{e}");
    // A focus that is not a configuration lists the choices.
    let e = parse_err(&TINY_BOARD.replace("focus = [\"linux\"", "focus = [\"o1\""));
    assert!(
        e.starts_with("x.toml:10:") && e.contains("focus") && e.contains("valid: linux"),
        "{e}"
    );
    for (from, to, want) in [
        ("workload = \"oltp\"", "workload = \"tpcc\"", "numa_test"),
        ("loops = 1", "threads = [1]", "rows[4].threads"),
        ("threads = [2]", "threads = []", "rows[3].threads"),
        ("\"2x1\"", "\"2by1\"", "rows[2].shapes"),
        (
            "machine = \"nodes=2,cpus-per-node=8\"",
            "machine = \"no-such-box\"",
            "rows[1].machine",
        ),
        ("reps = 2", "reps = 0", "reps"),
        ("reps = 2", "reps = 2\nmachine = \"azusa16\"", "machine"),
    ] {
        let e = parse_err(&TINY_BOARD.replace(from, to));
        assert!(e.starts_with("x.toml:") && e.contains(want), "{to}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn the_shipped_board_runs_azusas_historical_schedulers() {
    let all = experiments::load_all(None).expect("built-in experiments");
    let board = experiments::find(&all, "placement").expect("placement");
    let azusa = experiments::find(&all, "azusa-a-to-f").expect("azusa");
    let b = board.scoreboard.expect("a scoreboard");
    let azusa_rows: Vec<_> = b.rows.iter().filter(|g| g.machine == "azusa16").collect();
    assert!(!azusa_rows.is_empty());
    for g in azusa_rows {
        assert_eq!(g.historical, azusa.schedulers);
    }
    assert!(
        b.rows
            .iter()
            .filter(|g| g.machine != "azusa16")
            .all(|g| g.historical.is_empty())
    );
}

/// The shipped board's numa_test rows on today's machines measure the jobs: at their `passes`
/// the jobs of the smallest row (half a task per CPU) outlast hackbench under `linux`.
#[test]
fn the_shipped_boards_numa_test_jobs_outlast_hackbench() {
    use sim::numa_test::{figures, run_one};
    use sim::workload::NumaTestParams;
    let all = experiments::load_all(None).expect("built-in experiments");
    let board = experiments::find(&all, "placement").expect("placement");
    let b = board.scoreboard.expect("a scoreboard");
    let linux = sim::sched::SchedSpec::parse("linux").expect("linux");
    let mut checked = 0;
    for g in b.rows.iter().filter(|g| g.workload.name() == "numa_test") {
        let topo = std::sync::Arc::new(topo::resolve_machine(&g.machine).expect("machine"));
        if topo.name == "azusa16" {
            continue;
        }
        let n = *g.task_counts(topo.nr_cpus()).iter().min().expect("a count");
        let size = sim::numa_test::resolve_size(
            &topo,
            g.problem_size,
            g.passes,
            &NumaTestParams::default(),
        )
        .expect("size");
        let params = size.apply(&NumaTestParams {
            tasks: n,
            ..Default::default()
        });
        let r = run_one(&topo, &linux, &params, 1).expect("run");
        let f = figures(&r, topo.nr_nodes());
        assert!(!f.jobs_ended_first, "{} N={n}", g.machine);
        assert!(f.elapsed_s > 6.0, "{} N={n}: {}", g.machine, f.elapsed_s);
        checked += 1;
    }
    assert_eq!(checked, 2, "the epyc-nps4 and xeon2s rows");
}
