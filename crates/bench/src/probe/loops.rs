//! The timed loops: a pointer chase through a random ring of cache lines, a gather of
//! random lines, a streaming sum, and binding the calling thread to CPUs.

use super::*;

/// Cache-line slot size; the chase touches one word per slot.
pub(crate) const LINE: usize = 64;
pub(super) const WORDS_PER_LINE: usize = LINE / std::mem::size_of::<usize>();

/// A buffer whose slots form one ring in random order: each slot's first word holds the
/// index of the word to load next.
pub(super) fn chase_buffer(mib: usize, seed: u64) -> Vec<usize> {
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
pub(super) fn chase(buf: &[usize], loads: u64) -> f64 {
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
