//! The pooling balancer of Erich Focht's NUMA patches for 2.5 (October 2002), under the
//! schedulers D (`pool`), E and F (`node-affine-*`). Facts from the patches' `sched.c`
//! (docs/model/kernel.md lists each with its source).
//!
//! One balancing pass (`load_balance`, every 200 ms on a busy CPU, every 1 ms on an idle one,
//! at once when a CPU goes idle) moves at most one task:
//!
//! 1. *Own pool.* The CPU's load is its runqueue length (for a busy pass the larger of now
//!    and the previous pass, for the other queues the smaller, as in 2.5). If the most loaded
//!    CPU of its own node is another one and the two are not balanced
//!    (`CPUS_BALANCED(m, t)`: `m <= 1` or `(m - t) / 2 < ((m + t) / 2 + 3) / 4`), that CPU is
//!    the source.
//! 2. *Other pools.* Otherwise each other node's load is 100 x its tasks per CPU; under the
//!    node-affine patch every task on a remote runqueue whose homenode is this CPU's node
//!    counts once more (`home_bonus`). The most loaded node is a candidate only if it holds
//!    more than one task per CPU and half a task per CPU more than this node. The CPU then
//!    waits: `pool_delay_busy` (20 ms) when its own node is within half a task per CPU of the
//!    machine's average, `pool_delay_idle` (1 ms) when it is below that; the wait restarts
//!    whenever the most loaded node changes. After the wait it takes that node's most loaded
//!    CPU, if the two CPUs are not balanced.
//! 3. *Which task.* Of the source's waiting tasks that may move (not cache hot, affinity), the
//!    coolest: weight = ticks since it last ran / `cache_decay_ticks`. The node-affine patch
//!    caps that at 99, adds 100 for a task whose homenode is this CPU's node and subtracts 100
//!    for one whose homenode is the source's node, so a task is never taken away from its
//!    homenode. Only a weight above 0 is taken.
//! 4. *Push home* (node-affine only). When no source was found and the CPU runs just one task
//!    whose homenode is another node, that task is pushed to the first CPU of its homenode
//!    that holds no task of that homenode, if the homenode runs tasks of other nodes.

use crate::fastdiv::Divisor;
use crate::kernel::{Kernel, Refusal, TaskId};
use crate::time::Ns;
use topo::{CpuId, CpuSet, NodeId};

/// Pool loads are in hundredths of a task per CPU (`BALANCE_FACTOR`).
const BALANCE_FACTOR: usize = 100;
/// Two pools are balanced when their loads differ by less than half a task per CPU.
const POOLS_BALANCED: usize = 50;
/// The node-affine patch's `MAX_CACHE_WEIGHT`.
const MAX_CACHE_WEIGHT: i64 = 100;

/// `CPUS_BALANCED(m, t)` of the pooling patch, integer arithmetic as there: `m <= 1` or
/// `(m - t) / 2 < ((m + t) / 2 + 3) / 4`, about 25% of the pair's average. Written with
/// `imbalance_pct` (125 gives the patch's macro exactly) so that option keeps its meaning.
pub fn cpus_balanced(m: usize, t: usize, imbalance_pct: u32) -> bool {
    let pct = imbalance_pct.max(100) as usize - 100;
    m <= 1 || (m.saturating_sub(t)) / 2 < ((m + t) / 2 * pct + 75) / 100
}

/// What the node-affine flavours add to the pooling balancer.
pub struct Homes<'a> {
    /// The homenode of a task.
    pub home: &'a dyn Fn(&Kernel, TaskId) -> Option<NodeId>,
    /// Load added to a remote runqueue per task on it homed on the balancing CPU's node.
    pub bonus: usize,
    /// A task's home depends only on its process's memory (`node-affine-dynamic`); otherwise
    /// it is the task's `home_node` (`node-affine-static`), which changes only through
    /// [`Kernel::set_home_node`]. Either way the count of a runqueue's tasks per home stays
    /// valid while its tasks and the machine's memory placement (or the homes) stay the same,
    /// so it is counted once, not once per balancing CPU.
    pub by_memory: bool,
}

/// Per CPU: how many of its tasks (running or waiting) each node is home to, and what it
/// was counted for (the runqueue's membership changes, its current task, the homes' version
/// as [`homes_version`]).
#[derive(Clone, Debug, Default)]
struct HomedCount {
    stamp: Option<(u64, Option<TaskId>, u64)>,
    per_node: Vec<usize>,
}

/// A pool's load as one pass sees it.
#[derive(Clone, Copy, Debug)]
struct PoolLoad {
    /// 100 x tasks per CPU.
    load: usize,
    /// Its most loaded CPU (first in CPU order on ties) and that CPU's load.
    busiest: Option<(CpuId, usize)>,
}

/// What one CPU last counted over one pool: the pool's load as it would count it again while
/// nothing changed, and what it was counted for.
#[derive(Clone, Copy, Debug)]
struct PoolSeen {
    /// The sum of the pool's nodes' [`Kernel::node_rq_changes`], and the version of what the
    /// homes depend on (the memory's for [`Homes::by_memory`], else the homes' own; 0
    /// without homes).
    stamp: (u64, u64),
    /// Every CPU's current length in place of its smoothed one.
    steady: PoolLoad,
}

/// A steal that found nothing to take, and how long it would find the same: while the source's
/// waiting list, the homes and the affinities stay as they were and until the first task it
/// refused as cache hot cools down, a steal from there refuses the same tasks and finds no
/// other one worth taking (each was taken off its homenode, which the node-affine weight
/// never does).
#[derive(Clone, Copy, Debug)]
struct FailedSteal {
    src: CpuId,
    /// The source's [`crate::kernel::RunList::changes`], the homes' version (as
    /// [`PoolSeen::stamp`]) and [`Kernel::affinity_changes`].
    stamp: (u64, u64, u64),
    /// It holds while the clock is before this.
    until: Ns,
    /// The refusals it counted, by [`Refusal`].
    refused: [u64; 3],
}

/// What one pass sees of the loads ([`PoolBalancer::view`]).
#[derive(Clone, Copy, Debug)]
struct PassView {
    /// The CPU's own length as the pass counts it.
    nr: usize,
    /// The most loaded other CPU of its own pool, when the two are not balanced.
    local: Option<CpuId>,
    /// Without a local source and with other pools: the one to wait on, if any.
    remote: Option<Option<Remote>>,
}

/// The most loaded other pool, worth waiting on (`scan_other_pools`).
#[derive(Clone, Copy, Debug)]
struct Remote {
    pool: usize,
    /// Its most loaded CPU and that CPU's load.
    busiest: (CpuId, usize),
    /// How long to wait on it before taking from it.
    delay: Ns,
}

/// An idle CPU's passes skipped by the kernel ([`PoolBalancer::idle_quiet`]): the steal they
/// would try and what that steal refuses each time. The view they share is the CPU's
/// `last_view`, which no pass replaces while the CPU is quiet.
#[derive(Clone, Copy, Debug)]
struct QuietPasses {
    steal: Option<CpuId>,
    refused: [u64; 3],
}

/// The pooling balancer's state for every CPU.
#[derive(Clone, Debug)]
pub struct PoolBalancer {
    /// `prev_nr_running[this][cpu]`.
    prev_nr: Vec<Vec<u32>>,
    /// The most loaded remote node this CPU is waiting on, and since when.
    wait: Vec<Option<(NodeId, Ns)>>,
    pools: Vec<CpuSet>,
    /// The number of CPUs of each pool, and the same as a divisor (at least 1).
    pool_len: Vec<usize>,
    pool_cpus: Vec<Divisor>,
    /// The pool of each CPU.
    pool_of: Vec<usize>,
    pub delay_idle: Ns,
    pub delay_busy: Ns,
    /// `cache_decay_ticks`, in ns.
    decay: Ns,
    imbalance_pct: u32,
    /// Most tasks one pass moves (the patch: 1).
    max_pull: usize,
    /// Per CPU, its tasks per home.
    homed: Vec<HomedCount>,
    /// The nodes with CPUs in each pool (their runqueue change counts cover the pool's).
    pool_nodes: Vec<Vec<NodeId>>,
    /// `seen[this * pools + pool]`: what `this` counted over `pool` on its last pass over it.
    seen: Vec<Option<PoolSeen>>,
    /// Per CPU, its last steal if it found nothing and would find the same for a while.
    failed: Vec<Option<FailedSteal>>,
    /// Per CPU, its last pass's view and when it ran, if that pass was idle and moved
    /// nothing.
    last_view: Vec<Option<(Ns, PassView)>>,
    /// Per CPU, the idle passes the kernel is skipping.
    quiet: Vec<Option<QuietPasses>>,
}

impl PoolBalancer {
    /// `cache_decay` is the kernel's hot time, `(cache_decay_ticks + 1)` ticks of `tick`.
    pub fn new(
        topo: &topo::Topology,
        pools: Vec<CpuSet>,
        delays: (Ns, Ns),
        p: &super::o1::O1Params,
    ) -> Self {
        let (delay_idle, delay_busy) = delays;
        let tick = p.kernel.tick;
        let n = pools
            .iter()
            .map(|p| p.iter().map(|c| c + 1).max().unwrap_or(0))
            .max()
            .unwrap_or(0);
        let mut pool_of = vec![0; n];
        for (i, p) in pools.iter().enumerate() {
            for c in p.iter() {
                pool_of[c] = i;
            }
        }
        let pool_nodes = pools
            .iter()
            .map(|p| {
                (0..topo.nr_nodes())
                    .filter(|&node| topo.node_cpus(node).intersects(p))
                    .collect()
            })
            .collect();
        PoolBalancer {
            seen: vec![None; n * pools.len()],
            failed: vec![None; n],
            last_view: vec![None; n],
            quiet: vec![None; n],
            pool_nodes,
            prev_nr: vec![vec![0; n]; n],
            pool_len: pools.iter().map(CpuSet::count).collect(),
            pool_cpus: pools
                .iter()
                .map(|p| Divisor::new(p.count() as u64))
                .collect(),
            wait: vec![None; n],
            pools,
            pool_of,
            delay_idle,
            delay_busy,
            decay: p.kernel.cache_decay.saturating_sub(tick).max(tick.max(1)),
            imbalance_pct: p.imbalance_pct,
            max_pull: p.max_pull.max(1),
            homed: vec![HomedCount::default(); n],
        }
    }

    /// One pass on `cpu`; returns the number of tasks moved (0 or 1).
    pub fn balance(
        &mut self,
        k: &mut Kernel,
        cpu: CpuId,
        idle: bool,
        homes: Option<&Homes>,
    ) -> usize {
        let view = self.view(k, cpu, idle, homes);
        let source = self.source(cpu, &view, k.now);
        let moved = match source {
            Some(src) if k.nr_running(src) > view.nr + 1 => {
                let mut moved = 0;
                while moved < self.max_pull && self.steal_one(k, cpu, src, homes) {
                    moved += 1;
                }
                moved
            }
            Some(_) => 0,
            None => homes.map_or(0, |h| push_home(k, cpu, view.nr, h)),
        };
        // Only an idle pass that moved nothing (and so changed nothing the passes read) can
        // be repeated by skipped ones.
        self.last_view[cpu] = (idle && moved == 0).then_some((k.now, view));
        moved
    }

    /// What a pass of `cpu` sees of the loads: its own length, a source in its own pool, else
    /// the remote pool worth waiting on.
    fn view(&mut self, k: &Kernel, cpu: CpuId, idle: bool, homes: Option<&Homes>) -> PassView {
        let own = k.nr_running(cpu);
        let prev_own = self.prev_nr[cpu][cpu] as usize;
        let nr = if idle || own > prev_own {
            own
        } else {
            prev_own
        };
        let pool = self.pool_of[cpu];
        let mine = self.pool_load(k, cpu, pool, idle, None);
        let local = mine
            .busiest
            .filter(|&(best, max)| best != cpu && !cpus_balanced(max, nr, self.imbalance_pct))
            .map(|(best, _)| best);
        let remote = if local.is_none() && self.pools.len() > 1 {
            Some(self.remote_candidate(k, cpu, mine.load, idle, homes))
        } else {
            None
        };
        PassView { nr, local, remote }
    }

    /// The CPU a pass with `view` at `now` takes from (before the length check), stepping the
    /// CPU's wait for a remote pool (`scan_other_pools`' delay); a source ends the wait.
    fn source(&mut self, this: CpuId, view: &PassView, now: Ns) -> Option<CpuId> {
        let source = match (view.local, view.remote) {
            (Some(best), _) => Some(best),
            (None, None) => None,
            (None, Some(None)) => {
                self.wait[this] = None;
                None
            }
            (None, Some(Some(r))) => match self.wait[this] {
                Some((node, since)) if node == r.pool => (now - since >= r.delay
                    && !cpus_balanced(r.busiest.1, view.nr, self.imbalance_pct))
                .then_some(r.busiest.0),
                _ => {
                    self.wait[this] = Some((r.pool, now));
                    None
                }
            },
        };
        if source.is_some() {
            self.wait[this] = None;
        }
        source
    }

    /// After an idle pass of `cpu` at this instant that moved nothing
    /// ([`crate::kernel::CpuScheduler::idle_quiet`]): while the balance inputs stay the same, so
    /// do its view (every pool's load is the one it just counted: an idle pass uses the
    /// current lengths) and so the source it would try; a steal from there must be one that
    /// [`PoolBalancer::steal_one`] remembers as failing, and the time until which it does
    /// bounds the promise. The passes then differ only in the wait for a remote pool, which
    /// [`PoolBalancer::replay_quiet`] steps as they would.
    pub fn idle_quiet(&mut self, k: &Kernel, cpu: CpuId, homes: Option<&Homes>) -> Option<Ns> {
        let (at, view) = self.last_view[cpu]?;
        if at != k.now {
            return None;
        }
        let candidate = match (view.local, view.remote) {
            (Some(best), _) => Some(best),
            (None, Some(Some(r))) if !cpus_balanced(r.busiest.1, view.nr, self.imbalance_pct) => {
                Some(r.busiest.0)
            }
            _ => None,
        };
        let steal = candidate.filter(|&src| k.nr_running(src) > view.nr + 1);
        let (until, refused) = match steal {
            None => (Ns::MAX, [0; 3]),
            Some(src) => {
                let f = self.failed[cpu]?;
                if f.src != src || f.stamp != steal_stamp(k, src, homes) || k.now >= f.until {
                    return None;
                }
                (f.until, f.refused)
            }
        };
        self.quiet[cpu] = Some(QuietPasses { steal, refused });
        Some(until)
    }

    /// The `n` idle passes of `cpu` at `first`, `first + every`, ... skipped after
    /// [`PoolBalancer::idle_quiet`]: each steps the wait as [`PoolBalancer::source`] does and,
    /// when it would try the remembered steal, counts its refusals again.
    pub fn replay_quiet(&mut self, k: &mut Kernel, cpu: CpuId, first: Ns, every: Ns, n: u64) {
        let (Some(q), Some((_, view))) = (self.quiet[cpu].take(), self.last_view[cpu]) else {
            debug_assert!(false, "CPU {cpu} replayed without a promise");
            return;
        };
        for i in 0..n {
            let src = self.source(cpu, &view, first + i * every);
            if src.is_some() && src == q.steal {
                for r in Refusal::ALL {
                    k.counters.refused[r as usize] += q.refused[r as usize];
                }
            }
        }
    }

    /// `scan_other_pools` up to its wait: the most loaded other pool and its most loaded CPU,
    /// and how long to wait on it; `None` when no pool is loaded enough to wait on.
    fn remote_candidate(
        &mut self,
        k: &Kernel,
        this: CpuId,
        this_load: usize,
        idle: bool,
        homes: Option<&Homes>,
    ) -> Option<Remote> {
        let n = self.pools.len();
        let this_pool = self.pool_of[this];
        let (mut max_load, mut max_pool, mut best) = (this_load, this_pool, None);
        let mut weighted = this_load * self.pool_len[this_pool];
        for i in 1..n {
            // (this_pool + i) % n, both below n.
            let pool = if this_pool + i >= n {
                this_pool + i - n
            } else {
                this_pool + i
            };
            if self.pool_len[pool] == 0 {
                continue;
            }
            let p = self.pool_load(k, this, pool, idle, homes);
            weighted += p.load * self.pool_len[pool];
            if p.load > max_load {
                (max_load, max_pool, best) = (p.load, pool, p.busiest);
            }
        }
        let busiest = best?;
        if max_load <= BALANCE_FACTOR || max_load - this_load < POOLS_BALANCED {
            return None;
        }
        let avg = weighted / k.topo.nr_cpus().max(1);
        let delay = if avg.saturating_sub(this_load) < POOLS_BALANCED {
            self.delay_busy
        } else {
            self.delay_idle
        };
        Some(Remote {
            pool: max_pool,
            busiest,
            delay,
        })
    }

    /// `calc_pool_load`: pool `pool` as `this` sees it; with `homes` (pools are nodes then),
    /// tasks homed on `this`'s node add the bonus.
    ///
    /// A pass over the pool leaves `this`'s previous length of each of its CPUs at the
    /// current one. So while no runqueue of the pool changed and the homes did not either
    /// since `this`'s last pass over it, every CPU's smoothed length is its current one (the
    /// smaller of two equal lengths, busy or idle), remembering it changes nothing, and the
    /// pool's load is what that pass counted with the current lengths: it is taken from there.
    fn pool_load(
        &mut self,
        k: &Kernel,
        this: CpuId,
        pool: NodeId,
        idle: bool,
        homes: Option<&Homes>,
    ) -> PoolLoad {
        let rq_changes = self.pool_nodes[pool]
            .iter()
            .map(|&node| k.node_rq_changes(node))
            .sum::<u64>();
        let stamp = (rq_changes, homes_version(k, homes));
        let slot = this * self.pools.len() + pool;
        if let Some(seen) = self.seen[slot] {
            if seen.stamp == stamp {
                return seen.steady;
            }
        }
        let this_node = k.node_of(this);
        let prev = &mut self.prev_nr[this];
        let (mut total, mut busiest) = (0usize, None::<(CpuId, usize)>);
        let (mut steady_total, mut steady_busiest) = (0usize, None::<(CpuId, usize)>);
        for c in self.pools[pool].iter() {
            let now = k.nr_running(c);
            let mut load = smoothed_load(prev, now, c, idle);
            let mut steady = now;
            if let Some(h) = homes {
                let bonus = h.bonus * homed_count(&mut self.homed, k, c, this_node, h);
                load += bonus;
                steady += bonus;
            }
            total += load;
            if busiest.is_none_or(|(_, m)| load > m) {
                busiest = Some((c, load));
            }
            steady_total += steady;
            if steady_busiest.is_none_or(|(_, m)| steady > m) {
                steady_busiest = Some((c, steady));
            }
        }
        let div = &self.pool_cpus[pool];
        self.seen[slot] = Some(PoolSeen {
            stamp,
            steady: PoolLoad {
                load: div.divide((steady_total * BALANCE_FACTOR) as u64) as usize,
                busiest: steady_busiest,
            },
        });
        PoolLoad {
            load: div.divide((total * BALANCE_FACTOR) as u64) as usize,
            busiest,
        }
    }

    /// `task_to_steal` and `pull_task`: move the coolest movable waiting task of `src`.
    ///
    /// A steal that takes nothing is remembered ([`FailedSteal`]) when every task it
    /// weighed is homed on the source's node (not this one), whose weight stays below 1
    /// however cool it gets; the same steal again counts the same refusals without walking
    /// the queue.
    fn steal_one(
        &mut self,
        k: &mut Kernel,
        this: CpuId,
        src: CpuId,
        homes: Option<&Homes>,
    ) -> bool {
        let stamp = steal_stamp(k, src, homes);
        if let Some(f) = self.failed[this] {
            if f.src == src && f.stamp == stamp && k.now < f.until {
                for r in Refusal::ALL {
                    k.counters.refused[r as usize] += f.refused[r as usize];
                }
                return false;
            }
        }
        let (this_node, src_node) = (k.node_of(this), k.node_of(src));
        let mut best: Option<(i64, TaskId)> = None;
        // How long the same steal takes nothing again (Ns::MAX: as long as nothing changes;
        // now: no promise), and what it refused.
        let mut until = Ns::MAX;
        let mut refused = [0u64; 3];
        for t in super::balance::pull_order(k, src) {
            if let Err(r) = k.can_migrate(t, this, false) {
                k.counters.refuse(r);
                refused[r as usize] += 1;
                until = match r {
                    // It cools down then (it cannot run while it waits).
                    Refusal::CacheHot => {
                        until.min(k.tasks[t].last_ran.saturating_add(k.params.cache_decay))
                    }
                    Refusal::Affinity => until,
                    Refusal::Running => k.now,
                };
                continue;
            }
            let cool = k.now.saturating_sub(k.tasks[t].last_ran) / self.decay;
            let home = homes.map(|h| (h.home)(k, t));
            let w = steal_weight(cool, home, this_node, src_node);
            if w > best.map_or(0, |(m, _)| m) {
                best = Some((w, t));
            }
            if home != Some(Some(src_node)) || src_node == this_node {
                // Its weight may grow above 0 as it cools.
                until = k.now;
            }
        }
        let Some((_, t)) = best else {
            self.failed[this] = (k.now < until).then_some(FailedSteal {
                src,
                stamp,
                until,
                refused,
            });
            return false;
        };
        k.migrate_queued(t, this);
        true
    }
}

/// What a steal from `src` depends on besides the clock ([`FailedSteal::stamp`]).
fn steal_stamp(k: &Kernel, src: CpuId, homes: Option<&Homes>) -> (u64, u64, u64) {
    (
        k.rqs[src].queue.changes(),
        homes_version(k, homes),
        k.affinity_changes(),
    )
}

/// The version of what the homes depend on: the memory's when they follow it, else the homes'
/// own; 0 without homes.
fn homes_version(k: &Kernel, homes: Option<&Homes>) -> u64 {
    homes.map_or(0, |h| {
        if h.by_memory {
            k.mem.version()
        } else {
            k.home_changes()
        }
    })
}

/// The load of `c`, whose length is `now`, as a CPU whose previous lengths are `prev` sees it:
/// the smaller of now and the previous pass (the current length when idle), remembering the
/// length for next time.
fn smoothed_load(prev: &mut [u32], now: usize, c: CpuId, idle: bool) -> usize {
    let before = prev[c] as usize;
    prev[c] = now as u32;
    if idle || now < before { now } else { before }
}

/// `task_to_steal`'s weight of a movable task: the `cool` periods of `cache_decay_ticks`
/// since it last ran; under the node-affine patch (`home` is Some) capped at 99, plus 100 if
/// its homenode is the stealing CPU's node, minus 100 if it is the source's node.
pub fn steal_weight(cool: u64, home: Option<Option<NodeId>>, this: NodeId, src: NodeId) -> i64 {
    let cool = i64::try_from(cool).unwrap_or(i64::MAX);
    let Some(home) = home else {
        return cool;
    };
    let mut w = cool.min(MAX_CACHE_WEIGHT - 1);
    if home == Some(this) {
        w += MAX_CACHE_WEIGHT;
    }
    if home == Some(src) {
        w -= MAX_CACHE_WEIGHT;
    }
    w
}

/// [`homed_on`], from `cache` when nothing the homes depend on changed since it was counted.
fn homed_count(cache: &mut [HomedCount], k: &Kernel, cpu: CpuId, node: NodeId, h: &Homes) -> usize {
    let rq = &k.rqs[cpu];
    let stamp = (rq.queue.changes(), rq.curr, homes_version(k, Some(h)));
    let c = &mut cache[cpu];
    if c.stamp != Some(stamp) {
        c.per_node.clear();
        c.per_node.resize(k.topo.nr_nodes(), 0);
        for t in rq.curr.into_iter().chain(rq.queue.iter()) {
            if let Some(n) = (h.home)(k, t) {
                c.per_node[n] += 1;
            }
        }
        c.stamp = Some(stamp);
    }
    c.per_node[node]
}

/// Tasks on `cpu` (running or waiting) whose homenode is `node` (`nr_homenode`).
fn homed_on(k: &Kernel, cpu: CpuId, node: NodeId, h: &Homes) -> usize {
    let rq = &k.rqs[cpu];
    rq.curr
        .into_iter()
        .chain(rq.queue.iter())
        .filter(|&t| (h.home)(k, t) == Some(node))
        .count()
}

/// `try_push_home`: a lone task away from its homenode goes back to a CPU there that holds
/// none of that node's tasks, when the homenode runs other nodes' tasks.
fn push_home(k: &mut Kernel, cpu: CpuId, nr: usize, h: &Homes) -> usize {
    let Some(t) = k.rqs[cpu].curr else {
        return 0;
    };
    let Some(home) = (h.home)(k, t) else {
        return 0;
    };
    if nr != 1 || home == k.node_of(cpu) {
        return 0;
    }
    let (mut homed, mut total, mut target) = (0, 0, None);
    for c in k.topo.node_cpus(home).iter() {
        let own = homed_on(k, c, home, h);
        homed += own;
        total += k.nr_running(c);
        if own == 0 && target.is_none() && k.tasks[t].affinity.contains(c) {
            target = Some(c);
        }
    }
    match target {
        Some(dst) if total > homed => {
            k.move_task(t, dst);
            1
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::{cpus_balanced, steal_weight};

    #[test]
    fn steal_weights_are_the_patch_rules() {
        // The pooling scheduler: coolness alone, uncapped.
        assert_eq!(steal_weight(250, None, 1, 0), 250);
        // Node-affine: capped at 99; +100 for a task homed on the thief's node.
        assert_eq!(steal_weight(250, Some(None), 1, 0), 99);
        assert_eq!(steal_weight(3, Some(Some(1)), 1, 0), 103);
        // A task at its homenode loses 100: never above 0, so never taken away from there.
        for cool in [0, 1, 50, 99, 1000] {
            assert!(steal_weight(cool, Some(Some(0)), 1, 0) <= 0);
        }
        // Within its homenode the two cancel: coolness decides.
        assert_eq!(steal_weight(7, Some(Some(0)), 0, 0), 7);
        // A task of a third node is taken by coolness.
        assert_eq!(steal_weight(7, Some(Some(2)), 1, 0), 7);
    }

    #[test]
    #[allow(clippy::manual_div_ceil)] // the macro as the patch writes it
    fn cpus_balanced_is_the_patch_macro() {
        // One task cannot be stolen; two against none can.
        let patch = |m: usize, t: usize| m <= 1 || (m - t.min(m)) / 2 < ((m + t) / 2 + 3) / 4;
        for m in 0..40 {
            for t in 0..40 {
                assert_eq!(cpus_balanced(m, t, 125), patch(m, t), "m={m} t={t}");
            }
        }
        // One task cannot be stolen; two against none can.
        assert!(cpus_balanced(1, 0, 125));
        assert!(!cpus_balanced(2, 0, 125));
        // (9 - 5) / 2 = 2 against ((9 + 5) / 2 + 3) / 4 = 2: not below, so imbalanced.
        assert!(!cpus_balanced(9, 5, 125));
        assert!(cpus_balanced(9, 6, 125));
    }
}
