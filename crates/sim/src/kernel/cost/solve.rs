//! The memory nodes' contention factors: every running task's bandwidth demand raises the
//! latency of the node it reads, which slows the tasks; a damped fixed point finds the factors.

use super::*;
/// Derivative of [`loaded_factor`] with respect to `rho`.
pub(super) fn loaded_factor_slope(rho: f64, ratio: f64) -> f64 {
    if rho < 1.0 {
        4.0 * (ratio - 1.0) * rho.max(0.0).powi(3)
    } else {
        ratio
    }
}

/// Find the contention factors consistent with the running tasks' own speed: each task's
/// operation time depends on the factors, the factors on the bandwidth all tasks draw.
///
/// Solved by Newton steps per factor (each factor's own derivative, the weak coupling between
/// nodes left to the iteration). The map from factors to factors is decreasing, so the
/// Newton denominator is at least 1 and every step is a damped fixed-point step.
pub fn solve_contention(
    topo: &Topology,
    demands: &[&LinearOp],
    start: &Contention,
) -> (Contention, u32) {
    let mut q = start.clone();
    let iterations = solve_contention_into(topo, demands, &mut q, &mut SolveBuffers::default());
    (q, iterations)
}

/// Per node, during a solve: traffic from all CPUs, from remote CPUs, and the derivatives of
/// each with respect to the local and the remote factor; and the solve's demands gathered
/// ([`Gathered`]). Kept by the caller between solves so that a solve does not allocate.
#[derive(Debug, Default)]
pub struct SolveBuffers {
    bw: Vec<f64>,
    remote_bw: Vec<f64>,
    d_local: Vec<f64>,
    d_remote: Vec<f64>,
    gathered: Gathered,
}

/// The demands of one solve copied into two flat lists: what each Newton step reads of them,
/// in one place instead of behind every decomposition's own vectors. A large component (a
/// good part of the machine, coupled by tasks whose memory spans nodes) takes several steps
/// over hundreds of demands; the copy is read with the same operations in the same order
/// as [`LinearOp::ns_and_slopes`], so a solve gives the same bits either way.
#[derive(Debug, Default)]
pub(super) struct Gathered {
    pub(super) demands: Vec<GatheredDemand>,
    /// Per demand, its nodes in `nz` order (`terms[start..end]`).
    pub(super) terms: Vec<Term>,
    /// What the last demand a Newton step computed added to each node ([`Added`]).
    pub(super) last: Vec<Added>,
}

#[derive(Debug)]
pub(super) struct GatheredDemand {
    pub(super) cpu_node: NodeId,
    pub(super) base_ns: f64,
    /// An out-of-order core's core and hit times ([`Overlap`]); `None`: in order.
    pub(super) overlap: Option<(f64, f64)>,
    pub(super) start: usize,
    pub(super) end: usize,
    /// Equal, bit for bit, to the demand before it. Tasks of one program on one node with
    /// their memory on that node and the same cache share have the same decomposition, and
    /// the CPUs of a node are consecutive: at 1024 CPUs with 8 jobs per CPU under `o1`, 55%
    /// of the demands of a solve repeat the one before. A Newton step adds such a demand's
    /// quotients again instead of dividing anew (the same values, added in the same order).
    pub(super) repeats: bool,
}

/// What one demand adds to a node in a Newton step: its bandwidth (`b / ns`, to the node's
/// and, from a remote CPU, its link's) and the slope of its time (`b c / ns^2`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Added {
    node: NodeId,
    bw: f64,
    slope: f64,
}

/// One node of a demand: its stall coefficient, its streams' coefficient (out of order) and
/// its traffic.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    pub(super) node: NodeId,
    pub(super) coef: f64,
    pub(super) stream_coef: f64,
    pub(super) bytes: f64,
}

/// Demands from which a solve gathers them first ([`Gathered`]). Below it the copy costs
/// more than it saves (`linux` on numa_test N=64, azusa16: 5% fewer events per CPU second
/// when every solve gathered).
pub(super) const GATHER_MIN: usize = 64;

/// The per-node sums of a Newton step ([`SolveBuffers`]), borrowed.
pub(super) struct Traffic<'a> {
    bw: &'a mut [f64],
    remote_bw: &'a mut [f64],
    d_local: &'a mut [f64],
    d_remote: &'a mut [f64],
}

impl Traffic<'_> {
    /// Add every demand of a Newton step, from the gathered copy when there is one (the
    /// same values in the same order either way).
    fn add_all(&mut self, demands: &[&LinearOp], gathered: Option<&mut Gathered>, q: &Contention) {
        let Some(g) = gathered else {
            for d in demands {
                let (ns, slopes) = d.ns_and_slopes(q);
                let terms = d.nz.iter();
                self.add(
                    d.cpu_node,
                    ns,
                    terms.map(|&j| (j, d.bytes[j], slopes.map_or(0.0, |s| s[j]))),
                );
            }
            return;
        };
        let Gathered {
            demands,
            terms,
            last,
        } = g;
        for d in demands.iter() {
            if !d.repeats {
                let terms = &terms[d.start..d.end];
                let (ns, slopes) = d.ns_and_slopes(terms, q);
                let slope = |t: &Term| match slopes {
                    None => 0.0,
                    Some(Slopes::Coef) => t.coef,
                    Some(Slopes::Stream) => t.stream_coef,
                };
                last.clear();
                Self::quotients(ns, terms.iter().map(|t| (t.node, t.bytes, slope(t))), last);
            }
            self.add_quotients(d.cpu_node, last);
        }
    }

    /// [`Traffic::add`] in two halves: what a demand adds to each node, into `out`...
    fn quotients(ns: f64, terms: impl Iterator<Item = (NodeId, f64, f64)>, out: &mut Vec<Added>) {
        if ns <= 0.0 {
            return;
        }
        for (j, b, c) in terms {
            if b == 0.0 {
                continue;
            }
            out.push(Added {
                node: j,
                bw: b / ns,
                slope: b * c / (ns * ns),
            });
        }
    }

    /// ... and its addition, local or remote as seen from `cpu_node`.
    fn add_quotients(&mut self, cpu_node: NodeId, added: &[Added]) {
        for a in added {
            let j = a.node;
            self.bw[j] += a.bw;
            if j == cpu_node {
                self.d_local[j] += a.slope;
            } else {
                self.remote_bw[j] += a.bw;
                self.d_remote[j] += a.slope;
            }
        }
    }

    /// Add a demand whose operation takes `ns` under the current factors, given per node
    /// (in `nz` order) as its traffic and the slope coefficient of its time.
    fn add(&mut self, cpu_node: NodeId, ns: f64, terms: impl Iterator<Item = (NodeId, f64, f64)>) {
        if ns <= 0.0 {
            return;
        }
        for (j, b, c) in terms {
            if b == 0.0 {
                continue;
            }
            self.bw[j] += b / ns;
            let slope = b * c / (ns * ns);
            if j == cpu_node {
                self.d_local[j] += slope;
            } else {
                self.remote_bw[j] += b / ns;
                self.d_remote[j] += slope;
            }
        }
    }
}

impl Term {
    fn bits(&self) -> (NodeId, u64, u64, u64) {
        (
            self.node,
            self.coef.to_bits(),
            self.stream_coef.to_bits(),
            self.bytes.to_bits(),
        )
    }
}

/// Which coefficients decide a gathered demand's time ([`LinearOp::ns_and_slopes`]'s slopes).
#[derive(Clone, Copy)]
pub(super) enum Slopes {
    Coef,
    Stream,
}

impl Gathered {
    pub(super) fn gather(&mut self, demands: &[&LinearOp]) {
        self.demands.clear();
        self.terms.clear();
        for d in demands {
            let start = self.terms.len();
            match &d.lone {
                Some(t) => self.terms.push(t.clone()),
                None => self.terms.extend(d.nz.iter().map(|&j| d.term(j))),
            }
            let mut g = GatheredDemand {
                cpu_node: d.cpu_node,
                base_ns: d.base_ns,
                overlap: d.overlap.as_ref().map(|o| (o.core_ns, o.hit_ns)),
                start,
                end: self.terms.len(),
                repeats: false,
            };
            g.repeats = self
                .demands
                .last()
                .is_some_and(|p| p.same_bits(&g, &self.terms));
            self.demands.push(g);
        }
    }
}

impl GatheredDemand {
    /// Whether `other` has the same node, times and terms as this one, bit for bit: then a
    /// Newton step computes the same quotients for both.
    fn same_bits(&self, other: &GatheredDemand, terms: &[Term]) -> bool {
        let bits = |o: Option<(f64, f64)>| o.map(|(a, b)| (a.to_bits(), b.to_bits()));
        let (mine, theirs) = (&terms[self.start..self.end], &terms[other.start..other.end]);
        self.cpu_node == other.cpu_node
            && self.base_ns.to_bits() == other.base_ns.to_bits()
            && bits(self.overlap) == bits(other.overlap)
            && mine.len() == theirs.len()
            && mine.iter().zip(theirs).all(|(a, b)| a.bits() == b.bits())
    }

    /// [`LinearOp::stall`] over the gathered terms.
    fn stall(&self, start: f64, terms: &[Term], stream: bool, q: &Contention) -> f64 {
        let mut ns = start;
        for t in terms {
            let c = if stream { t.stream_coef } else { t.coef };
            if c != 0.0 {
                ns += c * q.factor(self.cpu_node, t.node);
            }
        }
        ns
    }

    /// [`LinearOp::ns_and_slopes`] over the gathered terms.
    pub(super) fn ns_and_slopes(&self, terms: &[Term], q: &Contention) -> (f64, Option<Slopes>) {
        let Some((core_ns, hit_ns)) = self.overlap else {
            return (
                self.stall(self.base_ns, terms, false, q),
                Some(Slopes::Coef),
            );
        };
        let misses = self.stall(hit_ns, terms, false, q);
        let streams = self.stall(0.0, terms, true, q);
        let (longest, part) = if streams > misses {
            (streams, Slopes::Stream)
        } else {
            (misses, Slopes::Coef)
        };
        if core_ns >= longest {
            (self.base_ns + core_ns, None)
        } else {
            (self.base_ns + longest, Some(part))
        }
    }
}

/// [`solve_contention`] in place: `q` holds the start and receives the solution; returns
/// the iterations taken.
pub fn solve_contention_into(
    topo: &Topology,
    demands: &[&LinearOp],
    q: &mut Contention,
    buf: &mut SolveBuffers,
) -> u32 {
    let nr = topo.nr_nodes();
    if demands.is_empty() {
        q.local.clear();
        q.local.resize(nr, 1.0);
        q.remote.clear();
        q.remote.resize(nr, 1.0);
        return 0;
    }
    let all: Vec<NodeId> = (0..nr).collect();
    solve_nodes_into(topo, demands, &all, q, buf)
}

/// The fixed point restricted to `nodes`, a set of memory nodes closed under the demands: every
/// node in a demand's `nz` is in `nodes`, and `demands` are all the running demands that touch
/// them. A node's factors depend only on the traffic of the demands that touch it and a
/// demand's speed only on the factors of the nodes it touches, so the machine's fixed point is
/// the union of the fixed points of such closed sets (the connected components of the
/// demand-node graph) and the factors outside `nodes` are left as they are. A node of `nodes`
/// that no demand touches is idle: its factors are 1.
pub fn solve_nodes_into(
    topo: &Topology,
    demands: &[&LinearOp],
    nodes: &[NodeId],
    q: &mut Contention,
    buf: &mut SolveBuffers,
) -> u32 {
    // Gathering costs a pass over the demands; it pays off when they are many (a large
    // component) and the steps several.
    let gather = demands.len() >= GATHER_MIN;
    solve_nodes_with(topo, demands, nodes, q, buf, gather)
}

/// [`solve_nodes_into`], from the gathered copy of the demands or not (the same bits).
pub(super) fn solve_nodes_with(
    topo: &Topology,
    demands: &[&LinearOp],
    nodes: &[NodeId],
    q: &mut Contention,
    buf: &mut SolveBuffers,
    gather: bool,
) -> u32 {
    let nr = topo.nr_nodes();
    let SolveBuffers {
        bw,
        remote_bw,
        d_local,
        d_remote,
        gathered,
    } = buf;
    for v in [&mut *bw, &mut *remote_bw, &mut *d_local, &mut *d_remote] {
        v.resize(nr, 0.0);
    }
    if demands.is_empty() {
        for &j in nodes {
            q.local[j] = 1.0;
            q.remote[j] = 1.0;
        }
        return 0;
    }
    let ratio = topo.memory.loaded_latency_ratio;
    if gather {
        gathered.gather(demands);
    }
    let mut iterations = 0;
    for _ in 0..100 {
        for &j in nodes {
            bw[j] = 0.0;
            remote_bw[j] = 0.0;
            d_local[j] = 0.0;
            d_remote[j] = 0.0;
        }
        let mut sums = Traffic {
            bw,
            remote_bw,
            d_local,
            d_remote,
        };
        sums.add_all(demands, gather.then_some(&mut *gathered), q);
        let mut change: f64 = 0.0;
        for &j in nodes {
            let node = &topo.nodes[j];
            let (rho_m, rho_l) = (
                bw[j] / node.bandwidth_gbps,
                remote_bw[j] / node.remote_bandwidth_gbps,
            );
            let (g_m, g_l) = (loaded_factor(rho_m, ratio), loaded_factor(rho_l, ratio));
            let s_m = loaded_factor_slope(rho_m, ratio);
            // Newton on the node's two factors x (local) and y (remote):
            //   F1 = x - g(rho_mem(x, y)),  F2 = y - max(g(rho_mem), g(rho_link(y))).
            // rho falls as the factors rise, so the diagonal of the Jacobian is >= 1.
            let a = d_local[j] / node.bandwidth_gbps; // -d rho_mem / dx
            let b = d_remote[j] / node.bandwidth_gbps; // -d rho_mem / dy
            let f1 = q.local[j] - g_m;
            let (j11, j12) = (1.0 + s_m * a, s_m * b);
            let (f2, j21, j22) = if g_m >= g_l {
                (q.remote[j] - g_m, s_m * a, 1.0 + s_m * b)
            } else {
                let c = d_remote[j] / node.remote_bandwidth_gbps;
                (
                    q.remote[j] - g_l,
                    0.0,
                    1.0 + loaded_factor_slope(rho_l, ratio) * c,
                )
            };
            let det = j11 * j22 - j12 * j21;
            let (step_l, step_r) = if det.abs() > 1e-12 {
                (-(f1 * j22 - j12 * f2) / det, -(j11 * f2 - j21 * f1) / det)
            } else {
                (-f1 / j11, -f2 / j22)
            };
            change = change
                .max(step_l.abs() / q.local[j])
                .max(step_r.abs() / q.remote[j]);
            q.local[j] = (q.local[j] + step_l).max(1.0);
            q.remote[j] = (q.remote[j] + step_r).max(1.0);
        }
        iterations += 1;
        if change < 1e-7 {
            break;
        }
    }
    iterations
}
