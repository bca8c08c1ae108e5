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

use crate::BenchError;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::hint::black_box;
use std::path::Path;
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
}

/// The probe's results.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeResult {
    pub buffer_mib: usize,
    pub loads: u64,
    pub rounds: usize,
    pub cells: Vec<ProbeCell>,
}

/// Cache-line slot size; the chase touches one word per slot.
const LINE: usize = 64;
const WORDS_PER_LINE: usize = LINE / std::mem::size_of::<usize>();

/// A buffer whose slots form one ring in random order: each slot's first word holds the
/// index of the word to load next.
fn chase_buffer(mib: usize, seed: u64) -> Vec<usize> {
    let slots = (mib << 20) / LINE;
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

/// GB/s of one pass summing every word.
fn stream(buf: &[usize]) -> f64 {
    let start = Instant::now();
    let sum = buf.iter().fold(0usize, |a, &x| a.wrapping_add(x));
    black_box(sum);
    let s = start.elapsed().as_secs_f64();
    (std::mem::size_of_val(buf) as f64) / s.max(1e-9) / 1e9
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Bind the calling thread to `cpus` (kernel numbers).
fn bind(cpus: &CpuSet) -> Result<(), BenchError> {
    let tid = nix::unistd::gettid().as_raw() as linux::Tid;
    linux::affinity::set_affinity(tid, cpus)
        .map(|_| ())
        .map_err(|e| BenchError::Config(format!("cannot bind the probe to CPUs {cpus}: {e}")))
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
            let latency_ns = median((0..cfg.rounds).map(|_| chase(&buf, cfg.loads)).collect());
            let read_gbps = median((0..cfg.rounds).map(|_| stream(&buf)).collect());
            cells.push(ProbeCell {
                cpu_node,
                mem_node,
                latency_ns,
                read_gbps,
            });
        }
    }
    bind(&all)?;
    Ok(ProbeResult {
        buffer_mib: cfg.mib,
        loads: cfg.loads,
        rounds: cfg.rounds,
        cells,
    })
}

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
        s
    }

    fn local(&self) -> impl Iterator<Item = &ProbeCell> {
        self.cells.iter().filter(|c| c.cpu_node == c.mem_node)
    }

    /// Median latency of the node-local cells.
    pub fn local_latency_ns(&self) -> Option<f64> {
        let v: Vec<f64> = self.local().map(|c| c.latency_ns).collect();
        (!v.is_empty()).then(|| median(v))
    }

    /// Median one-core read rate of the node-local cells.
    pub fn local_read_gbps(&self) -> Option<f64> {
        let v: Vec<f64> = self.local().map(|c| c.read_gbps).collect();
        (!v.is_empty()).then(|| median(v))
    }
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
    fn bad_sizes_are_refused() {
        let cfg = ProbeConfig {
            mib: 0,
            ..Default::default()
        };
        let e = run(Path::new("/"), &cfg).unwrap_err().to_string();
        assert!(e.contains("--mib"), "{e}");
    }
}
