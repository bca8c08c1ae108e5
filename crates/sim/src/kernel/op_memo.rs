//! A memo of cost decompositions ([`cost::linear_op_into`]) shared by a run's tasks.
//!
//! Why: on a machine whose last-level cache spans many CPUs (a node of 64 at 1024 CPUs),
//! every change of the number of memory phases running on the cache changes the share of
//! every memory-bound task on it, and each rebuilds its decomposition. Tasks of one program
//! on one node, whose memory is on one node, rebuild the same decomposition: on numa_test at
//! 1024 CPUs, one of the 64 computes it and the others can copy it.
//!
//! Why it is exact: without contended accesses (the only case the memo is asked about) a
//! decomposition is a function of the machine, the operation (program and phase), the CPU's
//! node, the cache share, and of the process's regions through their sizes and
//! [`Region::node_fractions`] alone. The memo takes only regions whose allocation is on one
//! node or none (their fractions are exactly 1 on that node, or on the CPU's node, and 0
//! elsewhere), and its key holds every one of those inputs, compared in full.

use super::cost::LinearOp;
use super::task::{Process, Spread};
use crate::memory::Region;
use topo::NodeId;

/// Entries of the memo (direct-mapped: an entry replaces the one at its hash's place).
const SLOTS: usize = 1024;

/// The inputs of one decomposition, flattened: program, phase, CPU node, share bits, then
/// per region its size and the one node its fractions are on.
#[derive(Debug, Default)]
struct OpKey {
    words: Vec<u64>,
    hash: u64,
}

impl OpKey {
    /// The key of phase `pc` of `program` run on `cpu_node` with `share_bits` of cache, for
    /// a process with `regions` whose memory is `spread`; false (key unusable) if a
    /// region's memory spans nodes.
    fn build(
        &mut self,
        (program, pc, cpu_node, share_bits): (usize, usize, NodeId, u64),
        regions: &[Region],
        spread: Spread,
    ) -> bool {
        let w = &mut self.words;
        w.clear();
        w.extend([program as u64, pc as u64, cpu_node as u64, share_bits]);
        debug_assert_eq!(w.len(), SHARE_WORD + 1);
        for r in regions {
            // The process's memory on one node or none: a region is on that node or has
            // nothing (one load instead of a scan of the region's nodes).
            let node = match spread {
                Spread::One(n) if r.node_bytes[n] != 0 => Some(n),
                Spread::Nowhere | Spread::One(_) => Some(cpu_node),
                Spread::Many => sole_node(r, cpu_node),
            };
            let Some(node) = node else {
                return false;
            };
            w.push(r.bytes);
            w.push(node as u64);
        }
        self.rehash();
        true
    }

    /// The key `words` held for another share: the same words with `share_bits` in place of
    /// theirs, and its hash.
    fn with_share(&mut self, words: &[u64], share_bits: u64) {
        self.words.clear();
        self.words.extend_from_slice(words);
        self.words[SHARE_WORD] = share_bits;
        self.rehash();
    }

    fn rehash(&mut self) {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &x in self.words.iter() {
            h = (h ^ x).wrapping_mul(0x0100_0000_01b3).rotate_left(23);
        }
        self.hash = h ^ (h >> 29);
    }
}

/// Where a key holds its share's bits.
const SHARE_WORD: usize = 3;

/// The node a region's [`Region::node_fractions`] put all of it on, as seen from a CPU of
/// `toucher`: the node of its allocated bytes if they are on one node, `toucher` when none
/// is allocated; `None` when they span nodes.
fn sole_node(r: &Region, toucher: NodeId) -> Option<NodeId> {
    let mut on = None;
    for (j, &b) in r.node_bytes.iter().enumerate() {
        if b != 0 {
            if on.is_some() {
                return None;
            }
            on = Some(j);
        }
    }
    Some(on.unwrap_or(toucher))
}

#[derive(Debug, Default)]
struct Entry {
    key: Vec<u64>,
    op: LinearOp,
}

/// Decompositions by their inputs, the key of the one asked for last, and per process
/// where its memory was at a memory version ([`Process::spread`]: a scan of every node of
/// every region, while the memory seldom moves; kept here rather than in the process,
/// whose size the switches feel).
#[derive(Debug, Default)]
pub(super) struct OpMemo {
    slots: Vec<Entry>,
    key: OpKey,
    spreads: Vec<Option<(u64, Spread)>>,
}

impl OpMemo {
    fn slot(&self) -> usize {
        (self.key.hash as usize) % SLOTS
    }

    /// Make the key of phase `pc` of `program` on `cpu_node` with `share_bits` of cache,
    /// for process `proc`, the one [`OpMemo::recall`] and [`OpMemo::store`] use; false if
    /// a region's memory spans nodes (no key).
    pub fn key(&mut self, what: (usize, usize, NodeId, u64), proc: &Process) -> bool {
        let spread = self.spread(proc);
        self.key.build(what, &proc.regions, spread)
    }

    /// The key of [`OpMemo::key`] from `words`, a key it built before for the same program,
    /// phase, node and process memory (its `mem_version`), with `share_bits` for the share:
    /// the words it would build again, without reading the regions.
    pub fn key_with_share(&mut self, words: &[u64], share_bits: u64) {
        self.key.with_share(words, share_bits);
    }

    /// The words of the key made last.
    pub fn key_words(&self) -> &[u64] {
        &self.key.words
    }

    /// [`Process::spread`], remembered per `mem_version` (every change of a region's bytes
    /// per node bumps it).
    fn spread(&mut self, proc: &Process) -> Spread {
        if proc.pid >= self.spreads.len() {
            self.spreads.resize(proc.pid + 1, None);
        }
        match self.spreads[proc.pid] {
            Some((version, spread)) if version == proc.mem_version => spread,
            _ => {
                let spread = proc.spread();
                self.spreads[proc.pid] = Some((proc.mem_version, spread));
                spread
            }
        }
    }

    /// Copy the decomposition of the key into `out` if it is held.
    pub fn recall(&self, out: &mut LinearOp) -> bool {
        match self.slots.get(self.slot()) {
            Some(e) if e.key == self.key.words => {
                out.copy_from(&e.op);
                true
            }
            _ => false,
        }
    }

    /// Remember that the key gave `op`.
    pub fn store(&mut self, op: &LinearOp) {
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, Entry::default);
        }
        let slot = self.slot();
        let e = &mut self.slots[slot];
        e.key.clone_from(&self.key.words);
        e.op.copy_from(op);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemPolicy;

    fn region(bytes: u64, node_bytes: Vec<u64>) -> Region {
        let mut r = Region::new("r", bytes, MemPolicy::FirstTouch, 2 << 20, node_bytes.len());
        r.node_bytes = node_bytes;
        r
    }

    /// A process with `regions`, at a memory version of its own (the memo remembers a
    /// spread per pid and version).
    fn process(regions: &[Region]) -> Process {
        use std::sync::atomic::{AtomicU64, Ordering};
        static VERSION: AtomicU64 = AtomicU64::new(1);
        let p = Process {
            pid: 0,
            program: 0,
            regions: regions.to_vec(),
            threads_alive: 0,
            threads: Vec::new(),
            mem_version: VERSION.fetch_add(1, Ordering::Relaxed),
            main_node_memo: std::cell::Cell::new(None),
            latency_memo: std::cell::Cell::new(None),
            touched: 0.0,
        };
        assert_eq!(p.spread(), spread_of(regions));
        p
    }

    /// Where the memory of `regions` is, by another count than `Process::spread`.
    fn spread_of(regions: &[Region]) -> Spread {
        let nodes: Vec<usize> = (0..regions[0].node_bytes.len())
            .filter(|&n| regions.iter().any(|r| r.node_bytes[n] != 0))
            .collect();
        match nodes[..] {
            [] => Spread::Nowhere,
            [n] => Spread::One(n),
            _ => Spread::Many,
        }
    }

    #[test]
    fn the_process_spread_gives_the_key_a_scan_gives() {
        let cases = [
            vec![region(8, vec![0, 0, 0]), region(16, vec![0, 0, 0])],
            vec![region(8, vec![0, 4, 0]), region(16, vec![0, 0, 0])],
            vec![region(8, vec![0, 4, 0]), region(16, vec![0, 9, 0])],
            vec![region(8, vec![0, 4, 0]), region(16, vec![0, 0, 3])],
            vec![region(8, vec![1, 4, 0]), region(16, vec![0, 0, 3])],
        ];
        for regions in &cases {
            for toucher in 0..3 {
                let (mut fast, mut scan) = (OpKey::default(), OpKey::default());
                let what = (0, 1, toucher, 5);
                let ok = fast.build(what, regions, spread_of(regions));
                assert_eq!(ok, scan.build(what, regions, Spread::Many));
                if ok {
                    assert_eq!(fast.words, scan.words);
                }
            }
        }
    }

    #[test]
    fn a_region_counts_by_the_node_its_fractions_are_on() {
        assert_eq!(sole_node(&region(8, vec![0, 0, 0]), 2), Some(2));
        assert_eq!(sole_node(&region(8, vec![0, 5, 0]), 2), Some(1));
        assert_eq!(sole_node(&region(8, vec![3, 5, 0]), 2), None);
    }

    #[test]
    fn a_decomposition_is_recalled_only_for_the_same_inputs() {
        let regions = vec![region(8, vec![0, 4]), region(16, vec![0, 0])];
        let op = LinearOp {
            fp: 7,
            coef: vec![1.0, 2.0],
            nz: vec![1],
            ..Default::default()
        };
        let (mut memo, mut out) = (OpMemo::default(), LinearOp::default());
        assert!(memo.key((0, 3, 1, 42), &process(&regions)));
        assert!(!memo.recall(&mut out));
        memo.store(&op);
        assert!(memo.recall(&mut out));
        assert_eq!(out, op);
        // Same fractions (all of the first region on node 1, whatever its amount; nothing
        // of the second, touched from node 1): the same key.
        let more = vec![region(8, vec![0, 6]), region(16, vec![0, 0])];
        assert!(memo.key((0, 3, 1, 42), &process(&more)));
        assert!(memo.recall(&mut out));
        // Another share, node, phase or region size: not recalled.
        for (k, regs) in [
            ((0, 3, 1, 43), &regions),
            ((0, 3, 0, 42), &regions),
            ((0, 2, 1, 42), &regions),
            ((1, 3, 1, 42), &regions),
        ] {
            assert!(memo.key(k, &process(regs)));
            assert!(!memo.recall(&mut out));
        }
        let bigger = vec![region(8, vec![0, 4]), region(32, vec![0, 0])];
        assert!(memo.key((0, 3, 1, 42), &process(&bigger)));
        assert!(!memo.recall(&mut out));
        // Memory over two nodes: no key.
        let spread = vec![region(8, vec![2, 4]), region(16, vec![0, 0])];
        assert!(!memo.key((0, 3, 1, 42), &process(&spread)));
    }

    #[test]
    fn a_key_made_again_for_another_share_is_the_key_built_for_it() {
        let regions = vec![region(8, vec![0, 4]), region(16, vec![0, 0])];
        let proc = process(&regions);
        let mut memo = OpMemo::default();
        assert!(memo.key((2, 3, 1, 42), &proc));
        let words = memo.key_words().to_vec();
        for share in [42, 43, 1 << 40, 0] {
            let mut built = OpMemo::default();
            assert!(built.key((2, 3, 1, share), &proc));
            memo.key_with_share(&words, share);
            assert_eq!(memo.key.words, built.key.words, "share {share}");
            assert_eq!(memo.key.hash, built.key.hash, "share {share}");
        }
        // And it recalls what the built key stored.
        let op = LinearOp {
            fp: 9,
            coef: vec![3.0, 1.0],
            nz: vec![1],
            ..Default::default()
        };
        let mut built = OpMemo::default();
        assert!(built.key((2, 3, 1, 43), &proc));
        built.store(&op);
        built.key_with_share(&words, 43);
        let mut out = LinearOp::default();
        assert!(built.recall(&mut out));
        assert_eq!(out, op);
    }
}
