//! Workloads: the built-in numa_test (with its hackbench disturbance) and the generic TOML
//! workload format of `workloads/*.toml`.

pub mod file;
pub mod numa_test;

pub use file::{WorkloadError, parse_workload};
pub use numa_test::{NumaTestParams, numa_test};
