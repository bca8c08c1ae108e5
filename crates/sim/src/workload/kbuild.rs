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
//!
//! With [`PipelineParams`] a compile job is instead the process tree a
//! 2.4 kernel build ran: make's child shell, the gcc driver, and `cpp | cc1 | as` joined by
//! pipes (the 2.4 alpha Makefile compiles with `-pipe`), reading sources through a disk queue
//! ([`crate::disk`]); after the last job make runs the final link. See [`add_kbuild_pipeline`].

use crate::disk::DiskParams;
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

/// The 2.4-era process pipeline of a compile job and the disk its I/O queues on.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineParams {
    /// Disk this build's sources and objects live on.
    pub disk: usize,
    pub disk_params: DiskParams,
    /// Shares of a job's CPU burst spent in cpp and in as (cc1 has the rest).
    pub cpp_share: f64,
    pub as_share: f64,
    /// Pipe buffers of preprocessed text (and of assembly) per job.
    pub pipe_chunks: u32,
    /// Kernel cycles to copy one pipe buffer in or out.
    pub pipe_cycles: f64,
    /// Disk reads of cpp (source and headers), each of `read_bytes`.
    pub reads: u32,
    pub read_bytes: u64,
    /// The object file as writes it (write-behind: as does not wait).
    pub object_bytes: u64,
    /// The final link: CPU cycles of ld and the image it writes (write-behind).
    pub link_cycles: f64,
    pub image_bytes: u64,
}

impl Default for PipelineParams {
    fn default() -> Self {
        PipelineParams {
            disk: 0,
            disk_params: DiskParams::default(),
            cpp_share: 0.1,
            as_share: 0.1,
            pipe_chunks: 32,
            pipe_cycles: 10_000.0,
            reads: 2,
            read_bytes: 8 << 10,
            object_bytes: 16 << 10,
            link_cycles: 1e9,
            image_bytes: 4 << 20,
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

/// Add one build as the 2.4-era process tree (the module docs) to `programs`, its pipes
/// numbered from `*chans` on (two per job slot; `*chans` is advanced past them); returns the
/// index of its `make` program.
///
/// - make: `make_cycles`, fork `parallelism` job slots (as in [`add_kbuild`]), wait, then
///   fork + exec `ld` and wait for it;
/// - per job: make forks + execs `sh -c`, which forks + execs the gcc driver, which forks +
///   execs cpp, cc1 and as at once, joined by two pipes, and waits for them;
/// - cpp: `reads` disk reads (waited), then `pipe_chunks` times: its share of the burst,
///   write one pipe buffer (blocking while the pipe is full);
/// - cc1: first touch of its heap, then per buffer: read it, its share of the burst and of
///   the heap operations, write one buffer to as;
/// - as: per buffer: read it, its share of the burst; then the object file (write-behind);
/// - ld: `link_cycles`, the image (write-behind). Its inputs were just written, so they are
///   read from the page cache.
///
/// Every fork + exec costs `fork_exec_cycles` in the parent and again in the child (exec and
/// dynamic linking), as in [`add_kbuild`].
pub fn add_kbuild_pipeline(
    p: &KbuildParams,
    pp: &PipelineParams,
    tag: &str,
    programs: &mut Vec<Program>,
    chans: &mut usize,
) -> usize {
    let variants = p.burst_cycles.len().max(1);
    let slots = p.parallelism.clamp(1, p.jobs.max(1));
    let fe = p.fork_exec_cycles;
    let mut make = vec![Phase::Compute {
        cycles: p.make_cycles,
    }];
    for s in 0..slots {
        let pipes = (*chans, *chans + 1);
        *chans += 2;
        // The shell of each burst variant, with the gcc driver and its three passes.
        let mut shells = Vec::new();
        for (v, &cycles) in p.burst_cycles.iter().enumerate() {
            let name = |what: &str| format!("{tag}{what}{v}-s{s}");
            add_passes(p, pp, cycles, pipes, &name, programs);
            let first = programs.len() - 3;
            let mut gcc = vec![Phase::Kernel { cycles: fe }];
            for pass in first..first + 3 {
                gcc.extend(spawn(fe, pass));
            }
            gcc.push(Phase::Wait);
            programs.push(plain(name("gcc"), gcc));
            let mut sh = vec![Phase::Kernel { cycles: fe }];
            sh.extend(spawn(fe, programs.len() - 1));
            sh.push(Phase::Wait);
            programs.push(plain(name("sh"), sh));
            shells.push(programs.len() - 1);
        }
        let mine = p.jobs / slots + u32::from(s < p.jobs % slots);
        let mut phases = Vec::new();
        for j in 0..mine {
            let variant = (s as usize + j as usize * slots as usize) % variants;
            phases.extend(spawn(fe, shells[variant]));
            phases.push(Phase::Wait);
        }
        programs.push(plain(format!("{tag}make-slot"), phases));
        make.push(Phase::Kernel { cycles: fe });
        make.push(Phase::Spawn {
            program: programs.len() - 1,
            count: 1,
            exec: false,
        });
    }
    make.push(Phase::Wait);
    programs.push(plain(
        format!("{tag}ld"),
        vec![
            Phase::Kernel { cycles: fe },
            Phase::Compute {
                cycles: pp.link_cycles,
            },
            Phase::Io {
                disk: pp.disk,
                service: pp.disk_params.service_ns(pp.image_bytes),
                wait: false,
            },
        ],
    ));
    make.extend(spawn(fe, programs.len() - 1));
    make.push(Phase::Wait);
    programs.push(plain(format!("{tag}make"), make));
    programs.len() - 1
}

fn plain(name: String, phases: Vec<Phase>) -> Program {
    Program {
        name,
        phases,
        regions: vec![],
        job: false,
        affinity: None,
        nice: 0,
    }
}

/// Fork + exec of `program`: the parent's share of the cost, then the spawn.
fn spawn(fe: f64, program: usize) -> [Phase; 2] {
    [
        Phase::Kernel { cycles: fe },
        Phase::Spawn {
            program,
            count: 1,
            exec: true,
        },
    ]
}

/// cpp, cc1 and as of one job of `cycles`, joined by the pipes `to_cc1` and `to_as`, pushed
/// to `programs` in that order under the names `name` gives.
fn add_passes(
    p: &KbuildParams,
    pp: &PipelineParams,
    cycles: f64,
    (to_cc1, to_as): (usize, usize),
    name: &dyn Fn(&str) -> String,
    programs: &mut Vec<Program>,
) {
    let fe = p.fork_exec_cycles;
    let read = pp.disk_params.service_ns(pp.read_bytes);
    let write = pp.disk_params.service_ns(pp.object_bytes);
    let chunks = pp.pipe_chunks.max(1);
    let per = |x: f64| x / f64::from(chunks);
    let mut cpp = vec![Phase::Kernel { cycles: fe }];
    for _ in 0..pp.reads {
        cpp.push(Phase::Io {
            disk: pp.disk,
            service: read,
            wait: true,
        });
    }
    cpp.extend([
        Phase::Loop { count: chunks },
        Phase::Compute {
            cycles: per(cycles * pp.cpp_share),
        },
        Phase::Send {
            chans: vec![to_cc1],
            msgs: 1,
            cycles_per_msg: pp.pipe_cycles,
            buffer: 1,
        },
        Phase::EndLoop,
    ]);
    programs.push(plain(name("cpp"), cpp));
    let cc1_share = (1.0 - pp.cpp_share - pp.as_share).max(0.0);
    programs.push(Program {
        name: name("cc1-"),
        regions: vec![RegionSpec {
            name: "heap".into(),
            bytes: p.heap_mib << 20,
            policy: MemPolicy::FirstTouch,
        }],
        phases: vec![
            Phase::Kernel { cycles: fe },
            Phase::Touch { region: 0 },
            Phase::Loop { count: chunks },
            Phase::Recv {
                chan: to_cc1,
                msgs: 1,
                cycles_per_msg: pp.pipe_cycles,
            },
            Phase::Compute {
                cycles: per(cycles * cc1_share),
            },
            Phase::Memory {
                ops: per(p.heap_ops),
                op: OpCost::random_write(4.0),
            },
            Phase::Send {
                chans: vec![to_as],
                msgs: 1,
                cycles_per_msg: pp.pipe_cycles,
                buffer: 1,
            },
            Phase::EndLoop,
        ],
        job: true,
        affinity: None,
        nice: 0,
    });
    programs.push(plain(
        name("as"),
        vec![
            Phase::Kernel { cycles: fe },
            Phase::Loop { count: chunks },
            Phase::Recv {
                chan: to_as,
                msgs: 1,
                cycles_per_msg: pp.pipe_cycles,
            },
            Phase::Compute {
                cycles: per(cycles * pp.as_share),
            },
            Phase::EndLoop,
            Phase::Io {
                disk: pp.disk,
                service: write,
                wait: false,
            },
        ],
    ));
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
