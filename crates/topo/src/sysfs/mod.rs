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
//! | last-level cache | `cpu/cpuC/cache/indexI/`: the highest `level` that is not an instruction cache; its `shared_cpu_list`, `size` (`32768K`), `coherency_line_size` and `ways_of_associativity` (0, fully associative, reads as none) |
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
//! - **What sysfs cannot tell** is taken from the synthetic defaults
//!   ([`SYNTHETIC_BASE`](crate::synthetic::SYNTHETIC_BASE), the measured 2-socket Ice Lake),
//!   scaled as [`parse_synthetic`](crate::synthetic::parse_synthetic) scales them: idle local
//!   latency, MLP, store buffer, loaded-latency ratio and page size as in the base; local and remote
//!   bandwidth per node = the base's per-core figure x the node's cores; an LLC size or clock
//!   that sysfs does not give likewise. Remote latency = local x SLIT / 10. Cache-line
//!   transfer costs and the fault overhead follow the shared rules of `docs/MACHINES.md`
//!   (xeon2s ratios of the local and nearest-remote latency; 2,500 cycles at the host's
//!   clock). The description says which figures were assumed.
//!
//! The reading is split by what is read: `nodes.rs` the node list, each node's CPUs, memory and
//! SLIT row; `cpus.rs` each CPU's siblings, caches and clock, grouped into cores and LLCs;
//! `host.rs` puts them together into a [`Topology`] in named steps and describes it.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{TopoError, one_line};
use crate::{CpuSet, Topology};

mod cpus;
mod host;
mod nodes;

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

/// Reads files under one root, collecting warnings as it goes.
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

    /// The file's text, `None` if it does not exist. A regular file only, at most
    /// [`MAX_KERNEL_FILE_BYTES`](crate::input::MAX_KERNEL_FILE_BYTES) read.
    fn read_opt(&self, rel: &str) -> Result<Option<String>, TopoError> {
        use crate::input::{InputError, MAX_KERNEL_FILE_BYTES, read_kernel_file};
        match read_kernel_file(&self.path(rel), MAX_KERNEL_FILE_BYTES) {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| self.err(rel, "is not UTF-8 text")),
            Err(e) if e.is_not_found() => Ok(None),
            Err(InputError::Refused { why, .. }) => Err(self.err(rel, why)),
            Err(InputError::Io { error, .. }) => {
                Err(self.err(rel, format!("cannot be read: {error}")))
            }
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
fn memtotal(text: &str, node: Option<usize>) -> Result<u64, crate::error::ParseError> {
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
                    return Err(crate::error::ParseError::from(format!(
                        "MemTotal line is for node `{n}`, expected node {id}"
                    )));
                }
            }
            None => {
                if toks.next() != Some("MemTotal:") {
                    continue;
                }
            }
        }
        let value = toks.next().ok_or("MemTotal line has no value")?;
        let kb: u64 = value.parse().map_err(|_| {
            crate::error::ParseError::from(format!("MemTotal `{value}` is not a number of kB"))
        })?;
        match toks.next() {
            Some("kB") => {}
            other => {
                return Err(crate::error::ParseError::from(format!(
                    "MemTotal unit is `{}`, expected `kB`",
                    other.unwrap_or("")
                )));
            }
        }
        return kb.checked_mul(1024).ok_or_else(|| {
            crate::error::ParseError::from(format!("MemTotal {kb} kB is too large"))
        });
    }
    Err("has no MemTotal line".into())
}

/// A sysfs cache size: `32768K`, `1M`, `512` (bytes). `Ok(None)` for 0 (unknown).
fn parse_size(text: &str) -> Result<Option<u64>, crate::error::ParseError> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (num, suffix) = t.split_at(digits);
    let mult: u64 = match suffix {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" | "m" => 1 << 20,
        "G" | "g" => 1 << 30,
        _ => {
            return Err(crate::error::ParseError::from(format!(
                "`{t}` is not a size (e.g. 32768K)"
            )));
        }
    };
    let n: u64 = num.parse().map_err(|_| {
        crate::error::ParseError::from(format!("`{t}` is not a size (e.g. 32768K)"))
    })?;
    let bytes = n
        .checked_mul(mult)
        .ok_or_else(|| crate::error::ParseError::from(format!("`{t}` is too large")))?;
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
