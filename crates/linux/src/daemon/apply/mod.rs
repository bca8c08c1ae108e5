//! Carrying out a policy's actions on the live host, journal first.
//!
//! - **SetHome**, all of one decision's together: read each process's thread masks
//!   ([`journal::capture`]); check that its start time is the action's (a reused PID is never
//!   touched); record the originals and the mask about to be set; store the journal once;
//!   then set every thread's affinity (new threads are caught by re-listing `task/`), read the
//!   mask back (the kernel narrows it to the cpuset) and record it as the applied mask; store
//!   the journal once more.
//! - **ClearHome**: restore that process from the journal (only threads still at homenode's
//!   mask) and drop its entry.
//! - **MoveMemory**: find pages of the process's private mappings that are on the source node
//!   (`move_pages` status queries, at most `max_query_pages` per action, resuming where the
//!   previous action on that process stopped), then move up to the asked bytes to the
//!   destination with `move_pages` in batches of `batch_pages`. Skipped under fake NUMA, where
//!   the pseudo-nodes share one real node. A search that went through all of the process's
//!   pages and found fewer on the source node than asked for marks that (process, node) as
//!   searched out for the rest of the decision: its later batches are skipped without a
//!   query (beside the kernel's NUMA balancing, which may have moved the pages since the
//!   snapshot, each empty search read the node of every page again; under TCG ten of them
//!   took about a second of one interval). A search that finds no page at all is `skipped`, not
//!   `done` with 0 pages.
//! - **SetSlice**, all of one decision's together ([`Actuator::set_slices`]): measure the
//!   kernel's base slice once (a kernel without custom slices skips them all, and says so
//!   once in the log); check each process's start time; record the slice in its journal entry
//!   (a process homenode did not home has none, and is not given a slice); store the journal
//!   once; then give every thread the slice ([`crate::slice::set_threads_slice`]: threads of
//!   another policy or with a slice someone else set keep theirs). `SetSlice` 0 gives the
//!   threads at homenode's slice the kernel's default back and forgets the record (one store
//!   for the decision). Slices do not depend on nodes: under fake NUMA they are set as on any
//!   host, as homes are.
//!
//! In a dry run nothing is called and nothing is written: the outcome is [`Outcome::DryRun`].

mod memory;
mod slices;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use topo::{CpuSet, NodeId};

use crate::affinity::SystemAffinity;
use crate::error::Error;
use crate::journal::{self, Journal, JournalEntry};
use crate::migrate::{self, MoveOptions};
use crate::procfs::{ProcDir, maps};
use crate::sample::ProcessKey;
use crate::slice::{self, SliceOps, SystemSlice};
use crate::{Live, affinity};

use super::config::MemoryConfig;
use super::host::Host;

/// What happened to one action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done; what was done.
    Done(String),
    /// Dry run: logged only.
    DryRun,
    /// Not done, for a reason that is not a failure (exited, reused PID, fake NUMA).
    Skipped(String),
    /// The kernel refused or a file could not be written.
    Failed(String),
}

impl Outcome {
    /// `done`, `dry_run`, `skipped`, `failed`.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Done(_) => "done",
            Outcome::DryRun => "dry_run",
            Outcome::Skipped(_) => "skipped",
            Outcome::Failed(_) => "failed",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Done(s) => write!(f, "done: {s}"),
            Outcome::DryRun => f.write_str("dry run: not done"),
            Outcome::Skipped(s) => write!(f, "skipped: {s}"),
            Outcome::Failed(s) => write!(f, "failed: {s}"),
        }
    }
}

/// Result of a memory move.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    /// Pages of the process found on the source node (the ones asked to move).
    pub pages_found: u64,
    pub pages_moved: u64,
    pub pages_failed: u64,
    pub bytes_moved: u64,
}

/// One `SetHome` of a decision for [`Actuator::set_homes`].
#[derive(Clone, Debug)]
pub struct HomeRequest<'a> {
    pub key: ProcessKey,
    /// The home nodes (topology ids), for the journal.
    pub nodes: &'a [NodeId],
    /// The kernel CPUs to set.
    pub kcpus: CpuSet,
}

/// One `SetSlice` of a decision for [`Actuator::set_slices`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceRequest {
    pub key: ProcessKey,
    /// The slice asked for, ns; 0 for the kernel's default.
    pub slice_ns: u64,
}

/// The slice the daemon holds for a process after a `SetSlice`: the one the policy asked for
/// (shown to the policy, so that it does not ask again), and whether its threads were given it
/// (false on a kernel without custom slices, where nothing was changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldSlice {
    pub ns: u64,
    pub given: bool,
}

/// Why slices are skipped on a kernel that has none.
pub const NO_CUSTOM_SLICES: &str = "this kernel has no custom scheduling slices (a SCHED_OTHER \
     thread reads sched_runtime 0; they came with Linux 6.12): nothing was changed";

/// Where one `SetSlice` stands between the journal write and the threads.
enum SliceStep {
    /// Nothing (more) to do to threads: the outcome and the slice held.
    Finished(Outcome, Option<HeldSlice>),
    /// Its threads are to be set (or given the default back), through this handle.
    Threads(ProcDir),
}

/// Applies actions.
pub struct Actuator {
    pub root: PathBuf,
    pub journal_path: PathBuf,
    pub dry_run: bool,
    pub memory: MemoryConfig,
    /// Per process, the address where the last page search stopped.
    cursors: BTreeMap<ProcessKey, usize>,
    /// (process, kernel node) whose pages were all searched in this decision and found
    /// fewer than asked for on that node ([`Actuator::begin_decision`] forgets them).
    searched_out: BTreeSet<(ProcessKey, usize)>,
    /// Reading and setting threads' slices (the kernel's, or a fake in tests).
    slice_ops: Box<dyn SliceOps + Send>,
    /// Found once: the kernel has no custom slices.
    no_custom_slices: bool,
}

impl std::fmt::Debug for Actuator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Actuator")
            .field("root", &self.root)
            .field("journal_path", &self.journal_path)
            .field("dry_run", &self.dry_run)
            .field("no_custom_slices", &self.no_custom_slices)
            .finish_non_exhaustive()
    }
}

impl Actuator {
    pub fn new(root: &Path, journal_path: &Path, dry_run: bool, memory: MemoryConfig) -> Self {
        Actuator {
            root: root.to_path_buf(),
            journal_path: journal_path.to_path_buf(),
            dry_run,
            memory,
            cursors: BTreeMap::new(),
            searched_out: BTreeSet::new(),
            slice_ops: Box::new(SystemSlice),
            no_custom_slices: false,
        }
    }

    /// The same, reading and setting slices with `ops` (tests).
    pub fn with_slice_ops(mut self, ops: Box<dyn SliceOps + Send>) -> Self {
        self.slice_ops = ops;
        self
    }

    /// A new decision's actions follow: the pages of a process may be on other nodes now.
    pub fn begin_decision(&mut self) {
        self.searched_out.clear();
    }

    /// Whether the kernel was found to have no custom slices.
    pub fn no_custom_slices(&self) -> bool {
        self.no_custom_slices
    }

    /// Sets the homes of one decision, journal first: every process's originals and the mask
    /// about to be set are journaled and stored once, then each process's threads are set to
    /// its kernel CPUs and the masks read back, then the journal is stored once more. Two
    /// journal writes (each with its `fsync`s) per decision, not two per process: a decision
    /// may home hundreds of processes, and each write holds the whole journal. A crash between
    /// the writes leaves every entry marked as changing, which a restore recognises at either
    /// mask. Returns, per request in order, the outcome and, when done, the mask read back.
    pub fn set_homes(
        &mut self,
        journal: &mut Journal,
        reqs: &[HomeRequest<'_>],
    ) -> Vec<(Outcome, Option<CpuSet>)> {
        if self.dry_run {
            return reqs
                .iter()
                .map(|r| (Outcome::DryRun, Some(r.kcpus.clone())))
                .collect();
        }
        // `None`: journaled, not set yet.
        let mut out: Vec<Option<(Outcome, Option<CpuSet>)>> = reqs
            .iter()
            .map(|r| match self.journal_original(journal, r) {
                Ok(None) => None,
                Ok(Some(skipped)) => Some((skipped, None)),
                Err(e) => Some((Outcome::Failed(e.to_string()), None)),
            })
            .collect();
        if out.iter().any(Option::is_none) {
            if let Err(e) = journal.store(&self.journal_path) {
                let why = e.to_string();
                for o in out.iter_mut().filter(|o| o.is_none()) {
                    *o = Some((Outcome::Failed(why.clone()), None));
                }
            }
        }
        for (o, r) in out.iter_mut().zip(reqs) {
            if o.is_none() {
                *o = Some(match self.set_mask(journal, r) {
                    Ok(done) => done,
                    Err(e) => (Outcome::Failed(e.to_string()), None),
                });
            }
        }
        let done = |o: &Option<(Outcome, Option<CpuSet>)>| matches!(o, Some((Outcome::Done(_), _)));
        if out.iter().any(done) {
            if let Err(e) = journal.store(&self.journal_path) {
                let why = e.to_string();
                for o in out.iter_mut().filter(|o| done(o)) {
                    *o = Some((Outcome::Failed(why.clone()), None));
                }
            }
        }
        out.into_iter()
            .map(|o| o.unwrap_or_else(|| (Outcome::Failed("not attempted".into()), None)))
            .collect()
    }

    /// Journals (in memory) the originals of `r`'s process and the mask about to be set.
    /// `Some` is why it is skipped: it exited, or its PID names another process now.
    fn journal_original(
        &self,
        journal: &mut Journal,
        r: &HomeRequest<'_>,
    ) -> Result<Option<Outcome>, Error> {
        let Live::Alive(entry) = journal::capture(&self.root, r.key.pid)? else {
            return Ok(Some(Outcome::Skipped("the process exited".into())));
        };
        if entry.starttime != r.key.starttime {
            return Ok(Some(Outcome::Skipped(
                "the PID now names another process".into(),
            )));
        }
        let node_set: CpuSet = r.nodes.iter().copied().collect();
        journal.record(inherit_originals(journal.get(r.key), entry));
        // A change of home keeps the old mask as ours until the new one is read back.
        journal.set_applied_changing(r.key, r.kcpus.clone(), node_set);
        Ok(None)
    }

    /// Sets every thread of `r`'s (journaled) process to its kernel CPUs and records the mask
    /// read back (the kernel narrows it to the cpuset) as applied, in memory.
    fn set_mask(
        &self,
        journal: &mut Journal,
        r: &HomeRequest<'_>,
    ) -> Result<(Outcome, Option<CpuSet>), Error> {
        let Live::Alive(set) = affinity::set_process_affinity(&self.root, r.key.pid, &r.kcpus)?
        else {
            return Ok((Outcome::Skipped("the process exited".into()), None));
        };
        let back = match affinity::get_affinity(r.key.pid)? {
            Live::Alive(m) => m,
            Live::Gone => r.kcpus.clone(),
        };
        let node_set: CpuSet = r.nodes.iter().copied().collect();
        journal.set_applied(r.key, back.clone(), node_set);
        Ok((
            Outcome::Done(format!(
                "{} set to CPUs {back}",
                topo::count(set.set.len(), "thread")
            )),
            Some(back),
        ))
    }

    /// Gives process `key` its original masks back and forgets it.
    pub fn clear_home(&mut self, journal: &mut Journal, key: ProcessKey) -> Outcome {
        if self.dry_run {
            return Outcome::DryRun;
        }
        self.cursors.remove(&key);
        let Some(entry) = journal.get(key).cloned() else {
            return Outcome::Skipped("not in the journal".into());
        };
        let mut one = Journal::new();
        one.record(entry);
        let report = journal::restore_with(
            &one,
            &self.root,
            &mut SystemAffinity,
            self.slice_ops.as_mut(),
        );
        let text = match report.outcomes.first() {
            Some((_, _, journal::RestoreOutcome::Failed { error })) => {
                return Outcome::Failed(error.clone());
            }
            Some((_, _, o)) => format!("{o:?}"),
            None => String::new(),
        };
        journal.remove(key);
        match journal.store(&self.journal_path) {
            Ok(()) => Outcome::Done(format!("restored: {text}")),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }
}

/// A process already journaled gets its home changed: threads born since the recording are
/// captured with the mask they inherited, which is homenode's. Their true original is the main
/// thread's original (what they would have had without homenode), so record that instead.
pub fn inherit_originals(existing: Option<&JournalEntry>, mut entry: JournalEntry) -> JournalEntry {
    let Some(old) = existing else {
        return entry;
    };
    let Some(applied) = &old.applied else {
        return entry;
    };
    for t in &mut entry.threads {
        let known = old
            .threads
            .iter()
            .any(|o| o.tid == t.tid && o.starttime == t.starttime);
        if !known && t.cpus == applied.cpus {
            t.cpus = old.default_cpus.clone();
        }
    }
    entry
}

#[cfg(test)]
mod tests;
