//! One master seed feeding independent child random streams: the `report` crate's
//! [`SeedTree`], shared with the benchmark (which seeds its runs as the simulator does).

pub use report::SeedTree;
