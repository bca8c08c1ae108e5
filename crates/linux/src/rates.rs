//! Rates over an interval, derived from two scans: CPU use per process and per thread, and
//! where (on which node) that CPU time was spent.
//!
//! Processes are matched by [`ProcessKey`] (PID and start time), threads by TID and start
//! time, so a PID or TID reused between the scans is a new task, never a continuation.
//!
//! **Per-node runtime.** The kernel does not say on which CPUs a task spent its time, only the
//! CPU it last ran on (`processor`). Each thread's CPU time of the interval is charged to the
//! node of its `processor` in the *later* scan (the node it ran on most, when the interval is
//! short next to how often the kernel moves it; sampling more often sharpens it). Without
//! per-thread samples the process's time is charged to the main thread's CPU. Time of threads
//! that exited during the interval (in the process's total, in no thread's) is
//! [`ProcessRate::unattributed_s`].

use std::time::Duration;

use crate::Tid;
pub use crate::nodemap::CpuNodeMap;
use crate::procfs::Schedstat;
use crate::sample::{ProcessKey, ProcessSample, ScanResult};

/// One thread's CPU use over the interval.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadRate {
    pub tid: Tid,
    /// CPUs used on average (1.0 = one CPU all the time), user plus system.
    pub cpu: f64,
    /// User time, CPUs.
    pub user: f64,
    /// System time, CPUs.
    pub system: f64,
    /// The CPU it last ran on, in the later scan.
    pub processor: usize,
    /// Its node, from the map.
    pub node: Option<usize>,
    /// Born during the interval (its whole CPU time counts).
    pub new: bool,
    /// Time it waited on a run queue, CPUs (1.0 = runnable but waiting all the time), from
    /// `schedstat`'s run delay; `None` when the kernel did not say.
    pub wait: Option<f64>,
}

/// One process's CPU use over the interval.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessRate {
    pub key: ProcessKey,
    pub comm: String,
    /// CPUs used on average, all threads, user plus system.
    pub cpu: f64,
    pub user: f64,
    pub system: f64,
    /// Threads present in the later scan (empty without thread samples).
    pub threads: Vec<ThreadRate>,
    /// CPU seconds spent on each node during the interval (index = node).
    pub node_runtime_s: Vec<f64>,
    /// CPU seconds not charged to a node: threads that exited, CPUs the map does not know.
    pub unattributed_s: f64,
    /// Run-queue wait of its threads, CPUs (the sum of [`ThreadRate::wait`]); `None` when no
    /// thread had `schedstat`. CPU use plus this is the CPU it wanted.
    pub wait: Option<f64>,
}

impl ProcessRate {
    /// Share of the attributed runtime on each node (sums to 1, or all 0 when idle).
    pub fn node_share(&self) -> Vec<f64> {
        let total: f64 = self.node_runtime_s.iter().sum();
        self.node_runtime_s
            .iter()
            .map(|&s| if total > 0.0 { s / total } else { 0.0 })
            .collect()
    }
}

/// Rates between two scans.
#[derive(Clone, Debug, PartialEq)]
pub struct Rates {
    /// Seconds between the two scans, as measured.
    pub elapsed_s: f64,
    /// Processes present in both scans, ascending PID.
    pub processes: Vec<ProcessRate>,
    /// Processes only in the later scan (started during the interval, or a reused PID): no
    /// rate yet.
    pub new: Vec<ProcessKey>,
    /// Processes of the earlier scan absent from the later one.
    pub exited: usize,
}

impl Rates {
    /// No rates: every process read is new.
    pub fn none() -> Rates {
        Rates {
            elapsed_s: 0.0,
            processes: Vec::new(),
            new: Vec::new(),
            exited: 0,
        }
    }
}

/// Rates between `earlier` and `later`, over the time between their
/// [`taken_at`](ScanResult::taken_at); `ticks_per_second` is
/// [`clock_ticks_per_second`](crate::sample::clock_ticks_per_second).
pub fn rates(
    earlier: &ScanResult,
    later: &ScanResult,
    ticks_per_second: u64,
    map: &CpuNodeMap,
) -> Rates {
    let interval = later.taken_at.saturating_duration_since(earlier.taken_at);
    rates_over(earlier, later, interval, ticks_per_second, map)
}

/// Like [`rates`] with the interval given (tests, or a clock of the caller's).
pub fn rates_over(
    earlier: &ScanResult,
    later: &ScanResult,
    interval: Duration,
    ticks_per_second: u64,
    map: &CpuNodeMap,
) -> Rates {
    let secs = interval.as_secs_f64();
    let tps = ticks_per_second.max(1) as f64;
    // CPUs used for a tick count over the interval.
    let per = |ticks: u64| {
        if secs > 0.0 {
            ticks as f64 / tps / secs
        } else {
            0.0
        }
    };
    let mut out = Rates {
        elapsed_s: secs,
        processes: Vec::new(),
        new: Vec::new(),
        exited: 0,
    };
    for p in &later.processes {
        match earlier.get(p.key()) {
            Some(e) => out.processes.push(process_rate(e, p, tps, map, &per, secs)),
            None => out.new.push(p.key()),
        }
    }
    out.exited = earlier
        .processes
        .iter()
        .filter(|e| later.get(e.key()).is_none())
        .count();
    out
}

fn process_rate(
    e: &ProcessSample,
    l: &ProcessSample,
    tps: f64,
    map: &CpuNodeMap,
    per: &dyn Fn(u64) -> f64,
    secs: f64,
) -> ProcessRate {
    let du = l.utime.saturating_sub(e.utime);
    let ds = l.stime.saturating_sub(e.stime);
    let mut node_runtime_s = vec![0.0; map.nr_nodes()];
    let mut unattributed_s = 0.0;
    let mut charge = |cpu: usize, ticks: u64| {
        let s = ticks as f64 / tps;
        match map.node_of(cpu) {
            Some(n) if n < node_runtime_s.len() => node_runtime_s[n] += s,
            _ => unattributed_s += s,
        }
    };
    let mut threads = Vec::with_capacity(l.threads.len());
    let mut thread_ticks = 0u64;
    for t in &l.threads {
        let before = e
            .threads
            .binary_search_by_key(&t.tid, |x| x.tid)
            .ok()
            .map(|i| &e.threads[i])
            .filter(|x| x.starttime == t.starttime);
        let (tu, ts, new) = match before {
            Some(b) => (
                t.utime.saturating_sub(b.utime),
                t.stime.saturating_sub(b.stime),
                false,
            ),
            None => (t.utime, t.stime, true),
        };
        // No time between the two readings: no rate (unknown, not zero).
        let wait = run_delay_s(before.map(|b| b.schedstat), t.schedstat)
            .filter(|_| secs > 0.0)
            .map(|s| s / secs);
        thread_ticks = thread_ticks.saturating_add(tu + ts);
        charge(t.processor, tu + ts);
        threads.push(ThreadRate {
            tid: t.tid,
            cpu: per(tu + ts),
            user: per(tu),
            system: per(ts),
            processor: t.processor,
            node: map.node_of(t.processor),
            new,
            wait,
        });
    }
    if l.threads.is_empty() {
        charge(l.processor, du + ds);
    } else {
        unattributed_s += (du + ds).saturating_sub(thread_ticks) as f64 / tps;
    }
    let waits: Vec<f64> = threads.iter().filter_map(|t| t.wait).collect();
    let wait = (!waits.is_empty()).then(|| waits.iter().sum());
    ProcessRate {
        wait,
        key: l.key(),
        comm: l.comm.clone(),
        cpu: per(du + ds),
        user: per(du),
        system: per(ds),
        threads,
        node_runtime_s,
        unattributed_s,
    }
}

/// Seconds a thread waited on a run queue between two `schedstat` readings: `before` is
/// `None` for a thread born in between (all of its run delay counts), `Some(None)` for one
/// read earlier without the file (nothing to subtract: unknown).
fn run_delay_s(before: Option<Option<Schedstat>>, after: Option<Schedstat>) -> Option<f64> {
    let a = after?;
    let b = match before {
        None => 0,
        Some(b) => b?.run_delay_ns,
    };
    Some(a.run_delay_ns.saturating_sub(b) as f64 / 1e9)
}
