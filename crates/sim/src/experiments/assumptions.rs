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
        "- *Work*: numa_test's `randupdt` (random read-modify-write of an 8 MB-per-million \
         array, streaming reads of the others) and hackbench as in docs/WORKLOADS.md; costs \
         per access from docs/MODEL.md."
    );
    s
}

/// Markdown bullet list for the kbuild + bonnie mix.
pub fn io_mix(t: &Topology) -> String {
    let mut s = common(t);
    let _ = writeln!(
        s,
        "- *Migration cost*: a moved task refills its cache (up to the {:.1} MiB LLC); compile \
         jobs first-touch their heap where they run after exec, so exec placement and early \
         balancing decide how much of their memory is remote.",
        t.cpu_model.llc_bytes as f64 / (1u64 << 20) as f64
    );
    let _ = writeln!(
        s,
        "- *I/O*: every disk wait is a fixed sleep with +/-50% jitter (docs/WORKLOADS.md); \
         there is no disk queue, so the eight bonnie processes do not slow each other's I/O. \
         The published load average of 100-200 counted many more processes (shells, cpp, \
         as, ...) than this model has: about 2 x 16 compile jobs plus 8 bonnie."
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
    let core_gbps = cpu.mlp * cpu.line_bytes as f64 / t.latency_ns(0, far).max(1e-3);
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
         and a writer runs on while its {}-entry store buffer holds its stores (docs/MODEL.md \
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
        "- *Machine*: `{}`, {} nodes x {} CPUs at {:.0} MHz (docs/MACHINES.md).",
        t.name,
        t.nr_nodes(),
        n0.cpus.count(),
        t.cpu_model.freq_mhz
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
