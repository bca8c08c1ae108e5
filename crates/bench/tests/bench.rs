//! The benchmark's integration tests, one binary (modules under `tests/bench/`): reports and
//! `compare`, and real runs of small worker sets on this host. The `/proc` and `/sys` readers
//! the benchmark uses are tested in the `linux` crate (`tests/linux/sampling.rs`).

#[path = "bench/report.rs"]
mod report;
#[path = "bench/run.rs"]
mod run;
