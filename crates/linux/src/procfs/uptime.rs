//! `/proc/uptime`: seconds since boot and idle seconds summed over CPUs (`man 5 proc_uptime`):
//!
//! ```text
//! 350735.47 234388.90
//! ```
//!
//! Read for the age of a process seen for the first time: its start time (`stat` field 22) is
//! in clock ticks after boot, so its age is the uptime minus that.

use std::path::Path;

use crate::error::{ParseError, ProcError};

/// Seconds since boot, from the text of `uptime`.
pub fn parse(text: &str) -> Result<f64, ParseError> {
    let w = text
        .split_ascii_whitespace()
        .next()
        .ok_or_else(|| ParseError::from("field uptime missing"))?;
    match w.parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Ok(s),
        _ => Err(ParseError::from(format!(
            "field uptime `{w}` is not a number of seconds"
        ))),
    }
}

/// Reads `ROOT/proc/uptime`: seconds since boot.
pub fn read(root: &Path) -> Result<f64, ProcError> {
    let path = super::proc_dir(root).join("uptime");
    let text = super::read_kernel_text(&path)?;
    parse(&text).map_err(|e| ProcError::parse(&path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_since_boot() {
        assert_eq!(parse("350735.47 234388.90\n"), Ok(350735.47));
        assert_eq!(&*parse("").unwrap_err(), "field uptime missing");
        let e = parse("soon 1.0\n").unwrap_err();
        assert_eq!(&*e, "field uptime `soon` is not a number of seconds");
        assert!(parse("-3 1\n").is_err());
        assert!(parse("NaN 1\n").is_err());
    }
}
