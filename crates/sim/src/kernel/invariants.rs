//! The kernel model's invariants, checked from scratch (tests call them after every event):
//! run queues, task states, memory accounting, quiet CPUs and the incremental contention
//! state.

use super::*;

/// A broken bookkeeping rule found by [`Kernel::check_invariants`], with the items involved.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InvariantError {
    #[error("cpu {cpu} runs task {task} whose state is {state:?} on cpu {task_cpu}")]
    CurrNotRunning {
        cpu: CpuId,
        task: TaskId,
        state: TaskState,
        task_cpu: CpuId,
    },
    #[error("task {task} runs on cpu {cpu} outside its affinity {affinity}")]
    RunsOutsideAffinity {
        task: TaskId,
        cpu: CpuId,
        affinity: String,
    },
    #[error("task {task} queued on cpu {cpu} is {state:?} on cpu {task_cpu}")]
    QueuedNotRunnable {
        task: TaskId,
        cpu: CpuId,
        state: TaskState,
        task_cpu: CpuId,
    },
    #[error("task {task} queued on cpu {cpu} outside its affinity {affinity}")]
    QueuedOutsideAffinity {
        task: TaskId,
        cpu: CpuId,
        affinity: String,
    },
    #[error("cpu {cpu}: the nr_running array holds {array} but the runqueue {queued}")]
    NrRunningArray {
        cpu: CpuId,
        array: u32,
        queued: usize,
    },
    #[error("nr_waiting is {counted} but {waiting} tasks wait")]
    NrWaiting { counted: usize, waiting: usize },
    #[error("live_tasks is {counted} but {live} tasks live")]
    LiveTasks { counted: usize, live: usize },
    #[error("task {task}: per-node user time {node_sum} != user time {user}")]
    NodeUserTime {
        task: TaskId,
        node_sum: f64,
        user: f64,
    },
    #[error("node {node} holds {used} bytes, more than its {capacity}")]
    NodeOverfull {
        node: NodeId,
        used: u64,
        capacity: u64,
    },
    #[error("regions hold {placed} bytes but nodes account {used}")]
    RegionBytes { placed: u64, used: u64 },
    #[error("incremental contention state: {0}")]
    Contention(#[from] contention::ContentionMismatch),
    #[error("cpu {cpu} is quiet (skipping its balance ticks) but {why}")]
    QuietCpu { cpu: CpuId, why: &'static str },
}

impl Kernel {
    /// Check the model's bookkeeping; returns the first broken rule. Tests call this after
    /// every event.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let mut waiting = 0;
        for (cpu, rq) in self.rqs.iter().enumerate() {
            if let Some(t) = rq.curr {
                let task = &self.tasks[t];
                if task.state != TaskState::Running || task.cpu != cpu {
                    return Err(InvariantError::CurrNotRunning {
                        cpu,
                        task: t,
                        state: task.state,
                        task_cpu: task.cpu,
                    });
                }
                if !task.affinity.contains(cpu) {
                    return Err(InvariantError::RunsOutsideAffinity {
                        task: t,
                        cpu,
                        affinity: task.affinity.to_string(),
                    });
                }
            }
            for t in rq.queue.iter() {
                let task = &self.tasks[t];
                if task.state != TaskState::Runnable || task.cpu != cpu {
                    return Err(InvariantError::QueuedNotRunnable {
                        task: t,
                        cpu,
                        state: task.state,
                        task_cpu: task.cpu,
                    });
                }
                if !task.affinity.contains(cpu) {
                    return Err(InvariantError::QueuedOutsideAffinity {
                        task: t,
                        cpu,
                        affinity: task.affinity.to_string(),
                    });
                }
                waiting += 1;
            }
            if self.nr_running[cpu] as usize != rq.nr_running() {
                return Err(InvariantError::NrRunningArray {
                    cpu,
                    array: self.nr_running[cpu],
                    queued: rq.nr_running(),
                });
            }
        }
        self.quiet_invariants()?;
        if waiting != self.nr_waiting {
            return Err(InvariantError::NrWaiting {
                counted: self.nr_waiting,
                waiting,
            });
        }
        let live = self
            .tasks
            .iter()
            .filter(|t| t.state != TaskState::Exited)
            .count();
        if live != self.live_tasks {
            return Err(InvariantError::LiveTasks {
                counted: self.live_tasks,
                live,
            });
        }
        for (i, t) in self.tasks.iter().enumerate() {
            let node_sum: f64 = t.node_user_ns().iter().sum();
            if (node_sum - t.user_ns).abs() > 1e-6 * t.user_ns.max(1.0) {
                return Err(InvariantError::NodeUserTime {
                    task: i,
                    node_sum,
                    user: t.user_ns,
                });
            }
        }
        for (n, &used) in self.mem.used.iter().enumerate() {
            if used > self.mem.capacity[n] {
                return Err(InvariantError::NodeOverfull {
                    node: n,
                    used,
                    capacity: self.mem.capacity[n],
                });
            }
        }
        let placed: u64 = self
            .procs
            .iter()
            .flat_map(|p| &p.regions)
            .map(|r| r.allocated_bytes())
            .sum();
        let used: u64 = self.mem.used.iter().sum();
        if placed != used {
            return Err(InvariantError::RegionBytes { placed, used });
        }
        self.check_contention()
            .map_err(InvariantError::Contention)?;
        Ok(())
    }
}
