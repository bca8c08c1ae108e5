//! Helpers shared by the `homenode` binary's tests.

use std::cell::Cell;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{RwLock, RwLockWriteGuard};

/// Tests of this binary run in parallel; the live daemon tests measure the host's idle CPUs
/// and so need the others to pause. Every `homenode(...)` run holds this lock shared; a live
/// test holds it exclusively ([`quiet`]).
static LOAD: RwLock<()> = RwLock::new(());

thread_local! {
    static EXCLUSIVE: Cell<bool> = const { Cell::new(false) };
}

/// Held by a live test: no other `homenode` run of this test binary starts meanwhile.
pub struct Quiet(#[allow(dead_code)] RwLockWriteGuard<'static, ()>);

impl Drop for Quiet {
    fn drop(&mut self) {
        EXCLUSIVE.with(|e| e.set(false));
    }
}

/// Waits for the other tests' `homenode` runs to end and keeps new ones from starting.
pub fn quiet() -> Quiet {
    let g = LOAD.write().unwrap_or_else(|p| p.into_inner());
    EXCLUSIVE.with(|e| e.set(true));
    Quiet(g)
}

pub fn homenode(args: &[&str]) -> Output {
    let _shared = if EXCLUSIVE.with(Cell::get) {
        None
    } else {
        Some(LOAD.read().unwrap_or_else(|p| p.into_inner()))
    };
    Command::new(env!("CARGO_BIN_EXE_homenode"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run homenode")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Succeeds; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let o = homenode(args);
    assert!(
        o.status.success(),
        "homenode {args:?} failed ({:?}): {}",
        o.status.code(),
        stderr(&o)
    );
    stdout(&o)
}

/// A usage error (a value on the command line that is wrong): fails with exit code 2 and
/// exactly one line on stderr starting `homenode: ` and containing every one of `want`,
/// without a panic; returns (stdout, stderr).
pub fn fails_with(args: &[&str], want: &[&str]) -> (String, String) {
    fails_with_code(2, args, want)
}

/// A runtime error (a file that does not read or parse, no daemon, a failed run): as
/// [`fails_with`], with exit code 1.
pub fn fails_at_runtime(args: &[&str], want: &[&str]) -> (String, String) {
    fails_with_code(1, args, want)
}

fn fails_with_code(code: i32, args: &[&str], want: &[&str]) -> (String, String) {
    let o = homenode(args);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(code),
        "homenode {args:?}: exit {:?}, stderr: {err}",
        o.status.code()
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "homenode {args:?}: want one line on stderr, got:\n{err}"
    );
    assert!(err.starts_with("homenode: "), "{err}");
    assert!(!err.contains("panicked"), "homenode {args:?}: {err}");
    for w in want {
        assert!(err.contains(w), "homenode {args:?}: `{w}` not in: {err}");
    }
    (stdout(&o), err)
}

/// A file in this test binary's scratch directory `dir`.
pub fn scratch_in(dir: &str, name: &str, text: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write scratch file");
    p.to_string_lossy().into_owned()
}
