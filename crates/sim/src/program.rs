//! What simulated tasks execute: a program is a flat list of phases (with loop markers),
//! interpreted one phase at a time by each task. A workload is a set of programs plus what is
//! started when.
//!
//! Work is expressed in hardware-neutral units (CPU cycles, memory accesses, bytes) so that
//! the same program runs slower or faster on different machines through the cost model.

use crate::memory::MemPolicy;
use crate::time::Ns;

/// What is wrong with one phase of a program (see [`ProgramError::Phase`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PhaseProblem {
    #[error("end of loop without a loop")]
    EndLoopWithoutLoop,
    #[error("no region {0}")]
    NoRegion(usize),
    #[error("ops and cycles must be finite and >= 0")]
    BadOps,
    #[error("access bytes must be > 0, contended in 0..1")]
    BadAccess,
    #[error("cycles must be finite and >= 0")]
    BadCycles,
    #[error("no program {0}")]
    NoProgram(usize),
    #[error("no such channel")]
    NoChannel,
    #[error("sleep jitter must be in 0..1")]
    BadJitter,
}

/// A program or workload that is inconsistent in itself or does not fit a machine. Each
/// variant names the program (or launch) and the item that failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    /// `phase` counts from 1.
    #[error("program `{program}` phase {phase}: {problem}")]
    Phase {
        program: String,
        phase: usize,
        problem: PhaseProblem,
    },
    #[error("program `{program}`: a loop is not closed")]
    UnclosedLoop { program: String },
    #[error(
        "program `{program}` starts threads of `{thread}`, which must declare the same regions as `{program}` (threads share the address space)"
    )]
    ThreadRegions { program: String, thread: String },
    #[error("workload `{workload}`: launch of unknown program {program}")]
    UnknownLaunch { workload: String, program: usize },
    #[error("program `{program}`: empty affinity list")]
    EmptyAffinity { program: String },
    #[error("program `{program}`: affinity names CPU {cpu}, but {machine} has CPUs 0-{last}")]
    AffinityCpu {
        program: String,
        cpu: usize,
        machine: String,
        last: usize,
    },
    #[error(
        "program `{program}` region `{region}`: memory policy names node {node}, but {machine} has nodes 0-{last}"
    )]
    PolicyNode {
        program: String,
        region: String,
        node: usize,
        machine: String,
        last: usize,
    },
    #[error(
        "program `{program}` region `{region}`: {mib} MiB is more than {machine}'s {machine_mib} MiB of memory"
    )]
    RegionTooLarge {
        program: String,
        region: String,
        mib: u64,
        machine: String,
        machine_mib: u64,
    },
    #[error(
        "program `{program}`: its regions need {mib} MiB, more than {machine}'s {machine_mib} MiB of memory"
    )]
    RegionsTooLarge {
        program: String,
        mib: u64,
        machine: String,
        machine_mib: u64,
    },
    #[error("launch of `{program}`: CPU {cpu} does not exist on {machine} (CPUs 0-{last})")]
    LaunchCpu {
        program: String,
        cpu: usize,
        machine: String,
        last: usize,
    },
}

/// How an access walks its region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Independent random addresses: each access is one cache line, hit only if the line
    /// happens to be cached.
    Random,
    /// Sequential: every byte is used, lines are fetched once per pass.
    Stream,
}

/// One memory access made by every operation of a `Memory` phase.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    /// Index into the process's regions.
    pub region: usize,
    pub pattern: Pattern,
    /// Bytes used per operation.
    pub bytes: f64,
    /// The access writes (the line is written back later: twice the traffic).
    pub write: bool,
    /// Fraction of these accesses that go to cache lines shared with other running threads
    /// of the same process (0 for private data). What they cost follows the coherence model:
    /// for a region of one line `kernel::cost::line_stalls`; in a larger region they are the
    /// accesses that find their line last written by another running thread
    /// (`kernel::cost::scattered_stalls`).
    pub contended: f64,
}

/// The cost of one operation of a `Memory` phase.
#[derive(Clone, Debug, PartialEq)]
pub struct OpCost {
    /// Core cycles of non-memory work per operation.
    pub cycles: f64,
    pub accesses: Vec<Access>,
}

impl OpCost {
    /// `cycles` of core work and one 8-byte write at a random place in region 0: a process
    /// updating its own data (a heap, an array), nothing shared.
    pub fn random_write(cycles: f64) -> OpCost {
        OpCost {
            cycles,
            accesses: vec![Access {
                region: 0,
                pattern: Pattern::Random,
                bytes: 8.0,
                write: true,
                contended: 0.0,
            }],
        }
    }
}

/// One step of a program.
#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    /// User-mode CPU work that stays in cache.
    Compute {
        cycles: f64,
    },
    /// Kernel-mode CPU work (system calls, fork), charged as system time.
    Kernel {
        cycles: f64,
    },
    /// `ops` operations, each costing `op` (user time).
    Memory {
        ops: f64,
        op: OpCost,
    },
    /// First-touch initialisation: write every byte of a region once. Page faults (system
    /// time) place its page groups on the node of the CPU running at the time.
    Touch {
        region: usize,
    },
    /// Like `Touch`, but only the next `bytes` of the region that are not yet placed (a
    /// program that initialises its arrays a slice at a time, between other work).
    TouchPart {
        region: usize,
        bytes: u64,
    },
    /// Block for a while (I/O, timer); `jitter` is a +/- fraction drawn per sleep.
    Sleep {
        ns: Ns,
        jitter: f64,
    },
    /// One request to disk `disk` taking `service` ns of its time (`crate::disk`): queued
    /// behind the requests before it. With `wait` the task sleeps until it is served (a read;
    /// the load average counts it), without it the task goes on (write-behind).
    Io {
        disk: usize,
        service: Ns,
        wait: bool,
    },
    /// Write `msgs` messages to each channel (system time), waking blocked readers. With
    /// `buffer` > 0 a channel holds at most that many unread messages: the sender blocks
    /// before the phase while any of its channels has no room for `msgs` more (a full socket
    /// buffer), and a reader taking messages wakes it.
    Send {
        chans: Vec<usize>,
        msgs: u32,
        cycles_per_msg: f64,
        buffer: u32,
    },
    /// Read `msgs` messages from a channel in total, blocking while it is empty.
    Recv {
        chan: usize,
        msgs: u32,
        cycles_per_msg: f64,
    },
    /// Fork `count` new processes running program `program`; with `exec`, each execs a new
    /// image (exec-time placement applies), without it they are plain forks of the parent.
    Spawn {
        program: usize,
        count: u32,
        exec: bool,
    },
    /// Create `count` more threads of this process running program `program`.
    Thread {
        program: usize,
        count: u32,
    },
    /// Wait until every child (process or thread) this task created has exited.
    Wait,
    /// Repeat the phases up to the matching `EndLoop` `count` times.
    Loop {
        count: u32,
    },
    EndLoop,
}

/// A memory region a process gets at exec.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionSpec {
    pub name: String,
    pub bytes: u64,
    pub policy: MemPolicy,
}

/// A program: its phases, and the regions a process running it owns.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub name: String,
    pub phases: Vec<Phase>,
    pub regions: Vec<RegionSpec>,
    /// Tasks running this program are reported as jobs (for example numa_test's workers).
    pub job: bool,
    /// Restrict tasks to these CPUs (None: all CPUs).
    pub affinity: Option<Vec<usize>>,
    /// Nice value of its tasks (-20..=19): their load weight under the fair class.
    pub nice: i32,
}

impl Program {
    /// Index of the `EndLoop` matching the `Loop` at `start`.
    pub fn loop_end(&self, start: usize) -> Option<usize> {
        let mut depth = 0usize;
        for (i, p) in self.phases.iter().enumerate().skip(start) {
            match p {
                Phase::Loop { .. } => depth += 1,
                Phase::EndLoop => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// Check loops are balanced and indices in range.
    pub fn validate(&self, nr_programs: usize, nr_chans: usize) -> Result<(), ProgramError> {
        let mut depth: i64 = 0;
        for (i, p) in self.phases.iter().enumerate() {
            let at = |problem| ProgramError::Phase {
                program: self.name.clone(),
                phase: i + 1,
                problem,
            };
            match p {
                Phase::Loop { .. } => depth += 1,
                Phase::EndLoop => {
                    depth -= 1;
                    if depth < 0 {
                        return Err(at(PhaseProblem::EndLoopWithoutLoop));
                    }
                }
                Phase::Touch { region } | Phase::TouchPart { region, .. }
                    if *region >= self.regions.len() =>
                {
                    return Err(at(PhaseProblem::NoRegion(*region)));
                }
                Phase::Memory { op, ops } => {
                    if !ops.is_finite() || *ops < 0.0 || !op.cycles.is_finite() || op.cycles < 0.0 {
                        return Err(at(PhaseProblem::BadOps));
                    }
                    for a in &op.accesses {
                        if a.region >= self.regions.len() {
                            return Err(at(PhaseProblem::NoRegion(a.region)));
                        }
                        if !(a.bytes.is_finite()
                            && a.bytes > 0.0
                            && (0.0..=1.0).contains(&a.contended))
                        {
                            return Err(at(PhaseProblem::BadAccess));
                        }
                    }
                }
                Phase::Compute { cycles } | Phase::Kernel { cycles }
                    if !cycles.is_finite() || *cycles < 0.0 =>
                {
                    return Err(at(PhaseProblem::BadCycles));
                }
                Phase::Spawn { program, .. } | Phase::Thread { program, .. }
                    if *program >= nr_programs =>
                {
                    return Err(at(PhaseProblem::NoProgram(*program)));
                }
                Phase::Send { chans, .. } if chans.iter().any(|&c| c >= nr_chans) => {
                    return Err(at(PhaseProblem::NoChannel));
                }
                Phase::Recv { chan, .. } if *chan >= nr_chans => {
                    return Err(at(PhaseProblem::NoChannel));
                }
                Phase::Sleep { jitter, .. } if !(0.0..1.0).contains(jitter) => {
                    return Err(at(PhaseProblem::BadJitter));
                }
                _ => {}
            }
        }
        if depth != 0 {
            return Err(ProgramError::UnclosedLoop {
                program: self.name.clone(),
            });
        }
        Ok(())
    }
}

/// Something started by the workload itself (not forked by a task).
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub program: usize,
    /// Processes to start.
    pub count: u32,
    /// Threads per process (each runs the program).
    pub threads: u32,
    /// When to start them.
    pub at: Ns,
    /// Start on this CPU (None: CPU 0, as a shell started from a login would be).
    pub cpu: Option<usize>,
}

impl Launch {
    /// One process of `program`, one thread, started at time 0 on CPU 0.
    pub fn once(program: usize) -> Launch {
        Launch {
            program,
            count: 1,
            threads: 1,
            at: 0,
            cpu: Some(0),
        }
    }
}

/// A complete workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub name: String,
    pub programs: Vec<Program>,
    pub launches: Vec<Launch>,
    /// Number of message channels (sockets, pipes).
    pub channels: usize,
    /// The program whose tasks' life span is the "disturbance" (hackbench), if any.
    pub disturbance: Option<usize>,
}

impl Workload {
    /// A workload whose first program is started once at time 0 on CPU 0 and starts the
    /// others itself; no channels, no disturbance.
    pub fn from_main(name: String, programs: Vec<Program>) -> Workload {
        Workload {
            name,
            programs,
            launches: vec![Launch::once(0)],
            channels: 0,
            disturbance: None,
        }
    }

    pub fn validate(&self) -> Result<(), ProgramError> {
        for p in &self.programs {
            p.validate(self.programs.len(), self.channels)?;
            // A thread runs in its creator's address space: it must see the same regions.
            for ph in &p.phases {
                if let Phase::Thread { program, .. } = ph {
                    let t = &self.programs[*program];
                    let uses_memory = t.phases.iter().any(|x| {
                        matches!(
                            x,
                            Phase::Touch { .. } | Phase::TouchPart { .. } | Phase::Memory { .. }
                        )
                    });
                    if t.regions != p.regions && (uses_memory || !t.regions.is_empty()) {
                        return Err(ProgramError::ThreadRegions {
                            program: p.name.clone(),
                            thread: t.name.clone(),
                        });
                    }
                }
            }
        }
        for l in &self.launches {
            if l.program >= self.programs.len() {
                return Err(ProgramError::UnknownLaunch {
                    workload: self.name.clone(),
                    program: l.program,
                });
            }
        }
        Ok(())
    }

    /// Check the workload against a machine: CPUs and nodes it names exist, no region is
    /// larger than the machine's memory. One line naming the culprit on failure.
    pub fn check_machine(&self, topo: &topo::Topology) -> Result<(), ProgramError> {
        for p in &self.programs {
            if let Some(aff) = &p.affinity {
                if aff.is_empty() {
                    return Err(ProgramError::EmptyAffinity {
                        program: p.name.clone(),
                    });
                }
                if let Some(c) = aff.iter().find(|&&c| c >= topo.nr_cpus()) {
                    return Err(ProgramError::AffinityCpu {
                        program: p.name.clone(),
                        cpu: *c,
                        machine: topo.name.clone(),
                        last: topo.nr_cpus() - 1,
                    });
                }
            }
            for r in &p.regions {
                if let Some(n) = r.policy.nodes().iter().find(|&&n| n >= topo.nr_nodes()) {
                    return Err(ProgramError::PolicyNode {
                        program: p.name.clone(),
                        region: r.name.clone(),
                        node: *n,
                        machine: topo.name.clone(),
                        last: topo.nr_nodes() - 1,
                    });
                }
                if r.bytes > topo.total_mem_bytes() {
                    return Err(ProgramError::RegionTooLarge {
                        program: p.name.clone(),
                        region: r.name.clone(),
                        mib: r.bytes >> 20,
                        machine: topo.name.clone(),
                        machine_mib: topo.total_mem_bytes() >> 20,
                    });
                }
            }
            let total: u64 = p.regions.iter().map(|r| r.bytes).sum();
            if total > topo.total_mem_bytes() {
                return Err(ProgramError::RegionsTooLarge {
                    program: p.name.clone(),
                    mib: total >> 20,
                    machine: topo.name.clone(),
                    machine_mib: topo.total_mem_bytes() >> 20,
                });
            }
        }
        for l in &self.launches {
            if let Some(c) = l.cpu.filter(|&c| c >= topo.nr_cpus()) {
                return Err(ProgramError::LaunchCpu {
                    program: self.programs[l.program].name.clone(),
                    cpu: c,
                    machine: topo.name.clone(),
                    last: topo.nr_cpus() - 1,
                });
            }
        }
        Ok(())
    }

    pub fn program_index(&self, name: &str) -> Option<usize> {
        self.programs.iter().position(|p| p.name == name)
    }
}
