//! Tasks (threads) and processes (address spaces) as the kernel model sees them.

use super::cost::LinearOp;
use crate::memory::Region;
use crate::time::Ns;
use std::cell::Cell;
use topo::{CpuId, CpuSet, NodeId};

pub type TaskId = usize;
pub type Pid = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// On a runqueue, waiting for its CPU.
    Runnable,
    /// Current task of its CPU.
    Running,
    /// Sleeping until a timer (I/O, sleep).
    Sleeping,
    /// Blocked on a channel or on its children.
    Blocked,
    Exited,
}

/// What kind of CPU time the current phase consumes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PhaseWork {
    /// No phase in progress.
    None,
    /// Cycles of in-cache work, user or kernel mode.
    Cycles { user: bool },
    /// Operations of a `Memory` phase (user mode).
    MemOps,
    /// Bytes of a `Touch` phase: faults (kernel) and writes (user).
    /// `end`: the byte offset of the region at which the phase is done.
    Touch { region: usize, end: u64 },
    /// Messages of a `Recv` phase being read (kernel mode).
    RecvMsgs { msgs: u32 },
}

/// One schedulable thread.
#[derive(Clone, Debug)]
pub struct Task {
    pub id: TaskId,
    pub pid: Pid,
    pub program: usize,
    pub state: TaskState,
    /// CPU it runs or waits on, or last ran on.
    pub cpu: CpuId,
    pub affinity: CpuSet,
    /// Node-affine schedulers: the node this task belongs to.
    pub home_node: Option<NodeId>,
    /// Program counter (index of the current phase).
    pub pc: usize,
    /// Open loops: (index of the Loop phase, iterations left after this one).
    pub loops: Vec<(usize, u32)>,
    pub work: PhaseWork,
    /// Units of the current phase still to do (cycles, ops or bytes).
    pub work_left: f64,
    /// Progress rate while running, units per ns.
    pub rate: f64,
    /// Fraction of running time charged as user time (rest is system time).
    pub user_frac: f64,
    /// Cold-cache refill still to pay after a move to another cache (ns of stall).
    pub cold_ns: f64,
    /// Kernel work charged to the task still to run before its own work resumes (page
    /// migration done on its behalf), ns of system time.
    pub kernel_ns: f64,
    pub last_settle: Ns,
    /// Messages still to receive in the current `Recv` phase.
    pub recv_left: u32,
    pub user_ns: f64,
    pub sys_ns: f64,
    /// User time per node (read with [`Task::node_user_ns`]).
    pub(crate) node_user: NodeUserTime,
    pub created: Ns,
    /// Time spent runnable on a runqueue but not running, ns: Linux's `sched_info.run_delay`
    /// (`/proc/PID/schedstat`'s second field), as the placement observer reads it.
    pub run_delay_ns: Ns,
    /// Since when it has waited on a runqueue (set at enqueue, cleared when it is picked).
    pub queued_at: Option<Ns>,
    pub exited: Option<Ns>,
    /// CPU it first ran on (the numa_test "iSched").
    pub first_cpu: Option<CpuId>,
    /// When it last stopped running (cache-hot test).
    pub last_ran: Ns,
    /// Made by exec (or launched, which a shell does by exec): it ran to call exec before
    /// its creation here, so it has run even before it is first picked (`first_cpu`). A child
    /// of a plain fork or clone has not run until then. CFS and EEVDF start a new task's
    /// `se.exec_start` at 0 (`__sched_fork`), so `task_hot` never counts such a child hot;
    /// the O(1) bases stamp it at fork (`p->sleep_timestamp = jiffies` in 2.5's `do_fork`).
    pub from_exec: bool,
    /// LLC whose cache holds its working set, if any.
    pub last_llc: Option<usize>,
    /// When the task last left a CPU of that LLC: the LLC's count of bytes touched
    /// ([`super::Kernel`]'s `llc_touched`) and its process's own ([`Process::touched`]).
    /// What others touched since then is newer than its lines and evicts them.
    pub llc_mark: f64,
    pub proc_mark: f64,
    /// Distinct bytes touched in the current run (at most its footprint).
    pub run_touched: f64,
    /// Its last runs on `last_llc` and the others' bytes between them: what of its lines
    /// that cache still holds ([`super::cost::TurnHistory`]).
    pub turns: super::cost::TurnHistory,
    /// CPU it last ran on (2.4's `p->processor`, for `PROC_CHANGE_PENALTY`).
    pub last_cpu: Option<CpuId>,
    /// Round of its CPU's runqueue when it last left the CPU (2.4 base: the counter
    /// recalculations a sleeper missed).
    pub left_round: u64,
    /// O(1)-style interactivity estimate: sleep time credit, ns.
    pub sleep_avg: Ns,
    pub sleep_since: Ns,
    /// Time slice left, ns.
    pub slice_left: Ns,
    /// Runqueue ordering key: (round, priority, sequence), or (deadline or vruntime, 0,
    /// sequence) under the fair class.
    pub rq_key: (u64, i32, u64),
    /// Fair class: load weight from the nice value, virtual runtime, virtual deadline
    /// (EEVDF), lag kept while off a runqueue (EEVDF: `V - vruntime`; CFS: `vruntime -
    /// min_vruntime`), and slice protection since the last pick (`RUN_TO_PARITY`).
    pub weight: u64,
    pub vruntime: u64,
    pub deadline: u64,
    pub vlag: i64,
    pub protect: bool,
    /// EEVDF: the task's own request size (`sched_attr.sched_runtime`, Linux 6.12 and later;
    /// `se.custom_slice`), 0 for the base slice; and, when it ran with a shorter protection
    /// than its slice (a queued task asked for less), the virtual time that protection ends
    /// (`se->vprot` below the deadline).
    pub slice_req: Ns,
    /// `SCHED_FLAG_RESET_ON_FORK` with the slice: a thread or child it creates starts with
    /// the base slice (the homenode daemon sets it with every slice it gives).
    pub slice_reset_on_fork: bool,
    pub vprot_short: Option<u64>,
    /// Placed on a runqueue at least once (the first placement is a new task's).
    pub placed: bool,
    /// PELT signals (fair class), what they were last updated for, and the runqueue they
    /// count on.
    pub pelt: super::pelt::Pelt,
    pub pelt_runnable: bool,
    pub pelt_running: bool,
    pub pelt_cpu: Option<topo::CpuId>,
    pub parent: Option<TaskId>,
    pub children_alive: u32,
    pub waiting_children: bool,
    /// Reported as a job (numa_test worker).
    pub job: bool,
    /// Moves to another CPU (balancing or placement).
    pub migrations: u32,
    /// Moves to another node.
    pub node_migrations: u32,
    /// Bytes of its process's memory per node when it exited.
    pub mem_at_exit: Vec<u64>,
    /// Cost decomposition of its current `Memory` phase, valid for the key it records.
    /// Boxed: most tasks never run a memory phase, and a decomposition inline (about 220
    /// bytes) made every task's state that much larger, and the message passers' switches
    /// slower.
    pub op_cache: Option<Box<OpCache>>,
}

/// A task's user time per node, ns. `settle` adds to the entry of the task's node at every
/// switch, and a task nearly always stays on its node: that entry's running sum is kept
/// beside the vector ([`NodeUserTime::on`]), in the task's own lines, and written back only
/// when the task runs on another node, so that the vector, a heap block of its own, is not
/// read at every switch. The additions are the same, in the same order, as to a plain
/// vector, so the sums have the same bits.
#[derive(Clone, Debug)]
pub struct NodeUserTime {
    /// Per node; out of date for the node of `now`.
    by_node: Vec<f64>,
    /// (node, its sum).
    now: (NodeId, f64),
}

impl NodeUserTime {
    /// No user time yet on any of `nr_nodes` nodes.
    pub fn new(nr_nodes: usize) -> Self {
        NodeUserTime {
            by_node: vec![0.0; nr_nodes],
            now: (0, 0.0),
        }
    }

    /// The sum of `node`, to add to (its running sum, after writing back another node's).
    #[inline]
    pub fn on(&mut self, node: NodeId) -> &mut f64 {
        if self.now.0 != node {
            let (old, ns) = self.now;
            self.by_node[old] = ns;
            self.now = (node, self.by_node[node]);
        }
        &mut self.now.1
    }

    /// Every node's sum.
    pub fn to_vec(&self) -> Vec<f64> {
        let mut v = self.by_node.clone();
        let (node, ns) = self.now;
        v[node] = ns;
        v
    }
}

/// A task's [`LinearOp`] with what it was computed for.
#[derive(Clone, Debug, Default)]
pub struct OpCache {
    pub pc: usize,
    pub node: NodeId,
    pub share_bits: u64,
    pub mem_version: u64,
    pub op: LinearOp,
    /// The memo's key for `pc`, `node` and `mem_version` as last built (its share word is
    /// that build's), empty when it could not be built: a rebuild for another share alone
    /// takes it from here instead of reading the process's regions again.
    pub memo_key: Vec<u64>,
    /// Its last refill after turns on its LLC, kept to be handed out again when it comes back
    /// with the same inputs (a cell: the refill is asked for where the kernel is only read).
    pub refill: std::cell::RefCell<super::cost::RefillMemo>,
}

impl OpCache {
    /// Whether it was computed for phase `pc` on `node` with an LLC share of these bits
    /// and its process's memory at `mem_version`.
    pub fn fits(&self, (pc, node, share_bits, mem_version): (usize, NodeId, u64, u64)) -> bool {
        self.share_bits == share_bits && self.fits_but_share(pc, node, mem_version)
    }

    /// [`OpCache::fits`] but for the LLC share: the same phase, node and memory version.
    pub fn fits_but_share(&self, pc: usize, node: NodeId, mem_version: u64) -> bool {
        self.pc == pc && self.node == node && self.mem_version == mem_version
    }
}

impl Task {
    /// Blocks the task at `now` (it waits on a channel until a peer wakes it).
    #[inline]
    pub(crate) fn block(&mut self, now: Ns) {
        self.state = TaskState::Blocked;
        self.sleep_since = now;
    }

    /// Whether it has run: made by exec, or picked once since its fork.
    pub fn has_run(&self) -> bool {
        self.from_exec || self.first_cpu.is_some()
    }

    /// User time spent on each node, ns.
    pub fn node_user_ns(&self) -> Vec<f64> {
        self.node_user.to_vec()
    }

    /// Run-queue wait up to `now`, including the wait in progress.
    pub fn run_delay_at(&self, now: Ns) -> Ns {
        self.run_delay_ns + self.queued_at.map_or(0, |q| now.saturating_sub(q))
    }

    pub fn is_runnable(&self) -> bool {
        matches!(self.state, TaskState::Runnable | TaskState::Running)
    }
}

/// An address space and its regions.
#[derive(Clone, Debug)]
pub struct Process {
    pub pid: Pid,
    pub program: usize,
    pub regions: Vec<Region>,
    pub threads_alive: u32,
    pub threads: Vec<TaskId>,
    /// Bumped whenever any page group of the process is placed, moved or freed.
    pub mem_version: u64,
    /// [`Process::main_node`] as of a `mem_version`: the node-affine balancers ask it for
    /// every queued task of every pass, and the memory rarely moves between passes.
    pub main_node_memo: Cell<Option<(u64, Option<NodeId>)>>,
    /// `Kernel::memory_latency_ns` of its threads from one node, as of a `mem_version`:
    /// asked at every switch-in of a thread in a memory phase after others' turns on its
    /// cache, while the memory seldom moves. (`mem_version`, node, latency.)
    pub latency_memo: Cell<Option<(u64, NodeId, f64)>>,
    /// Bytes its threads have touched on every LLC, a running count: a thread's own
    /// process does not evict its lines (they share them).
    pub touched: f64,
}

/// Where a process's memory is: on no node yet, all on one node, or on several.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    Nowhere,
    One(NodeId),
    Many,
}

impl Process {
    /// Where its memory is.
    pub fn spread(&self) -> Spread {
        let mut spread = Spread::Nowhere;
        for r in &self.regions {
            for (n, &b) in r.node_bytes.iter().enumerate() {
                spread = match spread {
                    _ if b == 0 => spread,
                    Spread::Nowhere => Spread::One(n),
                    Spread::One(m) if m == n => spread,
                    Spread::One(_) | Spread::Many => Spread::Many,
                };
            }
        }
        spread
    }

    /// Bytes of this process on each node.
    pub fn node_bytes(&self, nr_nodes: usize) -> Vec<u64> {
        let mut v = vec![0u64; nr_nodes];
        for r in &self.regions {
            for (n, b) in r.node_bytes.iter().enumerate() {
                v[n] += b;
            }
        }
        v
    }

    /// The node holding most of this process's memory (ties: lowest id); None before any
    /// memory is placed.
    pub fn main_node(&self, nr_nodes: usize) -> Option<NodeId> {
        if let Some((version, node)) = self.main_node_memo.get() {
            if version == self.mem_version {
                return node;
            }
        }
        let node = self.count_main_node(nr_nodes);
        self.main_node_memo.set(Some((self.mem_version, node)));
        node
    }

    /// [`Process::main_node`] counted from the regions.
    fn count_main_node(&self, nr_nodes: usize) -> Option<NodeId> {
        // No allocation: this runs inside balancing passes.
        let mut best: Option<(NodeId, u64)> = None;
        for n in 0..nr_nodes {
            let b: u64 = self.regions.iter().map(|r| r.node_bytes[n]).sum();
            if b > 0 && best.is_none_or(|(_, m)| b > m) {
                best = Some((n, b));
            }
        }
        best.map(|(n, _)| n)
    }

    /// Total bytes of all regions (allocated or not).
    pub fn footprint(&self) -> u64 {
        self.regions.iter().map(|r| r.bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_user_sums_match_a_plain_vector() {
        // Additions on nodes visited in turn, back and forth, against a vector added to in
        // place: the same bits per node.
        let mut t = NodeUserTime::new(4);
        let mut plain = [0.0f64; 4];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let node = (x % 4) as usize;
            // Mostly the same node, as a task's switches are.
            let node = if x % 5 == 0 { node } else { t.now.0 };
            let ns = (x >> 11) as f64 / (1u64 << 40) as f64;
            *t.on(node) += ns;
            plain[node] += ns;
            let got = t.to_vec();
            for n in 0..4 {
                assert_eq!(got[n].to_bits(), plain[n].to_bits());
            }
        }
    }
}
