//! Step 4, *memory*: bring remote memory home, largest remote share first, in `MoveMemory`
//! batches of at most `batch_mib`, at most `move_rate_mib_s` x interval in total, each batch
//! to the nearest home node with room. A request is judged once fresh per-node figures are in:
//! memory on a node that did not shrink by half of what was asked, twice in a row (pinned
//! pages, a memory policy of its own), is left alone there for `move_retry_s`, so the budget
//! goes to memory that moves.
//!
//! With the kernel's NUMA balancing active for a process, the kernel migrates its pages to the
//! node of the CPU that touches them, from the process's own threads, in parallel, and once
//! homenode has set its CPUs that node is the home. Moving the same memory from the daemon's
//! one thread as well only adds copies and delays, so `defer_to_kernel` gives the kernel the
//! first decision after a home is set, and every later one in which it was seen keeping up
//! (moving home at least half of what homenode's own budget would have); homenode moves what
//! the kernel leaves.

use topo::NodeId;

use super::{Decision, HomenodePolicy, KernelWatch, PidState};
use crate::action::Action;
use crate::common::{MIB, fmt_bytes, fmt_home, nearest_first};

/// Remote memory of one process on one node, a candidate for moving home.
struct Chunk {
    /// Bytes on `from`.
    remote: u64,
    /// Index of the process in the decision.
    i: usize,
    from: NodeId,
}

impl HomenodePolicy {
    /// `MoveMemory` batches within the interval's budget, largest remote share first.
    pub(super) fn memory_moves(&mut self, d: &Decision<'_, '_>) -> Vec<Action> {
        let cfg = &self.cfg;
        let topo = d.snap.topo;
        let now = d.snap.now_ns;
        let mib = MIB as f64;
        let budget_f = cfg.move_rate_mib_s as f64 * mib * (d.budget_ns as f64 / 1e9);
        // First looks since the last decision spent part of this interval's budget.
        let mut budget: u64 = if budget_f.is_finite() {
            (budget_f as u64).saturating_sub(self.look_moved)
        } else {
            0
        };
        let batch = cfg.batch_mib.saturating_mul(MIB);
        let headroom = cfg.headroom_mib.saturating_mul(MIB);

        let chunks = self.remote_chunks(d);
        let mut room: Vec<u64> =
            d.m.free
                .iter()
                .map(|&f| f.saturating_sub(headroom))
                .collect();
        let mut out = Vec::new();
        let spent = format!(
            "this interval's budget ({} at move_rate_mib_s) is spent",
            fmt_bytes(budget)
        );
        for Chunk { remote, i, from } in chunks {
            if budget == 0 {
                self.note_held(d, i, remote, from, &spent);
                continue;
            }
            let p = &d.procs[i];
            let home = d.homes[i].as_deref().unwrap_or(&[]);
            // Nearest home node first; among equally near ones, the one with most room.
            let targets = nearest_first(topo, from, home, |a, b| room[b].cmp(&room[a]));
            let mut left = remote;
            let mut asked = 0u64;
            for to in targets {
                while left > 0 && budget > 0 && room[to] > 0 {
                    let b = left.min(batch).min(budget).min(room[to]);
                    left -= b;
                    budget -= b;
                    room[to] -= b;
                    asked += b;
                    out.push(Action::MoveMemory {
                        pid: p.pid,
                        start_time: p.start_time,
                        from,
                        to,
                        bytes: b,
                        reason: format!(
                            "memory home: pid {} ({}) has {} on node {from}, home {}; batch of {}, {} left on node {from} after it",
                            p.pid,
                            d.snap.processes[p.idx].comm,
                            fmt_bytes(remote),
                            fmt_home(home),
                            fmt_bytes(b),
                            fmt_bytes(left)
                        ),
                    });
                }
            }
            if left > 0 {
                let why = if budget == 0 {
                    spent.as_str()
                } else {
                    "no room on its home nodes (free memory minus headroom_mib)"
                };
                self.note_held(d, i, left, from, why);
            }
            if asked > 0 {
                if let Some(st) = self.procs.get_mut(&p.pid) {
                    st.requested.push((from, asked, p.bytes[from]));
                    st.requested_at_ns = now;
                }
            }
        }
        out
    }

    /// The remote memory of homed processes worth moving, largest first: judges last
    /// interval's requests, and leaves out nodes whose memory would not move.
    fn remote_chunks(&mut self, d: &Decision<'_, '_>) -> Vec<Chunk> {
        let now = d.snap.now_ns;
        let min_move = self.cfg.min_move_mib.saturating_mul(MIB).max(1);
        let retry_ns = (self.cfg.move_retry_s * 1e9) as u64;
        let mut chunks: Vec<Chunk> = Vec::new();
        let mut held: Vec<(usize, &str)> = Vec::new();
        let mut blocked: Vec<(usize, NodeId)> = Vec::new();
        for (i, p) in d.procs.iter().enumerate() {
            let Some(home) = d.homes[i].as_deref() else {
                continue;
            };
            if !d.eligible[i] {
                continue;
            }
            let Some(st) = self.procs.get_mut(&p.pid) else {
                continue;
            };
            // Judge last interval's requests once fresh per-node figures are in.
            let mut asked_total = 0u64;
            if !st.requested.is_empty() {
                if p.mem_sampled_ns > st.requested_at_ns {
                    for &(from, asked, had) in &st.requested {
                        asked_total = asked_total.saturating_add(asked);
                        let moved_half = p.bytes[from].saturating_add(asked / 2) <= had;
                        // One short move may be pages busy for a moment (the kernel's own
                        // migration of them); two in a row is memory that will not move.
                        if moved_half {
                            st.short.remove(&from);
                        } else if !st.short.insert(from) {
                            st.short.remove(&from);
                            st.blocked.insert(from, now.saturating_add(retry_ns));
                        }
                    }
                    st.requested.clear();
                } else {
                    // Wait for fresh figures.
                    held.push((i, "its last moves are not yet in its per-node figures"));
                    continue;
                }
            }
            st.blocked.retain(|_, until| *until > now);
            if self.cfg.defer_to_kernel
                && d.snap.numa_balancing
                && kernel_is_moving(
                    st,
                    home,
                    &p.bytes,
                    p.mem_sampled_ns,
                    asked_total,
                    (self.cfg.move_rate_mib_s as f64 * MIB as f64, min_move),
                )
            {
                held.push((
                    i,
                    "the kernel's NUMA balancing is moving it (defer_to_kernel)",
                ));
                continue;
            }
            for r in 0..d.m.n {
                if home.contains(&r) || p.bytes[r] < min_move {
                    continue;
                }
                if st.blocked.contains_key(&r) {
                    blocked.push((i, r));
                    continue;
                }
                chunks.push(Chunk {
                    remote: p.bytes[r],
                    i,
                    from: r,
                });
            }
        }
        for (i, why) in held {
            let home = d.homes[i].clone().unwrap_or_default();
            for r in 0..d.m.n {
                if !home.contains(&r) && d.procs[i].bytes[r] >= min_move {
                    self.note_held(d, i, d.procs[i].bytes[r], r, why);
                }
            }
        }
        for (i, r) in blocked {
            let why = "earlier moves from that node did not take (move_retry_s)";
            self.note_held(d, i, d.procs[i].bytes[r], r, why);
        }
        chunks.sort_by(|a, b| {
            b.remote
                .cmp(&a.remote)
                .then(d.procs[a.i].pid.cmp(&d.procs[b.i].pid))
                .then(a.from.cmp(&b.from))
        });
        chunks
    }
}

impl HomenodePolicy {
    /// Notes that `bytes` of process `i`'s memory on `from` stay there this interval, and why.
    fn note_held(&mut self, d: &Decision<'_, '_>, i: usize, bytes: u64, from: NodeId, why: &str) {
        let p = &d.procs[i];
        let home = d.homes[i].as_deref().unwrap_or(&[]);
        self.notes.push(format!(
            "pid {} ({}): {} on node {from} stays there this interval, home {}: {why}",
            p.pid,
            d.snap.processes[p.idx].comm,
            fmt_bytes(bytes),
            fmt_home(home),
        ));
    }
}

/// Whether the kernel's NUMA balancing is left the moving of this process's memory now: at
/// the first reading since its home was set, and at every later fresh reading that shows it
/// kept up with homenode, that is moved home, beyond what homenode itself asked to move
/// (`asked`), at least half of what homenode's own budget (`rate` bytes per second) would have
/// moved of it since the last reading, and at least `min_move`. Between fresh readings nothing
/// is judged and nothing moved. Updates the watch.
fn kernel_is_moving(
    st: &mut PidState,
    home: &[NodeId],
    bytes: &[u64],
    sampled_ns: u64,
    asked: u64,
    (rate, min_move): (f64, u64),
) -> bool {
    let remote: u64 = (0..bytes.len())
        .filter(|r| !home.contains(r))
        .map(|r| bytes[r])
        .sum();
    let seen = KernelWatch {
        home: home.to_vec(),
        remote,
        sampled_ns,
    };
    let Some(last) = st.kernel_watch.replace(seen) else {
        return true; // first look since the home was set: the kernel's turn
    };
    if last.home != home {
        return true;
    }
    if sampled_ns <= last.sampled_ns {
        st.kernel_watch = Some(last); // same figures: keep the older reading
        return true;
    }
    let budget = rate * (sampled_ns - last.sampled_ns) as f64 / 1e9;
    let pace = (last.remote as f64).min(budget) / 2.0;
    let by_kernel = last.remote.saturating_sub(remote).saturating_sub(asked);
    by_kernel >= min_move && by_kernel as f64 >= pace
}
