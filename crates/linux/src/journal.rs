//! The undo journal: what homenode changed, so that it can be undone after a stop, a crash or a
//! `--restore`.
//!
//! For each process homenode manages, keyed by [`ProcessKey`] (PID and start time), the
//! journal holds the original affinity of each thread (TID, thread start time, mask), the
//! original mask of the main thread (given to threads born after the recording, which
//! inherited homenode's mask), what homenode applied (the CPU mask, the home nodes), and the
//! scheduling slice it gave the process's threads, if it gave one ([`SliceApplied`]).
//!
//! # Protocol
//!
//! 1. Before changing a process: [`capture`] its threads' affinities, [`Journal::record`]
//!    them, [`Journal::set_applied`] the mask about to be set (for a change of home,
//!    [`Journal::set_applied_changing`], which keeps the old masks as `previous`), and
//!    [`Journal::store`].
//! 2. Change the affinity; record the mask read back (the kernel narrows it to the cpuset) with
//!    `set_applied` again. New threads found at later intervals are added with
//!    [`Journal::record_thread`] before they are changed.
//! 3. Before giving a journaled process's threads a scheduling slice: [`Journal::set_slice`]
//!    and [`Journal::store`]; then set them ([`crate::slice::set_threads_slice`]). Once its
//!    threads have the kernel's default back, [`Journal::clear_slice`].
//! 4. To undo: [`restore`]. Entries it finished with ([`RestoreReport::done`]) are removed.
//!
//! # Restore rules
//!
//! - The process must still exist with the same start time; a reused PID is never touched
//!   ([`RestoreOutcome::PidReused`]); an exited one is [`RestoreOutcome::Gone`].
//! - Every thread now in `task/` goes back to its recorded original (TID *and* thread start
//!   time must match), or to the main thread's original if it was born after the recording.
//! - Only a thread whose current mask is still the one homenode applied (or one of its
//!   `previous` masks, left by a crash during a change of home) is changed: if
//!   someone else set another mask since, theirs stays (counted as `changed_by_others`); a
//!   thread already at its original is left as is.
//! - With a `slice`: every thread (new ones included: they inherit their creator's slice)
//!   whose policy is `SCHED_OTHER` or `SCHED_BATCH` and whose slice is one homenode gave the
//!   process gets the kernel's default slice back; any other slice stays. Homenode only ever
//!   gives a slice to threads that had the default, so the default is every such thread's
//!   original.
//!
//! # File format
//!
//! JSON, written atomically (temporary file in the same directory, `fsync`, `rename` over the
//! journal, `fsync` of the directory) with mode 0600, so that a crash at any point leaves
//! either the old or the new journal, never a torn one:
//!
//! ```json
//! {
//!   "format": "homenode-journal",
//!   "version": 1,
//!   "processes": [
//!     {
//!       "pid": 4242, "starttime": 91234, "comm": "worker", "recorded_unix_s": 1700000000,
//!       "default_cpus": "0-7",
//!       "threads": [ { "tid": 4242, "starttime": 91234, "cpus": "0-7" },
//!                    { "tid": 4243, "starttime": 91240, "cpus": "0-7" } ],
//!       "applied": { "cpus": "0-3", "nodes": "0", "unix_s": 1700000002 },
//!       "slice": { "ns": 100000000, "unix_s": 1700000004 }
//!     }
//!   ]
//! }
//! ```
//!
//! Masks are in the kernel's list format. `slice` is absent when homenode gave the process no
//! slice (and in every journal written before slices existed, which still load); `previous`
//! lists the other slices it gave the process before (after a change of `slice_ms`), absent
//! when none. Unknown keys, another `format` or `version`, duplicate processes or threads make
//! the file [`JournalError::Corrupt`]: the caller decides what to do (nothing is restored
//! from a file that cannot be trusted). So a homenode from before slices refuses a journal
//! that holds one rather than leave a slice it cannot undo.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use topo::CpuSet;

use crate::affinity::{AffinityOps, SystemAffinity};
use crate::error::{Error, JournalError, one_line};
use crate::procfs::ProcDir;
use crate::sample::ProcessKey;
use crate::slice::{SliceOps, SliceRestored, SystemSlice};
use crate::{Live, Pid, Tid};

/// The `format` field of every journal.
pub const FORMAT: &str = "homenode-journal";
/// The version this code writes and reads.
pub const VERSION: u32 = 1;

/// The original affinity of one thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadOriginal {
    pub tid: Tid,
    /// Thread start time (ticks after boot), so that a reused TID is not mistaken for it.
    pub starttime: u64,
    pub cpus: CpuSet,
}

/// What homenode set on a process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Applied {
    /// The CPU mask set on its threads (as read back from the kernel).
    pub cpus: CpuSet,
    /// Its home node(s), for the record.
    pub nodes: CpuSet,
    /// When, seconds since the epoch.
    pub unix_s: u64,
    /// While a change of home is under way, the masks homenode had set before it (one, or
    /// more when an earlier change failed part-way and was never confirmed). The new mask is
    /// stored before the threads are set, so a crash in between leaves threads at these; they
    /// are still homenode's to restore. Cleared once the new mask is read back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous: Vec<CpuSet>,
}

impl Applied {
    /// Whether a thread at `mask` carries a mask homenode set (the current one, or one from
    /// before a change that did not complete).
    pub fn is_ours(&self, mask: &CpuSet) -> bool {
        &self.cpus == mask || self.previous.contains(mask)
    }
}

/// The scheduling slice homenode gave a process's threads (Linux 6.12 and later,
/// [`crate::slice`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceApplied {
    /// The slice, ns, as the kernel holds it (clamped to 0.1-100 ms).
    pub ns: u64,
    /// When it was recorded, seconds since the epoch.
    pub unix_s: u64,
    /// Other slices homenode gave this process before (a change of `slice_ms` while it ran):
    /// a thread still at one of them, such as one born from a thread the change did not reach,
    /// is homenode's too. Kept while the process has a slice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous: Vec<u64>,
}

impl SliceApplied {
    /// Every slice of homenode's on this process: the current one first.
    pub fn ours(&self) -> Vec<u64> {
        std::iter::once(self.ns)
            .chain(self.previous.iter().copied())
            .collect()
    }
}

/// One managed process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalEntry {
    pub pid: Pid,
    pub starttime: u64,
    pub comm: String,
    /// When the originals were recorded, seconds since the epoch.
    pub recorded_unix_s: u64,
    /// The main thread's original mask: the target for threads born after the recording.
    pub default_cpus: CpuSet,
    /// Original mask of each thread known so far, ascending TID.
    pub threads: Vec<ThreadOriginal>,
    /// What homenode applied; `None` until it applies something.
    pub applied: Option<Applied>,
    /// The scheduling slice homenode gave its threads; `None` when it gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice: Option<SliceApplied>,
}

impl JournalEntry {
    pub fn key(&self) -> ProcessKey {
        ProcessKey {
            pid: self.pid,
            starttime: self.starttime,
        }
    }

    fn thread(&self, tid: Tid, starttime: u64) -> Option<&ThreadOriginal> {
        self.threads
            .binary_search_by_key(&tid, |t| t.tid)
            .ok()
            .map(|i| &self.threads[i])
            .filter(|t| t.starttime == starttime)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFormat {
    format: String,
    version: u32,
    processes: Vec<JournalEntry>,
}

/// The journal in memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Journal {
    entries: BTreeMap<ProcessKey, JournalEntry>,
}

/// Seconds since the epoch, now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Journal {
    pub fn new() -> Journal {
        Journal::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, key: ProcessKey) -> Option<&JournalEntry> {
        self.entries.get(&key)
    }

    /// Entries in key order.
    pub fn entries(&self) -> impl Iterator<Item = &JournalEntry> {
        self.entries.values()
    }

    /// Adds a process's originals. If the process is already journaled, its recorded
    /// originals are kept (they are the true originals; the current masks may be homenode's)
    /// and only threads it did not know are added.
    pub fn record(&mut self, mut entry: JournalEntry) {
        entry.threads.sort_by_key(|t| t.tid);
        entry.threads.dedup_by_key(|t| t.tid);
        match self.entries.get_mut(&entry.key()) {
            Some(old) => {
                for t in entry.threads {
                    Self::add_thread(old, t);
                }
            }
            None => {
                self.entries.insert(entry.key(), entry);
            }
        }
    }

    /// Adds the original of a thread found after the process was recorded (kept if the thread
    /// is already known). False when the process is not journaled.
    pub fn record_thread(&mut self, key: ProcessKey, thread: ThreadOriginal) -> bool {
        match self.entries.get_mut(&key) {
            Some(e) => {
                Self::add_thread(e, thread);
                true
            }
            None => false,
        }
    }

    fn add_thread(e: &mut JournalEntry, t: ThreadOriginal) {
        match e.threads.binary_search_by_key(&t.tid, |x| x.tid) {
            Ok(i) if e.threads[i].starttime == t.starttime => {}
            // Same TID, different thread: the old one exited, its TID was reused in this process.
            Ok(i) => e.threads[i] = t,
            Err(i) => e.threads.insert(i, t),
        }
    }

    /// Records what homenode applied to a journaled process. False when it is not journaled.
    pub fn set_applied(&mut self, key: ProcessKey, cpus: CpuSet, nodes: CpuSet) -> bool {
        self.set_applied_after(key, cpus, nodes, Vec::new())
    }

    /// Records the mask homenode is about to set on a process it already changed. The masks
    /// it set before (the applied one and any earlier unconfirmed ones) are kept as
    /// `previous`, so that a restore after a crash in between still recognises threads at
    /// any of them. False when the process is not journaled.
    pub fn set_applied_changing(&mut self, key: ProcessKey, cpus: CpuSet, nodes: CpuSet) -> bool {
        let previous = match self.entries.get(&key).and_then(|e| e.applied.as_ref()) {
            Some(a) => std::iter::once(&a.cpus)
                .chain(&a.previous)
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        self.set_applied_after(key, cpus, nodes, previous)
    }

    fn set_applied_after(
        &mut self,
        key: ProcessKey,
        cpus: CpuSet,
        nodes: CpuSet,
        mut previous: Vec<CpuSet>,
    ) -> bool {
        match self.entries.get_mut(&key) {
            Some(e) => {
                previous.retain(|p| *p != cpus);
                previous.sort();
                previous.dedup();
                e.applied = Some(Applied {
                    cpus,
                    nodes,
                    unix_s: unix_now(),
                    previous,
                });
                true
            }
            None => false,
        }
    }

    /// Records the slice homenode is about to give a journaled process's threads (`ns` as the
    /// kernel holds it). A slice it gave before stays in `previous`. False when the process is
    /// not journaled.
    pub fn set_slice(&mut self, key: ProcessKey, ns: u64) -> bool {
        let Some(e) = self.entries.get_mut(&key) else {
            return false;
        };
        let mut previous = e.slice.as_ref().map(SliceApplied::ours).unwrap_or_default();
        previous.retain(|&p| p != ns);
        previous.sort_unstable();
        previous.dedup();
        e.slice = Some(SliceApplied {
            ns,
            unix_s: unix_now(),
            previous,
        });
        true
    }

    /// Forgets the slice of a journaled process (its threads have the default back). The
    /// slice it had, if any.
    pub fn clear_slice(&mut self, key: ProcessKey) -> Option<SliceApplied> {
        self.entries.get_mut(&key).and_then(|e| e.slice.take())
    }

    pub fn remove(&mut self, key: ProcessKey) -> Option<JournalEntry> {
        self.entries.remove(&key)
    }

    /// Drops the entries whose process has exited or whose PID was reused (nothing left to
    /// undo). Returns how many were dropped.
    pub fn forget_gone(&mut self, root: &Path) -> Result<usize, Error> {
        let mut drop = Vec::new();
        for key in self.entries.keys() {
            if current_starttime(root, key.pid)? != Some(key.starttime) {
                drop.push(*key);
            }
        }
        for k in &drop {
            self.entries.remove(k);
        }
        Ok(drop.len())
    }

    /// The journal as JSON text.
    pub fn to_json(&self) -> String {
        let f = FileFormat {
            format: FORMAT.to_string(),
            version: VERSION,
            processes: self.entries.values().cloned().collect(),
        };
        let mut s = serde_json::to_string_pretty(&f).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Parses journal text; `path` names the file in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<Journal, JournalError> {
        let corrupt = |reason: String| JournalError::Corrupt {
            path: path.to_path_buf(),
            reason: one_line(&reason),
        };
        if text.trim().is_empty() {
            return Err(corrupt("empty file".into()));
        }
        let f: FileFormat = serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
        if f.format != FORMAT {
            return Err(corrupt(format!(
                "format `{}`, expected `{FORMAT}`",
                f.format
            )));
        }
        if f.version != VERSION {
            return Err(corrupt(format!(
                "version {} (this homenode reads version {VERSION})",
                f.version
            )));
        }
        let mut j = Journal::new();
        for mut e in f.processes {
            let key = e.key();
            if j.entries.contains_key(&key) {
                return Err(corrupt(format!(
                    "process {} (start time {}) listed twice",
                    key.pid, key.starttime
                )));
            }
            let n = e.threads.len();
            e.threads.sort_by_key(|t| t.tid);
            e.threads.dedup_by_key(|t| t.tid);
            if e.threads.len() != n {
                return Err(corrupt(format!(
                    "process {}: a thread listed twice",
                    key.pid
                )));
            }
            j.entries.insert(key, e);
        }
        Ok(j)
    }

    /// Reads the journal at `path`; an absent file is an empty journal (nothing to undo). The
    /// daemon acts on what the journal says, so a link, a file that another user owns or can
    /// write, and a file over [`crate::trust::MAX_FILE_BYTES`] are refused ([`crate::trust`]).
    pub fn load(path: &Path) -> Result<Journal, JournalError> {
        match crate::trust::read_state(path) {
            Ok(bytes) => {
                let text = std::str::from_utf8(&bytes).map_err(|e| JournalError::Corrupt {
                    path: path.to_path_buf(),
                    reason: format!("not UTF-8: {e}"),
                })?;
                Journal::from_json(text, path)
            }
            Err(e) if e.is_not_found() => Ok(Journal::new()),
            Err(e) => Err(JournalError::Untrusted(e)),
        }
    }

    /// Writes the journal to `path` atomically (see the module documentation). The directory
    /// must exist.
    pub fn store(&self, path: &Path) -> Result<(), JournalError> {
        write_atomic(path, self.to_json().as_bytes())
    }
}

fn write_atomic(path: &Path, data: &[u8]) -> Result<(), JournalError> {
    let err = |step: &'static str| {
        move |error: io::Error| JournalError::Write {
            path: path.to_path_buf(),
            step,
            error,
        }
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if path.file_name().is_none() {
        return Err(err("name")(io::Error::from(io::ErrorKind::InvalidInput)));
    }
    // An exclusive create under an unpredictable name: a link planted beside the journal
    // cannot make root write through it.
    let (tmp, mut f) = crate::trust::create_temp(path).map_err(|e| match e {
        crate::trust::TrustError::Io { error, .. } => err("create temporary file")(error),
        refused => JournalError::Untrusted(refused),
    })?;
    let result = (|| {
        f.write_all(data).map_err(err("write temporary file"))?;
        f.sync_all().map_err(err("fsync temporary file"))?;
        drop(f);
        fs::rename(&tmp, path).map_err(err("rename over the journal"))?;
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(err("fsync directory"))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The start time of process `pid` now; `None` when there is no such process.
fn current_starttime(root: &Path, pid: Pid) -> Result<Option<u64>, Error> {
    Ok(crate::procfs::stat::read(root, pid)?
        .alive()
        .map(|s| s.starttime))
}

/// Reads a process's current thread affinities into a journal entry (to [`Journal::record`]
/// before changing it), with the kernel's affinity calls.
pub fn capture(root: &Path, pid: Pid) -> Result<Live<JournalEntry>, Error> {
    capture_with(root, pid, &mut SystemAffinity)
}

/// [`capture`] with the given affinity calls.
pub fn capture_with(
    root: &Path,
    pid: Pid,
    ops: &mut dyn AffinityOps,
) -> Result<Live<JournalEntry>, Error> {
    let Live::Alive(dir) = ProcDir::open(root, pid)? else {
        return Ok(Live::Gone);
    };
    let Live::Alive(stat) = dir.stat()? else {
        return Ok(Live::Gone);
    };
    let Live::Alive(tids) = dir.tids()? else {
        return Ok(Live::Gone);
    };
    let mut threads = Vec::with_capacity(tids.len());
    let mut default_cpus = None;
    for tid in tids {
        let Live::Alive(ts) = dir.task_stat(tid)? else {
            continue;
        };
        let Live::Alive(cpus) = ops.get(tid)? else {
            continue;
        };
        if tid == pid {
            default_cpus = Some(cpus.clone());
        }
        threads.push(ThreadOriginal {
            tid,
            starttime: ts.starttime,
            cpus,
        });
    }
    let Some(default_cpus) = default_cpus.or_else(|| threads.first().map(|t| t.cpus.clone()))
    else {
        return Ok(Live::Gone);
    };
    Ok(Live::Alive(JournalEntry {
        pid,
        starttime: stat.starttime,
        comm: stat.comm,
        recorded_unix_s: unix_now(),
        default_cpus,
        threads,
        applied: None,
        slice: None,
    }))
}

/// What [`restore`] did for one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// The process was found and its threads examined.
    Restored {
        /// Threads set back to their original mask.
        threads_restored: usize,
        /// Threads already at their original mask.
        threads_unchanged: usize,
        /// Threads whose mask someone else changed after homenode: left as they are.
        changed_by_others: usize,
        /// Threads that exited during the restore.
        threads_gone: usize,
        /// What became of the threads' slices, when homenode had given the process one.
        slice: Option<SliceRestored>,
    },
    /// The process has exited: nothing to undo.
    Gone,
    /// The PID now names another process (different start time): not touched.
    PidReused { starttime_now: u64 },
    /// Reading the process or setting a thread failed; the entry should be kept.
    Failed { error: String },
}

/// What [`restore`] did, per journal entry, in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreReport {
    pub outcomes: Vec<(ProcessKey, String, RestoreOutcome)>,
}

impl RestoreReport {
    /// Entries finished with (everything except failures): remove them from the journal.
    pub fn done(&self) -> Vec<ProcessKey> {
        self.outcomes
            .iter()
            .filter(|(_, _, o)| !matches!(o, RestoreOutcome::Failed { .. }))
            .map(|(k, _, _)| *k)
            .collect()
    }

    /// Threads given the kernel's default slice back, over all processes.
    pub fn slices_restored(&self) -> usize {
        self.outcomes
            .iter()
            .map(|(_, _, o)| match o {
                RestoreOutcome::Restored { slice: Some(s), .. } => s.restored,
                _ => 0,
            })
            .sum()
    }

    /// Threads set back, over all processes.
    pub fn threads_restored(&self) -> usize {
        self.outcomes
            .iter()
            .map(|(_, _, o)| match o {
                RestoreOutcome::Restored {
                    threads_restored, ..
                } => *threads_restored,
                _ => 0,
            })
            .sum()
    }

    /// How many entries ended with an outcome matching `f`.
    pub fn count(&self, f: impl Fn(&RestoreOutcome) -> bool) -> usize {
        self.outcomes.iter().filter(|(_, _, o)| f(o)).count()
    }
}

/// Restores every journaled process still running (same PID and start time) with the
/// kernel's affinity and scheduling calls; see the module documentation for the rules. Never
/// fails as a whole: each entry has its outcome.
pub fn restore(journal: &Journal, root: &Path) -> RestoreReport {
    restore_with(journal, root, &mut SystemAffinity, &mut SystemSlice)
}

/// [`restore`] with the given affinity and scheduling calls.
pub fn restore_with(
    journal: &Journal,
    root: &Path,
    ops: &mut dyn AffinityOps,
    slices: &mut dyn SliceOps,
) -> RestoreReport {
    let mut report = RestoreReport::default();
    for e in journal.entries() {
        let outcome =
            restore_one(e, root, ops, slices).unwrap_or_else(|err| RestoreOutcome::Failed {
                error: err.to_string(),
            });
        report.outcomes.push((e.key(), e.comm.clone(), outcome));
    }
    report
}

fn restore_one(
    e: &JournalEntry,
    root: &Path,
    ops: &mut dyn AffinityOps,
    slices: &mut dyn SliceOps,
) -> Result<RestoreOutcome, Error> {
    let Live::Alive(dir) = ProcDir::open(root, e.pid)? else {
        return Ok(RestoreOutcome::Gone);
    };
    let Live::Alive(stat) = dir.stat()? else {
        return Ok(RestoreOutcome::Gone);
    };
    if stat.starttime != e.starttime {
        return Ok(RestoreOutcome::PidReused {
            starttime_now: stat.starttime,
        });
    }
    let Live::Alive(tids) = dir.tids()? else {
        return Ok(RestoreOutcome::Gone);
    };
    let (mut restored, mut unchanged, mut others, mut gone) = (0, 0, 0, 0);
    for tid in tids {
        let Live::Alive(ts) = dir.task_stat(tid)? else {
            gone += 1;
            continue;
        };
        let target = e
            .thread(tid, ts.starttime)
            .map_or(&e.default_cpus, |t| &t.cpus);
        let Live::Alive(current) = ops.get(tid)? else {
            gone += 1;
            continue;
        };
        if &current == target {
            unchanged += 1;
        } else if e.applied.as_ref().is_some_and(|a| a.is_ours(&current)) {
            match ops.set(tid, target)? {
                Live::Alive(()) => restored += 1,
                Live::Gone => gone += 1,
            }
        } else {
            others += 1;
        }
    }
    let slice = match &e.slice {
        Some(s) => match crate::slice::restore_threads_slice(&dir, &s.ours(), slices)? {
            Live::Alive(r) => Some(r),
            Live::Gone => return Ok(RestoreOutcome::Gone),
        },
        None => None,
    };
    Ok(RestoreOutcome::Restored {
        threads_restored: restored,
        threads_unchanged: unchanged,
        changed_by_others: others,
        threads_gone: gone,
        slice,
    })
}
