//! `homenode`: the command-line front end.

/// Write to stdout; a closed pipe (`homenode ... | head`) ends the program quietly.
macro_rules! out {
    ($($arg:tt)*) => { $crate::emit(&format!($($arg)*))? };
}
macro_rules! outln {
    ($($arg:tt)*) => { $crate::emit(&format!("{}\n", format!($($arg)*)))? };
}

mod bench_cmd;
mod docs_cmd;
mod experiments_cmd;
mod logging;
mod progress;
mod run_cmd;
mod sim_cmd;
mod validate_cmd;

use anyhow::Result;
use clap::{CommandFactory as _, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "homenode",
    version,
    about = "NUMA scheduling toolkit: simulate, place, benchmark"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a NUMA machine (no arguments: the headline numa_test comparison on azusa16).
    Sim(sim_cmd::SimArgs),
    /// List machine presets, or show one machine with its scheduling domains.
    Machines {
        /// A preset name, a spec file (.toml) or a synthetic spec (nodes=4,cpus-per-node=4).
        machine: Option<String>,
    },
    /// List the CPU-level schedulers.
    Schedulers,
    /// The classic scheduler comparisons (experiments/*.toml): list, run, write reports.
    Experiments(experiments_cmd::ExperimentsArgs),
    /// Run the validation set (validation/*.toml): published figures against the simulator.
    Validate(validate_cmd::ValidateArgs),
    /// Benchmark this host: numa_test with per-node time, compared with a simulation.
    Bench(bench_cmd::BenchArgs),
    /// The placement daemon: give busy processes a home node on this host (root).
    Run(run_cmd::RunArgs),
    /// Ask the running daemon for its placement table.
    Status(run_cmd::StatusArgs),
    /// Tell the running daemon to manage a process (when busy enough; no safety rule lifted).
    Manage(run_cmd::ControlArgs),
    /// Tell the running daemon to leave a process alone, restoring what it set on it.
    Unmanage(run_cmd::ControlArgs),
    /// This host's NUMA topology as the daemon sees it.
    Topo(run_cmd::TopoArgs),
    /// Write the man pages (homenode.1 and one per subcommand) into a directory.
    Man(docs_cmd::ManArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(docs_cmd::CompletionsArgs),
}

/// Logs to stderr, one line per event (see [`logging`]).
pub(crate) fn init_logging() {
    logging::init();
}

/// Writes `s` to stdout, made safe for a terminal first (`linux::text::terminal_safe`): names
/// from input files reach the reports, and must not carry escape sequences to the screen.
fn emit(s: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let s = linux::text::terminal_safe(s);
    let mut o = std::io::stdout().lock();
    match o.write_all(s.as_bytes()).and_then(|()| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        r => r,
    }
}

fn main() {
    let cli = Cli::parse();
    let r: Result<()> = match cli.cmd {
        Cmd::Sim(a) => sim_cmd::run(a),
        Cmd::Bench(a) => bench_cmd::run(a),
        Cmd::Run(a) => run_cmd::run(a),
        Cmd::Status(a) => run_cmd::status(a),
        Cmd::Manage(a) => run_cmd::control(&a, "manage"),
        Cmd::Unmanage(a) => run_cmd::control(&a, "unmanage"),
        Cmd::Man(a) => docs_cmd::man(&a, Cli::command()),
        Cmd::Completions(a) => docs_cmd::completions(&a, Cli::command()),
        Cmd::Topo(a) => run_cmd::topo(a),
        Cmd::Experiments(a) => experiments_cmd::run(a),
        Cmd::Validate(a) => validate_cmd::run(a),
        Cmd::Machines { machine } => sim_cmd::machines(machine.as_deref()),
        Cmd::Schedulers => (|| -> Result<()> {
            for e in sim::sched::SCHEDULERS {
                outln!("{:<22} {}", e.name, e.about);
            }
            Ok(())
        })(),
    };
    if let Err(e) = r {
        eprintln!("homenode: {}", error_line(&e));
        std::process::exit(exit_code(&e));
    }
}

/// An error in how homenode was called (a value on the command line that names nothing or is
/// out of range, a missing argument): exit code 2, as for the errors clap finds itself.
#[derive(Debug)]
pub(crate) struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Marks `e` as a usage error (its message on one line, as it would have been printed).
pub(crate) fn usage(e: anyhow::Error) -> anyhow::Error {
    anyhow::Error::new(Usage(error_line(&e)))
}

/// 2 for a usage error, 1 for any other (a file that does not parse, a daemon that is not
/// running, a syscall that failed).
fn exit_code(e: &anyhow::Error) -> i32 {
    if e.chain().any(|c| c.is::<Usage>()) {
        2
    } else {
        1
    }
}

/// The error and its causes on one line, each said once: many library errors already show
/// their source in their own message (`path: what: OS error`), and printing the chain as well
/// would repeat the OS error. Control characters (a line break in a parser's message, an
/// escape sequence in a name read from a file) are escaped, so it stays one line.
fn error_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    linux::text::escape_control(&line).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_usage_error_exits_2_even_under_context_and_others_1() {
        let u = super::usage(anyhow::anyhow!("--set x: expected KEY=VALUE"));
        assert_eq!(super::exit_code(&u.context("homenode run")), 2);
        assert_eq!(super::exit_code(&anyhow::anyhow!("cannot connect")), 1);
    }

    #[test]
    fn an_os_error_is_said_once() {
        let io = std::io::Error::from_raw_os_error(2);
        let status = linux::daemon::status::StatusError::Io {
            path: "/run/x.sock".into(),
            what: "cannot bind",
            source: io,
        };
        let e = anyhow::Error::new(status).context("starting the daemon");
        let line = super::error_line(&e);
        assert_eq!(line.matches("No such file").count(), 1, "{line}");
        assert!(
            line.starts_with("starting the daemon: /run/x.sock: cannot bind"),
            "{line}"
        );
    }
}
