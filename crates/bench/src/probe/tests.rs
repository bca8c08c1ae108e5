use super::*;

#[test]
fn the_chase_is_one_cycle_through_every_slot() {
    let buf = chase_buffer(1, 7);
    let slots = (1 << 20) / LINE;
    let mut seen = vec![false; slots];
    let mut i = 0usize;
    for _ in 0..slots {
        assert_eq!(i % WORDS_PER_LINE, 0, "points inside a line");
        let slot = i / WORDS_PER_LINE;
        assert!(!seen[slot], "slot {slot} visited twice");
        seen[slot] = true;
        i = buf[i];
    }
    assert_eq!(i, 0, "the walk returns to the start after every slot");
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn stream_mlp_is_littles_law() {
    let cell = |c, m, lat, gbps| ProbeCell {
        cpu_node: c,
        mem_node: m,
        latency_ns: lat,
        read_gbps: gbps,
        gather_ns: 16.0,
    };
    let r = ProbeResult {
        buffer_mib: 1,
        loads: 1,
        rounds: 1,
        cells: vec![cell(0, 0, 128.0, 25.6), cell(0, 1, 300.0, 1.0)],
        llc_chase_kib: 8192,
        llc_latency_ns: 20.0,
        llc_gather_ns: 4.0,
        cache_curve: vec![(256, 10.0), (512, 20.0), (1024, 60.0), (2048, 100.0)],
        co_run: vec![],
        core_mhz: Some(4249.6),
        llc_share: None,
        refill: None,
        turn_refill: None,
        turns: None,
    };
    // 25.6 GB/s = 0.4 lines per ns, for 128 ns: 51.2 lines in flight.
    assert!((r.stream_mlp().unwrap() - 51.2).abs() < 1e-9);
    assert!(r.to_text().contains("--machine-set stream_mlp=51"));
    // 128 ns over 16 ns per independent update: 8 in flight; the LLC's 20 / 4: 5.
    assert_eq!(r.random_mlp(), Some(8.0));
    assert_eq!(r.llc_mlp(), Some(5.0));
    // 4 ns per independent hit, overlapped 8 deep as the model overlaps misses: 32 ns.
    assert_eq!(r.model_llc_latency_ns(), Some(32.0));
    let text = r.to_text();
    assert!(text.contains("--machine-set mlp=8.0"), "{text}");
    assert!(text.contains("--machine-set llc_latency_ns=32"), "{text}");
    // Half-way from 10 ns to the memory's 128 ns is 69 ns: 1024 KiB is the last below.
    assert_eq!(r.effective_llc_kib(), Some(1024));
    assert!(text.contains("--machine-set llc_kib=1024"), "{text}");
    let flags = text.lines().last().unwrap_or_default();
    assert!(
        flags.starts_with("For `homenode sim --machine host`:")
            && flags.contains("--machine-set llc_kib=1024")
            && flags.contains("--machine-set freq_mhz=4250"),
        "{flags}"
    );
    // Two CPUs of the LLC that keep their rate together each hold the knee: in the model
    // each CPU has its own knee of the LLC (llc_private), and together they hold twice it.
    let own = ProbeResult {
        llc_share: Some(crate::llc_share::LlcShare {
            threads: 2,
            buffer_kib: 768,
            alone_gather_ns: 1.0,
            gather_ns: 1.1,
            slowdown: 1.1,
            shared_slowdown: 3.0,
        }),
        ..r.clone()
    };
    let text = own.to_text();
    assert_eq!(own.model_llc_kib(), Some(1024));
    assert!(own.model_llc_private() && !r.model_llc_private());
    assert_eq!(own.capacity_kib(), Some(2048));
    assert!(
        text.contains(
            "each core holds its own (--machine-set llc_kib=1024 --machine-set llc_private=1)"
        ),
        "{text}"
    );
    let flags = text.lines().last().unwrap_or_default();
    assert!(
        flags.contains("--machine-set llc_kib=1024 --machine-set llc_private=1"),
        "{flags}"
    );
    let none = ProbeResult { cells: vec![], ..r };
    assert_eq!(none.stream_mlp(), None);
}

fn lap(start_s: f64, end_s: f64, bytes: u64) -> Lap {
    Lap {
        start_s,
        end_s,
        bytes,
        gather_ns: 10.0,
        timed_s: end_s - start_s,
        cpu_s: Some(end_s - start_s),
    }
}

#[test]
fn the_on_cpu_share_is_the_least_of_the_threads() {
    let on = |cpu: Option<f64>| Lap {
        cpu_s: cpu,
        timed_s: 0.1,
        ..lap(0.0, 0.1, 1)
    };
    // One thread on its CPU all the time, one for 0.15 of its 0.2 s: 75%.
    let laps = vec![
        vec![on(Some(0.1)), on(Some(0.1))],
        vec![on(Some(0.1)), on(Some(0.05))],
    ];
    assert!((on_cpu_share(&laps).unwrap() - 0.75).abs() < 1e-9);
    // getrusage's microseconds may round past the wall clock: at most 1.
    assert_eq!(on_cpu_share(&[vec![on(Some(0.1001))]]), Some(1.0));
    assert_eq!(on_cpu_share(&[vec![on(None)]]), None);
    assert_eq!(on_cpu_share(&[]), None);
}

#[test]
fn the_aggregate_rate_is_all_bytes_over_the_whole_span() {
    // One thread alone: 2 GB in 0.1 s.
    assert!((aggregate_gbps(&[lap(1.0, 1.1, 2_000_000_000)]) - 20.0).abs() < 1e-9);
    // Two threads, started 10 ms apart, the last ending 0.2 s after the first began:
    // 4 GB over 0.2 s, not the sum of their own rates (20 + 2 / 0.15 GB/s).
    let two = [lap(0.0, 0.2, 2_000_000_000), lap(0.01, 0.16, 2_000_000_000)];
    assert!((aggregate_gbps(&two) - 20.0).abs() < 1e-9);
    assert_eq!(aggregate_gbps(&[]), 0.0);
    assert_eq!(aggregate_gbps(&[lap(1.0, 1.0, 64)]), 0.0);
}

#[test]
fn co_run_figures_are_medians_over_rounds_and_threads() {
    let t = |ns: [f64; 3], s: [f64; 3]| -> Vec<Lap> {
        (0..3)
            .map(|r| Lap {
                gather_ns: ns[r],
                ..lap(r as f64, r as f64 + s[r], 1_000_000_000)
            })
            .collect()
    };
    // Rounds of 2 GB in 0.1, 0.2 and 0.4 s: 20, 10, 5 GB/s, median 10.
    let laps = [
        t([10.0, 11.0, 30.0], [0.1, 0.2, 0.4]),
        t([12.0, 13.0, 14.0], [0.05, 0.1, 0.1]),
    ];
    let (gbps, ns) = co_run_figures(&laps);
    assert!((gbps - 10.0).abs() < 1e-9, "{gbps}");
    // 10, 11, 12, 13, 14, 30: the mean of the two middle values.
    assert_eq!(ns, 12.5);
    assert_eq!(co_run_figures(&[]), (0.0, 0.0));
}

#[test]
fn the_slowdown_is_together_over_alone() {
    assert_eq!(slowdown(15.0, 10.0), 1.5);
    assert_eq!(slowdown(10.0, 10.0), 1.0);
    assert_eq!(slowdown(10.0, 0.0), 0.0);
}

#[test]
fn co_run_shares_the_buffer_and_keeps_the_work_per_thread() {
    let cfg = ProbeConfig::default();
    let (one, mib) = CoRunLoad::new(&cfg, 1);
    assert_eq!((mib, one.passes), (256, 1));
    let (two, mib) = CoRunLoad::new(&cfg, 2);
    assert_eq!((mib, two.passes), (128, 2));
    assert_eq!(two.words * 8, 128 << 20);
    // 72 CPUs: 4 MiB each (256 / 72 rounded up), 64 passes, 256 MiB read per round.
    let (many, mib) = CoRunLoad::new(&cfg, 72);
    assert_eq!((mib, many.passes), (4, 64));
    let tiny = ProbeConfig { mib: 1, ..cfg };
    assert_eq!(CoRunLoad::new(&tiny, 4).1, 1);
}

#[test]
fn the_co_run_prints_its_table_and_the_bandwidth_flag() {
    let node = |node, agg, slow| NodeCoRun {
        node,
        threads: 2,
        buffer_mib: 128,
        passes: 2,
        alone_read_gbps: 12.0,
        aggregate_read_gbps: agg,
        alone_gather_ns: 10.0,
        gather_ns: 10.0 * slow,
        slowdown: slow,
        on_cpu_share: Some(0.98),
        alone_on_cpu_share: None,
    };
    let r = ProbeResult {
        buffer_mib: 1,
        loads: 1,
        rounds: 1,
        cells: vec![ProbeCell {
            cpu_node: 0,
            mem_node: 0,
            latency_ns: 128.0,
            read_gbps: 12.0,
            gather_ns: 16.0,
        }],
        llc_chase_kib: 8192,
        llc_latency_ns: 20.0,
        llc_gather_ns: 4.0,
        cache_curve: vec![],
        co_run: vec![node(0, 15.04, 1.25)],
        core_mhz: None,
        llc_share: None,
        refill: None,
        turn_refill: None,
        turns: None,
    };
    assert_eq!(r.node_bandwidth_gbps(), Some(15.04));
    assert_eq!(r.co_run_relative_rate(), Some(0.8));
    let text = r.to_text();
    assert!(text.contains("--machine-set bandwidth_gbps=15.0"), "{text}");
    assert!(text.contains("bandwidth_gbps = 15.0"), "{text}");
    assert!(
        text.contains("at 0.80 of one thread's rate alone"),
        "{text}"
    );
    assert!(text.contains("\n   0        2      "), "{text}");
    assert!(text.contains("? / 98%"), "{text}");
    assert!(!text.contains("freq_mhz"), "no clock, no flag: {text}");
    assert!(!text.contains("off its CPU"), "{text}");
    let busy = ProbeResult {
        co_run: vec![NodeCoRun {
            on_cpu_share: Some(0.5),
            ..node(0, 15.0, 2.0)
        }],
        ..r.clone()
    };
    assert!(busy.to_text().contains("off its CPU"));
    // Several nodes: the median node (of 3, the middle one).
    let three = ProbeResult {
        co_run: vec![node(0, 15.0, 1.0), node(1, 30.0, 2.0), node(2, 20.0, 4.0)],
        ..r.clone()
    };
    assert_eq!(three.node_bandwidth_gbps(), Some(20.0));
    assert_eq!(three.co_run_relative_rate(), Some(0.5));
    // No co-run (no node with CPUs): no table, no flag.
    let none = ProbeResult {
        co_run: vec![],
        ..r
    };
    assert!(!none.to_text().contains("bandwidth_gbps"));
    assert_eq!(none.node_bandwidth_gbps(), None);
}

#[test]
fn bad_sizes_are_refused() {
    let cfg = ProbeConfig {
        mib: 0,
        ..Default::default()
    };
    let e = run(Path::new("/"), &cfg).unwrap_err().to_string();
    assert!(e.contains("--mib"), "{e}");
}
