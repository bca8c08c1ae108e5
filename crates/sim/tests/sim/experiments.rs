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

#[test]
fn the_shipped_experiments_parse() {
    let all = experiments::load_all(None).expect("built-in experiments");
    let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["azusa-a-to-f", "tx7-node-affine", "wildfire-pmqs-vs-aa"]
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    assert_eq!(experiments::load_all(Some(&dir)).expect("files"), all);
    assert!(experiments::find(&all, "nope").is_err());
}

#[test]
fn an_experiment_run_is_reproducible_to_the_byte() {
    for text in [TINY, TINY_MIX] {
        let spec = ExperimentSpec::parse(text, "tiny.toml").expect("valid");
        let a = experiments::run(&spec, None, &|| {}).expect("run");
        let b = experiments::run(&spec, None, &|| {}).expect("run");
        assert_eq!(a.markdown, b.markdown);
        assert_eq!(a.json(), b.json());
        assert_eq!(a.charts, b.charts);
        assert!(a.markdown.contains("Model assumptions"));
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
    let o = experiments::run(&spec, Some(1), &|| {}).expect("run");
    assert_eq!(o.numa_test.len(), 3 * 2);
    assert!(
        o.markdown
            .contains("| N | `o1` | `pool:initial_lb=on` | `linux-2.6-numa` |")
    );
    assert!(o.markdown.contains("initial_lb=on"));
    assert!(o.markdown.contains("Relative gain over `o1`"));
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
