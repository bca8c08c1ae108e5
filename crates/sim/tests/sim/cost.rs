//! Cost model sanity: remote memory costs its latency ratio, one node's memory bandwidth is
//! shared by the jobs that use it, and jobs on different nodes do not slow each other.

use crate::common::*;
use sim::RunResult;
use sim::workload::parse_workload;

/// A workload of jobs given as (cpu, memory node) pairs: each job is pinned to its CPU, binds
/// its region to the node, and runs `ops` operations of `access` with `cycles` core cycles.
fn jobs(list: &[(usize, usize)], mib: u32, ops: f64, cycles: f64, access: &str) -> String {
    let mut s = String::from("name = \"jobs\"\n");
    for (i, (cpu, node)) in list.iter().enumerate() {
        s.push_str(&format!(
            r#"[[program]]
name = "j{i}"
job = true
affinity = [{cpu}]
region = [{{ name = "a", mib = {mib}, policy = "bind:{node}" }}]
phase = [{{ memory = {{ ops = {ops}, cycles = {cycles}, access = [{access}] }} }}]
[[launch]]
program = "j{i}"
cpu = {cpu}
"#
        ));
    }
    s
}

/// Runs with a contention refresh after every switch (period 0, whatever the default): these
/// tests check the cost model's physics to 0.1%, on jobs of a few tens of ms, where a 1 ms
/// refresh period's lag alone is worth a few tenths of a percent.
fn run_jobs(m: &str, text: &str) -> RunResult {
    run_jobs_on(machine(m), text)
}

/// [`run_jobs`] on a machine given as a topology.
fn run_jobs_on(topo: std::sync::Arc<topo::Topology>, text: &str) -> RunResult {
    run_jobs_under(topo, text, "o1")
}

/// [`run_jobs_on`] under the scheduler `sched`.
fn run_jobs_under(topo: std::sync::Arc<topo::Topology>, text: &str, sched: &str) -> RunResult {
    let w = parse_workload(text, "jobs.toml").expect("valid workload");
    let r = sim::Sim::new(
        topo.clone(),
        std::sync::Arc::new(w),
        scheduler(sched, &topo),
        1,
    )
    .with_contention_period(0)
    .run()
    .unwrap_or_else(|e| panic!("{e}"));
    for t in &r.tasks {
        assert!(t.user_ns > 0.0);
    }
    r
}

/// Random 8-byte reads of a region far larger than the LLC: one miss per operation.
const RANDOM: &str = r#"{ region = "a", pattern = "random", bytes = 8 }"#;
/// Streaming reads, one cache line per operation.
const STREAM: &str = r#"{ region = "a", pattern = "stream", bytes = 64 }"#;

#[test]
fn remote_memory_costs_the_latency_ratio_when_latency_bound() {
    // Bandwidth so high that contention plays no part: the loop is bound by latency alone.
    let m = "nodes=2,cpus-per-node=2,bandwidth-gbps=10000,remote-bandwidth-gbps=10000";
    let topo = machine(m);
    let ops = 2e6;
    let local = run_jobs(m, &jobs(&[(0, 0)], 256, ops, 0.0, RANDOM));
    let remote = run_jobs(m, &jobs(&[(2, 0)], 256, ops, 0.0, RANDOM));
    let (l, r) = (local.tasks[0].user_ns, remote.tasks[0].user_ns);
    let want = topo.latency_ns(1, 0) / topo.latency_ns(0, 0);
    assert!(want > 1.3, "machine has no NUMA penalty: {want}");
    let ratio = r / l;
    assert!(
        (ratio - want).abs() < 0.02 * want,
        "remote/local user time {ratio:.3}, latency ratio {want:.3} ({r:.0} vs {l:.0} ns)"
    );
    // Absolute scale: one miss per operation (minus the few that hit the LLC), `mlp` at a
    // time, at the idle local latency.
    let per_miss = topo.latency_ns(0, 0) / topo.cpu_model.mlp;
    let full = ops * per_miss;
    assert!(
        l <= full * 1.0001 && l >= 0.95 * full,
        "local user time {l:.0} ns, {ops} misses cost {full:.0} ns"
    );
    assert!(local.tasks[0].node_user_ns[0] == l && remote.tasks[0].node_user_ns[1] == r);
}

#[test]
fn jobs_sharing_a_nodes_memory_slow_each_other_and_spread_jobs_do_not() {
    // Default (per-core share of xeon2s) bandwidth: one streaming job uses about half of its
    // node's memory bandwidth, two saturate it.
    let ops = 2e6;
    let (mib, cycles) = (64, 8.0);
    let alone = run_jobs(SMALL, &jobs(&[(0, 0)], mib, ops, cycles, STREAM));
    let a = alone.tasks[0].user_ns;
    // Two jobs on node 0's CPUs, both using node 0's memory.
    let shared = run_jobs(SMALL, &jobs(&[(0, 0), (1, 0)], mib, ops, cycles, STREAM));
    // Two jobs on different nodes, each with its memory at home.
    let spread = run_jobs(SMALL, &jobs(&[(0, 0), (2, 1)], mib, ops, cycles, STREAM));
    // Three jobs on node 0's memory (one of them reading from node 1).
    let three = run_jobs(
        SMALL,
        &jobs(&[(0, 0), (1, 0), (2, 0)], mib, ops, cycles, STREAM),
    );
    for t in &shared.tasks {
        assert!(
            t.user_ns > 1.2 * a,
            "two jobs on one node's memory: {:.0} ns each, alone {a:.0} ns",
            t.user_ns
        );
    }
    for t in &spread.tasks {
        assert!(
            (t.user_ns - a).abs() < 0.001 * a,
            "jobs on different nodes slowed each other: {:.0} ns, alone {a:.0} ns",
            t.user_ns
        );
    }
    // More users of the same memory, slower still.
    let s2 = shared.tasks[0].user_ns;
    let s3 = three.tasks[0].user_ns;
    assert!(
        s3 > s2,
        "third job on node 0's memory: {s3:.0} ns vs {s2:.0} ns"
    );
    // Bandwidth is finite: two jobs together never get more than the node's peak.
    let topo = machine(SMALL);
    let bytes = 2.0 * ops * 64.0;
    let end = shared.end_ns as f64;
    assert!(
        bytes / end <= topo.nodes[0].bandwidth_gbps * 1.01,
        "{:.2} GB/s delivered by a {:.2} GB/s node",
        bytes / end,
        topo.nodes[0].bandwidth_gbps
    );
}

/// The light-load program with `readers` and `writers` threads, `iterations` each.
fn shared_line(readers: u32, writers: u32, iterations: f64) -> sim::program::Workload {
    use sim::workload::light_load::{LightLoadParams, light_load};
    light_load(&LightLoadParams {
        iterations,
        readers,
        writers,
        ..Default::default()
    })
}

#[test]
fn a_lone_writer_pays_no_transfers_and_a_pair_fewer_than_one_per_access() {
    let topo = machine("nodes=2,cpus-per-node=4");
    let n = 1e7;
    let loop_ns = n * 2.0 * topo.ns_per_cycle();
    let worker_user = |r: &RunResult| -> Vec<f64> {
        r.tasks
            .iter()
            .filter(|t| t.job)
            .map(|t| t.user_ns)
            .collect()
    };
    let alone = run(&topo, &shared_line(0, 1, n), "o1", 1);
    let u = worker_user(&alone);
    assert_eq!(u.len(), 1);
    assert!(
        (u[0] - loop_ns).abs() < 1e-6 * loop_ns,
        "{} vs {loop_ns}",
        u[0]
    );
    // A reader and a writer: the line moves, but not on every access.
    // `linux` spreads the two threads over idle CPUs at once (`o1` would queue them on one).
    let pair = run(&topo, &shared_line(1, 1, n), "linux", 1);
    let x = topo.memory.line_transfer_local_ns;
    for u in worker_user(&pair) {
        assert!(u > loop_ns * 1.01, "{u} vs {loop_ns}");
        assert!(
            u < loop_ns + 0.5 * n * x,
            "{u}: half a transfer per access or more"
        );
    }
}

/// Two tasks on one CPU, each updating 4 MiB at random: as two processes (`jobs`), or as two
/// threads of one process sharing the region.
fn turn_takers(threads_of_one: bool) -> String {
    if !threads_of_one {
        return jobs(&[(0, 0), (0, 0)], 4, 2e7, 100.0, RANDOM);
    }
    format!(
        r#"name = "threads"
[[program]]
name = "t"
job = true
affinity = [0]
region = [{{ name = "a", mib = 4, policy = "bind:0" }}]
phase = [{{ memory = {{ ops = 2e7, cycles = 100.0, access = [{RANDOM}] }} }}]
[[launch]]
program = "t"
cpu = 0
threads = 2
"#
    )
}

#[test]
fn turns_on_one_cache_cost_a_refill_once_both_footprints_overflow_it() {
    // 6 MiB holds one 4 MiB job but not two: each comes back to find 2 MiB of its lines gone.
    let small = "nodes=2,cpus-per-node=1,llc-mib=6";
    let alone = run_jobs(small, &jobs(&[(0, 0)], 4, 2e7, 100.0, RANDOM));
    let a = alone.tasks[0].user_ns;
    let two = run_jobs(small, &turn_takers(false));
    let switches = two.counters.context_switches as f64;
    assert!(
        switches >= 10.0,
        "{switches} switches: the jobs must take turns"
    );
    let topo = machine(small);
    let per_line = topo.latency_ns(0, 0) / topo.cpu_model.mlp
        - topo.cpu_model.llc_latency_ns.unwrap_or(0.0) / topo.cpu_model.mlp;
    let line = topo.cpu_model.line_bytes as f64;
    // Every switch but the first two brings one job back to 2 MiB of its 4 MiB evicted, and
    // the other 2 MiB at the bottom of the LRU stack: its first misses push out its own old
    // lines before the other's. An exact LRU cache of 98,304 lines with two tasks of 65,536
    // lines each, reading at random in long turns, fetches 55,480 extra lines per return
    // (between the 32,768 evicted and all 65,536). The model: within 6% of that.
    let exact = 55_480.0 * per_line;
    let per_switch = two.tasks.iter().map(|t| t.user_ns - a).sum::<f64>() / (switches - 2.0);
    assert!(
        (per_switch - exact).abs() < 0.06 * exact,
        "extra user time per return {per_switch:.0} ns: {:.0} lines, against {:.0} exact",
        per_switch / per_line,
        exact / per_line
    );
    assert!(per_switch > 1.5 * 2.0 * 1048576.0 / line * per_line);
    // 16 MiB holds both: taking turns costs nothing.
    let big = "nodes=2,cpus-per-node=1,llc-mib=16";
    let alone = run_jobs(big, &jobs(&[(0, 0)], 4, 2e7, 100.0, RANDOM)).tasks[0].user_ns;
    for t in &run_jobs(big, &turn_takers(false)).tasks {
        assert!(
            (t.user_ns - alone).abs() < 1e-9 * alone,
            "{} vs {alone}",
            t.user_ns
        );
    }
    // Threads of one process share their lines: neither evicts the other's.
    for t in &run_jobs(small, &turn_takers(true)).tasks {
        assert!((t.user_ns - a).abs() < 1e-9 * a, "{} vs {a}", t.user_ns);
    }
}

#[test]
fn shorter_turns_on_a_private_cache_never_cost_less_than_longer_ones() {
    // Two 8 MiB random jobs on one CPU of azusa16 (a 4 MiB L3 per CPU, in-order cores),
    // taking turns of 3 ms (EEVDF's slice) or 100 ms. A 3 ms turn touches well under 1 MiB,
    // which evicts no more than that under a rule that weighs the other's last turn alone;
    // but the cache keeps only the most recent 4 MiB of both, so with short turns each
    // holds about its part of them, and must pay at least what the long turns' full
    // refills cost.
    let topo = machine("azusa16");
    let text = jobs(&[(0, 0), (0, 0)], 8, 2e7, 100.0, RANDOM);
    let user = |slice: &str| -> f64 {
        let r = run_jobs_under(topo.clone(), &text, &format!("linux:base_slice={slice}"));
        r.tasks.iter().filter(|t| t.job).map(|t| t.user_ns).sum()
    };
    let alone = run_jobs_on(topo.clone(), &jobs(&[(0, 0)], 8, 2e7, 100.0, RANDOM)).tasks[0].user_ns;
    let (short, long) = (user("3ms"), user("100ms"));
    assert!(long > 2.0 * alone * 1.002, "{long} vs 2 x {alone}");
    assert!(
        short >= long,
        "3 ms turns {short:.0} ns, 100 ms turns {long:.0} ns"
    );
}

#[test]
fn a_measured_refill_replaces_the_miss_instead_of_a_hit() {
    let small = "nodes=2,cpus-per-node=1,llc-mib=6";
    let run_with = |refill: Option<f64>| {
        let mut topo = (*machine(small)).clone();
        topo.cpu_model.refill_ns = refill;
        let r = run_jobs_on(std::sync::Arc::new(topo), &turn_takers(false));
        let user: f64 = r.tasks.iter().map(|t| t.user_ns).sum();
        (user, r.counters.context_switches as f64)
    };
    let (derived, switches) = run_with(None);
    let (none, _) = run_with(Some(0.0));
    let (measured, _) = run_with(Some(20.0));
    // Every return after the first two fetches about 55,480 lines (the exact LRU figure of
    // the test above), each at 20 ns.
    let want = (switches - 2.0) * 55_480.0 * 20.0;
    assert!(
        ((measured - none) - want).abs() < 0.06 * want,
        "{measured} - {none} vs {want}"
    );
    assert!(none < derived && derived < measured);
}
