//! `convergence` (after `perf bench numa mem`): P processes of T threads, each process with its
//! own memory (`bytes_per_process`), every thread doing random read-modify-writes over its
//! process's memory for a long time. The question is whether, and when, the scheduler brings
//! every process's threads onto one node and spreads the processes one per node; the study
//! ([`crate::studies::convergence`]) watches the run and stops once converged.

use crate::memory::MemPolicy;
use crate::program::{Launch, OpCost, Phase, Program, RegionSpec, Workload};

#[derive(Clone, Debug, PartialEq)]
pub struct ConvergenceParams {
    pub processes: u32,
    pub threads: u32,
    pub bytes_per_process: u64,
    /// Random updates per thread (long enough to outlast the watch).
    pub ops: f64,
    /// Core cycles per update besides the memory access.
    pub op_cycles: f64,
}

impl Default for ConvergenceParams {
    fn default() -> Self {
        ConvergenceParams {
            processes: 2,
            threads: 2,
            // ASSUMPTION: 1 GiB per process, well above any LLC, like perf bench numa's
            // per-process buffers.
            bytes_per_process: 1 << 30,
            ops: 1e12,
            op_cycles: 4.0,
        }
    }
}

/// Build the convergence workload.
pub fn convergence(p: &ConvergenceParams) -> Workload {
    let prog = Program {
        name: "numa-mem".into(),
        phases: vec![
            Phase::Touch { region: 0 },
            Phase::Memory {
                ops: p.ops,
                op: OpCost::random_write(p.op_cycles),
            },
        ],
        regions: vec![RegionSpec {
            name: "process-memory".into(),
            bytes: p.bytes_per_process,
            policy: MemPolicy::FirstTouch,
        }],
        job: true,
        affinity: None,
        nice: 0,
    };
    Workload {
        name: format!("convergence {}x{}", p.processes, p.threads),
        programs: vec![prog],
        launches: vec![Launch {
            count: p.processes,
            threads: p.threads,
            ..Launch::once(0)
        }],
        channels: 0,
        disturbance: None,
    }
}
