//! The cost model: how fast a running task progresses.
//!
//! One operation of a `Memory` phase costs its core cycles plus, for each access, the cache
//! lines that miss times the load-to-use latency of the node holding them, divided by the
//! memory-level parallelism of the core (Little's law: `mlp` misses overlap). The latency is
//! the idle latency for that (CPU node, memory node) pair, raised by a contention factor of the
//! memory node that grows with its bandwidth use. Bandwidth use in turn depends on how fast
//! every running task goes, so the factors are found by a damped fixed-point iteration.
//! Written shared lines that another thread of the process wrote last cost a cache-line
//! transfer (docs/MODEL.md gives every parameter and its source).

use crate::memory::Region;
use crate::program::{OpCost, Pattern};
use topo::{NodeId, Topology};

/// Latency multipliers per memory node: for accesses from its own CPUs and from other nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Contention {
    pub local: Vec<f64>,
    pub remote: Vec<f64>,
}

impl Contention {
    pub fn idle(nr_nodes: usize) -> Self {
        Contention { local: vec![1.0; nr_nodes], remote: vec![1.0; nr_nodes] }
    }

    fn factor(&self, cpu_node: NodeId, mem_node: NodeId) -> f64 {
        if cpu_node == mem_node { self.local[mem_node] } else { self.remote[mem_node] }
    }
}

/// What one operation costs a task at a given place.
#[derive(Clone, Debug, PartialEq)]
pub struct OpProfile {
    /// Time of one operation, ns.
    pub ns: f64,
    /// Memory traffic one operation sends to each node, bytes.
    pub bytes: Vec<f64>,
    /// Cache lines one operation misses (for the cold-cache model).
    pub lines: f64,
}

/// Latency multiplier of a memory controller (or link) at utilisation `rho`.
///
/// `ratio` is the loaded-to-idle latency ratio at peak bandwidth. The quartic rise keeps the
/// latency near idle up to about half of the peak, as measured loaded-latency curves do, and
/// past the peak the queue grows so that delivered bandwidth stays at the peak.
pub fn loaded_factor(rho: f64, ratio: f64) -> f64 {
    let r = rho.clamp(0.0, 1.0);
    (1.0 + (ratio - 1.0) * r.powi(4)) * rho.max(1.0)
}

/// Cost of one operation `op` for a task on `cpu_node` whose process has `regions`, with
/// `cache_share` bytes of last-level cache to itself and `xfer_ns[i]` the cache-line transfer
/// cost for access `i` (0 when no other writer of that region runs).
pub fn op_profile(
    topo: &Topology,
    op: &OpCost,
    regions: &[Region],
    cpu_node: NodeId,
    cache_share: f64,
    q: &Contention,
    xfer_ns: &[f64],
) -> OpProfile {
    let nr = topo.nr_nodes();
    let line = topo.cpu_model.line_bytes as f64;
    let mlp = topo.cpu_model.mlp.max(1e-3);
    let mut ns = op.cycles * topo.ns_per_cycle();
    let mut bytes = vec![0.0; nr];
    let mut total_lines = 0.0;
    let random_footprint: f64 = random_footprint(op, regions);
    let hit = if random_footprint > 0.0 { (cache_share / random_footprint).min(1.0) } else { 1.0 };
    let mut frac = vec![0.0; nr];
    for (i, a) in op.accesses.iter().enumerate() {
        let lines = match a.pattern {
            Pattern::Random => (1.0 - hit) * (a.bytes / line).ceil(),
            Pattern::Stream => a.bytes / line,
        };
        total_lines += lines;
        regions[a.region].node_fractions(cpu_node, &mut frac);
        let traffic = if a.write { 2.0 } else { 1.0 } * line;
        for (j, &f) in frac.iter().enumerate() {
            if f == 0.0 {
                continue;
            }
            let lat = topo.latency_ns(cpu_node, j) * q.factor(cpu_node, j);
            ns += lines * f * lat / mlp;
            bytes[j] += lines * f * traffic;
        }
        ns += a.contended * xfer_ns.get(i).copied().unwrap_or(0.0);
    }
    OpProfile { ns, bytes, lines: total_lines }
}

/// Bytes of the distinct regions an operation reads at random.
fn random_footprint(op: &OpCost, regions: &[Region]) -> f64 {
    let mut seen: Vec<usize> = Vec::new();
    let mut total = 0.0;
    for a in op.accesses.iter().filter(|a| a.pattern == Pattern::Random) {
        if !seen.contains(&a.region) {
            seen.push(a.region);
            total += regions[a.region].bytes as f64;
        }
    }
    total
}

/// Cache-line transfer cost between a CPU on `a` and one on `b`.
pub fn line_transfer_ns(topo: &Topology, a: NodeId, b: NodeId) -> f64 {
    let m = &topo.memory;
    if a == b {
        return m.line_transfer_local_ns;
    }
    // Farther nodes cost proportionally more than the nearest remote node.
    let nearest = (0..topo.nr_nodes())
        .filter(|&n| n != a)
        .map(|n| topo.distance(a, n))
        .min()
        .unwrap_or(topo.distance(a, b));
    m.line_transfer_remote_ns * f64::from(topo.distance(a, b)) / f64::from(nearest.max(1))
}

/// Memory demand of one running task, as input to [`solve_contention`].
pub struct Demand<'a> {
    pub cpu_node: NodeId,
    pub op: &'a OpCost,
    pub regions: &'a [Region],
    pub cache_share: f64,
    pub xfer_ns: Vec<f64>,
}

/// Find the contention factors consistent with the running tasks' own speed.
pub fn solve_contention(topo: &Topology, demands: &[Demand<'_>], start: &Contention) -> Contention {
    let nr = topo.nr_nodes();
    let ratio = topo.memory.loaded_latency_ratio;
    let mut q = start.clone();
    if demands.is_empty() {
        return Contention::idle(nr);
    }
    for _ in 0..50 {
        let mut bw = vec![0.0; nr]; // bytes per ns into each node (all sources)
        let mut remote_bw = vec![0.0; nr]; // from other nodes only
        for d in demands {
            let p = op_profile(topo, d.op, d.regions, d.cpu_node, d.cache_share, &q, &d.xfer_ns);
            if p.ns <= 0.0 {
                continue;
            }
            for (j, b) in p.bytes.iter().enumerate() {
                bw[j] += b / p.ns;
                if j != d.cpu_node {
                    remote_bw[j] += b / p.ns;
                }
            }
        }
        let mut change: f64 = 0.0;
        for j in 0..nr {
            let node = &topo.nodes[j];
            let f_mem = loaded_factor(bw[j] / node.bandwidth_gbps, ratio);
            let f_link = loaded_factor(remote_bw[j] / node.remote_bandwidth_gbps, ratio);
            let new_local = f_mem;
            let new_remote = f_mem.max(f_link);
            // Damped update: the map is decreasing in q, plain iteration could oscillate.
            let l = 0.5 * q.local[j] + 0.5 * new_local;
            let r = 0.5 * q.remote[j] + 0.5 * new_remote;
            change = change.max((l - q.local[j]).abs() / q.local[j]);
            change = change.max((r - q.remote[j]).abs() / q.remote[j]);
            q.local[j] = l;
            q.remote[j] = r;
        }
        if change < 1e-6 {
            break;
        }
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemPolicy, NodeMemory};
    use crate::program::Access;

    fn machine() -> Topology {
        topo::spec::parse_synthetic("nodes=2,cpus-per-node=4,remote-ratio=2").expect("synthetic")
    }

    fn region_on(t: &Topology, node: NodeId, bytes: u64) -> Region {
        let mut m = NodeMemory::new(t);
        let mut r = Region::new("a", bytes, MemPolicy::Bind(vec![node]), 2 << 20, t.nr_nodes());
        for g in 0..r.groups.len() {
            m.touch(t, &mut r, g, node);
        }
        r
    }

    fn random_op() -> OpCost {
        OpCost {
            cycles: 4.0,
            accesses: vec![Access {
                region: 0,
                pattern: Pattern::Random,
                bytes: 8.0,
                write: true,
                contended: 0.0,
            }],
        }
    }

    #[test]
    fn remote_memory_costs_more_by_latency() {
        let t = machine();
        let r = [region_on(&t, 0, 1 << 30)];
        let q = Contention::idle(2);
        let local = op_profile(&t, &random_op(), &r, 0, 0.0, &q, &[]);
        let remote = op_profile(&t, &random_op(), &r, 1, 0.0, &q, &[]);
        assert!(remote.ns > local.ns);
        let mem_local = local.ns - 4.0 * t.ns_per_cycle();
        let mem_remote = remote.ns - 4.0 * t.ns_per_cycle();
        let ratio = mem_remote / mem_local;
        assert!((ratio - t.latency_ns(1, 0) / t.latency_ns(0, 0)).abs() < 1e-9);
    }

    #[test]
    fn cache_hits_when_it_fits() {
        let t = machine();
        let r = [region_on(&t, 0, 1 << 20)];
        let q = Contention::idle(2);
        let p = op_profile(&t, &random_op(), &r, 0, 8.0 * 1024.0 * 1024.0, &q, &[]);
        assert_eq!(p.lines, 0.0);
        assert!(p.bytes.iter().all(|&b| b == 0.0));
    }

    #[test]
    fn contention_grows_with_demand_and_caps_bandwidth() {
        let t = machine();
        let r = region_on(&t, 0, 1 << 30);
        let regions = [r];
        let op = OpCost {
            cycles: 0.0,
            accesses: vec![Access {
                region: 0,
                pattern: Pattern::Stream,
                bytes: 64.0,
                write: false,
                contended: 0.0,
            }],
        };
        let mk = |n: usize| -> Vec<Demand<'_>> {
            (0..n)
                .map(|_| Demand {
                    cpu_node: 0,
                    op: &op,
                    regions: &regions,
                    cache_share: 0.0,
                    xfer_ns: vec![],
                })
                .collect()
        };
        let q1 = solve_contention(&t, &mk(1), &Contention::idle(2));
        let q4 = solve_contention(&t, &mk(4), &Contention::idle(2));
        assert!(q4.local[0] > q1.local[0]);
        // Delivered bandwidth never exceeds the node's peak by more than rounding.
        let p = op_profile(&t, &op, &regions, 0, 0.0, &q4, &[]);
        let delivered = 4.0 * p.bytes[0] / p.ns;
        assert!(delivered <= t.nodes[0].bandwidth_gbps * 1.01, "{delivered}");
        assert_eq!(q1.local[1], 1.0);
    }

    #[test]
    fn loaded_factor_shape() {
        assert_eq!(loaded_factor(0.0, 3.0), 1.0);
        assert!((loaded_factor(1.0, 3.0) - 3.0).abs() < 1e-12);
        assert!(loaded_factor(0.5, 3.0) < 1.2);
        assert!((loaded_factor(2.0, 3.0) - 6.0).abs() < 1e-12);
    }
}
