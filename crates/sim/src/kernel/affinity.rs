//! `sched_setaffinity` in the model: a task's allowed CPUs change while it runs. As in Linux,
//! a task queued on a CPU it may no longer use is moved at once to an allowed one, and a
//! running one is pushed off its CPU (the kernel's stop-task migration) onto an allowed CPU's
//! queue; the CPU it left picks its next task.

use super::task::TaskState;
use super::{Kernel, TaskId};
use topo::{CpuId, CpuSet};

impl Kernel {
    /// Sets the allowed CPUs of task `t` (an empty or impossible set is ignored: the kernel
    /// refuses it with EINVAL).
    pub fn set_affinity(&mut self, t: TaskId, cpus: &CpuSet) {
        if !cpus.iter().any(|c| c < self.topo.nr_cpus()) {
            return;
        }
        self.tasks[t].affinity = cpus.clone();
        self.affinity_changes += 1;
        let cpu = self.tasks[t].cpu;
        if cpus.contains(cpu) {
            return;
        }
        let Some(dst) = self.least_loaded(cpus) else {
            return;
        };
        match self.tasks[t].state {
            TaskState::Runnable => self.migrate_queued(t, dst),
            TaskState::Running => {
                self.settle(t);
                self.put_curr(cpu);
                self.enqueue(t, dst, false);
                // The CPU it left picks its next task (its pending boundary goes stale).
                self.resched(cpu);
            }
            // A sleeping task goes to an allowed CPU when it wakes (the wake path checks
            // affinity).
            _ => {}
        }
    }

    /// The allowed CPU with the fewest tasks (lowest id on ties).
    fn least_loaded(&self, cpus: &CpuSet) -> Option<CpuId> {
        cpus.iter()
            .filter(|&c| c < self.topo.nr_cpus())
            .min_by_key(|&c| (self.nr_running(c), c))
    }
}
