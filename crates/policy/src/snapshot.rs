//! What a policy sees: a [`Snapshot`] of the machine at one instant.
//!
//! The simulator and the live daemon fill exactly these fields; nothing here is specific to
//! Linux. Per-node vectors (`node_bytes`, `node_runtime`, `faults_by_node`) are indexed by
//! node id and should have one entry per node of the topology; [`Snapshot::validate`] checks
//! that, and the policies also tolerate a malformed snapshot (missing entries count as zero,
//! NaN or negative CPU figures as zero, unknown node ids are ignored) rather than panic.

use serde::{Deserialize, Serialize};
use topo::{CpuSet, NodeId, Topology};

/// One thread of a process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadView {
    pub tid: u32,
    /// CPU time used over the last interval, in CPUs (1.0 = one CPU fully busy).
    pub cpu_use: f64,
    /// Node of the CPU it last ran on, if known.
    pub node: Option<NodeId>,
    /// Time it spent runnable but waiting on a run queue over the last interval, in CPUs
    /// (Linux: the run delay of `/proc/PID/task/TID/schedstat`), when measured.
    #[serde(default)]
    pub wait: Option<f64>,
}

/// The kernel's automatic NUMA balancing figures for one process, when the kernel has them
/// (Linux: `/proc/PID/sched` with `CONFIG_NUMA_BALANCING`). The homenode policy takes the
/// preferred node (else the node with most faults) as a hint: no correction away from it,
/// and rebalancing moves other processes first (docs/PLACEMENT.md, "Running with the
/// kernel's NUMA balancing"). The numad model does not use them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessNumaStats {
    /// The kernel's preferred node for the process (its main thread's `numa_preferred_nid`).
    pub preferred_node: Option<NodeId>,
    /// NUMA hinting faults by the node of the faulting memory, as the kernel counts them
    /// (decayed at every scan pass, not a delta), empty when not known.
    #[serde(default)]
    pub faults_by_node: Vec<u64>,
    /// Pages the kernel's NUMA balancing migrated for this process.
    #[serde(default)]
    pub pages_migrated: u64,
}

/// One process as a policy sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessView {
    pub pid: u32,
    /// Process start time (ticks since boot on Linux, any monotonic stamp in the simulator),
    /// so a reused PID is told apart. Every action carries it back.
    pub start_time: u64,
    pub comm: String,
    /// Number of threads.
    pub threads: u32,
    /// CPU time used over the last interval, in CPUs (1.0 = one CPU fully busy).
    pub cpu_use: f64,
    /// Per-thread figures when sampled (may be empty; then only `threads` and `cpu_use` count).
    #[serde(default)]
    pub per_thread: Vec<ThreadView>,
    /// Time its threads spent runnable but waiting on a run queue over the last interval, in
    /// CPUs (Linux: the sum of its threads' `schedstat` run delay), when measured. CPU use plus
    /// this is the CPU it wanted: its *demand*, measured rather than inferred.
    #[serde(default)]
    pub cpu_wait: Option<f64>,
    /// Resident bytes on each node.
    pub node_bytes: Vec<u64>,
    /// When `node_bytes` was read, ns on the snapshot's clock; `None` = with this snapshot.
    /// A daemon that reads per-node memory of large processes less often than every interval
    /// says so here, and the homenode policy then waits for fresh figures before it asks for
    /// more of that process's memory to move.
    #[serde(default)]
    pub memory_sampled_ns: Option<u64>,
    /// Share of its runtime on each node over the last interval (sums to 1 when it ran).
    pub node_runtime: Vec<f64>,
    /// Node it runs on now (the node of most of its threads).
    pub current_node: Option<NodeId>,
    /// CPUs the process may be placed on at all: its cpuset's CPUs intersected with the mask it
    /// had before any policy changed it. A home's CPU mask is always a subset of this.
    pub allowed_cpus: CpuSet,
    /// Nodes the process may have memory on (its cpuset's memory nodes), as a set of node ids.
    /// A node is a possible home only if it is in this set and has CPUs in `allowed_cpus`.
    pub allowed_nodes: CpuSet,
    /// Home nodes applied earlier by the mechanism (nearest first); empty = no home.
    #[serde(default)]
    pub home: Vec<NodeId>,
    /// Set by the mechanism for processes it must not touch (kernel threads, real-time tasks,
    /// affinity or memory policy set by someone else, excluded by configuration, ...). A
    /// policy never returns an action for such a process.
    #[serde(default)]
    pub leave_alone: bool,
    /// The kernel's NUMA balancing figures, when present.
    #[serde(default)]
    pub numa: Option<ProcessNumaStats>,
    /// The scheduling slice the mechanism gave its threads (Linux: `sched_attr.sched_runtime`
    /// of a fair task, 6.12 and later), ns; 0 when it gave none (the kernel's default).
    #[serde(default)]
    pub slice_ns: u64,
}

impl ProcessView {
    /// A process with one idle thread, no memory, allowed everywhere on `topo`, no home.
    /// Builders and tests start from this and set the fields they care about.
    pub fn new(topo: &Topology, pid: u32) -> Self {
        let n = topo.nr_nodes();
        ProcessView {
            pid,
            start_time: u64::from(pid),
            comm: format!("pid{pid}"),
            threads: 1,
            cpu_use: 0.0,
            per_thread: Vec::new(),
            cpu_wait: None,
            node_bytes: vec![0; n],
            memory_sampled_ns: None,
            node_runtime: vec![0.0; n],
            current_node: None,
            allowed_cpus: topo.all_cpus(),
            allowed_nodes: CpuSet::full(n),
            home: Vec::new(),
            leave_alone: false,
            numa: None,
            slice_ns: 0,
        }
    }

    /// Resident bytes over all nodes (saturating).
    pub fn rss(&self) -> u64 {
        self.node_bytes
            .iter()
            .fold(0u64, |acc, &b| acc.saturating_add(b))
    }

    /// Resident bytes on `node` (0 when not reported).
    pub fn bytes_on(&self, node: NodeId) -> u64 {
        self.node_bytes.get(node).copied().unwrap_or(0)
    }

    /// Whether `node` may be this process's home on `topo`: an allowed memory node with at
    /// least one allowed CPU.
    pub fn may_live_on(&self, topo: &Topology, node: NodeId) -> bool {
        node < topo.nr_nodes()
            && self.allowed_nodes.contains(node)
            && topo.node_cpus(node).intersects(&self.allowed_cpus)
    }
}

/// The kernel's per-node allocation counters (Linux: `/sys/devices/system/node/nodeN/numastat`),
/// as deltas over the last interval, in pages. Carried for reports; not used for decisions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeNumaStats {
    pub numa_hit: u64,
    pub numa_miss: u64,
    pub numa_foreign: u64,
    pub interleave_hit: u64,
    pub local_node: u64,
    pub other_node: u64,
}

/// Per-node state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    /// Free memory on the node, bytes.
    pub free_bytes: u64,
    /// Idle CPU capacity over the last interval, in CPUs.
    pub cpu_idle: f64,
    /// The kernel's allocation counters for the node, when present.
    #[serde(default)]
    pub numa: Option<NodeNumaStats>,
}

impl NodeView {
    /// Node views consistent with `processes` on `topo`: free memory = node memory minus the
    /// processes' resident bytes there, idle = node CPUs minus their CPU use there (by
    /// `node_runtime`, else `current_node`). For the simulator and for tests that have no
    /// other background load.
    pub fn consistent_with(topo: &Topology, processes: &[ProcessView]) -> Vec<NodeView> {
        (0..topo.nr_nodes())
            .map(|n| {
                let used: u64 = processes
                    .iter()
                    .fold(0u64, |a, p| a.saturating_add(p.bytes_on(n)));
                let busy: f64 = processes
                    .iter()
                    .map(|p| {
                        let share = p.node_runtime.get(n).copied().unwrap_or(0.0);
                        let share = if p.node_runtime.iter().all(|&s| s <= 0.0) {
                            if p.current_node == Some(n) { 1.0 } else { 0.0 }
                        } else {
                            share
                        };
                        p.cpu_use * share
                    })
                    .sum();
                let cpus = topo.node_cpus(n).count() as f64;
                NodeView {
                    free_bytes: topo.nodes[n].mem_bytes.saturating_sub(used),
                    cpu_idle: (cpus - busy).clamp(0.0, cpus),
                    numa: None,
                }
            })
            .collect()
    }
}

/// Everything a policy decides from.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot<'a> {
    #[serde(skip)]
    pub topo: &'a Topology,
    /// Time of the snapshot, ns since the start of the observer.
    pub now_ns: u64,
    /// Length of the interval the CPU figures cover, ns; the homenode policy's memory budget
    /// for this decision is its rate times this.
    pub interval_ns: u64,
    /// One entry per node of `topo`.
    pub nodes: Vec<NodeView>,
    pub processes: Vec<ProcessView>,
    /// The kernel's automatic NUMA balancing migrates pages between nodes (Linux:
    /// `kernel.numa_balancing` has its bit 0, `NUMA_BALANCING_NORMAL`, set).
    pub numa_balancing: bool,
}

/// What is wrong with a snapshot (see [`Snapshot::validate`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot has {got} node entries but the machine has {expected} nodes")]
    NodeCount { expected: usize, got: usize },
    #[error("pid {pid}: `{field}` has {got} entries but the machine has {expected} nodes")]
    PerNodeLength {
        pid: u32,
        field: &'static str,
        expected: usize,
        got: usize,
    },
    #[error("pid {pid}: `{field}` is {value}, not a finite number >= 0")]
    BadNumber {
        pid: u32,
        field: &'static str,
        value: f64,
    },
    #[error("node {node}: `cpu_idle` is {value}, not a finite number >= 0")]
    BadNodeIdle { node: NodeId, value: f64 },
    #[error("pid {pid}: `{field}` names node {node}, but the machine has {nodes} nodes")]
    UnknownNode {
        pid: u32,
        field: &'static str,
        node: NodeId,
        nodes: usize,
    },
    #[error("pid {pid} appears twice")]
    DuplicatePid { pid: u32 },
}

impl Snapshot<'_> {
    /// Checks the shape of the snapshot: one node entry per node, per-node vectors of the
    /// right length, finite non-negative CPU figures, node ids in range, no PID twice.
    /// Producers call this in their tests; policies never require it.
    pub fn validate(&self) -> Result<(), SnapshotError> {
        let n = self.topo.nr_nodes();
        if self.nodes.len() != n {
            return Err(SnapshotError::NodeCount {
                expected: n,
                got: self.nodes.len(),
            });
        }
        for (node, v) in self.nodes.iter().enumerate() {
            if !(v.cpu_idle.is_finite() && v.cpu_idle >= 0.0) {
                return Err(SnapshotError::BadNodeIdle {
                    node,
                    value: v.cpu_idle,
                });
            }
        }
        let mut pids: Vec<u32> = self.processes.iter().map(|p| p.pid).collect();
        pids.sort_unstable();
        if let Some(w) = pids.windows(2).find(|w| w[0] == w[1]) {
            return Err(SnapshotError::DuplicatePid { pid: w[0] });
        }
        for p in &self.processes {
            let pid = p.pid;
            let len_err = |field, got| SnapshotError::PerNodeLength {
                pid,
                field,
                expected: n,
                got,
            };
            if p.node_bytes.len() != n {
                return Err(len_err("node_bytes", p.node_bytes.len()));
            }
            if p.node_runtime.len() != n {
                return Err(len_err("node_runtime", p.node_runtime.len()));
            }
            let bad = |field, value: f64| {
                (!(value.is_finite() && value >= 0.0)).then_some(SnapshotError::BadNumber {
                    pid,
                    field,
                    value,
                })
            };
            if let Some(e) = bad("cpu_use", p.cpu_use) {
                return Err(e);
            }
            if let Some(e) = p.cpu_wait.and_then(|w| bad("cpu_wait", w)) {
                return Err(e);
            }
            for &s in &p.node_runtime {
                if let Some(e) = bad("node_runtime", s) {
                    return Err(e);
                }
            }
            for t in &p.per_thread {
                if let Some(e) = bad("per_thread.cpu_use", t.cpu_use) {
                    return Err(e);
                }
                if let Some(e) = t.wait.and_then(|w| bad("per_thread.wait", w)) {
                    return Err(e);
                }
            }
            let unknown = |field, node| SnapshotError::UnknownNode {
                pid,
                field,
                node,
                nodes: n,
            };
            if let Some(&h) = p.home.iter().find(|&&h| h >= n) {
                return Err(unknown("home", h));
            }
            if let Some(c) = p.current_node.filter(|&c| c >= n) {
                return Err(unknown("current_node", c));
            }
            if let Some(a) = p.allowed_nodes.iter().find(|&a| a >= n) {
                return Err(unknown("allowed_nodes", a));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Topology {
        topo::parse_synthetic("nodes=2,cpus-per-node=2,mem-gib=4").expect("machine")
    }

    #[test]
    fn consistent_nodes_and_validate() {
        let t = machine();
        let mut p = ProcessView::new(&t, 7);
        p.cpu_use = 1.5;
        p.node_bytes = vec![1 << 30, 0];
        p.node_runtime = vec![1.0, 0.0];
        let nodes = NodeView::consistent_with(&t, std::slice::from_ref(&p));
        assert_eq!(nodes[0].free_bytes, 3 << 30);
        assert!((nodes[0].cpu_idle - 0.5).abs() < 1e-9);
        assert!((nodes[1].cpu_idle - 2.0).abs() < 1e-9);
        let mut snap = Snapshot {
            topo: &t,
            now_ns: 0,
            interval_ns: 1,
            nodes,
            processes: vec![p.clone()],
            numa_balancing: false,
        };
        assert_eq!(snap.validate(), Ok(()));
        let json = serde_json::to_string(&snap).expect("json");
        assert!(
            json.starts_with(r#"{"now_ns":0,"interval_ns":1,"nodes":[{"free_bytes":3221225472"#),
            "{json}"
        );
        let back: ProcessView =
            serde_json::from_str(&serde_json::to_string(&snap.processes[0]).expect("json"))
                .expect("back");
        assert_eq!(back, snap.processes[0]);
        snap.processes[0].home = vec![5];
        assert!(matches!(
            snap.validate(),
            Err(SnapshotError::UnknownNode { field: "home", .. })
        ));
        snap.processes[0].home.clear();
        snap.processes[0].cpu_use = f64::NAN;
        let e = snap.validate().unwrap_err();
        assert!(e.to_string().contains("pid 7: `cpu_use` is NaN"), "{e}");
        snap.processes[0].cpu_use = 1.0;
        snap.processes.push(p);
        assert_eq!(snap.validate(), Err(SnapshotError::DuplicatePid { pid: 7 }));
        snap.processes.pop();
        snap.nodes.pop();
        assert!(matches!(
            snap.validate(),
            Err(SnapshotError::NodeCount {
                expected: 2,
                got: 1
            })
        ));
    }

    #[test]
    fn may_live_on_needs_node_and_cpu() {
        let t = machine();
        let mut p = ProcessView::new(&t, 1);
        assert!(p.may_live_on(&t, 0) && p.may_live_on(&t, 1) && !p.may_live_on(&t, 2));
        p.allowed_cpus = t.node_cpus(1).clone();
        assert!(!p.may_live_on(&t, 0) && p.may_live_on(&t, 1));
        p.allowed_cpus = t.all_cpus();
        p.allowed_nodes = CpuSet::single(0);
        assert!(p.may_live_on(&t, 0) && !p.may_live_on(&t, 1));
    }
}
