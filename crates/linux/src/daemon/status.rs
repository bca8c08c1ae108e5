//! What the daemon tells the world: the placement table and counters ([`StatusReport`]),
//! served to `homenode status` over a Unix socket that only root (or the daemon's own user)
//! can use.
//!
//! The socket lives in a directory the daemon creates with mode 0700 and is itself 0600; on
//! top of that the peer's credentials (`SO_PEERCRED`) are checked, so a socket path in a
//! world-writable directory is still safe. The protocol is one request line (`status`) and a
//! JSON answer, after which the daemon closes the connection.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, ErrorKind, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, FileTypeExt as _, MetadataExt as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::control::{Control, Request};

/// One node in the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeStatus {
    pub node: usize,
    pub cpus: String,
    /// CPUs busy over the last interval (all tasks).
    pub busy_cpus: f64,
    pub free_bytes: u64,
    /// Processes whose home includes this node.
    pub homed: usize,
}

/// One process in the placement table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessStatus {
    pub pid: u32,
    pub starttime: u64,
    pub comm: String,
    pub cpu_use: f64,
    /// Home nodes (empty: none).
    pub home: Vec<usize>,
    /// The scheduling slice homenode gave its threads, ns (in a dry run: would give); 0 when
    /// none.
    #[serde(default)]
    pub slice_ns: u64,
    /// Percent of its CPU time per node over the last interval.
    pub time_pct: Vec<f64>,
    /// Percent of its own memory per node (empty when not read).
    pub memory_pct: Vec<f64>,
    /// Its own memory per node, bytes (empty when not read), as `numastat -p` shows it.
    #[serde(default)]
    pub memory_bytes: Vec<u64>,
    pub rss_bytes: u64,
    /// Why it is left alone, if it is.
    pub left_alone: Option<String>,
    /// The last action on it, its reason and outcome.
    pub last_action: Option<String>,
    pub last_outcome: Option<String>,
    pub last_unix_s: Option<u64>,
}

/// Counters since the daemon started.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Actions by `kind/outcome`, e.g. `set_home/done`.
    pub actions: BTreeMap<String, u64>,
    pub pages_moved: u64,
    pub bytes_moved: u64,
    pub pages_failed: u64,
    /// Candidates left alone by reason label, counted once per process.
    pub skipped: BTreeMap<String, u64>,
    /// First looks taken between intervals, and of them those that found a new candidate.
    #[serde(default)]
    pub first_looks: u64,
    #[serde(default)]
    pub first_looks_found: u64,
    /// Processes dropped from a scan because a file was malformed or unreadable.
    pub scan_errors: u64,
}

/// Everything `homenode status` shows, as of the last interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusReport {
    pub version: String,
    pub policy: String,
    pub dry_run: bool,
    pub fake_numa: Option<usize>,
    pub interval_s: f64,
    pub intervals: u64,
    pub uptime_s: f64,
    /// Daemon CPU time of the last interval's work, ms.
    pub last_cpu_ms: f64,
    /// Wall time of the last interval's work, ms (more than the interval: it overran).
    #[serde(default)]
    pub last_wall_ms: f64,
    /// The kernel was found to have no custom scheduling slices (before Linux 6.12): the
    /// policy's slices are skipped.
    #[serde(default)]
    pub no_custom_slices: bool,
    /// Processes read in the light pass, and candidates read closely.
    pub processes_seen: usize,
    pub candidates: usize,
    pub nodes: Vec<NodeStatus>,
    pub processes: Vec<ProcessStatus>,
    pub counters: Counters,
    /// The kernel's `numa_*` and `pgmigrate_*` counters of `/proc/vmstat` over the last
    /// interval (empty without `CONFIG_NUMA`).
    #[serde(default)]
    pub kernel_numa: BTreeMap<String, u64>,
    /// What the last decision held back, and why (the policy's notes, docs/PLACEMENT.md).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Shared between the loop (writer) and the servers (readers).
pub type SharedStatus = Arc<Mutex<StatusReport>>;

/// Why the socket could not be served or asked.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("{path}: {what}: {source}")]
    Io {
        path: PathBuf,
        what: &'static str,
        source: std::io::Error,
    },
    #[error("{path}: another homenode daemon is answering on this socket")]
    InUse { path: PathBuf },
    #[error(
        "{path}: refusing to replace it: {why} (remove it yourself or choose another socket path)"
    )]
    NotOurSocket { path: PathBuf, why: String },
    #[error("{path}: the answer is not a status report: {reason}")]
    BadAnswer { path: PathBuf, reason: String },
    #[error("{path}: refusing the socket: {why}")]
    Untrusted { path: PathBuf, why: String },
}

fn io<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(std::io::Error) -> StatusError + 'a {
    move |source| StatusError::Io {
        path: path.to_path_buf(),
        what,
        source,
    }
}

/// The socket server; dropping it stops answering and removes the socket file.
pub struct StatusServer {
    path: PathBuf,
    /// Device and inode of the socket this server bound: only that file is removed on drop.
    identity: (u64, u64),
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StatusServer {
    /// Binds `path` (creating its directory with mode 0700 if needed) and serves `status`;
    /// `manage`/`unmanage` requests are refused.
    pub fn start(path: &Path, status: SharedStatus) -> Result<StatusServer, StatusError> {
        StatusServer::start_with(path, status, None)
    }

    /// [`StatusServer::start`], handing `manage PID`/`unmanage PID` requests to `control`.
    pub fn start_with(
        path: &Path,
        status: SharedStatus,
        control: Option<Arc<Control>>,
    ) -> Result<StatusServer, StatusError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(io(dir, "cannot create the socket directory"))?;
            }
        }
        // Nobody else may write the directory, or they could replace the socket with their
        // own server, or a link, at any time after the bind.
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        crate::trust::check_private_dir(dir.unwrap_or(Path::new("."))).map_err(|e| {
            StatusError::Untrusted {
                path: path.to_path_buf(),
                why: e.to_string(),
            }
        })?;
        remove_stale_socket(path)?;
        let listener = bind_private_socket(path)?;
        let identity = std::fs::symlink_metadata(path)
            .map(|m| (m.dev(), m.ino()))
            .map_err(io(path, "cannot stat the new socket"))?;
        listener
            .set_nonblocking(true)
            .map_err(io(path, "cannot make non-blocking"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("homenode-status".into())
            .spawn(move || serve(&listener, &status, control.as_deref(), &stop2))
            .map_err(io(path, "cannot start the server thread"))?;
        Ok(StatusServer {
            path: path.to_path_buf(),
            identity,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for StatusServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let still_ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| (m.dev(), m.ino()) == self.identity);
        if still_ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Binds `path` as a socket created with mode 0600: the mode comes from the umask in force
/// at `bind(2)`, so there is never a moment when the file has another mode and nothing is
/// ever changed by path afterwards. (The umask is process-wide; for the instant of the bind,
/// files other threads create are only made more private, never less.) The new file is then
/// checked: a socket, owned by the daemon's user, mode 0600.
fn bind_private_socket(path: &Path) -> Result<UnixListener, StatusError> {
    use nix::sys::stat::{Mode, umask};
    let old = umask(Mode::from_bits_truncate(0o177));
    let bound = UnixListener::bind(path);
    umask(old);
    let listener = bound.map_err(io(path, "cannot bind"))?;
    let meta = std::fs::symlink_metadata(path).map_err(io(path, "cannot stat the new socket"))?;
    let me = nix::unistd::geteuid().as_raw();
    let why = if !meta.file_type().is_socket() {
        Some(format!(
            "the bound socket was replaced by a {}",
            kind_of(&meta)
        ))
    } else if meta.uid() != me {
        Some(format!(
            "the bound socket belongs to uid {}, not {me}",
            meta.uid()
        ))
    } else if meta.mode() & 0o777 != 0o600 {
        Some(format!(
            "the bound socket has mode {:o}, not 600",
            meta.mode() & 0o777
        ))
    } else {
        None
    };
    match why {
        Some(why) => Err(StatusError::Untrusted {
            path: path.to_path_buf(),
            why,
        }),
        None => Ok(listener),
    }
}

/// Clears the way for binding `path`. Only a socket that nobody answers on and that the
/// daemon's own user owns is removed (a daemon that died left it); a live socket means another
/// daemon, and anything else (a regular file, a link, someone else's socket) is refused, so a
/// mistyped `--socket` can never delete a file.
fn remove_stale_socket(path: &Path) -> Result<(), StatusError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(path, "cannot stat")(e)),
    };
    let refuse = |why: String| StatusError::NotOurSocket {
        path: path.to_path_buf(),
        why,
    };
    if !meta.file_type().is_socket() {
        return Err(refuse(format!(
            "it exists and is not a socket ({})",
            kind_of(&meta)
        )));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(refuse(format!(
            "the socket belongs to uid {}, not {me}",
            meta.uid()
        )));
    }
    if UnixStream::connect(path).is_ok() {
        return Err(StatusError::InUse {
            path: path.to_path_buf(),
        });
    }
    std::fs::remove_file(path).map_err(io(path, "cannot remove the stale socket"))
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

fn serve(
    listener: &UnixListener,
    status: &SharedStatus,
    control: Option<&Control>,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Err(e) = answer(stream, status, control) {
                    tracing::debug!("status request: {e}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => {
                tracing::warn!("status socket: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Whether the peer may read the status: root, or the daemon's own user.
fn peer_allowed(stream: &UnixStream) -> bool {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    match getsockopt(stream, PeerCredentials) {
        Ok(c) => c.uid() == 0 || c.uid() == nix::unistd::geteuid().as_raw(),
        Err(_) => false,
    }
}

fn answer(
    stream: UnixStream,
    status: &SharedStatus,
    control: Option<&Control>,
) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut w = &stream;
    if !peer_allowed(&stream) {
        return w.write_all(b"{\"error\":\"permission denied: only root may ask\"}\n");
    }
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    if let Some(req) = Request::parse(&line) {
        let answer = match (req, control) {
            (Err(e), _) => serde_json::json!({ "error": e.to_string() }),
            (Ok(_), None) => serde_json::json!({ "error": "this server takes no requests" }),
            (Ok(r), Some(c)) => match c.take(r) {
                Ok(ok) => serde_json::json!({ "ok": ok }),
                Err(e) => serde_json::json!({ "error": e.to_string() }),
            },
        };
        return writeln!(w, "{answer}");
    }
    if line.trim() != "status" {
        return w.write_all(
            b"{\"error\":\"unknown request (known: status, manage PID, unmanage PID)\"}\n",
        );
    }
    let json = {
        let s = status.lock().unwrap_or_else(|p| p.into_inner());
        serde_json::to_string(&*s).unwrap_or_default()
    };
    w.write_all(json.as_bytes())?;
    w.write_all(b"\n")
}

/// Sends the daemon at `path` a request line (`manage 4242`); its answer, or the error it
/// gave.
pub fn request(path: &Path, line: &str) -> Result<String, StatusError> {
    let text = ask(path, line)?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| StatusError::BadAnswer {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    match (v.get("ok"), v.get("error")) {
        (Some(ok), _) => Ok(ok.as_str().unwrap_or_default().to_string()),
        (None, Some(e)) => Err(StatusError::BadAnswer {
            path: path.to_path_buf(),
            reason: e.as_str().unwrap_or_default().to_string(),
        }),
        _ => Err(StatusError::BadAnswer {
            path: path.to_path_buf(),
            reason: "neither ok nor error".into(),
        }),
    }
}

/// The largest answer read from the socket (a status of 10,000 processes is a few MB).
const MAX_ANSWER_BYTES: u64 = 64 << 20;
/// The whole answer must arrive within this time, however it is cut in pieces.
const ANSWER_DEADLINE: Duration = Duration::from_secs(5);

/// One request line sent, one answer line read. The server must be root or the caller's own
/// user (`SO_PEERCRED`): anyone who could put a socket at the path would otherwise feed root's
/// `homenode status` whatever it likes. The answer is bounded in size and in time.
fn ask(path: &Path, line: &str) -> Result<String, StatusError> {
    let stream = UnixStream::connect(path).map_err(io(
        path,
        "cannot connect (is the daemon running, and are you root?)",
    ))?;
    if !peer_allowed(&stream) {
        return Err(StatusError::Untrusted {
            path: path.to_path_buf(),
            why: "its server is neither root nor you".into(),
        });
    }
    (&stream)
        .write_all(format!("{line}\n").as_bytes())
        .map_err(io(path, "cannot send the request"))?;
    read_answer(path, &stream, ANSWER_DEADLINE)
}

/// Reads one line from `stream` within `limit` in all and [`MAX_ANSWER_BYTES`].
fn read_answer(path: &Path, stream: &UnixStream, limit: Duration) -> Result<String, StatusError> {
    let deadline = std::time::Instant::now() + limit;
    let late = || StatusError::BadAnswer {
        path: path.to_path_buf(),
        reason: format!("the daemon did not answer within {} s", limit.as_secs_f64()),
    };
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(late());
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(io(path, "cannot set a timeout"))?;
        let n = match (&*stream).read(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(late());
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(path, "cannot read the answer")(e)),
        };
        let end = buf[..n].iter().position(|&b| b == b'\n');
        bytes.extend_from_slice(&buf[..end.map_or(n, |e| e + 1)]);
        if bytes.len() as u64 > MAX_ANSWER_BYTES {
            return Err(StatusError::BadAnswer {
                path: path.to_path_buf(),
                reason: format!("the answer is longer than {} MiB", MAX_ANSWER_BYTES >> 20),
            });
        }
        if n == 0 || end.is_some() {
            break;
        }
    }
    String::from_utf8(bytes).map_err(|_| StatusError::BadAnswer {
        path: path.to_path_buf(),
        reason: "the answer is not UTF-8 text".into(),
    })
}

/// Asks the daemon at `path` for its status.
pub fn query(path: &Path) -> Result<StatusReport, StatusError> {
    let text = ask(path, "status")?;
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
        if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
            return Err(StatusError::BadAnswer {
                path: path.to_path_buf(),
                reason: e.to_string(),
            });
        }
    }
    serde_json::from_str(&text).map_err(|e| StatusError::BadAnswer {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// Serves, once, an endless answer on the socket named by `HOMENODE_FAKE_SERVER` (when
    /// set): run by [`the_client_refuses_another_users_server_and_bounds_the_answer`] as an
    /// unprivileged user. Does nothing in a normal test run.
    #[test]
    fn fake_status_server() {
        let Some(path) = std::env::var_os("HOMENODE_FAKE_SERVER") else {
            return;
        };
        let l = UnixListener::bind(&path).expect("bind");
        if let Ok((mut s, _)) = l.accept() {
            let chunk = vec![b'x'; 1 << 16];
            while s.write_all(&chunk).is_ok() {}
        }
    }

    /// A server run by someone else is refused before anything is read; one of root's (here,
    /// a thread) that sends an endless line, or trickles, is cut off with a clear reason.
    #[test]
    fn the_client_refuses_another_users_server_and_bounds_the_answer() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        let path = dir.path().join("s.sock");
        if nix::unistd::geteuid().is_root() {
            let mut child = std::process::Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(std::env::current_exe().expect("exe"))
                .args(["--exact", "daemon::status::tests::fake_status_server"])
                .env("HOMENODE_FAKE_SERVER", &path)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("setpriv (util-linux)");
            // Uid 65534 may be unable to reach this test binary (a checkout under a private
            // home): then the child exits, and that part is said to be skipped.
            while !path.exists() && child.try_wait().expect("wait").is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
            if path.exists() {
                let e = query(&path).expect_err("another user's server");
                assert!(e.to_string().contains("neither root nor you"), "{e}");
            } else {
                eprintln!("skipped: uid 65534 cannot run this test binary");
            }
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(&path);
        }
        // Root's own server (this process), endless: bounded in size.
        let l = UnixListener::bind(&path).expect("bind");
        let endless = std::thread::spawn(move || {
            let (mut s, _) = l.accept().expect("accept");
            let chunk = vec![b'x'; 1 << 16];
            while s.write_all(&chunk).is_ok() {}
        });
        // No deadline in reach: on a loaded machine 64 MiB may take longer than the client's
        // 5 s, and the size bound is what this part checks.
        let s = UnixStream::connect(&path).expect("connect");
        let e = read_answer(&path, &s, Duration::from_secs(3600)).expect_err("endless");
        assert!(e.to_string().contains("longer than 64 MiB"), "{e}");
        drop(s);
        endless.join().expect("server");
        // A trickle: a byte now and then, never a line end.
        std::fs::remove_file(&path).expect("rm");
        let l = UnixListener::bind(&path).expect("bind");
        let trickle = std::thread::spawn(move || {
            let (mut s, _) = l.accept().expect("accept");
            while s.write_all(b"x").is_ok() {
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let s = UnixStream::connect(&path).expect("connect");
        let e = read_answer(&path, &s, Duration::from_millis(300)).expect_err("trickle");
        assert!(e.to_string().contains("did not answer within 0.3 s"), "{e}");
        drop(s);
        trickle.join().expect("server");
    }

    /// The socket's directory must be one nobody else can write, or another user could put
    /// their own server (or a link) in the socket's place.
    #[test]
    fn a_socket_directory_others_can_write_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777))
            .expect("chmod");
        let shared: SharedStatus = Arc::new(Mutex::new(StatusReport::default()));
        let e = StatusServer::start(&dir.path().join("s.sock"), shared.clone())
            .err()
            .expect("refused");
        assert!(e.to_string().contains("writable by group or others"), "{e}");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .expect("chmod");
        let path = dir.path().join("s.sock");
        let server = StatusServer::start(&path, shared).expect("private");
        let mode = std::fs::symlink_metadata(&path).expect("stat").mode() & 0o777;
        assert_eq!(mode, 0o600);
        drop(server);
    }

    /// `manage PID`/`unmanage PID` reach the daemon's control (a server without one refuses
    /// them), and a bad request is one error line.
    #[test]
    fn requests_over_the_socket() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join("proc/42")).expect("proc");
        let control = Arc::new(Control::new(dir.path()));
        let path = dir.path().join("c.sock");
        let shared: SharedStatus = Arc::new(Mutex::new(StatusReport::default()));
        let server =
            StatusServer::start_with(&path, shared.clone(), Some(control.clone())).expect("start");
        let ok = request(&path, "unmanage 42").expect("taken");
        assert!(ok.starts_with("pid 42: left alone"), "{ok}");
        assert!(
            control
                .rules(&crate::exclude::Rules::default())
                .exclude
                .pids
                .contains(&42)
        );
        let e = request(&path, "manage 43").expect_err("no such process");
        assert!(e.to_string().contains("pid 43: no such process"), "{e}");
        let e = request(&path, "manage me").expect_err("not a PID");
        assert!(e.to_string().contains("expected `manage PID`"), "{e}");
        drop(server);
        let _plain = StatusServer::start(&path, shared).expect("start");
        let e = request(&path, "manage 42").expect_err("no control");
        assert!(e.to_string().contains("takes no requests"), "{e}");
    }

    #[test]
    fn serve_and_query() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("sub/homenode.sock");
        let note = "pid 9 (db): 1.0 GiB on node 0 stays there this interval, home node 1: no room";
        let shared: SharedStatus = Arc::new(Mutex::new(StatusReport {
            policy: "homenode".into(),
            intervals: 7,
            notes: vec![note.into()],
            ..StatusReport::default()
        }));
        let server = StatusServer::start(&path, shared.clone()).expect("start");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dmode = std::fs::metadata(path.parent().expect("dir"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(dmode & 0o777, 0o700);
        let r = query(&path).expect("query");
        assert_eq!(r.intervals, 7);
        assert_eq!(r.notes, [note]);
        // A report of a daemon from before the notes still reads.
        let mut old = serde_json::to_value(&r).expect("json");
        old.as_object_mut().expect("object").remove("notes");
        let back: StatusReport = serde_json::from_value(old).expect("without notes");
        assert!(back.notes.is_empty());
        // A second daemon on the same socket is refused.
        let e = StatusServer::start(&path, shared).err().expect("in use");
        assert!(e.to_string().contains("another homenode daemon"), "{e}");
        drop(server);
        assert!(!path.exists());
        let e = query(&path).expect_err("gone");
        assert!(e.to_string().contains("cannot connect"), "{e}");
    }

    #[test]
    fn stale_socket_is_replaced_and_bad_requests_answered() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("h.sock");
        drop(UnixListener::bind(&path).expect("stale"));
        let shared: SharedStatus = Arc::new(Mutex::new(StatusReport::default()));
        let _server = StatusServer::start(&path, shared).expect("replaces stale");
        let mut s = UnixStream::connect(&path).expect("connect");
        s.write_all(b"shutdown\n").expect("send");
        let mut answer = String::new();
        BufReader::new(&s).read_line(&mut answer).expect("read");
        assert!(answer.contains("unknown request"), "{answer}");
    }

    #[test]
    fn a_regular_file_or_link_at_the_socket_path_is_never_removed() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "precious").expect("write");
        let shared: SharedStatus = Arc::new(Mutex::new(StatusReport::default()));
        let e = StatusServer::start(&file, shared.clone())
            .err()
            .expect("refused");
        let msg = e.to_string();
        assert!(
            msg.contains("not a socket") && msg.contains("regular file"),
            "{msg}"
        );
        assert_eq!(std::fs::read_to_string(&file).expect("kept"), "precious");
        let link = dir.path().join("l.sock");
        std::os::unix::fs::symlink(&file, &link).expect("link");
        let e = StatusServer::start(&link, shared).err().expect("refused");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(std::fs::symlink_metadata(&link).is_ok());
        assert_eq!(std::fs::read_to_string(&file).expect("kept"), "precious");
    }

    #[test]
    fn drop_leaves_a_file_that_replaced_the_socket() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("h.sock");
        let shared: SharedStatus = Arc::new(Mutex::new(StatusReport::default()));
        let server = StatusServer::start(&path, shared).expect("start");
        std::fs::remove_file(&path).expect("rm");
        std::fs::write(&path, "someone else's").expect("write");
        drop(server);
        assert_eq!(
            std::fs::read_to_string(&path).expect("kept"),
            "someone else's"
        );
    }
}
