//! numa_test: N copies of `randupdt` started together, each allocating three arrays
//! (a: PROBLEMSIZE doubles, b: PROBLEMSIZE doubles, ix: PROBLEMSIZE ints), initialising them
//! by first touch, then doing `passes` passes of `a[ix[i]] += b[i]` (random read-modify-write
//! of `a`, streaming reads of `b` and `ix`). Three seconds after the start, `hackbench 20`
//! (20 groups of 20 senders and 20 receivers; each sender writes `loops` messages to each
//! receiver of its group over a socket) runs as a short load peak.
//!
//! The CPU costs of the non-memory work are stated in cycles (docs/model/ gives the
//! reasoning for each); memory costs come from the machine's cost model.

use crate::memory::MemPolicy;
use crate::program::{Access, Launch, OpCost, Pattern, Phase, Program, RegionSpec, Workload};
use crate::time::{Ns, SEC};

/// Parameters of one numa_test run.
#[derive(Clone, Debug, PartialEq)]
pub struct NumaTestParams {
    pub tasks: u32,
    /// PROBLEMSIZE: elements per array.
    pub problem_size: u64,
    pub passes: u32,
    /// Start hackbench as a disturbance.
    pub disturb: bool,
    pub disturb_at: Ns,
    pub hackbench_groups: u32,
    pub hackbench_loops: u32,
    /// Messages a receiver's socket holds before its senders block (0: no limit): the
    /// socket's send buffer, 65,535 bytes, over the memory one 100-byte message takes in it.
    pub hackbench_buffer_msgs: u32,
    /// Core cycles of one update besides its memory accesses (`a[ix[i]] += b[i]`: three
    /// loads, an add, a store and the loop: about six instructions at about two per cycle).
    pub update_cycles: f64,
    /// Cycles to produce one random index during initialisation (a libc `rand()` call).
    pub rand_cycles: f64,
    /// Kernel cycles of a shell's fork + exec of a job.
    pub fork_exec_cycles: f64,
    /// Kernel cycles of hackbench's fork of one process.
    pub fork_cycles: f64,
    /// Kernel cycles to write one small message to a socket, and to read one.
    pub msg_send_cycles: f64,
    pub msg_recv_cycles: f64,
    /// Not the benchmark's but the model's: the shortest simulated time between two
    /// contention refreshes ([`crate::Sim::with_contention_period`]).
    pub contention_period: Ns,
}

impl Default for NumaTestParams {
    fn default() -> Self {
        NumaTestParams {
            tasks: 4,
            problem_size: 1_000_000,
            passes: 100,
            disturb: true,
            disturb_at: 3 * SEC,
            hackbench_groups: 20,
            hackbench_loops: 100,
            hackbench_buffer_msgs: 180,
            update_cycles: 3.0,
            rand_cycles: 50.0,
            fork_exec_cycles: 500_000.0,
            fork_cycles: 150_000.0,
            msg_send_cycles: 4_000.0,
            msg_recv_cycles: 4_000.0,
            contention_period: crate::kernel::CONTENTION_PERIOD,
        }
    }
}

/// Rounds in which the model interleaves randupdt's first touches with its rand() calls.
pub const INIT_SLICES: u32 = 16;

/// Build the numa_test workload.
pub fn numa_test(p: &NumaTestParams) -> Workload {
    let ne = p.problem_size;
    let randupdt = Program {
        name: "randupdt".into(),
        regions: vec![
            region("a", ne * 8),
            region("b", ne * 8),
            region("ix", ne * 4),
        ],
        phases: vec![
            // randupdt's initialisation loop writes a[i], b[i] and ix[i] and calls rand()
            // for every element, so its first touches are spread over the whole loop, rand()
            // time included: modelled as INIT_SLICES rounds of a slice of each array and
            // that slice's rand() calls.
            Phase::Loop { count: INIT_SLICES },
            Phase::TouchPart {
                region: 0,
                bytes: (ne * 8).div_ceil(u64::from(INIT_SLICES)),
            },
            Phase::TouchPart {
                region: 1,
                bytes: (ne * 8).div_ceil(u64::from(INIT_SLICES)),
            },
            Phase::TouchPart {
                region: 2,
                bytes: (ne * 4).div_ceil(u64::from(INIT_SLICES)),
            },
            Phase::Compute {
                cycles: ne as f64 * p.rand_cycles / f64::from(INIT_SLICES),
            },
            Phase::EndLoop,
            Phase::Memory {
                ops: ne as f64 * f64::from(p.passes),
                op: OpCost {
                    cycles: p.update_cycles,
                    accesses: vec![
                        access(2, Pattern::Stream, 4.0, false),
                        access(1, Pattern::Stream, 8.0, false),
                        access(0, Pattern::Random, 8.0, true),
                    ],
                },
            },
        ],
        job: true,
        affinity: None,
        nice: 0,
    };
    let mut programs = vec![randupdt];
    let mut dispatch = vec![
        Phase::Loop { count: p.tasks },
        Phase::Kernel {
            cycles: p.fork_exec_cycles,
        },
        Phase::Spawn {
            program: 0,
            count: 1,
            exec: true,
        },
        Phase::EndLoop,
    ];
    let mut channels = 0;
    let mut disturbance = None;
    if p.disturb && p.hackbench_groups > 0 {
        let (hb, nchan) = hackbench(p, &mut programs);
        channels = nchan;
        disturbance = Some(hb);
        dispatch.push(Phase::Sleep {
            ns: p.disturb_at,
            jitter: 0.0,
        });
        dispatch.push(Phase::Kernel {
            cycles: p.fork_exec_cycles,
        });
        dispatch.push(Phase::Spawn {
            program: hb,
            count: 1,
            exec: true,
        });
    }
    dispatch.push(Phase::Wait);
    programs.push(Program {
        name: "dispatch".into(),
        phases: dispatch,
        regions: vec![],
        job: false,
        affinity: None,
        nice: 0,
    });
    let dispatch_idx = programs.len() - 1;
    Workload {
        name: format!("numa-test N={} PROBLEMSIZE={}", p.tasks, ne),
        programs,
        launches: vec![Launch {
            program: dispatch_idx,
            count: 1,
            threads: 1,
            at: 0,
            cpu: Some(0),
        }],
        channels,
        disturbance,
    }
}

fn region(name: &str, bytes: u64) -> RegionSpec {
    RegionSpec {
        name: name.into(),
        bytes,
        policy: MemPolicy::FirstTouch,
    }
}

fn access(region: usize, pattern: Pattern, bytes: f64, write: bool) -> Access {
    Access {
        region,
        pattern,
        bytes,
        write,
        contended: 0.0,
    }
}

/// Add hackbench's programs; returns (index of its main program, channels used).
fn hackbench(p: &NumaTestParams, programs: &mut Vec<Program>) -> (usize, usize) {
    let groups = p.hackbench_groups as usize;
    let per_group = 20usize;
    let mut main = Vec::new();
    for g in 0..groups {
        let chans: Vec<usize> = (g * per_group..(g + 1) * per_group).collect();
        for &c in &chans {
            programs.push(Program {
                name: "hackbench-recv".into(),
                phases: vec![Phase::Recv {
                    chan: c,
                    msgs: p.hackbench_loops * per_group as u32,
                    cycles_per_msg: p.msg_recv_cycles,
                }],
                regions: vec![],
                job: false,
                affinity: None,
                nice: 0,
            });
            main.push(Phase::Kernel {
                cycles: p.fork_cycles,
            });
            // hackbench forks its workers without exec.
            main.push(Phase::Spawn {
                program: programs.len() - 1,
                count: 1,
                exec: false,
            });
        }
        programs.push(Program {
            name: "hackbench-send".into(),
            phases: vec![
                Phase::Loop {
                    count: p.hackbench_loops,
                },
                Phase::Send {
                    chans,
                    msgs: 1,
                    cycles_per_msg: p.msg_send_cycles,
                    buffer: p.hackbench_buffer_msgs,
                },
                Phase::EndLoop,
            ],
            regions: vec![],
            job: false,
            affinity: None,
            nice: 0,
        });
        main.push(Phase::Kernel {
            cycles: p.fork_cycles * per_group as f64,
        });
        main.push(Phase::Spawn {
            program: programs.len() - 1,
            count: per_group as u32,
            exec: false,
        });
    }
    main.push(Phase::Wait);
    programs.push(Program {
        name: "hackbench".into(),
        phases: main,
        regions: vec![],
        job: false,
        affinity: None,
        nice: 0,
    });
    (programs.len() - 1, groups * per_group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape() {
        let w = numa_test(&NumaTestParams {
            tasks: 8,
            ..Default::default()
        });
        w.validate().expect("valid");
        assert_eq!(w.channels, 400);
        let hb = w.disturbance.expect("hackbench");
        assert_eq!(w.programs[hb].name, "hackbench");
        let r = &w.programs[0];
        assert_eq!(r.regions.iter().map(|r| r.bytes).sum::<u64>(), 20_000_000);
        let quiet = numa_test(&NumaTestParams {
            disturb: false,
            ..Default::default()
        });
        assert!(quiet.disturbance.is_none());
        assert_eq!(quiet.programs.len(), 2);
    }
}
