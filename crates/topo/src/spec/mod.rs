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

mod checks;
mod diagnose;
mod models;

use checks::*;

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

#[cfg(test)]
pub(crate) mod tests;
