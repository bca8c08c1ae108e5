//! From one interval's samples to the policy's [`Snapshot`]: the candidates as
//! [`ProcessView`]s (with the exclusion verdict of each) and the nodes as [`NodeView`]s.
//!
//! Fields, in topology numbering:
//! - `cpu_wait` and each thread's `wait`: run-queue wait from the threads' `schedstat` over the
//!   same two passes, when the kernel has the file.
//! - `cpu_use`, `per_thread`, `node_runtime`: from two full passes ([`crate::rates`]); a
//!   process that has just become a candidate has the light pass's CPU use, all of it on the
//!   node of its main thread's last CPU, and no per-thread figures yet.
//! - `current_node`: the node where most of its threads last ran.
//! - `node_bytes`: the process's own memory per node from `numa_maps` (anonymous, heap, stack;
//!   page cache is shared and not moved), possibly read at an earlier interval for a large
//!   process (`memory_sampled_ns` says when). Under fake NUMA, spread evenly.
//! - `allowed_cpus` / `allowed_nodes`: from the exclusion verdict (cpuset, isolated CPUs).
//! - `home`: the home homenode gave it (or, in a dry run, would have given it).
//! - `slice_ns`: the scheduling slice homenode gave its threads (in a dry run, would have
//!   given; on a kernel without custom slices, the one asked for, so that the policy does not
//!   ask again every interval); 0 when none.
//! - `leave_alone`: the verdict says leave it, or an earlier action on it failed for good.
//! - `numa`: the main thread's `sched` (`numa_preferred_nid`, and its `numa_faults` lines
//!   summed by node), the kernel's NUMA balancing hint for the policy.
//! - Nodes: free memory from `nodeN/meminfo`, idle CPUs from `/proc/stat` (this counts every
//!   task, including the ones not looked at closely).

use std::collections::BTreeMap;
use std::time::Instant;

use policy::{NodeView, ProcessNumaStats, ProcessView, ThreadView};
use topo::{CpuSet, NodeId};

use crate::exclude::{self, Rules, Verdict};
use crate::sample::{ProcessKey, ProcessSample};

use super::apply::HeldSlice;
use super::host::Host;
use super::sampler::{Sample, rate_of};

/// A candidate as the policy sees it, with the verdict that decided `leave_alone`.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub key: ProcessKey,
    pub view: ProcessView,
    pub verdict: Verdict,
    /// Homed, and some thread has since set its own mask to every CPU it may use.
    pub widened: bool,
}

/// What the mechanism knows about its own past actions, for the snapshot.
pub struct Known<'a> {
    /// Home nodes (topology) and the kernel CPU mask applied (or, dry run, that would be).
    pub homes: &'a BTreeMap<ProcessKey, (Vec<NodeId>, CpuSet)>,
    /// Slices held per process (given, would be given, or asked for on a kernel without them).
    pub slices: &'a BTreeMap<ProcessKey, HeldSlice>,
    /// Processes never to be touched again, with why.
    pub never: &'a BTreeMap<ProcessKey, String>,
    /// Masks really applied (None in a dry run: nothing was).
    pub applied_masks: bool,
}

/// Builds the candidates of one interval.
pub fn candidates(
    sample: &Sample,
    host: &Host,
    rules: &Rules,
    known: &Known<'_>,
    now: Instant,
    now_ns: u64,
) -> Vec<Candidate> {
    sample
        .full
        .processes
        .iter()
        .map(|p| candidate(p, sample, host, rules, known, now, now_ns))
        .collect()
}

fn candidate(
    p: &ProcessSample,
    sample: &Sample,
    host: &Host,
    rules: &Rules,
    known: &Known<'_>,
    now: Instant,
    now_ns: u64,
) -> Candidate {
    let key = p.key();
    let t = host.topology();
    let home = known.homes.get(&key);
    let applied = if known.applied_masks {
        home.map(|(_, m)| m)
    } else {
        None
    };
    let verdict = exclude::check(p, applied, &host.machine, rules);
    let widened =
        verdict.is_manage() && applied.is_some_and(|m| exclude::widened(p, &host.machine, m));
    let mut view = ProcessView::new(t, p.pid);
    view.start_time = p.starttime;
    view.comm = p.comm.clone();
    view.threads = p.num_threads;
    let n = t.nr_nodes();
    match rate_of(&sample.rates, key) {
        Some(r) => {
            view.cpu_use = r.cpu;
            view.per_thread = r
                .threads
                .iter()
                .map(|th| ThreadView {
                    tid: th.tid,
                    cpu_use: th.cpu,
                    node: th.node,
                    wait: th.wait,
                })
                .collect();
            view.cpu_wait = r.wait;
            view.node_runtime = r.node_share();
            view.node_runtime.resize(n, 0.0);
        }
        None => {
            let light = sample
                .light
                .iter()
                .find(|l| l.light.key == key)
                .and_then(|l| l.cpu);
            view.cpu_use = light.unwrap_or(0.0);
            if let Some(node) = host.map.node_of(p.processor) {
                view.node_runtime[node] = 1.0;
            }
        }
    }
    view.current_node = current_node(p, host, n);
    if let Some((m, at)) = sample.memory.get(&key) {
        view.node_bytes = host.node_bytes(&m.private_node_bytes);
        let age = now.saturating_duration_since(*at).as_nanos() as u64;
        view.memory_sampled_ns = (age > 0).then(|| now_ns.saturating_sub(age));
    }
    let (cpus, nodes) = match &verdict {
        Verdict::Manage { cpus, nodes } => (cpus.clone(), nodes.clone()),
        Verdict::Leave(_) => {
            let cpus = exclude::allowed_cpus(p, &host.machine);
            let nodes = host.machine.nodes_of(&cpus);
            (cpus, nodes)
        }
    };
    view.allowed_cpus = host.topo_cpus(&cpus);
    view.allowed_nodes = nodes;
    view.home = home.map(|(h, _)| h.clone()).unwrap_or_default();
    view.slice_ns = known.slices.get(&key).map_or(0, |s| s.ns);
    view.leave_alone = !verdict.is_manage() || known.never.contains_key(&key);
    view.numa = p.sched.as_ref().map(|s| ProcessNumaStats {
        preferred_node: s.numa_preferred_nid.and_then(|k| host.topo_node(k)),
        faults_by_node: faults_by_node(s, host, n),
        pages_migrated: 0,
    });
    Candidate {
        key,
        view,
        verdict,
        widened,
    }
}

/// The main thread's hinting faults (private and shared) by node of the memory, in topology
/// numbering; empty when the kernel printed none.
fn faults_by_node(s: &crate::procfs::SchedNuma, host: &Host, n: usize) -> Vec<u64> {
    if s.faults.is_empty() {
        return Vec::new();
    }
    let mut out = vec![0u64; n];
    for f in &s.faults {
        if let Some(x) = host.topo_node(f.node).filter(|&x| x < n) {
            out[x] = out[x].saturating_add(f.task_private.saturating_add(f.task_shared));
        }
    }
    out
}

/// The node where most threads last ran (ties: the lower node), else the main thread's.
fn current_node(p: &ProcessSample, host: &Host, n: usize) -> Option<NodeId> {
    let mut count = vec![0u32; n];
    for th in &p.threads {
        if let Some(node) = host.map.node_of(th.processor) {
            count[node] += 1;
        }
    }
    let best = count
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
        .filter(|(_, c)| **c > 0)
        .map(|(i, _)| i);
    best.or_else(|| host.map.node_of(p.processor))
}

/// The nodes: free memory and idle CPUs (all idle before the second interval).
pub fn nodes(host: &Host, free: &[u64], idle: Option<&[f64]>) -> Vec<NodeView> {
    (0..host.nr_nodes())
        .map(|n| NodeView {
            free_bytes: free.get(n).copied().unwrap_or(0),
            cpu_idle: idle
                .and_then(|i| i.get(n).copied())
                .unwrap_or_else(|| host.topology().node_cpus(n).count() as f64),
            numa: None,
        })
        .collect()
}
