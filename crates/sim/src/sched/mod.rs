//! CPU-level schedulers. Each one is a plug-in with hooks into the kernel model: where a
//! forked or exec'ed task goes, where a woken task goes, and what periodic, idle and
//! new-idle load balancing does. docs/POLICIES.md describes each in prose.

mod balance;
pub mod domain;
pub mod linux;
mod node_affine;
mod o1;
mod options;

pub use balance::{QueueBalancer, pull_order};
pub use node_affine::NodeAffine;
pub use o1::O1;
pub use options::{SchedOptions, SchedSpec};

use crate::kernel::{Kernel, KernelParams, TaskId};
use crate::time::Ns;
use topo::{CpuId, NodeId};

/// Why a balancing pass runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    /// Periodic, on a CPU that is running something.
    Busy,
    /// Periodic, on an idle CPU.
    Idle,
    /// The CPU is about to go idle.
    NewIdle,
}

impl IdleType {
    pub fn is_idle(self) -> bool {
        self != IdleType::Busy
    }
}

/// What a scheduler decides when a new process execs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecPlacement {
    /// Move the task to this CPU (None: stay where fork put it).
    pub cpu: Option<CpuId>,
    /// Give the task this home node.
    pub home: Option<NodeId>,
    /// Allocate its memory on the home node (preferred policy) instead of first touch.
    pub alloc_on_home: bool,
}

/// A CPU-level scheduler.
pub trait CpuScheduler: Send {
    /// Registry name, e.g. `o1`.
    fn name(&self) -> &'static str;
    /// The effective value of every option, for reports.
    fn options(&self) -> Vec<(String, String)>;
    /// Kernel tunables of the era this scheduler belongs to.
    fn kernel_params(&self) -> KernelParams;
    /// Time between periodic balancing passes on `cpu`.
    fn balance_interval(&self, k: &Kernel, cpu: CpuId, idle: bool) -> Ns;
    /// One balancing pass on `cpu` (pulls tasks to it).
    fn balance(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType);
    /// CPU of a newly forked task (default: the parent's CPU, as 2.5 kernels did).
    fn fork_cpu(&mut self, _k: &Kernel, parent_cpu: CpuId, _child: TaskId) -> CpuId {
        parent_cpu
    }
    /// Placement at exec (default: none).
    fn exec(&mut self, _k: &Kernel, _task: TaskId, _cpu: CpuId) -> ExecPlacement {
        ExecPlacement::default()
    }
    /// CPU a woken task is queued on (default: the one it last ran on).
    fn wake_cpu(&mut self, k: &Kernel, task: TaskId) -> CpuId {
        k.tasks[task].cpu
    }
    /// The task's home node as this scheduler sees it, for reports.
    fn home_node(&self, k: &Kernel, task: TaskId) -> Option<NodeId> {
        k.tasks[task].home_node
    }
}

/// Names of all CPU-level schedulers.
pub const SCHEDULERS: &[(&str, &str)] = &[
    (
        "o1",
        "A: the 2.5 O(1) scheduler, NUMA-oblivious (one flat balancing domain)",
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
        "linux",
        "today's Linux: domains, wake-affine, NUMA balancing, NUMA imbalance rule",
    ),
];

/// Build a scheduler from a spec such as `o1` or `node-affine-static:home_bonus=2`.
pub fn build(spec: &SchedSpec, topo: &topo::Topology) -> Result<Box<dyn CpuScheduler>, String> {
    let mut opts = SchedOptions::new(&spec.name, &spec.options);
    let s: Box<dyn CpuScheduler> = match spec.name.as_str() {
        "o1" => Box::new(O1::new(topo, &mut opts)?),
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
