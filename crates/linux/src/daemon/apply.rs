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
                        (Outcome::Done(super::describe_slice_restore(&back)), None)
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

    /// Moves up to `bytes` of process `key`'s memory from topology node `from` to `to`.
    pub fn move_memory(
        &mut self,
        host: &Host,
        key: ProcessKey,
        from: NodeId,
        to: NodeId,
        bytes: u64,
    ) -> (Outcome, Moved) {
        // Before the dry run's outcome: a dry run under fake NUMA says what the daemon would
        // do, and it would skip this move.
        if host.fake {
            return (
                Outcome::Skipped(
                    "fake NUMA: the pseudo-nodes share one real node, no memory to move".into(),
                ),
                Moved::default(),
            );
        }
        if self.dry_run {
            return (Outcome::DryRun, Moved::default());
        }
        let (Some(kfrom), Some(kto)) = (host.kernel_node(from), host.kernel_node(to)) else {
            return (
                Outcome::Failed(format!("node {from} or {to} is not a host node")),
                Moved::default(),
            );
        };
        if self.searched_out.contains(&(key, kfrom)) {
            return (
                Outcome::Skipped(format!(
                    "a search of all of its pages in this decision found no more on node {from}"
                )),
                Moved::default(),
            );
        }
        match self.try_move(key, kfrom, kto, bytes) {
            Ok(Some(m)) if m.pages_found == 0 => (
                Outcome::Skipped(format!(
                    "no page of its own memory was found on node {from} (moved since the figures were read)"
                )),
                m,
            ),
            Ok(Some(m)) => (
                Outcome::Done(format!(
                    "{} moved, {} failed",
                    topo::count(m.pages_moved, "page"),
                    m.pages_failed
                )),
                m,
            ),
            Ok(None) => (
                Outcome::Skipped("the process exited".into()),
                Moved::default(),
            ),
            Err(e) => (Outcome::Failed(e.to_string()), Moved::default()),
        }
    }

    fn try_move(
        &mut self,
        key: ProcessKey,
        kfrom: usize,
        kto: usize,
        bytes: u64,
    ) -> Result<Option<Moved>, Error> {
        let page = page_size();
        let want = (bytes / page).max(1) as usize;
        let Live::Alive(stat) = crate::procfs::stat::read(&self.root, key.pid)? else {
            return Ok(None);
        };
        if stat.starttime != key.starttime {
            return Ok(None);
        }
        let Live::Alive(mappings) = maps::read(&self.root, key.pid)? else {
            return Ok(None);
        };
        let addrs: Vec<usize> = mappings
            .iter()
            .filter(|m| m.is_private() && is_own_memory(&m.path))
            .flat_map(|m| m.page_addresses(page))
            .collect();
        if addrs.is_empty() {
            self.searched_out.insert((key, kfrom));
            return Ok(Some(Moved::default()));
        }
        let cursor = self.cursors.get(&key).copied().unwrap_or(0);
        let start = addrs.partition_point(|&a| a < cursor) % addrs.len();
        let batch = self.memory.batch_pages;
        let mut found = Vec::with_capacity(want.min(1 << 16));
        let mut queried = 0usize;
        let mut last = cursor;
        let order = addrs[start..].iter().chain(addrs[..start].iter());
        let mut chunk = Vec::with_capacity(batch);
        for &a in order {
            chunk.push(a);
            if chunk.len() == batch {
                queried += chunk.len();
                if !query(key.pid, &chunk, kfrom, batch, &mut found)? {
                    return Ok(None);
                }
                last = a.saturating_add(1);
                chunk.clear();
                if found.len() >= want || queried >= self.memory.max_query_pages {
                    break;
                }
            }
        }
        if !chunk.is_empty() && found.len() < want && queried < self.memory.max_query_pages {
            if !query(key.pid, &chunk, kfrom, batch, &mut found)? {
                return Ok(None);
            }
            queried += chunk.len();
            last = chunk.last().map_or(last, |a| a.saturating_add(1));
        }
        self.cursors.insert(key, last);
        if queried >= addrs.len() && found.len() < want {
            // Every page was looked at: the next batches of this decision would find no more.
            self.searched_out.insert((key, kfrom));
        }
        found.truncate(want);
        if found.is_empty() {
            return Ok(Some(Moved::default()));
        }
        let opts = MoveOptions {
            batch,
            move_all: false,
        };
        let Live::Alive(report) = migrate::move_pages(key.pid, &found, kto, opts)? else {
            return Ok(None);
        };
        let moved = report.on_node(kto) as u64;
        Ok(Some(Moved {
            pages_found: found.len() as u64,
            pages_moved: moved,
            pages_failed: report.failed() as u64,
            bytes_moved: moved * page,
        }))
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

/// Queries the node of each page of `chunk`, appending those on `node` to `found`. False when
/// the process exited.
fn query(
    pid: u32,
    chunk: &[usize],
    node: usize,
    batch: usize,
    found: &mut Vec<usize>,
) -> Result<bool, Error> {
    let Live::Alive(r) = migrate::page_nodes(pid, chunk, batch)? else {
        return Ok(false);
    };
    found.extend(
        chunk
            .iter()
            .zip(&r.status)
            .filter(|(_, s)| s.node() == Some(node))
            .map(|(a, _)| *a),
    );
    Ok(true)
}

/// The process's own memory: anonymous mappings, heap, stack (not files, not the vDSO).
fn is_own_memory(path: &str) -> bool {
    path.is_empty() || path == "[heap]" || path == "[stack]" || path.starts_with("[anon:")
}

fn page_size() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
        Ok(Some(p)) if p > 0 => p as u64,
        _ => 4096,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Applied, ThreadOriginal};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).expect("cpus")
    }

    fn thread(tid: u32, starttime: u64, cpus: &str) -> ThreadOriginal {
        ThreadOriginal {
            tid,
            starttime,
            cpus: set(cpus),
        }
    }

    #[test]
    fn threads_born_under_homenode_get_the_main_threads_original() {
        let old = JournalEntry {
            pid: 10,
            starttime: 5,
            comm: "w".into(),
            recorded_unix_s: 0,
            default_cpus: set("0-7"),
            threads: vec![thread(10, 5, "0-7")],
            applied: Some(Applied {
                cpus: set("0-3"),
                nodes: set("0"),
                unix_s: 0,
                previous: Vec::new(),
            }),
            slice: None,
        };
        // Captured again at a home change: the main thread and a new thread both have
        // homenode's mask; a third thread was pinned by its program to CPU 6.
        let now = JournalEntry {
            threads: vec![
                thread(10, 5, "0-3"),
                thread(11, 9, "0-3"),
                thread(12, 9, "6"),
            ],
            ..old.clone()
        };
        let fixed = inherit_originals(Some(&old), now.clone());
        assert_eq!(
            fixed.threads[1].cpus,
            set("0-7"),
            "new thread: main's original"
        );
        assert_eq!(
            fixed.threads[2].cpus,
            set("6"),
            "its own mask is its original"
        );
        // The known main thread keeps what the journal has (record keeps old originals).
        let mut j = Journal::new();
        j.record(old.clone());
        j.record(fixed);
        let e = j.get(old.key()).expect("entry");
        assert_eq!(e.threads[0].cpus, set("0-7"));
        assert_eq!(e.threads.len(), 3);
        // A first recording is taken as is.
        assert_eq!(inherit_originals(None, now.clone()), now);
    }
}

#[cfg(test)]
mod batch_tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// Two live children and one PID whose start time does not match are homed in one batch
    /// (to the children's own masks, so the test needs no particular CPUs): the children are
    /// done, the mismatch skipped, and the journal on disk holds both children with the
    /// applied mask read back.
    #[test]
    fn one_batch_journals_every_home_and_skips_a_reused_pid() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("journal.json");
        let mut kids: Vec<_> = (0..2)
            .map(|_| {
                Command::new("sleep")
                    .arg("30")
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("sleep")
            })
            .collect();
        let root = Path::new("/");
        let keys: Vec<(ProcessKey, CpuSet)> = kids
            .iter()
            .map(|k| {
                let Ok(Live::Alive(e)) = journal::capture(root, k.id()) else {
                    panic!("child {} not found", k.id());
                };
                (
                    ProcessKey {
                        pid: k.id(),
                        starttime: e.starttime,
                    },
                    e.default_cpus,
                )
            })
            .collect();
        let reused = ProcessKey {
            pid: keys[0].0.pid,
            starttime: keys[0].0.starttime + 1,
        };
        let nodes = [0usize];
        let mut reqs: Vec<HomeRequest<'_>> = keys
            .iter()
            .map(|(key, cpus)| HomeRequest {
                key: *key,
                nodes: &nodes,
                kcpus: cpus.clone(),
            })
            .collect();
        reqs.insert(
            1,
            HomeRequest {
                key: reused,
                nodes: &nodes,
                kcpus: keys[0].1.clone(),
            },
        );
        let mut act = Actuator::new(root, &path, false, MemoryConfig::default());
        let mut journal = Journal::new();
        let out = act.set_homes(&mut journal, &reqs);
        for k in &mut kids {
            let _ = k.kill();
            let _ = k.wait();
        }
        assert_eq!(out.len(), 3);
        assert!(matches!(out[0].0, Outcome::Done(_)), "{out:?}");
        assert!(matches!(out[1].0, Outcome::Skipped(_)), "{out:?}");
        assert!(matches!(out[2].0, Outcome::Done(_)), "{out:?}");
        let stored = Journal::load(&path).expect("journal");
        for (key, cpus) in &keys {
            let e = stored.get(*key).expect("journaled");
            let applied = e.applied.as_ref().expect("applied");
            assert_eq!(&applied.cpus, cpus);
            assert!(applied.previous.is_empty(), "read back: {applied:?}");
        }
        assert!(stored.get(reused).is_none());
    }
}
