//! Hooks for schedulers that move running tasks and single page groups (the `linux` model's
//! active balancing and NUMA balancing), and the NUMA-balancing counters (as /proc/vmstat).
//! Additive: the 2.5-era schedulers never call these.

use super::{Kernel, TaskId, TaskState};
use serde::Serialize;
use topo::{CpuId, NodeId};

/// NUMA balancing and task-move counters, named after /proc/vmstat where one exists.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct NumaCounters {
    /// Base pages made inaccessible by the scanner.
    pub numa_pte_updates: u64,
    /// Of those, huge-page (page-group) updates.
    pub numa_huge_pte_updates: u64,
    /// NUMA hinting faults taken (one per page group: a huge page).
    pub numa_hint_faults: u64,
    /// Of those, faults on memory of the faulting CPU's node.
    pub numa_hint_faults_local: u64,
    /// Base pages migrated on hinting faults.
    pub numa_pages_migrated: u64,
    /// Scan passes started (task_numa_work runs that claimed the process's scan).
    pub numa_scan_passes: u64,
    /// Task moves by reason: NUMA balancing moved a task to its preferred node, swapped two
    /// tasks, found no better CPU; active load balancing pushed a running task.
    pub migrations_numa_move: u64,
    pub migrations_numa_swap: u64,
    pub numa_migrate_failed: u64,
    pub migrations_active_balance: u64,
}

impl Kernel {
    /// Move task `t` to `dst` now, whether it waits on a runqueue or runs (the running task is
    /// preempted; its CPU picks another). Sleeping and exited tasks are left alone.
    pub fn move_task(&mut self, t: TaskId, dst: CpuId) {
        let src = self.tasks[t].cpu;
        if src == dst {
            return;
        }
        match self.tasks[t].state {
            TaskState::Runnable => self.migrate_queued(t, dst),
            TaskState::Running => {
                self.settle(t);
                self.put_curr(src);
                self.enqueue(t, dst, false);
                self.resched(src);
            }
            _ => {}
        }
    }

    /// Move page group `group` of region `region` of process `pid` to node `to`, charging the
    /// copy to task `charge` as system time. The group moves as one transparent huge page: the
    /// copy at the bandwidth of [`Kernel::migration_cost_ns`] plus one `fault_overhead_ns` for
    /// unmapping and remapping it (not one per base page). Returns the bytes moved (0 when
    /// already there or `to` is full).
    pub fn migrate_group(
        &mut self,
        pid: usize,
        region: usize,
        group: usize,
        to: NodeId,
        charge: TaskId,
    ) -> u64 {
        let r = &mut self.procs[pid].regions[region];
        let Some(from) = r.groups[group] else {
            return 0;
        };
        let moved = self.mem.migrate(r, group, to);
        if moved == 0 {
            return 0;
        }
        self.procs[pid].mem_version += 1;
        self.counters.migrated_bytes += moved;
        self.mark_proc_dirty(pid);
        let per_page = self.topo.memory.fault_overhead_ns;
        let pages = moved.div_ceil(self.topo.memory.page_bytes.max(1)) as f64;
        let cost = self.migration_cost_ns(from, to, moved) - (pages - 1.0).max(0.0) * per_page;
        self.charge_kernel(charge, cost);
        moved
    }
}
