//! Workloads: the built-in numa_test (with its hackbench disturbance), kbuild and bonnie (and
//! their mix), and the generic TOML workload format of `workloads/*.toml`.

pub mod bonnie;
pub mod file;
pub mod kbuild;
pub mod mix;
pub mod numa_test;

pub use bonnie::{BonnieParams, bonnie_program};
pub use file::{WorkloadError, parse_workload};
pub use kbuild::{KbuildParams, kbuild};
pub use mix::{MixParams, mix};
pub use numa_test::{NumaTestParams, numa_test};
