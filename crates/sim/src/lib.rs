//! homenode's simulator: a deterministic discrete-event model of a NUMA machine running a
//! Linux-style CPU scheduler.
//!
//! - [`engine`]: the event queue (integer ns, FIFO among equal times);
//! - [`kernel`]: runqueues, task life cycle, accounting, cost model;
//! - [`sched`]: the CPU-level schedulers (plug-ins);
//! - [`memory`]: page groups, placement policies, per-node capacity;
//! - [`workload`]: numa_test and the TOML workload format;
//! - [`sim`]: one run; [`numa_test`]: the numa_test experiment matrix and its report;
//! - [`experiments`]: the classic comparisons from `experiments/*.toml`, with reports;
//! - [`charts`]: the SVG charts of the experiments and studies.

pub mod budget;
pub mod charts;
pub mod disk;
pub mod engine;
pub mod experiments;
pub mod fastdiv;
pub mod kernel;
pub mod loadavg;
pub mod memory;
pub mod numa_test;
pub mod placement;
pub mod program;
pub mod rng;
pub mod sched;
pub mod sim;
pub mod studies;
pub mod time;
pub mod validation;
pub mod workload;

pub use placement::{Placement, PlacementError, PlacementSpec};
pub use sim::{RunError, RunResult, Sim};
