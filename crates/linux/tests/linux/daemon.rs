//! The daemon loop on fixture trees (dry run: nothing is called on the live host): what it
//! reads, which candidates it leaves alone and why, the placement table, and one-line errors
//! for damaged trees. Time is a manual clock advanced by exact steps (one interval before each
//! interval, one first-look period before each look), so rates and budgets do not depend on
//! how long a step took on the test host.

use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use linux::clock::ManualClock;
use linux::daemon::{Daemon, DaemonConfig, DaemonError, IntervalReport};

use crate::common::{copy_fixture, fixture};

fn config(root: &Path) -> DaemonConfig {
    let mut c = DaemonConfig {
        dry_run: true,
        root: root.to_path_buf(),
        ..DaemonConfig::default()
    };
    // Every process is a candidate: the fixtures' CPU times do not change between reads.
    c.scan.candidate_min_cpu = 0.0;
    c.placement.homenode.min_rss_mib = 0;
    c
}

/// A daemon on a manual clock.
struct Clocked {
    d: Daemon,
    clock: Arc<ManualClock>,
}

impl Clocked {
    /// One interval, `placement.interval_s` after the last one.
    fn interval(&mut self) -> Result<IntervalReport, DaemonError> {
        let period = Duration::from_secs_f64(self.d.config().placement.interval_s);
        self.clock.advance(period);
        self.d.interval()
    }

    /// A first look, one first-look period after the last step.
    fn look(&mut self) -> Result<Option<IntervalReport>, DaemonError> {
        let every = self
            .d
            .first_look_every()
            .expect("the policy takes first looks");
        self.clock.advance(every);
        self.d.look()
    }
}

impl Deref for Clocked {
    type Target = Daemon;
    fn deref(&self) -> &Daemon {
        &self.d
    }
}

impl DerefMut for Clocked {
    fn deref_mut(&mut self) -> &mut Daemon {
        &mut self.d
    }
}

fn start(c: DaemonConfig) -> Result<Clocked, DaemonError> {
    let clock = Arc::new(ManualClock::new());
    let d = Daemon::start_with_clock(c, clock.clone())?;
    Ok(Clocked { d, clock })
}

#[test]
fn multinode_tree_every_rule_and_the_table() {
    let root = fixture("multinode-4n");
    let mut d = start(config(&root)).expect("start");
    assert_eq!(d.host().nr_nodes(), 4);
    let first = d.interval().expect("interval 1");
    // The first light pass has no rates yet: no candidates.
    assert_eq!(first.candidates, 0);
    let second = d.interval().expect("interval 2");
    assert!(second.candidates >= 6, "{second:?}");
    let status = d.status();
    let s = status.lock().expect("status").clone();
    assert_eq!(s.nodes.len(), 4);
    // /proc/stat in the fixture has not changed between the reads: every CPU counts idle.
    assert_eq!(s.nodes[0].cpus, "0-3");
    assert_eq!(s.nodes[3].free_bytes, 15_728_640 * 1024);
    let reason = |pid: u32| {
        s.processes
            .iter()
            .find(|p| p.pid == pid)
            .unwrap_or_else(|| panic!("pid {pid} not in the table"))
            .left_alone
            .clone()
            .unwrap_or_default()
    };
    assert!(reason(1100).contains("memory policy"), "{}", reason(1100));
    assert!(
        reason(1200).contains("confined by its cpuset"),
        "{}",
        reason(1200)
    );
    assert!(
        reason(1300).contains("pinned by someone else"),
        "{}",
        reason(1300)
    );
    assert!(reason(1400).contains("real-time"), "{}", reason(1400));
    assert!(
        reason(1500).contains("pinned by someone else"),
        "{}",
        reason(1500)
    );
    assert_eq!(reason(1000), "", "the database may be managed");
    // Zombies and kernel threads never reach the table.
    assert!(s.processes.iter().all(|p| ![2, 50, 1600].contains(&p.pid)));
    for label in [
        "foreign_mempolicy",
        "cpuset_confined",
        "pinned_by_other",
        "realtime",
    ] {
        assert!(
            s.counters.skipped.contains_key(label),
            "{:?}",
            s.counters.skipped
        );
    }
    // Its memory (numa_maps) per node is in the table, in percent.
    let db = s.processes.iter().find(|p| p.pid == 1000).expect("db");
    assert_eq!(db.memory_pct.len(), 4);
    assert!((db.memory_pct.iter().sum::<f64>() - 100.0).abs() < 1e-6);
    // The kernel's NUMA counters over the interval: present, and unchanged in a fixture.
    assert_eq!(s.kernel_numa.get("numa_hint_faults"), Some(&0));
    // Dry run: no action was carried out.
    assert!(
        s.counters.actions.keys().all(|k| k.ends_with("/dry_run")),
        "{:?}",
        s.counters.actions
    );
}

#[test]
fn damaged_trees_give_one_line_errors() {
    let tmp = copy_fixture("multinode-4n");
    std::fs::write(tmp.path().join("proc/stat"), "cpu0 1 2\n").expect("damage");
    let mut d = start(config(tmp.path())).expect("start");
    let e = d.interval().expect_err("bad /proc/stat").to_string();
    assert!(e.contains("proc/stat") && e.contains("at least 4"), "{e}");
    assert!(!e.contains('\n'));

    let tmp = copy_fixture("multinode-4n");
    std::fs::write(
        tmp.path().join("sys/devices/system/node/node2/meminfo"),
        "Node 2 MemTotal: lots\n",
    )
    .expect("damage");
    // The topology is read at start, so the daemon does not start.
    let e = start(config(tmp.path()))
        .err()
        .expect("bad meminfo")
        .to_string();
    assert!(e.contains("node2/meminfo"), "{e}");
    assert!(!e.contains('\n'));

    // A malformed process file drops that process only.
    let tmp = copy_fixture("multinode-4n");
    std::fs::write(tmp.path().join("proc/1000/status"), "Name:\tdb\nTgid: x\n").expect("damage");
    let mut d = start(config(tmp.path())).expect("start");
    d.interval().expect("interval 1");
    d.interval().expect("interval 2 goes on");
    let s = d.status().lock().expect("status").clone();
    assert!(s.processes.iter().all(|p| p.pid != 1000));
    assert!(s.counters.scan_errors >= 1);
}

/// A FIFO or `/dev/zero` as the rooted tree's `/proc/stat`: each interval fails at once
/// with one line naming it (the daemon neither blocks nor grows), so the loop goes on to
/// see a stop request, and a daemon that keeps failing gives up.
#[test]
fn a_fifo_or_device_as_proc_stat_fails_the_interval_at_once() {
    for what in ["fifo", "/dev/zero"] {
        let tmp = copy_fixture("multinode-4n");
        let stat = tmp.path().join("proc/stat");
        let mut d = start(config(tmp.path())).expect("start");
        std::fs::remove_file(&stat).expect("rm");
        if what == "fifo" {
            nix::unistd::mkfifo(&stat, nix::sys::stat::Mode::from_bits_truncate(0o600))
                .expect("mkfifo");
        } else {
            std::os::unix::fs::symlink(what, &stat).expect("link");
        }
        let e = d.interval().expect_err(what).to_string();
        assert!(
            e.contains("proc/stat") && e.contains("not a regular file"),
            "{e}"
        );
        assert!(!e.contains('\n'));

        let run_dir = tempfile::tempdir().expect("tmp");
        let mut c = config(tmp.path());
        c.placement.interval_s = 0.05;
        c.socket = run_dir.path().join("h.sock");
        c.journal = run_dir.path().join("journal.json");
        let stop = std::sync::atomic::AtomicBool::new(false);
        let e = linux::daemon::run(c, &stop, Some(50)).expect_err("gives up");
        let msg = e.to_string();
        assert!(
            msg.contains("proc/stat") && msg.contains("not a regular file"),
            "{msg}"
        );
    }
}

/// SIGHUP with a FIFO where the configuration file was: the reload is refused on one line
/// (the read does not block), and the daemon runs on with its configuration.
#[test]
fn a_reload_from_a_fifo_is_refused_and_the_daemon_runs_on() {
    let root = fixture("multinode-4n");
    let run_dir = tempfile::tempdir().expect("tmp");
    let mut c = config(&root);
    c.placement.interval_s = 0.05;
    c.socket = run_dir.path().join("h.sock");
    c.journal = run_dir.path().join("journal.json");
    let conf = run_dir.path().join("homenode.toml");
    nix::unistd::mkfifo(&conf, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let e = linux::daemon::DaemonConfig::load(&conf, true).expect_err("fifo");
    assert!(e.to_string().contains("not a regular file (a FIFO)"), "{e}");
    assert!(!e.to_string().contains('\n'));
    let hup = std::sync::atomic::AtomicBool::new(true);
    let read = || {
        linux::daemon::DaemonConfig::load(&conf, true)
            .map_err(|e| Box::new(e) as linux::daemon::ReadError)
    };
    let reload = linux::daemon::Reload {
        requested: &hup,
        read: &read,
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let s = linux::daemon::run_reloading(c, &stop, Some(3), Some(reload)).expect("runs on");
    assert_eq!(s.intervals, 3);
    assert!(
        !hup.load(std::sync::atomic::Ordering::Relaxed),
        "the request was taken"
    );
}

/// One bad line in /proc/stat or /proc/vmstat costs that CPU or counter, not the
/// interval; and a daemon that gives up says so with an error (a non-zero exit).
#[test]
fn bad_lines_in_stat_and_vmstat_do_not_fail_the_interval() {
    let tmp = copy_fixture("multinode-4n");
    let stat = tmp.path().join("proc/stat");
    let text = std::fs::read_to_string(&stat).expect("stat");
    let damaged = text.replacen("cpu1 ", "cpu1 x ", 1);
    assert_ne!(damaged, text, "the fixture has a cpu1 line");
    std::fs::write(&stat, damaged).expect("damage");
    let vmstat = tmp.path().join("proc/vmstat");
    let mut v = std::fs::read_to_string(&vmstat).expect("vmstat");
    v.push_str("numa_hit\nnuma_bogus lots\n");
    std::fs::write(&vmstat, v).expect("damage");
    let mut d = start(config(tmp.path())).expect("start");
    d.interval().expect("interval 1 goes on");
    d.interval().expect("interval 2 goes on");
    // Without /proc/vmstat at all the counters are left out, and the interval still runs.
    std::fs::remove_file(&vmstat).expect("rm");
    d.interval().expect("interval 3 goes on");
}

#[test]
fn giving_up_is_an_error() {
    let tmp = copy_fixture("multinode-4n");
    let run_dir = tempfile::tempdir().expect("tmp");
    let mut c = config(tmp.path());
    c.placement.interval_s = 0.05;
    c.socket = run_dir.path().join("h.sock");
    c.journal = run_dir.path().join("journal.json");
    // Every interval fails: /proc/stat is gone.
    std::fs::remove_file(tmp.path().join("proc/stat")).expect("rm");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let e = linux::daemon::run(c, &stop, Some(50)).expect_err("gives up");
    let msg = e.to_string();
    assert!(msg.contains("gave up after 10 failed intervals"), "{msg}");
    assert!(msg.contains("proc/stat"), "{msg}");
}

#[test]
fn one_node_host_under_fake_numa() {
    let root = fixture("host-1node");
    let mut c = config(&root);
    c.fake_numa = Some(2);
    let mut d = start(c).expect("start");
    assert_eq!(d.host().nr_nodes(), 2);
    assert!(d.host().fake);
    d.interval().expect("1");
    d.interval().expect("2");
    let s = d.status().lock().expect("status").clone();
    assert_eq!(s.fake_numa, Some(2));
    let pinned = s
        .processes
        .iter()
        .find(|p| p.pid == crate::common::host::PINNED)
        .expect("taskset sleep");
    assert!(
        pinned
            .left_alone
            .as_deref()
            .unwrap_or("")
            .contains("pinned")
    );
}

#[test]
fn reload_takes_what_it_can_and_refuses_a_bad_configuration_whole() {
    let root = fixture("multinode-4n");
    let mut d = start(config(&root)).expect("start");
    d.interval().expect("interval 1");
    d.interval().expect("interval 2");
    let socket = d.config().socket.clone();

    // A bad policy name: refused, nothing changes.
    let mut bad = d.config().clone();
    bad.policy = "bogus".into();
    bad.placement.interval_s = 1.0;
    let e = d
        .reload(bad)
        .expect_err("unknown policy refused")
        .to_string();
    assert!(e.contains("policy") && e.contains("bogus"), "{e}");
    assert_eq!(d.config().placement.interval_s, 2.0);
    assert_eq!(d.config().policy, "homenode");

    // Live keys apply; the socket needs a restart and keeps its running value.
    let mut new = d.config().clone();
    new.placement.interval_s = 1.0;
    new.policy = "numad".into();
    new.placement.homenode.min_rss_mib = 32;
    new.socket = "/elsewhere/homenode.sock".into();
    let r = d.reload(new).expect("reload");
    assert_eq!(
        r.applied,
        [
            "placement.homenode.min_rss_mib: 0 -> 32",
            "placement.interval_s: 2.0 -> 1.0",
            "policy: \"homenode\" -> \"numad\""
        ]
    );
    assert_eq!(r.need_restart.len(), 1, "{r:?}");
    assert!(r.need_restart[0].starts_with("socket: "), "{r:?}");
    assert_eq!(d.config().socket, socket);
    assert_eq!(d.config().placement.interval_s, 1.0);
    let status = d.status();
    let s = status.lock().expect("status").clone();
    assert_eq!((s.policy.as_str(), s.interval_s), ("numad", 1.0));

    // Rules that leave every process out apply from the next interval (a homed process
    // would be released, as when excluded any other way).
    let in_table = |pid: u32| {
        let s = status.lock().expect("status");
        s.processes.iter().any(|p| p.pid == pid)
    };
    assert!(in_table(1000), "the database is a candidate before");
    let mut none = d.config().clone();
    none.rules.include = Some(linux::exclude::Matcher {
        comms: ["no-such-comm".to_string()].into(),
        ..Default::default()
    });
    d.reload(none).expect("reload rules");
    d.interval().expect("interval 3");
    assert!(!in_table(1000), "the database is left out after the reload");
}

/// A process that appears between two intervals is read at the first looks (only it: the
/// others are left to the next interval; and only once `/proc/loadavg` says a PID was handed
/// out) and homed at the second look that sees the same thread count (PLACEMENT.md, "A first
/// look").
#[test]
fn a_process_new_since_the_interval_is_homed_at_a_first_look() {
    let (tmp, proc_dir) = look_fixture();
    let loadavg = |last: u32| set_last_pid(&proc_dir, last);
    let mut c = config(tmp.path());
    c.scan.candidate_min_cpu = 0.5;
    let mut d = start(c).expect("start");
    assert!(d.first_look_every().is_some());
    d.interval().expect("interval 1");
    d.interval().expect("interval 2");
    assert!(d.look().expect("look").is_none(), "nothing new");
    // A copy of the database server, started 10 s ago (tick 9000), 4 threads busy.
    copy_process(&proc_dir, 1000, 2000, 9000, 0);
    // While the last PID handed out stays the same, `/proc` is not listed again.
    assert!(d.look().expect("look").is_none(), "no PID handed out");
    loadavg(2003);
    let first = d.look().expect("look").expect("a new candidate");
    assert_eq!(first.candidates, 1, "{first:?}");
    assert!(first.light_read <= 2, "only the new PID is read: {first:?}");
    assert!(
        first.actions.is_empty(),
        "its thread count is not known to be settled"
    );
    // Still busy, the same 4 threads.
    copy_process(&proc_dir, 1000, 2000, 9000, 50);
    let second = d.look().expect("look").expect("a new candidate");
    assert_eq!(set_homes(&second, 2000), 1, "{second:?}");
    let c = d.status().lock().expect("status").counters.clone();
    assert_eq!((c.first_looks, c.first_looks_found), (4, 2));
}

/// A process that exits between two intervals no longer counts at a first look: a copy of
/// the database server started after it exited is homed on the node the server held, where
/// its memory is, and not kept off it by the server's threads.
#[test]
fn a_first_look_does_not_count_a_process_that_exited_since_the_interval() {
    let (tmp, proc_dir) = look_fixture();
    let loadavg = |last: u32| set_last_pid(&proc_dir, last);
    let mut d = start(config(tmp.path())).expect("start");
    d.interval().expect("interval 1");
    // The server busy: 10 CPU seconds more, a rate that fills its 4 threads however long
    // the interval took.
    add_user_ticks(&proc_dir, 1000, 1000);
    d.interval().expect("interval 2");
    let home_of = |d: &Clocked, pid: u32| {
        let s = d.status().lock().expect("status").clone();
        let p = s.processes.iter().find(|p| p.pid == pid)?;
        (!p.home.is_empty()).then(|| p.home.clone())
    };
    let db_home = home_of(&d, 1000).expect("the database server is homed");
    // It exits; a copy of it starts (10 s ago, tick 9000) with 4 busy threads.
    copy_process(&proc_dir, 1000, 2000, 9000, 0);
    std::fs::remove_dir_all(proc_dir.join("1000")).expect("exit");
    loadavg(2003);
    let first = d.look().expect("look").expect("a new candidate");
    assert!(first.actions.is_empty(), "{first:?}");
    add_user_ticks(&proc_dir, 2000, 50);
    let second = d.look().expect("look").expect("a new candidate");
    let homed: Vec<_> = second
        .actions
        .iter()
        .filter_map(|(a, _)| match a {
            policy::Action::SetHome {
                pid: 2000, nodes, ..
            } => Some(nodes.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(homed, [db_home], "{second:?}");
}

/// A PID known from the last interval, freed and handed to a new process since, is a new
/// process at a look: the look reads the PIDs the kernel handed out since the last listing
/// (`/proc/loadavg`, here after the allocator wrapped round) even when it knew them. Before,
/// a look skipped every PID the interval had read, and the new process waited for the next
/// interval.
#[test]
fn a_reused_pid_is_a_new_process_at_a_first_look() {
    let (_tmp, proc_dir, mut d) = reused_pid(|_| {});
    let first = d
        .look()
        .expect("look")
        .expect("the new process is a candidate");
    assert!(
        first.actions.is_empty(),
        "its thread count is not settled yet"
    );
    set_last_pid(&proc_dir, 1106);
    add_user_ticks(&proc_dir, 1100, 50);
    let second = d.look().expect("look").expect("a candidate");
    assert_eq!(set_homes(&second, 1100), 1, "{second:?}");
}

/// The same at an interval: an idle process's PID is read only every `idle_every` intervals,
/// but a PID handed out again since the last listing is read at once.
#[test]
fn a_reused_pid_of_an_idle_process_is_read_at_the_next_interval() {
    let (_tmp, _, mut d) = reused_pid(|c| c.scan.idle_every = 1000);
    let r = d.interval().expect("interval 3");
    assert_eq!(set_homes(&r, 1100), 1, "{r:?}");
}

/// Two intervals of a daemon (configured by `set` beyond a candidate threshold of 0.5 CPU) on
/// the first-look fixture; then process 1100 (idle) exits, and its PID goes to a copy of the
/// database server (4 busy threads, started 10 s ago) after the allocator wrapped round from
/// 1600 to 1105.
fn reused_pid(
    set: impl FnOnce(&mut DaemonConfig),
) -> (tempfile::TempDir, std::path::PathBuf, Clocked) {
    let (tmp, proc_dir) = look_fixture();
    let mut c = config(tmp.path());
    c.scan.candidate_min_cpu = 0.5;
    set(&mut c);
    let mut d = start(c).expect("start");
    d.interval().expect("interval 1");
    d.interval().expect("interval 2");
    copy_process(&proc_dir, 1000, 1100, 9000, 0);
    set_last_pid(&proc_dir, 1105);
    (tmp, proc_dir, d)
}

/// The 4-node fixture for first looks, and its `proc` directory: 100 s up (processes' ages,
/// from start times in ticks at 100 Hz, can be known), the last PID handed out 1600.
/// How many `SetHome` actions for `pid` the interval or look reported.
fn set_homes(r: &IntervalReport, pid: u32) -> usize {
    r.actions
        .iter()
        .filter(|(a, _)| matches!(a, policy::Action::SetHome { pid: p, .. } if *p == pid))
        .count()
}

fn look_fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = copy_fixture("multinode-4n");
    let proc_dir = tmp.path().join("proc");
    std::fs::write(proc_dir.join("uptime"), "100.00 350.00\n").expect("uptime");
    set_last_pid(&proc_dir, 1600);
    (tmp, proc_dir)
}

/// `/proc/loadavg` with `last` as the last PID handed out.
fn set_last_pid(proc_dir: &Path, last: u32) {
    let text = format!("0.50 0.40 0.30 2/90 {last}\n");
    std::fs::write(proc_dir.join("loadavg"), text).expect("loadavg");
}

/// Adds `extra` ticks of user time to process `pid`'s `stat`.
fn add_user_ticks(proc_dir: &Path, pid: u32, extra: u64) {
    rewrite_stat(&proc_dir.join(pid.to_string()), |_, f| {
        let utime: u64 = f[11].parse().expect("utime");
        f[11] = (utime + extra).to_string();
    });
}

/// Copies process `from`'s directory to `to`, with `to`'s PID and start time (ticks) in its
/// `stat` and `extra` more ticks of user time.
fn copy_process(proc_dir: &Path, from: u32, to: u32, start: u64, extra: u64) {
    let src = proc_dir.join(from.to_string());
    let dst = proc_dir.join(to.to_string());
    let _ = std::fs::remove_dir_all(&dst);
    crate::common::copy_dir(&src, &dst);
    rewrite_stat(&dst, |head, f| {
        *head = head.replacen(&from.to_string(), &to.to_string(), 1);
        f[19] = start.to_string();
    });
    add_user_ticks(proc_dir, to, extra);
}

/// Rewrites the `stat` of process directory `dir`: `edit` gets what precedes the command's
/// closing parenthesis and the fields after it (state is field 3 of stat, so utime, field 14,
/// is `f[11]` and starttime, field 22, `f[19]`).
fn rewrite_stat(dir: &Path, edit: impl FnOnce(&mut String, &mut Vec<String>)) {
    let path = dir.join("stat");
    let stat = std::fs::read_to_string(&path).expect("stat");
    let (head, rest) = stat.split_once(") ").expect("comm");
    let mut head = head.to_string();
    let mut f: Vec<String> = rest.split_whitespace().map(String::from).collect();
    edit(&mut head, &mut f);
    std::fs::write(&path, format!("{head}) {}\n", f.join(" "))).expect("write");
}

/// A dry run moves no memory, so every fresh reading shows the same remote memory. Its policy
/// took that for moves that "did not take" and, from the third interval with a home, asked for
/// none for `move_retry_s`: the dry run showed a daemon that gives up on memory that the real
/// one would have moved. The moves not made are reported back to the policy, and the dry run
/// asks for them at every interval. The budget is `move_rate_mib_s` times the interval on the
/// daemon's clock: 6 MiB/s over 2 s is exactly the 12 MiB on node 3, the largest remote part,
/// at every interval (with the wall clock it was whatever the test host's speed allowed).
#[test]
fn a_dry_run_asks_for_the_same_memory_moves_at_every_interval() {
    let (tmp, proc_dir) = look_fixture();
    let mut c = config(tmp.path());
    c.placement.homenode.move_rate_mib_s = 6;
    let mut d = start(c).expect("start");
    // Per interval, the nodes its memory moves would come from and the bytes asked.
    let mut moves: Vec<Vec<(usize, u64)>> = Vec::new();
    for i in 0..7 {
        // The database server busy at every interval (its threads full).
        add_user_ticks(&proc_dir, 1000, 1000);
        let r = d.interval().unwrap_or_else(|e| panic!("interval {i}: {e}"));
        moves.push(
            r.actions
                .iter()
                .filter_map(|(a, _)| match a {
                    policy::Action::MoveMemory { from, bytes, .. } => Some((*from, *bytes)),
                    _ => None,
                })
                .collect(),
        );
    }
    let first = moves
        .iter()
        .position(|f| !f.is_empty())
        .expect("a move is asked");
    assert!(first + 3 < moves.len(), "{moves:?}");
    let per_interval: u64 = moves[first].iter().map(|m| m.1).sum();
    assert_eq!(per_interval, 12 << 20, "{moves:?}");
    assert!(
        moves[first..].iter().all(|f| f.iter().all(|m| m.0 == 3)),
        "the largest remote part first: {moves:?}"
    );
    assert!(
        moves[first..].iter().all(|f| *f == moves[first]),
        "the same moves at every interval once homed: {moves:?}"
    );
}

/// Under fake NUMA the daemon skips every memory move (the pseudo-nodes share one real node)
/// and its policy then leaves that memory alone for a while; a dry run skips it too instead
/// of answering `would`, so that it shows what the daemon would do.
#[test]
fn a_dry_run_under_fake_numa_skips_the_moves_as_the_daemon_would() {
    use linux::daemon::{Actuator, Host, Outcome};
    use linux::sample::ProcessKey;
    let root = fixture("host-1node");
    let host = Host::read(&root, Some(2)).expect("host");
    let tmp = tempfile::tempdir().expect("tmp");
    let key = ProcessKey {
        pid: 28818,
        starttime: 604369,
    };
    for dry_run in [true, false] {
        let mut a = Actuator::new(
            &root,
            &tmp.path().join("journal.json"),
            dry_run,
            Default::default(),
        );
        let (o, moved) = a.move_memory(&host, key, 1, 0, 1 << 20);
        assert!(
            matches!(&o, Outcome::Skipped(why) if why.starts_with("fake NUMA")),
            "dry run {dry_run}: {o:?}"
        );
        assert_eq!(moved.bytes_moved, 0);
    }
    // On a real node layout a dry run answers `dry run`.
    let host = Host::read(&fixture("multinode-4n"), None).expect("host");
    let mut a = Actuator::new(
        &root,
        &tmp.path().join("journal.json"),
        true,
        Default::default(),
    );
    assert_eq!(a.move_memory(&host, key, 1, 0, 1 << 20).0, Outcome::DryRun);
}

/// `homenode unmanage PID` over the status socket releases a homed process at the next
/// interval (its masks and slices restored, as for a process the configuration excludes) and
/// keeps it alone; `homenode manage PID` lets the policy home it again.
#[test]
fn an_unmanaged_pid_is_released_and_a_managed_one_homed_again() {
    use linux::daemon::control::Request;
    let (tmp, proc_dir) = look_fixture();
    let mut d = start(config(tmp.path())).expect("start");
    let busy = |d: &mut Clocked| {
        add_user_ticks(&proc_dir, 1000, 1000);
        d.interval().expect("interval")
    };
    busy(&mut d);
    assert_eq!(set_homes(&busy(&mut d), 1000), 1, "the database is homed");
    let control = d.control();
    control
        .take(Request::Unmanage(1000))
        .expect("a live PID is taken");
    assert!(
        control.take(Request::Unmanage(4321)).is_err(),
        "no such PID"
    );
    let r = busy(&mut d);
    assert!(
        r.released
            .iter()
            .any(|(k, why)| k.pid == 1000 && why.contains("excluded")),
        "{:?}",
        r.released
    );
    assert!(d.homes().all(|(k, _)| k.pid != 1000));
    let r = busy(&mut d);
    assert_eq!(set_homes(&r, 1000), 0, "left alone while unmanaged");
    control.take(Request::Manage(1000)).expect("manage");
    let r = busy(&mut d);
    assert_eq!(set_homes(&r, 1000), 1, "{r:?}");
}
