//! The waiting tasks of a runqueue ([`RunList`]).

use super::TaskId;
use std::collections::VecDeque;

/// Runqueue order: (round, priority, sequence). Tasks whose slice expired wait for the next
/// round (the O(1) scheduler's expired array); lower priority values run first; FIFO within.
pub type RqKey = (u64, i32, u64);

/// The waiting tasks of one runqueue, ordered by [`RqKey`] (ties, which sequence numbers
/// rule out, by task).
///
/// Two layouts of the same total order on (key, task):
///
/// - **Sorted** (the fair class, whose keys are virtual times or deadlines, all different): a
///   sorted vector with a moving head. A runqueue holds a few to a few dozen tasks (hundreds
///   in a message storm), the next to run leaves from the front (the head moves, the buffer
///   is compacted once half of it has left) and a newly queued one mostly joins at the back
///   (a later deadline), so a binary search on one slice and a short shift beat a tree's node
///   allocations.
/// - **Levels** (the other bases): one FIFO per (round, priority) present, as the O(1)
///   scheduler's priority arrays. Sequence numbers only grow, so a task joins at the back of
///   its level, the next to run leaves the front of the first level and a woken interactive
///   task no longer shifts the tasks queued behind it.
#[derive(Clone, Debug)]
pub struct RunList {
    repr: Repr,
    len: usize,
    /// Counts the changes of membership (see [`RunList::changes`]).
    changes: u64,
}

#[derive(Clone, Debug)]
enum Repr {
    Sorted {
        /// Sorted; the entries before `head` have left.
        v: Vec<(RqKey, TaskId)>,
        head: usize,
    },
    Levels {
        /// The non-empty levels, in decreasing (round, priority): the next to run is at the
        /// front of the last one.
        levels: Vec<Level>,
        /// Buffers of levels that emptied, for the next new level.
        spare: Vec<VecDeque<(u64, TaskId)>>,
    },
}

/// The tasks of one (round, priority), as (sequence, task) in increasing order.
#[derive(Clone, Debug)]
struct Level {
    round: u64,
    prio: i32,
    q: VecDeque<(u64, TaskId)>,
}

impl Level {
    /// Where `(round, prio)` goes in levels kept in decreasing order.
    fn cmp_key(&self, round: u64, prio: i32) -> std::cmp::Ordering {
        (round, prio).cmp(&(self.round, self.prio))
    }
}

impl Default for RunList {
    fn default() -> Self {
        Self::sorted()
    }
}

impl RunList {
    /// A list kept as one sorted vector (any keys).
    pub fn sorted() -> Self {
        RunList {
            repr: Repr::Sorted {
                v: Vec::new(),
                head: 0,
            },
            len: 0,
            changes: 0,
        }
    }

    /// A list kept as FIFOs per (round, priority): for keys whose rounds and priorities take
    /// few values.
    pub fn levels() -> Self {
        RunList {
            repr: Repr::Levels {
                levels: Vec::new(),
                spare: Vec::new(),
            },
            len: 0,
            changes: 0,
        }
    }

    /// Queue `t` under `key`. The key goes on in registers ([`RunList::push_parts`]): a
    /// 24-byte key is passed through memory, and the caller, which has just stored it there
    /// field by field, also copies it into the task (`rq_key`) with wider loads that wait
    /// for those stores to reach the cache (store forwarding fails).
    #[inline(always)]
    pub fn push(&mut self, key: RqKey, t: TaskId) {
        self.push_parts(key.0, key.1, key.2, t);
    }

    /// [`RunList::push`] of the key `(round, prio, seq)`.
    fn push_parts(&mut self, round: u64, prio: i32, seq: u64, t: TaskId) {
        let key = (round, prio, seq);
        self.changes += 1;
        self.len += 1;
        match &mut self.repr {
            Repr::Sorted { v, head } => {
                let e = (key, t);
                // Sequence numbers only grow, so a task mostly joins at the back.
                if v.last().is_none_or(|b| *b < e) || *head == v.len() {
                    v.push(e);
                } else {
                    match v[*head..].binary_search(&e) {
                        Err(i) => v.insert(*head + i, e),
                        Ok(_) => self.len -= 1,
                    }
                }
            }
            Repr::Levels { levels, spare } => {
                let (round, prio, seq) = key;
                let e = (seq, t);
                // Mostly the level of the next to run (the last): tried before the search.
                let found = match levels.last() {
                    Some(l) if l.round == round && l.prio == prio => Ok(levels.len() - 1),
                    _ => levels.binary_search_by(|l| l.cmp_key(round, prio)),
                };
                match found {
                    Ok(i) => {
                        let q = &mut levels[i].q;
                        if q.back().is_none_or(|b| *b < e) {
                            q.push_back(e);
                        } else {
                            match q.binary_search(&e) {
                                Err(j) => q.insert(j, e),
                                Ok(_) => self.len -= 1,
                            }
                        }
                    }
                    Err(i) => {
                        let mut q = spare.pop().unwrap_or_default();
                        q.push_back(e);
                        levels.insert(i, Level { round, prio, q });
                    }
                }
            }
        }
    }

    pub fn remove(&mut self, key: RqKey, t: TaskId) -> bool {
        let found = match &mut self.repr {
            Repr::Sorted { v, head } => match v[*head..].binary_search(&(key, t)) {
                Ok(i) => {
                    v.remove(*head + i);
                    Self::compact(v, head);
                    true
                }
                Err(_) => false,
            },
            Repr::Levels { levels, spare } => {
                let (round, prio, seq) = key;
                match levels.binary_search_by(|l| l.cmp_key(round, prio)) {
                    Ok(i) => match levels[i].q.binary_search(&(seq, t)) {
                        Ok(j) => {
                            levels[i].q.remove(j);
                            if levels[i].q.is_empty() {
                                spare.push(levels.remove(i).q);
                            }
                            true
                        }
                        Err(_) => false,
                    },
                    Err(_) => false,
                }
            }
        };
        if found {
            self.changes += 1;
            self.len -= 1;
        }
        found
    }

    /// Take the task that runs next.
    pub fn pop_first(&mut self) -> Option<TaskId> {
        self.changes += 1;
        let t = match &mut self.repr {
            Repr::Sorted { v, head } => {
                let (_, t) = *v.get(*head)?;
                *head += 1;
                Self::compact(v, head);
                t
            }
            Repr::Levels { levels, spare } => {
                let last = levels.last_mut()?;
                let (_, t) = last.q.pop_front()?;
                if last.q.is_empty() {
                    if let Some(l) = levels.pop() {
                        spare.push(l.q);
                    }
                }
                t
            }
        };
        self.len -= 1;
        Some(t)
    }

    /// Drop the entries that left once they are half of the buffer.
    fn compact(v: &mut Vec<(RqKey, TaskId)>, head: &mut usize) {
        if *head == v.len() {
            v.clear();
            *head = 0;
        } else if *head >= 16 && 2 * *head >= v.len() {
            v.drain(..*head);
            *head = 0;
        }
    }

    /// A number that changes whenever a task joins or leaves the list: while it stays the
    /// same, so do the tasks waiting (balancers cache what they count over them).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Waiting tasks, next to run first.
    pub fn iter(&self) -> RunIter<'_> {
        let repr = match &self.repr {
            Repr::Sorted { v, head } => IterRepr::Sorted(v[*head..].iter()),
            Repr::Levels { levels, .. } => IterRepr::Levels {
                levels: levels.iter().rev(),
                cur: None,
            },
        };
        RunIter {
            repr,
            left: self.len,
        }
    }

    /// With the levels layout, the waiting tasks in the O(1) balancer's order (later round
    /// first, then lower priority, newest first: ascending (round reversed, priority,
    /// sequence reversed), sequence numbers being unique), read off the levels; None with
    /// the sorted layout.
    pub fn pull_order(&self) -> Option<Vec<TaskId>> {
        let Repr::Levels { levels, .. } = &self.repr else {
            return None;
        };
        let mut out = Vec::with_capacity(self.len);
        // The levels are in decreasing (round, priority): each round's run of levels, from
        // the first, read backwards.
        let mut end = 0;
        while end < levels.len() {
            let start = end;
            while end < levels.len() && levels[end].round == levels[start].round {
                end += 1;
            }
            for l in levels[start..end].iter().rev() {
                out.extend(l.q.iter().rev().map(|e| e.1));
            }
        }
        Some(out)
    }
}

/// [`RunList::iter`]: waiting tasks, next to run first.
pub struct RunIter<'a> {
    repr: IterRepr<'a>,
    /// Tasks not yet returned.
    left: usize,
}

enum IterRepr<'a> {
    Sorted(std::slice::Iter<'a, (RqKey, TaskId)>),
    Levels {
        levels: std::iter::Rev<std::slice::Iter<'a, Level>>,
        cur: Option<std::collections::vec_deque::Iter<'a, (u64, TaskId)>>,
    },
}

impl Iterator for RunIter<'_> {
    type Item = TaskId;

    #[inline]
    fn next(&mut self) -> Option<TaskId> {
        let t = match &mut self.repr {
            IterRepr::Sorted(it) => it.next().map(|e| e.1),
            IterRepr::Levels { levels, cur } => loop {
                if let Some(e) = cur.as_mut().and_then(|c| c.next()) {
                    break Some(e.1);
                }
                match levels.next() {
                    Some(l) => *cur = Some(l.q.iter()),
                    None => break None,
                }
            },
        }?;
        self.left -= 1;
        Some(t)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for RunIter<'_> {}

#[cfg(test)]
mod tests {
    use super::{RqKey, RunList};

    /// Both layouts keep the same order through pushes, removals from the middle and pops,
    /// with rounds and priorities that repeat (and a few keys out of sequence); the levels
    /// give the balancer's order.
    #[test]
    fn levels_keep_the_sorted_order() {
        let (mut a, mut b) = (RunList::sorted(), RunList::levels());
        let mut queued: Vec<(RqKey, usize)> = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut seq, mut round) = (0u64, 0u64);
        for step in 0..20_000 {
            let r = next() % 10;
            if r < 5 {
                seq += 1;
                // Unique, as the kernel's: mostly growing, sometimes behind.
                let s = if next() % 50 == 0 {
                    4 * (seq / 2) + 1 + seq % 2
                } else {
                    4 * seq
                };
                let key = (round + next() % 2, 110 + (next() % 12) as i32, s);
                let t = step;
                a.push(key, t);
                b.push(key, t);
                queued.push((key, t));
            } else if r < 7 && !queued.is_empty() {
                let (key, t) = queued.swap_remove((next() % queued.len() as u64) as usize);
                assert!(a.remove(key, t));
                assert!(b.remove(key, t));
                assert!(!b.remove(key, t));
            } else {
                let first = a.iter().next();
                assert_eq!(a.pop_first(), first);
                assert_eq!(b.pop_first(), first);
                if let Some(t) = first {
                    let i = queued.iter().position(|e| e.1 == t).unwrap();
                    round = round.max(queued.swap_remove(i).0.0);
                }
            }
            assert_eq!(a.len(), b.len());
            assert_eq!(a.changes(), b.changes());
            assert!(a.iter().eq(b.iter()));
            assert_eq!(b.iter().len(), b.len());
            assert_eq!(a.pull_order(), None);
            let mut pull: Vec<(RqKey, usize)> = queued.clone();
            pull.sort_by_key(|&((round, prio, seq), t)| {
                (std::cmp::Reverse(round), prio, std::cmp::Reverse(seq), t)
            });
            let pull: Vec<usize> = pull.into_iter().map(|e| e.1).collect();
            assert_eq!(b.pull_order(), Some(pull));
        }
    }
}
