//! `homenode run` live on this host with `--fake-numa 2`, plus `status`, `topo` and the
//! configuration errors. The daemon is confined with an include list to the processes each
//! test starts, so it never touches anything else on the machine.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{fails_at_runtime, fails_with, ok, quiet};

/// Kills the children on drop, whatever happens in the test.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn busy(pin: Option<&str>) -> Child {
    let mut c = match pin {
        // Pinned and idle: a busy pinned process would take a CPU from the workers, and then
        // both workers on the other node would be as good a placement as one on each.
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpus, "sleep", "600"]);
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.args(["-c", "while :; do :; done"]);
            c
        }
    };
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn a busy loop")
}

fn mask(pid: u32) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list")
        .trim()
        .to_string()
}

/// The scheduling slice of `pid`'s main thread, ns (`se.slice` of `/proc/PID/sched`; `None`
/// without the line).
fn slice(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/sched")).ok()?;
    s.lines()
        .find(|l| l.starts_with("se.slice"))?
        .rsplit(':')
        .next()?
        .trim()
        .parse()
        .ok()
}

/// The slice homenode gives a homed CPU-bound process (`slice_ms`, 100).
const SLICE_NS: u64 = 100_000_000;

/// Whether this kernel takes custom slices (6.12 and later); says why not when it does not.
fn custom_slices() -> bool {
    match linux::slice::probe_base_slice() {
        Ok(Some(_)) => true,
        Ok(None) => {
            eprintln!("slices not checked: this kernel has no custom slices (before 6.12)");
            false
        }
        Err(e) => {
            eprintln!("slices not checked: {e}");
            false
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("run")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    std::fs::write(d.join("empty.toml"), "").expect("config");
    d
}

/// Two CPUs at least, and allowed to set other processes' affinity (they are our children,
/// so any user may).
fn can_run() -> bool {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        eprintln!("skipped: needs 2 CPUs for --fake-numa 2");
        return false;
    }
    Command::new("taskset").arg("-V").output().is_ok()
}

fn daemon(dir: &Path, pids: &[u32], extra: &[&str]) -> Child {
    let include = format!(
        "rules.include.pids=[{}]",
        pids.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut args: Vec<String> = [
        "run",
        "--fake-numa",
        "2",
        "--interval",
        "0.3",
        "--set",
        "placement.homenode.min_rss_mib=0",
        "--set",
        "placement.homenode.min_cpu=0.1",
        "--set",
        // A busy loop needs a CPU of its own even when a loaded machine gives it only a
        // fraction of one: the tests must not depend on getting a share of the CPU.
        "placement.homenode.busy_thread_cpu=0.05",
        "--set",
        // Every included process is looked at closely, idle or not.
        "scan.candidate_min_cpu=0",
        "--set",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    args.push(include);
    for (flag, file) in [
        ("--config", "empty.toml"),
        ("--journal", "journal.json"),
        ("--socket", "s/homenode.sock"),
    ] {
        args.push(flag.into());
        args.push(dir.join(file).to_string_lossy().into_owned());
    }
    args.extend(extra.iter().map(ToString::to_string));
    Command::new(env!("CARGO_BIN_EXE_homenode"))
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the daemon")
}

fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}

fn sigterm(c: &Child) {
    let st = Command::new("kill")
        .args(["-TERM", &c.id().to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
}

trait WaitRef {
    fn wait_with_output_ref(&mut self) -> (std::process::ExitStatus, String);
}

impl WaitRef for Child {
    fn wait_with_output_ref(&mut self) -> (std::process::ExitStatus, String) {
        use std::io::Read as _;
        let mut s = String::new();
        if let Some(mut e) = self.stderr.take() {
            let _ = e.read_to_string(&mut s);
        }
        (self.wait().expect("wait"), s)
    }
}

#[test]
fn busy_workers_get_disjoint_nodes_pinned_one_is_untouched_sigterm_restores() {
    if !can_run() {
        return;
    }
    let _quiet = quiet();
    let dir = scratch("live");
    let procs = Procs(vec![busy(None), busy(None), busy(Some("0"))]);
    let (a, b, pinned) = (procs.0[0].id(), procs.0[1].id(), procs.0[2].id());
    // taskset sets the mask, then execs the loop.
    wait_for("taskset to pin", 10, || mask(pinned) == "0");
    let before = [mask(a), mask(b), mask(pinned)];
    let slices_before = [slice(a), slice(b), slice(pinned)];
    let d = daemon(&dir, &[a, b, pinned], &[]);
    let d = Procs(vec![d]);
    wait_for("both workers homed", 30, || {
        mask(a) != before[0] && mask(b) != before[1]
    });
    let (ma, mb) = (mask(a), mask(b));
    assert_ne!(ma, mb, "workers share CPUs {ma}");
    assert!(["0", "1"].contains(&ma.as_str()) && ["0", "1"].contains(&mb.as_str()));
    assert_eq!(mask(pinned), "0", "the pinned process was changed");
    // The status socket: the table shows the homes and why the pinned one is left alone.
    let sock = dir.join("s/homenode.sock");
    let mut json = String::new();
    wait_for("the pinned process in the status table", 10, || {
        json = ok(&["status", "--json", "--socket", &sock.to_string_lossy()]);
        json.contains("pinned by someone else")
    });
    let r: serde_json::Value = serde_json::from_str(&json).expect("json");
    let homed = r["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .filter(|p| !p["home"].as_array().expect("home").is_empty())
        .count();
    assert_eq!(homed, 2, "{json}");
    let table = ok(&["status", "--socket", &sock.to_string_lossy()]);
    assert!(table.contains("MiB by node"), "{table}");
    assert!(
        table.lines().all(|l| l.chars().count() <= 100),
        "wider than 100 columns: {table}"
    );
    // SIGTERM: every changed mask goes back.
    let mut d = d;
    sigterm(&d.0[0]);
    let (st, err) = d.0[0].wait_with_output_ref();
    assert!(st.success(), "daemon exit {st:?}: {err}");
    assert!(err.contains("set home"), "{err}");
    assert_eq!([mask(a), mask(b), mask(pinned)], before);
    // Each worker has a CPU to itself, so whether it got a slice depends on what else runs
    // (step 5 asks that it wait for its CPU); whatever it got is given back.
    assert_eq!([slice(a), slice(b), slice(pinned)], slices_before, "{err}");
    let j = std::fs::read_to_string(dir.join("journal.json")).expect("journal");
    assert!(
        j.contains("\"processes\": []") || j.contains("\"processes\":[]"),
        "{j}"
    );
    assert!(!sock.exists(), "socket left behind");
    drop(procs);
}

#[test]
fn after_a_crash_restore_gives_the_masks_back() {
    if !can_run() {
        return;
    }
    let _quiet = quiet();
    let dir = scratch("crash");
    // Four busy loops on two one-CPU nodes: two per CPU, so each waits for its CPU about half
    // of the time whatever else runs, and the policy gives them a long slice (step 5).
    let procs = Procs((0..4).map(|_| busy(None)).collect());
    let a = procs.0[0].id();
    let before = mask(a);
    let slice_before = slice(a);
    let all: Vec<u32> = procs.0.iter().map(Child::id).collect();
    let mut d = Procs(vec![daemon(&dir, &all, &[])]);
    wait_for("the worker homed", 30, || mask(a) != before);
    let slices = custom_slices();
    if slices {
        wait_for("the worker given the slice", 30, || {
            slice(a) == Some(SLICE_NS)
        });
        // The status shows it.
        let sock = dir.join("s/homenode.sock").to_string_lossy().into_owned();
        let json = ok(&["status", "--json", "--socket", &sock]);
        let r: serde_json::Value = serde_json::from_str(&json).expect("json");
        let mine = r["processes"]
            .as_array()
            .expect("processes")
            .iter()
            .find(|p| p["pid"].as_u64() == Some(u64::from(a)))
            .cloned()
            .unwrap_or_default();
        assert_eq!(mine["slice_ns"].as_u64(), Some(SLICE_NS), "{json}");
        let table = ok(&["status", "--socket", &sock]);
        assert!(table.contains("100 ms"), "{table}");
    }
    // kill -9: no chance to restore.
    d.0[0].kill().expect("kill -9");
    let _ = d.0[0].wait();
    assert_ne!(mask(a), before);
    if slices {
        assert_eq!(slice(a), Some(SLICE_NS));
    }
    let j = dir.join("journal.json").to_string_lossy().into_owned();
    ok(&[
        "run",
        "--restore",
        "--journal",
        &j,
        "--config",
        &dir.join("empty.toml").to_string_lossy(),
    ]);
    assert_eq!(mask(a), before);
    assert_eq!(slice(a), slice_before);
    drop(procs);
}

/// A daemon killed after giving a worker its slice: the next one adopts the worker (home and
/// slice, from the journal), keeps the slice through its first reading (which has no
/// run-queue wait yet), and gives the default back on SIGTERM.
#[test]
fn after_a_crash_the_next_daemon_adopts_the_slice_and_gives_it_back() {
    if !can_run() || !custom_slices() {
        return;
    }
    let _quiet = quiet();
    let dir = scratch("adopt-slice");
    // Two per CPU, as above: squeezed whatever else runs.
    let procs = Procs((0..4).map(|_| busy(None)).collect());
    let a = procs.0[0].id();
    let all: Vec<u32> = procs.0.iter().map(Child::id).collect();
    let (mask_before, slice_before) = (mask(a), slice(a));
    let mut d = Procs(vec![daemon(&dir, &all, &[])]);
    wait_for("the worker given the slice", 30, || {
        slice(a) == Some(SLICE_NS)
    });
    d.0[0].kill().expect("kill -9");
    let _ = d.0[0].wait();
    let mut d = daemon(&dir, &all, &["--intervals", "6"]);
    let (st, err) = d.wait_with_output_ref();
    assert!(st.success(), "{err}");
    assert!(err.contains("adopted with home"), "{err}");
    // Held from the journal: never a second slice on top of the first without a take-back.
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(&format!("pid {a}: ")) && l.contains("slice"))
        .collect();
    for pair in lines.windows(2) {
        assert!(
            !(pair[0].contains("set slice") && pair[1].contains("set slice")),
            "{err}"
        );
    }
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("restore the kernel's slice")),
        "{err}"
    );
    assert_eq!((mask(a), slice(a)), (mask_before, slice_before), "{err}");
    drop(procs);
}

#[test]
fn dry_run_explains_and_changes_nothing() {
    if !can_run() {
        return;
    }
    let _quiet = quiet();
    let dir = scratch("dry");
    let procs = Procs(vec![busy(None), busy(None)]);
    let (a, b) = (procs.0[0].id(), procs.0[1].id());
    let before = [mask(a), mask(b)];
    let slices_before = [slice(a), slice(b)];
    let mut d = daemon(&dir, &[a, b], &["--dry-run", "--intervals", "8"]);
    let (st, err) = d.wait_with_output_ref();
    assert!(st.success(), "{err}");
    assert!(err.contains("would pid"), "{err}");
    assert!(err.contains("set home"), "{err}");
    assert_eq!([mask(a), mask(b)], before);
    assert_eq!([slice(a), slice(b)], slices_before);
    // The slice it would give is remembered as given: asked once per worker, not every
    // interval.
    for p in [a, b] {
        let asked = err
            .lines()
            .filter(|l| l.contains(&format!("would pid {p}: set slice")))
            .count();
        assert!(asked <= 1, "pid {p} asked {asked} times: {err}");
    }
    assert!(!dir.join("journal.json").exists());
    drop(procs);
}

#[test]
fn sighup_reloads_the_file_and_keeps_the_running_configuration_when_it_is_bad() {
    if !can_run() {
        return;
    }
    let _quiet = quiet();
    let dir = scratch("hup");
    let procs = Procs(vec![busy(None)]);
    let sock = dir.join("s/homenode.sock").to_string_lossy().into_owned();
    let mut d = daemon(&dir, &[procs.0[0].id()], &["--dry-run"]);
    let policy = || {
        let json = std::process::Command::new(env!("CARGO_BIN_EXE_homenode"))
            .args(["status", "--json", "--socket", &sock])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        serde_json::from_str::<serde_json::Value>(&json)
            .ok()
            .and_then(|v| v["policy"].as_str().map(str::to_string))
    };
    wait_for("the status socket", 10, || {
        policy().as_deref() == Some("homenode")
    });
    let hup = |c: &Child| {
        let st = Command::new("kill")
            .args(["-HUP", &c.id().to_string()])
            .status()
            .expect("kill");
        assert!(st.success());
    };
    std::fs::write(dir.join("empty.toml"), "policy = \"numad\"\n").expect("write");
    hup(&d);
    wait_for("the new policy in the status", 10, || {
        policy().as_deref() == Some("numad")
    });
    // A broken file: refused, the daemon goes on with what it had.
    std::fs::write(dir.join("empty.toml"), "policy = 3\n").expect("write");
    hup(&d);
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(policy().as_deref(), Some("numad"));
    sigterm(&d);
    let (st, err) = d.wait_with_output_ref();
    assert!(st.success(), "{err}");
    assert!(
        err.contains("reloaded: policy: \"homenode\" -> \"numad\""),
        "{err}"
    );
    let refused = err
        .lines()
        .find(|l| l.contains("reload refused"))
        .unwrap_or_else(|| panic!("no refusal logged: {err}"));
    assert!(
        refused.contains("empty.toml:1"),
        "names the file and line: {refused}"
    );
    drop(procs);
}

#[test]
fn bad_configuration_is_one_line() {
    let dir = scratch("config");
    let cfg = dir.join("bad.toml");
    std::fs::write(&cfg, "interval_s = 2.0\n[scan]\nspeed = 3\n").expect("write");
    fails_at_runtime(
        &["run", "--config", &cfg.to_string_lossy()],
        &["bad.toml:3:", "scan.speed"],
    );
    fails_with(
        &[
            "run",
            "--config",
            &dir.join("empty.toml").to_string_lossy(),
            "--metrics",
            "0.0.0.0:9750",
        ],
        &["metrics", "loopback"],
    );
    fails_with(
        &[
            "run",
            "--config",
            &dir.join("empty.toml").to_string_lossy(),
            "--policy",
            "best",
        ],
        &["policy", "homenode"],
    );
    fails_at_runtime(
        &[
            "run",
            "--config",
            &dir.join("missing.toml").to_string_lossy(),
        ],
        &["missing.toml", "cannot read"],
    );
    fails_at_runtime(
        &[
            "status",
            "--socket",
            &dir.join("none.sock").to_string_lossy(),
        ],
        &["cannot connect"],
    );
}

#[test]
fn topo_prints_the_host_and_fake_nodes() {
    let t = ok(&["topo"]);
    assert!(t.starts_with("host: "), "{t}");
    if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        let f = ok(&["topo", "--fake-numa", "2"]);
        assert!(f.contains("fake NUMA") && f.contains("node 1"), "{f}");
    }
}

#[test]
fn shipped_config_file_is_valid() {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../dist/homenode.toml");
    let out = ok(&["run", "--config", p, "--print-config"]);
    assert!(out.contains("policy = \"homenode\""), "{out}");
}

/// A process whose thread sets its mask back to every CPU it may use (as `perf bench
/// numa` workers do) is not "pinned by someone else": it is homed again and kept.
#[test]
fn a_process_that_widens_its_own_mask_is_homed_again() {
    if !can_run() {
        return;
    }
    let _quiet = quiet();
    let dir = scratch("widen");
    let procs = Procs(vec![busy(None)]);
    let w = procs.0[0].id();
    let all = mask(w);
    // One busy thread on a node of one CPU has no room once anything else runs there (the
    // daemon itself, other tests on a loaded machine), and would then be homed on both nodes,
    // which is the mask it has: packing it as light keeps every home to one node.
    let d = Procs(vec![daemon(
        &dir,
        &[w],
        &["--set", "placement.homenode.pack_fraction=1"],
    )]);
    wait_for("the worker homed", 30, || mask(w) != all);
    // The worker (here: on its behalf) widens its mask to everything it may use.
    let st = Command::new("taskset")
        .args(["-a", "-p", "-c", &all, &w.to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("taskset");
    assert!(st.success());
    wait_for("the worker homed again", 30, || mask(w) != all);
    let sock = dir.join("s/homenode.sock");
    let json = ok(&["status", "--json", "--socket", &sock.to_string_lossy()]);
    assert!(!json.contains("pinned by someone else"), "{json}");
    let mut d = d;
    sigterm(&d.0[0]);
    let (st, err) = d.0[0].wait_with_output_ref();
    assert!(st.success(), "daemon exit {st:?}: {err}");
    assert!(
        err.contains("set its mask to all its CPUs (not a pin): homed again"),
        "{err}"
    );
    drop(procs);
}

/// Exit codes as clap's: 2 for a command line clap refuses and for a value it accepted that
/// homenode refuses, 1 for an error at run time. (Every error exited 2.)
#[test]
fn exit_codes_tell_usage_from_runtime_errors() {
    let o = crate::common::homenode(&["run", "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2), "clap's own usage error");
    fails_with(
        &["run", "--set", "interval"],
        &["--set interval", "KEY=VALUE"],
    );
    let empty = crate::common::scratch_in("exit-codes", "empty.toml", "");
    fails_with(
        &["run", "--config", &empty, "--interval", "0"],
        &["--interval", "placement.interval_s"],
    );
    fails_at_runtime(
        &["status", "--socket", "/nonexistent/homenode.sock"],
        &["/nonexistent/homenode.sock"],
    );
}

/// `manage`/`unmanage` and `status --watch` without a daemon are runtime errors; a watch
/// period that is no positive number is a usage error.
#[test]
fn manage_and_watch_need_a_daemon() {
    let none = "/nonexistent/homenode.sock";
    for verb in ["manage", "unmanage"] {
        fails_at_runtime(&[verb, "4242", "--socket", none], &[none, "cannot connect"]);
    }
    fails_at_runtime(&["status", "--watch", "--socket", none], &[none]);
    fails_with(
        &["status", "--watch", "0", "--socket", none],
        &["--watch 0"],
    );
}
