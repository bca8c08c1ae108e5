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

    /// Carries out a decision: its `SetHome`s together, then its `SetSlice`s together, then
    /// every action in order (counted, logged, remembered; the memory moves timed).
    fn apply_all(
        &mut self,
        actions: Vec<Action>,
        counters: &mut status::Counters,
        report: &mut IntervalReport,
    ) {
        self.actuator.begin_decision();
        let homed = self.set_homes(&actions);
        let mut sliced = self.set_slices(&actions, &homed).into_iter();
        let mut homed = homed.into_iter();
        let mut not_applied = Vec::new();
        for a in actions {
            let t = self.clock.now();
            let done = match a {
                Action::SetHome { .. } => Done::Home(homed.next()),
                Action::SetSlice { .. } => Done::Slice(sliced.next()),
                _ => Done::Nothing,
            };
            let outcome = self.apply(&a, done, counters);
            if matches!(a, Action::MoveMemory { .. }) {
                report.move_wall_s += self.since(t);
            }
            if outcome == Outcome::DryRun {
                not_applied.push(a.clone());
            }
            report.actions.push((a, outcome));
        }
        // The policy judges its memory moves by what they changed: it must know which ones
        // a dry run did not make. (A move the daemon skips, under fake NUMA say, is judged:
        // that memory will not move, and the policy leaves it alone for a while.)
        if !not_applied.is_empty() {
            self.policy.not_applied(&not_applied);
        }
        self.log_moves();
    }

    /// One line per process for the decision's memory moves, however many batches.
    fn log_moves(&mut self) {
        let moves = std::mem::take(&mut self.moves);
        for (key, action, outcome, failed) in moves.lines() {
            if self.cfg.dry_run {
                tracing::info!(target: "homenode::decision", "would {action}");
            } else if failed {
                tracing::warn!(target: "homenode::decision", "{action} -> {outcome}");
            } else {
                tracing::info!(target: "homenode::decision", "{action} -> {outcome}");
            }
            self.last
                .insert(key, (action, outcome, journal::unix_now()));
        }
    }

    /// Sets the homes of the decision's `SetHome` actions together ([`Actuator::set_homes`]:
    /// two journal writes for all of them). The results are in the actions' order.
    fn set_homes(&mut self, actions: &[Action]) -> Vec<(Outcome, Option<CpuSet>)> {
        let reqs: Vec<HomeRequest<'_>> = actions
            .iter()
            .filter_map(|a| match a {
                Action::SetHome { nodes, cpus, .. } => Some(HomeRequest {
                    key: ProcessKey {
                        pid: a.pid(),
                        starttime: a.start_time(),
                    },
                    nodes,
                    kcpus: self.host.kernel_cpus(cpus),
                }),
                _ => None,
            })
            .collect();
        self.actuator.set_homes(&mut self.journal, &reqs)
    }

    /// Gives (or takes back) the slices of the decision's `SetSlice` actions together
    /// ([`Actuator::set_slices`]: one journal write before any thread is changed). A process
    /// whose `SetHome` in the same decision was not carried out gets none. `homed` holds the
    /// results of the decision's `SetHome`s, in order; the results are in the `SetSlice`s'
    /// order.
    fn set_slices(
        &mut self,
        actions: &[Action],
        homed: &[(Outcome, Option<CpuSet>)],
    ) -> Vec<(Outcome, Option<HeldSlice>)> {
        let key = |a: &Action| ProcessKey {
            pid: a.pid(),
            starttime: a.start_time(),
        };
        let not_homed: BTreeSet<ProcessKey> = actions
            .iter()
            .filter(|a| matches!(a, Action::SetHome { .. }))
            .zip(homed)
            .filter(|(_, (o, _))| !matches!(o, Outcome::Done(_) | Outcome::DryRun))
            .map(|(a, _)| key(a))
            .collect();
        let mut out: Vec<Option<(Outcome, Option<HeldSlice>)>> = Vec::new();
        let mut reqs = Vec::new();
        for a in actions {
            let Action::SetSlice { slice_ns, .. } = a else {
                continue;
            };
            if *slice_ns > 0 && not_homed.contains(&key(a)) {
                out.push(Some((
                    Outcome::Skipped("its home was not set in this decision".into()),
                    None,
                )));
            } else {
                out.push(None);
                reqs.push(SliceRequest {
                    key: key(a),
                    slice_ns: *slice_ns,
                });
            }
        }
        let mut done = self
            .actuator
            .set_slices(&mut self.journal, &reqs)
            .into_iter();
        out.into_iter()
            .map(|o| {
                o.or_else(|| done.next())
                    .unwrap_or_else(|| (Outcome::Failed("not carried out".into()), None))
            })
            .collect()
    }

    /// Gives every thread at a slice of homenode's the kernel's default back and forgets the
    /// slices held, logging each process with `why`.
    fn take_back_slices(&mut self, why: &str) {
        let reqs: Vec<SliceRequest> = self
            .slices
            .keys()
            .map(|&key| SliceRequest { key, slice_ns: 0 })
            .collect();
        let out = self.actuator.set_slices(&mut self.journal, &reqs);
        for (r, (o, _)) in reqs.iter().zip(out) {
            tracing::info!(target: "homenode::decision", "pid {}: slice taken back ({why}) -> {o}", r.key.pid);
        }
        self.slices.clear();
    }

    /// Carries out action `a` (a `SetHome` or `SetSlice` was carried out already: `done` is
    /// its result), then counts, logs and remembers the outcome.
    fn apply(&mut self, a: &Action, done: Done, counters: &mut status::Counters) -> Outcome {
        let key = ProcessKey {
            pid: a.pid(),
            starttime: a.start_time(),
        };
        let outcome = match a {
            Action::SetHome { nodes, .. } => {
                let homed = match done {
                    Done::Home(h) => h,
                    _ => None,
                };
                let (o, mask) =
                    homed.unwrap_or_else(|| (Outcome::Failed("not carried out".into()), None));
                match (&o, mask) {
                    (Outcome::Done(_) | Outcome::DryRun, Some(m)) => {
                        self.homes.insert(key, (nodes.clone(), m));
                    }
                    (Outcome::Failed(why), _) => {
                        // The kernel refused (EPERM, a cpuset that moved): do not try again.
                        self.never
                            .insert(key, format!("setting its affinity failed: {why}"));
                        self.release(key);
                    }
                    _ => {}
                }
                o
            }
            Action::ClearHome { .. } => {
                let o = self.actuator.clear_home(&mut self.journal, key);
                if !matches!(o, Outcome::Failed(_)) {
                    // The restore gave its threads the default slice back too.
                    self.homes.remove(&key);
                    self.slices.remove(&key);
                }
                o
            }
            Action::MoveMemory {
                from, to, bytes, ..
            } => {
                let (o, m) = self
                    .actuator
                    .move_memory(&self.host, key, *from, *to, *bytes);
                counters.pages_moved += m.pages_moved;
                counters.pages_failed += m.pages_failed;
                counters.bytes_moved += m.bytes_moved;
                self.moves.add(a, &o, &m);
                *counters
                    .actions
                    .entry(format!("{}/{}", a.kind(), o.label()))
                    .or_default() += 1;
                // Logged with the decision's other batches of the process (`log_moves`).
                return o;
            }
            Action::SetSlice { .. } => {
                let sliced = match done {
                    Done::Slice(s) => s,
                    _ => None,
                };
                let (o, held) =
                    sliced.unwrap_or_else(|| (Outcome::Failed("not carried out".into()), None));
                match held {
                    Some(h) => self.slices.insert(key, h),
                    None => self.slices.remove(&key),
                };
                o
            }
        };
        *counters
            .actions
            .entry(format!("{}/{}", a.kind(), outcome.label()))
            .or_default() += 1;
        if self.cfg.dry_run {
            tracing::info!(target: "homenode::decision", "would {a}");
        } else {
            match &outcome {
                Outcome::Failed(_) => {
                    tracing::warn!(target: "homenode::decision", "{a} -> {outcome}")
                }
                _ => tracing::info!(target: "homenode::decision", "{a} -> {outcome}"),
            }
        }
        self.last.insert(
            key,
            (a.to_string(), outcome.to_string(), journal::unix_now()),
        );
        outcome
    }

    /// Managed processes that exited: forget them (nothing to undo).
    fn forget_exited(&mut self, sample: &sampler::Sample) {
        let alive: BTreeSet<ProcessKey> = sample.light.iter().map(|l| l.light.key).collect();
        let gone: Vec<ProcessKey> = self
            .homes
            .keys()
            .filter(|k| !alive.contains(k))
            .copied()
            .collect();
        let changed = !gone.is_empty();
        for k in gone {
            self.homes.remove(&k);
            self.journal.remove(k);
            self.last.remove(&k);
        }
        // Its threads are gone with it: nothing to give back.
        self.slices.retain(|k, _| alive.contains(k));
        self.never.retain(|k, _| alive.contains(k));
        self.last.retain(|k, _| alive.contains(k));
        self.counted.retain(|k| alive.contains(k));
        self.widenings.retain(|k, _| alive.contains(k));
        if changed && !self.cfg.dry_run {
            if let Err(e) = self.journal.store(&self.cfg.journal) {
                tracing::warn!("{e}");
            }
        }
    }

    /// A homed process one of whose threads set its own mask back to every CPU it may use
    /// (a library resetting affinity at start, `perf bench numa` workers) asked for no CPU in
    /// particular: its home is forgotten, so this interval's decision gives it one again and
    /// the mask is set on every thread. A process that keeps doing it is left alone after
    /// [`MAX_WIDENINGS`] times, rather than fought every interval.
    fn rehome_widened(&mut self, cands: &[snapshot::Candidate]) {
        for c in cands.iter().filter(|c| c.widened) {
            let n = self.widenings.entry(c.key).or_insert(0);
            *n += 1;
            let comm = crate::text::escape_control(&c.view.comm);
            if *n > MAX_WIDENINGS {
                tracing::info!(
                    target: "homenode::decision",
                    "pid {} ({comm}): widened its own mask {MAX_WIDENINGS} times after being homed: left alone",
                    c.key.pid
                );
                self.never.insert(
                    c.key,
                    "keeps widening its own mask after being homed".into(),
                );
                self.release(c.key);
            } else {
                tracing::info!(
                    target: "homenode::decision",
                    "pid {} ({comm}): a thread set its mask to all its CPUs (not a pin): homed again",
                    c.key.pid
                );
                self.homes.remove(&c.key);
            }
        }
    }

    /// A managed process that the rules now say to leave alone (someone pinned it, gave it a
    /// memory policy or a real-time thread): give back what is still ours and never touch it
    /// again.
    fn release_taken_over(&mut self, cands: &[snapshot::Candidate], report: &mut IntervalReport) {
        for c in cands {
            let Verdict::Leave(reason) = &c.verdict else {
                continue;
            };
            if !self.homes.contains_key(&c.key) {
                continue;
            }
            let why = format!("released: {reason}");
            tracing::warn!(target: "homenode::decision", "pid {} ({}): {why}", c.key.pid, c.view.comm);
            // Taken over (a safety rule): never again. Left out by configuration: released,
            // and managed again if the configuration changes.
            if reason.is_safety() {
                self.never.insert(c.key, reason.to_string());
            }
            self.release(c.key);
            self.last
                .insert(c.key, (why.clone(), String::new(), journal::unix_now()));
            report.released.push((c.key, why));
        }
    }

    /// Restores what is still homenode's of process `key` (masks and slices) and forgets it.
    fn release(&mut self, key: ProcessKey) {
        self.homes.remove(&key);
        self.slices.remove(&key);
        if self.cfg.dry_run || self.journal.get(key).is_none() {
            return;
        }
        let o = self.actuator.clear_home(&mut self.journal, key);
        if let Outcome::Failed(e) = o {
            tracing::warn!("pid {}: restoring failed: {e}", key.pid);
        }
    }

    fn count_skipped(&mut self, cands: &[snapshot::Candidate]) {
        let mut newly: Vec<String> = Vec::new();
        for c in cands {
            if let Verdict::Leave(r) = &c.verdict {
                if self.counted.insert(c.key) {
                    tracing::info!(target: "homenode::decision", "pid {} ({}): left alone: {r}", c.key.pid, c.view.comm);
                    newly.push(r.label().to_string());
                }
            }
        }
        if let Ok(mut s) = self.status.lock() {
            for l in newly {
                *s.counters.skipped.entry(l).or_default() += 1;
            }
        }
    }

    fn publish(
        &self,
        snap: &Snapshot<'_>,
        cands: &[snapshot::Candidate],
        mut counters: status::Counters,
        report: &IntervalReport,
        seen: usize,
    ) {
        let t = self.host.topology();
        let nodes = (0..t.nr_nodes())
            .map(|n| status::NodeStatus {
                node: n,
                cpus: self.host.kernel_cpus(t.node_cpus(n)).to_list_string(),
                busy_cpus: (t.node_cpus(n).count() as f64 - snap.nodes[n].cpu_idle).max(0.0),
                free_bytes: snap.nodes[n].free_bytes,
                homed: self.homes.values().filter(|(h, _)| h.contains(&n)).count(),
            })
            .collect();
        let processes = cands
            .iter()
            .map(|c| {
                let v = &c.view;
                let rss = v.rss();
                let (action, outcome, at) = match self.last.get(&c.key) {
                    Some((a, o, at)) => (Some(a.clone()), Some(o.clone()), Some(*at)),
                    None => (None, None, None),
                };
                status::ProcessStatus {
                    pid: v.pid,
                    starttime: v.start_time,
                    comm: v.comm.clone(),
                    cpu_use: v.cpu_use,
                    home: self
                        .homes
                        .get(&c.key)
                        .map(|(h, _)| h.clone())
                        .unwrap_or_default(),
                    slice_ns: self
                        .slices
                        .get(&c.key)
                        .filter(|s| s.given)
                        .map_or(0, |s| s.ns),
                    time_pct: v.node_runtime.iter().map(|s| s * 100.0).collect(),
                    memory_pct: if rss > 0 {
                        v.node_bytes
                            .iter()
                            .map(|&b| b as f64 * 100.0 / rss as f64)
                            .collect()
                    } else {
                        Vec::new()
                    },
                    memory_bytes: if rss > 0 {
                        v.node_bytes.clone()
                    } else {
                        Vec::new()
                    },
                    rss_bytes: rss,
                    left_alone: c
                        .verdict
                        .reason()
                        .map(ToString::to_string)
                        .or_else(|| self.never.get(&c.key).cloned()),
                    last_action: action,
                    last_outcome: outcome,
                    last_unix_s: at,
                }
            })
            .collect();
        if let Ok(mut s) = self.status.lock() {
            counters.skipped = s.counters.skipped.clone();
            s.counters = counters;
            s.intervals = self.intervals;
            s.uptime_s = self.since(self.started);
            s.last_cpu_ms = report.cpu_s * 1000.0;
            s.last_wall_ms = report.wall_s * 1000.0;
            s.no_custom_slices = self.actuator.no_custom_slices();
            s.processes_seen = seen;
            s.candidates = cands.len();
            s.nodes = nodes;
            s.processes = processes;
            s.notes = self.policy.notes().to_vec();
        }
    }

    /// Gives every journaled process back its original affinity (and the kernel's default
    /// slice to threads at homenode's) and drops the finished entries from the journal (a dry
    /// run has nothing to undo).
    pub fn shutdown(mut self) -> Result<RestoreReport, DaemonError> {
        if self.cfg.dry_run {
            return Ok(RestoreReport::default());
        }
        let r = journal::restore(&self.journal, &self.cfg.root);
        log_restore(&r);
        for k in r.done() {
            self.journal.remove(k);
        }
        self.journal.store(&self.cfg.journal)?;
        Ok(r)
    }
}

/// Whether process `key` still exists and every thread has exactly `mask`.
fn still_ours(root: &Path, key: ProcessKey, mask: &CpuSet) -> Result<bool, DaemonError> {
    let alive = crate::procfs::stat::read(root, key.pid)?
        .alive()
        .is_some_and(|s| s.starttime == key.starttime);
    if !alive {
        return Ok(false);
    }
    match affinity::process_affinities(root, key.pid) {
        Ok(Live::Alive(m)) => Ok(m.values().all(|c| c == mask)),
        Ok(Live::Gone) => Ok(false),
        Err(e) => {
            tracing::warn!("pid {}: {e}", key.pid);
            Ok(false)
        }
    }
}

fn log_restore(r: &RestoreReport) {
    use journal::RestoreOutcome as O;
    for (k, comm, o) in &r.outcomes {
        let what = match o {
            O::Restored {
                threads_restored,
                threads_unchanged,
                changed_by_others,
                threads_gone,
                slice,
            } => {
                let mut s = format!(
                    "restored {threads_restored} threads ({threads_unchanged} already at their original mask, {changed_by_others} changed by someone else and left so, {threads_gone} gone)"
                );
                if let Some(sl) = slice {
                    s.push_str(&format!("; {}", describe_slice_restore(sl)));
                }
                s
            }
            O::Gone => "exited: nothing to restore".into(),
            O::PidReused { starttime_now } => {
                format!("PID reused (start time now {starttime_now}): not touched")
            }
            O::Failed { error } => format!("restore failed: {error}"),
        };
        tracing::info!("pid {} ({comm}): {what}", k.pid);
    }
}

/// What a restore did to a process's slices, for the log and the status table.
pub fn describe_slice_restore(r: &crate::slice::SliceRestored) -> String {
    format!(
        "{} given the kernel's default slice back ({} at another slice left so, {} gone)",
        topo::count(r.restored, "thread"),
        r.left,
        r.gone
    )
}

/// Takes the exclusive lock `JOURNAL.lock`, creating the journal's directory (mode 0700).
fn take_lock(journal: &Path) -> Result<nix::fcntl::Flock<File>, DaemonError> {
    let io = |path: &Path, what: &'static str| {
        let path = path.to_path_buf();
        move |source| DaemonError::Io { path, what, source }
    };
    if let Some(dir) = journal.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io(dir, "cannot create the journal directory"))?;
        }
    }
    let dir = match journal.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d,
        None => Path::new("."),
    };
    // Anyone who can write the journal's directory can replace the journal, and root would
    // then restore whatever masks it names.
    crate::trust::check_private_dir(dir).map_err(JournalError::Untrusted)?;
    let mut name = journal.as_os_str().to_owned();
    name.push(".lock");
    let path = PathBuf::from(name);
    let f = crate::trust::open_persistent(&path).map_err(JournalError::Untrusted)?;
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|_| DaemonError::Locked { path })
}

/// CPU time of the calling thread, seconds.
pub fn thread_cpu_s() -> f64 {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(0.0)
}

/// Only restores the journal (`homenode run --restore`), taking the lock so that a running
/// daemon is not undercut.
pub fn restore_only(journal_path: &Path, root: &Path) -> Result<RestoreReport, DaemonError> {
    let _lock = take_lock(journal_path)?;
    let mut j = Journal::load(journal_path)?;
    let r = journal::restore(&j, root);
    log_restore(&r);
    for k in r.done() {
        j.remove(k);
    }
    j.store(journal_path)?;
    Ok(r)
}

/// What a `SetHome` or `SetSlice` of a decision gave, carried out before the decision's
/// actions are taken one by one.
enum Done {
    Home(Option<(Outcome, Option<CpuSet>)>),
    Slice(Option<(Outcome, Option<HeldSlice>)>),
    Nothing,
}

/// What [`run`] did.
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    pub intervals: u64,
    /// Loop-thread CPU time per interval, seconds.
    pub cpu_per_interval_s: Vec<f64>,
    /// Intervals whose work took longer than the period.
    pub overruns: u64,
    /// First looks taken between intervals, those that found a new candidate, and the
    /// loop-thread CPU time of each look, seconds.
    pub looks: u64,
    pub looks_placing: u64,
    pub look_cpu_s: Vec<f64>,
    pub restore: RestoreReport,
}

/// Why a configuration could not be read again: whatever the caller's reader reports (the
/// CLI's errors carry the file, key and the command-line flag).
pub type ReadError = Box<dyn std::error::Error + Send + Sync>;

/// A way to take a new configuration while running: `requested` is set (by a SIGHUP
/// handler), and `read` reads the configuration again (the file and the command line), or
/// says why it cannot.
pub struct Reload<'a> {
    pub requested: &'a AtomicBool,
    pub read: &'a dyn Fn() -> Result<DaemonConfig, ReadError>,
}

/// An error and its causes on one line, `outer: inner: ...`.
fn one_line_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// The whole daemon: start, serve the status socket (and metrics), run intervals until `stop`
/// is set (or `max_intervals` have run), then restore. An interval that fails is logged and
/// the loop goes on; ten failures in a row stop the daemon (after restoring).
pub fn run(
    cfg: DaemonConfig,
    stop: &AtomicBool,
    max_intervals: Option<u64>,
) -> Result<RunSummary, DaemonError> {
    run_reloading(cfg, stop, max_intervals, None)
}

/// [`run`], taking a new configuration between intervals whenever `reload` asks.
pub fn run_reloading(
    cfg: DaemonConfig,
    stop: &AtomicBool,
    max_intervals: Option<u64>,
    reload: Option<Reload<'_>>,
) -> Result<RunSummary, DaemonError> {
    let mut d = Daemon::start(cfg)?;
    let _status = status::StatusServer::start_with(&d.cfg.socket, d.status(), Some(d.control()))?;
    let _metrics = match d.cfg.metrics {
        Some(addr) => Some(
            metrics::MetricsServer::start(addr, d.status())
                .map_err(|source| DaemonError::Metrics { addr, source })?,
        ),
        None => None,
    };
    log_start(&d);
    let mut summary = RunSummary::default();
    let mut failures: u32 = 0;
    let mut last_error = String::new();
    let mut next = Instant::now();
    let mut last_overrun_warning: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        if max_intervals.is_some_and(|m| summary.intervals >= m) {
            break;
        }
        let period = Duration::from_secs_f64(d.cfg.placement.interval_s);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.interval()));
        match r {
            Ok(Ok(rep)) => {
                failures = 0;
                summary.cpu_per_interval_s.push(rep.cpu_s);
                if let Some(note) = overrun_note(&rep, period.as_secs_f64()) {
                    summary.overruns += 1;
                    // Said at most once a minute: a host too slow for the interval would
                    // otherwise fill the log.
                    if last_overrun_warning.is_none_or(|t: Instant| t.elapsed() >= OVERRUN_QUIET) {
                        tracing::warn!("{note}");
                        last_overrun_warning = Some(Instant::now());
                    } else {
                        tracing::debug!("{note}");
                    }
                }
            }
            Ok(Err(e)) => {
                failures += 1;
                tracing::error!("interval failed ({failures} in a row): {e}");
                last_error = e.to_string();
            }
            Err(_) => {
                failures = MAX_FAILED_INTERVALS;
                tracing::error!("interval panicked; restoring and stopping");
                last_error = "an interval panicked".into();
            }
        }
        summary.intervals += 1;
        if failures >= MAX_FAILED_INTERVALS {
            break;
        }
        next += period;
        let mut next_look = d.first_look_every().map(|e| Instant::now() + e);
        while !stop.load(Ordering::Relaxed) {
            if let Some(at) = next_look.filter(|&at| at < next && Instant::now() >= at) {
                if let Err(why) = take_look(&mut d, &mut summary) {
                    failures = MAX_FAILED_INTERVALS;
                    last_error = why;
                    break;
                }
                // Behind schedule: the next look a period from now, no catching up.
                next_look = d
                    .first_look_every()
                    .map(|e| (at + e).max(Instant::now() + e / 2));
            }
            if let Some(r) = &reload {
                if r.requested.swap(false, Ordering::Relaxed) {
                    take_new_config(&mut d, r);
                    // A shorter interval takes effect now, not after the old one's wait.
                    let new_period = Duration::from_secs_f64(d.cfg.placement.interval_s);
                    next = next.min(Instant::now() + new_period);
                }
            }
            let now = Instant::now();
            if now >= next {
                // Behind schedule (a slow interval, a suspended host): do not catch up.
                if now - next > period {
                    next = now;
                }
                break;
            }
            let until = next_look.filter(|&at| at < next).unwrap_or(next);
            std::thread::sleep(
                until
                    .saturating_duration_since(now)
                    .min(Duration::from_millis(50)),
            );
        }
        if failures >= MAX_FAILED_INTERVALS {
            break;
        }
    }
    summary.restore = d.shutdown()?;
    if failures >= MAX_FAILED_INTERVALS {
        return Err(DaemonError::GaveUp {
            failures,
            last: last_error,
        });
    }
    Ok(summary)
}

/// The daemon's first line: version, policy, interval, nodes, and whether it is a dry run.
fn log_start(d: &Daemon) {
    tracing::info!(
        "homenode {}: policy {}, interval {} s{}, {}{}{}",
        env!("CARGO_PKG_VERSION"),
        d.cfg.policy,
        d.cfg.placement.interval_s,
        d.first_look_every()
            .map(|e| format!(" (first looks every {} s)", e.as_secs_f64()))
            .unwrap_or_default(),
        topo::count(d.host.nr_nodes(), "node"),
        if d.host.fake { " (fake NUMA)" } else { "" },
        if d.cfg.dry_run {
            ", dry run: nothing will be changed (the policy goes on as if its homes and \
             slices had been set; its memory moves, never made, are asked again at every \
             interval)"
        } else {
            ""
        },
    );
}

/// One first look between intervals, counted in `summary`. A look that fails is logged and
/// left to the next interval; one that panics is an error (the caller restores and stops).
fn take_look(d: &mut Daemon, summary: &mut RunSummary) -> Result<(), String> {
    let cpu0 = thread_cpu_s();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.look())) {
        Ok(Ok(found)) => {
            summary.looks += 1;
            summary.looks_placing += u64::from(found.is_some());
            summary.look_cpu_s.push((thread_cpu_s() - cpu0).max(0.0));
        }
        // The next interval reads everything again.
        Ok(Err(e)) => tracing::warn!("first look failed: {e}"),
        Err(_) => {
            tracing::error!("a first look panicked; restoring and stopping");
            return Err("a first look panicked".into());
        }
    }
    Ok(())
}

/// Least time between two warnings that an interval overran its period.
const OVERRUN_QUIET: Duration = Duration::from_secs(60);

/// When an interval's work took longer than its period, one line saying where the time went.
pub fn overrun_note(rep: &IntervalReport, period_s: f64) -> Option<String> {
    if rep.wall_s <= period_s {
        return None;
    }
    Some(format!(
        "an interval took {:.1} s, more than its {period_s} s period: sampling /proc {:.1} s, \
         memory moves {:.1} s, the rest {:.1} s",
        rep.wall_s,
        rep.sample_wall_s,
        rep.move_wall_s,
        (rep.wall_s - rep.sample_wall_s - rep.move_wall_s).max(0.0)
    ))
}

/// Times a homed process may widen its own mask again before it is left alone.
pub const MAX_WIDENINGS: u32 = 3;

/// Failed intervals in a row after which the daemon restores and stops.
pub const MAX_FAILED_INTERVALS: u32 = 10;

/// Reads the configuration again and takes it, logging what changed; on any error the
/// running configuration stays.
fn take_new_config(d: &mut Daemon, r: &Reload<'_>) {
    let new = match (r.read)() {
        Ok(c) => c,
        Err(e) => {
            let e = one_line_chain(e.as_ref());
            tracing::error!("reload refused, the running configuration stays: {e}");
            return;
        }
    };
    match d.reload(new) {
        Ok(rep) => {
            if rep.applied.is_empty() && rep.need_restart.is_empty() {
                tracing::info!("reloaded: no change");
            }
            for a in &rep.applied {
                tracing::info!("reloaded: {a}");
            }
            for n in &rep.need_restart {
                tracing::warn!("reload: {n}; this key needs a restart, the running value stays");
            }
        }
        Err(e) => tracing::error!("reload refused, the running configuration stays: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_within_its_period_says_nothing() {
        let rep = IntervalReport {
            wall_s: 1.9,
            ..IntervalReport::default()
        };
        assert_eq!(overrun_note(&rep, 2.0), None);
    }

    #[test]
    fn an_overrun_says_where_the_time_went() {
        let rep = IntervalReport {
            wall_s: 7.4,
            sample_wall_s: 0.3,
            move_wall_s: 6.9,
            ..IntervalReport::default()
        };
        let note = overrun_note(&rep, 2.0).expect("overran");
        assert!(
            note.contains("took 7.4 s, more than its 2 s period"),
            "{note}"
        );
        assert!(note.contains("memory moves 6.9 s"), "{note}");
        assert!(note.contains("the rest 0.2 s"), "{note}");
    }
}
