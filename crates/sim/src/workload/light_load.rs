//! `light-load`: the test program of the 2020 NUMA imbalance discussion (docs/ARCHITECTURE.md §1.5). One
//! process; its main thread initialises a shared struct, starts 4 threads and waits. Two
//! threads read one field of the struct, two write the neighbouring field of the same cache
//! line, each for a fixed number of iterations, on an otherwise idle machine.
//!
//! An iteration is `iter_cycles` of loop work plus one access to the shared line (`contended`
//! 1.0). The coherence model decides what it costs: a reader misses only after a writer took
//! the line, a writer waits for ownership only after another thread read or wrote it and then
//! only beyond what its store buffer covers, and transfers cost more across nodes — the cost
//! the imbalance rule is about. Run time and the nodes the threads used are the results.

use crate::memory::MemPolicy;
use crate::program::{Access, OpCost, Pattern, Phase, Program, RegionSpec, Workload};

#[derive(Clone, Debug, PartialEq)]
pub struct LightLoadParams {
    /// Iterations per thread (the original loops a billion times).
    pub iterations: f64,
    /// Core cycles of one loop iteration besides the shared access (load or store, add,
    /// compare, branch: about 2 cycles at 2 instructions per cycle).
    pub iter_cycles: f64,
    pub readers: u32,
    pub writers: u32,
}

impl Default for LightLoadParams {
    fn default() -> Self {
        LightLoadParams {
            iterations: 1e9,
            iter_cycles: 2.0,
            readers: 2,
            writers: 2,
        }
    }
}

fn shared_line() -> Vec<RegionSpec> {
    vec![RegionSpec {
        name: "shared-struct".into(),
        bytes: 64,
        policy: MemPolicy::FirstTouch,
    }]
}

fn worker(name: &str, p: &LightLoadParams, write: bool) -> Program {
    Program {
        name: name.into(),
        phases: vec![Phase::Memory {
            ops: p.iterations,
            op: OpCost {
                cycles: p.iter_cycles,
                accesses: vec![Access {
                    region: 0,
                    pattern: Pattern::Random,
                    bytes: 8.0,
                    write,
                    contended: 1.0,
                }],
            },
        }],
        regions: shared_line(),
        job: true,
        affinity: None,
        nice: 0,
    }
}

/// Build the light-load workload.
pub fn light_load(p: &LightLoadParams) -> Workload {
    let main = Program {
        name: "light-load".into(),
        phases: vec![
            Phase::Touch { region: 0 },
            Phase::Thread {
                program: 1,
                count: p.readers,
            },
            Phase::Thread {
                program: 2,
                count: p.writers,
            },
            Phase::Wait,
        ],
        regions: shared_line(),
        job: false,
        affinity: None,
        nice: 0,
    };
    Workload::from_main(
        format!(
            "light-load {}r+{}w x {:e}",
            p.readers, p.writers, p.iterations
        ),
        vec![main, worker("reader", p, false), worker("writer", p, true)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape() {
        let w = light_load(&LightLoadParams::default());
        w.validate().expect("valid");
        assert_eq!(w.programs.len(), 3);
    }
}
