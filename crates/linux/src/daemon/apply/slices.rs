//! Scheduling slices: each thread's slice set through `sched_setattr`, journaled first, and
//! taken back.

use super::*;

impl Actuator {
    /// Carries out one decision's `SetSlice`s (see the module documentation): the journal is
    /// stored once before any thread is given a slice, and once after slices were taken back.
    /// Returns, per request in order, the outcome and the slice the daemon now holds for the
    /// process (`None`: none).
    pub fn set_slices(
        &mut self,
        journal: &mut Journal,
        reqs: &[SliceRequest],
    ) -> Vec<(Outcome, Option<HeldSlice>)> {
        let held = |ns: u64, given: bool| (ns > 0).then_some(HeldSlice { ns, given });
        if self.dry_run {
            return reqs
                .iter()
                .map(|r| (Outcome::DryRun, held(r.slice_ns, true)))
                .collect();
        }
        let base = if reqs.iter().any(|r| r.slice_ns > 0) && !self.no_custom_slices {
            match self.slice_ops.base_slice() {
                Ok(Some(b)) => Ok(b),
                Ok(None) => {
                    self.no_custom_slices = true;
                    tracing::warn!("{NO_CUSTOM_SLICES}; slices are skipped (said once)");
                    Err(NO_CUSTOM_SLICES.to_string())
                }
                Err(e) => Err(e.to_string()),
            }
        } else {
            Err(NO_CUSTOM_SLICES.to_string())
        };
        let mut out: Vec<SliceStep> = reqs
            .iter()
            .map(|r| self.journal_slice(journal, r, base.as_ref().copied()))
            .collect();
        let to_give =
            |r: &SliceRequest, o: &SliceStep| r.slice_ns > 0 && matches!(o, SliceStep::Threads(_));
        if reqs.iter().zip(&out).any(|(r, o)| to_give(r, o)) {
            if let Err(e) = journal.store(&self.journal_path) {
                let why = e.to_string();
                for (r, o) in reqs.iter().zip(out.iter_mut()) {
                    if to_give(r, o) {
                        *o = SliceStep::Finished(Outcome::Failed(why.clone()), None);
                    }
                }
            }
        }
        let mut taken_back = false;
        let done: Vec<(Outcome, Option<HeldSlice>)> = reqs
            .iter()
            .zip(out)
            .map(|(r, o)| {
                let dir = match o {
                    SliceStep::Finished(o, h) => return (o, h),
                    SliceStep::Threads(dir) => dir,
                };
                let ours = journal
                    .get(r.key)
                    .and_then(|e| e.slice.as_ref())
                    .map(journal::SliceApplied::ours)
                    .unwrap_or_default();
                if r.slice_ns > 0 {
                    let base = base.as_ref().copied().unwrap_or(0);
                    return match slice::set_threads_slice(
                        &dir,
                        r.slice_ns,
                        base,
                        &ours,
                        self.slice_ops.as_mut(),
                    ) {
                        Ok(Live::Alive(s)) => (Outcome::Done(s.describe()), held(r.slice_ns, true)),
                        Ok(Live::Gone) => (Outcome::Skipped("the process exited".into()), None),
                        // Some threads may have it: the journal says it is homenode's, so the
                        // undo takes it back; not asked again meanwhile.
                        Err(e) => (Outcome::Failed(e.to_string()), held(r.slice_ns, true)),
                    };
                }
                match slice::restore_threads_slice(&dir, &ours, self.slice_ops.as_mut()) {
                    Ok(Live::Alive(back)) => {
                        journal.clear_slice(r.key);
                        taken_back = true;
                        (
                            Outcome::Done(crate::daemon::describe_slice_restore(&back)),
                            None,
                        )
                    }
                    Ok(Live::Gone) => {
                        journal.clear_slice(r.key);
                        taken_back = true;
                        (Outcome::Skipped("the process exited".into()), None)
                    }
                    // The record stays: the daemon's exit (or `--restore`) tries again.
                    Err(e) => (Outcome::Failed(e.to_string()), None),
                }
            })
            .collect();
        if taken_back {
            // A record left on disk names slices no thread has any more: harmless.
            if let Err(e) = journal.store(&self.journal_path) {
                tracing::warn!("{e}");
            }
        }
        done
    }

    /// The first half of one `SetSlice`: its outcome when nothing is to be done to threads,
    /// else the process's directory, its threads to be set (the slice is then recorded in
    /// `journal`, in memory) or taken back. `base` is the kernel's base slice, or why there is
    /// none.
    fn journal_slice(
        &mut self,
        journal: &mut Journal,
        r: &SliceRequest,
        base: Result<u64, &String>,
    ) -> SliceStep {
        let done = |o: Outcome, h: Option<HeldSlice>| SliceStep::Finished(o, h);
        let held = |given: bool| {
            (r.slice_ns > 0).then_some(HeldSlice {
                ns: r.slice_ns,
                given,
            })
        };
        let recorded = journal.get(r.key).and_then(|e| e.slice.as_ref()).is_some();
        if r.slice_ns > 0 {
            if self.no_custom_slices {
                // Held as asked, so that the policy does not ask again every interval.
                return done(Outcome::Skipped(NO_CUSTOM_SLICES.into()), held(false));
            }
            if let Err(why) = base {
                return done(
                    Outcome::Failed(format!("the kernel's base slice is unknown: {why}")),
                    held(false),
                );
            }
            if journal.get(r.key).is_none() {
                return done(
                    Outcome::Skipped(
                        "homenode gives slices only to processes it homed, and it has no home"
                            .into(),
                    ),
                    None,
                );
            }
        } else if !recorded {
            let why = if self.no_custom_slices {
                NO_CUSTOM_SLICES
            } else {
                "homenode gave it no slice: nothing to take back"
            };
            return done(Outcome::Skipped(why.into()), None);
        }
        let dir = match ProcDir::open(&self.root, r.key.pid).map(Live::alive) {
            Ok(Some(d)) => d,
            Ok(None) => return done(Outcome::Skipped("the process exited".into()), None),
            Err(e) => return done(Outcome::Failed(e.to_string()), None),
        };
        match dir.stat() {
            Ok(Live::Alive(st)) if st.starttime == r.key.starttime => {}
            Ok(Live::Alive(_)) => {
                return done(
                    Outcome::Skipped("the PID now names another process".into()),
                    None,
                );
            }
            Ok(Live::Gone) => return done(Outcome::Skipped("the process exited".into()), None),
            Err(e) => return done(Outcome::Failed(e.to_string()), None),
        }
        if r.slice_ns > 0 {
            journal.set_slice(r.key, slice::kernel_slice(r.slice_ns));
        }
        SliceStep::Threads(dir)
    }
}
