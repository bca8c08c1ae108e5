//! Command-line machine specs: `nodes=4,cpus-per-node=4,remote-ratio=1.6`.

use crate::Topology;
use crate::error::{TopoError, one_line};
use crate::presets;

use crate::spec::{CpuSpec, LOCAL_DISTANCE, MAX_DISTANCE, MachineSpec};

/// Keys accepted by [`parse_synthetic`].
pub const SYNTHETIC_KEYS: &[&str] = &[
    "name",
    "nodes",
    "cpus-per-node",
    "smt",
    "remote-ratio",
    "mem-gib",
    "local-latency-ns",
    "bandwidth-gbps",
    "remote-bandwidth-gbps",
    "freq-mhz",
    "llc-mib",
];

/// The preset whose per-core figures give the synthetic defaults.
pub const SYNTHETIC_BASE: &str = "xeon2s";

/// Builds a machine from a command-line spec such as `nodes=4,cpus-per-node=4,remote-ratio=1.6`.
///
/// Unlisted keys take defaults from the [`SYNTHETIC_BASE`] preset (2-socket Ice Lake-SP):
/// latencies, clock, MLP, page size and cache-line costs as in that preset; bandwidth, remote
/// bandwidth, LLC size and memory size are that preset's per-core figures times the cores of a
/// node, so a small synthetic node gets a proportional share. Defaults for the shape: 2 nodes of
/// 8 CPUs, no SMT, one LLC per node, remote ratio = the preset's remote/local latency (rounded
/// to a SLIT distance).
pub fn parse_synthetic(s: &str) -> Result<Topology, TopoError> {
    synthetic_spec(s)?.into_topology()
}

/// The [`MachineSpec`] a synthetic spec stands for (defaults filled in).
pub fn synthetic_spec(s: &str) -> Result<MachineSpec, TopoError> {
    let mut given: Vec<(&str, &str)> = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            return Err(synthetic_err(item, format!("`{item}` is not key=value")));
        };
        let (k, v) = (k.trim(), v.trim());
        if !SYNTHETIC_KEYS.contains(&k) {
            return Err(synthetic_err(k, format!("unknown key `{k}`")));
        }
        if given.iter().any(|(g, _)| *g == k) {
            return Err(synthetic_err(k, format!("key `{k}` given twice")));
        }
        given.push((k, v));
    }
    let get = |k: &str| given.iter().find(|(g, _)| *g == k).map(|(_, v)| *v);

    let base = presets::preset_spec(SYNTHETIC_BASE)?;
    let base_cores = (base.cpus_per_node / base.smt.max(1)).max(1) as f64;

    let nodes = int_key(get("nodes"), "nodes", 2)?;
    let cpn = int_key(get("cpus-per-node"), "cpus-per-node", 8)?;
    let smt = int_key(get("smt"), "smt", 1)?;
    let cores = (cpn / smt).max(1) as f64;
    let per_core = |x: f64| x / base_cores * cores;

    let base_ratio = base
        .memory
        .latency_ns
        .as_ref()
        .and_then(|m| Some(m.first()?.get(1)? / m.first()?.first()?))
        .unwrap_or(2.0);
    let ratio = float_key(get("remote-ratio"), "remote-ratio", base_ratio)?;
    let remote = (ratio * 10.0).round();
    if !(f64::from(LOCAL_DISTANCE + 1)..=f64::from(MAX_DISTANCE)).contains(&remote) {
        return Err(synthetic_err(
            "remote-ratio",
            format!(
                "remote-ratio={ratio} gives SLIT distance {remote}; it must give {}..={MAX_DISTANCE} \
                 (ratio 1.05..25.4)",
                LOCAL_DISTANCE + 1
            ),
        ));
    }
    // The base's last-level cache per node, shared out per core; a synthetic node has one LLC.
    let base_llcs_per_node = (base_cores / base.cores_per_llc.max(1) as f64).max(1.0);
    let llc_mib_default = per_core(base.cpu.llc_kib as f64 / 1024.0 * base_llcs_per_node);
    let llc_mib = float_key(get("llc-mib"), "llc-mib", llc_mib_default)?;
    let llc_kib = (llc_mib * 1024.0).round();
    if !(1.0..=1e15).contains(&llc_kib) {
        return Err(synthetic_err(
            "llc-mib",
            format!("llc-mib={llc_mib} is out of range"),
        ));
    }

    let mut memory = base.memory.clone();
    memory.latency_ns = None;
    memory.local_latency_ns = float_key(
        get("local-latency-ns"),
        "local-latency-ns",
        base.memory.local_latency_ns,
    )?;
    memory.bandwidth_gbps = float_key(
        get("bandwidth-gbps"),
        "bandwidth-gbps",
        per_core(base.memory.bandwidth_gbps),
    )?;
    memory.remote_bandwidth_gbps = float_key(
        get("remote-bandwidth-gbps"),
        "remote-bandwidth-gbps",
        per_core(base.memory.remote_bandwidth_gbps),
    )?;
    let name = get("name").unwrap_or("synthetic").to_string();
    if name.is_empty() {
        return Err(synthetic_err("name", "name must not be empty".to_string()));
    }
    let spec_text: Vec<String> = given.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Ok(MachineSpec {
        name,
        description: format!("synthetic machine: {}", spec_text.join(",")),
        nodes,
        cpus_per_node: cpn,
        smt,
        cores_per_llc: (cpn / smt).max(1),
        mem_gib_per_node: float_key(get("mem-gib"), "mem-gib", per_core(base.mem_gib_per_node))?,
        distance: None,
        remote_distance: (nodes > 1).then_some(remote as u32),
        // Every other fact of the core is the base machine's.
        cpu: CpuSpec {
            freq_mhz: float_key(get("freq-mhz"), "freq-mhz", base.cpu.freq_mhz)?,
            llc_kib: llc_kib as u64,
            ..base.cpu.clone()
        },
        memory,
        node_overrides: Vec::new(),
        origin: format!("synthetic spec `{}`", one_line(s)),
    })
}

fn synthetic_err(key: &str, reason: String) -> TopoError {
    TopoError::Synthetic {
        key: key.to_string(),
        reason,
        valid: SYNTHETIC_KEYS.join(", "),
    }
}

fn int_key(v: Option<&str>, key: &str, default: usize) -> Result<usize, TopoError> {
    let Some(v) = v else { return Ok(default) };
    match v.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(synthetic_err(
            key,
            format!("{key}={v}: expected a whole number >= 1"),
        )),
    }
}

fn float_key(v: Option<&str>, key: &str, default: f64) -> Result<f64, TopoError> {
    let Some(v) = v else { return Ok(default) };
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(synthetic_err(
            key,
            format!("{key}={v}: expected a positive number"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_defaults_follow_the_base_preset() {
        let t = parse_synthetic("").unwrap();
        assert_eq!((t.nr_nodes(), t.nr_cpus()), (2, 16));
        assert_eq!(t.distance, vec![vec![10, 16], vec![16, 10]]);
        assert!((t.latency_ns[0][1] - 142.4).abs() < 1e-9);
        let per_core = 176.0 / 36.0;
        assert!((t.nodes[0].bandwidth_gbps - per_core * 8.0).abs() < 1e-9);
        assert!((t.nodes[0].remote_bandwidth_gbps - 56.0 / 36.0 * 8.0).abs() < 1e-9);
        assert_eq!(t.cpu_model.llc_bytes, 12 << 20);
        assert_eq!(t.cpu_model.freq_mhz, 2400.0);
        assert_eq!(t.llc_cpus(0), *t.node_cpus(0));
    }

    #[test]
    fn synthetic_keys_apply() {
        let t = parse_synthetic(
            "nodes=4, cpus-per-node=4,remote-ratio=2.14,mem-gib=2,local-latency-ns=100,\
             bandwidth-gbps=10,remote-bandwidth-gbps=3,freq-mhz=800,llc-mib=4,smt=2,name=x",
        )
        .unwrap();
        assert_eq!((t.name.as_str(), t.nr_nodes(), t.nr_cpus()), ("x", 4, 16));
        assert_eq!(t.distance[0][3], 21);
        assert_eq!(t.latency_ns[0][3], 210.0);
        assert_eq!(t.nodes[2].mem_bytes, 2 << 30);
        assert_eq!(
            (t.nodes[0].bandwidth_gbps, t.nodes[0].remote_bandwidth_gbps),
            (10.0, 3.0)
        );
        assert_eq!(
            (t.cpu_model.freq_mhz, t.cpu_model.llc_bytes),
            (800.0, 4 << 20)
        );
        assert_eq!(t.core_cpus(3).to_list_string(), "2-3");
        assert!(t.description.contains("nodes=4"));
    }

    #[test]
    fn bad_synthetic_specs_name_the_key() {
        let cases = [
            ("nodes=4,colour=red", "unknown key `colour`"),
            ("nodes=4,nodes=2", "given twice"),
            ("nodes", "not key=value"),
            ("nodes=0", "nodes=0"),
            ("nodes=-1", "nodes=-1"),
            ("remote-ratio=1.0", "remote-ratio=1"),
            ("remote-ratio=nan", "remote-ratio=nan"),
            ("bandwidth-gbps=inf", "bandwidth-gbps=inf"),
            ("llc-mib=0.0001", "llc-mib"),
            ("name=", "name"),
        ];
        for (spec, expect) in cases {
            let e = parse_synthetic(spec).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, TopoError::Synthetic { .. }), "{spec}: {msg}");
            assert!(
                msg.contains(expect) && msg.contains("valid keys: name, nodes"),
                "{msg}"
            );
        }
        let e = parse_synthetic("cpus-per-node=3,smt=2")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("synthetic spec `cpus-per-node=3,smt=2`") && e.contains("`smt`"),
            "{e}"
        );
    }
}
