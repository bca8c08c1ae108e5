//! One numa_test job, `randupdt`: allocate `a` (PROBLEMSIZE doubles), `b` (PROBLEMSIZE
//! doubles) and `ix` (PROBLEMSIZE 32-bit random indices), initialise them by first touch, then
//! do `passes` passes of `a[ix[i]] += b[i]` over all `i` (a random read-modify-write of `a`,
//! streaming reads of `b` and `ix`).
//!
//! A worker runs as its own process (the dispatcher re-executes its own binary with the
//! worker arguments, [`WorkerParams::to_args`]) and ends by printing one JSON line, a
//! [`WorkerReport`]: the CPU it started on and ended on, its user and system time from the
//! kernel (`getrusage(RUSAGE_SELF)`, taken right after the job, before the report's own
//! reads), where its memory is (its `numa_maps`), and a checksum of `a` so that the work
//! cannot be optimised away.

use crate::error::BenchError;
use linux::procfs::{numa_maps, stat};
use nix::sys::resource::{UsageWho, getrusage};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The largest PROBLEMSIZE: indices are 32 bits.
pub const MAX_SIZE: u64 = u32::MAX as u64;
/// numa_test's PROBLEMSIZE when none is given: elements per array.
pub const DEFAULT_SIZE: u64 = 1_000_000;

/// What one worker does.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerParams {
    /// Job number, 1-based (as in the report).
    pub index: usize,
    /// PROBLEMSIZE: elements per array.
    pub size: u64,
    pub passes: u32,
    /// Seed of the random indices.
    pub seed: u64,
    /// Test hook: after initialising, kill itself with SIGKILL.
    pub kill_self: bool,
    /// Root of the filesystem whose `proc/` is read (`/`).
    pub root: PathBuf,
}

/// What a worker reports on stdout (one JSON line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerReport {
    pub index: usize,
    pub pid: u32,
    /// CPU the job was on when it started (read from its own `/proc/self/stat`).
    pub start_cpu: Option<usize>,
    /// CPU it was on when the job ended, and its user time then in clock ticks: the last
    /// sample of its per-node time.
    pub end_cpu: Option<usize>,
    pub end_utime_ticks: Option<u64>,
    /// User and system seconds, from the kernel's accounting (`getrusage`).
    pub user_s: f64,
    pub sys_s: f64,
    pub max_rss_kib: i64,
    /// Bytes of its own memory on each node at the end (empty without `numa_maps`).
    pub mem_node_bytes: Vec<u64>,
    /// Seconds spent allocating and initialising, and in the passes (wall clock).
    pub init_s: f64,
    pub passes_s: f64,
    /// Sum of `a` after the passes.
    pub checksum: f64,
}

impl WorkerParams {
    /// The arguments that make a worker: `--index I --size S --passes P --seed X
    /// [--kill-self] [--root DIR]`.
    pub fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            "--index".to_string(),
            self.index.to_string(),
            "--size".into(),
            self.size.to_string(),
            "--passes".into(),
            self.passes.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ];
        if self.kill_self {
            v.push("--kill-self".into());
        }
        if self.root != Path::new("/") {
            v.push("--root".into());
            v.push(self.root.display().to_string());
        }
        v
    }

    /// Parse what [`WorkerParams::to_args`] wrote.
    pub fn parse_args<S: AsRef<str>>(args: &[S]) -> Result<WorkerParams, BenchError> {
        let mut p = WorkerParams {
            index: 1,
            size: 0,
            passes: 0,
            seed: 1,
            kill_self: false,
            root: PathBuf::from("/"),
        };
        let bad = |m: String| BenchError::Config(format!("worker arguments: {m}"));
        let mut it = args.iter().map(AsRef::as_ref);
        while let Some(a) = it.next() {
            if a == "--kill-self" {
                p.kill_self = true;
                continue;
            }
            let v = it.next().ok_or_else(|| bad(format!("{a} needs a value")))?;
            let num = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| bad(format!("{a} `{v}` is not a number")))
            };
            match a {
                "--index" => p.index = num(v)? as usize,
                "--size" => p.size = num(v)?,
                "--passes" => {
                    p.passes =
                        u32::try_from(num(v)?).map_err(|_| bad(format!("--passes {v} too big")))?
                }
                "--seed" => p.seed = num(v)?,
                "--root" => p.root = PathBuf::from(v),
                _ => return Err(bad(format!("unknown argument `{a}`"))),
            }
        }
        if p.size == 0 || p.size > MAX_SIZE {
            return Err(bad(format!("--size must be 1..={MAX_SIZE}")));
        }
        if p.passes == 0 {
            return Err(bad("--passes must be at least 1".into()));
        }
        Ok(p)
    }
}

/// SplitMix64: a small, fast generator, good enough for random indices.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` for `n <= 2^32` (multiply-high of the top 32 bits).
    pub fn below(&mut self, n: u64) -> u32 {
        (((self.next() >> 32) * n) >> 32) as u32
    }
}

/// The seed of worker `index` in a run whose seed is `run_seed`.
pub fn worker_seed(run_seed: u64, index: usize) -> u64 {
    SplitMix64::new(run_seed ^ (index as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)).next()
}

fn alloc<T: Copy>(n: usize, what: &str) -> Result<Vec<T>, BenchError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        BenchError::Config(format!(
            "cannot allocate `{what}`: {n} elements of {} bytes",
            std::mem::size_of::<T>()
        ))
    })?;
    Ok(v)
}

/// The job's three arrays.
pub struct Arrays {
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub ix: Vec<u32>,
}

impl Arrays {
    /// Allocate and initialise. First touch: every element is written here, by this
    /// process, so each page is placed by the kernel's policy for the CPU the worker is on
    /// now.
    pub fn init(size: u64, seed: u64) -> Result<Arrays, BenchError> {
        let n = usize::try_from(size)
            .ok()
            .filter(|&n| n > 0 && size <= MAX_SIZE)
            .ok_or_else(|| BenchError::Config(format!("--size {size} out of range")))?;
        let mut a: Vec<f64> = alloc(n, "a")?;
        let mut b: Vec<f64> = alloc(n, "b")?;
        let mut ix: Vec<u32> = alloc(n, "ix")?;
        let mut rng = SplitMix64::new(seed);
        for i in 0..n {
            a.push(0.0);
            b.push((i % 1000) as f64 * 0.001 + 1.0);
            ix.push(rng.below(size));
        }
        Ok(Arrays { a, b, ix })
    }

    /// `passes` passes of `a[ix[i]] += b[i]`.
    pub fn passes(&mut self, passes: u32) {
        for _ in 0..passes {
            for (&j, &bv) in self.ix.iter().zip(&self.b) {
                self.a[j as usize] += bv;
            }
            std::hint::black_box(&mut self.a);
        }
    }

    /// `count` updates `a[ix[i]] += b[i]` from element `at` on, wrapping at the end of the
    /// arrays; returns where the next update starts (a job taking turns resumes there).
    pub fn updates(&mut self, mut at: usize, count: u64) -> usize {
        let n = self.ix.len();
        for _ in 0..count {
            let j = self.ix[at] as usize;
            self.a[j] += self.b[at];
            at += 1;
            if at == n {
                at = 0;
            }
        }
        std::hint::black_box(&mut self.a);
        at
    }

    /// Sum of `a`.
    pub fn checksum(&self) -> f64 {
        std::hint::black_box(self.a.iter().sum())
    }
}

/// Run one worker: the job plus its report.
pub fn run(p: &WorkerParams) -> Result<WorkerReport, BenchError> {
    let me = std::process::id();
    let self_stat = || stat::read(&p.root, me).map(linux::Live::alive);
    let start = self_stat()?;
    let seed = p.seed;
    let t0 = Instant::now();
    let mut arrays = Arrays::init(p.size, seed)?;
    let init_s = t0.elapsed().as_secs_f64();
    if p.kill_self {
        // Die as if killed from outside.
        nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL)
            .map_err(|e| BenchError::Config(format!("raise(SIGKILL): {e}")))?;
    }
    let t1 = Instant::now();
    arrays.passes(p.passes);
    let passes_s = t1.elapsed().as_secs_f64();
    let checksum = arrays.checksum();
    let usage = getrusage(UsageWho::RUSAGE_SELF)
        .map_err(|e| BenchError::Config(format!("getrusage: {e}")))?;
    let end = self_stat()?;
    // Where the arrays are, while they are still there.
    let mem = numa_maps::read(&p.root, me)?
        .alive()
        .flatten()
        .map(|m| m.private_node_bytes())
        .unwrap_or_default();
    drop(arrays);
    let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    Ok(WorkerReport {
        index: p.index,
        pid: std::process::id(),
        start_cpu: start.as_ref().map(|s| s.processor),
        end_cpu: end.as_ref().map(|s| s.processor),
        end_utime_ticks: end.as_ref().map(|s| s.utime),
        user_s: tv(usage.user_time()),
        sys_s: tv(usage.system_time()),
        max_rss_kib: usage.max_rss(),
        mem_node_bytes: mem,
        init_s,
        passes_s,
        checksum,
    })
}

/// Run a worker from its arguments and return the JSON line to print.
pub fn main_with_args<S: AsRef<str>>(args: &[S]) -> Result<String, BenchError> {
    let p = WorkerParams::parse_args(args)?;
    let r = run(&p)?;
    serde_json::to_string(&r).map_err(|e| BenchError::Config(format!("worker report: {e}")))
}
