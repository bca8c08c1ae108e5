//! `homenode bench numa-test --with-daemon`: the placement daemon (`homenode run`) running
//! beside a benchmark set, started from the same binary and stopped (SIGTERM, so it restores
//! every affinity it changed) when the set is done.
//!
//! The daemon gets its own scratch directory (journal, status socket, an empty configuration
//! so that the host's `/etc/homenode.toml` does not apply, its log) and, by default, manages
//! only processes named `homenode`: this benchmark's workers, hackbench processes and
//! dispatcher (the daemon never manages itself). Other settings come as `--set KEY=VALUE`.

use std::fs::File;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::BenchError;

/// A running daemon.
pub struct DaemonChild {
    child: Option<Child>,
    dir: PathBuf,
    /// The arguments it was started with (for reports).
    pub args: Vec<String>,
}

impl DaemonChild {
    /// Starts `program run ...` with `sets` (KEY=VALUE) on top of the defaults described in
    /// the module documentation, and waits until its status socket answers.
    pub fn start(
        program: &Path,
        sets: &[String],
        fake_numa: Option<usize>,
    ) -> Result<DaemonChild, BenchError> {
        let dir =
            std::env::temp_dir().join(format!("homenode-bench-daemon-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| BenchError::io(&dir, e))?;
        let config = dir.join("empty.toml");
        std::fs::write(&config, "").map_err(|e| BenchError::io(&config, e))?;
        let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
        let mut args: Vec<String> = vec![
            "run".into(),
            "--config".into(),
            p("empty.toml"),
            "--journal".into(),
            p("journal.json"),
            "--socket".into(),
            p("homenode.sock"),
            "--interval".into(),
            "1".into(),
            "--set".into(),
            "rules.include.comms=[\"homenode\"]".into(),
        ];
        if let Some(k) = fake_numa {
            args.extend(["--fake-numa".into(), k.to_string()]);
        }
        for s in sets {
            args.extend(["--set".into(), s.clone()]);
        }
        let log = dir.join("daemon.log");
        let log_file = File::create(&log).map_err(|e| BenchError::io(&log, e))?;
        let child = Command::new(program)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| {
                BenchError::Config(format!("cannot start `{} run`: {e}", program.display()))
            })?;
        let mut d = DaemonChild {
            child: Some(child),
            dir,
            args,
        };
        d.wait_ready()?;
        Ok(d)
    }

    fn wait_ready(&mut self) -> Result<(), BenchError> {
        let socket = self.dir.join("homenode.sock");
        let end = Instant::now() + Duration::from_secs(15);
        while Instant::now() < end {
            if socket.exists() {
                return Ok(());
            }
            if let Some(c) = &mut self.child {
                if let Ok(Some(st)) = c.try_wait() {
                    self.child = None;
                    return Err(BenchError::Config(format!(
                        "the daemon exited at start ({st}): {}",
                        self.last_log_line()
                    )));
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(BenchError::Config(format!(
            "the daemon did not open its socket within 15 s: {}",
            self.last_log_line()
        )))
    }

    fn last_log_line(&self) -> String {
        std::fs::read_to_string(self.dir.join("daemon.log"))
            .ok()
            .and_then(|t| t.lines().last().map(str::to_string))
            .unwrap_or_default()
    }

    /// SIGTERM, wait for it to restore and exit; returns its log.
    pub fn stop(mut self) -> Result<String, BenchError> {
        let Some(mut c) = self.child.take() else {
            return Err(BenchError::Config("the daemon is not running".into()));
        };
        let pid = Pid::from_raw(c.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        let end = Instant::now() + Duration::from_secs(30);
        let status = loop {
            match c.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(50)),
                _ => {
                    let _ = c.kill();
                    let _ = c.wait();
                    return Err(BenchError::Config(
                        "the daemon did not stop within 30 s of SIGTERM; killed".into(),
                    ));
                }
            }
        };
        let log = std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default();
        if !status.success() {
            return Err(BenchError::Config(format!(
                "the daemon failed ({status}): {}",
                log.lines().last().unwrap_or("")
            )));
        }
        Ok(log)
    }
}

impl Drop for DaemonChild {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = kill(Pid::from_raw(c.id() as i32), Signal::SIGTERM);
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
