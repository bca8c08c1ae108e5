//! Inputs that used to exhaust memory or never end. Every one is refused with one
//! line naming the key (and file and line where there is one) and the limit, or stopped by
//! the engine's own guards with one line naming the program.

use crate::common::{fails_at_runtime, fails_with, scratch_in};

const EXP: &str = r#"
name = "NAME"
title = "budget"
machine = "nodes=2,cpus-per-node=2"
schedulers = ["o1"]
reps = 1

[numa_test]
tasks = [TASKS]
problem_size = SIZE
tables = ["elapsed_time"]
"#;

fn exp_dir(dir: &str, name: &str, tasks: &str, size: &str) -> String {
    let text = EXP
        .replace("NAME", name)
        .replace("TASKS", tasks)
        .replace("SIZE", size);
    let f = scratch_in(dir, "e.toml", &text);
    std::path::Path::new(&f)
        .parent()
        .expect("dir")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn experiment_files_over_budget() {
    let d = exp_dir("budget-tasks", "t", "1000000000", "1000");
    fails_at_runtime(
        &["experiments", "--dir", &d, "list"],
        &["e.toml:9:", "`tasks` = 1000000000", "limit of 65536 tasks"],
    );
    let d = exp_dir("budget-size", "t", "4", "1000000000000000");
    fails_at_runtime(
        &["experiments", "--dir", &d, "list"],
        &[
            "e.toml:10:",
            "`problem_size`",
            "more memory than the machine has",
        ],
    );
    let d = exp_dir("budget-type", "t", "\"four\"", "1000");
    fails_at_runtime(
        &["experiments", "--dir", &d, "list"],
        &["e.toml:9:", "numa_test.tasks", "invalid type"],
    );
    let d = exp_dir("budget-name", "../../escaped", "4", "1000");
    fails_at_runtime(
        &["experiments", "--dir", &d, "list"],
        &["e.toml:2:", "`../../escaped`", "a-z, 0-9"],
    );
    let d = exp_dir("budget-dup", "same", "4", "1000");
    scratch_in(
        "budget-dup",
        "f.toml",
        &EXP.replace("NAME", "same")
            .replace("TASKS", "4")
            .replace("SIZE", "1000"),
    );
    fails_at_runtime(
        &["experiments", "--dir", &d, "list"],
        &["f.toml", "name `same` is already used by", "e.toml"],
    );
    let d = exp_dir("budget-reps", "t", "4", "1000");
    fails_with(
        &[
            "experiments",
            "--dir",
            &d,
            "run",
            "t",
            "--reps",
            "1000000000",
        ],
        &["`--reps` = 1000000000", "limit of 1000 repetitions"],
    );
}

#[test]
fn study_keys_over_budget() {
    for (key, value, want) in [
        ("shapes", "[\"1000000x1000000\"]", "limit of 65536 tasks"),
        ("watch_s", "1e12", "limit of 3600 simulated seconds"),
    ] {
        let text = format!(
            "name = \"s\"\ntitle = \"s\"\nmachine = \"epyc-nps4\"\n\n[study]\nkind = \"convergence\"\n{key} = {value}\n"
        );
        let f = scratch_in(&format!("budget-study-{key}"), "s.toml", &text);
        let d = std::path::Path::new(&f)
            .parent()
            .expect("dir")
            .to_string_lossy()
            .into_owned();
        fails_at_runtime(
            &["experiments", "--dir", &d, "list"],
            &["s.toml:7:", key, want],
        );
    }
    for (kind, key, value) in [
        ("light-load", "iterations", "1e30"),
        ("light-load", "iterations", "1e11"),
        ("autonuma", "loops", "4294967295"),
        ("oltp", "tx_per_thread", "2000000"),
    ] {
        let text = format!(
            "name = \"s\"\ntitle = \"s\"\nmachine = \"kunpeng96\"\n\n[study]\nkind = \"{kind}\"\n{key} = {value}\n"
        );
        let f = scratch_in(&format!("budget-study-{key}"), "s.toml", &text);
        let d = std::path::Path::new(&f)
            .parent()
            .expect("dir")
            .to_string_lossy()
            .into_owned();
        fails_at_runtime(
            &["experiments", "--dir", &d, "list"],
            &["s.toml:7:", key, "10 x the reference size"],
        );
    }
    // Sampling finer than a tenth of the reference interval; an oltp client count whose
    // transactions alone take more steps than a run may.
    for (kind, key, value, want) in [
        ("autonuma", "sample_ms", "1", "at least 50"),
        ("oltp", "threads", "[65536]", "limit of 1000000000 steps"),
    ] {
        let text = format!(
            "name = \"s\"\ntitle = \"s\"\nmachine = \"kunpeng96\"\n\n[study]\nkind = \"{kind}\"\n{key} = {value}\n"
        );
        let f = scratch_in(&format!("budget-study-{key}"), "s.toml", &text);
        let d = std::path::Path::new(&f)
            .parent()
            .expect("dir")
            .to_string_lossy()
            .into_owned();
        fails_at_runtime(
            &["experiments", "--dir", &d, "list"],
            &["s.toml:7:", key, want],
        );
    }
}

const WL: &str = r#"
name = "w"
[[program]]
name = "w"
job = true
phase = [PHASES]
[[launch]]
program = "w"
count = COUNT
"#;

fn workload(dir: &str, phases: &str, count: &str) -> String {
    scratch_in(
        dir,
        "w.toml",
        &WL.replace("PHASES", phases).replace("COUNT", count),
    )
}

#[test]
fn workload_files_over_budget_or_without_progress() {
    // A loop whose phases take no time, or next to none: stopped by the rate of steps once
    // past the first 20,000,000, before the 50,000,000 steps without time passing.
    let per_second: &[&str] = &[
        "w.toml: ",
        "program `w`",
        "more than 10000000 steps per CPU per simulated second",
        "loop counts",
    ];
    let over_steps: &[&str] = &[
        "w.toml: ",
        "`loop.count`",
        "limit of 1000000000 steps",
        "program `w`",
    ];
    for (dir, phases, count, want) in [
        (
            "budget-wl-count",
            "{ compute = { cycles = 1e6 } }",
            "1000000000",
            &["launch of `w`", "limit of 65536 tasks"][..],
        ),
        (
            "budget-wl-spawn",
            "{ spawn = { program = \"w\", count = 4294967295 } }",
            "1",
            &["`spawn.count` = 4294967295"][..],
        ),
        (
            "budget-wl-empty",
            "{ loop = { count = 4294967295, body = [] } }",
            "1",
            over_steps,
        ),
        (
            "budget-wl-zero",
            "{ loop = { count = 100000000, body = [{ compute = { cycles = 0 } }] } }",
            "1",
            per_second,
        ),
        (
            "budget-wl-tiny",
            "{ loop = { count = 4294967295, body = [{ compute = { cycles = 1 } }] } }",
            "1",
            over_steps,
        ),
        (
            "budget-wl-nested",
            "{ loop = { count = 60000, body = [{ loop = { count = 60000, body = [{ compute = { cycles = 1 } }] } }] } }",
            "1",
            over_steps,
        ),
        (
            "budget-wl-sleep",
            "{ loop = { count = 400000000, body = [{ sleep = { us = 1 } }] } }",
            "1",
            over_steps,
        ),
        (
            "budget-wl-many",
            "{ loop = { count = 1000000, body = [{ kernel = { cycles = 1 } }] } }",
            "65536",
            over_steps,
        ),
        (
            "budget-wl-rate",
            "{ loop = { count = 200000000, body = [{ compute = { cycles = 1e-3 } }] } }",
            "1",
            &[
                "program `w`",
                "steps per CPU per simulated second",
                "loop counts",
            ][..],
        ),
        (
            "budget-wl-self",
            "{ spawn = { program = \"w\", count = 2 } }, { compute = { cycles = 1e6 } }",
            "1",
            &["program `w` creates more than 131072 tasks"][..],
        ),
    ] {
        let f = workload(dir, phases, count);
        fails_at_runtime(&["sim", "workload", &f, "--sched", "o1"], want);
    }
}

#[test]
fn workload_memory_over_budget() {
    let big = WL
        .replace("PHASES", "{ touch = \"r\" }")
        .replace("COUNT", "1")
        .replace(
            "job = true",
            "job = true\nregion = [{ name = \"r\", mib = 1e9 }]",
        );
    let f = scratch_in("budget-wl-mem", "w.toml", &big);
    fails_at_runtime(
        &["sim", "workload", &f, "--sched", "o1"],
        &["region `r`", "more than azusa16's 16384 MiB"],
    );
    // 65,536 processes each with a region of the machine's memory: refused once the page
    // groups made reach the limit, not by the host running out of memory.
    let full = WL
        .replace("PHASES", "{ compute = { cycles = 1e6 } }")
        .replace("COUNT", "65536")
        .replace(
            "job = true",
            "job = true\nregion = [{ name = \"r\", mib = 16384 }]",
        );
    let f = scratch_in("budget-wl-full", "w.toml", &full);
    for machine in ["azusa16", "xeon2s"] {
        fails_at_runtime(
            &["sim", "workload", &f, "--machine", machine],
            &[
                "w.toml: program `w`: `regions`",
                "limit of 16777216 page groups",
                "launch.count",
            ],
        );
    }
    fails_at_runtime(
        &["sim", "workload", "/dev/zero", "--sched", "o1"],
        &["/dev/zero: not a regular file"],
    );
}

#[test]
fn command_line_over_budget() {
    fails_with(
        &["sim", "numa-test", "--reps", "1000000000"],
        &["`--reps`", "limit of 1000"],
    );
    fails_with(
        &["sim", "numa-test", "--tasks", "1000000000"],
        &["`--tasks`", "limit of 65536"],
    );
    fails_with(
        &[
            "sim",
            "numa-test",
            "--threads",
            "100000",
            "--tasks",
            "4",
            "--reps",
            "1",
        ],
        &["`--threads` = 100000", "this host's CPUs"],
    );
}
