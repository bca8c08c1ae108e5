//! Periodic balance ticks: each CPU's ticks fall on its own grid, busy CPUs at the busy
//! interval, idle ones at the idle interval, and idle CPUs with nothing to pull post nothing
//! (they are "parked" until some runqueue holds a waiting task).
//!
//! An idle CPU that has something to pull but may not take it (a node-affine scheduler's
//! tasks stay on their homenode) ticks on, and each pass finds the same nothing. When the
//! scheduler promises that its next passes repeat the last one while nothing they read
//! changes ([`CpuScheduler::idle_quiet`]), the CPU goes *quiet*: no tick is posted. When
//! [`Kernel::balance_inputs`] changes, the engine ends every quiet CPU at once: the scheduler
//! accounts the ticks skipped up to that instant ([`CpuScheduler::replay_quiet`]), and the
//! CPU's next tick is posted on its grid as if it had ticked all along. A promise bounded in
//! time ends with a tick posted at its bound. A skipped tick at the very instant of a change
//! is taken to come before the change; a tick that ran would come before or after it by
//! the order of posting, which the grids' random phases make a tie of measure zero.

use super::Kernel;
use super::sched_api::{CpuScheduler, IdleType};
use crate::engine::Event;
use crate::time::Ns;
use topo::CpuId;

/// What the balancing passes read that only a handled event changes: the runqueues (any
/// change bumps its node's count), where memory is, the homes and the affinities.
pub type BalanceInputs = (u64, u64, u64, u64);

/// The quiet CPUs (module doc).
#[derive(Clone, Debug)]
pub struct QuietTicks {
    /// Whether idle CPUs may go quiet (on unless a caller samples the run at times of its
    /// own between events, where a skipped tick would change which event comes first).
    pub enabled: bool,
    /// The quiet CPUs, in the order they went quiet.
    cpus: Vec<CpuId>,
    /// Per CPU, while quiet: its skipped ticks.
    at: Vec<Option<QuietCpu>>,
    /// The balance inputs when they went quiet (the same for all: any change ends them all).
    stamp: BalanceInputs,
    /// Idle ticks accounted without an event.
    pub replayed: u64,
}

/// A quiet CPU: its first skipped tick, the spacing of its idle ticks, and the epoch of its
/// balance event then (changed when anything else posts or cancels one).
#[derive(Clone, Copy, Debug)]
struct QuietCpu {
    first: Ns,
    every: Ns,
    epoch: u32,
}

impl QuietCpu {
    /// How many of its ticks fall before `to` (and at `to` when `inclusive`).
    fn ticks_to(&self, to: Ns, inclusive: bool) -> u64 {
        if to < self.first {
            return 0;
        }
        let n = (to - self.first) / self.every + 1;
        if !inclusive && self.first + (n - 1) * self.every == to {
            n - 1
        } else {
            n
        }
    }
}

impl QuietTicks {
    pub fn new(nr_cpus: usize) -> Self {
        QuietTicks {
            enabled: true,
            cpus: Vec::new(),
            at: vec![None; nr_cpus],
            stamp: (0, 0, 0, 0),
            replayed: 0,
        }
    }

    /// Whether `cpu` is quiet.
    pub fn is_quiet(&self, cpu: CpuId) -> bool {
        self.at[cpu].is_some()
    }

    /// Whether some CPU is quiet.
    pub fn any(&self) -> bool {
        !self.cpus.is_empty()
    }
}

impl Kernel {
    /// Post the next periodic balance event for `cpu` (busy or idle interval), aligned to
    /// the tick grid as the kernel's `jiffies % interval` test is.
    pub(crate) fn schedule_balance(&mut self, s: &dyn CpuScheduler, cpu: CpuId) {
        self.set_parked(cpu, false);
        let idle = self.rqs[cpu].curr.is_none();
        let (at, _) = self.next_balance_tick(s, cpu, idle);
        let rq = &mut self.rqs[cpu];
        rq.balance_idle = idle;
        rq.balance_epoch = rq.balance_epoch.wrapping_add(1);
        self.events.push(
            at,
            Event::Balance {
                cpu: cpu as u32,
                epoch: rq.balance_epoch,
            },
        );
    }

    /// When `cpu`'s next balance tick after now falls (its busy or idle interval, on its tick
    /// grid), and the interval in ns.
    fn next_balance_tick(&self, s: &dyn CpuScheduler, cpu: CpuId, idle: bool) -> (Ns, Ns) {
        let tick = self.tick_div();
        let every = tick.divide(s.balance_interval(self, cpu, idle)).max(1);
        let phase = self.rqs[cpu].tick_phase;
        let mut m = if self.now < phase {
            0
        } else {
            tick.divide(self.now - phase) + 1
        };
        if every > 1 {
            m = m.div_ceil(every) * every;
        }
        (phase + m * tick.get(), every * tick.get())
    }

    /// Mark whether `cpu` has no balance event pending, keeping the count of such CPUs.
    pub(super) fn set_parked(&mut self, cpu: CpuId, parked: bool) {
        if self.rqs[cpu].balance_parked != parked {
            self.rqs[cpu].balance_parked = parked;
            if parked {
                self.nr_parked += 1;
            } else {
                self.nr_parked -= 1;
            }
        }
    }

    pub(super) fn unpark(&mut self, cpu: CpuId) {
        self.set_parked(cpu, false);
        // Deferred: the scheduler is not at hand here, the event handler asks for the interval.
        let rq = &mut self.rqs[cpu];
        rq.balance_idle = true;
        rq.balance_epoch = rq.balance_epoch.wrapping_add(1);
        let tick = self.tick_div;
        let phase = rq.tick_phase;
        let m = if self.now < phase {
            0
        } else {
            tick.divide(self.now - phase) + 1
        };
        self.events.push(
            phase + m * tick.get(),
            Event::Balance {
                cpu: cpu as u32,
                epoch: rq.balance_epoch,
            },
        );
    }

    /// Some task is waiting for a CPU: idle CPUs resume their idle balance ticks.
    pub(super) fn unpark_balancers(&mut self) {
        if self.nr_parked == 0 {
            return;
        }
        for cpu in 0..self.rqs.len() {
            if self.rqs[cpu].balance_parked && self.rqs[cpu].curr.is_none() {
                self.unpark(cpu);
            }
        }
    }

    /// Handle a periodic balance event.
    pub(crate) fn on_balance(&mut self, s: &mut dyn CpuScheduler, cpu: CpuId) {
        if self.quiet.is_quiet(cpu) {
            // The tick a bounded promise ended at: the ones before it were skipped.
            self.end_quiet(s, cpu, self.now, false);
            self.quiet.cpus.retain(|&c| c != cpu);
        }
        let idle = self.rqs[cpu].curr.is_none();
        #[cfg(debug_assertions)]
        let before = self.balance_inputs();
        self.counters.balance_calls += 1;
        s.balance(
            self,
            cpu,
            if idle { IdleType::Idle } else { IdleType::Busy },
        );
        if self.rqs[cpu].curr.is_none() && self.nr_waiting == 0 {
            self.set_parked(cpu, true);
            return;
        }
        // A promise comes only from a pass that changed nothing the passes read (it took
        // nothing; the scheduler knows), so the inputs the CPU goes quiet with are those it
        // was judged on.
        if idle && self.quiet.enabled && self.rqs[cpu].curr.is_none() {
            if let Some(until) = s.idle_quiet(self, cpu) {
                #[cfg(debug_assertions)]
                debug_assert_eq!(before, self.balance_inputs(), "a promise after a move");
                self.go_quiet(s, cpu, until);
                return;
            }
        }
        self.schedule_balance(s, cpu);
    }

    /// See [`BalanceInputs`].
    pub fn balance_inputs(&self) -> BalanceInputs {
        (
            self.node_rq_changes.iter().sum(),
            self.mem.version(),
            self.home_changes,
            self.affinity_changes,
        )
    }

    /// `cpu` just ran an idle tick and its scheduler promised the next ones until `until`:
    /// post nothing, or the first tick at or after `until`.
    fn go_quiet(&mut self, s: &dyn CpuScheduler, cpu: CpuId, until: Ns) {
        let inputs = self.balance_inputs();
        debug_assert!(
            !self.quiet.any() || self.quiet.stamp == inputs,
            "the inputs changed with CPUs quiet"
        );
        self.quiet.stamp = inputs;
        // The ticks `schedule_balance` would post from here on.
        let (first, every) = self.next_balance_tick(s, cpu, true);
        let rq = &mut self.rqs[cpu];
        rq.balance_idle = true;
        rq.balance_epoch = rq.balance_epoch.wrapping_add(1);
        let epoch = rq.balance_epoch;
        if until != Ns::MAX {
            let k = until.saturating_sub(first).div_ceil(every);
            self.events.push(
                first + k * every,
                Event::Balance {
                    cpu: cpu as u32,
                    epoch,
                },
            );
        }
        self.quiet.at[cpu] = Some(QuietCpu {
            first,
            every,
            epoch,
        });
        self.quiet.cpus.push(cpu);
    }

    /// End `cpu`'s quiet: the scheduler accounts its ticks skipped up to `to` (with a tick at
    /// `to` itself when `inclusive`). Returns what it was and how many ticks were skipped.
    /// Leaves `quiet.cpus` to the caller.
    fn end_quiet(
        &mut self,
        s: &mut dyn CpuScheduler,
        cpu: CpuId,
        to: Ns,
        inclusive: bool,
    ) -> Option<(QuietCpu, u64)> {
        let q = self.quiet.at[cpu].take()?;
        let n = q.ticks_to(to, inclusive);
        s.replay_quiet(self, cpu, q.first, q.every, n);
        self.counters.balance_calls += n;
        self.quiet.replayed += n;
        Some((q, n))
    }

    /// End every quiet CPU now, its ticks up to this instant skipped (with one at this very
    /// instant when `inclusive`: the balance inputs changed at this instant, and the tick is
    /// taken to come first), and post each one's next tick on its grid unless something
    /// else has posted or cancelled it since, or `repost` is false (the run ended).
    pub(crate) fn wake_quiet(&mut self, s: &mut dyn CpuScheduler, inclusive: bool, repost: bool) {
        let mut cpus = std::mem::take(&mut self.quiet.cpus);
        for &cpu in &cpus {
            let Some((q, n)) = self.end_quiet(s, cpu, self.now, inclusive) else {
                continue;
            };
            let rq = &mut self.rqs[cpu];
            if !repost || rq.balance_epoch != q.epoch || rq.curr.is_some() {
                continue;
            }
            rq.balance_epoch = rq.balance_epoch.wrapping_add(1);
            self.events.push(
                q.first + n * q.every,
                Event::Balance {
                    cpu: cpu as u32,
                    epoch: rq.balance_epoch,
                },
            );
        }
        cpus.clear();
        self.quiet.cpus = cpus;
    }

    /// While the balance inputs are those the quiet CPUs went quiet with (else the next step
    /// ends them all), each is idle, has tasks to look at, and is not parked.
    pub(super) fn quiet_invariants(&self) -> Result<(), super::InvariantError> {
        if !self.quiet.any() || self.quiet_broken() {
            return Ok(());
        }
        for &cpu in &self.quiet.cpus {
            let why = if !self.quiet.is_quiet(cpu) {
                "it has no quiet spell"
            } else if self.rqs[cpu].curr.is_some() {
                "it runs a task"
            } else if self.rqs[cpu].balance_parked {
                "it is parked"
            } else if self.nr_waiting == 0 {
                "no task waits"
            } else {
                continue;
            };
            return Err(super::InvariantError::QuietCpu { cpu, why });
        }
        let listed = self.quiet.at.iter().filter(|q| q.is_some()).count();
        if listed != self.quiet.cpus.len() {
            return Err(super::InvariantError::QuietCpu {
                cpu: self.quiet.at.iter().position(Option::is_some).unwrap_or(0),
                why: "the list of quiet CPUs misses it",
            });
        }
        Ok(())
    }

    /// Whether the balance inputs moved since the quiet CPUs went quiet.
    pub(crate) fn quiet_broken(&self) -> bool {
        self.quiet.any() && self.balance_inputs() != self.quiet.stamp
    }
}

#[cfg(test)]
mod tests {
    use super::QuietCpu;

    #[test]
    fn a_quiet_spell_counts_the_ticks_on_its_grid_up_to_a_time() {
        let q = QuietCpu {
            first: 1_000,
            every: 100,
            epoch: 0,
        };
        // Before the first skipped tick: none, whether or not the end counts.
        assert_eq!(q.ticks_to(999, true), 0);
        assert_eq!(q.ticks_to(1_000, false), 0);
        // On a tick: it counts only when inclusive (a change at that instant comes after it).
        assert_eq!(q.ticks_to(1_000, true), 1);
        assert_eq!(q.ticks_to(1_300, true), 4);
        assert_eq!(q.ticks_to(1_300, false), 3);
        // Between ticks: the same either way.
        assert_eq!(q.ticks_to(1_350, true), 4);
        assert_eq!(q.ticks_to(1_350, false), 4);
    }
}
