//! The machines shipped with homenode, embedded from `machines/*.toml`.
//!
//! Each file documents every number with its source or the assumption behind it; `docs/MACHINES.md`
//! collects the same information per machine.

use crate::Topology;
use crate::error::TopoError;
use crate::spec::MachineSpec;

/// Preset names, in the order they are listed to users.
pub const PRESETS: &[&str] = &[
    "azusa16",
    "tx7-8",
    "wildfire8",
    "kunpeng96",
    "xeon2s",
    "epyc-nps4",
    "epyc9004-nps1",
    "epyc9004-nps4",
    "spr-snc4",
    "arm128",
];

const SOURCES: &[(&str, &str)] = &[
    ("azusa16", include_str!("../../../machines/azusa16.toml")),
    ("tx7-8", include_str!("../../../machines/tx7-8.toml")),
    (
        "wildfire8",
        include_str!("../../../machines/wildfire8.toml"),
    ),
    (
        "kunpeng96",
        include_str!("../../../machines/kunpeng96.toml"),
    ),
    ("xeon2s", include_str!("../../../machines/xeon2s.toml")),
    (
        "epyc-nps4",
        include_str!("../../../machines/epyc-nps4.toml"),
    ),
    (
        "epyc9004-nps1",
        include_str!("../../../machines/epyc9004-nps1.toml"),
    ),
    (
        "epyc9004-nps4",
        include_str!("../../../machines/epyc9004-nps4.toml"),
    ),
    ("spr-snc4", include_str!("../../../machines/spr-snc4.toml")),
    ("arm128", include_str!("../../../machines/arm128.toml")),
];

/// The TOML text of a preset, with its source comments.
pub fn preset_source(name: &str) -> Option<&'static str> {
    SOURCES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// The parsed (not yet validated) spec of a preset.
pub fn preset_spec(name: &str) -> Result<MachineSpec, TopoError> {
    let text = preset_source(name).ok_or_else(|| TopoError::UnknownPreset {
        name: name.to_string(),
        valid: PRESETS.join(", "),
    })?;
    MachineSpec::from_toml_str(text, &format!("machines/{name}.toml"))
}

/// A preset machine, validated.
pub fn preset(name: &str) -> Result<Topology, TopoError> {
    preset_spec(name)?.into_topology()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_validates() {
        // (name, nodes, cpus, smt, llcs, a remote distance to spot-check)
        let expect = [
            ("azusa16", 4, 16, 1, 16, (0, 3, 16)),
            ("tx7-8", 4, 8, 1, 8, (1, 2, 18)),
            ("wildfire8", 2, 8, 1, 8, (0, 1, 30)),
            ("kunpeng96", 4, 96, 1, 4, (1, 3, 24)),
            ("xeon2s", 2, 144, 2, 2, (0, 1, 21)),
            ("epyc-nps4", 4, 128, 2, 16, (2, 3, 12)),
            ("epyc9004-nps1", 2, 384, 2, 24, (0, 1, 32)),
            ("epyc9004-nps4", 8, 384, 2, 24, (1, 6, 32)),
            ("spr-snc4", 8, 224, 2, 8, (4, 7, 12)),
            ("arm128", 1, 128, 1, 1, (0, 0, 10)),
        ];
        assert_eq!(PRESETS.len(), expect.len());
        for (name, nodes, cpus, smt, llcs, (a, b, d)) in expect {
            let t = preset(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(t.name, name);
            assert_eq!((t.nr_nodes(), t.nr_cpus()), (nodes, cpus), "{name}");
            assert_eq!(t.core_cpus(0).count(), smt, "{name}");
            let llc_ids: std::collections::BTreeSet<_> = t.cpus.iter().map(|c| c.llc).collect();
            assert_eq!(llc_ids.len(), llcs, "{name}");
            assert_eq!((t.distance(a, b), t.distance(b, a)), (d, d), "{name}");
            for n in 0..nodes {
                assert_eq!(t.distance(n, n), 10);
                assert_eq!(t.node_cpus(n).count(), cpus / nodes);
            }
            assert!(!t.description.is_empty());
            let src = preset_source(name).unwrap();
            assert!(
                src.contains("SOURCE") && src.contains("ASSUMPTION"),
                "{name}"
            );
        }
    }

    #[test]
    fn preset_latencies() {
        let x = preset("xeon2s").unwrap();
        assert_eq!(x.latency_ns, vec![vec![89.0, 143.0], vec![143.0, 89.0]]);
        assert_eq!(x.cpu_model.llc_bytes, 54 << 20);
        let k = preset("kunpeng96").unwrap();
        assert_eq!(k.latency_ns[1][3], 240.0);
        assert_eq!(k.nodes_by_distance(1), vec![1, 0, 2, 3]);
        let w = preset("wildfire8").unwrap();
        assert_eq!(w.latency_ns[0][1] / w.latency_ns[0][0], 3.0);
        assert_eq!(w.cpu_model.store_buffer, 32);
        let tx7 = preset("tx7-8").unwrap();
        assert_eq!(
            (tx7.latency_ns[0][0], tx7.cpu_model.line_bytes),
            (175.0, 128)
        );
        assert_eq!(w.memory.page_bytes, 8192);
        let e = preset("epyc-nps4").unwrap();
        assert_eq!(e.llc_cpus(0).to_list_string(), "0-7");
        assert_eq!(e.latency_ns[0][1], 125.0);
        // Genoa NPS4: 3 CCDs per quadrant, a socket of 4 quadrants, two sockets.
        let g = preset("epyc9004-nps4").unwrap();
        assert_eq!(g.llc_cpus(0).to_list_string(), "0-15");
        assert_eq!(g.cpu_model.llc_bytes, 32 << 20);
        assert_eq!(g.nodes_by_distance(5), vec![5, 4, 6, 7, 0, 1, 2, 3]);
        assert_eq!((g.latency_ns[0][3], g.latency_ns[3][4]), (111.0, 187.0));
        // Genoa NPS1 is the same machine: the node is the socket, its latency the quadrant
        // average (to the rounding of the derivation).
        let g1 = preset("epyc9004-nps1").unwrap();
        assert_eq!(g1.node_cpus(1).count(), 4 * g.node_cpus(4).count());
        let quadrants = (g.latency_ns[0][0] + 3.0 * g.latency_ns[0][1]) / 4.0;
        assert_eq!(g1.latency_ns[0][0], quadrants.round());
        assert_eq!(g1.latency_ns[0][1], g.latency_ns[0][4]);
        // SPR SNC4: one LLC per node (a quarter of 105 MB), latency by tile position.
        let s = preset("spr-snc4").unwrap();
        assert_eq!(s.llc_cpus(30).to_list_string(), "28-55");
        assert_eq!(s.cpu_model.llc_bytes, 105 << 18);
        assert_eq!((s.latency_ns[1][2], s.latency_ns[6][5]), (120.0, 120.0));
        assert_eq!(s.distance(2, 6), 21);
        // arm128: the no-NUMA baseline, one node and one LLC.
        let a = preset("arm128").unwrap();
        assert_eq!((a.nr_nodes(), a.llc_cpus(77).count()), (1, 128));
        assert_eq!(a.latency_ns, vec![vec![100.0]]);
    }

    #[test]
    fn unknown_preset_lists_valid_names() {
        let e = preset("azusa").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown preset `azusa` (valid presets: azusa16, tx7-8, wildfire8, kunpeng96, xeon2s, \
             epyc-nps4, epyc9004-nps1, epyc9004-nps4, spr-snc4, arm128)"
        );
        assert!(preset_source("nope").is_none());
    }
}
