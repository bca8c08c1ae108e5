//! A model of numad, Red Hat's user-level NUMA daemon (numad.c, version 20150602), so users
//! can compare the homenode policy with the tool they know.
//!
//! numad binds a whole process to the fewest nodes that hold it, then migrates all of its
//! memory there in one go. Its cycle, as modelled here (`docs/PLACEMENT.md` has the details
//! and what is left out):
//!
//! - It wakes every `max_interval_s` (15 s), or `min_interval_s` (5 s) after a cycle that
//!   bound a process; the policy is called every daemon interval and does nothing in between.
//! - It tracks processes above `min_rss_mib` (300 MiB); a process's CPU use is the largest of
//!   its last `cpu_samples` (8) samples, one per cycle, and a process seen for the first time
//!   has no sample yet. Candidates use more than `min_cpu` (0.5 CPU) and more than
//!   `min_rss_mib`.
//! - Candidates are taken unbound first, largest (CPU x memory) first, then bound ones, the
//!   longest-bound first; a process bound less than `reeval_delay_s` (300 s) ago is skipped.
//! - For each it asks for CPU use and memory scaled up by 100 / `target_utilization_pct`
//!   (CPUs capped at its thread count), scores every node from its free memory and idle CPU
//!   (with this process's own use added back), picks the node whose neighbourhood scores best,
//!   and takes nodes nearest first until the request is met: the fewest nodes that fit.
//! - A bound process already on that node set with at least `target_memlocality_pct` of its
//!   memory there is left alone. Otherwise it is bound (`SetHome` with the set's CPUs) and all
//!   memory outside the set is migrated (`MoveMemory`, no rate limit), and the cycle ends: at
//!   most one process per cycle.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use topo::{NodeId, Topology};

use crate::NodePolicy;
use crate::action::Action;
use crate::common::{self, MIB, Machine, Proc, fmt_bytes, fmt_home, fmt_nodes, pct};
use crate::config::{ConfigError, NumadConfig};
use crate::snapshot::Snapshot;

#[derive(Clone, Debug, Default, PartialEq)]
struct NumadProc {
    start_time: u64,
    /// CPU use at the last cycles, newest last.
    samples: VecDeque<f64>,
    /// When this model last bound it.
    bind_ns: Option<u64>,
    /// The nodes this model last bound it to.
    nodes: Vec<NodeId>,
}

/// The numad placement model. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NumadPolicy {
    cfg: NumadConfig,
    next_eval_ns: Option<u64>,
    procs: BTreeMap<u32, NumadProc>,
}

/// numad's weighting of a node's resources for a request: the product of a memory factor and
/// a CPU factor, where the part of the free resource the request needs weighs more than the
/// excess (memory 10 vs 4, CPU 6 vs 1). Memory in MiB, CPU in hundredths of a CPU.
fn magnitude(mem_req: f64, cpu_req: f64, free_mb: f64, free_cpu: f64) -> f64 {
    let (need_mem, excess_mem) = if free_mb > mem_req {
        (mem_req, free_mb - mem_req)
    } else {
        (free_mb, 0.0)
    };
    let (need_cpu, excess_cpu) = if free_cpu > cpu_req {
        (cpu_req, free_cpu - cpu_req)
    } else {
        (free_cpu, 0.0)
    };
    (need_mem * 10.0 + excess_mem * 4.0) * ((need_cpu * 6.0 + excess_cpu) * 100.0)
}

/// CPU capacity and free CPU of each node, SMT siblings beyond the first of a core counted as
/// `htt_percent` of a CPU (numad's hyper-thread discount).
fn cpu_capacity(topo: &Topology, m: &Machine, htt_percent: u32) -> (Vec<f64>, Vec<f64>) {
    let htt = f64::from(htt_percent) / 100.0;
    let mut cap = Vec::with_capacity(m.n);
    let mut free = Vec::with_capacity(m.n);
    for n in 0..m.n {
        let lcpus = m.cpus[n] as f64;
        let cores = topo
            .node_cpus(n)
            .iter()
            .map(|c| topo.cpus[c].core)
            .collect::<BTreeSet<_>>()
            .len() as f64;
        let siblings = (lcpus - cores).max(0.0);
        let c = cores + siblings * htt;
        cap.push(c);
        free.push((m.idle[n] - siblings * (1.0 - htt)).clamp(0.0, c));
    }
    (cap, free)
}

struct Pick {
    nodes: Vec<NodeId>,
    best: NodeId,
}

impl NumadPolicy {
    /// A model with these parameters (checked).
    pub fn new(cfg: NumadConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        Ok(NumadPolicy {
            cfg,
            ..Default::default()
        })
    }

    pub fn config(&self) -> &NumadConfig {
        &self.cfg
    }

    /// When the next cycle runs (ns on the snapshot clock); `None` before the first.
    pub fn next_cycle_ns(&self) -> Option<u64> {
        self.next_eval_ns
    }

    fn cpu_used(&self, pid: u32) -> f64 {
        self.procs
            .get(&pid)
            .map_or(0.0, |s| s.samples.iter().copied().fold(0.0, f64::max))
    }

    /// numad's node choice for `p` requesting `cpu_req` CPUs and `mem_req` MiB; `None` when
    /// it is already where it should be.
    #[allow(clippy::too_many_arguments)]
    fn pick(
        &self,
        topo: &Topology,
        m: &Machine,
        cap: &[f64],
        free_cpu0: &[f64],
        p: &Proc,
        bound_to: &[NodeId],
        cpu_req: f64,
        mem_req: f64,
        assume_enough: bool,
    ) -> Option<Pick> {
        let cfg = &self.cfg;
        let allowed = p.allowed_nodes();
        if allowed.is_empty() || p.rss == 0 {
            return None;
        }
        let mib = MIB as f64;
        let own: Vec<f64> = p.bytes.iter().map(|&b| b as f64 / mib).collect();
        let rss = p.rss as f64 / mib;
        let cpu_used = self.cpu_used(p.pid);
        let total_mb: Vec<f64> = m.mem.iter().map(|&b| b as f64 / mib).collect();
        let mut free_mb: Vec<f64> = m.free.iter().map(|&b| b as f64 / mib).collect();
        let mut free_cpu = free_cpu0.to_vec();
        let bound = !bound_to.is_empty();
        if bound {
            let avg = (cpu_used + bound_to.iter().map(|&h| free_cpu0[h]).sum::<f64>())
                / bound_to.len() as f64;
            for n in 0..m.n {
                free_mb[n] += own[n] * 5.0 / 4.0;
                if bound_to.contains(&n) {
                    free_cpu[n] = avg;
                }
            }
        } else {
            for n in 0..m.n {
                free_mb[n] += own[n] * 17.0 / 16.0;
                free_cpu[n] += cpu_used * own[n] / rss;
            }
        }
        let sum_free_cpu: f64 = allowed.iter().map(|&n| free_cpu[n]).sum();
        for n in 0..m.n {
            free_cpu[n] = free_cpu[n].min(cap[n]).max(0.01);
            free_mb[n] = free_mb[n].min(total_mb[n]);
        }
        let mag: Vec<f64> = (0..m.n)
            .map(|n| magnitude(mem_req, cpu_req, free_mb[n], free_cpu[n]))
            .collect();
        let assume = assume_enough || cpu_req > sum_free_cpu;
        let cap_ref = allowed
            .iter()
            .map(|&n| cap[n])
            .fold(0.0, f64::max)
            .max(0.01);
        let mb_ref = allowed
            .iter()
            .map(|&n| total_mb[n])
            .fold(0.0, f64::max)
            .max(1.0);
        let util = f64::from(cfg.target_utilization_pct);
        let flex = if util < 100.0 {
            (100.0 - util) * cap_ref / 200.0
        } else {
            0.0
        };
        let min_req = ((mem_req / mb_ref).ceil())
            .max(((cpu_req - flex) / cap_ref).ceil())
            .clamp(0.0, allowed.len() as f64) as usize;
        let dist = |a: NodeId, b: NodeId| f64::from(topo.distance(a, b).max(1));
        let order_from = |i: NodeId| {
            let mut o = allowed.clone();
            o.sort_by(|&a, &b| {
                topo.distance(i, a)
                    .cmp(&topo.distance(i, b))
                    .then(mag[b].total_cmp(&mag[a]))
                    .then(a.cmp(&b))
            });
            o
        };
        let mut best = allowed[0];
        let mut best_tot = f64::NEG_INFINITY;
        for &i in &allowed {
            let tot: f64 = order_from(i)
                .iter()
                .take(min_req)
                .map(|&x| mag[x] / (dist(i, x) * dist(i, x)))
                .sum();
            if tot > best_tot {
                best = i;
                best_tot = tot;
            }
        }
        let margin = cfg.mem_margin_mib as f64;
        let (mut mb, mut cpus, mut req) = (mem_req, cpu_req, min_req);
        let mut nodes = Vec::new();
        for x in order_from(best) {
            if !(req > 0 || mb > 0.0 || (cpus > flex && !assume)) {
                break;
            }
            nodes.push(x);
            req = req.saturating_sub(1);
            if free_mb[x] >= mb + margin {
                mb = 0.0;
            } else {
                mb -= (free_mb[x] - margin).max(0.0);
            }
            if free_cpu[x] >= cpus {
                cpus = 0.0;
            } else {
                cpus -= free_cpu[x];
            }
        }
        if nodes.is_empty() {
            return None;
        }
        let nonlocal: u64 = (0..m.n)
            .filter(|n| !nodes.contains(n))
            .map(|n| p.bytes[n])
            .sum();
        let same: BTreeSet<NodeId> = nodes.iter().copied().collect();
        let was: BTreeSet<NodeId> = bound_to.iter().copied().collect();
        let disp_pct = nonlocal as f64 * 100.0 / p.rss as f64;
        if bound && same == was && disp_pct <= f64::from(100 - cfg.target_memlocality_pct.min(100))
        {
            return None;
        }
        Some(Pick { nodes, best })
    }
}

impl NodePolicy for NumadPolicy {
    fn name(&self) -> &'static str {
        "numad"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Vec<Action> {
        let now = snap.now_ns;
        if self.next_eval_ns.is_some_and(|t| now < t) {
            return Vec::new();
        }
        let cfg = self.cfg.clone();
        let topo = snap.topo;
        let m = Machine::new(snap);
        let procs = common::processes(snap, 0.5);
        let min_rss = cfg.min_rss_mib.saturating_mul(MIB);

        // Update the table: processes above the memory threshold, one CPU sample per cycle.
        let tracked: BTreeMap<u32, u64> = procs
            .iter()
            .filter(|p| !p.leave_alone && p.rss > min_rss)
            .map(|p| (p.pid, p.start_time))
            .collect();
        self.procs
            .retain(|pid, st| tracked.get(pid) == Some(&st.start_time));
        for p in procs.iter().filter(|p| tracked.contains_key(&p.pid)) {
            match self.procs.get_mut(&p.pid) {
                Some(st) => {
                    st.samples.push_back(p.cpu);
                    while st.samples.len() > cfg.cpu_samples as usize {
                        st.samples.pop_front();
                    }
                }
                None => {
                    self.procs.insert(
                        p.pid,
                        NumadProc {
                            start_time: p.start_time,
                            ..Default::default()
                        },
                    );
                }
            }
        }

        let (cap, free_cpu) = cpu_capacity(topo, &m, cfg.htt_percent);
        let mut cands: Vec<&Proc> = procs
            .iter()
            .filter(|p| {
                tracked.contains_key(&p.pid)
                    && self.cpu_used(p.pid) > cfg.min_cpu
                    && p.allowed.iter().any(|&a| a)
            })
            .collect();
        let magn = |p: &Proc| self.cpu_used(p.pid) * (p.rss / MIB) as f64;
        // Where it is bound: the home the mechanism reports, else this model's last binding.
        let bound_to = |p: &Proc| -> Vec<NodeId> {
            if p.home.is_empty() {
                self.procs
                    .get(&p.pid)
                    .map(|s| s.nodes.clone())
                    .unwrap_or_default()
            } else {
                p.home.clone()
            }
        };
        let bind_ns = |p: &Proc| self.procs.get(&p.pid).and_then(|s| s.bind_ns).unwrap_or(0);
        cands.sort_by(|a, b| {
            let (ua, ub) = (bound_to(a).is_empty(), bound_to(b).is_empty());
            ub.cmp(&ua).then_with(|| {
                if ua {
                    magn(b).total_cmp(&magn(a)).then(a.pid.cmp(&b.pid))
                } else {
                    bind_ns(a)
                        .cmp(&bind_ns(b))
                        .then(magn(b).total_cmp(&magn(a)))
                        .then(a.pid.cmp(&b.pid))
                }
            })
        });
        let sum_used: f64 = cands.iter().map(|p| self.cpu_used(p.pid)).sum();
        let assume_enough = sum_used <= cap.iter().sum::<f64>();
        let util = f64::from(cfg.target_utilization_pct);
        let reeval_ns = cfg.reeval_delay_s * 1e9;

        for p in cands {
            let used = self.cpu_used(p.pid);
            let cpu_req = (used * 100.0 / util).min(f64::from(p.threads.max(1)));
            let mem_req = (p.rss as f64 / MIB as f64) * 100.0 / util.min(100.0);
            if let Some(b) = self.procs.get(&p.pid).and_then(|s| s.bind_ns) {
                if (now.saturating_sub(b) as f64) < reeval_ns {
                    continue;
                }
            }
            let bound = bound_to(p);
            let Some(pick) = self.pick(
                topo,
                &m,
                &cap,
                &free_cpu,
                p,
                &bound,
                cpu_req,
                mem_req,
                assume_enough,
            ) else {
                continue;
            };
            let comm = snap.processes[p.idx].comm.as_str();
            let nodes = pick.nodes;
            let local: u64 = nodes.iter().map(|&n| p.bytes[n]).sum();
            let was = if bound.is_empty() {
                String::new()
            } else {
                format!(
                    "re-bind from {} ({} of its memory local); ",
                    fmt_home(&bound),
                    pct(local, p.rss)
                )
            };
            let mut actions = vec![Action::SetHome {
                pid: p.pid,
                start_time: p.start_time,
                cpus: p.cpus_of(topo, &nodes, &snap.processes[p.idx].allowed_cpus),
                reason: format!(
                    "numad: {was}bind pid {} ({comm}) to {}: it asks for {:.1} CPUs and {} ({:.1} CPUs and {} used, at {}% target utilisation); the fewest nodes around node {} that fit",
                    p.pid,
                    fmt_home(&nodes),
                    cpu_req,
                    fmt_bytes((mem_req * MIB as f64) as u64),
                    used,
                    fmt_bytes(p.rss),
                    cfg.target_utilization_pct,
                    pick.best
                ),
                nodes: nodes.clone(),
            }];
            // Migrate everything outside the set: largest source to the set node holding the
            // least of the process, repeatedly (as numad does, one migrate_pages per source).
            let mut own = p.bytes.clone();
            let mut prev_from: Option<NodeId> = None;
            loop {
                let mut dest = nodes[0];
                for &x in &nodes {
                    if own[x] <= own[dest] {
                        dest = x;
                    }
                }
                let mut from: Option<NodeId> = None;
                for x in (0..m.n).filter(|x| !nodes.contains(x)) {
                    if from.is_none_or(|f| own[x] > own[f]) {
                        from = Some(x);
                    }
                }
                let Some(from) = from.filter(|&f| own[f] > 0 && Some(f) != prev_from) else {
                    break;
                };
                actions.push(Action::MoveMemory {
                    pid: p.pid,
                    start_time: p.start_time,
                    from,
                    to: dest,
                    bytes: own[from],
                    reason: format!(
                        "numad: migrate all {} of pid {} ({comm}) on node {from} to node {dest} after binding it to nodes {}",
                        fmt_bytes(own[from]),
                        p.pid,
                        fmt_nodes(&nodes)
                    ),
                });
                own[dest] = own[dest].saturating_add(own[from]);
                own[from] = 0;
                prev_from = Some(from);
            }
            if let Some(st) = self.procs.get_mut(&p.pid) {
                st.bind_ns = Some(now);
                st.nodes = nodes.clone();
            }
            self.next_eval_ns = Some(now.saturating_add((cfg.min_interval_s * 1e9) as u64));
            return actions;
        }
        self.next_eval_ns = Some(now.saturating_add((cfg.max_interval_s * 1e9) as u64));
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{NodeView, ProcessView};

    #[test]
    fn magnitude_weights_needed_over_excess() {
        // 1000 MiB free against a 400 MiB request: 400x10 + 600x4; 2 CPUs free against 1.
        let m = magnitude(400.0, 1.0, 1000.0, 2.0);
        assert!((m - (4000.0 + 2400.0) * ((6.0 + 1.0) * 100.0)).abs() < 1e-6);
        // Short of the request: everything free counts as needed.
        let m = magnitude(400.0, 4.0, 100.0, 1.0);
        assert!((m - 1000.0 * 600.0).abs() < 1e-6);
    }

    #[test]
    fn smt_siblings_count_a_fifth() {
        let t = topo::parse_synthetic("nodes=2,cpus-per-node=8,smt=2").expect("machine");
        let snap = Snapshot {
            topo: &t,
            now_ns: 0,
            interval_ns: 1,
            nodes: NodeView::consistent_with(&t, &[]),
            processes: vec![],
        };
        let m = Machine::new(&snap);
        let (cap, free) = cpu_capacity(&t, &m, 20);
        assert!((cap[0] - 4.8).abs() < 1e-9, "{cap:?}");
        assert!((free[0] - 4.8).abs() < 1e-9, "8 idle minus 4 x 0.8");
    }

    #[test]
    fn new_process_waits_one_cycle_for_a_sample() {
        let t = topo::parse_synthetic("nodes=2,cpus-per-node=4,mem-gib=16").expect("machine");
        let mut p = ProcessView::new(&t, 4);
        p.cpu_use = 2.0;
        p.threads = 2;
        p.node_bytes = vec![1 << 30, 1 << 30];
        p.node_runtime = vec![0.5, 0.5];
        let mk = |now_s: u64| Snapshot {
            topo: &t,
            now_ns: now_s * 1_000_000_000,
            interval_ns: 1_000_000_000,
            nodes: NodeView::consistent_with(&t, std::slice::from_ref(&p)),
            processes: vec![p.clone()],
        };
        let mut n = NumadPolicy::default();
        assert!(n.decide(&mk(0)).is_empty());
        assert_eq!(n.next_cycle_ns(), Some(15_000_000_000));
        let a = n.decide(&mk(15));
        assert_eq!(a.len(), 2, "{a:?}");
    }

    const GIB: u64 = 1 << 30;
    const SEC: u64 = 1_000_000_000;

    /// Four nodes of 4 CPUs and 16 GiB in two sockets: 0-1 and 2-3 at distance 12, 20 across.
    fn two_sockets() -> Topology {
        let mut t = topo::parse_synthetic("nodes=4,cpus-per-node=4,mem-gib=16").expect("machine");
        for a in 0..4 {
            for b in 0..4 {
                t.distance[a][b] = if a == b {
                    10
                } else if a / 2 == b / 2 {
                    12
                } else {
                    20
                };
            }
        }
        t
    }

    /// Runs evenly over all nodes (numad has not bound it yet).
    fn proc(t: &Topology, pid: u32, cpu: f64, threads: u32, bytes: &[u64]) -> ProcessView {
        let mut p = ProcessView::new(t, pid);
        p.cpu_use = cpu;
        p.threads = threads;
        p.node_bytes = bytes.to_vec();
        p.node_runtime = vec![1.0 / t.nr_nodes() as f64; t.nr_nodes()];
        p
    }

    /// The kernel and page cache hold 1 GiB on every node.
    fn snap<'a>(t: &'a Topology, now_s: u64, procs: &[ProcessView]) -> Snapshot<'a> {
        let mut nodes = NodeView::consistent_with(t, procs);
        nodes.iter_mut().for_each(|n| n.free_bytes -= GIB);
        Snapshot {
            topo: t,
            now_ns: now_s * SEC,
            interval_ns: SEC,
            nodes,
            processes: procs.to_vec(),
        }
    }

    /// Binds and migrates as the mechanism would.
    fn apply(procs: &mut [ProcessView], actions: &[Action]) {
        for a in actions {
            let p = procs.iter_mut().find(|p| p.pid == a.pid()).expect("pid");
            match a {
                Action::SetHome { nodes, .. } => {
                    p.home = nodes.clone();
                    p.node_runtime.iter_mut().for_each(|r| *r = 0.0);
                    for &n in nodes {
                        p.node_runtime[n] = 1.0 / nodes.len() as f64;
                    }
                }
                Action::MoveMemory {
                    from, to, bytes, ..
                } => {
                    p.node_bytes[*from] -= bytes;
                    p.node_bytes[*to] += bytes;
                }
                Action::ClearHome { .. } => p.home.clear(),
            }
        }
    }

    fn bound(actions: &[Action]) -> Vec<(u32, Vec<NodeId>)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::SetHome { pid, nodes, .. } => Some((*pid, nodes.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn acts_only_on_its_own_cycle() {
        let t = two_sockets();
        let mut procs = vec![
            proc(&t, 1, 2.0, 2, &[GIB; 4]),
            proc(&t, 2, 1.0, 1, &[GIB / 2; 4]),
        ];
        let mut n = NumadPolicy::default();
        let mut acted = Vec::new();
        for s in 0..60 {
            let a = n.decide(&snap(&t, s, &procs));
            if !a.is_empty() {
                acted.push((s, bound(&a)));
            }
            apply(&mut procs, &a);
        }
        // First sighting at 0 s (no CPU sample yet); cycles at 15 s, then 5 s after a bind,
        // 15 s after a cycle that bound nothing.
        assert_eq!(
            acted,
            vec![(15, vec![(1, vec![0])]), (20, vec![(2, vec![1])])],
            "one process per cycle, the bigger first"
        );
        assert_eq!(
            n.next_cycle_ns(),
            Some(70 * SEC),
            "cycles at 25, 40, 55, 70 s"
        );
    }

    #[test]
    fn binds_the_fewest_fitting_nodes_then_moves_all_memory() {
        let t = two_sockets();
        let mut n = NumadPolicy::default();
        // 3 CPUs (3.5 asked at 85%) and 2 GiB fit one 4-CPU node.
        let small = [proc(&t, 1, 3.0, 4, &[GIB / 2; 4])];
        n.decide(&snap(&t, 0, &small));
        let a = n.decide(&snap(&t, 15, &small));
        let nodes = &bound(&a)[0].1;
        assert_eq!(nodes.len(), 1, "{a:?}");
        let home = nodes[0];
        let moved: Vec<(NodeId, NodeId, u64)> = a
            .iter()
            .filter_map(|a| match a {
                Action::MoveMemory {
                    from, to, bytes, ..
                } => Some((*from, *to, *bytes)),
                _ => None,
            })
            .collect();
        assert_eq!(moved.len(), 3);
        assert!(
            moved
                .iter()
                .all(|&(f, to, b)| f != home && to == home && b == GIB / 2)
        );
        assert!(a[0].reason().starts_with(&format!(
            "numad: bind pid 1 (pid1) to node {home}: it asks for 3.5 CPUs and 2.4 GiB"
        )));
        assert!(
            a[1].reason()
                .starts_with("numad: migrate all 512 MiB of pid 1 (pid1) on node")
        );

        // 6 busy CPUs need two 4-CPU nodes: the nearest pair around its memory.
        let mut n = NumadPolicy::default();
        let big = [proc(&t, 2, 6.0, 8, &[0, GIB, 2 * GIB, 0])];
        n.decide(&snap(&t, 0, &big));
        let a = n.decide(&snap(&t, 15, &big));
        assert_eq!(bound(&a), vec![(2, vec![2, 3])]);
        match &a[0] {
            Action::SetHome { cpus, .. } => assert_eq!(cpus, &t.node_cpus(2).union(t.node_cpus(3))),
            other => panic!("{other:?}"),
        }
        // All of node 1's memory goes to the set node holding the least of it.
        assert!(matches!(&a[1], Action::MoveMemory { from: 1, to: 3, bytes, .. } if *bytes == GIB));
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn thresholds_are_strict() {
        let t = two_sockets();
        let mib = MIB;
        let cases = [
            (0.5, 400 * mib, false),
            (0.51, 400 * mib, true),
            (2.0, 300 * mib, false),
            (2.0, 301 * mib, true),
        ];
        for (cpu, rss, acts) in cases {
            let p = [proc(&t, 1, cpu, 2, &[rss, 0, 0, 0])];
            let mut n = NumadPolicy::default();
            n.decide(&snap(&t, 0, &p));
            let a = n.decide(&snap(&t, 15, &p));
            assert_eq!(!a.is_empty(), acts, "cpu {cpu}, rss {rss}: {a:?}");
        }
    }

    #[test]
    fn local_enough_is_left_alone_and_reevaluation_waits() {
        let t = two_sockets();
        // Bound to node 1 by someone's earlier numad run, 95% local: stays.
        let mut p = proc(&t, 1, 2.0, 2, &[0, 19 * GIB / 10, GIB / 10, 0]);
        p.home = vec![1];
        p.node_runtime = vec![0.0, 1.0, 0.0, 0.0];
        let mut n = NumadPolicy::default();
        n.decide(&snap(&t, 0, &[p.clone()]));
        assert!(n.decide(&snap(&t, 15, &[p.clone()])).is_empty());
        // 80% local: re-bound to node 1 and the rest migrated.
        p.node_bytes = vec![0, 16 * GIB / 10, 4 * GIB / 10, 0];
        let mut n = NumadPolicy::default();
        n.decide(&snap(&t, 0, &[p.clone()]));
        let mut procs = vec![p];
        let a = n.decide(&snap(&t, 15, &procs));
        assert_eq!(bound(&a), vec![(1, vec![1])]);
        assert!(
            a[0].reason()
                .starts_with("numad: re-bind from node 1 (80% of its memory local); bind pid 1"),
            "{}",
            a[0].reason()
        );
        apply(&mut procs, &a);
        // Memory drifts away again: not re-evaluated within 300 s of the bind.
        procs[0].node_bytes = vec![GIB, GIB, 0, 0];
        let mut last = 15;
        for s in 16..400 {
            let a = n.decide(&snap(&t, s, &procs));
            if !a.is_empty() {
                last = s;
                break;
            }
        }
        assert!((315..=330).contains(&last), "re-evaluated at {last} s");
    }

    #[test]
    fn stays_inside_allowed_nodes_and_leaves_alone() {
        let t = two_sockets();
        let mut p = proc(&t, 1, 2.0, 2, &[GIB, 0, 0, 0]);
        p.allowed_nodes = topo::CpuSet::parse_list("2-3").expect("nodes");
        let mut q = proc(&t, 2, 3.0, 3, &[2 * GIB, 0, 0, 0]);
        q.leave_alone = true;
        let mut procs = vec![p, q];
        let mut n = NumadPolicy::default();
        let mut all = Vec::new();
        for s in 0..100 {
            let a = n.decide(&snap(&t, s, &procs));
            apply(&mut procs, &a);
            all.extend(a);
        }
        assert!(!all.is_empty());
        for a in &all {
            assert_eq!(a.pid(), 1);
            match a {
                Action::SetHome { nodes, .. } => assert!(nodes.iter().all(|&n| n >= 2), "{a}"),
                Action::MoveMemory { to, .. } => assert!(*to >= 2),
                Action::ClearHome { .. } => panic!("{a}"),
            }
        }
    }
}
