//! The model assumptions printed under each table: the machine facts that drive the figures
//! (latency ratio, memory contention, cost of a move), read from the machine itself so the
//! text always matches what was simulated.

use std::fmt::Write as _;
use topo::Topology;

/// Markdown bullet list for a memory-bound experiment (numa_test).
pub fn memory_bound(t: &Topology) -> String {
    let mut s = common(t);
    let local = t.latency_ns(0, 0);
    let llc = t.cpu_model.llc_bytes as f64;
    let refill_us = llc / t.cpu_model.line_bytes as f64 * local / t.cpu_model.mlp.max(1e-3) / 1e3;
    let _ = writeln!(
        s,
        "- *Migration cost*: a task moved to another last-level cache refills its working set, \
         up to the {:.1} MiB LLC: about {refill_us:.0} us at local latency, more when its \
         memory is remote. No scheduler here migrates pages: memory stays where it was first \
         touched (E allocates on the home node), so a job moved off its memory's node runs \
         remote for the rest of its life.",
        llc / (1u64 << 20) as f64
    );
    let _ = writeln!(
        s,
        "- *Turns on a cache*: jobs that take turns on a CPU evict each other's lines; a job \
         back on its cache after others ran fetches again what they evicted (an LRU reading, \
         docs/model/memory-and-cost.md), each line a miss instead of a hit."
    );
    let share = t.cpu_model.llc_stream_share;
    let streams = if share >= 1.0 {
        "count in full, as in an LRU cache (a cache of this era inserts every new line as most \
         recently used)"
            .to_string()
    } else if share <= 0.0 {
        "do not count (a scan-resistant cache keeps them where they leave first)".to_string()
    } else {
        format!("count for {share:.2} of a line each")
    };
    let _ = writeln!(
        s,
        "- *Streams in the cache*: a job's random array shares its LLC share with the lines \
         it streams through (`b`, `ix`), which {streams}: `cpu.llc_stream_share`, \
         docs/model/memory-and-cost.md."
    );
    let _ = writeln!(s, "{}", sets(t));
    let _ = writeln!(s, "{}", tlb(t));
    let _ = writeln!(
        s,
        "- *Work*: numa_test's `randupdt` (random read-modify-write of an 8 MB-per-million \
         array, streaming reads of the others) and hackbench as in docs/WORKLOADS.md; costs \
         per access from docs/model/."
    );
    s
}

/// The bullet on the LLC's sets: its ways and the page that spreads a region over them.
fn sets(t: &Topology) -> String {
    let page_kib = t.memory.page_bytes / 1024;
    match t.cpu_model.llc_ways {
        None => "- *Sets*: the LLC is taken as fully associative (no source for its ways, \
                 docs/MACHINES.md): random data that fit the share always hit."
            .to_string(),
        Some(1) => format!(
            "- *Sets*: the LLC is direct-mapped; a task's random data land on its lines by its \
             {page_kib} KiB pages, so some lines share a place and evict each other even when \
             the data fit (docs/model/caches.md, \"Sets\")."
        ),
        Some(k) => format!(
            "- *Sets*: the LLC is {k}-way set associative; a task's random data spread over \
             its sets by its {page_kib} KiB pages, and a set holds {k} of the lines it draws \
             (docs/model/caches.md, \"Sets\")."
        ),
    }
}

/// The bullet on address translation: the TLB's reach and what a walk costs.
fn tlb(t: &Topology) -> String {
    let page_kib = t.memory.page_bytes / 1024;
    match (t.cpu_model.tlb_entries, t.tlb()) {
        (Some(n), Some((reach, cycles))) => format!(
            "- *TLB*: {n} entries of {page_kib} KiB pages reach {:.1} MiB; a random access \
             beyond that reach walks the page table, {cycles:.0} cycles ({:.1} ns), waited \
             for as a miss is (docs/model/memory-and-cost.md, \"TLB walks\").",
            reach / (1u64 << 20) as f64,
            cycles * t.ns_per_cycle()
        ),
        _ => "- *TLB*: address translation is free (no TLB given for this machine, \
              docs/MACHINES.md)."
            .to_string(),
    }
}

/// Markdown bullet list for the kbuild + bonnie mix; `disks` as the experiment's `[mix]`
/// gives it (absent: the model without a disk queue).
pub fn io_mix(t: &Topology, disks: Option<u32>, d: crate::disk::DiskParams) -> String {
    let mut s = common(t);
    let _ = writeln!(
        s,
        "- *Migration cost*: a moved task refills its cache (up to the {:.1} MiB LLC), and one \
         back on its cache after others ran fetches again what they evicted (docs/model/ \
         §4); compile jobs first-touch their heap where they run after exec, so exec \
         placement and early balancing decide how much of their memory is remote.",
        t.cpu_model.llc_bytes as f64 / (1u64 << 20) as f64
    );
    let _ = writeln!(s, "{}", sets(t));
    let _ = writeln!(s, "{}", tlb(t));
    let Some(n) = disks else {
        let _ = writeln!(
            s,
            "- *I/O*: every disk wait is a fixed sleep with +/-50% jitter (docs/WORKLOADS.md); \
             there is no disk queue (`disks` is not set), so the eight bonnie processes do not \
             slow each other's I/O, and a compile job is one process."
        );
        return s;
    };
    let pp = crate::workload::kbuild::PipelineParams::default();
    let b = crate::workload::BonnieParams::default();
    let _ = writeln!(
        s,
        "- *Processes*: each compile job is the 2.4 build's tree: make forks `sh -c`, which \
         runs the gcc driver, which runs `cpp | cc1 | as` joined by pipes (the 2.4 alpha \
         Makefile builds with `-pipe`); {} pipe buffers flow through each pipe, a full pipe \
         blocks its writer; after the last job make runs `ld`. cpp and as take {:.0}% of a \
         job's CPU burst each and cc1 the rest: no published split of gcc's time between its \
         passes was found (assumption). The final link's {:.0e} cycles are an assumption.",
        pp.pipe_chunks,
        100.0 * pp.cpp_share,
        pp.link_cycles
    );
    let _ = writeln!(
        s,
        "- *Disks*: {n} disk(s), each a first-come-first-served queue (no elevator); build b \
         uses disk b mod {n}, bonnie i disk i mod {n} (the original's disk layout is not \
         known: assumption). A request takes an average seek ({:.1} ms), half a rotation at \
         {} rpm ({:.1} ms) and the transfer at {:.0} MB/s (docs/model/disks-and-loadavg.md): {:.1} ms for \
         bonnie's {} KiB and for each of cpp's {} reads, during which the task is in disk \
         wait and counts in the load average.",
        d.seek_ns as f64 / 1e6,
        d.rpm,
        30_000.0 / f64::from(d.rpm),
        d.bytes_per_s / 1e6,
        d.service_ns(b.io_bytes) as f64 / 1e6,
        b.io_bytes >> 10,
        pp.reads
    );
    let _ = writeln!(
        s,
        "- *Page cache*: writes go to the page cache and reach the disk later (2.4 write-behind: \
         the writer does not wait), so as's object files and ld's image take disk time but \
         nobody waits for them; ld reads objects just written, from the cache. Reads that the \
         cache would serve (headers shared by all compiles) are not modelled: every cpp \
         makes its {} disk reads (assumption, as in the model without a queue).",
        pp.reads
    );
    s
}

/// Markdown bullet list for the NUMA-balancing studies: the machine, then what a hinting fault,
/// a page-group copy and a shared cache line cost on it.
pub fn numa_balancing(t: &Topology) -> String {
    let mut s = common(t);
    let m = &t.memory;
    let far = (1..t.nr_nodes())
        .max_by(|&a, &b| t.latency_ns(0, a).total_cmp(&t.latency_ns(0, b)))
        .unwrap_or(0);
    let group = 2u64 << 20;
    let cpu = &t.cpu_model;
    let core_gbps = cpu.stream_mlp() * cpu.line_bytes as f64 / t.latency_ns(0, far).max(1e-3);
    let gbps = t.nodes[far]
        .remote_bandwidth_gbps
        .min(t.nodes[0].bandwidth_gbps)
        .min(core_gbps);
    let copy_us = (group as f64 / gbps + m.fault_overhead_ns) / 1e3;
    let _ = writeln!(
        s,
        "- *Migration cost*: NUMA balancing moves 2 MiB page groups on hinting faults; one \
         group from node {far} to node 0 costs about {copy_us:.0} us of system time (copy at \
         {gbps:.1} GB/s, the least of the source's remote bandwidth, the destination's memory \
         bandwidth and one core's streaming rate, plus {:.1} us to remap), charged to the \
         faulting task. A moved task also refills its cache (up to the {:.1} MiB LLC).",
        m.fault_overhead_ns / 1e3,
        cpu.llc_bytes as f64 / (1u64 << 20) as f64
    );
    let _ = writeln!(
        s,
        "- *Scan cost*: each scan pass unmaps up to `scan_size_mb` of the process (PTE updates \
         at `pmd_scan_ns` per 2 MiB, system time) after `scan_delay`, paced by \
         `scan_period_min`..`scan_period_max` (the `linux` options above); every hinting fault \
         costs {:.1} us. With `numa_balancing=off` none of this happens.",
        m.fault_overhead_ns / 1e3
    );
    let _ = writeln!(
        s,
        "- *Shared lines*: a shared cache line moves between CPUs in {:.0} ns within a node \
         and {:.0} ns across nodes; a thread pays a move only when another thread wrote the \
         line since it last had it (a writer: touched it), keeps it for a run of accesses, \
         and a writer runs on while its {}-entry store buffer holds its stores (docs/model/ \
         §4).",
        m.line_transfer_local_ns, m.line_transfer_remote_ns, cpu.store_buffer
    );
    s
}

fn common(t: &Topology) -> String {
    let mut s = String::new();
    let local = t.latency_ns(0, 0);
    let ratios: Vec<String> = (1..t.nr_nodes())
        .map(|j| format!("{:.2}", t.latency_ns(0, j) / local))
        .collect();
    let n0 = &t.nodes[0];
    let _ = writeln!(
        s,
        "- *Machine*: `{}`, {} x {} at {:.0} MHz (docs/MACHINES.md), {} core: an \
         operation's core work and memory stalls {} (docs/model/memory-and-cost.md).",
        t.name,
        topo::count(t.nr_nodes(), "node"),
        topo::count(n0.cpus.count(), "CPU"),
        t.cpu_model.freq_mhz,
        if t.cpu_model.out_of_order {
            "out-of-order"
        } else {
            "in-order"
        },
        if t.cpu_model.out_of_order {
            "overlap"
        } else {
            "add up"
        }
    );
    let _ = writeln!(
        s,
        "- *Latency ratio*: local memory {local:.0} ns; node 0 to nodes 1..: {} x local \
         (SLIT {:?}).",
        ratios.join(", "),
        t.distance[0]
    );
    let _ = writeln!(
        s,
        "- *Contention*: each node's memory serves {:.1} GB/s ({:.1} GB/s to remote readers); \
         latency rises up to {:.1}x as a node's bandwidth use nears that limit, so jobs \
         crowded on one node slow each other even when their memory is local.",
        n0.bandwidth_gbps, n0.remote_bandwidth_gbps, t.memory.loaded_latency_ratio
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report names the LLC's sets and the TLB as the machine gives them.
    #[test]
    fn memory_bound_reports_name_the_sets_and_the_tlb_of_the_machine() {
        let azusa = memory_bound(&topo::preset("azusa16").expect("preset"));
        assert!(
            azusa.contains("the LLC is 4-way set associative"),
            "{azusa}"
        );
        assert!(
            azusa.contains("*TLB*: 96 entries of 16 KiB pages reach 1.5 MiB")
                && azusa.contains("15 cycles (18.8 ns)"),
            "{azusa}"
        );
        let xeon = memory_bound(&topo::preset("xeon2s").expect("preset"));
        assert!(xeon.contains("taken as fully associative"), "{xeon}");
        assert!(
            xeon.contains("*TLB*: address translation is free"),
            "{xeon}"
        );
    }
}
