//! Applying a decision: homes and slices first (journaled, then set), then every other
//! action one by one, each counted and explained; the bookkeeping of processes that exited,
//! were taken over or widened their homes.

use super::*;

/// What a `SetHome` or `SetSlice` of a decision gave, carried out before the decision's
/// actions are taken one by one.
enum Done {
    Home(Option<(Outcome, Option<CpuSet>)>),
    Slice(Option<(Outcome, Option<HeldSlice>)>),
    Nothing,
}

impl Daemon {
    /// Carries out a decision: its `SetHome`s together, then its `SetSlice`s together, then
    /// every action in order (counted, logged, remembered; the memory moves timed).
    pub(super) fn apply_all(
        &mut self,
        actions: Vec<Action>,
        counters: &mut status::Counters,
        report: &mut IntervalReport,
    ) {
        self.actuator.begin_decision();
        let homed = self.set_homes(&actions);
        let mut sliced = self.set_slices(&actions, &homed).into_iter();
        let mut homed = homed.into_iter();
        let mut not_applied = Vec::new();
        for a in actions {
            let t = self.clock.now();
            let done = match a {
                Action::SetHome { .. } => Done::Home(homed.next()),
                Action::SetSlice { .. } => Done::Slice(sliced.next()),
                _ => Done::Nothing,
            };
            let outcome = self.apply(&a, done, counters);
            if matches!(a, Action::MoveMemory { .. }) {
                report.move_wall_s += self.since(t);
            }
            if outcome == Outcome::DryRun {
                not_applied.push(a.clone());
            }
            report.actions.push((a, outcome));
        }
        // The policy judges its memory moves by what they changed: it must know which ones
        // a dry run did not make. (A move the daemon skips, under fake NUMA say, is judged:
        // that memory will not move, and the policy leaves it alone for a while.)
        if !not_applied.is_empty() {
            self.policy.not_applied(&not_applied);
        }
        self.log_moves();
    }

    /// One line per process for the decision's memory moves, however many batches.
    fn log_moves(&mut self) {
        let moves = std::mem::take(&mut self.moves);
        for (key, action, outcome, failed) in moves.lines() {
            if self.cfg.dry_run {
                tracing::info!(target: "homenode::decision", "would {action}");
            } else if failed {
                tracing::warn!(target: "homenode::decision", "{action} -> {outcome}");
            } else {
                tracing::info!(target: "homenode::decision", "{action} -> {outcome}");
            }
            self.last
                .insert(key, (action, outcome, journal::unix_now()));
        }
    }

    /// Sets the homes of the decision's `SetHome` actions together ([`Actuator::set_homes`]:
    /// two journal writes for all of them). The results are in the actions' order.
    fn set_homes(&mut self, actions: &[Action]) -> Vec<(Outcome, Option<CpuSet>)> {
        let reqs: Vec<HomeRequest<'_>> = actions
            .iter()
            .filter_map(|a| match a {
                Action::SetHome { nodes, cpus, .. } => Some(HomeRequest {
                    key: ProcessKey {
                        pid: a.pid(),
                        starttime: a.start_time(),
                    },
                    nodes,
                    kcpus: self.host.kernel_cpus(cpus),
                }),
                _ => None,
            })
            .collect();
        self.actuator.set_homes(&mut self.journal, &reqs)
    }

    /// Gives (or takes back) the slices of the decision's `SetSlice` actions together
    /// ([`Actuator::set_slices`]: one journal write before any thread is changed). A process
    /// whose `SetHome` in the same decision was not carried out gets none. `homed` holds the
    /// results of the decision's `SetHome`s, in order; the results are in the `SetSlice`s'
    /// order.
    fn set_slices(
        &mut self,
        actions: &[Action],
        homed: &[(Outcome, Option<CpuSet>)],
    ) -> Vec<(Outcome, Option<HeldSlice>)> {
        let key = |a: &Action| ProcessKey {
            pid: a.pid(),
            starttime: a.start_time(),
        };
        let not_homed: BTreeSet<ProcessKey> = actions
            .iter()
            .filter(|a| matches!(a, Action::SetHome { .. }))
            .zip(homed)
            .filter(|(_, (o, _))| !matches!(o, Outcome::Done(_) | Outcome::DryRun))
            .map(|(a, _)| key(a))
            .collect();
        let mut out: Vec<Option<(Outcome, Option<HeldSlice>)>> = Vec::new();
        let mut reqs = Vec::new();
        for a in actions {
            let Action::SetSlice { slice_ns, .. } = a else {
                continue;
            };
            if *slice_ns > 0 && not_homed.contains(&key(a)) {
                out.push(Some((
                    Outcome::Skipped("its home was not set in this decision".into()),
                    None,
                )));
            } else {
                out.push(None);
                reqs.push(SliceRequest {
                    key: key(a),
                    slice_ns: *slice_ns,
                });
            }
        }
        let mut done = self
            .actuator
            .set_slices(&mut self.journal, &reqs)
            .into_iter();
        out.into_iter()
            .map(|o| {
                o.or_else(|| done.next())
                    .unwrap_or_else(|| (Outcome::Failed("not carried out".into()), None))
            })
            .collect()
    }

    /// Gives every thread at a slice of homenode's the kernel's default back and forgets the
    /// slices held, logging each process with `why`.
    pub(super) fn take_back_slices(&mut self, why: &str) {
        let reqs: Vec<SliceRequest> = self
            .slices
            .keys()
            .map(|&key| SliceRequest { key, slice_ns: 0 })
            .collect();
        let out = self.actuator.set_slices(&mut self.journal, &reqs);
        for (r, (o, _)) in reqs.iter().zip(out) {
            tracing::info!(target: "homenode::decision", "pid {}: slice taken back ({why}) -> {o}", r.key.pid);
        }
        self.slices.clear();
    }

    /// Carries out action `a` (a `SetHome` or `SetSlice` was carried out already: `done` is
    /// its result), then counts, logs and remembers the outcome.
    fn apply(&mut self, a: &Action, done: Done, counters: &mut status::Counters) -> Outcome {
        let key = ProcessKey {
            pid: a.pid(),
            starttime: a.start_time(),
        };
        let outcome = match a {
            Action::SetHome { nodes, .. } => {
                let homed = match done {
                    Done::Home(h) => h,
                    _ => None,
                };
                let (o, mask) =
                    homed.unwrap_or_else(|| (Outcome::Failed("not carried out".into()), None));
                match (&o, mask) {
                    (Outcome::Done(_) | Outcome::DryRun, Some(m)) => {
                        self.homes.insert(key, (nodes.clone(), m));
                    }
                    (Outcome::Failed(why), _) => {
                        // The kernel refused (EPERM, a cpuset that moved): do not try again.
                        self.never
                            .insert(key, format!("setting its affinity failed: {why}"));
                        self.release(key);
                    }
                    _ => {}
                }
                o
            }
            Action::ClearHome { .. } => {
                let o = self.actuator.clear_home(&mut self.journal, key);
                if !matches!(o, Outcome::Failed(_)) {
                    // The restore gave its threads the default slice back too.
                    self.homes.remove(&key);
                    self.slices.remove(&key);
                }
                o
            }
            Action::MoveMemory {
                from, to, bytes, ..
            } => {
                let (o, m) = self
                    .actuator
                    .move_memory(&self.host, key, *from, *to, *bytes);
                counters.pages_moved += m.pages_moved;
                counters.pages_failed += m.pages_failed;
                counters.bytes_moved += m.bytes_moved;
                self.moves.add(a, &o, &m);
                *counters
                    .actions
                    .entry(format!("{}/{}", a.kind(), o.label()))
                    .or_default() += 1;
                // Logged with the decision's other batches of the process (`log_moves`).
                return o;
            }
            Action::SetSlice { .. } => {
                let sliced = match done {
                    Done::Slice(s) => s,
                    _ => None,
                };
                let (o, held) =
                    sliced.unwrap_or_else(|| (Outcome::Failed("not carried out".into()), None));
                match held {
                    Some(h) => self.slices.insert(key, h),
                    None => self.slices.remove(&key),
                };
                o
            }
        };
        *counters
            .actions
            .entry(format!("{}/{}", a.kind(), outcome.label()))
            .or_default() += 1;
        if self.cfg.dry_run {
            tracing::info!(target: "homenode::decision", "would {a}");
        } else {
            match &outcome {
                Outcome::Failed(_) => {
                    tracing::warn!(target: "homenode::decision", "{a} -> {outcome}")
                }
                _ => tracing::info!(target: "homenode::decision", "{a} -> {outcome}"),
            }
        }
        self.last.insert(
            key,
            (a.to_string(), outcome.to_string(), journal::unix_now()),
        );
        outcome
    }

    /// Managed processes that exited: forget them (nothing to undo).
    pub(super) fn forget_exited(&mut self, sample: &sampler::Sample) {
        let alive: BTreeSet<ProcessKey> = sample.light.iter().map(|l| l.light.key).collect();
        let gone: Vec<ProcessKey> = self
            .homes
            .keys()
            .filter(|k| !alive.contains(k))
            .copied()
            .collect();
        let changed = !gone.is_empty();
        for k in gone {
            self.homes.remove(&k);
            self.journal.remove(k);
            self.last.remove(&k);
        }
        // Its threads are gone with it: nothing to give back.
        self.slices.retain(|k, _| alive.contains(k));
        self.never.retain(|k, _| alive.contains(k));
        self.last.retain(|k, _| alive.contains(k));
        self.counted.retain(|k| alive.contains(k));
        self.widenings.retain(|k, _| alive.contains(k));
        if changed && !self.cfg.dry_run {
            if let Err(e) = self.journal.store(&self.cfg.journal) {
                tracing::warn!("{e}");
            }
        }
    }

    /// A homed process one of whose threads set its own mask back to every CPU it may use
    /// (a library resetting affinity at start, `perf bench numa` workers) asked for no CPU in
    /// particular: its home is forgotten, so this interval's decision gives it one again and
    /// the mask is set on every thread. A process that keeps doing it is left alone after
    /// [`MAX_WIDENINGS`] times, rather than fought every interval.
    pub(super) fn rehome_widened(&mut self, cands: &[snapshot::Candidate]) {
        for c in cands.iter().filter(|c| c.widened) {
            let n = self.widenings.entry(c.key).or_insert(0);
            *n += 1;
            let comm = crate::text::escape_control(&c.view.comm);
            if *n > MAX_WIDENINGS {
                tracing::info!(
                    target: "homenode::decision",
                    "pid {} ({comm}): widened its own mask {MAX_WIDENINGS} times after being homed: left alone",
                    c.key.pid
                );
                self.never.insert(
                    c.key,
                    "keeps widening its own mask after being homed".into(),
                );
                self.release(c.key);
            } else {
                tracing::info!(
                    target: "homenode::decision",
                    "pid {} ({comm}): a thread set its mask to all its CPUs (not a pin): homed again",
                    c.key.pid
                );
                self.homes.remove(&c.key);
            }
        }
    }

    /// A managed process that the rules now say to leave alone (someone pinned it, gave it a
    /// memory policy or a real-time thread): give back what is still ours and never touch it
    /// again.
    pub(super) fn release_taken_over(
        &mut self,
        cands: &[snapshot::Candidate],
        report: &mut IntervalReport,
    ) {
        for c in cands {
            let Verdict::Leave(reason) = &c.verdict else {
                continue;
            };
            if !self.homes.contains_key(&c.key) {
                continue;
            }
            let why = format!("released: {reason}");
            tracing::warn!(target: "homenode::decision", "pid {} ({}): {why}", c.key.pid, c.view.comm);
            // Taken over (a safety rule): never again. Left out by configuration: released,
            // and managed again if the configuration changes.
            if reason.is_safety() {
                self.never.insert(c.key, reason.to_string());
            }
            self.release(c.key);
            self.last
                .insert(c.key, (why.clone(), String::new(), journal::unix_now()));
            report.released.push((c.key, why));
        }
    }

    /// Restores what is still homenode's of process `key` (masks and slices) and forgets it.
    fn release(&mut self, key: ProcessKey) {
        self.homes.remove(&key);
        self.slices.remove(&key);
        if self.cfg.dry_run || self.journal.get(key).is_none() {
            return;
        }
        let o = self.actuator.clear_home(&mut self.journal, key);
        if let Outcome::Failed(e) = o {
            tracing::warn!("pid {}: restoring failed: {e}", key.pid);
        }
    }

    pub(super) fn count_skipped(&mut self, cands: &[snapshot::Candidate]) {
        let mut newly: Vec<String> = Vec::new();
        for c in cands {
            if let Verdict::Leave(r) = &c.verdict {
                if self.counted.insert(c.key) {
                    tracing::info!(target: "homenode::decision", "pid {} ({}): left alone: {r}", c.key.pid, c.view.comm);
                    newly.push(r.label().to_string());
                }
            }
        }
        if let Ok(mut s) = self.status.lock() {
            for l in newly {
                *s.counters.skipped.entry(l).or_default() += 1;
            }
        }
    }
}
