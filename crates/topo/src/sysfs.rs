//! The topology of the Linux host homenode runs on, read from sysfs and procfs.
//!
//! Every path is taken relative to a *root* prefix: production passes `/`, tests pass a captured
//! fixture tree (`tests/fixtures/*`, made with `tests/fixtures/capture.sh`), so the reader runs
//! the same code on real hosts and on machines we do not have.
//!
//! # What is read
//!
//! | Fact | Files (under `sys/devices/system/`) |
//! | --- | --- |
//! | online CPUs | `cpu/online` (mandatory) |
//! | nodes | `node/online`, else the `node/nodeN` directories |
//! | a node's CPUs | `node/nodeN/cpulist`, intersected with the online CPUs |
//! | a node's memory | `node/nodeN/meminfo`, the `Node N MemTotal: X kB` line |
//! | SLIT | `node/nodeN/distance`: one row, one entry per online node, in node order |
//! | SMT siblings | `cpu/cpuC/topology/thread_siblings_list`, else `physical_package_id` + `core_id` |
//! | last-level cache | `cpu/cpuC/cache/indexI/`: the highest `level` that is not an instruction cache; its `shared_cpu_list`, `size` (`32768K`) and `coherency_line_size` |
//! | clock | `cpu/cpuF/cpufreq/cpuinfo_max_freq` (kHz, F = first online CPU), else the largest `cpu MHz` of `/proc/cpuinfo` |
//!
//! A kernel without NUMA (no `node` directory) gives one node holding every online CPU and the
//! `MemTotal` of `/proc/meminfo`.
//!
//! A missing *optional* file falls back (to the next source, or to the synthetic default); a
//! missing mandatory file, or any file that is present but malformed, is a
//! [`TopoError::Sysfs`] naming the file and what was wrong. Nothing here panics.
//!
//! # Decisions
//!
//! - **Memory-only nodes** (CXL expanders, HBM, persistent memory: a node whose cpulist holds no
//!   online CPU) are left out, with a warning in [`HostTopology::warnings`]: every homenode node
//!   has CPUs (scheduling domains, home-node choice and the simulator's runqueues all assume
//!   it), so such a node cannot be represented, and its memory is not counted. Nodes with
//!   neither CPUs nor memory are left out the same way.
//! - **Memoryless nodes** (CPUs, no memory) are kept with `mem_bytes = 0`, with a warning: their
//!   CPUs must belong to some node, and the simulator's allocator then falls back to the
//!   nearest node with room, as the kernel does.
//! - **Numbering.** [`Topology`] numbers CPUs and nodes densely from 0. When the online CPUs
//!   or the kept nodes have holes (offline CPUs, a left-out node), they are renumbered in
//!   ascending order; [`HostTopology::os_cpu`] and [`HostTopology::os_node`] give the kernel's
//!   numbers back (identity when there are no holes), and the description says so. Anything
//!   that talks to the kernel (affinity, page migration) must translate through them.
//! - **Cores and LLCs never straddle a node**: SMT siblings and LLC sharers on another node are
//!   ignored, as the kernel's topology code does for sub-NUMA clustering (Intel SNC, where one
//!   L3 spans two nodes). Sibling and sharer lists are merged transitively, so inconsistent
//!   lists still give a partition.
//! - `CpuModel::llc_bytes` is one size for the machine: the largest LLC found (a warning when
//!   LLC sizes differ).
//! - **What sysfs cannot tell** is taken from the synthetic defaults ([`SYNTHETIC_BASE`], the
//!   measured 2-socket Ice Lake), scaled as [`parse_synthetic`](crate::spec::parse_synthetic)
//!   scales them: idle local latency, MLP,
//!   loaded-latency ratio and page size as in the base; local and remote bandwidth per node =
//!   the base's per-core figure x the node's cores; an LLC size or clock that sysfs does not
//!   give likewise. Remote latency = local x SLIT / 10. Cache-line transfer costs and the
//!   fault overhead follow the shared rules of `docs/MACHINES.md` (xeon2s ratios of the local
//!   and nearest-remote latency; 2,500 cycles at the host's clock). The description says
//!   which figures were assumed.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{TopoError, one_line};
use crate::spec::{LOCAL_DISTANCE, MAX_CPUS, MAX_DISTANCE, MAX_NODES, SYNTHETIC_BASE};
use crate::{Cpu, CpuModel, CpuSet, MemoryModel, Node, Topology, presets};

const NODE_DIR: &str = "sys/devices/system/node";
const CPU_DIR: &str = "sys/devices/system/cpu";

/// A host's topology with what the [`Topology`] itself cannot say.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTopology {
    /// The machine, named `host`, CPUs and nodes numbered densely from 0.
    pub topology: Topology,
    /// Kernel CPU number of each topology CPU: `os_cpu[topology_cpu]`.
    pub os_cpu: Vec<usize>,
    /// Kernel node number of each topology node: `os_node[topology_node]`.
    pub os_node: Vec<usize>,
    /// Things left out or assumed that a user should know (memory-only nodes skipped,
    /// memoryless nodes, LLCs clipped to a node, differing LLC sizes), one line each.
    pub warnings: Vec<String>,
}

impl HostTopology {
    /// True when topology CPU and node numbers are the kernel's.
    pub fn is_identity_numbered(&self) -> bool {
        self.os_cpu.iter().enumerate().all(|(i, &c)| i == c)
            && self.os_node.iter().enumerate().all(|(i, &n)| i == n)
    }
}

/// Reads the topology of the Linux host whose root directory is `root` (`/` for this host; a
/// captured fixture tree in tests). See the module documentation for the files read and the
/// defaults taken. The warnings and the kernel numbering are dropped; use
/// [`read_host_detailed`] to get them.
pub fn read_host(root: &Path) -> Result<Topology, TopoError> {
    read_host_detailed(root).map(|h| h.topology)
}

/// Like [`read_host`], also returning the kernel's CPU and node numbers and the warnings.
pub fn read_host_detailed(root: &Path) -> Result<HostTopology, TopoError> {
    Reader {
        root,
        warnings: Vec::new(),
    }
    .host()
}

/// One node as the kernel lists it, before nodes are left out or renumbered.
struct RawNode {
    os_id: usize,
    /// Online CPUs (kernel numbers).
    cpus: CpuSet,
    mem_bytes: u64,
    /// SLIT row, one entry per entry of the node list.
    distance: Vec<u32>,
    /// The file `distance` came from (or would have), for errors.
    distance_rel: String,
    cpulist_rel: String,
}

/// The last-level cache of one CPU.
struct Llc {
    sharers: Option<CpuSet>,
    bytes: Option<u64>,
    line_bytes: Option<u64>,
}

/// Cores and LLCs of all CPUs.
struct Grouping {
    /// Dense core id per (dense) CPU.
    core: Vec<usize>,
    /// Dense LLC id per CPU.
    llc: Vec<usize>,
    /// The largest LLC size found.
    llc_bytes: Option<u64>,
    line_bytes: Option<u64>,
}

/// What sysfs says about one CPU.
struct CpuFacts {
    siblings: Option<CpuSet>,
    package: Option<i64>,
    core_id: Option<i64>,
    llc: Option<Llc>,
}

struct Reader<'a> {
    root: &'a Path,
    warnings: Vec<String>,
}

impl Reader<'_> {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn err(&self, rel: &str, reason: impl AsRef<str>) -> TopoError {
        TopoError::Sysfs {
            path: self.path(rel).display().to_string(),
            reason: one_line(reason.as_ref()),
        }
    }

    /// The file's text, `None` if it does not exist.
    fn read_opt(&self, rel: &str) -> Result<Option<String>, TopoError> {
        match std::fs::read_to_string(self.path(rel)) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) if e.kind() == ErrorKind::InvalidData => Err(self.err(rel, "is not UTF-8 text")),
            Err(e) => Err(self.err(rel, format!("cannot be read: {e}"))),
        }
    }

    fn read(&self, rel: &str) -> Result<String, TopoError> {
        self.read_opt(rel)?
            .ok_or_else(|| self.err(rel, "is missing"))
    }

    fn list_opt(&self, rel: &str) -> Result<Option<CpuSet>, TopoError> {
        let Some(text) = self.read_opt(rel)? else {
            return Ok(None);
        };
        CpuSet::parse_list(&text)
            .map(Some)
            .map_err(|e| self.err(rel, format!("not a kernel list: {e}")))
    }

    fn list(&self, rel: &str) -> Result<CpuSet, TopoError> {
        self.list_opt(rel)?
            .ok_or_else(|| self.err(rel, "is missing"))
    }

    /// A file holding one number.
    fn number_opt<T: FromStr>(&self, rel: &str) -> Result<Option<T>, TopoError> {
        let Some(text) = self.read_opt(rel)? else {
            return Ok(None);
        };
        let t = text.trim();
        t.parse::<T>()
            .map(Some)
            .map_err(|_| self.err(rel, format!("`{t}` is not a number")))
    }

    /// Entries `<prefix><number>` of a directory, numbers ascending; `None` if the directory
    /// does not exist.
    fn numbered_entries(&self, rel: &str, prefix: &str) -> Result<Option<Vec<usize>>, TopoError> {
        let entries = match std::fs::read_dir(self.path(rel)) {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.err(rel, format!("cannot be listed: {e}"))),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| self.err(rel, format!("cannot be listed: {e}")))?;
            let name = entry.file_name();
            let Some(num) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
                continue;
            };
            if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            if let Ok(id) = num.parse::<usize>() {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        Ok(Some(ids))
    }

    fn host(mut self) -> Result<HostTopology, TopoError> {
        let online_rel = format!("{CPU_DIR}/online");
        let online = self.list(&online_rel)?;
        if online.is_empty() {
            return Err(self.err(&online_rel, "lists no online CPU"));
        }
        if online.count() > MAX_CPUS {
            return Err(self.err(
                &online_rel,
                format!(
                    "lists {} CPUs; homenode handles at most {MAX_CPUS}",
                    online.count()
                ),
            ));
        }
        let numa_nodes = if self.path(NODE_DIR).is_dir() {
            self.numa_nodes(&online)?
        } else {
            None
        };
        let numa = numa_nodes.is_some();
        let raw = match numa_nodes {
            Some(nodes) => nodes,
            None => vec![self.flat_node(&online)?],
        };
        self.check_cpu_owners(&raw, &online)?;

        // Nodes kept: those with online CPUs.
        let mut kept: Vec<usize> = Vec::new();
        for (i, n) in raw.iter().enumerate() {
            if !n.cpus.is_empty() {
                if n.mem_bytes == 0 {
                    self.warnings.push(format!(
                        "node {} has CPUs but no memory: kept with 0 bytes, its CPUs allocate \
                         from other nodes",
                        n.os_id
                    ));
                }
                kept.push(i);
            } else if n.mem_bytes > 0 {
                self.warnings.push(format!(
                    "node {} is memory-only ({} MiB, no online CPU): left out, a homenode node \
                     needs CPUs; its memory is not counted",
                    n.os_id,
                    n.mem_bytes >> 20
                ));
            } else {
                self.warnings.push(format!(
                    "node {} has no online CPU and no memory: left out",
                    n.os_id
                ));
            }
        }
        let distance = self.distance_matrix(&raw, &kept)?;

        // Dense numbering.
        let os_cpu: Vec<usize> = online.iter().collect();
        let dense: BTreeMap<usize, usize> =
            os_cpu.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        let os_node: Vec<usize> = kept.iter().map(|&i| raw[i].os_id).collect();
        let mut node_of = vec![0usize; os_cpu.len()];
        let mut node_cpus: Vec<CpuSet> = Vec::with_capacity(kept.len());
        for (k, &i) in kept.iter().enumerate() {
            let set: CpuSet = raw[i]
                .cpus
                .iter()
                .filter_map(|c| dense.get(&c).copied())
                .collect();
            for c in set.iter() {
                node_of[c] = k;
            }
            node_cpus.push(set);
        }

        let facts: Vec<CpuFacts> = os_cpu
            .iter()
            .map(|&c| self.cpu_facts(c))
            .collect::<Result<_, _>>()?;
        let Grouping {
            core,
            llc,
            llc_bytes,
            line_bytes,
        } = self.cores_and_llcs(&facts, &os_cpu, &dense, &node_of);
        let (freq, freq_source) = self.clock(&os_cpu)?;

        let base = presets::preset_spec(SYNTHETIC_BASE)?;
        let base_cores = (base.cpus_per_node / base.smt.max(1)).max(1) as f64;
        let per_core = |x: f64| x / base_cores;
        let local = base.memory.local_latency_ns;
        let cores_of = |set: &CpuSet| {
            let mut v: Vec<usize> = set.iter().map(|c| core[c]).collect();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        let nodes: Vec<Node> = node_cpus
            .iter()
            .enumerate()
            .map(|(k, set)| {
                let cores = cores_of(set) as f64;
                Node {
                    id: k,
                    cpus: set.clone(),
                    mem_bytes: raw[kept[k]].mem_bytes,
                    bandwidth_gbps: per_core(base.memory.bandwidth_gbps) * cores,
                    remote_bandwidth_gbps: per_core(base.memory.remote_bandwidth_gbps) * cores,
                }
            })
            .collect();
        let latency_ns: Vec<Vec<f64>> = distance
            .iter()
            .map(|row| row.iter().map(|&d| local * f64::from(d) / 10.0).collect())
            .collect();

        // Line transfers: the xeon2s ratios (measured transfer / measured latency).
        let base_nearest_remote = base
            .memory
            .latency_ns
            .as_ref()
            .and_then(|m| m.first()?.get(1).copied())
            .unwrap_or(local * 2.0);
        let nearest_remote = latency_ns
            .iter()
            .enumerate()
            .flat_map(|(a, row)| row.iter().enumerate().filter(move |(b, _)| *b != a))
            .map(|(_, &l)| l)
            .fold(f64::INFINITY, f64::min);
        let line_transfer_remote_ns = if nearest_remote.is_finite() {
            base.memory.line_transfer_remote_ns / base_nearest_remote * nearest_remote
        } else {
            base.memory.line_transfer_remote_ns
        };
        let line_transfer_local_ns =
            base.memory.line_transfer_local_ns / base.memory.local_latency_ns * local;
        let fault_overhead_ns = base.memory.fault_overhead_ns * base.cpu.freq_mhz / freq;

        let llc_count = {
            let mut v = llc.clone();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        let (llc_bytes, llc_assumed) = match llc_bytes {
            Some(b) => (b, false),
            None => {
                // The base's LLC per core, times the cores of an LLC (on average).
                let base_llcs = (base_cores / base.cores_per_llc.max(1) as f64).max(1.0);
                let per_core_kib = base.cpu.llc_kib as f64 * base_llcs / base_cores;
                let llcs = llc_count.max(1);
                let total_cores = cores_of(&CpuSet::full(os_cpu.len())) as f64;
                let kib = (per_core_kib * total_cores / llcs as f64).max(1.0);
                ((kib * 1024.0).round() as u64, true)
            }
        };

        let cpus: Vec<Cpu> = (0..os_cpu.len())
            .map(|id| Cpu {
                id,
                node: node_of[id],
                llc: llc[id],
                core: core[id],
            })
            .collect();

        let mut assumed = vec![
            format!("local {local} ns x SLIT/10"),
            format!(
                "per core {:.2} GB/s local and {:.2} GB/s remote bandwidth",
                per_core(base.memory.bandwidth_gbps),
                per_core(base.memory.remote_bandwidth_gbps)
            ),
            format!("loaded-latency ratio {}", base.memory.loaded_latency_ratio),
            format!("MLP {}", base.cpu.mlp),
            format!("{} KiB pages", base.memory.page_kib),
            format!("line transfers {line_transfer_local_ns:.0} / {line_transfer_remote_ns:.0} ns"),
            format!("fault overhead {fault_overhead_ns:.0} ns"),
        ];
        if llc_assumed {
            assumed.push(format!("LLC {} KiB", llc_bytes >> 10));
        }
        if freq_source.is_none() {
            assumed.push(format!("clock {freq} MHz"));
        }
        let total_mem: u64 = nodes.iter().map(|n| n.mem_bytes).sum();
        let mut facts_line = vec![
            format!(
                "{} CPUs ({})",
                os_cpu.len(),
                node_cpus
                    .iter()
                    .map(|s| s.count().to_string())
                    .collect::<Vec<_>>()
                    .join("+")
            ),
            plural(cores_of(&CpuSet::full(os_cpu.len())), "core"),
        ];
        let packages = {
            let mut p: Vec<i64> = facts.iter().filter_map(|f| f.package).collect();
            p.sort_unstable();
            p.dedup();
            p.len()
        };
        if packages > 0 {
            facts_line.push(plural(packages, "package"));
        }
        if !llc_assumed {
            facts_line.push(format!(
                "{} of {} KiB",
                plural(llc_count, "LLC"),
                llc_bytes >> 10
            ));
        }
        if let Some(src) = freq_source {
            facts_line.push(format!("{freq:.0} MHz ({src})"));
        }
        facts_line.push(format!("{:.1} GiB", total_mem as f64 / (1u64 << 30) as f64));
        let shape = if numa {
            plural(nodes.len(), "node")
        } else {
            "no NUMA in this kernel, 1 node".to_string()
        };
        let mut description = format!(
            "Linux host read from {}: {shape}, {}; latencies and bandwidths assumed: {} \
             (the {SYNTHETIC_BASE} preset's figures, per core where they scale)",
            self.root.display(),
            facts_line.join(", "),
            assumed.join(", ")
        );
        let cpus_renumbered = os_cpu.iter().enumerate().any(|(i, &c)| i != c);
        let nodes_renumbered = os_node.iter().enumerate().any(|(i, &n)| i != n);
        if cpus_renumbered {
            let set: CpuSet = os_cpu.iter().copied().collect();
            description.push_str(&format!(
                "; kernel CPUs {} renumbered 0-{}",
                set.to_list_string(),
                os_cpu.len() - 1
            ));
        }
        if nodes_renumbered {
            let set: CpuSet = os_node.iter().copied().collect();
            description.push_str(&format!(
                "; kernel nodes {} renumbered 0-{}",
                set.to_list_string(),
                os_node.len() - 1
            ));
        }

        let topology = Topology {
            name: "host".to_string(),
            description: one_line(&description),
            cpus,
            nodes,
            distance,
            latency_ns,
            cpu_model: CpuModel {
                freq_mhz: freq,
                mlp: base.cpu.mlp,
                llc_bytes,
                line_bytes: line_bytes.unwrap_or(base.cpu.line_bytes),
            },
            memory: MemoryModel {
                loaded_latency_ratio: base.memory.loaded_latency_ratio,
                page_bytes: base.memory.page_kib * 1024,
                line_transfer_local_ns,
                line_transfer_remote_ns,
                fault_overhead_ns,
            },
        };
        Ok(HostTopology {
            topology,
            os_cpu,
            os_node,
            warnings: self.warnings,
        })
    }

    /// The nodes of a NUMA kernel, or `None` if the node directory lists none (then the host
    /// is read as a kernel without NUMA).
    fn numa_nodes(&mut self, online: &CpuSet) -> Result<Option<Vec<RawNode>>, TopoError> {
        let online_rel = format!("{NODE_DIR}/online");
        let ids: Vec<usize> = match self.list_opt(&online_rel)? {
            Some(set) if set.is_empty() => {
                return Err(self.err(&online_rel, "lists no online node"));
            }
            Some(set) if set.count() > MAX_NODES => {
                return Err(self.err(
                    &online_rel,
                    format!(
                        "lists {} nodes; homenode handles at most {MAX_NODES}",
                        set.count()
                    ),
                ));
            }
            Some(set) => set.iter().collect(),
            None => {
                let ids = self.numbered_entries(NODE_DIR, "node")?.unwrap_or_default();
                if ids.len() > MAX_NODES {
                    return Err(self.err(
                        NODE_DIR,
                        format!(
                            "has {} node directories; homenode handles at most {MAX_NODES}",
                            ids.len()
                        ),
                    ));
                }
                if ids.is_empty() {
                    self.warnings.push(format!(
                        "{} has no node directories: read as a kernel without NUMA",
                        self.path(NODE_DIR).display()
                    ));
                    return Ok(None);
                }
                ids
            }
        };
        let mut nodes = Vec::with_capacity(ids.len());
        for &id in &ids {
            let dir = format!("{NODE_DIR}/node{id}");
            let cpulist_rel = format!("{dir}/cpulist");
            let cpus = self.list(&cpulist_rel)?.intersection(online);
            let meminfo_rel = format!("{dir}/meminfo");
            let text = self.read(&meminfo_rel)?;
            let mem_bytes =
                memtotal(&text, Some(id)).map_err(|reason| self.err(&meminfo_rel, reason))?;
            let distance_rel = format!("{dir}/distance");
            let distance = match self.read_opt(&distance_rel)? {
                Some(text) => {
                    let row = text
                        .split_whitespace()
                        .map(|t| {
                            t.parse::<u32>().map_err(|_| {
                                self.err(&distance_rel, format!("`{t}` is not a distance"))
                            })
                        })
                        .collect::<Result<Vec<u32>, _>>()?;
                    if row.len() != ids.len() {
                        let list: CpuSet = ids.iter().copied().collect();
                        return Err(self.err(
                            &distance_rel,
                            format!(
                                "has {} entries, expected {} (one per online node: {list})",
                                row.len(),
                                ids.len()
                            ),
                        ));
                    }
                    row
                }
                None if ids.len() == 1 => vec![LOCAL_DISTANCE],
                None => return Err(self.err(&distance_rel, "is missing")),
            };
            nodes.push(RawNode {
                os_id: id,
                cpus,
                mem_bytes,
                distance,
                distance_rel,
                cpulist_rel,
            });
        }
        Ok(Some(nodes))
    }

    /// The one node of a kernel without NUMA.
    fn flat_node(&self, online: &CpuSet) -> Result<RawNode, TopoError> {
        let rel = "proc/meminfo";
        let text = self.read(rel)?;
        let mem_bytes = memtotal(&text, None).map_err(|reason| self.err(rel, reason))?;
        Ok(RawNode {
            os_id: 0,
            cpus: online.clone(),
            mem_bytes,
            distance: vec![LOCAL_DISTANCE],
            distance_rel: NODE_DIR.to_string(),
            cpulist_rel: format!("{CPU_DIR}/online"),
        })
    }

    /// Every online CPU in exactly one node.
    fn check_cpu_owners(&self, raw: &[RawNode], online: &CpuSet) -> Result<(), TopoError> {
        let mut owner: BTreeMap<usize, usize> = BTreeMap::new();
        for n in raw {
            for c in n.cpus.iter() {
                if let Some(prev) = owner.insert(c, n.os_id) {
                    return Err(self.err(
                        &n.cpulist_rel,
                        format!("CPU {c} is also in node {prev}'s cpulist"),
                    ));
                }
            }
        }
        if let Some(c) = online.iter().find(|c| !owner.contains_key(c)) {
            return Err(self.err(NODE_DIR, format!("online CPU {c} is in no node's cpulist")));
        }
        Ok(())
    }

    /// The SLIT of the kept nodes, checked: 10 on the diagonal, 11..=254 elsewhere (every row
    /// first), then symmetric.
    fn distance_matrix(&self, raw: &[RawNode], kept: &[usize]) -> Result<Vec<Vec<u32>>, TopoError> {
        let m: Vec<Vec<u32>> = kept
            .iter()
            .map(|&a| kept.iter().map(|&b| raw[a].distance[b]).collect())
            .collect();
        for (ka, &a) in kept.iter().enumerate() {
            let rel = &raw[a].distance_rel;
            for (kb, &b) in kept.iter().enumerate() {
                let d = m[ka][kb];
                let other = raw[b].os_id;
                if a == b && d != LOCAL_DISTANCE {
                    return Err(self.err(
                        rel,
                        format!("distance to itself is {d}, must be {LOCAL_DISTANCE}"),
                    ));
                }
                if a != b && !(LOCAL_DISTANCE + 1..=MAX_DISTANCE).contains(&d) {
                    return Err(self.err(
                        rel,
                        format!(
                            "distance to node {other} is {d}, must be {}..={MAX_DISTANCE}",
                            LOCAL_DISTANCE + 1
                        ),
                    ));
                }
            }
        }
        for (ka, &a) in kept.iter().enumerate() {
            let rel = &raw[a].distance_rel;
            for (kb, &b) in kept.iter().enumerate() {
                let d = m[ka][kb];
                let other = raw[b].os_id;
                if d != m[kb][ka] {
                    return Err(self.err(
                        rel,
                        format!(
                            "distance to node {other} is {d} but node {other} gives {}: the \
                             SLIT must be symmetric",
                            m[kb][ka]
                        ),
                    ));
                }
            }
        }
        Ok(m)
    }

    fn cpu_facts(&self, c: usize) -> Result<CpuFacts, TopoError> {
        let dir = format!("{CPU_DIR}/cpu{c}");
        Ok(CpuFacts {
            siblings: self.list_opt(&format!("{dir}/topology/thread_siblings_list"))?,
            package: self.number_opt(&format!("{dir}/topology/physical_package_id"))?,
            core_id: self.number_opt(&format!("{dir}/topology/core_id"))?,
            llc: self.llc(&dir)?,
        })
    }

    /// The highest-level data or unified cache of the CPU whose directory is `dir`.
    fn llc(&self, dir: &str) -> Result<Option<Llc>, TopoError> {
        let cache = format!("{dir}/cache");
        let Some(indices) = self.numbered_entries(&cache, "index")? else {
            return Ok(None);
        };
        let mut best: Option<(u32, String)> = None;
        for i in indices {
            let idx = format!("{cache}/index{i}");
            let Some(level) = self.number_opt::<u32>(&format!("{idx}/level"))? else {
                continue;
            };
            let kind = self.read_opt(&format!("{idx}/type"))?;
            if kind.as_deref().map(str::trim) == Some("Instruction") {
                continue;
            }
            if best.as_ref().is_none_or(|(l, _)| level > *l) {
                best = Some((level, idx));
            }
        }
        let Some((_, idx)) = best else {
            return Ok(None);
        };
        let size_rel = format!("{idx}/size");
        let bytes = match self.read_opt(&size_rel)? {
            Some(text) => parse_size(&text).map_err(|reason| self.err(&size_rel, reason))?,
            None => None,
        };
        let line_rel = format!("{idx}/coherency_line_size");
        let line_bytes = self.number_opt::<u64>(&line_rel)?;
        if let Some(l) = line_bytes {
            if !l.is_power_of_two() {
                return Err(self.err(&line_rel, format!("{l} is not a power of two")));
            }
        }
        Ok(Some(Llc {
            sharers: self.list_opt(&format!("{idx}/shared_cpu_list"))?,
            bytes,
            line_bytes,
        }))
    }

    /// Dense core and LLC ids per CPU, the LLC size and the line size.
    fn cores_and_llcs(
        &mut self,
        facts: &[CpuFacts],
        os_cpu: &[usize],
        dense: &BTreeMap<usize, usize>,
        node_of: &[usize],
    ) -> Grouping {
        let n = facts.len();
        // Members of `set` (kernel numbers) that are online and on CPU `c`'s node, and whether
        // some online member was on another node.
        let same_node = |c: usize, set: &CpuSet| -> (Vec<usize>, bool) {
            let v: Vec<usize> = set.iter().filter_map(|o| dense.get(&o).copied()).collect();
            let kept: Vec<usize> = v
                .iter()
                .copied()
                .filter(|&d| node_of[d] == node_of[c])
                .collect();
            let clipped = kept.len() != v.len();
            (kept, clipped)
        };

        let mut core_clipped = false;
        let mut cores = UnionFind::new(n);
        let mut by_id: BTreeMap<(usize, i64, i64), usize> = BTreeMap::new();
        for (c, f) in facts.iter().enumerate() {
            if let Some(s) = &f.siblings {
                let (members, clipped) = same_node(c, s);
                core_clipped |= clipped;
                for d in members {
                    cores.union(c, d);
                }
            } else if let (Some(p), Some(id)) = (f.package, f.core_id) {
                let first = *by_id.entry((node_of[c], p, id)).or_insert(c);
                cores.union(c, first);
            }
        }
        let mut clipped = false;

        let mut llcs = cores.clone();
        let any_llc = facts.iter().any(|f| f.llc.is_some());
        for (c, f) in facts.iter().enumerate() {
            match &f.llc {
                Some(Llc {
                    sharers: Some(s), ..
                }) => {
                    let (members, c_clipped) = same_node(c, s);
                    clipped |= c_clipped;
                    for d in members {
                        llcs.union(c, d);
                    }
                }
                Some(_) => {}
                None if !any_llc => {
                    // No cache information at all: one LLC per node.
                    if let Some(d) = (0..n).find(|&d| node_of[d] == node_of[c]) {
                        llcs.union(c, d);
                    }
                }
                None => {}
            }
        }
        if !any_llc {
            self.warnings.push(
                "no CPU has cache information (cache/index*/level): one LLC per node assumed"
                    .to_string(),
            );
        }
        if clipped {
            self.warnings.push(
                "a last-level cache is shared across nodes (e.g. sub-NUMA clustering): split \
                 per node, as the kernel's scheduler does"
                    .to_string(),
            );
        }
        if core_clipped {
            self.warnings.push(
                "SMT siblings listed on another node were ignored: cores never straddle nodes"
                    .to_string(),
            );
        }
        let core = cores.dense_ids();
        let llc = llcs.dense_ids();

        // Size: the largest LLC found; warn when they differ.
        let mut sizes: BTreeMap<u64, usize> = BTreeMap::new();
        for (c, f) in facts.iter().enumerate() {
            if let Some(b) = f.llc.as_ref().and_then(|l| l.bytes) {
                sizes.entry(b).or_insert(os_cpu[c]);
            }
        }
        if sizes.len() > 1 {
            let list: Vec<String> = sizes
                .iter()
                .map(|(b, c)| format!("{} KiB (CPU {c})", b >> 10))
                .collect();
            self.warnings.push(format!(
                "last-level caches differ in size: {}; the model uses the largest",
                list.join(", ")
            ));
        }
        let llc_bytes = sizes.keys().next_back().copied();
        let line_bytes = facts
            .iter()
            .find_map(|f| f.llc.as_ref().and_then(|l| l.line_bytes));
        Grouping {
            core,
            llc,
            llc_bytes,
            line_bytes,
        }
    }

    /// Clock in MHz and where it came from (`None`: the synthetic default).
    fn clock(&self, os_cpu: &[usize]) -> Result<(f64, Option<&'static str>), TopoError> {
        let first = os_cpu.first().copied().unwrap_or(0);
        let rel = format!("{CPU_DIR}/cpu{first}/cpufreq/cpuinfo_max_freq");
        if let Some(khz) = self.number_opt::<u64>(&rel)? {
            if khz == 0 {
                return Err(self.err(&rel, "is 0 kHz"));
            }
            return Ok((khz as f64 / 1000.0, Some("cpufreq cpuinfo_max_freq")));
        }
        let rel = "proc/cpuinfo";
        if let Some(text) = self.read_opt(rel)? {
            let mut best: Option<f64> = None;
            for line in text.lines() {
                let Some((key, value)) = line.split_once(':') else {
                    continue;
                };
                if key.trim() != "cpu MHz" {
                    continue;
                }
                let v = value.trim();
                match v.parse::<f64>() {
                    Ok(mhz) if mhz.is_finite() && mhz > 0.0 => {
                        best = Some(best.map_or(mhz, |b: f64| b.max(mhz)));
                    }
                    _ => {
                        return Err(
                            self.err(rel, format!("`cpu MHz` value `{v}` is not a clock in MHz"))
                        );
                    }
                }
            }
            if let Some(mhz) = best {
                return Ok((mhz, Some("/proc/cpuinfo cpu MHz")));
            }
        }
        Ok((presets::preset_spec(SYNTHETIC_BASE)?.cpu.freq_mhz, None))
    }
}

/// `n thing` or `n things`.
fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// `MemTotal` in bytes from `/proc/meminfo` (`MemTotal: X kB`) or a node's meminfo
/// (`Node N MemTotal: X kB`, N checked).
fn memtotal(text: &str, node: Option<usize>) -> Result<u64, String> {
    for line in text.lines() {
        let mut toks = line.split_whitespace();
        match node {
            Some(id) => {
                if toks.next() != Some("Node") {
                    continue;
                }
                let n = toks.next().unwrap_or("");
                if toks.next() != Some("MemTotal:") {
                    continue;
                }
                if n.parse::<usize>() != Ok(id) {
                    return Err(format!(
                        "MemTotal line is for node `{n}`, expected node {id}"
                    ));
                }
            }
            None => {
                if toks.next() != Some("MemTotal:") {
                    continue;
                }
            }
        }
        let value = toks.next().ok_or("MemTotal line has no value")?;
        let kb: u64 = value
            .parse()
            .map_err(|_| format!("MemTotal `{value}` is not a number of kB"))?;
        match toks.next() {
            Some("kB") => {}
            other => {
                return Err(format!(
                    "MemTotal unit is `{}`, expected `kB`",
                    other.unwrap_or("")
                ));
            }
        }
        return kb
            .checked_mul(1024)
            .ok_or_else(|| format!("MemTotal {kb} kB is too large"));
    }
    Err("has no MemTotal line".to_string())
}

/// A sysfs cache size: `32768K`, `1M`, `512` (bytes). `Ok(None)` for 0 (unknown).
fn parse_size(text: &str) -> Result<Option<u64>, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (num, suffix) = t.split_at(digits);
    let mult: u64 = match suffix {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" | "m" => 1 << 20,
        "G" | "g" => 1 << 30,
        _ => return Err(format!("`{t}` is not a size (e.g. 32768K)")),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{t}` is not a size (e.g. 32768K)"))?;
    let bytes = n
        .checked_mul(mult)
        .ok_or_else(|| format!("`{t}` is too large"))?;
    Ok((bytes > 0).then_some(bytes))
}

/// Union-find over CPU indices, for sibling and sharer lists that may be partial or
/// inconsistent: the classes are always a partition.
#[derive(Clone)]
struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n).collect(),
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        // The smaller root wins, so ids follow the lowest CPU of each class.
        if ra < rb {
            self.parent[rb] = ra;
        } else {
            self.parent[ra] = rb;
        }
    }

    /// Class ids 0, 1, ... in order of each class's lowest member.
    fn dense_ids(&mut self) -> Vec<usize> {
        let n = self.parent.len();
        let mut ids: BTreeMap<usize, usize> = BTreeMap::new();
        (0..n)
            .map(|c| {
                let r = self.find(c);
                let next = ids.len();
                *ids.entry(r).or_insert(next)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memtotal_parses_both_formats() {
        let node = "Node 1 MemTotal:       16314748 kB\nNode 1 MemFree: 1 kB\n";
        assert_eq!(memtotal(node, Some(1)), Ok(16_314_748 * 1024));
        assert!(
            memtotal(node, Some(0))
                .unwrap_err()
                .contains("expected node 0")
        );
        let proc = "MemTotal:       24684084 kB\nMemFree: 3 kB\n";
        assert_eq!(memtotal(proc, None), Ok(24_684_084 * 1024));
        assert!(
            memtotal("MemTotal: x kB", None)
                .unwrap_err()
                .contains("`x`")
        );
        assert!(
            memtotal("MemTotal: 5 MB", None)
                .unwrap_err()
                .contains("`MB`")
        );
        assert!(memtotal("MemTotal: 5", None).unwrap_err().contains("unit"));
        assert!(
            memtotal("MemTotal:", None)
                .unwrap_err()
                .contains("no value")
        );
        assert!(memtotal("", None).unwrap_err().contains("no MemTotal"));
        let huge = format!("MemTotal: {} kB", u64::MAX);
        assert!(memtotal(&huge, None).unwrap_err().contains("too large"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32768K\n"), Ok(Some(32 << 20)));
        assert_eq!(parse_size("2M"), Ok(Some(2 << 20)));
        assert_eq!(parse_size("512"), Ok(Some(512)));
        assert_eq!(parse_size("0K"), Ok(None));
        for bad in ["", "K", "12Q", "-1K", "1.5M", "99999999999999999999K"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn union_find_partitions_inconsistent_lists() {
        let mut uf = UnionFind::new(6);
        uf.union(4, 0);
        uf.union(5, 1);
        uf.union(1, 5);
        assert_eq!(uf.dense_ids(), vec![0, 1, 2, 3, 0, 1]);
    }
}
