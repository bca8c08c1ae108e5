//! Quiet CPUs (`kernel/ticks.rs`): idle CPUs that skip balance ticks repeating their last
//! pass give the same run, to the bit, as CPUs that tick on.

use crate::common::*;
use sim::workload::numa_test;
use sim::{PlacementSpec, RunResult, Sim};
use std::sync::Arc;

/// One numa_test run, idle ticks skipped or not, with an optional placement policy; checks
/// the invariants after every event.
fn numa_run(
    machine_spec: &str,
    sched: &str,
    tasks: u32,
    disturb: bool,
    placement: Option<&str>,
    quiet: bool,
) -> RunResult {
    let topo = machine(machine_spec);
    let w = Arc::new(numa_test(&small_params(tasks, 40_000, 120, disturb)));
    let mut sim = Sim::new(topo.clone(), w, scheduler(sched, &topo), 5).with_quiet_ticks(quiet);
    if let Some(p) = placement {
        let spec = PlacementSpec::parse(p).expect("placement");
        sim = sim.with_placement(spec.build().expect("policy"));
    }
    loop {
        let more = sim.step().unwrap_or_else(|e| panic!("{sched}: {e}"));
        if let Err(e) = sim.k.check_invariants() {
            panic!("{sched} (quiet {quiet}) at t={} ns: {e}", sim.k.now);
        }
        if !more {
            return sim.finish();
        }
    }
}

/// Everything a run reports, except how many ticks were skipped.
fn same_run(a: &RunResult, b: &RunResult, what: &str) {
    assert_eq!(a.tasks, b.tasks, "{what}: task reports differ");
    assert_eq!(a.end_ns, b.end_ns, "{what}");
    assert_eq!(
        a.events, b.events,
        "{what}: events (skipped ticks included)"
    );
    assert_eq!(
        format!("{:?}", a.counters),
        format!("{:?}", b.counters),
        "{what}: counters"
    );
    assert_eq!(a.cpu_busy_ns, b.cpu_busy_ns, "{what}");
    assert_eq!(a.load, b.load, "{what}: load average");
    assert_eq!(
        format!("{:?}", a.placement),
        format!("{:?}", b.placement),
        "{what}: placement"
    );
}

#[test]
fn skipped_idle_ticks_give_the_run_of_ticking_ones() {
    // Four nodes of two CPUs, more jobs than CPUs: node-affine tasks stay on their homes
    // and idle CPUs elsewhere tick beside them (the case quiet CPUs exist for).
    let mut skipped = 0;
    for sched in ["node-affine-dynamic", "node-affine-static", "pool"] {
        for (tasks, disturb) in [(16, false), (16, true), (6, true)] {
            let what = format!("{sched} N={tasks} hackbench {disturb}");
            let on = numa_run("nodes=4,cpus-per-node=2", sched, tasks, disturb, None, true);
            let off = numa_run(
                "nodes=4,cpus-per-node=2",
                sched,
                tasks,
                disturb,
                None,
                false,
            );
            same_run(&on, &off, &what);
            assert_eq!(off.skipped_ticks, 0, "{what}: skipped with quiet ticks off");
            if sched != "node-affine-static" && !disturb {
                // Jobs that outnumber their home's CPUs for the whole run.
                assert!(on.skipped_ticks > 0, "{what}: nothing skipped");
            }
            skipped += on.skipped_ticks;
        }
    }
    assert!(skipped > 0, "no idle tick was ever skipped");
}

#[test]
fn skipped_idle_ticks_give_the_run_of_ticking_ones_under_placement() {
    // Placement decisions change homes and affinities between events, and end quiet
    // spells (a tick at a decision's instant comes after it).
    let p = "homenode:min_rss_mib=0,interval_s=0.05";
    let on = numa_run(
        "nodes=4,cpus-per-node=2",
        "node-affine-dynamic",
        16,
        true,
        Some(p),
        true,
    );
    let off = numa_run(
        "nodes=4,cpus-per-node=2",
        "node-affine-dynamic",
        16,
        true,
        Some(p),
        false,
    );
    same_run(&on, &off, "node-affine-dynamic with homenode placement");
    assert!(on.skipped_ticks > 0);
}

#[test]
fn schedulers_without_the_promise_skip_nothing() {
    for sched in ["o1", "linux"] {
        let r = numa_run("nodes=4,cpus-per-node=2", sched, 16, true, None, true);
        assert_eq!(r.skipped_ticks, 0, "{sched}");
    }
}
