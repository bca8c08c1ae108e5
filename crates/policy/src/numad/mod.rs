//! A model of numad, Red Hat's user-level NUMA daemon (numad.c, version 20150602), so users
//! can compare the homenode policy with the tool they know.
//!
//! numad binds a whole process to the fewest nodes that hold it, then migrates all of its
//! memory there in one go. Its cycle, as modelled here (`docs/PLACEMENT.md` has the details
//! and what is left out):
//!
//! - It wakes every `max_interval_s` (15 s), or `min_interval_s` (5 s) after a cycle that
//!   bound a process; the policy is called every daemon interval and does nothing in between.
//! - It tracks processes above `min_rss_mib` (300 MiB); a process's CPU use is the largest of
//!   its last `cpu_samples` (8) samples, one per cycle, and a process seen for the first time
//!   has no sample yet. Candidates use more than `min_cpu` (0.5 CPU) and more than
//!   `min_rss_mib`.
//! - Candidates are taken unbound first, largest (CPU x memory) first, then bound ones, the
//!   longest-bound first; a process bound less than `reeval_delay_s` (300 s) ago is skipped.
//! - For each it asks for CPU use and memory scaled up by 100 / `target_utilization_pct`
//!   (CPUs capped at its thread count), scores every node from its free memory and idle CPU
//!   (with this process's own use added back), picks the node whose neighbourhood scores best,
//!   and takes nodes nearest first until the request is met: the fewest nodes that fit.
//! - A bound process already on that node set with at least `target_memlocality_pct` of its
//!   memory there is left alone. Otherwise it is bound (`SetHome` with the set's CPUs) and all
//!   memory outside the set is migrated (`MoveMemory`, no rate limit), and the cycle ends: at
//!   most one process per cycle.
//!
//! The files follow the cycle: `table.rs` keeps the process table and orders the candidates,
//! `pick.rs` is numad's node choice for one process, `bind.rs` turns a choice into actions.

mod bind;
mod pick;
mod table;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::NodePolicy;
use crate::action::Action;
use crate::common::{self, MIB, Machine};
use crate::config::{ConfigError, NumadConfig};
use crate::snapshot::Snapshot;

use pick::{Cycle, Request, cpu_capacity};
use table::NumadProc;

/// The numad placement model. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NumadPolicy {
    cfg: NumadConfig,
    next_eval_ns: Option<u64>,
    procs: BTreeMap<u32, NumadProc>,
}

impl NumadPolicy {
    /// A model with these parameters (checked).
    pub fn new(cfg: NumadConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        Ok(NumadPolicy {
            cfg,
            ..Default::default()
        })
    }

    pub fn config(&self) -> &NumadConfig {
        &self.cfg
    }

    /// When the next cycle runs (ns on the snapshot clock); `None` before the first.
    pub fn next_cycle_ns(&self) -> Option<u64> {
        self.next_eval_ns
    }
}

impl NodePolicy for NumadPolicy {
    fn name(&self) -> &'static str {
        "numad"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Vec<Action> {
        let now = snap.now_ns;
        if self.next_eval_ns.is_some_and(|t| now < t) {
            return Vec::new();
        }
        let m = Machine::new(snap);
        let procs = common::processes(snap, 0.5);
        let tracked = self.update_table(&procs);

        let (cap, free_cpu) = cpu_capacity(snap.topo, &m, self.cfg.htt_percent);
        let cands = self.candidates(&procs, &tracked);
        let sum_used: f64 = cands.iter().map(|p| self.cpu_used(p.pid)).sum();
        let cycle = Cycle {
            topo: snap.topo,
            assume_enough: sum_used <= cap.iter().sum::<f64>(),
            m: &m,
            cap,
            free_cpu,
        };
        let util = f64::from(self.cfg.target_utilization_pct);
        let reeval_ns = self.cfg.reeval_delay_s * 1e9;

        for p in cands {
            let used = self.cpu_used(p.pid);
            let req = Request {
                cpu: (used * 100.0 / util).min(f64::from(p.threads.max(1))),
                mem_mib: (p.rss as f64 / MIB as f64) * 100.0 / util.min(100.0),
            };
            if let Some(b) = self.procs.get(&p.pid).and_then(|s| s.bind_ns) {
                if (now.saturating_sub(b) as f64) < reeval_ns {
                    continue;
                }
            }
            let bound = self.bound_to(p);
            let Some(pick) = self.pick(&cycle, p, &bound, &req) else {
                continue;
            };
            let actions = self.bind(snap, &m, p, &bound, &req, pick);
            self.next_eval_ns = Some(now.saturating_add((self.cfg.min_interval_s * 1e9) as u64));
            return actions;
        }
        self.next_eval_ns = Some(now.saturating_add((self.cfg.max_interval_s * 1e9) as u64));
        Vec::new()
    }
}
