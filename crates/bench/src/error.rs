//! The benchmark's errors. Each names what failed (the path, the worker, the report file)
//! and renders as one line, so the CLI prints it as is.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },

    /// A file's text is not what the benchmark writes (a report read back).
    #[error("{path}: {msg}")]
    Parse { path: String, msg: String },

    /// A `/proc` file could not be read or parsed (the error names the file).
    #[error(transparent)]
    Proc(#[from] linux::ProcError),

    /// The host's topology could not be read, or split into pseudo-nodes.
    #[error(transparent)]
    Topo(#[from] topo::TopoError),

    /// Bad parameters: which one, and why.
    #[error("{0}")]
    Config(String),

    /// A worker process could not be started.
    #[error("cannot start worker {worker} ({program}): {source}")]
    Spawn {
        worker: usize,
        program: String,
        source: std::io::Error,
    },

    /// A worker died, exited non-zero, or did not report. `how` says which, with the exit
    /// status or signal and the last line the worker wrote on stderr.
    #[error("worker {worker} (pid {pid}) {how}")]
    WorkerFailed {
        worker: usize,
        pid: u32,
        how: String,
    },

    /// Waiting for or killing a worker failed.
    #[error("worker {worker} (pid {pid}): {source}")]
    Wait {
        worker: usize,
        pid: u32,
        source: std::io::Error,
    },

    /// The built-in hackbench failed.
    #[error("hackbench: {0}")]
    Hackbench(String),

    /// One run of the benchmark failed.
    #[error("numa-test N={tasks} rep {rep}: {err}")]
    Run {
        tasks: u32,
        rep: u32,
        err: Box<BenchError>,
    },
}

impl BenchError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        BenchError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    pub fn parse(path: &Path, msg: impl Into<String>) -> Self {
        BenchError::Parse {
            path: path.display().to_string(),
            msg: msg.into(),
        }
    }
}
