//! Integration tests of the simulator (one test binary; modules under `tests/sim/`).

#[path = "sim/affinity.rs"]
mod affinity;
#[path = "sim/common.rs"]
mod common;
#[path = "sim/conservation.rs"]
mod conservation;
#[path = "sim/cost.rs"]
mod cost;
#[path = "sim/determinism.rs"]
mod determinism;
#[path = "sim/disk.rs"]
mod disk;
#[path = "sim/experiments.rs"]
mod experiments;
#[path = "sim/fair.rs"]
mod fair;
#[path = "sim/golden.rs"]
mod golden;
#[path = "sim/historic.rs"]
mod historic;
#[path = "sim/linux.rs"]
mod linux;
#[path = "sim/memory.rs"]
mod memory;
#[path = "sim/placement.rs"]
mod placement;
#[path = "sim/probe.rs"]
mod probe;
#[path = "sim/props.rs"]
mod props;
#[path = "sim/schedulers.rs"]
mod schedulers;
#[path = "sim/scoreboard.rs"]
mod scoreboard;
#[path = "sim/size.rs"]
mod size;
#[path = "sim/studies.rs"]
mod studies;
#[path = "sim/ticks.rs"]
mod ticks;
#[path = "sim/workloads.rs"]
mod workloads;
