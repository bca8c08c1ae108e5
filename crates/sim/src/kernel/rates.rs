//! Rates of running tasks: the cost decomposition of each memory-bound task, cache shares,
//! cache-line transfers, and the contention refresh that keeps every rate consistent with
//! the memory traffic of all running tasks (see `cost.rs` for the model).

use super::cost;
use super::task::{OpCache, PhaseWork, TaskState};
use super::{Kernel, TaskId};
use crate::program::Phase;
use topo::CpuId;

impl Kernel {
    /// Rate of `t`'s current phase at its CPU under the current contention.
    pub(super) fn set_rate(&mut self, t: TaskId) {
        let task = &self.tasks[t];
        let nspc = self.topo.ns_per_cycle();
        let (rate, user_frac) = match task.work {
            PhaseWork::None => (0.0, 1.0),
            PhaseWork::Cycles { user } => (1.0 / nspc, if user { 1.0 } else { 0.0 }),
            PhaseWork::RecvMsgs { .. } => (1.0 / nspc, 0.0),
            PhaseWork::MemOps => {
                self.ensure_op(t);
                let op = self.tasks[t].op_cache.as_ref().map(|c| &c.op);
                (op.map_or(0.0, |op| 1.0 / op.ns(&self.q).max(1e-9)), 1.0)
            }
            PhaseWork::Touch { .. } => {
                // Per byte: zeroing in the fault (kernel) plus the program's own write (user),
                // both streaming to the node the page lands on (local, by first touch).
                let node = self.node_of(task.cpu);
                let PhaseWork::Touch { region } = task.work else {
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
        }
    }

    /// Bring `t`'s cost decomposition up to date with its place, cache share and memory;
    /// returns whether it changed.
    pub(super) fn ensure_op(&mut self, t: TaskId) -> bool {
        let task = &self.tasks[t];
        let Phase::Memory { op, .. } = &self.workload.programs[task.program].phases[task.pc] else {
            return false;
        };
        let node = self.node_of(task.cpu);
        let share = self.cache_share(task.cpu);
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
        let xfer = self.xfer_costs(t, op);
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

    /// Cache-line transfer cost per access of `op` for task `t`: mean over the other running
    /// threads of its process that write the same region.
    pub(super) fn xfer_costs(&self, t: TaskId, op: &crate::program::OpCost) -> Vec<f64> {
        if op.accesses.iter().all(|a| a.contended == 0.0) {
            return Vec::new();
        }
        let task = &self.tasks[t];
        let me = self.node_of(task.cpu);
        let proc = &self.procs[task.pid];
        op.accesses
            .iter()
            .map(|a| {
                let mut sum = 0.0;
                let mut n = 0usize;
                for &o in &proc.threads {
                    let other = &self.tasks[o];
                    if o == t
                        || other.state != TaskState::Running
                        || other.work != PhaseWork::MemOps
                    {
                        continue;
                    }
                    let Phase::Memory { op: oop, .. } =
                        &self.workload.programs[other.program].phases[other.pc]
                    else {
                        continue;
                    };
                    if oop.accesses.iter().any(|x| x.region == a.region && x.write) {
                        sum += cost::line_transfer_ns(&self.topo, me, self.node_of(other.cpu));
                        n += 1;
                    }
                }
                if n == 0 { 0.0 } else { sum / n as f64 }
            })
            .collect()
    }

    /// Recompute contention and the rates of all running memory-bound tasks.
    pub(crate) fn refresh_contention(&mut self) {
        if !self.contention_dirty {
            return;
        }
        self.contention_dirty = false;
        let mem_cpus: Vec<CpuId> = (0..self.rqs.len())
            .filter(|&c| {
                self.rqs[c].curr.is_some_and(|t| {
                    matches!(
                        self.tasks[t].work,
                        PhaseWork::MemOps | PhaseWork::Touch { .. }
                    )
                })
            })
            .collect();
        for &c in &mem_cpus {
            let t = self.rqs[c].curr.unwrap_or_default();
            self.settle(t);
        }
        let mut op_changed = vec![false; mem_cpus.len()];
        for (i, &c) in mem_cpus.iter().enumerate() {
            let t = self.rqs[c].curr.unwrap_or_default();
            if self.tasks[t].work == PhaseWork::MemOps {
                op_changed[i] = self.ensure_op(t);
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
                let (q, iterations) = cost::solve_contention(&self.topo, &demands, &self.q);
                self.counters.contention_iterations += u64::from(iterations);
                Some(q)
            }
        };
        let q_changed = q.as_ref().is_some_and(|q| *q != self.q);
        if let Some(q) = q {
            self.q = q;
        }
        // Unchanged factors and an unchanged cost decomposition leave a task's rate as it is.
        for (i, &c) in mem_cpus.iter().enumerate() {
            if q_changed || op_changed[i] {
                let t = self.rqs[c].curr.unwrap_or_default();
                self.start_chunk(c, t);
            }
        }
        self.contention_dirty = false;
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
