//! Cache lines shared between running threads: the coherence stalls as the invalidation
//! protocol moves a line between its readers and writers, and the cross-node transfer cost.

use super::*;
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
