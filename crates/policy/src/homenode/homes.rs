//! Step 2, *homes*: significant processes without a valid home get one, largest first (at most
//! `max_new_homes_per_interval` per decision when it is set), each chosen against the model with the homes
//! given before it. A home is, in order of preference:
//!
//! 1. the node holding most of the process's memory, if it has room;
//! 2. else the node with room that scores best by spare CPU and memory, weighted by distance to
//!    the process's memory;
//! 3. else, for a light process, the best node it fits, packed onto one node;
//! 4. else a home *set*: the nodes nearest the best one, added until the process fits.
//!
//! In 1 and 2 only nodes the rebalancer (step 3) would leave balanced compete when there are
//! such, so a first home is never one the rebalancer would undo.
//!
//! The processes homed in one decision are placed as a group: none counts where it ran while
//! they are placed, and those that rule 1 can leave at their memory are placed first.

use topo::{NodeId, Topology};

use super::model::Model;
use super::{Decision, EPS, HomenodePolicy};
use crate::action::Action;
use crate::common::{MIB, Machine, Proc, fmt_bytes, fmt_home, fmt_nodes, nearest_first, pct};
use crate::config::HomenodeConfig;

/// A home and why.
pub(super) struct HomeChoice {
    pub(super) nodes: Vec<NodeId>,
    pub(super) reason: String,
}

impl HomenodePolicy {
    /// Gives homes to significant processes without a valid one: all of them, or the largest
    /// `max_new_homes_per_interval` when it is set, are this decision's candidates.
    ///
    /// While the candidates are placed, none of them counts where it ran: each is about to be
    /// counted at its home instead, so the node where the kernel happened to run two of them
    /// at the scan does not look full to the first (the VM rig's `with-balancing`: four hogs
    /// that the kernel had spread, with their memory, were all homed away from it because two
    /// of them shared a node at the scan). Candidates whose memory node has room get it first
    /// (rule 1, nothing to move), largest first; then the others, largest first, by every
    /// rule. A candidate that gets no home counts where it ran again.
    pub(super) fn new_homes(&mut self, d: &mut Decision<'_, '_>) {
        let topo = d.snap.topo;
        let mut want: Vec<usize> = (0..d.procs.len())
            .filter(|&i| {
                let p = &d.procs[i];
                !p.leave_alone
                    && d.eligible[i]
                    && !d.touched[i]
                    && d.homes[i].is_none()
                    && self.significant(p)
            })
            .collect();
        want.sort_by(|&a, &b| {
            let (pa, pb) = (&d.procs[a], &d.procs[b]);
            pb.runnable()
                .total_cmp(&pa.runnable())
                .then(pb.rss.cmp(&pa.rss))
                .then(pa.pid.cmp(&pb.pid))
        });
        if let Some(cap) = self.cfg.max_new_homes_per_interval {
            want.truncate(cap as usize);
        }
        let mut model = d.model.clone();
        for &i in &want {
            model.apply(topo, &d.procs[i], None, -1.0);
        }
        let mut chosen: Vec<Option<HomeChoice>> = want.iter().map(|_| None).collect();
        // Rule 1 is tried again until it places no one more: evenness is judged against the
        // homes given so far, so a node's last few holders can be turned away only because the
        // other nodes' holders come later in the order. Placed in one pass, 8 of 128 numa_test
        // jobs that the kernel had already spread 32 per node beside their memory were homed
        // away from it (epyc-nps4, N = 128) and their memory moved for nothing.
        loop {
            let mut placed = false;
            for (c, &i) in chosen.iter_mut().zip(&want) {
                if c.is_some() {
                    continue;
                }
                let p = &d.procs[i];
                *c = HomeSearch::new(&self.cfg, topo, &d.m, p, &model).and_then(|s| s.at_memory());
                if let Some(choice) = c {
                    model.apply(topo, p, Some(&choice.nodes), 1.0);
                    placed = true;
                }
            }
            if !placed {
                break;
            }
        }
        for (c, &i) in chosen.iter_mut().zip(&want) {
            if c.is_some() {
                continue;
            }
            let p = &d.procs[i];
            *c = self.choose_home(topo, &d.m, p, &model);
            match c {
                Some(choice) => model.apply(topo, p, Some(&choice.nodes), 1.0),
                None => model.apply(topo, p, None, 1.0),
            }
        }
        d.model = model;
        for (c, &i) in chosen.into_iter().zip(&want) {
            if let Some(choice) = c {
                self.set_home(d, i, choice);
            }
        }
    }

    /// For a home's reason: why a process under `min_rss_mib` is placed at all (its busy
    /// threads, `sharing_threads`); nothing for one placed for its memory.
    fn why_small_counts(&self, p: &Proc) -> String {
        if !self.sharing(p) || self.large(p) {
            return String::new();
        }
        format!(
            "; placed for its {} busy threads, which share its memory (sharing_threads {}), though its {} resident is under min_rss_mib",
            p.width,
            self.cfg.sharing_threads,
            fmt_bytes(p.rss)
        )
    }

    /// The `SetHome` action for candidate `i` and its bookkeeping (the model already counts it).
    /// A provisional home placed again on the same nodes is kept as it is, without an action.
    fn set_home(&mut self, d: &mut Decision<'_, '_>, i: usize, choice: HomeChoice) {
        let (topo, now) = (d.snap.topo, d.snap.now_ns);
        let p = &d.procs[i];
        let provisional = d.first_look.then_some(p.width);
        if p.home_valid && p.home == choice.nodes {
            if let Some(st) = self.procs.get_mut(&p.pid) {
                st.provisional_width = provisional;
            }
            d.homes[i] = Some(choice.nodes);
            d.touched[i] = true;
            return;
        }
        let prefix = if p.home.is_empty() {
            String::new()
        } else if p.home_valid {
            // Only a provisional home is placed again (`redo_provisional`).
            format!(
                "placed again: its home {} was given at a first look for a width of {}, and it is {} now; ",
                fmt_nodes(&p.home),
                self.procs
                    .get(&p.pid)
                    .and_then(|st| st.provisional_width)
                    .map_or_else(|| "?".to_string(), |w| w.to_string()),
                p.width
            )
        } else {
            format!(
                "its home {} is outside its allowed nodes; ",
                fmt_nodes(&p.home)
            )
        };
        let allowed_cpus = &d.snap.processes[p.idx].allowed_cpus;
        d.actions.push(Action::SetHome {
            pid: p.pid,
            start_time: p.start_time,
            cpus: p.cpus_of(topo, &choice.nodes, allowed_cpus),
            reason: format!("{prefix}{}{}", choice.reason, self.why_small_counts(p)),
            nodes: choice.nodes.clone(),
        });
        let st = self.procs.get_mut(&p.pid).expect("state made above");
        st.homed_at(now);
        st.last_busy_ns = now;
        st.provisional_width = provisional;
        d.homes[i] = Some(choice.nodes);
        d.touched[i] = true;
    }

    /// The node rule 1 would give `p` now (the node holding most of its memory, when it has
    /// room and stays balanced), given the model without `p`.
    pub(super) fn memory_home_now(
        &self,
        topo: &Topology,
        m: &Machine,
        p: &Proc,
        model: &Model,
    ) -> Option<NodeId> {
        let s = HomeSearch::new(&self.cfg, topo, m, p, model)?;
        s.at_memory().map(|c| c.nodes[0])
    }

    /// Home for `p`, given the model without `p`.
    pub(super) fn choose_home(
        &self,
        topo: &Topology,
        m: &Machine,
        p: &Proc,
        model: &Model,
    ) -> Option<HomeChoice> {
        let s = HomeSearch::new(&self.cfg, topo, m, p, model)?;
        if let Some(choice) = s.at_memory() {
            return Some(choice);
        }
        let why_not_mem = s.why_not_memory_node();
        if let Some(choice) = s.best_with_room(&why_not_mem) {
            return Some(choice);
        }
        let fitting: Vec<NodeId> = s.allowed.iter().copied().filter(|&x| s.fits(x)).collect();
        let fitting_balanced = s.evenest_among(&fitting);
        if s.light {
            if let Some(choice) = s.packed_when_crowded(&fitting_balanced) {
                return Some(choice);
            }
        }
        s.home_set(&fitting, &fitting_balanced)
    }
}

/// "1 thread", "4 threads".
pub(super) fn threads(w: u32) -> String {
    if w == 1 {
        "1 thread".to_string()
    } else {
        format!("{w} threads")
    }
}

/// One process's view of the machine while its home is chosen: the model without it, and the
/// nodes it may use sorted into those with room and those the rebalancer would leave balanced.
struct HomeSearch<'a> {
    cfg: &'a HomenodeConfig,
    topo: &'a Topology,
    m: &'a Machine,
    p: &'a Proc,
    model: &'a Model,
    allowed: Vec<NodeId>,
    headroom: i64,
    rss: i64,
    /// What it needs at once: its CPU use, or more when its busy threads each need a CPU of
    /// their own (two busy threads sharing one CPU use 1.0 but need 2).
    demand: f64,
    /// Spare capacity is counted the way demand is: other work on a node that does not add up
    /// to a busy thread (`busy_thread_cpu`) needs no CPU of its own, so a node a little short
    /// of a whole free CPU (the daemon itself, kernel threads, a shell) still has room for one.
    /// Without this, one busy thread never fits a node of one CPU on a machine where anything
    /// else runs.
    slack: f64,
    /// CPUs of its largest allowed node.
    max_cpus: usize,
    /// Few enough threads to be packed onto one node (`pack_fraction`).
    light: bool,
    mem_node: Option<NodeId>,
    /// Allowed nodes with room for it.
    roomy: Vec<NodeId>,
    /// The least load per CPU a node with room would have with it.
    least: f64,
    /// Nodes with room where the process would not leave the machine imbalanced by the
    /// rebalancer's own rule (step 3), nor its homes uneven ([`HomeSearch::evenest_among`]).
    /// When there are such nodes, only they compete, in steps 1 and 2: a first home that the
    /// rebalancer would later undo is not given. (A node near the memory, or holding it, would
    /// otherwise take a second busy process while another node stays idle.)
    balanced: Vec<NodeId>,
}

impl<'a> HomeSearch<'a> {
    /// The search for `p`, or `None` when it may use no node.
    fn new(
        cfg: &'a HomenodeConfig,
        topo: &'a Topology,
        m: &'a Machine,
        p: &'a Proc,
        model: &'a Model,
    ) -> Option<Self> {
        let allowed = p.allowed_nodes();
        if allowed.is_empty() {
            return None;
        }
        let max_cpus = allowed.iter().map(|&x| p.node_cpus[x]).max().unwrap_or(0);
        let mut s = HomeSearch {
            cfg,
            topo,
            m,
            p,
            model,
            headroom: (cfg.headroom_mib.saturating_mul(MIB)) as i64,
            rss: p.rss as i64,
            demand: p.demand(),
            slack: 1.0 - cfg.busy_thread_cpu,
            max_cpus,
            light: f64::from(p.width) <= cfg.pack_fraction * max_cpus as f64 + EPS,
            mem_node: p.memory_node(),
            allowed,
            roomy: Vec::new(),
            least: f64::INFINITY,
            balanced: Vec::new(),
        };
        s.roomy = s.allowed.iter().copied().filter(|&x| s.room(x)).collect();
        s.least = s
            .roomy
            .iter()
            .map(|&x| s.after(x))
            .fold(f64::INFINITY, f64::min);
        let even = s.evenest_among(&s.roomy);
        s.balanced = s
            .roomy
            .iter()
            .copied()
            .filter(|&x| {
                s.after(x) <= cfg.consolidate_below + EPS || (s.within_pct(x) && even.contains(&x))
            })
            .collect();
        Some(s)
    }

    /// Whether node `x`'s load per CPU with the process is within `imbalance_pct` of the least
    /// a node with room would have.
    fn within_pct(&self, x: NodeId) -> bool {
        self.after(x) * 100.0 <= f64::from(self.cfg.imbalance_pct) * self.least + EPS
    }

    /// Bytes of this process node `x` could hold.
    fn mem_cap(&self, x: NodeId) -> i64 {
        self.model.free[x] + self.p.bytes[x] as i64 - self.headroom
    }

    /// CPUs of node `x` not used by others, at most the CPUs the process may use there.
    fn spare(&self, x: NodeId) -> f64 {
        (self.model.cpus[x] - self.model.load[x])
            .min(self.p.node_cpus[x] as f64)
            .max(0.0)
    }

    /// Whether node `x` has CPUs for its threads and memory for its pages.
    fn fits(&self, x: NodeId) -> bool {
        self.p.width as usize <= self.p.node_cpus[x] && self.mem_cap(x) >= self.rss
    }

    /// Whether node `x` fits it and has the spare CPU it needs.
    fn room(&self, x: NodeId) -> bool {
        self.fits(x) && self.spare(x) + self.slack + EPS >= self.demand
    }

    /// How near node `x` is to the process's memory: 1 when all of it is local.
    fn proximity(&self, x: NodeId) -> f64 {
        let p = self.p;
        if p.rss == 0 {
            return 1.0;
        }
        let near: f64 = (0..self.m.n)
            .map(|y| p.bytes[y] as f64 * 10.0 / f64::from(self.topo.distance(x, y).max(1)))
            .sum();
        near / p.rss as f64
    }

    /// Spare CPU and memory of node `x` as parts of the node, weighted by proximity.
    fn score(&self, x: NodeId) -> f64 {
        let cpu_room = self.spare(x) / self.model.cpus[x].max(1.0);
        let mem_room = if self.m.mem[x] > 0 {
            (self.mem_cap(x) + self.headroom).max(0) as f64 / self.m.mem[x] as f64
        } else {
            0.0
        };
        (cpu_room + mem_room) * self.proximity(x)
    }

    /// The best-scoring of `nodes` (the first on ties).
    fn best_of(&self, nodes: &[NodeId]) -> Option<NodeId> {
        let mut best: Option<(NodeId, f64)> = None;
        for &x in nodes {
            let s = self.score(x);
            if best.is_none_or(|(_, bs)| s > bs + EPS) {
                best = Some((x, s));
            }
        }
        best.map(|(x, _)| x)
    }

    /// Load per CPU of node `x` with the process added.
    fn after(&self, x: NodeId) -> f64 {
        (self.model.load[x] + self.demand) / self.model.cpus[x].max(EPS)
    }

    /// Homed demand per CPU of node `x` with the process added.
    fn homed_after(&self, x: NodeId) -> f64 {
        (self.model.homed[x] + self.demand) / self.model.cpus[x].max(EPS)
    }

    /// The least homed demand per CPU any of `nodes` would have with the process added.
    fn least_homed_after(&self, nodes: &[NodeId]) -> f64 {
        nodes
            .iter()
            .map(|&x| self.homed_after(x))
            .fold(f64::INFINITY, f64::min)
    }

    /// Of `nodes`, those whose homed demand per CPU would be less than one more of this
    /// process above the least once it is added. Only homes count: on saturated nodes measured
    /// busy time stops at the node's CPUs, so it cannot say who is squeezed where, and a
    /// relative rule on it lets a 2-CPU node take a third job (125% of a busy node is a whole
    /// job). Among nodes with room, measured load cannot say it either while the processes
    /// still to be homed run wherever the kernel put them (and a guest starved of CPU time
    /// sees every node busy): two busy processes whose memory is on one node would both be
    /// homed there while another node gets none, a home the rebalancer undoes only after
    /// `min_dwell_s`. What homenode placed, it knows.
    fn evenest_among(&self, nodes: &[NodeId]) -> Vec<NodeId> {
        let least = self.least_homed_after(nodes);
        nodes
            .iter()
            .copied()
            .filter(|&x| {
                self.homed_after(x) - least < self.demand / self.model.cpus[x].max(EPS) - EPS
            })
            .collect()
    }

    /// Whether node `x` has room and, when some nodes with room stay balanced, is one of them.
    fn ok(&self, x: NodeId) -> bool {
        self.room(x) && (self.balanced.is_empty() || self.balanced.contains(&x))
    }

    /// "score 1.23: 2.0 CPUs and 3.0 GiB free", for reasons.
    fn describe(&self, x: NodeId) -> String {
        format!(
            "score {:.2}: {:.1} CPUs and {} free",
            self.score(x),
            self.spare(x),
            fmt_bytes((self.mem_cap(x) + self.headroom).max(0) as u64)
        )
    }

    /// The note that a light multi-threaded process is packed on node `x` (else nothing).
    fn packed(&self, x: NodeId) -> String {
        let p = self.p;
        if p.width > 1 && self.light {
            format!(
                "; its {} are packed on one node (light: at most {:.0}% of node {x}'s {} CPUs)",
                threads(p.width),
                self.cfg.pack_fraction * 100.0,
                p.node_cpus[x]
            )
        } else {
            String::new()
        }
    }

    /// "node 1 (holding 80% of its 2.0 GiB)".
    fn holding(&self, mn: NodeId) -> String {
        format!(
            "node {mn} (holding {} of its {})",
            pct(self.p.bytes[mn], self.p.rss),
            fmt_bytes(self.p.rss)
        )
    }

    /// Rule 1: where the memory is, if there is room.
    fn at_memory(&self) -> Option<HomeChoice> {
        let p = self.p;
        let mn = self.mem_node.filter(|&mn| self.ok(mn))?;
        Some(HomeChoice {
            nodes: vec![mn],
            reason: format!(
                "home node {mn}: {} of its {} is there and it has room for {} ({:.1} CPUs spare){}",
                pct(p.bytes[mn], p.rss),
                fmt_bytes(p.rss),
                threads(p.width),
                self.spare(mn),
                self.packed(mn)
            ),
        })
    }

    /// Why the node holding the memory was not taken.
    fn why_not_memory_node(&self) -> String {
        let p = self.p;
        match self.mem_node {
            Some(mn) if !self.fits(mn) && p.width as usize > p.node_cpus[mn] => format!(
                "{} has only {} CPUs for its {}",
                self.holding(mn),
                p.node_cpus[mn],
                threads(p.width)
            ),
            Some(mn) if !self.fits(mn) => {
                format!("{} has too little free memory for it", self.holding(mn))
            }
            Some(mn) if self.room(mn) && !self.within_pct(mn) => format!(
                "{} would be {:.2} CPUs/CPU busy with it, more than {}% of the {:.2} of a node with room",
                self.holding(mn),
                self.after(mn),
                self.cfg.imbalance_pct,
                self.least
            ),
            // Room and within the percentage: it was the evenness of homes that turned it away.
            Some(mn) if self.room(mn) => format!(
                "{} would have {:.2} CPUs/CPU homed with it, a whole one of it above the {:.2} of the evenest node with room",
                self.holding(mn),
                self.homed_after(mn),
                self.least_homed_after(&self.roomy)
            ),
            Some(mn) => format!(
                "{} has no room for {} ({:.1} CPUs spare, {:.1} used)",
                self.holding(mn),
                threads(p.width),
                self.spare(mn),
                p.cpu
            ),
            None => "its memory is on no node it may use".to_string(),
        }
    }

    /// Rule 2: the best node with room, among the balanced ones when there are such.
    fn best_with_room(&self, why_not_mem: &str) -> Option<HomeChoice> {
        let candidates = if self.balanced.is_empty() {
            &self.roomy
        } else {
            &self.balanced
        };
        let x = self.best_of(candidates)?;
        Some(HomeChoice {
            nodes: vec![x],
            reason: format!(
                "home node {x}: {why_not_mem}; node {x} has the most spare CPU and memory near its memory ({}){}",
                self.describe(x),
                self.packed(x)
            ),
        })
    }

    /// Rule 3: a light process is packed onto one node even when every node is crowded; homes
    /// still stay even among the nodes it fits (a saturated machine is where stacking homes on
    /// the node nearest the memory hurts most), nearness to its memory deciding ties.
    fn packed_when_crowded(&self, fitting_balanced: &[NodeId]) -> Option<HomeChoice> {
        let x = self.best_of(fitting_balanced)?;
        Some(HomeChoice {
            nodes: vec![x],
            reason: format!(
                "home node {x}: no node has room for all of its {:.1} CPUs; node {x} scores best ({}){}{}",
                self.p.cpu,
                self.describe(x),
                self.packed(x),
                self.passed_over(fitting_balanced)
            ),
        })
    }

    /// The allowed nodes a choice among `candidates` did not consider, and why: "; not node 3
    /// (too little free memory: 120 MiB, 19 MiB + 128 MiB headroom wanted)". Empty when every
    /// allowed node was a candidate. So a crowded home can be read back from the journal.
    fn passed_over(&self, candidates: &[NodeId]) -> String {
        let why: Vec<String> = (self.allowed.iter())
            .filter(|x| !candidates.contains(x))
            .map(|&x| format!("node {x} ({})", self.why_not(x)))
            .collect();
        if why.is_empty() {
            String::new()
        } else {
            format!("; not {}", why.join(", "))
        }
    }

    /// Why node `x` was no candidate: too few CPUs or too little memory for the process, or
    /// more homed demand than the evenest node would have.
    fn why_not(&self, x: NodeId) -> String {
        let p = self.p;
        if p.width as usize > p.node_cpus[x] {
            return format!("{} CPUs for its {}", p.node_cpus[x], threads(p.width));
        }
        if self.mem_cap(x) < self.rss {
            return format!(
                "too little free memory: {}, {} + {} headroom wanted",
                fmt_bytes((self.mem_cap(x) + self.headroom).max(0) as u64),
                fmt_bytes(p.rss),
                fmt_bytes(self.headroom as u64)
            );
        }
        format!(
            "{:.2} CPUs/CPU homed with it, a whole one of it above the evenest",
            self.homed_after(x)
        )
    }

    /// Rule 4: a home set of the nearest nodes around the best one until it fits; when that does
    /// not give it the spare CPU it uses, it stays compact on the best node it fits.
    fn home_set(&self, fitting: &[NodeId], fitting_balanced: &[NodeId]) -> Option<HomeChoice> {
        let centre = self.best_of(&self.allowed)?;
        let grown = self.grow_set(centre, !fitting.is_empty());
        if !grown.done {
            if let Some(x) = self.best_of(fitting_balanced) {
                return Some(HomeChoice {
                    nodes: vec![x],
                    reason: format!(
                        "home node {x}: no node or set of nodes has room for its {:.1} CPUs; it stays compact on the best node ({})",
                        self.p.cpu,
                        self.describe(x)
                    ),
                });
            }
        }
        let reason = format!(
            "home {}: {}; {}",
            fmt_home(&grown.nodes),
            self.too_big(fitting),
            self.set_tail(centre, &grown)
        );
        Some(HomeChoice {
            reason,
            nodes: grown.nodes,
        })
    }

    /// Adds the allowed nodes nearest `centre` (best-scoring first among equally near ones)
    /// until the set has CPUs for its threads, memory for its pages and, when `need_spare`,
    /// the spare CPU it uses.
    fn grow_set(&self, centre: NodeId, need_spare: bool) -> GrownSet {
        let p = self.p;
        let order = nearest_first(self.topo, centre, &self.allowed, |a, b| {
            self.score(b).total_cmp(&self.score(a))
        });
        let (mut c, mut mc, mut sp) = (0usize, 0i64, 0.0f64);
        let mut nodes: Vec<NodeId> = Vec::new();
        for &x in &order {
            nodes.push(x);
            c += p.node_cpus[x];
            mc += self.mem_cap(x);
            sp += self.spare(x);
            if c >= p.width as usize && mc >= self.rss && (!need_spare || sp + EPS >= p.runnable())
            {
                return GrownSet {
                    nodes,
                    cpus: c,
                    mem_cap: mc,
                    done: true,
                };
            }
        }
        GrownSet {
            nodes,
            cpus: c,
            mem_cap: mc,
            done: false,
        }
    }

    /// Why one node is not enough.
    fn too_big(&self, fitting: &[NodeId]) -> String {
        let p = self.p;
        if self
            .mem_node
            .is_some_and(|mn| p.width as usize > p.node_cpus[mn])
            || p.width as usize > self.max_cpus
        {
            format!(
                "its {} do not fit one node of {} CPUs",
                threads(p.width),
                self.max_cpus
            )
        } else if fitting.is_empty() {
            format!(
                "its {} does not fit one node's free memory",
                fmt_bytes(p.rss)
            )
        } else {
            format!("no single node has room for its {:.1} CPUs", p.cpu)
        }
    }

    /// How the set was made.
    fn set_tail(&self, centre: NodeId, grown: &GrownSet) -> String {
        if grown.done {
            format!(
                "the nearest nodes to node {centre} were added until it fits ({} CPUs, {} free)",
                grown.cpus,
                fmt_bytes((grown.mem_cap + self.headroom * grown.nodes.len() as i64).max(0) as u64)
            )
        } else {
            format!(
                "even all {} allowed nodes are too small; it spans them all",
                grown.nodes.len()
            )
        }
    }
}

/// A home set as grown around its centre.
struct GrownSet {
    nodes: Vec<NodeId>,
    /// Its CPUs the process may use.
    cpus: usize,
    /// Bytes of the process it could hold.
    mem_cap: i64,
    /// Whether it fits; else it is every allowed node.
    done: bool,
}
