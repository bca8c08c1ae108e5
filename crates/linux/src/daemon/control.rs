//! Requests an operator sends a running daemon over its status socket: `manage PID` and
//! `unmanage PID` (as numad's `-p` and `-x`). They stand until the daemon stops or the
//! opposite request: an unmanaged PID is excluded as if the configuration named it (a process
//! homenode homed is released at the next interval: its masks and slices are restored), a
//! managed one is no longer excluded by PID, and is added to the include list when there is
//! one. No request lifts a safety rule (kernel threads, real-time, pinned by someone else...).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::exclude::Rules;

/// Why a request is refused; the text goes back to the operator.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The verb is known, the rest is not a PID above 0.
    #[error("expected `{verb} PID`")]
    Usage { verb: &'static str },
    #[error("pid {pid}: no such process")]
    NoSuchProcess { pid: u32 },
}

/// One request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Manage(u32),
    Unmanage(u32),
}

impl Request {
    /// Parses a request line: `manage PID` or `unmanage PID`. `None` for another verb.
    pub fn parse(line: &str) -> Option<Result<Request, RequestError>> {
        let mut words = line.split_whitespace();
        let (verb, make): (&'static str, fn(u32) -> Request) = match words.next()? {
            "manage" => ("manage", Request::Manage),
            "unmanage" => ("unmanage", Request::Unmanage),
            _ => return None,
        };
        let pid = match (words.next(), words.next()) {
            (Some(p), None) => p.parse::<u32>().ok().filter(|&p| p > 0),
            _ => None,
        };
        Some(pid.map(make).ok_or(RequestError::Usage { verb }))
    }
}

/// The operator's standing requests, shared between the socket server and the loop.
#[derive(Debug)]
pub struct Control {
    /// `ROOT/proc`, to check that a PID names a process.
    proc_dir: PathBuf,
    lists: Mutex<Lists>,
}

#[derive(Debug, Default)]
struct Lists {
    manage: BTreeSet<u32>,
    unmanage: BTreeSet<u32>,
}

impl Control {
    pub fn new(root: &std::path::Path) -> Control {
        Control {
            proc_dir: crate::procfs::proc_dir(root),
            lists: Mutex::new(Lists::default()),
        }
    }

    /// Takes a request; the answer for the operator, or why it is refused.
    pub fn take(&self, r: Request) -> Result<String, RequestError> {
        let (Request::Manage(pid) | Request::Unmanage(pid)) = r;
        if !self.proc_dir.join(pid.to_string()).is_dir() {
            return Err(RequestError::NoSuchProcess { pid });
        }
        let mut l = self.lists.lock().unwrap_or_else(|p| p.into_inner());
        let answer = match r {
            Request::Manage(_) => {
                l.unmanage.remove(&pid);
                l.manage.insert(pid);
                format!(
                    "pid {pid}: managed from the next interval (when busy enough, and no safety rule leaves it alone)"
                )
            }
            Request::Unmanage(_) => {
                l.manage.remove(&pid);
                l.unmanage.insert(pid);
                format!(
                    "pid {pid}: left alone from the next interval (what homenode set on it is restored)"
                )
            }
        };
        tracing::info!("{answer} (asked over the status socket)");
        Ok(answer)
    }

    /// `base` with the requests applied.
    pub fn rules(&self, base: &Rules) -> Rules {
        let l = self.lists.lock().unwrap_or_else(|p| p.into_inner());
        let mut r = base.clone();
        for pid in &l.manage {
            r.exclude.pids.remove(pid);
            if let Some(inc) = &mut r.include {
                inc.pids.insert(*pid);
            }
        }
        r.exclude.pids.extend(l.unmanage.iter().copied());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_refuse_what_is_not_a_pid() {
        assert_eq!(Request::parse("manage 42"), Some(Ok(Request::Manage(42))));
        assert_eq!(
            Request::parse("unmanage 7\n"),
            Some(Ok(Request::Unmanage(7)))
        );
        assert!(
            matches!(Request::parse("manage x"), Some(Err(e)) if e.to_string().contains("manage PID"))
        );
        assert!(Request::parse("manage 1 2").is_some_and(|r| r.is_err()));
        assert!(Request::parse("manage 0").is_some_and(|r| r.is_err()));
        assert_eq!(Request::parse("status"), None);
    }

    #[test]
    fn the_lists_change_the_rules_and_the_last_request_wins() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join("proc/42")).expect("proc");
        let c = Control::new(dir.path());
        let mut base = Rules::default();
        base.exclude.pids.insert(42);
        base.include = Some(Default::default());
        assert!(
            c.take(Request::Manage(43))
                .is_err_and(|e| e == RequestError::NoSuchProcess { pid: 43 })
        );
        c.take(Request::Manage(42)).expect("manage");
        let r = c.rules(&base);
        assert!(!r.exclude.pids.contains(&42));
        assert!(r.include.as_ref().is_some_and(|i| i.pids.contains(&42)));
        c.take(Request::Unmanage(42)).expect("unmanage");
        let r = c.rules(&Rules::default());
        assert!(r.exclude.pids.contains(&42));
        assert!(r.include.is_none());
    }
}
