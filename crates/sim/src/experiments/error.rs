//! Typed errors of the experiment runner below [`super::ExperimentError`]: a value of an
//! experiment file that breaks its rule ([`ValueError`]), a sweep that does not fit its
//! experiment ([`SweepError`]), and a run that failed ([`RunFailure`]). Each names the item
//! that failed; [`super::ExperimentError`] adds the file and line ([`key_line`]) or the
//! experiment's name.

use crate::budget::BudgetError;
use crate::numa_test::NumaTestError;
use crate::sched::{SchedError, SpecError};
use crate::sim::RunError;
use crate::studies::StudyError;

/// A value that breaks the rule of its key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error(
        "`{name}` must be 1 to 64 characters of a-z, 0-9 and `-` (it names the output directory)"
    )]
    BadName { name: String },
    #[error("`{shape}` is not a `PxT` shape (processes x threads, each at least 1)")]
    BadShape { shape: String },
}

/// A `[[sweep]]` that does not fit its experiment.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SweepError {
    #[error("`{scheduler}` is not one of `schedulers`")]
    NotAColumn { scheduler: String },
    #[error("give at least one value and one task count of at least 1")]
    Empty,
    #[error("reps must be at least 1")]
    NoReps,
    #[error(transparent)]
    Budget(#[from] BudgetError),
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The column's scheduler refuses the option at this value.
    #[error("{option} = {value}: {source}")]
    Value {
        option: String,
        value: String,
        source: Box<SchedError>,
    },
    /// A machine parameter the sweep cannot vary.
    #[error("`{option}` is not a machine parameter a sweep can vary (valid: {valid})")]
    UnknownMachineParam { option: String, valid: String },
    /// A machine parameter's value outside its range ([`super::sweep::machine_value`]).
    #[error("{option} = {value}: must be {range}")]
    BadMachineValue {
        option: String,
        value: String,
        range: String,
    },
}

/// A run of an experiment that failed.
#[derive(Debug, thiserror::Error)]
pub enum RunFailure {
    #[error(transparent)]
    Machine(#[from] topo::TopoError),
    #[error(transparent)]
    Sched(#[from] SchedError),
    #[error(transparent)]
    NumaTest(#[from] NumaTestError),
    #[error(transparent)]
    Sweep(#[from] SweepError),
    #[error(transparent)]
    Study(#[from] StudyError),
    /// One repetition of a `[mix]` run.
    #[error("{sched} rep {rep}: {source}")]
    Run {
        sched: String,
        rep: u32,
        source: RunError,
    },
    #[error("missing run")]
    MissingRun,
    /// A sweep value that does not fit its parameter (checked at parse time too).
    #[error("{0}")]
    Config(String),
    #[error("no machine")]
    NoMachine,
}

impl From<SpecError> for RunFailure {
    fn from(e: SpecError) -> Self {
        RunFailure::Sched(e.into())
    }
}

/// Line of the header of the `n`-th (from 1) `[[table]]` of an array of tables (0 if there is
/// no such table): where an error in one entry of `[[sweep]]` or `[[mix_sweep]]` points.
pub(super) fn array_table_line(text: &str, table: &str, n: usize) -> usize {
    let header = format!("[[{table}]]");
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == header)
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i + 1)
}

/// Line where `key = ...` is set (0 if not found).
pub(crate) fn key_line(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map_or(0, |i| i + 1)
}
