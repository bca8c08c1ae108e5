//! Tests of the exclusion rules: every rule on captured and hand-made samples, the verdicts
//! and their reasons.

use super::*;
use crate::procfs::cgroup::Cpuset;
use crate::procfs::stat::PF_KTHREAD;
use crate::sample::{NumaSample, ThreadSample};

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).expect("list")
}

/// A 2-node machine: CPUs 0-3 node 0, 4-7 node 1.
fn machine() -> Machine {
    Machine {
        default_cpus: set("0-7"),
        memory_nodes: set("0-1"),
        node_cpus: vec![set("0-3"), set("4-7")],
    }
}

fn proc(pid: Pid) -> ProcessSample {
    ProcessSample {
        pid,
        starttime: 1000,
        comm: "worker".into(),
        state: 'R',
        ppid: 1,
        flags: 0x0040_0100,
        uid: 1000,
        euid: 1000,
        utime: 0,
        stime: 0,
        minflt: 0,
        majflt: 0,
        nice: 0,
        num_threads: 1,
        processor: 0,
        policy: SchedPolicy::Other,
        rt_priority: 0,
        cpus_allowed: set("0-7"),
        mems_allowed: set("0-1"),
        vm_rss_bytes: Some(1 << 20),
        threads: vec![],
        cgroup: Some("/user.slice/user-1000.slice/session-1.scope".into()),
        cpuset: None,
        numa: None,
        sched: None,
    }
}

fn thread(tid: Tid) -> ThreadSample {
    ThreadSample {
        tid,
        starttime: 1001,
        comm: "worker".into(),
        state: 'S',
        utime: 0,
        stime: 0,
        processor: 0,
        policy: SchedPolicy::Other,
        rt_priority: 0,
        cpus_allowed: Some(set("0-7")),
        schedstat: None,
    }
}

fn leave(p: &ProcessSample, rules: &Rules) -> Option<Reason> {
    check(p, None, &machine(), rules).reason().cloned()
}

#[test]
fn normal_process_is_managed() {
    let v = check(&proc(100), None, &machine(), &Rules::default());
    assert_eq!(
        v,
        Verdict::Manage {
            cpus: set("0-7"),
            nodes: set("0-1")
        }
    );
}

#[test]
fn kernel_threads() {
    let r = Rules::default();
    let mut p = proc(100);
    p.flags |= PF_KTHREAD;
    assert_eq!(leave(&p, &r), Some(Reason::KernelThread));
    let mut p = proc(50);
    p.ppid = 2;
    assert_eq!(leave(&p, &r), Some(Reason::KernelThread));
    let mut p = proc(2);
    p.ppid = 0;
    assert_eq!(leave(&p, &r), Some(Reason::KernelThread));
    assert!(!is_kernel_thread(1, 0, 0x400100));
}

#[test]
fn zombies() {
    let mut p = proc(100);
    p.state = 'Z';
    assert_eq!(leave(&p, &Rules::default()), Some(Reason::Exiting));
}

#[test]
fn realtime_process_or_thread() {
    let mut p = proc(100);
    p.policy = SchedPolicy::Fifo;
    assert!(matches!(
        leave(&p, &Rules::default()),
        Some(Reason::RealTime { tid: 100, .. })
    ));
    let mut p = proc(100);
    let mut t = thread(101);
    t.policy = SchedPolicy::RoundRobin;
    p.threads = vec![thread(100), t];
    assert_eq!(
        leave(&p, &Rules::default()),
        Some(Reason::RealTime {
            tid: 101,
            policy: SchedPolicy::RoundRobin
        })
    );
    let mut p = proc(100);
    p.policy = SchedPolicy::Deadline;
    assert!(leave(&p, &Rules::default()).is_some());
    let mut p = proc(100);
    p.policy = SchedPolicy::Batch;
    assert_eq!(leave(&p, &Rules::default()), None);
}

#[test]
fn pinned_by_someone_else() {
    let r = Rules::default();
    let mut p = proc(100);
    p.cpus_allowed = set("0-3");
    assert!(matches!(
        leave(&p, &r),
        Some(Reason::PinnedByOther { tid: 100, .. })
    ));
    // A thread pinned on its own.
    let mut p = proc(100);
    let mut t = thread(101);
    t.cpus_allowed = Some(set("5"));
    p.threads = vec![thread(100), t];
    assert!(matches!(
        leave(&p, &r),
        Some(Reason::PinnedByOther { tid: 101, .. })
    ));
    // Offline CPUs in the mask (possible but not online) are not a pin.
    let mut p = proc(100);
    p.cpus_allowed = set("0-63");
    assert_eq!(leave(&p, &r), None);
    // Isolated CPUs are not expected in a default mask.
    let mut m = machine();
    m.default_cpus = set("0-6");
    let mut p = proc(100);
    p.cpus_allowed = set("0-6");
    assert!(check(&p, None, &m, &r).is_manage());
}

#[test]
fn homenode_own_mask_is_not_a_pin() {
    let r = Rules::default();
    let mut p = proc(100);
    p.cpus_allowed = set("0-3");
    let ours = set("0-3");
    assert!(check(&p, Some(&ours), &machine(), &r).is_manage());
    // Someone changed it after homenode did.
    p.cpus_allowed = set("2");
    assert!(matches!(
        check(&p, Some(&ours), &machine(), &r),
        Verdict::Leave(Reason::PinnedByOther { .. })
    ));
}

/// `perf bench numa` workers set their own affinity to every CPU; that is not
/// someone pinning them, and the daemon homes them again.
#[test]
fn a_mask_widened_to_all_allowed_cpus_is_not_a_pin() {
    let r = Rules::default();
    let ours = set("0-3");
    let mut p = proc(100);
    p.cpus_allowed = set("0-7");
    assert!(check(&p, Some(&ours), &machine(), &r).is_manage());
    assert!(widened(&p, &machine(), &ours));
    p.cpus_allowed = ours.clone();
    assert!(!widened(&p, &machine(), &ours));
    // Narrowed to fewer than all: still a pin.
    p.cpus_allowed = set("0-5");
    assert!(matches!(
        check(&p, Some(&ours), &machine(), &r),
        Verdict::Leave(Reason::PinnedByOther { .. })
    ));
}

#[test]
fn pinned_within_a_cpuset() {
    let r = Rules {
        cpuset_confined: Confined::ManageWithin,
        ..Rules::default()
    };
    let mut p = proc(100);
    p.cpuset = Some(Cpuset {
        cpus: set("0-5"),
        mems: set("0-1"),
        dir: "/sys/fs/cgroup/x".into(),
    });
    p.cpus_allowed = set("0-5");
    // Exactly its cpuset: not pinned; spans both nodes: not confined.
    assert_eq!(
        check(&p, None, &machine(), &r),
        Verdict::Manage {
            cpus: set("0-5"),
            nodes: set("0-1")
        }
    );
    p.cpus_allowed = set("0-4");
    assert!(matches!(leave(&p, &r), Some(Reason::PinnedByOther { .. })));
}

#[test]
fn foreign_memory_policy() {
    let mut p = proc(100);
    p.numa = Some(NumaSample {
        node_bytes: vec![0, 4096],
        private_node_bytes: vec![0, 4096],
        foreign_policy: Some(MemPolicy::parse("bind:1").expect("policy")),
    });
    assert_eq!(
        leave(&p, &Rules::default()).map(|r| r.to_string()),
        Some("memory policy `bind:1` set by someone else".into())
    );
    p.numa.as_mut().expect("numa").foreign_policy = None;
    assert_eq!(leave(&p, &Rules::default()), None);
}

#[test]
fn cpuset_confined_leave_or_manage_within() {
    let mut p = proc(100);
    p.cpuset = Some(Cpuset {
        cpus: set("4-7"),
        mems: set("1"),
        dir: "/sys/fs/cgroup/x".into(),
    });
    p.cpus_allowed = set("4-7");
    p.mems_allowed = set("1");
    assert_eq!(
        leave(&p, &Rules::default()),
        Some(Reason::CpusetConfined { nodes: set("1") })
    );
    let within = Rules {
        cpuset_confined: Confined::ManageWithin,
        ..Rules::default()
    };
    assert_eq!(
        check(&p, None, &machine(), &within),
        Verdict::Manage {
            cpus: set("4-7"),
            nodes: set("1")
        }
    );
    // Memory confined only (cpuset.mems = 0, CPUs everywhere).
    let mut p = proc(100);
    p.mems_allowed = set("0");
    assert_eq!(
        leave(&p, &Rules::default()),
        Some(Reason::CpusetConfined { nodes: set("0") })
    );
}

#[test]
fn config_exclusions() {
    let p = proc(100);
    let mut r = Rules::default();
    r.exclude.pids.insert(100);
    assert_eq!(leave(&p, &r), Some(Reason::ExcludedPid));
    let mut r = Rules::default();
    r.exclude.comms.insert("worker".into());
    assert_eq!(leave(&p, &r), Some(Reason::ExcludedComm("worker".into())));
    let mut r = Rules::default();
    r.exclude.uids.insert(1000);
    assert_eq!(leave(&p, &r), Some(Reason::ExcludedUser(1000)));
    let mut r = Rules::default();
    r.exclude.cgroups.push("/user.slice/".into());
    assert_eq!(
        leave(&p, &r),
        Some(Reason::ExcludedCgroup("/user.slice/".into()))
    );
    let mut r = Rules::default();
    r.exclude.cgroups.push("/user".into());
    assert_eq!(leave(&p, &r), None);
    assert!(Reason::ExcludedPid.label() == "excluded_pid" && !Reason::ExcludedPid.is_safety());
}

#[test]
fn include_list_only() {
    let p = proc(100);
    let mut inc = Matcher::default();
    inc.comms.insert("database".into());
    let r = Rules {
        include: Some(inc.clone()),
        ..Rules::default()
    };
    assert_eq!(leave(&p, &r), Some(Reason::NotIncluded));
    inc.uids.insert(1000);
    let r = Rules {
        include: Some(inc),
        ..Rules::default()
    };
    assert_eq!(leave(&p, &r), None);
    // Included but real-time: safety wins.
    let mut rt = proc(100);
    rt.policy = SchedPolicy::Fifo;
    assert!(matches!(leave(&rt, &r), Some(Reason::RealTime { .. })));
    // Excluded and included: the exclusion wins.
    let mut r2 = r.clone();
    r2.exclude.pids.insert(100);
    assert_eq!(leave(&p, &r2), Some(Reason::ExcludedPid));
}

#[test]
fn comm_and_cgroup_matching() {
    assert!(comm_matches("worker", "worker"));
    assert!(!comm_matches("work", "worker"));
    assert!(comm_matches("a-very-long-daemon-name", "a-very-long-dae"));
    assert!(comm_matches("ééééééééé", "ééééééé"));
    assert!(cgroup_under("/system.slice/x.service", "/system.slice"));
    assert!(cgroup_under("/system.slice", "/system.slice/"));
    assert!(!cgroup_under("/system.slice2/x", "/system.slice"));
    assert!(cgroup_under("/anything", "/"));
}

#[test]
fn rules_from_toml_like_json() {
    let r: Rules = serde_json::from_str(
        r#"{"exclude": {"comms": ["sshd"], "cgroups": ["/system.slice"]},
            "cpuset_confined": "manage-within"}"#,
    )
    .expect("rules");
    assert!(r.exclude.comms.contains("sshd"));
    assert_eq!(r.cpuset_confined, Confined::ManageWithin);
    assert!(serde_json::from_str::<Rules>(r#"{"exclud": {}}"#).is_err());
}
