//! NUMA hinting faults (`do_numa_page`, `task_numa_fault`), the two-stage migration filter
//! (`should_numa_migrate_memory`), numa groups, and the once-per-pass placement
//! (`task_numa_placement`, `update_task_scan_period`).

use super::{Faults, Group, Mode, NumaBalancing};
use crate::kernel::{Kernel, TaskId};
use topo::NodeId;

/// `ACTIVE_NODE_FRACTION`: a node is active for a group with a third of the top CPU faults.
const ACTIVE_NODE_FRACTION: f64 = 3.0;
/// `NUMA_PERIOD_SLOTS` and `NUMA_PERIOD_THRESHOLD`: the scan period moves in tenths toward
/// 7/10 local (or private) faults.
const SLOTS: i64 = 10;
const THRESHOLD: i64 = 7;

fn node_sum(f: &Faults, n: NodeId) -> f64 {
    f[n][0] + f[n][1]
}

impl NumaBalancing {
    /// Take every pending hinting fault of the running task `t`.
    pub(super) fn take_faults(&mut self, k: &mut Kernel, t: TaskId) {
        for (r, g) in std::mem::take(&mut self.tasks[t].pending) {
            self.fault(k, t, r, g);
        }
    }

    fn fault(&mut self, k: &mut Kernel, t: TaskId, r: usize, g: usize) {
        let pid = k.tasks[t].pid;
        self.procs[pid].armed[r][g] = false;
        let Some(mem_node) = k.procs[pid].regions[r].groups[g] else {
            return;
        };
        let cpu_node = k.node_of(k.tasks[t].cpu);
        let page = k.topo.memory.page_bytes.max(1);
        let pages = k.procs[pid].regions[r].group_size(g).div_ceil(page) as f64;
        k.counters.numa.numa_hint_faults += 1;
        if mem_node == cpu_node {
            k.counters.numa.numa_hint_faults_local += 1;
        }
        let last = self.procs[pid].last[r][g];
        let private = last.is_none_or(|(_, lt)| lt == t);
        if !private && self.mode == Mode::On {
            self.join_group(k, pid, t, last.map(|(_, lt)| lt));
        }
        let mut local = mem_node == cpu_node;
        if let Some(grp) = &self.procs[pid].group {
            let n_active = grp.active.iter().filter(|a| **a).count();
            if !private && !local && n_active > 1 && grp.active[cpu_node] && grp.active[mem_node] {
                local = true;
            }
        }
        let migrate = mem_node != cpu_node && self.should_migrate(t, pid, last, cpu_node, mem_node);
        self.procs[pid].last[r][g] = Some((cpu_node, t));
        let mut node = mem_node;
        let mut failed = false;
        if migrate {
            if k.migrate_group(pid, r, g, cpu_node, t) > 0 {
                k.counters.numa.numa_pages_migrated += pages as u64;
                node = cpu_node;
            } else {
                failed = true;
            }
        }
        let cost = k.topo.memory.fault_overhead_ns;
        k.charge_kernel(t, cost);
        self.placement(k, t);
        let st = &mut self.tasks[t];
        let pi = usize::from(private);
        st.buf_mem[node][pi] += pages;
        st.buf_cpu[cpu_node][pi] += pages;
        st.locality[usize::from(local)] += pages;
        if failed {
            st.locality[2] += pages;
        }
    }

    /// The two-stage filter: migrate a page toward `dst` only when the previous fault on it
    /// also came from `dst`; shared pages of a numa group follow where the group runs.
    fn should_migrate(
        &self,
        t: TaskId,
        pid: usize,
        last: Option<(NodeId, TaskId)>,
        dst: NodeId,
        src: NodeId,
    ) -> bool {
        if self.mode == Mode::SchedNuma2012 {
            return true;
        }
        let st = &self.tasks[t];
        let mine = last.is_none_or(|(_, lt)| lt == t);
        if (st.preferred.is_none() || st.scan_seq <= 4) && mine {
            return true;
        }
        if last.is_some_and(|(n, _)| n != dst) {
            return false;
        }
        if mine {
            return true;
        }
        let Some(g) = &self.procs[pid].group else {
            return true;
        };
        let (cd, cs) = (node_sum(&g.cpu, dst), node_sum(&g.cpu, src));
        if cd > cs * ACTIVE_NODE_FRACTION {
            return true;
        }
        cd * node_sum(&g.mem, src) * 3.0 > cs * node_sum(&g.mem, dst) * 4.0
    }

    /// `t` shared a page with `other`: both join the process's numa group.
    fn join_group(&mut self, k: &Kernel, pid: usize, t: TaskId, other: Option<TaskId>) {
        let n = k.topo.nr_nodes();
        let g = self.procs[pid].group.get_or_insert_with(|| Group {
            members: Vec::new(),
            mem: vec![[0.0; 2]; n],
            cpu: vec![[0.0; 2]; n],
            total: 0.0,
            active: vec![false; n],
        });
        for m in [Some(t), other].into_iter().flatten() {
            if !g.members.contains(&m) && k.tasks[m].pid == pid {
                g.members.push(m);
                let st = &self.tasks[m];
                for i in 0..n {
                    for p in 0..2 {
                        g.mem[i][p] += st.mem[i][p];
                        g.cpu[i][p] += st.cpu[i][p];
                    }
                }
                g.total += st.total;
            }
        }
    }

    /// Once per scan pass of the process: decay and fold in the new faults, choose the
    /// preferred node, adapt the scan period.
    fn placement(&mut self, k: &Kernel, t: TaskId) {
        let pid = k.tasks[t].pid;
        let seq = self.procs[pid].scan_seq;
        if self.tasks[t].scan_seq == seq {
            return;
        }
        self.tasks[t].scan_seq = seq;
        if self.tasks[t].scan_period_max > 0 {
            self.tasks[t].scan_period_max = self.scan_max(k, t);
        }
        let in_group = self.procs[pid]
            .group
            .as_ref()
            .is_some_and(|g| g.members.contains(&t));
        let n = k.topo.nr_nodes();
        let mut types = [0.0f64; 2];
        let mut best: Option<(NodeId, f64)> = None;
        for node in 0..n {
            let mut faults = 0.0;
            for (p, ty) in types.iter_mut().enumerate() {
                let st = &mut self.tasks[t];
                let diff = st.buf_mem[node][p] - st.mem[node][p] / 2.0;
                let fdiff = st.buf_cpu[node][p] - st.cpu[node][p] / 2.0;
                *ty += st.buf_mem[node][p];
                st.buf_mem[node][p] = 0.0;
                st.buf_cpu[node][p] = 0.0;
                st.mem[node][p] += diff;
                st.cpu[node][p] += fdiff;
                st.total += diff;
                faults += st.mem[node][p];
                if in_group {
                    let g = self.procs[pid].group.as_mut().expect("group");
                    g.mem[node][p] += diff;
                    g.cpu[node][p] += fdiff;
                    g.total += diff;
                }
            }
            if in_group {
                faults = node_sum(&self.procs[pid].group.as_ref().expect("group").mem, node);
            }
            if faults > 0.0 && best.is_none_or(|(_, f)| faults > f) {
                best = Some((node, faults));
            }
        }
        if in_group {
            let g = self.procs[pid].group.as_mut().expect("group");
            let max_cpu = (0..n).map(|i| node_sum(&g.cpu, i)).fold(0.0, f64::max);
            for i in 0..n {
                g.active[i] = node_sum(&g.cpu, i) * ACTIVE_NODE_FRACTION > max_cpu && max_cpu > 0.0;
            }
        }
        if let Some((node, _)) = best {
            self.tasks[t].preferred = Some(node);
        }
        if self.mode == Mode::On {
            self.update_scan_period(k, t, types[0], types[1]);
        }
    }

    /// Move the scan period toward 70% local or private faults (`update_task_scan_period`).
    fn update_scan_period(&mut self, k: &Kernel, t: TaskId, shared: f64, private: f64) {
        let smin = self.scan_min(k, t);
        let smax = self.tasks[t].scan_period_max.max(smin);
        let st = &mut self.tasks[t];
        let [remote, local, failed] = st.locality;
        st.locality = [0.0; 3];
        if local + shared == 0.0 || failed > 0.0 {
            st.scan_period = (st.scan_period * 2).min(smax);
            return;
        }
        let slot = st.scan_period.div_ceil(SLOTS as u64) as i64;
        let lr = ((local * SLOTS as f64) / (local + remote)) as i64;
        let ps = ((private * SLOTS as f64) / (private + shared)) as i64;
        let diff = if ps >= THRESHOLD {
            (ps - THRESHOLD).max(1) * slot
        } else if lr >= THRESHOLD {
            (lr - THRESHOLD).max(1) * slot
        } else {
            -(THRESHOLD - lr.max(ps)) * slot
        };
        st.scan_period = (st.scan_period as i64 + diff).clamp(smin as i64, smax as i64) as u64;
    }
}
