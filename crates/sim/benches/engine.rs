//! Simulator speed: `cargo bench -p homenode-sim --bench engine`.
//!
//! Runs numa_test N=64 on azusa16 (with the hackbench peak) single-threaded several times per
//! scheduler and prints the median handled events per second and wall time per run. The
//! headline comparison's wall time is measured by `homenode sim --stats`.

use sim::numa_test::{run_one, run_seed};
use sim::sched::SchedSpec;
use sim::workload::NumaTestParams;
use std::sync::Arc;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let reps: usize = std::env::var("ENGINE_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let topo = Arc::new(topo::resolve_machine("azusa16").expect("preset"));
    println!("numa_test N=64 on azusa16, one thread, median of {reps} runs");
    for name in [
        "o1",
        "node-affine-static",
        "node-affine-dynamic",
        "linux:numa_balancing=off",
        "linux",
    ] {
        let spec = SchedSpec::parse(name).expect("spec");
        let params = NumaTestParams {
            tasks: 64,
            ..Default::default()
        };
        let mut rates = Vec::new();
        let mut walls = Vec::new();
        let mut last = None;
        for rep in 0..reps {
            let t0 = Instant::now();
            let r = run_one(&topo, &spec, &params, run_seed(1, 64, rep as u32)).expect("run");
            let wall = t0.elapsed().as_secs_f64();
            rates.push(r.events as f64 / wall);
            walls.push(wall);
            last = Some(r);
        }
        let r = last.expect("at least one run");
        println!(
            "{name:<26} {:>6.2} M events/s  {:>6.3} s/run  ({} events, {} stale, {} contention solves of {:.1} iterations, {} context switches)",
            median(rates) / 1e6,
            median(walls),
            r.events,
            r.stale_events,
            r.counters.contention_solves,
            r.counters.contention_iterations as f64 / r.counters.contention_solves.max(1) as f64,
            r.counters.context_switches
        );
    }
}
