//! `/proc/vmstat`: machine-wide memory counters, `NAME VALUE` per line, counting since boot.
//!
//! Kept: the NUMA allocation counters (`numa_hit`, `numa_miss`, `numa_foreign`,
//! `numa_interleave`, `numa_local`, `numa_other`; only with `CONFIG_NUMA`), the automatic NUMA
//! balancing counters (`numa_pte_updates`, `numa_huge_pte_updates`, `numa_hint_faults`,
//! `numa_hint_faults_local`, `numa_pages_migrated`; only with `CONFIG_NUMA_BALANCING`) and the
//! page-migration counters (`pgmigrate_success`, `pgmigrate_fail`; with `CONFIG_MIGRATION`).
//! Every counter is optional: a kernel without the option lacks the line.

use std::collections::BTreeMap;
use std::path::Path;

use super::read_optional_text;
use crate::error::ProcError;

/// The NUMA and migration counters of `/proc/vmstat`, raw (since boot).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NumaCounters {
    /// Every `numa_*` and `pgmigrate_*` line, by name.
    pub values: BTreeMap<String, u64>,
}

impl NumaCounters {
    pub fn get(&self, name: &str) -> Option<u64> {
        self.values.get(name).copied()
    }

    /// `numa_hint_faults`: NUMA balancing hinting faults taken.
    pub fn hint_faults(&self) -> Option<u64> {
        self.get("numa_hint_faults")
    }

    /// `numa_hint_faults_local`: of which on memory local to the faulting CPU.
    pub fn hint_faults_local(&self) -> Option<u64> {
        self.get("numa_hint_faults_local")
    }

    /// `numa_pages_migrated`: pages NUMA balancing moved.
    pub fn pages_migrated(&self) -> Option<u64> {
        self.get("numa_pages_migrated")
    }

    /// `numa_pte_updates`: page-table entries NUMA balancing marked for hinting faults.
    pub fn pte_updates(&self) -> Option<u64> {
        self.get("numa_pte_updates")
    }

    /// `numa_hit`: allocations satisfied on the intended node.
    pub fn hit(&self) -> Option<u64> {
        self.get("numa_hit")
    }

    /// `numa_miss`: allocations that fell back to another node.
    pub fn miss(&self) -> Option<u64> {
        self.get("numa_miss")
    }

    /// Whether the kernel counts NUMA balancing at all (the hint-fault lines exist).
    pub fn has_numa_balancing(&self) -> bool {
        self.hint_faults().is_some()
    }

    /// The increase of every counter present in both `self` (later) and `earlier`
    /// (saturating at 0 if a counter went backwards).
    pub fn delta(&self, earlier: &NumaCounters) -> NumaCounters {
        NumaCounters {
            values: self
                .values
                .iter()
                .filter_map(|(k, &v)| Some((k.clone(), v.saturating_sub(earlier.get(k)?))))
                .collect(),
        }
    }
}

/// Parses the text of `/proc/vmstat`, keeping the `numa_*` and `pgmigrate_*` lines; the first
/// malformed line among those is an error. The daemon uses [`parse_lenient`].
pub fn parse(text: &str) -> Result<NumaCounters, crate::error::ParseError> {
    let (c, problems) = parse_lenient(text);
    match problems.into_iter().next() {
        Some(p) => Err(p.into()),
        None => Ok(c),
    }
}

/// Like [`parse`], but a malformed line is skipped and described in the second value: these
/// counters are informative, and one bad line must not cost the daemon its interval.
pub fn parse_lenient(text: &str) -> (NumaCounters, Vec<String>) {
    let mut c = NumaCounters::default();
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some((name, value)) = line.split_once(' ') else {
            if !line.trim().is_empty() {
                problems.push(format!(
                    "line {}: `{line}` has no value (truncated?)",
                    i + 1
                ));
            }
            continue;
        };
        if !(name.starts_with("numa_") || name.starts_with("pgmigrate_")) {
            continue;
        }
        match value.trim().parse::<u64>() {
            Ok(v) => {
                c.values.insert(name.to_string(), v);
            }
            Err(_) => problems.push(format!(
                "line {}: {name} `{}` is not a number",
                i + 1,
                value.trim()
            )),
        }
    }
    (c, problems)
}

/// Reads `ROOT/proc/vmstat`. A missing file is an error (every kernel since 2.6 has it).
pub fn read(root: &Path) -> Result<NumaCounters, ProcError> {
    let path = root.join("proc/vmstat");
    parse(&read_text(&path)?).map_err(|r| ProcError::parse(&path, r))
}

/// Reads `ROOT/proc/vmstat` with [`parse_lenient`]: the counters that parsed, and a
/// [`ProcError`] for each line that did not.
pub fn read_lenient(root: &Path) -> Result<(NumaCounters, Vec<ProcError>), ProcError> {
    let path = root.join("proc/vmstat");
    let (c, problems) = parse_lenient(&read_text(&path)?);
    Ok((
        c,
        problems
            .into_iter()
            .map(|r| ProcError::parse(&path, r))
            .collect(),
    ))
}

fn read_text(path: &Path) -> Result<String, ProcError> {
    read_optional_text(path)?
        .ok_or_else(|| ProcError::io(path, std::io::Error::from(std::io::ErrorKind::NotFound)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_delta() {
        let a = parse("nr_free_pages 100\nnuma_hit 10\nnuma_hint_faults 5\npgmigrate_success 1\n")
            .expect("parses");
        assert_eq!(a.values.len(), 3);
        assert_eq!(a.hit(), Some(10));
        assert!(a.has_numa_balancing());
        assert_eq!(a.pages_migrated(), None);
        let b = parse("numa_hit 15\nnuma_hint_faults 4\nnuma_pages_migrated 7\n").expect("parses");
        let d = b.delta(&a);
        assert_eq!(d.hit(), Some(5));
        assert_eq!(d.hint_faults(), Some(0));
        assert_eq!(d.pages_migrated(), None);
        assert!(
            !parse("nr_free_pages 1\n")
                .expect("no numa")
                .has_numa_balancing()
        );
    }

    #[test]
    fn malformed() {
        assert!(
            parse("numa_hit lots\n")
                .unwrap_err()
                .contains("numa_hit `lots`")
        );
        assert!(
            parse("numa_hit 1\nnuma_miss\n")
                .unwrap_err()
                .contains("line 2")
        );
        // A malformed line we do not keep is ignored.
        assert!(parse("nr_free_pages x\n").is_ok());
    }

    #[test]
    fn lenient_keeps_the_good_lines_and_names_the_bad() {
        let (c, bad) = parse_lenient("numa_hit 1\nnuma_miss lots\nnuma_foreign\nnuma_local 4\n");
        assert_eq!(c.hit(), Some(1));
        assert_eq!(c.get("numa_local"), Some(4));
        assert_eq!(bad.len(), 2);
        assert!(
            bad[0].contains("line 2") && bad[1].contains("line 3"),
            "{bad:?}"
        );
    }
}
