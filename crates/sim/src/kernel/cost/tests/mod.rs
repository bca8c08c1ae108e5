//! Tests of the cost model, by part.

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

mod lines;
mod op;
mod solve;
mod turns;
