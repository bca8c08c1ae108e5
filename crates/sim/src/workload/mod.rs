//! Workloads: the built-in numa_test (with its hackbench disturbance), the NUMA-balancing
//! workloads (light-load, oltp, the autonuma-benchmark programs, convergence), and the generic
//! TOML workload format of `workloads/*.toml`.

pub mod autonuma;
pub mod convergence;
pub mod file;
pub mod light_load;
pub mod numa_test;
pub mod oltp;

pub use file::{WorkloadError, parse_workload};
pub use numa_test::{NumaTestParams, numa_test};
