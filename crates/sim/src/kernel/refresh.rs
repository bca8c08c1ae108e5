//! The contention refresh: after tasks start or stop memory phases, the memory nodes whose
//! traffic changed are solved again ([`cost::solve_nodes_into`], through the solve memo), and
//! every task whose rate depends on them gets its new rate.

use super::contention::{self, ContentionMismatch};
use super::cost;
use super::shared_lines::SharedLines;
use super::solve_memo;
use super::task::PhaseWork;
use super::{Kernel, TaskId};
use crate::program::Phase;
use std::collections::HashMap;
use topo::CpuId;

/// Solves whose nodes have more users than this skip the solve memo (`solve_memo`): a
/// component that large is a good part of the machine, coupled by tasks whose memory spans
/// nodes, and its running demands seldom come back as they were (counted with a throw-away
/// build on numa_test with 8 tasks per CPU at 1024 CPUs, `linux`: 235 of 97,966 solves of
/// more than one node recalled, with 880 demands a solve), while building and storing its
/// key reads and copies every demand's. The memo is exact either way; only the speed differs.
const MEMO_MAX_USERS: usize = 256;

impl Kernel {
    /// Recompute contention where it changed, and the rates of the memory-bound tasks whose
    /// inputs changed.
    ///
    /// Incremental and exact: only the CPUs marked since the last refresh are looked at
    /// (widened to the threads that share lines with a changed one and to the LLCs whose
    /// count of memory phases changed); the fixed point is solved on the memory nodes whose
    /// demands changed, closed under the demands that touch them; and a task is re-rated
    /// when its decomposition changed or a factor it depends on moved. Every other task's
    /// rate is already the one a full refresh would give it (docs/model/performance.md).
    #[inline]
    pub(crate) fn refresh_contention(&mut self) {
        // Tested here, in the caller: most events change no memory-bound work, and the
        // refresh itself opens a large stack frame (saved registers and scratch) before any
        // test it makes.
        if self.contention_dirty {
            self.refresh_dirty();
        }
    }

    /// [`Kernel::refresh_contention`] once something is marked.
    #[inline(never)]
    fn refresh_dirty(&mut self) {
        // At most one refresh per `contention_period`: one wanted sooner is put off to the
        // end of the period (an event), so a machine where tasks switch many times per
        // period pays one refresh per period, not per switch.
        if self.now < self.next_refresh_at {
            if !self.refresh_posted {
                self.refresh_posted = true;
                self.events.push(
                    self.next_refresh_at,
                    crate::engine::Event::ContentionRefresh,
                );
            }
            return;
        }
        self.next_refresh_at = self.now.saturating_add(self.contention_period);
        // Boxed: taking it out moves a pointer, not the scratch's few hundred bytes.
        let mut s = self.refresh_scratch.take().unwrap_or_default();
        self.widen_dirty(&mut s.tmp, &mut s.was_tight, &mut s.tight_at);
        self.cx.take_dirty(&mut s.cpus);
        self.contention_dirty = false;
        let writers = self.running_line_sharers(&s.cpus);
        let nr = self.topo.nr_nodes();
        // Every node flagged in `in_set` is one of the last refresh's `nodes` (flag and push go
        // together): clearing those flags clears them all.
        for i in 0..s.nodes.len() {
            let j = s.nodes[i];
            s.in_set[j] = false;
        }
        s.nodes.clear();
        if s.in_set.len() != nr {
            s.in_set.clear();
            s.in_set.resize(nr, false);
        }
        debug_assert!(!s.in_set.contains(&true));
        s.rerate.clear();
        for i in 0..s.cpus.len() {
            let c = s.cpus[i];
            self.reregister(c, writers.as_ref(), &mut s);
        }
        self.cx.close(&mut s.nodes, &mut s.in_set, &mut s.tmp);
        // Two ascending runs: the CPUs whose own registration changed (marked order), then
        // the users of the factors that moved (bitset order).
        let split = s.rerate.len();
        self.solve_changed(&mut s);
        merge_runs(&mut s.rerate, split, &mut s.merged);
        for i in 0..s.rerate.len() {
            let c = s.rerate[i];
            let t = self.rqs[c].curr.expect("a registered CPU runs its task");
            // Most users of a node whose factors moved were settled at this instant already
            // (wake-ups switch several CPUs at one instant: 619 k of 896 k re-rates under
            // `node-affine-dynamic` N=16); `settle` would return at once, after its call.
            if self.now > self.tasks[t].last_settle {
                self.settle(t);
            }
            // A memory phase (nearly every re-rate) rated here, as `set_rate_with` rates it
            // after the refresh brought its decomposition up to date, without its call.
            let task = &mut self.tasks[t];
            if task.work == PhaseWork::MemOps {
                let op = task.op_cache.as_ref().map(|c| &c.op);
                task.rate = op.map_or(0.0, |op| 1.0 / op.ns(&self.q).max(1e-9));
                task.user_frac = 1.0;
            } else {
                self.set_rate_with(t, false);
            }
            self.post_boundary(c, t);
        }
        self.refresh_scratch = Some(s);
        // Settling a first touch can place a page group and so mark its process's threads
        // for the next refresh.
        self.contention_dirty = self.cx.has_dirty();
    }

    /// Add to the marked CPUs the ones whose decomposition a marked one can change: the
    /// running threads of a process whose shared-line parties change, and the memory-bound
    /// CPUs of an LLC whose count of memory phases changes (their cache share). Counts the
    /// LLCs' memory phases anew on the way.
    fn widen_dirty(
        &mut self,
        tmp: &mut Vec<CpuId>,
        was_tight: &mut bool,
        tight_at: &mut Option<(u64, bool)>,
    ) {
        self.recheck_touches(tmp, was_tight, tight_at);
        // Without contended accesses in the workload no registration or phase is contended:
        // no process to widen to.
        if self.workload_contended {
            tmp.clear();
            extend_short(tmp, self.cx.dirty());
            let mut pids: Vec<usize> = Vec::new();
            for &c in tmp.iter() {
                if let Some(r) = self.cx.reg(c).filter(|r| r.contended) {
                    pids.push(r.pid);
                }
                if let Some(t) = self.rqs[c].curr {
                    if self.tasks[t].work == PhaseWork::MemOps && self.op_contended(t) {
                        pids.push(self.tasks[t].pid);
                    }
                }
            }
            pids.sort_unstable();
            pids.dedup();
            for pid in pids {
                self.mark_proc_dirty(pid);
            }
        }
        // The CPUs marked before this loop, read in place: marking only appends, so the
        // first ones stay where they are (no copy of the list).
        for i in 0..self.cx.dirty().len() {
            let c = self.cx.dirty()[i];
            let was = self.cx.reg(c).is_some_and(|r| r.demand);
            let is = self.runs_mem_phase(c);
            if was == is {
                continue;
            }
            let llc = self.cache_of[c];
            self.cx.count_llc(llc, was, is);
            // `c` itself is marked already (azusa16 has one CPU per LLC: nothing else).
            for i in 0..self.llc_cpus[llc].len() {
                let o = self.llc_cpus[llc][i];
                if o != c && self.runs_mem_phase(o) {
                    self.cx.mark(o);
                }
            }
        }
    }

    /// Mark the first touches whose next page group would now land on another node than the
    /// one they were rated for. While every node has room for a page group, a group lands
    /// where its own process's policy and memory say (a change there marks the process), so
    /// the registered touches are looked at only while some node is short of room, or was at
    /// the last refresh. Whether some node is short is kept with the memory's version (bumped
    /// by every change of a node's use), most refreshes finding it unchanged.
    fn recheck_touches(
        &mut self,
        tmp: &mut Vec<CpuId>,
        was_tight: &mut bool,
        tight_at: &mut Option<(u64, bool)>,
    ) {
        let version = self.mem.version();
        let tight = match *tight_at {
            Some((v, tight)) if v == version => tight,
            _ => {
                let group = self.params.page_group_bytes;
                let tight = (0..self.topo.nr_nodes())
                    .any(|n| self.mem.used[n].saturating_add(group) > self.mem.capacity[n]);
                *tight_at = Some((version, tight));
                tight
            }
        };
        let look = tight || *was_tight;
        *was_tight = tight;
        if !look {
            return;
        }
        self.cx.touching(tmp);
        for &c in tmp.iter() {
            let moved = self.rqs[c].curr.is_none_or(|t| {
                !matches!(self.tasks[t].work, PhaseWork::Touch { .. })
                    || self
                        .cx
                        .reg(c)
                        .is_none_or(|r| r.nz != [self.touch_rate(t).0])
            });
            if moved {
                self.cx.mark(c);
            }
        }
    }

    /// Whether `cpu` runs a memory phase (a demand on the memory nodes).
    pub(super) fn runs_mem_phase(&self, cpu: CpuId) -> bool {
        self.rqs[cpu]
            .curr
            .is_some_and(|t| self.tasks[t].work == PhaseWork::MemOps)
    }

    /// Register what marked CPU `c` runs now. A demand whose decomposition changed adds the
    /// nodes it touched and touches to the solve; a task whose decomposition changed is
    /// re-rated.
    fn reregister(
        &mut self,
        c: CpuId,
        writers: Option<&HashMap<usize, SharedLines>>,
        s: &mut RefreshScratch,
    ) {
        // The node list reuses the buffer of a registration replaced earlier.
        let mut nz = s.spare_nz.pop().unwrap_or_default();
        nz.clear();
        let new = self.rqs[c].curr.and_then(|t| match self.tasks[t].work {
            PhaseWork::MemOps => {
                let pid = self.tasks[t].pid;
                let k = self.cx.llc_demands(self.cache_of[c]);
                if self.ensure_op(t, Some(k), writers.and_then(|w| w.get(&pid))) {
                    s.rerate.push(c);
                }
                let op = &self.tasks[t].op_cache.as_ref()?.op;
                extend_short(&mut nz, &op.nz);
                Some(contention::Reg {
                    task: t,
                    pid,
                    demand: true,
                    contended: self.op_contended(t),
                    fp: op.fp,
                    nz: std::mem::take(&mut nz),
                })
            }
            PhaseWork::Touch { .. } => {
                nz.push(self.touch_rate(t).0);
                Some(contention::Reg {
                    task: t,
                    pid: self.tasks[t].pid,
                    demand: false,
                    contended: false,
                    fp: 0,
                    nz: std::mem::take(&mut nz),
                })
            }
            _ => None,
        });
        if nz.capacity() > 0 {
            s.spare_nz.push(nz);
        }
        let old = self.cx.replace(c, new);
        let new = self.cx.reg(c);
        // A first touch whose page groups now land elsewhere has a new rate.
        if let Some(touch) = new.filter(|r| !r.demand) {
            if old.as_ref().map(|r| &r.nz) != Some(&touch.nz) {
                s.rerate.push(c);
            }
        }
        if !same_demand(demand_key(old.as_ref()), demand_key(new)) {
            // The demand on the nodes changed: their factors may move.
            if let Some(r) = old.as_ref().filter(|r| r.demand) {
                s.add_nodes(&r.nz);
            }
            if let Some(r) = new.filter(|r| r.demand) {
                s.add_nodes(&r.nz);
            }
        }
        if let Some(old) = old {
            s.spare_nz.push(old.nz);
        }
    }

    /// Solve the fixed point on `s.nodes` (closed under the demands) and add the CPUs that
    /// depend on a factor that moved to `s.rerate`.
    ///
    /// The memo's key is built from the registrations (fingerprint and nodes, the values
    /// their decompositions had when registered, which a change of decomposition re-marks),
    /// so a recalled solve reads neither the decompositions nor a copy of the factors: the
    /// recalled factors are written into the kernel's directly.
    ///
    /// The users of the solved nodes are listed at the end of `s.rerate`, where they stay when
    /// every solved node's factors moved (the usual case): copying them there from a list of
    /// their own cost more than the rest of a recalled solve's bookkeeping here (callgrind).
    fn solve_changed(&mut self, s: &mut RefreshScratch) {
        if s.nodes.is_empty() {
            return;
        }
        let from = s.rerate.len();
        self.cx.push_users_of(&s.nodes, &mut s.rerate);
        // Counted as solves whether solved or recalled (`solve_memo`: the same bits).
        self.counters.contention_solves += 1;
        s.moved.clear();
        let users = s.rerate.len() - from;
        let iterations = if users > MEMO_MAX_USERS || !s.memo.worth_asking() {
            self.solve_anew(s, from, false)
        } else {
            let cx = &self.cx;
            let regs = s.rerate[from..]
                .iter()
                .filter_map(|&c| cx.reg(c).filter(|r| r.demand));
            s.key
                .build(&s.nodes, &self.q, regs.map(|r| (r.fp, r.nz.as_slice())));
            let recalled = s
                .memo
                .recall_moved(&s.key, &s.nodes, &mut self.q, &mut s.moved);
            s.memo.note(recalled.is_some());
            match recalled {
                Some(iterations) => iterations,
                None => self.solve_anew(s, from, true),
            }
        };
        self.counters.contention_iterations += u64::from(iterations);
        if s.moved.len() < s.nodes.len() {
            s.rerate.truncate(from);
            if !s.moved.is_empty() {
                self.cx.push_users_of(&s.moved, &mut s.rerate);
            }
        }
    }

    /// The solve of [`Kernel::solve_changed`] that the memo did not hold or was not asked
    /// for (`s.rerate[from..]`: the CPUs using its nodes): solved from the kernel's factors,
    /// stored in the memo under `s.key` when `store`, and made the kernel's, the nodes whose
    /// factors moved in `s.moved`. Returns its iterations.
    fn solve_anew(&mut self, s: &mut RefreshScratch, from: usize, store: bool) -> u32 {
        let mut demands = recycle(std::mem::take(&mut s.demands));
        for &c in &s.rerate[from..] {
            let Some(r) = self.cx.reg(c).filter(|r| r.demand) else {
                continue;
            };
            let op = &self.tasks[r.task]
                .op_cache
                .as_ref()
                .expect("a registered demand has its decomposition")
                .op;
            debug_assert!(op.fp == r.fp && op.nz == r.nz, "registration out of date");
            demands.push(op);
        }
        s.q.clone_from(&self.q);
        let iterations =
            cost::solve_nodes_into(&self.topo, &demands, &s.nodes, &mut s.q, &mut s.solve);
        if store {
            s.memo.store(&s.key, &s.nodes, &s.q, iterations);
        }
        s.demands = recycle(demands);
        for &j in &s.nodes {
            let same = s.q.local[j].to_bits() == self.q.local[j].to_bits()
                && s.q.remote[j].to_bits() == self.q.remote[j].to_bits();
            if !same {
                s.moved.push(j);
            }
        }
        std::mem::swap(&mut self.q, &mut s.q);
        iterations
    }

    /// Check the incremental contention state against a recomputation from scratch: every
    /// CPU's registration, the node and LLC sets, every memory-bound task's decomposition
    /// and rate, and the factors as the machine-wide fixed point. Tests call it after every
    /// event (through [`Kernel::check_invariants`]); the rebuilt decompositions and the full
    /// solve, which cost the machine, every 8th event only (a stale registration stays stale
    /// until it is marked, so it is still caught).
    pub(super) fn check_contention(&self) -> Result<(), ContentionMismatch> {
        if self.contention_dirty {
            return Ok(());
        }
        let deep = self.events.handled % 8 == 0;
        self.cx.check(|c| self.cache_of[c])?;
        let mut demands = Vec::new();
        for c in 0..self.rqs.len() {
            let reg = self.cx.reg(c);
            let t = self.rqs[c].curr.filter(|&t| {
                matches!(
                    self.tasks[t].work,
                    PhaseWork::MemOps | PhaseWork::Touch { .. }
                )
            });
            let (Some(t), Some(reg)) = (t, reg) else {
                if t.is_some() || reg.is_some() {
                    return Err(ContentionMismatch::Registration {
                        cpu: c,
                        runs: t,
                        registered: reg.map(|r| r.task),
                    });
                }
                continue;
            };
            if reg.task != t {
                return Err(ContentionMismatch::Registration {
                    cpu: c,
                    runs: Some(t),
                    registered: Some(reg.task),
                });
            }
            let rate = if self.tasks[t].work == PhaseWork::MemOps {
                let op = match &self.tasks[t].op_cache {
                    Some(c) if !deep => &c.op,
                    _ => self.fresh_op(t)?,
                };
                if op.fp != reg.fp || op.nz != reg.nz {
                    return Err(ContentionMismatch::StaleDecomposition { task: t });
                }
                if deep {
                    demands.push(op.clone());
                }
                1.0 / op.ns(&self.q).max(1e-9)
            } else {
                let (to, rate, _) = self.touch_rate(t);
                if reg.nz != [to] {
                    return Err(ContentionMismatch::TouchNode {
                        task: t,
                        node: to,
                        registered: reg.nz.to_vec(),
                    });
                }
                rate
            };
            if rate.to_bits() != self.tasks[t].rate.to_bits() {
                return Err(ContentionMismatch::Rate {
                    task: t,
                    kept: self.tasks[t].rate,
                    now: rate,
                });
            }
        }
        if !deep {
            return Ok(());
        }
        let refs: Vec<&cost::LinearOp> = demands.iter().collect();
        let (q, _) = cost::solve_contention(&self.topo, &refs, &self.q);
        for j in 0..self.topo.nr_nodes() {
            for (a, b) in [
                (q.local[j], self.q.local[j]),
                (q.remote[j], self.q.remote[j]),
            ] {
                if (a - b).abs() > 1e-5 * b {
                    return Err(ContentionMismatch::Factor {
                        node: j,
                        kept: b,
                        fresh: a,
                    });
                }
            }
        }
        Ok(())
    }

    /// `t`'s decomposition as a full refresh would build it now; an error if its cached one
    /// differs.
    fn fresh_op(&self, t: TaskId) -> Result<&cost::LinearOp, ContentionMismatch> {
        let task = &self.tasks[t];
        let Some(c) = &task.op_cache else {
            return Err(ContentionMismatch::NoDecomposition { task: t });
        };
        let Phase::Memory { op, .. } = &self.workload.programs[task.program].phases[task.pc] else {
            return Err(ContentionMismatch::NotInMemoryPhase { task: t });
        };
        let node = self.node_of(task.cpu);
        let share = self.cache_share(task.cpu);
        let xfer = if self.op_contended(t) {
            self.xfer_costs(t, op, &self.line_sharers(task.pid, Some(t)))
        } else {
            Vec::new()
        };
        let regions = &self.procs[task.pid].regions;
        let want = cost::linear_op(&self.topo, op, regions, node, share, &xfer);
        if c.pc != task.pc || want.fp != c.op.fp || want.nz != c.op.nz {
            return Err(ContentionMismatch::StaleDecomposition { task: t });
        }
        Ok(&c.op)
    }
}

/// An emptied list of demands with the allocation of `v`, for borrows of another lifetime
/// (the refresh keeps one buffer across calls instead of collecting a new list each solve).
fn recycle<'b>(mut v: Vec<&cost::LinearOp>) -> Vec<&'b cost::LinearOp> {
    v.clear();
    // Collecting a mapped `IntoIter` into a vector of the same layout reuses its allocation.
    v.into_iter().map(|_| unreachable!("emptied")).collect()
}

/// Make `v`, ascending and without repeats in `v[..split]` and in `v[split..]`, the ascending
/// union of the two, as sorting and deduplicating would but in one pass (`buf` is scratch).
/// The re-rate list of a refresh that solved a large component holds most of the machine's
/// CPUs; a sort of it was 4% of `linux` at 1024 CPUs (perf).
fn merge_runs(v: &mut Vec<CpuId>, split: usize, buf: &mut Vec<CpuId>) {
    let (a, b) = v.split_at(split);
    debug_assert!(a.is_sorted_by(|x, y| x < y) && b.is_sorted_by(|x, y| x < y));
    if a.is_empty() || b.is_empty() {
        return;
    }
    buf.clear();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        buf.push(x.min(y));
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    extend_short(buf, &a[i..]);
    extend_short(buf, &b[j..]);
    std::mem::swap(v, buf);
}

/// `v.extend_from_slice(src)` for the refresh's short lists (a few CPUs or nodes): element
/// by element, where `extend_from_slice` calls `memcpy`, whose call costs more than copying
/// one or two words (about 1.5 million calls in a numa_test run under
/// `node-affine-dynamic`, callgrind).
#[inline]
pub(super) fn extend_short(v: &mut Vec<usize>, src: &[usize]) {
    // One element (the usual marked CPU, node of a demand, user of a node): a push alone.
    if let &[x] = src {
        v.push(x);
        return;
    }
    v.reserve(src.len());
    for &x in src {
        v.push(x);
    }
}

/// What identifies a registration's demand on the memory nodes (none for a first touch).
fn demand_key(r: Option<&contention::Reg>) -> Option<(u64, &[topo::NodeId])> {
    r.filter(|r| r.demand).map(|r| (r.fp, r.nz.as_slice()))
}

/// Whether two [`demand_key`]s are equal, compared element by element: the derived
/// comparison of the node lists calls `memcmp`, whose call costs more than the one or two
/// nodes a demand reads.
fn same_demand(a: Option<(u64, &[topo::NodeId])>, b: Option<(u64, &[topo::NodeId])>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some((fa, na)), Some((fb, nb))) => {
            fa == fb && na.len() == nb.len() && na.iter().zip(nb).all(|(x, y)| x == y)
        }
        _ => false,
    }
}

/// Buffers of [`Kernel::refresh_contention`], kept between calls so that a refresh does not
/// allocate.
#[derive(Debug, Default)]
pub(super) struct RefreshScratch {
    /// The marked CPUs, ascending.
    cpus: Vec<CpuId>,
    /// CPUs to re-rate (merged into one ascending list before use), and the merge's buffer.
    rerate: Vec<CpuId>,
    merged: Vec<CpuId>,
    /// Nodes to solve, and a flag per node for membership.
    nodes: Vec<topo::NodeId>,
    in_set: Vec<bool>,
    /// Nodes whose factors moved.
    moved: Vec<topo::NodeId>,
    tmp: Vec<CpuId>,
    /// Some node was short of room for a page group at the last refresh.
    was_tight: bool,
    /// Whether some node is short of room, and the memory version it was found at.
    tight_at: Option<(u64, bool)>,
    /// The solve's result before it becomes the kernel's.
    q: cost::Contention,
    solve: cost::SolveBuffers,
    /// Node lists of replaced registrations, for the next ones (no allocation per switch).
    spare_nz: Vec<Vec<topo::NodeId>>,
    /// The buffer of the solve's list of demands (always empty between solves).
    demands: Vec<&'static cost::LinearOp>,
    /// The inputs of the solve at hand, and the solves of this run by their inputs.
    key: solve_memo::SolveKey,
    memo: solve_memo::SolveMemo,
}

impl RefreshScratch {
    /// Add `nz` to the nodes to solve (each once).
    fn add_nodes(&mut self, nz: &[topo::NodeId]) {
        for &j in nz {
            if !self.in_set[j] {
                self.in_set[j] = true;
                self.nodes.push(j);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::merge_runs;

    /// The merge gives what sorting and deduplicating gives.
    #[test]
    fn merge_runs_is_sort_and_dedup() {
        let cases: [(&[usize], &[usize]); 6] = [
            (&[], &[]),
            (&[3, 7], &[]),
            (&[], &[1, 2]),
            (&[1, 4, 9], &[2, 4, 5, 9, 12]),
            (&[10, 11], &[0, 1, 2]),
            (&[0, 5, 6], &[0, 5, 6]),
        ];
        let mut buf = Vec::new();
        for (a, b) in cases {
            let mut v: Vec<usize> = a.iter().chain(b).copied().collect();
            let mut want = v.clone();
            want.sort_unstable();
            want.dedup();
            merge_runs(&mut v, a.len(), &mut buf);
            assert_eq!(v, want, "{a:?} + {b:?}");
        }
    }
}
