//! Shared by the policies: a sanitised view of the snapshot (so a malformed snapshot never
//! panics a policy) and formatting for reason strings.

use topo::{CpuSet, NodeId, Topology};

use crate::snapshot::{ProcessNumaStats, Snapshot, ThreadView};

pub(crate) const MIB: u64 = 1 << 20;
/// Byte figures are clamped to this (1 PiB) so that sums over nodes and processes never
/// overflow.
pub(crate) const MAX_BYTES: u64 = 1 << 50;

/// `x` if it is a finite number >= 0 (capped at `max`), else 0.
pub(crate) fn clean(x: f64, max: f64) -> f64 {
    if x.is_finite() && x > 0.0 {
        x.min(max)
    } else {
        0.0
    }
}

/// `2.1 GiB`, `512 MiB`, `300 B`.
pub(crate) fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if v >= 100.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// `0,1,3`.
pub(crate) fn fmt_nodes(nodes: &[NodeId]) -> String {
    let v: Vec<String> = nodes.iter().map(ToString::to_string).collect();
    v.join(",")
}

/// `node 1` or `nodes 0,1`.
pub(crate) fn fmt_home(nodes: &[NodeId]) -> String {
    if nodes.len() == 1 {
        format!("node {}", nodes[0])
    } else {
        format!("nodes {}", fmt_nodes(nodes))
    }
}

/// `nodes` ordered nearest to `from` first; among equally near ones by `tie`, then by id. The
/// one order every step that walks outward from a node uses (home sets, memory targets,
/// numad's neighbourhoods).
pub(crate) fn nearest_first(
    topo: &Topology,
    from: NodeId,
    nodes: &[NodeId],
    tie: impl Fn(NodeId, NodeId) -> std::cmp::Ordering,
) -> Vec<NodeId> {
    let mut order = nodes.to_vec();
    order.sort_by(|&a, &b| {
        topo.distance(from, a)
            .cmp(&topo.distance(from, b))
            .then(tie(a, b))
            .then(a.cmp(&b))
    });
    order
}

/// Percent, rounded: `78%`.
pub(crate) fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "0%".into();
    }
    format!("{:.0}%", part as f64 * 100.0 / whole as f64)
}

/// Per-node figures of the machine, sanitised to one entry per node of the topology.
#[derive(Clone, Debug)]
pub(crate) struct Machine {
    pub n: usize,
    /// CPUs of each node.
    pub cpus: Vec<usize>,
    /// Memory of each node, bytes.
    pub mem: Vec<u64>,
    /// Free memory now, bytes.
    pub free: Vec<u64>,
    /// Idle CPUs now.
    pub idle: Vec<f64>,
}

impl Machine {
    pub fn new(snap: &Snapshot<'_>) -> Self {
        let topo = snap.topo;
        let n = topo.nr_nodes();
        let cpus: Vec<usize> = (0..n).map(|i| topo.node_cpus(i).count()).collect();
        let mem = (0..n)
            .map(|i| topo.nodes[i].mem_bytes.min(MAX_BYTES))
            .collect();
        let free = (0..n)
            .map(|i| snap.nodes.get(i).map_or(0, |v| v.free_bytes.min(MAX_BYTES)))
            .collect();
        let idle = (0..n)
            .map(|i| {
                snap.nodes
                    .get(i)
                    .map_or(0.0, |v| clean(v.cpu_idle, cpus[i] as f64))
            })
            .collect();
        Machine {
            n,
            cpus,
            mem,
            free,
            idle,
        }
    }
}

/// One process, sanitised: vectors have one entry per node, numbers are finite.
#[derive(Clone, Debug)]
pub(crate) struct Proc {
    /// Index into `snap.processes`.
    pub idx: usize,
    pub pid: u32,
    pub start_time: u64,
    pub cpu: f64,
    /// Run-queue wait over the interval, CPUs (0 when not measured); `cpu + wait` is at most
    /// the thread count (a thread cannot want more than all of the time).
    pub wait: f64,
    pub threads: u32,
    /// CPUs needed at once: busy threads (at least `busy_thread_cpu` each, counting their
    /// run-queue wait when measured) plus the rounded-up CPU use of the others; at least 1, at
    /// most the thread count.
    pub width: u32,
    pub bytes: Vec<u64>,
    pub rss: u64,
    /// Share of runtime per node (sums to at most 1; all zero when unknown).
    pub share: Vec<f64>,
    /// Allowed CPUs of this process on each node.
    pub node_cpus: Vec<usize>,
    /// Nodes that may be its home.
    pub allowed: Vec<bool>,
    /// Home as reported (in range, no duplicates).
    pub home: Vec<NodeId>,
    /// The home is non-empty and lies within the allowed nodes.
    pub home_valid: bool,
    pub leave_alone: bool,
    /// The kernel's NUMA balancing hint: its preferred node for the process when that node may
    /// be its home, else the allowed node with most of its hinting faults; `None` without
    /// NUMA balancing figures.
    pub hint: Option<NodeId>,
    /// When its per-node memory was read (`now` when the snapshot says "with this snapshot").
    pub mem_sampled_ns: u64,
}

impl Proc {
    /// CPU it wanted over the interval: what it used plus what it waited on a run queue (the
    /// latter only when measured).
    pub fn runnable(&self) -> f64 {
        self.cpu + self.wait
    }

    /// What it needs at once: the CPU it wanted, or its width when larger (each busy thread
    /// needs a CPU of its own, which is more than it used when squeezed onto too few CPUs).
    pub fn demand(&self) -> f64 {
        self.runnable().max(f64::from(self.width))
    }

    /// The allowed home nodes, ascending.
    pub fn allowed_nodes(&self) -> Vec<NodeId> {
        (0..self.allowed.len())
            .filter(|&n| self.allowed[n])
            .collect()
    }

    /// Allowed node holding most of its memory (lowest id on ties), if it has any there.
    pub fn memory_node(&self) -> Option<NodeId> {
        let mut best: Option<NodeId> = None;
        for n in self.allowed_nodes() {
            if self.bytes[n] > 0 && best.is_none_or(|b| self.bytes[n] > self.bytes[b]) {
                best = Some(n);
            }
        }
        best
    }

    /// How many of its allowed CPUs the nodes in `home` have.
    pub fn cpu_count_of(&self, home: &[NodeId]) -> usize {
        home.iter().map(|&n| self.node_cpus[n]).sum()
    }

    /// Allowed CPUs of the nodes in `home`.
    pub fn cpus_of(&self, topo: &Topology, home: &[NodeId], allowed_cpus: &CpuSet) -> CpuSet {
        home.iter().fold(CpuSet::new(), |acc, &n| {
            acc.union(&topo.node_cpus(n).intersection(allowed_cpus))
        })
    }
}

/// The kernel's preferred node if it may be a home, else the allowed node with most hinting
/// faults (lowest id on ties), else `None`.
fn numa_hint(numa: Option<&ProcessNumaStats>, allowed: &[bool]) -> Option<NodeId> {
    let numa = numa?;
    let ok = |n: NodeId| allowed.get(n).copied().unwrap_or(false);
    if let Some(n) = numa.preferred_node.filter(|&n| ok(n)) {
        return Some(n);
    }
    let mut best: Option<NodeId> = None;
    for (n, &f) in numa.faults_by_node.iter().enumerate() {
        if f > 0 && ok(n) && best.is_none_or(|b| f > numa.faults_by_node[b]) {
            best = Some(n);
        }
    }
    best
}

/// The snapshot's processes, sanitised, ordered by PID (a PID listed twice keeps its first
/// entry), so that the result does not depend on the order the producer listed them in.
pub(crate) fn processes(snap: &Snapshot<'_>, busy_thread_cpu: f64) -> Vec<Proc> {
    let topo = snap.topo;
    let n = topo.nr_nodes();
    let max_cpu = topo.nr_cpus() as f64;
    let mut out: Vec<Proc> = Vec::with_capacity(snap.processes.len());
    for (idx, p) in snap.processes.iter().enumerate() {
        let cpu = clean(p.cpu_use, max_cpu);
        // Used plus waited time is at most the time there was, per thread: CPU use and wait
        // come from different reads (`stat`, `schedstat`) taken a little apart, and a thread
        // measured at 0.8 used and 0.8 waited must not count as wanting 1.6 CPUs.
        let max_wait = f64::from(p.threads.max(1)).max(p.per_thread.len() as f64);
        let wait = clean(p.cpu_wait.unwrap_or(0.0), (max_wait - cpu).max(0.0));
        let bytes: Vec<u64> = (0..n).map(|i| p.bytes_on(i).min(MAX_BYTES)).collect();
        let rss = bytes.iter().sum();
        let mut share: Vec<f64> = (0..n)
            .map(|i| clean(p.node_runtime.get(i).copied().unwrap_or(0.0), 1.0))
            .collect();
        let total: f64 = share.iter().sum();
        if total > 1.0 {
            share.iter_mut().for_each(|s| *s /= total);
        } else if total <= 0.0 {
            if let Some(c) = p.current_node.filter(|&c| c < n) {
                share[c] = 1.0;
            }
        }
        let node_cpus: Vec<usize> = (0..n)
            .map(|i| topo.node_cpus(i).intersection(&p.allowed_cpus).count())
            .collect();
        let allowed: Vec<bool> = (0..n)
            .map(|i| p.allowed_nodes.contains(i) && node_cpus[i] > 0)
            .collect();
        let mut home: Vec<NodeId> = Vec::new();
        for &h in &p.home {
            if h < n && !home.contains(&h) {
                home.push(h);
            }
        }
        let hint = numa_hint(p.numa.as_ref(), &allowed);
        let home_valid = !home.is_empty() && home.iter().all(|&h| allowed[h]);
        let threads = p
            .threads
            .max(p.per_thread.len().min(u32::MAX as usize) as u32);
        // A thread's runnable share: CPU used plus run-queue wait when measured (at most 1).
        let runnable =
            |t: &ThreadView| (clean(t.cpu_use, 1.0) + clean(t.wait.unwrap_or(0.0), 1.0)).min(1.0);
        let width = if p.per_thread.is_empty() {
            (cpu + wait - 1e-9).ceil().max(1.0) as u32
        } else {
            let busy = p
                .per_thread
                .iter()
                .filter(|t| runnable(t) >= busy_thread_cpu)
                .count() as u32;
            let rest: f64 = p
                .per_thread
                .iter()
                .map(runnable)
                .filter(|&c| c < busy_thread_cpu)
                .sum();
            busy.saturating_add((rest - 1e-9).ceil().max(0.0) as u32)
                .max(1)
        };
        let width = width.min(threads.max(1));
        out.push(Proc {
            idx,
            pid: p.pid,
            start_time: p.start_time,
            cpu,
            wait,
            threads,
            width,
            bytes,
            rss,
            share,
            node_cpus,
            allowed,
            home,
            home_valid,
            leave_alone: p.leave_alone,
            hint,
            mem_sampled_ns: p.memory_sampled_ns.unwrap_or(snap.now_ns),
        });
    }
    out.sort_by_key(|p| (p.pid, p.idx));
    out.dedup_by_key(|p| p.pid);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{NodeView, ProcessView};

    #[test]
    fn formats() {
        assert_eq!(fmt_bytes(300), "300 B");
        assert_eq!(fmt_bytes(64 * MIB), "64.0 MiB");
        assert_eq!(fmt_bytes(2254 * MIB), "2.2 GiB");
        assert_eq!(fmt_bytes(300 * 1024 * MIB), "300 GiB");
        assert_eq!(fmt_home(&[1]), "node 1");
        assert_eq!(fmt_home(&[1, 0]), "nodes 1,0");
        assert_eq!(pct(78, 100), "78%");
        assert_eq!(pct(1, 0), "0%");
    }

    #[test]
    fn width_from_threads() {
        let t = topo::parse_synthetic("nodes=2,cpus-per-node=4").expect("machine");
        let mut a = ProcessView::new(&t, 1);
        a.threads = 32;
        a.cpu_use = 3.2;
        a.per_thread = (0..32)
            .map(|i| ThreadView {
                tid: i,
                cpu_use: 0.1,
                node: None,
                wait: None,
            })
            .collect();
        let mut b = a.clone();
        b.pid = 2;
        b.per_thread[0].cpu_use = 1.0;
        b.per_thread[1].cpu_use = 0.9;
        let mut c = ProcessView::new(&t, 3);
        c.threads = 2;
        c.cpu_use = 5.0;
        c.node_runtime = vec![f64::NAN, -1.0];
        c.current_node = Some(1);
        c.home = vec![7, 0, 0];
        let snap = Snapshot {
            topo: &t,
            now_ns: 5,
            interval_ns: 1,
            nodes: NodeView::consistent_with(&t, &[]),
            processes: vec![c, b, a],
            numa_balancing: false,
        };
        let ps = processes(&snap, 0.5);
        assert_eq!(ps.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(ps[0].width, 4, "32 threads at 0.1 CPU need 4 CPUs at once");
        assert_eq!(
            ps[1].width,
            2 + 3,
            "two busy threads + ceil(3.0) for the rest"
        );
        assert_eq!(ps[2].width, 2, "capped by its thread count");
        assert_eq!(
            ps[2].share,
            vec![0.0, 1.0],
            "falls back to the current node"
        );
        assert_eq!(ps[2].home, vec![0]);
        assert!(ps[2].home_valid);
        assert_eq!(ps[2].mem_sampled_ns, 5);
    }
}
