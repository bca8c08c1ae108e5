//! The load peak with processes, as numa_test's hackbench of 2002 ran it.
//!
//! The dispatcher starts one helper process from its own binary (`homenode bench hackbench
//! ...`, a hidden subcommand). The helper is single-threaded, so it may `fork`: it makes one
//! Unix stream socket pair per receiver, forks every receiver and sender of every group (plain
//! forks, no exec, as hackbench's own children were), waits until each child has said it is
//! ready on a pipe, then writes one byte to a second pipe that every child polls: they start
//! together. It reaps them all and exits 0 only if every child did. A child that loses its
//! parent is killed (`PR_SET_PDEATHSIG`), so an interrupted run leaves nothing behind.
//!
//! The work of a sender and a receiver is the threads' ([`hackbench::send`],
//! [`hackbench::receive`]): each sender
//! writes `loops` messages of `msg_bytes` to every receiver of its group, each receiver reads
//! `loops x senders` messages.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork, pipe};

use crate::error::BenchError;
use crate::hackbench::{self, HackbenchError, HackbenchParams};
use crate::numa_test::WorkerCommand;

/// The helper's arguments for `p`.
pub fn to_args(p: &HackbenchParams) -> Vec<String> {
    [
        ("--groups", p.groups.to_string()),
        ("--senders", p.senders.to_string()),
        ("--receivers", p.receivers.to_string()),
        ("--loops", p.loops.to_string()),
        ("--msg-bytes", p.msg_bytes.to_string()),
    ]
    .into_iter()
    .flat_map(|(k, v)| [k.to_string(), v])
    .collect()
}

/// Parses what [`to_args`] wrote.
pub fn parse_args<S: AsRef<str>>(args: &[S]) -> Result<HackbenchParams, BenchError> {
    let bad = |m: String| BenchError::Config(format!("hackbench arguments: {m}"));
    let mut p = HackbenchParams::groups(0);
    let mut it = args.iter().map(AsRef::as_ref);
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| bad(format!("{k} needs a value")))?;
        let n: u32 = v
            .parse()
            .map_err(|_| bad(format!("{k} `{v}` is not a whole number up to 2^32")))?;
        match k {
            "--groups" => p.groups = n,
            "--senders" => p.senders = n,
            "--receivers" => p.receivers = n,
            "--loops" => p.loops = n,
            "--msg-bytes" => p.msg_bytes = n as usize,
            _ => return Err(bad(format!("unknown argument `{k}`"))),
        }
    }
    Ok(p)
}

/// Runs the peak as processes through the helper started from `cmd`; returns its duration,
/// from the helper's start to its exit.
pub fn run(cmd: &WorkerCommand, p: &HackbenchParams) -> Result<Duration, BenchError> {
    let t0 = Instant::now();
    let mut c = Command::new(&cmd.program);
    c.args(&cmd.prefix_args)
        .args(to_args(p))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    die_with_parent(&mut c);
    let out = c.output().map_err(|e| {
        BenchError::Hackbench(format!(
            "cannot start the hackbench helper {}: {e}",
            cmd.program.display()
        ))
    })?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        let why = why.lines().last().unwrap_or("no message").trim();
        return Err(BenchError::Hackbench(format!(
            "the hackbench helper failed ({}): {why}",
            out.status
        )));
    }
    Ok(t0.elapsed())
}

/// The helper's main: forks the peak's processes, starts them together and reaps them.
pub fn helper_main<S: AsRef<str>>(args: &[S]) -> Result<(), BenchError> {
    let p = parse_args(args)?;
    crate::hackbench::check(&p)?;
    if p.groups == 0 {
        return Ok(());
    }
    let threads = std::fs::read_dir("/proc/self/task").map_or(1, |d| d.count());
    if threads != 1 {
        return Err(BenchError::Hackbench(format!(
            "the helper runs {threads} threads: it forks only when it runs one"
        )));
    }
    crate::hackbench::raise_fd_limit(u64::from(p.groups) * u64::from(p.receivers) * 2 + 256)?;
    let sys = |what: &str, e: nix::Error| BenchError::Hackbench(format!("{what}: {e}"));
    let (ready_r, ready_w) = pipe().map_err(|e| sys("pipe", e))?;
    let (go_r, go_w) = pipe().map_err(|e| sys("pipe", e))?;
    let gate = Gate {
        ready_w,
        go_r,
        go_w: go_w.as_raw_fd(),
        helper: nix::unistd::getpid(),
    };
    let mut kids: Vec<Pid> = Vec::new();
    let forked = fork_all(&p, &gate, &mut kids);
    drop(gate);
    let mut ready = std::fs::File::from(ready_r);
    let mut go = std::fs::File::from(go_w);
    let mut failed = forked.err();
    if failed.is_none() {
        // One byte from each child: all are waiting at the gate.
        let mut buf = vec![0u8; kids.len()];
        if let Err(e) = ready.read_exact(&mut buf) {
            failed = Some(BenchError::Hackbench(format!(
                "a child died before it was ready: {e}"
            )));
        }
    }
    // Open the gate: one byte that nobody reads keeps the pipe readable for every child. On a
    // failure the gate is closed instead (end of file), and the children leave.
    if failed.is_none() {
        if let Err(e) = go.write_all(b"g") {
            failed = Some(BenchError::Hackbench(format!("gate: {e}")));
        }
    }
    drop(go);
    let bad = reap(&kids);
    match (failed, bad) {
        (Some(e), _) => Err(e),
        (None, Some(why)) => Err(BenchError::Hackbench(why)),
        (None, None) => Ok(()),
    }
}

/// The ends of the two pipes a child needs: it says it is ready on `ready_w`, then waits for
/// `go_r` to become readable (a byte: start; end of file: the run is off).
struct Gate {
    ready_w: OwnedFd,
    go_r: OwnedFd,
    /// The gate's write end, which the helper keeps (a child closes its copy).
    go_w: RawFd,
    helper: Pid,
}

/// Forks every receiver and sender; the children's PIDs go to `kids` as they are made.
fn fork_all(p: &HackbenchParams, gate: &Gate, kids: &mut Vec<Pid>) -> Result<(), BenchError> {
    let want = u64::from(p.loops) * u64::from(p.senders) * p.msg_bytes as u64;
    for g in 0..p.groups {
        let mut txs = Vec::new();
        for _ in 0..p.receivers {
            let (rx, tx) = UnixStream::pair()
                .map_err(|e| BenchError::Hackbench(format!("group {g}: socketpair: {e}")))?;
            let mut rx = rx;
            kids.push(spawn(gate, move || hackbench::receive(&mut rx, want))?);
            txs.push(tx);
        }
        for _ in 0..p.senders {
            kids.push(spawn(gate, || {
                hackbench::send(txs.iter(), p.loops, p.msg_bytes)
            })?);
        }
    }
    Ok(())
}

/// Forks one child that waits at the gate and then runs `work`; exits 0 if it succeeds.
fn spawn(
    gate: &Gate,
    work: impl FnOnce() -> Result<(), HackbenchError>,
) -> Result<Pid, BenchError> {
    match fork_single_threaded() {
        Ok(ForkResult::Parent { child }) => Ok(child),
        Ok(ForkResult::Child) => {
            let code = match child_run(gate, work) {
                Ok(true) => 0,
                Ok(false) => 3,
                Err(e) => {
                    eprintln!("hackbench child: {e}");
                    1
                }
            };
            leave(code)
        }
        Err(e) => Err(BenchError::Hackbench(format!("fork: {e}"))),
    }
}

/// `fork` of the helper, which [`helper_main`] has checked runs one thread.
#[allow(unsafe_code)]
fn fork_single_threaded() -> nix::Result<ForkResult> {
    // SAFETY: with one thread no lock can be held by another thread at the fork, so the
    // child may do anything the parent could.
    unsafe { fork() }
}

/// Ends a child at once, without the exit handlers and buffers it shares with the helper.
#[allow(unsafe_code)]
fn leave(code: i32) -> ! {
    // SAFETY: `_exit` takes no pointer and does not return.
    unsafe { libc::_exit(code) }
}

/// Makes the helper that `c` starts die with the thread that starts it.
#[allow(unsafe_code)]
fn die_with_parent(c: &mut Command) {
    // SAFETY: between fork and exec the child makes one system call (prctl), which is
    // async-signal-safe, and allocates nothing.
    unsafe {
        c.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
}

/// A child's life: die with the helper, say ready, wait for the gate; `Ok(false)` when the
/// gate closed without opening.
fn child_run(
    gate: &Gate,
    work: impl FnOnce() -> Result<(), HackbenchError>,
) -> Result<bool, Box<dyn std::error::Error>> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
    if nix::unistd::getppid() != gate.helper {
        // The helper died before the line above.
        return Ok(false);
    }
    // Only the helper may hold the gate's write end (its close then reads as the end of
    // file here), and the ready pipe's write end is closed once this child said it is ready
    // (a child that dies before it does then ends the helper's read). The process leaves with
    // `_exit`, so nothing closes these twice.
    let _ = nix::unistd::close(gate.go_w);
    nix::unistd::write(&gate.ready_w, b"r")?;
    let _ = nix::unistd::close(gate.ready_w.as_raw_fd());
    let mut fds = [PollFd::new(gate.go_r.as_fd(), PollFlags::POLLIN)];
    loop {
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => break,
            Err(nix::Error::EINTR) => continue,
            Err(e) => return Err(Box::new(e)),
        }
    }
    // A byte (never read, so every child sees it) opens the gate; the end of file alone
    // (POLLHUP) calls the run off.
    if fds[0]
        .revents()
        .is_some_and(|r| r.contains(PollFlags::POLLIN))
    {
        work()?;
        Ok(true)
    } else {
        Ok(false)
    }
}

/// Waits for every child; the first failure, said in one line.
fn reap(kids: &[Pid]) -> Option<String> {
    let mut first = None;
    for &k in kids {
        let why = loop {
            match waitpid(k, None) {
                Ok(WaitStatus::Exited(_, 0)) => break None,
                Ok(WaitStatus::Exited(_, c)) => break Some(format!("child {k} exited with {c}")),
                Ok(WaitStatus::Signaled(_, s, _)) => {
                    break Some(format!("child {k} was killed by {s}"));
                }
                Ok(_) => continue,
                Err(nix::Error::EINTR) => continue,
                Err(e) => break Some(format!("waitpid({k}): {e}")),
            }
        };
        if first.is_none() {
            first = why;
        }
    }
    first
}
