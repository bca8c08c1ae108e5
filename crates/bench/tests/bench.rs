//! The benchmark's integration tests, one binary (modules under `tests/bench/`): /proc parsers
//! on fixtures and malformed text, reports and `compare`, and real runs of small worker sets
//! on this host.

#[path = "bench/procfs.rs"]
mod procfs;
#[path = "bench/report.rs"]
mod report;
#[path = "bench/run.rs"]
mod run;
