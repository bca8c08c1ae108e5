//! The cost model: how fast a running task progresses.
//!
//! One operation of a `Memory` phase costs its core cycles plus, for each access, the cache
//! lines that miss times the load-to-use latency of the node holding them, divided by the
//! memory-level parallelism of the core (Little's law: `mlp` misses overlap). The latency is
//! the idle latency for that (CPU node, memory node) pair, raised by a contention factor of the
//! memory node that grows with its bandwidth use. Bandwidth use in turn depends on how fast
//! every running task goes, so the factors are found by a damped fixed-point iteration.
//! Accesses to a cache line shared with other running threads of the process pay coherence
//! stalls as the invalidation protocol moves the line between them ([`line_stalls`];
//! docs/model/ gives every parameter and its source).
//!
//! An in-order core stalls at the first use of a missing load, so its core cycles and its
//! memory stalls add up. An out-of-order core (`cpu.out_of_order`) keeps issuing independent
//! work under its misses: an operation costs the longest of its core work and its memory
//! stalls (first-order interval analysis), and streams that the prefetchers fetch on their
//! own queue (`cpu.stream_mlp` given) overlap the random misses too.
//!
//! Where the machine gives a data TLB (`cpu.tlb_entries`), a random access whose page has no
//! entry first walks the page table ([`walk_ns_per_random_line`]); the walk waits as an LLC
//! hit does.

use super::lru::{LruShare, lines_per_op};
use super::sets::SetMapping;
use crate::memory::Region;
use crate::program::{OpCost, Pattern};
use topo::{NodeId, Topology};

/// Latency multipliers per memory node: for accesses from its own CPUs and from other nodes.
#[derive(Debug, Default, PartialEq)]
pub struct Contention {
    pub local: Vec<f64>,
    pub remote: Vec<f64>,
}

/// By hand for `clone_from`, which the refresh calls before every solve: the derived one
/// clones into new vectors and frees the old ones; this one copies into the buffers.
impl Clone for Contention {
    fn clone(&self) -> Self {
        Contention {
            local: self.local.clone(),
            remote: self.remote.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.local.clone_from(&source.local);
        self.remote.clone_from(&source.remote);
    }
}

impl Contention {
    pub fn idle(nr_nodes: usize) -> Self {
        Contention {
            local: vec![1.0; nr_nodes],
            remote: vec![1.0; nr_nodes],
        }
    }

    fn factor(&self, cpu_node: NodeId, mem_node: NodeId) -> f64 {
        if cpu_node == mem_node {
            self.local[mem_node]
        } else {
            self.remote[mem_node]
        }
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
    fn term(&self, j: NodeId) -> Term {
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

/// How many of a task's last runs on its LLC [`TurnHistory`] remembers.
pub const TURN_RUNS: usize = 8;

/// A task's last runs on the LLC it last used, newest first (docs/model/caches.md, "Turns on a
/// cache"): per run, the bytes the others touched on the LLC between its previous run and
/// this one, and the distinct bytes it touched itself. The LLC keeps the most recently
/// touched bytes of everyone, so which of the task's lines are still there depends on how its
/// own touches and the others' interleave, not only on the others' last turn.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TurnHistory {
    runs: [(f64, f64); TURN_RUNS],
    len: usize,
    /// The others' bytes before the current run, until it ends.
    pending: f64,
}

impl TurnHistory {
    /// Forget the runs: after a cold refill the task holds its whole share again.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// A run starts after the others touched `others` bytes on the LLC since the last one.
    pub fn begin(&mut self, others: f64) {
        self.pending = others;
    }

    /// The run ends, having touched `own` distinct bytes. A run that nobody else's touches
    /// separate from the one before continues it (a task preempted by work that touches no
    /// memory keeps its lines as if it had run on).
    pub fn end(&mut self, own: f64) {
        if self.len > 0 && self.pending < 1.0 {
            self.runs[0].1 += own;
            return;
        }
        self.runs.copy_within(0..TURN_RUNS - 1, 1);
        self.runs[0] = (self.pending, own);
        self.len = (self.len + 1).min(TURN_RUNS);
        self.pending = 0.0;
    }

    /// The fraction of what the task holds alone (`cached_bytes`) still in an LLC of
    /// `llc_bytes` when it comes back after the others touched `others` bytes, for a task
    /// whose runs touch `footprint` bytes.
    ///
    /// The LLC is read as LRU: a line stays while fewer than `llc_bytes` were touched since
    /// its last touch. Walking back from now, the others' bytes and the task's own runs use
    /// up that reach; a run's last `x` distinct bytes are `x / footprint` of the task's lines,
    /// and a line is held if some run within reach touched it (runs taken as independent).
    /// Alone the reach is all its own, `min(1, llc_bytes / footprint)`: the share is the
    /// ratio of the two. Before the remembered runs the reach continues with the runs' own
    /// mix, or, while fewer runs than [`TURN_RUNS`] were seen since the last cold refill, as
    /// the task's own (the refill gave it its whole share).
    pub fn held_share(&self, others: f64, llc_bytes: f64, footprint: f64) -> f64 {
        self.walk(others, llc_bytes, footprint).held
    }

    /// The walk back from a return after the others touched `others` bytes, ready to be
    /// asked what the older lines hold as the run touches more ([`TurnWalk`]).
    pub fn walk(&self, others: f64, llc_bytes: f64, footprint: f64) -> TurnWalk {
        let mut w = TurnWalk {
            start: [0.0; TURN_RUNS + 1],
            missed: [1.0; TURN_RUNS + 1],
            own: [0.0; TURN_RUNS],
            len: self.len,
            own_mix: 1.0,
            alone: 1.0,
            footprint,
            degenerate: footprint <= 0.0 || llc_bytes <= 0.0,
            held: 1.0,
        };
        if w.degenerate {
            return w;
        }
        w.alone = (llc_bytes / footprint).min(1.0);
        let runs = &self.runs[..self.len];
        let mut reach = llc_bytes - others;
        for (i, &(before, own)) in runs.iter().enumerate() {
            w.start[i] = reach;
            w.own[i] = own;
            w.missed[i + 1] = w.missed[i] * (1.0 - (own / footprint).min(1.0));
            reach -= own + before;
        }
        w.start[self.len] = reach;
        if self.len == TURN_RUNS {
            let own: f64 = runs.iter().map(|r| r.1).sum();
            let all: f64 = runs.iter().map(|r| r.0 + r.1).sum();
            w.own_mix = own / all.max(1e-9);
        }
        w.held = w.held_share_beneath(0.0);
        w
    }
}

/// A task's remembered runs laid out along the cache's reach, back from its return: where
/// each run starts (`start[i]`, the reach left before it) and what the runs newer than it
/// missed together (`missed[i]`). Under LRU only the oldest run that the reach still touches
/// can be partly in it: a newer run has the older one's start plus what came between.
#[derive(Clone, Copy, Debug)]
pub struct TurnWalk {
    start: [f64; TURN_RUNS + 1],
    missed: [f64; TURN_RUNS + 1],
    own: [f64; TURN_RUNS],
    len: usize,
    own_mix: f64,
    alone: f64,
    footprint: f64,
    degenerate: bool,
    /// The share held at the return ([`TurnHistory::held_share`]), computed once.
    pub held: f64,
}

impl TurnWalk {
    /// Nothing of the task's is left within the reach: the others touched the whole cache.
    pub fn nothing_held(&self) -> bool {
        !self.degenerate && self.start[0] <= 0.0
    }

    /// [`TurnHistory::held_share`] of the lines from before the current run, once the run has
    /// touched `own_now` distinct bytes: the newest part of the cache's reach is the run's
    /// own, so what came before it holds less (under LRU a task's new lines push out its own
    /// old ones as well as the others').
    pub fn held_share_beneath(&self, own_now: f64) -> f64 {
        if self.degenerate {
            return 1.0;
        }
        let fp = self.footprint;
        // The runs the reach still touches: a prefix, as the starts decrease.
        let k = self.start[..self.len]
            .iter()
            .take_while(|&&s| s - own_now > 0.0)
            .count();
        let missed = if k == 0 {
            1.0
        } else {
            let reach = self.start[k - 1] - own_now;
            let own = self.own[k - 1];
            if own <= reach {
                // The whole run is within reach: what the walk already multiplied in.
                self.missed[k]
            } else {
                self.missed[k - 1] * (1.0 - (reach / fp).min(1.0))
            }
        };
        let tail = self.start[self.len] - own_now;
        let missed = if k == self.len && tail > 0.0 {
            missed * (1.0 - (tail * self.own_mix / fp).min(1.0))
        } else {
            missed
        };
        let share = (1.0 - missed) / self.alone;
        // Rounding must not turn "all of it" into a refill of a few bytes.
        if share > 1.0 - 1e-9 { 1.0 } else { share }
    }
}

/// Steps of the integral in [`refill_after_turns`].
const REFILL_STEPS: u32 = 8;

/// `-ln(1 - v)` at the end and the middle of each step of [`refill_after_turns`] for one `h`:
/// the tasks of a run mostly share a few values of `h`, and the logarithms were a sixth of the
/// integral's time. Kept per thread for the last `h` seen (a pure function of it: the same
/// bits as computing them anew).
#[derive(Clone, Copy)]
struct RefillLogs {
    h_bits: u64,
    at: [(f64, f64); REFILL_STEPS as usize],
}

thread_local! {
    static REFILL_LOGS: std::cell::Cell<RefillLogs> = const {
        std::cell::Cell::new(RefillLogs { h_bits: u64::MAX, at: [(0.0, 0.0); REFILL_STEPS as usize] })
    };
}

impl RefillLogs {
    fn of(h: f64) -> RefillLogs {
        REFILL_LOGS.with(|c| {
            let cached = c.get();
            if cached.h_bits == h.to_bits() {
                return cached;
            }
            let dv = h / f64::from(REFILL_STEPS);
            let mut at = [(0.0, 0.0); REFILL_STEPS as usize];
            for (k, e) in (0..REFILL_STEPS).zip(at.iter_mut()) {
                let lo = f64::from(k) * dv;
                let hi = (f64::from(k + 1) * dv).min(1.0 - 1e-12);
                let mid = 0.5 * (lo + hi);
                *e = (-(1.0 - hi).ln(), -(1.0 - mid).ln());
            }
            let fresh = RefillLogs {
                h_bits: h.to_bits(),
                at,
            };
            c.set(fresh);
            fresh
        })
    }

    fn at(&self, k: u32) -> (f64, f64) {
        self.at[k as usize]
    }
}

/// The stall of a task that comes back to its LLC after other tasks took turns on it, and
/// the lines it fetches again (docs/model/caches.md, "Turns on a cache").
///
/// Alone, a fraction `h` of its random lines is in the cache (`op.cached_bytes` of
/// `op.random_footprint`). Back after the others took their turns, it holds part of that
/// (`walk`, [`TurnHistory::walk`] from its return, for a footprint of `op.footprint`). Its
/// run then follows the LRU stack: after it touched a fraction `v` of its random lines
/// (uniform random accesses: `-ln(1 - v)` footprints of touches), those are held, and of the
/// rest only what its older runs left within the reach that the run's own bytes (random and
/// streamed) have not yet used ([`TurnWalk::held_share_beneath`]). An access hits with
/// probability `q(v) = v + (1 - v) h s(v)`, and costs `per_line_ns` more than alone while
/// `q < h`. The extra misses are the integral of `h - q` over its random touches until `q`
/// reaches `h` (the cache holds what it holds alone), or its own bytes fill the cache, or the
/// run (`run_ns`, the slice it was given) ends: the stall never outlasts the run. After a long
/// absence this gives `F (h + (1 - h) ln(1 - h))` lines, the exact figure for LRU, not the
/// whole of `h F`: while the task fills the cache again, many of its accesses would have
/// missed alone too.
///
/// Returns the stall and the lines, and the runs they hold for as well: `Some(end)` when any
/// run longer than `end` gives the same figures (the run's length did not cut the integral,
/// and no step ended at or after `end`), `None` when a run of another length might not.
#[allow(clippy::too_many_arguments)]
pub fn refill_after_turns(
    op: &LinearOp,
    walk: &TurnWalk,
    llc_bytes: f64,
    line_bytes: f64,
    per_line_ns: f64,
    op_ns: f64,
    run_ns: f64,
) -> ((f64, f64), Option<f64>) {
    let random = op.random_footprint;
    if op.cached_bytes <= 0.0 || random <= 0.0 || op.random_lines <= 0.0 {
        return ((0.0, 0.0), Some(f64::NEG_INFINITY));
    }
    if walk.held >= 1.0 {
        return ((0.0, 0.0), Some(f64::NEG_INFINITY));
    }
    let h = (op.cached_bytes / random).min(1.0);
    let random_bytes = op.random_lines * line_bytes;
    let stream_bytes = ((op.touched_lines - op.random_lines) * line_bytes).max(0.0);
    let stream_footprint = (op.footprint - random).max(0.0);
    // Operations per unit of `-ln(1 - v)`: `ops(v) = -ln(1 - v) * per_ln` operations touch a
    // fraction `v` of the random lines.
    let per_ln = random / random_bytes;
    let mut bounded = true;
    if walk.nothing_held() && h < 1.0 {
        // Back after the others filled the reach (a long absence, the common case of long
        // turns): `q = v`, and the integral has a closed form, `v + (1 - h) ln(1 - v)`
        // footprints of lines up to `v`, used when neither the run nor the cache cuts it.
        let ln_h = -(1.0 - h).ln();
        let lines = (h - (1.0 - h) * ln_h) * random / line_bytes;
        let own = h * random + (ln_h * per_ln * stream_bytes).min(stream_footprint);
        let t = ln_h * per_ln * op_ns + lines * per_line_ns;
        if own < llc_bytes && t <= run_ns {
            return ((lines * per_line_ns, lines), None);
        }
        // A longer run might have taken the closed form.
        bounded = false;
    }
    let dv = h / f64::from(REFILL_STEPS);
    let logs = RefillLogs::of(h);
    // Lines are a power of two of bytes: dividing by one is multiplying by its inverse, to
    // the bit (both round the same exact quotient), and a division costs several products.
    let per_byte = 1.0 / line_bytes;
    let exact_inverse = line_bytes > 0.0
        && line_bytes.is_normal()
        && line_bytes.to_bits() & ((1 << 52) - 1) == 0
        && per_byte.is_normal();
    let (mut lines, mut t, mut ln_lo) = (0.0, 0.0, 0.0);
    let mut end = f64::NEG_INFINITY;
    for k in 0..REFILL_STEPS {
        let lo = f64::from(k) * dv;
        let hi = (f64::from(k + 1) * dv).min(1.0 - 1e-12);
        let (ln_hi, ln_mid) = logs.at(k);
        let mid = 0.5 * (lo + hi);
        let streamed = if stream_bytes > 0.0 {
            (ln_mid * per_ln * stream_bytes).min(stream_footprint)
        } else {
            0.0
        };
        let own = mid * random + streamed;
        if own >= llc_bytes {
            break;
        }
        let q = mid + (1.0 - mid) * h * walk.held_share_beneath(own);
        // Per random line touched, `h - q` extra misses; `(1 - v)` of the touches in `dv`
        // are new lines, so `dx = random dv / (1 - v)` (taken at the midpoint, exact when
        // `h - q` is proportional to `1 - v`, as it is for a footprint the cache holds).
        let bytes = (h - q).max(0.0) / (1.0 - mid) * (hi - lo) * random;
        let d_lines = if exact_inverse {
            bytes * per_byte
        } else {
            bytes / line_bytes
        };
        let d_t = (ln_hi - ln_lo) * per_ln * op_ns + d_lines * per_line_ns;
        ln_lo = ln_hi;
        let step_end = t + d_t;
        if step_end >= run_ns {
            lines += d_lines * ((run_ns - t) / d_t).clamp(0.0, 1.0);
            bounded = false;
            break;
        }
        // A run longer than every step's end takes the same steps (`NaN` never compares).
        if step_end.is_nan() {
            bounded = false;
        } else if step_end > end {
            end = step_end;
        }
        lines += d_lines;
        t += d_t;
    }
    ((lines * per_line_ns, lines), bounded.then_some(end))
}

/// A task's last refill after turns ([`TurnHistory::walk`] and [`refill_after_turns`]) with
/// the bits it was computed from. A task that takes turns with the same others comes back
/// to the same history, after the same bytes of theirs, with the same operation: then the
/// walk and the integral are the ones it had, and are taken from here. A different run
/// length gives the same figures when it is longer than every step of the integral, which
/// is remembered too. Inputs are compared as bits, so a hit returns the same bits as the
/// computation it stands for.
#[derive(Clone, Debug, Default)]
pub struct RefillMemo {
    walk: Option<(WalkKey, TurnWalk)>,
    refill: Option<RefillEntry>,
}

/// What [`TurnHistory::walk`] reads.
#[derive(Clone, Copy, Debug)]
struct WalkKey {
    runs: [(f64, f64); TURN_RUNS],
    len: usize,
    others: f64,
    llc_bytes: f64,
    footprint: f64,
}

/// What [`refill_after_turns`] reads besides the walk, the run's length, its result, and the
/// run length beyond which that result holds for any run (infinite when only for this one).
#[derive(Clone, Copy, Debug)]
struct RefillEntry {
    key: [f64; 9],
    run_ns: f64,
    result: (f64, f64),
    end: f64,
}

/// The same bits.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits()
}

impl WalkKey {
    /// The key of a walk of `turns` with these figures, compared in place (no key is built
    /// for a hit).
    fn matches(&self, turns: &TurnHistory, others: f64, llc_bytes: f64, footprint: f64) -> bool {
        same(self.others, others)
            && self.len == turns.len
            && same(self.llc_bytes, llc_bytes)
            && same(self.footprint, footprint)
            && self
                .runs
                .iter()
                .zip(&turns.runs)
                .all(|(a, b)| same(a.0, b.0) && same(a.1, b.1))
    }
}

impl RefillMemo {
    /// [`TurnHistory::walk`], the last one again if asked for the same bits. A new walk
    /// forgets the integral, which was for the old one.
    pub fn walk(
        &mut self,
        turns: &TurnHistory,
        others: f64,
        llc_bytes: f64,
        footprint: f64,
    ) -> &TurnWalk {
        let hit = self
            .walk
            .as_ref()
            .is_some_and(|(k, _)| k.matches(turns, others, llc_bytes, footprint));
        if !hit {
            let key = WalkKey {
                runs: turns.runs,
                len: turns.len,
                others,
                llc_bytes,
                footprint,
            };
            self.walk = Some((key, turns.walk(others, llc_bytes, footprint)));
            self.refill = None;
        }
        &self.walk.as_ref().expect("just made").1
    }

    /// [`refill_after_turns`] for the last [`RefillMemo::walk`], the last figures again if
    /// asked for the same bits and a run they hold for.
    pub fn refill(
        &mut self,
        op: &LinearOp,
        line_bytes: f64,
        per_line_ns: f64,
        op_ns: f64,
        run_ns: f64,
    ) -> (f64, f64) {
        let (wk, walk) = self.walk.as_ref().expect("a walk first");
        let key = [
            op.random_footprint,
            op.cached_bytes,
            op.random_lines,
            op.touched_lines,
            op.footprint,
            wk.llc_bytes,
            line_bytes,
            per_line_ns,
            op_ns,
        ];
        if let Some(e) = &self.refill
            && (run_ns > e.end || same(run_ns, e.run_ns))
            && e.key.iter().zip(&key).all(|(&a, &b)| same(a, b))
        {
            return e.result;
        }
        let (result, end) = refill_after_turns(
            op,
            walk,
            wk.llc_bytes,
            line_bytes,
            per_line_ns,
            op_ns,
            run_ns,
        );
        self.refill = Some(RefillEntry {
            key,
            run_ns,
            result,
            end: end.unwrap_or(f64::INFINITY),
        });
        result
    }
}

/// Bytes of the distinct regions an operation reads at random.
fn random_footprint(op: &OpCost, regions: &[Region]) -> f64 {
    footprint(op, regions, |a| a.pattern == Pattern::Random)
}

/// Bytes of the distinct regions of the accesses `which` selects.
fn footprint(
    op: &OpCost,
    regions: &[Region],
    which: impl Fn(&crate::program::Access) -> bool,
) -> f64 {
    // An operation has a handful of accesses: a region counts at its first selected one
    // (no allocation, on the path of every rebuilt decomposition).
    let mut total = 0.0;
    for (i, a) in op.accesses.iter().enumerate() {
        let first = which(a)
            && !op.accesses[..i]
                .iter()
                .any(|b| b.region == a.region && which(b));
        if first {
            total += regions[a.region].bytes as f64;
        }
    }
    total
}

/// How the machine's LLC maps lines to sets (`kernel::sets`), or `None` for a fully
/// associative one.
fn set_mapping(topo: &Topology) -> Option<SetMapping> {
    let cpu = &topo.cpu_model;
    cpu.llc_ways.map(|ways| SetMapping {
        ways,
        page_lines: topo.memory.page_bytes as f64 / cpu.line_bytes as f64,
    })
}

/// What address translation adds to each line an operation reads at random, ns, before the
/// division by MLP: the share of those accesses that miss the machine's last-level data TLB
/// times the cycles of a page walk (docs/model/memory-and-cost.md, "TLB walks"). The TLB holds
/// `tlb_entries` translations of base pages; accesses spread uniformly over `footprint`
/// bytes of random regions find their page there with probability `entries x page /
/// footprint` (an LRU or random-replacement TLB under uniform references), so a footprint
/// within the TLB's reach walks never. `None` when the machine gives no TLB, the walk is free
/// or nothing misses.
pub fn walk_ns_per_random_line(topo: &Topology, footprint: f64) -> Option<f64> {
    let (reach, cycles) = topo.tlb()?;
    if footprint <= reach {
        return None;
    }
    Some((1.0 - reach / footprint) * cycles * topo.ns_per_cycle())
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

/// The running threads on one node that reach a shared cache line in the same way (all write
/// it, or all only read it): one party of the coherence model ([`line_stalls`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LineParty {
    pub node: NodeId,
    pub writes: bool,
    /// Threads in the party.
    pub members: u32,
    /// Time between two accesses of one member to the line when it never waits for it, ns.
    pub interval_ns: f64,
    /// How long a member runs on after a store to a line it does not own before its store
    /// buffer is full, ns (writers; 0 for readers).
    pub cover_ns: f64,
}

/// Expected coherence stall per access to a shared line, ns, for a member of each party
/// (MESI/MOESI invalidation protocol; docs/model/memory-and-cost.md gives the derivation and sources).
///
/// A member holds the line from the moment it arrives until a conflicting access by another
/// thread takes it away (for a reader: a write; for a writer: any access). Meanwhile its own
/// accesses hit. The line stays for the `window` = time to the next conflicting foreign access
/// (`1 / phi`, `phi` the foreign conflicting accesses per ns) plus the request and snoop legs
/// of that thread's transfer (half a transfer), so one epoch holds `A = 1 + window /
/// interval` accesses and costs one stall: the transfer back (`X`, the mean over the
/// conflicting threads' nodes of [`line_transfer_ns`]) plus the wait `w` for the line; a
/// writer's store buffer hides `cover_ns` of it. Stall per access = stall per epoch / `A`.
/// The line carries one transfer at a time: when the epochs would keep it in transit more than
/// all of the time (`busy > 1`), every request also waits `w`, chosen so that `busy = 1` (the
/// same cap as the memory bandwidth model's `max(1, rho)`). Several readers fetch the line in
/// the same epoch after a write, so readers' epochs count at most once per writer epoch.
pub fn line_stalls(topo: &Topology, parties: &[LineParty]) -> Vec<f64> {
    struct Epoch {
        writes: bool,
        members: f64,
        x: f64,
        accesses: f64,
        interval: f64,
        cover: f64,
    }
    let conflicts = |i: usize, j: usize| parties[i].writes || parties[j].writes;
    let epochs: Vec<Option<Epoch>> = (0..parties.len())
        .map(|i| {
            let p = &parties[i];
            if p.members == 0 || p.interval_ns <= 0.0 {
                return None;
            }
            let (mut phi, mut x) = (0.0, 0.0);
            for (j, q) in parties.iter().enumerate() {
                let others = f64::from(q.members) - if i == j { 1.0 } else { 0.0 };
                if others <= 0.0 || q.interval_ns <= 0.0 || !conflicts(i, j) {
                    continue;
                }
                let rate = others / q.interval_ns;
                phi += rate;
                x += rate * line_transfer_ns(topo, p.node, q.node);
            }
            if phi <= 0.0 {
                return None;
            }
            let x = x / phi;
            let window = 1.0 / phi + x / 2.0;
            Some(Epoch {
                writes: p.writes,
                members: f64::from(p.members),
                x,
                accesses: 1.0 + window / p.interval_ns,
                interval: p.interval_ns,
                cover: if p.writes { p.cover_ns.max(0.0) } else { 0.0 },
            })
        })
        .collect();
    let stall = |e: &Epoch, w: f64| {
        if e.writes {
            (e.x + w - e.cover).max(0.0)
        } else {
            e.x + w
        }
    };
    // Fraction of the time the line is in transit with waits `w`.
    let busy = |w: f64| {
        let (mut writer_rate, mut writer_busy, mut reader_rate, mut reader_busy) =
            (0.0, 0.0, 0.0, 0.0);
        for e in epochs.iter().flatten() {
            let rate = e.members / (e.accesses * e.interval + stall(e, w));
            if e.writes {
                writer_rate += rate;
                writer_busy += rate * e.x;
            } else {
                reader_rate += rate;
                reader_busy += rate * e.x;
            }
        }
        let readers = if reader_rate > 0.0 {
            reader_busy / reader_rate * reader_rate.min(writer_rate)
        } else {
            0.0
        };
        writer_busy + readers
    };
    let mut w = 0.0;
    if busy(0.0) > 1.0 {
        let mut hi = epochs
            .iter()
            .flatten()
            .map(|e| e.x + e.cover)
            .fold(1.0, f64::max);
        for _ in 0..64 {
            if busy(hi) <= 1.0 {
                break;
            }
            hi *= 2.0;
        }
        let mut lo = 0.0;
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if busy(mid) > 1.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        w = hi;
    }
    epochs
        .iter()
        .map(|e| e.as_ref().map_or(0.0, |e| stall(e, w) / e.accesses))
        .collect()
}

/// Coherence stall per `contended` access when the region holds many shared lines (it is
/// larger than one line): which lines, and so how often each one is touched, is not known, so
/// a contended access is one that finds its line last written by another running thread, as
/// the workloads declare it. Each misses: a reader pays the transfer from the writers' nodes
/// (mean weighted by their access rates), a writer the part its store buffer does not cover;
/// nothing while no other writer runs. No line is assumed saturated.
pub fn scattered_stalls(topo: &Topology, parties: &[LineParty]) -> Vec<f64> {
    parties
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (mut rate, mut x) = (0.0, 0.0);
            for (j, q) in parties.iter().enumerate() {
                let others = f64::from(q.members) - if i == j { 1.0 } else { 0.0 };
                if !q.writes || others <= 0.0 || q.interval_ns <= 0.0 {
                    continue;
                }
                rate += others / q.interval_ns;
                x += others / q.interval_ns * line_transfer_ns(topo, p.node, q.node);
            }
            if p.members == 0 || rate <= 0.0 {
                0.0
            } else if p.writes {
                (x / rate - p.cover_ns).max(0.0)
            } else {
                x / rate
            }
        })
        .collect()
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

/// Derivative of [`loaded_factor`] with respect to `rho`.
fn loaded_factor_slope(rho: f64, ratio: f64) -> f64 {
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
struct Gathered {
    demands: Vec<GatheredDemand>,
    /// Per demand, its nodes in `nz` order (`terms[start..end]`).
    terms: Vec<Term>,
    /// What the last demand a Newton step computed added to each node ([`Added`]).
    last: Vec<Added>,
}

#[derive(Debug)]
struct GatheredDemand {
    cpu_node: NodeId,
    base_ns: f64,
    /// An out-of-order core's core and hit times ([`Overlap`]); `None`: in order.
    overlap: Option<(f64, f64)>,
    start: usize,
    end: usize,
    /// Equal, bit for bit, to the demand before it. Tasks of one program on one node with
    /// their memory on that node and the same cache share have the same decomposition, and
    /// the CPUs of a node are consecutive: at 1024 CPUs with 8 jobs per CPU under `o1`, 55%
    /// of the demands of a solve repeat the one before. A Newton step adds such a demand's
    /// quotients again instead of dividing anew (the same values, added in the same order).
    repeats: bool,
}

/// What one demand adds to a node in a Newton step: its bandwidth (`b / ns`, to the node's
/// and, from a remote CPU, its link's) and the slope of its time (`b c / ns^2`).
#[derive(Debug, Clone, Copy)]
struct Added {
    node: NodeId,
    bw: f64,
    slope: f64,
}

/// One node of a demand: its stall coefficient, its streams' coefficient (out of order) and
/// its traffic.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    node: NodeId,
    coef: f64,
    stream_coef: f64,
    bytes: f64,
}

/// Demands from which a solve gathers them first ([`Gathered`]). Below it the copy costs
/// more than it saves (`linux` on numa_test N=64, azusa16: 5% fewer events per CPU second
/// when every solve gathered).
const GATHER_MIN: usize = 64;

/// The per-node sums of a Newton step ([`SolveBuffers`]), borrowed.
struct Traffic<'a> {
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
enum Slopes {
    Coef,
    Stream,
}

impl Gathered {
    fn gather(&mut self, demands: &[&LinearOp]) {
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
    fn ns_and_slopes(&self, terms: &[Term], q: &Contention) -> (f64, Option<Slopes>) {
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
fn solve_nodes_with(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemPolicy, NodeMemory};
    use crate::program::Access;

    fn machine() -> Topology {
        topo::parse_synthetic("nodes=2,cpus-per-node=4,remote-ratio=2").expect("synthetic")
    }

    /// [`machine`] with an in-order core, whose parts of an operation add up.
    fn in_order() -> Topology {
        let mut t = machine();
        t.cpu_model.out_of_order = false;
        t
    }

    /// [`machine`] with an out-of-order core.
    fn out_of_order() -> Topology {
        let mut t = machine();
        t.cpu_model.out_of_order = true;
        t
    }

    /// `random` bytes of region 0 at random and `stream` bytes of region 1 in order per
    /// operation, besides `cycles` of core work.
    fn mixed_op(cycles: f64, random: f64, stream: f64) -> OpCost {
        let access = |region, pattern, bytes| Access {
            region,
            pattern,
            bytes,
            write: false,
            contended: 0.0,
        };
        OpCost {
            cycles,
            accesses: vec![
                access(0, Pattern::Random, random),
                access(1, Pattern::Stream, stream),
            ],
        }
    }

    fn region_on(t: &Topology, node: NodeId, bytes: u64) -> Region {
        let mut m = NodeMemory::new(t);
        let mut r = Region::new(
            "a",
            bytes,
            MemPolicy::Bind(vec![node]),
            2 << 20,
            t.nr_nodes(),
        );
        for g in 0..r.groups.len() {
            m.touch(t, &mut r, g, node);
        }
        r
    }

    fn random_op() -> OpCost {
        OpCost::random_write(4.0)
    }

    /// One line read in order from region 0 per operation.
    fn stream_read_op() -> OpCost {
        OpCost {
            cycles: 0.0,
            accesses: vec![Access {
                region: 0,
                pattern: Pattern::Stream,
                bytes: 64.0,
                write: false,
                contended: 0.0,
            }],
        }
    }

    #[test]
    fn streams_push_random_data_out_only_of_a_cache_that_lets_them() {
        // 4 MiB at random and a 6 MiB stream, in a 5 MiB share: the array fits alone.
        let mut t = in_order();
        let r = [region_on(&t, 0, 4 << 20), region_on(&t, 0, 6 << 20)];
        let op = mixed_op(0.0, 8.0, 8.0);
        let share = (5u64 << 20) as f64;
        let q = Contention::idle(2);
        let scan_resistant = op_profile(&t, &op, &r, 0, share, &q, &[]);
        t.cpu_model.llc_stream_share = 1.0;
        let lru = op_profile(&t, &op, &r, 0, share, &q, &[]);
        // Without the streams' share only the stream misses (one line per 8 operations).
        assert!((scan_resistant.lines - 0.125).abs() < 1e-12);
        assert!(lru.lines > scan_resistant.lines + 0.05, "{}", lru.lines);
        assert!(lru.ns > scan_resistant.ns);
        // A share that holds both keeps the array whatever the policy; the stream misses.
        let all = op_profile(&t, &op, &r, 0, (16u64 << 20) as f64, &q, &[]);
        assert!((all.lines - 0.125).abs() < 1e-12);
    }

    #[test]
    fn remote_memory_costs_more_by_latency() {
        let t = in_order();
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
        let op = stream_read_op();
        let one = linear_op(&t, &op, &regions, 0, 0.0, &[]);
        let mk = |n: usize| -> Vec<&LinearOp> { (0..n).map(|_| &one).collect() };
        let (q1, _) = solve_contention(&t, &mk(1), &Contention::idle(2));
        let (q4, iters) = solve_contention(&t, &mk(4), &Contention::idle(2));
        assert!(iters < 100, "did not converge");
        assert!(q4.local[0] > q1.local[0]);
        // Delivered bandwidth never exceeds the node's peak by more than rounding.
        let p = op_profile(&t, &op, &regions, 0, 0.0, &q4, &[]);
        let delivered = 4.0 * p.bytes[0] / p.ns;
        assert!(delivered <= t.nodes[0].bandwidth_gbps * 1.01, "{delivered}");
        assert_eq!(q1.local[1], 1.0);
    }

    /// Two nodes' factors under load, local and remote apart, for the bit-for-bit tests.
    fn loaded_factors() -> Contention {
        let mut q = Contention::idle(2);
        (q.local[0], q.remote[0], q.local[1], q.remote[1]) = (1.3, 1.7, 1.1, 2.9);
        q
    }

    #[test]
    fn a_gathered_demand_costs_what_its_decomposition_does() {
        // In order and out of order, local and remote, under loaded factors: the gathered
        // copy's time has the same bits and picks the same slope coefficients.
        let q = loaded_factors();
        for t in [in_order(), out_of_order()] {
            let regions = [region_on(&t, 0, 1 << 30), region_on(&t, 1, 1 << 30)];
            let ops: Vec<LinearOp> = [(0, 3.0, 8.0, 64.0), (1, 300.0, 8.0, 8.0)]
                .iter()
                .map(|&(node, cycles, random, stream)| {
                    linear_op(
                        &t,
                        &mixed_op(cycles, random, stream),
                        &regions,
                        node,
                        0.0,
                        &[],
                    )
                })
                .collect();
            let refs: Vec<&LinearOp> = ops.iter().collect();
            let mut g = Gathered::default();
            g.gather(&refs);
            for (op, d) in ops.iter().zip(&g.demands) {
                let terms = &g.terms[d.start..d.end];
                let (ns, slopes) = op.ns_and_slopes(&q);
                let (gns, gslopes) = d.ns_and_slopes(terms, &q);
                assert_eq!(ns.to_bits(), gns.to_bits());
                for (t, &j) in terms.iter().zip(&op.nz) {
                    let c = match gslopes {
                        None => 0.0,
                        Some(Slopes::Coef) => t.coef,
                        Some(Slopes::Stream) => t.stream_coef,
                    };
                    assert_eq!(c.to_bits(), slopes.map_or(0.0, |s| s[j]).to_bits());
                }
            }
        }
    }

    /// The decomposition memo hands out copies made by `copy_from`: a copy must equal its
    /// source in every field, the one-node term included (the ninth and tenth speed passes
    /// each kept the bytes alone, and together did not until `lone` was copied).
    #[test]
    fn a_copied_decomposition_equals_its_source() {
        for t in [in_order(), out_of_order()] {
            let regions = [region_on(&t, 0, 1 << 30), region_on(&t, 1, 1 << 30)];
            let local = linear_op(&t, &stream_read_op(), &regions[..1], 0, 0.0, &[]);
            let both = linear_op(&t, &mixed_op(3.0, 8.0, 64.0), &regions, 1, 0.0, &[]);
            assert!(local.lone.is_some() && both.lone.is_none());
            // Into an empty one, and over one with other contents (the memo reuses buffers).
            for (src, over) in [(&local, &both), (&both, &local)] {
                let mut fresh = LinearOp::default();
                fresh.copy_from(src);
                assert_eq!(&fresh, src);
                let mut reused = over.clone();
                reused.copy_from(src);
                assert_eq!(&reused, src);
            }
        }
    }

    #[test]
    fn a_solve_from_the_gathered_demands_has_the_bits_of_one_without() {
        // Runs of equal demands (whose quotients a step adds again), demands on two nodes
        // (no lone term), local and remote, in order and out of order: the factors and the
        // iterations are the same bits, gathered or not.
        for t in [in_order(), out_of_order()] {
            let regions = [region_on(&t, 0, 1 << 30), region_on(&t, 1, 1 << 30)];
            let local = linear_op(&t, &stream_read_op(), &regions[..1], 0, 0.0, &[]);
            let remote = linear_op(&t, &random_op(), &regions[..1], 1, 1e6, &[]);
            let both = linear_op(&t, &mixed_op(3.0, 8.0, 64.0), &regions, 1, 0.0, &[]);
            assert!(local.lone.is_some() && remote.lone.is_some() && both.lone.is_none());
            let mut demands = Vec::new();
            for i in 0..40 {
                demands.extend([&local, &local, &both]);
                demands.extend(std::iter::repeat_n(&remote, i % 3));
            }
            let mut results = Vec::new();
            for gather in [false, true] {
                let mut q = Contention::idle(2);
                let mut buf = SolveBuffers::default();
                let it = solve_nodes_with(&t, &demands, &[0, 1], &mut q, &mut buf, gather);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                results.push((it, bits(&q.local), bits(&q.remote)));
            }
            assert!(results[0].0 > 1, "several Newton steps");
            assert_eq!(results[0], results[1]);
        }
    }

    #[test]
    fn a_lone_term_times_an_operation_as_the_vectors_do() {
        // The inline copy of a one-node decomposition gives its time and slopes the bits the
        // vectors give.
        let q = loaded_factors();
        for t in [in_order(), out_of_order()] {
            // Both regions on node 0: one node, read locally or from node 1.
            let regions = [region_on(&t, 0, 1 << 30), region_on(&t, 0, 1 << 20)];
            for (node, op) in [
                (0, stream_read_op()),
                (1, random_op()),
                (1, mixed_op(300.0, 8.0, 8.0)),
            ] {
                let lone = linear_op(&t, &op, &regions, node, 1e6, &[]);
                assert!(lone.lone.is_some());
                let mut plain = lone.clone();
                plain.lone = None;
                let ((a, sa), (b, sb)) = (lone.ns_and_slopes(&q), plain.ns_and_slopes(&q));
                assert_eq!(a.to_bits(), b.to_bits());
                assert_eq!(sa, sb);
            }
        }
    }

    #[test]
    fn a_component_solved_alone_equals_the_machine_wide_solve() {
        // Node 0's memory is read from both nodes, node 1's only from node 1: two components
        // once node 1's demand is local only. Solving node 0's component alone from idle gives
        // the same factors (to the solver's tolerance) as solving the machine, and leaves node
        // 1's factors as they were.
        let t = machine();
        let (r0, r1) = ([region_on(&t, 0, 1 << 30)], [region_on(&t, 1, 1 << 30)]);
        let op = stream_read_op();
        let a = linear_op(&t, &op, &r0, 0, 0.0, &[]);
        let b = linear_op(&t, &op, &r0, 1, 0.0, &[]);
        let c = linear_op(&t, &op, &r1, 1, 0.0, &[]);
        assert_eq!(
            (a.nz.clone(), b.nz.clone(), c.nz.clone()),
            (vec![0], vec![0], vec![1])
        );
        let all = [&a, &b, &a, &c, &c];
        let (full, _) = solve_contention(&t, &all, &Contention::idle(2));
        let mut q = Contention::idle(2);
        q.local[1] = 7.0;
        let iters = solve_nodes_into(
            &t,
            &[&a, &b, &a],
            &[0],
            &mut q,
            &mut SolveBuffers::default(),
        );
        assert!(iters > 1);
        assert_eq!(q.local[1], 7.0, "outside the component nothing moves");
        for (x, y) in [(q.local[0], full.local[0]), (q.remote[0], full.remote[0])] {
            assert!((x - y).abs() < 1e-6 * y, "{x} vs {y}");
        }
        // A component that lost its last demand is idle.
        solve_nodes_into(&t, &[], &[0], &mut q, &mut SolveBuffers::default());
        assert_eq!((q.local[0], q.remote[0]), (1.0, 1.0));
    }

    fn party(node: NodeId, writes: bool, members: u32, interval_ns: f64) -> LineParty {
        LineParty {
            node,
            writes,
            members,
            interval_ns,
            cover_ns: 0.0,
        }
    }

    #[test]
    fn a_lone_writer_and_readers_alone_pay_nothing() {
        let t = machine();
        assert_eq!(line_stalls(&t, &[party(0, true, 1, 1.0)]), vec![0.0]);
        let readers = [party(0, false, 3, 1.0), party(1, false, 2, 1.0)];
        assert_eq!(line_stalls(&t, &readers), vec![0.0, 0.0]);
        // An empty party is no sharer.
        let s = line_stalls(&t, &[party(0, true, 1, 1.0), party(1, false, 0, 1.0)]);
        assert_eq!(s, vec![0.0, 0.0]);
    }

    #[test]
    fn a_reader_pays_at_most_one_transfer_per_foreign_write() {
        // A writer every 1000 ns, a reader every 1 ns, one node: the line comes back to the
        // reader once per write and then serves ~1000 reads. Known answer: window 1000 ns
        // (time to the next write) + 28.5 ns (half of the 57 ns transfer), 1029.5 reads per
        // transfer; the writer finds the line read after every write (1.0295 writes per
        // transfer). The line is in transit ~10% of the time: no waiting.
        let t = machine();
        let x = t.memory.line_transfer_local_ns;
        assert_eq!(x, 57.0);
        let s = line_stalls(&t, &[party(0, true, 1, 1000.0), party(0, false, 1, 1.0)]);
        assert!((s[1] - 57.0 / 1029.5).abs() < 1e-12, "{s:?}");
        assert!((s[0] - 57.0 / 1.0295).abs() < 1e-9, "{s:?}");
        let transfers_per_read = s[1] / x;
        assert!(transfers_per_read < 1.0 / 1000.0);
    }

    #[test]
    fn a_reader_writer_pair_pays_fewer_transfers_than_accesses() {
        let t = machine();
        let x = t.memory.line_transfer_local_ns;
        let s = line_stalls(&t, &[party(0, true, 1, 1.0), party(0, false, 1, 1.0)]);
        for stall in s {
            assert!(stall > 0.0 && stall < x / 10.0, "{stall}");
        }
    }

    #[test]
    fn a_store_buffer_hides_the_writers_ownership_requests() {
        let t = machine();
        let mut w = party(0, true, 1, 1000.0);
        let r = party(0, false, 1, 1.0);
        let bare = line_stalls(&t, &[w.clone(), r.clone()]);
        w.cover_ns = 30.0;
        let part = line_stalls(&t, &[w.clone(), r.clone()]);
        assert!((part[0] - (57.0 - 30.0) / 1.0295).abs() < 1e-9, "{part:?}");
        w.cover_ns = 100.0;
        let hidden = line_stalls(&t, &[w, r]);
        assert_eq!(hidden[0], 0.0);
        // Readers are not helped by the writer's store buffer.
        assert_eq!(hidden[1], bare[1]);
    }

    #[test]
    fn a_saturated_line_makes_requests_wait() {
        // Two writers storing every 1 ns, no store buffer: alone each would hold the line
        // for 1 + 28.5 ns and transfer it in 57 ns, 2 x 57 / 87.5 = 130% of the time: more
        // than the line can carry. Each request then waits w with 2 x 57 / (87.5 + w) = 1,
        // w = 26.5 ns, and a write costs (57 + 26.5) / 30.5 ns.
        let t = machine();
        let s = line_stalls(&t, &[party(0, true, 2, 1.0)]);
        assert!((s[0] - 83.5 / 30.5).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn scattered_lines_miss_once_per_contended_access_when_another_writer_runs() {
        let t = machine();
        let x = t.memory.line_transfer_local_ns;
        let mut w = party(0, true, 2, 1000.0);
        let r = party(0, false, 3, 1.0);
        // Readers pay a transfer, writers too (the other writer wrote the line).
        assert_eq!(scattered_stalls(&t, &[w.clone(), r.clone()]), vec![x, x]);
        w.cover_ns = 20.0;
        assert_eq!(
            scattered_stalls(&t, &[w.clone(), r.clone()]),
            vec![x - 20.0, x]
        );
        // A lone writer: nothing to fetch; readers of another node pay the remote transfer.
        w.members = 1;
        let far = party(1, false, 1, 1.0);
        let s = scattered_stalls(&t, &[w, far]);
        assert_eq!(s, vec![0.0, t.memory.line_transfer_remote_ns]);
    }

    #[test]
    fn remote_sharers_pay_more_per_transfer() {
        let t = machine();
        let local = line_stalls(&t, &[party(0, true, 1, 1000.0), party(0, false, 1, 1.0)]);
        let remote = line_stalls(&t, &[party(0, true, 1, 1000.0), party(1, false, 1, 1.0)]);
        assert!(remote[1] > local[1] && remote[0] > local[0]);
        assert_eq!(line_transfer_ns(&t, 0, 1), t.memory.line_transfer_remote_ns);
    }

    #[test]
    fn free_op_time_is_cycles_plus_misses() {
        let t = in_order();
        let small = [region_on(&t, 0, 64)];
        let op = OpCost::random_write(2.0);
        assert_eq!(free_op_ns(&t, &op, &small, 0), 2.0 * t.ns_per_cycle());
        let big = [region_on(&t, 0, 1 << 34)];
        let miss = free_op_ns(&t, &op, &big, 0) - 2.0 * t.ns_per_cycle();
        let expect = (1.0 - t.cpu_model.llc_bytes as f64 / (1u64 << 34) as f64)
            * t.latency_ns(0, 0)
            / t.cpu_model.mlp;
        assert!((miss - expect).abs() < 1e-9, "{miss} vs {expect}");
    }

    /// A decomposition of `mixed_op` over a random region of `random_mib` and a stream
    /// region of 1 MiB, with `share_mib` of LLC to itself.
    fn turns_op(random_mib: u64, share_mib: f64) -> LinearOp {
        let t = out_of_order();
        let regions = [
            region_on(&t, 0, random_mib << 20),
            region_on(&t, 0, 1 << 20),
        ];
        linear_op(
            &t,
            &mixed_op(10.0, 8.0, 8.0),
            &regions,
            0,
            share_mib * 1048576.0,
            &[],
        )
    }

    #[test]
    fn a_decomposition_knows_what_the_task_holds_and_touches() {
        // 8 MiB at random with 4 MiB of cache: half of it held.
        let op = turns_op(8, 4.0);
        assert_eq!(op.random_footprint, 8.0 * 1048576.0);
        assert_eq!(op.cached_bytes, 4.0 * 1048576.0);
        assert_eq!(op.footprint, 9.0 * 1048576.0);
        // One random line and an eighth of a streamed one per operation.
        assert_eq!(op.random_lines, 1.0);
        assert!((op.touched_lines - 1.125).abs() < 1e-12);
    }

    #[test]
    fn lines_survive_the_others_turns_while_both_fit_and_are_fetched_again_after() {
        let mib = 1048576.0;
        let op = turns_op(4, 16.0);
        let (line, per_line, op_ns) = (64.0, 5.0, 1.0);
        // Back after a cold refill: the cache's reach left by the others is all its own.
        let fresh = TurnHistory::default();
        let refill = |others: f64, run: f64| {
            refill_after_turns(
                &op,
                &fresh.walk(others * mib, 16.0 * mib, op.footprint),
                16.0 * mib,
                line,
                per_line,
                op_ns,
                run,
            )
            .0
        };
        let held_lines = 4.0 * mib / line;
        // Its 5 MiB (4 at random, 1 streamed) beside 11 MiB of others' lines: all survive.
        assert_eq!(op.footprint, 5.0 * mib);
        assert_eq!(refill(11.0, 1e9), (0.0, 0.0));
        // 14 MiB: the 2 MiB of reach left hold its most recent 2 of 5 MiB, so 3/5 of what
        // it held is evicted. Under LRU its old lines are the oldest in the cache, so the
        // lines it fetches in a long run push out its own survivors before the others'
        // lines: it fetches more than the 3/5, less than all.
        let (stall, lines) = refill(14.0, 1e12);
        assert!(
            lines > held_lines * 3.0 / 5.0 && lines < held_lines,
            "{lines}"
        );
        assert!((stall - lines * per_line).abs() < 1e-6);
        // More than the cache: every line it held is fetched once, each a miss.
        let (_, all) = refill(100.0, 1e12);
        assert!(
            (all - held_lines).abs() < 1e-6 * held_lines,
            "{all} vs {held_lines}"
        );
        // Nobody else ran, or nothing was held: nothing to pay.
        assert_eq!(refill(0.0, 1e12), (0.0, 0.0));
        let none = turns_op(4, 0.0);
        assert_eq!(
            refill_after_turns(
                &none,
                &fresh.walk(100.0 * mib, 16.0 * mib, none.footprint),
                16.0 * mib,
                line,
                per_line,
                op_ns,
                1e12
            )
            .0,
            (0.0, 0.0)
        );
    }

    /// An exact LRU cache of `lines` lines: `touch` says whether the line was there.
    struct ExactLru {
        prev: Vec<u32>,
        next: Vec<u32>,
        held: Vec<bool>,
        head: u32,
        tail: u32,
        len: usize,
        lines: usize,
    }

    impl ExactLru {
        const NONE: u32 = u32::MAX;

        fn new(lines: usize, ids: usize) -> Self {
            let none = Self::NONE;
            ExactLru {
                prev: vec![none; ids],
                next: vec![none; ids],
                held: vec![false; ids],
                head: none,
                tail: none,
                len: 0,
                lines,
            }
        }

        fn unlink(&mut self, x: u32) {
            let (p, n) = (self.prev[x as usize], self.next[x as usize]);
            if p == Self::NONE {
                self.head = n
            } else {
                self.next[p as usize] = n
            }
            if n == Self::NONE {
                self.tail = p
            } else {
                self.prev[n as usize] = p
            }
        }

        fn push_front(&mut self, x: u32) {
            self.prev[x as usize] = Self::NONE;
            self.next[x as usize] = self.head;
            if self.head != Self::NONE {
                self.prev[self.head as usize] = x;
            }
            self.head = x;
            if self.tail == Self::NONE {
                self.tail = x;
            }
        }

        fn touch(&mut self, x: u32) -> bool {
            if self.held[x as usize] {
                self.unlink(x);
                self.push_front(x);
                return true;
            }
            if self.len == self.lines {
                let victim = self.tail;
                self.unlink(victim);
                self.held[victim as usize] = false;
                self.len -= 1;
            }
            self.push_front(x);
            self.held[x as usize] = true;
            self.len += 1;
            false
        }
    }

    /// Two tasks, each reading uniformly at random over its own `footprint` lines, taking
    /// turns of `turn` reads on an exact LRU cache of `cache` lines: the misses per turn
    /// beyond what a task misses alone (`1 - min(1, cache / footprint)` of its reads).
    fn exact_extra_misses(cache: usize, footprint: usize, turn: usize) -> f64 {
        let mut lru = ExactLru::new(cache, 2 * footprint);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let turns = (2_000_000 / turn).max(64);
        let (mut hits, mut reads) = (0u64, 0u64);
        for k in 0..turns {
            let base = (k % 2 * footprint) as u32;
            for _ in 0..turn {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let hit = lru.touch(base + (x % footprint as u64) as u32);
                if k >= turns / 4 {
                    hits += u64::from(hit);
                    reads += 1;
                }
            }
        }
        let alone = (cache as f64 / footprint as f64).min(1.0);
        (alone - hits as f64 / reads as f64) * turn as f64
    }

    /// The same with the model: the histories as the engine keeps them, then the refill of
    /// a run of `turn` reads.
    fn model_extra_misses(cache: usize, footprint: usize, turn: usize) -> f64 {
        let line = 64.0;
        let bytes = footprint as f64 * line;
        let op = LinearOp {
            random_lines: 1.0,
            touched_lines: 1.0,
            random_footprint: bytes,
            footprint: bytes,
            cached_bytes: (cache as f64 * line).min(bytes),
            ..Default::default()
        };
        let run = (turn as f64 * line).min(bytes);
        let mut h = TurnHistory::default();
        for _ in 0..2 * TURN_RUNS {
            h.begin(run);
            h.end(run);
        }
        let llc = cache as f64 * line;
        refill_after_turns(
            &op,
            &h.walk(run, llc, op.footprint),
            llc,
            line,
            0.0,
            1.0,
            turn as f64,
        )
        .0
        .1
    }

    #[test]
    fn the_refill_memo_gives_the_bits_of_the_refill_it_stands_for() {
        let line = 64.0;
        let mib = 1024.0 * 1024.0;
        let op = LinearOp {
            random_lines: 1.0,
            touched_lines: 3.0,
            random_footprint: 6.0 * mib,
            footprint: 10.0 * mib,
            cached_bytes: 3.0 * mib,
            ..Default::default()
        };
        let llc = 4.0 * mib;
        let mut memo = RefillMemo::default();
        let mut h = TurnHistory::default();
        // Runs of every length around the integral's own, histories that repeat and change,
        // the others' bytes from none to the whole cache and more.
        for round in 0..6 * TURN_RUNS {
            let others = [0.0, 0.5, 3.0, 0.5, 5.0][round % 5] * mib;
            for run_ns in [1e2, 1e4, 1e5, 1e6, 1e9, 1e5, 1e9] {
                for op_ns in [10.0, 10.0, 20.0] {
                    let held = memo.walk(&h, others, llc, op.footprint).held;
                    let walk = h.walk(others, llc, op.footprint);
                    assert_eq!(held.to_bits(), walk.held.to_bits());
                    if held >= 1.0 {
                        continue;
                    }
                    let want = refill_after_turns(&op, &walk, llc, line, 90.0, op_ns, run_ns).0;
                    let got = memo.refill(&op, line, 90.0, op_ns, run_ns);
                    assert_eq!(got.0.to_bits(), want.0.to_bits());
                    assert_eq!(got.1.to_bits(), want.1.to_bits());
                }
            }
            h.begin(others);
            h.end([1.0, 2.0, 1.0][round % 3] * mib);
        }
    }

    #[test]
    fn the_refill_after_turns_follows_an_exact_lru_cache() {
        // A footprint of 2048 lines on caches that hold a half and a quarter of it, turns
        // from a sixteenth of the footprint to four times it. The model keeps the histories
        // as independent samples, which is within a fifth of the exact cache here; after a
        // long absence it is exact (`F (h + (1 - h) ln(1 - h))` lines). The rule before
        // (every evicted line a miss when next touched) fetched 3.3 times too many there.
        let footprint = 2048;
        for cache in [1024, 512] {
            for turn in [128, 512, 2048, 8192] {
                let exact = exact_extra_misses(cache, footprint, turn);
                let model = model_extra_misses(cache, footprint, turn);
                let ratio = model / exact;
                assert!(
                    (0.9..1.2).contains(&ratio),
                    "cache {cache}, turn {turn}: model {model:.1} against exact {exact:.1}"
                );
            }
        }
    }

    /// Two tasks alternating on one cache, each touching `turn` MiB per run of a `footprint`
    /// (MiB) much larger than the cache: the share each still holds at its return, once the
    /// histories are full.
    fn alternating_share(cache: f64, footprint: f64, turn: f64) -> f64 {
        let mut h = TurnHistory::default();
        let mut share = 1.0;
        let mib = 1048576.0;
        for _ in 0..4 * TURN_RUNS {
            share = h.held_share(turn * mib, cache * mib, footprint * mib);
            h.begin(turn * mib);
            h.end(turn * mib);
        }
        share
    }

    #[test]
    fn tasks_taking_short_turns_each_keep_about_their_part_of_the_recent_touches() {
        let (cache, footprint) = (4.0, 20.0);
        // Turns of a sixteenth of the cache: the reach holds about half of each task's own
        // recent touches, so each keeps about half of its alone share.
        let short = alternating_share(cache, footprint, cache / 16.0);
        assert!((0.45..0.56).contains(&short), "{short}");
        // Longer turns leave it more of its own lines at each return, up to a turn that
        // fills the cache, after which the other's turn evicts everything.
        let mut last = short;
        for turn in [cache / 8.0, cache / 4.0, cache / 2.0] {
            let s = alternating_share(cache, footprint, turn);
            assert!(s > last - 1e-9, "turn {turn}: {s} after {last}");
            last = s;
        }
        assert_eq!(alternating_share(cache, footprint, cache), 0.0);
        // A footprint the cache holds beside the other's: nothing is lost.
        assert_eq!(alternating_share(16.0, 4.0, 4.0), 1.0);
    }

    #[test]
    fn runs_that_nobody_else_separates_count_as_one() {
        // Eight runs of an eighth of the cache each, with nothing touched between them, hold
        // what one run of the whole cache holds: all of the share.
        let mib = 1048576.0;
        let mut h = TurnHistory::default();
        for _ in 0..8 {
            h.begin(0.0);
            h.end(0.5 * mib);
        }
        assert_eq!(h.held_share(0.0, 4.0 * mib, 20.0 * mib), 1.0);
        // The same runs, each after the others touched a little, hold less.
        let mut h = TurnHistory::default();
        for _ in 0..8 {
            h.begin(0.1 * mib);
            h.end(0.5 * mib);
        }
        assert!(h.held_share(0.1 * mib, 4.0 * mib, 20.0 * mib) < 1.0);
    }

    #[test]
    fn a_short_run_fetches_only_the_lines_it_touches_and_never_stalls_longer_than_it_runs() {
        let mib = 1048576.0;
        let op = turns_op(4, 16.0);
        let lines_held = 4.0 * mib / 64.0;
        let (per_line, op_ns) = (50.0, 1.0);
        // Back after the others filled the cache: nothing of its own is left.
        let fresh = TurnHistory::default();
        let refill = |run: f64| {
            refill_after_turns(
                &op,
                &fresh.walk(100.0 * mib, 16.0 * mib, op.footprint),
                16.0 * mib,
                64.0,
                per_line,
                op_ns,
                run,
            )
            .0
        };
        let mut last = 0.0;
        for run in [1e3, 1e5, 1e6, 1e7, 1e9] {
            let (stall, lines) = refill(run);
            assert!(stall < run, "run {run} ns, stall {stall} ns");
            assert!(
                lines <= lines_held * (1.0 + 1e-9) && lines >= last,
                "{lines}"
            );
            last = lines;
        }
        // 1 us at 51 ns per operation (every read a miss at first) is about 20 operations,
        // each fetching a line.
        let (_, few) = refill(1e3);
        assert!((few - 1e3 / 51.0).abs() < 0.2, "{few}");
    }

    #[test]
    fn streams_overlap_stream_mlp_lines_and_llc_hits_cost_their_latency() {
        let mut t = in_order();
        let big = [region_on(&t, 0, 1 << 30)];
        let stream = stream_read_op();
        let idle = Contention::idle(2);
        let ns = |t: &Topology, op: &OpCost, r: &[Region]| {
            op_profile(t, op, r, 0, t.cpu_model.llc_bytes as f64, &idle, &[]).ns
        };
        let by_mlp = ns(&t, &stream, &big);
        assert!((by_mlp - t.latency_ns(0, 0) / t.cpu_model.mlp).abs() < 1e-9);
        t.cpu_model.stream_mlp = Some(4.0 * t.cpu_model.mlp);
        assert!((ns(&t, &stream, &big) - by_mlp / 4.0).abs() < 1e-9);
        // A random array that fits the cache: free hits, unless the LLC has a latency.
        let small = [region_on(&t, 0, 4096)];
        let free = ns(&t, &random_op(), &small);
        assert_eq!(free, 4.0 * t.ns_per_cycle());
        t.cpu_model.llc_latency_ns = Some(30.0);
        let hit = ns(&t, &random_op(), &small) - free;
        assert!((hit - 30.0 / t.cpu_model.mlp).abs() < 1e-9, "{hit}");
        let f = free_op_ns(&t, &random_op(), &small, 0) - free;
        assert!((f - hit).abs() < 1e-9, "{f} vs {hit}");
    }

    #[test]
    fn random_accesses_beyond_the_tlbs_reach_pay_their_share_of_walks() {
        let mut t = in_order();
        let page = t.memory.page_bytes as f64;
        let idle = Contention::idle(2);
        let ns = |t: &Topology, r: &[Region]| {
            op_profile(
                t,
                &random_op(),
                r,
                0,
                t.cpu_model.llc_bytes as f64,
                &idle,
                &[],
            )
            .ns
        };
        // 64 entries reach 64 pages; an array of 256 pages misses three accesses in four.
        let (fits, big) = (
            [region_on(&t, 0, 64 * page as u64)],
            [region_on(&t, 0, 256 * page as u64)],
        );
        let without = (ns(&t, &fits), ns(&t, &big));
        t.cpu_model.tlb_entries = Some(64);
        t.cpu_model.tlb_walk_cycles = 20.0;
        // Within the reach nothing changes, to the bit.
        assert_eq!(ns(&t, &fits).to_bits(), without.0.to_bits());
        let walk = 20.0 * t.ns_per_cycle() / t.cpu_model.mlp;
        let added = ns(&t, &big) - without.1;
        assert!(
            (added - 0.75 * walk).abs() < 1e-9,
            "{added} vs {}",
            0.75 * walk
        );
        // A walk that costs nothing adds nothing; neither does a machine without a TLB.
        t.cpu_model.tlb_walk_cycles = 0.0;
        assert_eq!(ns(&t, &big).to_bits(), without.1.to_bits());
        t.cpu_model.tlb_walk_cycles = 20.0;
        // The free-running estimate adds the same.
        let f = free_op_ns(&t, &random_op(), &big, 0);
        assert!((f - ns(&t, &big)).abs() < 1e-9, "{f}");
        // Streams walk once per page, which is left out: a streamed region adds no walk.
        let stream = [region_on(&t, 0, 1 << 30)];
        let s = op_profile(&t, &stream_read_op(), &stream, 0, 0.0, &idle, &[]).ns;
        t.cpu_model.tlb_entries = None;
        let s0 = op_profile(&t, &stream_read_op(), &stream, 0, 0.0, &idle, &[]).ns;
        assert_eq!(s.to_bits(), s0.to_bits());
        // Out of order, the walk queues with the misses: it shows where misses set the time.
        let mut o = out_of_order();
        let big = [region_on(&o, 0, 256 * page as u64)];
        let before = op_profile(&o, &random_op(), &big, 0, 0.0, &idle, &[]).ns;
        o.cpu_model.tlb_entries = Some(64);
        o.cpu_model.tlb_walk_cycles = 20.0;
        let after = op_profile(&o, &random_op(), &big, 0, 0.0, &idle, &[]).ns;
        let walk = 20.0 * o.ns_per_cycle() / o.cpu_model.mlp;
        assert!(
            (after - before - 0.75 * walk).abs() < 1e-9,
            "{after} vs {before}"
        );
    }

    #[test]
    fn an_out_of_order_core_overlaps_its_work_with_its_misses() {
        let (ooo, ino) = (out_of_order(), in_order());
        let big = [region_on(&ooo, 0, 1 << 34)];
        let idle = Contention::idle(2);
        let ns = |t: &Topology, cycles: f64| {
            op_profile(t, &OpCost::random_write(cycles), &big, 0, 0.0, &idle, &[]).ns
        };
        let miss = ooo.latency_ns(0, 0) / ooo.cpu_model.mlp;
        let core = |cycles: f64| cycles * ooo.ns_per_cycle();
        // A few cycles hide behind the miss; many cycles hide the miss.
        assert!((ns(&ooo, 4.0) - miss).abs() < 1e-9, "{}", ns(&ooo, 4.0));
        assert!((ns(&ooo, 1000.0) - core(1000.0)).abs() < 1e-9);
        // In order, they add up.
        assert!((ns(&ino, 4.0) - core(4.0) - miss).abs() < 1e-9);
        // The free-running estimate follows the same rule (whole LLC, idle latency).
        let op = OpCost::random_write(4.0);
        let full = ooo.cpu_model.llc_bytes as f64;
        let lin = op_profile(&ooo, &op, &big, 0, full, &idle, &[]).ns;
        assert!((free_op_ns(&ooo, &op, &big, 0) - lin).abs() < 1e-9);
    }

    #[test]
    fn prefetched_streams_overlap_random_misses_only_on_their_own_queue() {
        let mut t = out_of_order();
        t.cpu_model.stream_mlp = None;
        let r = [region_on(&t, 0, 1 << 34), region_on(&t, 0, 1 << 34)];
        let idle = Contention::idle(2);
        let op = mixed_op(1.0, 8.0, 64.0);
        let ns = |t: &Topology| op_profile(t, &op, &r, 0, 0.0, &idle, &[]).ns;
        let lat = t.latency_ns(0, 0);
        let random = (1.0 - 0.0) * lat / t.cpu_model.mlp;
        // No prefetch depth of their own: the stream's lines queue with the demand misses.
        assert!((ns(&t) - 2.0 * random).abs() < 1e-9, "{}", ns(&t));
        // With one, they are fetched beside them: the longer of the two.
        t.cpu_model.stream_mlp = Some(4.0 * t.cpu_model.mlp);
        assert!((ns(&t) - random).abs() < 1e-9, "{}", ns(&t));
        let full = t.cpu_model.llc_bytes as f64;
        let lin = op_profile(&t, &op, &r, 0, full, &idle, &[]).ns;
        let free = free_op_ns(&t, &op, &r, 0);
        assert!((free - lin).abs() < 1e-9, "{free} vs {lin}");
        // The traffic of both still reaches memory.
        let p = op_profile(&t, &op, &r, 0, 0.0, &idle, &[]);
        assert!((p.bytes[0] - 2.0 * 64.0).abs() < 1e-9, "{:?}", p.bytes);
    }

    #[test]
    fn a_core_bound_operation_loads_memory_but_does_not_wait_for_it() {
        let t = out_of_order();
        let r = [region_on(&t, 0, 1 << 34)];
        let lin = linear_op(&t, &OpCost::random_write(1000.0), &r, 0, 0.0, &[]);
        let mut busy = Contention::idle(2);
        busy.local[0] = 3.0;
        let (ns, slopes) = lin.ns_and_slopes(&busy);
        assert!(slopes.is_none() && ns == lin.ns(&Contention::idle(2)));
        // A memory-bound one waits, and its slope is its miss stall.
        let mem = linear_op(&t, &OpCost::random_write(1.0), &r, 0, 0.0, &[]);
        let (ns, slopes) = mem.ns_and_slopes(&busy);
        assert_eq!(slopes.map(|s| s[0]), Some(mem.coef[0]));
        assert!((ns - 3.0 * mem.coef[0]).abs() < 1e-9);
        // The solve counts the core-bound task's traffic all the same.
        let (q_one, _) = solve_contention(&t, &[&mem], &Contention::idle(2));
        let (q_two, _) = solve_contention(&t, &[&mem, &lin], &Contention::idle(2));
        assert!(q_two.local[0] >= q_one.local[0]);
        assert!(lin.bytes[0] > 0.0);
    }

    #[test]
    fn loaded_factor_shape() {
        assert_eq!(loaded_factor(0.0, 3.0), 1.0);
        assert!((loaded_factor(1.0, 3.0) - 3.0).abs() < 1e-12);
        assert!(loaded_factor(0.5, 3.0) < 1.2);
        assert!((loaded_factor(2.0, 3.0) - 6.0).abs() < 1e-12);
    }
}
