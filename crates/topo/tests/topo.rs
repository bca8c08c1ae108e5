//! Integration tests of the topology crate (one test binary; modules under `tests/topo/`):
//! property tests over random and damaged specs, and the sysfs reader on captured trees.

#[path = "topo/properties.rs"]
mod properties;
#[path = "topo/sysfs.rs"]
mod sysfs;
