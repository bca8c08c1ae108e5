//! Simulated time: integer nanoseconds since the start of a run.

/// A point in simulated time, or a duration, in nanoseconds.
pub type Ns = u64;

pub const US: Ns = 1_000;
pub const MS: Ns = 1_000_000;
pub const SEC: Ns = 1_000_000_000;

/// Seconds as f64, for reports.
pub fn secs(ns: Ns) -> f64 {
    ns as f64 / SEC as f64
}
