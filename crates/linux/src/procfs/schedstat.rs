//! `/proc/PID/schedstat` and `/proc/PID/task/TID/schedstat`: the scheduler's accounting of one
//! task (`Documentation/scheduler/sched-stats.rst`), three numbers on one line:
//!
//! ```text
//! 1920000000 480000000 211
//! ```
//!
//! 1. time spent on the CPU (`se.sum_exec_runtime`), ns;
//! 2. time spent waiting on a run queue (`sched_info.run_delay`), ns;
//! 3. time slices run on this CPU (`sched_info.pcount`).
//!
//! The file of `PID/` is the main thread's (the kernel does not sum a thread group here), so a
//! process's figures are the sum over `task/*/schedstat`. The run delay is what the CPU times
//! of `stat` cannot show: how long a runnable task waited for a CPU. Run time plus run delay
//! over an interval is the CPU the task wanted, measured; CPU time alone is what it got.
//! Without `CONFIG_SCHED_INFO` the file is absent; with `schedstats` disabled before Linux 4.6
//! it reads `0 0 0`.

use std::path::Path;

use crate::error::{ParseError, ProcError};
use crate::{Live, Pid};

/// One task's scheduler accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Schedstat {
    /// Time on a CPU, ns.
    pub run_ns: u64,
    /// Time runnable but waiting on a run queue, ns.
    pub run_delay_ns: u64,
    /// Time slices run.
    pub timeslices: u64,
}

/// The three fields, named as in the kernel's `proc_pid_schedstat`.
const FIELDS: [&str; 3] = ["sum_exec_runtime", "run_delay", "pcount"];

/// Parses the text of `schedstat`: one clear reason naming the field when it is malformed.
pub fn parse(text: &str) -> Result<Schedstat, ParseError> {
    let mut words = text.split_ascii_whitespace();
    let mut v = [0u64; 3];
    for (slot, name) in v.iter_mut().zip(FIELDS) {
        let w = words
            .next()
            .ok_or_else(|| ParseError::from(format!("field {name} missing")))?;
        *slot = w
            .parse()
            .map_err(|_| ParseError::from(format!("field {name} `{w}` is not a number")))?;
    }
    Ok(Schedstat {
        run_ns: v[0],
        run_delay_ns: v[1],
        timeslices: v[2],
    })
}

/// Reads `ROOT/proc/PID/schedstat` (the main thread's). `Alive(None)` when the kernel has no
/// such file, `Gone` when the process has exited.
pub fn read(root: &Path, pid: Pid) -> Result<Live<Option<Schedstat>>, ProcError> {
    super::with_dir(root, pid, |d| d.schedstat())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        let s = parse("1920000000 480000000 211\n").expect("parses");
        assert_eq!(
            s,
            Schedstat {
                run_ns: 1_920_000_000,
                run_delay_ns: 480_000_000,
                timeslices: 211
            }
        );
        // Later kernels may add fields: ignored.
        assert_eq!(parse("1 2 3 4\n").expect("parses").run_delay_ns, 2);
    }

    #[test]
    fn malformed_names_the_field() {
        let e = parse("1920000000 soon 211\n").unwrap_err();
        assert_eq!(&*e, "field run_delay `soon` is not a number");
        let e = parse("1920000000\n").unwrap_err();
        assert_eq!(&*e, "field run_delay missing");
        let e = parse("").unwrap_err();
        assert_eq!(&*e, "field sum_exec_runtime missing");
        let e = parse("-5 0 0").unwrap_err();
        assert!(e.contains("sum_exec_runtime `-5`"), "{e}");
    }
}
