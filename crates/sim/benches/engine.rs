//! Simulator speed: `cargo bench -p homenode-sim --bench engine`.
//!
//! Two parts, each run single-threaded in this process and timed in the process's own CPU
//! seconds (user + system, `getrusage`), so a loaded machine slows the wall clock but not
//! the figures much:
//!
//! 1. **Per event**: numa_test N=64 on azusa16 (with the hackbench peak) for o1,
//!    node-affine-static and linux; median over `ENGINE_BENCH_REPS` runs (default 5) of the
//!    handled events per CPU second and the CPU seconds per run.
//! 2. **Scaling**: numa_test with 8 tasks per CPU, no hackbench, on synthetic machines of 16
//!    nodes (`nodes=16,cpus-per-node=C`) from 64 CPUs up to `ENGINE_BENCH_MAX_CPUS` (default
//!    256; 1024 costs about 40 CPU s a run under `linux` over a simulated minute), for o1 and
//!    linux: CPU seconds per simulated second (the median of `ENGINE_BENCH_SCALE_REPS` runs,
//!    default 1, with their range), the growth per doubling of the machine, and the
//!    process's peak resident memory after the machine's runs (the machines grow, so it is
//!    the largest one's). `ENGINE_BENCH_PASSES` (default 20) sets numa_test's passes, so the
//!    simulated time (300: about a minute, the regime). Each machine runs with every
//!    contention refresh period in `ENGINE_BENCH_PERIODS` (default `0,1ms`; docs/model/memory-and-cost.md).
//!
//! `ENGINE_BENCH_PART=1` or `=2` runs one part only.

use sim::numa_test::{run_one, run_seed};
use sim::sched::SchedSpec;
use sim::workload::NumaTestParams;
use std::sync::Arc;

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds this process has used (user + system), and its peak resident memory, MiB.
fn process_cost() -> (f64, f64) {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage");
    let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    (
        tv(u.user_time()) + tv(u.system_time()),
        u.max_rss() as f64 / 1024.0,
    )
}

/// Run `f` and return its result with the CPU seconds it took.
fn cpu_timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let before = process_cost().0;
    let out = f();
    (out, process_cost().0 - before)
}

fn per_event(reps: usize) {
    let topo = Arc::new(topo::resolve_machine("azusa16").expect("preset"));
    println!("part 1: numa_test N=64 on azusa16, one thread, median of {reps} runs");
    for name in ["o1", "node-affine-static", "linux"] {
        let spec = SchedSpec::parse(name).expect("spec");
        let params = NumaTestParams {
            tasks: 64,
            ..Default::default()
        };
        let mut rates = Vec::new();
        let mut cpus = Vec::new();
        let mut last = None;
        for rep in 0..reps {
            let (r, cpu) = cpu_timed(|| {
                run_one(&topo, &spec, &params, run_seed(1, 64, rep as u32)).expect("run")
            });
            // Handled events: idle ticks accounted in bulk are not counted.
            rates.push((r.events - r.skipped_ticks) as f64 / cpu.max(1e-9));
            cpus.push(cpu);
            last = Some(r);
        }
        let r = last.expect("at least one run");
        println!(
            "  {name:<20} {:>6.2} M events per CPU s  {:>6.3} CPU s/run  ({} events, {} idle ticks skipped, {} stale, {} contention solves of {:.1} iterations, {} context switches)",
            report::median(&rates) / 1e6,
            report::median(&cpus),
            r.events - r.skipped_ticks,
            r.skipped_ticks,
            r.stale_events,
            r.counters.contention_solves,
            r.counters.contention_iterations as f64 / r.counters.contention_solves.max(1) as f64,
            r.counters.context_switches
        );
    }
}

/// The sweep's settings: machine sizes, numa_test's passes, runs per size.
struct Sweep {
    max_cpus: usize,
    passes: u32,
    reps: usize,
}

fn scaling(sweep: &Sweep, periods: &str) {
    let Sweep { passes, reps, .. } = *sweep;
    println!(
        "part 2: numa_test, 8 tasks per CPU, no hackbench, {passes} passes, nodes=16, median of {reps} run(s) each"
    );
    println!(
        "  {:<8} {:>7} {:>6} {:>10} {:>12} {:>15} {:>17} {:>8} {:>9}",
        "sched",
        "period",
        "CPUs",
        "events",
        "simulated s",
        "CPU s per sim s",
        "range",
        "growth",
        "peak MiB"
    );
    for period in periods.split(',') {
        let ns = sim::sched::parse_duration(period).expect("ENGINE_BENCH_PERIODS: durations");
        for name in ["o1", "linux"] {
            scaling_sweep(name, period, ns, sweep);
        }
    }
}

fn scaling_sweep(name: &str, period: &str, period_ns: u64, sweep: &Sweep) {
    let Sweep {
        max_cpus,
        passes,
        reps,
    } = *sweep;
    let spec = SchedSpec::parse(name).expect("spec");
    let mut prev: Option<f64> = None;
    let mut cpus_per_node = 4;
    while 16 * cpus_per_node <= max_cpus {
        let machine = format!("nodes=16,cpus-per-node={cpus_per_node}");
        let topo = Arc::new(topo::resolve_machine(&machine).expect("synthetic"));
        let tasks = 8 * topo.nr_cpus() as u32;
        let params = NumaTestParams {
            tasks,
            passes,
            disturb: false,
            contention_period: period_ns,
            ..Default::default()
        };
        // The same seed every time: the runs are identical, only their cost varies.
        let mut costs = Vec::with_capacity(reps);
        let mut last = None;
        for _ in 0..reps.max(1) {
            let (r, cpu) =
                cpu_timed(|| run_one(&topo, &spec, &params, run_seed(1, tasks, 0)).expect("run"));
            costs.push(cpu / (r.end_ns as f64 / 1e9).max(1e-9));
            last = Some(r);
        }
        let r = last.expect("at least one run");
        let sim_s = r.end_ns as f64 / 1e9;
        let (lo, hi) = costs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &c| {
            (lo.min(c), hi.max(c))
        });
        let per_sim_s = report::median(&costs);
        let growth = prev.map_or(String::new(), |p| format!("{:.2}x", per_sim_s / p));
        println!(
            "  {name:<8} {period:>7} {:>6} {:>10} {:>12.1} {:>15.4} {:>17} {:>8} {:>9.0}",
            topo.nr_cpus(),
            r.events,
            sim_s,
            per_sim_s,
            format!("{lo:.4}-{hi:.4}"),
            growth,
            process_cost().1
        );
        prev = Some(per_sim_s);
        cpus_per_node *= 2;
    }
}

fn main() {
    let part: u32 = env_or("ENGINE_BENCH_PART", 0);
    if part != 2 {
        per_event(env_or("ENGINE_BENCH_REPS", 5));
    }
    if part != 1 {
        let sweep = Sweep {
            max_cpus: env_or("ENGINE_BENCH_MAX_CPUS", 256),
            passes: env_or("ENGINE_BENCH_PASSES", 20),
            reps: env_or("ENGINE_BENCH_SCALE_REPS", 1),
        };
        scaling(&sweep, &env_or("ENGINE_BENCH_PERIODS", "0,1ms".to_string()));
    }
}
