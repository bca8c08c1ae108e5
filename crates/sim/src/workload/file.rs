//! The generic workload file format (`workloads/*.toml`); see docs/WORKLOADS.md.
//!
//! ```toml
//! name = "pair"
//! channels = ["pipe"]
//! [[program]]
//! name = "worker"
//! job = true
//! region = [{ name = "data", mib = 64, policy = "first-touch" }]
//! phase = [
//!   { touch = "data" },
//!   { memory = { ops = 1e7, cycles = 4, access = [{ region = "data", pattern = "random", bytes = 8, write = true }] } },
//!   { loop = { count = 3, body = [{ sleep = { ms = 5 } }, { compute = { cycles = 1e6 } }] } },
//! ]
//! [[launch]]
//! program = "worker"
//! count = 2
//! ```

use crate::memory::MemPolicy;
use crate::program::{Access, Launch, OpCost, Pattern, Phase, Program, RegionSpec, Workload};
use crate::time::{MS, US};
use serde::Deserialize;

/// A workload file that could not be used; renders as one line naming file, place and field.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WorkloadError {
    #[error("{file}:{line}:{col}: {msg}")]
    Syntax {
        file: String,
        line: usize,
        col: usize,
        msg: String,
    },
    #[error("{file}: {msg}")]
    Invalid { file: String, msg: String },
}

/// What is wrong with one phase of a workload file (reported inside
/// [`WorkloadError::Invalid`] with the program and phase number).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PhaseError {
    #[error("a phase needs exactly one of: {kinds}")]
    NotOneKind { kinds: &'static str },
    #[error("unknown region `{region}` of program `{program}` (defined: {})", defined.join(", "))]
    UnknownRegion {
        region: String,
        program: String,
        defined: Vec<String>,
    },
    #[error("access pattern `{pattern}` (valid: random, stream)")]
    BadPattern { pattern: String },
    #[error("sleep must be >= 0")]
    NegativeSleep,
    #[error("`exec` applies to `spawn`, not to `threads` (threads never exec)")]
    ExecOnThreads,
    #[error("`wait = false` is not a phase: leave the phase out")]
    WaitFalse,
    #[error(transparent)]
    Budget(#[from] crate::budget::BudgetError),
    /// A program or channel the phase names is not defined.
    #[error(transparent)]
    Lookup(Box<WorkloadError>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    channels: Vec<String>,
    #[serde(default)]
    disturbance: Option<String>,
    program: Vec<ProgramSpec>,
    launch: Vec<LaunchSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramSpec {
    name: String,
    #[serde(default)]
    job: bool,
    #[serde(default)]
    affinity: Option<Vec<usize>>,
    /// Nice value, -20..=19 (the span locates a bad value).
    #[serde(default)]
    nice: Option<toml::Spanned<i64>>,
    #[serde(default)]
    region: Vec<RegionFile>,
    phase: Vec<PhaseSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegionFile {
    name: String,
    mib: f64,
    #[serde(default)]
    policy: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PhaseSpec {
    compute: Option<Cycles>,
    kernel: Option<Cycles>,
    memory: Option<MemorySpec>,
    touch: Option<String>,
    sleep: Option<SleepSpec>,
    send: Option<SendSpec>,
    recv: Option<RecvSpec>,
    spawn: Option<SpawnSpec>,
    threads: Option<SpawnSpec>,
    wait: Option<bool>,
    #[serde(rename = "loop")]
    repeat: Option<LoopSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Cycles {
    cycles: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemorySpec {
    ops: f64,
    #[serde(default)]
    cycles: f64,
    access: Vec<AccessSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AccessSpec {
    region: String,
    pattern: String,
    bytes: f64,
    #[serde(default)]
    write: bool,
    #[serde(default)]
    contended: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SleepSpec {
    #[serde(default)]
    ms: f64,
    #[serde(default)]
    us: f64,
    #[serde(default)]
    jitter: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendSpec {
    channels: Vec<String>,
    #[serde(default = "one")]
    msgs: u32,
    cycles_per_msg: f64,
    /// Unread messages a channel may hold before this sender blocks (0: no limit).
    #[serde(default)]
    buffer: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecvSpec {
    channel: String,
    #[serde(default = "one")]
    msgs: u32,
    cycles_per_msg: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnSpec {
    program: String,
    #[serde(default = "one")]
    count: u32,
    /// Spawns exec a new image unless `exec = false` (a plain fork).
    #[serde(default)]
    exec: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoopSpec {
    count: u32,
    body: Vec<PhaseSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LaunchSpec {
    program: String,
    #[serde(default = "one")]
    count: u32,
    #[serde(default = "one")]
    threads: u32,
    #[serde(default)]
    at_ms: f64,
    #[serde(default)]
    cpu: Option<usize>,
}

fn one() -> u32 {
    1
}

/// The program's nice value (0 when not given); out of range, an error at its line.
fn program_nice(p: &ProgramSpec, text: &str, file: &str) -> Result<i32, WorkloadError> {
    let Some(n) = &p.nice else {
        return Ok(0);
    };
    let v = *n.get_ref();
    if (-20..=19).contains(&v) {
        return Ok(v as i32);
    }
    let (line, col) = line_col(text, n.span().start);
    Err(WorkloadError::Syntax {
        file: file.to_string(),
        line,
        col,
        msg: format!(
            "program `{}`: nice = {v} is out of range (valid: -20 to 19)",
            p.name
        ),
    })
}

/// Parse a workload file's text; `file` names it in errors.
pub fn parse_workload(text: &str, file: &str) -> Result<Workload, WorkloadError> {
    let spec: FileSpec = toml::from_str(text).map_err(|e| {
        let (line, col) = e.span().map_or((0, 0), |s| line_col(text, s.start));
        WorkloadError::Syntax {
            file: file.to_string(),
            line,
            col,
            msg: e.message().replace('\n', " "),
        }
    })?;
    let invalid = |msg: String| WorkloadError::Invalid {
        file: file.to_string(),
        msg,
    };
    let _ = &spec.description;
    let names: Vec<&str> = spec.program.iter().map(|p| p.name.as_str()).collect();
    let find_prog = |n: &str| {
        names.iter().position(|x| *x == n).ok_or_else(|| {
            invalid(format!(
                "unknown program `{n}` (defined: {})",
                names.join(", ")
            ))
        })
    };
    let find_chan = |n: &str| {
        spec.channels.iter().position(|x| x == n).ok_or_else(|| {
            invalid(format!(
                "unknown channel `{n}` (declared: {})",
                spec.channels.join(", ")
            ))
        })
    };
    let mut programs = Vec::new();
    for p in &spec.program {
        let nice = program_nice(p, text, file)?;
        let regions = lower_regions(p, &invalid)?;
        let ctx = Ctx {
            prog: &p.name,
            regions: &regions,
            find_prog: &find_prog,
            find_chan: &find_chan,
        };
        let mut phases = Vec::new();
        for (i, ph) in p.phase.iter().enumerate() {
            lower_phase(ph, &ctx, &mut phases)
                .map_err(|m| invalid(format!("program `{}` phase {}: {m}", p.name, i + 1)))?;
        }
        programs.push(Program {
            name: p.name.clone(),
            phases,
            regions,
            job: p.job,
            affinity: p.affinity.clone(),
            nice,
        });
    }
    let mut launches = Vec::new();
    for l in &spec.launch {
        if !(l.at_ms.is_finite() && l.at_ms >= 0.0) {
            return Err(invalid(format!(
                "launch of `{}`: at_ms must be >= 0",
                l.program
            )));
        }
        crate::budget::tasks(
            "launch.count x threads",
            f64::from(l.count) * f64::from(l.threads.max(1)),
        )
        .map_err(|e| invalid(format!("launch of `{}`: {e}", l.program)))?;
        launches.push(Launch {
            program: find_prog(&l.program)?,
            count: l.count,
            threads: l.threads.max(1),
            at: (l.at_ms * MS as f64).round() as u64,
            cpu: l.cpu,
        });
    }
    let disturbance = spec.disturbance.as_deref().map(find_prog).transpose()?;
    let w = Workload {
        name: spec.name,
        programs,
        launches,
        channels: spec.channels.len(),
        disturbance,
    };
    w.validate().map_err(|e| invalid(e.to_string()))?;
    crate::budget::check_workload_steps(&w).map_err(|e| invalid(e.to_string()))?;
    Ok(w)
}

/// A program's regions: sizes checked (above 0, below what no machine could hold) and
/// policies parsed.
fn lower_regions(
    p: &ProgramSpec,
    invalid: &dyn Fn(String) -> WorkloadError,
) -> Result<Vec<RegionSpec>, WorkloadError> {
    let mut regions = Vec::new();
    for r in &p.region {
        if !(r.mib.is_finite() && r.mib > 0.0) {
            return Err(invalid(format!(
                "program `{}` region `{}`: mib must be > 0",
                p.name, r.name
            )));
        }
        // Against the machine at run time; here only what no machine could hold (1 PiB).
        crate::budget::at_most("mib", r.mib, (1u64 << 30) as f64, "MiB")
            .map_err(|e| invalid(format!("program `{}` region `{}`: {e}", p.name, r.name)))?;
        let policy = match &r.policy {
            Some(s) => MemPolicy::parse(s)
                .map_err(|e| invalid(format!("program `{}` region `{}`: {e}", p.name, r.name)))?,
            None => MemPolicy::FirstTouch,
        };
        regions.push(RegionSpec {
            name: r.name.clone(),
            bytes: (r.mib * 1024.0 * 1024.0).round() as u64,
            policy,
        });
    }
    Ok(regions)
}

struct Ctx<'a> {
    prog: &'a str,
    regions: &'a [RegionSpec],
    find_prog: &'a dyn Fn(&str) -> Result<usize, WorkloadError>,
    find_chan: &'a dyn Fn(&str) -> Result<usize, WorkloadError>,
}

impl Ctx<'_> {
    fn region(&self, n: &str) -> Result<usize, PhaseError> {
        self.regions
            .iter()
            .position(|r| r.name == n)
            .ok_or_else(|| PhaseError::UnknownRegion {
                region: n.into(),
                program: self.prog.into(),
                defined: self.regions.iter().map(|r| r.name.clone()).collect(),
            })
    }
}

const PHASE_KINDS: &str =
    "compute, kernel, memory, touch, sleep, send, recv, spawn, threads, wait, loop";

fn lower_phase(ph: &PhaseSpec, cx: &Ctx<'_>, out: &mut Vec<Phase>) -> Result<(), PhaseError> {
    let set = [
        ph.compute.is_some(),
        ph.kernel.is_some(),
        ph.memory.is_some(),
        ph.touch.is_some(),
        ph.sleep.is_some(),
        ph.send.is_some(),
        ph.recv.is_some(),
        ph.spawn.is_some(),
        ph.threads.is_some(),
        ph.wait.is_some(),
        ph.repeat.is_some(),
    ]
    .iter()
    .filter(|x| **x)
    .count();
    if set != 1 {
        return Err(PhaseError::NotOneKind { kinds: PHASE_KINDS });
    }
    let err = |e: WorkloadError| PhaseError::Lookup(Box::new(e));
    if let Some(c) = &ph.compute {
        out.push(Phase::Compute { cycles: c.cycles });
    } else if let Some(c) = &ph.kernel {
        out.push(Phase::Kernel { cycles: c.cycles });
    } else if let Some(m) = &ph.memory {
        out.push(lower_memory(m, cx)?);
    } else if let Some(r) = &ph.touch {
        out.push(Phase::Touch {
            region: cx.region(r)?,
        });
    } else if let Some(s) = &ph.sleep {
        let ns = s.ms * MS as f64 + s.us * US as f64;
        if !(ns.is_finite() && ns >= 0.0) {
            return Err(PhaseError::NegativeSleep);
        }
        out.push(Phase::Sleep {
            ns: ns.round() as u64,
            jitter: s.jitter,
        });
    } else if let Some(s) = &ph.send {
        let chans = s
            .channels
            .iter()
            .map(|c| (cx.find_chan)(c))
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        out.push(Phase::Send {
            chans,
            msgs: s.msgs,
            cycles_per_msg: s.cycles_per_msg,
            buffer: s.buffer,
        });
    } else if let Some(r) = &ph.recv {
        let chan = (cx.find_chan)(&r.channel).map_err(err)?;
        out.push(Phase::Recv {
            chan,
            msgs: r.msgs,
            cycles_per_msg: r.cycles_per_msg,
        });
    } else if let Some(s) = &ph.spawn {
        crate::budget::tasks("spawn.count", f64::from(s.count))?;
        out.push(Phase::Spawn {
            program: (cx.find_prog)(&s.program).map_err(err)?,
            count: s.count,
            exec: s.exec.unwrap_or(true),
        });
    } else if let Some(s) = &ph.threads {
        if s.exec.is_some() {
            return Err(PhaseError::ExecOnThreads);
        }
        crate::budget::tasks("threads.count", f64::from(s.count))?;
        out.push(Phase::Thread {
            program: (cx.find_prog)(&s.program).map_err(err)?,
            count: s.count,
        });
    } else if let Some(w) = ph.wait {
        if !w {
            return Err(PhaseError::WaitFalse);
        }
        out.push(Phase::Wait);
    } else if let Some(l) = &ph.repeat {
        out.push(Phase::Loop { count: l.count });
        for b in &l.body {
            lower_phase(b, cx, out)?;
        }
        out.push(Phase::EndLoop);
    }
    Ok(())
}

/// A `memory` phase: its accesses resolved to regions and patterns.
fn lower_memory(m: &MemorySpec, cx: &Ctx<'_>) -> Result<Phase, PhaseError> {
    let mut accesses = Vec::new();
    for a in &m.access {
        let pattern = match a.pattern.as_str() {
            "random" => Pattern::Random,
            "stream" => Pattern::Stream,
            other => {
                return Err(PhaseError::BadPattern {
                    pattern: other.into(),
                });
            }
        };
        accesses.push(Access {
            region: cx.region(&a.region)?,
            pattern,
            bytes: a.bytes,
            write: a.write,
            contended: a.contended,
        });
    }
    Ok(Phase::Memory {
        ops: m.ops,
        op: OpCost {
            cycles: m.cycles,
            accesses,
        },
    })
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "pair"
channels = ["pipe"]
[[program]]
name = "worker"
job = true
region = [{ name = "data", mib = 4 }]
phase = [
  { touch = "data" },
  { memory = { ops = 1e5, cycles = 4, access = [{ region = "data", pattern = "random", bytes = 8, write = true }] } },
  { loop = { count = 3, body = [{ sleep = { ms = 1 } }, { send = { channels = ["pipe"], cycles_per_msg = 1000 } }] } },
]
[[program]]
name = "reader"
phase = [{ recv = { channel = "pipe", msgs = 3, cycles_per_msg = 1000 } }]
[[launch]]
program = "worker"
[[launch]]
program = "reader"
"#;

    #[test]
    fn parses() {
        let w = parse_workload(GOOD, "pair.toml").expect("valid");
        assert_eq!(w.programs.len(), 2);
        assert_eq!(w.programs[0].phases.len(), 6);
        assert_eq!(w.launches.len(), 2);
    }

    #[test]
    fn errors_name_the_place() {
        let bad = GOOD.replace("job = true", "job = true\nspeed = 3");
        let e = parse_workload(&bad, "pair.toml").unwrap_err().to_string();
        assert!(e.starts_with("pair.toml:7:"), "{e}");
        assert!(e.contains("speed"), "{e}");
        let bad = GOOD.replace("pattern = \"random\"", "pattern = \"zigzag\"");
        let e = parse_workload(&bad, "pair.toml").unwrap_err().to_string();
        assert!(
            e.contains("zigzag") && e.contains("valid: random, stream"),
            "{e}"
        );
        let bad = GOOD.replace("channel = \"pipe\"", "channel = \"sock\"");
        let e = parse_workload(&bad, "pair.toml").unwrap_err().to_string();
        assert!(e.contains("unknown channel `sock`"), "{e}");
        let bad = GOOD.replace("{ touch = \"data\" }", "{ touch = \"data\", wait = true }");
        let e = parse_workload(&bad, "pair.toml").unwrap_err().to_string();
        assert!(e.contains("exactly one of"), "{e}");
    }

    #[test]
    fn nice_is_read_and_checked_at_its_line() {
        let w = parse_workload(
            &GOOD.replace("job = true", "job = true\nnice = 5"),
            "p.toml",
        );
        assert_eq!(w.expect("valid").programs[0].nice, 5);
        assert_eq!(
            parse_workload(GOOD, "p.toml").expect("valid").programs[0].nice,
            0
        );
        for bad in ["nice = 20", "nice = -21"] {
            let text = GOOD.replace("job = true", &format!("job = true\n{bad}"));
            let e = parse_workload(&text, "p.toml").unwrap_err().to_string();
            assert!(e.starts_with("p.toml:7:"), "{e}");
            assert!(
                e.contains("worker") && e.contains("nice") && e.contains("-20 to 19"),
                "{e}"
            );
            assert_eq!(e.lines().count(), 1);
        }
    }
}
