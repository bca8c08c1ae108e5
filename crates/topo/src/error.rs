//! Errors of machine loading and validation.
//!
//! Every variant names what failed (the machine name or spec, the file, the key) and renders
//! as a single line, so the CLI can print it as is.

use std::fmt;

/// Why a text (a `/proc` or `/sys` file, a policy token, a sysfs value) could not
/// be parsed: one line naming the field, line or token and what was wrong. The reader that
/// knows the file adds its path ([`ProcError::Parse`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

impl From<String> for ParseError {
    fn from(s: String) -> Self {
        ParseError(s)
    }
}

impl From<&str> for ParseError {
    fn from(s: &str) -> Self {
        ParseError(s.to_string())
    }
}

/// The message, for matching in tests and for callers that add their own context.
impl std::ops::Deref for ParseError {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ParseError {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<ParseError> for String {
    fn from(e: ParseError) -> Self {
        e.0
    }
}

/// Why a machine could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TopoError {
    /// A name that is not one of the shipped presets.
    #[error("unknown preset `{name}` (valid presets: {valid})")]
    UnknownPreset { name: String, valid: String },

    /// A machine argument that is neither a preset, `host[:ROOT]`, a `.toml` path nor a
    /// `key=value` spec.
    #[error(
        "unknown machine `{name}`: not a preset ({valid}), not `host` or `host:ROOT`, \
         not a path ending in .toml, not a key=value spec"
    )]
    UnknownMachine { name: String, valid: String },

    /// TOML syntax error or a value of the wrong type.
    #[error("{origin}:{line}:{column}: in `{field}`: {message}")]
    Toml {
        origin: String,
        line: usize,
        column: usize,
        field: String,
        message: String,
    },

    /// A key the spec format does not know (usually a typo).
    #[error("{origin}:{line}:{column}: unknown key `{key}` (valid keys here: {valid})")]
    UnknownKey {
        origin: String,
        line: usize,
        column: usize,
        key: String,
        valid: String,
    },

    /// The spec parsed but describes a machine that cannot exist.
    #[error("{origin}: impossible machine: `{field}` {reason}")]
    Impossible {
        origin: String,
        field: String,
        reason: String,
    },

    /// A command-line `key=value` machine spec that cannot be used.
    #[error("synthetic machine spec: {reason} (valid keys: {valid})")]
    Synthetic {
        key: String,
        reason: String,
        valid: String,
    },

    /// The spec file could not be read.
    #[error("cannot read machine spec `{path}`: {error}")]
    Io { path: String, error: std::io::Error },

    /// A machine file refused before it was read (not a regular file, too large, not text).
    #[error("{0}")]
    Input(String),

    /// A host topology file (under sysfs or procfs, or a captured tree of them) that is missing,
    /// unreadable or malformed; `path` is the full path of the file or directory.
    #[error("{path}: {reason}")]
    Sysfs { path: String, reason: String },

    /// A fake-NUMA split that cannot be made.
    #[error("fake NUMA with {nodes} nodes on machine `{machine}`: {reason}")]
    FakeNuma {
        machine: String,
        nodes: usize,
        reason: String,
    },
}

impl TopoError {
    pub(crate) fn impossible(
        origin: &str,
        field: impl Into<String>,
        reason: impl fmt::Display,
    ) -> Self {
        TopoError::Impossible {
            origin: origin.to_string(),
            field: field.into(),
            reason: one_line(&reason.to_string()),
        }
    }
}

/// Collapses any line breaks so that every error stays on one line.
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
