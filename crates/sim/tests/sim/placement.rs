//! Node-level placement in the simulator (`--placement`): the daemon's policies on top of a
//! CPU scheduler, observed and applied as the daemon does on Linux.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::common::*;
use policy::Action;
use sim::workload::parse_workload;
use sim::{PlacementSpec, RunResult, Sim};

/// Four memory-bound single-threaded workers, 32 MiB each, all started on CPU 0.
const FOUR: &str = r#"
name = "four"
[[program]]
name = "worker"
job = true
region = [{ name = "data", mib = 32 }]
phase = [
  { touch = "data" },
  { memory = { ops = 4e7, cycles = 4, access = [{ region = "data", pattern = "random", bytes = 8, write = true }] } },
]
[[launch]]
program = "worker"
count = 4
cpu = 0
"#;

/// One worker that may run on node 0 only, its memory preferred on node 1.
const REMOTE: &str = r#"
name = "remote"
[[program]]
name = "worker"
job = true
affinity = [0, 1]
region = [{ name = "data", mib = 64, policy = "preferred:1" }]
phase = [
  { touch = "data" },
  { memory = { ops = 6e7, cycles = 4, access = [{ region = "data", pattern = "random", bytes = 8 }] } },
]
[[launch]]
program = "worker"
cpu = 0
"#;

fn placed(w: &str, placement: &str, checked: bool) -> (Sim, RunResult) {
    let topo = machine(SMALL);
    let w = Arc::new(parse_workload(w, "test.toml").expect("workload"));
    let spec = PlacementSpec::parse(placement).expect("placement");
    let mut sim = Sim::new(topo.clone(), w.clone(), scheduler("o1", &topo), 7)
        .with_placement(spec.build().expect("policy"));
    loop {
        let more = sim.step().expect("step");
        if checked {
            sim.k.check_invariants().expect("invariants");
            for t in &sim.k.tasks {
                if t.exited.is_none() {
                    assert!(
                        t.affinity.contains(t.cpu),
                        "task {} on CPU {} outside its affinity {}",
                        t.id,
                        t.cpu,
                        t.affinity
                    );
                }
            }
        }
        if !more {
            break;
        }
    }
    // Run the same again through `run()` for the result (the stepped one is the checked one).
    let r = Sim::new(topo.clone(), w, scheduler("o1", &topo), 7)
        .with_placement(spec.build().expect("policy"))
        .run()
        .expect("run");
    (sim, r)
}

/// The last home each process was given.
fn final_homes(r: &RunResult) -> BTreeMap<u32, usize> {
    let mut h = BTreeMap::new();
    for (_, a) in &r.placement.as_ref().expect("placement ran").log {
        match a {
            Action::SetHome { pid, nodes, .. } => {
                h.insert(*pid, nodes[0]);
            }
            Action::ClearHome { pid, .. } => {
                h.remove(pid);
            }
            Action::MoveMemory { .. } | Action::SetSlice { .. } => {}
        }
    }
    h
}

#[test]
fn homenode_spreads_workers_one_per_cpu_and_affinity_holds() {
    let (_, r) = placed(FOUR, "homenode:min_rss_mib=16,interval_s=0.5", true);
    let p = r.placement.as_ref().expect("stats");
    assert!(p.decisions >= 2, "{p:?}");
    let homes = final_homes(&r);
    assert_eq!(homes.len(), 4, "{:?}", p.log);
    for node in 0..2 {
        let n = homes.values().filter(|&&h| h == node).count();
        assert_eq!(n, 2, "node {node} got {n} of 4 homes: {homes:?}");
    }
    // Reports carry the home node.
    assert!(
        r.tasks
            .iter()
            .filter(|t| t.job)
            .all(|t| t.home_node.is_some())
    );
}

#[test]
fn remote_memory_is_brought_home_and_costs_system_time() {
    let (_, with) = placed(REMOTE, "homenode:min_rss_mib=16,interval_s=0.5", true);
    let (_, without) = placed(REMOTE, "none", false);
    let p = with.placement.as_ref().expect("stats");
    assert!(p.bytes_moved >= 32 << 20, "{p:?}");
    let job = |r: &RunResult| r.tasks.iter().find(|t| t.job).expect("job").clone();
    let (a, b) = (job(&with), job(&without));
    // The memory ends on node 0 with placement, stays on node 1 without.
    assert!(
        a.mem_node_bytes[0] > a.mem_node_bytes[1],
        "{:?}",
        a.mem_node_bytes
    );
    assert!(
        b.mem_node_bytes[1] > b.mem_node_bytes[0],
        "{:?}",
        b.mem_node_bytes
    );
    // Copying is charged as system time, and local memory makes the work faster.
    assert!(a.sys_ns > b.sys_ns, "sys {} vs {}", a.sys_ns, b.sys_ns);
    assert!(a.user_ns < b.user_ns, "user {} vs {}", a.user_ns, b.user_ns);
    // Never more than the policy's budget per decision: 256 MiB/s x 0.5 s.
    let mut per_decision: BTreeMap<u64, u64> = BTreeMap::new();
    for (at, a) in &p.log {
        if let Action::MoveMemory { bytes, .. } = a {
            *per_decision.entry(*at).or_default() += bytes;
        }
    }
    assert!(
        per_decision.values().all(|&b| b <= 128 << 20),
        "{per_decision:?}"
    );
}

#[test]
fn placement_runs_are_deterministic() {
    let (_, a) = placed(FOUR, "homenode:min_rss_mib=16,interval_s=0.5", false);
    let (_, b) = placed(FOUR, "homenode:min_rss_mib=16,interval_s=0.5", false);
    assert_eq!(format!("{:?}", a.placement), format!("{:?}", b.placement));
    assert_eq!(a.end_ns, b.end_ns);
    let (_, n1) = placed(FOUR, "numad:min_rss_mib=16,interval_s=0.5", false);
    let (_, n2) = placed(FOUR, "numad:min_rss_mib=16,interval_s=0.5", false);
    assert_eq!(format!("{:?}", n1.placement), format!("{:?}", n2.placement));
}

#[test]
fn placement_spec_errors_name_the_culprit() {
    let ok = PlacementSpec::parse("homenode:min_rss_mib=16,interval_s=1").expect("ok");
    assert_eq!(ok.config.homenode.min_rss_mib, 16);
    assert_eq!(ok.interval(), 1_000_000_000);
    assert_eq!(ok.config.interval_s, 1.0);
    assert_eq!(ok.to_string(), "homenode:min_rss_mib=16,interval_s=1");
    for (s, want) in [
        (
            "autonuma",
            "unknown placement policy `autonuma` (known: none, homenode, numad)",
        ),
        ("homenode:min_rss=3", "min_rss"),
        ("homenode:min_cpu", "expected key=value"),
        ("homenode:interval_s=0", "interval_s"),
        ("homenode:interval_s=fast", "interval_s"),
        ("numad:interval_s=4000", "between 0.01 and 3600"),
        ("homenode:imbalance_pct=50", "imbalance_pct"),
        ("none:min_cpu=1", "no options"),
    ] {
        let e = PlacementSpec::parse(s).expect_err(s).to_string();
        assert!(e.contains(want), "{s}: {e}");
    }
}

/// The kernel model accounts each task's run-queue wait (Linux's `run_delay`, what
/// the daemon reads from `schedstat`) for the placement observer. Four workers started on one
/// CPU of a 4-CPU machine wait for it before the balancer spreads them; no task waits and runs
/// longer than it lived.
#[test]
fn run_queue_wait_is_accounted_and_bounded_by_lifetime() {
    let (sim, _) = placed(FOUR, "none", false);
    let mut total_delay = 0;
    for t in &sim.k.tasks {
        let end = t.exited.expect("every task exits");
        assert!(t.queued_at.is_none(), "task {} still queued", t.id);
        let lived = end - t.created;
        let ran = (t.user_ns + t.sys_ns) as u64;
        assert!(
            t.run_delay_ns + ran <= lived + 1_000,
            "task {}: waited {} + ran {ran} > lived {lived} ns",
            t.id,
            t.run_delay_ns
        );
        total_delay += t.run_delay_ns;
    }
    assert!(total_delay > 0, "four workers on one CPU waited for it");
}

/// A process born during an interval is measured over its own life, as the daemon
/// measures a process it sees for the first time. Four busy workers launched 0.3 s before the
/// first decision (interval 1 s) used 0.3 s of CPU each: one CPU, not 0.3, so they are
/// significant and homed at that first decision instead of one interval later.
#[test]
fn a_process_born_during_the_interval_is_homed_at_the_first_decision() {
    let late = FOUR.replace("count = 4\n", "count = 4\nat_ms = 700\n");
    let (_, r) = placed(&late, "homenode:min_rss_mib=16,interval_s=1", false);
    let p = r.placement.as_ref().expect("stats");
    let first: Vec<u64> = p
        .log
        .iter()
        .filter(|(_, a)| matches!(a, Action::SetHome { .. }))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(first.len(), 4, "{:?}", p.log);
    assert!(first.iter().all(|&t| t == 1_000_000_000), "{:?}", p.log);
}
