//! The readers on captured text (`host-1node`, this kind of VM, Linux 6.18), on the hand-made
//! 4-node tree (`multinode-4n`), and on malformed copies.

use std::fs;

use linux::mempolicy::PolicyMode;
use linux::procfs::cgroup::{self, CgroupMounts, Hierarchy};
use linux::procfs::stat::SchedPolicy;
use linux::procfs::{self, ProcDir, numa_maps, sched, stat, status, vmstat};
use linux::{Live, ProcError, sysfs};

use crate::common::{assert_names_file, copy_fixture, fixture, host, set};

#[test]
fn captured_stat_of_process_threads_and_kernel_threads() {
    let root = fixture("host-1node");
    let s = stat::read(&root, host::PYTHON)
        .expect("read")
        .expect_alive("python");
    assert_eq!(s.comm, "python3");
    assert_eq!(s.num_threads, 3);
    assert_eq!((s.utime, s.stime), (4, 2));
    assert_eq!(s.starttime, 604369);
    assert!(!s.is_kernel_thread());
    assert_eq!(s.policy, SchedPolicy::Other);
    let tids = procfs::list_tids(&root, host::PYTHON)
        .expect("tids")
        .expect_alive("tids");
    assert_eq!(tids, host::PYTHON_THREADS);
    let t = stat::read_task(&root, host::PYTHON, 28903)
        .expect("read")
        .expect_alive("thread");
    assert_eq!(t.pid, 28903);
    assert_eq!(t.starttime, 604380);
    assert_eq!(t.processor, 1);

    let k = stat::read(&root, host::KTHREADD)
        .expect("read")
        .expect_alive("kthreadd");
    assert!(k.is_kernel_thread());
    assert_eq!(k.ppid, 0);
    let m = stat::read(&root, host::MIGRATION)
        .expect("read")
        .expect_alive("migration");
    assert_eq!(m.comm, "migration/0");
    assert!(m.is_kernel_thread());
    assert_eq!(m.policy, SchedPolicy::Fifo);
    assert_eq!(m.rt_priority, 99);
}

#[test]
fn captured_comm_with_spaces_and_parentheses() {
    let root = fixture("host-1node");
    let s = stat::read(&root, host::WEIRD)
        .expect("read")
        .expect_alive("weird");
    assert_eq!(s.comm, "we) ird (name");
    assert_eq!(s.state, 'S');
    assert_eq!(
        procfs::read_comm(&root, host::WEIRD)
            .expect("comm")
            .expect_alive("comm"),
        "we) ird (name"
    );
}

#[test]
fn captured_status() {
    let root = fixture("host-1node");
    let s = status::read(&root, host::PYTHON)
        .expect("read")
        .expect_alive("python");
    assert_eq!(s.threads, 3);
    assert_eq!(s.effective_uid(), 0);
    assert_eq!(s.cpus_allowed, set("0-1"));
    assert_eq!(s.mems_allowed, set("0"));
    assert_eq!(s.vm_rss_bytes, Some(29916 * 1024));
    assert_eq!(s.kthread, Some(false));
    let p = status::read(&root, host::PINNED)
        .expect("read")
        .expect_alive("pinned");
    assert_eq!(p.cpus_allowed, set("1"));
    let k = status::read(&root, host::KTHREADD)
        .expect("read")
        .expect_alive("kthreadd");
    assert_eq!(k.vm_rss_bytes, None);
    assert_eq!(k.kthread, Some(true));
}

#[test]
fn captured_numa_maps_and_policy() {
    let root = fixture("host-1node");
    let m = numa_maps::read(&root, host::PYTHON)
        .expect("read")
        .expect_alive("python")
        .expect("NUMA kernel");
    assert_eq!(m.mappings.len(), 115);
    let private = m.private_node_bytes();
    assert_eq!(private.len(), 1);
    // Two 8 MiB buffers, touched.
    assert!(private[0] >= 16 << 20, "{private:?}");
    assert!(m.node_bytes()[0] > private[0]);
    assert!(m.foreign_policy().is_none());

    let p = numa_maps::read(&root, host::PREFER)
        .expect("read")
        .expect_alive("prefer")
        .expect("NUMA");
    let pol = p.foreign_policy().expect("prefer:0 set by set_mempolicy");
    assert_eq!(pol.mode, PolicyMode::Preferred);
    assert_eq!(pol.to_string(), "prefer:0");

    // Kernel threads have an empty numa_maps.
    let k = numa_maps::read(&root, host::KTHREADD)
        .expect("read")
        .expect_alive("k")
        .expect("NUMA");
    assert!(k.mappings.is_empty());
    // The escaped file name.
    let w = numa_maps::read(&root, host::WEIRD)
        .expect("read")
        .expect_alive("w")
        .expect("NUMA");
    assert!(
        matches!(&w.mappings[0].kind, numa_maps::MappingKind::File(f) if f.ends_with("we)\\040ird\\040(name"))
    );
}

#[test]
fn captured_maps() {
    let root = fixture("host-1node");
    let maps = procfs::maps::read(&root, host::WEIRD)
        .expect("read")
        .expect_alive("maps");
    assert!(maps.iter().any(|m| m.path == "/tmp/hn/we) ird (name"));
    assert!(
        maps.iter()
            .any(|m| m.path == "[heap]" || m.path == "[stack]")
    );
    assert!(maps.iter().all(|m| m.end > m.start));
}

#[test]
fn captured_vmstat_and_sched() {
    let root = fixture("host-1node");
    let v = vmstat::read(&root).expect("vmstat");
    assert_eq!(v.hit(), Some(72413598));
    assert_eq!(v.get("numa_interleave"), Some(1131));
    assert_eq!(v.hint_faults(), Some(0));
    assert!(v.has_numa_balancing());
    let s = sched::read(&root, host::PYTHON)
        .expect("read")
        .expect_alive("sched")
        .expect("file");
    assert_eq!(s.nr_migrations, Some(4));
    assert_eq!(s.numa_scan_seq, Some(0));
    assert_eq!(s.numa_preferred_nid, None);
    assert_eq!(s.current_node, Some(0));
    assert_eq!(s.faults.len(), 1);
}

#[test]
fn captured_cgroup_v1_cpuset() {
    let root = fixture("host-1node");
    let cg = cgroup::read(&root, host::PYTHON)
        .expect("read")
        .expect_alive("cg")
        .expect("cgroups");
    assert_eq!(cg.v2.as_deref(), Some("/"));
    assert_eq!(cg.v1_path("memory"), Some("/sandbox/job-1"));
    assert_eq!(cg.cpuset_path(), Some((Hierarchy::V1, "/")));
    let mounts = CgroupMounts::read(&root).expect("mountinfo");
    assert_eq!(
        mounts.v1_cpuset.as_deref(),
        Some(std::path::Path::new("/sys/fs/cgroup/cpuset"))
    );
    assert_eq!(
        mounts.v2.as_deref(),
        Some(std::path::Path::new("/sys/fs/cgroup/unified"))
    );
    let cs = cgroup::read_cpuset(&root, &mounts, &cg)
        .expect("cpuset")
        .expect("present");
    assert_eq!(cs.cpus, set("0-1"));
    assert_eq!(cs.mems, set("0"));
}

#[test]
fn captured_sysfs() {
    let root = fixture("host-1node");
    assert_eq!(sysfs::online_cpus(&root).expect("online"), set("0-1"));
    assert!(sysfs::isolated_cpus(&root).expect("isolated").is_empty());
    assert_eq!(sysfs::default_cpus(&root).expect("default"), set("0-1"));
    assert_eq!(sysfs::memory_nodes(&root).expect("nodes"), set("0"));
    let m4 = fixture("multinode-4n");
    assert_eq!(sysfs::memory_nodes(&m4).expect("nodes"), set("0-3"));
    // No sys tree at all: node 0 only, and no online file is an error naming it.
    let empty = tempfile::tempdir().expect("tmp");
    assert_eq!(sysfs::memory_nodes(empty.path()).expect("nodes"), set("0"));
    let e = sysfs::online_cpus(empty.path()).unwrap_err();
    assert_names_file(&e, &empty.path().join("sys/devices/system/cpu/online"));
}

#[test]
fn multinode_readers() {
    let root = fixture("multinode-4n");
    let s = stat::read(&root, 1000).expect("read").expect_alive("db");
    assert_eq!(s.comm, "db server");
    let m = numa_maps::read(&root, 1000)
        .expect("read")
        .expect_alive("db")
        .expect("NUMA");
    let k = 4096u64;
    assert_eq!(
        m.private_node_bytes(),
        vec![
            1600 * k,
            1024 * k,
            (24000 + 33) * k + 64 * (2 << 20),
            3072 * k
        ]
    );
    assert!(m.foreign_policy().is_none());
    let b = numa_maps::read(&root, 1100)
        .expect("read")
        .expect_alive("solver")
        .expect("NUMA");
    assert_eq!(
        b.foreign_policy().map(ToString::to_string).as_deref(),
        Some("bind:1")
    );

    let sch = sched::read(&root, 1000)
        .expect("read")
        .expect_alive("db")
        .expect("file");
    assert_eq!(sch.numa_preferred_nid, Some(2));
    assert_eq!(sch.faults.len(), 4);
    assert_eq!(sch.faults[2].task_private, 900);
    // A process without a sched file (kernel without CONFIG_SCHED_DEBUG): Alive(None).
    assert_eq!(sched::read(&root, 1100).expect("read"), Live::Alive(None));

    let v = vmstat::read(&root).expect("vmstat");
    assert_eq!(v.hint_faults_local(), Some(3330000));
    assert_eq!(v.pages_migrated(), Some(777000));
}

#[test]
fn multinode_cgroup_v2_cpusets() {
    let root = fixture("multinode-4n");
    let mounts = CgroupMounts::read(&root).expect("mounts");
    assert_eq!(
        mounts.v2.as_deref(),
        Some(std::path::Path::new("/sys/fs/cgroup"))
    );
    assert_eq!(mounts.v1_cpuset, None);
    // db.service has no cpuset files: the root's apply.
    let cg = cgroup::read(&root, 1000)
        .expect("read")
        .expect_alive("db")
        .expect("cg");
    let cs = cgroup::read_cpuset(&root, &mounts, &cg)
        .expect("cpuset")
        .expect("present");
    assert_eq!(
        (cs.cpus.clone(), cs.mems.clone()),
        (set("0-15"), set("0-3"))
    );
    assert_eq!(cs.dir, root.join("sys/fs/cgroup"));
    // The pod's own cpuset.
    let cg = cgroup::read(&root, 1200)
        .expect("read")
        .expect_alive("app")
        .expect("cg");
    let cs = cgroup::read_cpuset(&root, &mounts, &cg)
        .expect("cpuset")
        .expect("present");
    assert_eq!((cs.cpus, cs.mems), (set("8-11"), set("2")));
    // No mountinfo and no cgroup tree: no cpuset.
    let none = CgroupMounts::default();
    assert_eq!(cgroup::read_cpuset(&root, &none, &cg).expect("ok"), None);
}

#[test]
fn gone_and_optional() {
    let root = fixture("multinode-4n");
    assert!(ProcDir::open(&root, 4_000_000).expect("open").is_gone());
    assert!(stat::read(&root, 4_000_000).expect("read").is_gone());
    assert!(numa_maps::read(&root, 4_000_000).expect("read").is_gone());
    assert!(stat::read_task(&root, 1000, 99).expect("read").is_gone());
    assert!(procfs::list_tids(&root, 4_000_000).expect("read").is_gone());
    // An optional file missing while the process exists.
    let dir = ProcDir::open(&root, 1100)
        .expect("open")
        .expect_alive("solver");
    assert_eq!(dir.sched().expect("sched"), Live::Alive(None));
    // A thread that does not exist (or exited).
    let db = ProcDir::open(&root, 1000).expect("open").expect_alive("db");
    assert!(db.task_status(1099).expect("status").is_gone());
    assert!(db.open_task(1099).expect("open").is_gone());
    let t = db.open_task(1001).expect("open").expect_alive("thread");
    assert_eq!(t.stat().expect("stat").expect_alive("thread").pid, 1001);
}

/// Damages one file of a copy of `multinode-4n` and checks that reading it fails with a
/// one-line error naming that file.
fn damaged(rel: &str, content: &str, read: impl Fn(&std::path::Path) -> Result<(), ProcError>) {
    let tmp = copy_fixture("multinode-4n");
    let path = tmp.path().join(rel);
    fs::write(&path, content).expect("write");
    let err = read(tmp.path()).expect_err(rel);
    assert_names_file(&err, &path);
    assert_eq!(err.path(), path);
}

#[test]
fn malformed_files_name_the_file() {
    let full = fs::read_to_string(fixture("multinode-4n/proc/1000/stat")).expect("stat");
    // Truncated.
    damaged("proc/1000/stat", &full[..full.len() / 2], |r| {
        stat::read(r, 1000).map(drop)
    });
    // Non-numeric.
    damaged("proc/1000/stat", &full.replace(" 5000 ", " 5x00 "), |r| {
        stat::read(r, 1000).map(drop)
    });
    // Thread stat.
    damaged("proc/1000/task/1001/stat", "1001 (db", |r| {
        stat::read_task(r, 1000, 1001).map(drop)
    });
    // status: missing field, non-numeric.
    let st = fs::read_to_string(fixture("multinode-4n/proc/1000/status")).expect("status");
    damaged("proc/1000/status", &st.replace("Threads:\t4\n", ""), |r| {
        status::read(r, 1000).map(drop)
    });
    damaged(
        "proc/1000/status",
        &st.replace("Threads:\t4", "Threads:\tfour"),
        |r| status::read(r, 1000).map(drop),
    );
    damaged("proc/1000/numa_maps", "7f00 default N0=x\n", |r| {
        numa_maps::read(r, 1000).map(drop)
    });
    damaged("proc/1000/numa_maps", "zz default\n", |r| {
        numa_maps::read(r, 1000).map(drop)
    });
    damaged("proc/1000/cgroup", "0:/x\n", |r| {
        cgroup::read(r, 1000).map(drop)
    });
    damaged("proc/1000/sched", "se.nr_migrations : many\n", |r| {
        sched::read(r, 1000).map(drop)
    });
    damaged("proc/1000/maps", "00400000 r--p\n", |r| {
        procfs::maps::read(r, 1000).map(drop)
    });
    damaged("proc/vmstat", "numa_hit 1\nnuma_miss ?\n", |r| {
        vmstat::read(r).map(drop)
    });
    damaged(
        "proc/self/mountinfo",
        "31 23 0:28 / /sys/fs/cgroup\n",
        |r| CgroupMounts::read(r).map(drop),
    );
    damaged(
        "sys/fs/cgroup/kubepods.slice/pod-1/cpuset.cpus.effective",
        "8-x\n",
        |r| {
            let mounts = CgroupMounts::read(r)?;
            let cg = cgroup::read(r, 1200)?.expect_alive("app").expect("cg");
            cgroup::read_cpuset(r, &mounts, &cg).map(drop)
        },
    );
    damaged("sys/devices/system/cpu/online", "0-\n", |r| {
        sysfs::online_cpus(r).map(drop)
    });
    damaged("sys/devices/system/node/node2/cpulist", "a\n", |r| {
        linux::exclude::Machine::read(r).map(drop)
    });
}

/// Puts `what` (a FIFO, or a link to a device) at `rel` in a copy of `multinode-4n` and
/// checks that reading it is refused at once, one line naming the file and what it is.
fn planted(rel: &str, read: &dyn Fn(&std::path::Path) -> Result<(), ProcError>) {
    for what in ["fifo", "/dev/zero", "/dev/urandom"] {
        let tmp = copy_fixture("multinode-4n");
        let path = tmp.path().join(rel);
        let _ = fs::remove_file(&path);
        if what == "fifo" {
            let ok = std::process::Command::new("mkfifo")
                .arg(&path)
                .status()
                .expect("mkfifo");
            assert!(ok.success());
        } else {
            std::os::unix::fs::symlink(what, &path).expect("symlink");
        }
        let err = read(tmp.path()).expect_err(rel);
        assert_names_file(&err, &path);
        let kind = if what == "fifo" {
            "a FIFO"
        } else {
            "a character device"
        };
        assert!(err.to_string().contains(kind), "{rel} as {what}: {err}");
    }
}

/// Without the file-type check these reads block forever (a FIFO) or grow without bound
/// (`/dev/zero`).
#[test]
fn fifos_and_devices_are_refused_naming_the_file() {
    planted("proc/stat", &|r| procfs::cpustat::read(r).map(drop));
    planted("proc/vmstat", &|r| vmstat::read(r).map(drop));
    planted("proc/meminfo", &|r| {
        procfs::meminfo::read_mem_available(r).map(drop)
    });
    planted("proc/uptime", &|r| procfs::uptime::read(r).map(drop));
    planted("proc/1000/stat", &|r| stat::read(r, 1000).map(drop));
    planted("proc/1000/status", &|r| status::read(r, 1000).map(drop));
    planted("proc/1000/numa_maps", &|r| {
        numa_maps::read(r, 1000).map(drop)
    });
    planted("proc/1000/task/1001/stat", &|r| {
        stat::read_task(r, 1000, 1001).map(drop)
    });
    planted("proc/1000/stat", &|r| {
        stat::StatReader::of_pid(r, 1000).read().map(drop)
    });
    planted("sys/devices/system/cpu/online", &|r| {
        sysfs::online_cpus(r).map(drop)
    });
}

#[test]
fn empty_stat_file_is_gone_not_an_error() {
    // A process exiting while its stat is read can leave an empty read behind.
    let tmp = copy_fixture("multinode-4n");
    fs::write(tmp.path().join("proc/1000/stat"), "").expect("write");
    assert!(stat::read(tmp.path(), 1000).expect("read").is_gone());
}

#[test]
fn list_pids_of_fixture() {
    let pids = procfs::list_pids(&fixture("multinode-4n")).expect("list");
    assert_eq!(pids, vec![2, 50, 1000, 1100, 1200, 1300, 1400, 1500, 1600]);
    let e = procfs::list_pids(std::path::Path::new("/nonexistent-root")).unwrap_err();
    assert_names_file(&e, std::path::Path::new("/nonexistent-root/proc"));
}
