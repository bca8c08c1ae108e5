//! Property tests of the placement policies over random snapshots: no panic, homes only on
//! allowed nodes and CPUs, bounded moves, memory budget respected, deterministic decisions.

use policy::{
    Action, HomenodeConfig, HomenodePolicy, NodePolicy, NodeView, NumadPolicy, ProcessView,
    Snapshot, ThreadView,
};
use proptest::prelude::*;
use topo::{CpuSet, Topology};

const MIB: u64 = 1 << 20;
const SEC: u64 = 1_000_000_000;

#[derive(Clone, Debug)]
struct RawProc {
    cpu: f64,
    threads: u32,
    per_thread: bool,
    mib: [u64; 4],
    run: Option<usize>,
    allowed_nodes: u8,
    allowed_cpus: Option<u32>,
    home: u8,
    leave_alone: bool,
}

#[derive(Clone, Debug)]
struct Case {
    nodes: usize,
    cpus_per_node: usize,
    /// SLIT distances of the 6 node pairs (used for the pairs that exist).
    dist: [u32; 6],
    procs: Vec<RawProc>,
    /// Fraction of each node's CPUs busy with small, unmanaged work.
    background: [f64; 4],
    /// Seconds between snapshots.
    steps: Vec<u64>,
}

fn raw_proc() -> impl Strategy<Value = RawProc> {
    (
        (0.0f64..7.0, 1u32..12, any::<bool>()),
        prop::array::uniform4(prop_oneof![Just(0u64), 1u64..40, 40u64..6000]),
        prop::option::of(0usize..4),
        (
            prop_oneof![Just(0xffu8), any::<u8>()],
            prop::option::of(any::<u32>()),
        ),
        (
            prop_oneof![Just(0u8), any::<u8>()],
            prop::bool::weighted(0.15),
        ),
    )
        .prop_map(
            |(
                (cpu, threads, per_thread),
                mib,
                run,
                (allowed_nodes, allowed_cpus),
                (home, leave_alone),
            )| {
                RawProc {
                    cpu,
                    threads,
                    per_thread,
                    mib,
                    run,
                    allowed_nodes,
                    allowed_cpus,
                    home,
                    leave_alone,
                }
            },
        )
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..=4,
        1usize..=6,
        prop::array::uniform6(11u32..=40),
        prop::collection::vec(raw_proc(), 0..10),
        prop::array::uniform4(0.0f64..1.0),
        prop::collection::vec(1u64..=30, 1..6),
    )
        .prop_map(
            |(nodes, cpus_per_node, dist, procs, background, steps)| Case {
                nodes,
                cpus_per_node,
                dist,
                procs,
                background,
                steps,
            },
        )
}

fn machine(c: &Case) -> Topology {
    let mut t = topo::parse_synthetic(&format!(
        "nodes={},cpus-per-node={},mem-gib=8",
        c.nodes, c.cpus_per_node
    ))
    .expect("machine");
    let mut k = 0;
    for a in 0..c.nodes {
        for b in a + 1..c.nodes {
            t.distance[a][b] = c.dist[k];
            t.distance[b][a] = c.dist[k];
            k += 1;
        }
    }
    t
}

fn processes(t: &Topology, c: &Case) -> Vec<ProcessView> {
    let n = t.nr_nodes();
    let node_mask = (1u32 << n) - 1;
    c.procs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut p = ProcessView::new(t, 100 + i as u32);
            p.cpu_use = r.cpu;
            p.threads = r.threads;
            if r.per_thread {
                p.per_thread = (0..r.threads)
                    .map(|k| ThreadView {
                        tid: k,
                        cpu_use: (r.cpu / f64::from(r.threads)).min(1.0),
                        node: None,
                        wait: None,
                    })
                    .collect();
            }
            p.node_bytes = r.mib[..n].iter().map(|m| m * MIB).collect();
            match r.run {
                Some(node) => {
                    let node = node % n;
                    p.node_runtime[node] = 1.0;
                    p.current_node = Some(node);
                }
                None => p.node_runtime = vec![1.0 / n as f64; n],
            }
            p.allowed_nodes = (0..n)
                .filter(|&k| r.allowed_nodes & (1 << k) != 0)
                .collect();
            if let Some(mask) = r.allowed_cpus {
                p.allowed_cpus = (0..t.nr_cpus()).filter(|&k| mask & (1 << k) != 0).collect();
            }
            p.home = (0..n)
                .filter(|&k| u32::from(r.home) & node_mask & (1 << k) != 0)
                .collect();
            p.leave_alone = r.leave_alone;
            p
        })
        .collect()
}

fn snapshot<'a>(
    t: &'a Topology,
    c: &Case,
    now_ns: u64,
    interval_ns: u64,
    procs: &[ProcessView],
) -> Snapshot<'a> {
    let mut nodes = NodeView::consistent_with(t, procs);
    for (k, v) in nodes.iter_mut().enumerate() {
        let busy = c.background[k] * c.cpus_per_node as f64;
        v.cpu_idle = (v.cpu_idle - busy).max(0.0);
    }
    Snapshot {
        topo: t,
        now_ns,
        interval_ns,
        nodes,
        processes: procs.to_vec(),
        numa_balancing: false,
    }
}

/// An ideal mechanism: homes applied, threads run at home, memory moved.
fn apply(procs: &mut [ProcessView], actions: &[Action]) {
    for a in actions {
        let Some(p) = procs.iter_mut().find(|p| p.pid == a.pid()) else {
            continue;
        };
        match a {
            Action::SetHome { nodes, .. } => {
                p.home = nodes.clone();
                p.node_runtime.iter_mut().for_each(|r| *r = 0.0);
                for &n in nodes {
                    p.node_runtime[n] = 1.0 / nodes.len() as f64;
                }
                p.current_node = Some(nodes[0]);
            }
            Action::MoveMemory {
                from, to, bytes, ..
            } => {
                let b = (*bytes).min(p.node_bytes[*from]);
                p.node_bytes[*from] -= b;
                p.node_bytes[*to] += b;
            }
            Action::ClearHome { .. } => p.home.clear(),
            Action::SetSlice { slice_ns, .. } => p.slice_ns = *slice_ns,
        }
    }
}

/// Checks that hold for every policy's actions on `snap`.
fn check_common(snap: &Snapshot<'_>, actions: &[Action]) -> Result<(), TestCaseError> {
    let t = snap.topo;
    let mut placed: Vec<u32> = actions
        .iter()
        .filter(|a| !matches!(a, Action::MoveMemory { .. } | Action::SetSlice { .. }))
        .map(Action::pid)
        .collect();
    placed.sort_unstable();
    prop_assert!(
        placed.windows(2).all(|w| w[0] != w[1]),
        "two placement actions for one process: {:?}",
        actions
    );
    for a in actions {
        let p = snap.processes.iter().find(|p| p.pid == a.pid());
        prop_assert!(p.is_some(), "action for a PID not in the snapshot: {}", a);
        let p = p.expect("checked");
        prop_assert_eq!(a.start_time(), p.start_time);
        prop_assert!(!p.leave_alone, "action for a process left alone: {}", a);
        prop_assert!(!a.reason().is_empty());
        match a {
            Action::SetHome { nodes, cpus, .. } => {
                prop_assert!(!nodes.is_empty());
                for &n in nodes {
                    prop_assert!(p.may_live_on(t, n), "home {} not allowed: {}", n, a);
                }
                let mut sorted = nodes.clone();
                sorted.sort_unstable();
                sorted.dedup();
                prop_assert_eq!(sorted.len(), nodes.len(), "node twice in {}", a);
                let expect = nodes.iter().fold(CpuSet::new(), |acc, &n| {
                    acc.union(&t.node_cpus(n).intersection(&p.allowed_cpus))
                });
                prop_assert!(!cpus.is_empty());
                prop_assert!(cpus.is_subset(&p.allowed_cpus), "{}", a);
                prop_assert_eq!(cpus, &expect);
            }
            Action::MoveMemory {
                from, to, bytes, ..
            } => {
                prop_assert!(from != to);
                prop_assert!(*bytes > 0);
                prop_assert!(
                    *bytes <= p.node_bytes[*from],
                    "moves more than is there: {}",
                    a
                );
                prop_assert!(
                    p.may_live_on(t, *to) || p.allowed_nodes.contains(*to),
                    "{}",
                    a
                );
            }
            Action::ClearHome { .. } => prop_assert!(!p.home.is_empty()),
            Action::SetSlice { slice_ns, .. } => {
                prop_assert!(*slice_ns != p.slice_ns, "a slice it already has: {}", a);
                prop_assert!(
                    *slice_ns == 0 || (100_000..=100_000_000).contains(slice_ns),
                    "a slice the kernel would clamp: {}",
                    a
                );
            }
        }
    }
    Ok(())
}

fn homenode_cfg() -> impl Strategy<Value = HomenodeConfig> {
    (
        0u32..=3,
        proptest::option::of(0u32..=4),
        1u32..=3,
        0.0f64..20.0,
        1u64..=64,
        0u64..=512,
        0u64..=8,
    )
        .prop_map(
            |(max_moves, max_new, intervals, dwell, batch, rate, min_move)| HomenodeConfig {
                max_moves_per_interval: max_moves,
                max_new_homes_per_interval: max_new,
                imbalance_intervals: intervals,
                min_dwell_s: dwell,
                batch_mib: batch,
                move_rate_mib_s: rate,
                min_move_mib: min_move,
                min_rss_mib: 16,
                ..Default::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn homenode_invariants(c in case(), cfg in homenode_cfg()) {
        let t = machine(&c);
        let mut procs = processes(&t, &c);
        let mut pol = HomenodePolicy::new(cfg.clone()).expect("config");
        let mut now = 0u64;
        for &step in &c.steps {
            // A first look half way to the decision: homes and memory moves only, the same
            // whatever the order of the snapshot, and its bytes count against the decision
            // interval's budget.
            let look = snapshot(&t, &c, now + step * SEC / 2, step * SEC / 2, &procs);
            let mut twin = pol.clone();
            let mut shuffled = look.clone();
            shuffled.processes.reverse();
            let looked = pol.first_look(&look);
            prop_assert_eq!(&twin.first_look(&shuffled), &looked);
            check_common(&look, &looked)?;
            let mut look_bytes = 0u64;
            for a in &looked {
                match a {
                    Action::SetHome { .. } => {}
                    Action::MoveMemory { bytes: b, .. } => look_bytes += b,
                    other => prop_assert!(false, "a look gave {}", other),
                }
            }
            apply(&mut procs, &looked);
            now += step * SEC;
            let snap = snapshot(&t, &c, now, step * SEC, &procs);

            // Deterministic: a clone of the policy decides the same, also when the snapshot
            // lists the processes in another order.
            let mut twin = pol.clone();
            let mut shuffled = snap.clone();
            shuffled.processes.reverse();
            let actions = pol.decide(&snap);
            prop_assert_eq!(&twin.decide(&shuffled), &actions);
            prop_assert_eq!(&twin, &pol);

            check_common(&snap, &actions)?;
            let had_home = |pid: u32| {
                snap.processes.iter().any(|p| {
                    p.pid == pid && !p.home.is_empty() && p.home.iter().all(|&h| p.may_live_on(&t, h))
                })
            };
            let mut moves = 0;
            let mut new_homes = 0;
            let mut bytes = 0u64;
            for a in &actions {
                match a {
                    Action::SetHome { pid, .. } if had_home(*pid) => moves += 1,
                    Action::SetHome { .. } => new_homes += 1,
                    Action::MoveMemory { bytes: b, .. } => {
                        prop_assert!(*b <= cfg.batch_mib * MIB, "batch too big: {}", a);
                        bytes += b;
                    }
                    Action::ClearHome { .. } | Action::SetSlice { .. } => {}
                }
            }
            prop_assert!(moves <= cfg.max_moves_per_interval, "{} moves: {:?}", moves, actions);
            if let Some(cap) = cfg.max_new_homes_per_interval {
                prop_assert!(new_homes <= cap);
            }
            let budget = cfg.move_rate_mib_s * MIB * step;
            prop_assert!(
                bytes + look_bytes <= budget,
                "{} + {} bytes moved, budget {}", look_bytes, bytes, budget
            );
            apply(&mut procs, &actions);
        }
    }

    #[test]
    fn numad_invariants(c in case()) {
        let t = machine(&c);
        let mut procs = processes(&t, &c);
        let mut pol = NumadPolicy::default();
        let mut now = 0u64;
        for &step in c.steps.iter().chain(&[15, 15]) {
            now += step * SEC;
            let snap = snapshot(&t, &c, now, step * SEC, &procs);
            let mut twin = pol.clone();
            let actions = pol.decide(&snap);
            prop_assert_eq!(&twin.decide(&snap), &actions);
            check_common(&snap, &actions)?;
            let binds: Vec<&Action> = actions.iter().filter(|a| matches!(a, Action::SetHome { .. })).collect();
            prop_assert!(binds.len() <= 1, "numad binds one process per cycle");
            if let Some(Action::SetHome { pid, nodes, .. }) = binds.first() {
                let p = snap.processes.iter().find(|p| p.pid == *pid).expect("pid");
                let mut outside = 0u64;
                for (n, &b) in p.node_bytes.iter().enumerate() {
                    if !nodes.contains(&n) {
                        outside += b;
                    }
                }
                let mut moved = 0u64;
                for a in &actions {
                    if let Action::MoveMemory { to, bytes, .. } = a {
                        prop_assert!(nodes.contains(to));
                        moved += bytes;
                    }
                }
                prop_assert_eq!(moved, outside, "numad migrates all memory outside the set");
            } else {
                prop_assert!(actions.is_empty());
            }
            apply(&mut procs, &actions);
        }
    }

    /// Malformed snapshots (wrong vector lengths, NaN and negative numbers, unknown nodes,
    /// duplicate PIDs) never panic a policy.
    #[test]
    fn malformed_snapshots_do_not_panic(
        c in case(),
        cut in 0usize..5,
        bad in prop_oneof![Just(f64::NAN), Just(-1.0), Just(f64::INFINITY), Just(1e300)],
    ) {
        let t = machine(&c);
        let mut procs = processes(&t, &c);
        for (i, p) in procs.iter_mut().enumerate() {
            match i % 5 {
                0 => p.node_bytes.truncate(cut),
                1 => p.node_runtime = vec![bad; cut],
                2 => p.cpu_use = bad,
                3 => { p.home = vec![7, 0]; p.current_node = Some(9); }
                _ => p.node_bytes.push(u64::MAX),
            }
        }
        if let Some(first) = procs.first().cloned() {
            procs.push(first);
        }
        let mut snap = snapshot(&t, &c, SEC, SEC, &procs);
        snap.nodes.truncate(cut);
        if let Some(n) = snap.nodes.first_mut() {
            n.cpu_idle = bad;
        }
        let _ = HomenodePolicy::default().decide(&snap);
        let mut numad = NumadPolicy::default();
        let _ = numad.decide(&snap);
        snap.now_ns += 20 * SEC;
        let _ = numad.decide(&snap);
        prop_assert!(snap.validate().is_err() || procs.len() <= 1);
    }
}
