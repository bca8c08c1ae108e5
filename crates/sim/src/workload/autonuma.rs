//! The autonuma-benchmark programs (after Andrea Arcangeli's `numa01.c` and `numa02.c`):
//!
//! - `numa01`: 2 processes, each with CPUs/2 threads; the main thread initialises the
//!   process's region (`numa01_bytes`, 3 GiB) and starts the others, then every thread
//!   repeatedly zeroes (streams writes over) the whole region, so all threads of a process
//!   share all of its memory.
//! - `numa02`: 1 process with one thread per CPU; the main thread first initialises the whole
//!   array (`numa02_bytes`, 1 GiB), then every thread repeatedly zeroes its own slice.
//!
//! Variants: `Free` (no binding: the scheduler and NUMA balancing decide), `HardBind` (each
//! process or thread bound to one node's CPUs with its memory bound there: the best case), and
//! `InverseBind` (bound to one node's CPUs with its memory bound to another node: the worst).
//! For numa01, process `i` of 2 gets half of the nodes; for numa02, thread `i` gets node
//! `i * nodes / threads`; the inverse binds move memory to the next node (mod nodes), or the
//! other half of the nodes for numa01.

use crate::memory::MemPolicy;
use crate::program::{Access, Launch, OpCost, Pattern, Phase, Program, RegionSpec, Workload};
use topo::Topology;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bind {
    Free,
    HardBind,
    InverseBind,
}

impl Bind {
    pub fn suffix(self) -> &'static str {
        match self {
            Bind::Free => "",
            Bind::HardBind => "_THREAD_ALLOC_HARD_BIND",
            Bind::InverseBind => "_INVERSE_BIND",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct AutonumaParams {
    pub numa01_bytes: u64,
    pub numa02_bytes: u64,
    /// Times each numa01 thread zeroes its process's memory.
    pub loops: u32,
    /// Times each numa02 thread zeroes its slice (slices are small: 1 GiB over all CPUs).
    pub numa02_loops: u32,
    /// Cycles of loop work per 64-byte line written (a `rep stosb`/AVX store stream is limited
    /// by memory, not by the core: about 1 cycle per line).
    pub line_cycles: f64,
}

impl Default for AutonumaParams {
    fn default() -> Self {
        AutonumaParams {
            numa01_bytes: 3 << 30,
            numa02_bytes: 1 << 30,
            loops: 20,
            // ASSUMPTION: numa02 writes about as many bytes per thread-second of work as
            // numa01 over a run of the same order of length (1 GiB x 2000 = 2 TB in all).
            numa02_loops: 2000,
            line_cycles: 1.0,
        }
    }
}

fn zero_op(region: usize, p: &AutonumaParams) -> OpCost {
    OpCost {
        cycles: p.line_cycles,
        accesses: vec![Access {
            region,
            pattern: Pattern::Stream,
            bytes: 64.0,
            write: true,
            contended: 0.0,
        }],
    }
}

fn zero_loop(region: usize, bytes: u64, loops: u32, p: &AutonumaParams) -> Vec<Phase> {
    vec![
        Phase::Loop { count: loops },
        Phase::Memory {
            ops: (bytes / 64) as f64,
            op: zero_op(region, p),
        },
        Phase::EndLoop,
    ]
}

fn node_cpus(t: &Topology, nodes: &[usize]) -> Vec<usize> {
    nodes.iter().flat_map(|&n| t.node_cpus(n).iter()).collect()
}

/// `numa01` on `t`.
pub fn numa01(t: &Topology, bind: Bind, p: &AutonumaParams) -> Workload {
    let nn = t.nr_nodes();
    let half = |i: usize| -> Vec<usize> {
        if nn == 1 {
            return vec![0];
        }
        (i * nn / 2..(i + 1) * nn / 2).collect()
    };
    let threads = (t.nr_cpus() / 2).max(1) as u32;
    let mut programs = Vec::new();
    let mut launches = Vec::new();
    for i in 0..2 {
        let (cpus, mem) = match bind {
            Bind::Free => (None, MemPolicy::FirstTouch),
            Bind::HardBind => (Some(node_cpus(t, &half(i))), MemPolicy::Bind(half(i))),
            Bind::InverseBind => (Some(node_cpus(t, &half(i))), MemPolicy::Bind(half(1 - i))),
        };
        let regions = vec![RegionSpec {
            name: "global".into(),
            bytes: p.numa01_bytes,
            policy: mem,
        }];
        // The main thread initialises the memory, then starts the other threads.
        let mut main = vec![
            Phase::Touch { region: 0 },
            Phase::Thread {
                program: programs.len() + 1,
                count: threads - 1,
            },
        ];
        main.extend(zero_loop(0, p.numa01_bytes, p.loops, p));
        main.push(Phase::Wait);
        launches.push(Launch::once(programs.len()));
        programs.push(Program {
            name: format!("numa01-{i}"),
            phases: main,
            regions: regions.clone(),
            job: true,
            affinity: cpus.clone(),
            nice: 0,
        });
        programs.push(Program {
            name: format!("numa01-{i}-thread"),
            phases: zero_loop(0, p.numa01_bytes, p.loops, p),
            regions,
            job: true,
            affinity: cpus,
            nice: 0,
        });
    }
    Workload {
        name: format!("numa01{}", bind.suffix()),
        programs,
        launches,
        channels: 0,
        disturbance: None,
    }
}

/// `numa02` on `t`.
pub fn numa02(t: &Topology, bind: Bind, p: &AutonumaParams) -> Workload {
    let nn = t.nr_nodes();
    let threads = t.nr_cpus().max(1);
    let slice = (p.numa02_bytes / threads as u64).max(64);
    let node = |i: usize| i * nn / threads;
    let regions: Vec<RegionSpec> = (0..threads)
        .map(|i| RegionSpec {
            name: format!("slice{i}"),
            bytes: slice,
            policy: match bind {
                Bind::Free => MemPolicy::FirstTouch,
                Bind::HardBind => MemPolicy::Bind(vec![node(i)]),
                Bind::InverseBind => MemPolicy::Bind(vec![(node(i) + 1) % nn]),
            },
        })
        .collect();
    let affinity = |i: usize| match bind {
        Bind::Free => None,
        _ => Some(t.node_cpus(node(i)).iter().collect()),
    };
    let mut main: Vec<Phase> = (0..threads).map(|r| Phase::Touch { region: r }).collect();
    main.extend((1..threads).map(|i| Phase::Thread {
        program: i,
        count: 1,
    }));
    main.extend(zero_loop(0, slice, p.numa02_loops, p));
    main.push(Phase::Wait);
    let mut programs = vec![Program {
        name: "numa02".into(),
        phases: main,
        regions: regions.clone(),
        job: true,
        affinity: affinity(0),
        nice: 0,
    }];
    for i in 1..threads {
        programs.push(Program {
            name: format!("numa02-t{i}"),
            phases: zero_loop(i, slice, p.numa02_loops, p),
            regions: regions.clone(),
            job: true,
            affinity: affinity(i),
            nice: 0,
        });
    }
    Workload::from_main(format!("numa02{}", bind.suffix()), programs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let t = topo::resolve_machine("nodes=2,cpus-per-node=2").expect("machine");
        for b in [Bind::Free, Bind::HardBind, Bind::InverseBind] {
            let w = numa01(&t, b, &AutonumaParams::default());
            w.validate().expect("numa01");
            w.check_machine(&t).expect("numa01 fits");
            let w = numa02(&t, b, &AutonumaParams::default());
            w.validate().expect("numa02");
            assert_eq!(w.programs.len(), 4);
        }
    }
}
