use crate::common::*;
use sim::workload::numa_test;

#[test]
#[ignore]
fn explore_step_then_run() {
    let topo = machine(SMALL);
    let w = numa_test(&small_params(3, 20_000, 2, true));
    let r1 = run(&topo, &w, "o1", 1);
    let (sim, steps) = step_checked(&topo, &w, "o1", 1);
    let last_exit = sim.k.tasks.iter().filter_map(|t| t.exited).max();
    println!("steps {steps} now {} last_exit {:?} pending {} r1.end {} r1.events {}", sim.k.now, last_exit, sim.k.events.len(), r1.end_ns, r1.events);
    let r2 = sim.run().unwrap();
    println!("after run: end {} events {}", r2.end_ns, r2.events);
}
