//! Tests of the numad model through its public face: its cycle, the fewest fitting nodes,
//! the thresholds, re-evaluation and what it leaves alone.

use topo::{NodeId, Topology};

use super::*;
use crate::snapshot::{NodeView, ProcessView};

#[test]
fn new_process_waits_one_cycle_for_a_sample() {
    let t = topo::parse_synthetic("nodes=2,cpus-per-node=4,mem-gib=16").expect("machine");
    let mut p = ProcessView::new(&t, 4);
    p.cpu_use = 2.0;
    p.threads = 2;
    p.node_bytes = vec![1 << 30, 1 << 30];
    p.node_runtime = vec![0.5, 0.5];
    let mk = |now_s: u64| Snapshot {
        topo: &t,
        now_ns: now_s * 1_000_000_000,
        interval_ns: 1_000_000_000,
        nodes: NodeView::consistent_with(&t, std::slice::from_ref(&p)),
        processes: vec![p.clone()],
        numa_balancing: false,
    };
    let mut n = NumadPolicy::default();
    assert!(n.decide(&mk(0)).is_empty());
    assert_eq!(n.next_cycle_ns(), Some(15_000_000_000));
    let a = n.decide(&mk(15));
    assert_eq!(a.len(), 2, "{a:?}");
}

const GIB: u64 = 1 << 30;
const SEC: u64 = 1_000_000_000;

/// Four nodes of 4 CPUs and 16 GiB in two sockets: 0-1 and 2-3 at distance 12, 20 across.
fn two_sockets() -> Topology {
    let mut t = topo::parse_synthetic("nodes=4,cpus-per-node=4,mem-gib=16").expect("machine");
    for a in 0..4 {
        for b in 0..4 {
            t.distance[a][b] = if a == b {
                10
            } else if a / 2 == b / 2 {
                12
            } else {
                20
            };
        }
    }
    t
}

/// Runs evenly over all nodes (numad has not bound it yet).
fn proc(t: &Topology, pid: u32, cpu: f64, threads: u32, bytes: &[u64]) -> ProcessView {
    let mut p = ProcessView::new(t, pid);
    p.cpu_use = cpu;
    p.threads = threads;
    p.node_bytes = bytes.to_vec();
    p.node_runtime = vec![1.0 / t.nr_nodes() as f64; t.nr_nodes()];
    p
}

/// The kernel and page cache hold 1 GiB on every node.
fn snap<'a>(t: &'a Topology, now_s: u64, procs: &[ProcessView]) -> Snapshot<'a> {
    let mut nodes = NodeView::consistent_with(t, procs);
    nodes.iter_mut().for_each(|n| n.free_bytes -= GIB);
    Snapshot {
        topo: t,
        now_ns: now_s * SEC,
        interval_ns: SEC,
        nodes,
        numa_balancing: false,
        processes: procs.to_vec(),
    }
}

/// Binds and migrates as the mechanism would.
fn apply(procs: &mut [ProcessView], actions: &[Action]) {
    for a in actions {
        let p = procs.iter_mut().find(|p| p.pid == a.pid()).expect("pid");
        match a {
            Action::SetHome { nodes, .. } => {
                p.home = nodes.clone();
                p.node_runtime.iter_mut().for_each(|r| *r = 0.0);
                for &n in nodes {
                    p.node_runtime[n] = 1.0 / nodes.len() as f64;
                }
            }
            Action::MoveMemory {
                from, to, bytes, ..
            } => {
                p.node_bytes[*from] -= bytes;
                p.node_bytes[*to] += bytes;
            }
            Action::ClearHome { .. } => p.home.clear(),
            Action::SetSlice { .. } => panic!("numad sets no slice: {a}"),
        }
    }
}

fn bound(actions: &[Action]) -> Vec<(u32, Vec<NodeId>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::SetHome { pid, nodes, .. } => Some((*pid, nodes.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn acts_only_on_its_own_cycle() {
    let t = two_sockets();
    let mut procs = vec![
        proc(&t, 1, 2.0, 2, &[GIB; 4]),
        proc(&t, 2, 1.0, 1, &[GIB / 2; 4]),
    ];
    let mut n = NumadPolicy::default();
    let mut acted = Vec::new();
    for s in 0..60 {
        let a = n.decide(&snap(&t, s, &procs));
        if !a.is_empty() {
            acted.push((s, bound(&a)));
        }
        apply(&mut procs, &a);
    }
    // First sighting at 0 s (no CPU sample yet); cycles at 15 s, then 5 s after a bind,
    // 15 s after a cycle that bound nothing.
    assert_eq!(
        acted,
        vec![(15, vec![(1, vec![0])]), (20, vec![(2, vec![1])])],
        "one process per cycle, the bigger first"
    );
    assert_eq!(
        n.next_cycle_ns(),
        Some(70 * SEC),
        "cycles at 25, 40, 55, 70 s"
    );
}

#[test]
fn binds_the_fewest_fitting_nodes_then_moves_all_memory() {
    let t = two_sockets();
    let mut n = NumadPolicy::default();
    // 3 CPUs (3.5 asked at 85%) and 2 GiB fit one 4-CPU node.
    let small = [proc(&t, 1, 3.0, 4, &[GIB / 2; 4])];
    n.decide(&snap(&t, 0, &small));
    let a = n.decide(&snap(&t, 15, &small));
    let nodes = &bound(&a)[0].1;
    assert_eq!(nodes.len(), 1, "{a:?}");
    let home = nodes[0];
    let moved: Vec<(NodeId, NodeId, u64)> = a
        .iter()
        .filter_map(|a| match a {
            Action::MoveMemory {
                from, to, bytes, ..
            } => Some((*from, *to, *bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(moved.len(), 3);
    assert!(
        moved
            .iter()
            .all(|&(f, to, b)| f != home && to == home && b == GIB / 2)
    );
    assert!(a[0].reason().starts_with(&format!(
        "numad: bind pid 1 (pid1) to node {home}: it asks for 3.5 CPUs and 2.4 GiB"
    )));
    assert!(
        a[1].reason()
            .starts_with("numad: migrate all 512 MiB of pid 1 (pid1) on node")
    );

    // 6 busy CPUs need two 4-CPU nodes: the nearest pair around its memory.
    let mut n = NumadPolicy::default();
    let big = [proc(&t, 2, 6.0, 8, &[0, GIB, 2 * GIB, 0])];
    n.decide(&snap(&t, 0, &big));
    let a = n.decide(&snap(&t, 15, &big));
    assert_eq!(bound(&a), vec![(2, vec![2, 3])]);
    match &a[0] {
        Action::SetHome { cpus, .. } => assert_eq!(cpus, &t.node_cpus(2).union(t.node_cpus(3))),
        other => panic!("{other:?}"),
    }
    // All of node 1's memory goes to the set node holding the least of it.
    assert!(matches!(&a[1], Action::MoveMemory { from: 1, to: 3, bytes, .. } if *bytes == GIB));
    assert_eq!(a.len(), 2);
}

#[test]
fn thresholds_are_strict() {
    let t = two_sockets();
    let mib = MIB;
    let cases = [
        (0.5, 400 * mib, false),
        (0.51, 400 * mib, true),
        (2.0, 300 * mib, false),
        (2.0, 301 * mib, true),
    ];
    for (cpu, rss, acts) in cases {
        let p = [proc(&t, 1, cpu, 2, &[rss, 0, 0, 0])];
        let mut n = NumadPolicy::default();
        n.decide(&snap(&t, 0, &p));
        let a = n.decide(&snap(&t, 15, &p));
        assert_eq!(!a.is_empty(), acts, "cpu {cpu}, rss {rss}: {a:?}");
    }
}

#[test]
fn local_enough_is_left_alone_and_reevaluation_waits() {
    let t = two_sockets();
    // Bound to node 1 by someone's earlier numad run, 95% local: stays.
    let mut p = proc(&t, 1, 2.0, 2, &[0, 19 * GIB / 10, GIB / 10, 0]);
    p.home = vec![1];
    p.node_runtime = vec![0.0, 1.0, 0.0, 0.0];
    let mut n = NumadPolicy::default();
    n.decide(&snap(&t, 0, &[p.clone()]));
    assert!(n.decide(&snap(&t, 15, &[p.clone()])).is_empty());
    // 80% local: re-bound to node 1 and the rest migrated.
    p.node_bytes = vec![0, 16 * GIB / 10, 4 * GIB / 10, 0];
    let mut n = NumadPolicy::default();
    n.decide(&snap(&t, 0, &[p.clone()]));
    let mut procs = vec![p];
    let a = n.decide(&snap(&t, 15, &procs));
    assert_eq!(bound(&a), vec![(1, vec![1])]);
    assert!(
        a[0].reason()
            .starts_with("numad: re-bind from node 1 (80% of its memory local); bind pid 1"),
        "{}",
        a[0].reason()
    );
    apply(&mut procs, &a);
    // Memory drifts away again: not re-evaluated within 300 s of the bind.
    procs[0].node_bytes = vec![GIB, GIB, 0, 0];
    let mut last = 15;
    for s in 16..400 {
        let a = n.decide(&snap(&t, s, &procs));
        if !a.is_empty() {
            last = s;
            break;
        }
    }
    assert!((315..=330).contains(&last), "re-evaluated at {last} s");
}

#[test]
fn stays_inside_allowed_nodes_and_leaves_alone() {
    let t = two_sockets();
    let mut p = proc(&t, 1, 2.0, 2, &[GIB, 0, 0, 0]);
    p.allowed_nodes = topo::CpuSet::parse_list("2-3").expect("nodes");
    let mut q = proc(&t, 2, 3.0, 3, &[2 * GIB, 0, 0, 0]);
    q.leave_alone = true;
    let mut procs = vec![p, q];
    let mut n = NumadPolicy::default();
    let mut all = Vec::new();
    for s in 0..100 {
        let a = n.decide(&snap(&t, s, &procs));
        apply(&mut procs, &a);
        all.extend(a);
    }
    assert!(!all.is_empty());
    for a in &all {
        assert_eq!(a.pid(), 1);
        match a {
            Action::SetHome { nodes, .. } => assert!(nodes.iter().all(|&n| n >= 2), "{a}"),
            Action::MoveMemory { to, .. } => assert!(*to >= 2),
            Action::ClearHome { .. } | Action::SetSlice { .. } => panic!("{a}"),
        }
    }
}
