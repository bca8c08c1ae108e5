//! The daemon loop (`homenode run`): every interval, sample `/proc`, build the policy's
//! snapshot, decide, apply, publish.
//!
//! ```text
//!  light pass (stat of every PID) ──► candidates ──► full pass (threads, cgroup, numa_maps)
//!        │                                                   │
//!        ▼                                                   ▼
//!  /proc/stat, nodeN/meminfo ──► NodeViews      ProcessViews + exclusion verdicts
//!                                     └──────► Snapshot ──► policy.decide ──► actions
//!                                                                               │
//!        journal first, then sched_setaffinity / sched_setattr / move_pages ◄┘
//!                                                                               │
//!                         status table (Unix socket), metrics (loopback HTTP) ◄─┘
//! ```
//!
//! Safety rules, in the order they act:
//! - the exclusion rules ([`crate::exclude`]) decide which candidates the policy may act on;
//!   a process homenode manages that someone else pins, or that gets a memory policy or a
//!   real-time thread, is released (its threads still at homenode's mask go back to their
//!   originals) and never touched again;
//! - every change is journaled before it is made ([`apply`]); on SIGTERM/SIGINT
//!   [`Daemon::shutdown`] restores every journaled process (masks, and the kernel's default
//!   slice for threads at homenode's); after a crash the next start adopts the processes
//!   whose masks are still homenode's and restores the rest (or restores all,
//!   `on_start = "restore"`);
//! - one daemon at a time: an exclusive lock on `JOURNAL.lock`;
//! - `--dry-run` journals nothing and calls nothing: each decision is logged with its reason,
//!   and the homes and slices it would have set are kept in memory so that the next decisions
//!   are those the daemon would really take.

pub mod apply;
pub mod config;
pub mod control;
pub mod host;
pub mod metrics;
pub mod movelog;
pub mod privileges;
pub mod reload;
pub mod sampler;
pub mod snapshot;
pub mod status;

mod decision;
mod lifecycle;
use lifecycle::{log_restore, still_ours, take_lock};
mod run_loop;

pub use lifecycle::{describe_slice_restore, restore_only, thread_cpu_s};
pub use run_loop::{
    MAX_FAILED_INTERVALS, MAX_WIDENINGS, ReadError, Reload, RunSummary, overrun_note, run,
    run_reloading,
};

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use policy::{Action, NodePolicy, Snapshot};
use topo::{CpuSet, NodeId};

use crate::clock::{Clock, RealClock};
use crate::error::{JournalError, ProcError};
use crate::exclude::Verdict;
use crate::journal::{self, Journal, RestoreReport};
use crate::procfs::cpustat::{self, CpuTimes};
use crate::sample::ProcessKey;
use crate::{Live, affinity};

pub use apply::{Actuator, HeldSlice, HomeRequest, Outcome, SliceRequest};
pub use config::{ConfigError, DaemonConfig, OnStart};
pub use host::{Host, HostError};
pub use reload::ReloadReport;
pub use status::{SharedStatus, StatusReport};

/// Why the daemon stopped or could not start, on one line.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Proc(#[from] ProcError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Status(#[from] status::StatusError),
    #[error("{}: another homenode daemon is running (it holds this lock)", path.display())]
    Locked { path: PathBuf },
    #[error("{}: {what}: {source}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        source: std::io::Error,
    },
    #[error("metrics endpoint {addr}: {source}")]
    Metrics {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("placement policy: {0}")]
    Policy(#[from] policy::PolicyError),
    /// Too many intervals failed in a row (or one panicked): everything was restored and the
    /// daemon stopped. Reported as a failure, so that a service manager sees one.
    #[error(
        "gave up after {failures} failed intervals in a row (every change was restored); last error: {last}"
    )]
    GaveUp { failures: u32, last: String },
}

/// What one interval did, for logs, tests and `--stats`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IntervalReport {
    pub actions: Vec<(Action, Outcome)>,
    /// Processes released because someone else took them over, with why.
    pub released: Vec<(ProcessKey, String)>,
    /// CPU time of the loop thread for this interval, seconds.
    pub cpu_s: f64,
    /// Of which: sampling `/proc` (light and full passes), seconds.
    pub sample_cpu_s: f64,
    /// Wall time of the whole interval's work, of sampling, and of memory moves, seconds.
    pub wall_s: f64,
    pub sample_wall_s: f64,
    pub move_wall_s: f64,
    pub light_read: usize,
    pub candidates: usize,
}

impl IntervalReport {
    /// The report of an interval or first look that read `sample` (in `cpu_s` of CPU and
    /// `wall_s`) and found `candidates`; its actions and totals come later.
    fn sampled(sample: &sampler::Sample, candidates: usize, cpu_s: f64, wall_s: f64) -> Self {
        IntervalReport {
            light_read: sample.light_read,
            candidates,
            sample_cpu_s: cpu_s,
            sample_wall_s: wall_s,
            ..IntervalReport::default()
        }
    }
}

/// The daemon's state.
pub struct Daemon {
    cfg: DaemonConfig,
    host: Arc<Host>,
    policy: Box<dyn NodePolicy + Send>,
    sampler: sampler::Sampler,
    journal: Journal,
    actuator: Actuator,
    /// Home nodes and kernel CPU mask of each managed process (in a dry run: would-be).
    homes: BTreeMap<ProcessKey, (Vec<NodeId>, CpuSet)>,
    /// The scheduling slice held for each process that has one (in a dry run: would-be; on
    /// a kernel without custom slices: asked for, not given).
    slices: BTreeMap<ProcessKey, HeldSlice>,
    /// Never to be touched again, with why.
    never: BTreeMap<ProcessKey, String>,
    /// Last action and outcome per process, for the status table.
    last: BTreeMap<ProcessKey, (String, String, u64)>,
    /// Processes counted in `skipped` already.
    counted: BTreeSet<ProcessKey>,
    /// Files whose read error was logged already.
    warned: BTreeSet<PathBuf>,
    /// How many times each homed process widened its own mask again (see `rehome_widened`).
    widenings: BTreeMap<ProcessKey, u32>,
    prev_cpustat: Option<Vec<CpuTimes>>,
    /// `/proc/stat` at the last interval or first look, for a look's idle figures.
    look_cpustat: Option<Vec<CpuTimes>>,
    /// The last interval's candidates, shown again to a first look beside the new ones.
    last_cands: Vec<snapshot::Candidate>,
    prev_vmstat: Option<crate::procfs::NumaCounters>,
    /// The memory moves of the decision being applied, logged together at its end.
    moves: movelog::MoveLog,
    /// The operator's `manage`/`unmanage` requests, taken by the status socket.
    control: Arc<control::Control>,
    /// Where "now" comes from: intervals, rates and budgets are measured on it.
    clock: Arc<dyn Clock>,
    started: Instant,
    intervals: u64,
    status: SharedStatus,
    _lock: Option<nix::fcntl::Flock<File>>,
}

impl Daemon {
    /// Logs the first problem with each file once at WARN (saying what is lost), the rest at
    /// DEBUG: a damaged line that stays damaged must not fill the log every interval.
    fn warn_once(&mut self, problems: &[ProcError], lost: &str) {
        for e in problems {
            if self.warned.insert(e.path().to_path_buf()) {
                tracing::warn!("{e}: {lost} (said once)");
            } else {
                tracing::debug!("{e}: {lost}");
            }
        }
    }

    /// Reads the host, takes the lock, recovers the journal a previous run left, builds the
    /// policy. Nothing is changed on the host except by journal recovery.
    pub fn start(cfg: DaemonConfig) -> Result<Daemon, DaemonError> {
        Daemon::start_with_clock(cfg, Arc::new(RealClock))
    }

    /// [`Daemon::start`] with time read from `clock` (tests: a [`crate::clock::ManualClock`]
    /// advanced by exact steps).
    pub fn start_with_clock(
        cfg: DaemonConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Daemon, DaemonError> {
        cfg.validate("configuration")?;
        let host = Arc::new(Host::read(&cfg.root, cfg.fake_numa)?);
        let policy = policy::build(&cfg.policy, &cfg.placement).map_err(DaemonError::Policy)?;
        let (lock, journal) = if cfg.dry_run {
            (None, Journal::new())
        } else {
            let lock = take_lock(&cfg.journal)?;
            (Some(lock), Journal::load(&cfg.journal)?)
        };
        let actuator = Actuator::new(&cfg.root, &cfg.journal, cfg.dry_run, cfg.memory.clone());
        let status = Arc::new(Mutex::new(StatusReport {
            version: env!("CARGO_PKG_VERSION").into(),
            policy: cfg.policy.clone(),
            dry_run: cfg.dry_run,
            fake_numa: cfg.fake_numa,
            interval_s: cfg.placement.interval_s,
            ..StatusReport::default()
        }));
        let mut d = Daemon {
            host,
            policy,
            sampler: sampler::Sampler::new(),
            journal,
            actuator,
            homes: BTreeMap::new(),
            slices: BTreeMap::new(),
            never: BTreeMap::new(),
            last: BTreeMap::new(),
            counted: BTreeSet::new(),
            warned: BTreeSet::new(),
            widenings: BTreeMap::new(),
            prev_cpustat: None,
            look_cpustat: None,
            last_cands: Vec::new(),
            prev_vmstat: None,
            moves: movelog::MoveLog::default(),
            control: Arc::new(control::Control::new(&cfg.root)),
            started: clock.now(),
            clock,
            intervals: 0,
            status,
            _lock: lock,
            cfg,
        };
        d.recover()?;
        Ok(d)
    }

    pub fn status(&self) -> SharedStatus {
        self.status.clone()
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    pub fn config(&self) -> &DaemonConfig {
        &self.cfg
    }

    /// Where the status socket hands the operator's `manage`/`unmanage` requests.
    pub fn control(&self) -> Arc<control::Control> {
        self.control.clone()
    }

    /// The configured exclusion rules with the operator's requests applied.
    fn rules(&self) -> crate::exclude::Rules {
        self.control.rules(&self.cfg.rules)
    }

    /// Processes managed now (in a dry run: would be), with their home nodes.
    pub fn homes(&self) -> impl Iterator<Item = (&ProcessKey, &Vec<NodeId>)> {
        self.homes.iter().map(|(k, (h, _))| (k, h))
    }

    /// Journal entries a previous run left: adopt those whose every thread still has
    /// homenode's mask (or restore all, `on_start = "restore"`), restore the others.
    fn recover(&mut self) -> Result<(), DaemonError> {
        if self.journal.is_empty() {
            return Ok(());
        }
        let entries: Vec<_> = self.journal.entries().cloned().collect();
        tracing::warn!(
            "journal {} holds {} from a previous run ({:?})",
            self.cfg.journal.display(),
            topo::count(entries.len(), "process"),
            self.cfg.on_start
        );
        for e in entries {
            let key = e.key();
            if self.cfg.on_start == OnStart::Adopt {
                if let Some(a) = &e.applied {
                    if still_ours(&self.cfg.root, key, &a.cpus)? {
                        let nodes: Vec<NodeId> = a
                            .nodes
                            .iter()
                            .filter(|&n| n < self.host.nr_nodes())
                            .collect();
                        tracing::info!("pid {}: adopted with home {:?}", key.pid, nodes);
                        self.homes.insert(key, (nodes, a.cpus.clone()));
                        // Its slice too: the policy then keeps it or asks for the default.
                        if let Some(s) = &e.slice {
                            self.slices.insert(
                                key,
                                HeldSlice {
                                    ns: s.ns,
                                    given: true,
                                },
                            );
                        }
                        continue;
                    }
                }
            }
            let mut one = Journal::new();
            one.record(e.clone());
            let r = journal::restore(&one, &self.cfg.root);
            log_restore(&r);
            if !r.done().is_empty() {
                self.journal.remove(key);
            }
        }
        self.journal.store(&self.cfg.journal)?;
        Ok(())
    }

    /// What the policy sees of the candidates: their views with the homes and slices this
    /// daemon gave them, and processes it must never touch marked to be left alone.
    fn views(&self, cands: &[snapshot::Candidate]) -> Vec<policy::ProcessView> {
        let mut views: Vec<_> = cands.iter().map(|c| c.view.clone()).collect();
        for v in &mut views {
            let key = ProcessKey {
                pid: v.pid,
                starttime: v.start_time,
            };
            if self.never.contains_key(&key) {
                v.leave_alone = true;
            }
            v.home = self
                .homes
                .get(&key)
                .map(|(h, _)| h.clone())
                .unwrap_or_default();
            v.slice_ns = self.slices.get(&key).map_or(0, |s| s.ns);
        }
        views
    }

    /// One interval: sample, decide, apply, publish.
    pub fn interval(&mut self) -> Result<IntervalReport, DaemonError> {
        let cpu0 = thread_cpu_s();
        let now = self.clock.now();
        let now_ns = now.saturating_duration_since(self.started).as_nanos() as u64;
        let managed: BTreeSet<ProcessKey> = self.homes.keys().copied().collect();
        let rules = self.rules();
        let sample = self.sampler.sample(
            &self.cfg.root,
            &self.host,
            &self.cfg.scan,
            &managed,
            &rules,
            now,
        )?;
        let sample_cpu_s = thread_cpu_s() - cpu0;
        let sample_wall_s = self.since(now);
        for e in &sample.full.errors {
            // Once per file: a process whose file cannot be read (EACCES on PID 1 in a
            // container, say) stays unreadable, and is dropped from every scan.
            if self.warned.insert(e.path().to_path_buf()) {
                tracing::warn!("scan: {e} (the process is skipped; said once)");
            } else {
                tracing::debug!("scan: {e}");
            }
        }
        // A bad line in /proc/stat or /proc/vmstat costs its CPU or counter this interval,
        // not the interval.
        let idle = self.read_idle(false)?;
        let free = self.host.free_bytes(&self.cfg.root)?;
        // The kernel's own NUMA activity over the interval (automatic NUMA balancing's hint
        // faults and migrations, allocation hits and misses), for the status and metrics.
        let vmstat = match crate::procfs::vmstat::read_lenient(&self.cfg.root) {
            Ok((v, bad)) => {
                self.warn_once(&bad, "that counter is left out");
                v
            }
            Err(e) => {
                self.warn_once(&[e], "the kernel's NUMA counters are left out");
                crate::procfs::NumaCounters::default()
            }
        };
        let kernel_numa = self
            .prev_vmstat
            .as_ref()
            .map(|p| vmstat.delta(p).values)
            .unwrap_or_default();
        self.prev_vmstat = Some(vmstat);
        let cands = self.candidates(&sample, &rules, now, now_ns);
        let mut report = IntervalReport::sampled(&sample, cands.len(), sample_cpu_s, sample_wall_s);
        self.forget_exited(&sample);
        self.release_taken_over(&cands, &mut report);
        self.rehome_widened(&cands);
        self.count_skipped(&cands);
        let nodes = snapshot::nodes(&self.host, &free, idle.as_deref());
        let views = self.views(&cands);
        let host = self.host.clone();
        let snap = Snapshot {
            topo: host.topology(),
            now_ns,
            interval_ns: (sample.elapsed_s * 1e9) as u64,
            nodes: nodes.clone(),
            processes: views,
            numa_balancing: crate::procfs::numa_balancing_on(&self.cfg.root),
        };
        let actions = self.policy.decide(&snap);
        self.log_notes("note");
        let mut counters = self.counters();
        self.apply_all(actions, &mut counters, &mut report);
        counters.scan_errors += sample.full.errors.len() as u64;
        self.intervals += 1;
        report.cpu_s = (thread_cpu_s() - cpu0).max(0.0);
        report.wall_s = self.since(now);
        self.publish(&snap, &cands, counters, &report, sample.light.len());
        if let Ok(mut s) = self.status.lock() {
            s.kernel_numa = kernel_numa;
        }
        self.last_cands = cands;
        Ok(report)
    }

    /// Reads `/proc/stat` (a bad line costs its CPU's idle time, said once) and gives each
    /// node's idle CPUs since the last interval, or with `look` since the last interval or
    /// first look (`None` without an earlier reading).
    fn read_idle(&mut self, look: bool) -> Result<Option<Vec<f64>>, DaemonError> {
        let (cpustat, bad) = cpustat::read_lenient(&self.cfg.root)?;
        self.warn_once(&bad, "that CPU's idle time is left out");
        let earlier = if look {
            &self.look_cpustat
        } else {
            &self.prev_cpustat
        };
        let idle = earlier.as_ref().map(|p| self.host.node_idle(p, &cpustat));
        if !look {
            self.prev_cpustat = Some(cpustat.clone());
        }
        self.look_cpustat = Some(cpustat);
        Ok(idle)
    }

    /// The sample's candidates, with what the daemon knows of its own past actions.
    fn candidates(
        &self,
        sample: &sampler::Sample,
        rules: &crate::exclude::Rules,
        now: Instant,
        now_ns: u64,
    ) -> Vec<snapshot::Candidate> {
        let known = snapshot::Known {
            homes: &self.homes,
            slices: &self.slices,
            never: &self.never,
            applied_masks: !self.cfg.dry_run,
        };
        snapshot::candidates(sample, &self.host, rules, &known, now, now_ns)
    }

    /// What the last decision or look held back, and why, each line after `label`: with the
    /// dry run's explanations, otherwise for a debug log (`RUST_LOG=homenode::decision=debug`).
    fn log_notes(&self, label: &str) {
        for n in self.policy.notes() {
            if self.cfg.dry_run {
                tracing::info!(target: "homenode::decision", "{label}: {n}");
            } else {
                tracing::debug!(target: "homenode::decision", "{label}: {n}");
            }
        }
    }

    /// How often the policy takes a first look between intervals (`None`: never).
    pub fn first_look_every(&self) -> Option<Duration> {
        self.policy
            .first_look_every_ns()
            .map(Duration::from_nanos)
            .filter(|&e| e.as_secs_f64() < self.cfg.placement.interval_s)
    }

    /// A first look between two intervals ([`policy::NodePolicy::first_look`], PLACEMENT.md "A
    /// first look"): the processes new since the last interval are read (`stat`, and the full
    /// read of those busy enough to be candidates), shown to the policy beside the last
    /// interval's candidates, and what it gives (homes for the new ones, their memory moves)
    /// is applied. `None` when no new process was a candidate: then only `/proc` was listed
    /// and the new processes' `stat` read.
    pub fn look(&mut self) -> Result<Option<IntervalReport>, DaemonError> {
        let cpu0 = thread_cpu_s();
        let now = self.clock.now();
        let now_ns = now.saturating_duration_since(self.started).as_nanos() as u64;
        let managed: BTreeSet<ProcessKey> = self.homes.keys().copied().collect();
        let rules = self.rules();
        let sample = self
            .sampler
            .look(&self.cfg.root, &self.cfg.scan, &managed, &rules, now)?;
        if let Ok(mut s) = self.status.lock() {
            s.counters.first_looks += 1;
            s.counters.first_looks_found += u64::from(sample.is_some());
        }
        let Some(sample) = sample else {
            return Ok(None);
        };
        let sample_cpu_s = thread_cpu_s() - cpu0;
        let sample_wall_s = self.since(now);
        let idle = self.read_idle(true)?;
        let free = self.host.free_bytes(&self.cfg.root)?;
        let new = self.candidates(&sample, &rules, now, now_ns);
        let mut report = IntervalReport::sampled(&sample, new.len(), sample_cpu_s, sample_wall_s);
        // The others as the last interval saw them, so that the homes given so far count
        // where they belong; those that exited since (their `/proc` directory is gone: one
        // `stat` call each) no longer count.
        let new_pids: BTreeSet<u32> = new.iter().map(|c| c.view.pid).collect();
        let proc_dir = crate::procfs::proc_dir(&self.cfg.root);
        let mut all: Vec<snapshot::Candidate> = self
            .last_cands
            .iter()
            .filter(|c| !new_pids.contains(&c.view.pid))
            .filter(|c| proc_dir.join(c.view.pid.to_string()).exists())
            .cloned()
            .chain(new)
            .collect();
        all.sort_by_key(|c| c.view.pid);
        let host = self.host.clone();
        let snap = Snapshot {
            topo: host.topology(),
            now_ns,
            interval_ns: (sample.elapsed_s * 1e9) as u64,
            nodes: snapshot::nodes(&self.host, &free, idle.as_deref()),
            processes: self.views(&all),
            numa_balancing: crate::procfs::numa_balancing_on(&self.cfg.root),
        };
        let actions = self.policy.first_look(&snap);
        self.log_notes("note (first look)");
        if !actions.is_empty() {
            let mut counters = self.counters();
            self.apply_all(actions, &mut counters, &mut report);
            if let Ok(mut s) = self.status.lock() {
                counters.skipped = s.counters.skipped.clone();
                s.counters = counters;
            }
        }
        report.cpu_s = (thread_cpu_s() - cpu0).max(0.0);
        report.wall_s = self.since(now);
        Ok(Some(report))
    }

    /// Seconds on the daemon's clock since `t`.
    fn since(&self, t: Instant) -> f64 {
        self.clock.now().saturating_duration_since(t).as_secs_f64()
    }

    /// The published counters, to be added to and published again.
    fn counters(&self) -> status::Counters {
        self.status
            .lock()
            .map(|s| s.counters.clone())
            .unwrap_or_default()
    }
}
