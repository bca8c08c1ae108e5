//! One operation's time: its core cycles, the lines it misses at each node's loaded latency
//! divided by the core's memory-level parallelism, LLC hits and TLB walks, and how an
//! out-of-order core overlaps them (see the parent module).

use super::*;
/// One operation's cost split into what depends on contention and what does not. On an
/// in-order core, `ns = base_ns + sum_j coef[j] * q(cpu_node, j)`; on an out-of-order core
/// ([`Overlap`]), `ns = base_ns + max(core_ns, hit_ns + sum_j coef[j] * q, sum_j
/// stream_coef[j] * q)`. Built once per placement, evaluated at every step of the contention
/// fixed point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinearOp {
    pub cpu_node: NodeId,
    /// What always adds: cache-line transfers, and on an in-order core also the core cycles
    /// and LLC hits, ns.
    pub base_ns: f64,
    /// Idle-latency memory stall per memory node, ns (to be multiplied by its factor): all
    /// misses on an in-order core; on an out-of-order one, those on the demand-miss queue.
    pub coef: Vec<f64>,
    /// The overlapped parts of an out-of-order core's operation (`None`: in order).
    pub overlap: Option<Overlap>,
    /// Traffic to each memory node, bytes.
    pub bytes: Vec<f64>,
    /// Cache lines missed.
    pub lines: f64,
    /// Lines one operation reads at random (hits and misses), and the bytes of the regions
    /// they fall in: how fast a task re-touches its cached lines after they were evicted.
    pub random_lines: f64,
    pub random_footprint: f64,
    /// Bytes of the random regions the task's LLC share holds (`hit x random_footprint`):
    /// what another task's turn on the cache can evict ([`refill_after_turns`]).
    pub cached_bytes: f64,
    /// Lines one operation touches (random and streamed), and the bytes of all the regions
    /// it reaches: what a run of the task touches, at most its footprint.
    pub touched_lines: f64,
    pub footprint: f64,
    /// The nodes with a non-zero stall or traffic, ascending: the only ones the fixed point
    /// and [`LinearOp::ns`] need to visit (a task's memory is on few of a large machine's
    /// nodes).
    pub nz: Vec<NodeId>,
    /// The only node of `nz` and its coefficients and traffic, when there is one (a task's
    /// memory on one node, the usual case), so that its time and the solve read them from
    /// here and not from the heap blocks of `nz`, `coef`, `stream_coef` and `bytes`: at 1000
    /// CPUs each refresh reads hundreds of decompositions, and those loads were missing the
    /// cache (perf: most of [`LinearOp::stall`]'s time on them). The same values as there.
    pub lone: Option<Term>,
    /// [`LinearOp::fingerprint`], computed once when the decomposition is built.
    pub fp: u64,
}

/// The parts of an out-of-order core's operation that run at the same time: its core work,
/// its demand misses (with the LLC hits they wait behind) and the streams its prefetchers
/// fetch. The operation lasts as long as the longest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overlap {
    /// Core cycles, ns.
    pub core_ns: f64,
    /// Random accesses that hit the LLC, ns (they queue with the demand misses).
    pub hit_ns: f64,
    /// Idle-latency stall per memory node of the prefetched streams, ns.
    pub stream_coef: Vec<f64>,
}

impl LinearOp {
    /// Make this a copy of `o` in its own buffers (the derived `clone_from` allocates anew).
    /// Every field is named, so a field added to the struct cannot be left out here.
    pub fn copy_from(&mut self, o: &LinearOp) {
        let LinearOp {
            cpu_node,
            base_ns,
            coef,
            overlap,
            bytes,
            lines,
            random_lines,
            random_footprint,
            cached_bytes,
            touched_lines,
            footprint,
            nz,
            lone,
            fp,
        } = o;
        self.cpu_node = *cpu_node;
        self.base_ns = *base_ns;
        self.coef.clone_from(coef);
        match (&mut self.overlap, overlap) {
            (Some(mine), Some(theirs)) => {
                let Overlap {
                    core_ns,
                    hit_ns,
                    stream_coef,
                } = theirs;
                mine.core_ns = *core_ns;
                mine.hit_ns = *hit_ns;
                mine.stream_coef.clone_from(stream_coef);
            }
            (mine, theirs) => mine.clone_from(theirs),
        }
        self.bytes.clone_from(bytes);
        self.lines = *lines;
        self.random_lines = *random_lines;
        self.random_footprint = *random_footprint;
        self.cached_bytes = *cached_bytes;
        self.touched_lines = *touched_lines;
        self.footprint = *footprint;
        self.nz.clone_from(nz);
        self.lone.clone_from(lone);
        self.fp = *fp;
    }

    /// Fill in the derived fields (`nz`, `fp`) once the others are final.
    fn finish(&mut self) {
        self.nz.clear();
        let streams = self.overlap.as_ref().map(|o| &o.stream_coef[..]);
        for j in 0..self.coef.len() {
            let s = streams.map_or(0.0, |s| s[j]);
            if self.coef[j] != 0.0 || s != 0.0 || self.bytes[j] != 0.0 {
                self.nz.push(j);
            }
        }
        self.lone = match self.nz[..] {
            [j] => Some(self.term(j)),
            _ => None,
        };
        self.fp = self.fingerprint();
    }

    /// Node `j`'s coefficients and traffic.
    pub(super) fn term(&self, j: NodeId) -> Term {
        Term {
            node: j,
            coef: self.coef[j],
            stream_coef: self.overlap.as_ref().map_or(0.0, |o| o.stream_coef[j]),
            bytes: self.bytes[j],
        }
    }

    /// `start` plus the stall of `coef` under `q`, ns (added in this order, so an in-order
    /// core's time is the same sum, to the bit, as before the overlap was modelled); `stream`
    /// says whether `coef` is the streams' (for [`LinearOp::lone`]).
    fn stall(&self, start: f64, coef: &[f64], stream: bool, q: &Contention) -> f64 {
        let mut ns = start;
        if let Some(t) = &self.lone {
            let c = if stream { t.stream_coef } else { t.coef };
            if c != 0.0 {
                ns += c * q.factor(self.cpu_node, t.node);
            }
            return ns;
        }
        for &j in &self.nz {
            let c = coef[j];
            if c != 0.0 {
                ns += c * q.factor(self.cpu_node, j);
            }
        }
        ns
    }

    /// Time of one operation under `q`, ns, and `d ns / d q(cpu_node, j)` for every node at
    /// once: the coefficients of the part that decides the time (`None`: the core's own work
    /// does, and contention does not matter at the margin). What the contention solve needs.
    pub fn ns_and_slopes(&self, q: &Contention) -> (f64, Option<&[f64]>) {
        let Some(o) = &self.overlap else {
            return (
                self.stall(self.base_ns, &self.coef, false, q),
                Some(&self.coef),
            );
        };
        let misses = self.stall(o.hit_ns, &self.coef, false, q);
        let streams = self.stall(0.0, &o.stream_coef, true, q);
        let (longest, part) = if streams > misses {
            (streams, &o.stream_coef[..])
        } else {
            (misses, &self.coef[..])
        };
        if o.core_ns >= longest {
            (self.base_ns + o.core_ns, None)
        } else {
            (self.base_ns + longest, Some(part))
        }
    }

    /// A hash of everything that determines this demand (summed over tasks, it identifies the
    /// multiset of running demands).
    pub fn fingerprint(&self) -> u64 {
        let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ self.cpu_node as u64;
        let mut mix = |x: u64| {
            h = (h ^ x).wrapping_mul(0x0100_0000_01b3).rotate_left(29);
        };
        mix(self.base_ns.to_bits());
        for (&c, &b) in self.coef.iter().zip(&self.bytes) {
            mix(c.to_bits());
            mix(b.to_bits());
        }
        if let Some(o) = &self.overlap {
            mix(o.core_ns.to_bits());
            mix(o.hit_ns.to_bits());
            for &c in &o.stream_coef {
                mix(c.to_bits());
            }
        }
        h ^ (h >> 31)
    }

    /// Time of one operation under contention `q`, ns.
    pub fn ns(&self, q: &Contention) -> f64 {
        self.ns_and_slopes(q).0
    }
}

/// Decompose the cost of `op` for a task on `cpu_node` whose process has `regions`, with
/// `cache_share` bytes of last-level cache to itself and `xfer_ns[i]` the coherence stall per
/// shared-line access of access `i` ([`line_stalls`]; 0 when nothing conflicts with it), paid
/// by the `contended` fraction of the accesses.
pub fn linear_op(
    topo: &Topology,
    op: &OpCost,
    regions: &[Region],
    cpu_node: NodeId,
    cache_share: f64,
    xfer_ns: &[f64],
) -> LinearOp {
    let mut out = LinearOp::default();
    let at = Placed {
        regions,
        cpu_node,
        cache_share,
    };
    linear_op_into(topo, op, &at, xfer_ns, &mut out, &mut Vec::new());
    out
}

/// Where an operation runs, for [`linear_op_into`]: its process's regions, its CPU's node and
/// its share of the last-level cache.
pub struct Placed<'a> {
    pub regions: &'a [Region],
    pub cpu_node: NodeId,
    pub cache_share: f64,
}

/// [`linear_op`] into `out`, reusing its buffers and `frac` (scratch) so that a task whose
/// decomposition is rebuilt at every switch does not allocate.
pub fn linear_op_into(
    topo: &Topology,
    op: &OpCost,
    at: &Placed<'_>,
    xfer_ns: &[f64],
    out: &mut LinearOp,
    frac: &mut Vec<f64>,
) {
    let nr = topo.nr_nodes();
    let line = topo.cpu_model.line_bytes as f64;
    let mlp = topo.cpu_model.mlp.max(1e-3);
    let stream_mlp = topo.cpu_model.stream_mlp().max(1e-3);
    let llc_ns = topo.cpu_model.llc_latency_ns.unwrap_or(0.0);
    let cpu_node = at.cpu_node;
    out.cpu_node = cpu_node;
    out.base_ns = op.cycles * topo.ns_per_cycle();
    out.coef.clear();
    out.coef.resize(nr, 0.0);
    // An out-of-order core overlaps its core work, its demand misses and (with prefetchers
    // of their own, `stream_mlp` given) its streams; `base_ns` then keeps only what adds.
    let mut overlap = out.overlap.take();
    if topo.cpu_model.out_of_order {
        let o = overlap.get_or_insert_with(Overlap::default);
        o.core_ns = out.base_ns;
        o.hit_ns = 0.0;
        o.stream_coef.clear();
        o.stream_coef.resize(nr, 0.0);
        out.base_ns = 0.0;
    } else {
        overlap = None;
    }
    let own_stream_queue = topo.cpu_model.stream_mlp.is_some();
    out.bytes.clear();
    out.bytes.resize(nr, 0.0);
    out.lines = 0.0;
    out.random_lines = 0.0;
    let random_footprint: f64 = random_footprint(op, at.regions);
    let lru = LruShare::solve(
        op,
        at.regions,
        at.cache_share,
        line,
        topo.cpu_model.llc_stream_share,
        set_mapping(topo),
    );
    let walk = walk_ns_per_random_line(topo, random_footprint);
    out.random_footprint = random_footprint;
    out.cached_bytes = lru.random_bytes_held(op, at.regions, line);
    out.touched_lines = 0.0;
    out.footprint = footprint(op, at.regions, |_| true);
    frac.clear();
    frac.resize(nr, 0.0);
    for (i, a) in op.accesses.iter().enumerate() {
        // A stream's next lines are known ahead, so the prefetchers keep more of them in
        // flight than a random access pattern allows.
        let hit = lru.hit(op, at.regions, i, line);
        let (touched, lines, in_flight) = match a.pattern {
            Pattern::Random => {
                let touched = (a.bytes / line).ceil();
                (touched, (1.0 - hit) * touched, mlp)
            }
            Pattern::Stream => (a.bytes / line, a.bytes / line, stream_mlp),
        };
        if a.pattern == Pattern::Random {
            out.random_lines += touched;
            // The lines that hit still wait for the LLC, overlapped as misses are.
            let hit_ns = hit * touched * llc_ns / mlp;
            match overlap.as_mut() {
                Some(o) => o.hit_ns += hit_ns,
                None => out.base_ns += hit_ns,
            }
            // Page walks, hit or miss in the LLC, overlapped likewise (none without a TLB, so
            // that a machine without one adds nothing, not even a zero).
            if let Some(walk) = walk {
                let walk_ns = touched * walk / mlp;
                match overlap.as_mut() {
                    Some(o) => o.hit_ns += walk_ns,
                    None => out.base_ns += walk_ns,
                }
            }
        }
        out.lines += lines;
        out.touched_lines += touched;
        at.regions[a.region].node_fractions(cpu_node, frac);
        let traffic = if a.write { 2.0 } else { 1.0 } * line;
        let coef = match overlap.as_mut() {
            Some(o) if a.pattern == Pattern::Stream && own_stream_queue => &mut o.stream_coef,
            _ => &mut out.coef,
        };
        for (j, &f) in frac.iter().enumerate() {
            if f != 0.0 {
                coef[j] += lines * f * topo.latency_ns(cpu_node, j) / in_flight;
                out.bytes[j] += lines * f * traffic;
            }
        }
        out.base_ns += a.contended * xfer_ns.get(i).copied().unwrap_or(0.0);
    }
    out.overlap = overlap;
    out.finish();
}

/// Cost of one operation under contention `q` (see [`linear_op`]).
pub fn op_profile(
    topo: &Topology,
    op: &OpCost,
    regions: &[Region],
    cpu_node: NodeId,
    cache_share: f64,
    q: &Contention,
    xfer_ns: &[f64],
) -> OpProfile {
    let l = linear_op(topo, op, regions, cpu_node, cache_share, xfer_ns);
    OpProfile {
        ns: l.ns(q),
        lines: l.lines,
        bytes: l.bytes,
    }
}

/// Time of one operation of `op` on a CPU of `node` with no coherence stall, ns: core cycles
/// and the lines it misses with the whole LLC to itself at the idle local latency, over MLP,
/// added on an in-order core and overlapped on an out-of-order one as in [`linear_op`].
/// A cheap, placement-independent estimate of how often a thread reaches for a shared line
/// when it never waits for it (the coherence model's free-running access interval).
pub fn free_op_ns(topo: &Topology, op: &OpCost, regions: &[Region], node: NodeId) -> f64 {
    let cpu = &topo.cpu_model;
    let line = cpu.line_bytes as f64;
    let lru = LruShare::solve(
        op,
        regions,
        cpu.llc_bytes as f64,
        line,
        cpu.llc_stream_share,
        set_mapping(topo),
    );
    let hit = |i: usize| lru.hit(op, regions, i, line);
    let lines = |a: &crate::program::Access| lines_per_op(a, line);
    let in_flight = |a: &crate::program::Access| match a.pattern {
        Pattern::Random => cpu.mlp.max(1e-3),
        Pattern::Stream => cpu.stream_mlp().max(1e-3),
    };
    // Lines missed, each over the lines in flight for its pattern.
    let over_mlp = |i: usize| {
        let a = &op.accesses[i];
        (1.0 - hit(i)) * lines(a) / in_flight(a)
    };
    let of = |pattern: Pattern| -> f64 {
        (0..op.accesses.len())
            .filter(|&i| op.accesses[i].pattern == pattern)
            .map(over_mlp)
            .sum()
    };
    let hits_over_mlp: f64 = (0..op.accesses.len())
        .filter(|&i| op.accesses[i].pattern == Pattern::Random)
        .map(|i| hit(i) * lines(&op.accesses[i]) / in_flight(&op.accesses[i]))
        .sum();
    let latency = topo.latency_ns(node, node);
    let core = op.cycles * topo.ns_per_cycle();
    let mut hits = hits_over_mlp * cpu.llc_latency_ns.unwrap_or(0.0);
    if let Some(walk) = walk_ns_per_random_line(topo, random_footprint(op, regions)) {
        let random_lines: f64 = (op.accesses.iter())
            .filter(|a| a.pattern == Pattern::Random)
            .map(|a| lines(a) / in_flight(a))
            .sum();
        hits += random_lines * walk;
    }
    if !cpu.out_of_order {
        // Summed over the accesses in their order, as before the overlap was modelled.
        let lines_over_mlp: f64 = (0..op.accesses.len()).map(over_mlp).sum();
        return core + lines_over_mlp * latency + hits;
    }
    let (random, streams) = (of(Pattern::Random), of(Pattern::Stream));
    let (misses, streams) = if cpu.stream_mlp.is_some() {
        (random * latency + hits, streams * latency)
    } else {
        ((random + streams) * latency + hits, 0.0)
    };
    core.max(misses).max(streams)
}
