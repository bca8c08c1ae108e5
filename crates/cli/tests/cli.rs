//! Tests of the `homenode` binary (one test binary; modules under `tests/cli/`).

#[path = "cli/bench.rs"]
mod bench;
#[path = "cli/budget.rs"]
mod budget;
#[path = "cli/common.rs"]
mod common;
#[path = "cli/docs.rs"]
mod docs;
#[path = "cli/experiments.rs"]
mod experiments;
#[path = "cli/run.rs"]
mod run;
#[path = "cli/sim.rs"]
mod sim;
#[path = "cli/sim_costs.rs"]
mod sim_costs;
#[path = "cli/validate.rs"]
mod validate;
