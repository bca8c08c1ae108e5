//! The daemon's configuration: a TOML file (`/etc/homenode.toml` by default) whose every key
//! is optional and whose unknown keys are refused with the file, line and key, plus the
//! command line, which overrides the file key by key.
//!
//! ```toml
//! policy = "homenode"            # a name of policy::POLICIES
//! dry_run = false
//! journal = "/var/lib/homenode/journal.json"
//! socket = "/run/homenode/homenode.sock"
//! metrics = "127.0.0.1:9750"     # absent: no metrics endpoint
//! metrics_allow_remote = false   # a non-loopback metrics address needs this
//! fake_numa = 2                  # split a one-node host into pseudo-nodes
//! on_start = "adopt"             # adopt | restore: what to do with a journal left by a crash
//!
//! [scan]
//! candidate_min_cpu = 0.05       # CPUs over the last interval to be looked at closely
//! memory_every_s = 10.0          # large processes' numa_maps are read this often
//! large_rss_mib = 4096
//! full_rescan_every = 30         # intervals between re-checks of known kernel threads
//! idle_every = 4                 # an idle process's stat is read every 4th interval
//!
//! [memory]
//! batch_pages = 1024
//!
//! [placement]
//! interval_s = 2.0               # seconds between decisions (the simulator's interval too)
//!
//! [placement.homenode]           # policy parameters, see docs/PLACEMENT.md
//! min_rss_mib = 64
//! first_look_s = 0.5             # new processes looked at between decisions; 0: never
//!
//! [rules.exclude]                # see docs/DAEMON.md, "Exclusion rules"
//! comms = ["postgres"]
//! ```
//!
//! A top-level `interval_s`, the key's place before it moved into `[placement]`, is still
//! read as `placement.interval_s` (both at once with different values is an error).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::exclude::Rules;

/// Default configuration file.
pub const DEFAULT_CONFIG: &str = "/etc/homenode.toml";
/// Default metrics address when `--metrics` is given without one.
pub const DEFAULT_METRICS: &str = "127.0.0.1:9750";

/// What to do at start with entries a previous run left in the journal (after a crash or a
/// `kill -9`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnStart {
    /// Keep managing processes whose masks are still exactly homenode's (their home is taken
    /// from the journal); restore the rest.
    #[default]
    Adopt,
    /// Restore every journaled process, then start afresh.
    Restore,
}

/// How the daemon samples `/proc`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScanConfig {
    /// A process is read closely (threads, cgroup, numa_maps) only when it used at least this
    /// many CPUs over the last interval, or is managed already.
    pub candidate_min_cpu: f64,
    /// `numa_maps` of a process with more than `large_rss_mib` resident is read at most this
    /// often (the kernel walks its page tables to write it).
    pub memory_every_s: f64,
    pub large_rss_mib: u64,
    /// Known kernel threads are skipped without reading; every this many intervals all PIDs
    /// are read again (a kernel thread's PID may have been reused).
    pub full_rescan_every: u32,
    /// A process idle at its last read is read again only every this many intervals.
    pub idle_every: u32,
    /// Read `/proc/PID/sched` of candidates (the kernel's NUMA balancing figures).
    pub sched: bool,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            candidate_min_cpu: 0.05,
            memory_every_s: 10.0,
            large_rss_mib: 4096,
            full_rescan_every: 30,
            idle_every: 4,
            sched: true,
        }
    }
}

/// How memory is moved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Pages per `move_pages` call: bounds how long each call holds the process's mmap lock.
    pub batch_pages: usize,
    /// Pages whose node is queried per `move_pages` status call while looking for pages to
    /// move, at most this many per action (bounds the work of one action).
    pub max_query_pages: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            batch_pages: 1024,
            max_query_pages: 262_144,
        }
    }
}

/// The whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    /// Placement policy: `homenode`, `numad` or `none`.
    pub policy: String,
    /// Log every decision, change nothing.
    pub dry_run: bool,
    pub journal: PathBuf,
    pub socket: PathBuf,
    /// Prometheus endpoint; `None`: none.
    pub metrics: Option<SocketAddr>,
    /// Allow a metrics address that is not loopback.
    pub metrics_allow_remote: bool,
    /// Split a one-node host into this many pseudo-nodes (memory actions are then skipped).
    pub fake_numa: Option<usize>,
    pub on_start: OnStart,
    /// Filesystem root under which `/proc` and `/sys` are read (tests use captured trees).
    pub root: PathBuf,
    pub scan: ScanConfig,
    pub memory: MemoryConfig,
    pub placement: policy::PlacementConfig,
    pub rules: Rules,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            policy: "homenode".into(),
            dry_run: false,
            journal: PathBuf::from("/var/lib/homenode/journal.json"),
            socket: PathBuf::from("/run/homenode/homenode.sock"),
            metrics: None,
            metrics_allow_remote: false,
            fake_numa: None,
            on_start: OnStart::Adopt,
            root: PathBuf::from("/"),
            scan: ScanConfig::default(),
            memory: MemoryConfig::default(),
            placement: policy::PlacementConfig::default(),
            rules: Rules::default(),
        }
    }
}

/// A configuration that cannot be used, on one line naming the file and key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read, or is not one root may act on (another user's, writable by
    /// group or others, not a regular file, too large).
    #[error(transparent)]
    Read(#[from] crate::trust::TrustError),
    /// Syntax, type or unknown-key error: `FILE:LINE:COL: ...`.
    #[error("{0}")]
    Toml(String),
    #[error("{origin}: `{key}` = {value}: {reason}")]
    Invalid {
        origin: String,
        key: String,
        value: String,
        reason: String,
    },
}

impl DaemonConfig {
    /// Parses TOML `text` read from `origin`, and validates it.
    pub fn parse(text: &str, origin: &str) -> Result<DaemonConfig, ConfigError> {
        let table: toml::Table = toml::from_str(text)
            .map_err(|e| ConfigError::Toml(topo::spec::toml_error(text, origin, &e).to_string()))?;
        // The older top-level `interval_s`: its line is blanked (so that every other error
        // still names its line) and its value applied afterwards.
        let legacy = table.get("interval_s").cloned();
        let text = match legacy {
            Some(_) => blank_top_level_key(text, "interval_s"),
            None => text.to_string(),
        };
        let mut cfg: DaemonConfig = toml::from_str(&text).map_err(|e| {
            ConfigError::Toml(topo::spec::toml_error(&text, origin, &e).to_string())
        })?;
        if let Some(old) = legacy {
            let mut t = toml::Table::new();
            t.insert("interval_s".into(), old.clone());
            if let Some(p) = table.get("placement") {
                t.insert("placement".into(), p.clone());
            }
            move_legacy_interval(&mut t, origin)?;
            cfg.placement.interval_s = old
                .as_float()
                .or_else(|| old.as_integer().map(|i| i as f64))
                .ok_or_else(|| ConfigError::Invalid {
                    origin: origin.to_string(),
                    key: "interval_s".into(),
                    value: old.to_string(),
                    reason: "must be a number of seconds".into(),
                })?;
        }
        cfg.validate(origin)?;
        Ok(cfg)
    }

    /// Like [`DaemonConfig::parse`], then with command-line overrides `KEY=VALUE` applied on
    /// top (dotted keys such as `placement.homenode.min_rss_mib`; a value that is not TOML is
    /// taken as a string, so `policy=numad` and `metrics=127.0.0.1:9750` need no quotes).
    pub fn with_overrides(
        text: &str,
        origin: &str,
        overrides: &[(String, String)],
    ) -> Result<DaemonConfig, ConfigError> {
        let cfg = DaemonConfig::parse(text, origin)?;
        if overrides.is_empty() {
            return Ok(cfg);
        }
        let mut table: toml::Table = toml::from_str(text)
            .map_err(|e| ConfigError::Toml(topo::spec::toml_error(text, origin, &e).to_string()))?;
        move_legacy_interval(&mut table, origin)?;
        for (key, value) in overrides {
            let key = &modern_key(key);
            set_dotted(&mut table, key, parse_value(value)).map_err(|reason| {
                ConfigError::Invalid {
                    origin: "command line".into(),
                    key: key.clone(),
                    value: value.clone(),
                    reason: reason.to_string(),
                }
            })?;
        }
        let cfg = match toml::Value::Table(table).try_into::<DaemonConfig>() {
            Ok(cfg) => cfg,
            Err(e) => return Err(blame_override(text, overrides, &e)),
        };
        cfg.validate("command line")?;
        Ok(cfg)
    }

    /// Reads `path`. A missing file is an error only when `required` (the user named it);
    /// the default file may be absent, which gives the defaults.
    pub fn load(path: &Path, required: bool) -> Result<DaemonConfig, ConfigError> {
        let text = DaemonConfig::read(path, required)?;
        DaemonConfig::parse(&text, &path.display().to_string())
    }

    /// The text of the configuration file at `path` ([`crate::trust::read_config`]: a file
    /// another user owns or can write is refused). A missing file is an error only when
    /// `required`; otherwise it reads as empty (the defaults).
    pub fn read(path: &Path, required: bool) -> Result<String, ConfigError> {
        match crate::trust::read_config(path) {
            Ok(text) => Ok(text),
            Err(e) if e.is_not_found() && !required => Ok(String::new()),
            Err(e) => Err(ConfigError::Read(e)),
        }
    }

    /// Checks ranges and names; `origin` says where the values came from.
    pub fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let bad = |key: &str, value: String, reason: &str| ConfigError::Invalid {
            origin: origin.to_string(),
            key: key.to_string(),
            value,
            reason: reason.to_string(),
        };
        self.placement
            .validate_interval()
            .map_err(|e| bad(&format!("placement.{}", e.key), e.value, e.reason))?;
        if policy::registry::find(&self.policy).is_none() {
            return Err(bad(
                "policy",
                format!("\"{}\"", self.policy),
                &format!(
                    "unknown policy (valid: {})",
                    policy::registry::names().join(", ")
                ),
            ));
        }
        for (key, path) in [("journal", &self.journal), ("socket", &self.socket)] {
            if path.as_os_str().is_empty() || path.file_name().is_none() {
                return Err(bad(
                    key,
                    format!("\"{}\"", path.display()),
                    "must name a file (an absolute path such as the default)",
                ));
            }
        }
        if let Some(n) = self.fake_numa {
            if !(2..=64).contains(&n) {
                return Err(bad(
                    "fake_numa",
                    n.to_string(),
                    "must be between 2 and 64 pseudo-nodes",
                ));
            }
        }
        if let Some(addr) = self.metrics {
            if !addr.ip().is_loopback() && !self.metrics_allow_remote {
                return Err(bad(
                    "metrics",
                    format!("\"{addr}\""),
                    "not a loopback address: set metrics_allow_remote (--metrics-allow-remote) to expose metrics beyond this host",
                ));
            }
        }
        let s = &self.scan;
        if !(s.candidate_min_cpu.is_finite() && s.candidate_min_cpu >= 0.0) {
            return Err(bad(
                "scan.candidate_min_cpu",
                s.candidate_min_cpu.to_string(),
                "must be a number >= 0",
            ));
        }
        if !(s.memory_every_s.is_finite() && s.memory_every_s >= 0.0) {
            return Err(bad(
                "scan.memory_every_s",
                s.memory_every_s.to_string(),
                "must be a number >= 0",
            ));
        }
        if s.idle_every == 0 {
            return Err(bad("scan.idle_every", "0".into(), "must be at least 1"));
        }
        if s.full_rescan_every == 0 {
            return Err(bad(
                "scan.full_rescan_every",
                "0".into(),
                "must be at least 1",
            ));
        }
        if self.memory.batch_pages == 0 || self.memory.batch_pages > 1 << 20 {
            return Err(bad(
                "memory.batch_pages",
                self.memory.batch_pages.to_string(),
                "must be between 1 and 1048576",
            ));
        }
        self.placement
            .homenode
            .validate()
            .map_err(|e| bad(&format!("placement.homenode.{}", e.key), e.value, e.reason))?;
        self.placement
            .numad
            .validate()
            .map_err(|e| bad(&format!("placement.numad.{}", e.key), e.value, e.reason))?;
        Ok(())
    }
}

/// The error for overrides that do not fit the configuration's types, naming the key: the
/// overrides are applied again one at a time, and the first one after which the
/// configuration no longer reads is the culprit (serde's own message names the type, not the
/// key).
fn blame_override(text: &str, overrides: &[(String, String)], e: &toml::de::Error) -> ConfigError {
    let reason = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
    let Ok(mut table) = toml::from_str::<toml::Table>(text) else {
        return ConfigError::Toml(format!("command line: {reason}"));
    };
    if move_legacy_interval(&mut table, "command line").is_err() {
        return ConfigError::Toml(format!("command line: {reason}"));
    }
    for (key, value) in overrides {
        if set_dotted(&mut table, &modern_key(key), parse_value(value)).is_err() {
            break;
        }
        if let Err(e) = toml::Value::Table(table.clone()).try_into::<DaemonConfig>() {
            return ConfigError::Invalid {
                origin: "command line".into(),
                key: key.clone(),
                value: value.clone(),
                reason: e.message().split_whitespace().collect::<Vec<_>>().join(" "),
            };
        }
    }
    ConfigError::Toml(format!("command line: {reason}"))
}

/// `text` with the line that sets top-level `key` (before the first table header) emptied;
/// every other line keeps its number.
fn blank_top_level_key(text: &str, key: &str) -> String {
    let mut in_root = true;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with('[') {
            in_root = false;
        }
        let sets_key = t
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='));
        if in_root && sets_key {
            out.push_str(if line.ends_with('\n') { "\n" } else { "" });
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The key's place now: the older top-level `interval_s` is `placement.interval_s`.
fn modern_key(key: &str) -> String {
    if key == "interval_s" {
        "placement.interval_s".into()
    } else {
        key.to_string()
    }
}

/// Moves a top-level `interval_s` (the older place of the key) to `placement.interval_s`;
/// true if there was one. Both at once with different values is an error naming both keys.
fn move_legacy_interval(table: &mut toml::Table, origin: &str) -> Result<bool, ConfigError> {
    let Some(old) = table.remove("interval_s") else {
        return Ok(false);
    };
    let placement = table
        .entry("placement")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(placement) = placement.as_table_mut() else {
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            key: "placement".into(),
            value: placement.to_string(),
            reason: "must be a table".into(),
        });
    };
    match placement.get("interval_s") {
        Some(new) if new != &old => Err(ConfigError::Invalid {
            origin: origin.to_string(),
            key: "interval_s".into(),
            value: old.to_string(),
            reason: format!(
                "also given as placement.interval_s = {new}; keep one (interval_s is its older place)"
            ),
        }),
        _ => {
            placement.insert("interval_s".into(), old);
            Ok(true)
        }
    }
}

/// A command-line value: TOML if it parses as a TOML value, else a plain string.
fn parse_value(v: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {v}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(v.to_string()))
}

fn set_dotted(
    table: &mut toml::Table,
    key: &str,
    value: toml::Value,
) -> Result<(), crate::error::ParseError> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("empty key component".into());
    }
    let mut t = table;
    for p in &parts[..parts.len() - 1] {
        let entry = t
            .entry((*p).to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{p}` is not a table"))?;
    }
    t.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        assert_eq!(
            DaemonConfig::parse("", "t.toml").expect("ok"),
            DaemonConfig::default()
        );
    }

    #[test]
    fn every_section_parses() {
        let text = r#"
interval_s = 1.5
policy = "numad"
dry_run = true
metrics = "127.0.0.1:9999"
fake_numa = 2
on_start = "restore"
[scan]
candidate_min_cpu = 0.2
[memory]
batch_pages = 64
[placement.homenode]
min_rss_mib = 8
[rules.exclude]
comms = ["postgres"]
"#;
        let c = DaemonConfig::parse(text, "t.toml").expect("ok");
        assert_eq!(c.policy, "numad");
        assert_eq!(c.fake_numa, Some(2));
        assert_eq!(c.on_start, OnStart::Restore);
        assert_eq!(c.memory.batch_pages, 64);
        assert_eq!(c.placement.homenode.min_rss_mib, 8);
        assert!(c.rules.exclude.comms.contains("postgres"));
        // The older top-level `interval_s` is read as placement.interval_s.
        assert_eq!(c.placement.interval_s, 1.5);
    }

    /// One placement interval, in `[placement]`; the older top-level key still
    /// reads, `--set interval_s` too, and the two places disagreeing is one clear error.
    #[test]
    fn the_interval_lives_in_placement() {
        let c = DaemonConfig::parse("[placement]\ninterval_s = 3\n", "h.toml").expect("ok");
        assert_eq!(c.placement.interval_s, 3.0);
        let same = "interval_s = 3.0\n[placement]\ninterval_s = 3.0\n";
        assert_eq!(
            DaemonConfig::parse(same, "h.toml")
                .expect("same")
                .placement
                .interval_s,
            3.0
        );
        let e = DaemonConfig::parse(
            "interval_s = 1.0\n[placement]\ninterval_s = 3.0\n",
            "h.toml",
        )
        .expect_err("both")
        .to_string();
        assert!(
            e.starts_with("h.toml: `interval_s` = 1.0") && e.contains("placement.interval_s = 3.0"),
            "{e}"
        );
        let set = [("interval_s".to_string(), "4".to_string())];
        let c = DaemonConfig::with_overrides("", "h.toml", &set).expect("set");
        assert_eq!(c.placement.interval_s, 4.0);
        // An unknown key after a blanked legacy line still names its own line.
        let e = DaemonConfig::parse("interval_s = 2.0\nspeed = 3\n", "h.toml")
            .expect_err("unknown")
            .to_string();
        assert!(e.starts_with("h.toml:2:"), "{e}");
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let e = DaemonConfig::parse("interval_s = 2.0\n[scan]\nfrequency = 3\n", "/etc/h.toml")
            .expect_err("unknown");
        let s = e.to_string();
        assert!(s.starts_with("/etc/h.toml:3:"), "{s}");
        assert!(s.contains("scan.frequency"), "{s}");
        assert!(!s.contains('\n'), "{s}");
        let e = DaemonConfig::parse("[placement.homenode]\nmin_rss = 3\n", "h.toml")
            .expect_err("unknown");
        assert!(e.to_string().contains("min_rss"), "{e}");
    }

    #[test]
    fn bad_values_are_refused_with_their_key() {
        for (text, key) in [
            ("interval_s = 0.0", "interval_s"),
            ("policy = \"autonuma\"", "policy"),
            ("fake_numa = 1", "fake_numa"),
            ("metrics = \"0.0.0.0:9750\"", "metrics"),
            ("[memory]\nbatch_pages = 0", "memory.batch_pages"),
            (
                "[placement.homenode]\nimbalance_pct = 50",
                "placement.homenode.imbalance_pct",
            ),
            ("interval_s = \"fast\"", "interval_s"),
            ("journal = \"\"", "journal"),
            ("socket = \"\"", "socket"),
        ] {
            let e = DaemonConfig::parse(text, "h.toml").expect_err(text);
            let s = e.to_string();
            assert!(s.contains(key), "{text}: {s}");
            assert!(s.starts_with("h.toml"), "{text}: {s}");
        }
        let ok = "metrics = \"0.0.0.0:9750\"\nmetrics_allow_remote = true";
        assert!(DaemonConfig::parse(ok, "h.toml").is_ok());
    }

    /// A `--set` value of the wrong type names its key (serde alone said only
    /// "invalid type: string \"abc\", expected f64").
    #[test]
    fn a_set_of_the_wrong_type_names_its_key() {
        let sets = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        for (k, v) in [
            ("interval_s", "abc"),
            ("scan.idle_every", "-3"),
            ("placement.homenode.min_rss_mib", "lots"),
        ] {
            let e =
                DaemonConfig::with_overrides("", "h.toml", &sets(&[("dry_run", "true"), (k, v)]))
                    .expect_err(k)
                    .to_string();
            assert!(e.starts_with(&format!("command line: `{k}` = {v}")), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = DaemonConfig::with_overrides("", "h.toml", &sets(&[("journal", "\"\"")]))
            .expect_err("empty journal")
            .to_string();
        assert!(
            e.contains("`journal`") && e.contains("must name a file"),
            "{e}"
        );
    }

    #[test]
    fn command_line_overrides_the_file() {
        let sets = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let c = DaemonConfig::with_overrides(
            "policy = \"numad\"\n[placement.homenode]\nmin_cpu = 0.3\n",
            "h.toml",
            &sets(&[
                ("policy", "homenode"),
                ("placement.homenode.min_rss_mib", "0"),
                ("metrics", "127.0.0.1:9750"),
                ("dry_run", "true"),
                ("rules.exclude.comms", "[\"sshd\"]"),
            ]),
        )
        .expect("ok");
        assert_eq!(c.policy, "homenode");
        assert_eq!(c.placement.homenode.min_rss_mib, 0);
        assert_eq!(c.placement.homenode.min_cpu, 0.3);
        assert!(c.dry_run);
        assert_eq!(c.metrics, Some("127.0.0.1:9750".parse().expect("addr")));
        assert!(c.rules.exclude.comms.contains("sshd"));
        let e = DaemonConfig::with_overrides("", "h.toml", &sets(&[("scan.speed", "3")]))
            .expect_err("unknown");
        assert!(e.to_string().contains("speed"), "{e}");
        let e = DaemonConfig::with_overrides("", "h.toml", &sets(&[("policy", "best")]))
            .expect_err("bad");
        assert!(e.to_string().starts_with("command line: `policy`"), "{e}");
    }

    #[test]
    fn missing_default_file_is_fine_missing_named_file_is_not() {
        let p = Path::new("/nonexistent/homenode.toml");
        assert_eq!(
            DaemonConfig::load(p, false).expect("defaults"),
            DaemonConfig::default()
        );
        let e = DaemonConfig::load(p, true).expect_err("named");
        assert!(
            e.to_string()
                .starts_with("/nonexistent/homenode.toml: cannot read")
        );
    }
}
