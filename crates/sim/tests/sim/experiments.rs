//! Experiment files: strict parsing with one-line errors, the shipped files, and
//! reproducible reports.

use sim::experiments::{self, ExperimentError, ExperimentSpec};

const TINY: &str = r#"
name = "tiny"
title = "tiny numa_test"
machine = "nodes=2,cpus-per-node=2"
schedulers = ["o1", "pool:initial_lb=on", "linux-2.6-numa"]
reps = 2
seed = 7

[numa_test]
tasks = [2, 4]
no_hackbench = [4]
problem_size = 20000
tables = ["average_user_time", "elapsed_time"]
gain_over = "o1"
"#;

const TINY_MIX: &str = r#"
name = "tiny-mix"
title = "tiny mix"
machine = "nodes=2,cpus-per-node=2"
schedulers = ["pmqs", "aa"]
reps = 2

[mix]
builds = 2
jobs = 6
parallelism = 3
bonnies = 1
"#;

fn parse_err(text: &str) -> String {
    match ExperimentSpec::parse(text, "x.toml") {
        Err(e @ ExperimentError::Parse { .. }) => e.to_string(),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn a_bad_key_names_file_line_and_key() {
    let text = TINY.replace("problem_size = 20000", "problem_sise = 20000");
    let e = parse_err(&text);
    assert!(e.starts_with("x.toml:12:"), "{e}");
    assert!(
        e.contains("problem_sise") && e.contains("problem_size"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
    let e = parse_err(&TINY.replace("reps = 2", "reps = 2\ncolour = \"red\""));
    assert!(e.starts_with("x.toml:7:") && e.contains("colour"), "{e}");
}

#[test]
fn bad_values_are_named() {
    for (from, to, want) in [
        ("\"o1\", ", "\"o2\", ", "unknown scheduler `o2`"),
        ("initial_lb=on", "initial_lb=yesplease", "initial_lb"),
        ("nodes=2,cpus-per-node=2", "no-such-machine", "machine"),
        ("no_hackbench = [4]", "no_hackbench = [5]", "no_hackbench"),
        ("gain_over = \"o1\"", "gain_over = \"aa\"", "gain_over"),
        ("\"average_user_time\"", "\"speed\"", "average_user_time"),
        ("reps = 2", "reps = 0", "reps"),
    ] {
        let e = parse_err(&TINY.replace(from, to));
        assert!(e.contains(want), "{to}: {e}");
        assert!(e.starts_with("x.toml:") && e.lines().count() == 1, "{e}");
    }
}

/// A bad `disks` in a mix is one line naming the file, the line and the key.
#[test]
fn bad_mix_disks_are_named() {
    for (from, to, want) in [
        (
            "bonnies = 1",
            "bonnies = 1\ndisks = 0",
            "x.toml:13: disks: must be at least 1",
        ),
        (
            "bonnies = 1",
            "bonnies = 1\ndisks = -1",
            "x.toml:13: mix.disks",
        ),
        (
            "bonnies = 1",
            "bonnies = 1\ndisks = \"two\"",
            "x.toml:13: mix.disks",
        ),
        ("jobs = 6", "jobs = 60000", "jobs"),
    ] {
        let text = TINY_MIX.replace(from, to);
        let text = if want == "jobs" {
            text.replace("bonnies = 1", "bonnies = 1\ndisks = 1")
        } else {
            text
        };
        let e = parse_err(&text);
        assert!(e.contains(want), "{to}: {e}");
        assert!(e.starts_with("x.toml:") && e.lines().count() == 1, "{e}");
    }
}

/// The line number (from 1) of the last line of `text` that is `line`.
fn last_line_of(text: &str, line: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().rposition(|l| *l == line).expect("present") + 1
}

/// A bad numa_test sweep points at its own `[[sweep]]` header.
#[test]
fn a_bad_sweep_names_the_line_of_its_table() {
    let entry = |option: &str| {
        format!(
            "[[sweep]]\nscheduler = \"o1\"\noption = \"{option}\"\nvalues = [\"1\"]\ntasks = [2]\nreps = 1\nmetric = \"average_user_time\"\nwhy = \"w\"\n"
        )
    };
    let good = format!("{TINY}\n{}", entry("machine.mlp"));
    ExperimentSpec::parse(&good, "x.toml").expect("a good sweep");
    let text = format!("{good}\n{}", entry("machine.tlb"));
    let line = last_line_of(&text, "[[sweep]]");
    let e = parse_err(&text);
    assert!(e.starts_with(&format!("x.toml:{line}: sweep 2:")), "{e}");
    assert!(
        e.contains("machine.tlb_entries") && e.lines().count() == 1,
        "{e}"
    );
}

/// Mix sweeps: a bad parameter, value or section is one line naming file, line and key.
#[test]
fn bad_mix_sweeps_are_named() {
    let with_disks = TINY_MIX.replace("bonnies = 1", "bonnies = 1\ndisks = 1\nseek_ms = 5");
    let sweep = |param: &str, values: &str| {
        format!(
            "{with_disks}\n[[mix_sweep]]\nparam = \"{param}\"\nvalues = {values}\nreps = 1\nwhy = \"w\"\n"
        )
    };
    ExperimentSpec::parse(&sweep("disks", "[1, 2]"), "x.toml").expect("a good sweep");
    // The line is the bad sweep's own `[[mix_sweep]]` header, the second here.
    let two = format!(
        "{}[[mix_sweep]]\nparam = \"rpm\"\nvalues = [-3]\nreps = 1\nwhy = \"w\"\n",
        sweep("disks", "[1, 2]")
    );
    let header = two.lines().filter(|l| *l == "[[mix_sweep]]").count();
    assert_eq!(header, 2);
    let line = last_line_of(&two, "[[mix_sweep]]");
    let e = parse_err(&two);
    assert!(
        e.starts_with(&format!("x.toml:{line}: mix_sweep 2:")),
        "{e}"
    );
    for (text, want) in [
        (sweep("seek", "[1]"), "mix_sweep 1: unknown param `seek`"),
        (sweep("disks", "[0.5]"), "disks = 0.5"),
        (sweep("rpm", "[-3]"), "positive"),
        (
            TINY_MIX.replace("bonnies = 1", "bonnies = 1\nseek_ms = 0"),
            "seek_ms: must be a positive number",
        ),
        (
            format!(
                "{TINY}\n[[mix_sweep]]\nparam = \"disks\"\nvalues = [1]\nreps = 1\nwhy = \"w\"\n"
            ),
            "only [mix] experiments",
        ),
    ] {
        let e = parse_err(&text);
        assert!(e.contains(want), "{want}: {e}");
        assert!(e.starts_with("x.toml:") && e.lines().count() == 1, "{e}");
    }
}

#[test]
fn the_shipped_experiments_parse() {
    let all = experiments::load_all(None).expect("built-in experiments");
    let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "autonuma-bench",
            "azusa-a-to-f",
            "convergence",
            "light-load-2020",
            "oltp-numa",
            "placement",
            "tx7-node-affine",
            "wildfire-pmqs-vs-aa"
        ]
    );
    for n in [
        "autonuma-bench",
        "convergence",
        "light-load-2020",
        "oltp-numa",
    ] {
        let e = experiments::find(&all, n).expect("study");
        assert!(e.study.is_some() && e.schedulers.is_empty(), "{n}");
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    assert_eq!(experiments::load_all(Some(&dir)).expect("files"), all);
    assert!(experiments::find(&all, "nope").is_err());
}

/// Runs `spec` and counts its runs (the calls of its tick).
fn counted(spec: &ExperimentSpec, reps: Option<u32>) -> (experiments::Outcome, u64) {
    let n = std::sync::atomic::AtomicU64::new(0);
    let tick = || {
        n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    };
    let o = experiments::run(spec, reps, &tick).expect("run");
    (o, n.into_inner())
}

#[test]
fn an_experiment_run_is_reproducible_to_the_byte() {
    for text in [TINY, TINY_MIX] {
        let spec = ExperimentSpec::parse(text, "tiny.toml").expect("valid");
        let (a, runs) = counted(&spec, None);
        assert_eq!(
            runs,
            experiments::planned_runs(&spec, None),
            "{}",
            spec.name
        );
        let b = experiments::run(&spec, None, &|| {}).expect("run");
        assert_eq!(a.markdown, b.markdown);
        assert_eq!(a.json(), b.json());
        assert_eq!(a.charts, b.charts);
        // The model assumptions come once, whatever the number of tables.
        assert_eq!(
            a.markdown.matches("Model assumptions").count(),
            1,
            "{}",
            a.markdown
        );
        assert_eq!(a.markdown.matches("*Latency ratio*").count(), 1);
        assert!(a.charts.iter().all(|(_, svg)| svg.starts_with("<svg")));
        // Another seed gives other numbers.
        let mut other = spec.clone();
        other.seed += 1;
        let c = experiments::run(&other, None, &|| {}).expect("run");
        assert_ne!(a.json(), c.json());
    }
}

#[test]
fn reports_have_one_column_per_scheduler_and_the_options() {
    let spec = ExperimentSpec::parse(TINY, "tiny.toml").expect("valid");
    let (o, runs) = counted(&spec, Some(1));
    assert_eq!(runs, experiments::planned_runs(&spec, Some(1)));
    assert_eq!(o.numa_test.len(), 3 * 2);
    assert!(
        o.markdown
            .contains("| N | `o1` | `pool:initial_lb=on` | `linux-2.6-numa` |")
    );
    assert!(o.markdown.contains("initial_lb=on"));
    assert!(o.markdown.contains("Relative gain over `o1`"));
    // The size is stated, and the cells whose tiny jobs ended before hackbench are named
    // with the key to change; N = 4 ran without hackbench and has nothing to warn about.
    assert!(
        o.markdown.contains(
            "numa_test size: PROBLEMSIZE 20000, 100 passes (given) (as the file gives it)"
        ),
        "{}",
        o.markdown
    );
    assert!(o.json().contains("\"numa_size\""));
    let warning = "warning: o1 N=2: the jobs ended before hackbench did in 1 of 1 rep, so \
                   ElapsedTime is hackbench's, not the jobs'; raise `passes` in `[numa_test]` \
                   (now 100)";
    assert!(o.markdown.contains(warning), "{}", o.markdown);
    assert_eq!(o.markdown.matches("warning: ").count(), 3, "{}", o.markdown);
    // N = 4 ran without hackbench.
    let quiet = o.numa_test.iter().filter(|c| c.tasks == 4);
    assert!(quiet.clone().count() == 3 && quiet.into_iter().all(|c| c.hackbench_s.mean == 0.0));
    let spec = ExperimentSpec::parse(TINY_MIX, "tiny.toml").expect("valid");
    let o = experiments::run(&spec, None, &|| {}).expect("run");
    for c in &o.mix {
        assert_eq!(c.build_s.len(), 4, "2 builds x 2 reps");
        assert!(c.build.min <= c.build.mean && c.build.mean <= c.build.max);
    }
}

/// Tiny study experiments, one per kind (a few seconds in a debug build).
const TINY_STUDIES: [&str; 4] = [
    r#"
name = "tiny-light"
title = "tiny light-load"
machine = "nodes=2,cpus-per-node=8"
seed = 3

[study]
kind = "light-load"
iterations = 1e6
"#,
    r#"
name = "tiny-oltp"
title = "tiny oltp"
machine = "nodes=2,cpus-per-node=4"

[study]
kind = "oltp"
threads = [2, 8]
tx_per_thread = 5
"#,
    r#"
name = "tiny-autonuma"
title = "tiny autonuma"
machine = "nodes=2,cpus-per-node=2"

[study]
kind = "autonuma"
extra_machines = ["nodes=2,cpus-per-node=4"]
loops = 1
numa02_loops = 1
sample_ms = 100
"#,
    r#"
name = "tiny-convergence"
title = "tiny convergence"
machine = "nodes=2,cpus-per-node=4"

[study]
kind = "convergence"
shapes = ["2x1"]
modes = ["off", "on"]
watch_s = 1.5
"#,
];

#[test]
fn a_bad_study_key_names_file_line_and_key() {
    let text = TINY_STUDIES[1].replace("tx_per_thread = 5", "tx_per_thred = 5");
    let e = parse_err(&text);
    assert!(
        e.starts_with("x.toml:9:") && e.contains("tx_per_thred"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
    // A key of another kind.
    let e = parse_err(&TINY_STUDIES[1].replace("tx_per_thread = 5", "loops = 5"));
    assert!(e.starts_with("x.toml:9:") && e.contains("loops"), "{e}");
    assert!(e.contains("`oltp`") && e.contains("tx_per_thread"), "{e}");
    // An unknown kind lists the valid ones.
    let e = parse_err(&TINY_STUDIES[1].replace("kind = \"oltp\"", "kind = \"tpcc\""));
    assert!(
        e.starts_with("x.toml:7:") && e.contains("light-load"),
        "{e}"
    );
    for (from, to, want) in [
        ("[study]", "schedulers = [\"o1\"]\n[study]", "schedulers"),
        ("[study]", "reps = 3\n[study]", "reps"),
        ("threads = [2, 8]", "threads = [0]", "threads"),
    ] {
        let e = parse_err(&TINY_STUDIES[1].replace(from, to));
        assert!(e.contains(want) && e.lines().count() == 1, "{to}: {e}");
    }
    let conv = TINY_STUDIES[3];
    for (from, to) in [
        ("\"2x1\"", "\"2by1\""),
        ("\"on\"]", "\"sometimes\"]"),
        ("watch_s = 1.5", "watch_s = 0"),
    ] {
        let e = parse_err(&conv.replace(from, to));
        assert!(e.starts_with("x.toml:") && e.lines().count() == 1, "{e}");
    }
}

#[test]
fn a_study_experiment_reports_its_table_and_is_reproducible() {
    let want = [
        "| numa_imbalance | run time (s) |",
        "| threads | tx/s balancing off |",
        "| program | numa_balancing | elapsed (s) |",
        "| processes x threads | numa_balancing |",
    ];
    for (text, table) in TINY_STUDIES.iter().zip(want) {
        let spec = ExperimentSpec::parse(text, "tiny.toml").expect("valid");
        let (a, runs) = counted(&spec, Some(5));
        assert_eq!(
            runs,
            experiments::planned_runs(&spec, Some(5)),
            "{}",
            spec.name
        );
        let b = experiments::run(&spec, None, &|| {}).expect("run");
        assert!(a.markdown.contains(table), "{}", a.markdown);
        // The assumptions once per machine, after the tables.
        let machines = spec.study.as_ref().expect("study").machines(&spec.machine);
        assert_eq!(
            a.markdown.matches("## Model assumptions on").count(),
            machines.len(),
            "{}",
            a.markdown
        );
        assert!(a.markdown.contains("## Parameters"));
        assert_eq!(a.markdown, b.markdown, "--reps is ignored by a study");
        assert_eq!(a.json(), b.json());
        assert_eq!(a.charts, b.charts);
        assert!(!a.charts.is_empty());
        assert!(a.charts.iter().all(|(_, svg)| svg.starts_with("<svg")));
        assert!(a.json().contains("\"study\""));
    }
}

#[test]
fn a_cut_study_says_what_was_cut() {
    let spec = ExperimentSpec::parse(TINY_STUDIES[2], "tiny.toml").expect("valid");
    let o = experiments::run(&spec, None, &|| {}).expect("run");
    assert!(
        o.markdown.contains("`loops` 1 instead of 20"),
        "{}",
        o.markdown
    );
    assert!(o.markdown.contains("not tuning"));
    // Both machines, with per-node memory charts of each.
    assert_eq!(o.markdown.matches("### autonuma-benchmark on").count(), 2);
    assert!(o.charts.len() >= 2 * 7, "{}", o.charts.len());
}

/// A cell can run without hackbench in one column only (in the AzusA comparison
/// only scheduler E's N = 64 column did); the other columns of that row keep it, and the
/// rows not named are unchanged.
#[test]
fn one_column_can_run_without_hackbench() {
    let text = TINY.replace(
        "no_hackbench = [4]",
        "no_hackbench = [{ sched = \"o1\", tasks = 4 }]",
    );
    let spec = ExperimentSpec::parse(&text, "x.toml").expect("valid");
    let o = experiments::run(&spec, Some(1), &|| {}).expect("runs");
    let h = |sched: &str, n: u32| {
        o.numa_test
            .iter()
            .find(|c| c.scheduler == sched && c.tasks == n)
            .expect("cell")
            .hackbench_s
            .mean
    };
    assert_eq!(h("o1", 4), 0.0);
    assert!(h("linux-2.6-numa", 4) > 0.0);
    assert!(h("o1", 2) > 0.0);
    let e = parse_err(&TINY.replace(
        "no_hackbench = [4]",
        "no_hackbench = [{ sched = \"aa\", tasks = 4 }]",
    ));
    assert!(
        e.contains("no_hackbench") && e.contains("`aa` is not one of"),
        "{e}"
    );
}

/// Sensitivity sweeps. The row of the default value (`o1`'s `cache_decay`, 11 ms)
/// reproduces the column's own cell (same spec, same seeds); a sweep of a column that does not exist is refused.
#[test]
fn a_sweep_row_at_the_default_reproduces_its_column() {
    let text = format!(
        "{TINY}\n[[sweep]]\nscheduler = \"o1\"\noption = \"cache_decay\"\nvalues = [\"11ms\", \"1ms\"]\ntasks = [2]\nreps = 2\nmetric = \"elapsed_time\"\nwhy = \"an assumption\"\n"
    );
    let spec = ExperimentSpec::parse(&text, "x.toml").expect("valid");
    let o = experiments::run(&spec, None, &|| {}).expect("runs");
    let own = o
        .numa_test
        .iter()
        .find(|c| c.scheduler == "o1" && c.tasks == 2)
        .expect("cell");
    let r = &o.sweeps[0];
    assert_eq!(r.rows.len(), 2);
    assert_eq!(r.rows[0].1[0].elapsed_s, own.elapsed_s);
    assert!(o.markdown.contains("## Sensitivity: `cache_decay` of `o1`"));
    assert!(o.json().contains("\"sweeps\""));
    let e = parse_err(&text.replace("scheduler = \"o1\"", "scheduler = \"aa\""));
    assert!(
        e.contains("sweep 1: `aa` is not one of `schedulers`"),
        "{e}"
    );
    let e = parse_err(&text.replace("values = [\"11ms\", \"1ms\"]", "values = [\"soon\"]"));
    assert!(e.contains("sweep 1: cache_decay = soon"), "{e}");
}
