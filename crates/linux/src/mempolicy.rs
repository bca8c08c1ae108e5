//! NUMA memory policies (`man 2 set_mempolicy`): the type, its text form as `numa_maps`
//! shows it, and `get_mempolicy` for this process.
//!
//! The kernel offers no way to read *another* process's policy except `numa_maps`, whose second
//! column is the policy of each mapping (the mapping's own `mbind` policy, else the task's
//! `set_mempolicy` policy). `default` there means "nobody set one"; anything else
//! (`bind:0`, `prefer:1`, `interleave:0-3`, `local`, ...) reveals that someone (the program
//! itself, `numactl`, a job launcher) chose where the memory goes, and homenode leaves the
//! process alone ([`crate::exclude`]).

use std::fmt;

use topo::CpuSet;

use crate::error::SysError;
use crate::sys;

/// The most nodes a kernel can have: `MAX_NUMNODES` = 1 << `CONFIG_NODES_SHIFT`, whose
/// largest allowed value is 10 (mm/Kconfig, arch/x86/Kconfig).
pub const MAX_NUMNODES: usize = 1 << 10;

/// The mode of a memory policy (`MPOL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyMode {
    /// `MPOL_DEFAULT`: no policy set, allocate on the local node (`default`).
    Default,
    /// `MPOL_PREFERRED` (`prefer`).
    Preferred,
    /// `MPOL_BIND` (`bind`).
    Bind,
    /// `MPOL_INTERLEAVE` (`interleave`).
    Interleave,
    /// `MPOL_LOCAL`, explicitly set (`local`).
    Local,
    /// `MPOL_PREFERRED_MANY` (`prefer (many)`), Linux 5.15+.
    PreferredMany,
    /// `MPOL_WEIGHTED_INTERLEAVE` (`weighted interleave`), Linux 6.9+.
    WeightedInterleave,
    /// A mode this version does not know (`unknown`, or a number from `get_mempolicy`).
    Unknown,
}

impl PolicyMode {
    /// The kernel's name for the mode, as in `numa_maps`.
    pub fn name(self) -> &'static str {
        match self {
            PolicyMode::Default => "default",
            PolicyMode::Preferred => "prefer",
            PolicyMode::Bind => "bind",
            PolicyMode::Interleave => "interleave",
            PolicyMode::Local => "local",
            PolicyMode::PreferredMany => "prefer (many)",
            PolicyMode::WeightedInterleave => "weighted interleave",
            PolicyMode::Unknown => "unknown",
        }
    }

    /// From the `MPOL_*` number (the mode bits of `get_mempolicy`'s answer).
    pub fn from_raw(v: i32) -> PolicyMode {
        match v {
            0 => PolicyMode::Default,
            1 => PolicyMode::Preferred,
            2 => PolicyMode::Bind,
            3 => PolicyMode::Interleave,
            4 => PolicyMode::Local,
            5 => PolicyMode::PreferredMany,
            6 => PolicyMode::WeightedInterleave,
            _ => PolicyMode::Unknown,
        }
    }

    /// Modes whose names hold a space, longest first (matched before splitting on spaces).
    const SPACED: [PolicyMode; 2] = [PolicyMode::WeightedInterleave, PolicyMode::PreferredMany];

    const ALL: [PolicyMode; 8] = [
        PolicyMode::Default,
        PolicyMode::Preferred,
        PolicyMode::Bind,
        PolicyMode::Interleave,
        PolicyMode::Local,
        PolicyMode::PreferredMany,
        PolicyMode::WeightedInterleave,
        PolicyMode::Unknown,
    ];
}

/// A memory policy: mode, mode flags and node set.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemPolicy {
    pub mode: PolicyMode,
    /// `MPOL_F_STATIC_NODES` (`=static`).
    pub static_nodes: bool,
    /// `MPOL_F_RELATIVE_NODES` (`=relative`).
    pub relative_nodes: bool,
    /// `MPOL_F_NUMA_BALANCING` (`=balancing`): NUMA balancing may move the pages anyway.
    pub balancing: bool,
    /// The policy's nodes (empty for `default` and `local`).
    pub nodes: CpuSet,
}

impl MemPolicy {
    /// `default`: no policy.
    pub fn default_policy() -> MemPolicy {
        MemPolicy {
            mode: PolicyMode::Default,
            static_nodes: false,
            relative_nodes: false,
            balancing: false,
            nodes: CpuSet::new(),
        }
    }

    /// Nobody set a policy.
    pub fn is_default(&self) -> bool {
        self.mode == PolicyMode::Default
    }

    /// Parses the policy column of `numa_maps` (the kernel's `mpol_to_str`):
    /// `NAME[=FLAGS][:NODELIST]`, where NAME may hold a space (`prefer (many)`,
    /// `weighted interleave`) and FLAGS is `static`, `relative`, `balancing` or
    /// `static|balancing`. Returns the policy and the rest of the line.
    pub fn parse_prefix(s: &str) -> Result<(MemPolicy, &str), crate::error::ParseError> {
        let s = s.trim_start();
        let spaced = PolicyMode::SPACED.iter().find(|m| s.starts_with(m.name()));
        let (token, rest) = match spaced {
            Some(m) => {
                let n = m.name().len();
                let end = s[n..].find(' ').map_or(s.len(), |i| n + i);
                (&s[..end], &s[end..])
            }
            None => match s.find(' ') {
                Some(i) => (&s[..i], &s[i..]),
                None => (s, ""),
            },
        };
        Ok((MemPolicy::parse(token)?, rest))
    }

    /// Parses one policy in the `numa_maps` form (`bind=static:0-1`).
    pub fn parse(token: &str) -> Result<MemPolicy, crate::error::ParseError> {
        let (head, nodes) = match token.split_once(':') {
            Some((h, n)) => (h, Some(n)),
            None => (token, None),
        };
        let (name, flags) = match head.split_once('=') {
            Some((n, f)) => (n, Some(f)),
            None => (head, None),
        };
        let mode = PolicyMode::ALL
            .iter()
            .copied()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                crate::error::ParseError::from(format!(
                    "unknown memory policy `{name}` in `{token}`"
                ))
            })?;
        let mut p = MemPolicy {
            mode,
            ..MemPolicy::default_policy()
        };
        if let Some(flags) = flags {
            for f in flags.split('|') {
                match f {
                    "static" => p.static_nodes = true,
                    "relative" => p.relative_nodes = true,
                    "balancing" => p.balancing = true,
                    _ => {
                        return Err(crate::error::ParseError::from(format!(
                            "unknown policy flag `{f}` in `{token}`"
                        )));
                    }
                }
            }
        }
        if let Some(nodes) = nodes {
            p.nodes = CpuSet::parse_list_below(nodes, MAX_NUMNODES, "node").map_err(|e| {
                crate::error::ParseError::from(format!("node list of policy `{token}`: {e}"))
            })?;
        }
        Ok(p)
    }

    fn from_raw(raw_mode: i32, nodes: CpuSet) -> MemPolicy {
        MemPolicy {
            mode: PolicyMode::from_raw(raw_mode & !sys::MPOL_MODE_FLAGS),
            static_nodes: raw_mode & sys::MPOL_F_STATIC_NODES != 0,
            relative_nodes: raw_mode & sys::MPOL_F_RELATIVE_NODES != 0,
            balancing: raw_mode & sys::MPOL_F_NUMA_BALANCING != 0,
            nodes,
        }
    }
}

impl fmt::Display for MemPolicy {
    /// The `numa_maps` form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mode.name())?;
        if self.static_nodes || self.relative_nodes || self.balancing {
            f.write_str("=")?;
            if self.static_nodes {
                f.write_str("static")?;
            } else if self.relative_nodes {
                f.write_str("relative")?;
            }
            if self.balancing {
                if self.static_nodes || self.relative_nodes {
                    f.write_str("|")?;
                }
                f.write_str("balancing")?;
            }
        }
        if !self.nodes.is_empty() {
            write!(f, ":{}", self.nodes)?;
        }
        Ok(())
    }
}

fn get_mempolicy(addr: usize, flags: i32) -> Result<(i32, CpuSet), SysError> {
    sys::get_mempolicy(addr, flags)
        .map_err(|e| SysError::from_errno("get_mempolicy", std::process::id(), e))
}

/// The memory policy of the calling thread (`get_mempolicy(2)` with no flags). Only for this
/// process: for others read the policy column of `numa_maps`.
pub fn thread_policy() -> Result<MemPolicy, SysError> {
    let (mode, nodes) = get_mempolicy(0, 0)?;
    Ok(MemPolicy::from_raw(mode, nodes))
}

/// The policy that governs the page at `addr` of this process (`MPOL_F_ADDR`).
pub fn policy_at(addr: usize) -> Result<MemPolicy, SysError> {
    let (mode, nodes) = get_mempolicy(addr, sys::MPOL_F_ADDR)?;
    Ok(MemPolicy::from_raw(mode, nodes))
}

/// The node holding the page at `addr` of this process (`MPOL_F_NODE | MPOL_F_ADDR`; the
/// page is faulted in if it is not present).
pub fn node_of_address(addr: usize) -> Result<usize, SysError> {
    let (node, _) = get_mempolicy(addr, sys::MPOL_F_NODE | sys::MPOL_F_ADDR)?;
    usize::try_from(node).map_err(|_| SysError::InvalidArgument {
        op: "get_mempolicy",
        reason: format!("kernel returned node {node}"),
    })
}

/// The memory nodes this thread may allocate from (`MPOL_F_MEMS_ALLOWED`: its cpuset's).
pub fn mems_allowed() -> Result<CpuSet, SysError> {
    let (_, nodes) = get_mempolicy(0, sys::MPOL_F_MEMS_ALLOWED)?;
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node lists are capped at the kernel's MAX_NUMNODES (a list up to 1,048,575
    /// used to fill a 128 KiB mask bit by bit per line).
    #[test]
    fn node_lists_stop_at_max_numnodes() {
        assert_eq!(
            MemPolicy::parse("bind:0-1023")
                .expect("largest")
                .nodes
                .count(),
            1024
        );
        let e = MemPolicy::parse("bind:0-1048575").expect_err("too many nodes");
        assert!(e.contains("not a node number (0 to 1023)"), "{e}");
    }

    #[test]
    fn parse_and_display_round_trip() {
        for s in [
            "default",
            "local",
            "bind:0",
            "bind=static:0-1",
            "prefer:1",
            "prefer=relative:2",
            "interleave:0-3",
            "interleave=static|balancing:0,2",
            "bind=balancing:1",
            "prefer (many):0-1",
            "weighted interleave:0-3",
            "weighted interleave=static:1",
        ] {
            let p = MemPolicy::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(p.to_string(), s);
        }
        assert!(MemPolicy::parse("default").expect("default").is_default());
        let p = MemPolicy::parse("bind:0-1").expect("bind");
        assert_eq!(p.mode, PolicyMode::Bind);
        assert_eq!(p.nodes.to_list_string(), "0-1");
    }

    #[test]
    fn prefix_with_spaces() {
        let (p, rest) = MemPolicy::parse_prefix("prefer (many):0-1 anon=3 N0=3").expect("parses");
        assert_eq!(p.mode, PolicyMode::PreferredMany);
        assert_eq!(rest, " anon=3 N0=3");
        let (p, rest) = MemPolicy::parse_prefix("weighted interleave:0-3 heap").expect("parses");
        assert_eq!(p.mode, PolicyMode::WeightedInterleave);
        assert_eq!(rest, " heap");
        let (p, rest) = MemPolicy::parse_prefix("default").expect("parses");
        assert!(p.is_default() && rest.is_empty());
    }

    #[test]
    fn malformed() {
        assert!(MemPolicy::parse("bogus:0").unwrap_err().contains("`bogus`"));
        assert!(
            MemPolicy::parse("bind=sticky:0")
                .unwrap_err()
                .contains("`sticky`")
        );
        assert!(
            MemPolicy::parse("bind:0-x")
                .unwrap_err()
                .contains("node list")
        );
    }

    #[test]
    fn raw_modes() {
        let p = MemPolicy::from_raw(2 | sys::MPOL_F_STATIC_NODES, CpuSet::single(0));
        assert_eq!(p.to_string(), "bind=static:0");
        assert_eq!(PolicyMode::from_raw(99), PolicyMode::Unknown);
    }
}
