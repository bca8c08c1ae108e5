//! Periodic, idle and new-idle load balancing of one domain level (`load_balance()`).
//!
//! 1. Only one CPU of the local group balances a level: the first idle one, or the group's
//!    first CPU when none is idle (`should_we_balance`); a new-idle pass always runs.
//! 2. `find_busiest_group`: the busiest other group is the one of the highest group type; among
//!    equals, the highest load per CPU (overloaded, fully busy) or the fewest idle CPUs then the
//!    most tasks (has spare). The decision and the migration type follow the kernel's
//!    `find_busiest_group`/`calculate_imbalance` (see [`plan`]); at NUMA levels the imbalance
//!    goes through the `numa_imbalance` rule.
//! 3. `find_busiest_queue`: the CPU of that group with the most runnable tasks.
//! 4. `detach_tasks`: waiting tasks are taken (least recently queued first) until the
//!    imbalance is met, skipping running, pinned and cache-hot ones (hot: ran within
//!    `sched_migration_cost`, or would leave its preferred NUMA node, unless the level failed
//!    more than `cache_nice_tries` times); a new-idle pass takes one task. A `load` imbalance
//!    below one task lets a task go only after failures (`load >> nr_balance_failed`).
//! 5. Active balance: when a `task` imbalance found only running tasks and the level failed
//!    more than `cache_nice_tries + 2` times, the running task is pushed to the idle CPU.

use super::imbalance::{NumaImbalance, Pair};
use super::stats::{GroupStats, GroupType};
use super::topology::Level;
use crate::kernel::{Kernel, Refusal, TaskId};
use crate::sched::IdleType;
use crate::sched::balance::pull_order;
use topo::{CpuId, CpuSet};

/// What to move.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Migration {
    /// Equalise load per CPU; imbalance in tasks (may be fractional).
    Load,
    /// Fill idle CPUs.
    Util,
    /// Equalise the number of tasks.
    Task,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub group: usize,
    pub kind: Migration,
    pub imbalance: f64,
}

/// Whether `cpu` is the CPU of its group that balances this level.
pub fn should_balance(k: &Kernel, local: &CpuSet, cpu: CpuId, idle: IdleType) -> bool {
    if idle == IdleType::NewIdle {
        return true;
    }
    match local.iter().find(|&c| k.rqs[c].curr.is_none()) {
        Some(first_idle) => first_idle == cpu,
        None => local.first() == Some(cpu),
    }
}

/// `find_busiest_group` + `calculate_imbalance` for `cpu` at `level`.
pub fn plan(
    k: &Kernel,
    lv: &Level,
    cpu: CpuId,
    idle: IdleType,
    rule: NumaImbalance,
) -> Option<Plan> {
    let stats = GroupStats::of_groups(k, lv, cpu);
    let local = stats[0];
    let mut busiest: Option<usize> = None;
    for (i, s) in stats.iter().enumerate().skip(1) {
        if s.nr == 0 {
            continue;
        }
        let better = match busiest.map(|b| stats[b]) {
            None => true,
            Some(b) if s.kind != b.kind => s.kind > b.kind,
            Some(b) if s.kind == GroupType::HasSpare => {
                s.idle_cpus < b.idle_cpus || (s.idle_cpus == b.idle_cpus && s.nr > b.nr)
            }
            Some(b) => s.avg_load() > b.avg_load(),
        };
        if better {
            busiest = Some(i);
        }
    }
    let bi = busiest?;
    let b = stats[bi];
    if local.kind > b.kind {
        return None;
    }
    let total_nr: usize = stats.iter().map(|s| s.nr).sum();
    let total_w: usize = stats.iter().map(|s| s.weight).sum();
    let avg = total_nr as f64 / total_w.max(1) as f64;
    if local.kind == GroupType::Overloaded {
        let pct = f64::from(lv.imbalance_pct);
        if local.avg_load() >= b.avg_load()
            || local.avg_load() >= avg
            || 100.0 * b.avg_load() <= pct * local.avg_load()
        {
            return None;
        }
    }
    let force = lv.prefer_sibling && local.kind == GroupType::HasSpare && b.nr > local.nr + 1;
    if !force
        && b.kind != GroupType::Overloaded
        && (idle == IdleType::Busy
            || (b.weight > 1 && local.idle_cpus <= b.idle_cpus + 1)
            || b.nr == 1)
    {
        return None;
    }
    let (kind, imbalance) = imbalance(lv, cpu, idle, rule, local, b, avg, force)?;
    (imbalance > 0.0).then_some(Plan {
        group: bi,
        kind,
        imbalance,
    })
}

/// `calculate_imbalance`.
#[allow(clippy::too_many_arguments)]
fn imbalance(
    lv: &Level,
    cpu: CpuId,
    idle: IdleType,
    rule: NumaImbalance,
    local: GroupStats,
    b: GroupStats,
    avg: f64,
    prefer_sibling: bool,
) -> Option<(Migration, f64)> {
    if local.kind == GroupType::HasSpare {
        if b.kind > GroupType::FullyBusy && !lv.shares_llc {
            // Fill the local group's idle capacity.
            let spare = local.idle_cpus as f64;
            if spare == 0.0 && idle.is_idle() {
                return Some((Migration::Task, 1.0));
            }
            return Some((Migration::Util, spare));
        }
        let diff = if b.weight == 1 || prefer_sibling {
            b.nr.saturating_sub(local.nr)
        } else {
            local.idle_cpus.saturating_sub(b.idle_cpus)
        };
        let imb = if lv.numa {
            rule.lb_tasks(
                diff,
                Pair {
                    src_running: b.nr,
                    src_weight: b.weight,
                    dst_running: local.nr,
                    local_running: local.nr,
                    span_weight: lv.spans[cpu].count(),
                    imb_numa_nr: lv.imb_numa_nr[cpu],
                },
            )
        } else {
            diff / 2
        };
        return Some((Migration::Task, imb as f64));
    }
    if local.kind < GroupType::Overloaded && local.avg_load() >= b.avg_load() {
        return None;
    }
    let imb = ((b.avg_load() - avg) * b.weight as f64)
        .min((avg - local.avg_load()) * local.weight as f64);
    Some((Migration::Load, imb.max(0.0)))
}

/// The CPU of `group` to pull from: most runnable tasks (lowest id on ties), not `cpu`.
pub fn busiest_queue(k: &Kernel, group: &CpuSet, cpu: CpuId) -> Option<CpuId> {
    group
        .iter()
        .filter(|&c| c != cpu && k.nr_running(c) > 0)
        .max_by_key(|&c| (k.nr_running(c), std::cmp::Reverse(c)))
}

/// Outcome of detaching tasks from the busiest queue.
pub struct Detached {
    pub moved: usize,
}

/// `detach_tasks` + `attach_tasks`: move waiting tasks from `src` to `dst`.
/// `hot_ok`: the level failed often enough that cache-hot tasks may go; `degrades(t)`: moving
/// `t` would take it away from its preferred NUMA node (treated as cache hot).
#[allow(clippy::too_many_arguments)]
pub fn detach(
    k: &mut Kernel,
    src: CpuId,
    dst: CpuId,
    plan: &Plan,
    idle: IdleType,
    failed: u32,
    hot_ok: bool,
    degrades: impl Fn(&Kernel, TaskId) -> bool,
) -> Detached {
    let cands = pull_order(k, src);
    let mut left = plan.imbalance;
    let mut moved = 0;
    // sysctl_sched_nr_migrate: at most 32 tasks looked at per pass.
    for &t in cands.iter().take(32) {
        if left <= 0.0 || (idle == IdleType::NewIdle && moved > 0) {
            break;
        }
        if plan.kind == Migration::Load && 1.0 / f64::from(1u32 << failed.min(16)) > left {
            continue;
        }
        if !hot_ok && k.tasks[t].affinity.contains(dst) && degrades(k, t) {
            k.counters.refuse(Refusal::CacheHot);
            continue;
        }
        match k.can_migrate(t, dst, hot_ok) {
            Ok(()) => {
                k.migrate_queued(t, dst);
                moved += 1;
                left -= 1.0;
            }
            Err(r) => k.counters.refuse(r),
        }
    }
    Detached { moved }
}
