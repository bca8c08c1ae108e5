//! Scheduling domains and groups, built the way the Linux kernel builds them.
//!
//! Candidate levels, lowest first:
//! - `SMT`: the CPU's core (hardware threads), only when cores have more than one thread;
//! - `MC`: the CPUs sharing the CPU's last-level cache;
//! - `NODE`: the CPUs of the CPU's node;
//! - `NUMA-d`, one per distinct remote SLIT distance `d`, ascending: the CPUs of every node
//!   within distance `d` of the CPU's node (the kernel's `sched_init_numa()` masks).
//!
//! A level is dropped when it adds nothing (the kernel's degenerate-domain test): every span is
//! a single CPU, or every span equals the span of the level below. A level can still equal its
//! child for *some* CPUs (asymmetric SLITs, e.g. Kunpeng 920's 12/20/22/24); those CPUs then see a
//! single group there.
//!
//! Groups of a CPU's domain at a level are the child-level spans that tile the domain, the one
//! holding the CPU first. They are collected like the kernel's `build_overlap_sched_groups()`:
//! walk the span starting at the CPU, and for each CPU not yet covered take its child span. On
//! NUMA levels of asymmetric machines that child span can reach outside the domain (the "NUMA
//! diameter > 2" case) or overlap a group already taken; like the kernel since 5.13 we then
//! descend to that CPU's lower levels until the span fits, and additionally we require it to be
//! disjoint from the groups already taken, so the groups always partition the span.

use std::collections::BTreeMap;

use crate::{CpuSet, Topology};

/// What a domain level groups together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DomainKind {
    Smt,
    Mc,
    Node,
    Numa { distance: u32 },
}

/// One level of the domain hierarchy, seen from every CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct DomainLevel {
    pub kind: DomainKind,
    /// `SMT`, `MC`, `NODE`, `NUMA-<distance>` or `FLAT`.
    pub name: String,
    /// Indexed by CPU: the span of that CPU's domain at this level.
    pub spans: Vec<CpuSet>,
    /// Indexed by CPU: the groups of that CPU's domain, the group containing the CPU first.
    pub groups: Vec<Vec<CpuSet>>,
}

impl DomainLevel {
    /// Span of `cpu`'s domain at this level.
    pub fn span(&self, cpu: usize) -> &CpuSet {
        &self.spans[cpu]
    }

    /// Groups of `cpu`'s domain at this level (own group first).
    pub fn groups(&self, cpu: usize) -> &[CpuSet] {
        &self.groups[cpu]
    }
}

/// The kernel-style hierarchy for `topo`, lowest level first. Empty for a one-CPU machine.
pub fn sched_domains(topo: &Topology) -> Vec<DomainLevel> {
    let n = topo.nr_cpus();
    let mut candidates: Vec<(DomainKind, String, Vec<CpuSet>)> = Vec::new();

    let cores = sets_by(topo, |c| topo.cpus[c].core);
    if cores.values().any(|s| s.count() > 1) {
        let spans = (0..n).map(|c| cores[&topo.cpus[c].core].clone()).collect();
        candidates.push((DomainKind::Smt, "SMT".into(), spans));
    }
    let llcs = sets_by(topo, |c| topo.cpus[c].llc);
    let spans = (0..n).map(|c| llcs[&topo.cpus[c].llc].clone()).collect();
    candidates.push((DomainKind::Mc, "MC".into(), spans));
    let spans = (0..n)
        .map(|c| topo.node_cpus(topo.node_of(c)).clone())
        .collect();
    candidates.push((DomainKind::Node, "NODE".into(), spans));

    for d in remote_distances(topo) {
        let per_node: Vec<CpuSet> = (0..topo.nr_nodes())
            .map(|a| {
                (0..topo.nr_nodes())
                    .filter(|&b| topo.distance(a, b) <= d)
                    .fold(CpuSet::new(), |acc, b| acc.union(topo.node_cpus(b)))
            })
            .collect();
        let spans = (0..n).map(|c| per_node[topo.node_of(c)].clone()).collect();
        candidates.push((DomainKind::Numa { distance: d }, format!("NUMA-{d}"), spans));
    }

    let mut kept: Vec<(DomainKind, String, Vec<CpuSet>)> = Vec::new();
    for cand in candidates {
        let all_single = cand.2.iter().all(|s| s.count() <= 1);
        let same_as_child = kept.last().is_some_and(|child| child.2 == cand.2);
        if !all_single && !same_as_child {
            kept.push(cand);
        }
    }

    let mut levels: Vec<DomainLevel> = Vec::with_capacity(kept.len());
    for (kind, name, spans) in kept {
        let lower: Vec<&[CpuSet]> = levels.iter().rev().map(|l| l.spans.as_slice()).collect();
        let groups = (0..n).map(|c| build_groups(c, &spans[c], &lower)).collect();
        levels.push(DomainLevel {
            kind,
            name,
            spans,
            groups,
        });
    }
    levels
}

/// One level spanning the whole machine, with one group per CPU: the view of a scheduler that
/// ignores nodes (the O(1) scheduler's flat balancing). Its kind is `Node` on a one-node machine,
/// otherwise `Numa` with the largest distance.
pub fn flat_domain(topo: &Topology) -> DomainLevel {
    let n = topo.nr_cpus();
    let all = topo.all_cpus();
    DomainLevel {
        kind: top_kind(topo),
        name: "FLAT".into(),
        spans: vec![all.clone(); n],
        groups: (0..n)
            .map(|c| rotated(&all, c).map(CpuSet::single).collect())
            .collect(),
    }
}

/// Two levels, the view of the pool-based NUMA schedulers of the 2.5 era: `NODE` (the node's
/// CPUs, one group per CPU) and a top level spanning all CPUs whose groups are the nodes
/// (own node first). Both levels are always present, even when one of them is trivial.
pub fn node_domains(topo: &Topology) -> Vec<DomainLevel> {
    let n = topo.nr_cpus();
    let node_spans: Vec<CpuSet> = (0..n)
        .map(|c| topo.node_cpus(topo.node_of(c)).clone())
        .collect();
    let node_groups = (0..n)
        .map(|c| rotated(&node_spans[c], c).map(CpuSet::single).collect())
        .collect();
    let all = topo.all_cpus();
    let top_groups = (0..n)
        .map(|c| {
            let own = topo.node_of(c);
            let nr = topo.nr_nodes();
            (0..nr)
                .map(|i| topo.node_cpus((own + i) % nr).clone())
                .collect()
        })
        .collect();
    vec![
        DomainLevel {
            kind: DomainKind::Node,
            name: "NODE".into(),
            spans: node_spans,
            groups: node_groups,
        },
        DomainLevel {
            kind: top_kind(topo),
            name: "NUMA".into(),
            spans: vec![all; n],
            groups: top_groups,
        },
    ]
}

/// Groups of `cpu`'s domain with span `span`; `lower` holds the spans of the levels below,
/// nearest first.
fn build_groups(cpu: usize, span: &CpuSet, lower: &[&[CpuSet]]) -> Vec<CpuSet> {
    let mut covered = CpuSet::new();
    let mut groups = Vec::new();
    for j in rotated(span, cpu) {
        if covered.contains(j) {
            continue;
        }
        let group = lower
            .iter()
            .map(|spans| &spans[j])
            .find(|s| s.is_subset(span) && !s.intersects(&covered))
            .cloned()
            .unwrap_or_else(|| CpuSet::single(j));
        covered = covered.union(&group);
        groups.push(group);
    }
    groups
}

/// Members of `set` starting at `first` and wrapping around (`for_each_cpu_wrap`).
fn rotated(set: &CpuSet, first: usize) -> impl Iterator<Item = usize> + '_ {
    set.iter()
        .filter(move |&c| c >= first)
        .chain(set.iter().filter(move |&c| c < first))
}

fn sets_by(topo: &Topology, key: impl Fn(usize) -> usize) -> BTreeMap<usize, CpuSet> {
    let mut map: BTreeMap<usize, CpuSet> = BTreeMap::new();
    for c in 0..topo.nr_cpus() {
        map.entry(key(c)).or_default().insert(c);
    }
    map
}

/// Distinct off-diagonal SLIT distances, ascending.
fn remote_distances(topo: &Topology) -> Vec<u32> {
    let nr = topo.nr_nodes();
    let mut d: Vec<u32> = (0..nr)
        .flat_map(|a| (0..nr).filter(move |&b| b != a).map(move |b| (a, b)))
        .map(|(a, b)| topo.distance(a, b))
        .collect();
    d.sort_unstable();
    d.dedup();
    d
}

fn top_kind(topo: &Topology) -> DomainKind {
    match remote_distances(topo).last() {
        Some(&distance) => DomainKind::Numa { distance },
        None => DomainKind::Node,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;
    use crate::synthetic::parse_synthetic;

    fn set(list: &str) -> CpuSet {
        let mut s = CpuSet::new();
        for part in list.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            for c in a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap() {
                s.insert(c);
            }
        }
        s
    }

    fn lists(groups: &[CpuSet]) -> Vec<String> {
        groups.iter().map(CpuSet::to_list_string).collect()
    }

    fn names(levels: &[DomainLevel]) -> Vec<&str> {
        levels.iter().map(|l| l.name.as_str()).collect()
    }

    #[test]
    fn azusa16_is_node_then_one_numa_level() {
        let levels = sched_domains(&preset("azusa16").unwrap());
        assert_eq!(names(&levels), ["NODE", "NUMA-16"]);
        assert_eq!(levels[1].kind, DomainKind::Numa { distance: 16 });
        assert_eq!(levels[0].span(5), &set("4-7"));
        assert_eq!(lists(levels[0].groups(5)), ["5", "6", "7", "4"]);
        assert_eq!(levels[1].span(5), &set("0-15"));
        assert_eq!(lists(levels[1].groups(5)), ["4-7", "8-11", "12-15", "0-3"]);
    }

    #[test]
    fn kunpeng96_follows_its_asymmetric_slit() {
        let levels = sched_domains(&preset("kunpeng96").unwrap());
        assert_eq!(
            names(&levels),
            ["MC", "NUMA-12", "NUMA-20", "NUMA-22", "NUMA-24"]
        );
        let [mc, n12, n20, n22, n24] = &levels[..] else {
            unreachable!()
        };
        assert_eq!(mc.span(30), &set("24-47"));
        assert_eq!(mc.groups(30).len(), 24);
        assert_eq!(lists(n12.groups(0)), ["0-23", "24-47"]);
        assert_eq!(lists(n12.groups(50)), ["48-71", "72-95"]);
        // Node 0 reaches node 2 at 20; node 2's NUMA-12 span (2+3) would leave the domain, so
        // the group is node 2 alone (the kernel's "NUMA diameter > 2" fix).
        assert_eq!(n20.span(0), &set("0-71"));
        assert_eq!(lists(n20.groups(0)), ["0-47", "48-71"]);
        // Node 1 reaches nothing new at 20.
        assert_eq!(n20.span(24), &set("0-47"));
        assert_eq!(lists(n20.groups(24)), ["0-47"]);
        assert_eq!(n20.span(80), &set("48-95"));
        assert_eq!(lists(n22.groups(24)), ["0-47", "48-71"]);
        assert_eq!(lists(n22.groups(0)), ["0-71", "72-95"]);
        assert_eq!(lists(n22.groups(72)), ["48-95", "0-23"]);
        assert_eq!(n24.span(24), &set("0-95"));
        assert_eq!(lists(n24.groups(24)), ["0-71", "72-95"]);
        assert_eq!(lists(n24.groups(0)), ["0-95"]);
    }

    #[test]
    fn xeon2s_is_smt_mc_numa() {
        let levels = sched_domains(&preset("xeon2s").unwrap());
        assert_eq!(names(&levels), ["SMT", "MC", "NUMA-21"]);
        assert_eq!(lists(levels[0].groups(3)), ["3", "2"]);
        assert_eq!(levels[1].span(3), &set("0-71"));
        assert_eq!(levels[1].groups(3).len(), 36);
        assert_eq!(levels[1].groups(3)[0], set("2-3"));
        assert_eq!(lists(levels[2].groups(100)), ["72-143", "0-71"]);
    }

    #[test]
    fn epyc_has_all_four_kinds() {
        let levels = sched_domains(&preset("epyc-nps4").unwrap());
        assert_eq!(names(&levels), ["SMT", "MC", "NODE", "NUMA-12"]);
        assert_eq!(
            lists(levels[2].groups(40)),
            ["40-47", "48-55", "56-63", "32-39"]
        );
        assert_eq!(levels[3].groups(40).len(), 4);
    }

    #[test]
    fn synthetic_two_nodes() {
        let t = parse_synthetic("nodes=2,cpus-per-node=4").unwrap();
        let levels = sched_domains(&t);
        assert_eq!(names(&levels), ["MC", "NUMA-16"]);
        assert_eq!(levels[0].kind, DomainKind::Mc);
        assert_eq!(lists(levels[0].groups(6)), ["6", "7", "4", "5"]);
        assert_eq!(lists(levels[1].groups(6)), ["4-7", "0-3"]);
    }

    #[test]
    fn degenerate_machines() {
        let one = parse_synthetic("nodes=1,cpus-per-node=1").unwrap();
        assert!(sched_domains(&one).is_empty());
        let smp = parse_synthetic("nodes=1,cpus-per-node=4").unwrap();
        assert_eq!(names(&sched_domains(&smp)), ["MC"]);
        // One CPU per node: NODE spans single CPUs and is dropped.
        let spread = parse_synthetic("nodes=3,cpus-per-node=1").unwrap();
        let levels = sched_domains(&spread);
        assert_eq!(names(&levels), ["NUMA-16"]);
        assert_eq!(lists(levels[0].groups(1)), ["1", "2", "0"]);
    }

    #[test]
    fn levels_table_in_docs_matches() {
        let doc = include_str!("../../../docs/MACHINES.md");
        let table = &doc[doc.find("| Preset | Levels |").expect("levels table")..];
        let mut seen = 0;
        for row in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let levels = sched_domains(&preset(cells[1]).unwrap());
            assert_eq!(names(&levels).join(", "), cells[2], "{}", cells[1]);
            seen += 1;
        }
        assert_eq!(seen, crate::presets::PRESETS.len());
    }

    #[test]
    fn flat_and_node_views() {
        let t = preset("azusa16").unwrap();
        let flat = flat_domain(&t);
        assert_eq!(flat.kind, DomainKind::Numa { distance: 16 });
        assert_eq!(flat.span(9), &set("0-15"));
        assert_eq!(flat.groups(9).len(), 16);
        assert_eq!(flat.groups(9)[0], CpuSet::single(9));
        let nd = node_domains(&t);
        assert_eq!(names(&nd), ["NODE", "NUMA"]);
        assert_eq!(lists(nd[0].groups(9)), ["9", "10", "11", "8"]);
        assert_eq!(lists(nd[1].groups(9)), ["8-11", "12-15", "0-3", "4-7"]);
        let one = parse_synthetic("nodes=1,cpus-per-node=2").unwrap();
        assert_eq!(flat_domain(&one).kind, DomainKind::Node);
    }
}
