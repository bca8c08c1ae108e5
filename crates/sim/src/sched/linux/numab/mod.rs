//! Automatic NUMA balancing (`numa_balancing=on`), and the 2012 sched-numa variant.
//!
//! Per task, paced by its own CPU time: once it has run `scan_period` since the last check
//! (`task_tick_numa`), and the process's wall-clock limit `next_scan` has passed, the task
//! claims the process's next scan (`task_numa_work`): it makes the next `scan_size` of the
//! address space inaccessible (page groups stand for transparent huge pages) and advances
//! `next_scan` by its scan period, so one thread scans for the whole process. A full pass over
//! the address space bumps the process's `scan_seq`.
//!
//! Each armed page group is faulted by one of the threads currently accessing its region
//! (chosen by a hash of the group and pass, so runs stay deterministic); the fault is taken at
//! that thread's next NUMA tick ([`fault`]): per-node fault statistics (private or shared by
//! the last accessor, the `cpupid` check), numa groups for shared memory, page migration to the
//! faulting node through the two-stage filter, and, once per pass, the placement (decayed
//! faults, preferred node, scan period adaptation toward 70% local). Every
//! `min(1 s, scan_period / 16)` a task away from its preferred node tries to move there, or to
//! swap with a task there ([`migrate`]). Costs are system time of the task: scanning, faults,
//! page copies.

mod fault;
mod migrate;
mod scan;

use super::imbalance::NumaImbalance;
use crate::kernel::{Kernel, TaskId};
use crate::program::Phase;
use crate::sched::error::OptionError;
use crate::sched::options::{SchedOptions, fmt_duration};
use crate::time::{MS, Ns, SEC};
use std::fmt;
use topo::{CpuId, NodeId};

/// Which NUMA balancing runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Off,
    /// Today's automatic NUMA balancing (kernel 3.13 onwards, defaults of 6.x).
    On,
    /// The 2012 sched-numa form: runtime-paced scanning with a per-process limit of
    /// 2 x `scan_period_min`, a fixed scan period, every misplaced fault migrates its page, no
    /// numa groups, no task swaps.
    SchedNuma2012,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Self, OptionError> {
        match s {
            "on" => Ok(Mode::On),
            "off" => Ok(Mode::Off),
            "sched-numa-2012" => Ok(Mode::SchedNuma2012),
            _ => Err(OptionError::BadValue {
                scheduler: "linux".into(),
                key: "numa_balancing".into(),
                value: s.into(),
                expected: "one of on, off, sched-numa-2012".into(),
            }),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Off => "off",
            Mode::On => "on",
            Mode::SchedNuma2012 => "sched-numa-2012",
        })
    }
}

/// Tunables (`/proc/sys/kernel/numa_balancing_*` and model costs).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub scan_delay: Ns,
    pub scan_period_min: Ns,
    pub scan_period_max: Ns,
    pub scan_size: u64,
    /// How often a running task's NUMA work is checked (model granularity).
    pub numa_tick: Ns,
    /// Cost of making one page group (huge page) inaccessible, ns.
    pub pmd_scan_ns: f64,
}

impl Params {
    pub fn from_options(o: &mut SchedOptions) -> Result<Self, OptionError> {
        Ok(Params {
            scan_delay: o.duration("scan_delay", SEC)?,
            scan_period_min: o.duration("scan_period_min", SEC)?.max(MS),
            scan_period_max: o.duration("scan_period_max", 60 * SEC)?.max(MS),
            scan_size: o.uint("scan_size_mb", 256)?.max(1) << 20,
            numa_tick: o.duration("numa_tick", 10 * MS)?.max(MS),
            pmd_scan_ns: o.uint("pmd_scan_ns", 100)? as f64,
        })
    }

    pub fn describe(&self) -> Vec<(String, String)> {
        vec![
            ("scan_delay".into(), fmt_duration(self.scan_delay)),
            ("scan_period_min".into(), fmt_duration(self.scan_period_min)),
            ("scan_period_max".into(), fmt_duration(self.scan_period_max)),
            ("scan_size_mb".into(), (self.scan_size >> 20).to_string()),
            ("numa_tick".into(), fmt_duration(self.numa_tick)),
            ("pmd_scan_ns".into(), format!("{}", self.pmd_scan_ns)),
        ]
    }
}

/// Fault counts by node, `[shared, private]`.
pub type Faults = Vec<[f64; 2]>;

/// Per-task NUMA state (`task_struct` fields).
#[derive(Clone, Debug, Default)]
pub struct TaskNuma {
    pub node_stamp: Ns,
    pub scan_period: Ns,
    pub scan_period_max: Ns,
    pub scan_seq: u64,
    pub mem: Faults,
    pub cpu: Faults,
    buf_mem: Faults,
    buf_cpu: Faults,
    /// Faults since the last placement: remote, local, failed migration.
    locality: [f64; 3],
    pub total: f64,
    pub preferred: Option<NodeId>,
    migrate_retry: Ns,
    /// Armed page groups this task will fault on: (region, group).
    pending: Vec<(usize, usize)>,
    started: bool,
}

/// A numa group: the tasks of one process that share memory (`numa_group`).
#[derive(Clone, Debug, Default)]
pub struct Group {
    pub members: Vec<TaskId>,
    pub mem: Faults,
    pub cpu: Faults,
    pub total: f64,
    pub active: Vec<bool>,
}

/// Per-process state (`mm_struct` fields and page state).
#[derive(Clone, Debug, Default)]
pub struct ProcNuma {
    pub next_scan: Ns,
    /// Next page group to scan, as a flat index over all regions.
    offset: usize,
    pub scan_seq: u64,
    /// Per region, per group: armed (inaccessible until the next fault).
    armed: Vec<Vec<bool>>,
    /// Per region, per group: last faulting (node, task): the page's `cpupid`.
    last: Vec<Vec<Option<(NodeId, TaskId)>>>,
    /// Armed groups no running thread was accessing when armed.
    unclaimed: Vec<(usize, usize)>,
    pub group: Option<Group>,
}

/// NUMA balancing state of the whole machine.
pub struct NumaBalancing {
    pub mode: Mode,
    pub p: Params,
    pub rule: NumaImbalance,
    pub tasks: Vec<TaskNuma>,
    pub procs: Vec<ProcNuma>,
    /// Next NUMA tick of each CPU.
    next_tick: Vec<Ns>,
    /// Per node: `imb_numa_nr` of its CPUs' lowest NUMA level (`sd_numa`).
    pub imb_numa_nr: Vec<usize>,
}

impl NumaBalancing {
    pub fn new(
        mode: Mode,
        p: Params,
        rule: NumaImbalance,
        nr_cpus: usize,
        imb_numa_nr: Vec<usize>,
    ) -> Self {
        NumaBalancing {
            imb_numa_nr,
            mode,
            p,
            rule,
            tasks: Vec::new(),
            procs: Vec::new(),
            next_tick: vec![0; nr_cpus],
        }
    }

    pub fn enabled(&self) -> bool {
        self.mode != Mode::Off
    }

    /// Grow the per-task and per-process tables to the kernel's.
    fn sync(&mut self, k: &Kernel) {
        let n = k.topo.nr_nodes();
        while self.tasks.len() < k.tasks.len() {
            self.tasks.push(TaskNuma {
                mem: vec![[0.0; 2]; n],
                cpu: vec![[0.0; 2]; n],
                buf_mem: vec![[0.0; 2]; n],
                buf_cpu: vec![[0.0; 2]; n],
                ..Default::default()
            });
        }
        while self.procs.len() < k.procs.len() {
            let p = &k.procs[self.procs.len()];
            let created = p.threads.first().map_or(k.now, |&t| k.tasks[t].created);
            self.procs.push(ProcNuma {
                next_scan: created + self.p.scan_delay,
                armed: p
                    .regions
                    .iter()
                    .map(|r| vec![false; r.groups.len()])
                    .collect(),
                last: p
                    .regions
                    .iter()
                    .map(|r| vec![None; r.groups.len()])
                    .collect(),
                ..Default::default()
            });
        }
    }

    /// The NUMA tick of `cpu`'s running task: take its pending hinting faults, start a scan
    /// when its runtime says so, retry the move to its preferred node.
    pub fn tick(&mut self, k: &mut Kernel, cpu: CpuId) {
        if !self.enabled() || k.now < self.next_tick[cpu] {
            return;
        }
        self.next_tick[cpu] = k.now + self.p.numa_tick;
        let Some(t) = k.rqs[cpu].curr else {
            return;
        };
        self.sync(k);
        self.claim(k, t);
        self.take_faults(k, t);
        if k.rqs[cpu].curr != Some(t) {
            return;
        }
        self.tick_scan(k, t);
        self.retry_migrate(k, t);
    }

    /// Regions the task's current phase accesses.
    fn accessed_regions(k: &Kernel, t: TaskId) -> Vec<usize> {
        let task = &k.tasks[t];
        match k.workload.programs[task.program].phases.get(task.pc) {
            Some(Phase::Memory { op, .. }) => {
                let mut v: Vec<usize> = op.accesses.iter().map(|a| a.region).collect();
                v.sort_unstable();
                v.dedup();
                v
            }
            Some(Phase::Touch { region } | Phase::TouchPart { region, .. }) => vec![*region],
            _ => Vec::new(),
        }
    }

    /// Preferred node of `t` (None before its first placement, or when balancing is off).
    pub fn preferred(&self, t: TaskId) -> Option<NodeId> {
        self.tasks.get(t).and_then(|x| x.preferred)
    }
}

/// A deterministic hash (splitmix64) to pick among candidates without a random stream.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
