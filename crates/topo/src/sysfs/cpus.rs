//! Each CPU's facts (SMT siblings, else package and core id; its last-level cache) grouped
//! into cores and LLCs that never straddle a node, and the clock.

use std::collections::BTreeMap;

use super::{CPU_DIR, Reader, UnionFind, parse_size};
use crate::error::TopoError;
use crate::synthetic::SYNTHETIC_BASE;
use crate::{CpuSet, presets};

/// The last-level cache of one CPU.
struct Llc {
    sharers: Option<CpuSet>,
    bytes: Option<u64>,
    line_bytes: Option<u64>,
    /// `ways_of_associativity`; 0 (fully associative) reads as none.
    ways: Option<u32>,
}

/// Cores and LLCs of all CPUs.
pub(super) struct Grouping {
    /// Dense core id per (dense) CPU.
    pub(super) core: Vec<usize>,
    /// Dense LLC id per CPU.
    pub(super) llc: Vec<usize>,
    /// The largest LLC size found.
    pub(super) llc_bytes: Option<u64>,
    pub(super) line_bytes: Option<u64>,
    pub(super) llc_ways: Option<u32>,
}

/// What sysfs says about one CPU.
pub(super) struct CpuFacts {
    siblings: Option<CpuSet>,
    pub(super) package: Option<i64>,
    core_id: Option<i64>,
    llc: Option<Llc>,
}

impl Reader<'_> {
    pub(super) fn cpu_facts(&self, c: usize) -> Result<CpuFacts, TopoError> {
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
        let ways = self
            .number_opt::<u32>(&format!("{idx}/ways_of_associativity"))?
            .filter(|&w| w > 0);
        Ok(Some(Llc {
            sharers: self.list_opt(&format!("{idx}/shared_cpu_list"))?,
            bytes,
            line_bytes,
            ways,
        }))
    }

    /// Dense core and LLC ids per CPU, the LLC size and the line size.
    pub(super) fn cores_and_llcs(
        &mut self,
        facts: &[CpuFacts],
        os_cpu: &[usize],
        dense: &BTreeMap<usize, usize>,
        node_of: &[usize],
    ) -> Grouping {
        let same_node = SameNode { dense, node_of };
        let (mut cores, core_clipped) = Self::group_cores(facts, &same_node);
        let mut llcs = self.group_llcs(facts, &same_node, cores.clone());
        // After the LLC warnings, as they have always come.
        if core_clipped {
            self.warnings.push(
                "SMT siblings listed on another node were ignored: cores never straddle nodes"
                    .to_string(),
            );
        }
        let core = cores.dense_ids();
        let llc = llcs.dense_ids();
        let llc_bytes = self.llc_size(facts, os_cpu);
        let line_bytes = facts
            .iter()
            .find_map(|f| f.llc.as_ref().and_then(|l| l.line_bytes));
        let llc_ways = facts
            .iter()
            .find_map(|f| f.llc.as_ref().and_then(|l| l.ways));
        Grouping {
            core,
            llc,
            llc_bytes,
            line_bytes,
            llc_ways,
        }
    }

    /// CPUs merged into cores: by SMT sibling lists, else by (node, package, core id); and
    /// whether a sibling on another node was ignored.
    fn group_cores(facts: &[CpuFacts], same_node: &SameNode<'_>) -> (UnionFind, bool) {
        let mut core_clipped = false;
        let mut cores = UnionFind::new(facts.len());
        let mut by_id: BTreeMap<(usize, i64, i64), usize> = BTreeMap::new();
        for (c, f) in facts.iter().enumerate() {
            if let Some(s) = &f.siblings {
                let (members, clipped) = same_node.members(c, s);
                core_clipped |= clipped;
                for d in members {
                    cores.union(c, d);
                }
            } else if let (Some(p), Some(id)) = (f.package, f.core_id) {
                let first = *by_id.entry((same_node.node_of[c], p, id)).or_insert(c);
                cores.union(c, first);
            }
        }
        (cores, core_clipped)
    }

    /// `cores` merged further into LLCs by their sharer lists; one LLC per node when no CPU
    /// has cache information.
    fn group_llcs(
        &mut self,
        facts: &[CpuFacts],
        same_node: &SameNode<'_>,
        mut llcs: UnionFind,
    ) -> UnionFind {
        let node_of = same_node.node_of;
        let mut clipped = false;
        let any_llc = facts.iter().any(|f| f.llc.is_some());
        for (c, f) in facts.iter().enumerate() {
            match &f.llc {
                Some(Llc {
                    sharers: Some(s), ..
                }) => {
                    let (members, c_clipped) = same_node.members(c, s);
                    clipped |= c_clipped;
                    for d in members {
                        llcs.union(c, d);
                    }
                }
                Some(_) => {}
                None if !any_llc => {
                    // No cache information at all: one LLC per node.
                    if let Some(d) = (0..facts.len()).find(|&d| node_of[d] == node_of[c]) {
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
        llcs
    }

    /// The largest LLC size found, with a warning when they differ.
    fn llc_size(&mut self, facts: &[CpuFacts], os_cpu: &[usize]) -> Option<u64> {
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
        sizes.keys().next_back().copied()
    }

    /// Clock in MHz and where it came from (`None`: the synthetic default).
    pub(super) fn clock(&self, os_cpu: &[usize]) -> Result<(f64, Option<&'static str>), TopoError> {
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

/// The dense numbering and node of every CPU, to keep cores and LLCs inside a node.
struct SameNode<'a> {
    dense: &'a BTreeMap<usize, usize>,
    node_of: &'a [usize],
}

impl SameNode<'_> {
    /// Members of `set` (kernel numbers) that are online and on CPU `c`'s node, and whether
    /// some online member was on another node.
    fn members(&self, c: usize, set: &CpuSet) -> (Vec<usize>, bool) {
        let v: Vec<usize> = set
            .iter()
            .filter_map(|o| self.dense.get(&o).copied())
            .collect();
        let kept: Vec<usize> = v
            .iter()
            .copied()
            .filter(|&d| self.node_of[d] == self.node_of[c])
            .collect();
        let clipped = kept.len() != v.len();
        (kept, clipped)
    }
}
