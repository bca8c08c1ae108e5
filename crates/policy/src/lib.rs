//! Node-level placement policies: pure functions from a [`Snapshot`] of the machine (what
//! runs where, whose memory is where) to [`Action`]s (set a home node and CPU mask, move
//! memory). No I/O happens here: the simulator and the live daemon both build snapshots and
//! apply actions, so one policy runs unchanged in both.
//!
//! This crate holds the shared data types and the `none` policy; the homenode and numad
//! policies build on them.

use serde::{Deserialize, Serialize};
use topo::{CpuSet, NodeId, Topology};

/// One process as a policy sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessView {
    pub pid: u32,
    /// Process start time (ticks since boot on Linux), so a reused PID is told apart.
    pub start_time: u64,
    pub comm: String,
    pub threads: u32,
    /// CPU time used over the last interval, in CPUs (1.0 = one CPU fully busy).
    pub cpu_use: f64,
    /// Resident bytes on each node.
    pub node_bytes: Vec<u64>,
    /// Share of its runtime on each node over the last interval (sums to 1 when it ran).
    pub node_runtime: Vec<f64>,
    /// Node it runs on now (the node of most of its threads).
    pub current_node: Option<NodeId>,
    /// CPUs it may run on now.
    pub allowed_cpus: CpuSet,
    /// Home node the policy gave it earlier, if any.
    pub home: Option<NodeId>,
}

/// Per-node state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    pub free_bytes: u64,
    /// Idle CPU capacity over the last interval, in CPUs.
    pub cpu_idle: f64,
}

/// Everything a policy decides from.
#[derive(Clone, Debug)]
pub struct Snapshot<'a> {
    pub topo: &'a Topology,
    /// Time of the snapshot, ns since the start of the observer.
    pub now_ns: u64,
    pub nodes: Vec<NodeView>,
    pub processes: Vec<ProcessView>,
}

/// What a policy asks the mechanism to do; every action says why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Action {
    /// Give `pid` the home nodes `nodes` (nearest first) and restrict it to `cpus`.
    SetHome {
        pid: u32,
        nodes: Vec<NodeId>,
        cpus: CpuSet,
        reason: String,
    },
    /// Move `bytes` of `pid`'s memory from node `from` to node `to`.
    MoveMemory {
        pid: u32,
        from: NodeId,
        to: NodeId,
        bytes: u64,
        reason: String,
    },
    /// Forget `pid`'s home and give back its original CPU mask.
    ClearHome { pid: u32, reason: String },
}

/// A node-level placement policy.
pub trait NodePolicy {
    fn name(&self) -> &'static str;
    /// Decide the actions for one interval.
    fn decide(&mut self, snap: &Snapshot<'_>) -> Vec<Action>;
}

/// The policy that never acts (the kernel alone decides placement).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPolicy;

impl NodePolicy for NoPolicy {
    fn name(&self) -> &'static str {
        "none"
    }

    fn decide(&mut self, _snap: &Snapshot<'_>) -> Vec<Action> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_never_acts() {
        let t = topo::spec::parse_synthetic("nodes=2,cpus-per-node=2").expect("machine");
        let snap = Snapshot {
            topo: &t,
            now_ns: 0,
            nodes: vec![
                NodeView {
                    free_bytes: 1 << 30,
                    cpu_idle: 2.0
                };
                2
            ],
            processes: vec![ProcessView {
                pid: 1,
                start_time: 5,
                comm: "x".into(),
                threads: 1,
                cpu_use: 1.0,
                node_bytes: vec![1 << 20, 0],
                node_runtime: vec![0.0, 1.0],
                current_node: Some(1),
                allowed_cpus: t.all_cpus(),
                home: None,
            }],
        };
        assert!(NoPolicy.decide(&snap).is_empty());
    }
}
