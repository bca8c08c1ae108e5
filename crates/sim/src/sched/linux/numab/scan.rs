//! Scan pacing and the address-space scan (`task_tick_numa`, `task_numa_work`), and the scan
//! period bounds scaled by process size (`task_scan_min`, `task_scan_max`, `task_scan_start`).

use super::{Mode, NumaBalancing, mix};
use crate::kernel::{Kernel, TaskId, TaskState};
use crate::memory::MemPolicy;
use crate::time::{MS, Ns};

/// The kernel's MAX_SCAN_WINDOW (MB/s): the scan rate floor is 1000 ms / (2560 / scan_size).
const MAX_SCAN_WINDOW_MB: u64 = 2560;

impl NumaBalancing {
    /// Scan windows of the process: its resident size over `scan_size`, rounded up.
    fn windows(&self, k: &Kernel, t: TaskId) -> u64 {
        let p = &k.procs[k.tasks[t].pid];
        let rss: u64 = p.regions.iter().map(|r| r.allocated_bytes()).sum();
        rss.max(1).div_ceil(self.p.scan_size)
    }

    pub(super) fn scan_min(&self, k: &Kernel, t: TaskId) -> Ns {
        let size_mb = (self.p.scan_size >> 20).max(1);
        let floor = if size_mb < MAX_SCAN_WINDOW_MB {
            1000 * MS / (MAX_SCAN_WINDOW_MB / size_mb)
        } else {
            1000 * MS
        };
        (self.p.scan_period_min / self.windows(k, t)).max(floor)
    }

    /// Shared-memory groups scan more slowly the more they share (`task_scan_max`).
    pub(super) fn scan_max(&self, k: &Kernel, t: TaskId) -> Ns {
        let smin = self.scan_min(k, t);
        let mut smax = self.p.scan_period_max / self.windows(k, t);
        if let Some(g) = &self.procs[k.tasks[t].pid].group {
            let shared: f64 = g.mem.iter().map(|f| f[0]).sum();
            let private: f64 = g.mem.iter().map(|f| f[1]).sum();
            let period =
                smax as f64 * g.members.len() as f64 * (shared + 1.0) / (private + shared + 1.0);
            smax = smax.max(period as Ns);
        }
        smax.max(smin)
    }

    /// Runtime check of the running task `t` (`task_tick_numa`).
    pub(super) fn tick_scan(&mut self, k: &mut Kernel, t: TaskId) {
        let task = &k.tasks[t];
        let runtime = (task.user_ns + task.sys_ns) as Ns + k.now.saturating_sub(task.last_settle);
        if !self.tasks[t].started {
            let st = &mut self.tasks[t];
            st.started = true;
            st.scan_period = self.p.scan_delay;
            st.node_stamp = runtime;
        }
        let period = self.tasks[t].scan_period.max(MS);
        if runtime <= self.tasks[t].node_stamp + period {
            return;
        }
        if self.tasks[t].scan_period_max == 0 {
            // First scan: the period starts at its size-scaled minimum.
            let start = match self.mode {
                Mode::On => self.scan_min(k, t),
                _ => self.p.scan_period_min,
            };
            self.tasks[t].scan_period = start;
            self.tasks[t].scan_period_max = self.scan_max(k, t);
        }
        self.tasks[t].node_stamp += period;
        if k.now >= self.procs[k.tasks[t].pid].next_scan {
            self.numa_work(k, t);
        }
    }

    /// One scan pass claimed by `t` for its process (`task_numa_work`).
    fn numa_work(&mut self, k: &mut Kernel, t: TaskId) {
        let pid = k.tasks[t].pid;
        let limit = match self.mode {
            Mode::On => self.tasks[t].scan_period,
            _ => 2 * self.p.scan_period_min,
        };
        self.procs[pid].next_scan = k.now + limit;
        k.counters.numa.numa_scan_passes += 1;
        let page = k.topo.memory.page_bytes.max(1);
        let mut pages = (self.p.scan_size / page) as i64;
        let mut virt = pages * 8;
        let regions = &k.procs[pid].regions;
        let flat: Vec<(usize, usize)> = regions
            .iter()
            .enumerate()
            .flat_map(|(r, reg)| (0..reg.groups.len()).map(move |g| (r, g)))
            .collect();
        let pn = &mut self.procs[pid];
        let mut pos = pn.offset.min(flat.len());
        let mut armed = Vec::new();
        while pos < flat.len() && pages > 0 && virt > 0 {
            let (r, g) = flat[pos];
            let reg = &regions[r];
            let gp = reg.group_size(g).div_ceil(page) as i64;
            virt -= gp;
            pos += 1;
            // Only default-policy memory is NUMA balanced (MPOL_F_MOF); pages not yet
            // present and pages already armed are passed over.
            if reg.policy != MemPolicy::FirstTouch || reg.groups[g].is_none() || pn.armed[r][g] {
                continue;
            }
            pn.armed[r][g] = true;
            pages -= gp;
            k.counters.numa.numa_pte_updates += gp as u64;
            k.counters.numa.numa_huge_pte_updates += 1;
            armed.push((r, g));
        }
        if pos >= flat.len() {
            pn.offset = 0;
            pn.scan_seq += 1;
        } else {
            pn.offset = pos;
        }
        let cost = armed.len() as f64 * self.p.pmd_scan_ns;
        k.charge_kernel(t, cost);
        let seq = self.procs[pid].scan_seq;
        for (r, g) in armed {
            self.assign(k, pid, r, g, seq);
        }
    }

    /// Hand an armed group to one of the running threads that access its region.
    fn assign(&mut self, k: &Kernel, pid: usize, r: usize, g: usize, seq: u64) {
        let users: Vec<TaskId> = k.procs[pid]
            .threads
            .iter()
            .copied()
            .filter(|&u| {
                k.tasks[u].state == TaskState::Running && Self::accessed_regions(k, u).contains(&r)
            })
            .collect();
        if users.is_empty() {
            self.procs[pid].unclaimed.push((r, g));
            return;
        }
        let h = mix((pid as u64) << 40 ^ (r as u64) << 32 ^ g as u64 ^ seq.rotate_left(17));
        let u = users[(h % users.len() as u64) as usize];
        self.tasks[u].pending.push((r, g));
    }

    /// `t` takes the armed groups nobody was accessing when they were armed.
    pub(super) fn claim(&mut self, k: &Kernel, t: TaskId) {
        let pid = k.tasks[t].pid;
        if self.procs[pid].unclaimed.is_empty() {
            return;
        }
        let regions = Self::accessed_regions(k, t);
        let pn = &mut self.procs[pid];
        let mut keep = Vec::new();
        for (r, g) in std::mem::take(&mut pn.unclaimed) {
            if regions.contains(&r) {
                self.tasks[t].pending.push((r, g));
            } else {
                keep.push((r, g));
            }
        }
        self.procs[pid].unclaimed = keep;
    }
}
