//! All of a node's CPUs at once: one thread per CPU on its own buffer, released together,
//! and the figures drawn from their laps (aggregate read rate, co-run slowdown, CPU share).

use super::*;

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
    pub(super) fn new(cfg: &ProbeConfig, threads: usize) -> (CoRunLoad, usize) {
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
pub(super) fn co_run_thread(
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
pub(super) fn co_run_figures(laps: &[Vec<Lap>]) -> (f64, f64) {
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
pub(super) fn co_run_node(
    node: usize,
    cpus: &CpuSet,
    cfg: &ProbeConfig,
) -> Result<NodeCoRun, BenchError> {
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
