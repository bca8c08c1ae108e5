//! One log line per process per decision for its memory moves: the policy asks for a
//! process's remote memory in batches (`batch_mib` each, from one node to another), and a line
//! per batch, skipped ones included, filled the log.

use std::collections::BTreeMap;

use policy::Action;
use topo::NodeId;

use super::apply::{Moved, Outcome};
use crate::sample::ProcessKey;

/// The memory moves of one decision, by process.
#[derive(Debug, Default)]
pub struct MoveLog {
    procs: BTreeMap<ProcessKey, ProcMoves>,
}

#[derive(Debug, Default)]
struct ProcMoves {
    /// The reason of its first batch.
    reason: String,
    /// Bytes asked and batches per (from, to).
    routes: BTreeMap<(NodeId, NodeId), (u64, u32)>,
    pages_moved: u64,
    pages_failed: u64,
    /// Batches per outcome label, with the first skip or failure's text.
    outcomes: BTreeMap<&'static str, (u32, Option<String>)>,
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20))
}

impl MoveLog {
    pub fn is_empty(&self) -> bool {
        self.procs.is_empty()
    }

    /// Counts one `MoveMemory` batch and what became of it.
    pub fn add(&mut self, a: &Action, o: &Outcome, m: &Moved) {
        let Action::MoveMemory {
            pid,
            start_time,
            from,
            to,
            bytes,
            reason,
        } = a
        else {
            return;
        };
        let key = ProcessKey {
            pid: *pid,
            starttime: *start_time,
        };
        let p = self.procs.entry(key).or_default();
        if p.reason.is_empty() {
            p.reason.clone_from(reason);
        }
        let r = p.routes.entry((*from, *to)).or_default();
        r.0 += bytes;
        r.1 += 1;
        p.pages_moved += m.pages_moved;
        p.pages_failed += m.pages_failed;
        let text = match o {
            Outcome::Skipped(s) | Outcome::Failed(s) => Some(s.clone()),
            Outcome::Done(_) | Outcome::DryRun => None,
        };
        let c = p.outcomes.entry(o.label()).or_default();
        c.0 += 1;
        if c.1.is_none() {
            c.1 = text;
        }
    }

    /// One line per process, ascending PID: `(process, the action, the outcome, any failed)`.
    pub fn lines(&self) -> Vec<(ProcessKey, String, String, bool)> {
        self.procs
            .iter()
            .map(|(key, p)| {
                let pid = key.pid;
                let total: u64 = p.routes.values().map(|r| r.0).sum();
                let batches: u32 = p.routes.values().map(|r| r.1).sum();
                let routes: Vec<String> = p
                    .routes
                    .iter()
                    .map(|((f, t), (b, _))| format!("node {f} to {t}: {}", mib(*b)))
                    .collect();
                let action = format!(
                    "pid {pid}: move {} in {batches} batch{} ({}): {}",
                    mib(total),
                    if batches == 1 { "" } else { "es" },
                    routes.join(", "),
                    p.reason
                );
                let outcome: Vec<String> = p
                    .outcomes
                    .iter()
                    .map(|(label, (n, text))| match (*label, text) {
                        ("done", _) => format!(
                            "done {n} ({} moved, {} failed)",
                            topo::count(p.pages_moved, "page"),
                            p.pages_failed
                        ),
                        ("dry_run", _) => format!("dry run {n}"),
                        (l, Some(t)) => format!("{l} {n} ({t})"),
                        (l, None) => format!("{l} {n}"),
                    })
                    .collect();
                let failed = p.outcomes.contains_key("failed");
                (*key, action, outcome.join(", "), failed)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(pid: u32, from: NodeId, mib: u64) -> Action {
        Action::MoveMemory {
            pid,
            start_time: 1,
            from,
            to: 2,
            bytes: mib << 20,
            reason: format!("memory of pid {pid} home"),
        }
    }

    /// Four batches of one process (two done, two skipped for one reason) and one of another:
    /// two lines, each with the totals.
    #[test]
    fn one_line_per_process_with_its_batches_counted() {
        let mut log = MoveLog::default();
        let moved = Moved {
            pages_found: 8192,
            pages_moved: 8192,
            pages_failed: 0,
            bytes_moved: 32 << 20,
        };
        let done = Outcome::Done("8192 pages moved, 0 failed".into());
        let skip = Outcome::Skipped("searched out".into());
        log.add(&batch(7, 0, 32), &done, &moved);
        log.add(&batch(7, 0, 32), &done, &moved);
        log.add(&batch(7, 3, 32), &skip, &Moved::default());
        log.add(&batch(7, 3, 8), &skip, &Moved::default());
        log.add(&batch(9, 1, 4), &Outcome::DryRun, &Moved::default());
        let lines = log.lines();
        assert_eq!(lines.len(), 2, "{lines:?}");
        let (pid, action, outcome, failed) = &lines[0];
        assert_eq!(pid.pid, 7);
        assert_eq!(
            action,
            "pid 7: move 104.0 MiB in 4 batches (node 0 to 2: 64.0 MiB, node 3 to 2: 40.0 MiB): memory of pid 7 home"
        );
        assert_eq!(
            outcome,
            "done 2 (16384 pages moved, 0 failed), skipped 2 (searched out)"
        );
        assert!(!failed);
        assert_eq!(lines[1].2, "dry run 1");
    }
}
