//! Periodic balance ticks: each CPU's ticks fall on its own grid, busy CPUs at the busy
//! interval, idle ones at the idle interval, and idle CPUs with nothing to pull post nothing
//! (they are "parked" until some runqueue holds a waiting task).

use super::Kernel;
use super::sched_api::{CpuScheduler, IdleType};
use crate::engine::Event;
use topo::CpuId;

impl Kernel {
    /// Post the next periodic balance event for `cpu` (busy or idle interval), aligned to
    /// the tick grid as the kernel's `jiffies % interval` test is.
    pub(crate) fn schedule_balance(&mut self, s: &dyn CpuScheduler, cpu: CpuId) {
        self.set_parked(cpu, false);
        let idle = self.rqs[cpu].curr.is_none();
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
        let at = phase + m * tick.get();
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
        let idle = self.rqs[cpu].curr.is_none();
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
        self.schedule_balance(s, cpu);
    }
}
