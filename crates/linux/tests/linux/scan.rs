//! The scanner on fixture trees, and rates between two scans.

use std::collections::BTreeSet;
use std::fs;
use std::time::Duration;

use linux::rates::{CpuNodeMap, rates_over};
use linux::sample::{NumaMapsSelect, ProcessKey};
use linux::{ScanOptions, Scanner};

use crate::common::{assert_names_file, copy_fixture, fixture, host, set};

fn full() -> ScanOptions {
    ScanOptions {
        threads: true,
        thread_status: true,
        cgroup: true,
        cpuset: true,
        numa_maps: NumaMapsSelect::All,
        sched: true,
        schedstat: true,
        kernel_threads: false,
        only: None,
    }
}

#[test]
fn scan_multinode() {
    let root = fixture("multinode-4n");
    let r = Scanner::new().scan(&root, &full()).expect("scan");
    let pids: Vec<u32> = r.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![1000, 1100, 1200, 1300, 1400, 1500, 1600]);
    assert_eq!(r.kernel_threads, 2);
    assert_eq!(r.gone, 0);
    assert!(r.errors.is_empty(), "{:?}", r.errors);

    let db = &r.processes[0];
    assert_eq!(db.comm, "db server");
    assert_eq!(db.uid, 999);
    assert_eq!(db.threads.len(), 4);
    assert_eq!(db.threads[1].tid, 1001);
    assert_eq!(db.threads[1].processor, 8);
    assert_eq!(db.threads[1].cpus_allowed, Some(set("0-15")));
    assert_eq!(db.cgroup.as_deref(), Some("/system.slice/db.service"));
    assert_eq!(
        db.cpuset.as_ref().map(|c| c.cpus.clone()),
        Some(set("0-15"))
    );
    let numa = db.numa.as_ref().expect("numa_maps read");
    assert_eq!(numa.private_node_bytes.len(), 4);
    assert!(numa.foreign_policy.is_none());
    assert_eq!(
        db.sched.as_ref().and_then(|s| s.numa_preferred_nid),
        Some(2)
    );
    assert_eq!(db.vm_rss_bytes, Some((262144 + 4096 * 4 + 1800) * 1024));

    let app = r
        .get(ProcessKey {
            pid: 1200,
            starttime: 7000,
        })
        .expect("app");
    assert_eq!(app.cpuset.as_ref().map(|c| c.mems.clone()), Some(set("2")));
    assert!(
        r.get(ProcessKey {
            pid: 1200,
            starttime: 7001
        })
        .is_none()
    );

    // The zombie: no threads with status, but still sampled from its stat.
    let z = r
        .get(ProcessKey {
            pid: 1600,
            starttime: 9900,
        })
        .expect("zombie");
    assert_eq!(z.state, 'Z');
}

#[test]
fn scan_options_select_what_is_read() {
    let root = fixture("multinode-4n");
    let mut s = Scanner::new();
    let minimal = s.scan(&root, &ScanOptions::default()).expect("scan");
    let db = &minimal.processes[0];
    assert!(db.threads.is_empty() && db.numa.is_none() && db.cgroup.is_none());
    assert!(db.cpuset.is_none() && db.sched.is_none());
    assert_eq!(db.cpus_allowed, set("0-15"));

    let opts = ScanOptions {
        numa_maps: NumaMapsSelect::Pids(BTreeSet::from([1100])),
        kernel_threads: true,
        only: Some(vec![1100, 1000, 2, 1000, 4_000_000]),
        ..ScanOptions::default()
    };
    let r = s.scan(&root, &opts).expect("scan");
    let pids: Vec<u32> = r.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![2, 1000, 1100]);
    assert_eq!(r.gone, 1);
    assert!(r.processes[0].is_kernel_thread());
    assert!(r.processes[1].numa.is_none());
    assert_eq!(
        r.processes[2]
            .numa
            .as_ref()
            .and_then(|n| n.foreign_policy.as_ref())
            .map(|p| p.to_string()),
        Some("bind:1".to_string())
    );

    let one = s
        .scan_one(&root, 50, &ScanOptions::default())
        .expect("scan one");
    assert!(one.expect_alive("kworker").is_kernel_thread());
    assert!(
        s.scan_one(&root, 4_000_000, &full())
            .expect("scan one")
            .is_gone()
    );
}

#[test]
fn captured_host_scan() {
    let root = fixture("host-1node");
    let r = Scanner::new().scan(&root, &full()).expect("scan");
    let pids: Vec<u32> = r.processes.iter().map(|p| p.pid).collect();
    assert_eq!(
        pids,
        vec![host::PYTHON, host::WEIRD, host::PREFER, host::PINNED]
    );
    assert_eq!(r.kernel_threads, 2);
    let py = &r.processes[0];
    assert_eq!(
        py.threads.iter().map(|t| t.tid).collect::<Vec<_>>(),
        host::PYTHON_THREADS
    );
    assert_eq!(py.cpuset.as_ref().map(|c| c.cpus.clone()), Some(set("0-1")));
    assert_eq!(py.cgroup.as_deref(), Some("/"));
}

#[test]
fn a_malformed_process_is_dropped_and_reported() {
    let tmp = copy_fixture("multinode-4n");
    let bad = tmp.path().join("proc/1300/status");
    fs::write(&bad, "Name:\tpinned\n").expect("write");
    let r = Scanner::new().scan(tmp.path(), &full()).expect("scan");
    assert_eq!(r.processes.len(), 6);
    assert!(r.processes.iter().all(|p| p.pid != 1300));
    assert_eq!(r.errors.len(), 1);
    assert_names_file(&r.errors[0], &bad);
}

#[test]
fn a_process_gone_mid_scan_is_skipped() {
    // A process whose directory is there but whose files vanished (it exited after the
    // listing): counted as gone, not an error.
    let tmp = copy_fixture("multinode-4n");
    fs::remove_file(tmp.path().join("proc/1500/status")).expect("rm");
    // A thread that exited between the task listing and its stat read.
    fs::remove_file(tmp.path().join("proc/1000/task/1003/stat")).expect("rm");
    let r = Scanner::new().scan(tmp.path(), &full()).expect("scan");
    assert_eq!(r.gone, 1);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let db = &r.processes[0];
    assert_eq!(
        db.threads.iter().map(|t| t.tid).collect::<Vec<_>>(),
        vec![1000, 1001, 1002]
    );
}

#[test]
fn a_process_that_exits_while_read_is_gone_not_an_error() {
    // A managed process that exits normally is a zombie for a moment, and its
    // files read empty or cut short; that is an exit (logged at INFO), not a read error
    // (a WARN).
    let tmp = copy_fixture("multinode-4n");
    fs::write(tmp.path().join("proc/1300/status"), "Name:\tpinned\n").expect("write");
    set_field(&tmp.path().join("proc/1300/stat"), 3, "Z");
    let r = Scanner::new().scan(tmp.path(), &full()).expect("scan");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.gone, 1);
    assert!(r.processes.iter().all(|p| p.pid != 1300));
}

/// Rewrites field `k` (1-based) of a stat file.
fn set_field(path: &std::path::Path, k: usize, value: &str) {
    let text = fs::read_to_string(path).expect("stat");
    let close = text.rfind(')').expect(")");
    if k == 1 {
        let open = text.find('(').expect("(");
        fs::write(path, format!("{value} {}", &text[open..])).expect("write");
        return;
    }
    let mut fields: Vec<String> = text[close + 2..]
        .split_whitespace()
        .map(String::from)
        .collect();
    fields[k - 3] = value.to_string();
    fs::write(path, format!("{} {}\n", &text[..=close], fields.join(" "))).expect("write");
}

#[test]
fn rates_between_two_scans() {
    let root = fixture("multinode-4n");
    let later = copy_fixture("multinode-4n");
    let l = later.path();
    // Over 2 s at 100 ticks/s: thread 1001 used 150 + 50 ticks (1 CPU) on CPU 8 (node 2),
    // thread 1002 100 ticks (0.5 CPU) and moved to CPU 13 (node 3); 1003 exited (its 20
    // ticks stay in the process total only); process total +320.
    set_field(&l.join("proc/1000/task/1001/stat"), 14, "4150");
    set_field(&l.join("proc/1000/task/1001/stat"), 15, "250");
    set_field(&l.join("proc/1000/task/1002/stat"), 14, "3600");
    set_field(&l.join("proc/1000/task/1002/stat"), 39, "13");
    fs::remove_dir_all(l.join("proc/1000/task/1003")).expect("rm");
    set_field(&l.join("proc/1000/stat"), 14, &(8527 + 270).to_string());
    set_field(&l.join("proc/1000/stat"), 15, &(630 + 50).to_string());
    // 1300 exited and its PID was reused by a new process.
    set_field(&l.join("proc/1300/stat"), 22, "99999");
    // 1100 exited.
    fs::remove_dir_all(l.join("proc/1100")).expect("rm");

    let opts = ScanOptions {
        threads: true,
        ..ScanOptions::default()
    };
    let mut s = Scanner::new();
    let a = s.scan(&root, &opts).expect("a");
    let b = s.scan(l, &opts).expect("b");
    let map = CpuNodeMap::from_node_cpus(&[set("0-3"), set("4-7"), set("8-11"), set("12-15")]);
    let r = rates_over(&a, &b, Duration::from_secs(2), 100, &map);
    assert_eq!(r.elapsed_s, 2.0);
    assert_eq!(
        r.new,
        vec![ProcessKey {
            pid: 1300,
            starttime: 99999
        }]
    );
    assert_eq!(r.exited, 2);
    let db = r.processes.iter().find(|p| p.key.pid == 1000).expect("db");
    assert!((db.cpu - 1.6).abs() < 1e-9, "{}", db.cpu);
    assert!((db.system - 0.25).abs() < 1e-9);
    assert_eq!(db.threads.len(), 3);
    let t1 = &db.threads[1];
    assert_eq!((t1.tid, t1.node), (1001, Some(2)));
    assert!((t1.cpu - 1.0).abs() < 1e-9 && (t1.system - 0.25).abs() < 1e-9);
    let t2 = &db.threads[2];
    assert_eq!((t2.tid, t2.node, t2.processor), (1002, Some(3), 13));
    assert!((t2.cpu - 0.5).abs() < 1e-9);
    // Node runtime: 2 s on node 2, 1 s on node 3; 0.2 s of exited threads unattributed.
    assert_eq!(db.node_runtime_s, vec![0.0, 0.0, 2.0, 1.0]);
    assert!(
        (db.unattributed_s - 0.2).abs() < 1e-9,
        "{}",
        db.unattributed_s
    );
    let share = db.node_share();
    assert!((share[2] - 2.0 / 3.0).abs() < 1e-9);
    // An idle process: zero everywhere.
    let app = r.processes.iter().find(|p| p.key.pid == 1200).expect("app");
    assert_eq!(app.cpu, 0.0);
    assert_eq!(app.node_share(), vec![0.0; 4]);
}

#[test]
fn rates_without_threads_use_the_main_cpu_and_new_threads_count_whole() {
    let root = fixture("multinode-4n");
    let later = copy_fixture("multinode-4n");
    let l = later.path();
    set_field(&l.join("proc/1100/stat"), 14, "157"); // +100 ticks (57 before)
    // A thread born during the interval (new TID).
    let t = l.join("proc/1200/task/1202");
    fs::create_dir_all(&t).expect("mkdir");
    fs::copy(l.join("proc/1200/task/1201/stat"), t.join("stat")).expect("copy");
    set_field(&t.join("stat"), 1, "1202");
    // TID 1201 reused by another thread (new start time).
    set_field(&l.join("proc/1200/task/1201/stat"), 22, "7100");
    let mut s = Scanner::new();
    let map = CpuNodeMap::from_node_cpus(&[set("0-3"), set("4-7"), set("8-11"), set("12-15")]);

    let r = rates_over(
        &s.scan(&root, &ScanOptions::default()).expect("a"),
        &s.scan(l, &ScanOptions::default()).expect("b"),
        Duration::from_secs(1),
        100,
        &map,
    );
    let solver = r
        .processes
        .iter()
        .find(|p| p.key.pid == 1100)
        .expect("solver");
    assert!((solver.cpu - 1.0).abs() < 1e-9);
    assert_eq!(solver.node_runtime_s, vec![0.0, 1.0, 0.0, 0.0]); // CPU 5 = node 1

    let opts = ScanOptions {
        threads: true,
        ..ScanOptions::default()
    };
    let r = rates_over(
        &s.scan(&root, &opts).expect("a"),
        &s.scan(l, &opts).expect("b"),
        Duration::from_secs(1),
        100,
        &map,
    );
    let app = r.processes.iter().find(|p| p.key.pid == 1200).expect("app");
    let new: Vec<(u32, bool)> = app.threads.iter().map(|t| (t.tid, t.new)).collect();
    assert_eq!(new, vec![(1200, false), (1201, true), (1202, true)]);
    assert!((app.threads[2].cpu - 2.92).abs() < 1e-9);
}

#[test]
fn cpu_node_map_from_host_topology() {
    let h = topo::read_host_detailed(&fixture("host-1node")).expect("host");
    let map = CpuNodeMap::from_host(&h);
    assert_eq!(map.nr_nodes(), 1);
    assert_eq!(
        (map.node_of(0), map.node_of(1), map.node_of(2)),
        (Some(0), Some(0), None)
    );
    let fake = topo::fake_numa(&h.topology, 2).expect("fake");
    let split = linux::rates::CpuNodeMap::from_topology(&fake);
    assert_eq!((split.node_of(0), split.node_of(1)), (Some(0), Some(1)));
}

/// Run-queue wait from each thread's `schedstat` (run delay), over two scans; a
/// thread without the file has none, and a malformed file drops its process with one error
/// naming the file and the field.
#[test]
fn run_queue_wait_from_schedstat() {
    let early = copy_fixture("multinode-4n");
    let later = copy_fixture("multinode-4n");
    let (e, l) = (early.path(), later.path());
    let write = |root: &std::path::Path, tid: u32, delay_ns: u64| {
        let path = root.join(format!("proc/1000/task/{tid}/schedstat"));
        fs::write(path, format!("5000000000 {delay_ns} 300\n")).expect("write");
    };
    // Over 2 s: thread 1001 waited 1.0 s (0.5 CPUs), thread 1002 0.2 s (0.1 CPUs).
    write(e, 1001, 4_000_000_000);
    write(l, 1001, 5_000_000_000);
    write(e, 1002, 100_000_000);
    write(l, 1002, 300_000_000);
    let opts = ScanOptions {
        threads: true,
        schedstat: true,
        only: Some(vec![1000, 1200]),
        ..ScanOptions::default()
    };
    let mut s = Scanner::new();
    let a = s.scan(e, &opts).expect("a");
    let b = s.scan(l, &opts).expect("b");
    assert!(b.errors.is_empty(), "{:?}", b.errors);
    let map = CpuNodeMap::from_node_cpus(&[set("0-3"), set("4-7"), set("8-11"), set("12-15")]);
    let r = rates_over(&a, &b, Duration::from_secs(2), 100, &map);
    let db = r
        .processes
        .iter()
        .find(|p| p.key.pid == 1000)
        .expect("1000");
    let w = |tid| {
        db.threads
            .iter()
            .find(|t| t.tid == tid)
            .and_then(|t| t.wait)
    };
    assert!((w(1001).expect("1001") - 0.5).abs() < 1e-9);
    assert!((w(1002).expect("1002") - 0.1).abs() < 1e-9);
    assert!((db.wait.expect("process") - 0.6).abs() < 1e-9);
    // No time between the readings (a daemon's first pass against itself): the wait is
    // unknown, not zero, so that a policy does not read a busy job as one that sleeps.
    let zero = rates_over(&a, &b, Duration::ZERO, 100, &map);
    let db0 = zero
        .processes
        .iter()
        .find(|p| p.key.pid == 1000)
        .expect("1000");
    assert_eq!(db0.wait, None);
    // No schedstat at all (a kernel without CONFIG_SCHED_INFO): no wait, no error.
    let app = r
        .processes
        .iter()
        .find(|p| p.key.pid == 1200)
        .expect("1200");
    assert_eq!(app.wait, None);

    let bad = l.join("proc/1000/task/1002/schedstat");
    fs::write(&bad, "5000000000 later 300\n").expect("write");
    let b = s.scan(l, &opts).expect("b");
    assert_eq!(b.errors.len(), 1, "{:?}", b.errors);
    assert_names_file(&b.errors[0], &bad);
    let msg = b.errors[0].to_string();
    assert!(
        msg.contains("field run_delay `later` is not a number"),
        "{msg}"
    );
    assert!(b.processes.iter().all(|p| p.pid != 1000));
}
