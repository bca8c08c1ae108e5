//! Tests of machine specs: building, numbering, overrides, and one-line errors for every
//! malformed or impossible spec.

use super::*;

pub(crate) const MINIMAL: &str = r#"
name = "tiny"
nodes = 2
cpus_per_node = 2
mem_gib_per_node = 1
remote_distance = 20

[cpu]
freq_mhz = 1000
mlp = 1
llc_kib = 1024

[memory]
local_latency_ns = 100
bandwidth_gbps = 10
remote_bandwidth_gbps = 5
loaded_latency_ratio = 2
line_transfer_local_ns = 50
line_transfer_remote_ns = 100
fault_overhead_ns = 1000
"#;

fn parse(text: &str) -> Result<Topology, TopoError> {
    MachineSpec::from_toml_str(text, "test.toml")?.into_topology()
}

/// The error of `MINIMAL` with `from` replaced by `to`, as one line.
fn err_with(from: &str, to: &str) -> String {
    assert!(MINIMAL.contains(from), "{from}");
    let e = parse(&MINIMAL.replacen(from, to, 1)).expect_err("should be refused");
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "not one line: {msg}");
    msg
}

#[test]
fn minimal_spec_builds() {
    let t = parse(MINIMAL).unwrap();
    assert_eq!(t.nr_cpus(), 4);
    assert_eq!(t.nr_nodes(), 2);
    assert_eq!(t.distance, vec![vec![10, 20], vec![20, 10]]);
    assert_eq!(t.latency_ns, vec![vec![100.0, 200.0], vec![200.0, 100.0]]);
    assert_eq!(t.cpu_model.line_bytes, 64);
    assert_eq!(t.cpu_model.store_buffer, 0);
    let sb = parse(&MINIMAL.replace("llc_kib = 1024", "llc_kib = 1024\nstore_buffer = 56"));
    assert_eq!(sb.unwrap().cpu_model.store_buffer, 56);
    assert_eq!(t.memory.page_bytes, 4096);
    assert_eq!(t.nodes[1].mem_bytes, 1 << 30);
    assert_eq!(t.node_cpus(1).to_list_string(), "2-3");
    assert_eq!(t.description, "2 nodes x 2 CPUs");
}

#[test]
fn numbering_is_node_major_with_adjacent_siblings() {
    let text = MINIMAL.replace(
        "cpus_per_node = 2",
        "cpus_per_node = 8\nsmt = 2\ncores_per_llc = 2",
    );
    let t = parse(&text).unwrap();
    assert_eq!(t.core_cpus(5).to_list_string(), "4-5");
    assert_eq!(t.llc_cpus(5).to_list_string(), "4-7");
    assert_eq!(t.cpus[9].node, 1);
    assert_eq!(t.cpus[9].core, 4);
    assert_eq!(t.cpus[9].llc, 2);
}

#[test]
fn node_overrides_apply() {
    let text = format!("{MINIMAL}\n[[node]]\nid = 1\nmem_gib = 2\nbandwidth_gbps = 3\n");
    let t = parse(&text).unwrap();
    assert_eq!(t.nodes[1].mem_bytes, 2 << 30);
    assert_eq!(t.nodes[1].bandwidth_gbps, 3.0);
    assert_eq!(t.nodes[0].bandwidth_gbps, 10.0);
}

#[test]
fn syntax_error_reports_file_line_column_and_field() {
    let text = MINIMAL.replace("nodes = 2", "nodes = = 2");
    let e = MachineSpec::from_toml_str(&text, "m.toml").unwrap_err();
    let TopoError::Toml {
        origin,
        line,
        column,
        field,
        ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(
        (origin.as_str(), *line, field.as_str()),
        ("m.toml", 3, "nodes")
    );
    assert_eq!(*column, 9);
    assert!(e.to_string().starts_with("m.toml:3:9: in `nodes`: "), "{e}");
}

#[test]
fn type_error_names_qualified_field() {
    let text = MINIMAL.replace("freq_mhz = 1000", "freq_mhz = \"fast\"");
    let e = MachineSpec::from_toml_str(&text, "m.toml").unwrap_err();
    let TopoError::Toml {
        line,
        column,
        field,
        ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!((*line, *column, field.as_str()), (9, 12, "cpu.freq_mhz"));
}

#[test]
fn error_inside_multiline_matrix_names_the_matrix() {
    let text = MINIMAL.replace(
        "remote_distance = 20",
        "distance = [\n  [10, 20],\n  [20, \"x\"],\n]",
    );
    let e = MachineSpec::from_toml_str(&text, "m.toml").unwrap_err();
    let TopoError::Toml { line, field, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!((*line, field.as_str()), (8, "distance"));
}

#[test]
fn negative_count_is_a_type_error_naming_the_field() {
    let msg = err_with("cpus_per_node = 2", "cpus_per_node = -2");
    assert!(
        msg.contains("test.toml:4:") && msg.contains("`cpus_per_node`"),
        "{msg}"
    );
}

#[test]
fn missing_field_is_named() {
    let text = MINIMAL.replace("mlp = 1\n", "");
    let e = MachineSpec::from_toml_str(&text, "m.toml").unwrap_err();
    assert!(e.to_string().contains("`cpu.mlp`"), "{e}");
}

/// Each distinct remote distance is a domain level held per CPU: a table of more than
/// [`MAX_REMOTE_DISTANCES`] is refused, naming the key and the limit; 16 pass.
#[test]
fn too_many_distinct_distances_are_refused() {
    let spec = |n: usize| {
        let rows: Vec<String> = (0..n)
            .map(|i| {
                let row: Vec<String> = (0..n)
                    .map(|j| {
                        if i == j {
                            10
                        } else {
                            10 + i.abs_diff(j) as u32
                        }
                    })
                    .map(|d| d.to_string())
                    .collect();
                format!("[{}]", row.join(","))
            })
            .collect();
        MINIMAL
            .replace("nodes = 2", &format!("nodes = {n}"))
            .replace("cpus_per_node = 2", "cpus_per_node = 1")
            .replace(
                "remote_distance = 20",
                &format!("distance = [{}]", rows.join(",")),
            )
    };
    let ok = MachineSpec::from_toml_str(&spec(17), "m.toml").expect("parses");
    assert_eq!(ok.into_topology().expect("16 distances").nr_nodes(), 17);
    let e = MachineSpec::from_toml_str(&spec(18), "m.toml")
        .expect("parses")
        .into_topology()
        .expect_err("17 distances")
        .to_string();
    assert!(
        e.contains("`distance`")
            && e.contains("17 distinct remote distances, more than the limit of 16"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

#[test]
fn unknown_key_is_refused_with_its_name() {
    let text = MINIMAL.replace("mlp = 1", "mlp = 1\nfrequency = 3");
    let e = MachineSpec::from_toml_str(&text, "m.toml").unwrap_err();
    let TopoError::UnknownKey {
        key, line, valid, ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!((key.as_str(), *line), ("cpu.frequency", 11));
    assert!(valid.contains("freq_mhz"), "{valid}");
    let e = MachineSpec::from_toml_str(&format!("colour = 1\n{MINIMAL}"), "m.toml");
    assert!(e.unwrap_err().to_string().contains("unknown key `colour`"));
}

#[test]
#[allow(clippy::too_many_lines)] // a table of cases, one row per refusal
fn impossible_machines_are_refused_in_one_line() {
    let cases: &[(&str, &str, &str)] = &[
        ("nodes = 2", "nodes = 0", "`nodes`"),
        ("cpus_per_node = 2", "cpus_per_node = 0", "`cpus_per_node`"),
        ("cpus_per_node = 2", "cpus_per_node = 3\nsmt = 2", "`smt`"),
        (
            "cpus_per_node = 2",
            "cpus_per_node = 2\ncores_per_llc = 3",
            "`cores_per_llc`",
        ),
        (
            "cpus_per_node = 2",
            "cpus_per_node = 100000",
            "`cpus_per_node`",
        ),
        (
            "mem_gib_per_node = 1",
            "mem_gib_per_node = 0",
            "`mem_gib_per_node`",
        ),
        (
            "mem_gib_per_node = 1",
            "mem_gib_per_node = nan",
            "`mem_gib_per_node`",
        ),
        (
            "mem_gib_per_node = 1",
            "mem_gib_per_node = 1e300",
            "`mem_gib_per_node`",
        ),
        (
            "remote_distance = 20",
            "remote_distance = 10",
            "`remote_distance`",
        ),
        (
            "remote_distance = 20",
            "remote_distance = 255",
            "`remote_distance`",
        ),
        ("remote_distance = 20", "", "`distance` is missing"),
        (
            "remote_distance = 20",
            "remote_distance = 20\ndistance = [[10,20],[20,10]]",
            "both",
        ),
        ("remote_distance = 20", "distance = [[10,20]]", "has 1 rows"),
        (
            "remote_distance = 20",
            "distance = [[10,20],[20]]",
            "`distance[1]`",
        ),
        (
            "remote_distance = 20",
            "distance = [[10,20],[20,12]]",
            "`distance[1][1]`",
        ),
        (
            "remote_distance = 20",
            "distance = [[10,9],[9,10]]",
            "`distance[0][1]`",
        ),
        (
            "remote_distance = 20",
            "distance = [[10,20],[21,10]]",
            "symmetric",
        ),
        ("freq_mhz = 1000", "freq_mhz = -1", "`cpu.freq_mhz`"),
        ("freq_mhz = 1000", "freq_mhz = inf", "`cpu.freq_mhz`"),
        ("mlp = 1", "mlp = 0.5", "`cpu.mlp`"),
        ("mlp = 1", "mlp = 1\nstream_mlp = 0.5", "`cpu.stream_mlp`"),
        (
            "mlp = 1",
            "mlp = 1\nllc_latency_ns = -1",
            "`cpu.llc_latency_ns`",
        ),
        ("mlp = 1", "mlp = 1\nrefill_ns = -2", "`cpu.refill_ns`"),
        (
            "mlp = 1",
            "mlp = 1\nllc_stream_share = 1.5",
            "`cpu.llc_stream_share`",
        ),
        ("llc_kib = 1024", "llc_kib = 0", "`cpu.llc_kib`"),
        (
            "llc_kib = 1024",
            "llc_kib = 1024\nllc_ways = 0",
            "`cpu.llc_ways`",
        ),
        (
            "llc_kib = 1024",
            "llc_kib = 1024\ntlb_entries = 0\ntlb_walk_cycles = 15",
            "`cpu.tlb_entries`",
        ),
        (
            "llc_kib = 1024",
            "llc_kib = 1024\ntlb_entries = 96",
            "`cpu.tlb_walk_cycles` is missing",
        ),
        (
            "llc_kib = 1024",
            "llc_kib = 1024\ntlb_walk_cycles = 15",
            "`cpu.tlb_entries` is missing",
        ),
        (
            "llc_kib = 1024",
            "llc_kib = 1024\ntlb_entries = 96\ntlb_walk_cycles = -1",
            "`cpu.tlb_walk_cycles`",
        ),
        (
            "llc_kib = 1024",
            "llc_kib = 1024\nline_bytes = 48",
            "`cpu.line_bytes`",
        ),
        (
            "local_latency_ns = 100",
            "local_latency_ns = 0",
            "`memory.local_latency_ns`",
        ),
        (
            "local_latency_ns = 100",
            "local_latency_ns = 100\nlatency_ns = [[1.0]]",
            "rows",
        ),
        (
            "local_latency_ns = 100",
            "local_latency_ns = 100\nlatency_ns = [[1.0, 2.0], [2.0, -1.0]]",
            "`memory.latency_ns[1][1]`",
        ),
        (
            "bandwidth_gbps = 10",
            "bandwidth_gbps = 0",
            "`memory.bandwidth_gbps`",
        ),
        (
            "remote_bandwidth_gbps = 5",
            "remote_bandwidth_gbps = 0",
            "remote_bandwidth",
        ),
        (
            "loaded_latency_ratio = 2",
            "loaded_latency_ratio = 0.5",
            "loaded_latency_ratio",
        ),
        (
            "loaded_latency_ratio = 2",
            "loaded_latency_ratio = 2\npage_kib = 3",
            "page_kib",
        ),
        (
            "line_transfer_local_ns = 50",
            "line_transfer_local_ns = 0",
            "line_transfer_local",
        ),
        (
            "fault_overhead_ns = 1000",
            "fault_overhead_ns = -1",
            "fault_overhead_ns",
        ),
        ("name = \"tiny\"", "name = \" \"", "`name`"),
    ];
    for (from, to, expect) in cases {
        let msg = err_with(from, to);
        assert!(msg.contains(expect), "{to}: {msg}");
        assert!(msg.starts_with("test.toml"), "{msg}");
    }
    for ov in ["[[node]]\nid = 2", "[[node]]\nid = 0\n[[node]]\nid = 0"] {
        let e = parse(&format!("{MINIMAL}\n{ov}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`node.id`"), "{e}");
    }
    let e = parse(&format!("{MINIMAL}\n[[node]]\nid = 1\nmem_gib = -3\n")).unwrap_err();
    assert!(e.to_string().contains("`node[1].mem_gib`"), "{e}");
}

#[test]
fn one_node_needs_no_distance() {
    let text = MINIMAL
        .replace("nodes = 2", "nodes = 1")
        .replace("remote_distance = 20", "");
    let t = parse(&text).unwrap();
    assert_eq!(t.distance, vec![vec![10]]);
}

#[test]
fn spec_roundtrips_through_toml() {
    let spec = MachineSpec::from_toml_str(MINIMAL, "x").unwrap();
    let again = MachineSpec::from_toml_str(&spec.to_toml_string(), "x").unwrap();
    assert_eq!(spec, again);
}
