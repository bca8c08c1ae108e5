//! numa_test on a real Linux host.
//!
//! The classic benchmark (see `docs/BENCH.md`): N copies of a random-update job
//! ([`worker`]) started together, a hackbench load peak three seconds in ([`hackbench`]),
//! and for each job the share of its user time spent on each NUMA node, measured without a
//! kernel patch by sampling `/proc/PID/stat` ([`numa_test`] explains the sampling and its
//! error bound). The `/proc` and `/sys` readers, and the CPU to node map, are the `linux`
//! crate's ([`linux::procfs`], [`linux::nodemap`]). The figures and the `--json` document are
//! the simulator's (the `report` crate, shared with `sim::numa_test`), so a simulation of this
//! host and a benchmark of it can be put side by side ([`compare`](crate::report::compare)).
//! [`overhead`] measures what the sampling costs.

pub mod clock;
pub mod daemon;
pub mod error;
pub mod hackbench;
pub mod hackbench_procs;
pub mod llc_share;
pub mod numa_test;
pub mod overhead;
pub mod probe;
pub mod refill;
pub mod report;
pub mod turn_refill;
pub mod turns;
pub mod worker;

pub use crate::report::Report;
pub use error::BenchError;
pub use linux::nodemap::{CpuNodeMap, host_cpu_nodes};
pub use numa_test::{
    BenchRun, NumaTestSet, PeakOutcome, RunConfig, WorkerCommand, run_once, run_set,
};
