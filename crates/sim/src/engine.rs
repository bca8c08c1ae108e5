//! The discrete-event queue: events ordered by (time, sequence number), so events at the same
//! nanosecond are handled in the order they were posted and every run is reproducible.
//!
//! Two kinds of events live in two structures:
//! - *per-CPU timers* (a CPU's next boundary, its next balance tick): at most one of each is
//!   pending per CPU, so they sit in an indexed heap with one slot per (CPU, kind). Posting
//!   a new one replaces the pending one in place, and cancelling removes it, so the queue
//!   never carries superseded events;
//! - *one-shot events* (wake-ups, workload timers, the scheduler's timer) in a plain heap.
//!
//! `pop` takes the earlier of the two heads by (time, sequence). Each event still carries the
//! generation (`epoch`) it was posted with, which the simulation checks as before.

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
    /// A contention refresh put off to the end of its period (`Kernel::contention_period`).
    ContentionRefresh,
}

impl Event {
    /// The per-CPU timer slot this event occupies and its epoch, if it is one.
    fn slot(self) -> Option<(usize, u32)> {
        match self {
            Event::CpuBoundary { cpu, epoch } => Some((2 * cpu as usize, epoch)),
            Event::Balance { cpu, epoch } => Some((2 * cpu as usize + 1, epoch)),
            Event::Wake { .. }
            | Event::Timer { .. }
            | Event::SchedTimer
            | Event::ContentionRefresh => None,
        }
    }

    /// The per-CPU timer of `slot` posted with `epoch` ([`Event::slot`] backwards).
    fn of_slot(slot: u32, epoch: u32) -> Event {
        let cpu = slot / 2;
        if slot % 2 == 0 {
            Event::CpuBoundary { cpu, epoch }
        } else {
            Event::Balance { cpu, epoch }
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: Ns,
    seq: u64,
    event: Event,
}

impl Entry {
    fn key(&self) -> (Ns, u64) {
        (self.time, self.seq)
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
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
        other.key().cmp(&self.key())
    }
}

/// A per-CPU timer in the heap: its key, then its slot and epoch packed in one word (the
/// event is rebuilt from the slot when popped). Plain words, built from scalars: the entry
/// is passed to the sifts through memory, and two 4-byte fields just stored by the caller
/// and loaded back as one 8-byte word when the entry is copied stall the load (store
/// forwarding fails) on every post.
#[derive(Clone, Copy, Debug)]
struct TimerEntry {
    time: Ns,
    seq: u64,
    /// The slot in the low half, the epoch in the high half.
    slot_epoch: u64,
}

impl TimerEntry {
    fn new(time: Ns, seq: u64, slot: u32, epoch: u32) -> Self {
        TimerEntry {
            time,
            seq,
            slot_epoch: u64::from(slot) | u64::from(epoch) << 32,
        }
    }

    fn key(&self) -> (Ns, u64) {
        (self.time, self.seq)
    }

    fn slot(&self) -> usize {
        self.slot_epoch as u32 as usize
    }

    fn epoch(&self) -> u32 {
        (self.slot_epoch >> 32) as u32
    }
}

/// A binary min-heap of per-CPU timer slots, each slot present at most once; `pos[slot]` is
/// its index in `heap` (or `NONE`), so a slot's entry is replaced or removed in O(log n).
///
/// Popping leaves the root *vacant* instead of moving the last entry up at once: nearly
/// always the handler of the popped event posts the next timer of the same CPU (a new chunk,
/// the next balance tick) before anything else touches the heap, and that entry then takes
/// the root's place with one sift down, where removing and inserting cost a sift down and a
/// sift up. Any other operation first fills the root the ordinary way. The live entries, and
/// so the order of pops (keys are unique), are the same either way.
#[derive(Debug, Default)]
struct SlotHeap {
    heap: Vec<TimerEntry>,
    pos: Vec<usize>,
    /// `heap[0]` is a popped entry awaiting removal (its slot's `pos` is already `NONE`).
    vacant_root: bool,
}

const NONE: usize = usize::MAX;

impl SlotHeap {
    fn set(&mut self, e: TimerEntry) {
        let slot = e.slot();
        if slot >= self.pos.len() {
            self.pos.resize(slot + 1, NONE);
        }
        if self.pos[slot] == NONE && self.vacant_root {
            // A new entry takes the popped root's place.
            self.vacant_root = false;
            self.place_down(0, e);
            return;
        }
        self.fill_root();
        let i = self.pos[slot];
        if i == NONE {
            self.heap.push(e);
            self.place_up(self.heap.len() - 1, e);
        } else if e.key() < self.heap[i].key() {
            self.place_up(i, e);
        } else {
            self.place_down(i, e);
        }
    }

    fn remove(&mut self, slot: usize) {
        let Some(&i) = self.pos.get(slot) else {
            return;
        };
        if i == NONE {
            return;
        }
        self.fill_root();
        // Filling the root may have moved the entry.
        self.remove_at(self.pos[slot]);
    }

    /// Remove a popped root left vacant, if any: the last entry takes its place.
    fn fill_root(&mut self) {
        if std::mem::take(&mut self.vacant_root) {
            self.remove_at(0);
        }
    }

    /// Remove the entry at `i`: the last entry fills the hole, moving up or down.
    fn remove_at(&mut self, i: usize) {
        let last = self.heap.pop().expect("non-empty");
        if i == self.heap.len() {
            self.pos[last.slot()] = NONE;
            return;
        }
        self.pos[self.heap[i].slot()] = NONE;
        if i > 0 && last.key() < self.heap[(i - 1) / 2].key() {
            self.place_up(i, last);
        } else {
            self.place_down(i, last);
        }
    }

    /// The earliest live entry: with the root vacant, the earlier of its children.
    fn peek(&self) -> Option<&TimerEntry> {
        if !self.vacant_root {
            return self.heap.first();
        }
        match (self.heap.get(1), self.heap.get(2)) {
            (Some(l), Some(r)) if r.key() < l.key() => Some(r),
            (l, _) => l,
        }
    }

    /// Take the earliest entry, leaving its place vacant for the next insertion.
    fn pop(&mut self) -> Option<TimerEntry> {
        self.fill_root();
        let &e = self.heap.first()?;
        self.pos[e.slot()] = NONE;
        self.vacant_root = true;
        Some(e)
    }

    fn len(&self) -> usize {
        self.heap.len() - usize::from(self.vacant_root)
    }

    /// Put `moving` in the hole at `i`, moved towards the root while it is earlier than its
    /// parent ([`SlotHeap::sift_up`] with the entry in registers).
    #[inline(always)]
    fn place_up(&mut self, i: usize, moving: TimerEntry) {
        self.sift_up(i, moving.time, moving.seq, moving.slot_epoch);
    }

    /// Put `moving` in the hole at `i`, moved towards the leaves while a child is earlier
    /// ([`SlotHeap::sift_down`] with the entry in registers).
    #[inline(always)]
    fn place_down(&mut self, i: usize, moving: TimerEntry) {
        self.sift_down(i, moving.time, moving.seq, moving.slot_epoch);
    }

    /// The entry `(time, seq, slot_epoch)` into the hole at `i`, moved towards the root.
    /// Parents shift down into the hole; the entry is written once, at its final place. It
    /// comes as three words, not as a 24-byte entry, which would be passed through memory:
    /// the caller has just stored its words one by one, and the wider loads of the copy
    /// (16 bytes at once) would wait for them to reach the cache (store forwarding fails).
    fn sift_up(&mut self, mut i: usize, time: Ns, seq: u64, slot_epoch: u64) {
        let moving = TimerEntry {
            time,
            seq,
            slot_epoch,
        };
        let key = moving.key();
        while i > 0 {
            let parent = (i - 1) / 2;
            if key >= self.heap[parent].key() {
                break;
            }
            self.heap[i] = self.heap[parent];
            self.pos[self.heap[i].slot()] = i;
            i = parent;
        }
        self.heap[i] = moving;
        self.pos[moving.slot()] = i;
    }

    /// [`SlotHeap::sift_up`] towards the leaves: moved down while a child is earlier.
    fn sift_down(&mut self, mut i: usize, time: Ns, seq: u64, slot_epoch: u64) {
        let moving = TimerEntry {
            time,
            seq,
            slot_epoch,
        };
        let heap = &mut self.heap[..];
        let pos = &mut self.pos[..];
        let n = heap.len();
        let key = moving.key();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && heap[r].key() < heap[l].key() {
                r
            } else {
                l
            };
            if heap[c].key() >= key {
                break;
            }
            heap[i] = heap[c];
            pos[heap[i].slot()] = i;
            i = c;
        }
        heap[i] = moving;
        pos[moving.slot()] = i;
    }
}

/// Pending events.
#[derive(Debug, Default)]
pub struct EventQueue {
    timers: SlotHeap,
    once: BinaryHeap<Entry>,
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

    /// Post `event` at `time`. A per-CPU timer replaces the one of its kind pending for
    /// that CPU.
    pub fn push(&mut self, time: Ns, event: Event) {
        self.seq += 1;
        let seq = self.seq;
        match event.slot() {
            Some((slot, epoch)) => self
                .timers
                .set(TimerEntry::new(time, seq, slot as u32, epoch)),
            None => self.once.push(Entry { time, seq, event }),
        }
    }

    /// Drop the pending balance event of `cpu`, if any.
    pub fn cancel_balance(&mut self, cpu: usize) {
        self.timers.remove(2 * cpu + 1);
    }

    pub fn pop(&mut self) -> Option<(Ns, Event)> {
        let from_timers = match (self.timers.peek(), self.once.peek()) {
            (None, None) => return None,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(a), Some(b)) => a.key() < b.key(),
        };
        let (time, event) = if from_timers {
            let e = self.timers.pop()?;
            (e.time, Event::of_slot(e.slot() as u32, e.epoch()))
        } else {
            let e = self.once.pop()?;
            (e.time, e.event)
        };
        self.popped += 1;
        Some((time, event))
    }

    pub fn peek_time(&self) -> Option<Ns> {
        let a = self.timers.peek().map(|e| e.time);
        let b = self.once.peek().map(|e| e.time);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn len(&self) -> usize {
        self.timers.len() + self.once.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    #[test]
    fn a_cpu_timer_replaces_its_pending_one_and_keeps_fifo_with_others() {
        let mut q = EventQueue::new();
        q.push(7, Event::CpuBoundary { cpu: 1, epoch: 1 });
        q.push(5, Event::Wake { task: 9 });
        q.push(3, Event::Balance { cpu: 1, epoch: 1 });
        // Re-posted later, then earlier: only the last one stays.
        q.push(9, Event::CpuBoundary { cpu: 1, epoch: 2 });
        q.push(5, Event::CpuBoundary { cpu: 1, epoch: 3 });
        q.push(4, Event::CpuBoundary { cpu: 0, epoch: 1 });
        q.cancel_balance(1);
        q.cancel_balance(7); // nothing pending there: no effect
        assert_eq!(q.len(), 3);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (4, Event::CpuBoundary { cpu: 0, epoch: 1 }),
                // Same time: the wake-up was posted first.
                (5, Event::Wake { task: 9 }),
                (5, Event::CpuBoundary { cpu: 1, epoch: 3 }),
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn slot_heap_matches_a_sorted_reference() {
        // Deterministic pseudo-random posts, replacements and cancels over 64 slots against
        // a reference that keeps the latest entry per slot.
        let mut q = EventQueue::new();
        let mut reference: std::collections::BTreeMap<u32, (Ns, u64)> = Default::default();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut seq = 0u64;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let cpu = (x % 64) as u32;
            let time = (x >> 8) % 1000;
            if x % 7 == 0 {
                q.cancel_balance(cpu as usize);
                continue;
            }
            seq += 1;
            q.push(time, Event::CpuBoundary { cpu, epoch: 0 });
            reference.insert(cpu, (time, seq));
        }
        let mut expect: Vec<(Ns, u64, u32)> =
            reference.iter().map(|(&c, &(t, s))| (t, s, c)).collect();
        expect.sort_unstable();
        let got: Vec<u32> = std::iter::from_fn(|| q.pop())
            .map(|(_, e)| match e {
                Event::CpuBoundary { cpu, .. } => cpu,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(got, expect.iter().map(|e| e.2).collect::<Vec<_>>());
    }

    #[test]
    fn pops_interleaved_with_posts_match_a_reference() {
        // Pops leave the root vacant: posts (same CPU or another, new or replacing), cancels,
        // peeks and one-shot events in between must see exactly the live entries.
        let mut q = EventQueue::new();
        let mut reference: std::collections::BTreeMap<(u32, bool), (Ns, u64)> = Default::default();
        let mut once: Vec<(Ns, u64, u32)> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let (mut seq, mut now) = (0u64, 0 as Ns);
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let cpu = (x % 16) as u32;
            let at = now + (x >> 8) % 50;
            match x % 11 {
                0..=3 => {
                    let expect = reference
                        .iter()
                        .map(|(&(c, b), &(t, s))| (t, s, Some((c, b))))
                        .chain(once.iter().map(|&(t, s, _)| (t, s, None)))
                        .min();
                    assert_eq!(q.peek_time(), expect.map(|e| e.0));
                    let got = q.pop();
                    let Some((t, s, which)) = expect else {
                        assert_eq!(got, None);
                        continue;
                    };
                    let (gt, ev) = got.expect("an event is pending");
                    assert_eq!(gt, t);
                    now = t;
                    match which {
                        Some(key) => {
                            reference.remove(&key);
                            let cpu_of = match ev {
                                Event::CpuBoundary { cpu, .. } => (cpu, false),
                                Event::Balance { cpu, .. } => (cpu, true),
                                other => panic!("unexpected {other:?}"),
                            };
                            assert_eq!(cpu_of, key);
                        }
                        None => {
                            let i = once.iter().position(|e| e.1 == s).expect("pending");
                            assert_eq!(ev, Event::Timer { id: once[i].2 });
                            once.remove(i);
                        }
                    }
                }
                4 => {
                    q.cancel_balance(cpu as usize);
                    reference.remove(&(cpu, true));
                }
                5 => {
                    seq += 1;
                    q.push(at, Event::Timer { id: cpu });
                    once.push((at, seq, cpu));
                }
                k => {
                    seq += 1;
                    let balance = k % 2 == 0;
                    let ev = if balance {
                        Event::Balance { cpu, epoch: 0 }
                    } else {
                        Event::CpuBoundary { cpu, epoch: 0 }
                    };
                    q.push(at, ev);
                    reference.insert((cpu, balance), (at, seq));
                }
            }
            assert_eq!(q.len(), reference.len() + once.len());
        }
    }
}
