//! Resolving a `--machine` argument to a [`Topology`]: the one place that knows every source
//! of machines (presets, this host's sysfs, spec files, synthetic specs). It sits above them
//! all, so the sources never import one another through it.

use crate::error::TopoError;
use crate::spec::MachineSpec;
use crate::synthetic::parse_synthetic;
use crate::{Topology, presets};

/// Resolves a `--machine` argument: a preset name; else `host` (this Linux host, read from
/// `/sys` and `/proc`, see [`crate::sysfs`]) or `host:ROOT` (the same read from a captured tree
/// under the directory ROOT); else a path ending in `.toml`; else a synthetic `key=value` spec
/// (anything containing `=`).
pub fn resolve_machine(arg: &str) -> Result<Topology, TopoError> {
    let arg = arg.trim();
    if presets::PRESETS.contains(&arg) {
        return presets::preset(arg);
    }
    if arg == "host" {
        return crate::sysfs::read_host(std::path::Path::new("/"));
    }
    if let Some(root) = arg.strip_prefix("host:") {
        if root.trim().is_empty() {
            return Err(TopoError::Sysfs {
                path: format!("machine `{arg}`"),
                reason: "no root directory after `host:` (use `host` or `host:ROOT`)".to_string(),
            });
        }
        return crate::sysfs::read_host(std::path::Path::new(root));
    }
    if arg.ends_with(".toml") {
        return MachineSpec::from_file(arg)?.into_topology();
    }
    if arg.contains('=') {
        return parse_synthetic(arg);
    }
    Err(TopoError::UnknownMachine {
        name: arg.to_string(),
        valid: presets::PRESETS.join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::tests::MINIMAL;

    #[test]
    fn resolve_machine_dispatches() {
        assert_eq!(resolve_machine("azusa16").unwrap().nr_cpus(), 16);
        assert_eq!(
            resolve_machine("nodes=3,cpus-per-node=2")
                .unwrap()
                .nr_cpus(),
            6
        );
        let e = resolve_machine("azusa").unwrap_err().to_string();
        assert!(
            e.contains("unknown machine `azusa`") && e.contains("kunpeng96"),
            "{e}"
        );
        let e = resolve_machine("/nonexistent/m.toml").unwrap_err();
        assert!(matches!(e, TopoError::Io { .. }));
        assert!(
            e.to_string()
                .starts_with("cannot read machine spec `/nonexistent/m.toml`")
        );

        let dir = std::env::temp_dir().join(format!("homenode-topo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.toml");
        std::fs::write(&path, MINIMAL).unwrap();
        let path = path.to_str().unwrap();
        assert_eq!(resolve_machine(path).unwrap().name, "tiny");
        std::fs::write(path, MINIMAL.replace("nodes = 2", "nodes = 0")).unwrap();
        let e = resolve_machine(path).unwrap_err().to_string();
        assert!(e.starts_with(path) && e.contains("`nodes`"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
