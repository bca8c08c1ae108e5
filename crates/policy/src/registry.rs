//! The one table of node-level placement policies. Every list of policy names (CLI help and
//! errors, the daemon's configuration check, the simulator's `--placement` parser) is
//! generated from [`POLICIES`]; [`build`] looks a name up in it.
//!
//! To add a policy, implement [`NodePolicy`] in a new file of this crate and add one
//! [`PolicyEntry`] below (docs/PLACEMENT.md, "How to add a placement policy").

use crate::config::{ConfigError, PlacementConfig};
use crate::{HomenodePolicy, NoPolicy, NodePolicy, NumadPolicy};

/// Builds a policy from its section of the placement configuration.
pub type BuildFn = fn(&PlacementConfig) -> Result<Box<dyn NodePolicy + Send>, ConfigError>;

/// One node-level placement policy.
pub struct PolicyEntry {
    /// The name in configuration files and on the command line; the built policy's
    /// [`NodePolicy::name`] returns it.
    pub name: &'static str,
    /// One line for listings.
    pub about: &'static str,
    /// The keys of the policy's configuration section (`[placement.<name>]`); empty for a
    /// policy without parameters.
    pub options: &'static [&'static str],
    pub build: BuildFn,
}

/// Every placement policy, in the order of listings.
pub static POLICIES: &[PolicyEntry] = &[
    PolicyEntry {
        name: "none",
        about: "never acts; the kernel alone decides placement",
        options: &[],
        build: |_| Ok(Box::new(NoPolicy)),
    },
    PolicyEntry {
        name: "homenode",
        about: "home node per significant process, memory brought home at a bounded rate, rebalancing with hysteresis",
        options: &[
            "min_cpu",
            "min_rss_mib",
            "sharing_threads",
            "busy_thread_cpu",
            "pack_fraction",
            "headroom_mib",
            "imbalance_pct",
            "consolidate_below",
            "imbalance_intervals",
            "min_dwell_s",
            "max_moves_per_interval",
            "max_new_homes_per_interval",
            "first_look_s",
            "move_cost_mib",
            "move_rate_mib_s",
            "batch_mib",
            "min_move_mib",
            "move_retry_s",
            "release_after_s",
            "correct_memory_pct",
            "correct_intervals",
            "defer_to_kernel",
            "slice_ms",
            "slice_wait",
        ],
        build: |c| Ok(Box::new(HomenodePolicy::new(c.homenode.clone())?)),
    },
    PolicyEntry {
        name: "numad",
        about: "model of numad: binds a whole process to the fewest nodes that fit, then migrates all its memory, every 15 s",
        options: &[
            "min_interval_s",
            "max_interval_s",
            "min_cpu",
            "min_rss_mib",
            "target_utilization_pct",
            "target_memlocality_pct",
            "htt_percent",
            "reeval_delay_s",
            "cpu_samples",
            "mem_margin_mib",
        ],
        build: |c| Ok(Box::new(NumadPolicy::new(c.numad.clone())?)),
    },
];

/// The entry called `name`.
pub fn find(name: &str) -> Option<&'static PolicyEntry> {
    POLICIES.iter().find(|e| e.name == name)
}

/// The names of all policies, in table order.
pub fn names() -> Vec<&'static str> {
    POLICIES.iter().map(|e| e.name).collect()
}

/// The names of all policies as a phrase for help texts: `none, homenode or numad`.
pub fn names_or() -> String {
    match names().split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.to_string(),
        None => String::new(),
    }
}

/// Why a policy could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PolicyError {
    #[error("unknown placement policy `{name}` (known: {})", valid.join(", "))]
    Unknown {
        name: String,
        valid: Vec<&'static str>,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The policy called `name`, with its parameters from `cfg`.
pub fn build(name: &str, cfg: &PlacementConfig) -> Result<Box<dyn NodePolicy + Send>, PolicyError> {
    let entry = find(name).ok_or_else(|| PolicyError::Unknown {
        name: name.to_string(),
        valid: names(),
    })?;
    Ok((entry.build)(cfg)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_builds_a_policy_of_its_name() {
        let cfg = PlacementConfig::default();
        for e in POLICIES {
            let p = build(e.name, &cfg).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert_eq!(p.name(), e.name);
            assert!(!e.about.is_empty(), "{}", e.name);
        }
        let mut n = names();
        n.sort_unstable();
        n.dedup();
        assert_eq!(n.len(), POLICIES.len(), "a name is registered twice");
    }

    #[test]
    fn options_are_the_keys_of_the_config_section() {
        let all = serde_json::to_value(PlacementConfig::default()).expect("json");
        for e in POLICIES {
            let keys: Vec<String> = match all.get(e.name) {
                Some(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
                _ => Vec::new(),
            };
            let mut listed: Vec<String> = e.options.iter().map(|s| s.to_string()).collect();
            listed.sort();
            let mut keys = keys;
            keys.sort();
            assert_eq!(listed, keys, "{}", e.name);
        }
    }
}
