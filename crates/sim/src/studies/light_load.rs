//! `light-load-2020` on kunpeng96: the light-load program's run time under each NUMA imbalance
//! rule, and the nodes its threads ran on. `none` lets the balancer spread the four threads;
//! `rfc2020` and the later rules may keep them on one node. The RFC patched a kernel that
//! already had the `two-tasks` rule, so the table compares every rule with that kernel
//! ([`BASELINE`]), not with `none`.

use super::{StudyError, machine, run_placed, secs};
use crate::placement::PlacementSpec;
use crate::workload::light_load::{LightLoadParams, light_load};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;
use topo::Topology;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub rule: String,
    /// Wall time of the program, s.
    pub runtime_s: f64,
    /// Nodes on which the worker threads ran (any user time).
    pub nodes: Vec<usize>,
    pub node_migrations: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LightLoad {
    pub machine: String,
    pub iterations: f64,
    pub numa_balancing: String,
    pub rows: Vec<Row>,
}

pub const RULES: [&str; 5] = ["none", "rfc2020", "two-tasks", "quarter", "imb_numa_nr"];

/// The kernel the 2020 RFC was a patch against (5.6-rc: `adjust_numa_imbalance`, the
/// two-task rule, is in its diff context): the "before" of the RFC's measurement.
pub const BASELINE: &str = "two-tasks";

/// Run the study on `machine` with `p` (numa_balancing as given: `on` is the kernel default).
pub fn study(
    machine_name: &str,
    p: &LightLoadParams,
    numa_balancing: &str,
    seed: u64,
) -> Result<LightLoad, StudyError> {
    let topo = machine(machine_name)?;
    let rows = RULES
        .par_iter()
        .map(|rule| {
            let spec = format!("linux:numa_imbalance={rule},numa_balancing={numa_balancing}");
            let mut row = run_one(&topo, p, &spec, None, seed)?;
            row.rule = rule.to_string();
            Ok(row)
        })
        .collect::<Result<Vec<Row>, StudyError>>()?;
    Ok(LightLoad {
        machine: topo.name.clone(),
        iterations: p.iterations,
        numa_balancing: numa_balancing.into(),
        rows,
    })
}

/// One run of the light-load program with scheduler spec `sched` and, when given, a
/// node-level placement policy on top (as `homenode sim --placement` runs it). The row's
/// `rule` is the scheduler spec.
pub fn run_one(
    topo: &Arc<Topology>,
    p: &LightLoadParams,
    sched: &str,
    placement: Option<&PlacementSpec>,
    seed: u64,
) -> Result<Row, StudyError> {
    let r = run_placed(topo, light_load(p), sched, placement, seed)?;
    let mut nodes: Vec<usize> = r
        .tasks
        .iter()
        .filter(|t| t.job)
        .flat_map(|t| {
            t.node_user_ns
                .iter()
                .enumerate()
                .filter(|(_, ns)| **ns > 0.0)
                .map(|(n, _)| n)
                .collect::<Vec<_>>()
        })
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    Ok(Row {
        rule: sched.to_string(),
        runtime_s: r.end_ns as f64 / 1e9,
        nodes,
        node_migrations: r.counters.node_migrations,
    })
}

impl LightLoad {
    pub fn to_markdown(&self) -> String {
        let mut s = format!(
            "### light-load on {} ({:e} iterations per thread, numa_balancing={})\n\n\
             | numa_imbalance | run time (s) | vs {BASELINE} (the kernel the RFC patched) | nodes used | node migrations |\n\
             |---|---:|---:|---|---:|\n",
            self.machine, self.iterations, self.numa_balancing
        );
        let base = self
            .rows
            .iter()
            .find(|r| r.rule == BASELINE)
            .map_or(1.0, |r| r.runtime_s);
        for r in &self.rows {
            let nodes: Vec<String> = r.nodes.iter().map(|n| n.to_string()).collect();
            s += &format!(
                "| {} | {} | {:+.1}% | {} | {} |\n",
                r.rule,
                secs(r.runtime_s * 1e9),
                (r.runtime_s / base - 1.0) * 100.0,
                nodes.join(","),
                r.node_migrations
            );
        }
        s
    }
}
