//! How many CPUs a home counts a process for, room on a node, and scheduling slices.

use super::*;

/// The VM rig's `numatest8` again: eight jobs on four 2-CPU nodes during the
/// burst. Node 2 showed idle time (under emulation a node's busy time is what the host gave
/// its virtual CPUs) while every other node was saturated, so node 2 alone had room; three
/// jobs whose memory was there were homed there in one decision, each seeing room after the
/// one before (homes 2/1/3/2 at the end of the run, then a rebalance away from the memory).
/// A node's busy time is now at least what the processes listed there used, so the phantom
/// room is gone and the jobs are placed as on a crowded machine, evenly.
#[test]
fn room_on_one_node_does_not_let_it_take_more_than_its_share_of_homes() {
    let t = machine("nodes=4,cpus-per-node=2,mem-gib=2");
    let burst = burst(&t, 4.0);
    let mut procs = vec![burst];
    for (pid, n) in [
        (1, 2),
        (2, 2),
        (3, 2),
        (4, 0),
        (5, 0),
        (6, 1),
        (7, 3),
        (8, 3),
    ] {
        let mut v = vec![0u64; 4];
        v[n] = 20 * MIB;
        let mut p = proc(&t, pid, 0.5, 1, n, &v);
        p.cpu_wait = Some(0.5);
        procs.push(p);
    }
    // Node 2's three jobs used 1.5 CPUs, yet it shows 1.5 CPUs idle.
    let mut s = snap(&t, 0, procs);
    for (n, v) in s.nodes.iter_mut().enumerate() {
        v.cpu_idle = if n == 2 { 1.5 } else { 0.0 };
    }
    let a = for_small_jobs().decide(&s);
    let mut per_node = [0usize; 4];
    for (_, h) in homes(&a) {
        per_node[h[0]] += 1;
    }
    assert_eq!(per_node, [2, 2, 2, 2], "{a:#?}");
}

/// The VM rig's `numatest8`, a later run: a process's CPU time is charged to the node its
/// thread last ran on, and four moving jobs happened to be on node 1 at the scan, charging it
/// 3.2 CPUs of use on 2 CPUs. With busy time capped at the node's CPUs, taking those jobs out
/// of node 1 (to home them) left phantom room there, and node 1 took three homes (2/3/2/1).
/// A node's load covers what the processes not homed are charged with there, so taking some
/// of them out leaves the others' load there, and no phantom room.
#[test]
fn jobs_charged_to_one_node_at_the_scan_leave_no_phantom_room_there() {
    let t = machine("nodes=4,cpus-per-node=2,mem-gib=2");
    let procs: Vec<ProcessView> = (1..=4)
        .map(|pid| {
            let mut p = proc(&t, pid, 0.8, 1, 1, &[0, 20 * MIB, 0, 0]);
            p.cpu_wait = Some(0.2);
            p
        })
        .collect();
    let s = snap(&t, 0, procs);
    assert_eq!(s.nodes[1].cpu_idle, 0.0, "node 1 busy 2.0 of its 2 CPUs");
    let m = crate::common::Machine::new(&s);
    let ps = crate::common::processes(&s, 0.5);
    let homes = vec![None; ps.len()];
    let mut model = model::Model::new(&t, &m, &ps, &homes);
    // Two of the four taken out (homed elsewhere): the other two still want 2.0 CPUs there.
    for p in &ps[..2] {
        model.apply(&t, p, None, -1.0);
    }
    assert!((model.load[1] - 2.0).abs() < 1e-9, "{}", model.load[1]);
}

/// From the scoreboard's numa_test on epyc-nps4 at N = CPUs: the kernel had already
/// spread the jobs one per CPU, each beside its memory, and every job is homed in the same
/// decision. Rule 1 judged evenness against the homes given so far, in size order, so a node's
/// later holders were turned away while the other nodes' holders were still to come, took
/// another node's slot by rule 2, and pushed that node's own holders off in turn: 8 of 128 jobs
/// were homed away from their memory, which then moved for nothing. Every job must stay.
#[test]
fn jobs_already_spread_beside_their_memory_all_stay_there() {
    let t = machine("nodes=4,cpus-per-node=4,mem-gib=16");
    let mem = |n: usize| {
        let mut v = vec![0u64; 4];
        v[n] = 20 * MIB;
        v
    };
    // Sizes in an order that interleaves the nodes unevenly, as measured CPU use does.
    let mut x = 7u32;
    let procs: Vec<ProcessView> = (0..16u32)
        .map(|i| {
            x = (x * 1103 + 12345) % 1000;
            let n = (i % 4) as usize;
            proc(&t, i + 1, 0.90 + f64::from(x) / 10_000.0, 1, n, &mem(n))
        })
        .collect();
    let cfg = HomenodeConfig {
        min_rss_mib: 16,
        ..Default::default()
    };
    let a = HomenodePolicy::new(cfg)
        .expect("config")
        .decide(&snap(&t, 0, procs));
    let h = homes(&a);
    assert_eq!(h.len(), 16, "{a:#?}");
    for (pid, nodes) in &h {
        assert_eq!(nodes, &vec![((pid - 1) % 4) as usize], "pid {pid}: {a:#?}");
    }
    assert!(
        !a.iter().any(|a| matches!(a, Action::MoveMemory { .. })),
        "{a:#?}"
    );
}

/// Two numa_test-like jobs that share a CPU take EEVDF's 3 ms turns, and each turn begins by
/// fetching again what the other evicted from the cache (docs/model/memory-and-cost.md): a homed job whose
/// threads never sleep and wait for their CPU part of the time gets a long slice with its
/// home; one whose threads sleep, or that has its CPU to itself, gets none; the slice goes back
/// when the threads start to sleep or run alone for good.
#[test]
fn cpu_bound_homed_jobs_taking_turns_get_a_long_slice_and_give_it_back() {
    let t = machine("nodes=2,cpus-per-node=2,mem-gib=16");
    let squeezed = |pid| {
        let mut p = proc(&t, pid, 0.5, 1, 0, &[GIB, 0]);
        p.cpu_wait = Some(0.5);
        p
    };
    let mut procs = vec![
        squeezed(1),
        squeezed(2),
        // Four threads using 2 CPUs: they sleep half of the time.
        proc(&t, 3, 2.0, 4, 1, &[0, GIB]),
        // A thread with its CPU to itself.
        proc(&t, 4, 1.0, 1, 1, &[0, GIB]),
    ];
    let mut pol = HomenodePolicy::default();
    let a = pol.decide(&snap(&t, 0, procs.clone()));
    assert_eq!(homes(&a).len(), 4);
    assert_eq!(slices(&a), vec![(1, 100_000_000), (2, 100_000_000)]);
    assert!(
        a.iter().any(|a| a.to_string()
            == "pid 1: set slice 100 ms: slice: pid 1 (pid1) is homed, CPU-bound and taking turns: every thread runnable nearly all the time, waiting for a CPU part of it (1.00 CPUs wanted by 1 threads, 0.50 of them waiting)"),
        "{a:?}"
    );
    apply(&t, &mut procs, &a);
    assert!(pol.decide(&snap(&t, 1, procs.clone())).is_empty());
    // A pause (I/O, a barrier) does not take it back; sleeping most of the time does.
    procs[1].cpu_use = 0.4;
    procs[1].cpu_wait = Some(0.3);
    assert!(slices(&pol.decide(&snap(&t, 2, procs.clone()))).is_empty());
    procs[1].cpu_wait = Some(0.0);
    let a = pol.decide(&snap(&t, 3, procs.clone()));
    assert_eq!(slices(&a), vec![(2, 0)]);
    assert!(
        a.iter().any(|a| a.to_string()
            == "pid 2: restore the kernel's slice: slice: pid 2 (pid2): its threads sleep (0.40 CPUs wanted by 1 threads, 0.00 of them waiting)"),
        "{a:?}"
    );
    apply(&t, &mut procs, &a);
    // Busy again, but alone on its CPU: nothing to gain.
    procs[1].cpu_use = 1.0;
    assert!(slices(&pol.decide(&snap(&t, 4, procs.clone()))).is_empty());
    // The other job runs alone from now on: it gives its slice back.
    procs[0].cpu_use = 1.0;
    procs[0].cpu_wait = Some(0.0);
    let a = pol.decide(&snap(&t, 5, procs.clone()));
    assert_eq!(slices(&a), vec![(1, 0)]);
    assert!(
        a[0].reason().ends_with(
            "its threads have their CPUs to themselves (1.00 CPUs wanted by 1 threads, 0.00 of them waiting)"
        ),
        "{a:?}"
    );
}

#[test]
fn slice_ms_zero_gives_none_and_takes_back_one_it_gave() {
    let t = machine("nodes=2,cpus-per-node=2,mem-gib=16");
    let off = HomenodeConfig {
        slice_ms: 0.0,
        ..Default::default()
    };
    let mut pol = HomenodePolicy::new(off).expect("cfg");
    let p = proc(&t, 1, 1.0, 1, 0, &[GIB, 0]);
    assert!(slices(&pol.decide(&snap(&t, 0, vec![p.clone()]))).is_empty());
    // Given by a run with slices on (a reload turned them off): given back.
    let mut q = homed(p, &[0]);
    q.slice_ns = 100_000_000;
    assert_eq!(slices(&pol.decide(&snap(&t, 1, vec![q]))), vec![(1, 0)]);
    let bad = HomenodeConfig {
        slice_ms: 250.0,
        ..Default::default()
    };
    assert_eq!(
        HomenodePolicy::new(bad)
            .expect_err("out of range")
            .to_string(),
        "placement parameter `slice_ms` = 250: must be 0 (off) or in 0.1..=100 (the range of the kernel's custom slices)"
    );
}
