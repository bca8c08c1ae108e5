//! Conservation laws, checked event by event under every scheduler: the kernel's bookkeeping
//! holds after every event, every task exits, CPU time and memory add up, and every job did
//! at least the work its operations cost.

use crate::common::*;
use sim::kernel::TaskState;
use sim::numa_test::figures;
use sim::workload::numa_test;

const MACHINES: &[&str] = &[SMALL, "nodes=3,cpus-per-node=1", "tx7-8"];

#[test]
fn every_scheduler_conserves_time_memory_and_work() {
    for &m in MACHINES {
        let topo = machine(m);
        let nr_nodes = topo.nr_nodes();
        // More jobs than CPUs, and hackbench while they run: every code path gets exercised.
        let tasks = topo.nr_cpus() as u32 + 1;
        let mut p = small_params(tasks, 40_000, 4, true);
        p.disturb_at = 2_000_000;
        let w = numa_test(&p);
        let nspc = topo.ns_per_cycle();
        let mlp = topo.cpu_model.stream_mlp();
        let line = topo.cpu_model.line_bytes as f64;
        let min_lat = (0..nr_nodes)
            .flat_map(|a| (0..nr_nodes).map(move |b| (a, b)))
            .map(|(a, b)| topo.latency_ns(a, b))
            .fold(f64::INFINITY, f64::min);
        let ops = p.problem_size as f64 * f64::from(p.passes);
        // Each update: its core cycles, and 12 streamed bytes (b and ix) fetched from memory
        // at no less than the lowest idle latency, `stream_mlp` lines at a time; added up on an
        // in-order core, overlapped on an out-of-order one (the longer of the two).
        let (core_ns, stream_ns) = (p.update_cycles * nspc, 12.0 / line * min_lat / mlp);
        let min_update_ns = if topo.cpu_model.out_of_order {
            core_ns.max(stream_ns)
        } else {
            core_ns + stream_ns
        };
        let min_init_ns = p.problem_size as f64 * p.rand_cycles * nspc;
        let min_job_user_ns = ops * min_update_ns + min_init_ns;
        let footprint = 20 * p.problem_size;
        for s in scheduler_names() {
            let ctx = format!("{s} on {m}");
            let (sim, steps) = step_checked(&topo, &w, s, 3);
            let k = &sim.k;
            assert!(steps > 100, "{ctx}: only {steps} events");
            assert!(k.is_done(), "{ctx}: not done");
            assert_eq!(k.live_tasks, 0, "{ctx}");
            assert!(
                k.tasks.iter().all(|t| t.state == TaskState::Exited),
                "{ctx}: a task did not exit"
            );
            let jobs: Vec<_> = k.tasks.iter().filter(|t| t.job).collect();
            assert_eq!(jobs.len(), tasks as usize, "{ctx}");
            // hackbench: 2 groups of 20 senders and 20 receivers, plus its main task.
            assert!(
                k.tasks.len() >= tasks as usize + 81,
                "{ctx}: {}",
                k.tasks.len()
            );
            let end = k.now;
            for t in &k.tasks {
                let ran = (t.exited.expect("exited") - t.created) as f64;
                assert!(
                    t.user_ns + t.sys_ns <= ran + 1.0,
                    "{ctx}: task {} used {} ns of CPU in {ran} ns of life",
                    t.id,
                    t.user_ns + t.sys_ns
                );
                assert!(t.exited.expect("exited") <= end);
            }
            for j in &jobs {
                let sum: f64 = j.node_user_ns().iter().sum();
                assert!((sum - j.user_ns).abs() <= 1e-6 * j.user_ns, "{ctx}");
                assert!(
                    j.user_ns >= min_job_user_ns,
                    "{ctx}: job {} has {:.0} ns of user time, less than its work's minimum {:.0}",
                    j.id,
                    j.user_ns,
                    min_job_user_ns
                );
                assert!(
                    j.sys_ns > 0.0,
                    "{ctx}: first-touch faults cost no system time"
                );
                // Every page of its three arrays was placed somewhere.
                assert_eq!(j.mem_at_exit.iter().sum::<u64>(), footprint, "{ctx}");
            }
            // CPU time: what the CPUs were busy for is what the tasks were charged.
            let busy: u64 = k.rqs.iter().map(|r| r.busy_ns).sum();
            let charged: f64 = k.tasks.iter().map(|t| t.user_ns + t.sys_ns).sum();
            assert!(
                (busy as f64 - charged).abs() <= 1e-9 * charged + 1.0,
                "{ctx}: CPUs busy {busy} ns, tasks charged {charged} ns"
            );
            for (c, rq) in k.rqs.iter().enumerate() {
                assert!(rq.busy_ns <= end, "{ctx}: cpu {c} busy longer than the run");
                assert!(rq.curr.is_none() && rq.queue.is_empty(), "{ctx}: cpu {c}");
            }
            // Memory: everything was given back.
            assert!(
                k.mem.used.iter().all(|&u| u == 0),
                "{ctx}: {:?}",
                k.mem.used
            );
        }
    }
}

#[test]
fn report_figures_add_up() {
    for &m in MACHINES {
        let topo = machine(m);
        let nr_nodes = topo.nr_nodes();
        let tasks = topo.nr_cpus() as u32 + 1;
        let mut p = small_params(tasks, 40_000, 4, true);
        p.disturb_at = 2_000_000;
        let w = numa_test(&p);
        for s in scheduler_names() {
            let ctx = format!("{s} on {m}");
            let r = run(&topo, &w, s, 5);
            let f = figures(&r, nr_nodes);
            assert_eq!(f.jobs.len(), tasks as usize, "{ctx}");
            for (i, j) in f.jobs.iter().enumerate() {
                assert_eq!(j.node_pct.len(), nr_nodes);
                let pct: f64 = j.node_pct.iter().sum();
                assert!(
                    (pct - 100.0).abs() < 1e-9,
                    "{ctx}: job {i} node_pct sums to {pct}"
                );
                let mem: f64 = j.mem_pct.iter().sum();
                assert!(
                    (mem - 100.0).abs() < 1e-9,
                    "{ctx}: job {i} mem_pct sums to {mem}"
                );
                // MSched is the node with the largest share.
                let top = j.node_pct.iter().cloned().fold(f64::MIN, f64::max);
                assert_eq!(j.node_pct[j.msched], top, "{ctx}: job {i}");
                assert!(j.isched.is_some_and(|n| n < nr_nodes), "{ctx}: job {i}");
            }
            let total: f64 = f.jobs.iter().map(|j| j.user_s).sum();
            assert!((f.total_user_s - total).abs() < 1e-12, "{ctx}");
            assert!((f.avg_user_s * tasks as f64 - total).abs() < 1e-9, "{ctx}");
            assert!(f.hackbench_s > 0.0 && f.hackbench_s < f.elapsed_s, "{ctx}");
            // No job can have run longer than the whole run.
            assert!(f.jobs.iter().all(|j| j.user_s <= f.elapsed_s), "{ctx}");
            let busy: u64 = r.cpu_busy_ns.iter().sum();
            let all: f64 = r.tasks.iter().map(|t| t.user_ns + t.sys_ns).sum();
            assert!((busy as f64 - all).abs() <= 1e-9 * all + 1.0, "{ctx}");
        }
    }
}

#[test]
fn running_after_single_stepping_to_the_end_changes_nothing() {
    // Tests single-step a run with `step()` until it returns false, then take the result with
    // `run()`. A finished simulation must stay finished: `run()` must not handle one more
    // (left-over balance or boundary) event and move the end of the run.
    let topo = machine(SMALL);
    let w = numa_test(&small_params(3, 20_000, 2, true));
    for s in scheduler_names() {
        let whole = run(&topo, &w, s, 1);
        let (sim, _) = step_checked(&topo, &w, s, 1);
        let last_exit = sim.k.tasks.iter().filter_map(|t| t.exited).max();
        assert_eq!(
            Some(whole.end_ns),
            last_exit,
            "{s}: run() ends after the last exit"
        );
        let stepped = sim.run().expect("run");
        assert_eq!(
            stepped.end_ns, whole.end_ns,
            "{s}: run() after the last step() moved the end of the run"
        );
        assert_eq!(stepped.events, whole.events, "{s}");
    }
}

/// A node with more users than the solve memo takes (256; with this launcher up to about
/// 400 here): those solves bypass the memo, and every rate and factor still matches a
/// recomputation from scratch after every event.
#[test]
fn solves_too_large_for_the_memo_stay_exact() {
    let topo = machine("nodes=1,cpus-per-node=400");
    let mut p = small_params(410, 40_000, 2, false);
    // A quick launcher, so that the jobs' memory phases overlap.
    p.fork_exec_cycles = 1_000.0;
    let w = numa_test(&p);
    for s in ["o1", "linux"] {
        let (sim, steps) = step_checked(&topo, &w, s, 1);
        assert!(sim.k.is_done(), "{s}: not done after {steps} events");
        assert!(
            sim.k.counters.contention_solves > 0,
            "{s}: no contention solve"
        );
    }
}
