//! The NUMA-balancing studies: each runs one experiment as a library function and
//! returns a plain, serialisable result with a markdown rendering, for the experiments runner
//! to call. Every run is deterministic for its seed; rows are computed in parallel and
//! collected in order.
//!
//! - [`light_load`]: `light-load-2020` (kunpeng96): run time per NUMA imbalance rule;
//! - [`oltp`]: `oltp-numa` (xeon2s): transactions/s, NUMA balancing off vs on;
//! - [`autonuma`]: `autonuma-bench` (xeon2s, epyc-nps4): numa01/numa02 and their bind variants,
//!   off vs on vs sched-numa-2012, with per-node memory over time as SVG;
//! - [`convergence`]: `convergence` (epyc-nps4): convergence time per process x thread shape.

pub mod autonuma;
pub mod convergence;
pub mod light_load;
pub mod oltp;

use crate::kernel::Kernel;
use crate::placement::{PlacementError, PlacementSpec};
use crate::program::Workload;
use crate::sched::{self, SchedSpec};
use crate::sim::{RunError, RunResult, Sim};
use crate::time::{Ns, SEC};
use std::sync::Arc;
use topo::Topology;

/// Why a study could not run.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum StudyError {
    #[error("machine `{name}`: {reason}")]
    Machine { name: String, reason: String },
    #[error(transparent)]
    Scheduler(#[from] crate::sched::SchedError),
    #[error("workload `{name}`: {reason}")]
    Workload {
        name: String,
        reason: crate::program::ProgramError,
    },
    #[error(transparent)]
    Placement(#[from] PlacementError),
    #[error("{workload} with {sched}: {source}")]
    Run {
        workload: String,
        sched: String,
        source: RunError,
    },
}

/// Resolve a machine by preset name, spec file or synthetic spec.
pub fn machine(name: &str) -> Result<Arc<Topology>, StudyError> {
    topo::resolve_machine(name)
        .map(Arc::new)
        .map_err(|e| StudyError::Machine {
            name: name.into(),
            reason: e.to_string(),
        })
}

/// A ready-to-run simulation of `w` on `topo` with scheduler spec `sched`.
pub fn prepare(
    topo: &Arc<Topology>,
    w: Workload,
    sched: &str,
    seed: u64,
) -> Result<Sim, StudyError> {
    prepare_placed(topo, w, sched, None, seed)
}

/// [`prepare`] with a node-level placement policy on top of the scheduler, as `--placement`
/// runs it for `homenode sim` (`None`: no placement layer at all).
pub fn prepare_placed(
    topo: &Arc<Topology>,
    w: Workload,
    sched: &str,
    placement: Option<&PlacementSpec>,
    seed: u64,
) -> Result<Sim, StudyError> {
    let bad = |reason| StudyError::Workload {
        name: w.name.clone(),
        reason,
    };
    w.validate().map_err(bad)?;
    w.check_machine(topo).map_err(bad)?;
    let spec = SchedSpec::parse(sched).map_err(|e| StudyError::Scheduler(e.into()))?;
    let s = sched::build(&spec, topo)?;
    let mut sim = Sim::new(topo.clone(), Arc::new(w), s, seed).with_time_limit(3600 * SEC);
    if let Some(p) = placement {
        sim = sim.with_placement(p.build()?);
    }
    Ok(sim)
}

/// Run `w` to completion.
pub fn run(
    topo: &Arc<Topology>,
    w: Workload,
    sched: &str,
    seed: u64,
) -> Result<RunResult, StudyError> {
    run_placed(topo, w, sched, None, seed)
}

/// [`run`] with a node-level placement policy on top of the scheduler.
pub fn run_placed(
    topo: &Arc<Topology>,
    w: Workload,
    sched: &str,
    placement: Option<&PlacementSpec>,
    seed: u64,
) -> Result<RunResult, StudyError> {
    let name = w.name.clone();
    prepare_placed(topo, w, sched, placement, seed)?
        .run()
        .map_err(|source| StudyError::Run {
            workload: name,
            sched: sched.into(),
            source,
        })
}

/// Step `sim` and call `look` every `every` of simulated time (after the first event at or
/// past each sampling time) until it returns true, the run ends, or `until` passes. Returns the
/// sampling time at which `look` said true. Idle CPUs of `sim` tick on every tick
/// ([`Sim::with_quiet_ticks`]).
pub fn watch(
    sim: &mut Sim,
    every: Ns,
    until: Ns,
    mut look: impl FnMut(&Kernel, Ns) -> bool,
) -> Result<Option<Ns>, RunError> {
    let mut next = every;
    // `look` runs after the first event past each sampling time: every idle tick must be an
    // event, as it always was here.
    debug_assert!(!sim.k.quiet.any(), "quiet CPUs before the first sample");
    sim.k.quiet.enabled = false;
    while sim.step()? {
        while sim.k.now >= next {
            if look(&sim.k, next) {
                return Ok(Some(next));
            }
            next += every;
        }
        if sim.k.now >= until {
            break;
        }
    }
    Ok(None)
}

/// Seconds with three decimals, for tables.
pub(crate) fn secs(ns: f64) -> String {
    format!("{:.3}", ns / 1e9)
}
