//! The syscall wrappers and readers on this host, on this process's own threads and buffers
//! and on child processes it starts. Every change is undone before the test ends.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use linux::affinity::{self, current_tid, get_affinity, set_affinity};
use linux::mempolicy::{self, PolicyMode};
use linux::migrate::{self, MoveOptions, PageStatus};
use linux::procfs::ProcDir;
use linux::rates::{CpuNodeMap, rates};
use linux::sample::{NumaMapsSelect, clock_ticks_per_second};
use linux::slice::{self, SystemSlice};
use linux::{Live, ScanOptions, Scanner, SysError, journal, sysfs};
use topo::CpuSet;

const ROOT: &str = "/";

fn root() -> &'static Path {
    Path::new(ROOT)
}

/// A PID that cannot exist (above the kernel's `PID_MAX_LIMIT` of 4,194,304).
const NO_SUCH_PID: u32 = 5_000_000;

/// Runs `f` on a fresh thread (so that changing its affinity affects no other test).
fn on_own_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f).join().expect("thread")
}

/// A child process that sleeps, killed on drop.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Sleeper {
        Sleeper::start_as(&["sleep", "30"])
    }

    /// `argv`, which must end by exec'ing `sleep`.
    fn start_as(argv: &[&str]) -> Sleeper {
        let child = Command::new(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn sleep");
        // Wait until it has exec'd (its comm is `sleep`).
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if linux::procfs::read_comm(root(), child.id())
                .ok()
                .and_then(Live::alive)
                .as_deref()
                == Some("sleep")
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Sleeper(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn own_thread_affinity_get_set_restore() {
    on_own_thread(|| {
        let tid = current_tid();
        let original = get_affinity(tid).expect("get").expect_alive("self");
        let online = sysfs::online_cpus(root()).expect("online");
        assert!(online.is_subset(&original) || original.is_subset(&online));
        let first = original.intersection(&online).first().expect("a CPU");
        set_affinity(tid, &CpuSet::single(first))
            .expect("set")
            .expect_alive("self");
        assert_eq!(
            get_affinity(tid).expect("get").expect_alive("self"),
            CpuSet::single(first)
        );
        // /proc agrees.
        let dir = ProcDir::open(root(), std::process::id())
            .expect("open")
            .expect_alive("self");
        let st = dir.task_status(tid).expect("status").expect_alive("thread");
        assert_eq!(st.cpus_allowed, CpuSet::single(first));
        // A mask with CPUs beyond any machine (bit 5000) plus a real one: accepted, the
        // extra bits ignored.
        let mut wide = CpuSet::single(first);
        wide.insert(5000);
        set_affinity(tid, &wide).expect("wide").expect_alive("self");
        assert_eq!(
            get_affinity(tid).expect("get").expect_alive("self"),
            CpuSet::single(first)
        );
        set_affinity(tid, &original)
            .expect("restore")
            .expect_alive("self");
        assert_eq!(
            get_affinity(tid).expect("get").expect_alive("self"),
            original
        );
    });
}

#[test]
fn affinity_errors() {
    assert!(get_affinity(NO_SUCH_PID).expect("no error").is_gone());
    assert!(
        set_affinity(NO_SUCH_PID, &CpuSet::single(0))
            .expect("no error")
            .is_gone()
    );
    assert!(matches!(
        get_affinity(0),
        Err(SysError::InvalidArgument { .. })
    ));
    assert!(matches!(
        get_affinity(u32::MAX),
        Err(SysError::InvalidArgument { .. })
    ));
    on_own_thread(|| {
        let tid = current_tid();
        let before = get_affinity(tid).expect("get").expect_alive("self");
        // Only CPUs that do not exist: EINVAL, typed.
        let e = set_affinity(tid, &CpuSet::single(4000)).unwrap_err();
        assert!(matches!(e, SysError::InvalidCpus { .. }), "{e}");
        assert!(e.to_string().contains("4000") && !e.to_string().contains('\n'));
        let e = set_affinity(tid, &CpuSet::new()).unwrap_err();
        assert!(matches!(e, SysError::InvalidCpus { .. }));
        assert_eq!(get_affinity(tid).expect("get").expect_alive("self"), before);
    });
}

#[test]
fn child_process_affinity_and_journal_restore() {
    let child = Sleeper::start();
    let pid = child.pid();
    let before = affinity::process_affinities(root(), pid)
        .expect("get")
        .expect_alive("child");
    assert_eq!(before.keys().copied().collect::<Vec<_>>(), vec![pid]);
    let original = before[&pid].clone();
    let online = sysfs::online_cpus(root()).expect("online");
    let target = CpuSet::single(online.iter().last().expect("cpu"));

    // Journal first, then change.
    let (dir, mut j, key) = journal_of(pid);
    let path = dir.path().join("journal.json");
    assert_eq!(j.get(key).expect("entry").default_cpus, original);
    j.set_applied(key, target.clone(), CpuSet::single(0));
    j.store(&path).expect("store");

    let done = affinity::set_process_affinity(root(), pid, &target)
        .expect("set")
        .expect_alive("child");
    assert_eq!(done.set, vec![pid]);
    assert_eq!(
        get_affinity(pid).expect("get").expect_alive("child"),
        target
    );

    // Restore from the stored journal.
    let j = journal::Journal::load(&path).expect("load");
    let report = journal::restore(&j, root());
    assert_eq!(report.threads_restored(), 1, "{report:?}");
    assert_eq!(
        get_affinity(pid).expect("get").expect_alive("child"),
        original
    );
    // Restoring again changes nothing.
    assert_eq!(journal::restore(&j, root()).threads_restored(), 0);

    // After the child exits: gone everywhere.
    drop(child);
    assert!(
        affinity::set_process_affinity(root(), pid, &target)
            .expect("set")
            .is_gone()
    );
    assert!(
        affinity::process_affinities(root(), pid)
            .expect("get")
            .is_gone()
    );
    let report = journal::restore(&j, root());
    assert!(matches!(
        report.outcomes[0].2,
        journal::RestoreOutcome::Gone | journal::RestoreOutcome::PidReused { .. }
    ));
}

/// A scratch directory for a journal, and a journal holding what `pid` has now (its key).
fn journal_of(
    pid: u32,
) -> (
    tempfile::TempDir,
    journal::Journal,
    linux::sample::ProcessKey,
) {
    let dir = tempfile::tempdir().expect("tmp");
    let mut j = journal::Journal::new();
    let entry = journal::capture(root(), pid)
        .expect("capture")
        .expect_alive("child");
    let key = entry.key();
    j.record(entry);
    (dir, j, key)
}

/// The slice of a child's threads through the real `sched_setattr`, journal first, and back
/// through the journal's restore. Skipped (with the reason printed) only on a kernel without
/// custom slices (before 6.12). A sleeping child: nothing here needs CPU time.
#[test]
fn child_process_slice_set_read_back_and_restored() {
    let base = match slice::probe_base_slice().expect("measuring the base slice") {
        Some(b) => b,
        None => {
            eprintln!(
                "skipped: this kernel has no custom scheduling slices (a SCHED_OTHER thread \
                 reads sched_runtime 0: Linux before 6.12)"
            );
            return;
        }
    };
    // At nice 3 and SCHED_BATCH: both must survive the slice and its undo.
    let child = Sleeper::start_as(&["chrt", "-b", "0", "nice", "-n", "3", "sleep", "30"]);
    let pid = child.pid();
    let before = slice::get_attr(pid).expect("get").expect_alive("child");
    eprintln!("base slice {base} ns; child {pid} before: {before} ({before:?})");
    assert_eq!(before.policy, slice::SCHED_BATCH);
    // `nice -n 3` adds to the test's own nice value (the suite may run under `nice`).
    let own = slice::get_attr(current_tid())
        .expect("get")
        .expect_alive("self");
    assert_eq!(before.nice, (own.nice + 3).min(19));
    assert_eq!(before.runtime_ns, base, "a new process has the base slice");

    let (dir, mut j, key) = journal_of(pid);
    let path = dir.path().join("journal.json");
    assert!(j.set_slice(key, 100_000_000));
    j.store(&path).expect("store");
    let proc_dir = ProcDir::open(root(), pid)
        .expect("open")
        .expect_alive("child");
    let done = slice::set_threads_slice(
        &proc_dir,
        100_000_000,
        base,
        &[100_000_000],
        &mut SystemSlice,
    )
    .expect("set")
    .expect_alive("child");
    assert_eq!((done.set, done.own_slice), (1, 0), "{done:?}");
    let after = slice::get_attr(pid).expect("get").expect_alive("child");
    eprintln!("after set_threads_slice: {after} ({})", done.describe());
    assert_eq!(after.runtime_ns, 100_000_000);
    assert_eq!((after.policy, after.nice), (before.policy, before.nice));
    assert!(
        after.resets_on_fork(),
        "its children start at the base slice"
    );
    let sched = std::fs::read_to_string(format!("/proc/{pid}/sched")).unwrap_or_default();
    if let Some(line) = sched.lines().find(|l| l.starts_with("se.slice")) {
        eprintln!("/proc/{pid}/sched: {line}");
        assert!(line.ends_with(" 100000000"), "{line}");
    }

    let j = journal::Journal::load(&path).expect("load");
    let report = journal::restore(&j, root());
    assert_eq!(report.slices_restored(), 1, "{report:?}");
    let back = slice::get_attr(pid).expect("get").expect_alive("child");
    eprintln!("after the journal's restore: {back}");
    assert_eq!(back.runtime_ns, base);
    assert_eq!((back.policy, back.nice), (before.policy, before.nice));
    assert!(
        !back.resets_on_fork(),
        "homenode's flag is cleared with its slice"
    );
    // Restoring again changes nothing: the child is at the default, not homenode's slice.
    let again = journal::restore(&j, root());
    assert_eq!(again.slices_restored(), 0, "{again:?}");
}

/// What the kernel does with a slice homenode gives (`with_slice`, which sets
/// `SCHED_FLAG_RESET_ON_FORK`): a thread and a child process created afterwards start at the
/// base slice, so nothing homenode set outlives the threads it journaled. Run on a thread of
/// the test's own, which is set and then ends. Skipped only on a kernel without custom slices.
#[test]
fn threads_and_children_born_after_a_slice_start_at_the_base() {
    let Some(base) = slice::probe_base_slice().expect("measuring the base slice") else {
        eprintln!("skipped: this kernel has no custom scheduling slices (Linux before 6.12)");
        return;
    };
    let seen = std::thread::spawn(move || {
        let me = current_tid();
        let now = slice::get_attr(me).expect("get").expect_alive("self");
        slice::set_attr(me, &now.with_slice(100_000_000))
            .expect("set")
            .expect_alive("self");
        let mine = slice::get_attr(me).expect("get").expect_alive("self");
        let thread = std::thread::spawn(|| {
            let t = current_tid();
            slice::get_attr(t).expect("get").expect_alive("new thread")
        })
        .join()
        .expect("join");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let process = slice::get_attr(child.id()).expect("get");
        let _ = child.kill();
        let _ = child.wait();
        (mine, thread, process.expect_alive("child"))
    })
    .join()
    .expect("join");
    let (mine, thread, process) = seen;
    eprintln!("base {base}: set thread {mine}; new thread {thread}; child process {process}");
    assert_eq!(mine.runtime_ns, 100_000_000);
    assert!(mine.resets_on_fork());
    for (what, a) in [("thread", thread), ("child process", process)] {
        assert_eq!(a.runtime_ns, base, "a new {what} starts at the base slice");
        assert!(!a.resets_on_fork(), "the flag is cleared in the new {what}");
        assert_eq!((a.policy, a.nice), (mine.policy, mine.nice), "{what}");
    }
}

#[test]
fn stale_process_handle_reads_gone_after_exit() {
    let child = Sleeper::start();
    let pid = child.pid();
    let dir = ProcDir::open(root(), pid)
        .expect("open")
        .expect_alive("child");
    assert_eq!(
        dir.stat().expect("stat").expect_alive("child").comm,
        "sleep"
    );
    drop(child); // killed and reaped: the PID may now be reused, the handle must not follow it.
    assert!(dir.stat().expect("stat").is_gone());
    assert!(dir.status().expect("status").is_gone());
    assert!(dir.tids().expect("tids").is_gone());
    assert!(dir.numa_maps().expect("numa_maps").is_gone());
    assert!(dir.sched().expect("sched").is_gone());
}

/// A buffer of `pages` touched pages and the address of each.
fn touched_pages(pages: usize) -> (Vec<u8>, Vec<usize>) {
    let page = 4096;
    let mut buf = vec![0u8; (pages + 1) * page];
    for b in buf.iter_mut().step_by(page) {
        *b = 1;
    }
    let start = (buf.as_ptr() as usize).div_ceil(page) * page;
    let addrs = (0..pages).map(|i| start + i * page).collect();
    (buf, addrs)
}

#[test]
fn move_own_pages_to_node_0_in_batches() {
    let (buf, addrs) = touched_pages(40);
    let me = std::process::id();
    let q = migrate::page_nodes(me, &addrs, 16)
        .expect("query")
        .expect_alive("self");
    assert_eq!(q.batches, 3);
    assert!(
        q.status.iter().all(|s| s.node().is_some()),
        "{:?}",
        q.status
    );
    let r = migrate::move_pages(
        me,
        &addrs,
        0,
        MoveOptions {
            batch: 7,
            move_all: false,
        },
    )
    .expect("move")
    .expect_alive("self");
    assert_eq!(r.batches, 6);
    assert_eq!(r.status.len(), 40);
    assert_eq!(r.on_node(0), 40, "{:?}", r.status);
    assert_eq!(r.failed(), 0);
    let per_page = migrate::move_pages_to(me, &addrs[..3], &[0, 0, 0], MoveOptions::default())
        .expect("move")
        .expect_alive("self");
    assert_eq!(per_page.status, vec![PageStatus::Node(0); 3]);
    assert!(migrate::move_pages_to(me, &addrs[..3], &[0], MoveOptions::default()).is_err());
    // get_mempolicy agrees.
    assert_eq!(mempolicy::node_of_address(addrs[0]).expect("node"), 0);
    drop(buf);
}

#[test]
fn move_pages_errors() {
    let (buf, addrs) = touched_pages(4);
    let me = std::process::id();
    // A node that is not online: typed error naming it.
    let nodes = sysfs::memory_nodes(root()).expect("nodes");
    let bad = (0..64)
        .find(|n| !nodes.contains(*n))
        .expect("an offline node number");
    let e = migrate::move_pages(me, &addrs, bad, MoveOptions::default()).unwrap_err();
    assert!(matches!(e, SysError::BadNode { .. }), "{e}");
    assert!(e.to_string().contains(&bad.to_string()));
    let e = migrate::move_pages(me, &addrs, 1 << 20, MoveOptions::default()).unwrap_err();
    assert!(matches!(e, SysError::BadNode { .. }), "{e}");
    // A process that does not exist: gone.
    assert!(
        migrate::move_pages(NO_SUCH_PID, &addrs, 0, MoveOptions::default())
            .expect("ok")
            .is_gone()
    );
    assert!(
        migrate::page_nodes(NO_SUCH_PID, &addrs, 8)
            .expect("ok")
            .is_gone()
    );
    // Unmapped and untouched pages: per-page statuses, not errors.
    let unmapped = [8usize << 40];
    let r = migrate::page_nodes(me, &unmapped, 8)
        .expect("query")
        .expect_alive("self");
    assert!(
        matches!(r.status[0], PageStatus::Fault | PageStatus::NotPresent),
        "{:?}",
        r.status
    );
    let fresh: Vec<u8> = Vec::with_capacity(64 << 10);
    let fresh_page = (fresh.as_ptr() as usize).div_ceil(4096) * 4096 + 16 * 4096;
    let r = migrate::page_nodes(me, &[fresh_page], 8)
        .expect("query")
        .expect_alive("self");
    assert!(r.status[0].node().is_none() || r.status[0] == PageStatus::Node(0));
    drop((buf, fresh));
}

#[test]
fn migrate_pages_of_self_and_errors() {
    let me = std::process::id();
    let zero = CpuSet::single(0);
    // Node 0 to node 0: nothing to move, nothing fails.
    assert_eq!(
        migrate::migrate_pages(me, &zero, &zero).expect("ok"),
        Live::Alive(0)
    );
    assert!(
        migrate::migrate_pages(NO_SUCH_PID, &zero, &zero)
            .expect("ok")
            .is_gone()
    );
    assert!(matches!(
        migrate::migrate_pages(me, &CpuSet::new(), &zero),
        Err(SysError::InvalidArgument { .. })
    ));
    // Node numbers beyond the kernel's maximum, and a node that is not online.
    let e = migrate::migrate_pages(me, &zero, &CpuSet::single(1 << 20)).unwrap_err();
    assert!(matches!(e, SysError::BadNode { .. }), "{e}");
    let nodes = sysfs::memory_nodes(root()).expect("nodes");
    let bad = (0..64)
        .find(|n| !nodes.contains(*n))
        .expect("an offline node number");
    let e = migrate::migrate_pages(me, &zero, &CpuSet::single(bad)).unwrap_err();
    assert!(matches!(e, SysError::BadNode { .. }), "{e}");
    assert!(e.to_string().contains(&format!("0 -> {bad}")), "{e}");
}

#[test]
fn own_memory_policy() {
    let p = on_own_thread(mempolicy::thread_policy).expect("policy");
    assert_eq!(p.mode, PolicyMode::Default);
    assert!(p.is_default());
    let mems = mempolicy::mems_allowed().expect("mems");
    assert_eq!(mems, sysfs::memory_nodes(root()).expect("nodes"));
    let x = 5u64;
    let pol = mempolicy::policy_at(&x as *const u64 as usize).expect("policy at");
    assert!(pol.is_default(), "{pol}");
}

#[test]
fn live_scan_finds_this_process_and_measures_a_busy_thread() {
    let me = std::process::id();
    let opts = ScanOptions {
        threads: true,
        cpuset: true,
        sched: true,
        numa_maps: NumaMapsSelect::Pids([me].into()),
        only: Some(vec![me]),
        ..ScanOptions::default()
    };
    let h = topo::read_host_detailed(root()).expect("host topology");
    let map = CpuNodeMap::from_host(&h);
    let mut s = Scanner::new();
    // The spinner burns a fixed amount of its *own* CPU time between the two scans, however
    // long the machine makes it wait for a CPU, so the test asserts what the scanner measured
    // against what the thread consumed, not against a share of the CPU it may not get.
    const BURN_S: f64 = 0.3;
    let (tx, rx) = mpsc::channel::<u32>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let spinner = std::thread::spawn(move || {
        tx.send(current_tid()).expect("send");
        go_rx.recv().expect("go");
        let start = linux::daemon::thread_cpu_s();
        let mut x = 0u64;
        while linux::daemon::thread_cpu_s() - start < BURN_S {
            for _ in 0..10_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                std::hint::black_box(x);
            }
        }
        done_tx.send(()).expect("done");
        // Stay alive (asleep) until the second scan has read this thread.
        let _ = stop_rx.recv();
    });
    let tid = rx.recv().expect("tid");
    let a = s.scan(root(), &opts).expect("scan a");
    go_tx.send(()).expect("go");
    done_rx.recv().expect("burnt");
    let b = s.scan(root(), &opts).expect("scan b");
    stop_tx.send(()).expect("stop");
    spinner.join().expect("join");

    assert_eq!(a.processes.len(), 1, "{:?}", a.errors);
    let p = &b.processes[0];
    assert!(p.threads.iter().any(|t| t.tid == tid));
    let numa = p.numa.as_ref().expect("numa_maps of self");
    assert!(numa.private_node_bytes.iter().sum::<u64>() > 0);
    assert!(p.cgroup.is_some());
    let r = rates(&a, &b, clock_ticks_per_second(), &map);
    let pr = &r.processes[0];
    let spin = pr
        .threads
        .iter()
        .find(|t| t.tid == tid)
        .expect("spinner rate");
    // CPU seconds the scanner saw = what the thread burnt, within the clock-tick resolution of
    // /proc (two ticks at either end; ticks are 10 ms at USER_HZ 100).
    let tick = 1.0 / clock_ticks_per_second() as f64;
    let seen_s = spin.cpu * r.elapsed_s;
    assert!(
        seen_s >= BURN_S - 4.0 * tick,
        "the scanner saw {seen_s:.3} CPU s of the spinner's {BURN_S} s"
    );
    assert!(pr.node_runtime_s.iter().sum::<f64>() > 0.0);
    assert_eq!(pr.node_runtime_s.len(), h.topology.nr_nodes());
}

/// The actuator's memory moves on a sleeping child (its pages are on this host's node 0):
/// asked for far more than the child has, a search goes through all of its pages, moves what
/// it finds, and marks the (process, node) searched out, so the decision's next batch of the
/// same memory is skipped without a query; the next decision searches again.
#[test]
fn a_searched_out_node_is_not_searched_again_in_the_same_decision() {
    use linux::daemon::config::MemoryConfig;
    use linux::daemon::host::Host;
    use linux::daemon::{Actuator, Outcome};
    let child = Sleeper::start();
    let pid = child.0.id();
    let dir = tempfile::tempdir().expect("tmp");
    let host = Host::read(root(), None).expect("host");
    let Some(node) = (0..host.topology().nr_nodes()).find(|&n| host.kernel_node(n) == Some(0))
    else {
        eprintln!("skipped: no host node is the kernel's node 0");
        return;
    };
    // Wait until the child has exec'd `sleep` (its start time is then final).
    let entry = journal::capture(root(), pid)
        .expect("capture")
        .expect_alive("child");
    let key = entry.key();
    let memory = MemoryConfig {
        max_query_pages: 1 << 30,
        ..MemoryConfig::default()
    };
    let mut act = Actuator::new(root(), &dir.path().join("j.json"), false, memory);
    act.begin_decision();
    let huge = 1u64 << 40;
    let (first, moved) = act.move_memory(&host, key, node, node, huge);
    assert!(
        matches!(&first, Outcome::Done(_)) && moved.pages_moved > 0,
        "{first:?} {moved:?}"
    );
    let (second, again) = act.move_memory(&host, key, node, node, huge);
    match &second {
        Outcome::Skipped(why) => assert!(why.contains("found no more on node"), "{why}"),
        other => panic!("searched again: {other:?}"),
    }
    assert_eq!(again.pages_moved, 0);
    act.begin_decision();
    let (third, _) = act.move_memory(&host, key, node, node, huge);
    assert!(matches!(&third, Outcome::Done(_)), "{third:?}");
    drop(child);
}
