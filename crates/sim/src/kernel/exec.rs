//! The program interpreter (phases, loops, messages, fork/exec, wait, exit) and task creation.

use super::sched_api::{CpuScheduler, ExecPlacement};
use super::task::{PhaseWork, Process, Task, TaskState};
use super::{Channel, Kernel, Pid, TaskId};
use crate::memory::{MemPolicy, Region};
use crate::program::Phase;
use topo::{CpuId, CpuSet};

impl Kernel {
    /// Run the zero-time phases of `t` until it has CPU work, blocks, sleeps or exits.
    pub(crate) fn advance(&mut self, s: &mut dyn CpuScheduler, t: TaskId) {
        self.count_step(Some(t));
        if let Some(steps) = self.advance_common(t) {
            self.advance_any(s, t, steps);
        }
    }

    /// The steps of [`Kernel::advance`] that a message passer or a compute phase takes at
    /// nearly every switch, without the full interpreter's entry (a large function: saving
    /// its registers and setting up its loop was a twentieth of the instructions of a
    /// numa_test run): a loop's end, then a receive, a send or CPU work. Each step does what
    /// [`Kernel::advance_any`] does for it, in the same order. `None` when the task has its
    /// work or blocked; otherwise the steps taken, leaving the current phase untouched for
    /// `advance_any` to take on.
    #[inline]
    fn advance_common(&mut self, t: TaskId) -> Option<u64> {
        let prog = &self.workload.programs[self.tasks[t].program];
        let task = &mut self.tasks[t];
        task.work = PhaseWork::None;
        let mut steps = 0;
        if let Some(Phase::EndLoop) = prog.phases.get(task.pc) {
            steps += 1;
            end_loop(task);
        }
        let (work, left) = match prog.phases.get(task.pc) {
            Some(Phase::Compute { cycles }) => (PhaseWork::Cycles { user: true }, *cycles),
            Some(Phase::Kernel { cycles }) => (PhaseWork::Cycles { user: false }, *cycles),
            Some(Phase::Recv {
                chan,
                msgs,
                cycles_per_msg,
            }) if *msgs > 0 && self.chans[*chan].nr_writers == 0 => {
                let recv_left = if task.recv_left == 0 {
                    *msgs
                } else {
                    task.recv_left
                };
                let ch = &mut self.chans[*chan];
                if ch.pending == 0 {
                    task.recv_left = recv_left;
                    ch.nr_readers += 1;
                    self.chan_waiters[*chan].readers.push(t);
                    task.block(self.now);
                    return None;
                }
                let k = ch.pending.min(u64::from(recv_left)) as u32;
                let left = cycles_per_msg * f64::from(k);
                if left <= 0.0 {
                    return Some(steps);
                }
                task.recv_left = recv_left;
                ch.pending -= u64::from(k);
                (PhaseWork::RecvMsgs { msgs: k }, left)
            }
            Some(Phase::Send {
                chans,
                msgs,
                cycles_per_msg,
                buffer,
            }) => {
                if let Some(c) = full_channel(&self.chans, chans, *msgs, *buffer) {
                    self.chan_waiters[c].writers.push(t);
                    self.chans[c].nr_writers += 1;
                    self.counters.send_blocks += 1;
                    task.block(self.now);
                    return None;
                }
                (
                    PhaseWork::Cycles { user: false },
                    cycles_per_msg * f64::from(*msgs) * chans.len() as f64,
                )
            }
            _ => return Some(steps),
        };
        if left <= 0.0 {
            return Some(steps);
        }
        task.work = work;
        task.work_left = left;
        None
    }

    /// The whole interpreter of [`Kernel::advance`], from the current phase, `steps` steps
    /// already taken without simulated time passing ([`Kernel::advance_common`]).
    // The interpreter's dispatch: one match arm per phase kind, read as one.
    #[allow(clippy::too_many_lines)]
    #[inline(never)]
    fn advance_any(&mut self, s: &mut dyn CpuScheduler, t: TaskId, steps: u64) {
        let wl = self.workload.clone();
        let prog = &wl.programs[self.tasks[t].program];
        self.tasks[t].work = PhaseWork::None;
        let first = steps + 1;
        let mut steps: u64 = steps;
        loop {
            steps += 1;
            if steps > first {
                // The first was counted by `advance`.
                self.count_step(Some(t));
            }
            if steps > crate::budget::MAX_STEPS_WITHOUT_TIME {
                self.fault.get_or_insert(super::Fault::NoProgress {
                    program: prog.name.clone(),
                    limit: crate::budget::MAX_STEPS_WITHOUT_TIME,
                });
                self.exit(s, t);
                return;
            }
            let pc = self.tasks[t].pc;
            let Some(phase) = prog.phases.get(pc) else {
                self.exit(s, t);
                return;
            };
            let (work, left) = match phase {
                Phase::Compute { cycles } => (PhaseWork::Cycles { user: true }, *cycles),
                Phase::Kernel { cycles } => (PhaseWork::Cycles { user: false }, *cycles),
                Phase::Send {
                    chans,
                    msgs,
                    cycles_per_msg,
                    buffer,
                } => {
                    if let Some(c) = full_channel(&self.chans, chans, *msgs, *buffer) {
                        self.chan_waiters[c].writers.push(t);
                        self.chans[c].nr_writers += 1;
                        self.counters.send_blocks += 1;
                        self.block(t);
                        return;
                    }
                    (
                        PhaseWork::Cycles { user: false },
                        cycles_per_msg * f64::from(*msgs) * chans.len() as f64,
                    )
                }
                Phase::Memory { ops, op } => {
                    self.touch_regions(t, op);
                    (PhaseWork::MemOps, *ops)
                }
                Phase::Touch { region } => {
                    let r = &self.procs[self.tasks[t].pid].regions[*region];
                    let untouched = r.bytes - r.allocated_bytes().min(r.bytes);
                    let end = r.bytes;
                    (
                        PhaseWork::Touch {
                            region: *region,
                            end,
                        },
                        untouched as f64,
                    )
                }
                Phase::TouchPart { region, bytes } => {
                    let r = &self.procs[self.tasks[t].pid].regions[*region];
                    let from = r.cursor.min(r.bytes);
                    let part = (*bytes).min(r.bytes - from);
                    let end = from + part;
                    (
                        PhaseWork::Touch {
                            region: *region,
                            end,
                        },
                        part as f64,
                    )
                }
                Phase::Recv {
                    chan,
                    msgs,
                    cycles_per_msg,
                } => {
                    let task = &mut self.tasks[t];
                    if *msgs == 0 {
                        task.pc += 1;
                        continue;
                    }
                    if task.recv_left == 0 {
                        task.recv_left = *msgs;
                    }
                    let recv_left = task.recv_left;
                    let ch = &mut self.chans[*chan];
                    if ch.pending == 0 {
                        ch.nr_readers += 1;
                        self.chan_waiters[*chan].readers.push(t);
                        self.block(t);
                        return;
                    }
                    let k = ch.pending.min(u64::from(recv_left)) as u32;
                    ch.pending -= u64::from(k);
                    // Room again: the blocked writers retry (the reader is their waker).
                    if ch.nr_writers > 0 {
                        let writers = std::mem::take(&mut self.chan_waiters[*chan].writers);
                        self.waker_cpu = Some(self.tasks[t].cpu);
                        for &w in &writers {
                            self.wake(s, w);
                        }
                        self.waker_cpu = None;
                        self.give_back_writers(*chan, writers);
                    }
                    (
                        PhaseWork::RecvMsgs { msgs: k },
                        cycles_per_msg * f64::from(k),
                    )
                }
                Phase::Sleep { ns, jitter } => {
                    let f = 1.0 + self.uniform(-jitter, *jitter);
                    let until = self.now + (*ns as f64 * f).round() as u64;
                    self.tasks[t].pc += 1;
                    self.sleep_until(t, until);
                    return;
                }
                Phase::Io {
                    disk,
                    service,
                    wait,
                } => {
                    let done = self.disks.submit(*disk, self.now, *service, *wait);
                    self.tasks[t].pc += 1;
                    if *wait {
                        self.sleep_until(t, done);
                        return;
                    }
                    continue;
                }
                Phase::Spawn {
                    program,
                    count,
                    exec,
                } => {
                    for _ in 0..*count {
                        if !self.room_for_a_task(*program) {
                            self.exit(s, t);
                            return;
                        }
                        let cpu = self.tasks[t].cpu;
                        self.create(s, Some(t), *program, None, cpu, *exec);
                    }
                    self.tasks[t].pc += 1;
                    continue;
                }
                Phase::Thread { program, count } => {
                    let pid = self.tasks[t].pid;
                    for _ in 0..*count {
                        if !self.room_for_a_task(*program) {
                            self.exit(s, t);
                            return;
                        }
                        let cpu = self.tasks[t].cpu;
                        self.create(s, Some(t), *program, Some(pid), cpu, false);
                    }
                    self.tasks[t].pc += 1;
                    continue;
                }
                Phase::Wait => {
                    if self.tasks[t].children_alive == 0 {
                        self.tasks[t].pc += 1;
                        continue;
                    }
                    self.tasks[t].waiting_children = true;
                    self.block(t);
                    return;
                }
                Phase::Loop { count } => {
                    if *count == 0 {
                        self.tasks[t].pc = prog.loop_end(pc).unwrap_or(prog.phases.len()) + 1;
                    } else {
                        self.tasks[t].loops.push((pc, count - 1));
                        self.tasks[t].pc += 1;
                    }
                    continue;
                }
                Phase::EndLoop => {
                    end_loop(&mut self.tasks[t]);
                    continue;
                }
            };
            if left <= 0.0 {
                self.tasks[t].pc += 1;
                continue;
            }
            let task = &mut self.tasks[t];
            task.work = work;
            task.work_left = left;
            return;
        }
    }

    /// The CPU work of the current phase is done: its effects, and on to the next phase.
    pub(crate) fn complete_phase(&mut self, s: &mut dyn CpuScheduler, t: TaskId) {
        // A counted reference (no atomic, no copy of the phase) while the phase's channels
        // are walked and their readers woken.
        let wl = std::rc::Rc::clone(&self.workload);
        let task = &self.tasks[t];
        let phase = &wl.programs[task.program].phases[task.pc];
        match (task.work, phase) {
            (PhaseWork::RecvMsgs { msgs }, _) => {
                let task = &mut self.tasks[t];
                task.recv_left = task.recv_left.saturating_sub(msgs);
                if task.recv_left == 0 {
                    task.pc += 1;
                }
                task.work = PhaseWork::None;
                return;
            }
            (_, Phase::Send { chans, msgs, .. }) => {
                let msgs = u64::from(*msgs);
                let task = &mut self.tasks[t];
                task.pc += 1;
                // Readers are woken during the send, before the sender goes on (or blocks).
                self.waker_cpu = Some(task.cpu);
                for &c in chans {
                    let ch = &mut self.chans[c];
                    ch.pending += msgs;
                    // Mostly no reader waits (they are still reading earlier messages).
                    if ch.nr_readers == 0 {
                        continue;
                    }
                    let readers = std::mem::take(&mut self.chan_waiters[c].readers);
                    for &r in &readers {
                        self.wake(s, r);
                    }
                    self.give_back_readers(c, readers);
                }
                self.waker_cpu = None;
            }
            (PhaseWork::Touch { region, .. }, _) => {
                let r = &self.procs[task.pid].regions[region];
                self.counters.alloc_failures +=
                    r.groups.iter().filter(|g| g.is_none()).count() as u64;
                self.mark_cpu_dirty(self.tasks[t].cpu);
                self.tasks[t].pc += 1;
            }
            (PhaseWork::MemOps, _) => {
                let task = &mut self.tasks[t];
                task.pc += 1;
                task.work = PhaseWork::None;
                let cpu = task.cpu;
                self.mark_cpu_dirty(cpu);
                return;
            }
            _ => self.tasks[t].pc += 1,
        }
        self.tasks[t].work = PhaseWork::None;
    }

    /// Return the buffer of channel `c`'s reader list, taken to wake them all, emptied, so
    /// that the next blocked reader does not allocate (a message exchange blocks and wakes
    /// readers all the time). Readers that blocked meanwhile are kept.
    fn give_back_readers(&mut self, c: usize, taken: Vec<TaskId>) {
        self.chans[c].nr_readers = give_back(&mut self.chan_waiters[c].readers, taken);
    }

    /// [`Kernel::give_back_readers`] for the writers.
    fn give_back_writers(&mut self, c: usize, taken: Vec<TaskId>) {
        self.chans[c].nr_writers = give_back(&mut self.chan_waiters[c].writers, taken);
    }

    /// The first of `chans` without room for `msgs` more messages under a `buffer` limit
    /// (0: unbounded).
    fn block(&mut self, t: TaskId) {
        self.tasks[t].block(self.now);
    }

    /// First-touch every untouched page group of the given regions of the task's process
    /// from its current node (a `Memory` phase reading memory nobody initialised).
    fn touch_regions(&mut self, t: TaskId, op: &crate::program::OpCost) {
        let node = self.node_of(self.tasks[t].cpu);
        let pid = self.tasks[t].pid;
        let mut newly = 0;
        for (i, r) in self.procs[pid].regions.iter_mut().enumerate() {
            // A region whose every group is placed has nothing to touch (the common case:
            // a Memory phase repeated over memory already in use).
            if !op.accesses.iter().any(|a| a.region == i) || r.allocated_bytes() >= r.bytes.max(1) {
                continue;
            }
            for g in 0..r.groups.len() {
                if r.groups[g].is_none() && self.mem.touch(&self.topo, r, g, node).is_some() {
                    newly += r.group_size(g);
                }
            }
            self.counters.alloc_failures += r.new_failures();
        }
        self.counters.page_faults += newly.div_ceil(self.topo.memory.page_bytes);
        if newly > 0 {
            self.procs[pid].mem_version += 1;
            self.mark_proc_dirty(pid);
        }
    }

    fn exit(&mut self, s: &mut dyn CpuScheduler, t: TaskId) {
        let now = self.now;
        let task = &mut self.tasks[t];
        task.state = TaskState::Exited;
        task.exited = Some(now);
        task.work = PhaseWork::None;
        let pid = task.pid;
        let parent = task.parent;
        self.live_tasks -= 1;
        let nb = self.procs[pid].node_bytes(self.topo.nr_nodes());
        self.tasks[t].mem_at_exit = nb;
        let p = &mut self.procs[pid];
        p.threads_alive -= 1;
        if p.threads_alive == 0 {
            for r in &mut p.regions {
                self.mem.free(r);
            }
            p.mem_version += 1;
            self.mark_proc_dirty(pid);
        }
        if let Some(par) = parent {
            let pt = &mut self.tasks[par];
            pt.children_alive -= 1;
            if pt.children_alive == 0 && pt.waiting_children {
                pt.waiting_children = false;
                self.waker_cpu = Some(self.tasks[t].cpu);
                self.wake(s, par);
                self.waker_cpu = None;
            }
        }
    }

    /// Create a task running `program`: a new process unless `pid` names the process to add a
    /// thread to; `exec` applies the scheduler's exec-time placement. `cpu` is the creator's.
    pub(crate) fn create(
        &mut self,
        s: &mut dyn CpuScheduler,
        parent: Option<TaskId>,
        program: usize,
        pid: Option<Pid>,
        cpu: CpuId,
        exec: bool,
    ) -> TaskId {
        let wl = self.workload.clone();
        let prog = &wl.programs[program];
        let id = self.tasks.len();
        // A new thread or process starts with its creator's CPU mask, as `clone` and `fork`
        // copy it (and `exec` keeps it); only a program that states its own (`taskset`) or
        // a task with no creator (a launch) starts from all CPUs.
        let affinity: CpuSet = match (&prog.affinity, parent) {
            (Some(list), _) => list
                .iter()
                .copied()
                .filter(|&c| c < self.topo.nr_cpus())
                .collect(),
            (None, Some(p)) => self.tasks[p].affinity.clone(),
            (None, None) => self.topo.all_cpus(),
        };
        let nr_nodes = self.topo.nr_nodes();
        let sleep_avg = parent.map_or(0, |p| self.tasks[p].sleep_avg);
        let new_process = pid.is_none();
        let pid = pid.unwrap_or(self.procs.len());
        self.tasks.push(Task {
            id,
            pid,
            program,
            state: TaskState::Blocked,
            cpu,
            affinity,
            home_node: None,
            pc: 0,
            loops: Vec::new(),
            work: PhaseWork::None,
            work_left: 0.0,
            rate: 0.0,
            user_frac: 1.0,
            cold_ns: 0.0,
            kernel_ns: 0.0,
            last_settle: self.now,
            recv_left: 0,
            user_ns: 0.0,
            sys_ns: 0.0,
            node_user: super::task::NodeUserTime::new(nr_nodes),
            created: self.now,
            run_delay_ns: 0,
            queued_at: None,
            exited: None,
            first_cpu: None,
            last_ran: self.now,
            from_exec: exec || parent.is_none(),
            last_llc: None,
            llc_mark: 0.0,
            proc_mark: 0.0,
            run_touched: 0.0,
            turns: Default::default(),
            last_cpu: None,
            left_round: 0,
            sleep_avg,
            sleep_since: self.now,
            slice_left: self.params.timeslice,
            rq_key: (0, 120, 0),
            weight: u64::from(super::pelt::weight_of_nice(prog.nice)),
            vruntime: super::fair::VRUNTIME_ORIGIN,
            deadline: super::fair::VRUNTIME_ORIGIN,
            vlag: 0,
            protect: false,
            // A new thread or child keeps its parent's slice (6.12's `__sched_fork` no longer
            // resets it), unless the parent has `SCHED_FLAG_RESET_ON_FORK` (then `sched_fork`
            // gives the base and clears the flag in the child); exec does not change it.
            slice_req: parent
                .filter(|&p| !self.tasks[p].slice_reset_on_fork)
                .map_or(0, |p| self.tasks[p].slice_req),
            slice_reset_on_fork: false,
            vprot_short: None,
            placed: false,
            pelt: super::pelt::Pelt::default(),
            pelt_runnable: false,
            pelt_running: false,
            pelt_cpu: None,
            parent,
            children_alive: 0,
            waiting_children: false,
            job: prog.job,
            migrations: 0,
            node_migrations: 0,
            mem_at_exit: Vec::new(),
            op_cache: None,
        });
        if let Some(p) = parent {
            self.tasks[p].children_alive += 1;
        }
        self.live_tasks += 1;
        let mut target = s.fork_cpu(self, cpu, id);
        if new_process {
            target = self.new_process(s, id, parent, pid, exec, target);
        } else if let Some(p) = parent {
            self.set_home_node(id, self.tasks[p].home_node);
        }
        self.procs[pid].threads_alive += 1;
        self.procs[pid].threads.push(id);
        if !self.tasks[id].affinity.contains(target) {
            target = self.least_loaded_allowed(id);
        }
        self.tasks[id].cpu = target;
        self.enqueue(id, target, false);
        id
    }

    /// The process of task `id`, new in `create`: the scheduler's exec-time placement (a plain
    /// fork inherits the parent's home node) and the program's regions, a first-touch policy
    /// turned to the home when the placement allocates there. Returns the CPU to start on,
    /// `target` unless the placement names one.
    fn new_process(
        &mut self,
        s: &mut dyn CpuScheduler,
        id: TaskId,
        parent: Option<TaskId>,
        pid: Pid,
        exec: bool,
        mut target: CpuId,
    ) -> CpuId {
        let wl = self.workload.clone();
        let program = self.tasks[id].program;
        let prog = &wl.programs[program];
        let nr_nodes = self.topo.nr_nodes();
        let placement = if exec {
            s.exec(self, id, target)
        } else {
            Default::default()
        };
        // A plain fork inherits the parent's home node.
        let placement = match (exec, parent) {
            (false, Some(p)) => ExecPlacement {
                home: self.tasks[p].home_node,
                ..placement
            },
            _ => placement,
        };
        if let Some(c) = placement.cpu {
            target = c;
        }
        self.set_home_node(id, placement.home);
        let group = self.params.page_group_bytes;
        let fits = self.count_page_groups(&prog.regions, &prog.name);
        let regions = prog
            .regions
            .iter()
            .map(|r| {
                // Over the budget the run stops at the next event: no bookkeeping for it.
                let bytes = if fits { r.bytes } else { 0 };
                let policy = match (&r.policy, placement.home) {
                    (MemPolicy::FirstTouch, Some(h)) if placement.alloc_on_home => {
                        MemPolicy::Preferred(h)
                    }
                    (p, _) => p.clone(),
                };
                Region::new(&r.name, bytes, policy, group, nr_nodes)
            })
            .collect();
        self.procs.push(Process {
            pid,
            program,
            regions,
            threads_alive: 0,
            threads: Vec::new(),
            mem_version: 0,
            main_node_memo: std::cell::Cell::new(None),
            latency_memo: std::cell::Cell::new(None),
            touched: 0.0,
        });
        target
    }

    /// The allowed CPU with the fewest runnable tasks (lowest id on ties).
    pub fn least_loaded_allowed(&self, t: TaskId) -> CpuId {
        self.tasks[t]
            .affinity
            .iter()
            .min_by_key(|&c| (self.rqs[c].nr_running(), c))
            .unwrap_or(0)
    }

    /// Start what a workload launch entry names.
    pub(crate) fn launch(&mut self, s: &mut dyn CpuScheduler, i: usize) {
        self.launches_pending -= 1;
        let l = self.workload.launches[i].clone();
        let cpu = l.cpu.unwrap_or(0).min(self.topo.nr_cpus() - 1);
        for _ in 0..l.count {
            if !self.room_for_a_task(l.program) {
                return;
            }
            let leader = self.create(s, None, l.program, None, cpu, true);
            let pid = self.tasks[leader].pid;
            for _ in 1..l.threads.max(1) {
                if !self.room_for_a_task(l.program) {
                    return;
                }
                // Further threads are cloned by the leader, where the leader was placed.
                let at = self.tasks[leader].cpu;
                self.create(s, Some(leader), l.program, Some(pid), at, false);
            }
        }
    }

    /// Whether one more task fits the run's budget ([`crate::budget::MAX_TASKS`]); if not, the
    /// run is stopped with a fault naming `program`, the one asking.
    fn room_for_a_task(&mut self, program: usize) -> bool {
        if (self.tasks.len() as u64) < crate::budget::MAX_TASKS && self.fault.is_none() {
            return true;
        }
        self.fault
            .get_or_insert_with(|| super::Fault::TooManyTasks {
                program: self.workload.programs[program].name.clone(),
                limit: crate::budget::MAX_TASKS,
            });
        false
    }
}

/// Put the emptied buffer `taken` back as the waiter list `list` unless tasks blocked on it
/// meanwhile (then they are kept); returns how many wait on it now.
fn give_back(list: &mut Vec<TaskId>, mut taken: Vec<TaskId>) -> u32 {
    if list.is_empty() {
        taken.clear();
        *list = taken;
    }
    list.len() as u32
}

/// The first of `chans` whose socket buffer of `buffer` messages (0: no limit) has no room for
/// `msgs` more: a sender blocks on it.
fn full_channel(state: &[Channel], chans: &[usize], msgs: u32, buffer: u32) -> Option<usize> {
    if buffer == 0 {
        return None;
    }
    let room = u64::from(buffer).saturating_sub(u64::from(msgs));
    chans.iter().copied().find(|&c| state[c].pending > room)
}

/// The end of a loop body: back to the body's first phase while iterations are left, else on
/// past the loop.
#[inline]
fn end_loop(task: &mut Task) {
    match task.loops.last_mut() {
        Some((start, left)) if *left > 0 => {
            *left -= 1;
            task.pc = *start + 1;
        }
        _ => {
            task.loops.pop();
            task.pc += 1;
        }
    }
}
