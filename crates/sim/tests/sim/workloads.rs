//! kbuild and bonnie: they run to completion and show their defining shape.

use crate::common::*;
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
    };
    for s in ["pmqs", "pmqs:balance_period=off", "aa"] {
        let r = run(&topo, &mix(&p), s, 1);
        for b in 0..2 {
            let name = sim::workload::mix::make_name(b);
            assert!(r.tasks.iter().any(|t| t.program == name), "{s}: no {name}");
        }
    }
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

/// Socket buffers fill (issue 16): with room for 4 messages the sender blocks until the
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
