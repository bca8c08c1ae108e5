//! CPU-level schedulers. Each one is a plug-in with hooks into the kernel model: where a
//! forked or exec'ed task goes, where a woken task goes, and what periodic, idle and
//! new-idle load balancing does. docs/POLICIES.md describes each in prose.

mod aa;
mod balance;
pub mod domain;
pub mod linux;
mod linux26;
mod node_affine;
mod node_balance;
mod o1;
mod options;
mod pmqs;
mod simple_numa;
mod wake;

pub use aa::Aa;
pub use balance::{QueueBalancer, Threshold, pull_order};
pub use linux26::Linux26Numa;
pub use node_affine::NodeAffine;
pub use o1::O1;
pub use options::{SchedOptions, SchedSpec};
pub use pmqs::Pmqs;
pub use simple_numa::SimpleNuma;

pub use crate::kernel::sched_api::{CpuScheduler, ExecPlacement, IdleType};

/// Names of all CPU-level schedulers.
pub const SCHEDULERS: &[(&str, &str)] = &[
    (
        "o1",
        "A: the 2.5 O(1) scheduler, NUMA-oblivious (one flat balancing domain)",
    ),
    (
        "o1-steal1",
        "B: O(1) stealing at most one task per balancing call (2.4.18 base)",
    ),
    (
        "simple-numa",
        "C: simple NUMA (exec to least loaded node, cross-node every 10th balance)",
    ),
    (
        "pool",
        "D: pooling NUMA scheduler (remote steals after pool_delay)",
    ),
    (
        "node-affine-static",
        "E: node-affine, initial load balancing, static homenode",
    ),
    (
        "node-affine-dynamic",
        "F: node-affine, no initial balancing, homenode = node with most memory",
    ),
    (
        "aa",
        "Arcangeli's multi-queue: own node first, remote pull only when the node is idle",
    ),
    (
        "pmqs",
        "IBM pooled multi-queue: pool-local search, periodic inter-pool push (500 ms)",
    ),
    (
        "linux-2.6-numa",
        "the 2.6.0 kernel's NUMA scheduler (node rebalance 5/400 ms, exec balancing)",
    ),
    (
        "linux",
        "today's Linux: domains, wake-affine, NUMA balancing, NUMA imbalance rule",
    ),
];

/// Build a scheduler from a spec such as `o1` or `node-affine-static:home_bonus=2`.
pub fn build(spec: &SchedSpec, topo: &topo::Topology) -> Result<Box<dyn CpuScheduler>, String> {
    let mut opts = SchedOptions::new(&spec.name, &spec.options);
    let s: Box<dyn CpuScheduler> = match spec.name.as_str() {
        "o1" => Box::new(O1::new(topo, &mut opts)?),
        "o1-steal1" => Box::new(O1::steal1(topo, &mut opts)?),
        "simple-numa" => Box::new(SimpleNuma::new(topo, &mut opts)?),
        "pool" => Box::new(NodeAffine::pool(topo, &mut opts)?),
        "aa" => Box::new(Aa::new(topo, &mut opts)?),
        "pmqs" => Box::new(Pmqs::new(topo, &mut opts)?),
        "linux-2.6-numa" => Box::new(Linux26Numa::new(topo, &mut opts)?),
        "node-affine-static" => Box::new(NodeAffine::new(topo, false, &mut opts)?),
        "node-affine-dynamic" => Box::new(NodeAffine::new(topo, true, &mut opts)?),
        "linux" => Box::new(linux::Linux::new(topo, &mut opts)?),
        other => {
            let names: Vec<&str> = SCHEDULERS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "unknown scheduler `{other}` (valid: {})",
                names.join(", ")
            ));
        }
    };
    opts.finish()?;
    Ok(s)
}
