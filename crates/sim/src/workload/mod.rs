//! Workloads: the built-in numa_test (with its hackbench disturbance), kbuild and bonnie (and
//! their mix), the NUMA-balancing workloads (light-load, oltp, the autonuma-benchmark programs,
//! convergence), and the generic TOML workload format of `workloads/*.toml`.

pub mod autonuma;
pub mod bonnie;
pub mod convergence;
pub mod file;
pub mod kbuild;
pub mod light_load;
pub mod mix;
pub mod numa_test;
pub mod oltp;

pub use bonnie::{BonnieParams, bonnie_program};
pub use file::{WorkloadError, parse_workload};
pub use kbuild::{KbuildParams, kbuild};
pub use mix::{MixParams, mix};
pub use numa_test::{NumaTestParams, numa_test};
