//! Node-level placement policies: pure functions from a [`Snapshot`] of the machine (what
//! runs where, whose memory is where) to [`Action`]s (set a home node and CPU mask, move
//! memory). No I/O happens here: the simulator and the live daemon both build snapshots and
//! apply actions, so one policy runs unchanged in both.
//!
//! Policies:
//! - [`NoPolicy`] (`none`): never acts; the kernel alone decides.
//! - [`HomenodePolicy`] (`homenode`): the node-affine policy: a home node per significant
//!   process, chosen where its memory is, rate-limited memory moves home, rebalancing with
//!   hysteresis.
//! - [`NumadPolicy`] (`numad`): a model of numad: whole-process binding to the fewest nodes
//!   that fit, then all memory migrated, every 15 s.
//!
//! A policy keeps whatever state it needs between decisions in its own struct, so the same
//! sequence of snapshots always yields the same actions. `docs/PLACEMENT.md` describes the
//! algorithms and every parameter. [`registry::POLICIES`] is the one table of policies.

pub mod action;
mod common;
pub mod config;
pub mod homenode;
pub mod numad;
pub mod registry;
pub mod snapshot;

pub use action::Action;
pub use config::{ConfigError, HomenodeConfig, INTERVAL_RANGE_S, NumadConfig, PlacementConfig};
pub use homenode::HomenodePolicy;
pub use numad::NumadPolicy;
pub use registry::{POLICIES, PolicyEntry, PolicyError, build};
pub use snapshot::{
    NodeNumaStats, NodeView, ProcessNumaStats, ProcessView, Snapshot, SnapshotError, ThreadView,
};

/// A node-level placement policy.
pub trait NodePolicy {
    fn name(&self) -> &'static str;
    /// Decide the actions for one interval. Called once per daemon (or simulated) interval
    /// with a snapshot taken at `snap.now_ns`; a policy with a longer period of its own
    /// returns nothing in between.
    fn decide(&mut self, snap: &Snapshot<'_>) -> Vec<Action>;
    /// What the last decision held back and why, one line each, for what it did not turn into
    /// an action (a homed process's remote memory left where it is this interval, say). The
    /// actions carry their own reasons; these explain the absence of one.
    fn notes(&self) -> &[String] {
        &[]
    }
    /// How often the mechanism should offer a *first look* ([`NodePolicy::first_look`])
    /// between two decisions, ns; `None` (the default): never.
    fn first_look_every_ns(&self) -> Option<u64> {
        None
    }
    /// A quick look between two decisions, with a snapshot covering the time since the last
    /// decision or look: the policy may place processes it has not seen at a decision, and
    /// does nothing else (its other steps count decisions). [`NodePolicy::notes`] then holds
    /// this look's notes.
    fn first_look(&mut self, _snap: &Snapshot<'_>) -> Vec<Action> {
        Vec::new()
    }
    /// The mechanism did not carry out these actions of the last decision or look (a dry run
    /// carries out none): a policy that judges its requests by what they changed on the host
    /// forgets them, so that it does not take "nothing changed" for "it did not work".
    fn not_applied(&mut self, _actions: &[Action]) {}
}

/// The policy that never acts (the kernel alone decides placement).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPolicy;

impl NodePolicy for NoPolicy {
    fn name(&self) -> &'static str {
        "none"
    }

    fn decide(&mut self, _snap: &Snapshot<'_>) -> Vec<Action> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_never_acts() {
        let t = topo::parse_synthetic("nodes=2,cpus-per-node=2").expect("machine");
        let mut p = ProcessView::new(&t, 1);
        p.cpu_use = 1.0;
        p.node_bytes = vec![1 << 20, 0];
        p.node_runtime = vec![0.0, 1.0];
        p.current_node = Some(1);
        let snap = Snapshot {
            topo: &t,
            now_ns: 0,
            interval_ns: 1_000_000_000,
            nodes: NodeView::consistent_with(&t, std::slice::from_ref(&p)),
            processes: vec![p],
            numa_balancing: false,
        };
        assert!(NoPolicy.decide(&snap).is_empty());
    }

    #[test]
    fn build_by_name() {
        let cfg = PlacementConfig::default();
        for e in POLICIES {
            assert_eq!(build(e.name, &cfg).expect("policy").name(), e.name);
        }
        let e = build("numa", &cfg).err().expect("unknown");
        assert_eq!(
            e.to_string(),
            "unknown placement policy `numa` (known: none, homenode, numad)"
        );
        let mut bad = cfg.clone();
        bad.homenode.imbalance_pct = 50;
        assert!(matches!(
            build("homenode", &bad),
            Err(PolicyError::Config(_))
        ));
    }
}
