//! The `linux` model's fair class (EEVDF and CFS) on cases with known answers: CPU shares by
//! nice weight, and the placement of a waking task with lag.

use crate::common::*;
use sim::Sim;
use sim::kernel::TaskState;
use sim::program::{Launch, Phase, Program, Workload};
use std::sync::Arc;

const ONE_CPU: &str = "nodes=1,cpus-per-node=1";

fn compute(name: &str, cycles: f64, nice: i32) -> Program {
    Program {
        name: name.into(),
        phases: vec![Phase::Compute { cycles }],
        regions: Vec::new(),
        job: true,
        affinity: None,
        nice,
    }
}

fn launch(program: usize) -> Launch {
    Launch {
        program,
        count: 1,
        threads: 1,
        at: 0,
        cpu: Some(0),
    }
}

fn workload(programs: Vec<Program>) -> Workload {
    Workload {
        name: "fair".into(),
        launches: (0..programs.len()).map(launch).collect(),
        programs,
        channels: 0,
        disturbance: None,
    }
}

#[test]
fn two_cpu_bound_tasks_share_a_cpu_in_the_ratio_of_their_weights() {
    let topo = machine(ONE_CPU);
    let cycles = 2e9;
    for class in ["eevdf", "cfs"] {
        let sched = format!("linux:class={class}");
        let solo = run(&topo, &workload(vec![compute("a", cycles, 0)]), &sched, 1);
        let alone = solo.tasks[0].exited as f64;
        let both = workload(vec![compute("a", cycles, 0), compute("b", cycles, 5)]);
        let r = run(&topo, &both, &sched, 1);
        let a = r.tasks.iter().find(|t| t.program == "a").expect("a");
        // While both run, nice 0 gets 1024 / (1024 + 335) of the CPU: it needs `alone`
        // of CPU, so it ends after alone * 1359 / 1024.
        let expect = alone * (1024.0 + 335.0) / 1024.0;
        let got = a.exited as f64;
        assert!(
            (got / expect - 1.0).abs() < 0.01,
            "{class}: nice 0 ended at {got} ns, expected {expect}"
        );
        // The nice-5 task then runs alone: the whole run takes both tasks' CPU.
        assert!(((r.end_ns as f64) / (2.0 * alone) - 1.0).abs() < 0.01);
    }
}

/// One CPU running two CPU-bound tasks for 20 ms while a third sleeps (until 50 ms).
fn two_hogs_and_a_sleeper() -> Sim {
    let topo = machine(ONE_CPU);
    let mut w = workload(vec![compute("hog", 1e12, 0), compute("hog2", 1e12, 0)]);
    w.programs.push(Program {
        phases: vec![
            Phase::Sleep {
                ns: 50_000_000,
                jitter: 0.0,
            },
            Phase::Compute { cycles: 1e6 },
        ],
        ..compute("sleeper", 0.0, 0)
    });
    w.launches.push(launch(2));
    let mut sim = Sim::new(topo.clone(), Arc::new(w), scheduler("linux", &topo), 1);
    while sim.k.now < 20_000_000 {
        assert!(sim.step().expect("runs"));
    }
    sim
}

#[test]
fn a_waking_task_keeps_its_lag_against_the_new_average() {
    let t = 2;
    // EEVDF (6.6 `place_entity`): v = V - lag * (W + w) / W, so that once it has joined,
    // the runqueue's new average V' is exactly `lag` ahead of it; its deadline is one
    // base slice after v (0.75 ms on one CPU, in virtual time at nice 0).
    for lag in [2_000_000i64, -1_500_000, 0] {
        let mut sim = two_hogs_and_a_sleeper();
        let k = &mut sim.k;
        assert_eq!(k.tasks[t].state, TaskState::Sleeping);
        let before = k.avg_vruntime(0) as i64;
        k.tasks[t].vlag = lag;
        k.enqueue(t, 0, true);
        let v = k.tasks[t].vruntime as i64;
        let after = k.avg_vruntime(0) as i64;
        assert!(
            (after - v - lag).abs() <= 2,
            "lag {lag}: V' - v = {}",
            after - v
        );
        // With W = 2 nice-0 tasks already there, v = V - 1.5 lag.
        assert!(
            (before - v - lag * 3 / 2).abs() <= 2,
            "lag {lag}: V - v = {}",
            before - v
        );
        assert_eq!(k.tasks[t].deadline - k.tasks[t].vruntime, 750_000);
    }
}

/// Step `sim` until simulated time reaches `at`.
fn step_to(sim: &mut Sim, at: u64) {
    while sim.k.now < at {
        assert!(sim.step().expect("runs"), "ended before {at}");
    }
}

#[test]
fn a_task_running_half_the_time_has_half_the_utilisation() {
    let topo = machine(ONE_CPU);
    let ms_of_cycles = topo.cpu_model.freq_mhz * 1e3;
    let mut p = compute("half", 0.0, 0);
    p.phases = vec![
        Phase::Loop { count: 400 },
        Phase::Compute {
            cycles: 4.0 * ms_of_cycles,
        },
        Phase::Sleep {
            ns: 4_000_000,
            jitter: 0.0,
        },
        Phase::EndLoop,
    ];
    let mut sim = Sim::new(
        topo.clone(),
        Arc::new(workload(vec![p])),
        scheduler("linux", &topo),
        1,
    );
    step_to(&mut sim, 1_000_000_000);
    let util = sim.k.task_pelt(0).util_avg;
    let rq = sim.k.cpu_util(0);
    // Over an 8 ms cycle the signal ripples by about 8% around 512.
    assert!((util - 512.0).abs() < 60.0, "util_avg {util}");
    assert!(
        (rq - util).abs() < 1.0,
        "the runqueue's is its only task's: {rq} vs {util}"
    );
}

#[test]
fn a_sleeping_tasks_load_decays_by_half_in_32_ms() {
    let topo = machine(ONE_CPU);
    let mut p = compute("step", topo.cpu_model.freq_mhz * 1e6, 0);
    p.phases.push(Phase::Sleep {
        ns: 500_000_000,
        jitter: 0.0,
    });
    let mut sim = Sim::new(
        topo.clone(),
        Arc::new(workload(vec![p])),
        scheduler("linux", &topo),
        1,
    );
    // One second of running: the signals are at their full values.
    step_to(&mut sim, 1_000_000_000);
    let full = sim.k.cpu_load(0);
    assert!((full - 1024.0).abs() < 1.0, "load_avg {full}");
    let asleep = sim.k.tasks[0].last_ran;
    step_to(&mut sim, asleep + 32 * 1_024_000);
    let k = &sim.k;
    // The blocked load stays on the CPU, decaying: half after 32 periods of 1024 us.
    let at = |v: f64| v * 0.5f64.powf((k.now - asleep) as f64 / (32.0 * 1_024_000.0));
    assert!((k.cpu_load(0) - at(full)).abs() < 1.0, "{}", k.cpu_load(0));
    assert!((k.task_pelt(0).load_avg - k.cpu_load(0)).abs() < 1e-6);
    assert!(k.cpu_load(0) < 0.52 * full);
}

#[test]
fn two_busy_tasks_on_a_four_cpu_node_leave_it_spare_capacity_and_five_overload_it() {
    use sim::sched::linux::stats::{GroupStats, GroupType};
    let topo = machine("nodes=1,cpus-per-node=4");
    let node = topo.node_cpus(0);
    for (tasks, kind) in [
        (2, GroupType::HasSpare),
        (4, GroupType::FullyBusy),
        (5, GroupType::Overloaded),
    ] {
        let mut w = workload(vec![compute("hog", 1e12, 0)]);
        w.launches[0].count = tasks;
        w.launches[0].cpu = None;
        let mut sim = Sim::new(topo.clone(), Arc::new(w), scheduler("linux", &topo), 1);
        step_to(&mut sim, 1_000_000_000);
        let g = GroupStats::of(&sim.k, node, 117, None);
        assert_eq!(g.nr, tasks as usize);
        assert_eq!(g.kind, kind, "{tasks} tasks: {g:?}");
    }
}

#[test]
fn each_runqueues_signals_are_the_sum_of_its_tasks() {
    // numa_test with hackbench: forks, execs, wake-ups, balancing and NUMA moves all carry
    // tasks' signals between CPUs; a runqueue's own average must stay their sum.
    let topo = machine("azusa16");
    let w = sim::workload::numa_test::numa_test(&small_params(32, 100_000, 10, true));
    let mut sim = Sim::new(topo.clone(), Arc::new(w), scheduler("linux", &topo), 1);
    let mut steps = 0;
    while sim.step().expect("runs") {
        steps += 1;
        if steps % 7 != 0 {
            continue;
        }
        let k = &sim.k;
        for c in 0..topo.nr_cpus() {
            let on = (0..k.tasks.len()).filter(|&t| k.tasks[t].pelt_cpu == Some(c));
            let (load, util) = on.fold((0.0, 0.0), |(l, u), t| {
                let p = k.task_pelt(t);
                (l + p.load_avg, u + p.util_avg)
            });
            let rq = k.rq_pelt(c);
            assert!(
                (load - rq.load_avg).abs() <= 1e-6 * rq.load_avg.max(1.0)
                    && (util - rq.util_avg).abs() <= 1e-6 * rq.util_avg.max(1.0),
                "cpu {c} at {}: tasks {load}/{util}, runqueue {rq:?}",
                k.now
            );
        }
    }
}

#[test]
fn an_unknown_class_names_the_option_and_the_choices() {
    let topo = machine(ONE_CPU);
    let spec = sim::sched::SchedSpec::parse("linux:class=bfs").expect("parses");
    let e = sim::sched::build(&spec, &topo)
        .err()
        .expect("bfs is not a class")
        .to_string();
    assert!(
        e.contains("class") && e.contains("bfs") && e.contains("eevdf") && e.contains("cfs"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1);
}

#[test]
fn a_slice_ends_at_the_tick_after_it_runs_out_unless_the_high_resolution_tick_is_on() {
    // One CPU: EEVDF's base slice is 0.75 ms. Two CPU-bound tasks of 1 s each take turns.
    let topo = machine(ONE_CPU);
    let cycles = topo.cpu_model.freq_mhz * 1e6;
    let both = workload(vec![compute("a", cycles, 0), compute("b", cycles, 0)]);
    let turn = |sched: &str| {
        let r = run(&topo, &both, sched, 1);
        2e9 / r.counters.context_switches as f64
    };
    for (sched, want_ms) in [
        ("linux:hz=250", 4.0),
        ("linux:hz=1000", 1.0),
        ("linux:hz=250,hrtick=on", 0.75),
    ] {
        let ms = turn(sched) / 1e6;
        assert!(
            (ms / want_ms - 1.0).abs() < 0.05,
            "{sched}: turns of {ms:.3} ms, expected {want_ms} ms"
        );
    }
}

/// Runs `w` under EEVDF on one CPU, giving task `t` the slice `s` (ns, 0: the base slice)
/// for each `(t, s)` once every task exists; returns the finished simulation.
fn with_slices(w: Workload, slices: &[(usize, u64)]) -> Sim {
    let topo = machine(ONE_CPU);
    let mut sim = Sim::new(topo.clone(), Arc::new(w), scheduler("linux", &topo), 1);
    while sim.k.tasks.len() < slices.len() {
        assert!(sim.step().expect("runs"));
    }
    for &(t, s) in slices {
        sim.k.set_slice(t, s);
    }
    while sim.step().expect("runs") {
        sim.k.check_invariants().expect("invariants");
    }
    sim
}

/// A parent that computes 1 ms and then creates a thread and a child process, each computing.
fn parent_with_offspring() -> Workload {
    let kid = compute("kid", 1e6, 0);
    let mut parent = compute("parent", 1e6, 0);
    parent.phases.extend([
        Phase::Thread {
            program: 1,
            count: 1,
        },
        Phase::Spawn {
            program: 1,
            count: 1,
            exec: false,
        },
        Phase::Wait,
    ]);
    Workload {
        name: "offspring".into(),
        launches: vec![launch(0)],
        programs: vec![parent, kid],
        channels: 0,
        disturbance: None,
    }
}

#[test]
fn offspring_keep_a_slice_unless_it_was_given_resetting_on_fork() {
    let topo = machine(ONE_CPU);
    for (resetting, want) in [(false, 50_000_000), (true, 0)] {
        let mut sim = Sim::new(
            topo.clone(),
            Arc::new(parent_with_offspring()),
            scheduler("linux", &topo),
            1,
        );
        assert!(sim.step().expect("runs"));
        if resetting {
            sim.k.set_slice_resetting_on_fork(0, 50_000_000);
        } else {
            sim.k.set_slice(0, 50_000_000);
        }
        while sim.k.tasks.len() < 3 {
            assert!(sim.step().expect("runs"));
        }
        let kids: Vec<u64> = sim.k.tasks[1..].iter().map(|t| t.slice_req).collect();
        assert_eq!(kids, vec![want, want], "resetting {resetting}");
        assert_eq!(sim.k.tasks[0].slice_req, 50_000_000);
        assert!(sim.k.tasks[1..].iter().all(|t| !t.slice_reset_on_fork));
        while sim.step().expect("runs") {}
    }
}

#[test]
fn a_task_that_asks_for_a_long_slice_takes_long_turns() {
    let topo = machine(ONE_CPU);
    let second = topo.cpu_model.freq_mhz * 1e6;
    let pair = || workload(vec![compute("a", second, 0), compute("b", second, 0)]);
    // One CPU: a base slice of 0.75 ms, ended at the next 1 ms tick.
    let base = with_slices(pair(), &[(0, 0), (1, 0)])
        .k
        .counters
        .context_switches;
    let long = with_slices(pair(), &[(0, 100_000_000), (1, 100_000_000)])
        .k
        .counters
        .context_switches;
    // Two seconds of work: about 2,000 turns of 1 ms, about 20 of 100 ms.
    assert!(base > 1_500, "{base} switches with the base slice");
    assert!(long < 40, "{long} switches with 100 ms slices");
    // Beyond the kernel's range: clamped to 100 ms.
    let clamped = with_slices(pair(), &[(0, 10_000_000_000), (1, 10_000_000_000)]);
    assert_eq!(clamped.k.counters.context_switches, long);
}

#[test]
fn a_long_slice_does_not_hold_back_a_task_with_the_base_slice() {
    let topo = machine(ONE_CPU);
    let ms = topo.cpu_model.freq_mhz * 1e3;
    let hog = compute("hog", 3_000.0 * ms, 0);
    // Asleep for 0.5 ms after each 5 ms of work: it wants more than its half of the CPU, so
    // it comes back owed little, and the running task's protection decides when it runs.
    let mut waker = compute("waker", 0.0, 0);
    waker.phases = vec![
        Phase::Loop { count: 100 },
        Phase::Sleep {
            ns: 500_000,
            jitter: 0.0,
        },
        Phase::Compute { cycles: 5.0 * ms },
        Phase::EndLoop,
    ];
    let run = |slices: &[(usize, u64)]| {
        let sim = with_slices(workload(vec![hog.clone(), waker.clone()]), slices);
        let waker_end = sim.k.tasks[1].exited.expect("waker ends") as f64;
        (waker_end, sim.k.counters.context_switches)
    };
    let (base, base_switches) = run(&[(0, 0), (1, 0)]);
    // The hog asks for 100 ms, the waker keeps the base slice: the waker's wake-ups cut the
    // hog's protection to the shortest queued slice (`PREEMPT_SHORT`, 6.12;
    // `update_protect_slice`, 6.17), so it ends when it ends with both at the base slice,
    // while the hog takes longer turns.
    let (short, short_switches) = run(&[(0, 100_000_000), (1, 0)]);
    assert!(
        (short / base - 1.0).abs() < 0.01,
        "waker ended at {short} ns, {base} ns with the base slices"
    );
    assert!(
        short_switches * 2 < base_switches,
        "{short_switches} switches, {base_switches}"
    );
    // Both at 100 ms: the hog's protected slices hold the waker back.
    let (equal, _) = run(&[(0, 100_000_000), (1, 100_000_000)]);
    assert!(
        equal > 1.03 * short,
        "waker ended at {equal} ns, {short} ns"
    );
}
