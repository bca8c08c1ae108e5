//! `oltp`: a database server in the style of sysbench OLTP read/write against a thread-per-
//! connection server (docs/ARCHITECTURE.md §1.4's regression test for NUMA balancing).
//!
//! One server process owns a large shared buffer cache, initialised by its main thread at
//! start-up. It then starts one thread per client connection; each thread runs
//! `tx_per_thread` transactions, a transaction being:
//! 1. `parse_cycles` of CPU work (parsing, planning, result handling);
//! 2. `lines_per_tx` random cache-line accesses to the buffer cache (B-tree pages and rows of
//!    its queries), a fraction `write_frac` of them writes, a fraction `contended` of those
//!    finding their line last written by another running thread (hot index roots, counters,
//!    the log buffer);
//! 3. a lock wait (`lock_wait`, jittered) and the commit's log flush (`io_wait`, jittered),
//!    both as sleeps.
//!
//! Throughput is transactions over the time from the first client's start to the last
//! client's end.

use crate::memory::MemPolicy;
use crate::program::{Access, OpCost, Pattern, Phase, Program, RegionSpec, Workload};
use crate::time::{Ns, US};

#[derive(Clone, Debug, PartialEq)]
pub struct OltpParams {
    pub clients: u32,
    pub tx_per_thread: u32,
    pub buffer_bytes: u64,
    pub parse_cycles: f64,
    pub lines_per_tx: f64,
    pub write_frac: f64,
    pub contended: f64,
    pub lock_wait: Ns,
    pub io_wait: Ns,
}

impl Default for OltpParams {
    fn default() -> Self {
        OltpParams {
            clients: 16,
            tx_per_thread: 2000,
            // ASSUMPTION: a 16 GiB buffer pool (sysbench tables of a few GB plus indexes fit).
            buffer_bytes: 16 << 30,
            // ASSUMPTION: ~0.4 ms of CPU per read/write transaction (18 queries, a few tens of
            // microseconds each) = 1M cycles at 2.4 GHz.
            parse_cycles: 1.0e6,
            // ASSUMPTION: 18 queries touching ~10 B-tree levels and rows each, ~20 lines each.
            lines_per_tx: 3600.0,
            write_frac: 0.1,
            contended: 0.01,
            // ASSUMPTION: row-lock waits and a group-committed NVMe log flush of tens of us.
            lock_wait: 20 * US,
            io_wait: 50 * US,
        }
    }
}

/// Build the oltp workload.
pub fn oltp(p: &OltpParams) -> Workload {
    let regions = vec![RegionSpec {
        name: "buffer-cache".into(),
        bytes: p.buffer_bytes,
        policy: MemPolicy::FirstTouch,
    }];
    let access = |write: bool| Access {
        region: 0,
        pattern: Pattern::Random,
        bytes: 64.0,
        write,
        contended: if write { p.contended } else { 0.0 },
    };
    let memory = |ops: f64, write: bool| Phase::Memory {
        ops,
        op: OpCost {
            cycles: 0.0,
            accesses: vec![access(write)],
        },
    };
    let client = Program {
        name: "client".into(),
        phases: vec![
            Phase::Loop {
                count: p.tx_per_thread,
            },
            Phase::Compute {
                cycles: p.parse_cycles,
            },
            memory(p.lines_per_tx * (1.0 - p.write_frac), false),
            memory(p.lines_per_tx * p.write_frac, true),
            Phase::Sleep {
                ns: p.lock_wait,
                jitter: 0.5,
            },
            Phase::Sleep {
                ns: p.io_wait,
                jitter: 0.5,
            },
            Phase::EndLoop,
        ],
        regions: regions.clone(),
        job: true,
        affinity: None,
        nice: 0,
    };
    let server = Program {
        name: "server".into(),
        phases: vec![
            Phase::Touch { region: 0 },
            Phase::Thread {
                program: 1,
                count: p.clients,
            },
            Phase::Wait,
        ],
        regions,
        job: false,
        affinity: None,
        nice: 0,
    };
    Workload::from_main(format!("oltp clients={}", p.clients), vec![server, client])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape() {
        let w = oltp(&OltpParams::default());
        w.validate().expect("valid");
    }
}
