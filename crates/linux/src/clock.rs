//! The daemon's source of monotonic time. Intervals, CPU rates and the memory-move budget are
//! computed from the times it gives, so tests replace the real clock with a [`ManualClock`]
//! advanced by exact steps: their results then do not depend on how long a step took on a
//! loaded host.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where the daemon reads "now".
pub trait Clock: Send + Sync + Debug {
    fn now(&self) -> Instant;
}

/// The monotonic clock of the host (`Instant::now`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that stands still until [`advance`](ManualClock::advance)d.
#[derive(Debug)]
pub struct ManualClock {
    origin: Instant,
    offset_ns: AtomicU64,
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl ManualClock {
    pub fn new() -> ManualClock {
        ManualClock {
            origin: Instant::now(),
            offset_ns: AtomicU64::new(0),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.offset_ns.fetch_add(ns, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.origin + Duration::from_nanos(self.offset_ns.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let c = ManualClock::new();
        let t0 = c.now();
        assert_eq!(c.now(), t0);
        c.advance(Duration::from_millis(2500));
        assert_eq!(c.now() - t0, Duration::from_millis(2500));
    }
}
