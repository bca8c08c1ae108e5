//! The load model of one decision: each node's load (in CPUs) is its busy CPU time (at least
//! what the listed processes used there) minus what
//! homed processes ran there, plus the demand of the processes homed on it (their CPU use, or
//! their width when larger: each busy thread needs a CPU; split over a home set by CPU count).
//! So a homed process counts where it belongs, everything else (small processes, processes
//! left alone, processes not homed yet) where it ran, with the run-queue wait measured for
//! it there (so a saturated node's load is what its tasks wanted, more than its CPUs). Free memory is counted net of what is
//! already on its way home, so two homes are not promised the same bytes.

use topo::{NodeId, Topology};

use crate::common::{Machine, Proc};

/// Load and free memory per node as the policy accounts them during one decision.
#[derive(Clone, Debug)]
pub(super) struct Model {
    pub(super) cpus: Vec<f64>,
    /// Load in CPUs.
    pub(super) load: Vec<f64>,
    /// Of which: the demand of the processes homed on the node (split over a home set).
    pub(super) homed: Vec<f64>,
    /// Free bytes minus memory already on its way there.
    pub(super) free: Vec<i64>,
}

/// Node of `home` nearest to `from` (earliest in `home` on ties).
fn dest_for(topo: &Topology, home: &[NodeId], from: NodeId) -> NodeId {
    let mut best = home[0];
    for &h in home {
        if topo.distance(from, h) < topo.distance(from, best) {
            best = h;
        }
    }
    best
}

impl Model {
    /// The machine with every process accounted at its valid home, or where it ran.
    pub(super) fn new(
        topo: &Topology,
        m: &Machine,
        procs: &[Proc],
        homes: &[Option<Vec<NodeId>>],
    ) -> Self {
        let cpus: Vec<f64> = m.cpus.iter().map(|&c| c as f64).collect();
        // A node was busy at least for what the processes listed there used. The two come
        // from different files read at different moments (`/proc/stat` and each process's
        // `stat`), and a process's time is charged to the node its threads last ran on, so a
        // node that several moving jobs happened to be on at the scan is charged more than its
        // busy time. Taking each process out of such a node (to home it) must not leave
        // phantom room there: under emulation that room took a third job of a 2-CPU node.
        // Not capped at the node's CPUs, for the same reason.
        let mut used = vec![0.0; m.n];
        for p in procs {
            for (n, u) in used.iter_mut().enumerate() {
                *u += p.cpu * p.share[n];
            }
        }
        let mut load: Vec<f64> = (0..m.n)
            .map(|n| (cpus[n] - m.idle[n]).max(used[n]).max(0.0))
            .collect();
        // Busy time holds what every process ran. A homed process is taken out (it counts at
        // its home below); a process not homed adds its measured run-queue wait where it ran,
        // so a node's load is what its tasks wanted, not only what its CPUs could give.
        for (p, h) in procs.iter().zip(homes) {
            let (x, sign) = if h.is_some() {
                (p.cpu, -1.0)
            } else {
                (p.wait, 1.0)
            };
            for (n, l) in load.iter_mut().enumerate() {
                *l += sign * x * p.share[n];
            }
        }
        load.iter_mut().for_each(|l| *l = l.max(0.0));
        let mut model = Model {
            cpus,
            load,
            homed: vec![0.0; m.n],
            free: m.free.iter().map(|&f| f as i64).collect(),
        };
        for (p, h) in procs.iter().zip(homes) {
            if let Some(h) = h {
                model.apply(topo, p, Some(h), 1.0);
            }
        }
        model
    }

    /// Adds (`sign` = 1) or removes (-1) a process's load and its incoming memory, accounted at
    /// `home`, or where it ran when it has no home.
    pub(super) fn apply(&mut self, topo: &Topology, p: &Proc, home: Option<&[NodeId]>, sign: f64) {
        match home {
            Some(h) if !h.is_empty() => {
                let total = p.cpu_count_of(h);
                for &n in h {
                    let w = if total > 0 {
                        p.node_cpus[n] as f64 / total as f64
                    } else {
                        1.0 / h.len() as f64
                    };
                    // A homed process counts what it needs there (busy threads a CPU each),
                    // not only what it managed to use where it ran.
                    let need = sign * p.demand() * w;
                    self.load[n] += need;
                    self.homed[n] = (self.homed[n] + need).max(0.0);
                }
                for r in 0..self.load.len() {
                    if !h.contains(&r) && p.bytes[r] > 0 {
                        let d = dest_for(topo, h, r);
                        self.free[d] -= sign as i64 * p.bytes[r] as i64;
                    }
                }
            }
            _ => {
                for n in 0..self.load.len() {
                    self.load[n] += sign * p.runnable() * p.share[n];
                }
            }
        }
        self.load.iter_mut().for_each(|l| *l = l.max(0.0));
    }

    /// Load per CPU of node `n` (0 for a node without CPUs).
    pub(super) fn frac(&self, n: NodeId) -> f64 {
        if self.cpus[n] > 0.0 {
            self.load[n] / self.cpus[n]
        } else {
            0.0
        }
    }
}
