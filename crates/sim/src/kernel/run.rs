//! Running tasks: enqueue and dispatch, progress and accounting, time slices, preemption,
//! wake-ups and sleeps. Balance ticks are in `ticks.rs`, rates in `rates.rs`, the contention refresh in `refresh.rs`.

use super::fair::Placing;
use super::sched_api::{CpuScheduler, IdleType};
use super::task::{PhaseWork, TaskState};
use super::{Kernel, TaskId};
use crate::engine::Event;
use crate::time::Ns;
use topo::CpuId;

/// Work left below this many units counts as done (floating-point slack).
const EPS: f64 = 1e-6;

impl Kernel {
    /// Put a runnable task on `cpu`'s runqueue. With `wakeup`, it may preempt the current task.
    pub fn enqueue(&mut self, t: TaskId, cpu: CpuId, wakeup: bool) {
        let old = self.tasks[t].cpu;
        if old != cpu {
            let other_node = self.node_of(old) != self.node_of(cpu);
            let task = &mut self.tasks[t];
            self.counters.migrations += 1;
            task.migrations += 1;
            if other_node {
                self.counters.node_migrations += 1;
                task.node_migrations += 1;
            }
        }
        let key = if self.params.fair.is_some() {
            self.pelt_attach(t, cpu);
            self.pelt_sync_rq(cpu);
            self.pelt_task_state(t, true, false);
            let how = if !self.tasks[t].placed {
                Placing::New
            } else if wakeup {
                Placing::Wakeup
            } else {
                Placing::Migrated
            };
            self.tasks[t].placed = true;
            self.fair_place(t, cpu, how);
            (self.fair_key(t), 0, self.next_seq())
        } else {
            let prio = self.queue_prio(t, cpu);
            (self.rqs[cpu].round, prio, self.next_seq())
        };
        let task = &mut self.tasks[t];
        task.cpu = cpu;
        task.state = TaskState::Runnable;
        task.queued_at.get_or_insert(self.now);
        task.rq_key = key;
        self.rqs[cpu].queue.push(key, t);
        self.rq_changed(cpu);
        let fair = self.params.fair.is_some();
        if fair {
            self.fair_queued(cpu, t);
        }
        self.nr_waiting += 1;
        // The fair class checks preemption whenever a task joins a runqueue (wake-up, new
        // task, migration: `wakeup_preempt`); the older bases on wake-up only.
        let check = wakeup || fair;
        match self.rqs[cpu].curr {
            None => {
                self.resched(cpu);
                // More than this CPU can start at once: other idle CPUs may pull.
                if self.rqs[cpu].queue.len() > 1 {
                    self.unpark_balancers();
                }
            }
            Some(c) => {
                // The O(1) base's gain is the difference of the queued priorities, the
                // waking task's just computed for its key (`preemption_gain` would compute it
                // again, from the same sleep credit).
                let gain = |k: &Self| {
                    if fair || k.params.goodness.is_some() {
                        k.preemption_gain(t, cpu)
                    } else {
                        Some(k.tasks[c].rq_key.1 - key.1)
                    }
                };
                if check && gain(self).is_some_and(|g| g > 0) {
                    self.rqs[cpu].need_resched = true;
                    self.counters.preemptions += 1;
                    self.resched(cpu);
                } else if fair && self.custom_slices {
                    self.fair_shorten_protection(cpu, c, t);
                }
                self.unpark_balancers();
            }
        }
    }

    /// Ask `cpu` to reschedule now (through an event, so that no handler re-enters another).
    pub fn resched(&mut self, cpu: CpuId) {
        let rq = &mut self.rqs[cpu];
        if rq.boundary_at == Some(self.now) {
            return;
        }
        rq.epoch = rq.epoch.wrapping_add(1);
        rq.boundary_at = Some(self.now);
        self.events.push(
            self.now,
            Event::CpuBoundary {
                cpu: cpu as u32,
                epoch: rq.epoch,
            },
        );
    }

    /// Handle a boundary or reschedule event on `cpu`.
    pub(crate) fn on_boundary(&mut self, s: &mut dyn CpuScheduler, cpu: CpuId) {
        let rq = &mut self.rqs[cpu];
        rq.boundary_at = None;
        let Some(t) = rq.curr else {
            self.dispatch(s, cpu);
            return;
        };
        self.settle(t);
        let task = &self.tasks[t];
        let mut slice_left = task.slice_left;
        if task.cold_ns <= EPS && task.kernel_ns <= EPS && task.work_left <= EPS {
            self.complete_phase(s, t);
            self.advance(s, t);
            let task = &self.tasks[t];
            if task.state != TaskState::Running {
                self.put_curr(cpu);
                self.dispatch(s, cpu);
                return;
            }
            slice_left = task.slice_left;
        }
        let rq = &mut self.rqs[cpu];
        if slice_left == 0 {
            self.expire(cpu, t);
            self.dispatch(s, cpu);
        } else if std::mem::take(&mut rq.need_resched) && !rq.queue.is_empty() {
            self.put_curr(cpu);
            self.requeue(t, cpu, false);
            self.dispatch(s, cpu);
        } else {
            self.start_chunk(cpu, t);
        }
    }

    /// Current task leaves the CPU (blocked, exited or requeued).
    pub(super) fn put_curr(&mut self, cpu: CpuId) {
        if self.params.fair.is_some()
            && let Some(t) = self.rqs[cpu].curr
        {
            self.settle(t);
            self.fair_save_lag(t, cpu);
            self.pelt_sync_rq(cpu);
            self.pelt_task_state(t, false, false);
        }
        // One borrow of the runqueue for the take, the round and `rq_changed`'s count.
        let rq = &mut self.rqs[cpu];
        if let Some(t) = rq.curr.take() {
            let round = rq.round;
            let nr = rq.nr_running() as u32;
            let node = self.topo.node_of(cpu);
            self.node_rq_changes[node] += 1;
            self.nr_running[cpu] = nr;
            let task = &mut self.tasks[t];
            task.last_ran = self.now;
            // The marks are read only when the task comes back in a memory phase
            // (`charge_refill_after_turns`), which is the phase it leaves in: a task off its
            // CPU does not advance. Others (the message passers) skip the loads.
            if let Some(llc) = task.last_llc
                && task.work == PhaseWork::MemOps
            {
                task.llc_mark = self.llc_touched[llc];
                task.proc_mark = self.procs[task.pid].touched;
                task.turns.end(task.run_touched);
            }
            task.left_round = round;
            let mem = matches!(task.work, PhaseWork::MemOps | PhaseWork::Touch { .. });
            let exited = task.state == TaskState::Exited;
            if mem {
                self.mark_cpu_dirty(cpu);
            }
            if exited {
                self.pelt_detach_dead(t);
            }
        }
    }

    /// The slice of `t` ran out: a new slice, and the back of the queue (next round unless
    /// interactive, as the O(1) scheduler's expired array does, and next round even so once
    /// the expired tasks have starved long enough: `EXPIRED_STARVING`).
    fn expire(&mut self, cpu: CpuId, t: TaskId) {
        if self.params.fair.is_some() {
            self.put_curr(cpu);
            self.fair_renew(t);
            self.requeue(t, cpu, false);
            return;
        }
        let starving = self.expired_starving(cpu);
        self.put_curr(cpu);
        self.tasks[t].slice_left = self.params.timeslice;
        let next_round = !self.is_interactive(t) || starving;
        if next_round && self.rqs[cpu].expired_since.is_none() {
            self.rqs[cpu].expired_since = Some(self.now);
        }
        if starving && self.is_interactive(t) {
            self.counters.starvation_expiries += 1;
        }
        self.requeue(t, cpu, next_round);
    }

    /// 2.5 `EXPIRED_STARVING(rq)`: the first expired task has waited at least
    /// `starvation_limit` times the tasks on the runqueue (the current one included), plus
    /// one tick.
    fn expired_starving(&self, cpu: CpuId) -> bool {
        let limit = self.params.starvation_limit;
        let rq = &self.rqs[cpu];
        match rq.expired_since {
            Some(since) if limit > 0 => {
                let wait = limit
                    .saturating_mul(rq.nr_running() as Ns)
                    .saturating_add(self.params.tick);
                self.now.saturating_sub(since) >= wait
            }
            _ => false,
        }
    }

    fn requeue(&mut self, t: TaskId, cpu: CpuId, next_round: bool) {
        let key = if self.params.fair.is_some() {
            self.pelt_sync_rq(cpu);
            self.pelt_task_state(t, true, false);
            (self.fair_key(t), 0, self.next_seq())
        } else {
            let prio = self.queue_prio(t, cpu);
            let round = self.rqs[cpu].round + u64::from(next_round);
            (round, prio, self.next_seq())
        };
        let task = &mut self.tasks[t];
        task.state = TaskState::Runnable;
        task.queued_at.get_or_insert(self.now);
        task.rq_key = key;
        self.rqs[cpu].queue.push(key, t);
        self.rq_changed(cpu);
        if self.params.fair.is_some() {
            self.fair_queued(cpu, t);
        }
        self.nr_waiting += 1;
        self.unpark_balancers();
    }

    /// Pick the next task for an idle `cpu`, balancing first if its queue is empty.
    pub(crate) fn dispatch(&mut self, s: &mut dyn CpuScheduler, cpu: CpuId) {
        debug_assert!(self.rqs[cpu].curr.is_none());
        self.rqs[cpu].need_resched = false;
        loop {
            if self.rqs[cpu].queue.is_empty() {
                self.counters.balance_calls += 1;
                debug_assert!(!self.quiet.is_quiet(cpu), "a pass on quiet CPU {cpu}");
                s.balance(self, cpu, IdleType::NewIdle);
            }
            let fair = self.params.fair.is_some();
            let next = if fair {
                self.pelt_sync_rq(cpu);
                self.fair_pop(cpu)
            } else {
                self.rqs[cpu].queue.pop_first()
            };
            let Some(t) = next else {
                // 2.5 schedule() clears the expired array's timestamp when it goes idle.
                self.rqs[cpu].expired_since = None;
                self.go_idle(cpu);
                return;
            };
            self.nr_waiting -= 1;
            let now = self.now;
            // One borrow of each: every `self.tasks[t]` is a bounds check and an address.
            let rq = &mut self.rqs[cpu];
            let task = &mut self.tasks[t];
            let was_idle_cpu = rq.balance_parked || rq.balance_idle;
            if !fair {
                if task.rq_key.0 != rq.round {
                    // The active array ran empty and the arrays switched.
                    rq.expired_since = None;
                }
                rq.round = task.rq_key.0;
            }
            rq.curr = Some(t);
            task.last_cpu = Some(cpu);
            task.run_touched = 0.0;
            task.state = TaskState::Running;
            task.last_settle = now;
            if let Some(q) = task.queued_at.take() {
                task.run_delay_ns += now.saturating_sub(q);
            }
            // `rq_changed`, and the first CPU (set after the fair class's pick otherwise), with
            // the borrows at hand.
            let nr = rq.nr_running() as u32;
            if !fair && task.first_cpu.is_none() {
                task.first_cpu = Some(cpu);
            }
            self.node_rq_changes[self.topo.node_of(cpu)] += 1;
            self.nr_running[cpu] = nr;
            self.counters.context_switches += 1;
            if fair {
                let slice = self.fair_pick_slice(t, cpu);
                self.tasks[t].slice_left = self.slice_to_tick(cpu, slice);
                self.pelt_task_state(t, true, true);
                if self.tasks[t].first_cpu.is_none() {
                    self.tasks[t].first_cpu = Some(cpu);
                }
            }
            self.charge_cold_cache(t, cpu);
            if self.tasks[t].work == PhaseWork::None {
                self.advance(s, t);
                if self.tasks[t].state != TaskState::Running {
                    self.put_curr(cpu);
                    continue;
                }
            }
            if was_idle_cpu {
                self.schedule_balance(s, cpu);
            }
            self.start_chunk(cpu, t);
            return;
        }
    }

    pub(super) fn go_idle(&mut self, cpu: CpuId) {
        let rq = &mut self.rqs[cpu];
        rq.balance_epoch = rq.balance_epoch.wrapping_add(1);
        self.events.cancel_balance(cpu);
        self.set_parked(cpu, true);
        if self.nr_waiting > 0 {
            self.unpark(cpu);
        }
    }

    /// How long a fair slice of `slice` lasts on `cpu`: without the high-resolution tick the
    /// kernel notices that it ran out at the next tick (`task_tick_fair` -> `update_curr` ->
    /// `update_deadline`), so it ends on `cpu`'s tick grid.
    pub(super) fn slice_to_tick(&self, cpu: CpuId, slice: Ns) -> Ns {
        if self.params.fair.is_some_and(|f| f.hrtick) {
            return slice;
        }
        let tick = self.params.tick.max(1);
        let phase = self.rqs[cpu].tick_phase;
        let end = self.now.saturating_add(slice);
        let ticks = end.saturating_sub(phase).div_ceil(tick);
        (phase + ticks * tick).max(end) - self.now
    }

    /// A task that moves to a CPU outside the cache it last used refills its working set.
    fn charge_cold_cache(&mut self, t: TaskId, cpu: CpuId) {
        let llc = self.cache_of[cpu];
        if self.tasks[t].last_llc == Some(llc) {
            self.charge_refill_after_turns(t, cpu, llc);
            return;
        }
        let had_cache = self.tasks[t].last_llc.is_some();
        self.tasks[t].last_llc = Some(llc);
        self.tasks[t].turns.clear();
        if !had_cache {
            return;
        }
        let p = &self.procs[self.tasks[t].pid];
        let resident: u64 = p.regions.iter().map(|r| r.allocated_bytes()).sum();
        let cached = resident.min(self.topo.cpu_model.llc_bytes) as f64;
        if cached == 0.0 {
            return;
        }
        let lat = self.memory_latency_ns(t, cpu);
        let lines = cached / self.topo.cpu_model.line_bytes as f64;
        self.tasks[t].cold_ns = lines * lat / self.topo.cpu_model.mlp.max(1e-3);
    }

    /// Idle latency from `cpu` to `t`'s memory, weighted by where its bytes are.
    /// Called at every switch-in after others' turns: sums over the regions per node rather
    /// than building the process's per-node vector.
    /// Remembered per process and node while its memory does not move (`mem_version`).
    fn memory_latency_ns(&self, t: TaskId, cpu: CpuId) -> f64 {
        let node = self.node_of(cpu);
        let p = &self.procs[self.tasks[t].pid];
        if let Some((version, at, lat)) = p.latency_memo.get()
            && version == p.mem_version
            && at == node
        {
            return lat;
        }
        let regions = &p.regions;
        let on = |j: usize| -> u64 { regions.iter().map(|r| r.node_bytes[j]).sum() };
        let nodes = 0..self.topo.nr_nodes();
        let total: u64 = nodes.clone().map(on).sum();
        let lat = nodes
            .map(|j| on(j) as f64 / total.max(1) as f64 * self.topo.latency_ns(node, j))
            .sum();
        p.latency_memo.set(Some((p.mem_version, node, lat)));
        lat
    }

    /// `t` touched `bytes` more on `llc`.
    fn count_touched(&mut self, t: TaskId, llc: usize, bytes: f64) {
        if bytes > 0.0 {
            self.tasks[t].run_touched += bytes;
            self.llc_touched[llc] += bytes;
            self.procs[self.tasks[t].pid].touched += bytes;
        }
    }

    /// A task back on the LLC it last used, after others took turns on it, fetches again
    /// what they evicted of its lines (`cost::refill_after_turns`), as a stall at the start
    /// of its run, like the cold cache after a move.
    fn charge_refill_after_turns(&mut self, t: TaskId, cpu: CpuId, llc: usize) {
        let task = &self.tasks[t];
        // Checked first: most tasks switched in are not in a memory phase, and their marks
        // are not kept (`put_curr`).
        if task.work != PhaseWork::MemOps {
            return;
        }
        let own = self.procs[task.pid].touched - task.proc_mark;
        let others = (self.llc_touched[llc] - task.llc_mark - own).max(0.0);
        let (stall, lines) = self.refill_stall(t, cpu, others);
        let task = &mut self.tasks[t];
        task.turns.begin(others);
        if stall > 0.0 {
            task.cold_ns = task.cold_ns.max(stall);
            let line = self.topo.cpu_model.line_bytes as f64;
            self.count_touched(t, llc, lines * line);
        }
    }

    /// The refill stall of `t` back on `cpu`'s LLC after the others touched `others` bytes
    /// there, and the lines it fetches (`cost::refill_after_turns`).
    fn refill_stall(&self, t: TaskId, cpu: CpuId, others: f64) -> (f64, f64) {
        let task = &self.tasks[t];
        let Some(c) = task.op_cache.as_ref().filter(|c| c.pc == task.pc) else {
            return (0.0, 0.0);
        };
        let cpu_model = &self.topo.cpu_model;
        if c.op.cached_bytes <= 0.0 {
            return (0.0, 0.0);
        }
        let llc_bytes = cpu_model.llc_bytes as f64;
        let mut memo = c.refill.borrow_mut();
        let held = memo
            .walk(&task.turns, others, llc_bytes, c.op.footprint)
            .held;
        if held >= 1.0 {
            return (0.0, 0.0);
        }
        let mlp = cpu_model.mlp.max(1e-3);
        let latency = self.memory_latency_ns(t, cpu);
        // A measured refill is from local memory; remote memory adds its extra latency.
        let node = self.node_of(cpu);
        let per_line_ns = match cpu_model.refill_ns {
            Some(r) => r + (latency - self.topo.latency_ns(node, node)) / mlp,
            None => (latency - cpu_model.llc_latency_ns.unwrap_or(0.0)) / mlp,
        };
        memo.refill(
            &c.op,
            cpu_model.line_bytes as f64,
            per_line_ns.max(0.0),
            c.op.ns(&self.q),
            task.slice_left as f64,
        )
    }

    /// Advance a running task's accounting to now.
    pub(crate) fn settle(&mut self, t: TaskId) {
        let now = self.now;
        let task = &mut self.tasks[t];
        let dt = now.saturating_sub(task.last_settle);
        if dt == 0 {
            return;
        }
        let cpu = task.cpu;
        let node = self.topo.node_of(cpu);
        task.last_settle = now;
        task.slice_left = task.slice_left.saturating_sub(dt);
        if self.params.fair.is_some() {
            task.vruntime += super::fair::calc_delta_fair(dt, task.weight);
        }
        task.sleep_avg = task.sleep_avg.saturating_sub(dt);
        self.rqs[cpu].busy_ns += dt;
        let mut d = dt as f64;
        let cold = task.cold_ns.min(d);
        task.cold_ns -= cold;
        task.user_ns += cold;
        *task.node_user.on(node) += cold;
        d -= cold;
        let kernel = task.kernel_ns.min(d);
        task.kernel_ns -= kernel;
        task.sys_ns += kernel;
        d -= kernel;
        if d > 0.0 {
            task.work_left -= d * task.rate;
            let user = d * task.user_frac;
            task.user_ns += user;
            *task.node_user.on(node) += user;
            task.sys_ns += d - user;
            // What the work touched on the LLC: the lines of its operations, up to its
            // footprint in one run, or the bytes a first touch wrote.
            let touched = match task.work {
                PhaseWork::MemOps => task.op_cache.as_ref().map_or(0.0, |c| {
                    let lines = d * task.rate * c.op.touched_lines;
                    (lines * self.topo.cpu_model.line_bytes as f64)
                        .min(c.op.footprint - task.run_touched)
                }),
                PhaseWork::Touch { .. } => d * task.rate,
                _ => 0.0,
            };
            let llc = self.cache_of[cpu];
            self.count_touched(t, llc, touched);
        }
        if let PhaseWork::Touch { region, end } = self.tasks[t].work {
            self.touch_progress(t, region, end);
        }
    }

    /// First-touch the page groups a `Touch` phase has reached.
    fn touch_progress(&mut self, t: TaskId, region: usize, end: u64) {
        let task = &self.tasks[t];
        let node = self.node_of(task.cpu);
        let pid = task.pid;
        let proc = &mut self.procs[pid];
        let r = &mut proc.regions[region];
        let done = (end as f64 - task.work_left.max(0.0)).max(0.0);
        r.cursor = r.cursor.max(done as u64);
        let gb = self.params.page_group_bytes as f64;
        // While touching, the group the cursor has reached is being written; once a part
        // is done, only the groups it wrote into (the next part may run elsewhere).
        let reached = if done >= end as f64 {
            (done / gb).ceil() as usize
        } else {
            (done / gb).floor() as usize + 1
        }
        .min(r.groups.len());
        let mut newly = 0u64;
        for g in 0..reached {
            if r.groups[g].is_none() && self.mem.touch(&self.topo, r, g, node).is_some() {
                newly += r.group_size(g);
            }
        }
        if newly > 0 {
            self.counters.page_faults += newly.div_ceil(self.topo.memory.page_bytes);
            proc.mem_version += 1;
            self.mark_proc_dirty(pid);
        }
    }

    /// Set the rate of the current phase and post the next boundary event.
    pub(super) fn start_chunk(&mut self, cpu: CpuId, t: TaskId) {
        // CPU work (most chunks: computing, sending, receiving) is rated here, as
        // `set_rate` rates it, without its call; the rest through `set_rate`.
        let nspc = self.topo.ns_per_cycle();
        let task = &mut self.tasks[t];
        match task.work {
            PhaseWork::Cycles { user } => {
                task.rate = 1.0 / nspc;
                task.user_frac = if user { 1.0 } else { 0.0 };
            }
            PhaseWork::RecvMsgs { .. } => {
                task.rate = 1.0 / nspc;
                task.user_frac = 0.0;
            }
            _ => self.set_rate(t),
        }
        self.post_boundary(cpu, t);
    }

    pub(crate) fn post_boundary(&mut self, cpu: CpuId, t: TaskId) {
        let task = &self.tasks[t];
        let mut until = task.work_left.max(0.0);
        if let PhaseWork::Touch { end, .. } = task.work {
            // Stop at the next page-group boundary so the group lands where the task is then.
            let gb = self.params.page_group_bytes as f64;
            let done = end as f64 - until;
            let next = ((done / gb).floor() + 1.0) * gb;
            until = until.min((next - done).max(1.0));
        }
        let work_ns = if task.rate > 0.0 {
            until / task.rate
        } else {
            f64::INFINITY
        };
        // `min(slice).ceil()`, with the call to `ceil` only when the chunk ends before the
        // slice: a slice left is a whole number of ns (a `u64` converted to `f64` is always
        // whole), so its `ceil` is itself. A NaN chunk gives the slice, as `min` does.
        let (chunk, slice) = (
            task.cold_ns + task.kernel_ns + work_ns,
            task.slice_left as f64,
        );
        let ns = if chunk < slice { chunk.ceil() } else { slice }.max(1.0);
        let at = self.now.saturating_add(ns as Ns);
        let rq = &mut self.rqs[cpu];
        if rq.boundary_at == Some(at) {
            // The pending event is already right (rates did not change).
            return;
        }
        if rq.boundary_at == Some(self.now) {
            // A reschedule asked for now (a wake-up preemption, `resched`) is pending: a new
            // rate must not put it off to the end of the chunk. The boundary it triggers
            // posts the next one.
            return;
        }
        rq.boundary_at = Some(at);
        rq.epoch = rq.epoch.wrapping_add(1);
        self.events.push(
            at,
            Event::CpuBoundary {
                cpu: cpu as u32,
                epoch: rq.epoch,
            },
        );
    }

    /// Wake a sleeping or blocked task.
    pub(crate) fn wake(&mut self, s: &mut dyn CpuScheduler, t: TaskId) {
        let task = &mut self.tasks[t];
        if !matches!(task.state, TaskState::Sleeping | TaskState::Blocked) {
            return;
        }
        let slept = self.now.saturating_sub(task.sleep_since);
        task.sleep_avg = (task.sleep_avg + slept).min(self.params.max_sleep_avg);
        self.counters.wakeups += 1;
        self.credit_sleeper(t);
        let mut cpu = s.wake_cpu(self, t);
        let affinity = &self.tasks[t].affinity;
        if !affinity.contains(cpu) {
            cpu = affinity.first().unwrap_or(0);
        }
        self.enqueue(t, cpu, true);
    }

    /// Put the current task of its CPU to sleep until `until` (I/O, timer).
    pub(crate) fn sleep_until(&mut self, t: TaskId, until: Ns) {
        let task = &mut self.tasks[t];
        task.state = TaskState::Sleeping;
        task.sleep_since = self.now;
        self.events.push(until, Event::Wake { task: t as u32 });
    }
}
