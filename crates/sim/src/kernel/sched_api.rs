//! The interface between the kernel model and a CPU-level scheduler: the hooks the kernel
//! calls ([`CpuScheduler`]) and the small types they pass ([`IdleType`], [`ExecPlacement`]).
//! The kernel model owns this interface; the schedulers in [`crate::sched`] implement it.

use super::{Kernel, KernelParams, TaskId};
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
    /// The kernel base the model runs this scheduler on, for reports.
    fn kernel_base(&self) -> &'static str {
        if self.kernel_params().goodness.is_some() {
            "2.4 goodness() (HZ=1024)"
        } else {
            "O(1) (HZ=1000)"
        }
    }
    /// Time between periodic balancing passes on `cpu`.
    fn balance_interval(&self, k: &Kernel, cpu: CpuId, idle: bool) -> Ns;
    /// One balancing pass on `cpu` (pulls tasks to it).
    fn balance(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType);
    /// Called right after a periodic idle pass of `cpu` that moved nothing: whether the
    /// passes of its next idle ticks would each do exactly what [`CpuScheduler::replay_quiet`]
    /// does for them, as long as [`Kernel::balance_inputs`] stays as it is now and the tick
    /// comes before the time returned (`Ns::MAX`: no such time). The kernel then skips those
    /// ticks (`kernel/ticks.rs`, "quiet" CPUs). Default: no, every tick runs.
    fn idle_quiet(&mut self, _k: &Kernel, _cpu: CpuId) -> Option<Ns> {
        None
    }
    /// Account the `n` idle passes of `cpu` at `first`, `first + every`, ... that the kernel
    /// skipped after [`CpuScheduler::idle_quiet`] said yes, as those passes would have.
    fn replay_quiet(&mut self, _k: &mut Kernel, _cpu: CpuId, _first: Ns, _every: Ns, _n: u64) {}
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
    /// The node automatic NUMA balancing prefers for the task (Linux's `numa_preferred_nid`,
    /// which the daemon reads from `/proc/PID/sched`), when this scheduler has NUMA balancing
    /// and it has chosen one (default: none).
    fn numa_preferred_nid(&self, _task: TaskId) -> Option<NodeId> {
        None
    }
    /// Whether this scheduler has NUMA balancing that migrates pages (Linux's
    /// `kernel.numa_balancing`, which the daemon reads; default: no).
    fn numa_balancing(&self) -> bool {
        false
    }
    /// Period of the scheduler's own machine-wide timer, if it has one (default: none).
    fn timer_period(&self) -> Option<Ns> {
        None
    }
    /// The machine-wide timer fired (only called when `timer_period` is set).
    fn on_timer(&mut self, _k: &mut Kernel) {}
}
