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
/// Steps one run may take over its whole life: phases the interpreter starts plus events
/// the engine handles. A debug build takes about 3 million steps a second, a release build
/// some ten times more, so this bounds a run to under a minute of the host's time; past it
/// the run stops with one line. Workload files are checked against it before the run
/// ([`workload_steps`]).
pub const MAX_RUN_STEPS: u64 = 1_000_000_000;
/// Steps per CPU per simulated second a run may average once past [`STEPS_GRACE`]: one every
/// 100 ns on every CPU. Shipped workloads' shortest phases (hackbench's messages, a few
/// microseconds) are far above it; a loop of 1-cycle phases or a ping-pong of empty messages
/// is refused within a second or so instead of running for hours.
pub const MAX_STEPS_PER_CPU_SECOND: u64 = 10_000_000;
/// Steps a run may take before [`MAX_STEPS_PER_CPU_SECOND`] applies (its start, when many
/// tasks are created at once).
pub const STEPS_GRACE: u64 = 20_000_000;
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

/// Page groups (2 MiB each by default) the regions of all the processes of one run may hold,
/// counted as processes are created: 16,777,216 groups is 32 TiB of simulated memory and
/// 256 MiB of the simulator's own (16 bytes a group). 65,536 processes each with a region
/// the size of the machine's memory stop here, instead of aborting when the host's memory
/// runs out.
pub const MAX_PAGE_GROUPS: u64 = 1 << 24;

/// The error of a run whose processes' regions reach `groups` page groups of `group_bytes`.
pub fn page_groups(groups: u64, group_bytes: u64) -> BudgetError {
    let tib = |g: u64| g as f64 * group_bytes as f64 / (1u64 << 40) as f64;
    BudgetError {
        place: String::new(),
        key: "regions".into(),
        value: format!(
            "{groups} page groups ({:.3} TiB) over the processes created",
            tib(groups)
        ),
        why: format!(
            "more than the limit of {MAX_PAGE_GROUPS} page groups ({:.0} TiB) one run may hold: lower `launch.count`, the spawn counts or the regions' `mib`",
            tib(MAX_PAGE_GROUPS)
        ),
    }
}

/// A study's work key (`iterations`, `tx_per_thread`, `loops`, `numa02_loops`): at most this
/// many times its reference size, so that one study costs at most ten reference runs.
pub const MAX_WORK_FACTOR: f64 = 10.0;

/// A work key against [`MAX_WORK_FACTOR`] times its reference size.
pub fn work(key: &str, value: f64, reference: f64) -> Result<(), BudgetError> {
    at_most(
        key,
        value,
        MAX_WORK_FACTOR * reference,
        &format!("({} x the reference size)", fmt_num(MAX_WORK_FACTOR)),
    )
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

/// The steps a workload's launches will take, at least: the phases they start (loops
/// multiplied out, spawned processes and threads counted with their programs; a program
/// that spawns itself counted once, [`MAX_TASKS`] bounds it at run time), a phase that
/// blocks (sleep, I/O, messages) counted as 3 for the events that wake it; with the program
/// costing most. Checked
/// against [`MAX_RUN_STEPS`] before a run, so a loop of a billion tiny phases is refused
/// at once.
pub fn workload_steps(w: &crate::program::Workload) -> (f64, Option<usize>) {
    let mut memo = vec![None; w.programs.len()];
    let mut worst = (0.0, None);
    let mut total = 0.0;
    for l in &w.launches {
        let one = program_steps(w, l.program, &mut memo, &mut Vec::new());
        let cost = one * f64::from(l.count) * f64::from(l.threads.max(1));
        if cost > worst.0 {
            worst = (cost, Some(l.program));
        }
        total += cost;
    }
    (total, worst.1)
}

fn program_steps(
    w: &crate::program::Workload,
    p: usize,
    memo: &mut Vec<Option<f64>>,
    visiting: &mut Vec<usize>,
) -> f64 {
    use crate::program::Phase;
    if let Some(v) = memo[p] {
        return v;
    }
    if visiting.contains(&p) {
        return 0.0;
    }
    visiting.push(p);
    let mut mult = vec![1.0f64];
    let mut total = 0.0;
    for ph in &w.programs[p].phases {
        let m = *mult.last().unwrap_or(&1.0);
        // A phase that blocks also costs the events that wake its task.
        total += match ph {
            Phase::Sleep { .. } | Phase::Io { .. } | Phase::Recv { .. } | Phase::Send { .. } => {
                3.0 * m
            }
            _ => m,
        };
        match ph {
            Phase::Loop { count } => mult.push(m * f64::from(*count)),
            Phase::EndLoop => {
                mult.pop();
            }
            Phase::Spawn { program, count, .. } | Phase::Thread { program, count } => {
                total += m * f64::from(*count) * program_steps(w, *program, memo, visiting);
            }
            _ => {}
        }
    }
    visiting.pop();
    memo[p] = Some(total);
    total
}

/// A workload must start at most [`MAX_RUN_STEPS`] phases ([`workload_steps`]).
pub fn check_workload_steps(w: &crate::program::Workload) -> Result<(), BudgetError> {
    let (steps, worst) = workload_steps(w);
    if steps <= MAX_RUN_STEPS as f64 {
        return Ok(());
    }
    let program = worst.map_or("", |p| w.programs[p].name.as_str());
    Err(BudgetError {
        place: String::new(),
        key: "loop.count".into(),
        value: format!("{steps:.2e} steps"),
        why: format!(
            "more than the limit of {MAX_RUN_STEPS} steps a run may take (program `{program}` the most): lower the loop counts or `launch.count`"
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

    fn parsed(phases: &str, count: u32) -> crate::program::Workload {
        let text = format!(
            "name = \"w\"\n[[program]]\nname = \"w\"\nphase = [{phases}]\n[[program]]\nname = \"c\"\nphase = [{{ compute = {{ cycles = 1 }} }}]\n[[launch]]\nprogram = \"w\"\ncount = {count}\n"
        );
        crate::workload::parse_workload(&text, "w.toml").expect("parses")
    }

    #[test]
    fn workload_steps_multiply_loops_tasks_and_children() {
        let w = parsed(
            "{ loop = { count = 10, body = [{ compute = { cycles = 1 } }] } }",
            3,
        );
        // Per process: the loop's start, then 10 x (the compute and the loop's end).
        assert_eq!(workload_steps(&w), (3.0 * 21.0, Some(0)));
        let w = parsed(
            "{ loop = { count = 4, body = [{ sleep = { us = 1 } }, { spawn = { program = \"c\", count = 5 } }] } }",
            1,
        );
        // 1 + 4 x (3 for the sleep + 1 for the spawn + 5 x 1 for the children + 1).
        assert_eq!(workload_steps(&w).0, 1.0 + 4.0 * (3.0 + 1.0 + 5.0 + 1.0));
        let text = "name = \"w\"\n[[program]]\nname = \"w\"\nphase = [{ loop = { count = 100000, body = [{ loop = { count = 100000, body = [{ compute = { cycles = 1 } }] } }] } }]\n[[launch]]\nprogram = \"w\"\n";
        let e = crate::workload::parse_workload(text, "w.toml").expect_err("over");
        let msg = e.to_string();
        assert!(
            msg.contains("`loop.count` = 2.00e10 steps")
                && msg.contains("limit of 1000000000 steps")
                && msg.contains("program `w`"),
            "{msg}"
        );
    }
}
