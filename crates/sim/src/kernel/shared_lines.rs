//! Cache lines shared between running threads of a process: which threads reach a region's
//! shared lines, grouped into coherence parties per node, and each party's stall per access
//! ([`cost::line_stalls`]).

use super::cost;
use super::task::{PhaseWork, TaskState};
use super::{Kernel, TaskId};
use crate::program::Phase;
use std::collections::HashMap;
use topo::CpuId;

/// Per region of a process: the running threads whose memory phase reaches the region's shared
/// lines (its `contended` accesses), grouped into coherence parties, and each party's stall
/// per shared-line access.
pub(super) type SharedLines = Vec<LineSharers>;

/// The parties of one region's shared line: `parties[2 * node + writes]`.
#[derive(Clone, Debug, Default)]
pub(super) struct LineSharers {
    /// The region is one cache line ([`cost::line_stalls`]); else it holds many shared lines
    /// ([`cost::scattered_stalls`]).
    one_line: bool,
    parties: Vec<cost::LineParty>,
    /// Sums over a party's members of 1 / interval and of store-buffer cover.
    rate_sum: Vec<f64>,
    cover_sum: Vec<f64>,
    /// [`cost::line_stalls`] of the parties, once all are counted.
    stall_ns: Vec<f64>,
}

impl LineSharers {
    fn new(nr_nodes: usize, one_line: bool) -> Self {
        let parties = (0..2 * nr_nodes)
            .map(|i| cost::LineParty {
                node: i / 2,
                writes: i % 2 == 1,
                members: 0,
                interval_ns: 0.0,
                cover_ns: 0.0,
            })
            .collect();
        LineSharers {
            one_line,
            parties,
            rate_sum: vec![0.0; 2 * nr_nodes],
            cover_sum: vec![0.0; 2 * nr_nodes],
            stall_ns: Vec::new(),
        }
    }

    fn add(&mut self, node: usize, writes: bool, interval_ns: f64, cover_ns: f64) {
        let i = 2 * node + usize::from(writes);
        self.parties[i].members += 1;
        self.rate_sum[i] += 1.0 / interval_ns;
        self.cover_sum[i] += cover_ns;
    }

    fn contains(&self, node: usize, writes: bool) -> bool {
        self.parties[2 * node + usize::from(writes)].members > 0
    }

    /// Each party's mean interval (harmonic) and cover, then the stalls.
    fn finish(&mut self, topo: &topo::Topology) {
        for (i, p) in self.parties.iter_mut().enumerate() {
            if p.members > 0 {
                let n = f64::from(p.members);
                p.interval_ns = n / self.rate_sum[i];
                p.cover_ns = self.cover_sum[i] / n;
            }
        }
        self.stall_ns = if !self.parties.iter().any(|p| p.members > 0) {
            vec![0.0; self.parties.len()]
        } else if self.one_line {
            cost::line_stalls(topo, &self.parties)
        } else {
            cost::scattered_stalls(topo, &self.parties)
        };
    }

    fn stall(&self, node: usize, writes: bool) -> f64 {
        self.stall_ns
            .get(2 * node + usize::from(writes))
            .copied()
            .unwrap_or(0.0)
    }
}

/// How one task reaches the shared line of a region with `contended` accesses.
struct LineUse {
    region: usize,
    writes: bool,
    /// Free-running interval between its accesses to the line, ns.
    interval_ns: f64,
    /// How long its store buffer lets it run on while it waits for ownership, ns: 0 when it
    /// also reads the line (an update: the load waits for the line whatever the buffer holds).
    cover_ns: f64,
}

impl Kernel {
    /// Whether `t`'s current phase has accesses that find lines written by other threads.
    pub(super) fn op_contended(&self, t: TaskId) -> bool {
        if !self.workload_contended {
            return false;
        }
        let task = &self.tasks[t];
        matches!(
            &self.workload.programs[task.program].phases.get(task.pc),
            Some(Phase::Memory { op, .. }) if op.accesses.iter().any(|a| a.contended > 0.0)
        )
    }

    /// How running task `o` reaches shared lines now (empty unless it runs a memory phase
    /// with `contended` accesses).
    fn line_use(&self, o: TaskId) -> Vec<LineUse> {
        let task = &self.tasks[o];
        if task.work != PhaseWork::MemOps {
            return Vec::new();
        }
        let Some(Phase::Memory { op, .. }) =
            self.workload.programs[task.program].phases.get(task.pc)
        else {
            return Vec::new();
        };
        if !op.accesses.iter().any(|a| a.contended > 0.0) {
            return Vec::new();
        }
        let regions = &self.procs[task.pid].regions;
        let op_ns = cost::free_op_ns(&self.topo, op, regions, self.node_of(task.cpu)).max(1e-3);
        let stores = op.accesses.iter().filter(|a| a.write).count();
        let cover_ns = if stores > 0 {
            f64::from(self.topo.cpu_model.store_buffer) * op_ns / stores as f64
        } else {
            0.0
        };
        // Per region: writes it, reads it, line accesses per operation.
        let mut per: Vec<(usize, bool, bool, f64)> = Vec::new();
        for a in op.accesses.iter().filter(|a| a.contended > 0.0) {
            match per.iter_mut().find(|(r, ..)| *r == a.region) {
                Some((_, writes, reads, k)) => {
                    *writes |= a.write;
                    *reads |= !a.write;
                    *k += a.contended;
                }
                None => per.push((a.region, a.write, !a.write, a.contended)),
            }
        }
        per.into_iter()
            .map(|(region, writes, reads, k)| LineUse {
                region,
                writes,
                interval_ns: op_ns / k,
                cover_ns: if writes && !reads { cover_ns } else { 0.0 },
            })
            .collect()
    }

    /// The sharers of every region of process `pid` among its running threads (and `also`,
    /// counted even if it is not running yet): the CPUs its shared lines move between.
    pub(super) fn line_sharers(&self, pid: usize, also: Option<TaskId>) -> SharedLines {
        let mut w = self.no_writers(pid);
        let mut counted = false;
        for &o in &self.procs[pid].threads {
            if self.tasks[o].state == TaskState::Running {
                self.count_writer(&mut w, o);
                counted |= Some(o) == also;
            }
        }
        if let Some(t) = also.filter(|_| !counted) {
            self.count_writer(&mut w, t);
        }
        for r in &mut w {
            r.finish(&self.topo);
        }
        w
    }

    fn no_writers(&self, pid: usize) -> SharedLines {
        let line = self.topo.cpu_model.line_bytes;
        self.procs[pid]
            .regions
            .iter()
            .map(|r| LineSharers::new(self.topo.nr_nodes(), r.bytes <= line))
            .collect()
    }

    /// Counts task `o` in the parties of every region whose shared lines it reaches now.
    fn count_writer(&self, w: &mut SharedLines, o: TaskId) {
        let node = self.node_of(self.tasks[o].cpu);
        for u in self.line_use(o) {
            if let Some(s) = w.get_mut(u.region) {
                s.add(node, u.writes, u.interval_ns, u.cover_ns);
            }
        }
    }

    /// [`Kernel::line_sharers`] of every process with a running contended task, counted
    /// over the running tasks only (`mem_cpus`: the CPUs running memory-bound work), which are
    /// the only sharers there can be.
    /// `None` when none is (a workload without contended accesses, the usual case, skips
    /// building an empty map at every refresh).
    pub(super) fn running_line_sharers(
        &self,
        mem_cpus: &[CpuId],
    ) -> Option<HashMap<usize, SharedLines>> {
        if !self.workload_contended {
            return None;
        }
        let running = || {
            mem_cpus
                .iter()
                .filter_map(|&c| self.rqs[c].curr)
                .filter(|&t| self.tasks[t].work == PhaseWork::MemOps)
        };
        let mut out: HashMap<usize, SharedLines> = HashMap::new();
        for t in running().filter(|&t| self.op_contended(t)) {
            let pid = self.tasks[t].pid;
            out.entry(pid).or_insert_with(|| self.no_writers(pid));
        }
        if out.is_empty() {
            return None;
        }
        for t in running() {
            if let Some(w) = out.get_mut(&self.tasks[t].pid) {
                self.count_writer(w, t);
            }
        }
        for w in out.values_mut() {
            for r in w.iter_mut() {
                r.finish(&self.topo);
            }
        }
        Some(out)
    }

    /// Coherence stall per shared-line access of each access of `op` for task `t`: the
    /// [`cost::line_stalls`] of its party (its node, whether it writes the line) among the
    /// sharers `writers`, which count `t` (0 for accesses to private data).
    pub(super) fn xfer_costs(
        &self,
        t: TaskId,
        op: &crate::program::OpCost,
        writers: &SharedLines,
    ) -> Vec<f64> {
        let me = self.node_of(self.tasks[t].cpu);
        op.accesses
            .iter()
            .map(|a| {
                if a.contended <= 0.0 {
                    return 0.0;
                }
                let Some(s) = writers.get(a.region) else {
                    return 0.0;
                };
                let writes = op
                    .accesses
                    .iter()
                    .any(|b| b.region == a.region && b.contended > 0.0 && b.write);
                debug_assert!(s.contains(me, writes), "task {t} not among the sharers");
                s.stall(me, writes)
            })
            .collect()
    }
}
