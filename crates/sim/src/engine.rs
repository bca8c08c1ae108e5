//! The discrete-event queue: events ordered by (time, sequence number), so events at the same
//! nanosecond are handled in the order they were posted and every run is reproducible.
//!
//! Events are never removed from the heap; an event that has been superseded carries an old
//! generation number and is dropped when it comes up (lazy deletion).

use crate::time::Ns;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What can happen. Kept small and `Copy`: the heap moves these around a lot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The running task on `cpu` reaches a boundary (slice end, phase end, cold-cache
    /// refill done). Stale unless `epoch` matches the CPU's generation.
    CpuBoundary { cpu: u32, epoch: u32 },
    /// Periodic load balancing on `cpu`. Stale unless `epoch` matches.
    Balance { cpu: u32, epoch: u32 },
    /// A sleeping task's sleep ends.
    Wake { task: u32 },
    /// A workload-level timer (for example: start the disturbance at t = 3 s).
    Timer { id: u32 },
    /// The scheduler's own periodic timer (for example PMQS's inter-pool balancer).
    SchedTimer,
}

#[derive(Debug)]
struct Entry {
    time: Ns,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// Pending events.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    /// Events popped so far (including stale ones).
    pub popped: u64,
    /// Events that were handled (not stale).
    pub handled: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, time: Ns, event: Event) {
        self.seq += 1;
        self.heap.push(Entry {
            time,
            seq: self.seq,
            event,
        });
    }

    pub fn pop(&mut self) -> Option<(Ns, Event)> {
        let e = self.heap.pop()?;
        self.popped += 1;
        Some((e.time, e.event))
    }

    pub fn peek_time(&self) -> Option<Ns> {
        self.heap.peek().map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_then_fifo_order() {
        let mut q = EventQueue::new();
        q.push(10, Event::Timer { id: 1 });
        q.push(5, Event::Timer { id: 2 });
        q.push(10, Event::Timer { id: 3 });
        q.push(5, Event::Timer { id: 4 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, Event::Timer { id: 2 }),
                (5, Event::Timer { id: 4 }),
                (10, Event::Timer { id: 1 }),
                (10, Event::Timer { id: 3 }),
            ]
        );
    }
}
