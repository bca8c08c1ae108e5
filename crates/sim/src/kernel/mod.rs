//! The kernel model: per-CPU runqueues, the task life cycle (fork, exec, run, sleep, wake,
//! exit), time slices and preemption, CPU and memory accounting, and the hooks through which a
//! CPU-level scheduler places and balances tasks. The kernel owns that interface
//! ([`sched_api`]); the schedulers themselves are plug-ins in `crate::sched`.
//!
//! A busy CPU advances its current task in chunks: an event is posted for the next boundary
//! (end of the phase, of the time slice, of a cold-cache refill, or of a page group being
//! first touched), and progress in between is computed from the task's rate. Rates of
//! memory-bound tasks are recomputed whenever the set of running memory-bound tasks changes.
//! Idle CPUs post no events unless some runqueue holds a task waiting for a CPU.

mod affinity;
mod contention;
pub mod cost;
mod exec;
pub mod fair;
pub mod goodness;
mod invariants;
mod lru;
mod numa;
mod op_memo;
pub mod pelt;
mod rates;
mod refresh;
mod run;
mod runlist;
pub mod sched_api;
mod sets;
mod shared_lines;
mod solve_memo;
pub mod task;
mod ticks;

use crate::engine::{Event, EventQueue};
use crate::fastdiv::Divisor;
use crate::memory::NodeMemory;
use crate::program::Workload;
use crate::rng::SeedTree;
use crate::time::{MS, Ns, SEC};
use cost::Contention;
pub use invariants::InvariantError;
pub use numa::NumaCounters;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
pub use runlist::{RqKey, RunIter, RunList};
pub use sched_api::{CpuScheduler, ExecPlacement, IdleType};
use serde::Serialize;
use std::rc::Rc;
use std::sync::Arc;
pub use task::{Pid, Process, Task, TaskId, TaskState};
use topo::{CpuId, NodeId, Topology};

/// Default shortest simulated time between two contention refreshes: 0, a refresh after
/// every event that changes the running memory-bound work (exact). A period P > 0 keeps the
/// rates of memory-bound tasks piecewise constant over up to P after such a change (a task
/// that starts running is rated at once), which makes machines of hundreds of CPUs affordable
/// at a cost in accuracy that docs/model/memory-and-cost.md measures (1 ms: numa_test within 0.2%, an
/// oversubscribed oltp up to 2%).
pub const CONTENTION_PERIOD: Ns = 0;

/// Kernel-wide tunables of the era being modelled (set by the scheduler).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelParams {
    /// Time slice of a nice-0 task.
    pub timeslice: Ns,
    /// Cap of the sleep credit that makes a task interactive.
    pub max_sleep_avg: Ns,
    /// A task that ran less than this long ago is cache hot.
    pub cache_decay: Ns,
    /// Timer tick (1 ms at HZ=1000).
    pub tick: Ns,
    /// Granularity of memory placement, bytes.
    pub page_group_bytes: u64,
    /// The O(1) scheduler's starvation limit (`STARVATION_LIMIT`): once the first task of
    /// the expired array has waited this long times the runqueue's length (plus a tick), an
    /// interactive task whose slice runs out goes to the expired array too. 0: no limit.
    pub starvation_limit: Ns,
    /// The 2.4 `goodness()` base instead of the O(1) one (`aa`, `pmqs`): see [`goodness`].
    pub goodness: Option<goodness::GoodnessParams>,
    /// Today's fair class (EEVDF or CFS) instead of the O(1) run order (`linux`): see
    /// [`fair`].
    pub fair: Option<fair::FairParams>,
}

impl Default for KernelParams {
    fn default() -> Self {
        KernelParams {
            timeslice: 100 * MS,
            max_sleep_avg: 2 * SEC,
            cache_decay: 10 * MS,
            tick: MS,
            page_group_bytes: 2 << 20,
            starvation_limit: 0,
            goodness: None,
            fair: None,
        }
    }
}

/// Why a task was not migrated by a balancing pass. Every refusal is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// It is the task running on the source CPU.
    Running,
    /// The destination CPU is outside its affinity mask.
    Affinity,
    /// It ran too recently: its cache is still warm (`cache_nice_tries` not exhausted).
    CacheHot,
}

impl Refusal {
    pub const ALL: [Refusal; 3] = [Refusal::Running, Refusal::Affinity, Refusal::CacheHot];
}

/// Event and decision counters of one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counters {
    pub context_switches: u64,
    pub wakeups: u64,
    pub preemptions: u64,
    /// Sends that blocked on a full channel (socket buffer).
    pub send_blocks: u64,
    /// Interactive tasks sent to the next round because the expired ones starved
    /// (`EXPIRED_STARVING`, O(1) schedulers).
    pub starvation_expiries: u64,
    /// Balancing passes run (periodic, idle and new-idle).
    pub balance_calls: u64,
    /// Task moves between CPUs by balancing or placement.
    pub migrations: u64,
    /// Of those, moves to another node.
    pub node_migrations: u64,
    /// Refused migrations by reason, in [`Refusal::ALL`] order.
    pub refused: [u64; 3],
    /// Page faults of first touch (in base pages).
    pub page_faults: u64,
    /// Bytes moved by page migration.
    pub migrated_bytes: u64,
    /// Page groups that could not be placed (machine or bind set out of memory).
    pub alloc_failures: u64,
    /// Recomputations of memory contention, and their fixed-point iterations.
    pub contention_solves: u64,
    pub contention_iterations: u64,
    /// NUMA balancing and task moves by reason (`linux` scheduler).
    pub numa: NumaCounters,
}

impl Counters {
    pub fn refuse(&mut self, r: Refusal) {
        self.refused[r as usize] += 1;
    }
}

/// A message channel (socket pair end), as sends and receives read it: 16 bytes, so that a
/// send to a hackbench group's 20 channels reads 5 cache lines rather than 20. The tasks
/// blocked on it are kept apart ([`ChannelWaiters`], `Kernel::chan_waiters`) and read only
/// when there are some.
#[derive(Clone, Copy, Debug, Default)]
pub struct Channel {
    pub pending: u64,
    /// How many tasks are blocked reading it, and writing to it (the lengths of its
    /// [`ChannelWaiters`]' lists).
    pub nr_readers: u32,
    pub nr_writers: u32,
}

/// The tasks blocked on a channel.
#[derive(Clone, Debug, Default)]
pub struct ChannelWaiters {
    /// Tasks blocked reading this channel (all are woken by a write).
    pub readers: Vec<TaskId>,
    /// Tasks blocked writing to it while it is full (all are woken by a read).
    pub writers: Vec<TaskId>,
}

/// One CPU's runqueue and bookkeeping.
#[derive(Clone, Debug)]
pub struct RunQueue {
    pub curr: Option<TaskId>,
    /// Tasks waiting for this CPU (not the current one), ordered by their runqueue key.
    pub queue: RunList,
    /// Round of the task last picked (tasks whose slice expired wait for the next round).
    pub round: u64,
    /// Generation of the pending boundary event.
    pub epoch: u32,
    /// Generation of the pending balance event.
    pub balance_epoch: u32,
    /// No balance event pending (idle and nothing to pull).
    pub balance_parked: bool,
    /// The pending balance event was posted at the idle interval.
    pub balance_idle: bool,
    /// Offset of this CPU's timer ticks.
    pub tick_phase: Ns,
    pub need_resched: bool,
    /// Time of the pending boundary event, if one is pending.
    pub boundary_at: Option<Ns>,
    /// Time spent running tasks, ns.
    pub busy_ns: Ns,
    /// When the first task of the current round went to the next one (the O(1) runqueue's
    /// `expired_timestamp`); cleared when the rounds switch or the CPU goes idle.
    pub expired_since: Option<Ns>,
    /// Fair class bookkeeping (unused by the other bases).
    pub fair: fair::FairRq,
    /// PELT signals of the runqueue (fair class).
    pub pelt: pelt::Pelt,
}

impl RunQueue {
    pub fn nr_running(&self) -> usize {
        self.queue.len() + usize::from(self.curr.is_some())
    }
}

/// The whole simulated machine state.
pub struct Kernel {
    pub topo: Arc<Topology>,
    pub params: KernelParams,
    /// The kernel's own copy of the workload. An `Rc`, not the caller's `Arc`: the
    /// interpreter holds a counted reference across every phase it runs, and an `Rc`
    /// counts without an atomic (a run lives on one thread).
    pub workload: Rc<Workload>,
    /// Some `Memory` phase of the workload has `contended` accesses (shared lines). When
    /// none has, no task can be a line sharer and the refresh skips looking for them.
    workload_contended: bool,
    pub now: Ns,
    pub events: EventQueue,
    pub rqs: Vec<RunQueue>,
    pub tasks: Vec<Task>,
    pub procs: Vec<Process>,
    pub mem: NodeMemory,
    pub chans: Vec<Channel>,
    /// The tasks blocked on each channel (`chans` holds their numbers).
    chan_waiters: Vec<ChannelWaiters>,
    /// The disks the workload's `Io` phases queue on (`crate::disk`).
    pub disks: crate::disk::Disks,
    pub q: Contention,
    pub counters: Counters,
    /// Tasks not yet exited.
    pub live_tasks: usize,
    /// Tasks waiting on some runqueue (not running).
    pub nr_waiting: usize,
    /// CPUs with no balance event pending.
    nr_parked: usize,
    /// Workload launches not yet started.
    pub launches_pending: usize,
    /// CPU of the task whose action is waking others right now (a message send, an exit),
    /// None for timer wake-ups; wake-up placement reads it.
    pub waker_cpu: Option<CpuId>,
    /// The cache each CPU's tasks use in the cost model: its LLC, or with
    /// `cpu.llc_private` its own part of it (the scheduler's view is `topo.cpus[c].llc`).
    cache_of: Vec<usize>,
    /// CPUs of each of those caches.
    llc_cpus: Vec<Vec<CpuId>>,
    /// Bytes the tasks running on each LLC's CPUs have touched (each run counted up to the
    /// task's footprint), a running count: what others touched while a task was away
    /// evicts its lines (`cost::refill_after_turns`).
    llc_touched: Vec<f64>,
    contention_dirty: bool,
    /// Shortest simulated time between two contention refreshes (0: after every event that
    /// changed what runs); [`CONTENTION_PERIOD`] unless set. See `refresh.rs`.
    pub contention_period: Ns,
    /// No refresh before this time; one put off is pending as an event when `refresh_posted`.
    next_refresh_at: Ns,
    pub(crate) refresh_posted: bool,
    /// What the contention refresh saw on each CPU and which CPUs changed since
    /// (`contention.rs`).
    cx: contention::ContentionIndex,
    refresh_scratch: Option<Box<refresh::RefreshScratch>>,
    /// Per-node fractions of a region while a cost decomposition is built (`rates.rs`).
    frac_scratch: Vec<f64>,
    /// Decompositions shared by tasks of one program on one node (`op_memo.rs`); boxed, as
    /// it is used only where decompositions are rebuilt.
    op_memo: Box<op_memo::OpMemo>,
    rng: ChaCha8Rng,
    seq: u64,
    /// `params.tick` and `params.max_sleep_avg` (at least 1) as divisors: the balance ticks,
    /// the 2.4 counters and the O(1) priority divide by them all the time.
    tick_div: Divisor,
    sleep_div: Divisor,
    /// Per node, a count bumped whenever a runqueue of its CPUs changes (a task joins or
    /// leaves the waiting list, the current task changes): while it stays the same, so do
    /// the node's runqueues (balancers cache what they sum over them).
    node_rq_changes: Vec<u64>,
    /// Each runqueue's `nr_running` as one dense array, kept by [`Kernel::rq_changed`]: the
    /// O(1) balancers sample every queue of a span on every pass (a thousand at 1024 CPUs),
    /// and contiguous words scan far faster than a field of each large [`RunQueue`].
    nr_running: Vec<u32>,
    /// Some task was given its own EEVDF slice ([`Kernel::set_slice`]): picks and wake-ups
    /// then look at the slices (`RUN_TO_PARITY`'s shortest queued slice, `PREEMPT_SHORT`).
    pub(crate) custom_slices: bool,
    /// Bumped whenever a task's `home_node` is set ([`Kernel::set_home_node`]).
    home_changes: u64,
    /// Bumped whenever a task's affinity is set ([`Kernel::set_affinity`]).
    affinity_changes: u64,
    /// Idle CPUs whose balance ticks are skipped while nothing they read changes
    /// (`ticks.rs`).
    pub quiet: ticks::QuietTicks,
    /// Set when the run went over its budget ([`crate::budget`]); the engine stops with it.
    pub fault: Option<Fault>,
    /// Steps the run has taken: phases the interpreter started plus events handled, against
    /// [`crate::budget::MAX_RUN_STEPS`].
    pub steps: u64,
    /// Page groups of the regions of every process created so far, against
    /// [`crate::budget::MAX_PAGE_GROUPS`].
    pub page_groups: u64,
}

/// Why the kernel model stopped a run that would not end or would exhaust memory.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Fault {
    #[error(
        "program `{program}` creates more than {limit} tasks over the run (does it spawn itself?)"
    )]
    TooManyTasks { program: String, limit: u64 },
    #[error(
        "program `{program}` ran {limit} phases in a row without simulated time passing (a loop whose body takes no time?)"
    )]
    NoProgress { program: String, limit: u64 },
    #[error(
        "the run takes more than {limit} (phases started and events handled; program `{program}` was running): lower the loop counts, task counts or length of the run, or make its shortest phases longer"
    )]
    TooMuchWork { program: String, limit: String },
    #[error("program `{program}`: {error}")]
    Memory {
        program: String,
        error: crate::budget::BudgetError,
    },
}

impl Kernel {
    /// Counts the page groups of a new process's regions against
    /// [`crate::budget::MAX_PAGE_GROUPS`]; false (and the run stops with a fault naming
    /// `program`) when they do not fit.
    pub(crate) fn count_page_groups(
        &mut self,
        regions: &[crate::program::RegionSpec],
        program: &str,
    ) -> bool {
        let group = self.params.page_group_bytes.max(1);
        let n: u64 = regions.iter().map(|r| r.bytes.div_ceil(group).max(1)).sum();
        let total = self.page_groups.saturating_add(n);
        if total <= crate::budget::MAX_PAGE_GROUPS {
            self.page_groups = total;
            return true;
        }
        if self.fault.is_none() {
            self.fault = Some(Fault::Memory {
                program: program.to_string(),
                error: crate::budget::page_groups(total, group),
            });
        }
        false
    }

    /// Counts one step against the run's budget: at most [`crate::budget::MAX_RUN_STEPS`] in
    /// all, and past the first [`crate::budget::STEPS_GRACE`], at most
    /// [`crate::budget::MAX_STEPS_PER_CPU_SECOND`] per CPU per simulated second. Past either,
    /// the run stops with [`Fault::TooMuchWork`] naming the program of task `t` (if any).
    pub(crate) fn count_step(&mut self, t: Option<TaskId>) {
        use crate::budget::{MAX_RUN_STEPS, MAX_STEPS_PER_CPU_SECOND, STEPS_GRACE};
        self.steps += 1;
        if self.steps <= STEPS_GRACE || self.fault.is_some() {
            return;
        }
        let per_s = self.steps as f64 * 1e9 / (self.now.max(1) as f64 * self.rqs.len() as f64);
        let limit = if self.steps > MAX_RUN_STEPS {
            format!("{MAX_RUN_STEPS} steps")
        } else if per_s > MAX_STEPS_PER_CPU_SECOND as f64 {
            format!("{MAX_STEPS_PER_CPU_SECOND} steps per CPU per simulated second")
        } else {
            return;
        };
        let program = t
            .map(|t| self.workload.programs[self.tasks[t].program].name.clone())
            .unwrap_or_default();
        self.fault = Some(Fault::TooMuchWork { program, limit });
    }
    pub fn new(
        topo: Arc<Topology>,
        workload: Arc<Workload>,
        params: KernelParams,
        seeds: &SeedTree,
    ) -> Self {
        let mut tick_rng = seeds.stream("tick-phase", 0);
        let rqs = (0..topo.nr_cpus())
            .map(|_| RunQueue {
                curr: None,
                queue: if params.fair.is_some() {
                    RunList::sorted()
                } else {
                    RunList::levels()
                },
                round: 0,
                epoch: 0,
                balance_epoch: 0,
                balance_parked: true,
                balance_idle: true,
                tick_phase: tick_rng.gen_range(0..params.tick),
                need_resched: false,
                boundary_at: None,
                busy_ns: 0,
                expired_since: None,
                fair: fair::FairRq::default(),
                pelt: pelt::Pelt::default(),
            })
            .collect();
        let mut events = EventQueue::new();
        for (i, l) in workload.launches.iter().enumerate() {
            events.push(l.at, Event::Timer { id: i as u32 });
        }
        let launches_pending = workload.launches.len();
        let nr_cpus = topo.nr_cpus();
        let nr_parked = nr_cpus;
        let (cache_of, llc_cpus) = cost_model_caches(&topo);
        let nr_llc = llc_cpus.len();
        let topo_nodes = topo.nr_nodes();
        // A process whose regions alone exceed the machine would make the memory model
        // allocate more page groups than the machine has: refused before anything runs.
        let fault = workload.programs.iter().find_map(|p| {
            let bytes: f64 = p.regions.iter().map(|r| r.bytes as f64).sum();
            crate::budget::memory("regions", bytes, topo.total_mem_bytes())
                .err()
                .map(|error| Fault::Memory {
                    program: p.name.clone(),
                    error,
                })
        });
        let workload_contended = workload.programs.iter().any(|p| {
            p.phases.iter().any(|ph| {
                matches!(ph, crate::program::Phase::Memory { op, .. }
                    if op.accesses.iter().any(|a| a.contended > 0.0))
            })
        });
        Kernel {
            workload_contended,
            tick_div: Divisor::new(params.tick),
            sleep_div: Divisor::new(params.max_sleep_avg),
            node_rq_changes: vec![0; topo.nr_nodes()],
            nr_running: vec![0; nr_cpus],
            home_changes: 0,
            custom_slices: false,
            affinity_changes: 0,
            disks: crate::disk::Disks::for_workload(&workload),
            mem: NodeMemory::new(&topo),
            q: Contention::idle(topo.nr_nodes()),
            chans: vec![Channel::default(); workload.channels],
            chan_waiters: vec![ChannelWaiters::default(); workload.channels],
            topo,
            params,
            workload: Rc::new(Arc::unwrap_or_clone(workload)),
            now: 0,
            events,
            rqs,
            tasks: Vec::new(),
            procs: Vec::new(),
            counters: Counters::default(),
            live_tasks: 0,
            nr_waiting: 0,
            launches_pending,
            waker_cpu: None,
            nr_parked,
            cache_of,
            llc_cpus,
            llc_touched: vec![0.0; nr_llc],
            contention_dirty: false,
            contention_period: CONTENTION_PERIOD,
            next_refresh_at: 0,
            refresh_posted: false,
            cx: contention::ContentionIndex::new(nr_cpus, topo_nodes, nr_llc),
            refresh_scratch: None,
            frac_scratch: Vec::new(),
            op_memo: Box::default(),
            rng: seeds.stream("workload", 0),
            seq: 0,
            quiet: ticks::QuietTicks::new(nr_cpus),
            fault,
            steps: 0,
            page_groups: 0,
        }
    }

    pub fn nr_running(&self, cpu: CpuId) -> usize {
        self.rqs[cpu].nr_running()
    }

    pub fn node_of(&self, cpu: CpuId) -> NodeId {
        self.topo.node_of(cpu)
    }

    /// A number that changes whenever a runqueue of `node`'s CPUs changes (its waiting
    /// tasks or its current task).
    pub fn node_rq_changes(&self, node: NodeId) -> u64 {
        self.node_rq_changes[node]
    }

    /// Note that `cpu`'s runqueue changed (see [`Kernel::node_rq_changes`]).
    // Inlined: it runs at every switch, and its callers have just touched `rqs[cpu]`.
    #[inline(always)]
    pub(crate) fn rq_changed(&mut self, cpu: CpuId) {
        let node = self.topo.node_of(cpu);
        self.node_rq_changes[node] += 1;
        self.nr_running[cpu] = self.rqs[cpu].nr_running() as u32;
    }

    /// Every CPU's [`Kernel::nr_running`], indexed by CPU (the balancers' queue scans).
    pub fn nr_running_array(&self) -> &[u32] {
        &self.nr_running
    }

    /// A number that changes whenever a task's `home_node` is set.
    pub fn home_changes(&self) -> u64 {
        self.home_changes
    }

    /// A number that changes whenever a task's affinity is set.
    pub fn affinity_changes(&self) -> u64 {
        self.affinity_changes
    }

    /// Set a task's homenode (always through here, so that [`Kernel::home_changes`] moves).
    pub fn set_home_node(&mut self, t: TaskId, home: Option<NodeId>) {
        self.tasks[t].home_node = home;
        self.home_changes += 1;
    }

    /// Give a task its own EEVDF slice (`sched_setattr` with `sched_runtime`, Linux 6.12 and
    /// later), clamped as the kernel clamps it to 0.1-100 ms; 0 gives the base slice back.
    /// It takes effect at the task's next deadline or placement. The O(1)-era bases and CFS
    /// have no such request and ignore it.
    pub fn set_slice(&mut self, t: TaskId, slice_ns: Ns) {
        let s = if slice_ns == 0 {
            0
        } else {
            slice_ns.clamp(100 * crate::time::US, 100 * crate::time::MS)
        };
        self.tasks[t].slice_req = s;
        self.custom_slices |= s > 0;
    }

    /// [`Kernel::set_slice`] as the homenode daemon asks for it: with
    /// `SCHED_FLAG_RESET_ON_FORK` while the slice lasts, so that the task's new threads and
    /// children start with the base slice (DAEMON.md, "Scheduling slices").
    pub fn set_slice_resetting_on_fork(&mut self, t: TaskId, slice_ns: Ns) {
        self.set_slice(t, slice_ns);
        self.tasks[t].slice_reset_on_fork = slice_ns > 0;
    }

    /// Runnable tasks on a node's CPUs.
    pub fn node_nr_running(&self, node: NodeId) -> usize {
        self.topo
            .node_cpus(node)
            .iter()
            .map(|c| self.rqs[c].nr_running())
            .sum()
    }

    /// The node holding most of a task's memory.
    pub fn task_mem_node(&self, t: TaskId) -> Option<NodeId> {
        self.procs[self.tasks[t].pid].main_node(self.topo.nr_nodes())
    }

    /// O(1)-style dynamic priority (lower is better): 120 -/+ 5 by sleep credit.
    pub fn prio(&self, t: TaskId) -> i32 {
        let task = &self.tasks[t];
        let bonus = (self.sleep_div().divide(10 * task.sleep_avg)) as i32 - 5;
        120 - bonus
    }

    /// A task with at least +2 priority bonus counts as interactive (nice 0 threshold).
    /// The 2.4 base has no such notion (a sleeper's credit is its counter).
    pub fn is_interactive(&self, t: TaskId) -> bool {
        self.params.goodness.is_none() && self.params.fair.is_none() && self.prio(t) <= 118
    }

    /// Whether `t` may move to `dst` now; `hot_ok` lets a balancer override cache hotness.
    pub fn can_migrate(&self, t: TaskId, dst: CpuId, hot_ok: bool) -> Result<(), Refusal> {
        let task = &self.tasks[t];
        if task.state == TaskState::Running {
            return Err(Refusal::Running);
        }
        if !task.affinity.contains(dst) {
            return Err(Refusal::Affinity);
        }
        if !hot_ok && self.cache_hot(task) {
            return Err(Refusal::CacheHot);
        }
        Ok(())
    }

    /// Whether `task` counts as cache hot: it stopped running less than `cache_decay` ago. The
    /// fair class measures from `se.exec_start`, which a task that has not run since its fork
    /// does not have yet ([`Task::has_run`]), so such a task is never hot there.
    fn cache_hot(&self, task: &Task) -> bool {
        if self.params.fair.is_some() && !task.has_run() {
            return false;
        }
        self.now.saturating_sub(task.last_ran) < self.params.cache_decay
    }

    /// Move a waiting task from its runqueue to `dst`'s (balancing). The caller has checked
    /// [`Kernel::can_migrate`].
    pub fn migrate_queued(&mut self, t: TaskId, dst: CpuId) {
        let src = self.tasks[t].cpu;
        debug_assert_eq!(self.tasks[t].state, TaskState::Runnable);
        if self.params.fair.is_some() {
            self.fair_save_lag(t, src);
            self.pelt_sync_rq(src);
        }
        if self.rqs[src].queue.remove(self.tasks[t].rq_key, t) {
            self.rq_changed(src);
            self.nr_waiting -= 1;
            if self.params.fair.is_some() {
                self.fair_unqueued(src, t);
            }
        }
        self.enqueue(t, dst, false);
    }

    /// Number of `cpu`'s timer tick now (its ticks fall at `tick_phase + n * tick`).
    pub fn tick_no(&self, cpu: CpuId) -> u64 {
        let tick = self.tick_div();
        tick.divide(self.now.saturating_sub(self.rqs[cpu].tick_phase) + tick.get() / 2)
    }

    /// `params.tick` (at least 1) as a divisor.
    pub(crate) fn tick_div(&self) -> Divisor {
        debug_assert_eq!(self.tick_div.get(), self.params.tick.max(1));
        self.tick_div
    }

    /// `params.max_sleep_avg` (at least 1) as a divisor.
    fn sleep_div(&self) -> Divisor {
        debug_assert_eq!(self.sleep_div.get(), self.params.max_sleep_avg.max(1));
        self.sleep_div
    }

    /// Every task has exited and nothing more will be started.
    pub fn is_done(&self) -> bool {
        self.live_tasks == 0 && self.launches_pending == 0
    }

    /// Random draw from the workload stream (I/O jitter).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        if hi <= lo {
            lo
        } else {
            self.rng.gen_range(lo..hi)
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Record that the rates of all memory-bound tasks must be recomputed.
    pub fn mark_contention_dirty(&mut self) {
        self.cx.mark_all();
        self.contention_dirty = true;
    }

    /// Record that what `cpu` runs may have changed what memory-bound work it does.
    pub(crate) fn mark_cpu_dirty(&mut self, cpu: CpuId) {
        self.cx.mark(cpu);
        self.contention_dirty = true;
    }

    /// Record that process `pid`'s memory moved: the decompositions of its running threads
    /// are out of date.
    pub(crate) fn mark_proc_dirty(&mut self, pid: usize) {
        for i in 0..self.procs[pid].threads.len() {
            let o = self.procs[pid].threads[i];
            if self.tasks[o].state == TaskState::Running {
                self.cx.mark(self.tasks[o].cpu);
            }
        }
        self.contention_dirty = true;
    }
}

/// The cost model's caches: each CPU's (its LLC, or with `cpu.llc_private` its own part of
/// it) and the CPUs of each.
fn cost_model_caches(topo: &Topology) -> (Vec<usize>, Vec<Vec<CpuId>>) {
    let private = topo.cpu_model.llc_private;
    let cache_of: Vec<usize> = (topo.cpus.iter())
        .map(|c| if private { c.id } else { c.llc })
        .collect();
    let nr = cache_of.iter().map(|&l| l + 1).max().unwrap_or(0);
    let mut cpus = vec![Vec::new(); nr];
    for c in &topo.cpus {
        cpus[cache_of[c.id]].push(c.id);
    }
    (cache_of, cpus)
}
