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

//!
//! The parts, one mechanism each:
//! - [`op`]: one operation's time ([`LinearOp`]) from its accesses, where its data lives, the
//!   latency factors and the overlap of work and misses;
//! - [`tlb`]: the random footprint of an operation, the LLC's sets and TLB walks;
//! - [`turns`]: what a task fetches again after others' turns on its cache;
//! - [`lines`]: coherence stalls on cache lines shared between running threads;
//! - [`solve`]: the memory nodes' contention factors, a damped fixed point over every running
//!   task's bandwidth demand.
//!
//! This file holds what they share: the latency multipliers ([`Contention`]) and the loaded
//! latency curve ([`loaded_factor`]).
use super::lru::{LruShare, lines_per_op};
use super::sets::SetMapping;
use crate::memory::Region;
use crate::program::{OpCost, Pattern};
use topo::{NodeId, Topology};

mod lines;
mod op;
mod solve;
mod tlb;
mod turns;

pub use lines::*;
pub use op::*;
pub use solve::*;
pub use tlb::*;
pub use turns::*;

#[cfg(test)]
mod tests;

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
