//! One checked budget for everything a user can ask the simulator to do, whichever way the
//! request comes in (command line, workload file, experiment file, study parameters): limits
//! on how many tasks, repetitions, bytes and how much simulated work one request may cost, so
//! that a typo (`count = 1e9`) is refused with one line instead of exhausting the machine.
//!
//! The limits are far above every shipped experiment and every machine the simulator models
//! (1024 CPUs x 8 tasks each is 8,192 tasks); docs/WORKLOADS.md lists them. Two more guards
//! run inside the engine, because no static check can see them: a run may create at most
//! [`MAX_TASKS`] tasks (a program that spawns itself), and may not take more than
//! [`MAX_STEPS_WITHOUT_TIME`] steps without simulated time passing (a loop whose body takes
//! no time).

/// Tasks (processes and threads) one run may create, over its whole life.
pub const MAX_TASKS: u64 = 1 << 17;
/// Tasks alive at once in one launch or spawn (`count` x `threads`).
pub const MAX_TASKS_PER_LAUNCH: u64 = 1 << 16;
/// Repetitions of one configuration.
pub const MAX_REPS: u64 = 1_000;
/// Steps (events handled at one instant, or zero-time phases one task runs in a row) before
/// a run is declared to make no progress.
pub const MAX_STEPS_WITHOUT_TIME: u64 = 50_000_000;
/// Simulated seconds any run, study window or watch may last (the engine's own limit).
pub const MAX_SIM_SECONDS: f64 = 3600.0;
/// Bytes of an input file (workload, experiment, machine spec): [`topo::input`].
pub use topo::input::{InputError, MAX_INPUT_BYTES, read_input};

/// A request over budget, on one line: the key, the value asked for, the limit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{place}`{key}` = {value}: {why}")]
pub struct BudgetError {
    /// `FILE: ` or `FILE:LINE: ` or empty, ready to print in front of the key.
    pub place: String,
    pub key: String,
    pub value: String,
    pub why: String,
}

impl BudgetError {
    /// The same error, said to come from `place` (e.g. a file name).
    pub fn at(mut self, place: &str) -> BudgetError {
        if self.place.is_empty() && !place.is_empty() {
            self.place = format!("{place}: ");
        }
        self
    }
}

/// `value` of `key` must be at most `limit` (`what` names the unit in the message).
pub fn at_most(key: &str, value: f64, limit: f64, what: &str) -> Result<(), BudgetError> {
    if value.is_finite() && value <= limit {
        return Ok(());
    }
    Err(BudgetError {
        place: String::new(),
        key: key.to_string(),
        value: fmt_num(value),
        why: format!("more than the limit of {} {what}", fmt_num(limit)),
    })
}

/// `value` of `key` must be a finite number >= `min`.
pub fn at_least(key: &str, value: f64, min: f64) -> Result<(), BudgetError> {
    if value.is_finite() && value >= min {
        return Ok(());
    }
    Err(BudgetError {
        place: String::new(),
        key: key.to_string(),
        value: fmt_num(value),
        why: format!("must be a number of at least {}", fmt_num(min)),
    })
}

/// Task counts: at most [`MAX_TASKS_PER_LAUNCH`].
pub fn tasks(key: &str, value: f64) -> Result<(), BudgetError> {
    at_most(key, value, MAX_TASKS_PER_LAUNCH as f64, "tasks")
}

/// Repetitions: at most [`MAX_REPS`].
pub fn reps(key: &str, value: f64) -> Result<(), BudgetError> {
    at_most(key, value, MAX_REPS as f64, "repetitions")
}

/// Simulated seconds: at most [`MAX_SIM_SECONDS`].
pub fn sim_seconds(key: &str, value: f64) -> Result<(), BudgetError> {
    at_most(key, value, MAX_SIM_SECONDS, "simulated seconds")
}

/// Bytes a set of tasks needs against the memory of the machine: at most all of it.
pub fn memory(key: &str, bytes: f64, machine_bytes: u64) -> Result<(), BudgetError> {
    if bytes.is_finite() && bytes <= machine_bytes as f64 {
        return Ok(());
    }
    Err(BudgetError {
        place: String::new(),
        key: key.to_string(),
        value: if bytes.is_finite() {
            format!("{:.1} GiB", bytes / (1u64 << 30) as f64)
        } else {
            fmt_num(bytes)
        },
        why: format!(
            "more memory than the machine has ({:.1} GiB)",
            machine_bytes as f64 / (1u64 << 30) as f64
        ),
    })
}

fn fmt_num(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_key_value_and_limit() {
        assert!(tasks("count", 8.0).is_ok());
        let e = tasks("count", 1e9).expect_err("too many").at("w.toml");
        assert_eq!(
            e.to_string(),
            "w.toml: `count` = 1000000000: more than the limit of 65536 tasks"
        );
        assert!(reps("--reps", f64::NAN).is_err());
        assert!(
            memory("problem_size", 1e18, 1 << 30)
                .expect_err("big")
                .to_string()
                .contains("more memory than the machine has (1.0 GiB)")
        );
        assert!(at_least("watch_s", -1.0, 0.0).is_err());
    }
}
