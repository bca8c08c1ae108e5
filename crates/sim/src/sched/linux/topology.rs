//! The `linux` model's scheduling domains: the levels of [`topo::sched_domains`] with the
//! attributes the kernel's `sd_init()` and `build_sched_domains()` give them.
//!
//! - `imbalance_pct`: 110 on SMT (CPUs sharing a core's capacity), 117 on every other level.
//! - `cache_nice_tries`: 0 on SMT, 1 on MC and NODE, 2 on NUMA levels.
//! - Intervals: `min_interval` = span weight in ms for an idle CPU; a busy CPU multiplies by
//!   `busy_factor` 16 (and subtracts one tick).
//! - NUMA levels farther than `node_reclaim_distance` (30) lose fork/exec balancing and
//!   wake-affine; NUMA levels do not prefer siblings, so the level *above* a NUMA level does
//!   not spread by task count.
//! - `imb_numa_nr` (5.18+, 12.5% form of 6.0): on the first level above the LLC, the number of
//!   LLCs it spans, or 1/8 of its CPUs when it holds one LLC (at least 1); higher levels scale
//!   that by how many first-NUMA-level spans they hold.

use crate::time::{MS, Ns};
use topo::{CpuSet, DomainKind, Topology};

/// The kernel's `node_reclaim_distance` (RECLAIM_DISTANCE): farther NUMA levels get no
/// fork/exec balancing and no wake-affine.
pub const RECLAIM_DISTANCE: u32 = 30;
/// `busy_factor` of every level (16 since Linux 5.10).
pub const BUSY_FACTOR: u64 = 16;

/// One domain level as the `linux` model balances it.
#[derive(Clone, Debug)]
pub struct Level {
    pub name: String,
    pub numa: bool,
    /// SD_SHARE_PKG_RESOURCES: the CPUs of a span share a last-level cache.
    pub shares_llc: bool,
    /// SD_BALANCE_FORK / SD_BALANCE_EXEC / SD_WAKE_AFFINE.
    pub balance_fork: bool,
    pub wake_affine: bool,
    /// The child level prefers siblings (spread by task count at this level).
    pub prefer_sibling: bool,
    pub imbalance_pct: u32,
    pub cache_nice_tries: u32,
    pub spans: Vec<CpuSet>,
    /// Per CPU: the number of CPUs of its span (read at every balance tick).
    pub span_weight: Vec<usize>,
    pub groups: Vec<Vec<CpuSet>>,
    /// Per CPU: the allowed NUMA imbalance in tasks (`imb_numa_nr`).
    pub imb_numa_nr: Vec<usize>,
}

impl Level {
    /// Balance interval for `cpu` (idle or busy), ns.
    pub fn interval(&self, cpu: usize, busy: bool, tick: Ns) -> Ns {
        let ms = self.span_weight[cpu].max(1) as u64 * MS;
        if busy {
            (ms * BUSY_FACTOR).saturating_sub(tick).max(tick)
        } else {
            ms.max(tick)
        }
    }
}

/// Build the levels of `topo`, lowest first.
pub fn build(topo: &Topology) -> Vec<Level> {
    let raw = topo::sched_domains(topo);
    let mut levels: Vec<Level> = Vec::with_capacity(raw.len());
    for (i, d) in raw.iter().enumerate() {
        let (numa, far) = match d.kind {
            DomainKind::Numa { distance } => (true, distance > RECLAIM_DISTANCE),
            _ => (false, false),
        };
        let smt = d.kind == DomainKind::Smt;
        let shares_llc = matches!(d.kind, DomainKind::Smt | DomainKind::Mc);
        levels.push(Level {
            name: d.name.clone(),
            numa,
            shares_llc,
            balance_fork: !far,
            wake_affine: !far,
            prefer_sibling: i > 0 && !levels[i - 1].numa,
            imbalance_pct: if smt { 110 } else { 117 },
            cache_nice_tries: if smt {
                0
            } else if numa {
                2
            } else {
                1
            },
            spans: d.spans.clone(),
            span_weight: d.spans.iter().map(CpuSet::count).collect(),
            groups: d.groups.clone(),
            imb_numa_nr: vec![0; topo.nr_cpus()],
        });
    }
    set_imb_numa_nr(&mut levels, topo);
    levels
}

/// The kernel's per-CPU `imb_numa_nr` walk (see the module docs). The kernel runs it before
/// degenerate levels are removed, so a node level equal to the LLC is still there: when the
/// level above the LLC is already a NUMA level, that node level is put back in the walk.
fn set_imb_numa_nr(levels: &mut [Level], topo: &Topology) {
    for cpu in 0..topo.nr_cpus() {
        let node_weight = topo.node_cpus(topo.node_of(cpu)).count();
        let mut imb = 0usize;
        let mut imb_span = 1usize;
        for l in 0..levels.len() {
            let weight = levels[l].spans[cpu].count();
            let child_llc = l > 0 && levels[l - 1].shares_llc;
            if !levels[l].shares_llc && child_llc {
                let llc = levels[l - 1].spans[cpu].count().max(1);
                // The first non-LLC level: the (possibly degenerate) node level.
                let first = if levels[l].numa {
                    node_weight.max(llc)
                } else {
                    weight
                };
                let nr_llcs = first / llc;
                imb = if nr_llcs == 1 { first >> 3 } else { nr_llcs }.max(1);
                imb_span = levels[l..]
                    .iter()
                    .find(|p| p.numa)
                    .map_or(first, |p| p.spans[cpu].count());
                levels[l].imb_numa_nr[cpu] = if levels[l].numa {
                    imb * (weight / imb_span.max(1)).max(1)
                } else {
                    imb
                };
            } else {
                levels[l].imb_numa_nr[cpu] = imb * (weight / imb_span.max(1)).max(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_attributes() {
        let t = topo::preset("xeon2s").expect("preset");
        let l = build(&t);
        let names: Vec<&str> = l.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, vec!["SMT", "MC", "NUMA-21"]);
        assert_eq!(l[0].imbalance_pct, 110);
        assert_eq!(l[2].imbalance_pct, 117);
        assert_eq!(l[2].cache_nice_tries, 2);
        assert!(l[2].prefer_sibling && !l[1].numa);
        // One LLC per node of 72 CPUs: 72/8 = 9 at NUMA.
        assert_eq!(l[2].imb_numa_nr[0], 9);
        assert_eq!(l[0].interval(0, false, MS), 2 * MS);
        assert_eq!(l[0].interval(0, true, MS), 31 * MS);
    }

    #[test]
    fn multi_llc_nodes() {
        let t = topo::preset("epyc-nps4").expect("preset");
        let l = build(&t);
        let numa = l.iter().find(|x| x.numa).expect("numa level");
        // NODE (32 CPUs, 4 LLCs of 8) is the first level above the LLC: imb = 4.
        let node = l.iter().find(|x| x.name == "NODE").expect("node level");
        assert_eq!(node.imb_numa_nr[0], 4);
        assert_eq!(numa.imb_numa_nr[0], 4, "scaled by 128 / 128");
    }
}
