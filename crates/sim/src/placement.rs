//! Node-level placement in the simulator: the same policies the live daemon runs (crate
//! `policy`), driven every `interval` of simulated time on top of any CPU-level scheduler.
//!
//! Each interval the model is observed exactly as the daemon observes a Linux host, and only
//! through the fields the daemon fills:
//! - per process: CPU use over the interval (user + system of its threads, in CPUs), per
//!   thread CPU use and the node of its CPU, the share of its user time per node, the node
//!   where most of its threads are, its resident bytes per node, its original CPU mask;
//! - per node: idle CPUs over the interval (from the runqueues' busy time) and free memory.
//!
//! Actions are applied as the daemon applies them: `SetHome` sets every live thread's
//! affinity (a running thread is pushed to an allowed CPU, [`Kernel::set_affinity`]) and
//! marks the home node in reports; `ClearHome` gives back the original masks; `MoveMemory`
//! migrates page groups with the kernel model's migration cost, charged as system time to a
//! thread of the process (its threads wait while their pages are copied; the daemon's own CPU
//! time is not modelled).

use std::collections::BTreeMap;

use policy::{Action, NodePolicy, NodeView, PlacementConfig, ProcessView, Snapshot, ThreadView};
use topo::{CpuSet, NodeId};

use crate::kernel::sched_api::CpuScheduler;
use crate::kernel::task::{Process, TaskState};
use crate::kernel::{Kernel, TaskId};
use crate::time::{Ns, SEC};

/// Why a placement spec could not be parsed or its policy built. Each variant names the item
/// that failed; the messages are the CLI's.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlacementError {
    #[error("unknown placement policy `{name}` (known: {})", valid.join(", "))]
    UnknownPolicy {
        name: String,
        valid: Vec<&'static str>,
    },
    #[error("placement option `{item}`: expected key=value")]
    NotKeyValue { item: String },
    #[error("placement `{policy}` has no options")]
    NoOptions { policy: String },
    /// An option the policy's configuration does not accept (unknown key or wrong type).
    #[error("placement {policy}: {message}")]
    BadOption { policy: String, message: String },
    #[error(transparent)]
    Config(#[from] policy::ConfigError),
    #[error(transparent)]
    Policy(#[from] policy::PolicyError),
}

/// A placement policy with its configuration, as given on the command line:
/// `homenode[:key=value,...]`, where the keys are the policy's parameters (docs/PLACEMENT.md)
/// plus `interval_s` ([`PlacementConfig::interval_s`], the one interval the daemon uses too).
#[derive(Clone, Debug, PartialEq)]
pub struct PlacementSpec {
    pub policy: String,
    pub config: PlacementConfig,
    /// The options as given, for labels.
    pub options: Vec<(String, String)>,
}

impl PlacementSpec {
    /// Parses `name[:k=v,...]`. Errors name the key and list the valid ones.
    pub fn parse(s: &str) -> Result<PlacementSpec, PlacementError> {
        let (name, opts) = s.split_once(':').unwrap_or((s, ""));
        let name = name.trim();
        let Some(entry) = policy::registry::find(name) else {
            return Err(PlacementError::UnknownPolicy {
                name: name.to_string(),
                valid: policy::registry::names(),
            });
        };
        let mut interval = None;
        let mut table = toml::Table::new();
        let mut options = Vec::new();
        for kv in opts.split(',').filter(|kv| !kv.trim().is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| PlacementError::NotKeyValue { item: kv.into() })?;
            let (k, v) = (k.trim(), v.trim());
            options.push((k.to_string(), v.to_string()));
            let value = toml::from_str::<toml::Table>(&format!("v = {v}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(v.to_string()));
            // The interval belongs to the placement section, not to the policy's table.
            if k == "interval_s" {
                let secs = value
                    .as_float()
                    .or_else(|| value.as_integer().map(|i| i as f64))
                    .ok_or_else(|| PlacementError::BadOption {
                        policy: name.into(),
                        message: format!("`interval_s` = {v}: not a number of seconds"),
                    })?;
                interval = Some(toml::Value::Float(secs));
                continue;
            }
            table.insert(k.to_string(), value);
        }
        let mut config = PlacementConfig::default();
        if !table.is_empty() && entry.options.is_empty() {
            return Err(PlacementError::NoOptions {
                policy: name.into(),
            });
        }
        if !table.is_empty() || interval.is_some() {
            let mut outer = toml::Table::new();
            if let Some(i) = interval {
                outer.insert("interval_s".into(), i);
            }
            if !table.is_empty() {
                outer.insert(name.to_string(), toml::Value::Table(table));
            }
            config = toml::Value::Table(outer)
                .try_into()
                .map_err(|e: toml::de::Error| PlacementError::BadOption {
                    policy: name.into(),
                    message: e.message().replace('\n', " "),
                })?;
        }
        config.validate()?;
        Ok(PlacementSpec {
            policy: name.to_string(),
            config,
            options,
        })
    }

    /// Time between decisions.
    pub fn interval(&self) -> Ns {
        (self.config.interval_s * SEC as f64) as Ns
    }

    pub fn build(&self) -> Result<Placement, PlacementError> {
        let policy = policy::build(&self.policy, &self.config)?;
        Ok(Placement::new(policy, self.interval()))
    }
}

impl std::fmt::Display for PlacementSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.policy)?;
        for (i, (k, v)) in self.options.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ":" } else { "," })?;
        }
        Ok(())
    }
}

/// What placement did over a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlacementStats {
    pub decisions: u64,
    /// First looks between decisions ([`NodePolicy::first_look`]).
    pub looks: u64,
    pub set_home: u64,
    pub clear_home: u64,
    /// `SetSlice` actions applied (their slices take effect under the `linux` model only).
    pub set_slice: u64,
    pub moves: u64,
    pub bytes_moved: u64,
    /// Every action with the simulated time it was applied at.
    pub log: Vec<(Ns, Action)>,
    /// What each decision held back and why (the policy's notes), with its time.
    pub notes: Vec<(Ns, String)>,
}

/// Per process, the counters at the previous decision.
#[derive(Clone, Debug, Default)]
struct Prev {
    /// Per task: user + system ns, user ns per node, and run-queue wait ns.
    tasks: BTreeMap<TaskId, (f64, Vec<f64>, Ns)>,
}

/// Counters at one observation (a decision or a first look), and when it was taken.
#[derive(Clone, Debug, Default)]
struct Observed {
    at: Ns,
    procs: BTreeMap<usize, Prev>,
    busy: Vec<Ns>,
}

/// The placement layer of one run.
pub struct Placement {
    policy: Box<dyn NodePolicy + Send>,
    pub interval: Ns,
    /// Time of the next decision.
    pub next: Ns,
    /// How often the policy wants a first look between decisions, and when the next is.
    look_every: Option<Ns>,
    next_look: Option<Ns>,
    /// Counters at the last decision (a decision's figures cover `interval`).
    prev: Observed,
    /// Counters at the last decision or first look (a look's figures cover the time since),
    /// kept only when the policy looks.
    last_seen: Observed,
    original: BTreeMap<usize, CpuSet>,
    homes: BTreeMap<usize, Vec<NodeId>>,
    /// The slice asked for each process (`SetSlice`), as the daemon remembers what it set.
    slices: BTreeMap<usize, u64>,
    pub stats: PlacementStats,
}

impl Placement {
    pub fn new(policy: Box<dyn NodePolicy + Send>, interval: Ns) -> Placement {
        let look_every = policy.first_look_every_ns().map(|e| e.max(1));
        Placement {
            policy,
            interval: interval.max(1),
            next: interval.max(1),
            look_every,
            next_look: look_every,
            prev: Observed::default(),
            last_seen: Observed::default(),
            original: BTreeMap::new(),
            homes: BTreeMap::new(),
            slices: BTreeMap::new(),
            stats: PlacementStats::default(),
        }
    }

    /// When the next decision or first look is due.
    pub fn due(&self) -> Ns {
        self.next_look
            .filter(|&l| l < self.next)
            .unwrap_or(self.next)
    }

    /// The decision or first look due at `k.now` ([`Placement::due`]).
    pub fn run_due(&mut self, k: &mut Kernel, sched: &dyn CpuScheduler) {
        if self.next_look.is_some_and(|l| l < self.next) {
            self.look(k, sched);
        } else {
            self.decide(k, sched);
        }
    }

    /// One decision at `k.now`: observe over the interval, decide, apply.
    pub fn decide(&mut self, k: &mut Kernel, sched: &dyn CpuScheduler) {
        let base = std::mem::take(&mut self.prev);
        let (snap_procs, nodes, seen) = self.observe(k, sched, &base, self.interval);
        if self.look_every.is_some() {
            self.last_seen = seen.clone();
        }
        self.prev = seen;
        let topo = k.topo.clone();
        let snap = Snapshot {
            topo: &topo,
            now_ns: k.now,
            interval_ns: self.interval,
            nodes,
            processes: snap_procs,
            numa_balancing: sched.numa_balancing(),
        };
        let actions = self.policy.decide(&snap);
        self.stats.decisions += 1;
        self.apply_all(k, actions);
        self.next = k.now + self.interval;
        self.next_look = self.look_every.map(|e| k.now + e);
    }

    /// A first look at `k.now`: observe since the last decision or look, and apply what the
    /// policy's look gives (homes for processes new since the last decision).
    fn look(&mut self, k: &mut Kernel, sched: &dyn CpuScheduler) {
        let base = std::mem::take(&mut self.last_seen);
        let span = k.now.saturating_sub(base.at).max(1);
        let (snap_procs, nodes, seen) = self.observe(k, sched, &base, span);
        self.last_seen = seen;
        let topo = k.topo.clone();
        let snap = Snapshot {
            topo: &topo,
            now_ns: k.now,
            interval_ns: span,
            nodes,
            processes: snap_procs,
            numa_balancing: sched.numa_balancing(),
        };
        let actions = self.policy.first_look(&snap);
        self.stats.looks += 1;
        self.apply_all(k, actions);
        self.next_look = self.look_every.map(|e| k.now + e);
    }

    /// Applies and logs one decision's or look's actions, with its notes.
    fn apply_all(&mut self, k: &mut Kernel, actions: Vec<Action>) {
        let now = k.now;
        self.stats
            .notes
            .extend(self.policy.notes().iter().map(|n| (now, n.clone())));
        for a in actions {
            self.apply(k, &a);
            self.stats.log.push((k.now, a));
        }
    }

    /// The processes and nodes as seen now, over the `interval` since the counters `base`,
    /// and the counters now.
    fn observe(
        &mut self,
        k: &mut Kernel,
        sched: &dyn CpuScheduler,
        base: &Observed,
        interval: Ns,
    ) -> (Vec<ProcessView>, Vec<NodeView>, Observed) {
        for cpu in 0..k.rqs.len() {
            if let Some(t) = k.rqs[cpu].curr {
                k.settle(t);
            }
        }
        let (procs, seen) = self.processes(k, sched, &base.procs, interval);
        let (nodes, busy) = nodes(k, &base.busy, interval);
        let now = Observed {
            at: k.now,
            procs: seen,
            busy,
        };
        (procs, nodes, now)
    }

    fn processes(
        &mut self,
        k: &Kernel,
        sched: &dyn CpuScheduler,
        base: &BTreeMap<usize, Prev>,
        interval: Ns,
    ) -> (Vec<ProcessView>, BTreeMap<usize, Prev>) {
        let n = k.topo.nr_nodes();
        // A task born during the interval is measured over its own life, as the daemon
        // measures a process it sees for the first time (CPU time over its age).
        let span = |created: Ns| k.now.saturating_sub(created).clamp(1, interval) as f64;
        let mut out = Vec::new();
        let mut seen = BTreeMap::new();
        for (pi, p) in k.procs.iter().enumerate() {
            if p.threads_alive == 0 {
                continue;
            }
            let live = live_threads(k, p);
            let Some(&main) = live.first() else { continue };
            let original = self
                .original
                .entry(pi)
                .or_insert_with(|| k.tasks[main].affinity.clone())
                .clone();
            let prev = base.get(&pi);
            let mut cur = Prev::default();
            let mut cpu_ns = 0.0;
            let mut node_ns = vec![0.0; n];
            let mut per_thread = Vec::new();
            let mut wait_ns = 0.0;
            // Every thread the process ever had, so time of threads that exited during the
            // interval is counted (as the kernel's process totals include it).
            for &t in &p.threads {
                let task = &k.tasks[t];
                let total = task.user_ns + task.sys_ns;
                let (ptotal, pnode, pdelay) = prev
                    .and_then(|pr| pr.tasks.get(&t).cloned())
                    .unwrap_or((0.0, vec![0.0; n], 0));
                let d = (total - ptotal).max(0.0);
                cpu_ns += d;
                // Run-queue wait, as the daemon reads it from each thread's `schedstat`.
                let delay = task.run_delay_at(k.now);
                let w = delay.saturating_sub(pdelay) as f64;
                wait_ns += w;
                let node_user = task.node_user_ns();
                for (x, (a, b)) in node_user.iter().zip(&pnode).enumerate() {
                    node_ns[x] += (a - b).max(0.0);
                }
                cur.tasks.insert(t, (total, node_user, delay));
                if task.exited.is_none() {
                    per_thread.push(ThreadView {
                        tid: t as u32,
                        cpu_use: d / span(task.created),
                        node: Some(k.node_of(task.cpu)),
                        wait: Some(w / span(task.created)),
                    });
                }
            }
            seen.insert(pi, cur);
            let mut v = ProcessView::new(&k.topo, p.pid as u32);
            v.start_time = k.tasks[p.threads[0]].created;
            v.comm = k.workload.programs[p.program].name.clone();
            v.threads = p.threads_alive;
            let secs = span(k.tasks[p.threads[0]].created) / SEC as f64;
            v.cpu_use = cpu_ns / 1e9 / secs;
            v.cpu_wait = Some(wait_ns / 1e9 / secs);
            let total: f64 = node_ns.iter().sum();
            v.node_runtime = node_ns
                .iter()
                .map(|x| if total > 0.0 { x / total } else { 0.0 })
                .collect();
            v.per_thread = per_thread;
            v.node_bytes = p.node_bytes(n);
            v.current_node = majority_node(k, &live);
            v.allowed_nodes = (0..n)
                .filter(|&x| k.topo.node_cpus(x).intersects(&original))
                .collect();
            v.allowed_cpus = original;
            v.home = self.homes.get(&pi).cloned().unwrap_or_default();
            v.slice_ns = self.slices.get(&pi).copied().unwrap_or(0);
            // The kernel's NUMA balancing hint, as the daemon reads the main thread's
            // `numa_preferred_nid` from `/proc/PID/sched`.
            v.numa = sched
                .numa_preferred_nid(main)
                .map(|node| policy::ProcessNumaStats {
                    preferred_node: Some(node),
                    ..Default::default()
                });
            out.push(v);
        }
        self.homes.retain(|pi, _| k.procs[*pi].threads_alive > 0);
        self.slices.retain(|pi, _| k.procs[*pi].threads_alive > 0);
        (out, seen)
    }

    fn apply(&mut self, k: &mut Kernel, a: &Action) {
        let Some(pi) = k.procs.iter().position(|p| p.pid as u32 == a.pid()) else {
            return;
        };
        let p = &k.procs[pi];
        if p.threads_alive == 0 || k.tasks[p.threads[0]].created != a.start_time() {
            return;
        }
        let live = live_threads(k, p);
        match a {
            Action::SetHome { nodes, cpus, .. } => {
                self.stats.set_home += 1;
                for &t in &live {
                    k.set_affinity(t, cpus);
                    k.set_home_node(t, nodes.first().copied());
                }
                self.homes.insert(pi, nodes.clone());
            }
            Action::ClearHome { .. } => {
                self.stats.clear_home += 1;
                let original = self
                    .original
                    .get(&pi)
                    .cloned()
                    .unwrap_or_else(|| k.topo.all_cpus());
                for &t in &live {
                    k.set_affinity(t, &original);
                    k.set_home_node(t, None);
                }
                self.homes.remove(&pi);
            }
            Action::SetSlice { slice_ns, .. } => {
                self.stats.set_slice += 1;
                for &t in &live {
                    k.set_slice_resetting_on_fork(t, *slice_ns);
                }
                if *slice_ns == 0 {
                    self.slices.remove(&pi);
                } else {
                    self.slices.insert(pi, *slice_ns);
                }
            }
            Action::MoveMemory {
                from, to, bytes, ..
            } => {
                self.stats.moves += 1;
                // Charge a thread that is not asleep if there is one (its next work waits).
                let charge = live
                    .iter()
                    .copied()
                    .find(|&t| matches!(k.tasks[t].state, TaskState::Running | TaskState::Runnable))
                    .or(live.first().copied());
                let moved = k.migrate_memory(pi, *from, *to, *bytes, charge);
                self.stats.bytes_moved += moved;
            }
        }
    }
}

/// Per node: free memory now and idle CPUs over the `interval` since the busy times `prev`;
/// and the busy times now.
fn nodes(k: &Kernel, prev: &[Ns], interval: Ns) -> (Vec<NodeView>, Vec<Ns>) {
    let busy: Vec<Ns> = k.rqs.iter().map(|r| r.busy_ns).collect();
    let views = (0..k.topo.nr_nodes())
        .map(|x| {
            let cpus = k.topo.node_cpus(x);
            let busy_ns: f64 = cpus
                .iter()
                .map(|c| busy[c].saturating_sub(prev.get(c).copied().unwrap_or(0)) as f64)
                .sum();
            let n = cpus.count() as f64;
            NodeView {
                free_bytes: k.mem.capacity[x].saturating_sub(k.mem.used[x]),
                cpu_idle: (n - busy_ns / interval as f64).clamp(0.0, n),
                numa: None,
            }
        })
        .collect();
    (views, busy)
}

/// The threads of process `p` that have not exited, in creation order.
fn live_threads(k: &Kernel, p: &Process) -> Vec<TaskId> {
    p.threads
        .iter()
        .copied()
        .filter(|&t| k.tasks[t].exited.is_none())
        .collect()
}

fn majority_node(k: &Kernel, tasks: &[TaskId]) -> Option<NodeId> {
    let mut count = vec![0u32; k.topo.nr_nodes()];
    for &t in tasks {
        count[k.node_of(k.tasks[t].cpu)] += 1;
    }
    count
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
        .map(|(i, _)| i)
}
