//! A built-in hackbench: the load peak numa_test starts three seconds into a run.
//!
//! Like `hackbench -T` (threads instead of processes, sockets): `groups` groups, each of
//! `receivers` receivers and `senders` senders. Every receiver owns one Unix stream socket
//! pair; every sender of the group writes `loops` messages of `msg_bytes` bytes to every
//! receiver of its group, and each receiver reads `loops x senders` messages. All threads are
//! created first and wait at a gate, then start together; the duration reported is that of
//! the whole peak, from the creation of the first thread to the end of the last one.
//!
//! Threads are the same kind of load for the scheduler as processes (many short-lived
//! runnable tasks waking each other through sockets, 40 per group), but they share one address
//! space; numa_test's hackbench of 2002 forked processes, which [`crate::hackbench_procs`]
//! runs (the benchmark's default), with no `fork` in the multi-threaded dispatcher.

use crate::error::BenchError;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The shape of the load peak.
#[derive(Clone, Debug, PartialEq)]
pub struct HackbenchParams {
    pub groups: u32,
    pub senders: u32,
    pub receivers: u32,
    /// Messages from each sender to each receiver.
    pub loops: u32,
    pub msg_bytes: usize,
}

impl HackbenchParams {
    /// `hackbench G`: G groups of 20 senders and 20 receivers, 100 messages of 100 bytes.
    pub fn groups(groups: u32) -> Self {
        HackbenchParams {
            groups,
            senders: 20,
            receivers: 20,
            loops: 100,
            msg_bytes: 100,
        }
    }

    /// Threads the peak creates.
    pub fn threads(&self) -> u64 {
        u64::from(self.groups) * u64::from(self.senders + self.receivers)
    }
}

/// Start gate: every thread waits until the creator opens it (or calls the run off).
struct Gate {
    state: Mutex<Option<bool>>,
    cv: Condvar,
}

impl Gate {
    fn wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while s.is_none() {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.unwrap_or(false)
    }

    fn open(&self, go: bool) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(go);
        self.cv.notify_all();
    }
}

/// What stopped a hackbench thread, or kept one from starting.
#[derive(Debug, thiserror::Error)]
pub enum HackbenchError {
    #[error("group {group}: socketpair: {source}")]
    SocketPair { group: u32, source: std::io::Error },
    #[error("group {group}: cannot start {role} thread: {source}")]
    Thread {
        group: u32,
        role: &'static str,
        source: std::io::Error,
    },
    #[error("receiver read: {0}")]
    Read(std::io::Error),
    #[error("receiver: senders closed after {got} of {want} bytes")]
    Closed { got: u64, want: u64 },
    #[error("sender write: {0}")]
    Write(std::io::Error),
    #[error("a hackbench thread panicked")]
    Panicked,
}

type Worker = JoinHandle<Result<(), HackbenchError>>;

/// Refuses a peak without senders, receivers or message bytes.
pub(crate) fn check(p: &HackbenchParams) -> Result<(), BenchError> {
    if p.groups > 0 && (p.senders == 0 || p.receivers == 0 || p.msg_bytes == 0) {
        return Err(BenchError::Hackbench(
            "senders, receivers and message size must be at least 1".into(),
        ));
    }
    Ok(())
}

/// Run the peak with threads; returns its duration.
pub fn run(p: &HackbenchParams) -> Result<Duration, BenchError> {
    check(p)?;
    if p.groups == 0 {
        return Ok(Duration::ZERO);
    }
    raise_fd_limit(u64::from(p.groups) * u64::from(p.receivers) * 2 + 256)?;
    let t0 = Instant::now();
    let gate = Arc::new(Gate {
        state: Mutex::new(None),
        cv: Condvar::new(),
    });
    let mut threads: Vec<Worker> = Vec::new();
    let r = spawn_all(p, &gate, &mut threads);
    gate.open(r.is_ok());
    let mut first_err = r.err();
    for t in threads {
        let res = t.join().unwrap_or(Err(HackbenchError::Panicked));
        if let (Err(e), None) = (res, &first_err) {
            first_err = Some(e);
        }
    }
    match first_err {
        Some(e) => Err(BenchError::Hackbench(e.to_string())),
        None => Ok(t0.elapsed()),
    }
}

fn spawn_all(
    p: &HackbenchParams,
    gate: &Arc<Gate>,
    threads: &mut Vec<Worker>,
) -> Result<(), HackbenchError> {
    let builder = || std::thread::Builder::new().stack_size(64 * 1024);
    let want = u64::from(p.loops) * u64::from(p.senders) * p.msg_bytes as u64;
    for g in 0..p.groups {
        let mut txs = Vec::new();
        for r in 0..p.receivers {
            let (rx, tx) = UnixStream::pair()
                .map_err(|source| HackbenchError::SocketPair { group: g, source })?;
            txs.push(Arc::new(tx));
            let gate = gate.clone();
            let t = builder()
                .name(format!("hb-recv-{g}-{r}"))
                .spawn(move || receiver(rx, want, &gate))
                .map_err(|source| HackbenchError::Thread {
                    group: g,
                    role: "receiver",
                    source,
                })?;
            threads.push(t);
        }
        let txs = Arc::new(txs);
        for s in 0..p.senders {
            let (txs, gate) = (txs.clone(), gate.clone());
            let (loops, bytes) = (p.loops, p.msg_bytes);
            let t = builder()
                .name(format!("hb-send-{g}-{s}"))
                .spawn(move || sender(&txs, loops, bytes, &gate))
                .map_err(|source| HackbenchError::Thread {
                    group: g,
                    role: "sender",
                    source,
                })?;
            threads.push(t);
        }
    }
    Ok(())
}

fn receiver(mut rx: UnixStream, want: u64, gate: &Gate) -> Result<(), HackbenchError> {
    if !gate.wait() {
        return Ok(());
    }
    receive(&mut rx, want)
}

fn sender(
    txs: &[Arc<UnixStream>],
    loops: u32,
    bytes: usize,
    gate: &Gate,
) -> Result<(), HackbenchError> {
    if !gate.wait() {
        return Ok(());
    }
    send(txs.iter().map(|tx| &**tx), loops, bytes)
}

/// A receiver's work, thread or process: read `want` bytes from `rx`.
pub(crate) fn receive(rx: &mut UnixStream, want: u64) -> Result<(), HackbenchError> {
    let mut buf = [0u8; 4096];
    let mut got = 0u64;
    while got < want {
        let n = rx.read(&mut buf).map_err(HackbenchError::Read)?;
        if n == 0 {
            return Err(HackbenchError::Closed { got, want });
        }
        got += n as u64;
    }
    Ok(())
}

/// A sender's work, thread or process: `loops` messages of `bytes` to every receiver.
pub(crate) fn send<'a>(
    txs: impl Iterator<Item = &'a UnixStream> + Clone,
    loops: u32,
    bytes: usize,
) -> Result<(), HackbenchError> {
    let msg = vec![0x5a_u8; bytes];
    for _ in 0..loops {
        for mut tx in txs.clone() {
            tx.write_all(&msg).map_err(HackbenchError::Write)?;
        }
    }
    Ok(())
}

/// Make sure the process may open `need` descriptors: raise the soft limit up to the hard
/// limit if needed.
pub(crate) fn raise_fd_limit(need: u64) -> Result<(), BenchError> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)
        .map_err(|e| BenchError::Hackbench(format!("getrlimit(NOFILE): {e}")))?;
    if soft >= need {
        return Ok(());
    }
    if hard < need {
        return Err(BenchError::Hackbench(format!(
            "needs {need} file descriptors, the hard limit (ulimit -Hn) is {hard}"
        )));
    }
    setrlimit(Resource::RLIMIT_NOFILE, need, hard)
        .map_err(|e| BenchError::Hackbench(format!("setrlimit(NOFILE, {need}): {e}")))
}
