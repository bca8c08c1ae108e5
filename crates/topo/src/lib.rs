//! NUMA machine topology: nodes, last-level caches, cores and CPUs, the SLIT distance table,
//! per-node memory, and the hardware facts the simulator's cost model needs (latencies,
//! bandwidths, cache sizes).
//!
//! A [`Topology`] is plain data. It is built from a machine spec (TOML file, preset name or
//! a synthetic `key=value` list, see [`spec`], [`presets`] and [`synthetic`]; [`resolve_machine`]
//! takes any of them) or read from the running Linux host ([`sysfs`];
//! [`fake_numa`] splits a one-node host into pseudo-nodes), and validated once, so that every
//! consumer (simulator, policies, daemon) can index it without checks. Scheduling domains are
//! derived from it the way the kernel derives them ([`domains`]).

pub mod cpuset;
pub mod domains;
pub mod error;
pub mod fake;
pub mod input;
pub mod plural;
pub mod presets;
pub mod resolve;
pub mod spec;
pub mod synthetic;
pub mod sysfs;

pub use cpuset::{CpuListError, CpuSet};
pub use domains::{DomainKind, DomainLevel, flat_domain, node_domains, sched_domains};
pub use error::{ParseError, TopoError};
pub use fake::fake_numa;
pub use plural::count;
pub use presets::{PRESETS, preset};
pub use resolve::resolve_machine;
pub use spec::MachineSpec;
pub use synthetic::parse_synthetic;
pub use sysfs::{HostTopology, read_host, read_host_detailed};

pub type CpuId = usize;
pub type NodeId = usize;

/// One logical CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct Cpu {
    pub id: CpuId,
    pub node: NodeId,
    /// Global index of the last-level cache this CPU shares.
    pub llc: usize,
    /// Global index of the physical core (SMT siblings share it).
    pub core: usize,
}

/// One NUMA node: its CPUs and its memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub id: NodeId,
    pub cpus: CpuSet,
    /// Memory attached to this node, in bytes.
    pub mem_bytes: u64,
    /// Peak bandwidth of this node's memory controllers, bytes per nanosecond (= GB/s).
    pub bandwidth_gbps: f64,
    /// Peak bandwidth for traffic arriving from other nodes over the interconnect (GB/s).
    pub remote_bandwidth_gbps: f64,
}

/// Per-CPU facts used by the cost model.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuModel {
    /// Core clock in MHz.
    pub freq_mhz: f64,
    /// Memory-level parallelism: independent cache misses one CPU keeps in flight on average.
    pub mlp: f64,
    /// Lines one CPU keeps in flight for a sequential stream (its hardware prefetchers run
    /// ahead of the loads), when a machine file or `--machine-set` gives it; else `mlp`
    /// ([`CpuModel::stream_mlp`]).
    pub stream_mlp: Option<f64>,
    /// Load-to-use latency of a random access that hits the last-level cache, ns, when a
    /// machine file or `--machine-set` gives it; else such hits are free.
    pub llc_latency_ns: Option<f64>,
    /// Size of one last-level cache, in bytes.
    pub llc_bytes: u64,
    /// Cache line size, bytes.
    pub line_bytes: u64,
    /// Stores a CPU can hold retired but not yet written to its cache (store buffer / store
    /// queue entries): how long it runs on while waiting for ownership of a line it writes.
    /// 0 when not known (no credit).
    pub store_buffer: u32,
    /// The core issues past a load that misses (out-of-order execution): one operation's core
    /// work and its memory stalls overlap, and it costs the longest of them rather than their
    /// sum (docs/model/memory-and-cost.md, "Overlap"). `false`: an in-order core that stalls at the first
    /// use of a missing load, so the parts add up.
    pub out_of_order: bool,
    /// ns to fetch again one line of a random region that another task's turn on the cache
    /// evicted, from local memory, TLB walks included (measured by `homenode bench probe`);
    /// `None`: a miss instead of a hit (docs/model/caches.md, "Turns on a cache").
    pub refill_ns: Option<f64>,
    /// The share of a stream's lines that take a place in the last-level cache as any line
    /// would, from 0 to 1 (docs/model/caches.md, "A task's streams in its cache"). 1: an LRU cache
    /// (or an approximation of one) that keeps the lines streamed through as recently used,
    /// so they push out the random data; 0: a scan-resistant cache that inserts them where
    /// they leave first (the simulator's `kernel::lru`).
    pub llc_stream_share: f64,
    /// Ways of the last-level cache: lines per set, each set filled from the pages that land
    /// on it (docs/model/caches.md, "Sets"); `None`: fully associative.
    pub llc_ways: Option<u32>,
    /// Each CPU holds its own part of the LLC, `llc_bytes` of it, and no other CPU's tasks
    /// use or evict it (a guest's vCPUs on separate parts of the host's cache, say), though
    /// the scheduler sees one shared LLC; `false`: the CPUs of an LLC share all of it
    /// (docs/model/caches.md, "A CPU's own part of the LLC").
    pub llc_private: bool,
    /// Entries of the last data TLB level for base pages (fully associative), when a machine
    /// file gives it; `None`: translations are free (docs/model/memory-and-cost.md, "TLB walks").
    pub tlb_entries: Option<u32>,
    /// Core cycles a random access spends on a page walk when it misses that TLB, the walk's
    /// page-table entry read from the core's caches (0: free).
    pub tlb_walk_cycles: f64,
}

impl CpuModel {
    /// Lines in flight for a sequential stream: the given figure, else `mlp`.
    pub fn stream_mlp(&self) -> f64 {
        self.stream_mlp.unwrap_or(self.mlp)
    }
}

/// Memory-system facts used by the cost model.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryModel {
    /// Ratio of the load-to-use latency at peak bandwidth use to the idle latency.
    pub loaded_latency_ratio: f64,
    /// Base page size in bytes (the unit of first-touch faults).
    pub page_bytes: u64,
    /// Cost of moving a written cache line between two CPUs of the same node, ns.
    pub line_transfer_local_ns: f64,
    /// Cost of moving a written cache line between CPUs of different nodes, ns (nearest remote;
    /// scaled by distance for farther nodes).
    pub line_transfer_remote_ns: f64,
    /// Kernel cost of one page fault that allocates and zeroes a page, excluding the zeroing
    /// bandwidth, ns.
    pub fault_overhead_ns: f64,
}

/// A validated NUMA machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Preset or spec name, e.g. `azusa16`.
    pub name: String,
    /// One line saying what the machine is.
    pub description: String,
    pub cpus: Vec<Cpu>,
    pub nodes: Vec<Node>,
    /// SLIT distances, `distance[a][b]`, 10 on the diagonal.
    pub distance: Vec<Vec<u32>>,
    /// Idle load-to-use latency in ns from a CPU of node `a` to memory of node `b`:
    /// `latency_ns[a][b]`. Either given explicitly or derived as local latency x distance / 10.
    pub latency_ns: Vec<Vec<f64>>,
    pub cpu_model: CpuModel,
    pub memory: MemoryModel,
}

impl Topology {
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    pub fn nr_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The data TLB the cost model charges walks for: its reach in bytes (entries x base
    /// page) and the cycles of a walk; `None` when the machine gives none or walks are free.
    pub fn tlb(&self) -> Option<(f64, f64)> {
        let c = &self.cpu_model;
        let entries = c.tlb_entries?;
        let reach = entries as f64 * self.memory.page_bytes as f64;
        (c.tlb_walk_cycles > 0.0).then_some((reach, c.tlb_walk_cycles))
    }

    pub fn node_of(&self, cpu: CpuId) -> NodeId {
        self.cpus[cpu].node
    }

    pub fn node_cpus(&self, node: NodeId) -> &CpuSet {
        &self.nodes[node].cpus
    }

    pub fn all_cpus(&self) -> CpuSet {
        CpuSet::full(self.cpus.len())
    }

    pub fn distance(&self, a: NodeId, b: NodeId) -> u32 {
        self.distance[a][b]
    }

    pub fn latency_ns(&self, cpu_node: NodeId, mem_node: NodeId) -> f64 {
        self.latency_ns[cpu_node][mem_node]
    }

    /// Nodes ordered by distance from `node` (itself first), ties by node id.
    pub fn nodes_by_distance(&self, node: NodeId) -> Vec<NodeId> {
        let mut v: Vec<NodeId> = (0..self.nodes.len()).collect();
        v.sort_by_key(|&n| (self.distance[node][n], n));
        v
    }

    /// CPUs sharing `cpu`'s last-level cache.
    pub fn llc_cpus(&self, cpu: CpuId) -> CpuSet {
        let llc = self.cpus[cpu].llc;
        self.cpus
            .iter()
            .filter(|c| c.llc == llc)
            .map(|c| c.id)
            .collect()
    }

    /// SMT siblings of `cpu` (including itself).
    pub fn core_cpus(&self, cpu: CpuId) -> CpuSet {
        let core = self.cpus[cpu].core;
        self.cpus
            .iter()
            .filter(|c| c.core == core)
            .map(|c| c.id)
            .collect()
    }

    /// Total memory of the machine in bytes.
    pub fn total_mem_bytes(&self) -> u64 {
        self.nodes.iter().map(|n| n.mem_bytes).sum()
    }

    /// Nanoseconds per CPU cycle.
    pub fn ns_per_cycle(&self) -> f64 {
        1000.0 / self.cpu_model.freq_mhz
    }
}
