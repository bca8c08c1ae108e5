//! `ROOT/proc/stat`: time each CPU spent busy and idle since boot, in clock ticks. The daemon
//! derives per-node idle CPU capacity from two reads, which counts every task on the node,
//! including the ones it does not look at closely.

use std::path::Path;

use crate::error::ProcError;

/// One `cpuN` line: ticks since boot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub cpu: usize,
    /// `idle` + `iowait`: ticks the CPU had nothing to run.
    pub idle: u64,
    /// Every column up to `steal` (guest time is already inside `user` and `nice`).
    pub total: u64,
}

/// Parses the `cpuN` lines (the aggregate `cpu` line and the other lines are skipped). A line
/// needs at least the four columns every kernel since 2.4 writes (user nice system idle). The
/// first malformed `cpuN` line is an error; the daemon uses [`parse_lenient`].
pub fn parse(text: &str) -> Result<Vec<CpuTimes>, crate::error::ParseError> {
    let (out, problems) = parse_lenient(text)?;
    match problems.into_iter().next() {
        Some(p) => Err(p.into()),
        None => Ok(out),
    }
}

/// Like [`parse`], but a malformed `cpuN` line is skipped (that CPU is left out of this read,
/// as an offline one would be) and described in the second value. Only a text without any
/// good `cpuN` line is an error.
pub fn parse_lenient(text: &str) -> Result<(Vec<CpuTimes>, Vec<String>), crate::error::ParseError> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match parse_line(line, i + 1) {
            Ok(Some(t)) => out.push(t),
            Ok(None) => {}
            Err(p) => problems.push(String::from(p)),
        }
    }
    if out.is_empty() {
        return Err(problems
            .into_iter()
            .next()
            .unwrap_or_else(|| "no `cpuN` line".into())
            .into());
    }
    Ok((out, problems))
}

/// One line: `Some` for a `cpuN` line, `None` for any other line.
fn parse_line(line: &str, lineno: usize) -> Result<Option<CpuTimes>, crate::error::ParseError> {
    let Some(rest) = line.strip_prefix("cpu") else {
        return Ok(None);
    };
    let mut cols = rest.split_ascii_whitespace();
    let Some(id) = cols.next() else {
        return Ok(None);
    };
    // The aggregate `cpu  ...` line: its first column is a number of ticks, not an id, and it
    // has no digits glued to `cpu`.
    if rest.starts_with(' ') {
        return Ok(None);
    }
    let Ok(cpu) = id.parse::<usize>() else {
        return Err(crate::error::ParseError::from(format!(
            "line {lineno}: `cpu{id}` is not a CPU number"
        )));
    };
    let vals: Vec<u64> = cols
        .take(8)
        .map(|c| {
            c.parse::<u64>().map_err(|_| {
                crate::error::ParseError::from(format!(
                    "line {lineno}: `{c}` is not a number of ticks"
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    if vals.len() < 4 {
        return Err(crate::error::ParseError::from(format!(
            "line {lineno}: cpu{cpu} has {} columns, at least 4 expected (truncated?)",
            vals.len()
        )));
    }
    let iowait = vals.get(4).copied().unwrap_or(0);
    Ok(Some(CpuTimes {
        cpu,
        idle: vals[3].saturating_add(iowait),
        total: vals.iter().fold(0u64, |a, &v| a.saturating_add(v)),
    }))
}

/// Reads `ROOT/proc/stat`.
pub fn read(root: &Path) -> Result<Vec<CpuTimes>, ProcError> {
    let path = root.join("proc/stat");
    let text = super::read_kernel_text(&path)?;
    parse(&text).map_err(|r| ProcError::parse(&path, r))
}

/// Reads `ROOT/proc/stat` with [`parse_lenient`]: the CPUs that parsed, and a [`ProcError`]
/// for each `cpuN` line that did not.
pub fn read_lenient(root: &Path) -> Result<(Vec<CpuTimes>, Vec<ProcError>), ProcError> {
    let path = root.join("proc/stat");
    let text = super::read_kernel_text(&path)?;
    let (v, problems) = parse_lenient(&text).map_err(|r| ProcError::parse(&path, r))?;
    Ok((
        v,
        problems
            .into_iter()
            .map(|r| ProcError::parse(&path, r))
            .collect(),
    ))
}

/// Idle fraction of each CPU between two reads (CPU id -> 0..=1); CPUs in only one read, or
/// with no ticks between them, are left out.
pub fn idle_fractions(earlier: &[CpuTimes], later: &[CpuTimes]) -> Vec<(usize, f64)> {
    later
        .iter()
        .filter_map(|l| {
            let e = earlier.iter().find(|e| e.cpu == l.cpu)?;
            let total = l.total.checked_sub(e.total).filter(|&t| t > 0)?;
            let idle = l.idle.saturating_sub(e.idle).min(total);
            Some((l.cpu, idle as f64 / total as f64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "cpu  100 0 50 1000 10 0 0 0 0 0\n\
cpu0 60 0 30 500 5 0 0 0 0 0\n\
cpu1 40 0 20 500 5 0 0 0 0 0\n\
intr 12345 0 0\nctxt 999\nbtime 1700000000\n";

    #[test]
    fn per_cpu_lines() {
        let v = parse(TEXT).expect("ok");
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[0],
            CpuTimes {
                cpu: 0,
                idle: 505,
                total: 595
            }
        );
        assert_eq!(v[1].cpu, 1);
    }

    #[test]
    fn lenient_skips_a_bad_cpu_line_only() {
        let (v, bad) = parse_lenient("cpu 1 2 3 4\ncpu0 1 2 3 4\ncpu1 1 2\ncpu2 5 5 5 5\n")
            .expect("two good lines");
        assert_eq!(v.iter().map(|t| t.cpu).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(bad.len(), 1);
        assert!(
            bad[0].contains("line 3") && bad[0].contains("cpu1"),
            "{bad:?}"
        );
        assert!(
            parse_lenient("cpu0 1 2\n")
                .unwrap_err()
                .contains("at least 4")
        );
        assert!(
            parse_lenient("intr 1\n")
                .unwrap_err()
                .contains("no `cpuN` line")
        );
    }

    #[test]
    fn old_kernels_with_four_columns() {
        let v = parse("cpu 1 2 3 4\ncpu0 1 2 3 4\n").expect("ok");
        assert_eq!(
            v[0],
            CpuTimes {
                cpu: 0,
                idle: 4,
                total: 10
            }
        );
    }

    #[test]
    fn malformed() {
        for (t, want) in [
            ("cpu0 1 2\n", "at least 4"),
            ("cpu0 1 2 x 4\n", "`x` is not"),
            ("cpuZ 1 2 3 4\n", "not a CPU number"),
            ("intr 1\n", "no `cpuN`"),
            ("", "no `cpuN`"),
        ] {
            let e = parse(t).expect_err(t);
            assert!(e.contains(want), "{t:?}: {e}");
        }
    }

    #[test]
    fn idle_between_reads() {
        let a = parse("cpu0 0 0 0 100\ncpu1 0 0 0 100\n").expect("a");
        let b = parse("cpu0 50 0 0 150\ncpu1 0 0 0 200\ncpu2 0 0 0 9\n").expect("b");
        assert_eq!(idle_fractions(&a, &b), vec![(0, 0.5), (1, 1.0)]);
    }
}
