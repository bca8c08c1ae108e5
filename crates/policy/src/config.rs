//! Policy parameters with their defaults. `docs/PLACEMENT.md` gives the rationale of each:
//! which are facts (numad's defaults, the kernel's) and which are homenode's choices.
//!
//! Both structs deserialise with every field optional (missing = default) and unknown keys
//! refused, so a TOML section such as `[placement.homenode]` can set only what it changes.

use serde::{Deserialize, Serialize};

/// A parameter out of its range.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("placement parameter `{key}` = {value}: {reason}")]
pub struct ConfigError {
    pub key: &'static str,
    pub value: String,
    pub reason: &'static str,
}

fn check(
    ok: bool,
    key: &'static str,
    value: impl ToString,
    reason: &'static str,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError {
            key,
            value: value.to_string(),
            reason,
        })
    }
}

fn finite_nonneg(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

/// Parameters of the homenode policy ([`crate::HomenodePolicy`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HomenodeConfig {
    /// A process is significant (gets a home) only if it used at least this many CPUs over the
    /// last interval ...
    pub min_cpu: f64,
    /// ... and has at least this much resident memory, MiB, or at least `sharing_threads`
    /// busy threads.
    pub min_rss_mib: u64,
    /// A process of at least this many busy threads (its width) is significant whatever its
    /// resident memory: its threads share one address space, and keeping them on as few nodes
    /// as fit them keeps that sharing inside a node (docs/ARCHITECTURE.md §1.5). 0 turns this
    /// off (only `min_rss_mib` decides).
    pub sharing_threads: u32,
    /// A thread using at least this many CPUs counts as one busy thread, needing a CPU of its
    /// own; the CPU use of the other threads is summed and rounded up. The result is the
    /// process's *width*, the CPUs it needs at once.
    pub busy_thread_cpu: f64,
    /// A process whose width is at most this fraction of a node's CPUs is *light* and is always
    /// packed onto one node, even a crowded one (docs/ARCHITECTURE.md §1.5).
    pub pack_fraction: f64,
    /// Memory kept free on every node when deciding whether a process fits there and when
    /// moving memory there, MiB.
    pub headroom_mib: u64,
    /// Nodes are imbalanced when the busiest node's load (CPUs of work per CPU) times 100
    /// exceeds `imbalance_pct` times another node's load.
    pub imbalance_pct: u32,
    /// No rebalancing while the busiest node's load is at or below this (light load: packed
    /// processes stay packed, docs/ARCHITECTURE.md §1.5).
    pub consolidate_below: f64,
    /// An imbalance must be seen in this many consecutive decisions before a process moves.
    pub imbalance_intervals: u32,
    /// A process that got a home or moved is not moved again for this long, seconds.
    pub min_dwell_s: f64,
    /// At most this many rebalancing moves (new home for a process that has one) per decision.
    pub max_moves_per_interval: u32,
    /// At most this many processes without a (valid) home get one per decision; absent (the
    /// default), every significant process without one gets one in the decision that first
    /// sees it.
    pub max_new_homes_per_interval: Option<u32>,
    /// Between two decisions, a quick look every this many seconds gives a home to processes
    /// first seen since the last decision, and does nothing else (a *first look*, docs/
    /// PLACEMENT.md); 0 turns it off. The default is half the kernel's NUMA scan delay
    /// (`numa_balancing_scan_delay_ms`, 1000): a process seen at one look and significant at
    /// the next is still homed before the kernel first scans it.
    pub first_look_s: f64,
    /// Cost unit of a rebalancing move, MiB: a move's score is the load it takes off the
    /// imbalance divided by (1 + bytes it would have to migrate / this).
    pub move_cost_mib: u64,
    /// Memory migration budget, MiB per second of interval.
    pub move_rate_mib_s: u64,
    /// Largest single memory move, MiB.
    pub batch_mib: u64,
    /// Remote memory below this on a node is left where it is, MiB.
    pub min_move_mib: u64,
    /// If a requested move did not take (the node's share fell by less than half of what was
    /// asked), that node's memory of that process is left alone for this long, seconds.
    pub move_retry_s: f64,
    /// A homed process below `min_cpu` for this long loses its home, seconds.
    pub release_after_s: f64,
    /// A home is clearly wrong when at least this percentage of the process's memory is on
    /// another node that would be its first home now (room, balance) ...
    pub correct_memory_pct: u32,
    /// ... for this many consecutive decisions; it is then corrected without waiting out
    /// `min_dwell_s` (once per `min_dwell_s`).
    pub correct_intervals: u32,
    /// With the kernel's NUMA balancing active for a process (its figures are in the
    /// snapshot), step 4 leaves the moving of its memory to the kernel for the first decision
    /// after it is homed, and for as long after as the kernel is seen keeping up (moving home
    /// at least half of what homenode's own budget would); homenode moves what the kernel
    /// does not. Off by default: the simulator's numa01 ran slower with it (docs/PLACEMENT.md).
    pub defer_to_kernel: bool,
    /// The scheduling slice given to the threads of a homed process that is CPU-bound and takes
    /// turns (every thread runnable nearly all the time, waiting for a CPU part of it), ms; 0
    /// leaves every slice to the kernel. Linux 6.12 and later take it as the fair class's
    /// custom slice and clamp it to 0.1-100 ms; the default is the longest they take (step 5,
    /// docs/PLACEMENT.md).
    pub slice_ms: f64,
    /// ... when its threads also waited for a CPU at least this share of the interval, on
    /// average (they take turns with other work); the slice is kept while they wait at least
    /// 0.4 times this (step 5, docs/PLACEMENT.md).
    pub slice_wait: f64,
}

impl Default for HomenodeConfig {
    fn default() -> Self {
        HomenodeConfig {
            min_cpu: 0.5,
            min_rss_mib: 64,
            sharing_threads: 2,
            busy_thread_cpu: 0.5,
            pack_fraction: 0.5,
            headroom_mib: 128,
            imbalance_pct: 125,
            consolidate_below: 0.25,
            imbalance_intervals: 3,
            min_dwell_s: 60.0,
            max_moves_per_interval: 1,
            max_new_homes_per_interval: None,
            first_look_s: 0.5,
            move_cost_mib: 1024,
            move_rate_mib_s: 1280,
            batch_mib: 32,
            min_move_mib: 4,
            move_retry_s: 300.0,
            release_after_s: 120.0,
            correct_memory_pct: 90,
            correct_intervals: 2,
            defer_to_kernel: false,
            slice_ms: 100.0,
            slice_wait: 0.25,
        }
    }
}

impl HomenodeConfig {
    /// Checks every parameter's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            finite_nonneg(self.min_cpu),
            "min_cpu",
            self.min_cpu,
            "must be a number >= 0",
        )?;
        check(
            self.busy_thread_cpu.is_finite()
                && self.busy_thread_cpu > 0.0
                && self.busy_thread_cpu <= 1.0,
            "busy_thread_cpu",
            self.busy_thread_cpu,
            "must be in (0, 1]",
        )?;
        check(
            self.pack_fraction.is_finite() && self.pack_fraction > 0.0 && self.pack_fraction <= 1.0,
            "pack_fraction",
            self.pack_fraction,
            "must be in (0, 1]",
        )?;
        check(
            (100..=1000).contains(&self.imbalance_pct),
            "imbalance_pct",
            self.imbalance_pct,
            "must be in 100..=1000",
        )?;
        check(
            finite_nonneg(self.consolidate_below) && self.consolidate_below <= 1.0,
            "consolidate_below",
            self.consolidate_below,
            "must be in [0, 1]",
        )?;
        check(
            self.imbalance_intervals >= 1,
            "imbalance_intervals",
            self.imbalance_intervals,
            "must be at least 1",
        )?;
        check(
            (51..=100).contains(&self.correct_memory_pct),
            "correct_memory_pct",
            self.correct_memory_pct,
            "must be in 51..=100 (most of its memory)",
        )?;
        check(
            self.correct_intervals >= 1,
            "correct_intervals",
            self.correct_intervals,
            "must be at least 1",
        )?;
        check(
            self.slice_ms == 0.0 || (0.1..=100.0).contains(&self.slice_ms),
            "slice_ms",
            self.slice_ms,
            "must be 0 (off) or in 0.1..=100 (the range of the kernel's custom slices)",
        )?;
        check(
            self.slice_wait.is_finite() && (0.0..=1.0).contains(&self.slice_wait),
            "slice_wait",
            self.slice_wait,
            "must be in [0, 1] (a share of the interval)",
        )?;
        for (key, v) in [
            ("min_dwell_s", self.min_dwell_s),
            ("move_retry_s", self.move_retry_s),
            ("release_after_s", self.release_after_s),
        ] {
            check(finite_nonneg(v), key, v, "must be a number of seconds >= 0")?;
        }
        // A look that lists /proc costs about 3 ms with 1,000 processes (docs/DAEMON.md,
        // "Cost"): ten looks a second are at most about 3% of a CPU.
        check(
            self.first_look_s == 0.0 || (MIN_FIRST_LOOK_S..=1e6).contains(&self.first_look_s),
            "first_look_s",
            self.first_look_s,
            "must be 0 (no first looks) or a number of seconds in 0.1..=1e6",
        )?;
        check(
            self.batch_mib >= 1,
            "batch_mib",
            self.batch_mib,
            "must be at least 1",
        )?;
        check(
            self.move_cost_mib >= 1,
            "move_cost_mib",
            self.move_cost_mib,
            "must be at least 1",
        )?;
        for (key, v) in [
            ("min_rss_mib", self.min_rss_mib),
            ("headroom_mib", self.headroom_mib),
            ("move_rate_mib_s", self.move_rate_mib_s),
            ("min_move_mib", self.min_move_mib),
        ] {
            check(v <= 1 << 30, key, v, "is out of range (at most 2^30 MiB)")?;
        }
        Ok(())
    }
}

/// Parameters of the numad model ([`crate::NumadPolicy`]). Defaults are numad's own
/// (numad.c, version 20150602); see `docs/PLACEMENT.md`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NumadConfig {
    /// Seconds to the next evaluation after one that bound a process (numad `MIN_INTERVAL`).
    pub min_interval_s: f64,
    /// Seconds to the next evaluation after one that bound nothing (numad `MAX_INTERVAL`).
    pub max_interval_s: f64,
    /// A process is managed only if its CPU use is above this, CPUs (numad `CPU_THRESHOLD`,
    /// 50% of a CPU) ...
    pub min_cpu: f64,
    /// ... and its resident memory above this, MiB (numad `MEMORY_THRESHOLD`).
    pub min_rss_mib: u64,
    /// Resources requested for a process = its use x 100 / this (numad `-u`, default 85).
    pub target_utilization_pct: u32,
    /// A bound process whose memory is at least this local is left where it is (numad `-m`).
    pub target_memlocality_pct: u32,
    /// An SMT sibling beyond the first CPU of a core counts as this percent of a CPU (numad `-t`).
    pub htt_percent: u32,
    /// A bound process is not re-evaluated for this long, seconds (numad
    /// `MIN_DELAY_FOR_REEVALUATION`).
    pub reeval_delay_s: f64,
    /// Samples of CPU use kept per process; the largest one counts (numad `RING_BUF_SIZE`).
    pub cpu_samples: u32,
    /// Memory left free on a node when a process is fitted there, MiB (numad `MBS_MARGIN`).
    pub mem_margin_mib: u64,
}

impl Default for NumadConfig {
    fn default() -> Self {
        NumadConfig {
            min_interval_s: 5.0,
            max_interval_s: 15.0,
            min_cpu: 0.5,
            min_rss_mib: 300,
            target_utilization_pct: 85,
            target_memlocality_pct: 90,
            htt_percent: 20,
            reeval_delay_s: 300.0,
            cpu_samples: 8,
            mem_margin_mib: 100,
        }
    }
}

impl NumadConfig {
    /// Checks every parameter's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            self.min_interval_s.is_finite() && self.min_interval_s > 0.0,
            "min_interval_s",
            self.min_interval_s,
            "must be a number of seconds > 0",
        )?;
        check(
            self.max_interval_s.is_finite() && self.max_interval_s >= self.min_interval_s,
            "max_interval_s",
            self.max_interval_s,
            "must be a number of seconds >= min_interval_s",
        )?;
        check(
            finite_nonneg(self.min_cpu),
            "min_cpu",
            self.min_cpu,
            "must be a number >= 0",
        )?;
        check(
            (1..=1000).contains(&self.target_utilization_pct),
            "target_utilization_pct",
            self.target_utilization_pct,
            "must be in 1..=1000",
        )?;
        check(
            self.target_memlocality_pct <= 100,
            "target_memlocality_pct",
            self.target_memlocality_pct,
            "must be in 0..=100",
        )?;
        check(
            self.htt_percent <= 100,
            "htt_percent",
            self.htt_percent,
            "must be in 0..=100",
        )?;
        check(
            finite_nonneg(self.reeval_delay_s),
            "reeval_delay_s",
            self.reeval_delay_s,
            "must be a number of seconds >= 0",
        )?;
        check(
            (1..=1024).contains(&self.cpu_samples),
            "cpu_samples",
            self.cpu_samples,
            "must be in 1..=1024",
        )?;
        for (key, v) in [
            ("min_rss_mib", self.min_rss_mib),
            ("mem_margin_mib", self.mem_margin_mib),
        ] {
            check(v <= 1 << 30, key, v, "is out of range (at most 2^30 MiB)")?;
        }
        Ok(())
    }
}

/// The placement section of a configuration file: the interval, then one table per policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlacementConfig {
    /// Seconds between placement decisions: the daemon samples `/proc` and decides this often,
    /// the simulator runs the policy this often in simulated time.
    pub interval_s: f64,
    pub homenode: HomenodeConfig,
    pub numad: NumadConfig,
}

/// The shortest time between two first looks, seconds (`first_look_s`, when not 0).
pub const MIN_FIRST_LOOK_S: f64 = 0.1;

/// The range of [`PlacementConfig::interval_s`], seconds.
pub const INTERVAL_RANGE_S: std::ops::RangeInclusive<f64> = 0.01..=3600.0;

impl Default for PlacementConfig {
    fn default() -> Self {
        PlacementConfig {
            interval_s: 2.0,
            homenode: HomenodeConfig::default(),
            numad: NumadConfig::default(),
        }
    }
}

impl PlacementConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_interval()?;
        self.homenode.validate()?;
        self.numad.validate()
    }

    /// The check of `interval_s` alone (key `interval_s`).
    pub fn validate_interval(&self) -> Result<(), ConfigError> {
        check(
            self.interval_s.is_finite() && INTERVAL_RANGE_S.contains(&self.interval_s),
            "interval_s",
            self.interval_s,
            "must be between 0.01 and 3600 seconds",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_checked_once_for_every_user() {
        for bad in [0.0, 0.001, 3601.0, f64::NAN] {
            let c = PlacementConfig {
                interval_s: bad,
                ..Default::default()
            };
            let e = c.validate().unwrap_err();
            assert_eq!(e.key, "interval_s", "{bad}");
            assert!(e.to_string().contains("between 0.01 and 3600"), "{e}");
        }
        let c: PlacementConfig = serde_json::from_str(r#"{"interval_s": 0.5}"#).expect("parses");
        assert_eq!(c.interval_s, 0.5);
        assert_eq!(PlacementConfig::default().interval_s, 2.0);
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(HomenodeConfig::default().validate(), Ok(()));
        assert_eq!(NumadConfig::default().validate(), Ok(()));
        assert_eq!(PlacementConfig::default().validate(), Ok(()));
    }

    #[test]
    fn first_looks_are_off_or_at_most_ten_a_second() {
        for (v, ok) in [
            (0.0, true),
            (0.1, true),
            (0.5, true),
            (1e-6, false),
            (0.05, false),
        ] {
            let c = HomenodeConfig {
                first_look_s: v,
                ..Default::default()
            };
            assert_eq!(c.validate().is_ok(), ok, "{v}");
        }
        let c = HomenodeConfig {
            first_look_s: 1e-9,
            ..Default::default()
        };
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "placement parameter `first_look_s` = 0.000000001: must be 0 (no first looks) or a number of seconds in 0.1..=1e6"
        );
    }

    #[test]
    fn bad_values_name_the_key() {
        let c = HomenodeConfig {
            pack_fraction: 0.0,
            ..Default::default()
        };
        let e = c.validate().unwrap_err();
        assert_eq!(e.key, "pack_fraction");
        assert_eq!(
            e.to_string(),
            "placement parameter `pack_fraction` = 0: must be in (0, 1]"
        );
        let c = HomenodeConfig {
            min_dwell_s: f64::NAN,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "min_dwell_s");
        let c = HomenodeConfig {
            batch_mib: 0,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "batch_mib");
        let c = HomenodeConfig {
            correct_memory_pct: 50,
            ..Default::default()
        };
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "placement parameter `correct_memory_pct` = 50: must be in 51..=100 (most of its memory)"
        );
        let c = HomenodeConfig {
            correct_intervals: 0,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "correct_intervals");
        let n = NumadConfig {
            max_interval_s: 1.0,
            ..Default::default()
        };
        assert_eq!(n.validate().unwrap_err().key, "max_interval_s");
        let n = NumadConfig {
            target_utilization_pct: 0,
            ..Default::default()
        };
        assert_eq!(n.validate().unwrap_err().key, "target_utilization_pct");
    }

    #[test]
    fn partial_tables_and_unknown_keys() {
        let c: PlacementConfig =
            serde_json::from_str(r#"{"homenode": {"max_moves_per_interval": 2}}"#).expect("json");
        assert_eq!(c.homenode.max_moves_per_interval, 2);
        assert_eq!(c.homenode.min_dwell_s, 60.0);
        assert_eq!(c.numad, NumadConfig::default());
        let e = serde_json::from_str::<PlacementConfig>(r#"{"numad": {"interval_s": 10}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `interval_s`"), "{e}");
    }
}
