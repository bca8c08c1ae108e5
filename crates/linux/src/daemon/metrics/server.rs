//! The metrics endpoint's HTTP side: one thread, non-blocking sockets and `poll(2)`, so that
//! idle or slow clients cannot take the endpoint away from a scraper.
//!
//! A connection is admitted into a bounded table ([`MAX_CONNECTIONS`] in all,
//! [`MAX_PER_PEER`] per peer address). When the table (or the peer's share) is full, a
//! connection that has not yet sent a whole request head, and has had at least one pass to do
//! so, is closed to make room: the idle ones (nothing sent) first, the oldest first. At most
//! [`ACCEPTS_PER_PASS`] connections are taken from the kernel's queue per pass, fewer than a
//! peer's share, so every newcomer has a pass to send its request before it can be evicted,
//! and the rest wait in the kernel's queue in arrival order rather than being refused. An
//! attacker holding idle connections thus loses its oldest one to each newcomer, while a
//! scraper, which sends its request at once, is answered in the pass after it is accepted.
//! A connection must send its first byte within [`IDLE_DEADLINE`] and its whole head within
//! the request deadline, however it is cut in pieces; the answer must be taken within
//! [`WRITE_DEADLINE`].

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::os::fd::AsFd as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::render;
use crate::daemon::status::SharedStatus;

/// Connections held at once, all peers together.
pub(super) const MAX_CONNECTIONS: usize = 128;
/// Connections held at once from one peer address.
pub(super) const MAX_PER_PEER: usize = 32;
/// Connections accepted per pass of the loop (fewer than [`MAX_PER_PEER`]).
const ACCEPTS_PER_PASS: usize = 8;
/// A connection that has sent nothing for this long after it was accepted is closed.
pub(super) const IDLE_DEADLINE: Duration = Duration::from_millis(1000);
/// The client must take the whole answer within this time.
const WRITE_DEADLINE: Duration = Duration::from_secs(5);
/// A request head larger than this is not a scrape.
const MAX_HEAD: usize = 16 * 1024;
/// How often the loop looks at the stop flag and the deadlines when nothing happens.
const TICK_MS: u16 = 50;

/// One client connection and how far it has got.
struct Conn {
    stream: TcpStream,
    peer: IpAddr,
    opened: Instant,
    /// The pass of the loop that accepted it.
    pass: u64,
    head: Vec<u8>,
    /// The answer and how much of it was sent; `None` while the head is being read.
    out: Option<(Vec<u8>, usize)>,
}

impl Conn {
    fn reading(&self) -> bool {
        self.out.is_none()
    }

    /// Past its deadline at `now`: idle, head or answer.
    fn expired(&self, now: Instant, head_deadline: Duration) -> bool {
        let age = now.saturating_duration_since(self.opened);
        match &self.out {
            None if self.head.is_empty() => age >= IDLE_DEADLINE.min(head_deadline),
            None => age >= head_deadline,
            Some(_) => age >= head_deadline + WRITE_DEADLINE,
        }
    }
}

/// What a read or write pass left the connection in.
enum Step {
    Open,
    Close,
}

/// Serves until `stop` is set.
pub(super) fn serve(
    listener: TcpListener,
    status: SharedStatus,
    stop: Arc<AtomicBool>,
    head_deadline: Duration,
) {
    let mut conns: Vec<Conn> = Vec::new();
    let mut pass = 0u64;
    while !stop.load(Ordering::Relaxed) {
        pass += 1;
        let (listener_ready, ready) = match wait(&listener, &conns) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("metrics socket: poll: {e}");
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
        };
        // Serve the connections already held first, then admit newcomers: a newcomer can
        // only evict a connection that has had a pass to send its head.
        let mut keep = Vec::with_capacity(conns.len());
        for (mut c, ready) in conns.drain(..).zip(ready) {
            if ready && matches!(step(&mut c, &status), Step::Close) {
                continue;
            }
            keep.push(c);
        }
        conns = keep;
        if listener_ready {
            accept_some(&listener, &mut conns, pass);
        }
        let now = Instant::now();
        conns.retain(|c| !c.expired(now, head_deadline));
    }
}

/// Waits up to one tick for the listener or a connection to be ready: (listener ready, each
/// connection ready).
fn wait(listener: &TcpListener, conns: &[Conn]) -> nix::Result<(bool, Vec<bool>)> {
    let mut fds = Vec::with_capacity(conns.len() + 1);
    fds.push(PollFd::new(listener.as_fd(), PollFlags::POLLIN));
    for c in conns {
        let ev = if c.reading() {
            PollFlags::POLLIN
        } else {
            PollFlags::POLLOUT
        };
        fds.push(PollFd::new(c.stream.as_fd(), ev));
    }
    match poll(&mut fds, PollTimeout::from(TICK_MS)) {
        Ok(_) => {}
        Err(nix::errno::Errno::EINTR) => return Ok((false, vec![false; conns.len()])),
        Err(e) => return Err(e),
    }
    let is = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
    Ok((is(&fds[0]), fds[1..].iter().map(is).collect()))
}

/// Accepts up to [`ACCEPTS_PER_PASS`] pending connections, making room as the module doc
/// says.
fn accept_some(listener: &TcpListener, conns: &mut Vec<Conn>, pass: u64) {
    for _ in 0..ACCEPTS_PER_PASS {
        match listener.accept() {
            Ok((stream, addr)) => {
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                let peer = addr.ip();
                if !make_room(conns, peer, pass) {
                    tracing::debug!("metrics: no connection may make room; one refused");
                    continue;
                }
                conns.push(Conn {
                    stream,
                    peer,
                    opened: Instant::now(),
                    pass,
                    head: Vec::new(),
                    out: None,
                });
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                tracing::warn!("metrics socket: accept: {e}");
                return;
            }
        }
    }
}

/// Frees a place for a connection from `peer`: within the peer's share, or in the whole
/// table (taken from the peer that holds most). False when no connection may be closed.
fn make_room(conns: &mut Vec<Conn>, peer: IpAddr, pass: u64) -> bool {
    let mut per_peer: BTreeMap<IpAddr, usize> = BTreeMap::new();
    for c in conns.iter() {
        *per_peer.entry(c.peer).or_default() += 1;
    }
    let from = if per_peer.get(&peer).copied().unwrap_or(0) >= MAX_PER_PEER {
        peer
    } else if conns.len() >= MAX_CONNECTIONS {
        match per_peer.iter().max_by_key(|(_, n)| **n) {
            Some((p, _)) => *p,
            None => return true,
        }
    } else {
        return true;
    };
    let victim = conns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.peer == from && c.reading() && c.pass < pass)
        .min_by_key(|(_, c)| (!c.head.is_empty(), c.opened))
        .map(|(i, _)| i);
    match victim {
        Some(i) => {
            conns.swap_remove(i);
            true
        }
        None => false,
    }
}

/// Reads what arrived, or writes what the socket takes.
fn step(c: &mut Conn, status: &SharedStatus) -> Step {
    if c.reading() {
        read_head(c, status)
    } else {
        write_answer(c)
    }
}

fn read_head(c: &mut Conn, status: &SharedStatus) -> Step {
    let mut buf = [0u8; 1024];
    loop {
        match c.stream.read(&mut buf) {
            Ok(0) => return Step::Close,
            Ok(n) => c.head.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Step::Close,
        }
        if c.head.len() > MAX_HEAD {
            return Step::Close;
        }
    }
    // Answer only once the whole head is in: closing with unread bytes in the socket would
    // make the kernel reset the connection before the client reads the answer.
    if c.head.windows(4).any(|w| w == b"\r\n\r\n") {
        c.out = Some((answer(&c.head, status), 0));
        return write_answer(c);
    }
    Step::Open
}

fn write_answer(c: &mut Conn) -> Step {
    let Some((out, sent)) = &mut c.out else {
        return Step::Open;
    };
    while *sent < out.len() {
        match c.stream.write(&out[*sent..]) {
            Ok(0) => return Step::Close,
            Ok(n) => *sent += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Open,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Step::Close,
        }
    }
    let _ = c.stream.shutdown(std::net::Shutdown::Write);
    Step::Close
}

/// The HTTP answer to a request head.
fn answer(head: &[u8], status: &SharedStatus) -> Vec<u8> {
    let req = String::from_utf8_lossy(head);
    let first = req.lines().next().unwrap_or("");
    let (code, ctype, body) = if first.starts_with("GET /metrics ") || first == "GET /metrics" {
        let report = status.lock().unwrap_or_else(|p| p.into_inner()).clone();
        (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            render(&report),
        )
    } else {
        ("404 Not Found", "text/plain", "only /metrics\n".to_string())
    };
    format!(
        "HTTP/1.1 {code}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
