//! The daemon's start and end: publishing the status, restoring every journaled process on
//! shutdown, the single-daemon lock, and `homenode restore`.

use super::*;

impl Daemon {
    pub(super) fn publish(
        &self,
        snap: &Snapshot<'_>,
        cands: &[snapshot::Candidate],
        mut counters: status::Counters,
        report: &IntervalReport,
        seen: usize,
    ) {
        let t = self.host.topology();
        let nodes = (0..t.nr_nodes())
            .map(|n| status::NodeStatus {
                node: n,
                cpus: self.host.kernel_cpus(t.node_cpus(n)).to_list_string(),
                busy_cpus: (t.node_cpus(n).count() as f64 - snap.nodes[n].cpu_idle).max(0.0),
                free_bytes: snap.nodes[n].free_bytes,
                homed: self.homes.values().filter(|(h, _)| h.contains(&n)).count(),
            })
            .collect();
        let processes = cands
            .iter()
            .map(|c| {
                let v = &c.view;
                let rss = v.rss();
                let (action, outcome, at) = match self.last.get(&c.key) {
                    Some((a, o, at)) => (Some(a.clone()), Some(o.clone()), Some(*at)),
                    None => (None, None, None),
                };
                status::ProcessStatus {
                    pid: v.pid,
                    starttime: v.start_time,
                    comm: v.comm.clone(),
                    cpu_use: v.cpu_use,
                    home: self
                        .homes
                        .get(&c.key)
                        .map(|(h, _)| h.clone())
                        .unwrap_or_default(),
                    slice_ns: self
                        .slices
                        .get(&c.key)
                        .filter(|s| s.given)
                        .map_or(0, |s| s.ns),
                    time_pct: v.node_runtime.iter().map(|s| s * 100.0).collect(),
                    memory_pct: if rss > 0 {
                        v.node_bytes
                            .iter()
                            .map(|&b| b as f64 * 100.0 / rss as f64)
                            .collect()
                    } else {
                        Vec::new()
                    },
                    memory_bytes: if rss > 0 {
                        v.node_bytes.clone()
                    } else {
                        Vec::new()
                    },
                    rss_bytes: rss,
                    left_alone: c
                        .verdict
                        .reason()
                        .map(ToString::to_string)
                        .or_else(|| self.never.get(&c.key).cloned()),
                    last_action: action,
                    last_outcome: outcome,
                    last_unix_s: at,
                }
            })
            .collect();
        if let Ok(mut s) = self.status.lock() {
            counters.skipped = s.counters.skipped.clone();
            s.counters = counters;
            s.intervals = self.intervals;
            s.uptime_s = self.since(self.started);
            s.last_cpu_ms = report.cpu_s * 1000.0;
            s.last_wall_ms = report.wall_s * 1000.0;
            s.no_custom_slices = self.actuator.no_custom_slices();
            s.processes_seen = seen;
            s.candidates = cands.len();
            s.nodes = nodes;
            s.processes = processes;
            s.notes = self.policy.notes().to_vec();
        }
    }

    /// Gives every journaled process back its original affinity (and the kernel's default
    /// slice to threads at homenode's) and drops the finished entries from the journal (a dry
    /// run has nothing to undo).
    pub fn shutdown(mut self) -> Result<RestoreReport, DaemonError> {
        if self.cfg.dry_run {
            return Ok(RestoreReport::default());
        }
        let r = journal::restore(&self.journal, &self.cfg.root);
        log_restore(&r);
        for k in r.done() {
            self.journal.remove(k);
        }
        self.journal.store(&self.cfg.journal)?;
        Ok(r)
    }
}

/// Whether process `key` still exists and every thread has exactly `mask`.
pub(super) fn still_ours(root: &Path, key: ProcessKey, mask: &CpuSet) -> Result<bool, DaemonError> {
    let alive = crate::procfs::stat::read(root, key.pid)?
        .alive()
        .is_some_and(|s| s.starttime == key.starttime);
    if !alive {
        return Ok(false);
    }
    match affinity::process_affinities(root, key.pid) {
        Ok(Live::Alive(m)) => Ok(m.values().all(|c| c == mask)),
        Ok(Live::Gone) => Ok(false),
        Err(e) => {
            tracing::warn!("pid {}: {e}", key.pid);
            Ok(false)
        }
    }
}

pub(super) fn log_restore(r: &RestoreReport) {
    use journal::RestoreOutcome as O;
    for (k, comm, o) in &r.outcomes {
        let what = match o {
            O::Restored {
                threads_restored,
                threads_unchanged,
                changed_by_others,
                threads_gone,
                slice,
            } => {
                let mut s = format!(
                    "restored {threads_restored} threads ({threads_unchanged} already at their original mask, {changed_by_others} changed by someone else and left so, {threads_gone} gone)"
                );
                if let Some(sl) = slice {
                    s.push_str(&format!("; {}", describe_slice_restore(sl)));
                }
                s
            }
            O::Gone => "exited: nothing to restore".into(),
            O::PidReused { starttime_now } => {
                format!("PID reused (start time now {starttime_now}): not touched")
            }
            O::Failed { error } => format!("restore failed: {error}"),
        };
        tracing::info!("pid {} ({comm}): {what}", k.pid);
    }
}

/// What a restore did to a process's slices, for the log and the status table.
pub fn describe_slice_restore(r: &crate::slice::SliceRestored) -> String {
    format!(
        "{} given the kernel's default slice back ({} at another slice left so, {} gone)",
        topo::count(r.restored, "thread"),
        r.left,
        r.gone
    )
}

/// Takes the exclusive lock `JOURNAL.lock`, creating the journal's directory (mode 0700).
pub(super) fn take_lock(journal: &Path) -> Result<nix::fcntl::Flock<File>, DaemonError> {
    let io = |path: &Path, what: &'static str| {
        let path = path.to_path_buf();
        move |source| DaemonError::Io { path, what, source }
    };
    if let Some(dir) = journal.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io(dir, "cannot create the journal directory"))?;
        }
    }
    let dir = match journal.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d,
        None => Path::new("."),
    };
    // Anyone who can write the journal's directory can replace the journal, and root would
    // then restore whatever masks it names.
    crate::trust::check_private_dir(dir).map_err(JournalError::Untrusted)?;
    let mut name = journal.as_os_str().to_owned();
    name.push(".lock");
    let path = PathBuf::from(name);
    let f = crate::trust::open_persistent(&path).map_err(JournalError::Untrusted)?;
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|_| DaemonError::Locked { path })
}

/// CPU time of the calling thread, seconds.
pub fn thread_cpu_s() -> f64 {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(0.0)
}

/// Only restores the journal (`homenode run --restore`), taking the lock so that a running
/// daemon is not undercut.
pub fn restore_only(journal_path: &Path, root: &Path) -> Result<RestoreReport, DaemonError> {
    let _lock = take_lock(journal_path)?;
    let mut j = Journal::load(journal_path)?;
    let r = journal::restore(&j, root);
    log_restore(&r);
    for k in r.done() {
        j.remove(k);
    }
    j.store(journal_path)?;
    Ok(r)
}
