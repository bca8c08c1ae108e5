//! `convergence` on epyc-nps4: for each process x thread shape, when every process has all its
//! threads on one node (`perf bench numa mem`'s own test, below), with NUMA balancing off, on
//! and in its 2012 form; or that it never converged within the watch. Also when the processes
//! first used as many distinct nodes as they can (one each), a stricter figure, and the
//! fraction of each process's memory on its threads' node at convergence.
//!
//! perf's test (`calc_convergence` in `tools/perf/bench/numa.c`) is *strong* compression, every
//! process's threads on a single node, and a count of (node, process) pairs equal to the number
//! of processes. The second follows from the first, so a process may share its node with
//! others: its comment says a well-converged system has at most one process per node, but the
//! code that reports the convergence latency does not check that. This study follows the code,
//! which produced the published latencies, and reports the stricter spread beside it.

use super::{StudyError, machine, prepare_placed, watch};
use crate::kernel::{Kernel, TaskState};
use crate::placement::PlacementSpec;
use crate::time::{MS, Ns};
use crate::workload::convergence::{ConvergenceParams, convergence};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;
use topo::Topology;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub shape: String,
    pub mode: String,
    /// Simulated time of convergence (perf's test: every process on one node), s; None: not
    /// within the watch.
    pub converged_s: Option<f64>,
    /// Simulated time when, besides, the processes used min(P, nodes) distinct nodes, s;
    /// None: not within the watch.
    pub spread_s: Option<f64>,
    /// Mean fraction of a process's memory on the node running most of its threads, when
    /// converged (or at the end of the watch).
    pub mem_local: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Convergence {
    pub machine: String,
    pub watch_s: f64,
    pub rows: Vec<Row>,
}

pub const SHAPES: [(u32, u32); 4] = [(1, 4), (2, 2), (4, 1), (4, 2)];
pub const MODES: [&str; 3] = ["off", "on", "sched-numa-2012"];

/// Node of each process's threads if all of them share one, per process.
fn process_nodes(k: &Kernel, procs: usize) -> Vec<Option<usize>> {
    (0..procs)
        .map(|pid| {
            let p = k.procs.get(pid)?;
            let mut nodes = p
                .threads
                .iter()
                .filter(|&&t| k.tasks[t].state != TaskState::Exited)
                .map(|&t| k.node_of(k.tasks[t].cpu));
            let first = nodes.next()?;
            nodes.all(|n| n == first).then_some(first)
        })
        .collect()
}

/// Per process, the node of all its threads, or `None` while some process or thread has not
/// started yet or some process is on more than one node.
fn converged_nodes(k: &Kernel, procs: usize, threads: usize) -> Option<Vec<usize>> {
    if k.procs.len() < procs
        || k.procs
            .iter()
            .take(procs)
            .any(|p| p.threads.len() < threads)
    {
        return None;
    }
    process_nodes(k, procs).into_iter().collect()
}

/// Whether the run has converged by perf's test: every process's threads on one node.
pub fn converged(k: &Kernel, procs: usize, threads: usize) -> bool {
    converged_nodes(k, procs, threads).is_some()
}

/// Whether it has converged and, besides, the processes use min(P, nodes) distinct nodes.
pub fn spread(k: &Kernel, procs: usize, threads: usize) -> bool {
    converged_nodes(k, procs, threads).is_some_and(|mut nodes| {
        nodes.sort_unstable();
        nodes.dedup();
        nodes.len() == procs.min(k.topo.nr_nodes())
    })
}

/// Mean over processes of the fraction of a process's memory on the node where most of its
/// threads run.
fn mem_local(k: &Kernel, procs: usize) -> f64 {
    let nr = k.topo.nr_nodes();
    let mut sum = 0.0;
    for p in k.procs.iter().take(procs) {
        let mut count = vec![0usize; nr];
        for &t in &p.threads {
            if k.tasks[t].state != TaskState::Exited {
                count[k.node_of(k.tasks[t].cpu)] += 1;
            }
        }
        let main = (0..nr)
            .max_by_key(|&n| (count[n], std::cmp::Reverse(n)))
            .unwrap_or(0);
        let nb = p.node_bytes(nr);
        let total: u64 = nb.iter().sum();
        sum += nb[main] as f64 / total.max(1) as f64;
    }
    sum / procs.max(1) as f64
}

pub fn study(
    machine_name: &str,
    shapes: &[(u32, u32)],
    modes: &[&str],
    base: &ConvergenceParams,
    watch_for: Ns,
    seed: u64,
) -> Result<Convergence, StudyError> {
    let topo = machine(machine_name)?;
    let runs: Vec<((u32, u32), &str)> = shapes
        .iter()
        .flat_map(|&s| modes.iter().map(move |&m| (s, m)))
        .collect();
    let rows = runs
        .par_iter()
        .map(|&(shape, mode)| {
            let spec = format!("linux:numa_balancing={mode}");
            let mut row = run_one(&topo, shape, base, watch_for, &spec, None, seed)?;
            row.mode = mode.to_string();
            Ok(row)
        })
        .collect::<Result<Vec<Row>, StudyError>>()?;
    Ok(Convergence {
        machine: topo.name.clone(),
        watch_s: watch_for as f64 / 1e9,
        rows,
    })
}

/// One run of the convergence workload of `shape` (processes, threads), watched for
/// `watch_for` and checked every 100 ms, with scheduler spec `sched` and, when given, a
/// node-level placement policy on top (its decisions are part of the stepped run, so the
/// time to converge counts them). The row's `mode` is the scheduler spec.
pub fn run_one(
    topo: &Arc<Topology>,
    (procs, threads): (u32, u32),
    base: &ConvergenceParams,
    watch_for: Ns,
    sched: &str,
    placement: Option<&PlacementSpec>,
    seed: u64,
) -> Result<Row, StudyError> {
    let p = ConvergenceParams {
        processes: procs,
        threads,
        ..base.clone()
    };
    let mut sim = prepare_placed(topo, convergence(&p), sched, placement, seed)?;
    let (np, nt) = (procs as usize, threads as usize);
    let mut local = None;
    let mut at = None;
    // The watch goes on after perf's convergence until the processes are spread too (or the
    // watch ends), so both figures come from one run.
    let spread_at = watch(&mut sim, 100 * MS, watch_for, |k, now| {
        if at.is_none() && converged(k, np, nt) {
            at = Some(now);
            local = Some(mem_local(k, np));
        }
        spread(k, np, nt)
    })
    .map_err(|source| StudyError::Run {
        workload: format!("convergence {procs}x{threads}"),
        sched: sched.into(),
        source,
    })?;
    Ok(Row {
        shape: format!("{procs}x{threads}"),
        mode: sched.to_string(),
        converged_s: at.map(|t| t as f64 / 1e9),
        spread_s: spread_at.map(|t| t as f64 / 1e9),
        mem_local: local.unwrap_or_else(|| mem_local(&sim.k, np)),
    })
}

impl Convergence {
    pub fn to_markdown(&self) -> String {
        let mut s = format!(
            "### convergence on {} (watched for {:.0} s, checked every 100 ms)\n\n\
             | processes x threads | numa_balancing | converged at (s) | one node each at (s) | memory on the threads' main node |\n\
             |---|---|---:|---:|---:|\n",
            self.machine, self.watch_s
        );
        for r in &self.rows {
            let at = |t: Option<f64>| t.map_or("never".to_string(), |t| format!("{t:.1}"));
            s += &format!(
                "| {} | {} | {} | {} | {:.0}% |\n",
                r.shape,
                r.mode,
                at(r.converged_s),
                at(r.spread_s),
                r.mem_local * 100.0
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads per node of process 0, every 10 ms for `secs`, each change once.
    fn trajectory(mode: &str, secs: u64) -> Vec<Vec<usize>> {
        let topo = machine("epyc-nps4").unwrap();
        let p = ConvergenceParams {
            processes: 1,
            threads: 4,
            ..ConvergenceParams::default()
        };
        let spec = format!("linux:numa_balancing={mode}");
        let mut sim = prepare_placed(&topo, convergence(&p), &spec, None, 1).unwrap();
        let mut seen: Vec<Vec<usize>> = Vec::new();
        watch(&mut sim, 10 * MS, secs * 1000 * MS, |k, _| {
            let mut count = vec![0; k.topo.nr_nodes()];
            for &t in &k.procs[0].threads {
                count[k.node_of(k.tasks[t].cpu)] += 1;
            }
            if seen.last() != Some(&count) {
                seen.push(count);
            }
            false
        })
        .unwrap();
        seen
    }

    /// The kernel's NUMA imbalance rule keeps one process's four threads apart on nodes of
    /// 32 CPUs (WORKLOADS.md, `convergence`): the fourth leaves at fork (an idle-CPU difference
    /// of 3 is above NUMA_IMBALANCE_MIN), an idle node then pulls one more (3 - 0 > 2), and no
    /// thread may rejoin the node of two (its move would make a difference of 3).
    #[test]
    fn one_process_of_four_threads_stays_two_one_one() {
        for mode in ["off", "on"] {
            let seen = trajectory(mode, 3);
            let mut last = seen.last().unwrap().clone();
            last.sort_unstable_by(|a, b| b.cmp(a));
            assert_eq!(last, [2, 1, 1, 0], "{mode}: {seen:?}");
            assert!(
                seen.iter().all(|c| c.iter().all(|&n| n < 4)),
                "{mode}: {seen:?}"
            );
        }
    }
}
