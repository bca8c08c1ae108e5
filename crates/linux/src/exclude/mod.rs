//! Which processes homenode leaves alone, and why: pure functions over a
//! [`ProcessSample`], the machine and the configured [`Rules`].
//!
//! [`check`] applies the rules in this order and stops at the first that holds:
//!
//! | # | Rule | [`Reason`] |
//! | --- | --- | --- |
//! | 1 | kernel thread: `PF_KTHREAD`, PID 2 (`kthreadd`) or a child of it | `KernelThread` |
//! | 2 | zombie or dying (`Z`, `X`, `x`) | `Exiting` |
//! | 3 | configured exclusions: PID, command name, user (real or effective UID), cgroup path prefix | `ExcludedPid`, `ExcludedComm`, `ExcludedUser`, `ExcludedCgroup` |
//! | 4 | an include list is configured and the process matches none of it | `NotIncluded` |
//! | 5 | any thread real-time (`SCHED_FIFO`, `SCHED_RR`, `SCHED_DEADLINE`) | `RealTime` |
//! | 6 | pinned by someone else: its affinity (or any sampled thread's) leaves out CPUs its cpuset allows; or, once homenode set a mask, the mask is no longer homenode's and does not cover every allowed CPU (a mask widened to all of them is not a pin: [`widened`]) | `PinnedByOther` |
//! | 7 | a memory policy other than `default` in `numa_maps` (`bind`, `prefer`, `interleave`, `local`, ...) | `ForeignMemPolicy` |
//! | 8 | confined by its cpuset to fewer nodes than the machine has (CPUs or memory) | `CpusetConfined` (unless [`Confined::ManageWithin`]) |
//!
//! Safety rules (1, 2, 5-8) are never overridden by an include list: including a process only
//! makes it *eligible*.
//!
//! **Pinned** compares the task's `Cpus_allowed_list` with what an unrestricted task would
//! get: its cgroup's effective cpuset when known, else the online CPUs minus `isolcpus`
//! ([`crate::sysfs::default_cpus`]). A mask that lacks one of those CPUs was narrowed by
//! someone (`taskset`, `numactl`, the program itself, a container runtime). CPUs in the mask
//! but offline do not count. Once homenode has applied a mask (its journal knows it), the test
//! becomes "is it still exactly homenode's mask".
//!
//! **Confined by a cpuset.** Decision: such a process is *left alone* by default, as the issue
//! asks: whoever made the cpuset (an orchestrator, an administrator) already chose its nodes,
//! and homenode narrowing it further could fight them (a kubelet rewrites cpusets; a cpuset
//! made for isolation may not want memory moved). [`Confined::ManageWithin`] manages it inside
//! the cpuset instead: the verdict then carries the CPUs and nodes it may be given.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use topo::CpuSet;

use crate::error::ProcError;
use crate::mempolicy::MemPolicy;
use crate::procfs::stat::{SchedPolicy, is_kernel_thread};
use crate::sample::ProcessSample;
use crate::{Pid, Tid, sysfs};

/// Why a process is left alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    KernelThread,
    Exiting,
    ExcludedPid,
    ExcludedComm(String),
    ExcludedUser(u32),
    /// The configured prefix that matched.
    ExcludedCgroup(String),
    NotIncluded,
    /// A thread with a real-time policy.
    RealTime {
        tid: Tid,
        policy: SchedPolicy,
    },
    /// A thread (the main one, or another) whose mask someone else set.
    PinnedByOther {
        tid: Tid,
        mask: CpuSet,
        /// What it would be if nobody had pinned it (or homenode's mask).
        expected: CpuSet,
    },
    /// The first non-default policy found in `numa_maps`.
    ForeignMemPolicy(MemPolicy),
    /// The nodes its cpuset allows.
    CpusetConfined {
        nodes: CpuSet,
    },
}

impl Reason {
    /// A short stable name, for logs and metric labels.
    pub fn label(&self) -> &'static str {
        match self {
            Reason::KernelThread => "kernel_thread",
            Reason::Exiting => "exiting",
            Reason::ExcludedPid => "excluded_pid",
            Reason::ExcludedComm(_) => "excluded_comm",
            Reason::ExcludedUser(_) => "excluded_user",
            Reason::ExcludedCgroup(_) => "excluded_cgroup",
            Reason::NotIncluded => "not_included",
            Reason::RealTime { .. } => "realtime",
            Reason::PinnedByOther { .. } => "pinned_by_other",
            Reason::ForeignMemPolicy(_) => "foreign_mempolicy",
            Reason::CpusetConfined { .. } => "cpuset_confined",
        }
    }

    /// Whether the reason is a safety rule (one the include list cannot lift) rather than
    /// configuration.
    pub fn is_safety(&self) -> bool {
        !matches!(
            self,
            Reason::ExcludedPid
                | Reason::ExcludedComm(_)
                | Reason::ExcludedUser(_)
                | Reason::ExcludedCgroup(_)
                | Reason::NotIncluded
        )
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::KernelThread => f.write_str("kernel thread"),
            Reason::Exiting => f.write_str("exiting (zombie)"),
            Reason::ExcludedPid => f.write_str("PID excluded by the configuration"),
            Reason::ExcludedComm(c) => write!(f, "command `{c}` excluded by the configuration"),
            Reason::ExcludedUser(u) => write!(f, "user {u} excluded by the configuration"),
            Reason::ExcludedCgroup(p) => {
                write!(f, "cgroup under `{p}` excluded by the configuration")
            }
            Reason::NotIncluded => f.write_str("not in the include list"),
            Reason::RealTime { tid, policy } => write!(f, "thread {tid} is real-time ({policy})"),
            Reason::PinnedByOther {
                tid,
                mask,
                expected,
            } => write!(
                f,
                "thread {tid} pinned by someone else: CPUs {mask}, expected {expected}"
            ),
            Reason::ForeignMemPolicy(p) => write!(f, "memory policy `{p}` set by someone else"),
            Reason::CpusetConfined { nodes } => {
                write!(f, "confined by its cpuset to nodes {nodes}")
            }
        }
    }
}

/// What to do with a process its cpuset confines to fewer nodes than the machine has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confined {
    /// Leave it alone (the default).
    #[default]
    Leave,
    /// Manage it within its cpuset's CPUs and nodes.
    ManageWithin,
}

/// A set of processes named by PID, command, user or cgroup (any match counts).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Matcher {
    pub pids: BTreeSet<Pid>,
    /// Command names (`comm`, at most 15 bytes: a longer name matches its first 15 bytes).
    pub comms: BTreeSet<String>,
    /// User IDs (matching the real or the effective UID).
    pub uids: BTreeSet<u32>,
    /// Cgroup path prefixes, compared by path components (`/system.slice` matches
    /// `/system.slice/x.service`, not `/system.slice2`).
    pub cgroups: Vec<String>,
}

impl Matcher {
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty()
            && self.comms.is_empty()
            && self.uids.is_empty()
            && self.cgroups.is_empty()
    }

    /// The reason this matcher matches `p`, as an exclusion.
    fn matches(&self, p: &ProcessSample) -> Option<Reason> {
        if self.pids.contains(&p.pid) {
            return Some(Reason::ExcludedPid);
        }
        if let Some(c) = self.comms.iter().find(|c| comm_matches(c, &p.comm)) {
            return Some(Reason::ExcludedComm(c.clone()));
        }
        if let Some(&u) = [p.uid, p.euid].iter().find(|u| self.uids.contains(u)) {
            return Some(Reason::ExcludedUser(u));
        }
        if let Some(cg) = &p.cgroup {
            if let Some(prefix) = self.cgroups.iter().find(|pre| cgroup_under(cg, pre)) {
                return Some(Reason::ExcludedCgroup(prefix.clone()));
            }
        }
        None
    }
}

/// The configured rules.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Rules {
    /// Processes never managed.
    pub exclude: Matcher,
    /// When set, only these processes are managed (the safety rules still apply).
    pub include: Option<Matcher>,
    /// What to do with processes confined by a cpuset.
    pub cpuset_confined: Confined,
}

/// The machine facts the rules need, in kernel numbering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Online CPUs minus isolated ones ([`sysfs::default_cpus`]).
    pub default_cpus: CpuSet,
    /// Nodes with memory.
    pub memory_nodes: CpuSet,
    /// CPUs of each node (index = node), to tell which nodes a cpuset's CPUs span. Under fake
    /// NUMA, the pseudo-nodes.
    pub node_cpus: Vec<CpuSet>,
}

impl Machine {
    /// Reads the facts from `ROOT/sys` (node CPUs from `node/nodeN/cpulist`; one node with
    /// every online CPU on a kernel without NUMA).
    pub fn read(root: &Path) -> Result<Machine, ProcError> {
        let online = sysfs::online_cpus(root)?;
        let default_cpus = sysfs::default_cpus(root)?;
        let memory_nodes = sysfs::memory_nodes(root)?;
        let mut node_cpus = Vec::new();
        let dir = root.join("sys/devices/system/node");
        let mut n = 0;
        let mut misses = 0;
        // Node numbers may have holes; stop after a long run of absent nodes.
        while misses < 64 {
            let path = dir.join(format!("node{n}/cpulist"));
            match crate::procfs::read_optional_text(&path)? {
                Some(t) => {
                    let s = CpuSet::parse_list(&t).map_err(|e| ProcError::parse(&path, e))?;
                    if node_cpus.len() < n {
                        node_cpus.resize(n, CpuSet::new());
                    }
                    node_cpus.push(s.intersection(&online));
                    misses = 0;
                }
                None => misses += 1,
            }
            n += 1;
        }
        if node_cpus.is_empty() {
            node_cpus.push(online);
        }
        Ok(Machine {
            default_cpus,
            memory_nodes,
            node_cpus,
        })
    }

    /// Nodes that have at least one CPU of `cpus`.
    pub fn nodes_of(&self, cpus: &CpuSet) -> CpuSet {
        self.node_cpus
            .iter()
            .enumerate()
            .filter(|(_, c)| c.intersects(cpus))
            .map(|(n, _)| n)
            .collect()
    }

    /// Nodes with at least one CPU.
    pub fn cpu_nodes(&self) -> CpuSet {
        self.node_cpus
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.is_empty())
            .map(|(n, _)| n)
            .collect()
    }
}

/// The decision about one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Homenode may manage it, giving it CPUs within `cpus` and homes within `nodes`.
    Manage { cpus: CpuSet, nodes: CpuSet },
    /// Leave it alone.
    Leave(Reason),
}

impl Verdict {
    pub fn is_manage(&self) -> bool {
        matches!(self, Verdict::Manage { .. })
    }

    pub fn reason(&self) -> Option<&Reason> {
        match self {
            Verdict::Leave(r) => Some(r),
            Verdict::Manage { .. } => None,
        }
    }
}

/// Decides about process `p`. `applied` is the mask homenode set on it (from the journal),
/// if any. See the module documentation for the rules and their order.
pub fn check(
    p: &ProcessSample,
    applied: Option<&CpuSet>,
    machine: &Machine,
    rules: &Rules,
) -> Verdict {
    if is_kernel_thread(p.pid, p.ppid, p.flags) {
        return Verdict::Leave(Reason::KernelThread);
    }
    if matches!(p.state, 'Z' | 'X' | 'x') {
        return Verdict::Leave(Reason::Exiting);
    }
    if let Some(r) = rules.exclude.matches(p) {
        return Verdict::Leave(r);
    }
    if let Some(inc) = &rules.include {
        if inc.matches(p).is_none() {
            return Verdict::Leave(Reason::NotIncluded);
        }
    }
    if let Some(r) = realtime(p) {
        return Verdict::Leave(r);
    }
    let allowed = allowed_cpus(p, machine);
    if let Some(r) = pinned(p, &allowed, applied) {
        return Verdict::Leave(r);
    }
    if let Some(pol) = p.numa.as_ref().and_then(|n| n.foreign_policy.as_ref()) {
        return Verdict::Leave(Reason::ForeignMemPolicy(pol.clone()));
    }
    let nodes = machine.nodes_of(&allowed);
    if let Some(confined) = confined_nodes(p, &nodes, machine) {
        if rules.cpuset_confined == Confined::Leave {
            return Verdict::Leave(Reason::CpusetConfined { nodes: confined });
        }
        return Verdict::Manage {
            cpus: allowed,
            nodes: confined,
        };
    }
    Verdict::Manage {
        cpus: allowed,
        nodes,
    }
}

/// The first real-time thread (the main thread's policy, then each sampled thread's).
pub fn realtime(p: &ProcessSample) -> Option<Reason> {
    if p.policy.is_realtime() {
        return Some(Reason::RealTime {
            tid: p.pid,
            policy: p.policy,
        });
    }
    p.threads
        .iter()
        .find(|t| t.policy.is_realtime())
        .map(|t| Reason::RealTime {
            tid: t.tid,
            policy: t.policy,
        })
}

/// The CPUs an unpinned task of this process would have: its cpuset's (minus isolated CPUs,
/// unless that leaves none), else the machine's default.
pub fn allowed_cpus(p: &ProcessSample, machine: &Machine) -> CpuSet {
    match &p.cpuset {
        Some(cs) => {
            let both = cs.cpus.intersection(&machine.default_cpus);
            if both.is_empty() {
                cs.cpus.clone()
            } else {
                both
            }
        }
        None => machine.default_cpus.clone(),
    }
}

/// Whether `mask` was narrowed by someone: it lacks a CPU of `allowed` (before homenode acted),
/// or differs from `applied` (after) without covering every allowed CPU. A thread that sets
/// its own mask to all the CPUs it may use (as `perf bench numa` workers do at start) asks for
/// nothing in particular: that is not a pin ([`widened`]).
pub fn is_pinned(mask: &CpuSet, allowed: &CpuSet, applied: Option<&CpuSet>) -> bool {
    match applied {
        Some(a) => mask != a && !allowed.is_subset(mask),
        None => !allowed.is_subset(mask),
    }
}

/// After homenode set `applied`, whether some thread of `p` widened its mask again to every CPU
/// it may use (the daemon then puts it back home).
pub fn widened(p: &ProcessSample, machine: &Machine, applied: &CpuSet) -> bool {
    let allowed = allowed_cpus(p, machine);
    std::iter::once(&p.cpus_allowed)
        .chain(p.threads.iter().filter_map(|t| t.cpus_allowed.as_ref()))
        .any(|m| m != applied && allowed.is_subset(m))
}

/// The first pinned task: the main thread's mask (`Cpus_allowed_list`), then each sampled
/// thread's own mask.
pub fn pinned(p: &ProcessSample, allowed: &CpuSet, applied: Option<&CpuSet>) -> Option<Reason> {
    let masks = std::iter::once((p.pid, &p.cpus_allowed)).chain(
        p.threads
            .iter()
            .filter_map(|t| t.cpus_allowed.as_ref().map(|m| (t.tid, m))),
    );
    for (tid, mask) in masks {
        if is_pinned(mask, allowed, applied) {
            return Some(Reason::PinnedByOther {
                tid,
                mask: mask.clone(),
                expected: applied.unwrap_or(allowed).clone(),
            });
        }
    }
    None
}

/// When the process's cpuset spans fewer nodes than the machine, the nodes it may use (CPU
/// nodes of its cpuset that are also in its memory nodes, or the CPU nodes alone when
/// memory nodes are numbered differently, as under fake NUMA).
pub fn confined_nodes(p: &ProcessSample, cpu_nodes: &CpuSet, machine: &Machine) -> Option<CpuSet> {
    let mem_confined = !machine.memory_nodes.is_subset(&p.mems_allowed);
    let cpu_confined = cpu_nodes.count() < machine.cpu_nodes().count();
    if !(mem_confined || cpu_confined) {
        return None;
    }
    let both = cpu_nodes.intersection(&p.mems_allowed);
    Some(if both.is_empty() || !mem_confined {
        cpu_nodes.clone()
    } else {
        both
    })
}

/// `comm` is at most 15 bytes; a longer configured name matches its first 15 bytes.
pub fn comm_matches(pattern: &str, comm: &str) -> bool {
    if pattern == comm {
        return true;
    }
    if pattern.len() > 15 {
        let mut end = 15;
        while !pattern.is_char_boundary(end) {
            end -= 1;
        }
        return &pattern[..end] == comm;
    }
    false
}

/// `path` is `prefix` or below it, by whole components.
pub fn cgroup_under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        return true;
    }
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests;
