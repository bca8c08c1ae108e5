//! CPU-level schedulers. Each one is a plug-in with hooks into the kernel model: where a
//! forked or exec'ed task goes, where a woken task goes, and what periodic, idle and
//! new-idle load balancing does. docs/POLICIES.md describes each in prose.
//!
//! [`registry::SCHEDULERS`] is the one table of schedulers (name, one line, constructor);
//! the hooks they implement ([`CpuScheduler`]) belong to the kernel model
//! ([`crate::kernel::sched_api`]) and are re-exported here.

mod aa;
mod balance;
pub mod domain;
pub mod error;
pub mod linux;
mod linux26;
mod node_affine;
mod node_balance;
mod o1;
mod options;
mod pmqs;
mod pooling;
pub mod registry;
mod simple_numa;
mod wake;

pub use aa::Aa;
pub use balance::{QueueBalancer, Threshold, pull_order};
pub use error::{OptionError, SchedError, SpecError};
pub use linux26::Linux26Numa;
pub use node_affine::NodeAffine;
pub use o1::O1;
pub use options::{SchedOptions, SchedSpec, parse_duration};
pub use pmqs::Pmqs;
pub use registry::{SCHEDULERS, SchedulerEntry, build};
pub use simple_numa::SimpleNuma;

pub use crate::kernel::sched_api::{CpuScheduler, ExecPlacement, IdleType};
