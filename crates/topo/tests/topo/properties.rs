//! Property tests: no spec, however broken, makes loading panic; every accepted machine and its
//! scheduling domains satisfy the invariants the rest of homenode relies on.

use proptest::collection::vec;
use proptest::prelude::*;
use topo::domains::{flat_domain, node_domains};
use topo::presets::{PRESETS, preset_source};
use topo::spec::{CpuSpec, MachineSpec, MemorySpec, NodeOverride};
use topo::synthetic::{SYNTHETIC_KEYS, parse_synthetic};
use topo::{CpuSet, DomainLevel, Topology, sched_domains};

fn check_topology(t: &Topology) {
    let n = t.nr_nodes();
    assert!(n >= 1 && t.nr_cpus() >= 1);
    for (i, cpu) in t.cpus.iter().enumerate() {
        assert_eq!(cpu.id, i);
        let homes: Vec<usize> = (0..n).filter(|&k| t.node_cpus(k).contains(i)).collect();
        assert_eq!(homes, vec![cpu.node], "CPU {i} must be in exactly one node");
        assert!(t.core_cpus(i).is_subset(&t.llc_cpus(i)));
        assert!(t.llc_cpus(i).is_subset(t.node_cpus(cpu.node)));
    }
    let total: usize = t.nodes.iter().map(|node| node.cpus.count()).sum();
    assert_eq!(total, t.nr_cpus());
    assert_eq!(t.distance.len(), n);
    assert_eq!(t.latency_ns.len(), n);
    for a in 0..n {
        assert_eq!(t.distance[a].len(), n);
        assert_eq!(t.latency_ns[a].len(), n);
        assert_eq!(t.distance(a, a), 10);
        for b in 0..n {
            assert_eq!(t.distance(a, b), t.distance(b, a));
            assert!(a == b || t.distance(a, b) > 10);
            let l = t.latency_ns(a, b);
            assert!(l.is_finite() && l > 0.0);
        }
        let node = &t.nodes[a];
        assert!(node.mem_bytes > 0 && node.bandwidth_gbps > 0.0);
        assert!(node.remote_bandwidth_gbps > 0.0 && node.bandwidth_gbps.is_finite());
    }
    assert!(t.cpu_model.freq_mhz > 0.0 && t.cpu_model.mlp >= 1.0);
    assert!(t.memory.loaded_latency_ratio >= 1.0 && t.memory.page_bytes > 0);
}

fn check_level(t: &Topology, level: &DomainLevel) {
    assert_eq!(level.spans.len(), t.nr_cpus());
    assert_eq!(level.groups.len(), t.nr_cpus());
    for c in 0..t.nr_cpus() {
        let span = level.span(c);
        assert!(span.contains(c), "{}: span of {c}", level.name);
        let groups = level.groups(c);
        assert!(groups[0].contains(c), "{}: first group of {c}", level.name);
        let mut union = CpuSet::new();
        for g in groups {
            assert!(
                !g.is_empty() && g.is_subset(span),
                "{}: group outside span",
                level.name
            );
            assert!(!g.intersects(&union), "{}: overlapping groups", level.name);
            union = union.union(g);
        }
        assert_eq!(
            &union, span,
            "{}: groups must cover the span of {c}",
            level.name
        );
    }
}

fn check_domains(t: &Topology) {
    let levels = sched_domains(t);
    for l in &levels {
        check_level(t, l);
    }
    for pair in levels.windows(2) {
        for c in 0..t.nr_cpus() {
            assert!(
                pair[0].span(c).is_subset(pair[1].span(c)),
                "levels must nest"
            );
        }
        assert_ne!(pair[0].spans, pair[1].spans, "degenerate level kept");
    }
    if let Some(top) = levels.last() {
        // The top level spans everything a CPU can reach, i.e. the whole machine.
        assert_eq!(top.span(0), &t.all_cpus());
    }
    check_level(t, &flat_domain(t));
    for l in node_domains(t) {
        check_level(t, &l);
    }
}

/// Mostly sensible numbers, sometimes zero, negative, NaN or infinite.
fn num() -> impl Strategy<Value = f64> {
    prop_oneof![
        60 => 0.5f64..5000.0,
        1 => Just(0.0),
        1 => Just(-3.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(1e300),
    ]
}

#[derive(Debug, Clone)]
enum Dist {
    None,
    Remote(u32),
    Matrix(Vec<Vec<u32>>),
}

fn symmetric(n: usize, cells: Vec<u32>) -> Vec<Vec<u32>> {
    (0..n)
        .map(|a| {
            (0..n)
                .map(|b| match a.cmp(&b) {
                    std::cmp::Ordering::Equal => 10,
                    std::cmp::Ordering::Less => cells[a * n + b],
                    std::cmp::Ordering::Greater => cells[b * n + a],
                })
                .collect()
        })
        .collect()
}

fn dist(n: usize) -> impl Strategy<Value = Dist> {
    prop_oneof![
        1 => Just(Dist::None),
        4 => prop_oneof![4 => 11u32..60, 1 => 0u32..300].prop_map(Dist::Remote),
        6 => vec(11u32..40, n * n).prop_map(move |c| Dist::Matrix(symmetric(n, c))),
        2 => vec(vec(0u32..40, 0..n + 2), 0..n + 2).prop_map(Dist::Matrix),
    ]
}

fn overrides(n: usize) -> impl Strategy<Value = Vec<NodeOverride>> {
    let one = (
        0..n + 1,
        proptest::option::of(num()),
        proptest::option::of(num()),
    )
        .prop_map(|(id, mem_gib, bandwidth_gbps)| NodeOverride {
            id,
            mem_gib,
            bandwidth_gbps,
            remote_bandwidth_gbps: None,
        });
    prop_oneof![3 => Just(Vec::new()), 1 => vec(one, 1..3)]
}

fn arb_spec() -> impl Strategy<Value = MachineSpec> {
    let nodes = prop_oneof![20 => 1usize..7, 1 => Just(0usize), 1 => Just(5000usize)];
    nodes
        .prop_flat_map(|n| {
            // Matrices for the absurd node counts stay small: they are refused before being read.
            let m = n.min(8);
            // (cpus_per_node, smt, cores_per_llc): mostly consistent, sometimes arbitrary.
            let consistent =
                (1usize..4, 1usize..4, 1usize..4).prop_map(|(smt, llcs, cores_per_llc)| {
                    (smt * llcs * cores_per_llc, smt, cores_per_llc)
                });
            let shape = (
                prop_oneof![6 => consistent, 1 => (0usize..13, 0usize..5, 0usize..7)],
                num(),
            );
            let mlp = prop_oneof![4 => 1.0f64..20.0, 1 => num()];
            let cpu = (
                num(),
                mlp,
                0u64..100_000,
                prop_oneof![8 => Just(64u64), 1 => Just(48u64)],
            );
            let ratio = prop_oneof![4 => 1.0f64..4.0, 1 => num()];
            let mem = (num(), num(), num(), ratio, num(), num(), num(), num());
            let latency = prop_oneof![
                6 => Just(None),
                1 => vec(vec(num(), m), m).prop_map(Some),
                1 => vec(vec(num(), 0..m + 2), 0..m + 2).prop_map(Some),
            ];
            (Just(n), shape, dist(m), cpu, mem, latency, overrides(m))
        })
        .prop_map(
            |(n, ((cpn, smt, cpl), mem_gib), dist, cpu, mem, latency, node_overrides)| {
                let (distance, remote_distance) = match dist {
                    Dist::None => (None, None),
                    Dist::Remote(r) => (None, Some(r)),
                    Dist::Matrix(m) => (Some(m), None),
                };
                MachineSpec {
                    name: "prop".into(),
                    description: String::new(),
                    nodes: n,
                    cpus_per_node: cpn,
                    smt,
                    cores_per_llc: cpl,
                    mem_gib_per_node: mem_gib,
                    distance,
                    remote_distance,
                    cpu: CpuSpec {
                        freq_mhz: cpu.0,
                        mlp: cpu.1,
                        llc_kib: cpu.2,
                        line_bytes: cpu.3,
                        store_buffer: 0,
                        stream_mlp: None,
                        llc_latency_ns: None,
                        out_of_order: false,
                        refill_ns: None,
                        llc_stream_share: 0.0,
                        llc_ways: None,
                        llc_private: false,
                        tlb_entries: None,
                        tlb_walk_cycles: None,
                    },
                    memory: MemorySpec {
                        local_latency_ns: mem.0,
                        latency_ns: latency,
                        bandwidth_gbps: mem.1,
                        remote_bandwidth_gbps: mem.2,
                        loaded_latency_ratio: mem.3,
                        page_kib: 4,
                        line_transfer_local_ns: mem.4,
                        line_transfer_remote_ns: mem.5,
                        fault_overhead_ns: mem.6,
                    },
                    node_overrides,
                    origin: "prop.toml".into(),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_specs_never_panic(spec in arb_spec()) {
        // Through the TOML text as well, as a user's file would go.
        let text = spec.to_toml_string();
        match MachineSpec::from_toml_str(&text, "prop.toml") {
            Ok(parsed) => {
                let direct = spec.clone().into_topology();
                let via_text = parsed.into_topology();
                prop_assert_eq!(direct.is_ok(), via_text.is_ok());
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
        match spec.into_topology() {
            Ok(t) => {
                check_topology(&t);
                check_domains(&t);
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
        }
    }

    #[test]
    fn mangled_preset_text_never_panics(
        which in 0..PRESETS.len(),
        edits in vec((any::<prop::sample::Index>(), 0usize..4, "[=\\[\\]\"#\n,.a0-9 -]{0,3}"), 1..4),
    ) {
        let mut text = preset_source(PRESETS[which]).unwrap().to_string();
        for (at, del, insert) in edits {
            let mut pos = at.index(text.len() + 1);
            while !text.is_char_boundary(pos) {
                pos -= 1;
            }
            let mut end = (pos + del).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            text.replace_range(pos..end, &insert);
        }
        match MachineSpec::from_toml_str(&text, "mangled.toml").and_then(|s| s.into_topology()) {
            Ok(t) => check_topology(&t),
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(!msg.contains('\n'), "{}", msg);
                prop_assert!(msg.starts_with("mangled.toml"), "{}", msg);
            }
        }
    }

    #[test]
    fn synthetic_specs_never_panic(
        items in vec(
            (
                prop_oneof![
                    4 => proptest::sample::select(SYNTHETIC_KEYS.to_vec()).prop_map(String::from),
                    1 => "[a-z-]{0,6}",
                ],
                prop_oneof![
                    Just("0"), Just("1"), Just("2"), Just("3"), Just("4"), Just("1.6"),
                    Just("2.5"), Just("-1"), Just("nan"), Just("inf"), Just("1e400"), Just("x"),
                    Just(""), Just("0.3"), Just("30"),
                ],
            ),
            0..7,
        ),
        junk in "\\PC{0,12}",
    ) {
        let spec: Vec<String> = items.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for s in [spec.join(","), format!("{},{junk}", spec.join(","))] {
            match parse_synthetic(&s) {
                Ok(t) => {
                    check_topology(&t);
                    check_domains(&t);
                }
                Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
            }
        }
    }
}

#[test]
fn preset_domains_satisfy_invariants() {
    for name in PRESETS {
        let t = topo::presets::preset(name).unwrap();
        check_topology(&t);
        check_domains(&t);
    }
}

/// Guards the generator: enough random specs must be valid for the invariants to be exercised.
#[test]
fn random_specs_are_often_valid() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = arb_spec();
    let total = 2000;
    let accepted = (0..total)
        .filter(|_| {
            strategy
                .new_tree(&mut runner)
                .unwrap()
                .current()
                .into_topology()
                .is_ok()
        })
        .count();
    assert!(
        accepted * 5 >= total,
        "only {accepted} of {total} random specs are valid"
    );
    assert!(
        accepted * 10 <= total * 9,
        "{accepted} of {total}: too few invalid specs"
    );
}
