//! numad's node choice for one process. It asks for CPU use and memory scaled up by
//! 100 / `target_utilization_pct`; every node gets a magnitude from its free memory and idle
//! CPU (with this process's own use added back, so where it already runs does not count
//! against it); the node whose neighbourhood of the fewest nodes that could hold it scores best
//! (magnitudes divided by squared distance) is the centre, and nodes nearest the centre are
//! taken until the request is met. A bound process already on that set with enough of its
//! memory there is left where it is.

use std::collections::BTreeSet;

use topo::{NodeId, Topology};

use super::NumadPolicy;
use crate::common::{self, MIB, Machine, Proc};

/// numad's weighting of a node's resources for a request: the product of a memory factor and
/// a CPU factor, where the part of the free resource the request needs weighs more than the
/// excess (memory 10 vs 4, CPU 6 vs 1). Memory in MiB, CPU in hundredths of a CPU.
pub(super) fn magnitude(mem_req: f64, cpu_req: f64, free_mb: f64, free_cpu: f64) -> f64 {
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
pub(super) fn cpu_capacity(topo: &Topology, m: &Machine, htt_percent: u32) -> (Vec<f64>, Vec<f64>) {
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

/// What one cycle knows of the machine, the same for every candidate.
pub(super) struct Cycle<'a> {
    pub(super) topo: &'a Topology,
    pub(super) m: &'a Machine,
    /// CPU capacity per node (SMT discounted).
    pub(super) cap: Vec<f64>,
    /// Free CPU per node (SMT discounted).
    pub(super) free_cpu: Vec<f64>,
    /// Whether the candidates together use no more than the machine has.
    pub(super) assume_enough: bool,
}

/// What a process asks for: CPUs and MiB, scaled by the target utilisation.
pub(super) struct Request {
    pub(super) cpu: f64,
    pub(super) mem_mib: f64,
}

/// The nodes chosen for a process, and the centre they were taken around.
pub(super) struct Pick {
    pub(super) nodes: Vec<NodeId>,
    pub(super) best: NodeId,
}

/// Free resources per node for one process, its own use added back.
struct Free {
    mb: Vec<f64>,
    cpu: Vec<f64>,
    /// Free CPU on its allowed nodes, before capping at capacity.
    sum_cpu: f64,
}

/// How many nodes the request needs at least, and the CPU slack the target utilisation gives.
struct Span {
    min_nodes: usize,
    flex: f64,
}

/// `allowed` ordered nearest to `i` first, the larger magnitude first among equally near ones.
fn neighbourhood(topo: &Topology, allowed: &[NodeId], mag: &[f64], i: NodeId) -> Vec<NodeId> {
    common::nearest_first(topo, i, allowed, |a, b| mag[b].total_cmp(&mag[a]))
}

/// The centre: the node whose `min_nodes` nearest nodes have the largest magnitudes, each
/// divided by its squared distance (the first on ties).
fn centre(topo: &Topology, allowed: &[NodeId], mag: &[f64], min_nodes: usize) -> NodeId {
    let dist = |a: NodeId, b: NodeId| f64::from(topo.distance(a, b).max(1));
    let mut best = allowed[0];
    let mut best_tot = f64::NEG_INFINITY;
    for &i in allowed {
        let tot: f64 = neighbourhood(topo, allowed, mag, i)
            .iter()
            .take(min_nodes)
            .map(|&x| mag[x] / (dist(i, x) * dist(i, x)))
            .sum();
        if tot > best_tot {
            best = i;
            best_tot = tot;
        }
    }
    best
}

impl NumadPolicy {
    /// numad's node choice for `p` (bound to `bound_to`, empty when not) asking for `req`;
    /// `None` when it is already where it should be.
    pub(super) fn pick(
        &self,
        c: &Cycle<'_>,
        p: &Proc,
        bound_to: &[NodeId],
        req: &Request,
    ) -> Option<Pick> {
        let allowed = p.allowed_nodes();
        if allowed.is_empty() || p.rss == 0 {
            return None;
        }
        let free = self.free_for(c, p, bound_to, &allowed);
        let mag: Vec<f64> = (0..c.m.n)
            .map(|n| magnitude(req.mem_mib, req.cpu, free.mb[n], free.cpu[n]))
            .collect();
        let assume = c.assume_enough || req.cpu > free.sum_cpu;
        let span = self.span(c, &allowed, req);
        let best = centre(c.topo, &allowed, &mag, span.min_nodes);
        let order = neighbourhood(c.topo, &allowed, &mag, best);
        let nodes = self.take_nodes(order, &free, req, &span, assume);
        if nodes.is_empty() || self.local_enough(c.m, p, bound_to, &nodes) {
            return None;
        }
        Some(Pick { nodes, best })
    }

    /// Free memory and CPU per node with `p`'s own use added back: a bound process gets its
    /// memory back with a quarter more and the average free CPU of its nodes (its own use
    /// included) on each of them; an unbound one its memory with a sixteenth more and its CPU
    /// use where its memory is.
    fn free_for(&self, c: &Cycle<'_>, p: &Proc, bound_to: &[NodeId], allowed: &[NodeId]) -> Free {
        let m = c.m;
        let mib = MIB as f64;
        let own: Vec<f64> = p.bytes.iter().map(|&b| b as f64 / mib).collect();
        let rss = p.rss as f64 / mib;
        let cpu_used = self.cpu_used(p.pid);
        let total_mb: Vec<f64> = m.mem.iter().map(|&b| b as f64 / mib).collect();
        let mut free_mb: Vec<f64> = m.free.iter().map(|&b| b as f64 / mib).collect();
        let mut free_cpu = c.free_cpu.clone();
        if !bound_to.is_empty() {
            let avg = (cpu_used + bound_to.iter().map(|&h| c.free_cpu[h]).sum::<f64>())
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
        let sum_cpu: f64 = allowed.iter().map(|&n| free_cpu[n]).sum();
        for n in 0..m.n {
            free_cpu[n] = free_cpu[n].min(c.cap[n]).max(0.01);
            free_mb[n] = free_mb[n].min(total_mb[n]);
        }
        Free {
            mb: free_mb,
            cpu: free_cpu,
            sum_cpu,
        }
    }

    /// The fewest nodes the request could fit by the largest allowed node's size, and the CPU
    /// slack below 100% target utilisation (half the headroom of the largest node).
    fn span(&self, c: &Cycle<'_>, allowed: &[NodeId], req: &Request) -> Span {
        let mib = MIB as f64;
        let cap_ref = allowed
            .iter()
            .map(|&n| c.cap[n])
            .fold(0.0, f64::max)
            .max(0.01);
        let mb_ref = allowed
            .iter()
            .map(|&n| c.m.mem[n] as f64 / mib)
            .fold(0.0, f64::max)
            .max(1.0);
        let util = f64::from(self.cfg.target_utilization_pct);
        let flex = if util < 100.0 {
            (100.0 - util) * cap_ref / 200.0
        } else {
            0.0
        };
        let min_nodes = ((req.mem_mib / mb_ref).ceil())
            .max(((req.cpu - flex) / cap_ref).ceil())
            .clamp(0.0, allowed.len() as f64) as usize;
        Span { min_nodes, flex }
    }

    /// Takes nodes in `order` until the request is met: at least `min_nodes`, its memory
    /// (each node keeping `mem_margin_mib`), and its CPUs unless enough is `assume`d.
    fn take_nodes(
        &self,
        order: Vec<NodeId>,
        free: &Free,
        req: &Request,
        span: &Span,
        assume: bool,
    ) -> Vec<NodeId> {
        let margin = self.cfg.mem_margin_mib as f64;
        let (mut mb, mut cpus, mut left) = (req.mem_mib, req.cpu, span.min_nodes);
        let mut nodes = Vec::new();
        for x in order {
            if !(left > 0 || mb > 0.0 || (cpus > span.flex && !assume)) {
                break;
            }
            nodes.push(x);
            left = left.saturating_sub(1);
            if free.mb[x] >= mb + margin {
                mb = 0.0;
            } else {
                mb -= (free.mb[x] - margin).max(0.0);
            }
            if free.cpu[x] >= cpus {
                cpus = 0.0;
            } else {
                cpus -= free.cpu[x];
            }
        }
        nodes
    }

    /// Whether `p` is bound to exactly `nodes` already with at least `target_memlocality_pct`
    /// of its memory there.
    fn local_enough(&self, m: &Machine, p: &Proc, bound_to: &[NodeId], nodes: &[NodeId]) -> bool {
        let nonlocal: u64 = (0..m.n)
            .filter(|n| !nodes.contains(n))
            .map(|n| p.bytes[n])
            .sum();
        let same: BTreeSet<NodeId> = nodes.iter().copied().collect();
        let was: BTreeSet<NodeId> = bound_to.iter().copied().collect();
        let disp_pct = nonlocal as f64 * 100.0 / p.rss as f64;
        !bound_to.is_empty()
            && same == was
            && disp_pct <= f64::from(100 - self.cfg.target_memlocality_pct.min(100))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{NodeView, Snapshot};

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
            numa_balancing: false,
        };
        let m = Machine::new(&snap);
        let (cap, free) = cpu_capacity(&t, &m, 20);
        assert!((cap[0] - 4.8).abs() < 1e-9, "{cap:?}");
        assert!((free[0] - 4.8).abs() < 1e-9, "8 idle minus 4 x 0.8");
    }
}
