//! What NUMA balancing's scanning costs as a process grows:
//! `cargo bench -p homenode-sim --bench numa_scan`.
//!
//! One single-threaded process on xeon2s, pinned to node 0, first-touches S bytes (so all its
//! memory is local) and then does random updates over it; after 60 s of simulated time the
//! table shows what NUMA balancing did and charged: scan passes, PTEs updated, hinting faults,
//! the task's system time and its share of the task's CPU time, and the task's scan period then
//! (it grows with the number of 256 MB windows). The last column is the simulator's wall time.

use sim::memory::MemPolicy;
use sim::program::{Launch, OpCost, Phase, Program, RegionSpec, Workload};
use sim::time::SEC;
use std::time::Instant;

fn workload(bytes: u64) -> Workload {
    Workload {
        name: format!("scan-{}MiB", bytes >> 20),
        programs: vec![Program {
            name: "updater".into(),
            phases: vec![
                Phase::Touch { region: 0 },
                Phase::Memory {
                    ops: 1e13,
                    op: OpCost::random_write(4.0),
                },
            ],
            regions: vec![RegionSpec {
                name: "data".into(),
                bytes,
                policy: MemPolicy::FirstTouch,
            }],
            job: true,
            affinity: Some(vec![0]),
            nice: 0,
        }],
        launches: vec![Launch::once(0)],
        channels: 0,
        disturbance: None,
    }
}

/// Run 60 s of simulated time; returns (kernel state counters, task sys ns, task cpu ns, wall).
fn run(
    topo: &std::sync::Arc<topo::Topology>,
    mib: u64,
    mode: &str,
) -> (sim::kernel::NumaCounters, f64, f64, f64) {
    let t0 = Instant::now();
    let spec = format!("linux:numa_balancing={mode}");
    let mut s = sim::studies::prepare(topo, workload(mib << 20), &spec, 1).expect("sim");
    while s.k.now < 60 * SEC && s.step().expect("step") {}
    let t = &s.k.tasks[0];
    (
        s.k.counters.numa.clone(),
        t.sys_ns,
        t.user_ns + t.sys_ns,
        t0.elapsed().as_secs_f64(),
    )
}

fn main() {
    let topo = sim::studies::machine("xeon2s").expect("machine");
    println!(
        "NUMA balancing scan cost on xeon2s: one pinned thread, all memory local, 60 s simulated"
    );
    println!(
        "(extra system time = system time with balancing on minus off: the first-touch faults cancel)"
    );
    println!(
        "{:>8} {:>6} {:>12} {:>10} {:>14} {:>8} {:>9} {:>9}",
        "size",
        "passes",
        "pte_updates",
        "faults",
        "extra sys (ms)",
        "of CPU",
        "wall off",
        "wall on"
    );
    for mib in [256u64, 1024, 4096, 16384, 65536] {
        let (_, sys_off, _, wall_off) = run(&topo, mib, "off");
        let (c, sys_on, cpu, wall_on) = run(&topo, mib, "on");
        let extra = sys_on - sys_off;
        println!(
            "{:>7}M {:>6} {:>12} {:>10} {:>14.2} {:>7.3}% {:>8.2}s {:>8.2}s",
            mib,
            c.numa_scan_passes,
            c.numa_pte_updates,
            c.numa_hint_faults,
            extra / 1e6,
            100.0 * extra / cpu.max(1.0),
            wall_off,
            wall_on
        );
    }
}
