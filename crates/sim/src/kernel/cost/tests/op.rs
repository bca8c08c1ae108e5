use super::*;

#[test]
fn streams_push_random_data_out_only_of_a_cache_that_lets_them() {
    // 4 MiB at random and a 6 MiB stream, in a 5 MiB share: the array fits alone.
    let mut t = in_order();
    let r = [region_on(&t, 0, 4 << 20), region_on(&t, 0, 6 << 20)];
    let op = mixed_op(0.0, 8.0, 8.0);
    let share = (5u64 << 20) as f64;
    let q = Contention::idle(2);
    let scan_resistant = op_profile(&t, &op, &r, 0, share, &q, &[]);
    t.cpu_model.llc_stream_share = 1.0;
    let lru = op_profile(&t, &op, &r, 0, share, &q, &[]);
    // Without the streams' share only the stream misses (one line per 8 operations).
    assert!((scan_resistant.lines - 0.125).abs() < 1e-12);
    assert!(lru.lines > scan_resistant.lines + 0.05, "{}", lru.lines);
    assert!(lru.ns > scan_resistant.ns);
    // A share that holds both keeps the array whatever the policy; the stream misses.
    let all = op_profile(&t, &op, &r, 0, (16u64 << 20) as f64, &q, &[]);
    assert!((all.lines - 0.125).abs() < 1e-12);
}

#[test]
fn remote_memory_costs_more_by_latency() {
    let t = in_order();
    let r = [region_on(&t, 0, 1 << 30)];
    let q = Contention::idle(2);
    let local = op_profile(&t, &random_op(), &r, 0, 0.0, &q, &[]);
    let remote = op_profile(&t, &random_op(), &r, 1, 0.0, &q, &[]);
    assert!(remote.ns > local.ns);
    let mem_local = local.ns - 4.0 * t.ns_per_cycle();
    let mem_remote = remote.ns - 4.0 * t.ns_per_cycle();
    let ratio = mem_remote / mem_local;
    assert!((ratio - t.latency_ns(1, 0) / t.latency_ns(0, 0)).abs() < 1e-9);
}

#[test]
fn cache_hits_when_it_fits() {
    let t = machine();
    let r = [region_on(&t, 0, 1 << 20)];
    let q = Contention::idle(2);
    let p = op_profile(&t, &random_op(), &r, 0, 8.0 * 1024.0 * 1024.0, &q, &[]);
    assert_eq!(p.lines, 0.0);
    assert!(p.bytes.iter().all(|&b| b == 0.0));
}

#[test]
fn contention_grows_with_demand_and_caps_bandwidth() {
    let t = machine();
    let r = region_on(&t, 0, 1 << 30);
    let regions = [r];
    let op = stream_read_op();
    let one = linear_op(&t, &op, &regions, 0, 0.0, &[]);
    let mk = |n: usize| -> Vec<&LinearOp> { (0..n).map(|_| &one).collect() };
    let (q1, _) = solve_contention(&t, &mk(1), &Contention::idle(2));
    let (q4, iters) = solve_contention(&t, &mk(4), &Contention::idle(2));
    assert!(iters < 100, "did not converge");
    assert!(q4.local[0] > q1.local[0]);
    // Delivered bandwidth never exceeds the node's peak by more than rounding.
    let p = op_profile(&t, &op, &regions, 0, 0.0, &q4, &[]);
    let delivered = 4.0 * p.bytes[0] / p.ns;
    assert!(delivered <= t.nodes[0].bandwidth_gbps * 1.01, "{delivered}");
    assert_eq!(q1.local[1], 1.0);
}

#[test]
fn free_op_time_is_cycles_plus_misses() {
    let t = in_order();
    let small = [region_on(&t, 0, 64)];
    let op = OpCost::random_write(2.0);
    assert_eq!(free_op_ns(&t, &op, &small, 0), 2.0 * t.ns_per_cycle());
    let big = [region_on(&t, 0, 1 << 34)];
    let miss = free_op_ns(&t, &op, &big, 0) - 2.0 * t.ns_per_cycle();
    let expect = (1.0 - t.cpu_model.llc_bytes as f64 / (1u64 << 34) as f64) * t.latency_ns(0, 0)
        / t.cpu_model.mlp;
    assert!((miss - expect).abs() < 1e-9, "{miss} vs {expect}");
}

#[test]
fn streams_overlap_stream_mlp_lines_and_llc_hits_cost_their_latency() {
    let mut t = in_order();
    let big = [region_on(&t, 0, 1 << 30)];
    let stream = stream_read_op();
    let idle = Contention::idle(2);
    let ns = |t: &Topology, op: &OpCost, r: &[Region]| {
        op_profile(t, op, r, 0, t.cpu_model.llc_bytes as f64, &idle, &[]).ns
    };
    let by_mlp = ns(&t, &stream, &big);
    assert!((by_mlp - t.latency_ns(0, 0) / t.cpu_model.mlp).abs() < 1e-9);
    t.cpu_model.stream_mlp = Some(4.0 * t.cpu_model.mlp);
    assert!((ns(&t, &stream, &big) - by_mlp / 4.0).abs() < 1e-9);
    // A random array that fits the cache: free hits, unless the LLC has a latency.
    let small = [region_on(&t, 0, 4096)];
    let free = ns(&t, &random_op(), &small);
    assert_eq!(free, 4.0 * t.ns_per_cycle());
    t.cpu_model.llc_latency_ns = Some(30.0);
    let hit = ns(&t, &random_op(), &small) - free;
    assert!((hit - 30.0 / t.cpu_model.mlp).abs() < 1e-9, "{hit}");
    let f = free_op_ns(&t, &random_op(), &small, 0) - free;
    assert!((f - hit).abs() < 1e-9, "{f} vs {hit}");
}

#[test]
fn random_accesses_beyond_the_tlbs_reach_pay_their_share_of_walks() {
    let mut t = in_order();
    let page = t.memory.page_bytes as f64;
    let idle = Contention::idle(2);
    let ns = |t: &Topology, r: &[Region]| {
        op_profile(
            t,
            &random_op(),
            r,
            0,
            t.cpu_model.llc_bytes as f64,
            &idle,
            &[],
        )
        .ns
    };
    // 64 entries reach 64 pages; an array of 256 pages misses three accesses in four.
    let (fits, big) = (
        [region_on(&t, 0, 64 * page as u64)],
        [region_on(&t, 0, 256 * page as u64)],
    );
    let without = (ns(&t, &fits), ns(&t, &big));
    t.cpu_model.tlb_entries = Some(64);
    t.cpu_model.tlb_walk_cycles = 20.0;
    // Within the reach nothing changes, to the bit.
    assert_eq!(ns(&t, &fits).to_bits(), without.0.to_bits());
    let walk = 20.0 * t.ns_per_cycle() / t.cpu_model.mlp;
    let added = ns(&t, &big) - without.1;
    assert!(
        (added - 0.75 * walk).abs() < 1e-9,
        "{added} vs {}",
        0.75 * walk
    );
    // A walk that costs nothing adds nothing; neither does a machine without a TLB.
    t.cpu_model.tlb_walk_cycles = 0.0;
    assert_eq!(ns(&t, &big).to_bits(), without.1.to_bits());
    t.cpu_model.tlb_walk_cycles = 20.0;
    // The free-running estimate adds the same.
    let f = free_op_ns(&t, &random_op(), &big, 0);
    assert!((f - ns(&t, &big)).abs() < 1e-9, "{f}");
    // Streams walk once per page, which is left out: a streamed region adds no walk.
    let stream = [region_on(&t, 0, 1 << 30)];
    let s = op_profile(&t, &stream_read_op(), &stream, 0, 0.0, &idle, &[]).ns;
    t.cpu_model.tlb_entries = None;
    let s0 = op_profile(&t, &stream_read_op(), &stream, 0, 0.0, &idle, &[]).ns;
    assert_eq!(s.to_bits(), s0.to_bits());
    // Out of order, the walk queues with the misses: it shows where misses set the time.
    let mut o = out_of_order();
    let big = [region_on(&o, 0, 256 * page as u64)];
    let before = op_profile(&o, &random_op(), &big, 0, 0.0, &idle, &[]).ns;
    o.cpu_model.tlb_entries = Some(64);
    o.cpu_model.tlb_walk_cycles = 20.0;
    let after = op_profile(&o, &random_op(), &big, 0, 0.0, &idle, &[]).ns;
    let walk = 20.0 * o.ns_per_cycle() / o.cpu_model.mlp;
    assert!(
        (after - before - 0.75 * walk).abs() < 1e-9,
        "{after} vs {before}"
    );
}

#[test]
fn an_out_of_order_core_overlaps_its_work_with_its_misses() {
    let (ooo, ino) = (out_of_order(), in_order());
    let big = [region_on(&ooo, 0, 1 << 34)];
    let idle = Contention::idle(2);
    let ns = |t: &Topology, cycles: f64| {
        op_profile(t, &OpCost::random_write(cycles), &big, 0, 0.0, &idle, &[]).ns
    };
    let miss = ooo.latency_ns(0, 0) / ooo.cpu_model.mlp;
    let core = |cycles: f64| cycles * ooo.ns_per_cycle();
    // A few cycles hide behind the miss; many cycles hide the miss.
    assert!((ns(&ooo, 4.0) - miss).abs() < 1e-9, "{}", ns(&ooo, 4.0));
    assert!((ns(&ooo, 1000.0) - core(1000.0)).abs() < 1e-9);
    // In order, they add up.
    assert!((ns(&ino, 4.0) - core(4.0) - miss).abs() < 1e-9);
    // The free-running estimate follows the same rule (whole LLC, idle latency).
    let op = OpCost::random_write(4.0);
    let full = ooo.cpu_model.llc_bytes as f64;
    let lin = op_profile(&ooo, &op, &big, 0, full, &idle, &[]).ns;
    assert!((free_op_ns(&ooo, &op, &big, 0) - lin).abs() < 1e-9);
}

#[test]
fn prefetched_streams_overlap_random_misses_only_on_their_own_queue() {
    let mut t = out_of_order();
    t.cpu_model.stream_mlp = None;
    let r = [region_on(&t, 0, 1 << 34), region_on(&t, 0, 1 << 34)];
    let idle = Contention::idle(2);
    let op = mixed_op(1.0, 8.0, 64.0);
    let ns = |t: &Topology| op_profile(t, &op, &r, 0, 0.0, &idle, &[]).ns;
    let lat = t.latency_ns(0, 0);
    let random = (1.0 - 0.0) * lat / t.cpu_model.mlp;
    // No prefetch depth of their own: the stream's lines queue with the demand misses.
    assert!((ns(&t) - 2.0 * random).abs() < 1e-9, "{}", ns(&t));
    // With one, they are fetched beside them: the longer of the two.
    t.cpu_model.stream_mlp = Some(4.0 * t.cpu_model.mlp);
    assert!((ns(&t) - random).abs() < 1e-9, "{}", ns(&t));
    let full = t.cpu_model.llc_bytes as f64;
    let lin = op_profile(&t, &op, &r, 0, full, &idle, &[]).ns;
    let free = free_op_ns(&t, &op, &r, 0);
    assert!((free - lin).abs() < 1e-9, "{free} vs {lin}");
    // The traffic of both still reaches memory.
    let p = op_profile(&t, &op, &r, 0, 0.0, &idle, &[]);
    assert!((p.bytes[0] - 2.0 * 64.0).abs() < 1e-9, "{:?}", p.bytes);
}

#[test]
fn a_core_bound_operation_loads_memory_but_does_not_wait_for_it() {
    let t = out_of_order();
    let r = [region_on(&t, 0, 1 << 34)];
    let lin = linear_op(&t, &OpCost::random_write(1000.0), &r, 0, 0.0, &[]);
    let mut busy = Contention::idle(2);
    busy.local[0] = 3.0;
    let (ns, slopes) = lin.ns_and_slopes(&busy);
    assert!(slopes.is_none() && ns == lin.ns(&Contention::idle(2)));
    // A memory-bound one waits, and its slope is its miss stall.
    let mem = linear_op(&t, &OpCost::random_write(1.0), &r, 0, 0.0, &[]);
    let (ns, slopes) = mem.ns_and_slopes(&busy);
    assert_eq!(slopes.map(|s| s[0]), Some(mem.coef[0]));
    assert!((ns - 3.0 * mem.coef[0]).abs() < 1e-9);
    // The solve counts the core-bound task's traffic all the same.
    let (q_one, _) = solve_contention(&t, &[&mem], &Contention::idle(2));
    let (q_two, _) = solve_contention(&t, &[&mem, &lin], &Contention::idle(2));
    assert!(q_two.local[0] >= q_one.local[0]);
    assert!(lin.bytes[0] > 0.0);
}
