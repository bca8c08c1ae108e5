//! kbuild: a parallel kernel build, `make -jN`.
//!
//! `make` parses its makefiles (CPU work), then keeps `parallelism` compile jobs going until
//! `jobs` have run, and exits: its wall time is the build time. make's job slots are modelled
//! as `parallelism` forked helper processes (make's child shells), each of which runs its
//! share of the jobs one after another: fork + exec of the compiler, wait, next. Make's own
//! "start a job whenever one finishes" gives the same concurrency.
//!
//! A compile job (`cc`) is a fresh exec'ed process (exec placement applies): exec and dynamic
//! linking (kernel time), reading the source and headers (an I/O sleep), first touch of its
//! heap, a CPU burst that stays in cache, pointer chasing over its heap, and writing the
//! object file (another I/O sleep). Job sizes cycle through `burst_cycles`, so the build has
//! short and long compiles side by side.

use crate::memory::MemPolicy;
use crate::program::{Launch, OpCost, Phase, Program, RegionSpec, Workload};
use crate::time::{MS, Ns};

/// Parameters of one kernel build.
#[derive(Clone, Debug, PartialEq)]
pub struct KbuildParams {
    /// Compile jobs in the build.
    pub jobs: u32,
    /// make's `-j`.
    pub parallelism: u32,
    /// CPU bursts of the compile jobs, in cycles, used in turn.
    pub burst_cycles: Vec<f64>,
    /// The compiler's heap (MiB), first-touched by each job.
    pub heap_mib: u64,
    /// Random 8-byte read-modify-writes over the heap per job.
    pub heap_ops: f64,
    /// I/O wait to read the sources, and to write the object file.
    pub read_wait: Ns,
    pub write_wait: Ns,
    /// +/- fraction drawn per I/O wait.
    pub io_jitter: f64,
    /// Kernel cycles of a fork + exec.
    pub fork_exec_cycles: f64,
    /// make's own work before the first job (reading makefiles, stat'ing dependencies).
    pub make_cycles: f64,
    /// Where make starts.
    pub cpu: usize,
}

impl Default for KbuildParams {
    fn default() -> Self {
        KbuildParams {
            jobs: 256,
            parallelism: 16,
            burst_cycles: vec![2e8, 5e8, 1e9, 2e9],
            heap_mib: 16,
            heap_ops: 1e6,
            read_wait: 20 * MS,
            write_wait: 5 * MS,
            io_jitter: 0.5,
            fork_exec_cycles: 500_000.0,
            make_cycles: 2e8,
            cpu: 0,
        }
    }
}

/// Add one build's programs to `programs` (names prefixed with `tag`); returns the index of
/// its `make` program.
pub fn add_kbuild(p: &KbuildParams, tag: &str, programs: &mut Vec<Program>) -> usize {
    let first_cc = programs.len();
    for (i, &cycles) in p.burst_cycles.iter().enumerate() {
        programs.push(cc(p, &format!("{tag}cc{i}"), cycles));
    }
    let variants = p.burst_cycles.len().max(1);
    let slots = p.parallelism.clamp(1, p.jobs.max(1));
    let mut make = vec![Phase::Compute {
        cycles: p.make_cycles,
    }];
    for s in 0..slots {
        let mine = p.jobs / slots + u32::from(s < p.jobs % slots);
        let mut phases = Vec::new();
        for j in 0..mine {
            let variant = (s as usize + j as usize * slots as usize) % variants;
            phases.push(Phase::Kernel {
                cycles: p.fork_exec_cycles,
            });
            phases.push(Phase::Spawn {
                program: first_cc + variant,
                count: 1,
                exec: true,
            });
            phases.push(Phase::Wait);
        }
        programs.push(Program {
            name: format!("{tag}make-slot"),
            phases,
            regions: vec![],
            job: false,
            affinity: None,
            nice: 0,
        });
        make.push(Phase::Kernel {
            cycles: p.fork_exec_cycles,
        });
        make.push(Phase::Spawn {
            program: programs.len() - 1,
            count: 1,
            exec: false,
        });
    }
    make.push(Phase::Wait);
    programs.push(Program {
        name: format!("{tag}make"),
        phases: make,
        regions: vec![],
        job: false,
        affinity: None,
        nice: 0,
    });
    programs.len() - 1
}

fn cc(p: &KbuildParams, name: &str, cycles: f64) -> Program {
    Program {
        name: name.into(),
        regions: vec![RegionSpec {
            name: "heap".into(),
            bytes: p.heap_mib << 20,
            policy: MemPolicy::FirstTouch,
        }],
        phases: vec![
            Phase::Kernel {
                cycles: p.fork_exec_cycles,
            },
            Phase::Sleep {
                ns: p.read_wait,
                jitter: p.io_jitter,
            },
            Phase::Touch { region: 0 },
            Phase::Compute { cycles },
            Phase::Memory {
                ops: p.heap_ops,
                op: OpCost::random_write(4.0),
            },
            Phase::Sleep {
                ns: p.write_wait,
                jitter: p.io_jitter,
            },
        ],
        job: true,
        affinity: None,
        nice: 0,
    }
}

/// A workload of one build.
pub fn kbuild(p: &KbuildParams) -> Workload {
    let mut programs = Vec::new();
    let make = add_kbuild(p, "", &mut programs);
    Workload {
        name: format!("kbuild -j{} ({} jobs)", p.parallelism, p.jobs),
        programs,
        launches: vec![Launch {
            program: make,
            count: 1,
            threads: 1,
            at: 0,
            cpu: Some(p.cpu),
        }],
        channels: 0,
        disturbance: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape() {
        let p = KbuildParams {
            jobs: 10,
            parallelism: 4,
            ..Default::default()
        };
        let w = kbuild(&p);
        w.validate().expect("valid");
        let spawned: u32 = w
            .programs
            .iter()
            .filter(|p| p.name == "make-slot")
            .flat_map(|p| &p.phases)
            .map(|ph| match ph {
                Phase::Spawn { count, .. } => *count,
                _ => 0,
            })
            .sum();
        assert_eq!(spawned, 10);
        assert_eq!(
            w.programs.iter().filter(|p| p.name == "make-slot").count(),
            4
        );
    }
}
