//! Keeping homes balanced: the rebalancer, hysteresis and dwell, bounded moves, corrections that do
//! not wait out the dwell, and deference to the kernel's preferred node.

use super::*;

/// From a VM rig run: a job homed while no node had room went to a node with two homed jobs
/// while another had one, and the journal could not say why that node was passed over. A
/// crowded home now names each allowed node it did not consider and the reason.
#[test]
fn a_crowded_home_names_the_nodes_it_passed_over() {
    let t = machine("nodes=4,cpus-per-node=2,mem-gib=2");
    let mut procs = vec![proc(&t, 1, 0.5, 1, 0, &[20 * MIB, 0, 0, 0]), burst(&t, 7.6)];
    procs[0].node_runtime = vec![0.25; 4];
    let mut s = snap(&t, 0, procs);
    // Node 3 keeps 100 MiB free, less than the job and the 128 MiB headroom.
    s.nodes[3].free_bytes = 100 * MIB;
    let a = for_small_jobs().decide(&s);
    let reason = a
        .iter()
        .find_map(|a| match a {
            Action::SetHome { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .expect("a home");
    assert!(reason.contains("no node has room"), "{reason}");
    assert!(
        reason.contains("not node 3 (too little free memory: 100 MiB, 20.0 MiB + 128 MiB"),
        "{reason}"
    );
}

#[test]
fn rebalance_prefers_memory_already_on_the_destination() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    // Both would move 1 GiB; pid 2 already has a third of its memory on node 1.
    let procs = vec![
        homed(proc(&t, 1, 1.0, 1, 0, &[GIB, 0]), &[0]),
        homed(proc(&t, 2, 1.0, 1, 0, &[GIB, GIB / 2]), &[0]),
        homed(proc(&t, 3, 1.0, 1, 0, &[3 * GIB, 0]), &[0]),
    ];
    let cfg = HomenodeConfig {
        imbalance_intervals: 1,
        ..Default::default()
    };
    let a = HomenodePolicy::new(cfg)
        .expect("cfg")
        .decide(&snap(&t, 0, procs));
    assert_eq!(homes(&a), vec![(2, vec![1])], "{a:?}");
}

#[test]
fn moves_per_interval_are_bounded() {
    let t = machine("nodes=2,cpus-per-node=8,mem-gib=16");
    let procs: Vec<ProcessView> = (1..=6)
        .map(|pid| homed(proc(&t, pid, 1.0, 1, 0, &[256 * MIB, 0]), &[0]))
        .collect();
    for (max, expect) in [(0, 0), (1, 1), (2, 2), (5, 3)] {
        let cfg = HomenodeConfig {
            imbalance_intervals: 1,
            max_moves_per_interval: max,
            ..Default::default()
        };
        let a = HomenodePolicy::new(cfg)
            .expect("cfg")
            .decide(&snap(&t, 0, procs.clone()));
        assert_eq!(set_homes(&a), expect, "max {max}: {a:?}");
    }
}

#[test]
fn hysteresis_and_dwell_stop_ping_pong() {
    let naive = HomenodeConfig {
        imbalance_intervals: 1,
        min_dwell_s: 0.0,
        ..Default::default()
    };
    let moves = see_saw(naive, 20);
    assert!(
        moves.len() >= 15,
        "without hysteresis and dwell it ping-pongs: {moves:?}"
    );
    assert!(moves.iter().all(|&(_, pid)| pid == 3));

    // Hysteresis alone: the busiest node changes every interval, so nothing moves.
    assert_eq!(see_saw(HomenodeConfig::default(), 200), vec![]);

    // Dwell alone: a process moves at most once per 60 s.
    let dwell = HomenodeConfig {
        imbalance_intervals: 1,
        ..Default::default()
    };
    let moves = see_saw(dwell, 200);
    assert!(!moves.is_empty(), "{moves:?}");
    for pid in 1..=3 {
        let times: Vec<u64> = moves.iter().filter(|m| m.1 == pid).map(|m| m.0).collect();
        assert!(times.len() <= 4, "{moves:?}");
        for w in times.windows(2) {
            assert!(w[1] - w[0] >= 60, "pid {pid}: {moves:?}");
        }
    }
}

#[test]
fn memory_budget_and_batches() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let procs = vec![
        homed(proc(&t, 1, 1.0, 1, 1, &[4 * GIB, 0]), &[1]),
        homed(proc(&t, 2, 1.0, 1, 1, &[GIB, 0]), &[1]),
    ];
    let mut s = snap(&t, 0, procs);
    let a = at_256().decide(&s);
    let moves: Vec<(u32, u64)> = a
        .iter()
        .filter_map(|a| match a {
            Action::MoveMemory {
                pid,
                from: 0,
                to: 1,
                bytes,
                ..
            } => Some((*pid, *bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(moves.len(), a.len());
    assert_eq!(
        moves,
        vec![(1, 32 * MIB); 8],
        "largest remote first, 32 MiB batches"
    );
    assert!(a[0].reason().starts_with(
        "memory home: pid 1 (pid1) has 4.0 GiB on node 0, home node 1; batch of 32.0 MiB"
    ));
    // Half a second: half the budget; an odd budget ends with a smaller batch.
    s.interval_ns = 500_000_000;
    let a = at_256().decide(&s);
    assert_eq!(a.len(), 4);
    let cfg = HomenodeConfig {
        move_rate_mib_s: 100,
        ..Default::default()
    };
    s.interval_ns = 1_000_000_000;
    let a = HomenodePolicy::new(cfg).expect("cfg").decide(&s);
    let sizes: Vec<u64> = a
        .iter()
        .map(|a| match a {
            Action::MoveMemory { bytes, .. } => *bytes,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(sizes, vec![32 * MIB, 32 * MIB, 32 * MIB, 4 * MIB]);
}

/// From the VM rig (eight CPU-bound jobs on four 2-CPU nodes with a burst): jobs
/// squeezed onto one node each get less than `min_cpu`, so their CPU use alone made them
/// look insignificant and they stayed unhomed, squeezed, for their whole run. Five such jobs
/// on node 0 (0.4 CPUs each) that each waited 0.6 CPUs on its run queue (`schedstat`'s run
/// delay) want a CPU each: they are significant and get homes spread over the machine.
#[test]
fn run_queue_wait_makes_squeezed_jobs_significant_and_spreads_them() {
    let t = machine("nodes=4,cpus-per-node=2,mem-gib=2");
    let jobs = |wait: Option<f64>| -> Vec<ProcessView> {
        (0..5)
            .map(|k| {
                let mut p = proc(&t, 100 + k, 0.4, 1, 0, &[96 * MIB, 0, 0, 0]);
                p.cpu_wait = wait;
                p
            })
            .collect()
    };
    // Without the measured wait they are below min_cpu: no homes (what the rig saw).
    let a = HomenodePolicy::default().decide(&snap(&t, 0, jobs(None)));
    assert!(homes(&a).is_empty(), "{a:#?}");
    let a = HomenodePolicy::default().decide(&snap(&t, 0, jobs(Some(0.6))));
    let h = homes(&a);
    assert_eq!(h.len(), 5, "{a:#?}");
    let mut per_node = [0; 4];
    for (_, nodes) in &h {
        assert_eq!(nodes.len(), 1, "{a:#?}");
        per_node[nodes[0]] += 1;
    }
    assert!(
        per_node.iter().all(|c| (1..=2).contains(c)),
        "{per_node:?} {a:#?}"
    );
}

/// With per-thread run-queue wait, a thread squeezed below `busy_thread_cpu` still counts as
/// busy when it was runnable most of the time: four threads sharing two CPUs (0.5 each, 0.5
/// waiting) need four CPUs, so the process does not fit a 2-CPU node.
#[test]
fn run_queue_wait_counts_a_squeezed_thread_as_busy() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=4");
    let mut p = proc(&t, 7, 1.6, 4, 0, &[256 * MIB, 0]);
    p.per_thread = (0..4)
        .map(|k| ThreadView {
            tid: 7 + k,
            cpu_use: 0.4,
            node: Some(0),
            wait: Some(0.6),
        })
        .collect();
    p.cpu_wait = Some(2.4);
    let s = snap(&t, 0, vec![p]);
    let procs = crate::common::processes(&s, 0.5);
    assert_eq!(procs[0].width, 4);
    assert!((procs[0].demand() - 4.0).abs() < 1e-9);
}

/// The VM rig at N = 4: a job ended up homed away from the node that held all of its
/// memory while that node had room, and `min_dwell_s` (60 s) outlived the job. Here a 1 GiB
/// job gets node 1 because node 0, holding all its memory, is full at first; once node 0 has
/// room, its home is corrected back to its memory after `correct_intervals` (2) decisions, not
/// after 60 s, and it stays there.
#[test]
fn a_home_away_from_all_of_its_memory_is_corrected_without_waiting_out_the_dwell() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let mut busy = proc(&t, 9, 4.0, 4, 0, &[0, 0]);
    busy.leave_alone = true;
    let job = proc(&t, 1, 1.0, 1, 0, &[GIB, 0]);
    let mut pol = HomenodePolicy::default();
    let mut procs = vec![busy, job];
    let a = pol.decide(&snap(&t, 0, procs.clone()));
    assert_eq!(homes(&a), vec![(1, vec![1])], "{a:#?}");
    apply(&t, &mut procs, &homes_only(&a));
    procs.remove(0); // the busy process ends: node 0 has room again
    let mut corrected_at = None;
    for s in 1..=10u64 {
        let a = pol.decide(&snap(&t, 2 * s, procs.clone()));
        if let Some((_, h)) = homes(&a).first() {
            assert_eq!(corrected_at, None, "moved twice: {a:#?}");
            assert_eq!(h, &vec![0], "{a:#?}");
            assert!(
                a.iter().any(|x| x.reason().starts_with("correct:")),
                "{a:#?}"
            );
            corrected_at = Some(2 * s);
        }
        apply(&t, &mut procs, &homes_only(&a));
    }
    assert_eq!(corrected_at, Some(4), "second decision that saw it wrong");
}

/// The same correction for load: two jobs homed on node 0 of two 2-CPU nodes (node 1 was
/// taken then) start two busy threads each, so node 0 has 4 CPUs of demand on 2 CPUs while
/// node 1 is idle. The rebalancer moves one as soon as its imbalance streak is complete,
/// not after `min_dwell_s`.
#[test]
fn an_overloaded_home_against_an_idle_node_is_corrected_without_waiting_out_the_dwell() {
    let t = machine("nodes=2,cpus-per-node=2,mem-gib=4");
    let mut busy = proc(&t, 9, 2.0, 2, 1, &[0, 0]);
    busy.leave_alone = true;
    let jobs: Vec<ProcessView> = (1..=2)
        .map(|pid| proc(&t, pid, 1.0, 1, 0, &[128 * MIB, 0]))
        .collect();
    let mut pol = HomenodePolicy::default();
    let mut procs = vec![busy];
    procs.extend(jobs);
    let a = pol.decide(&snap(&t, 0, procs.clone()));
    assert_eq!(homes(&a), vec![(1, vec![0]), (2, vec![0])], "{a:#?}");
    apply(&t, &mut procs, &homes_only(&a));
    procs.remove(0);
    for p in &mut procs {
        p.threads = 2;
        p.cpu_use = 1.0;
        p.per_thread = (0..2)
            .map(|k| ThreadView {
                tid: p.pid * 10 + k,
                cpu_use: 0.5,
                node: Some(0),
                wait: None,
            })
            .collect();
    }
    let mut moved_at = None;
    for s in 1..=10u64 {
        let a = pol.decide(&snap(&t, 2 * s, procs.clone()));
        if let Some((_, h)) = homes(&a).first() {
            assert_eq!(moved_at, None, "moved twice: {a:#?}");
            assert_eq!(h, &vec![1], "{a:#?}");
            moved_at = Some(2 * s);
        }
        apply(&t, &mut procs, &homes_only(&a));
    }
    assert_eq!(moved_at, Some(6), "after imbalance_intervals (3) decisions");
}

/// From a VM rig run (numatest8): a job homed during the hackbench burst, while no node had
/// room and the node with the fewest homes was short of free memory, went to a node already
/// home to two. Once the burst was over that node ran three CPU-bound jobs on two CPUs while
/// another ran one; the other was not idle, so the rebalancer waited out `min_dwell_s`,
/// longer than the jobs ran. A node with room for the whole job now takes it after the
/// imbalance streak.
#[test]
fn an_overloaded_home_against_a_node_with_room_is_corrected_without_waiting_out_the_dwell() {
    let t = machine("nodes=2,cpus-per-node=2,mem-gib=4");
    let job = |pid: u32, cpu: f64, node: NodeId| {
        let mut bytes = vec![0; 2];
        bytes[node] = 128 * MIB;
        proc(&t, pid, cpu, 1, node, &bytes)
    };
    let mut pol = HomenodePolicy::default();
    let mut procs = vec![job(1, 1.0, 0), job(2, 1.0, 0), job(3, 1.0, 1)];
    let a = pol.decide(&snap(&t, 0, procs.clone()));
    apply(&t, &mut procs, &homes_only(&a));
    let on = |procs: &[ProcessView], n: NodeId| procs.iter().filter(|p| p.home == [n]).count();
    assert_eq!((on(&procs, 0), on(&procs, 1)), (2, 1), "{a:#?}");
    // The burst: its threads busy on both nodes, its buffers filling node 1's memory; a fourth
    // job starts.
    let mut busy = proc(&t, 9, 2.0, 40, 1, &[0, 3900 * MIB]);
    busy.leave_alone = true;
    busy.node_runtime = vec![0.5, 0.5];
    let mut during: Vec<ProcessView> = procs.clone();
    during.push(job(4, 1.0, 0));
    during.push(busy);
    let a = pol.decide(&snap(&t, 2, during.clone()));
    assert_eq!(homes(&a), vec![(4, vec![0])], "{a:#?}");
    procs.push(job(4, 1.0, 0));
    apply(&t, &mut procs, &homes_only(&a));
    assert_eq!((on(&procs, 0), on(&procs, 1)), (3, 1));
    // After the burst: three CPU-bound jobs on node 0's two CPUs, one on node 1's.
    let mut moved_at = None;
    for s in 2..=10u64 {
        let a = pol.decide(&snap(&t, 2 * s, procs.clone()));
        for (pid, h) in homes(&a) {
            assert_eq!(moved_at, None, "moved twice: {a:#?}");
            assert_eq!(h, vec![1], "pid {pid}: {a:#?}");
            moved_at = Some(2 * s);
        }
        apply(&t, &mut procs, &homes_only(&a));
    }
    assert_eq!((on(&procs, 0), on(&procs, 1)), (2, 2));
    // Node 0 has been the busiest since the first homes (t = 0, 2, 4): the streak of
    // `imbalance_intervals` (3) is complete at the first decision after the burst. Before,
    // nothing moved until `min_dwell_s` (60 s) after job 4's home.
    assert_eq!(
        moved_at,
        Some(4),
        "moved at the third decision that saw node 0 busiest"
    );
}

/// A home the kernel's NUMA balancing prefers is not "clearly wrong" because its memory is
/// still elsewhere: the kernel migrates the pages there itself, and correcting the home would
/// pull against it.
#[test]
fn no_correction_away_from_the_kernels_preferred_home() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let p = homed(proc(&t, 1, 1.0, 1, 1, &[950 * MIB, 50 * MIB]), &[1]);
    for (hint, corrected) in [(Some(1), false), (None, true)] {
        let p = match hint {
            Some(n) => kernel_prefers(p.clone(), n),
            None => p.clone(),
        };
        let mut pol = HomenodePolicy::default();
        let moved =
            (1..=5u64).any(|s| !homes(&pol.decide(&snap(&t, 2 * s, vec![p.clone()]))).is_empty());
        assert_eq!(moved, corrected, "kernel hint {hint:?}");
    }
}

/// The rebalancer moves first a process the kernel does not prefer on the busy node: three
/// jobs homed on node 0 of two 2-CPU nodes, the kernel preferring node 0 for two of them.
#[test]
fn the_rebalancer_moves_a_process_the_kernel_does_not_prefer_where_it_is() {
    let t = machine("nodes=2,cpus-per-node=2,mem-gib=4");
    let procs: Vec<ProcessView> = (1..=3)
        .map(|pid| {
            let p = homed(proc(&t, pid, 1.0, 1, 0, &[100 * MIB, 0]), &[0]);
            if pid < 3 { kernel_prefers(p, 0) } else { p }
        })
        .collect();
    let mut pol = HomenodePolicy::default();
    let mut moved = Vec::new();
    for s in 1..=4u64 {
        moved.extend(homes(&pol.decide(&snap(&t, 2 * s, procs.clone()))));
    }
    assert_eq!(moved, vec![(3, vec![1])]);
}

/// Found by the VM rig's selfaffinity scenario: one process of two busy threads on two 2-CPU
/// nodes, plus a little other work (the daemon) on its node, makes that node overloaded
/// (2.3 CPUs of demand) while the other is idle. Moving the process within its dwell would
/// only overload the other node the same way, and the bypass then moved it back (homes 0, 1,
/// 0 in two minutes, its memory migrated each time). The dwell is only skipped for a process
/// the idle node has room for.
#[test]
fn a_process_that_would_overload_the_idle_node_does_not_see_saw() {
    let t = machine("nodes=2,cpus-per-node=2,mem-gib=4");
    let mut p = proc(&t, 1, 1.7, 2, 0, &[48 * MIB, 0]);
    p.per_thread = (0..2)
        .map(|k| ThreadView {
            tid: 1 + k,
            cpu_use: 0.85,
            node: Some(0),
            wait: None,
        })
        .collect();
    let mut daemon = proc(&t, 9, 0.3, 1, 0, &[0, 0]);
    daemon.leave_alone = true;
    let mut pol = for_small_jobs();
    let mut procs = vec![p, daemon];
    let mut moves = Vec::new();
    for s in 0..10u64 {
        let a = pol.decide(&snap(&t, 2 * s, procs.clone()));
        moves.extend(homes(&a));
        apply(&t, &mut procs, &homes_only(&a));
    }
    assert_eq!(
        moves,
        vec![(1, vec![0])],
        "homed once, not moved within its dwell"
    );
}
