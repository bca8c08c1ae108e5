//! Integration tests of the simulator (one test binary; modules under `tests/sim/`).

#[path = "sim/common.rs"]
mod common;
#[path = "sim/determinism.rs"]
mod determinism;
