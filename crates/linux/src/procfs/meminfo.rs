//! `/proc/meminfo`: machine-wide memory, `Key:   value kB` lines (`man 5 proc_meminfo`).
//!
//! Read for the memory available to new processes: `MemAvailable` (Linux 3.14+), else
//! `MemFree` on older kernels.

use std::path::Path;

use crate::error::ProcError;

/// Why a `meminfo` text gives no available memory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MeminfoError {
    /// The line is there but its value is not a number of kB.
    #[error("{key} `{value}` is not a number")]
    NotANumber { key: &'static str, value: String },
    /// Neither line is there.
    #[error("neither MemAvailable nor MemFree found")]
    Missing,
}

/// `MemAvailable` of the text of `meminfo` in bytes (`MemFree` on kernels before 3.14).
pub fn parse_mem_available(text: &str) -> Result<u64, MeminfoError> {
    let find = |key: &'static str| -> Option<Result<u64, MeminfoError>> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        let v = line[key.len()..].split_ascii_whitespace().next()?;
        Some(
            v.parse::<u64>()
                .map(|kb| kb.saturating_mul(1024))
                .map_err(|_| MeminfoError::NotANumber {
                    key: key.trim_end_matches(':'),
                    value: v.to_string(),
                }),
        )
    };
    find("MemAvailable:")
        .or_else(|| find("MemFree:"))
        .unwrap_or(Err(MeminfoError::Missing))
}

/// Reads `ROOT/proc/meminfo` and returns the memory available to new processes, in bytes.
pub fn read_mem_available(root: &Path) -> Result<u64, ProcError> {
    let path = super::proc_dir(root).join("meminfo");
    let text = super::read_kernel_text(&path)?;
    parse_mem_available(&text).map_err(|e| ProcError::parse(&path, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_then_free() {
        let t =
            "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(parse_mem_available(t), Ok(20_000_000 * 1024));
        assert_eq!(parse_mem_available("MemFree: 7 kB\n"), Ok(7 * 1024));
        assert!(parse_mem_available("MemAvailable: lots kB\n").is_err());
        assert!(parse_mem_available("nothing\n").is_err());
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_mem_available("MemAvailable: lots kB\n").unwrap_err();
        assert_eq!(e.to_string(), "MemAvailable `lots` is not a number");
        let e = parse_mem_available("nothing\n").unwrap_err();
        assert_eq!(e, MeminfoError::Missing);
    }
}
