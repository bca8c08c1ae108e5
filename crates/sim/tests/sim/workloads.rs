//! kbuild and bonnie: they run to completion and show their defining shape.

use crate::common::*;
use sim::workload::kbuild::PipelineParams;
use sim::workload::mix::MixDisks;
use sim::workload::{BonnieParams, KbuildParams, MixParams, kbuild, mix};

fn small_build() -> KbuildParams {
    KbuildParams {
        jobs: 12,
        parallelism: 4,
        burst_cycles: vec![2e7, 5e7],
        heap_mib: 2,
        heap_ops: 1e4,
        make_cycles: 1e6,
        ..Default::default()
    }
}

#[test]
fn kbuild_runs_every_job_with_at_most_parallelism_at_once() {
    let topo = machine(SMALL);
    let r = run(&topo, &kbuild(&small_build()), "o1", 1);
    let jobs: Vec<_> = r.tasks.iter().filter(|t| t.job).collect();
    assert_eq!(jobs.len(), 12);
    // At no time do more than 4 compile jobs live.
    for j in &jobs {
        let overlapping = jobs
            .iter()
            .filter(|o| o.created <= j.created && o.exited > j.created)
            .count();
        assert!(overlapping <= 4, "{overlapping} jobs alive at once");
    }
    let make = r.tasks.iter().find(|t| t.program == "make").expect("make");
    assert!(make.exited >= jobs.iter().map(|j| j.exited).max().unwrap_or(0));
}

#[test]
fn bonnie_is_mostly_blocked_on_io() {
    let topo = machine(SMALL);
    let p = MixParams {
        builds: 0,
        kbuild: small_build(),
        bonnies: 2,
        bonnie: BonnieParams {
            ops: 200,
            ..Default::default()
        },
        disks: None,
    };
    let r = run(&topo, &mix(&p), "aa", 1);
    for t in r.tasks.iter().filter(|t| t.program == "bonnie") {
        let cpu = t.user_ns + t.sys_ns;
        let life = (t.exited - t.created) as f64;
        assert!(cpu < 0.2 * life, "bonnie ran {cpu} ns of {life} ns");
        assert!(t.sys_ns > t.user_ns, "its CPU time is mostly system time");
    }
}

#[test]
fn the_mix_times_each_build() {
    let topo = machine(SMALL);
    let p = MixParams {
        builds: 2,
        kbuild: small_build(),
        bonnies: 2,
        bonnie: BonnieParams {
            ops: 50,
            ..Default::default()
        },
        disks: None,
    };
    for s in ["pmqs", "pmqs:balance_period=off", "aa"] {
        let r = run(&topo, &mix(&p), s, 1);
        for b in 0..2 {
            let name = sim::workload::mix::make_name(b);
            assert!(r.tasks.iter().any(|t| t.program == name), "{s}: no {name}");
        }
    }
}

fn small_disk_mix(builds: u32, bonnies: u32, disks: u32) -> MixParams {
    MixParams {
        builds,
        kbuild: small_build(),
        bonnies,
        bonnie: BonnieParams {
            ops: 100,
            ..Default::default()
        },
        disks: Some(MixDisks {
            count: disks,
            params: Default::default(),
            pipeline: PipelineParams {
                pipe_chunks: 4,
                link_cycles: 1e6,
                ..Default::default()
            },
        }),
    }
}

/// With a disk queue each compile job is the 2.4 process tree: sh, gcc, cpp, cc1 and as
/// per job, one ld per build, and cc1 (the job) ends after cpp and before as.
#[test]
fn the_pipeline_runs_every_pass_of_every_job() {
    let topo = machine(SMALL);
    let r = run(&topo, &mix(&small_disk_mix(1, 0, 1)), "aa", 1);
    for pass in ["sh", "gcc", "cpp", "cc1-", "as"] {
        let n = r
            .tasks
            .iter()
            .filter(|t| t.program.starts_with(&format!("b0-{pass}")))
            .count();
        assert_eq!(n, 12, "{pass}");
    }
    assert_eq!(r.tasks.iter().filter(|t| t.program == "b0-ld").count(), 1);
    assert_eq!(r.tasks.iter().filter(|t| t.job).count(), 12);
    let make = r
        .tasks
        .iter()
        .find(|t| t.program == "b0-make")
        .expect("make");
    assert!(r.tasks.iter().all(|t| t.exited <= make.exited));
    // 12 jobs: 2 reads and one object write each, and ld's image.
    assert_eq!(r.disks.requests, vec![12 * 3 + 1]);
}

/// Bonnie processes on one disk wait for each other: with four the run lasts about four
/// times as long as with one, since the disk serves one request at a time. On four disks
/// they do not.
#[test]
fn bonnies_sharing_a_disk_wait_for_each_other() {
    let topo = machine(SMALL);
    let end = |bonnies, disks| {
        run(&topo, &mix(&small_disk_mix(0, bonnies, disks)), "aa", 1).end_ns as f64
    };
    let (one, four, spread) = (end(1, 1), end(4, 1), end(4, 4));
    assert!(four > 3.5 * one, "1: {one} ns, 4: {four} ns");
    assert!(spread < 1.2 * one, "1: {one} ns, 4 on 4 disks: {spread} ns");
}

/// A sender of 20 messages to a channel holding at most `buffer` unread ones, and a reader
/// that starts 100 ms later. Returns (sender's exit, reader's exit, sends that blocked), s.
fn buffered_pipe(buffer: u32) -> (f64, f64, u64) {
    let topo = crate::common::machine("nodes=1,cpus-per-node=2");
    let text = format!(
        r#"
name = "pipe"
channels = ["pipe"]
[[program]]
name = "writer"
phase = [{{ loop = {{ count = 20, body = [
  {{ send = {{ channels = ["pipe"], cycles_per_msg = 1000, buffer = {buffer} }} }},
] }} }}]
[[program]]
name = "reader"
phase = [{{ sleep = {{ ms = 100 }} }}, {{ recv = {{ channel = "pipe", msgs = 20, cycles_per_msg = 1000 }} }}]
[[launch]]
program = "writer"
[[launch]]
program = "reader"
"#
    );
    let w = sim::workload::parse_workload(&text, "pipe.toml").unwrap_or_else(|e| panic!("{e}"));
    let r = crate::common::run(&topo, &w, "o1", 1);
    let end = |name: &str| {
        r.tasks
            .iter()
            .find(|t| t.program == name)
            .map_or(0.0, |t| t.exited as f64 / 1e9)
    };
    (end("writer"), end("reader"), r.counters.send_blocks)
}

/// Socket buffers fill: with room for 4 messages the sender blocks until the
/// reader, 100 ms late, takes some, so it cannot finish before the reader starts; unbounded
/// (`buffer` 0) it is done long before.
#[test]
fn a_sender_blocks_on_a_full_channel_until_the_reader_takes_messages() {
    let (writer, reader, blocks) = buffered_pipe(4);
    assert!(blocks > 0, "never blocked");
    assert!(
        writer > 0.1,
        "the writer ended at {writer} s, before the reader started"
    );
    assert!(reader > 0.1);
    let (writer, _, blocks) = buffered_pipe(0);
    assert_eq!(blocks, 0);
    assert!(writer < 0.01, "unbounded, the writer ended at {writer} s");
}

/// A memory hog and a reader share CPU 0; a memory-bound writer on CPU 1 sends the reader
/// one message when its first memory phase ends (after some 0.4 s, long enough for the
/// sleeping reader to earn a better priority than the hog), then runs a short second phase.
/// Returns the writer's and the reader's exits, s, and the preemptions counted.
fn wake_while_contention_changes(period: &str) -> (f64, f64, u64) {
    let topo = crate::common::machine("nodes=1,cpus-per-node=2");
    let text = r#"
name = "preempt"
channels = ["ping"]
[[program]]
name = "reader"
affinity = [0]
phase = [{ recv = { channel = "ping", msgs = 1, cycles_per_msg = 1000 } }]
[[program]]
name = "hog"
affinity = [0]
region = [{ name = "data", mib = 64 }]
phase = [
  { touch = "data" },
  { memory = { ops = 2e8, cycles = 4, access = [{ region = "data", pattern = "random", bytes = 8, write = true }] } },
]
[[program]]
name = "writer"
affinity = [1]
region = [{ name = "buf", mib = 64 }]
phase = [
  { touch = "buf" },
  { memory = { ops = 4e7, cycles = 4, access = [{ region = "buf", pattern = "random", bytes = 8, write = true }] } },
  { send = { channels = ["ping"], cycles_per_msg = 1000 } },
  { memory = { ops = 2e6, cycles = 4, access = [{ region = "buf", pattern = "random", bytes = 8, write = true }] } },
]
[[launch]]
program = "reader"
[[launch]]
program = "hog"
[[launch]]
program = "writer"
"#;
    let w = sim::workload::parse_workload(text, "preempt.toml").unwrap_or_else(|e| panic!("{e}"));
    let spec = sim::sched::SchedSpec::parse("o1").expect("o1");
    let s = sim::sched::build(&spec, &topo).expect("o1");
    let period = sim::sched::parse_duration(period).expect("duration");
    let r = sim::Sim::new(topo.clone(), std::sync::Arc::new(w), s, 1)
        .with_contention_period(period)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let exit = |name: &str| {
        r.tasks
            .iter()
            .find(|t| t.program == name)
            .map_or(f64::NAN, |t| t.exited as f64 / 1e9)
    };
    (exit("writer"), exit("reader"), r.counters.preemptions)
}

/// A wake-up preemption is not lost when the same event changes what memory-bound work
/// runs: the writer's phase change re-rates the hog on CPU 0, and that used to re-post the
/// hog's boundary at the end of its chunk over the reschedule the wake-up had asked for, so
/// the (interactive) reader waited for the hog's slice to end. It must run at once, whatever
/// the contention period.
#[test]
fn a_wake_up_preemption_survives_a_contention_refresh() {
    for period in ["0", "1ms"] {
        let (writer, reader, preemptions) = wake_while_contention_changes(period);
        assert!(preemptions >= 1, "period {period}: no preemption");
        // The writer runs 2e6 more operations (some 20 ms) after its send, less than a slice
        // of the hog; the reader needs only one message's 1000 cycles once it runs.
        assert!(
            reader < writer,
            "period {period}: the reader ended at {reader:.4} s, after the writer ({writer:.4} s)"
        );
    }
}

/// The contention refresh runs at most once per `contention_period` of simulated time, and
/// the result stays close to a refresh after every switch (docs/model/memory-and-cost.md has the figures).
#[test]
fn contention_is_refreshed_at_most_once_per_period() {
    let topo = crate::common::machine(crate::common::SMALL);
    let run = |period: u64| {
        let params = sim::workload::NumaTestParams {
            contention_period: period,
            ..crate::common::small_params(8, 50_000, 20, true)
        };
        let spec = sim::sched::SchedSpec::parse("o1").expect("o1");
        sim::numa_test::run_one(&topo, &spec, &params, 1).unwrap_or_else(|e| panic!("{e}"))
    };
    let exact = run(0);
    let period = 1_000_000;
    let batched = run(period);
    let refreshes_allowed = batched.end_ns / period + 1;
    assert!(
        batched.counters.contention_solves <= refreshes_allowed,
        "{} solves in {} ns",
        batched.counters.contention_solves,
        batched.end_ns
    );
    assert!(exact.counters.contention_solves > batched.counters.contention_solves);
    let (a, b) = (exact.end_ns as f64, batched.end_ns as f64);
    assert!(
        (a - b).abs() < 0.02 * a,
        "elapsed {a} ns exact, {b} ns batched"
    );
}
