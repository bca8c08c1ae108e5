//! A process's life under the policy: stable snapshots, allowed nodes, release when idle, reused
//! PIDs, homes widened and narrowed, first looks.

use super::*;

#[test]
fn homes_stay_inside_allowed_nodes_and_cpus() {
    let t = two_sockets();
    // Memory on node 0, but a cpuset confines it to node 3's memory and CPUs 13-14.
    let mut p = proc(&t, 9, 1.5, 2, 0, &[GIB, 0, 0, 0]);
    p.allowed_nodes = topo::CpuSet::single(3);
    p.allowed_cpus = topo::CpuSet::parse_list("13-14").expect("cpus");
    let a = HomenodePolicy::default().decide(&snap(&t, 0, vec![p.clone()]));
    match &a[0] {
        Action::SetHome { nodes, cpus, .. } => {
            assert_eq!(nodes, &vec![3]);
            assert_eq!(cpus.to_list_string(), "13-14");
        }
        other => panic!("{other:?}"),
    }
    // A home outside the allowed nodes is replaced.
    let p = homed(p, &[0]);
    let a = HomenodePolicy::default().decide(&snap(&t, 0, vec![p]));
    assert_eq!(homes(&a), vec![(9, vec![3])]);
    assert!(
        a[0].reason()
            .starts_with("its home 0 is outside its allowed nodes; home node 3"),
        "{}",
        a[0].reason()
    );
    // No allowed node at all: nothing.
    let mut q = proc(&t, 10, 1.5, 2, 0, &[GIB, 0, 0, 0]);
    q.allowed_nodes = topo::CpuSet::single(1);
    q.allowed_cpus = t.node_cpus(0).clone();
    assert!(
        HomenodePolicy::default()
            .decide(&snap(&t, 0, vec![q]))
            .is_empty()
    );
}

#[test]
fn leave_alone_gets_nothing() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let mut a = proc(&t, 1, 3.0, 3, 0, &[0, 4 * GIB]);
    a.leave_alone = true;
    let mut b = homed(proc(&t, 2, 1.0, 1, 0, &[0, 4 * GIB]), &[0]);
    b.leave_alone = true;
    let mut pol = HomenodePolicy::default();
    for s in 0..500 {
        assert!(
            pol.decide(&snap(&t, s, vec![a.clone(), b.clone()]))
                .is_empty()
        );
    }
}

#[test]
fn idle_process_is_released() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let p = homed(proc(&t, 1, 0.01, 1, 0, &[GIB, 0]), &[0]);
    let mut pol = HomenodePolicy::default();
    for s in 0..120 {
        assert!(pol.decide(&snap(&t, s, vec![p.clone()])).is_empty(), "{s}");
    }
    let a = pol.decide(&snap(&t, 120, vec![p]));
    assert_eq!(a.len(), 1);
    assert!(matches!(
        &a[0],
        Action::ClearHome {
            pid: 1,
            start_time: 1,
            ..
        }
    ));
    assert!(
        a[0].reason()
            .starts_with("release: pid 1 (pid1) used 0.01 CPUs"),
        "{}",
        a[0].reason()
    );
}

#[test]
fn a_process_that_idled_before_its_home_is_not_released_at_once() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let mut p = proc(&t, 1, 0.0, 1, 0, &[GIB, 0]);
    let mut pol = HomenodePolicy::default();
    for s in 0..200 {
        assert!(pol.decide(&snap(&t, s, vec![p.clone()])).is_empty());
    }
    p.cpu_use = 1.0;
    let a = pol.decide(&snap(&t, 200, vec![p.clone()]));
    assert_eq!(homes(&a), vec![(1, vec![0])]);
    apply(&t, std::slice::from_mut(&mut p), &a);
    p.cpu_use = 0.0;
    assert!(placements(pol.decide(&snap(&t, 201, vec![p.clone()]))).is_empty());
    assert_eq!(
        placements(pol.decide(&snap(&t, 320, vec![p]))).len(),
        1,
        "released 120 s later"
    );
}

#[test]
fn reused_pid_starts_afresh() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let p = proc(&t, 1, 1.0, 1, 0, &[GIB, 0]);
    let mut pol = HomenodePolicy::default();
    pol.decide(&snap(&t, 0, vec![p.clone()]));
    assert_eq!(pol.last_move_ns(1), Some(0));
    let mut q = p.clone();
    q.start_time = 99;
    pol.decide(&snap(&t, 5, vec![q]));
    assert_eq!(pol.last_move_ns(1), Some(5_000_000_000));
}

#[test]
fn new_homes_per_interval_are_bounded_largest_first() {
    let t = machine("nodes=4,cpus-per-node=8,mem-gib=16");
    let procs: Vec<ProcessView> = (1..=12)
        .map(|pid| {
            proc(
                &t,
                pid,
                0.5 + f64::from(pid) * 0.1,
                1,
                0,
                &[128 * MIB, 0, 0, 0],
            )
        })
        .collect();
    let capped = HomenodeConfig {
        max_new_homes_per_interval: Some(8),
        ..Default::default()
    };
    let a = HomenodePolicy::new(capped)
        .expect("config")
        .decide(&snap(&t, 0, procs.clone()));
    let pids: Vec<u32> = homes(&a).into_iter().map(|(p, _)| p).collect();
    assert_eq!(pids, vec![12, 11, 10, 9, 8, 7, 6, 5]);
    // Without a limit (the default) every one of them is homed in the first decision.
    let a = HomenodePolicy::default().decide(&snap(&t, 0, procs));
    assert_eq!(homes(&a).len(), 12, "{a:#?}");
}

/// The widening's counterpart: once the parallel phase is over, a home set whose process's
/// busy threads fit one of its nodes is narrowed to the node step 2 would give it, but only
/// after `min_dwell_s` (a set is not clearly wrong) and for `correct_intervals` decisions.
#[test]
fn a_home_set_the_threads_no_longer_need_is_narrowed_after_the_dwell() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let mut pol = HomenodePolicy::default();
    pol.decide(&snap(&t, 0, vec![proc(&t, 1, 1.0, 1, 0, &[GIB, 0])]));
    let mut grown = homed(proc(&t, 1, 4.0, 8, 0, &[GIB, 0]), &[0]);
    grown.cpu_wait = Some(3.6);
    pol.decide(&snap(&t, 1, vec![grown.clone()]));
    let a = pol.decide(&snap(&t, 2, vec![grown]));
    let mut wide = homes(&a)[0].1.clone();
    wide.sort_unstable();
    assert_eq!(wide, vec![0, 1], "widened first: {a:#?}");
    // Two busy threads again, most of the memory on node 0 and some on node 1.
    let mut narrow = homed(proc(&t, 1, 2.0, 8, 0, &[GIB, GIB / 4]), &wide);
    narrow.node_runtime = vec![0.5, 0.5];
    for s in (3..60).step_by(4).chain([61]) {
        let a = pol.decide(&snap(&t, s, vec![narrow.clone()]));
        assert_eq!(set_homes(&a), 0, "within the dwell, at {s} s: {a:#?}");
    }
    let a = pol.decide(&snap(&t, 62, vec![narrow.clone()]));
    assert_eq!(set_homes(&a), 0, "one decision is not enough: {a:#?}");
    let a = pol.decide(&snap(&t, 63, vec![narrow.clone()]));
    assert_eq!(homes(&a), vec![(1, vec![0])], "{a:#?}");
    let r = first_home_reason(&a);
    assert!(
        r.starts_with("correct: pid 1 (pid1) has 2 threads busy, which fit a part of its home nodes 0,1 (8 CPUs), for 2 decisions in a row, min_dwell_s after its last move; home node 0: 80% of its 1.2 GiB is there"),
        "{r}"
    );
    // Narrowed, it stays: the memory left on node 1 is step 4's to bring home.
    let single = homed(proc(&t, 1, 2.0, 8, 0, &[GIB, GIB / 4]), &[0]);
    for s in 64..68 {
        let a = pol.decide(&snap(&t, s, vec![single.clone()]));
        assert_eq!(set_homes(&a), 0, "decision {s}: {a:#?}");
    }
}

/// A first look homes a process born after the last decision, before the kernel can spread it
/// and its memory (azusa16 N = 32: a job moved off its memory's node before homenode's first
/// decision, EXPERIMENTS.md), once it has shown the same thread count twice, and does nothing
/// else: no memory moves but its own, no rebalancing streak, no home for a process the last
/// decision already saw.
#[test]
fn a_first_look_homes_only_processes_new_since_the_decision() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let mut pol = HomenodePolicy::default();
    assert_eq!(pol.first_look_every_ns(), Some(500_000_000));
    // At the decisions at 0 and 1 s: pid 1 is homed on node 0 with half of its memory on
    // node 1; pid 2 is too idle to be significant. (A look after the decision at 1 s may still
    // place a process first seen at it: it is new since the decision before.)
    let old_homed = homed(proc(&t, 1, 1.0, 1, 0, &[GIB, GIB]), &[0]);
    let idle_then = proc(&t, 2, 0.1, 1, 0, &[GIB, 0]);
    let moves_memory = |a: &[Action], pid: u32| {
        a.iter()
            .any(|x| matches!(x, Action::MoveMemory { pid: p, .. } if *p == pid))
    };
    let a = pol.decide(&snap(&t, 0, vec![old_homed.clone(), idle_then.clone()]));
    assert!(moves_memory(&a, 1), "{a:?}");
    pol.decide(&snap(&t, 1, vec![old_homed.clone(), idle_then.clone()]));
    // Then pid 2 gets busy and pid 3 is born, 3/4 of its memory on node 1, running on node 0.
    let busy_now = proc(&t, 2, 1.0, 1, 0, &[GIB, 0]);
    let newborn = proc(&t, 3, 1.0, 1, 0, &[GIB / 4, 3 * GIB / 4]);
    let procs = vec![old_homed.clone(), busy_now.clone(), newborn.clone()];
    let streak = pol.imbalance_streak();
    // First seen: its thread count is not known to have settled yet.
    let a = pol.first_look(&look_snap(&t, 1250, 250, procs.clone()));
    assert!(a.is_empty(), "{a:?}");
    // The same one thread a look later: homed where most of its memory is, and the rest of
    // its memory asked home; nothing for pid 1's remote memory, nor for pid 2.
    let a = pol.first_look(&look_snap(&t, 1500, 250, procs.clone()));
    assert_eq!(homes(&a), vec![(3, vec![1])], "{a:?}");
    assert!(moves_memory(&a, 3), "{a:?}");
    assert!(
        !moves_memory(&a, 1),
        "a look moves only the new homes' memory: {a:?}"
    );
    assert_eq!(pol.imbalance_streak(), streak, "a look is not a decision");
    // Homed now: later looks give it no other home (only its memory moves go on), and still
    // do not home pid 2.
    let procs = vec![old_homed.clone(), busy_now.clone(), homed(newborn, &[1])];
    let a = pol.first_look(&look_snap(&t, 1750, 250, procs.clone()));
    assert!(homes(&a).is_empty(), "{a:?}");
    assert!(!moves_memory(&a, 1), "{a:?}");
    // The next decision homes pid 2.
    let a = pol.decide(&snap(&t, 2, procs));
    assert_eq!(homes(&a), vec![(2, vec![0])], "{a:?}");
    // A process first seen at a look while still small, significant at a later look before
    // the next decision, is homed then.
    let mut pol = HomenodePolicy::default();
    pol.decide(&snap(&t, 0, vec![]));
    let small = proc(&t, 4, 1.0, 1, 1, &[8 * MIB, 0]);
    assert!(
        pol.first_look(&look_snap(&t, 500, 500, vec![small]))
            .is_empty()
    );
    let grown = proc(&t, 4, 1.0, 1, 1, &[GIB, 0]);
    let a = pol.first_look(&look_snap(&t, 1000, 500, vec![grown]));
    assert_eq!(homes(&a), vec![(4, vec![0])], "{a:?}");
    // Off: no looks offered.
    let off = HomenodePolicy::new(HomenodeConfig {
        first_look_s: 0.0,
        ..Default::default()
    })
    .expect("valid");
    assert_eq!(off.first_look_every_ns(), None);
}

/// A process that sets up its memory with one thread and then starts its workers (numa02 in
/// the simulator): a first look that saw one thread twice homes it on one node; when its
/// threads appear, the provisional home is placed again at the next look, not after
/// `correct_intervals` decisions (before this rule: 3.5 s pinned to half of the machine).
/// A process still starting threads is not placed at a look at all.
#[test]
fn a_provisional_home_follows_the_threads_a_young_process_starts() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let mut pol = HomenodePolicy::default();
    pol.decide(&snap(&t, 0, vec![]));
    let setup = proc(&t, 5, 1.0, 1, 0, &[GIB, 0]);
    assert!(
        pol.first_look(&look_snap(&t, 500, 500, vec![setup.clone()]))
            .is_empty()
    );
    let a = pol.first_look(&look_snap(&t, 1000, 500, vec![setup]));
    assert_eq!(homes(&a), vec![(5, vec![0])], "{a:?}");
    // Eight busy threads now, squeezed onto node 0's four CPUs.
    let mut workers = homed(proc(&t, 5, 4.0, 8, 0, &[GIB, 0]), &[0]);
    workers.cpu_wait = Some(4.0);
    let a = pol.first_look(&look_snap(&t, 1500, 500, vec![workers]));
    assert_eq!(homes(&a), vec![(5, vec![0, 1])], "{a:?}");
    let r = first_home_reason(&a);
    assert!(r.starts_with("placed again"), "{r}");
    // A process seen with a changing thread count waits.
    let mut pol = HomenodePolicy::default();
    pol.decide(&snap(&t, 0, vec![]));
    let one = proc(&t, 6, 1.0, 1, 0, &[GIB, 0]);
    let mut eight = proc(&t, 6, 8.0, 8, 0, &[GIB, 0]);
    eight.node_runtime = vec![0.5, 0.5];
    assert!(
        pol.first_look(&look_snap(&t, 500, 500, vec![one]))
            .is_empty()
    );
    assert!(
        pol.first_look(&look_snap(&t, 1000, 500, vec![eight.clone()]))
            .is_empty()
    );
    let a = pol.first_look(&look_snap(&t, 1500, 500, vec![eight]));
    assert_eq!(homes(&a), vec![(6, vec![0, 1])], "{a:?}");
}
