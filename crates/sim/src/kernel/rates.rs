//! Rates of running tasks: the cost decomposition of each memory-bound task, cache shares,
//! cache-line transfers, and the contention refresh that keeps every rate consistent with
//! the memory traffic of all running tasks (see `cost.rs` for the model).

use super::cost;
use super::task::{OpCache, PhaseWork, TaskState};
use super::{Kernel, TaskId};
use crate::program::Phase;
use std::collections::HashMap;
use topo::CpuId;

/// Per region of a process, per node: its threads running a memory phase that writes the
/// region.
pub(super) type WriterCounts = Vec<Vec<u32>>;

impl Kernel {
    /// Rate of `t`'s current phase at its CPU under the current contention.
    pub(super) fn set_rate(&mut self, t: TaskId) {
        self.set_rate_with(t, true);
    }

    /// [`Kernel::set_rate`]; `ensure` false when the caller has just brought `t`'s cost
    /// decomposition up to date (the contention refresh) and nothing changed since.
    fn set_rate_with(&mut self, t: TaskId, ensure: bool) {
        let task = &self.tasks[t];
        let nspc = self.topo.ns_per_cycle();
        let (rate, user_frac) = match task.work {
            PhaseWork::None => (0.0, 1.0),
            PhaseWork::Cycles { user } => (1.0 / nspc, if user { 1.0 } else { 0.0 }),
            PhaseWork::RecvMsgs { .. } => (1.0 / nspc, 0.0),
            PhaseWork::MemOps => {
                if ensure {
                    self.ensure_op(t, None, None);
                }
                let op = self.tasks[t].op_cache.as_ref().map(|c| &c.op);
                (op.map_or(0.0, |op| 1.0 / op.ns(&self.q).max(1e-9)), 1.0)
            }
            PhaseWork::Touch { .. } => {
                // Per byte: zeroing in the fault (kernel) plus the program's own write (user),
                // both streaming to the node the page lands on (local, by first touch).
                let node = self.node_of(task.cpu);
                let PhaseWork::Touch { region, .. } = task.work else {
                    unreachable!()
                };
                let r = &self.procs[task.pid].regions[region];
                let next = r.groups.iter().position(Option::is_none).unwrap_or(0);
                let to = self.mem.place(&self.topo, r, next, node).unwrap_or(node);
                let q = if to == node {
                    self.q.local[to]
                } else {
                    self.q.remote[to]
                };
                let lat = self.topo.latency_ns(node, to) * q;
                let line = self.topo.cpu_model.line_bytes as f64;
                let per_byte_write = lat / self.topo.cpu_model.mlp.max(1e-3) / line;
                let fault = self.topo.memory.fault_overhead_ns / self.topo.memory.page_bytes as f64;
                let per_byte = 2.0 * per_byte_write + fault;
                (1.0 / per_byte, per_byte_write / per_byte)
            }
        };
        let task = &mut self.tasks[t];
        task.rate = rate;
        task.user_frac = user_frac;
        if matches!(task.work, PhaseWork::MemOps | PhaseWork::Touch { .. }) {
            self.contention_dirty = true;
            let cpu = task.cpu;
            self.mem_cpu_hint[cpu / 64] |= 1 << (cpu % 64);
        }
    }

    /// Whether `cpu` is running memory-bound work (a memory phase or first touch): the tasks
    /// whose rates depend on contention.
    fn runs_memory_work(&self, cpu: CpuId) -> bool {
        self.rqs[cpu].curr.is_some_and(|t| {
            matches!(
                self.tasks[t].work,
                PhaseWork::MemOps | PhaseWork::Touch { .. }
            )
        })
    }

    /// The CPUs running memory-bound work, in CPU order, into `out`. Only CPUs in
    /// `mem_cpu_hint` can qualify (every task gets its rate, and so its bit, when it starts
    /// a phase on a CPU); bits of CPUs that no longer qualify are cleared on the way, so the
    /// walk costs the memory-bound CPUs, not the machine.
    fn collect_mem_cpus(&mut self, out: &mut Vec<CpuId>) {
        out.clear();
        for w in 0..self.mem_cpu_hint.len() {
            let mut bits = self.mem_cpu_hint[w];
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let cpu = w * 64 + b;
                if self.runs_memory_work(cpu) {
                    out.push(cpu);
                } else {
                    self.mem_cpu_hint[w] &= !(1 << b);
                }
            }
        }
        debug_assert_eq!(
            *out,
            (0..self.rqs.len())
                .filter(|&c| self.runs_memory_work(c))
                .collect::<Vec<_>>(),
            "mem_cpu_hint missed a CPU running memory work"
        );
    }

    /// Bring `t`'s cost decomposition up to date with its place, cache share and memory;
    /// returns whether it changed. `sharers` (memory-bound tasks running on its LLC) and
    /// `writers` (its process's [`Kernel::writer_counts`]) are passed when the caller has
    /// them: the contention refresh counts them once for all running tasks.
    pub(super) fn ensure_op(
        &mut self,
        t: TaskId,
        sharers: Option<usize>,
        writers: Option<&WriterCounts>,
    ) -> bool {
        let task = &self.tasks[t];
        let Phase::Memory { op, .. } = &self.workload.programs[task.program].phases[task.pc] else {
            return false;
        };
        let node = self.node_of(task.cpu);
        let share = match sharers {
            Some(k) => self.topo.cpu_model.llc_bytes as f64 / k.max(1) as f64,
            None => self.cache_share(task.cpu),
        };
        let version = self.procs[task.pid].mem_version;
        let contended = op.accesses.iter().any(|a| a.contended > 0.0);
        if !contended
            && task.op_cache.as_ref().is_some_and(|c| {
                c.pc == task.pc
                    && c.node == node
                    && c.share_bits == share.to_bits()
                    && c.mem_version == version
            })
        {
            return false;
        }
        let xfer = if contended {
            let own;
            let w = match writers {
                Some(w) => w,
                None => {
                    own = self.writer_counts(task.pid);
                    &own
                }
            };
            self.xfer_costs(t, op, w)
        } else {
            Vec::new()
        };
        let regions = &self.procs[task.pid].regions;
        let lin = cost::linear_op(&self.topo, op, regions, node, share, &xfer);
        self.tasks[t].op_cache = Some(OpCache {
            pc: task.pc,
            node,
            share_bits: share.to_bits(),
            mem_version: version,
            op: lin,
        });
        true
    }

    /// LLC bytes available to one memory-bound task on `cpu`'s cache.
    pub(super) fn cache_share(&self, cpu: CpuId) -> f64 {
        let sharers = self.llc_cpus[self.topo.cpus[cpu].llc]
            .iter()
            .filter(|&&c| {
                self.rqs[c]
                    .curr
                    .is_some_and(|x| self.tasks[x].work == PhaseWork::MemOps)
            })
            .count()
            .max(1);
        self.topo.cpu_model.llc_bytes as f64 / sharers as f64
    }

    /// Whether `t`'s current phase has accesses that find lines written by other threads.
    fn op_contended(&self, t: TaskId) -> bool {
        let task = &self.tasks[t];
        matches!(
            &self.workload.programs[task.program].phases.get(task.pc),
            Some(Phase::Memory { op, .. }) if op.accesses.iter().any(|a| a.contended > 0.0)
        )
    }

    /// Whether task `o` is running a memory phase that writes `region`.
    fn writes_region(&self, o: TaskId, region: usize) -> bool {
        let other = &self.tasks[o];
        if other.state != TaskState::Running || other.work != PhaseWork::MemOps {
            return false;
        }
        let Phase::Memory { op, .. } = &self.workload.programs[other.program].phases[other.pc]
        else {
            return false;
        };
        op.accesses.iter().any(|x| x.region == region && x.write)
    }

    /// For each region of process `pid`, how many of its threads on each node are running a
    /// memory phase that writes it: the CPUs a contended line of that region bounces between.
    pub(super) fn writer_counts(&self, pid: usize) -> WriterCounts {
        let mut w = self.no_writers(pid);
        for &o in &self.procs[pid].threads {
            self.count_writer(&mut w, o);
        }
        w
    }

    fn no_writers(&self, pid: usize) -> WriterCounts {
        vec![vec![0u32; self.topo.nr_nodes()]; self.procs[pid].regions.len()]
    }

    /// Counts task `o` on its node for each region it is running a memory phase writing.
    fn count_writer(&self, w: &mut WriterCounts, o: TaskId) {
        let node = self.node_of(self.tasks[o].cpu);
        for (r, per_node) in w.iter_mut().enumerate() {
            if self.writes_region(o, r) {
                per_node[node] += 1;
            }
        }
    }

    /// [`Kernel::writer_counts`] of every process with a running contended task, counted
    /// over the running tasks only (`mem_cpus`: the CPUs running memory-bound work), which are
    /// the only writers there can be.
    fn running_writer_counts(&self, mem_cpus: &[CpuId]) -> HashMap<usize, WriterCounts> {
        let running = || {
            mem_cpus
                .iter()
                .filter_map(|&c| self.rqs[c].curr)
                .filter(|&t| self.tasks[t].work == PhaseWork::MemOps)
        };
        let mut out: HashMap<usize, WriterCounts> = HashMap::new();
        for t in running().filter(|&t| self.op_contended(t)) {
            let pid = self.tasks[t].pid;
            out.entry(pid).or_insert_with(|| self.no_writers(pid));
        }
        if out.is_empty() {
            return out;
        }
        for t in running() {
            if let Some(w) = out.get_mut(&self.tasks[t].pid) {
                self.count_writer(w, t);
            }
        }
        out
    }

    /// Cache-line transfer cost per access of `op` for task `t`: mean over the other running
    /// threads of its process that write the same region (`writers`, which may count `t`).
    fn xfer_costs(
        &self,
        t: TaskId,
        op: &crate::program::OpCost,
        writers: &WriterCounts,
    ) -> Vec<f64> {
        let me = self.node_of(self.tasks[t].cpu);
        op.accesses
            .iter()
            .map(|a| {
                let Some(per_node) = writers.get(a.region) else {
                    return 0.0;
                };
                let mut sum = 0.0;
                let mut n = 0u32;
                for (node, &k) in per_node.iter().enumerate() {
                    // `t` itself is not another writer.
                    let k = if node == me && self.writes_region(t, a.region) {
                        k.saturating_sub(1)
                    } else {
                        k
                    };
                    if k > 0 {
                        sum += f64::from(k) * cost::line_transfer_ns(&self.topo, me, node);
                        n += k;
                    }
                }
                if n == 0 { 0.0 } else { sum / f64::from(n) }
            })
            .collect()
    }

    /// Recompute contention and the rates of all running memory-bound tasks.
    pub(crate) fn refresh_contention(&mut self) {
        if !self.contention_dirty {
            return;
        }
        self.contention_dirty = false;
        let mut scratch = std::mem::take(&mut self.refresh_scratch);
        self.collect_mem_cpus(&mut scratch.mem_cpus);
        let mem_cpus = &scratch.mem_cpus;
        for &c in mem_cpus {
            let t = self.rqs[c].curr.unwrap_or_default();
            self.settle(t);
        }
        let op_changed = &mut scratch.op_changed;
        op_changed.clear();
        op_changed.resize(mem_cpus.len(), false);
        // Memory-bound tasks running per LLC, and writer counts per process, counted once
        // for all running tasks.
        let sharers = &mut scratch.sharers;
        sharers.clear();
        sharers.resize(self.llc_cpus.len(), 0);
        for &c in mem_cpus {
            if self.rqs[c]
                .curr
                .is_some_and(|t| self.tasks[t].work == PhaseWork::MemOps)
            {
                sharers[self.topo.cpus[c].llc] += 1;
            }
        }
        let writers = self.running_writer_counts(mem_cpus);
        for (i, &c) in mem_cpus.iter().enumerate() {
            let t = self.rqs[c].curr.unwrap_or_default();
            if self.tasks[t].work == PhaseWork::MemOps {
                let w = writers.get(&self.tasks[t].pid);
                op_changed[i] = self.ensure_op(t, Some(sharers[self.topo.cpus[c].llc]), w);
            }
        }
        let q = {
            let demands: Vec<&cost::LinearOp> = mem_cpus
                .iter()
                .filter_map(|&c| self.rqs[c].curr)
                .filter(|&t| self.tasks[t].work == PhaseWork::MemOps)
                .filter_map(|t| self.tasks[t].op_cache.as_ref().map(|c| &c.op))
                .collect();
            // The same multiset of demands as at the last solve gives the same answer.
            let fp = demands
                .iter()
                .fold(0u64, |acc, d| acc.wrapping_add(d.fingerprint()));
            if fp == self.contention_fp && !demands.is_empty() {
                None
            } else {
                self.contention_fp = fp;
                self.counters.contention_solves += 1;
                let q = &mut scratch.q;
                q.clone_from(&self.q);
                let iterations =
                    cost::solve_contention_into(&self.topo, &demands, q, &mut scratch.solve);
                self.counters.contention_iterations += u64::from(iterations);
                Some(q)
            }
        };
        let q_changed = q.as_ref().is_some_and(|q| **q != self.q);
        if q.is_some() {
            std::mem::swap(&mut self.q, &mut scratch.q);
        }
        // Unchanged factors and an unchanged cost decomposition leave a task's rate as it is.
        for (i, &c) in mem_cpus.iter().enumerate() {
            if q_changed || op_changed[i] {
                let t = self.rqs[c].curr.unwrap_or_default();
                self.set_rate_with(t, false);
                self.post_boundary(c, t);
            }
        }
        self.refresh_scratch = scratch;
        self.contention_dirty = false;
    }
}

/// Buffers of [`Kernel::refresh_contention`], kept between calls so that a refresh does not
/// allocate.
#[derive(Debug, Default)]
pub(super) struct RefreshScratch {
    mem_cpus: Vec<CpuId>,
    op_changed: Vec<bool>,
    sharers: Vec<usize>,
    /// The solve's result before it becomes the kernel's.
    q: cost::Contention,
    solve: cost::SolveBuffers,
}

impl Kernel {
    /// Move up to `max_bytes` of process `pid`'s memory from node `from` to node `to`, page
    /// group by page group, and charge the copy to task `charge` as system time. Returns the
    /// bytes moved (less when `to` fills up or `from` holds less).
    ///
    /// Cost of a page group: its bytes over the copy bandwidth (the smallest of the source
    /// node's interconnect bandwidth, the destination's memory bandwidth and one core's
    /// streaming bandwidth, MLP x line / latency), plus `fault_overhead_ns` per base page for
    /// unmapping and remapping it.
    pub fn migrate_memory(
        &mut self,
        pid: usize,
        from: topo::NodeId,
        to: topo::NodeId,
        max_bytes: u64,
        charge: Option<TaskId>,
    ) -> u64 {
        let mut moved = 0u64;
        let proc = &mut self.procs[pid];
        'regions: for r in &mut proc.regions {
            for g in 0..r.groups.len() {
                if moved >= max_bytes {
                    break 'regions;
                }
                if r.groups[g] == Some(from) {
                    moved += self.mem.migrate(r, g, to);
                }
            }
        }
        if moved == 0 {
            return 0;
        }
        proc.mem_version += 1;
        self.counters.migrated_bytes += moved;
        self.mark_contention_dirty();
        if let Some(t) = charge {
            let cost = self.migration_cost_ns(from, to, moved);
            self.charge_kernel(t, cost);
        }
        moved
    }

    /// Time one CPU takes to migrate `bytes` from `from` to `to`, ns.
    pub fn migration_cost_ns(&self, from: topo::NodeId, to: topo::NodeId, bytes: u64) -> f64 {
        let cpu = &self.topo.cpu_model;
        let core_gbps = cpu.mlp * cpu.line_bytes as f64 / self.topo.latency_ns(to, from).max(1e-3);
        let gbps = self.topo.nodes[from]
            .remote_bandwidth_gbps
            .min(self.topo.nodes[to].bandwidth_gbps)
            .min(core_gbps);
        let pages = bytes.div_ceil(self.topo.memory.page_bytes) as f64;
        bytes as f64 / gbps + pages * self.topo.memory.fault_overhead_ns
    }

    /// Charge `ns` of kernel work to task `t`, to run before its own work resumes.
    pub fn charge_kernel(&mut self, t: TaskId, ns: f64) {
        let running = self.tasks[t].state == TaskState::Running;
        if running {
            self.settle(t);
        }
        self.tasks[t].kernel_ns += ns.max(0.0);
        if running {
            let cpu = self.tasks[t].cpu;
            self.post_boundary(cpu, t);
        }
    }
}
