//! A scheduler wrapper for tests: delegates every hook to a real scheduler and records, for
//! each balancing call and each run of the scheduler's timer, which waiting tasks moved
//! where, and how many tasks were waiting on each node just before.

use sim::kernel::{Kernel, KernelParams, TaskId};
use sim::sched::{CpuScheduler, ExecPlacement, IdleType};
use sim::time::Ns;
use std::sync::{Arc, Mutex};
use topo::{CpuId, NodeId};

/// One task moved by a balancing call or the timer.
#[derive(Clone, Debug)]
pub struct Move {
    pub task: TaskId,
    pub from: CpuId,
    pub to: CpuId,
}

/// One balancing call (`cpu` is None for the scheduler's timer).
#[derive(Clone, Debug)]
pub struct Call {
    pub at: Ns,
    pub cpu: Option<CpuId>,
    pub idle: Option<IdleType>,
    /// Tasks waiting on each node's runqueues before the call.
    pub waiting_before: Vec<usize>,
    pub moves: Vec<Move>,
}

pub type Log = Arc<Mutex<Vec<Call>>>;

pub struct Probe {
    inner: Box<dyn CpuScheduler>,
    log: Log,
}

impl Probe {
    pub fn new(inner: Box<dyn CpuScheduler>) -> (Self, Log) {
        let log = Log::default();
        (
            Probe {
                inner,
                log: log.clone(),
            },
            log,
        )
    }
}

fn waiting_per_node(k: &Kernel) -> Vec<usize> {
    (0..k.topo.nr_nodes())
        .map(|n| {
            k.topo
                .node_cpus(n)
                .iter()
                .map(|c| k.rqs[c].queue.len())
                .sum()
        })
        .collect()
}

/// (task, cpu) of every waiting task.
fn waiting_tasks(k: &Kernel) -> Vec<(TaskId, CpuId)> {
    k.rqs
        .iter()
        .enumerate()
        .flat_map(|(c, rq)| rq.queue.iter().map(move |t| (t, c)))
        .collect()
}

fn moves(k: &Kernel, before: &[(TaskId, CpuId)]) -> Vec<Move> {
    before
        .iter()
        .filter(|&&(t, c)| k.tasks[t].cpu != c)
        .map(|&(t, c)| Move {
            task: t,
            from: c,
            to: k.tasks[t].cpu,
        })
        .collect()
}

impl CpuScheduler for Probe {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn options(&self) -> Vec<(String, String)> {
        self.inner.options()
    }
    fn kernel_params(&self) -> KernelParams {
        self.inner.kernel_params()
    }
    fn balance_interval(&self, k: &Kernel, cpu: CpuId, idle: bool) -> Ns {
        self.inner.balance_interval(k, cpu, idle)
    }
    fn balance(&mut self, k: &mut Kernel, cpu: CpuId, idle: IdleType) {
        let waiting_before = waiting_per_node(k);
        let before = waiting_tasks(k);
        self.inner.balance(k, cpu, idle);
        let moves = moves(k, &before);
        self.log.lock().expect("log").push(Call {
            at: k.now,
            cpu: Some(cpu),
            idle: Some(idle),
            waiting_before,
            moves,
        });
    }
    fn fork_cpu(&mut self, k: &Kernel, parent_cpu: CpuId, child: TaskId) -> CpuId {
        self.inner.fork_cpu(k, parent_cpu, child)
    }
    fn exec(&mut self, k: &Kernel, task: TaskId, cpu: CpuId) -> ExecPlacement {
        self.inner.exec(k, task, cpu)
    }
    fn wake_cpu(&mut self, k: &Kernel, task: TaskId) -> CpuId {
        self.inner.wake_cpu(k, task)
    }
    fn home_node(&self, k: &Kernel, task: TaskId) -> Option<NodeId> {
        self.inner.home_node(k, task)
    }
    fn timer_period(&self) -> Option<Ns> {
        self.inner.timer_period()
    }
    fn on_timer(&mut self, k: &mut Kernel) {
        let waiting_before = waiting_per_node(k);
        let before = waiting_tasks(k);
        self.inner.on_timer(k);
        let moves = moves(k, &before);
        self.log.lock().expect("log").push(Call {
            at: k.now,
            cpu: None,
            idle: None,
            waiting_before,
            moves,
        });
    }
}
