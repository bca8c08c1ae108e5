//! The one table of CPU-level schedulers. Every list of scheduler names (`homenode
//! schedulers`, the "valid:" part of an unknown-scheduler error, test loops over all
//! schedulers) is generated from [`SCHEDULERS`]; [`build`] looks a spec's name up in it.
//!
//! To add a scheduler, implement [`CpuScheduler`] in a new file of this directory and add one
//! [`SchedulerEntry`] below (docs/POLICIES.md, "How to add a scheduler").

use super::error::{OptionError, SchedError};
use super::options::{SchedOptions, SchedSpec};
use super::{Aa, CpuScheduler, Linux26Numa, NodeAffine, O1, Pmqs, SimpleNuma, linux};
use topo::Topology;

/// Builds a scheduler, reading its options from `o` (unread options are refused afterwards).
pub type BuildFn = fn(&Topology, &mut SchedOptions) -> Result<Box<dyn CpuScheduler>, OptionError>;

/// One CPU-level scheduler: its name on the command line and in reports, one line for
/// listings, and its constructor.
pub struct SchedulerEntry {
    /// The spec name (`o1`); the built scheduler's [`CpuScheduler::name`] returns it.
    pub name: &'static str,
    /// One line for `homenode schedulers`.
    pub about: &'static str,
    pub build: BuildFn,
}

impl SchedulerEntry {
    /// The option names the scheduler reads, in the order it reads them (every option has a
    /// default, so building with none given asks for all of them).
    pub fn option_names(&self, topo: &Topology) -> Vec<&'static str> {
        let mut o = SchedOptions::new(self.name, &[]);
        let _ = (self.build)(topo, &mut o);
        let mut names = o.known().to_vec();
        let mut seen = Vec::new();
        names.retain(|n| {
            let first = !seen.contains(n);
            seen.push(*n);
            first
        });
        names
    }
}

/// Every CPU-level scheduler, in the order of listings.
pub static SCHEDULERS: &[SchedulerEntry] = &[
    SchedulerEntry {
        name: "o1",
        about: "A: the 2.5 O(1) scheduler, NUMA-oblivious (one flat balancing domain)",
        build: |t, o| Ok(Box::new(O1::new(t, o)?)),
    },
    SchedulerEntry {
        name: "o1-steal1",
        about: "B: the node-affine code built without NUMA: one pool, one task per balancing call (2.4.18 base)",
        build: |t, o| Ok(Box::new(NodeAffine::flat(t, o)?)),
    },
    SchedulerEntry {
        name: "simple-numa",
        about: "C: simple NUMA (exec to least loaded node, cross-node every 10th balance)",
        build: |t, o| Ok(Box::new(SimpleNuma::new(t, o)?)),
    },
    SchedulerEntry {
        name: "pool",
        about: "D: pooling NUMA scheduler (remote steals after pool_delay)",
        build: |t, o| Ok(Box::new(NodeAffine::pool(t, o)?)),
    },
    SchedulerEntry {
        name: "node-affine-static",
        about: "E: node-affine, initial load balancing, static homenode",
        build: |t, o| Ok(Box::new(NodeAffine::new(t, false, o)?)),
    },
    SchedulerEntry {
        name: "node-affine-dynamic",
        about: "F: node-affine, no initial balancing, homenode = node with most memory",
        build: |t, o| Ok(Box::new(NodeAffine::new(t, true, o)?)),
    },
    SchedulerEntry {
        name: "aa",
        about: "Arcangeli's multi-queue: own node first, remote pull only when the node is idle",
        build: |t, o| Ok(Box::new(Aa::new(t, o)?)),
    },
    SchedulerEntry {
        name: "pmqs",
        about: "IBM pooled multi-queue: pool-local search, periodic inter-pool push (500 ms)",
        build: |t, o| Ok(Box::new(Pmqs::new(t, o)?)),
    },
    SchedulerEntry {
        name: "linux-2.6-numa",
        about: "the 2.6.0 kernel's NUMA scheduler (node rebalance 5/400 ms, exec balancing)",
        build: |t, o| Ok(Box::new(Linux26Numa::new(t, o)?)),
    },
    SchedulerEntry {
        name: "linux",
        about: "today's Linux: EEVDF (or CFS), PELT, domains, wake-affine, NUMA balancing, NUMA imbalance rule",
        build: |t, o| Ok(Box::new(linux::Linux::new(t, o)?)),
    },
];

/// The entry called `name`.
pub fn find(name: &str) -> Option<&'static SchedulerEntry> {
    SCHEDULERS.iter().find(|e| e.name == name)
}

/// The names of all schedulers, in table order.
pub fn names() -> Vec<&'static str> {
    SCHEDULERS.iter().map(|e| e.name).collect()
}

/// Build a scheduler from a spec such as `o1` or `node-affine-static:home_bonus=2`.
pub fn build(spec: &SchedSpec, topo: &Topology) -> Result<Box<dyn CpuScheduler>, SchedError> {
    let entry = find(&spec.name).ok_or_else(|| SchedError::UnknownScheduler {
        name: spec.name.clone(),
        valid: names(),
    })?;
    let mut opts = SchedOptions::new(&spec.name, &spec.options);
    let s = (entry.build)(topo, &mut opts)?;
    opts.finish()?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_builds_a_scheduler_of_its_name() {
        let topo = topo::parse_synthetic("nodes=2,cpus-per-node=2").expect("machine");
        for e in SCHEDULERS {
            let spec = SchedSpec::parse(e.name).expect("spec");
            let s = build(&spec, &topo).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert_eq!(s.name(), e.name);
            assert!(!e.about.is_empty(), "{}", e.name);
            let names = e.option_names(&topo);
            let reported: Vec<String> = s.options().into_iter().map(|(k, _)| k).collect();
            assert!(!names.is_empty(), "{}", e.name);
            assert!(
                names.iter().any(|n| reported.iter().any(|r| r == n)),
                "{}: options {names:?} vs report {reported:?}",
                e.name
            );
        }
        let mut names = names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SCHEDULERS.len(), "a name is registered twice");
    }

    #[test]
    fn unknown_scheduler_lists_the_valid_ones() {
        let topo = topo::parse_synthetic("nodes=2,cpus-per-node=2").expect("machine");
        let e = build(&SchedSpec::parse("o2").expect("spec"), &topo)
            .err()
            .expect("unknown");
        assert!(matches!(&e, SchedError::UnknownScheduler { name, .. } if name == "o2"));
        assert_eq!(
            e.to_string(),
            format!("unknown scheduler `o2` (valid: {})", names().join(", "))
        );
    }
}
