//! The random footprint of an operation, the LLC's set mapping and the page-table walks of
//! random accesses beyond the TLB's reach.

use super::*;
/// Bytes of the distinct regions an operation reads at random.
pub(super) fn random_footprint(op: &OpCost, regions: &[Region]) -> f64 {
    footprint(op, regions, |a| a.pattern == Pattern::Random)
}

/// Bytes of the distinct regions of the accesses `which` selects.
pub(super) fn footprint(
    op: &OpCost,
    regions: &[Region],
    which: impl Fn(&crate::program::Access) -> bool,
) -> f64 {
    // An operation has a handful of accesses: a region counts at its first selected one
    // (no allocation, on the path of every rebuilt decomposition).
    let mut total = 0.0;
    for (i, a) in op.accesses.iter().enumerate() {
        let first = which(a)
            && !op.accesses[..i]
                .iter()
                .any(|b| b.region == a.region && which(b));
        if first {
            total += regions[a.region].bytes as f64;
        }
    }
    total
}

/// How the machine's LLC maps lines to sets (`kernel::sets`), or `None` for a fully
/// associative one.
pub(super) fn set_mapping(topo: &Topology) -> Option<SetMapping> {
    let cpu = &topo.cpu_model;
    cpu.llc_ways.map(|ways| SetMapping {
        ways,
        page_lines: topo.memory.page_bytes as f64 / cpu.line_bytes as f64,
    })
}

/// What address translation adds to each line an operation reads at random, ns, before the
/// division by MLP: the share of those accesses that miss the machine's last-level data TLB
/// times the cycles of a page walk (docs/model/memory-and-cost.md, "TLB walks"). The TLB holds
/// `tlb_entries` translations of base pages; accesses spread uniformly over `footprint`
/// bytes of random regions find their page there with probability `entries x page /
/// footprint` (an LRU or random-replacement TLB under uniform references), so a footprint
/// within the TLB's reach walks never. `None` when the machine gives no TLB, the walk is free
/// or nothing misses.
pub fn walk_ns_per_random_line(topo: &Topology, footprint: f64) -> Option<f64> {
    let (reach, cycles) = topo.tlb()?;
    if footprint <= reach {
        return None;
    }
    Some((1.0 - reach / footprint) * cycles * topo.ns_per_cycle())
}
