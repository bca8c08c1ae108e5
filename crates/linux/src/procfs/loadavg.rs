//! `/proc/loadavg`: the load averages, the runnable and existing scheduling entities, and the
//! PID most recently handed out (`man 5 proc_loadavg`):
//!
//! ```text
//! 0.20 0.18 0.12 1/80 11206
//! ```
//!
//! Read by the daemon's first looks for its last field: while it stays the same, no process or
//! thread has been created since, and `/proc` need not be listed again to find new ones.

use std::path::Path;

use crate::Pid;
use crate::error::{ParseError, ProcError};

/// The most recently created PID, from the text of `loadavg`.
pub fn parse_last_pid(text: &str) -> Result<Pid, ParseError> {
    let w = text
        .split_ascii_whitespace()
        .nth(4)
        .ok_or_else(|| ParseError::from("field 5 (last PID) missing"))?;
    w.parse::<Pid>()
        .map_err(|_| ParseError::from(format!("field 5 (last PID) `{w}` is not a PID")))
}

/// Reads `ROOT/proc/loadavg`: the most recently created PID.
pub fn last_pid(root: &Path) -> Result<Pid, ProcError> {
    let path = super::proc_dir(root).join("loadavg");
    let text = super::read_kernel_text(&path)?;
    parse_last_pid(&text).map_err(|e| ProcError::parse(&path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_pid_and_malformed_lines() {
        assert_eq!(parse_last_pid("0.20 0.18 0.12 1/80 11206\n"), Ok(11206));
        assert_eq!(
            &*parse_last_pid("0.20 0.18 0.12 1/80\n").unwrap_err(),
            "field 5 (last PID) missing"
        );
        assert_eq!(
            &*parse_last_pid("0.20 0.18 0.12 1/80 -3\n").unwrap_err(),
            "field 5 (last PID) `-3` is not a PID"
        );
        assert!(parse_last_pid("").is_err());
        assert!(parse_last_pid("a b c d 99999999999999\n").is_err());
    }
}
