//! Why a scheduler spec could not be parsed or a scheduler could not be built. Every variant
//! carries the item that failed (the scheduler, the option, the value) and, where there is a
//! fixed set of choices, the valid ones; the messages are the one-line errors the CLI prints.

/// A malformed scheduler spec (`name[:key=value,...]`) or spec list.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("empty scheduler name in `{spec}`")]
    EmptyName { spec: String },
    #[error("scheduler option `{item}` in `{spec}` is not key=value")]
    NotKeyValue { item: String, spec: String },
    #[error("scheduler list `{list}` starts with an option")]
    ListStartsWithOption { list: String },
}

/// A scheduler option that is not known or whose value does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("scheduler `{scheduler}` has no option `{key}` (valid: {})", valid.join(", "))]
    Unknown {
        scheduler: String,
        key: String,
        valid: Vec<&'static str>,
    },
    /// `expected` completes "`value` is not ...", e.g. `a whole number`.
    #[error("scheduler `{scheduler}` option `{key}`: `{value}` is not {expected}")]
    BadValue {
        scheduler: String,
        key: String,
        value: String,
        expected: String,
    },
}

/// Why a scheduler could not be built from a spec.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchedError {
    #[error("unknown scheduler `{name}` (valid: {})", valid.join(", "))]
    UnknownScheduler {
        name: String,
        valid: Vec<&'static str>,
    },
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Option(#[from] OptionError),
}
