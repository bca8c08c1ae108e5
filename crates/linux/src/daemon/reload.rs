//! Taking a new configuration while running (SIGHUP).
//!
//! The new configuration is checked whole before anything changes: an invalid file, or a
//! policy that cannot be built, leaves the running one as it was. Keys that name resources
//! taken at start (the journal and its lock, the status socket, the metrics listener, the
//! filesystem root, fake NUMA, dry run) keep their running values and are reported as needing
//! a restart. Everything else applies from the next interval: the interval, the policy and
//! its placement settings (a new policy object, so what it remembered is dropped), the scan,
//! memory and rule settings. A process already homed that the new rules leave out is
//! released at the next interval, as when it is excluded any other way. Another policy (a new
//! `policy`, not new parameters of the same one) starts without slices: every slice the
//! daemon gave is taken back at once.

use super::{Daemon, DaemonConfig, DaemonError};

/// What a reload did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReloadReport {
    /// Keys whose new value is in force, as `key: old -> new`.
    pub applied: Vec<String>,
    /// Keys changed in the file that need a restart, as `key: running (file says new)`.
    pub need_restart: Vec<String>,
}

/// Keys fixed at start.
const FIXED: [&str; 7] = [
    "root",
    "journal",
    "socket",
    "metrics",
    "metrics_allow_remote",
    "fake_numa",
    "dry_run",
];

impl Daemon {
    /// Takes `new` in place of the running configuration, as far as it can be taken while
    /// running (see the module documentation). On error nothing changed.
    pub fn reload(&mut self, mut new: DaemonConfig) -> Result<ReloadReport, DaemonError> {
        new.validate("new configuration")?;
        let old = self.cfg.clone();
        let mut report = ReloadReport::default();
        for (key, was, now) in diff(&old, &new) {
            let top = key.split('.').next().unwrap_or(&key);
            if FIXED.contains(&top) {
                report
                    .need_restart
                    .push(format!("{key}: {was} (the file says {now})"));
            } else {
                report.applied.push(format!("{key}: {was} -> {now}"));
            }
        }
        new.root = old.root.clone();
        new.journal = old.journal.clone();
        new.socket = old.socket.clone();
        new.metrics = old.metrics;
        new.metrics_allow_remote = old.metrics_allow_remote;
        new.fake_numa = old.fake_numa;
        new.dry_run = old.dry_run;
        // A new interval alone keeps the policy and what it knows.
        let (np, op) = (&new.placement, &old.placement);
        if new.policy != old.policy || np.homenode != op.homenode || np.numad != op.numad {
            self.policy =
                policy::build(&new.policy, &new.placement).map_err(DaemonError::Policy)?;
        }
        // Homes stay and are judged by the new policy; slices are taken back, since another
        // policy may never look at them (it asks again if it wants them).
        if new.policy != old.policy {
            self.take_back_slices(&format!("the policy is now {}", new.policy));
        }
        self.actuator.memory = new.memory.clone();
        if let Ok(mut s) = self.status.lock() {
            s.policy = new.policy.clone();
            s.interval_s = new.placement.interval_s;
        }
        self.cfg = new;
        Ok(report)
    }
}

/// Leaf keys (dotted) whose values differ, with both values as TOML text. `None` values
/// (absent keys) show as `unset`.
fn diff(old: &DaemonConfig, new: &DaemonConfig) -> Vec<(String, String, String)> {
    let as_table = |c: &DaemonConfig| toml::Table::try_from(c).unwrap_or_default();
    let mut out = Vec::new();
    walk("", &as_table(old), &as_table(new), &mut out);
    out
}

fn walk(
    prefix: &str,
    old: &toml::Table,
    new: &toml::Table,
    out: &mut Vec<(String, String, String)>,
) {
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match (old.get(k), new.get(k)) {
            (Some(toml::Value::Table(a)), Some(toml::Value::Table(b))) => walk(&key, a, b, out),
            (a, b) if a != b => {
                let show =
                    |v: Option<&toml::Value>| v.map_or("unset".to_string(), |v| v.to_string());
                out.push((key, show(a), show(b)));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::ProcessKey;

    /// Another policy may never look at slices: they are taken back when the policy changes,
    /// and kept when only its parameters do.
    #[test]
    fn another_policy_starts_without_slices() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/multinode-4n");
        let cfg = DaemonConfig {
            dry_run: true,
            root,
            ..DaemonConfig::default()
        };
        let mut d = Daemon::start(cfg.clone()).expect("start");
        let key = ProcessKey {
            pid: 1000,
            starttime: 5000,
        };
        let held = super::super::HeldSlice {
            ns: 100_000_000,
            given: true,
        };
        d.slices.insert(key, held);
        let mut same = cfg.clone();
        same.placement.homenode.slice_ms = 50.0;
        d.reload(same.clone()).expect("reload");
        assert_eq!(d.slices.get(&key), Some(&held), "same policy: kept");
        let mut other = same;
        other.policy = "numad".into();
        d.reload(other).expect("reload");
        assert!(d.slices.is_empty());
    }

    #[test]
    fn diff_names_nested_keys_and_unset_values() {
        let old = DaemonConfig::default();
        let mut new = old.clone();
        new.placement.interval_s = 1.0;
        new.placement.homenode.min_rss_mib = 16;
        new.metrics = Some("127.0.0.1:9750".parse().expect("addr"));
        let d = diff(&old, &new);
        let keys: Vec<&str> = d.iter().map(|(k, _, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "metrics",
                "placement.homenode.min_rss_mib",
                "placement.interval_s"
            ]
        );
        assert_eq!(d[0].1, "unset");
        assert_eq!(
            d[2],
            ("placement.interval_s".into(), "2.0".into(), "1.0".into())
        );
        assert!(diff(&old, &old).is_empty());
    }
}
