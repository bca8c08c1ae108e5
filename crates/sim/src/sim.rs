//! One simulation run: a machine, a workload and a scheduler, driven event by event until
//! every task has exited.

use crate::disk::DiskStats;
use crate::engine::Event;
use crate::kernel::{Counters, Kernel};
use crate::loadavg::LoadAvg;
use crate::placement::{Placement, PlacementStats};
use crate::program::Workload;
use crate::rng::SeedTree;
use crate::sched::CpuScheduler;
use crate::time::{Ns, SEC};
use std::sync::Arc;
use topo::{NodeId, Topology};

/// A run that could not finish.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RunError {
    #[error(
        "simulation did not finish within {limit_s} simulated seconds ({live} tasks still alive)"
    )]
    TimeLimit { limit_s: u64, live: usize },
    #[error(
        "simulation stuck at {at_ns} ns: {live} tasks alive but nothing left to happen (blocked forever on a channel or a wait)"
    )]
    Stuck { at_ns: u64, live: usize },
    #[error(transparent)]
    Fault(Box<crate::kernel::Fault>),
    /// Refused before the run: more work than the budget allows ([`crate::budget`]).
    #[error(transparent)]
    Budget(Box<crate::budget::BudgetError>),
    #[error(
        "simulation makes no progress at {at_ns} ns: {limit} events without simulated time passing (programs running: {programs})"
    )]
    NoProgress {
        at_ns: u64,
        limit: u64,
        programs: String,
    },
}

impl From<crate::budget::BudgetError> for RunError {
    fn from(e: crate::budget::BudgetError) -> Self {
        RunError::Budget(Box::new(e))
    }
}

impl From<crate::kernel::Fault> for RunError {
    fn from(f: crate::kernel::Fault) -> Self {
        RunError::Fault(Box::new(f))
    }
}

/// What one task did, for reports.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskReport {
    pub program: String,
    pub job: bool,
    pub user_ns: f64,
    pub sys_ns: f64,
    pub node_user_ns: Vec<f64>,
    /// Node of the first CPU it ran on.
    pub first_node: Option<NodeId>,
    pub home_node: Option<NodeId>,
    /// Bytes of its process's memory on each node when it exited.
    pub mem_node_bytes: Vec<u64>,
    pub created: Ns,
    pub exited: Ns,
    pub migrations: u32,
    pub node_migrations: u32,
}

/// The outcome of one run.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub tasks: Vec<TaskReport>,
    /// When the last task exited.
    pub end_ns: Ns,
    /// Wall time of the disturbance program's tasks (first created to last exited), if any.
    pub disturbance_ns: Option<Ns>,
    /// When the disturbance's last task exited, if there was one.
    pub disturbance_end_ns: Option<Ns>,
    pub counters: Counters,
    /// Events handled.
    pub events: u64,
    /// Superseded events dropped unhandled.
    pub stale_events: u64,
    /// Of `events`, the idle balance ticks accounted without being handled one by one
    /// (`kernel/ticks.rs`, quiet CPUs).
    pub skipped_ticks: u64,
    /// Busy time per CPU.
    pub cpu_busy_ns: Vec<Ns>,
    /// What the node-level placement policy did, when one ran.
    pub placement: Option<PlacementStats>,
    /// The load average over the run (`crate::loadavg`): its 5 s samples.
    pub load: LoadAvg,
    /// Requests and busy time of each disk (empty without `Io` phases).
    pub disks: DiskStats,
}

/// A simulation in progress; `step` handles one event, so tests can single-step.
pub struct Sim {
    pub k: Kernel,
    pub sched: Box<dyn CpuScheduler>,
    /// Node-level placement (the daemon's policies), when asked for.
    pub placement: Option<Placement>,
    limit: Ns,
    /// Events handled at the current instant, and that instant.
    same_instant: (Ns, u64),
    /// The kernel's load average, sampled every 5 s of simulated time.
    pub load: LoadAvg,
}

impl Sim {
    pub fn new(
        topo: Arc<Topology>,
        workload: Arc<Workload>,
        sched: Box<dyn CpuScheduler>,
        seed: u64,
    ) -> Self {
        let params = sched.kernel_params();
        let mut k = Kernel::new(topo, workload, params, &SeedTree::new(seed));
        if let Some(period) = sched.timer_period() {
            k.events.push(period, Event::SchedTimer);
        }
        Sim {
            k,
            sched,
            placement: None,
            limit: 3600 * SEC,
            same_instant: (0, 0),
            load: LoadAvg::default(),
        }
    }

    /// Stop with an error if simulated time passes `limit`.
    pub fn with_time_limit(mut self, limit: Ns) -> Self {
        self.limit = limit;
        self
    }

    /// Refresh memory contention at most once per `period` of simulated time (0: after
    /// every event that changes the running memory-bound work; default
    /// [`crate::kernel::CONTENTION_PERIOD`]).
    pub fn with_contention_period(mut self, period: Ns) -> Self {
        self.k.contention_period = period;
        self
    }

    /// Whether idle CPUs may skip balance ticks that would repeat their last pass (default
    /// yes; `kernel/ticks.rs`, quiet CPUs). The run is the same either way, but fewer events
    /// are handled; a caller that samples the run after "the first event past a time" turns
    /// it off, since a skipped tick could have been that event.
    pub fn with_quiet_ticks(mut self, on: bool) -> Self {
        self.k.quiet.enabled = on;
        self
    }

    /// Run a node-level placement policy every `p.interval` of simulated time (and its first
    /// looks in between, when it takes them).
    pub fn with_placement(mut self, p: Placement) -> Self {
        self.placement = Some(p);
        self
    }

    /// Handle the next event (or a placement decision due before it). Returns false when
    /// nothing is left to do.
    pub fn step(&mut self) -> Result<bool, RunError> {
        if let Some(f) = self.k.fault.take() {
            return Err(f.into());
        }
        if self.k.is_done() {
            return Ok(false);
        }
        if self.k.quiet_broken() {
            // The last event changed what balancing passes read: quiet CPUs tick again.
            self.k.wake_quiet(self.sched.as_mut(), true, true);
        }
        if let Some(p) = &mut self.placement {
            // Decide only while something is still to happen, so that a stuck run is still
            // reported as stuck.
            let due = p.due();
            if self.k.events.peek_time().is_some_and(|t| t >= due) {
                if due > self.limit {
                    return Err(RunError::TimeLimit {
                        limit_s: self.limit / SEC,
                        live: self.k.live_tasks,
                    });
                }
                self.k.now = due;
                if self.k.quiet.any() {
                    // A tick at this instant would come after the decision (it is taken
                    // only when every pending event is at or after it).
                    self.k.wake_quiet(self.sched.as_mut(), false, true);
                }
                p.run_due(&mut self.k, self.sched.as_ref());
                self.k.refresh_contention();
                return Ok(true);
            }
        }
        let Some((time, ev)) = self.k.events.pop() else {
            if self.k.is_done() {
                return Ok(false);
            }
            if self.k.quiet.any() {
                // Quiet CPUs would tick on until the time limit.
                return Err(RunError::TimeLimit {
                    limit_s: self.limit / SEC,
                    live: self.k.live_tasks,
                });
            }
            return Err(RunError::Stuck {
                at_ns: self.k.now,
                live: self.k.live_tasks,
            });
        };
        if time > self.limit {
            return Err(RunError::TimeLimit {
                limit_s: self.limit / SEC,
                live: self.k.live_tasks,
            });
        }
        debug_assert!(time >= self.k.now, "time went backwards");
        self.count_instant(time)?;
        while self.load.next <= time {
            self.sample_load();
        }
        self.k.now = time;
        let s = self.sched.as_mut();
        let live = match ev {
            Event::CpuBoundary { cpu, epoch } => self.k.rqs[cpu as usize].epoch == epoch,
            Event::Balance { cpu, epoch } => self.k.rqs[cpu as usize].balance_epoch == epoch,
            Event::Wake { .. }
            | Event::Timer { .. }
            | Event::SchedTimer
            | Event::ContentionRefresh => true,
        };
        if !live {
            return Ok(true);
        }
        self.k.events.handled += 1;
        self.k.count_step(None);
        match ev {
            Event::CpuBoundary { cpu, .. } => self.k.on_boundary(s, cpu as usize),
            Event::Balance { cpu, .. } => self.k.on_balance(s, cpu as usize),
            Event::Wake { task } => self.k.wake(s, task as usize),
            Event::Timer { id } => self.k.launch(s, id as usize),
            Event::SchedTimer => self.on_sched_timer(),
            // The refresh below is due now.
            Event::ContentionRefresh => self.k.refresh_posted = false,
        }
        self.k.refresh_contention();
        if let Some(f) = self.k.fault.take() {
            return Err(f.into());
        }
        let done = self.k.is_done();
        if done && self.k.quiet.any() {
            // The ticks skipped up to the end, accounted.
            self.k.wake_quiet(self.sched.as_mut(), true, false);
        }
        Ok(!done)
    }

    /// Counts events at one instant: more than [`crate::budget::MAX_STEPS_WITHOUT_TIME`] means
    /// the tasks exchange events for ever without simulated time passing (zero-cost messages
    /// in a loop, say), an error naming the programs still running.
    fn count_instant(&mut self, time: Ns) -> Result<(), RunError> {
        if time != self.same_instant.0 {
            self.same_instant = (time, 0);
            return Ok(());
        }
        self.same_instant.1 += 1;
        if self.same_instant.1 <= crate::budget::MAX_STEPS_WITHOUT_TIME {
            return Ok(());
        }
        let wl = &self.k.workload;
        let mut names: Vec<&str> = self
            .k
            .tasks
            .iter()
            .filter(|t| t.exited.is_none())
            .map(|t| wl.programs[t.program].name.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        Err(RunError::NoProgress {
            at_ns: time,
            limit: crate::budget::MAX_STEPS_WITHOUT_TIME,
            programs: names.join(", "),
        })
    }

    /// One load-average sample at `self.load.next`: nothing changes between events, so the
    /// state before the event about to be handled is the state then. Active tasks are the
    /// running and runnable ones and those waiting for a disk.
    fn sample_load(&mut self) {
        let at = self.load.next;
        let runnable: usize = self.k.rqs.iter().map(|rq| rq.nr_running()).sum();
        self.load.sample(runnable + self.k.disks.waiting(at));
    }

    /// The scheduler's periodic timer: run it, and post the next one only while something
    /// else is pending, so that a run where nothing else can happen is still found stuck.
    fn on_sched_timer(&mut self) {
        self.sched.on_timer(&mut self.k);
        if let Some(period) = self.sched.timer_period()
            && !self.k.events.is_empty()
        {
            self.k.events.push(self.k.now + period, Event::SchedTimer);
        }
    }

    /// Run to completion. A workload whose launches alone start more phases than the run's
    /// budget allows ([`crate::budget::check_workload_steps`]) is refused before the first.
    pub fn run(mut self) -> Result<RunResult, RunError> {
        crate::budget::check_workload_steps(&self.k.workload)?;
        while self.step()? {}
        Ok(self.finish())
    }

    /// The result of a run stepped to its end (what [`Sim::run`] returns).
    pub fn finish(self) -> RunResult {
        let k = &self.k;
        let wl = &k.workload;
        let tasks: Vec<TaskReport> = k
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| TaskReport {
                program: wl.programs[t.program].name.clone(),
                job: t.job,
                user_ns: t.user_ns,
                sys_ns: t.sys_ns,
                node_user_ns: t.node_user_ns(),
                first_node: t.first_cpu.map(|c| k.topo.node_of(c)),
                home_node: self.sched.home_node(k, i).or(t.home_node),
                mem_node_bytes: t.mem_at_exit.clone(),
                created: t.created,
                exited: t.exited.unwrap_or(k.now),
                migrations: t.migrations,
                node_migrations: t.node_migrations,
            })
            .collect();
        let disturbance = wl.disturbance.and_then(|p| {
            let ts: Vec<&TaskReport> = k
                .tasks
                .iter()
                .zip(&tasks)
                .filter(|(t, _)| is_descendant_of_program(k, t.id, p))
                .map(|(_, r)| r)
                .collect();
            let start = ts.iter().map(|r| r.created).min()?;
            let end = ts.iter().map(|r| r.exited).max()?;
            Some((start, end))
        });
        RunResult {
            end_ns: k.now,
            disturbance_ns: disturbance.map(|(start, end)| end - start),
            disturbance_end_ns: disturbance.map(|(_, end)| end),
            counters: k.counters.clone(),
            // Skipped idle ticks count as the events they stand for.
            events: k.events.handled + k.quiet.replayed,
            stale_events: k.events.popped - k.events.handled,
            skipped_ticks: k.quiet.replayed,
            cpu_busy_ns: k.rqs.iter().map(|r| r.busy_ns).collect(),
            placement: self.placement.as_ref().map(|p| p.stats.clone()),
            load: self.load.clone(),
            disks: k.disks.stats(),
            tasks,
        }
    }
}

/// Whether task `t` runs program `p` or descends from a task that does.
fn is_descendant_of_program(k: &Kernel, t: usize, p: usize) -> bool {
    let mut cur = Some(t);
    while let Some(c) = cur {
        if k.tasks[c].program == p {
            return true;
        }
        cur = k.tasks[c].parent;
    }
    false
}
