//! `homenode bench probe`: what one core of this host sees of memory, measured, for the cost
//! model's `[memory]` figures (docs/BENCH.md, "The probe").
//!
//! - **Latency**: a pointer chase through a buffer much larger than the last-level cache.
//!   The buffer is cut into cache-line slots linked in a ring in random order, so every
//!   load depends on the one before and no prefetcher can guess the next line;
//!   time per load = load-to-use latency of a random access, TLB misses included (the
//!   buffer is in base pages unless the kernel backs it with huge pages).
//! - **Bandwidth**: one core summing the buffer's words in order: the streaming read rate of a
//!   single core, which bounds `bandwidth_gbps / cpus` from below.
//!
//! With more than one node, the buffer is first touched by a thread bound to each node in
//! turn and chased from a thread bound to every node: a latency matrix, whose ratio to the
//! diagonal is what the SLIT claims. Each figure is the median of `rounds` timed runs.
//!
//! - **All of a node's CPUs together** ([`NodeCoRun`]): one core's rate says nothing of what
//!   two cores sharing a core's pipelines (SMT) or one memory path get, and the cost model can
//!   only charge co-runners for a node's bandwidth if it knows it (`bandwidth_gbps`). So the
//!   same stream and random-update loops run on one thread per CPU of the node at once, each
//!   thread bound to its CPU, on its own buffer first-touched there, released together by a
//!   barrier: the bytes all threads read over the time from the first start to the last end
//!   is the node's aggregate read rate, and each thread's time per update against the same
//!   loop on one thread alone is the co-run slowdown.

use crate::BenchError;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
pub(crate) use report::median;
use serde::Serialize;
use std::hint::black_box;
use std::path::Path;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use topo::CpuSet;

mod corun;
mod loops;
#[cfg(test)]
mod tests;
mod text;

pub use corun::*;
pub(crate) use loops::*;

/// What to measure.
#[derive(Clone, Debug)]
pub struct ProbeConfig {
    /// Buffer size, MiB.
    pub mib: usize,
    /// Dependent loads per timed latency run.
    pub loads: u64,
    /// Timed runs per figure (the median is reported).
    pub rounds: usize,
    /// Seed of the random cycle.
    pub seed: u64,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            mib: 256,
            loads: 4_000_000,
            rounds: 5,
            seed: 1,
        }
    }
}

/// The figures of one (CPU node, memory node) pair.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeCell {
    pub cpu_node: usize,
    pub mem_node: usize,
    /// ns per dependent load.
    pub latency_ns: f64,
    /// One core's streaming read rate, GB/s (10^9 bytes per second).
    pub read_gbps: f64,
    /// ns per independent random read-modify-write of a line ([`gather`]).
    pub gather_ns: f64,
}

/// The probe's results.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeResult {
    pub buffer_mib: usize,
    pub loads: u64,
    pub rounds: usize,
    pub cells: Vec<ProbeCell>,
    /// Buffer of the last-level-cache chase: a quarter of one LLC, KiB.
    pub llc_chase_kib: usize,
    /// ns per dependent load through that buffer, on the first node's CPUs: a random access
    /// that hits the LLC (the cost model's `cpu.llc_latency_ns`).
    pub llc_latency_ns: f64,
    /// ns per independent random read-modify-write through that buffer.
    pub llc_gather_ns: f64,
    /// (buffer KiB, ns per dependent load) from 256 KiB to twice the LLC.
    pub cache_curve: Vec<(usize, f64)>,
    /// What all of each node's CPUs get together, one entry per node with CPUs.
    pub co_run: Vec<NodeCoRun>,
    /// The core clock a chain of dependent adds runs at, MHz (the cost model's
    /// `cpu.freq_mhz`; `None` where it cannot be timed). [`crate::clock`].
    pub core_mhz: Option<f64>,
    /// Whether the knee of the latency curve is each core's own or shared by its LLC's CPUs
    /// (`None`: no knee, or one CPU). [`crate::llc_share`].
    pub llc_share: Option<crate::llc_share::LlcShare>,
    /// What one evicted line of a random-access buffer costs to fetch again (`None`: no
    /// knee). [`crate::refill`].
    pub refill: Option<crate::refill::Refill>,
    /// What a job's line costs to fetch again after another job's turn on its CPU.
    /// [`crate::turn_refill`].
    pub turn_refill: Option<crate::turn_refill::TurnRefill>,
    /// How long two CPU-bound threads on one CPU run in turn, and the `hz` it implies.
    /// [`crate::turns`].
    pub turns: Option<crate::turns::Turns>,
}

/// One node's CPUs running the stream and random-update loops at once, one thread per CPU,
/// against the same loops on one thread alone (on the node's first CPU).
#[derive(Clone, Debug, Serialize)]
pub struct NodeCoRun {
    pub node: usize,
    /// Threads that ran together: the node's CPUs (those the probe's affinity allows).
    pub threads: usize,
    /// Buffer of each thread, MiB (the probe's `--mib` shared out, at least 1).
    pub buffer_mib: usize,
    /// Passes over its buffer each thread streams per round (so each reads about `--mib`).
    pub passes: usize,
    /// One thread alone: streaming read rate, GB/s.
    pub alone_read_gbps: f64,
    /// All threads together: bytes read by all / time from the first start to the last end,
    /// GB/s (the node's aggregate read rate, the cost model's `bandwidth_gbps`).
    pub aggregate_read_gbps: f64,
    /// One thread alone: ns per independent random update.
    pub alone_gather_ns: f64,
    /// All threads together: ns per update of each thread (median over threads and rounds).
    pub gather_ns: f64,
    /// `gather_ns / alone_gather_ns`: how much slower each thread's updates run beside the
    /// others (1 = not at all).
    pub slowdown: f64,
    /// [`on_cpu_share`] of the threads together, and of the one alone.
    pub on_cpu_share: Option<f64>,
    pub alone_on_cpu_share: Option<f64>,
}

/// ns per dependent load through a buffer of `kib` (a quarter of the LLC: well beyond the
/// private caches of today's cores, well within the LLC), on the first node with CPUs.
fn llc_latency(nodes: &[CpuSet], kib: usize, cfg: &ProbeConfig) -> Result<(f64, f64), BenchError> {
    let Some(cpus) = nodes.iter().find(|n| !n.is_empty()) else {
        return Ok((0.0, 0.0));
    };
    bind(cpus)?;
    let mut buf = chase_buffer_kib(kib, cfg.seed);
    chase(&buf, cfg.loads / 4);
    let latency = median(
        &(0..cfg.rounds)
            .map(|_| chase(&buf, cfg.loads))
            .collect::<Vec<_>>(),
    );
    let idx = gather_indices(&buf, cfg.loads, cfg.seed);
    let gathered = median(
        &(0..cfg.rounds)
            .map(|_| gather(&mut buf, &idx))
            .collect::<Vec<_>>(),
    );
    Ok((latency, gathered))
}

/// Dependent-load latency through buffers of 256 KiB doubling up to twice the LLC that
/// `/sys` reports, on the first node with CPUs: (KiB, ns) points. Where it climbs towards
/// the memory latency is the cache this core really gets (a virtual machine shares its
/// host's LLC with other guests).
fn cache_curve(
    nodes: &[CpuSet],
    llc_kib: usize,
    cfg: &ProbeConfig,
) -> Result<Vec<(usize, f64)>, BenchError> {
    let Some(cpus) = nodes.iter().find(|n| !n.is_empty()) else {
        return Ok(Vec::new());
    };
    bind(cpus)?;
    let mut out = Vec::new();
    let mut kib = 256;
    while kib <= (2 * llc_kib).max(512) {
        let buf = chase_buffer_kib(kib, cfg.seed);
        chase(&buf, cfg.loads / 4);
        let loads = (cfg.loads / 4).max(1);
        out.push((
            kib,
            median(
                &(0..cfg.rounds)
                    .map(|_| chase(&buf, loads))
                    .collect::<Vec<_>>(),
            ),
        ));
        kib *= 2;
    }
    Ok(out)
}

/// The largest buffer of `curve` whose latency lies less than half-way from the smallest
/// buffer's latency to `memory_ns`: the last-level cache one core effectively holds, KiB.
pub fn effective_llc_kib(curve: &[(usize, f64)], memory_ns: f64) -> Option<usize> {
    let first = curve.first()?.1;
    let mid = first + (memory_ns - first) / 2.0;
    curve
        .iter()
        .filter(|(_, ns)| *ns < mid)
        .map(|(k, _)| *k)
        .max()
}

/// The CPUs the calling thread may run on (its affinity, which a cpuset or `taskset` may
/// narrow below the online CPUs).
fn allowed_cpus() -> Result<CpuSet, BenchError> {
    let tid = linux::affinity::current_tid();
    match linux::affinity::get_affinity(tid) {
        Ok(linux::Live::Alive(set)) => Ok(set),
        Ok(linux::Live::Gone) => Err(BenchError::Config(
            "probe: cannot read its own CPU affinity: thread gone".into(),
        )),
        Err(e) => Err(BenchError::Config(format!(
            "probe: cannot read its own CPU affinity: {e}"
        ))),
    }
}

/// Run the probe on the host whose `/sys` is under `root`.
pub fn run(root: &Path, cfg: &ProbeConfig) -> Result<ProbeResult, BenchError> {
    if cfg.mib == 0 || cfg.loads == 0 || cfg.rounds == 0 {
        return Err(BenchError::Config(
            "probe: --mib, --loads and --rounds must be at least 1".into(),
        ));
    }
    let host = topo::read_host_detailed(root)?;
    let nodes: Vec<CpuSet> = host
        .topology
        .nodes
        .iter()
        .map(|n| n.cpus.iter().map(|c| host.os_cpu[c]).collect())
        .collect();
    let all: CpuSet = nodes.iter().fold(CpuSet::new(), |a, n| a.union(n));
    let allowed = allowed_cpus()?;
    let mut cells = Vec::new();
    for (mem_node, mem_cpus) in nodes.iter().enumerate() {
        if mem_cpus.is_empty() {
            continue;
        }
        // First touch from the memory node's CPUs puts the buffer there.
        bind(mem_cpus)?;
        let buf = chase_buffer(cfg.mib, cfg.seed);
        for (cpu_node, cpus) in nodes.iter().enumerate() {
            if cpus.is_empty() {
                continue;
            }
            bind(cpus)?;
            chase(&buf, cfg.loads / 4); // warm the TLB and caches once
            let latency_ns = median(
                &(0..cfg.rounds)
                    .map(|_| chase(&buf, cfg.loads))
                    .collect::<Vec<_>>(),
            );
            let read_gbps = median(&(0..cfg.rounds).map(|_| stream(&buf)).collect::<Vec<_>>());
            let idx = gather_indices(&buf, cfg.loads, cfg.seed);
            let mut copy = buf.clone();
            let gather_ns = median(
                &(0..cfg.rounds)
                    .map(|_| gather(&mut copy, &idx))
                    .collect::<Vec<_>>(),
            );
            cells.push(ProbeCell {
                cpu_node,
                mem_node,
                latency_ns,
                read_gbps,
                gather_ns,
            });
        }
    }
    let core_mhz = crate::clock::core_mhz(CLOCK_ADDS, cfg.rounds, thread_cpu_s);
    let llc_kib = (host.topology.cpu_model.llc_bytes / 1024) as usize;
    let cache_curve = cache_curve(&nodes, llc_kib, cfg)?;
    let llc_chase_kib = (llc_kib / 4).max(64);
    let (llc_latency_ns, llc_gather_ns) = llc_latency(&nodes, llc_chase_kib, cfg)?;
    // One thread per CPU the probe may use: a CPU outside its affinity cannot be bound alone.
    let co_run = nodes
        .iter()
        .map(|cpus| cpus.intersection(&allowed))
        .enumerate()
        .filter(|(_, cpus)| !cpus.is_empty())
        .map(|(node, cpus)| co_run_node(node, &cpus, cfg))
        .collect::<Result<Vec<_>, _>>()?;
    let mut result = ProbeResult {
        buffer_mib: cfg.mib,
        loads: cfg.loads,
        rounds: cfg.rounds,
        cells,
        llc_chase_kib,
        llc_latency_ns,
        llc_gather_ns,
        cache_curve,
        co_run,
        core_mhz,
        llc_share: None,
        refill: None,
        turn_refill: None,
        turns: None,
    };
    result.llc_share = llc_share(&host, &allowed, &result, cfg)?;
    if let (Some(knee), Some(llc), Some(cpu)) = (
        result.effective_llc_kib(),
        result.capacity_kib(),
        allowed.iter().next(),
    ) {
        result.refill = crate::refill::measure(cpu, knee, llc, cfg.rounds, cfg.seed)?;
    }
    if let Some(cpu) = allowed.iter().next() {
        let line = host.topology.cpu_model.line_bytes;
        result.turn_refill = crate::turn_refill::measure(cpu, line, cfg.rounds, cfg.seed)?;
        result.turns = crate::turns::measure(cpu, host.topology.nr_cpus(), TURNS_CPU_S)?;
    }
    bind(&all)?;
    Ok(result)
}

/// [`crate::llc_share::measure`] on the CPUs of the first CPU's LLC that the probe may use,
/// for the knee of the probe's curve so far.
fn llc_share(
    host: &topo::HostTopology,
    allowed: &CpuSet,
    r: &ProbeResult,
    cfg: &ProbeConfig,
) -> Result<Option<crate::llc_share::LlcShare>, BenchError> {
    let (Some(knee), Some(miss_ns)) = (r.effective_llc_kib(), r.local_gather_ns()) else {
        return Ok(None);
    };
    let t = &host.topology;
    let Some(first) = t.cpus.first() else {
        return Ok(None);
    };
    let cpus: Vec<usize> = t
        .cpus
        .iter()
        .filter(|c| c.llc == first.llc)
        .map(|c| host.os_cpu[c.id])
        .filter(|&c| allowed.contains(c))
        .collect();
    crate::llc_share::measure(
        &cpus,
        knee,
        (r.llc_gather_ns, miss_ns),
        (cfg.loads, cfg.rounds, cfg.seed),
    )
}

/// CPU time each of the two threads of the turns test uses, s: about 60 turns of 4 ms.
const TURNS_CPU_S: f64 = 0.25;

/// Dependent adds per timed run of the clock: about a tenth of a second at 4 GHz.
const CLOCK_ADDS: u64 = 400_000_000;
