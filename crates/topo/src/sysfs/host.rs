//! Putting the host together: the online CPUs, the nodes kept, the dense numbering, cores and
//! LLCs, the clock; then what sysfs cannot tell, scaled from the [`SYNTHETIC_BASE`] preset (per
//! core where it scales, by SLIT for latency); then the one-line description that says what
//! was read and what was assumed. Each step is a method or a small struct below, in the order
//! [`Reader::host`] runs them (warnings come out in that order).

use std::collections::BTreeMap;

use super::cpus::{CpuFacts, Grouping};
use super::nodes::RawNode;
use super::{CPU_DIR, HostTopology, NODE_DIR, Reader, plural};
use crate::error::{TopoError, one_line};
use crate::spec::{MAX_CPUS, MachineSpec};
use crate::synthetic::SYNTHETIC_BASE;
use crate::{Cpu, CpuModel, CpuSet, MemoryModel, Node, Topology, presets};

/// Dense numbering of the online CPUs and the kept nodes.
struct Numbering {
    /// Kernel CPU number of each dense CPU.
    os_cpu: Vec<usize>,
    /// Dense number of each online kernel CPU.
    dense: BTreeMap<usize, usize>,
    /// Kernel node number of each dense node.
    os_node: Vec<usize>,
    /// Dense node of each dense CPU.
    node_of: Vec<usize>,
    /// Dense CPUs of each dense node.
    node_cpus: Vec<CpuSet>,
}

impl Numbering {
    fn new(online: &CpuSet, raw: &[RawNode], kept: &[usize]) -> Self {
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
        Numbering {
            os_cpu,
            dense,
            os_node,
            node_of,
            node_cpus,
        }
    }
}

/// Distinct cores among `set`'s CPUs.
fn cores_of(core: &[usize], set: &CpuSet) -> usize {
    let mut v: Vec<usize> = set.iter().map(|c| core[c]).collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// Distinct values of `ids`.
fn distinct<T: Ord + Clone>(ids: &[T]) -> usize {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// The memory model: what sysfs gave, and the rest scaled from the base preset.
struct Scaled {
    /// The base's figure per core divides by this.
    base_cores: f64,
    /// Idle local latency (the base's).
    local: f64,
    nodes: Vec<Node>,
    latency_ns: Vec<Vec<f64>>,
    line_transfer_local_ns: f64,
    line_transfer_remote_ns: f64,
    fault_overhead_ns: f64,
    llc_bytes: u64,
    /// The LLC size is the base's per core, not read.
    llc_assumed: bool,
    llc_count: usize,
}

impl Scaled {
    fn new(
        base: &MachineSpec,
        num: &Numbering,
        grouping: &Grouping,
        mem_bytes: &[u64],
        distance: &[Vec<u32>],
        freq: f64,
    ) -> Self {
        let base_cores = (base.cpus_per_node / base.smt.max(1)).max(1) as f64;
        let per_core = |x: f64| x / base_cores;
        let local = base.memory.local_latency_ns;
        let nodes: Vec<Node> = num
            .node_cpus
            .iter()
            .enumerate()
            .map(|(k, set)| {
                let cores = cores_of(&grouping.core, set) as f64;
                Node {
                    id: k,
                    cpus: set.clone(),
                    mem_bytes: mem_bytes[k],
                    bandwidth_gbps: per_core(base.memory.bandwidth_gbps) * cores,
                    remote_bandwidth_gbps: per_core(base.memory.remote_bandwidth_gbps) * cores,
                }
            })
            .collect();
        let latency_ns: Vec<Vec<f64>> = distance
            .iter()
            .map(|row| row.iter().map(|&d| local * f64::from(d) / 10.0).collect())
            .collect();
        let (line_transfer_local_ns, line_transfer_remote_ns) =
            line_transfers(base, &latency_ns, local);
        let fault_overhead_ns = base.memory.fault_overhead_ns * base.cpu.freq_mhz / freq;
        let llc_count = distinct(&grouping.llc);
        let (llc_bytes, llc_assumed) = match grouping.llc_bytes {
            Some(b) => (b, false),
            None => {
                // The base's LLC per core, times the cores of an LLC (on average).
                let base_llcs = (base_cores / base.cores_per_llc.max(1) as f64).max(1.0);
                let per_core_kib = base.cpu.llc_kib as f64 * base_llcs / base_cores;
                let llcs = llc_count.max(1);
                let total_cores = cores_of(&grouping.core, &CpuSet::full(num.os_cpu.len())) as f64;
                let kib = (per_core_kib * total_cores / llcs as f64).max(1.0);
                ((kib * 1024.0).round() as u64, true)
            }
        };
        Scaled {
            base_cores,
            local,
            nodes,
            latency_ns,
            line_transfer_local_ns,
            line_transfer_remote_ns,
            fault_overhead_ns,
            llc_bytes,
            llc_assumed,
            llc_count,
        }
    }

    /// The figures taken from the base preset, for the description.
    fn assumed(&self, base: &MachineSpec, freq: f64, freq_read: bool) -> Vec<String> {
        let per_core = |x: f64| x / self.base_cores;
        let mut assumed = vec![
            format!("local {} ns x SLIT/10", self.local),
            format!(
                "per core {:.2} GB/s local and {:.2} GB/s remote bandwidth",
                per_core(base.memory.bandwidth_gbps),
                per_core(base.memory.remote_bandwidth_gbps)
            ),
            format!("loaded-latency ratio {}", base.memory.loaded_latency_ratio),
            format!("MLP {}", base.cpu.mlp),
            if base.cpu.out_of_order {
                "out-of-order core".to_string()
            } else {
                "in-order core".to_string()
            },
            format!("store buffer {} entries", base.cpu.store_buffer),
            format!("{} KiB pages", base.memory.page_kib),
            format!(
                "line transfers {:.0} / {:.0} ns",
                self.line_transfer_local_ns, self.line_transfer_remote_ns
            ),
            format!("fault overhead {:.0} ns", self.fault_overhead_ns),
        ];
        if self.llc_assumed {
            assumed.push(format!("LLC {} KiB", self.llc_bytes >> 10));
        }
        if !freq_read {
            assumed.push(format!("clock {freq} MHz"));
        }
        assumed
    }
}

/// Cache-line transfer costs, local and remote: the base's ratios of transfer to measured
/// latency, applied to this host's local and nearest-remote latency.
fn line_transfers(base: &MachineSpec, latency_ns: &[Vec<f64>], local: f64) -> (f64, f64) {
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
    (line_transfer_local_ns, line_transfer_remote_ns)
}

/// The clock in MHz and where it was read (`None`: the base's).
struct Clock {
    mhz: f64,
    source: Option<&'static str>,
}

impl Reader<'_> {
    /// Reads the whole host: each step below, in order.
    pub(super) fn host(mut self) -> Result<HostTopology, TopoError> {
        let online = self.online_cpus()?;
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
        let kept = self.keep_nodes(&raw);
        let distance = self.distance_matrix(&raw, &kept)?;
        let num = Numbering::new(&online, &raw, &kept);

        let facts: Vec<CpuFacts> = num
            .os_cpu
            .iter()
            .map(|&c| self.cpu_facts(c))
            .collect::<Result<_, _>>()?;
        let grouping = self.cores_and_llcs(&facts, &num.os_cpu, &num.dense, &num.node_of);
        let (mhz, source) = self.clock(&num.os_cpu)?;
        let clock = Clock { mhz, source };

        let base = presets::preset_spec(SYNTHETIC_BASE)?;
        let mem_bytes: Vec<u64> = kept.iter().map(|&i| raw[i].mem_bytes).collect();
        let scaled = Scaled::new(&base, &num, &grouping, &mem_bytes, &distance, clock.mhz);
        let description = self.describe(numa, &num, &grouping, &facts, &scaled, &clock, &base);
        let cpus: Vec<Cpu> = (0..num.os_cpu.len())
            .map(|id| Cpu {
                id,
                node: num.node_of[id],
                llc: grouping.llc[id],
                core: grouping.core[id],
            })
            .collect();
        let topology = Topology {
            name: "host".to_string(),
            description: one_line(&description),
            cpus,
            nodes: scaled.nodes,
            distance,
            latency_ns: scaled.latency_ns,
            cpu_model: CpuModel {
                freq_mhz: clock.mhz,
                mlp: base.cpu.mlp,
                stream_mlp: base.cpu.stream_mlp,
                llc_latency_ns: base.cpu.llc_latency_ns,
                llc_bytes: scaled.llc_bytes,
                line_bytes: grouping.line_bytes.unwrap_or(base.cpu.line_bytes),
                store_buffer: base.cpu.store_buffer,
                out_of_order: base.cpu.out_of_order,
                refill_ns: base.cpu.refill_ns,
                llc_stream_share: base.cpu.llc_stream_share,
                llc_ways: grouping.llc_ways,
                llc_private: false,
                // The host's latency figures (the preset's, or the probe's) include its walks.
                tlb_entries: None,
                tlb_walk_cycles: 0.0,
            },
            memory: MemoryModel {
                loaded_latency_ratio: base.memory.loaded_latency_ratio,
                page_bytes: base.memory.page_kib * 1024,
                line_transfer_local_ns: scaled.line_transfer_local_ns,
                line_transfer_remote_ns: scaled.line_transfer_remote_ns,
                fault_overhead_ns: scaled.fault_overhead_ns,
            },
        };
        Ok(HostTopology {
            topology,
            os_cpu: num.os_cpu,
            os_node: num.os_node,
            warnings: self.warnings,
        })
    }

    /// The online CPUs (`cpu/online`, mandatory): at least one, at most [`MAX_CPUS`].
    fn online_cpus(&self) -> Result<CpuSet, TopoError> {
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
        Ok(online)
    }

    /// The description: where it was read, what it has, what was assumed, and the kernel
    /// numbers when they were renumbered.
    fn describe(
        &self,
        numa: bool,
        num: &Numbering,
        grouping: &Grouping,
        facts: &[CpuFacts],
        scaled: &Scaled,
        clock: &Clock,
        base: &MachineSpec,
    ) -> String {
        let os_cpu = &num.os_cpu;
        let assumed = scaled.assumed(base, clock.mhz, clock.source.is_some());
        let facts_line = facts_line(num, grouping, facts, scaled, clock);
        let shape = if numa {
            plural(scaled.nodes.len(), "node")
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
        let nodes_renumbered = num.os_node.iter().enumerate().any(|(i, &n)| i != n);
        if cpus_renumbered {
            let set: CpuSet = os_cpu.iter().copied().collect();
            description.push_str(&format!(
                "; kernel CPUs {} renumbered 0-{}",
                set.to_list_string(),
                os_cpu.len() - 1
            ));
        }
        if nodes_renumbered {
            let set: CpuSet = num.os_node.iter().copied().collect();
            description.push_str(&format!(
                "; kernel nodes {} renumbered 0-{}",
                set.to_list_string(),
                num.os_node.len() - 1
            ));
        }
        description
    }
}

/// What was read: CPUs per node, cores, packages, LLCs, clock and memory.
fn facts_line(
    num: &Numbering,
    grouping: &Grouping,
    facts: &[CpuFacts],
    scaled: &Scaled,
    clock: &Clock,
) -> Vec<String> {
    let total_mem: u64 = scaled.nodes.iter().map(|n| n.mem_bytes).sum();
    let mut line = vec![
        format!(
            "{} ({})",
            crate::count(num.os_cpu.len(), "CPU"),
            num.node_cpus
                .iter()
                .map(|s| s.count().to_string())
                .collect::<Vec<_>>()
                .join("+")
        ),
        plural(
            cores_of(&grouping.core, &CpuSet::full(num.os_cpu.len())),
            "core",
        ),
    ];
    let packages: Vec<i64> = facts.iter().filter_map(|f| f.package).collect();
    let packages = distinct(&packages);
    if packages > 0 {
        line.push(plural(packages, "package"));
    }
    if !scaled.llc_assumed {
        let ways = grouping
            .llc_ways
            .map(|w| format!(", {w}-way"))
            .unwrap_or_default();
        line.push(format!(
            "{} of {} KiB{ways}",
            plural(scaled.llc_count, "LLC"),
            scaled.llc_bytes >> 10
        ));
    }
    if let Some(src) = clock.source {
        line.push(format!("{:.0} MHz ({src})", clock.mhz));
    }
    line.push(format!("{:.1} GiB", total_mem as f64 / (1u64 << 30) as f64));
    line
}
