//! Integration tests of the `linux` crate (one test binary; modules under `tests/linux/`):
//! the readers on captured and hand-made fixture trees and on malformed copies of them, the
//! readers the benchmark samples with and the CPU to node map, the
//! scanner and rates, the exclusion rules end to end, the journal, scheduling slices, and the
//! syscall wrappers on this process and its children.

#[path = "linux/common.rs"]
mod common;
#[path = "linux/daemon.rs"]
mod daemon;
#[path = "linux/exclude.rs"]
mod exclude;
#[path = "linux/journal.rs"]
mod journal;
#[path = "linux/live.rs"]
mod live;
#[path = "linux/procfs.rs"]
mod procfs;
#[path = "linux/sampling.rs"]
mod sampling;
#[path = "linux/scan.rs"]
mod scan;
#[path = "linux/slice.rs"]
mod slice;
