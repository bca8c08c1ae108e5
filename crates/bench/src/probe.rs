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

/// Bytes over the span from the earliest start to the latest end, GB/s: what `laps` (one
/// per thread, run at the same time) read together. 0 when the span is empty.
pub fn aggregate_gbps(laps: &[Lap]) -> f64 {
    let start = laps.iter().map(|l| l.start_s).fold(f64::INFINITY, f64::min);
    let end = laps
        .iter()
        .map(|l| l.end_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let bytes: f64 = laps.iter().map(|l| l.bytes as f64).sum();
    if end > start {
        bytes / (end - start) / 1e9
    } else {
        0.0
    }
}

/// `together / alone`, the co-run slowdown of a time per operation; 0 when `alone` is not
/// positive (nothing to compare with).
pub fn slowdown(together_ns: f64, alone_ns: f64) -> f64 {
    if alone_ns > 0.0 {
        together_ns / alone_ns
    } else {
        0.0
    }
}

/// One thread's stream in one co-run round: when it ran (seconds since a common origin) and
/// how much it read; and its time per random update in the same round.
#[derive(Clone, Copy, Debug)]
pub struct Lap {
    pub start_s: f64,
    pub end_s: f64,
    pub bytes: u64,
    pub gather_ns: f64,
    /// Wall seconds of the lap's stream and updates, and the CPU seconds the thread got in
    /// them (`None`: `getrusage` failed).
    pub timed_s: f64,
    pub cpu_s: Option<f64>,
}

/// The calling thread's CPU time, seconds (user + system), and its involuntary context
/// switches so far (`getrusage(RUSAGE_THREAD)`).
pub(crate) fn thread_usage() -> Option<(f64, i64)> {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_THREAD).ok()?;
    let s = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    Some((
        s(u.user_time()) + s(u.system_time()),
        u.involuntary_context_switches(),
    ))
}

/// The CPU time of the calling thread, seconds ([`thread_usage`]).
pub(crate) fn thread_cpu_s() -> Option<f64> {
    thread_usage().map(|(cpu_s, _)| cpu_s)
}

/// The smallest share, over threads, of their timed wall time that they spent on a CPU:
/// below 1, something else ran on their CPUs (another process; on a guest that accounts
/// steal time, the host's work too), and the figures show that besides the memory. `None` without CPU times.
pub fn on_cpu_share(laps: &[Vec<Lap>]) -> Option<f64> {
    let shares = laps.iter().map(|t| {
        let cpu: Option<f64> = t.iter().map(|l| l.cpu_s).sum();
        let wall: f64 = t.iter().map(|l| l.timed_s).sum();
        cpu.filter(|_| wall > 0.0).map(|c| (c / wall).min(1.0))
    });
    shares
        .collect::<Option<Vec<f64>>>()?
        .into_iter()
        .reduce(f64::min)
}

/// Cache-line slot size; the chase touches one word per slot.
pub(crate) const LINE: usize = 64;
const WORDS_PER_LINE: usize = LINE / std::mem::size_of::<usize>();

/// A buffer whose slots form one ring in random order: each slot's first word holds the
/// index of the word to load next.
fn chase_buffer(mib: usize, seed: u64) -> Vec<usize> {
    chase_buffer_kib(mib << 10, seed)
}

/// [`chase_buffer`] of `kib` KiB.
pub(crate) fn chase_buffer_kib(kib: usize, seed: u64) -> Vec<usize> {
    let slots = (kib << 10) / LINE;
    let mut order: Vec<usize> = (0..slots).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let mut buf = vec![0usize; slots * WORDS_PER_LINE];
    for w in 0..slots {
        buf[order[w] * WORDS_PER_LINE] = order[(w + 1) % slots] * WORDS_PER_LINE;
    }
    buf
}

/// ns per dependent load over `loads` loads.
fn chase(buf: &[usize], loads: u64) -> f64 {
    let mut i = 0usize;
    let start = Instant::now();
    for _ in 0..loads {
        i = buf[i];
    }
    black_box(i);
    start.elapsed().as_nanos() as f64 / loads.max(1) as f64
}

/// Random slot indices for [`gather`]: `n` draws over the buffer's line slots.
pub(crate) fn gather_indices(buf: &[usize], n: u64, seed: u64) -> Vec<u32> {
    use rand::Rng;
    let slots = (buf.len() / WORDS_PER_LINE).max(1) as u32;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6761_7468);
    (0..n).map(|_| rng.gen_range(0..slots)).collect()
}

/// ns per random access when the accesses do not depend on each other (numa_test's
/// `a[ix[i]] += b[i]` shape: the indices stream in, the target lines are random): the
/// core overlaps as many as it can, so latency / this = the lines it keeps in flight.
pub(crate) fn gather(buf: &mut [usize], idx: &[u32]) -> f64 {
    let start = Instant::now();
    for &i in idx {
        let w = i as usize * WORDS_PER_LINE;
        buf[w] = buf[w].wrapping_add(1);
    }
    black_box(&buf[0]);
    start.elapsed().as_nanos() as f64 / idx.len().max(1) as f64
}

/// GB/s of one pass summing every word.
pub(crate) fn stream(buf: &[usize]) -> f64 {
    let start = Instant::now();
    let sum = buf.iter().fold(0usize, |a, &x| a.wrapping_add(x));
    black_box(sum);
    let s = start.elapsed().as_secs_f64();
    (std::mem::size_of_val(buf) as f64) / s.max(1e-9) / 1e9
}

/// Bind the calling thread to `cpus` (kernel numbers).
pub(crate) fn bind(cpus: &CpuSet) -> Result<(), BenchError> {
    let tid = nix::unistd::gettid().as_raw() as linux::Tid;
    linux::affinity::set_affinity(tid, cpus)
        .map(|_| ())
        .map_err(|e| BenchError::Config(format!("cannot bind the probe to CPUs {cpus}: {e}")))
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

/// What the co-run threads run: buffer size, stream passes per round, updates, rounds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoRunLoad {
    pub(crate) words: usize,
    pub(crate) passes: usize,
    pub(crate) updates: u64,
    pub(crate) rounds: usize,
    pub(crate) seed: u64,
}

impl CoRunLoad {
    /// `cfg.mib` shared out over `threads` buffers (at least 1 MiB each): together they are
    /// about the one-core buffer's size, so as many times the LLC. Each is streamed often
    /// enough to read about `cfg.mib` per round: the same work per thread whatever the CPU
    /// count.
    fn new(cfg: &ProbeConfig, threads: usize) -> (CoRunLoad, usize) {
        let mib = cfg.mib.div_ceil(threads.max(1)).max(1);
        let load = CoRunLoad {
            words: (mib << 20) / std::mem::size_of::<usize>(),
            passes: cfg.mib.div_ceil(mib).max(1),
            updates: cfg.loads,
            rounds: cfg.rounds,
            seed: cfg.seed,
        };
        (load, mib)
    }
}

/// One co-run thread: bound to `cpu`, its own buffer first-touched there, then `rounds`
/// rounds of a stream and a random-update run, each phase started with the others'. A thread
/// that cannot bind still meets every barrier (the others would wait forever) and returns its
/// error after the first, where all threads learn of it and stop.
fn co_run_thread(
    cpu: usize,
    i: usize,
    load: CoRunLoad,
    barrier: &Barrier,
    failed: &AtomicBool,
    origin: Instant,
) -> Result<Vec<Lap>, BenchError> {
    let bound = bind(&CpuSet::single(cpu));
    let mut state = None;
    match &bound {
        Ok(()) => {
            let buf = vec![1usize; load.words]; // written here: first touch on this node
            let idx = gather_indices(&buf, load.updates, load.seed ^ i as u64);
            let mut buf = buf;
            stream(&buf); // warm the TLB
            gather(&mut buf, &idx[..idx.len() / 4]); // and the updates' first misses
            state = Some((buf, idx));
        }
        Err(_) => failed.store(true, Ordering::SeqCst),
    }
    barrier.wait();
    let (Some((mut buf, idx)), false) = (state, failed.load(Ordering::SeqCst)) else {
        return bound.map(|_| Vec::new());
    };
    let bytes = (std::mem::size_of_val(buf.as_slice()) * load.passes) as u64;
    let mut laps = Vec::with_capacity(load.rounds);
    for _ in 0..load.rounds {
        barrier.wait();
        let cpu0 = thread_cpu_s();
        let start_s = origin.elapsed().as_secs_f64();
        for _ in 0..load.passes {
            stream(&buf);
        }
        let end_s = origin.elapsed().as_secs_f64();
        let cpu1 = thread_cpu_s();
        barrier.wait();
        let cpu2 = thread_cpu_s();
        let gather_ns = gather(&mut buf, &idx);
        let cpu3 = thread_cpu_s();
        let cpu_s = (|| Some(cpu1? - cpu0? + cpu3? - cpu2?))();
        laps.push(Lap {
            start_s,
            end_s,
            bytes,
            gather_ns,
            timed_s: end_s - start_s + gather_ns * idx.len() as f64 * 1e-9,
            cpu_s,
        });
    }
    Ok(laps)
}

/// [`co_run_thread`] on every CPU of `cpus` at once: its laps, `[thread][round]`.
pub(crate) fn co_run_threads(cpus: &[usize], load: CoRunLoad) -> Result<Vec<Vec<Lap>>, BenchError> {
    let barrier = Barrier::new(cpus.len());
    let failed = AtomicBool::new(false);
    let origin = Instant::now();
    std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| {
                let (barrier, failed) = (&barrier, &failed);
                s.spawn(move || co_run_thread(cpu, i, load, barrier, failed, origin))
            })
            .collect();
        handles
            .into_iter()
            .zip(cpus)
            .map(|(h, cpu)| {
                h.join().map_err(|_| {
                    BenchError::Config(format!("probe: the thread on CPU {cpu} panicked"))
                })?
            })
            .collect()
    })
}

/// The median aggregate read rate over rounds and the median time per update over threads
/// and rounds of `laps` (`[thread][round]`).
fn co_run_figures(laps: &[Vec<Lap>]) -> (f64, f64) {
    let rounds = laps.iter().map(Vec::len).min().unwrap_or(0);
    if rounds == 0 {
        return (0.0, 0.0);
    }
    let per_round = (0..rounds).map(|r| {
        let together: Vec<Lap> = laps.iter().map(|t| t[r]).collect();
        aggregate_gbps(&together)
    });
    let gbps = median(&per_round.collect::<Vec<_>>());
    let ns = median(
        &laps
            .iter()
            .flatten()
            .map(|l| l.gather_ns)
            .collect::<Vec<_>>(),
    );
    (gbps, ns)
}

/// The node whose CPUs are `cpus` (kernel numbers): one thread on its first CPU, then one on
/// each of its CPUs together.
fn co_run_node(node: usize, cpus: &CpuSet, cfg: &ProbeConfig) -> Result<NodeCoRun, BenchError> {
    let all: Vec<usize> = cpus.iter().collect();
    let Some(first) = all.first() else {
        return Err(BenchError::Config(format!(
            "probe: node {node} has no CPU to run on"
        )));
    };
    let (load, buffer_mib) = CoRunLoad::new(cfg, all.len());
    let alone = co_run_threads(std::slice::from_ref(first), load)?;
    let (alone_read_gbps, alone_gather_ns) = co_run_figures(&alone);
    let together = co_run_threads(&all, load)?;
    let (aggregate_read_gbps, gather_ns) = co_run_figures(&together);
    Ok(NodeCoRun {
        node,
        threads: all.len(),
        buffer_mib,
        passes: load.passes,
        alone_read_gbps,
        aggregate_read_gbps,
        alone_gather_ns,
        gather_ns,
        slowdown: slowdown(gather_ns, alone_gather_ns),
        on_cpu_share: on_cpu_share(&together),
        alone_on_cpu_share: on_cpu_share(&alone),
    })
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

impl ProbeResult {
    /// The results as a table, and the `[memory]` keys of a machine file they give.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "memory probe: {} MiB buffer, {} dependent loads per run, median of {} runs",
            self.buffer_mib, self.loads, self.rounds
        );
        let _ = writeln!(
            s,
            "cpu node  memory node  latency (ns)  one-core read (GB/s)"
        );
        for c in &self.cells {
            let _ = writeln!(
                s,
                "{:>8}  {:>11}  {:>12.1}  {:>20.2}",
                c.cpu_node, c.mem_node, c.latency_ns, c.read_gbps
            );
        }
        if let Some(local) = self.local_latency_ns() {
            let _ = writeln!(
                s,
                "\nFor a machine file: [memory] local_latency_ns = {local:.0} (random access, \
                 TLB misses included); one core streams {:.1} GB/s",
                self.local_read_gbps().unwrap_or(0.0)
            );
        }
        let _ = writeln!(
            s,
            "last-level cache: {:.1} ns per dependent load through {} KiB, {:.2} ns per \
             independent random update (MLP {:.1})",
            self.llc_latency_ns,
            self.llc_chase_kib,
            self.llc_gather_ns,
            self.llc_mlp().unwrap_or(0.0)
        );
        if let Some(m) = self.random_mlp() {
            let _ = writeln!(
                s,
                "independent random updates beyond the LLC: MLP {m:.1} (latency / ns per update)"
            );
        }
        if !self.cache_curve.is_empty() {
            let pts: Vec<String> = self
                .cache_curve
                .iter()
                .map(|(k, ns)| format!("{} KiB {ns:.0} ns", k))
                .collect();
            let _ = writeln!(s, "dependent loads by buffer size: {}", pts.join(", "));
        }
        if let Some(kib) = self.effective_llc_kib() {
            let _ = writeln!(s, "last-level cache this core holds alone: about {kib} KiB");
        }
        self.llc_share_text(&mut s);
        self.refill_text(&mut s);
        self.turn_refill_text(&mut s);
        self.turns_text(&mut s);
        self.co_run_text(&mut s);
        if let Some(mhz) = self.core_mhz {
            let _ = writeln!(
                s,
                "core clock: {mhz:.0} MHz (dependent adds, one per cycle, in the thread's CPU time)"
            );
        }
        if let (Some(local), Some(stream), Some(mlp), Some(llc)) = (
            self.local_latency_ns(),
            self.stream_mlp(),
            self.random_mlp(),
            self.model_llc_latency_ns(),
        ) {
            let bandwidth = self
                .node_bandwidth_gbps()
                .map(|b| format!(" --machine-set bandwidth_gbps={b:.1}"))
                .unwrap_or_default();
            let llc_kib = self
                .model_llc_kib()
                .map(|k| format!(" {}", llc_flags(k, self.model_llc_private())))
                .unwrap_or_default();
            let clock = self
                .core_mhz
                .map(|m| format!(" --machine-set freq_mhz={m:.0}"))
                .unwrap_or_default();
            let refill = self
                .refill_ns()
                .map(|r| format!(" --machine-set refill_ns={r:.1}"))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "[cpu] mlp = {mlp:.1}, stream_mlp = {stream:.0} (latency x rate / line), \
                 llc_latency_ns = {llc:.0} (ns per independent LLC hit x mlp).\n\
                 For `homenode sim --machine host`: --machine-set local_latency_ns={local:.0} \
                 --machine-set mlp={mlp:.1} --machine-set stream_mlp={stream:.0} \
                 --machine-set llc_latency_ns={llc:.0}{llc_kib}{bandwidth}{clock}{refill}"
            );
        }
        s
    }

    /// The turns' line ([`crate::turns`]).
    fn turns_text(&self, s: &mut String) {
        use std::fmt::Write as _;
        if let Some(t) = &self.turns {
            let hz = match t.hz {
                Some(hz) => format!("slices end at ticks of HZ={hz} (--sched linux:hz={hz})"),
                None => "no tick of 100, 250, 300 or 1000 Hz explains them".to_string(),
            };
            let _ = writeln!(
                s,
                "two CPU-bound threads on CPU {} take turns of {:.2} ms: {hz}",
                t.cpu, t.turn_ms
            );
        }
    }

    /// The cost model's `cpu.refill_ns`: the turn test's figure, else the refill test's.
    pub fn refill_ns(&self) -> Option<f64> {
        self.turn_refill
            .as_ref()
            .map(|t| t.per_line_ns)
            .or(self.refill.as_ref().map(|r| r.per_line_ns))
    }

    /// The turn test's line ([`crate::turn_refill`]).
    fn turn_refill_text(&self, s: &mut String) {
        use std::fmt::Write as _;
        if let Some(t) = &self.turn_refill {
            let _ = writeln!(
                s,
                "two numa_test jobs (PROBLEMSIZE {}) taking turns of one pass on CPU {} in one \
                 thread: {:.2} ns per update against {:.2} alone, {:.0} us per turn, {:.2} ns \
                 per line of `a` fetched again (the cost model's refill_ns)",
                t.size, t.cpu, t.turns_ns, t.alone_ns, t.per_turn_us, t.per_line_ns
            );
        }
    }

    /// The refill's line ([`crate::refill`]), against the cost model's figure.
    fn refill_text(&self, s: &mut String) {
        use std::fmt::Write as _;
        if let (Some(r), Some(miss)) = (&self.refill, self.local_gather_ns()) {
            let _ = writeln!(
                s,
                "{} KiB updated at random on CPU {} after {} KiB were updated and read through: \
                 {:.2} ns per update against {:.2} warm, {:.2} ns per evicted line fetched \
                 again (the cost model's miss instead of a hit: {:.2} - {:.2} = {:.2} ns)",
                r.buffer_kib,
                r.cpu,
                r.evict_kib,
                r.cold_ns,
                r.warm_ns,
                r.per_line_ns,
                miss,
                self.llc_gather_ns,
                miss - self.llc_gather_ns
            );
        }
    }

    /// The LLC co-run's line ([`crate::llc_share`]): shared or each core's own.
    fn llc_share_text(&self, s: &mut String) {
        use std::fmt::Write as _;
        if let (Some(l), Some(knee)) = (&self.llc_share, self.effective_llc_kib()) {
            let _ = writeln!(
                s,
                "{} CPUs of one LLC updating {} KiB each at random together: {:.2} ns per update \
                 against {:.2} alone ({:.2}x; a shared cache of {knee} KiB would cost about \
                 {:.1}x): {} ({})",
                l.threads,
                l.buffer_kib,
                l.gather_ns,
                l.alone_gather_ns,
                l.slowdown,
                l.shared_slowdown,
                if l.private() {
                    "each core holds its own"
                } else {
                    "the CPUs share it"
                },
                llc_flags(knee, l.private())
            );
        }
    }

    /// The co-run table: per node, one thread alone against all CPUs together.
    fn co_run_text(&self, s: &mut String) {
        use std::fmt::Write as _;
        let Some(first) = self.co_run.first() else {
            return;
        };
        let _ = writeln!(
            s,
            "all CPUs of a node together (one thread per CPU, {} MiB each, started together), \
             against one thread alone:",
            first.buffer_mib
        );
        let _ = writeln!(
            s,
            "node  threads  read alone (GB/s)  read together (GB/s)  update alone (ns)  \
             update together (ns)  slowdown  on CPU alone / together"
        );
        let pct = |x: Option<f64>| x.map_or("?".to_string(), |x| format!("{:.0}%", 100.0 * x));
        for c in &self.co_run {
            let _ = writeln!(
                s,
                "{:>4}  {:>7}  {:>17.2}  {:>20.2}  {:>17.2}  {:>20.2}  {:>8.2}  {:>23}",
                c.node,
                c.threads,
                c.alone_read_gbps,
                c.aggregate_read_gbps,
                c.alone_gather_ns,
                c.gather_ns,
                c.slowdown,
                format!("{} / {}", pct(c.alone_on_cpu_share), pct(c.on_cpu_share)),
            );
        }
        let busy = self
            .co_run
            .iter()
            .flat_map(|c| [c.on_cpu_share, c.alone_on_cpu_share])
            .any(|x| x.is_some_and(|x| x < 0.9));
        if busy {
            let _ = writeln!(
                s,
                "(a thread was off its CPU for more than a tenth of its timed runs: other work \
                 shared the CPUs, and the co-run figures show that as well as the memory)"
            );
        }
        if let Some(b) = self.node_bandwidth_gbps() {
            let _ = writeln!(
                s,
                "[memory] bandwidth_gbps = {b:.1} (all of a node's CPUs reading together; \
                 each thread's random updates run at {:.2} of one thread's rate alone)",
                self.co_run_relative_rate().unwrap_or(0.0)
            );
        }
    }

    /// Median over nodes of the aggregate read rate of all a node's CPUs together, GB/s (the
    /// cost model's `bandwidth_gbps`).
    pub fn node_bandwidth_gbps(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .co_run
            .iter()
            .map(|c| c.aggregate_read_gbps)
            .filter(|&b| b > 0.0)
            .collect();
        (!v.is_empty()).then(|| median(&v))
    }

    /// Median over nodes of each thread's random-update rate beside the node's other CPUs'
    /// threads, as a fraction of one thread's alone: 1 / [`NodeCoRun::slowdown`].
    pub fn co_run_relative_rate(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .co_run
            .iter()
            .filter(|c| c.slowdown > 0.0)
            .map(|c| 1.0 / c.slowdown)
            .collect();
        (!v.is_empty()).then(|| median(&v))
    }

    fn local(&self) -> impl Iterator<Item = &ProbeCell> {
        self.cells.iter().filter(|c| c.cpu_node == c.mem_node)
    }

    /// Median latency of the node-local cells.
    pub fn local_latency_ns(&self) -> Option<f64> {
        let v: Vec<f64> = self.local().map(|c| c.latency_ns).collect();
        (!v.is_empty()).then(|| median(&v))
    }

    /// Lines one core keeps in flight while streaming, by Little's law: the local read rate
    /// in lines per ns times the local latency (the cost model's `cpu.stream_mlp`).
    pub fn stream_mlp(&self) -> Option<f64> {
        let lat = self.local_latency_ns()?;
        let gbps = self.local_read_gbps()?;
        (lat > 0.0 && gbps > 0.0).then(|| (gbps * lat / LINE as f64).max(1.0))
    }

    /// Lines one core keeps in flight for independent random accesses that miss the caches
    /// (the cost model's `cpu.mlp`): local latency over the local gather time per access.
    pub fn random_mlp(&self) -> Option<f64> {
        let lat = self.local_latency_ns()?;
        let g = self.local_gather_ns()?;
        (g > 0.0).then(|| (lat / g).max(1.0))
    }

    /// Median ns per independent random update of the node-local cells (a miss).
    pub fn local_gather_ns(&self) -> Option<f64> {
        let v: Vec<f64> = self.local().map(|c| c.gather_ns).collect();
        (!v.is_empty()).then(|| median(&v))
    }

    /// The same for accesses that hit the last-level cache.
    pub fn llc_mlp(&self) -> Option<f64> {
        (self.llc_gather_ns > 0.0).then(|| (self.llc_latency_ns / self.llc_gather_ns).max(1.0))
    }

    /// [`effective_llc_kib`] of this probe's curve against its local memory latency.
    pub fn effective_llc_kib(&self) -> Option<usize> {
        effective_llc_kib(&self.cache_curve, self.local_latency_ns()?)
    }

    /// The cost model's `llc_kib`: the knee, the cache one core holds alone. When the co-run
    /// found it each core's own, it is each CPU's own part ([`Self::model_llc_private`]);
    /// else the LLC that the model shares out among its CPUs' tasks.
    pub fn model_llc_kib(&self) -> Option<usize> {
        self.effective_llc_kib()
    }

    /// The cost model's `llc_private`: the co-run found that each core holds the knee itself,
    /// whatever the others do.
    pub fn model_llc_private(&self) -> bool {
        self.llc_share.as_ref().is_some_and(|s| s.private())
    }

    /// The cache all of the LLC's CPUs hold together: the knee, times the CPUs when each
    /// holds its own ([`crate::llc_share::LlcShare::capacity_kib`]).
    pub fn capacity_kib(&self) -> Option<usize> {
        let knee = self.effective_llc_kib()?;
        Some(
            self.llc_share
                .as_ref()
                .map_or(knee, |s| s.capacity_kib(knee)),
        )
    }

    /// The cost model's `cpu.llc_latency_ns`: the model charges an LLC hit its latency over
    /// `mlp`, so the figure that reproduces the measured time per independent hit is that
    /// time times [`random_mlp`](Self::random_mlp). (The dependent-load latency through the
    /// same buffer is printed too; the core overlaps hits more than misses.)
    pub fn model_llc_latency_ns(&self) -> Option<f64> {
        let mlp = self.random_mlp()?;
        (self.llc_gather_ns > 0.0).then_some(self.llc_gather_ns * mlp)
    }

    /// Median one-core read rate of the node-local cells.
    pub fn local_read_gbps(&self) -> Option<f64> {
        let v: Vec<f64> = self.local().map(|c| c.read_gbps).collect();
        (!v.is_empty()).then(|| median(&v))
    }
}

/// The `--machine-set` flags for an LLC of `kib` that each CPU holds on its own (`private`)
/// or that its CPUs share.
fn llc_flags(kib: usize, private: bool) -> String {
    let own = if private {
        " --machine-set llc_private=1"
    } else {
        ""
    };
    format!("--machine-set llc_kib={kib}{own}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chase_is_one_cycle_through_every_slot() {
        let buf = chase_buffer(1, 7);
        let slots = (1 << 20) / LINE;
        let mut seen = vec![false; slots];
        let mut i = 0usize;
        for _ in 0..slots {
            assert_eq!(i % WORDS_PER_LINE, 0, "points inside a line");
            let slot = i / WORDS_PER_LINE;
            assert!(!seen[slot], "slot {slot} visited twice");
            seen[slot] = true;
            i = buf[i];
        }
        assert_eq!(i, 0, "the walk returns to the start after every slot");
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn stream_mlp_is_littles_law() {
        let cell = |c, m, lat, gbps| ProbeCell {
            cpu_node: c,
            mem_node: m,
            latency_ns: lat,
            read_gbps: gbps,
            gather_ns: 16.0,
        };
        let r = ProbeResult {
            buffer_mib: 1,
            loads: 1,
            rounds: 1,
            cells: vec![cell(0, 0, 128.0, 25.6), cell(0, 1, 300.0, 1.0)],
            llc_chase_kib: 8192,
            llc_latency_ns: 20.0,
            llc_gather_ns: 4.0,
            cache_curve: vec![(256, 10.0), (512, 20.0), (1024, 60.0), (2048, 100.0)],
            co_run: vec![],
            core_mhz: Some(4249.6),
            llc_share: None,
            refill: None,
            turn_refill: None,
            turns: None,
        };
        // 25.6 GB/s = 0.4 lines per ns, for 128 ns: 51.2 lines in flight.
        assert!((r.stream_mlp().unwrap() - 51.2).abs() < 1e-9);
        assert!(r.to_text().contains("--machine-set stream_mlp=51"));
        // 128 ns over 16 ns per independent update: 8 in flight; the LLC's 20 / 4: 5.
        assert_eq!(r.random_mlp(), Some(8.0));
        assert_eq!(r.llc_mlp(), Some(5.0));
        // 4 ns per independent hit, overlapped 8 deep as the model overlaps misses: 32 ns.
        assert_eq!(r.model_llc_latency_ns(), Some(32.0));
        let text = r.to_text();
        assert!(text.contains("--machine-set mlp=8.0"), "{text}");
        assert!(text.contains("--machine-set llc_latency_ns=32"), "{text}");
        // Half-way from 10 ns to the memory's 128 ns is 69 ns: 1024 KiB is the last below.
        assert_eq!(r.effective_llc_kib(), Some(1024));
        assert!(text.contains("--machine-set llc_kib=1024"), "{text}");
        let flags = text.lines().last().unwrap_or_default();
        assert!(
            flags.starts_with("For `homenode sim --machine host`:")
                && flags.contains("--machine-set llc_kib=1024")
                && flags.contains("--machine-set freq_mhz=4250"),
            "{flags}"
        );
        // Two CPUs of the LLC that keep their rate together each hold the knee: in the model
        // each CPU has its own knee of the LLC (llc_private), and together they hold twice it.
        let own = ProbeResult {
            llc_share: Some(crate::llc_share::LlcShare {
                threads: 2,
                buffer_kib: 768,
                alone_gather_ns: 1.0,
                gather_ns: 1.1,
                slowdown: 1.1,
                shared_slowdown: 3.0,
            }),
            ..r.clone()
        };
        let text = own.to_text();
        assert_eq!(own.model_llc_kib(), Some(1024));
        assert!(own.model_llc_private() && !r.model_llc_private());
        assert_eq!(own.capacity_kib(), Some(2048));
        assert!(
            text.contains(
                "each core holds its own (--machine-set llc_kib=1024 --machine-set llc_private=1)"
            ),
            "{text}"
        );
        let flags = text.lines().last().unwrap_or_default();
        assert!(
            flags.contains("--machine-set llc_kib=1024 --machine-set llc_private=1"),
            "{flags}"
        );
        let none = ProbeResult { cells: vec![], ..r };
        assert_eq!(none.stream_mlp(), None);
    }

    fn lap(start_s: f64, end_s: f64, bytes: u64) -> Lap {
        Lap {
            start_s,
            end_s,
            bytes,
            gather_ns: 10.0,
            timed_s: end_s - start_s,
            cpu_s: Some(end_s - start_s),
        }
    }

    #[test]
    fn the_on_cpu_share_is_the_least_of_the_threads() {
        let on = |cpu: Option<f64>| Lap {
            cpu_s: cpu,
            timed_s: 0.1,
            ..lap(0.0, 0.1, 1)
        };
        // One thread on its CPU all the time, one for 0.15 of its 0.2 s: 75%.
        let laps = vec![
            vec![on(Some(0.1)), on(Some(0.1))],
            vec![on(Some(0.1)), on(Some(0.05))],
        ];
        assert!((on_cpu_share(&laps).unwrap() - 0.75).abs() < 1e-9);
        // getrusage's microseconds may round past the wall clock: at most 1.
        assert_eq!(on_cpu_share(&[vec![on(Some(0.1001))]]), Some(1.0));
        assert_eq!(on_cpu_share(&[vec![on(None)]]), None);
        assert_eq!(on_cpu_share(&[]), None);
    }

    #[test]
    fn the_aggregate_rate_is_all_bytes_over_the_whole_span() {
        // One thread alone: 2 GB in 0.1 s.
        assert!((aggregate_gbps(&[lap(1.0, 1.1, 2_000_000_000)]) - 20.0).abs() < 1e-9);
        // Two threads, started 10 ms apart, the last ending 0.2 s after the first began:
        // 4 GB over 0.2 s, not the sum of their own rates (20 + 2 / 0.15 GB/s).
        let two = [lap(0.0, 0.2, 2_000_000_000), lap(0.01, 0.16, 2_000_000_000)];
        assert!((aggregate_gbps(&two) - 20.0).abs() < 1e-9);
        assert_eq!(aggregate_gbps(&[]), 0.0);
        assert_eq!(aggregate_gbps(&[lap(1.0, 1.0, 64)]), 0.0);
    }

    #[test]
    fn co_run_figures_are_medians_over_rounds_and_threads() {
        let t = |ns: [f64; 3], s: [f64; 3]| -> Vec<Lap> {
            (0..3)
                .map(|r| Lap {
                    gather_ns: ns[r],
                    ..lap(r as f64, r as f64 + s[r], 1_000_000_000)
                })
                .collect()
        };
        // Rounds of 2 GB in 0.1, 0.2 and 0.4 s: 20, 10, 5 GB/s, median 10.
        let laps = [
            t([10.0, 11.0, 30.0], [0.1, 0.2, 0.4]),
            t([12.0, 13.0, 14.0], [0.05, 0.1, 0.1]),
        ];
        let (gbps, ns) = co_run_figures(&laps);
        assert!((gbps - 10.0).abs() < 1e-9, "{gbps}");
        // 10, 11, 12, 13, 14, 30: the mean of the two middle values.
        assert_eq!(ns, 12.5);
        assert_eq!(co_run_figures(&[]), (0.0, 0.0));
    }

    #[test]
    fn the_slowdown_is_together_over_alone() {
        assert_eq!(slowdown(15.0, 10.0), 1.5);
        assert_eq!(slowdown(10.0, 10.0), 1.0);
        assert_eq!(slowdown(10.0, 0.0), 0.0);
    }

    #[test]
    fn co_run_shares_the_buffer_and_keeps_the_work_per_thread() {
        let cfg = ProbeConfig::default();
        let (one, mib) = CoRunLoad::new(&cfg, 1);
        assert_eq!((mib, one.passes), (256, 1));
        let (two, mib) = CoRunLoad::new(&cfg, 2);
        assert_eq!((mib, two.passes), (128, 2));
        assert_eq!(two.words * 8, 128 << 20);
        // 72 CPUs: 4 MiB each (256 / 72 rounded up), 64 passes, 256 MiB read per round.
        let (many, mib) = CoRunLoad::new(&cfg, 72);
        assert_eq!((mib, many.passes), (4, 64));
        let tiny = ProbeConfig { mib: 1, ..cfg };
        assert_eq!(CoRunLoad::new(&tiny, 4).1, 1);
    }

    #[test]
    fn the_co_run_prints_its_table_and_the_bandwidth_flag() {
        let node = |node, agg, slow| NodeCoRun {
            node,
            threads: 2,
            buffer_mib: 128,
            passes: 2,
            alone_read_gbps: 12.0,
            aggregate_read_gbps: agg,
            alone_gather_ns: 10.0,
            gather_ns: 10.0 * slow,
            slowdown: slow,
            on_cpu_share: Some(0.98),
            alone_on_cpu_share: None,
        };
        let r = ProbeResult {
            buffer_mib: 1,
            loads: 1,
            rounds: 1,
            cells: vec![ProbeCell {
                cpu_node: 0,
                mem_node: 0,
                latency_ns: 128.0,
                read_gbps: 12.0,
                gather_ns: 16.0,
            }],
            llc_chase_kib: 8192,
            llc_latency_ns: 20.0,
            llc_gather_ns: 4.0,
            cache_curve: vec![],
            co_run: vec![node(0, 15.04, 1.25)],
            core_mhz: None,
            llc_share: None,
            refill: None,
            turn_refill: None,
            turns: None,
        };
        assert_eq!(r.node_bandwidth_gbps(), Some(15.04));
        assert_eq!(r.co_run_relative_rate(), Some(0.8));
        let text = r.to_text();
        assert!(text.contains("--machine-set bandwidth_gbps=15.0"), "{text}");
        assert!(text.contains("bandwidth_gbps = 15.0"), "{text}");
        assert!(
            text.contains("at 0.80 of one thread's rate alone"),
            "{text}"
        );
        assert!(text.contains("\n   0        2      "), "{text}");
        assert!(text.contains("? / 98%"), "{text}");
        assert!(!text.contains("freq_mhz"), "no clock, no flag: {text}");
        assert!(!text.contains("off its CPU"), "{text}");
        let busy = ProbeResult {
            co_run: vec![NodeCoRun {
                on_cpu_share: Some(0.5),
                ..node(0, 15.0, 2.0)
            }],
            ..r.clone()
        };
        assert!(busy.to_text().contains("off its CPU"));
        // Several nodes: the median node (of 3, the middle one).
        let three = ProbeResult {
            co_run: vec![node(0, 15.0, 1.0), node(1, 30.0, 2.0), node(2, 20.0, 4.0)],
            ..r.clone()
        };
        assert_eq!(three.node_bandwidth_gbps(), Some(20.0));
        assert_eq!(three.co_run_relative_rate(), Some(0.5));
        // No co-run (no node with CPUs): no table, no flag.
        let none = ProbeResult {
            co_run: vec![],
            ..r
        };
        assert!(!none.to_text().contains("bandwidth_gbps"));
        assert_eq!(none.node_bandwidth_gbps(), None);
    }

    #[test]
    fn bad_sizes_are_refused() {
        let cfg = ProbeConfig {
            mib: 0,
            ..Default::default()
        };
        let e = run(Path::new("/"), &cfg).unwrap_err().to_string();
        assert!(e.contains("--mib"), "{e}");
    }
}
