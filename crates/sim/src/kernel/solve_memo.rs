//! A memo of the contention fixed point ([`cost::solve_nodes_into`]) for one run.
//!
//! Why: where message-passing tasks keep preempting memory-bound ones (numa_test's hackbench
//! peak), each switch adds or removes one demand on one node and the refresh solves that
//! node's fixed point again. A node cycles through a few sets of running demands, and the
//! Newton steps end exactly on the floating-point fixed point, so the same demands from the
//! same starting factors come back bit for bit: on numa_test N=64 on azusa16, 94% of the
//! solves under `o1` and over 99% under `node-affine-*` are repeats.
//!
//! Why it is exact: a solve is a pure function of the nodes it solves, their starting
//! factors and the demands in their order (every floating-point operation of it reads only
//! those and the machine), so a recalled result has the bits a new solve would give. The key
//! is compared in full, never by its hash alone. A demand is identified as the rest of the
//! refresh identifies it: by its decomposition's fingerprint (which covers its CPU's node,
//! base time, stall coefficients and traffic) and its nodes.

use super::cost::Contention;
use topo::NodeId;

/// Entries of the memo (direct-mapped: an entry replaces the one at its hash's place).
const SLOTS: usize = 4096;

/// Misses in a row after which the memo is not asked for the next solves: [`BACKOFF_MIN`]
/// after the first streak, twice as many after each streak that follows without a recall
/// in between, up to [`BACKOFF`].
/// Where the running demands do not come back (memory-bound jobs without message passers,
/// each switch a new set: at 1024 CPUs with 8 jobs per CPU under `o1`, 79 of 230,573 solves
/// recalled), building and storing a key for every solve reads and copies each of its
/// demands for nothing. Where they do come back, misses come singly or in short runs (`linux`
/// at 512 CPUs: 88% recalled). The memo is exact, so how often it is asked changes only the
/// speed; the counts are speed choices measured on this machine, not model parameters.
/// The first back-off is short: a run's first solves all miss (the memo starts empty), and on
/// a small machine a long first back-off solves anew what the memo would recall (numa_test
/// N=64 on azusa16 under `o1`: 6,779 solves made anew with 4,096 from the start, 4,520 with
/// 256 doubling to 4,096). The streak is 256 misses long (it was 64): new states of a small
/// machine come in bursts longer than 64 solves that the memo recalls soon after (the same
/// run: 4,520 -> 3,685 solves made anew, of 2,979 distinct keys), while at 1024 CPUs it asks
/// 256 solves of each back-off period of up to 4,096, a key each, no solve more.
const MISS_STREAK: u32 = 256;
const BACKOFF_MIN: u32 = 256;
const BACKOFF: u32 = 4096;

/// The inputs of one solve, flattened: the nodes, each node's starting factors (bits), then
/// per demand its fingerprint, its number of nodes and the nodes.
///
/// The words are `words[..len]`: the buffer only grows, to the longest key the demands given
/// could make, so that a key is written through a slice whose address and length stay in
/// registers. Pushed into the vector, each store of a word might have changed the vector's
/// own length and pointer (both are words too), which were read again after every store
/// (about 23 instructions a word, callgrind).
#[derive(Debug, Default)]
pub(super) struct SolveKey {
    words: Vec<u64>,
    len: usize,
    hash: u64,
}

/// Writes a key's words and hashes them as they are written.
struct KeyWriter<'w> {
    buf: &'w mut [u64],
    len: usize,
    hash: u64,
}

impl KeyWriter<'_> {
    #[inline(always)]
    fn put(&mut self, x: u64) {
        self.buf[self.len] = x;
        self.len += 1;
        self.hash = (self.hash ^ x)
            .wrapping_mul(0x0100_0000_01b3)
            .rotate_left(23);
    }
}

impl SolveKey {
    /// The key of solving `nodes` from `q` with `demands`, each given by its fingerprint and
    /// nodes (as registered: the same values as its decomposition's `fp` and `nz`, ascending
    /// nodes of the machine, so at most as many as `q` has). `demands` must know how many it
    /// may give at most (its `size_hint`).
    pub fn build<'a>(
        &mut self,
        nodes: &[NodeId],
        q: &Contention,
        demands: impl Iterator<Item = (u64, &'a [NodeId])>,
    ) {
        let most = demands.size_hint().1.expect("a bounded list of demands");
        let longest = 1 + 3 * nodes.len() + most * (2 + q.local.len());
        if self.words.len() < longest {
            self.words.resize(longest, 0);
        }
        // Hashed as written (the same words in the same order as one pass after).
        let mut w = KeyWriter {
            buf: &mut self.words,
            len: 0,
            hash: 0xcbf2_9ce4_8422_2325,
        };
        w.put(nodes.len() as u64);
        for &j in nodes {
            w.put(j as u64);
            w.put(q.local[j].to_bits());
            w.put(q.remote[j].to_bits());
        }
        for (fp, nz) in demands {
            w.put(fp);
            w.put(nz.len() as u64);
            for &j in nz {
                w.put(j as u64);
            }
        }
        let (len, h) = (w.len, w.hash);
        self.len = len;
        self.hash = h ^ (h >> 29);
    }

    /// The key's words.
    fn words(&self) -> &[u64] {
        &self.words[..self.len]
    }
}

#[derive(Debug, Default)]
struct Entry {
    key: Vec<u64>,
    /// The solved factors of the key's nodes, local then remote, node by node.
    factors: Vec<f64>,
    iterations: u32,
}

/// Solved fixed points by their inputs.
#[derive(Debug, Default)]
pub(super) struct SolveMemo {
    slots: Vec<Entry>,
    /// Misses since the last recall (or since the last back-off).
    misses_in_row: u32,
    /// Solves left before the memo is asked again.
    skip: u32,
    /// Back-offs since the last recall.
    backoffs: u32,
}

impl SolveMemo {
    /// Whether the next solve should look in the memo (and store its result); false for
    /// [`BACKOFF_MIN`] to [`BACKOFF`] solves after [`MISS_STREAK`] misses in a row. Every call
    /// is one solve.
    pub fn worth_asking(&mut self) -> bool {
        if self.skip == 0 {
            return true;
        }
        self.skip -= 1;
        false
    }

    /// Count the outcome of a look-up that [`SolveMemo::worth_asking`] allowed.
    pub fn note(&mut self, recalled: bool) {
        if recalled {
            self.misses_in_row = 0;
            self.backoffs = 0;
            return;
        }
        self.misses_in_row += 1;
        if self.misses_in_row >= MISS_STREAK {
            self.misses_in_row = 0;
            self.skip = (BACKOFF_MIN << self.backoffs).min(BACKOFF);
            self.backoffs = (self.backoffs + 1).min(BACKOFF.ilog2());
        }
    }

    fn slot(&self, key: &SolveKey) -> usize {
        (key.hash as usize) % SLOTS
    }

    /// The solve of `key` if it was stored: its factors written into `q`, the factors it
    /// would start from, for the key's `nodes` (the other factors are left as they are, as
    /// a solve leaves them), the nodes whose factors change (bit for bit) added to `moved`
    /// in the order of `nodes`; and its iterations.
    pub fn recall_moved(
        &self,
        key: &SolveKey,
        nodes: &[NodeId],
        q: &mut Contention,
        moved: &mut Vec<NodeId>,
    ) -> Option<u32> {
        let e = self.slots.get(self.slot(key))?;
        if e.key != key.words() {
            return None;
        }
        for (i, &j) in nodes.iter().enumerate() {
            let (local, remote) = (e.factors[2 * i], e.factors[2 * i + 1]);
            if local.to_bits() != q.local[j].to_bits() || remote.to_bits() != q.remote[j].to_bits()
            {
                moved.push(j);
            }
            q.local[j] = local;
            q.remote[j] = remote;
        }
        Some(e.iterations)
    }

    /// Remember that solving `key` gave `q` on `nodes` in `iterations`.
    pub fn store(&mut self, key: &SolveKey, nodes: &[NodeId], q: &Contention, iterations: u32) {
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, Entry::default);
        }
        let slot = self.slot(key);
        let e = &mut self.slots[slot];
        e.key.clear();
        e.key.extend_from_slice(key.words());
        e.factors.clear();
        for &j in nodes {
            e.factors.extend([q.local[j], q.remote[j]]);
        }
        e.iterations = iterations;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::cost::LinearOp;

    fn demand(fp: u64, nz: Vec<NodeId>) -> LinearOp {
        LinearOp {
            fp,
            nz,
            ..Default::default()
        }
    }

    fn pairs<'a>(ops: &'a [&'a LinearOp]) -> impl Iterator<Item = (u64, &'a [NodeId])> {
        ops.iter().map(|d| (d.fp, d.nz.as_slice()))
    }

    #[test]
    fn a_solve_is_recalled_only_for_the_same_inputs() {
        let (a, b) = (demand(7, vec![0]), demand(9, vec![0, 1]));
        let start = Contention::idle(2);
        let mut solved = Contention::idle(2);
        solved.local[0] = 1.5;
        solved.remote[1] = 2.25;
        let mut memo = SolveMemo::default();
        let mut key = SolveKey::default();
        key.build(&[0, 1], &start, pairs(&[&a, &b]));
        memo.store(&key, &[0, 1], &solved, 4);

        let mut q = Contention::idle(2);
        let mut changed = Vec::new();
        assert_eq!(
            memo.recall_moved(&key, &[0, 1], &mut q, &mut changed),
            Some(4)
        );
        assert_eq!(q, solved);
        // Node 0's local and node 1's remote factor moved.
        assert_eq!(changed, vec![0, 1]);
        changed.clear();
        assert_eq!(
            memo.recall_moved(&key, &[0, 1], &mut q, &mut changed),
            Some(4)
        );
        assert!(changed.is_empty());

        // Another order of the same demands, another start or another demand: not recalled.
        let mut other = SolveKey::default();
        other.build(&[0, 1], &start, pairs(&[&b, &a]));
        assert_eq!(
            memo.recall_moved(&other, &[0, 1], &mut q, &mut changed),
            None
        );
        let mut moved = start.clone();
        moved.local[1] = f64::from_bits(1.0f64.to_bits() + 1);
        other.build(&[0, 1], &moved, pairs(&[&a, &b]));
        assert_eq!(
            memo.recall_moved(&other, &[0, 1], &mut q, &mut changed),
            None
        );
        let c = demand(8, vec![0, 1]);
        other.build(&[0, 1], &start, pairs(&[&a, &c]));
        assert_eq!(
            memo.recall_moved(&other, &[0, 1], &mut q, &mut changed),
            None
        );
    }

    /// A key shorter than one built before in the same buffer is its own words only: it
    /// matches a stored key of the same words and not one that extends it.
    #[test]
    fn a_shorter_key_is_compared_by_its_own_words() {
        let (a, b) = (demand(7, vec![0]), demand(9, vec![0]));
        let start = Contention::idle(2);
        let mut memo = SolveMemo::default();
        let mut key = SolveKey::default();
        key.build(&[0], &start, pairs(&[&a, &b]));
        let long = key.words().to_vec();
        memo.store(&key, &[0], &start, 3);
        key.build(&[0], &start, pairs(&[&a]));
        assert_eq!(key.words(), &long[..long.len() - 3]);
        let (mut q, mut moved) = (Contention::idle(2), Vec::new());
        assert_eq!(memo.recall_moved(&key, &[0], &mut q, &mut moved), None);
        memo.store(&key, &[0], &start, 2);
        assert_eq!(memo.recall_moved(&key, &[0], &mut q, &mut moved), Some(2));
    }

    /// A run of misses makes the memo sit out the next solves; a recall resets the count.
    #[test]
    fn a_streak_of_misses_backs_off_and_a_recall_resets_it() {
        let mut memo = SolveMemo::default();
        for _ in 0..MISS_STREAK - 1 {
            assert!(memo.worth_asking());
            memo.note(false);
        }
        assert!(memo.worth_asking());
        memo.note(true);
        for _ in 0..MISS_STREAK {
            assert!(memo.worth_asking());
            memo.note(false);
        }
        // Each back-off without a recall in between twice as long as the one before, up
        // to `BACKOFF`; a recall starts again from `BACKOFF_MIN`.
        let mut len = BACKOFF_MIN;
        for _ in 0..8 {
            for _ in 0..len {
                assert!(!memo.worth_asking());
            }
            for _ in 0..MISS_STREAK {
                assert!(memo.worth_asking());
                memo.note(false);
            }
            len = (len * 2).min(BACKOFF);
        }
        assert_eq!(len, BACKOFF);
        for _ in 0..BACKOFF {
            assert!(!memo.worth_asking());
        }
        assert!(memo.worth_asking());
        memo.note(true);
        for _ in 0..MISS_STREAK {
            assert!(memo.worth_asking());
            memo.note(false);
        }
        for _ in 0..BACKOFF_MIN {
            assert!(!memo.worth_asking());
        }
        assert!(memo.worth_asking());
    }
}
