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
