//! Rates of running tasks: the cost decomposition of each memory-bound task and its cache
//! share ([`cost`] has the model); memory migration and kernel time charged to a task. The
//! cache-line sharers are in `shared_lines.rs`, the contention refresh that keeps every rate
//! consistent with the memory traffic of all running tasks in `refresh.rs`.

use super::cost;
use super::shared_lines::SharedLines;
use super::task::{PhaseWork, TaskState};
use super::{Kernel, TaskId};
use crate::program::Phase;
use topo::CpuId;

impl Kernel {
    pub(super) fn set_rate(&mut self, t: TaskId) {
        self.set_rate_with(t, true);
    }

    /// [`Kernel::set_rate`]; `ensure` false when the caller has just brought `t`'s cost
    /// decomposition up to date (the contention refresh) and nothing changed since.
    pub(super) fn set_rate_with(&mut self, t: TaskId, ensure: bool) {
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
                let (_, rate, user_frac) = self.touch_rate(t);
                (rate, user_frac)
            }
        };
        let task = &mut self.tasks[t];
        task.rate = rate;
        task.user_frac = user_frac;
        // A rate set outside the refresh is a task starting memory-bound work: the refresh
        // must count it (its own re-rates change nothing it has not counted).
        if ensure && matches!(task.work, PhaseWork::MemOps | PhaseWork::Touch { .. }) {
            let cpu = task.cpu;
            self.mark_cpu_dirty(cpu);
        }
    }

    /// A first touch of task `t`: the node its next page group lands on, its rate in bytes
    /// per ns and the user share of its time.
    pub(super) fn touch_rate(&self, t: TaskId) -> (topo::NodeId, f64, f64) {
        let task = &self.tasks[t];
        // Per byte: zeroing in the fault (kernel) plus the program's own write (user),
        // both streaming to the node the page lands on (local, by first touch).
        let node = self.node_of(task.cpu);
        let PhaseWork::Touch { region, .. } = task.work else {
            unreachable!("touch_rate of a task not touching")
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
        // First touches write the pages in order: a stream.
        let per_byte_write = lat / self.topo.cpu_model.stream_mlp().max(1e-3) / line;
        let fault = self.topo.memory.fault_overhead_ns / self.topo.memory.page_bytes as f64;
        let per_byte = 2.0 * per_byte_write + fault;
        (to, 1.0 / per_byte, per_byte_write / per_byte)
    }

    /// Bring `t`'s cost decomposition up to date with its place, cache share and memory;
    /// returns whether it changed. `sharers` (memory-bound tasks running on its LLC) and
    /// `writers` (its process's [`Kernel::line_sharers`]) are passed when the caller has
    /// them: the contention refresh counts them once for all running tasks.
    pub(super) fn ensure_op(
        &mut self,
        t: TaskId,
        sharers: Option<usize>,
        writers: Option<&SharedLines>,
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
        // A workload without contended accesses has none in this phase: no walk.
        let contended = self.workload_contended && op.accesses.iter().any(|a| a.contended > 0.0);
        let key = (task.pc, node, share.to_bits(), version);
        if !contended && task.op_cache.as_ref().is_some_and(|c| c.fits(key)) {
            return false;
        }
        self.rebuild_op(t, key, contended, writers);
        true
    }

    /// The rebuild of [`Kernel::ensure_op`] (out of line: most calls find the decomposition
    /// up to date), for `key` = (phase, node, share bits, memory version); `contended`:
    /// whether the phase has contended accesses, as `ensure_op` found.
    #[inline(never)]
    fn rebuild_op(
        &mut self,
        t: TaskId,
        key: (usize, topo::NodeId, u64, u64),
        contended: bool,
        writers: Option<&SharedLines>,
    ) {
        let wl = self.workload.clone();
        let (program, pid) = (self.tasks[t].program, self.tasks[t].pid);
        let (pc, node, share_bits, mem_version) = key;
        let share = f64::from_bits(share_bits);
        let Phase::Memory { op, .. } = &wl.programs[program].phases[pc] else {
            unreachable!("rebuild_op of a task not in a memory phase")
        };
        let xfer = if contended {
            let own;
            let w = match writers {
                Some(w) => w,
                None => {
                    own = self.line_sharers(pid, Some(t));
                    &own
                }
            };
            self.xfer_costs(t, op, w)
        } else {
            Vec::new()
        };
        // The decomposition being replaced lends its box and buffers to the new one.
        let mut cache = self.tasks[t].op_cache.take().unwrap_or_default();
        let share_alone_changed =
            cache.fits_but_share(pc, node, mem_version) && !cache.memo_key.is_empty();
        let lin = &mut cache.op;
        let proc = &self.procs[pid];
        let regions = &proc.regions;
        // Contended decompositions depend on the other threads (`xfer`): not in the memo. A
        // task whose share alone changed (the number of memory phases on its cache) reuses
        // its last key: the regions it read are as they were at the same `mem_version`.
        // (`memo_key` belongs to the cache's `pc`, `node` and `mem_version`, which change
        // below: whenever it is not made again here it is dropped.)
        let keyed = if contended {
            cache.memo_key.clear();
            false
        } else if share_alone_changed {
            self.op_memo.key_with_share(&cache.memo_key, share_bits);
            true
        } else {
            let keyed = self.op_memo.key((program, pc, node, share_bits), proc);
            cache.memo_key.clear();
            if keyed {
                cache.memo_key.extend_from_slice(self.op_memo.key_words());
            }
            keyed
        };
        if !(keyed && self.op_memo.recall(lin)) {
            let mut frac = std::mem::take(&mut self.frac_scratch);
            let at = cost::Placed {
                regions,
                cpu_node: node,
                cache_share: share,
            };
            cost::linear_op_into(&self.topo, op, &at, &xfer, lin, &mut frac);
            self.frac_scratch = frac;
            if keyed {
                self.op_memo.store(lin);
            }
        }
        cache.pc = pc;
        cache.node = node;
        cache.share_bits = share_bits;
        cache.mem_version = mem_version;
        self.tasks[t].op_cache = Some(cache);
    }

    /// LLC bytes available to one memory-bound task on `cpu`'s cache.
    pub(super) fn cache_share(&self, cpu: CpuId) -> f64 {
        let llc = self.cache_of[cpu];
        let sharers = self.llc_mem_phases(llc, cpu);
        debug_assert_eq!(sharers, self.llc_mem_phases_scanned(llc), "LLC {llc}");
        self.topo.cpu_model.llc_bytes as f64 / sharers.max(1) as f64
    }

    /// The memory phases running on `llc` now, `cpu` one of its CPUs: the count the last
    /// refresh registered, corrected by the CPUs marked since (every change of what a CPU
    /// runs marks it) and by `cpu`, which a task starting a memory phase there marks only
    /// after it is rated. Unmarked CPUs run what was registered, so their part of the count
    /// stands; the marked ones are few, where a scan reads every CPU of the cache (5% of
    /// `linux`'s time at 512 CPUs, perf, with 32 CPUs to a cache).
    fn llc_mem_phases(&self, llc: usize, cpu: CpuId) -> usize {
        let dirty = self.cx.dirty();
        if dirty.len() >= self.llc_cpus[llc].len() {
            return self.llc_mem_phases_scanned(llc);
        }
        let change = |c: CpuId| {
            let was = self.cx.reg(c).is_some_and(|r| r.demand);
            isize::from(self.runs_mem_phase(c)) - isize::from(was)
        };
        let mut n = self.cx.llc_demands(llc) as isize;
        let mut saw_cpu = false;
        for &c in dirty {
            if self.cache_of[c] == llc {
                n += change(c);
                saw_cpu |= c == cpu;
            }
        }
        if !saw_cpu {
            n += change(cpu);
        }
        n.max(0) as usize
    }

    /// [`Kernel::llc_mem_phases`] by looking at every CPU of the cache.
    fn llc_mem_phases_scanned(&self, llc: usize) -> usize {
        self.llc_cpus[llc]
            .iter()
            .filter(|&&c| self.runs_mem_phase(c))
            .count()
    }
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
        self.mark_proc_dirty(pid);
        if let Some(t) = charge {
            let cost = self.migration_cost_ns(from, to, moved);
            self.charge_kernel(t, cost);
        }
        moved
    }

    /// Time one CPU takes to migrate `bytes` from `from` to `to`, ns.
    pub fn migration_cost_ns(&self, from: topo::NodeId, to: topo::NodeId, bytes: u64) -> f64 {
        let cpu = &self.topo.cpu_model;
        // The copy reads and writes pages in order: a stream.
        let core_gbps =
            cpu.stream_mlp() * cpu.line_bytes as f64 / self.topo.latency_ns(to, from).max(1e-3);
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
