//! The incremental bookkeeping of the contention refresh (`refresh.rs`): which CPU runs which
//! memory-bound work as the last refresh saw it, which CPUs touch each memory node, how many
//! memory phases run on each last-level cache, and which CPUs changed since.
//!
//! A refresh looks only at the CPUs marked here (a task started or stopped there, its phase
//! ended, its process's memory moved), so its cost follows what changed, not the machine.

use super::TaskId;
use topo::{CpuId, NodeId};

/// What the last refresh saw on one CPU.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Reg {
    pub task: TaskId,
    pub pid: usize,
    /// A memory phase (a demand on the memory nodes); false: a first touch, whose rate
    /// depends on one node's factors but which sends no traffic to the solve.
    pub demand: bool,
    /// The phase has `contended` accesses: its process's shared-line parties count it.
    pub contended: bool,
    /// Fingerprint of the demand's decomposition (`cost::LinearOp::fp`; 0 for a touch).
    pub fp: u64,
    /// The nodes whose factors its rate depends on, ascending.
    pub nz: Vec<NodeId>,
}

/// Whether `r` is a demand on more than one node (it couples their fixed points).
fn spans(r: &Reg) -> bool {
    r.demand && r.nz.len() > 1
}

/// Bitsets of CPUs, one row per key, `words` words a row.
#[derive(Clone, Debug, Default)]
struct CpuSets {
    words: usize,
    bits: Vec<u64>,
}

impl CpuSets {
    fn new(rows: usize, nr_cpus: usize) -> Self {
        let words = nr_cpus.div_ceil(64);
        CpuSets {
            words,
            bits: vec![0; rows * words],
        }
    }

    fn set(&mut self, row: usize, cpu: CpuId, on: bool) {
        let w = &mut self.bits[row * self.words + cpu / 64];
        if on {
            *w |= 1 << (cpu % 64);
        } else {
            *w &= !(1 << (cpu % 64));
        }
    }

    fn row(&self, row: usize) -> &[u64] {
        &self.bits[row * self.words..(row + 1) * self.words]
    }
}

/// The CPUs of the set bits of `words`, ascending, appended to `out`.
fn push_bits(words: &[u64], out: &mut Vec<CpuId>) {
    for (w, &word) in words.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            out.push(w * 64 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
}

#[derive(Clone, Debug, Default)]
pub(super) struct ContentionIndex {
    regs: Vec<Option<Reg>>,
    /// Per node: the CPUs whose registered work depends on its factors.
    users: CpuSets,
    /// Registered memory phases per last-level cache.
    llc_demands: Vec<usize>,
    /// Bit per CPU: registered first touches.
    touching: Vec<u64>,
    /// CPUs marked for the next refresh (bit and list, so marking twice costs nothing).
    dirty_bits: Vec<u64>,
    dirty: Vec<CpuId>,
    /// Union of node rows, scratch of [`ContentionIndex::push_users_of`].
    union: Vec<u64>,
    /// Registered demands that touch more than one node. While there are none, every
    /// component of the node-demand graph is a single node and [`ContentionIndex::close`]
    /// has nothing to add.
    spanning: usize,
}

impl ContentionIndex {
    pub fn new(nr_cpus: usize, nr_nodes: usize, nr_llcs: usize) -> Self {
        ContentionIndex {
            regs: vec![None; nr_cpus],
            users: CpuSets::new(nr_nodes, nr_cpus),
            llc_demands: vec![0; nr_llcs],
            touching: vec![0; nr_cpus.div_ceil(64)],
            dirty_bits: vec![0; nr_cpus.div_ceil(64)],
            dirty: Vec::new(),
            union: Vec::new(),
            spanning: 0,
        }
    }

    /// What the last refresh saw on `cpu`.
    pub fn reg(&self, cpu: CpuId) -> Option<&Reg> {
        self.regs[cpu].as_ref()
    }

    /// Have the next refresh look at `cpu`.
    pub fn mark(&mut self, cpu: CpuId) {
        let (w, b) = (cpu / 64, 1u64 << (cpu % 64));
        if self.dirty_bits[w] & b == 0 {
            self.dirty_bits[w] |= b;
            self.dirty.push(cpu);
        }
    }

    pub fn mark_all(&mut self) {
        for cpu in 0..self.regs.len() {
            self.mark(cpu);
        }
    }

    pub fn has_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// The marked CPUs so far, in marking order (still marked).
    pub fn dirty(&self) -> &[CpuId] {
        &self.dirty
    }

    /// Take the marked CPUs, ascending, into `out`; nothing stays marked.
    pub fn take_dirty(&mut self, out: &mut Vec<CpuId>) {
        out.clear();
        // One CPU (most refreshes: the CPU that switched): no copy of a list, no sort.
        if let &[cpu] = self.dirty.as_slice() {
            out.push(cpu);
            self.dirty.clear();
            self.dirty_bits[cpu / 64] &= !(1 << (cpu % 64));
            return;
        }
        super::refresh::extend_short(out, &self.dirty);
        self.dirty.clear();
        out.sort_unstable();
        for &cpu in out.iter() {
            self.dirty_bits[cpu / 64] &= !(1 << (cpu % 64));
        }
    }

    /// Registered memory phases on last-level cache `llc`.
    pub fn llc_demands(&self, llc: usize) -> usize {
        self.llc_demands[llc]
    }

    /// Count (or uncount) a memory phase on `llc`, ahead of registering it.
    pub fn count_llc(&mut self, llc: usize, was: bool, is: bool) {
        match (was, is) {
            (false, true) => self.llc_demands[llc] += 1,
            (true, false) => self.llc_demands[llc] -= 1,
            _ => {}
        }
    }

    /// Register `new` on `cpu` and return what was there. The LLC count is not touched
    /// ([`ContentionIndex::count_llc`] does it first, since decompositions need it).
    ///
    /// The node rows are written through a slice held in a local (a refresh replaces a
    /// registration nearly every time): through `CpuSets::set`, each store of a word might
    /// have changed the sets' own length and pointer, which were read again after it.
    pub fn replace(&mut self, cpu: CpuId, new: Option<Reg>) -> Option<Reg> {
        let (w, b) = (cpu / 64, 1u64 << (cpu % 64));
        let words = self.users.words;
        let rows = &mut self.users.bits[..];
        if let Some(old) = &self.regs[cpu] {
            for &j in &old.nz {
                rows[j * words + w] &= !b;
            }
            self.spanning -= usize::from(spans(old));
        }
        if let Some(r) = &new {
            for &j in &r.nz {
                rows[j * words + w] |= b;
            }
            self.spanning += usize::from(spans(r));
        }
        if new.as_ref().is_some_and(|r| !r.demand) {
            self.touching[w] |= b;
        } else {
            self.touching[w] &= !b;
        }
        std::mem::replace(&mut self.regs[cpu], new)
    }

    /// The CPUs registered as first touches, ascending, into `out`.
    pub fn touching(&self, out: &mut Vec<CpuId>) {
        out.clear();
        push_bits(&self.touching, out);
    }

    /// [`ContentionIndex::push_users_of`] into an emptied `out`.
    #[cfg(test)]
    pub fn users_of(&mut self, nodes: &[NodeId], out: &mut Vec<CpuId>) {
        out.clear();
        self.push_users_of(nodes, out);
    }

    /// The CPUs whose registered work touches any node in `nodes`, ascending, appended to
    /// `out` (the refresh lists them at the end of its re-rate list).
    pub fn push_users_of(&mut self, nodes: &[NodeId], out: &mut Vec<CpuId>) {
        // One node (the usual solve): its row is the union.
        if let &[j] = nodes {
            push_bits(self.users.row(j), out);
            return;
        }
        self.union.clear();
        self.union.resize(self.users.words, 0);
        for &j in nodes {
            for (u, &w) in self.union.iter_mut().zip(self.users.row(j)) {
                *u |= w;
            }
        }
        push_bits(&self.union, out);
    }

    /// Close `nodes` (flags in `in_set`, one per node) under the registered demands: add every
    /// node a demand touching a node of the set also touches, until none is added. The result
    /// is the connected component(s) of the demand-node graph that hold the starting nodes,
    /// the part of the machine-wide fixed point that can change.
    pub fn close(
        &mut self,
        nodes: &mut Vec<NodeId>,
        in_set: &mut [bool],
        scratch: &mut Vec<CpuId>,
    ) {
        if self.spanning == 0 {
            // No demand leads from one node to another: the set is already closed.
            nodes.sort_unstable();
            return;
        }
        let mut i = 0;
        while i < nodes.len() {
            let j = nodes[i];
            i += 1;
            scratch.clear();
            push_bits(self.users.row(j), scratch);
            for &cpu in scratch.iter() {
                let Some(r) = &self.regs[cpu] else { continue };
                if !r.demand {
                    continue;
                }
                for &k in &r.nz {
                    if !in_set[k] {
                        in_set[k] = true;
                        nodes.push(k);
                    }
                }
            }
        }
        nodes.sort_unstable();
    }

    /// Check the node rows and LLC counts against the registrations, recomputed from scratch;
    /// `llc_of` maps a CPU to its LLC.
    pub fn check(&self, llc_of: impl Fn(CpuId) -> usize) -> Result<(), ContentionMismatch> {
        let mut users = CpuSets::new(
            self.users.bits.len() / self.users.words.max(1),
            self.regs.len(),
        );
        let mut llc = vec![0; self.llc_demands.len()];
        let mut touching = vec![0u64; self.touching.len()];
        for (cpu, r) in self.regs.iter().enumerate() {
            let Some(r) = r else { continue };
            if !r.demand {
                touching[cpu / 64] |= 1 << (cpu % 64);
            }
            for &j in &r.nz {
                users.set(j, cpu, true);
            }
            if r.demand {
                llc[llc_of(cpu)] += 1;
            }
        }
        let spanning = self.regs.iter().flatten().filter(|r| spans(r)).count();
        if spanning != self.spanning {
            return Err(ContentionMismatch::Spanning {
                kept: self.spanning,
                fresh: spanning,
            });
        }
        if touching != self.touching {
            return Err(ContentionMismatch::FirstTouch);
        }
        if users.bits != self.users.bits {
            return Err(ContentionMismatch::NodeUsers);
        }
        if llc != self.llc_demands {
            return Err(ContentionMismatch::LlcCounts {
                kept: self.llc_demands.clone(),
                fresh: llc,
            });
        }
        Ok(())
    }
}

/// Where the incremental contention state differs from the same state rebuilt from scratch
/// (the simulator's invariant checks; a bug, never a user's mistake).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ContentionMismatch {
    #[error("{kept} demands span nodes, the registrations give {fresh}")]
    Spanning { kept: usize, fresh: usize },
    #[error("the first-touch set differs from the registrations")]
    FirstTouch,
    #[error("the node users differ from the registrations")]
    NodeUsers,
    #[error("LLC counts {kept:?}, the registrations give {fresh:?}")]
    LlcCounts { kept: Vec<usize>, fresh: Vec<usize> },
    #[error("cpu {cpu}: runs {runs:?}, registered {registered:?}")]
    Registration {
        cpu: CpuId,
        runs: Option<usize>,
        registered: Option<usize>,
    },
    #[error("task {task}: no decomposition")]
    NoDecomposition { task: usize },
    #[error("task {task}: not in a memory phase")]
    NotInMemoryPhase { task: usize },
    #[error("task {task}: decomposition out of date")]
    StaleDecomposition { task: usize },
    #[error("task {task}: touches node {node}, registered {registered:?}")]
    TouchNode {
        task: usize,
        node: NodeId,
        registered: Vec<NodeId>,
    },
    #[error("task {task}: rate {kept} but {now} now")]
    Rate { task: usize, kept: f64, now: f64 },
    #[error("node {node}: factor {kept}, the full solve gives {fresh}")]
    Factor { node: NodeId, kept: f64, fresh: f64 },
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reg(task: TaskId, demand: bool, nz: Vec<NodeId>) -> Reg {
        Reg {
            task,
            pid: task,
            demand,
            contended: false,
            fp: task as u64,
            nz,
        }
    }

    proptest! {
        /// After any sequence of starts and stops, the incremental rows and counts equal a
        /// recomputation from the registrations, and `users_of` and `close` equal their
        /// definitions.
        #[test]
        fn incremental_sets_equal_a_recount(
            ops in proptest::collection::vec(
                (0usize..130, any::<bool>(), any::<bool>(), proptest::collection::btree_set(0usize..6, 0..4)),
                1..200,
            )
        ) {
            let (nr_cpus, nr_nodes) = (130, 6);
            let llc_of = |c: CpuId| c / 8;
            let mut ix = ContentionIndex::new(nr_cpus, nr_nodes, nr_cpus.div_ceil(8));
            let mut model: Vec<Option<Reg>> = vec![None; nr_cpus];
            for (i, (cpu, start, demand, nodes)) in ops.into_iter().enumerate() {
                let new = start.then(|| reg(i, demand, nodes.into_iter().collect()));
                let was = ix.reg(cpu).is_some_and(|r| r.demand);
                let is = new.as_ref().is_some_and(|r| r.demand);
                ix.count_llc(llc_of(cpu), was, is);
                let old = ix.replace(cpu, new.clone());
                prop_assert_eq!(old, model[cpu].clone());
                model[cpu] = new;
                ix.mark(cpu);
                prop_assert!(ix.check(llc_of).is_ok(), "{:?}", ix.check(llc_of));
            }
            let mut dirty = Vec::new();
            ix.take_dirty(&mut dirty);
            prop_assert!(dirty.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(!ix.has_dirty());
            // users_of: every CPU whose registration touches the nodes, in CPU order.
            let mut got = Vec::new();
            ix.users_of(&[1, 4], &mut got);
            let want: Vec<CpuId> = (0..nr_cpus)
                .filter(|&c| model[c].as_ref().is_some_and(|r| r.nz.iter().any(|&j| j == 1 || j == 4)))
                .collect();
            prop_assert_eq!(got, want);
            // close: the fixed point of "add the nodes of demands touching the set".
            let mut nodes = vec![2];
            let mut in_set = vec![false; nr_nodes];
            in_set[2] = true;
            ix.close(&mut nodes, &mut in_set, &mut Vec::new());
            let mut want = vec![false; nr_nodes];
            want[2] = true;
            loop {
                let mut grew = false;
                for r in model.iter().flatten().filter(|r| r.demand) {
                    if r.nz.iter().any(|&j| want[j]) {
                        for &k in &r.nz {
                            grew |= !want[k];
                            want[k] = true;
                        }
                    }
                }
                if !grew {
                    break;
                }
            }
            prop_assert_eq!(in_set, want.clone());
            let want_nodes: Vec<NodeId> = (0..nr_nodes).filter(|&j| want[j]).collect();
            prop_assert_eq!(nodes, want_nodes);
        }
    }
}
