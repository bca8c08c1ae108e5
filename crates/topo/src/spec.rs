//! Machine specs: the TOML machine file format and the one place where a spec becomes a
//! validated [`Topology`]. Presets ([`crate::presets`]) and command-line `key=value` specs
//! ([`crate::synthetic`]) are built on it; it imports neither.
//!
//! A spec is checked completely before anything is built: every count, matrix and number is
//! range-checked and the first problem is reported as one [`TopoError`] line naming the field.
//! No input, however malformed, makes this module panic.
//!
//! CPU numbering is node-major (node 0 holds CPUs `0..cpus_per_node`), SMT siblings are
//! adjacent, and core and LLC ids are global: CPU `c` sits on core `c / smt` and on LLC
//! `core / cores_per_llc`. Cores and LLCs never straddle a node.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{TopoError, one_line};
use crate::{Cpu, CpuModel, MemoryModel, Node, Topology};

mod diagnose;

/// Turns a `toml` error in `text` (read from `origin`) into a one-line error naming the file,
/// line, column and the dotted key at fault; other TOML configuration files reuse it.
pub use diagnose::toml_error;

/// Largest machine accepted: spans and groups are kept per CPU, so memory grows with the square
/// of the CPU count.
pub const MAX_CPUS: usize = 4096;
/// Largest node count accepted (the distance matrix is `nodes x nodes`).
pub const MAX_NODES: usize = 1024;

/// SLIT distance of a node to itself.
pub const LOCAL_DISTANCE: u32 = 10;
/// Distinct remote distances a SLIT may hold. Each is a level of scheduling domains (the
/// kernel's `sched_init_numa()`), whose groups are kept for every CPU: real tables have a
/// handful (Kunpeng 920: 3; 8-socket machines: 3 or 4), and 1,024 nodes with 89 distinct
/// distances took 200 MB and minutes to describe.
pub const MAX_REMOTE_DISTANCES: usize = 16;
/// Largest usable SLIT distance (255 means "unreachable" in ACPI).
pub const MAX_DISTANCE: u32 = 254;

const GIB: f64 = (1u64 << 30) as f64;

/// One machine file (see `docs/MACHINES.md` for the format reference).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub nodes: usize,
    /// Logical CPUs per node (threads, not cores).
    pub cpus_per_node: usize,
    /// Hardware threads per core.
    #[serde(default = "one")]
    pub smt: usize,
    /// Cores sharing one last-level cache.
    #[serde(default = "one")]
    pub cores_per_llc: usize,
    pub mem_gib_per_node: f64,
    /// Full SLIT matrix. Exactly one of `distance` / `remote_distance` for 2+ nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance: Option<Vec<Vec<u32>>>,
    /// Distance of every remote node pair, when all are equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_distance: Option<u32>,
    pub cpu: CpuSpec,
    pub memory: MemorySpec,
    /// Per-node overrides, `[[node]]` tables.
    #[serde(default, rename = "node", skip_serializing_if = "Vec::is_empty")]
    pub node_overrides: Vec<NodeOverride>,
    /// Where the spec came from (file path, preset, command line); used in error messages.
    #[serde(skip)]
    pub origin: String,
}

/// `[cpu]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSpec {
    pub freq_mhz: f64,
    /// Independent cache misses in flight per CPU, on average (>= 1).
    pub mlp: f64,
    /// Size of one last-level cache, KiB.
    pub llc_kib: u64,
    #[serde(default = "line_default")]
    pub line_bytes: u64,
    /// Store buffer (store queue) entries per CPU; 0 (the default) gives writers no credit.
    #[serde(default)]
    pub store_buffer: u32,
    /// Lines one CPU keeps in flight for a sequential stream (hardware prefetchers), >= 1;
    /// absent: `mlp` (no prefetch credit beyond what random misses get).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_mlp: Option<f64>,
    /// Load-to-use latency of a random access that hits the last-level cache, ns; absent:
    /// hits cost nothing beyond the operation's core cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_latency_ns: Option<f64>,
    /// The core executes out of order, overlapping an operation's core work with its memory
    /// stalls; absent: `false`, an in-order core whose stalls add to its work.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub out_of_order: bool,
    /// ns to fetch again one line of a random-access region that another task's turn on the
    /// cache evicted, local memory, TLB walks included (`homenode bench probe` measures it);
    /// absent: a miss instead of a hit, `(local latency - llc_latency_ns) / mlp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refill_ns: Option<f64>,
    /// The share of a stream's lines that take a place in the LLC as any line would, 0 to 1
    /// (`homenode bench probe` measures it); absent: 0, streams do not push out other data.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub llc_stream_share: f64,
    /// Ways of the last-level cache (lines per set), >= 1; absent: fully associative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_ways: Option<u32>,
    /// Each CPU holds its own `llc_kib` of the LLC, which the others neither use nor evict
    /// (the scheduler still sees the LLC shared); absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub llc_private: bool,
    /// Entries of the last-level data TLB for base pages (fully associative), >= 1; with
    /// `tlb_walk_cycles`. Absent: address translation is free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb_entries: Option<u32>,
    /// Core cycles of a page walk after a miss in that TLB, >= 0; with `tlb_entries`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb_walk_cycles: Option<f64>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// `[memory]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    pub local_latency_ns: f64,
    /// Explicit `nodes x nodes` idle latency matrix (ns); else `local x distance / 10`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<Vec<Vec<f64>>>,
    /// Per-node memory bandwidth, GB/s.
    pub bandwidth_gbps: f64,
    /// Per-node bandwidth for traffic arriving from other nodes, GB/s.
    pub remote_bandwidth_gbps: f64,
    pub loaded_latency_ratio: f64,
    #[serde(default = "page_default")]
    pub page_kib: u64,
    pub line_transfer_local_ns: f64,
    pub line_transfer_remote_ns: f64,
    pub fault_overhead_ns: f64,
}

/// `[[node]]` table: overrides for one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeOverride {
    pub id: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_gib: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_bandwidth_gbps: Option<f64>,
}

fn one() -> usize {
    1
}
fn line_default() -> u64 {
    64
}
fn page_default() -> u64 {
    4
}

impl MachineSpec {
    /// Parses a machine file. `origin` (a path or preset name) is quoted in every error.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<MachineSpec, TopoError> {
        let mut spec: MachineSpec =
            toml::from_str(text).map_err(|e| diagnose::toml_error(text, origin, &e))?;
        spec.origin = origin.to_string();
        Ok(spec)
    }

    /// Reads and parses a machine file.
    pub fn from_file(path: &str) -> Result<MachineSpec, TopoError> {
        let text = crate::input::read_input(Path::new(path)).map_err(|e| match e {
            crate::input::InputError::Io { error, .. } => TopoError::Io {
                path: path.to_string(),
                error,
            },
            refused => TopoError::Input(refused.to_string()),
        })?;
        Self::from_toml_str(&text, path)
    }

    /// The spec as TOML text (numbers only; the source comments of presets are not kept).
    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Validates the spec and builds the machine.
    pub fn into_topology(self) -> Result<Topology, TopoError> {
        let origin = if self.origin.is_empty() {
            format!("machine `{}`", self.name)
        } else {
            self.origin.clone()
        };
        let o = origin.as_str();
        let shape = self.check_shape(o)?;
        let distance = self.resolve_distance(o)?;
        let latency_ns = self.resolve_latency(o, &distance)?;
        let cpu_model = self.cpu_model(o)?;
        let memory = self.memory_model(o)?;
        let nodes = self.build_nodes(o, &shape)?;
        let cpus = (0..self.nodes * shape.cpn)
            .map(|id| {
                let core = id / self.smt;
                Cpu {
                    id,
                    node: id / shape.cpn,
                    llc: core / self.cores_per_llc,
                    core,
                }
            })
            .collect();
        let description = if self.description.trim().is_empty() {
            format!(
                "{} x {}",
                crate::count(self.nodes, "node"),
                crate::count(shape.cpn, "CPU")
            )
        } else {
            one_line(&self.description)
        };
        Ok(Topology {
            name: self.name,
            description,
            cpus,
            nodes,
            distance,
            latency_ns,
            cpu_model,
            memory,
        })
    }

    fn check_shape(&self, o: &str) -> Result<Shape, TopoError> {
        if self.name.trim().is_empty() {
            return Err(TopoError::impossible(o, "name", "must not be empty"));
        }
        if self.nodes == 0 || self.nodes > MAX_NODES {
            return Err(TopoError::impossible(
                o,
                "nodes",
                format!("is {}, must be 1..={MAX_NODES}", self.nodes),
            ));
        }
        let cpn = self.cpus_per_node;
        if cpn == 0 {
            return Err(TopoError::impossible(
                o,
                "cpus_per_node",
                "is 0: a node needs CPUs",
            ));
        }
        match self.nodes.checked_mul(cpn) {
            Some(total) if total <= MAX_CPUS => {}
            _ => {
                return Err(TopoError::impossible(
                    o,
                    "cpus_per_node",
                    format!("{} nodes x {cpn} CPUs exceeds {MAX_CPUS} CPUs", self.nodes),
                ));
            }
        }
        if self.smt == 0 || cpn % self.smt != 0 {
            return Err(TopoError::impossible(
                o,
                "smt",
                format!(
                    "is {}, must be >= 1 and divide cpus_per_node ({cpn})",
                    self.smt
                ),
            ));
        }
        let cores = cpn / self.smt;
        if self.cores_per_llc == 0 || cores % self.cores_per_llc != 0 {
            return Err(TopoError::impossible(
                o,
                "cores_per_llc",
                format!(
                    "is {}, must be >= 1 and divide the {cores} cores of a node \
                     (an LLC cannot straddle nodes)",
                    self.cores_per_llc
                ),
            ));
        }
        let mem_bytes = gib_to_bytes(o, "mem_gib_per_node", self.mem_gib_per_node)?;
        Ok(Shape { cpn, mem_bytes })
    }

    fn resolve_distance(&self, o: &str) -> Result<Vec<Vec<u32>>, TopoError> {
        let n = self.nodes;
        match (&self.distance, self.remote_distance) {
            (Some(_), Some(_)) => Err(TopoError::impossible(
                o,
                "distance",
                "and `remote_distance` are both given; give only one",
            )),
            (Some(m), None) => {
                check_distance_matrix(o, m, n)?;
                Ok(m.clone())
            }
            (None, Some(r)) => {
                if !(LOCAL_DISTANCE + 1..=MAX_DISTANCE).contains(&r) {
                    return Err(TopoError::impossible(
                        o,
                        "remote_distance",
                        format!("is {r}, must be {}..={MAX_DISTANCE}", LOCAL_DISTANCE + 1),
                    ));
                }
                Ok((0..n)
                    .map(|a| {
                        (0..n)
                            .map(|b| if a == b { LOCAL_DISTANCE } else { r })
                            .collect()
                    })
                    .collect())
            }
            (None, None) if n == 1 => Ok(vec![vec![LOCAL_DISTANCE]]),
            (None, None) => Err(TopoError::impossible(
                o,
                "distance",
                format!("is missing: {n} nodes need a `distance` matrix or `remote_distance`"),
            )),
        }
    }

    fn resolve_latency(&self, o: &str, distance: &[Vec<u32>]) -> Result<Vec<Vec<f64>>, TopoError> {
        let local = self.memory.local_latency_ns;
        positive(o, "memory.local_latency_ns", local)?;
        let n = self.nodes;
        let Some(m) = &self.memory.latency_ns else {
            return Ok(distance
                .iter()
                .map(|row| row.iter().map(|&d| local * f64::from(d) / 10.0).collect())
                .collect());
        };
        check_square(o, "memory.latency_ns", m, n)?;
        for (a, row) in m.iter().enumerate() {
            for (b, &v) in row.iter().enumerate() {
                positive(o, &format!("memory.latency_ns[{a}][{b}]"), v)?;
            }
        }
        Ok(m.clone())
    }

    fn cpu_model(&self, o: &str) -> Result<CpuModel, TopoError> {
        let c = &self.cpu;
        positive(o, "cpu.freq_mhz", c.freq_mhz)?;
        if !(c.mlp.is_finite() && c.mlp >= 1.0) {
            return Err(TopoError::impossible(
                o,
                "cpu.mlp",
                format!("is {}, must be a finite number >= 1", c.mlp),
            ));
        }
        let llc_bytes = c
            .llc_kib
            .checked_mul(1024)
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                TopoError::impossible(o, "cpu.llc_kib", format!("is {}, must be > 0", c.llc_kib))
            })?;
        power_of_two(o, "cpu.line_bytes", c.line_bytes)?;
        if let Some(s) = c.stream_mlp.filter(|s| !(s.is_finite() && *s >= 1.0)) {
            return Err(TopoError::impossible(
                o,
                "cpu.stream_mlp",
                format!("is {s}, must be a finite number >= 1"),
            ));
        }
        if let Some(l) = c.llc_latency_ns.filter(|l| !(l.is_finite() && *l >= 0.0)) {
            return Err(TopoError::impossible(
                o,
                "cpu.llc_latency_ns",
                format!("is {l}, must be a finite number >= 0"),
            ));
        }
        if let Some(r) = c.refill_ns.filter(|r| !(r.is_finite() && *r >= 0.0)) {
            return Err(TopoError::impossible(
                o,
                "cpu.refill_ns",
                format!("is {r}, must be a finite number >= 0"),
            ));
        }
        if !(c.llc_stream_share.is_finite() && (0.0..=1.0).contains(&c.llc_stream_share)) {
            return Err(TopoError::impossible(
                o,
                "cpu.llc_stream_share",
                format!("is {}, must be a number from 0 to 1", c.llc_stream_share),
            ));
        }
        if c.llc_ways == Some(0) {
            return Err(TopoError::impossible(
                o,
                "cpu.llc_ways",
                "is 0, must be >= 1",
            ));
        }
        let tlb_walk_cycles = self.tlb(o)?;
        Ok(CpuModel {
            freq_mhz: c.freq_mhz,
            mlp: c.mlp,
            stream_mlp: c.stream_mlp,
            llc_latency_ns: c.llc_latency_ns,
            llc_bytes,
            line_bytes: c.line_bytes,
            store_buffer: c.store_buffer,
            out_of_order: c.out_of_order,
            refill_ns: c.refill_ns,
            llc_stream_share: c.llc_stream_share,
            llc_ways: c.llc_ways,
            llc_private: c.llc_private,
            tlb_entries: c.tlb_entries,
            tlb_walk_cycles,
        })
    }

    /// The TLB's walk cycles, checked: `tlb_entries` and `tlb_walk_cycles` come together.
    fn tlb(&self, o: &str) -> Result<f64, TopoError> {
        let c = &self.cpu;
        match (c.tlb_entries, c.tlb_walk_cycles) {
            (None, None) => Ok(0.0),
            (Some(0), _) => Err(TopoError::impossible(
                o,
                "cpu.tlb_entries",
                "is 0, must be >= 1",
            )),
            (Some(_), Some(w)) if w.is_finite() && w >= 0.0 => Ok(w),
            (Some(_), Some(w)) => Err(TopoError::impossible(
                o,
                "cpu.tlb_walk_cycles",
                format!("is {w}, must be a finite number >= 0"),
            )),
            (Some(_), None) => Err(TopoError::impossible(
                o,
                "cpu.tlb_walk_cycles",
                "is missing: give it with cpu.tlb_entries",
            )),
            (None, Some(_)) => Err(TopoError::impossible(
                o,
                "cpu.tlb_entries",
                "is missing: give it with cpu.tlb_walk_cycles",
            )),
        }
    }

    fn memory_model(&self, o: &str) -> Result<MemoryModel, TopoError> {
        let m = &self.memory;
        positive(o, "memory.bandwidth_gbps", m.bandwidth_gbps)?;
        positive(o, "memory.remote_bandwidth_gbps", m.remote_bandwidth_gbps)?;
        if !(m.loaded_latency_ratio.is_finite() && m.loaded_latency_ratio >= 1.0) {
            return Err(TopoError::impossible(
                o,
                "memory.loaded_latency_ratio",
                format!(
                    "is {}, must be a finite number >= 1",
                    m.loaded_latency_ratio
                ),
            ));
        }
        power_of_two(o, "memory.page_kib", m.page_kib)?;
        let page_bytes = m.page_kib.checked_mul(1024).ok_or_else(|| {
            TopoError::impossible(o, "memory.page_kib", format!("{} is too large", m.page_kib))
        })?;
        positive(o, "memory.line_transfer_local_ns", m.line_transfer_local_ns)?;
        positive(
            o,
            "memory.line_transfer_remote_ns",
            m.line_transfer_remote_ns,
        )?;
        if !(m.fault_overhead_ns.is_finite() && m.fault_overhead_ns >= 0.0) {
            return Err(TopoError::impossible(
                o,
                "memory.fault_overhead_ns",
                format!("is {}, must be a finite number >= 0", m.fault_overhead_ns),
            ));
        }
        Ok(MemoryModel {
            loaded_latency_ratio: m.loaded_latency_ratio,
            page_bytes,
            line_transfer_local_ns: m.line_transfer_local_ns,
            line_transfer_remote_ns: m.line_transfer_remote_ns,
            fault_overhead_ns: m.fault_overhead_ns,
        })
    }

    fn build_nodes(&self, o: &str, shape: &Shape) -> Result<Vec<Node>, TopoError> {
        let cpn = shape.cpn;
        let mut nodes: Vec<Node> = (0..self.nodes)
            .map(|id| Node {
                id,
                cpus: (id * cpn..(id + 1) * cpn).collect(),
                mem_bytes: shape.mem_bytes,
                bandwidth_gbps: self.memory.bandwidth_gbps,
                remote_bandwidth_gbps: self.memory.remote_bandwidth_gbps,
            })
            .collect();
        let mut seen = BTreeSet::new();
        for ov in &self.node_overrides {
            let Some(node) = nodes.get_mut(ov.id) else {
                return Err(TopoError::impossible(
                    o,
                    "node.id",
                    format!(
                        "{} is out of range: the machine has {} nodes",
                        ov.id, self.nodes
                    ),
                ));
            };
            if !seen.insert(ov.id) {
                return Err(TopoError::impossible(
                    o,
                    "node.id",
                    format!("{} is overridden twice", ov.id),
                ));
            }
            if let Some(g) = ov.mem_gib {
                node.mem_bytes = gib_to_bytes(o, &format!("node[{}].mem_gib", ov.id), g)?;
            }
            if let Some(b) = ov.bandwidth_gbps {
                positive(o, &format!("node[{}].bandwidth_gbps", ov.id), b)?;
                node.bandwidth_gbps = b;
            }
            if let Some(b) = ov.remote_bandwidth_gbps {
                positive(o, &format!("node[{}].remote_bandwidth_gbps", ov.id), b)?;
                node.remote_bandwidth_gbps = b;
            }
        }
        Ok(nodes)
    }
}

struct Shape {
    cpn: usize,
    mem_bytes: u64,
}

/// A per-node matrix `key` has `n` rows of `n` entries.
fn check_square<T>(o: &str, key: &str, m: &[Vec<T>], n: usize) -> Result<(), TopoError> {
    if m.len() != n {
        return Err(TopoError::impossible(
            o,
            key,
            format!("has {} rows, expected {n} (one per node)", m.len()),
        ));
    }
    for (a, row) in m.iter().enumerate() {
        if row.len() != n {
            return Err(TopoError::impossible(
                o,
                format!("{key}[{a}]"),
                format!("has {} entries, expected {n}", row.len()),
            ));
        }
    }
    Ok(())
}

fn check_distance_matrix(o: &str, m: &[Vec<u32>], n: usize) -> Result<(), TopoError> {
    check_square(o, "distance", m, n)?;
    for (a, row) in m.iter().enumerate() {
        for (b, &d) in row.iter().enumerate() {
            if a == b && d != LOCAL_DISTANCE {
                return Err(TopoError::impossible(
                    o,
                    format!("distance[{a}][{a}]"),
                    format!("is {d}, must be {LOCAL_DISTANCE} (a node's distance to itself)"),
                ));
            }
            if a != b && !(LOCAL_DISTANCE + 1..=MAX_DISTANCE).contains(&d) {
                return Err(TopoError::impossible(
                    o,
                    format!("distance[{a}][{b}]"),
                    format!(
                        "is {d}, must be {}..={MAX_DISTANCE} (remote is farther than local)",
                        LOCAL_DISTANCE + 1
                    ),
                ));
            }
            if d != m[b][a] {
                return Err(TopoError::impossible(
                    o,
                    format!("distance[{a}][{b}]"),
                    format!(
                        "is {d} but distance[{b}][{a}] is {}: must be symmetric",
                        m[b][a]
                    ),
                ));
            }
        }
    }
    let mut remote: Vec<u32> = m
        .iter()
        .flatten()
        .copied()
        .filter(|&d| d != LOCAL_DISTANCE)
        .collect();
    remote.sort_unstable();
    remote.dedup();
    if remote.len() > MAX_REMOTE_DISTANCES {
        return Err(TopoError::impossible(
            o,
            "distance",
            format!(
                "has {} distinct remote distances, more than the limit of {MAX_REMOTE_DISTANCES} (each is a scheduling-domain level, with a group list per CPU)",
                remote.len()
            ),
        ));
    }
    Ok(())
}

/// Bytes of a size given in GiB: positive, at least one byte, representable.
fn gib_to_bytes(o: &str, field: &str, gib: f64) -> Result<u64, TopoError> {
    let bytes = gib * GIB;
    if gib.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64 {
        Ok(bytes.round() as u64)
    } else {
        Err(TopoError::impossible(
            o,
            field,
            format!("is {gib}, must be a positive finite size"),
        ))
    }
}

fn positive(o: &str, field: &str, v: f64) -> Result<(), TopoError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(TopoError::impossible(
            o,
            field,
            format!("is {v}, must be a positive finite number"),
        ))
    }
}

fn power_of_two(o: &str, field: &str, v: u64) -> Result<(), TopoError> {
    if v.is_power_of_two() {
        Ok(())
    } else {
        Err(TopoError::impossible(
            o,
            field,
            format!("is {v}, must be a power of two"),
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const MINIMAL: &str = r#"
name = "tiny"
nodes = 2
cpus_per_node = 2
mem_gib_per_node = 1
remote_distance = 20

[cpu]
freq_mhz = 1000
mlp = 1
llc_kib = 1024

[memory]
local_latency_ns = 100
bandwidth_gbps = 10
remote_bandwidth_gbps = 5
loaded_latency_ratio = 2
line_transfer_local_ns = 50
line_transfer_remote_ns = 100
fault_overhead_ns = 1000
"#;

    fn parse(text: &str) -> Result<Topology, TopoError> {
        MachineSpec::from_toml_str(text, "test.toml")?.into_topology()
    }

    /// The error of `MINIMAL` with `from` replaced by `to`, as one line.
    fn err_with(from: &str, to: &str) -> String {
        assert!(MINIMAL.contains(from), "{from}");
        let e = parse(&MINIMAL.replacen(from, to, 1)).expect_err("should be refused");
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "not one line: {msg}");
        msg
    }

    #[test]
    fn minimal_spec_builds() {
        let t = parse(MINIMAL).unwrap();
        assert_eq!(t.nr_cpus(), 4);
        assert_eq!(t.nr_nodes(), 2);
        assert_eq!(t.distance, vec![vec![10, 20], vec![20, 10]]);
        assert_eq!(t.latency_ns, vec![vec![100.0, 200.0], vec![200.0, 100.0]]);
        assert_eq!(t.cpu_model.line_bytes, 64);
        assert_eq!(t.cpu_model.store_buffer, 0);
        let sb = parse(&MINIMAL.replace("llc_kib = 1024", "llc_kib = 1024\nstore_buffer = 56"));
        assert_eq!(sb.unwrap().cpu_model.store_buffer, 56);
        assert_eq!(t.memory.page_bytes, 4096);
        assert_eq!(t.nodes[1].mem_bytes, 1 << 30);
        assert_eq!(t.node_cpus(1).to_list_string(), "2-3");
        assert_eq!(t.description, "2 nodes x 2 CPUs");
    }

    #[test]
    fn numbering_is_node_major_with_adjacent_siblings() {
        let text = MINIMAL.replace(
            "cpus_per_node = 2",
            "cpus_per_node = 8\nsmt = 2\ncores_per_llc = 2",
        );
        let t = parse(&text).unwrap();
        assert_eq!(t.core_cpus(5).to_list_string(), "4-5");
        assert_eq!(t.llc_cpus(5).to_list_string(), "4-7");
        assert_eq!(t.cpus[9].node, 1);
        assert_eq!(t.cpus[9].core, 4);
        assert_eq!(t.cpus[9].llc, 2);
    }

    #[test]
    fn node_overrides_apply() {
        let text = format!("{MINIMAL}\n[[node]]\nid = 1\nmem_gib = 2\nbandwidth_gbps = 3\n");
        let t = parse(&text).unwrap();
        assert_eq!(t.nodes[1].mem_bytes, 2 << 30);
        assert_eq!(t.nodes[1].bandwidth_gbps, 3.0);
        assert_eq!(t.nodes[0].bandwidth_gbps, 10.0);
    }

    #[test]
    fn syntax_error_reports_file_line_column_and_field() {
        let text = MINIMAL.replace("nodes = 2", "nodes = = 2");
        let e = MachineSpec::from_toml_str(&text, "m.toml").unwrap_err();
        let TopoError::Toml {
            origin,
            line,
            column,
            field,
            ..
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!(
            (origin.as_str(), *line, field.as_str()),
            ("m.toml", 3, "nodes")
        );
        assert_eq!(*column, 9);
        assert!(e.to_string().starts_with("m.toml:3:9: in `nodes`: "), "{e}");
    }

    #[test]
    fn type_error_names_qualified_field() {
        let text = MINIMAL.replace("freq_mhz = 1000", "freq_mhz = \"fast\"");
        let e = MachineSpec::from_toml_str(&text, "m.toml").unwrap_err();
        let TopoError::Toml {
            line,
            column,
            field,
            ..
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!((*line, *column, field.as_str()), (9, 12, "cpu.freq_mhz"));
    }

    #[test]
    fn error_inside_multiline_matrix_names_the_matrix() {
        let text = MINIMAL.replace(
            "remote_distance = 20",
            "distance = [\n  [10, 20],\n  [20, \"x\"],\n]",
        );
        let e = MachineSpec::from_toml_str(&text, "m.toml").unwrap_err();
        let TopoError::Toml { line, field, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!((*line, field.as_str()), (8, "distance"));
    }

    #[test]
    fn negative_count_is_a_type_error_naming_the_field() {
        let msg = err_with("cpus_per_node = 2", "cpus_per_node = -2");
        assert!(
            msg.contains("test.toml:4:") && msg.contains("`cpus_per_node`"),
            "{msg}"
        );
    }

    #[test]
    fn missing_field_is_named() {
        let text = MINIMAL.replace("mlp = 1\n", "");
        let e = MachineSpec::from_toml_str(&text, "m.toml").unwrap_err();
        assert!(e.to_string().contains("`cpu.mlp`"), "{e}");
    }

    /// Each distinct remote distance is a domain level held per CPU: a table of more than
    /// [`MAX_REMOTE_DISTANCES`] is refused, naming the key and the limit; 16 pass.
    #[test]
    fn too_many_distinct_distances_are_refused() {
        let spec = |n: usize| {
            let rows: Vec<String> = (0..n)
                .map(|i| {
                    let row: Vec<String> = (0..n)
                        .map(|j| {
                            if i == j {
                                10
                            } else {
                                10 + i.abs_diff(j) as u32
                            }
                        })
                        .map(|d| d.to_string())
                        .collect();
                    format!("[{}]", row.join(","))
                })
                .collect();
            MINIMAL
                .replace("nodes = 2", &format!("nodes = {n}"))
                .replace("cpus_per_node = 2", "cpus_per_node = 1")
                .replace(
                    "remote_distance = 20",
                    &format!("distance = [{}]", rows.join(",")),
                )
        };
        let ok = MachineSpec::from_toml_str(&spec(17), "m.toml").expect("parses");
        assert_eq!(ok.into_topology().expect("16 distances").nr_nodes(), 17);
        let e = MachineSpec::from_toml_str(&spec(18), "m.toml")
            .expect("parses")
            .into_topology()
            .expect_err("17 distances")
            .to_string();
        assert!(
            e.contains("`distance`")
                && e.contains("17 distinct remote distances, more than the limit of 16"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn unknown_key_is_refused_with_its_name() {
        let text = MINIMAL.replace("mlp = 1", "mlp = 1\nfrequency = 3");
        let e = MachineSpec::from_toml_str(&text, "m.toml").unwrap_err();
        let TopoError::UnknownKey {
            key, line, valid, ..
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!((key.as_str(), *line), ("cpu.frequency", 11));
        assert!(valid.contains("freq_mhz"), "{valid}");
        let e = MachineSpec::from_toml_str(&format!("colour = 1\n{MINIMAL}"), "m.toml");
        assert!(e.unwrap_err().to_string().contains("unknown key `colour`"));
    }

    #[test]
    #[allow(clippy::too_many_lines)] // a table of cases, one row per refusal
    fn impossible_machines_are_refused_in_one_line() {
        let cases: &[(&str, &str, &str)] = &[
            ("nodes = 2", "nodes = 0", "`nodes`"),
            ("cpus_per_node = 2", "cpus_per_node = 0", "`cpus_per_node`"),
            ("cpus_per_node = 2", "cpus_per_node = 3\nsmt = 2", "`smt`"),
            (
                "cpus_per_node = 2",
                "cpus_per_node = 2\ncores_per_llc = 3",
                "`cores_per_llc`",
            ),
            (
                "cpus_per_node = 2",
                "cpus_per_node = 100000",
                "`cpus_per_node`",
            ),
            (
                "mem_gib_per_node = 1",
                "mem_gib_per_node = 0",
                "`mem_gib_per_node`",
            ),
            (
                "mem_gib_per_node = 1",
                "mem_gib_per_node = nan",
                "`mem_gib_per_node`",
            ),
            (
                "mem_gib_per_node = 1",
                "mem_gib_per_node = 1e300",
                "`mem_gib_per_node`",
            ),
            (
                "remote_distance = 20",
                "remote_distance = 10",
                "`remote_distance`",
            ),
            (
                "remote_distance = 20",
                "remote_distance = 255",
                "`remote_distance`",
            ),
            ("remote_distance = 20", "", "`distance` is missing"),
            (
                "remote_distance = 20",
                "remote_distance = 20\ndistance = [[10,20],[20,10]]",
                "both",
            ),
            ("remote_distance = 20", "distance = [[10,20]]", "has 1 rows"),
            (
                "remote_distance = 20",
                "distance = [[10,20],[20]]",
                "`distance[1]`",
            ),
            (
                "remote_distance = 20",
                "distance = [[10,20],[20,12]]",
                "`distance[1][1]`",
            ),
            (
                "remote_distance = 20",
                "distance = [[10,9],[9,10]]",
                "`distance[0][1]`",
            ),
            (
                "remote_distance = 20",
                "distance = [[10,20],[21,10]]",
                "symmetric",
            ),
            ("freq_mhz = 1000", "freq_mhz = -1", "`cpu.freq_mhz`"),
            ("freq_mhz = 1000", "freq_mhz = inf", "`cpu.freq_mhz`"),
            ("mlp = 1", "mlp = 0.5", "`cpu.mlp`"),
            ("mlp = 1", "mlp = 1\nstream_mlp = 0.5", "`cpu.stream_mlp`"),
            (
                "mlp = 1",
                "mlp = 1\nllc_latency_ns = -1",
                "`cpu.llc_latency_ns`",
            ),
            ("mlp = 1", "mlp = 1\nrefill_ns = -2", "`cpu.refill_ns`"),
            (
                "mlp = 1",
                "mlp = 1\nllc_stream_share = 1.5",
                "`cpu.llc_stream_share`",
            ),
            ("llc_kib = 1024", "llc_kib = 0", "`cpu.llc_kib`"),
            (
                "llc_kib = 1024",
                "llc_kib = 1024\nllc_ways = 0",
                "`cpu.llc_ways`",
            ),
            (
                "llc_kib = 1024",
                "llc_kib = 1024\ntlb_entries = 0\ntlb_walk_cycles = 15",
                "`cpu.tlb_entries`",
            ),
            (
                "llc_kib = 1024",
                "llc_kib = 1024\ntlb_entries = 96",
                "`cpu.tlb_walk_cycles` is missing",
            ),
            (
                "llc_kib = 1024",
                "llc_kib = 1024\ntlb_walk_cycles = 15",
                "`cpu.tlb_entries` is missing",
            ),
            (
                "llc_kib = 1024",
                "llc_kib = 1024\ntlb_entries = 96\ntlb_walk_cycles = -1",
                "`cpu.tlb_walk_cycles`",
            ),
            (
                "llc_kib = 1024",
                "llc_kib = 1024\nline_bytes = 48",
                "`cpu.line_bytes`",
            ),
            (
                "local_latency_ns = 100",
                "local_latency_ns = 0",
                "`memory.local_latency_ns`",
            ),
            (
                "local_latency_ns = 100",
                "local_latency_ns = 100\nlatency_ns = [[1.0]]",
                "rows",
            ),
            (
                "local_latency_ns = 100",
                "local_latency_ns = 100\nlatency_ns = [[1.0, 2.0], [2.0, -1.0]]",
                "`memory.latency_ns[1][1]`",
            ),
            (
                "bandwidth_gbps = 10",
                "bandwidth_gbps = 0",
                "`memory.bandwidth_gbps`",
            ),
            (
                "remote_bandwidth_gbps = 5",
                "remote_bandwidth_gbps = 0",
                "remote_bandwidth",
            ),
            (
                "loaded_latency_ratio = 2",
                "loaded_latency_ratio = 0.5",
                "loaded_latency_ratio",
            ),
            (
                "loaded_latency_ratio = 2",
                "loaded_latency_ratio = 2\npage_kib = 3",
                "page_kib",
            ),
            (
                "line_transfer_local_ns = 50",
                "line_transfer_local_ns = 0",
                "line_transfer_local",
            ),
            (
                "fault_overhead_ns = 1000",
                "fault_overhead_ns = -1",
                "fault_overhead_ns",
            ),
            ("name = \"tiny\"", "name = \" \"", "`name`"),
        ];
        for (from, to, expect) in cases {
            let msg = err_with(from, to);
            assert!(msg.contains(expect), "{to}: {msg}");
            assert!(msg.starts_with("test.toml"), "{msg}");
        }
        for ov in ["[[node]]\nid = 2", "[[node]]\nid = 0\n[[node]]\nid = 0"] {
            let e = parse(&format!("{MINIMAL}\n{ov}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("`node.id`"), "{e}");
        }
        let e = parse(&format!("{MINIMAL}\n[[node]]\nid = 1\nmem_gib = -3\n")).unwrap_err();
        assert!(e.to_string().contains("`node[1].mem_gib`"), "{e}");
    }

    #[test]
    fn one_node_needs_no_distance() {
        let text = MINIMAL
            .replace("nodes = 2", "nodes = 1")
            .replace("remote_distance = 20", "");
        let t = parse(&text).unwrap();
        assert_eq!(t.distance, vec![vec![10]]);
    }

    #[test]
    fn spec_roundtrips_through_toml() {
        let spec = MachineSpec::from_toml_str(MINIMAL, "x").unwrap();
        let again = MachineSpec::from_toml_str(&spec.to_toml_string(), "x").unwrap();
        assert_eq!(spec, again);
    }
}
