//! Scheduler behaviour in small scenarios.

use crate::common::*;
use sim::numa_test::figures;
use sim::workload::numa_test;

/// A machine whose LLC is small enough that numa_test's arrays live in memory, so that where
/// a job runs relative to its memory matters.
const MEMORY_BOUND: &str = "nodes=2,cpus-per-node=2,llc-mib=0.25";

#[test]
fn o1_spreads_as_many_tasks_as_cpus_over_all_cpus() {
    // On these machines the jobs' arrays fit in the LLC and each node's memory carries more
    // than its CPUs' streams ask (an out-of-order core streams b and ix at about 7 GB/s, more
    // than the 4.9 GB/s per CPU a synthetic node gets by default), so jobs do not compete for
    // memory bandwidth and their times show CPU sharing only. (On MEMORY_BOUND two jobs on
    // one node take about 2.5 times a lone job's user time: they saturate the node's memory
    // bandwidth.)
    for m in [
        "nodes=2,cpus-per-node=2,bandwidth-gbps=40",
        "nodes=4,cpus-per-node=1,bandwidth-gbps=20",
    ] {
        let topo = machine(m);
        let ncpu = topo.nr_cpus();
        let one = run(
            &topo,
            &numa_test(&small_params(1, 50_000, 1000, false)),
            "o1",
            1,
        );
        let single = figures(&one, topo.nr_nodes());
        let r = run(
            &topo,
            &numa_test(&small_params(ncpu as u32, 50_000, 1000, false)),
            "o1",
            1,
        );
        let f = figures(&r, topo.nr_nodes());
        // Every CPU ran a job for most of the run.
        for (c, &b) in r.cpu_busy_ns.iter().enumerate() {
            assert!(
                b as f64 >= 0.8 * r.end_ns as f64,
                "{m}: cpu {c} busy {b} ns of {} ns",
                r.end_ns
            );
        }
        // Each job had a CPU to itself: it ran for most of its life (a new task may wait for
        // its cache-hot time before an idle CPU pulls it; sharing a CPU would halve the
        // share), its user time is
        // about that of a job alone (memory bandwidth shared with a neighbour costs a little),
        // and all finished about when a single job does (not twice as late, as two jobs
        // sharing a CPU would).
        for t in r.tasks.iter().filter(|t| t.job) {
            let life = (t.exited - t.created) as f64;
            assert!(
                t.user_ns + t.sys_ns >= 0.75 * life,
                "{m}: job {} ran {:.0} ns of its {life:.0} ns life",
                t.created,
                t.user_ns + t.sys_ns
            );
        }
        for (i, j) in f.jobs.iter().enumerate() {
            assert!(
                j.user_s < 1.4 * single.avg_user_s && j.user_s > 0.9 * single.avg_user_s,
                "{m}: job {i} user {:.3} s, alone {:.3} s",
                j.user_s,
                single.avg_user_s
            );
        }
        assert!(
            f.elapsed_s < 1.5 * single.elapsed_s,
            "{m}: {ncpu} jobs took {:.3} s, one job {:.3} s",
            f.elapsed_s,
            single.elapsed_s
        );
        // Every node was used.
        let nodes: std::collections::BTreeSet<usize> = f.jobs.iter().map(|j| j.msched).collect();
        assert_eq!(
            nodes.len(),
            topo.nr_nodes(),
            "{m}: jobs ran on nodes {nodes:?}"
        );
    }
}

#[test]
fn node_affine_static_spreads_homes_and_allocates_at_home() {
    for (m, tasks) in [
        (SMALL, 4u32),
        ("nodes=3,cpus-per-node=2", 6),
        (MEMORY_BOUND, 8),
    ] {
        let topo = machine(m);
        let nr_nodes = topo.nr_nodes();
        for disturb in [false, true] {
            let ctx = format!("{m} N={tasks} disturb={disturb}");
            let mut p = small_params(tasks, 50_000, 100, disturb);
            p.disturb_at = 2_000_000;
            let r = run(&topo, &numa_test(&p), "node-affine-static", 2);
            let f = figures(&r, nr_nodes);
            let mut per_node = vec![0u32; nr_nodes];
            for (i, j) in f.jobs.iter().enumerate() {
                let home = j
                    .home_node
                    .unwrap_or_else(|| panic!("{ctx}: job {i} has no home"));
                per_node[home] += 1;
                assert!(
                    j.mem_pct[home] >= 99.0,
                    "{ctx}: job {i} home {home} holds only {:.1}% of its memory ({:?})",
                    j.mem_pct[home],
                    j.mem_pct
                );
                // It started on its home node.
                assert_eq!(j.isched, Some(home), "{ctx}: job {i}");
            }
            let even = tasks / nr_nodes as u32;
            assert!(
                per_node.iter().all(|&n| n == even),
                "{ctx}: homes per node {per_node:?}, want {even} each"
            );
        }
    }
}

#[test]
fn node_affine_dynamic_home_is_the_node_with_most_memory() {
    let topo = machine(MEMORY_BOUND);
    for tasks in [2u32, 4, 6] {
        for seed in [1, 2, 3] {
            let mut p = small_params(tasks, 50_000, 200, true);
            p.disturb_at = 2_000_000;
            let r = run(&topo, &numa_test(&p), "node-affine-dynamic", seed);
            let mut homes = [0usize; 2];
            for (i, t) in r.tasks.iter().filter(|t| t.job).enumerate() {
                let most = argmax_u64(&t.mem_node_bytes);
                assert!(t.mem_node_bytes[most] > 0, "job {i} has no memory at exit");
                assert_eq!(
                    t.home_node,
                    Some(most),
                    "N={tasks} seed {seed}: job {i} memory {:?} but home {:?}",
                    t.mem_node_bytes,
                    t.home_node
                );
                homes[most] += 1;
            }
            // With at least as many jobs as CPUs, both nodes run jobs from the start, so both
            // are some job's home.
            if tasks >= 4 {
                assert!(
                    homes.iter().all(|&h| h > 0),
                    "N={tasks} seed {seed}: {homes:?}"
                );
            }
        }
    }
}

/// Mean over jobs and seeds of the share of a job's user time spent on the node holding most
/// of its memory, under the hackbench disturbance.
fn share_on_memory_node(sched: &str, tasks: u32, seeds: u64) -> f64 {
    let topo = machine(MEMORY_BOUND);
    let mut p = small_params(tasks, 50_000, 2000, true);
    p.disturb_at = 100_000_000;
    p.hackbench_loops = 100;
    let w = numa_test(&p);
    let (mut sum, mut n) = (0.0, 0.0);
    for seed in 1..=seeds {
        let r = run(&topo, &w, sched, seed);
        for t in r.tasks.iter().filter(|t| t.job) {
            let m = argmax_u64(&t.mem_node_bytes);
            sum += t.node_user_ns[m] / t.user_ns;
            n += 1.0;
        }
    }
    sum / n
}

fn assert_more_local_than_o1(sched: &str, tasks: u32) {
    let seeds = 8;
    let o1 = share_on_memory_node("o1", tasks, seeds);
    let na = share_on_memory_node(sched, tasks, seeds);
    assert!(
        na > o1,
        "{sched} N={tasks} on {MEMORY_BOUND} with hackbench: {:.1}% of job user time on the \
         job's memory node, o1 {:.1}% (mean of {seeds} seeds)",
        100.0 * na,
        100.0 * o1
    );
}

#[test]
fn node_affine_static_keeps_jobs_near_memory_under_disturbance_n_eq_cpus() {
    assert_more_local_than_o1("node-affine-static", 4);
}

#[test]
fn node_affine_static_keeps_jobs_near_memory_under_disturbance_n_twice_cpus() {
    assert_more_local_than_o1("node-affine-static", 8);
}

#[test]
fn node_affine_dynamic_keeps_jobs_near_memory_under_disturbance_n_eq_cpus() {
    assert_more_local_than_o1("node-affine-dynamic", 4);
}

// No such test for node-affine-dynamic at N = 2 x CPUs: without initial balancing most jobs
// first-touch their memory on the dispatcher's node, and without page migration they then run
// remote whatever the balancer does, so the model gives it no locality advantage over o1
// there (a finding reported in POLICIES.md, not a behaviour to assert).

#[test]
fn node_affine_static_home_node_is_one_the_task_may_run_on() {
    // A job allowed only on node 1's CPUs must not get node 0 as its home (where its memory
    // would then be allocated, all of it remote for its whole life), however idle node 0 is.
    let topo = machine(SMALL);
    let text = r#"
name = "pinned-home"
[[program]]
name = "p"
job = true
affinity = [2, 3]
region = [{ name = "a", mib = 8 }]
phase = [{ touch = "a" }, { memory = { ops = 1e5, cycles = 2, access = [{ region = "a", pattern = "random", bytes = 8 }] } }]
[[launch]]
program = "p"
count = 2
"#;
    let w = sim::workload::parse_workload(text, "pinned-home.toml").expect("valid");
    let r = run(&topo, &w, "node-affine-static", 1);
    for t in &r.tasks {
        assert_eq!(t.node_user_ns[0], 0.0);
        assert_eq!(
            t.home_node,
            Some(1),
            "task pinned to node 1 got home {:?}; its memory per node: {:?}",
            t.home_node,
            t.mem_node_bytes
        );
        assert_eq!(t.mem_node_bytes[0], 0, "memory {:?}", t.mem_node_bytes);
    }
}
