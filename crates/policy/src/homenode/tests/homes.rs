//! Giving homes: significance, where a home goes and why, packing and spreading.

use super::*;

#[test]
fn significance_thresholds() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let small_cpu = proc(&t, 1, 0.4, 1, 0, &[GIB, 0]);
    let small_mem = proc(&t, 2, 0.9, 1, 0, &[32 * MIB, 0]);
    let big = proc(&t, 3, 0.5, 1, 1, &[0, 64 * MIB]);
    let mut pol = HomenodePolicy::default();
    let a = pol.decide(&snap(&t, 0, vec![small_cpu, small_mem, big]));
    assert_eq!(homes(&a), vec![(3, vec![1])]);
    let cfg = HomenodeConfig {
        min_cpu: 0.3,
        min_rss_mib: 16,
        ..Default::default()
    };
    let mut pol = HomenodePolicy::new(cfg).expect("config");
    let t2 = &t;
    let a = pol.decide(&snap(
        t2,
        0,
        vec![
            proc(t2, 1, 0.4, 1, 0, &[GIB, 0]),
            proc(t2, 2, 0.9, 1, 0, &[32 * MIB, 0]),
        ],
    ));
    assert_eq!(homes(&a).len(), 2);
}

/// The light-load case of ARCHITECTURE.md §1.5 (the scoreboard's kunpeng96 row): four busy
/// threads of one process sharing a little memory, which the kernel spread over the nodes.
/// `min_rss_mib` alone left it to the kernel; as a process of several busy threads it is
/// packed onto one node, where its memory is. A single busy thread with as little memory stays
/// insignificant, and `sharing_threads = 0` restores the memory bar alone.
#[test]
fn a_busy_process_of_several_threads_is_homed_whatever_its_memory() {
    let t = machine("nodes=4,cpus-per-node=8,mem-gib=16");
    let spread = |pid: u32| {
        let mut p = proc(&t, pid, 4.0, 4, 0, &[MIB, 0, 0, 0]);
        p.node_runtime = vec![0.25; 4];
        p.per_thread = (0..4)
            .map(|k| ThreadView {
                tid: pid + k,
                cpu_use: 1.0,
                node: Some(k as NodeId),
                wait: None,
            })
            .collect();
        p
    };
    let single = proc(&t, 20, 1.0, 1, 1, &[0, MIB, 0, 0]);
    let mut pol = HomenodePolicy::default();
    let a = pol.decide(&snap(&t, 0, vec![spread(10), single.clone()]));
    assert_eq!(homes(&a), vec![(10, vec![0])], "{a:#?}");
    let reason = a.iter().find_map(|x| match x {
        Action::SetHome { reason, .. } => Some(reason.as_str()),
        _ => None,
    });
    assert!(
        reason.is_some_and(|r| r.contains("placed for its 4 busy threads")
            && r.contains("1.0 MiB resident is under min_rss_mib")),
        "{reason:?}"
    );
    let cfg = HomenodeConfig {
        sharing_threads: 0,
        ..Default::default()
    };
    let mut pol = HomenodePolicy::new(cfg).expect("config");
    let a = pol.decide(&snap(&t, 0, vec![spread(10), single]));
    assert!(homes(&a).is_empty(), "{a:#?}");
}

#[test]
fn home_where_the_memory_is() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    // Runs on node 0 but 78% of its memory is on node 1, which is idle.
    let p = proc(&t, 10, 2.5, 3, 0, &[GIB / 2, 7 * GIB / 4]);
    let a = HomenodePolicy::default().decide(&snap(&t, 0, vec![p]));
    assert_eq!(homes(&a), vec![(10, vec![1])]);
    let reason = a[0].reason();
    assert!(
        reason
            .starts_with("home node 1: 78% of its 2.2 GiB is there and it has room for 3 threads"),
        "{reason}"
    );
    match &a[0] {
        Action::SetHome { cpus, .. } => assert_eq!(cpus, t.node_cpus(1)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn reasons_read_well() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let p = proc(&t, 10, 1.0, 1, 0, &[GIB, 0]);
    let mut pol = HomenodePolicy::default();
    let a = pol.decide(&snap(&t, 0, vec![p]));
    assert_eq!(a.len(), 1);
    assert_eq!(
        a[0].to_string(),
        "pid 10: set home 0 (CPUs 0-3): home node 0: 100% of its 1.0 GiB is there and it has room for 1 thread (4.0 CPUs spare)"
    );
}

/// The VM rig's `with-balancing`: four single-threaded 96 MiB hogs on four 2-CPU
/// nodes in a ring, which the kernel's NUMA balancing had mostly placed: pid 1 ran on node 3
/// with 83% of its memory there, pid 3 on node 1 with 90% there, pid 4 on node 0 with all of
/// its memory there, and pid 2 (memory on node 0) happened to run on node 3 at the scan.
/// Each candidate used to be judged with the others where they ran: node 3 looked full to
/// pid 1 and node 0 to pid 4, and all four were homed away from their memory (0, 3, 2 and 1).
/// Now no candidate counts where it ran while the decision's candidates are placed, and
/// those whose memory node has room get it first: of pids 2 and 4, equal and both with their
/// memory on node 0, the lower pid keeps node 0 and the other takes the node left. Only 96 MiB
/// moves, where 304 MiB did.
#[test]
fn candidates_homed_together_keep_their_memory_nodes() {
    let t = ring4();
    let procs = vec![
        proc(&t, 1, 1.0, 1, 3, &[16 * MIB, 0, 0, 80 * MIB]),
        proc(&t, 2, 1.0, 1, 3, &[96 * MIB, 0, 0, 0]),
        proc(&t, 3, 1.0, 1, 1, &[10 * MIB, 86 * MIB, 0, 0]),
        proc(&t, 4, 1.0, 1, 0, &[96 * MIB, 0, 0, 0]),
    ];
    let a = HomenodePolicy::default().decide(&snap(&t, 0, procs));
    let mut got = homes(&a);
    got.sort();
    assert_eq!(
        got,
        vec![(1, vec![3]), (2, vec![0]), (3, vec![1]), (4, vec![2])],
        "{a:#?}"
    );
}

#[test]
fn best_spare_node_near_the_memory_when_its_node_is_full() {
    let t = two_sockets();
    // Node 0 is full with a homed 4-CPU process; P's memory is on node 0, it runs on node 2.
    let x = homed(proc(&t, 1, 4.0, 4, 0, &[512 * MIB, 0, 0, 0]), &[0]);
    let p = proc(&t, 2, 2.0, 2, 2, &[GIB, 0, 0, 0]);
    let a = HomenodePolicy::default().decide(&snap(&t, 0, vec![x, p]));
    assert_eq!(
        homes(&a),
        vec![(2, vec![1])],
        "node 1 is nearest to its memory"
    );
    let r = a[0].reason();
    assert!(
        r.starts_with(
            "home node 1: node 0 (holding 100% of its 1.0 GiB) has no room for 2 threads"
        ),
        "{r}"
    );
    assert!(
        r.contains("node 1 has the most spare CPU and memory near its memory"),
        "{r}"
    );
}

#[test]
fn too_big_process_gets_the_nearest_nodes() {
    let t = two_sockets();
    // 6 busy threads do not fit a 4-CPU node; memory on node 2.
    let p = proc(&t, 5, 6.0, 6, 2, &[0, 0, 2 * GIB, 0]);
    let a = HomenodePolicy::default().decide(&snap(&t, 0, vec![p]));
    assert_eq!(homes(&a), vec![(5, vec![2, 3])]);
    match &a[0] {
        Action::SetHome { cpus, reason, .. } => {
            assert_eq!(cpus, &t.node_cpus(2).union(t.node_cpus(3)));
            assert!(
                reason.starts_with("home nodes 2,3: its 6 threads do not fit one node of 4 CPUs"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Memory bigger than a node's free memory: one thread, 20 GiB on 16 GiB nodes.
    let q = proc(&t, 6, 1.0, 1, 1, &[0, 12 * GIB, 0, 8 * GIB]);
    let a = HomenodePolicy::default().decide(&snap(&t, 0, vec![q]));
    assert_eq!(homes(&a), vec![(6, vec![1, 0])], "{a:?}");
    assert!(
        a[0].reason()
            .contains("does not fit one node's free memory"),
        "{}",
        a[0].reason()
    );
}

#[test]
fn light_process_is_packed_heavy_one_spreads_when_crowded() {
    let t = machine("nodes=4,cpus-per-node=8,mem-gib=16");
    // 4 threads sharing data, spread over all nodes by the kernel (docs/ARCHITECTURE.md §1.5).
    let mut light = proc(&t, 7, 4.0, 4, 0, &[256 * MIB; 4]);
    light.node_runtime = vec![0.25; 4];
    let a = HomenodePolicy::default().decide(&snap(&t, 0, vec![light.clone()]));
    assert_eq!(homes(&a), vec![(7, vec![0])]);
    assert!(
        a[0].reason().contains("packed on one node"),
        "{}",
        a[0].reason()
    );

    // Crowded machine: every node has 6 of 8 CPUs busy with small processes.
    let crowded = |p: ProcessView| {
        let mut s = snap(&t, 0, vec![p]);
        for n in &mut s.nodes {
            n.cpu_idle = (n.cpu_idle - 6.0).max(0.0);
        }
        s
    };
    let a = HomenodePolicy::default().decide(&crowded(light));
    assert_eq!(homes(&a).len(), 1);
    assert_eq!(homes(&a)[0].1.len(), 1, "light: still one node: {a:?}");
    // A heavy process (6 of 8 CPUs) gets a set of nodes with room for it.
    let mut heavy = proc(&t, 8, 6.0, 6, 0, &[256 * MIB; 4]);
    heavy.node_runtime = vec![0.25; 4];
    let a = HomenodePolicy::default().decide(&crowded(heavy));
    assert_eq!(homes(&a).len(), 1);
    assert!(homes(&a)[0].1.len() >= 3, "{a:?}");
}

#[test]
fn rebalance_moves_the_cheapest_after_hysteresis() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let procs = vec![
        homed(proc(&t, 1, 1.0, 1, 0, &[GIB, 0]), &[0]),
        homed(proc(&t, 2, 1.0, 1, 0, &[700 * MIB, 300 * MIB]), &[0]),
        homed(proc(&t, 3, 1.0, 1, 0, &[2 * GIB, 0]), &[0]),
    ];
    let mut pol = HomenodePolicy::default();
    for s in 0..2 {
        let a = pol.decide(&snap(&t, s, procs.clone()));
        assert_eq!(set_homes(&a), 0, "hysteresis: decision {s}");
        assert_eq!(pol.imbalance_streak(), s as u32 + 1);
        // The wait is explained.
        assert_eq!(
            pol.notes(),
            [format!(
                "rebalance: node 0 at 0.75 CPUs/CPU against node 1 at 0.00: seen in {} of the 3 decisions in a row that a move waits for (imbalance_intervals)",
                s + 1
            )]
        );
    }
    let a = pol.decide(&snap(&t, 2, procs.clone()));
    assert_eq!(homes(&a), vec![(2, vec![1])], "{a:?}");
    assert!(pol.notes().is_empty(), "{:?}", pol.notes());
    let r = first_home_reason(&a);
    assert_eq!(
        r,
        "rebalance: node 0 at 0.75 vs node 1 at 0.00 CPUs/CPU, moving pid 2 (pid2, 1.0 CPUs; 30% of its 1000 MiB already on node 1)"
    );
    assert_eq!(pol.imbalance_streak(), 0);
}

/// An imbalance that has lasted but that no process may correct is explained: the only
/// process homed on the busy node got its home within `min_dwell_s`, and the rest of the
/// load there is not homenode's to move.
#[test]
fn a_lasting_imbalance_that_nothing_may_correct_is_explained() {
    let t = machine("nodes=2,cpus-per-node=4,mem-gib=16");
    let mut other = proc(&t, 9, 2.0, 2, 0, &[GIB, 0]);
    other.leave_alone = true;
    let job = proc(&t, 1, 1.0, 1, 0, &[GIB, 0]);
    let mut pol = HomenodePolicy::default();
    // Homed where its memory is while node 0 is otherwise idle; the other load comes after.
    let a = pol.decide(&snap(&t, 0, vec![job.clone()]));
    assert_eq!(homes(&a), vec![(1, vec![0])], "{a:#?}");
    let procs = vec![homed(job, &[0]), other];
    for s in 1..=3 {
        let a = pol.decide(&snap(&t, s, procs.clone()));
        assert_eq!(set_homes(&a), 0, "decision {s}: {a:#?}");
    }
    assert_eq!(
        pol.notes(),
        [
            "rebalance: node 0 at 0.75 CPUs/CPU against node 1 at 0.00: no process homed there may move: each moved within min_dwell_s, spans several nodes, does not fit another node, or would not lessen the imbalance"
        ]
    );
}

/// As in the VM rig's scenario 2 (tests/vm): 4 nodes of 2 CPUs in a ring (21 to
/// neighbours, 31 across); busy single-threaded processes whose memory is all on node 0,
/// which has no room (something else keeps it busy). Near the memory, a half-busy node 1
/// or 3 must not be preferred to the idle, farther node 2: that first placement would be
/// imbalanced by the rebalancer's own rule. Each gets a node of its own.
#[test]
fn first_homes_do_not_create_an_imbalance() {
    let t = ring4();
    let mut other = proc(&t, 9, 2.0, 2, 0, &[0, 0, 0, 0]);
    other.leave_alone = true;
    let mut procs: Vec<ProcessView> = [(1, 1), (2, 3), (3, 1)]
        .into_iter()
        .map(|(pid, run)| proc(&t, pid, 1.0, 1, run, &[96 * MIB, 0, 0, 0]))
        .collect();
    procs.push(other);
    let mut pol = HomenodePolicy::default();
    let a = pol.decide(&snap(&t, 0, procs));
    let mut nodes: Vec<NodeId> = homes(&a).iter().map(|(_, h)| h[0]).collect();
    nodes.sort_unstable();
    assert_eq!(nodes, vec![1, 2, 3], "{a:#?}");
}

/// Four busy single-threaded processes squeezed onto node 0's two CPUs (0.5 CPUs each),
/// their memory there: each needs a CPU of its own, so node 0 has room for only one of
/// them however little each uses now; the others go elsewhere, one per node.
#[test]
fn busy_threads_count_as_a_cpu_each_when_looking_for_room() {
    let t = machine("nodes=4,cpus-per-node=2,mem-gib=2");
    let procs: Vec<ProcessView> = (1..=4)
        .map(|pid| proc(&t, pid, 0.5, 1, 0, &[96 * MIB, 0, 0, 0]))
        .collect();
    let mut pol = HomenodePolicy::default();
    let a = pol.decide(&snap(&t, 0, procs));
    let mut nodes: Vec<NodeId> = homes(&a).iter().map(|(_, h)| h[0]).collect();
    nodes.sort_unstable();
    assert_eq!(nodes, vec![0, 1, 2, 3], "{a:#?}");
}

/// From the VM rig's converge scenario on a loaded host: four busy memory hogs
/// (0.7 CPUs each) whose memory is all on node 0, running one per node where the kernel put
/// them, while the guest, starved of CPU time, sees a CPU's worth of other work on every
/// other node. Node 0 has room for two hogs, and measured load made it look no busier than
/// the node a hog ran on, so every later hog was homed on node 0 as well while nodes got
/// none. Homes must stay even: one hog per node.
#[test]
fn homes_stay_even_while_the_others_still_run_where_the_kernel_put_them() {
    let t = machine("nodes=4,cpus-per-node=2,mem-gib=2");
    let procs: Vec<ProcessView> = (0..4)
        .map(|n| proc(&t, 100 + n as u32, 0.7, 1, n, &[96 * MIB, 0, 0, 0]))
        .collect();
    let s = snap(&t, 0, procs);
    let mut nodes = s.nodes.clone();
    for v in &mut nodes[1..] {
        v.cpu_idle = 0.3;
    }
    let s = Snapshot { nodes, ..s };
    let a = HomenodePolicy::default().decide(&s);
    let mut got: Vec<NodeId> = homes(&a).iter().map(|(_, h)| h[0]).collect();
    got.sort_unstable();
    assert_eq!(got, vec![0, 1, 2, 3], "{a:#?}");
}

/// A busy process on a machine of one-CPU nodes where something else uses a little of
/// every CPU (a daemon, kernel threads): its own node still has room for it, so it is
/// homed there and not spread over every node (which would be the mask it already has).
#[test]
fn background_noise_below_a_busy_thread_leaves_room() {
    let t = machine("nodes=2,cpus-per-node=1,mem-gib=2");
    let p = proc(&t, 1, 0.97, 1, 0, &[64 * MIB, 0]);
    let s = snap(&t, 0, vec![p]);
    let mut nodes = s.nodes.clone();
    // 0.03 CPUs of other work on node 0 beside the process, 0.05 on node 1.
    nodes[0].cpu_idle = 0.0;
    nodes[1].cpu_idle = 0.95;
    let s = Snapshot { nodes, ..s };
    let a = HomenodePolicy::default().decide(&s);
    assert_eq!(homes(&a), vec![(1, vec![0])], "{a:#?}");
    // A node busy with another whole thread has no room.
    let busy = proc(&t, 2, 1.0, 1, 1, &[0, 64 * MIB]);
    let p = proc(&t, 1, 1.0, 1, 0, &[64 * MIB, 0]);
    let s = snap(&t, 0, vec![p, busy]);
    let a = HomenodePolicy::default().decide(&s);
    assert_eq!(homes(&a), vec![(1, vec![0]), (2, vec![1])], "{a:#?}");
}

#[test]
fn homes_stay_balanced_when_no_node_has_room() {
    let t = machine("nodes=4,cpus-per-node=2,mem-gib=2");
    let burst = burst(&t, 6.0);
    let mem = |n: usize| {
        let mut v = vec![0u64; 4];
        v[n] = 20 * MIB;
        v
    };
    let mut procs: Vec<ProcessView> = [0, 0, 0, 1, 1, 2, 3, 3]
        .into_iter()
        .enumerate()
        .map(|(i, n)| proc(&t, i as u32 + 1, 0.5, 1, n, &mem(n)))
        .collect();
    procs.push(burst);
    let cfg = HomenodeConfig {
        min_rss_mib: 16,
        max_new_homes_per_interval: Some(8),
        ..Default::default()
    };
    let mut pol = HomenodePolicy::new(cfg).expect("config");
    let a = pol.decide(&snap(&t, 0, procs));
    let h = homes(&a);
    assert_eq!(h.len(), 8, "{a:#?}");
    let mut per_node = [0usize; 4];
    for (_, nodes) in &h {
        assert_eq!(nodes.len(), 1, "{a:#?}");
        per_node[nodes[0]] += 1;
    }
    let (lo, hi) = (per_node.iter().min(), per_node.iter().max());
    assert!(
        hi.zip(lo).is_some_and(|(h, l)| h - l <= 1),
        "jobs per node {per_node:?}: {a:#?}"
    );
}
