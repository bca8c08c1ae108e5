//! Periodic, idle and new-idle load balancing of one domain level (`load_balance()`).
//!
//! 1. Only one CPU of the local group balances a level: the first idle one, or the group's
//!    first CPU when none is idle (`should_we_balance`); a new-idle pass always runs.
//! 2. `find_busiest_group` on PELT group statistics ([`super::stats`]): the busiest other
//!    group is the one of the highest group type; among equals, the highest `avg_load`
//!    (overloaded; fully busy groups have none, so the first one stays), or the fewest idle
//!    CPUs then the most tasks (has spare). The decision and the migration type follow the
//!    kernel's `find_busiest_group`/`calculate_imbalance` (see [`plan`]); at NUMA levels the
//!    imbalance goes through the `numa_imbalance` rule.
//! 3. `find_busiest_queue`: the CPU of that group with the highest `load_avg` (a `load`
//!    imbalance; a CPU with one task heavier than the imbalance is skipped), the highest
//!    `util_avg` among CPUs with 2+ tasks (`util`), or the most tasks (`task`).
//! 4. `detach_tasks`: waiting tasks are taken (least recently queued first) until the
//!    imbalance is met, skipping running, pinned and cache-hot ones (hot: ran within
//!    `sched_migration_cost`, or would leave its preferred NUMA node, unless the level failed
//!    more than `cache_nice_tries` times); a new-idle pass takes one task. Each task counts
//!    1 (`task`), its `load_avg` (`load`) or its `util_avg` (`util`) against the imbalance,
//!    and is skipped when that, halved per failure (`shr_bound`), is more than what is left;
//!    a `load` below 16 is skipped until the level has failed once (`LB_MIN`).
//! 5. Active balance: when a `task` imbalance found only running tasks and the level failed
//!    more than `cache_nice_tries + 2` times, the running task is pushed to the idle CPU.
//!
//! Imbalances are in units of 1024 (one nice-0 task's full load, one CPU's capacity): 1.0 is
//! one such task.

use super::imbalance::{NumaImbalance, Pair};
use super::stats::{GroupStats, GroupType};
use super::topology::Level;
use crate::kernel::pelt::CAPACITY_SCALE;
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
    stats: &mut Vec<GroupStats>,
) -> Option<Plan> {
    GroupStats::of_groups_into(k, lv, cpu, stats);
    let stats = &stats[..];
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
            Some(b) => s.avg_load > b.avg_load,
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
    let total_load: f64 = stats.iter().map(|s| s.load).sum();
    let total_cap: f64 = stats.iter().map(GroupStats::capacity).sum();
    let sds_avg = total_load * CAPACITY_SCALE / total_cap.max(1.0);
    if local.kind == GroupType::Overloaded {
        let pct = f64::from(lv.imbalance_pct);
        if local.avg_load >= b.avg_load
            || local.avg_load >= sds_avg
            || 100.0 * b.avg_load <= pct * local.avg_load
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
    let (kind, imbalance) = imbalance(lv, cpu, idle, rule, local, b, sds_avg, force)?;
    (imbalance > 0.0).then_some(Plan {
        group: bi,
        kind,
        imbalance,
    })
}

/// `calculate_imbalance`, in units of 1024.
#[allow(clippy::too_many_arguments)]
fn imbalance(
    lv: &Level,
    cpu: CpuId,
    idle: IdleType,
    rule: NumaImbalance,
    local: GroupStats,
    b: GroupStats,
    sds_avg: f64,
    prefer_sibling: bool,
) -> Option<(Migration, f64)> {
    if local.kind == GroupType::HasSpare {
        if b.kind > GroupType::FullyBusy && !lv.shares_llc {
            // Fill the local group's spare capacity.
            let spare = (local.capacity().max(local.util) - local.util) / CAPACITY_SCALE;
            if spare <= 0.0 && idle.is_idle() {
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
                    span_weight: lv.span_weight[cpu],
                    imb_numa_nr: lv.imb_numa_nr[cpu],
                },
            )
        } else {
            diff / 2
        };
        return Some((Migration::Task, imb as f64));
    }
    let local_avg = local.load_per_cap();
    if local.kind < GroupType::Overloaded && (local_avg >= b.avg_load || local_avg >= sds_avg) {
        return None;
    }
    let imb = ((b.avg_load - sds_avg) * b.capacity()).min((sds_avg - local_avg) * local.capacity())
        / CAPACITY_SCALE
        / CAPACITY_SCALE;
    Some((Migration::Load, imb.max(0.0)))
}

/// `find_busiest_queue`: the CPU of `group` to pull from for `plan`, not `cpu`.
pub fn busiest_queue(k: &Kernel, group: &CpuSet, cpu: CpuId, plan: &Plan) -> Option<CpuId> {
    let cands: Vec<CpuId> = group
        .iter()
        .filter(|&c| c != cpu && k.nr_running(c) > 0)
        .collect();
    let best = |key: &dyn Fn(CpuId) -> f64, keep: &dyn Fn(CpuId) -> bool| {
        cands
            .iter()
            .copied()
            .filter(|&c| keep(c))
            .fold(None, |best: Option<(CpuId, f64)>, c| {
                let v = key(c);
                match best {
                    Some((_, bv)) if bv >= v => best,
                    _ => Some((c, v)),
                }
            })
            .map(|(c, _)| c)
    };
    match plan.kind {
        Migration::Load => best(&|c| k.cpu_load(c), &|c| {
            k.nr_running(c) > 1 || k.cpu_load(c) / CAPACITY_SCALE <= plan.imbalance
        }),
        Migration::Util => best(&|c| k.cpu_util(c), &|c| k.nr_running(c) > 1),
        Migration::Task => best(&|c| k.nr_running(c) as f64, &|_| true),
    }
}

/// Outcome of detaching tasks from the busiest queue.
pub struct Detached {
    pub moved: usize,
}

/// `detach_tasks` + `attach_tasks`: move waiting tasks from `src` to `dst`.
/// `hot_ok`: the level failed often enough that cache-hot tasks may go; `degrades(t)`: what
/// moving `t` does to its NUMA locality (`migrate_degrades_locality`: hot, not hot, or decide
/// by its cache).
#[allow(clippy::too_many_arguments)]
pub fn detach(
    k: &mut Kernel,
    src: CpuId,
    dst: CpuId,
    plan: &Plan,
    idle: IdleType,
    failed: u32,
    hot_ok: bool,
    degrades: impl Fn(&Kernel, TaskId) -> Option<bool>,
) -> Detached {
    let cands = pull_order(k, src);
    let mut left = plan.imbalance;
    let mut moved = 0;
    // sysctl_sched_nr_migrate: at most 32 tasks looked at per pass.
    for &t in cands.iter().take(32) {
        if left <= 0.0 || (idle == IdleType::NewIdle && moved > 0) {
            break;
        }
        let amount = match plan.kind {
            Migration::Task => 1.0,
            Migration::Load => k.task_pelt(t).load_avg.max(1.0) / CAPACITY_SCALE,
            Migration::Util => k.task_pelt(t).util_avg / CAPACITY_SCALE,
        };
        if plan.kind == Migration::Load && amount * CAPACITY_SCALE < 16.0 && failed == 0 {
            continue;
        }
        if plan.kind != Migration::Task && amount / f64::from(1u32 << failed.min(16)) > left {
            continue;
        }
        let locality = if k.tasks[t].affinity.contains(dst) {
            degrades(k, t)
        } else {
            None
        };
        if !hot_ok && locality == Some(true) {
            k.counters.refuse(Refusal::CacheHot);
            continue;
        }
        match k.can_migrate(t, dst, hot_ok || locality == Some(false)) {
            Ok(()) => {
                k.migrate_queued(t, dst);
                moved += 1;
                left -= amount;
            }
            Err(r) => k.counters.refuse(r),
        }
    }
    Detached { moved }
}
