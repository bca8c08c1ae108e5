//! Task placement: wake-up (`select_task_rq_fair` fast path) and fork/exec (slow path).
//!
//! Wake-up: if the waker's CPU and the task's previous CPU are both in some domain with
//! wake-affine, `wake_affine` picks one of the two as the target (an idle waker CPU sharing the
//! LLC with the previous one; the waker's CPU for a sync wake-up when it runs nothing else; else
//! the previous CPU if idle; else the one with less load, the
//! previous CPU's load raised by half the domain's `imbalance_pct` margin). Then
//! `select_idle_sibling` looks for an idle CPU near the target: the target itself, the
//! previous CPU if it shares the LLC, else the first idle core (SMT) or CPU of the target's LLC,
//! scanning from the target. Timer wake-ups have no waker: the target is the previous CPU.
//!
//! Fork/exec: from the highest level with fork/exec balancing, `find_idlest_group` picks the
//! least busy group (lower group type, then more idle CPUs or lower load); the local group is
//! kept when it is not busier (with the `imbalance_pct` margin for loaded groups and the NUMA
//! imbalance rule at NUMA levels), and the search descends into the chosen group down to the
//! idlest CPU.

use super::imbalance::{NumaImbalance, Pair};
use super::stats::{GroupStats, GroupType};
use super::topology::Level;
use crate::kernel::pelt::CAPACITY_SCALE;
use crate::kernel::{Kernel, TaskId};
use topo::{CpuId, CpuSet};

fn idle(k: &Kernel, c: CpuId) -> bool {
    k.nr_running(c) == 0
}

/// Wake-up target of `t` woken by a task on `waker` (None: timer or I/O completion).
pub fn wake_cpu(levels: &[Level], k: &Kernel, t: TaskId, waker: Option<CpuId>) -> CpuId {
    let prev = k.tasks[t].cpu;
    let allowed = &k.tasks[t].affinity;
    let mut target = prev;
    if let Some(w) = waker.filter(|&w| w != prev && allowed.contains(w)) {
        if let Some(lv) = levels
            .iter()
            .find(|lv| lv.wake_affine && lv.spans[w].contains(prev))
        {
            target = wake_affine(k, lv, w, prev, t);
        }
    }
    select_idle_sibling(k, allowed, prev, target)
}

fn wake_affine(k: &Kernel, lv: &Level, this: CpuId, prev: CpuId, t: TaskId) -> CpuId {
    let share_llc = k.topo.cpus[this].llc == k.topo.cpus[prev].llc;
    if idle(k, this) && share_llc {
        return if idle(k, prev) { prev } else { this };
    }
    // A waker that is about to block (a message send, an exit: the model's only wakers) is a
    // sync wake-up: its CPU is as good as idle when it runs nothing else.
    if k.nr_running(this) == 1 {
        return this;
    }
    if idle(k, prev) {
        return prev;
    }
    wake_affine_weight(k, lv, this, prev, t)
}

/// `wake_affine_weight` (PELT loads): the waker's CPU, its own load taken off (a sync
/// wake-up) and the wakee's added, against the previous CPU without the wakee, which gets
/// half the `imbalance_pct` margin (`WA_BIAS`); ties go to the previous CPU.
fn wake_affine_weight(k: &Kernel, lv: &Level, this: CpuId, prev: CpuId, t: TaskId) -> CpuId {
    let mut this_load = k.cpu_load(this);
    if let Some(waker) = k.rqs[this].curr {
        let current = k.task_pelt(waker).load_avg;
        if current > this_load {
            return this;
        }
        this_load -= current;
    }
    let task_load = k.task_pelt(t).load_avg;
    let this_eff = (this_load + task_load) * 100.0;
    let prev_eff = (k.cpu_load(prev) - task_load) * f64::from(100 + (lv.imbalance_pct - 100) / 2);
    if this_eff < prev_eff { this } else { prev }
}

fn select_idle_sibling(k: &Kernel, allowed: &CpuSet, prev: CpuId, target: CpuId) -> CpuId {
    let ok = |c: CpuId| allowed.contains(c) && idle(k, c);
    if ok(target) {
        return target;
    }
    let llc = |c: CpuId| k.topo.cpus[c].llc;
    if prev != target && llc(prev) == llc(target) && ok(prev) {
        return prev;
    }
    let cpus = k.topo.llc_cpus(target);
    let order: Vec<CpuId> = cpus
        .iter()
        .filter(|&c| c > target)
        .chain(cpus.iter().filter(|&c| c <= target))
        .collect();
    // An idle core first (every thread idle), then any idle CPU.
    let core_idle = |c: CpuId| k.topo.core_cpus(c).iter().all(|s| idle(k, s));
    order
        .iter()
        .copied()
        .find(|&c| ok(c) && core_idle(c))
        .or_else(|| order.iter().copied().find(|&c| ok(c)))
        .unwrap_or(target)
}

/// Fork/exec placement of `t` starting from `cpu` (`find_idlest_cpu`).
pub fn idlest_cpu(
    levels: &[Level],
    k: &Kernel,
    t: TaskId,
    cpu: CpuId,
    rule: NumaImbalance,
) -> CpuId {
    let allowed = &k.tasks[t].affinity;
    let Some(mut l) = (0..levels.len())
        .take_while(|&l| levels[l].balance_fork)
        .last()
    else {
        return cpu;
    };
    let mut cpu = cpu;
    loop {
        let lv = &levels[l];
        match idlest_group(k, lv, cpu, t, rule) {
            Some(g) => {
                let group = &lv.groups[cpu][g];
                let new = group
                    .iter()
                    .filter(|&c| allowed.contains(c))
                    .min_by_key(|&c| (k.nr_running(c), c))
                    .unwrap_or(cpu);
                cpu = new;
                // Descend below the level whose span the group is.
                match (0..l)
                    .rev()
                    .find(|&c| levels[c].spans[cpu].count() < group.count())
                {
                    Some(next) => l = next,
                    None => return cpu,
                }
            }
            None if l == 0 => return cpu,
            None => l -= 1,
        }
    }
}

/// `find_idlest_group`: index of a group better than the local one, or None to stay. The
/// statistics leave out the task being placed (`update_sg_wakeup_stats`).
fn idlest_group(
    k: &Kernel,
    lv: &Level,
    cpu: CpuId,
    t: TaskId,
    rule: NumaImbalance,
) -> Option<usize> {
    let allowed = &k.tasks[t].affinity;
    let groups = &lv.groups[cpu];
    let stats: Vec<GroupStats> = groups
        .iter()
        .map(|g| {
            let mut s = GroupStats::of(k, g, lv.imbalance_pct, Some(t));
            if s.kind != GroupType::HasSpare {
                s.avg_load = s.load_per_cap();
            }
            s
        })
        .collect();
    let local = stats[0];
    let mut best: Option<usize> = None;
    for (i, s) in stats.iter().enumerate().skip(1) {
        if !groups[i].intersects(allowed) {
            continue;
        }
        let better = match best.map(|b| stats[b]) {
            None => true,
            Some(b) if s.kind != b.kind => s.kind < b.kind,
            Some(b) if s.kind == GroupType::HasSpare => {
                s.idle_cpus > b.idle_cpus || (s.idle_cpus == b.idle_cpus && s.util < b.util)
            }
            Some(b) => s.avg_load < b.avg_load,
        };
        if better {
            best = Some(i);
        }
    }
    let bi = best?;
    let b = stats[bi];
    if !groups[0].intersects(allowed) {
        return Some(bi);
    }
    if local.kind != b.kind {
        return (local.kind > b.kind).then_some(bi);
    }
    if local.kind != GroupType::HasSpare {
        // One nice-0 task's load times the imbalance_pct margin, per 1024 of capacity.
        let margin = CAPACITY_SCALE * f64::from(lv.imbalance_pct - 100) / 100.0;
        let (la, ba) = (local.avg_load, b.avg_load);
        let stay = (lv.numa && ba + margin >= la)
            || ba >= la + margin
            || 100.0 * la <= f64::from(lv.imbalance_pct) * ba;
        return (!stay).then_some(bi);
    }
    if lv.numa {
        let p = Pair {
            src_running: local.nr + 1,
            src_weight: local.weight,
            dst_running: b.nr,
            local_running: local.nr,
            span_weight: lv.span_weight[cpu],
            imb_numa_nr: lv.imb_numa_nr[cpu],
        };
        if rule.fork_stays(local.idle_cpus.abs_diff(b.idle_cpus), p) {
            return None;
        }
    }
    (local.idle_cpus < b.idle_cpus).then_some(bi)
}
