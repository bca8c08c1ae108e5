//! Helpers shared by the simulator's integration tests.

use sim::numa_test::{self, CellSummary, Matrix};
use sim::program::Workload;
use sim::sched::{self, SchedSpec};
use sim::workload::NumaTestParams;
use sim::{RunResult, Sim};
use std::sync::Arc;
use topo::Topology;

/// The small machine most tests use: 2 nodes of 2 CPUs.
pub const SMALL: &str = "nodes=2,cpus-per-node=2";

/// Every scheduler name in the registry.
pub fn scheduler_names() -> Vec<&'static str> {
    sched::SCHEDULERS.iter().map(|e| e.name).collect()
}

pub fn machine(spec: &str) -> Arc<Topology> {
    Arc::new(topo::resolve_machine(spec).unwrap_or_else(|e| panic!("machine `{spec}`: {e}")))
}

pub fn scheduler(name: &str, topo: &Topology) -> Box<dyn sched::CpuScheduler> {
    let spec = SchedSpec::parse(name).unwrap_or_else(|e| panic!("{e}"));
    sched::build(&spec, topo).unwrap_or_else(|e| panic!("{e}"))
}

/// numa_test parameters small enough for a debug-mode test: short jobs, and (when `disturb`)
/// a two-group hackbench started early so that it overlaps the jobs.
pub fn small_params(tasks: u32, size: u64, passes: u32, disturb: bool) -> NumaTestParams {
    NumaTestParams {
        tasks,
        problem_size: size,
        passes,
        disturb,
        disturb_at: 20_000_000,
        hackbench_groups: 2,
        hackbench_loops: 20,
        ..Default::default()
    }
}

/// Run to completion without checks.
pub fn run(topo: &Arc<Topology>, w: &Workload, sched_name: &str, seed: u64) -> RunResult {
    Sim::new(
        topo.clone(),
        Arc::new(w.clone()),
        scheduler(sched_name, topo),
        seed,
    )
    .run()
    .unwrap_or_else(|e| panic!("{sched_name} on {}: {e}", topo.name))
}

/// Single-step a run to completion, checking the kernel's invariants after every event.
/// Returns the finished simulation (its kernel state) and the number of events stepped.
pub fn step_checked(topo: &Arc<Topology>, w: &Workload, sched_name: &str, seed: u64) -> (Sim, u64) {
    let mut sim = Sim::new(
        topo.clone(),
        Arc::new(w.clone()),
        scheduler(sched_name, topo),
        seed,
    );
    let mut steps = 0u64;
    loop {
        let more = sim
            .step()
            .unwrap_or_else(|e| panic!("{sched_name} on {}: {e}", topo.name));
        steps += 1;
        if let Err(e) = sim.k.check_invariants() {
            panic!(
                "{sched_name} on {} seed {seed}: invariant broken after event {steps} at t={} ns: {e}",
                topo.name, sim.k.now
            );
        }
        if !more {
            return (sim, steps);
        }
    }
}

/// One numa_test cell through the experiment driver.
pub fn cell(
    topo: &Arc<Topology>,
    sched_names: &[&str],
    tasks: u32,
    reps: u32,
    seed: u64,
    params: &NumaTestParams,
) -> Vec<CellSummary> {
    let m = Matrix {
        scheds: sched_names
            .iter()
            .map(|s| SchedSpec::parse(s).expect("spec"))
            .collect(),
        tasks: vec![tasks],
        reps,
        seed,
        params: params.clone(),
    };
    numa_test::run_matrix(topo, &m, &|| {}).unwrap_or_else(|e| panic!("{e}"))
}

/// The text report of cells: per cell the job table and summary block, then the comparison.
pub fn report_text(cells: &[CellSummary], nr_nodes: usize) -> String {
    let mut s = String::new();
    for c in cells {
        s.push_str(&format!(
            "== {} N={} reps={}\n",
            c.scheduler, c.tasks, c.reps
        ));
        s.push_str(&numa_test::job_table(&c.jobs, nr_nodes));
        s.push_str(&numa_test::summary_block(c));
        s.push('\n');
    }
    s.push_str(&numa_test::comparison_table(cells));
    s
}

/// Index of the largest value (lowest index on ties).
pub fn argmax_u64(v: &[u64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}
