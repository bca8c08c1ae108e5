//! Step 5, *slices*: the threads of a homed, CPU-bound process take long turns.
//!
//! Linux's fair class gives every task the same short request (EEVDF's base slice, 3 ms from
//! eight CPUs on). Two CPU-bound jobs that share a CPU then alternate every 3 ms, and each turn
//! begins by fetching again the lines of the last-level cache that the other's turn evicted:
//! on a job whose data fills that cache, most of a 3 ms turn (docs/model/caches.md, "Turns on a
//! cache"; docs/BENCH.md, "What a turn costs on this host"). The O(1) scheduler gave such a
//! task 100 ms. From 6.12 a task may ask for its own slice (`sched_attr.sched_runtime`, clamped
//! to 0.1-100 ms); a task with a shorter slice that wakes up still preempts one with a longer
//! slice (`PREEMPT_SHORT`), so the others' latency is kept.
//!
//! A homed process gets `slice_ms` when it is *CPU-bound*, every thread runnable (running or
//! waiting on a run queue) for at least [`CPU_BOUND`] of the interval, so that it never sleeps
//! and nothing of its own waits on its wake-up latency; and *taking turns*, its threads waiting
//! on a run queue for at least `slice_wait` (0.25) of the interval, as two CPU-bound threads sharing a
//! CPU each wait half of it. A thread with a CPU to itself gains nothing from a long slice,
//! and beside short tasks that come and go it would only leave them longer stretches. It
//! keeps the slice while its threads stay runnable at least [`KEEP`] and waiting at least
//! [`KEEP_TURNS`] of `slice_wait` on average (a pause does not flip it), and gets the kernel's
//! default back when they sleep or run alone, or when it loses its home.

use super::{Decision, HomenodePolicy, comm};
use crate::action::Action;
use crate::common::Proc;

/// Share of the interval every thread must have been runnable for the process to count as
/// CPU-bound.
pub const CPU_BOUND: f64 = 0.9;

/// Share of the interval its threads must stay runnable, on average, to keep the slice.
pub const KEEP: f64 = 0.5;

/// The share of `slice_wait` its threads must still wait, on average, to keep the slice.
pub const KEEP_TURNS: f64 = 0.4;

impl HomenodePolicy {
    /// The slice `p` should have, ns, and why.
    fn wanted_slice(
        &self,
        p: &Proc,
        homed: bool,
        have: u64,
        wait_measured: bool,
    ) -> (u64, &'static str) {
        if !homed {
            return (0, "it has no home");
        }
        let ns = (self.cfg.slice_ms * 1e6).round() as u64;
        if have > 0 && !wait_measured {
            // A reading without run-queue wait (a daemon that just started and adopted the
            // slice from its journal) cannot tell a squeezed job from a sleeping one.
            return (ns, "kept: its run-queue wait is not measured yet");
        }
        let threads = f64::from(p.threads.max(1));
        let (busy, turns) = if have > 0 {
            (KEEP, KEEP_TURNS * self.cfg.slice_wait)
        } else {
            (CPU_BOUND, self.cfg.slice_wait)
        };
        if p.runnable() < busy * threads {
            return (0, "its threads sleep");
        }
        if p.wait < turns * threads {
            return (0, "its threads have their CPUs to themselves");
        }
        (
            ns,
            "homed, CPU-bound and taking turns: every thread runnable nearly all the time, waiting for a CPU part of it",
        )
    }

    /// Asks for the slices that changed.
    pub(super) fn slices(&self, d: &mut Decision<'_, '_>) {
        for (i, p) in d.procs.iter().enumerate() {
            if p.leave_alone {
                continue;
            }
            let have = d.snap.processes[p.idx].slice_ns;
            if self.cfg.slice_ms <= 0.0 && have == 0 {
                continue;
            }
            let (want, why) = self.wanted_slice(
                p,
                d.homes[i].is_some(),
                have,
                d.snap.processes[p.idx].cpu_wait.is_some(),
            );
            if want == have {
                continue;
            }
            let reason = if want > 0 {
                format!(
                    "slice: pid {} ({}) is {why} ({:.2} CPUs wanted by {} threads, {:.2} of them waiting)",
                    p.pid,
                    comm(d.snap, p),
                    p.runnable(),
                    p.threads,
                    p.wait
                )
            } else {
                format!(
                    "slice: pid {} ({}): {why} ({:.2} CPUs wanted by {} threads, {:.2} of them waiting)",
                    p.pid,
                    comm(d.snap, p),
                    p.runnable(),
                    p.threads,
                    p.wait
                )
            };
            d.actions.push(Action::SetSlice {
                pid: p.pid,
                start_time: p.start_time,
                slice_ns: want,
                reason,
            });
        }
    }
}
