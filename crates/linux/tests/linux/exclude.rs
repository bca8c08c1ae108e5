//! The exclusion rules end to end: fixture tree -> scan -> machine facts -> verdicts.

use std::collections::BTreeMap;

use linux::exclude::{Confined, Machine, Reason, Rules, Verdict, check};
use linux::sample::NumaMapsSelect;
use linux::{ScanOptions, Scanner};

use crate::common::{fixture, host, set};

fn verdicts(root: &std::path::Path, rules: &Rules) -> BTreeMap<u32, Verdict> {
    let opts = ScanOptions {
        threads: true,
        thread_status: true,
        cpuset: true,
        numa_maps: NumaMapsSelect::All,
        kernel_threads: true,
        ..ScanOptions::default()
    };
    let scan = Scanner::new().scan(root, &opts).expect("scan");
    let machine = Machine::read(root).expect("machine");
    scan.processes
        .iter()
        .map(|p| (p.pid, check(p, None, &machine, rules)))
        .collect()
}

fn label(v: &Verdict) -> &'static str {
    v.reason().map_or("manage", Reason::label)
}

#[test]
fn machine_facts() {
    let m = Machine::read(&fixture("multinode-4n")).expect("machine");
    assert_eq!(m.default_cpus, set("0-15"));
    assert_eq!(m.memory_nodes, set("0-3"));
    assert_eq!(m.node_cpus.len(), 4);
    assert_eq!(m.nodes_of(&set("3-4")), set("0-1"));
    let one = Machine::read(&fixture("host-1node")).expect("machine");
    assert_eq!(one.node_cpus, vec![set("0-1")]);
}

#[test]
fn every_rule_on_the_multinode_tree() {
    let root = fixture("multinode-4n");
    let v = verdicts(&root, &Rules::default());
    let labels: BTreeMap<u32, &str> = v.iter().map(|(&p, v)| (p, label(v))).collect();
    assert_eq!(
        labels,
        BTreeMap::from([
            (2, "kernel_thread"),
            (50, "kernel_thread"),
            (1000, "manage"),
            (1100, "foreign_mempolicy"),
            (1200, "cpuset_confined"),
            (1300, "pinned_by_other"),
            (1400, "realtime"),
            (1500, "pinned_by_other"),
            (1600, "exiting"),
        ])
    );
    assert_eq!(
        v[&1000],
        Verdict::Manage {
            cpus: set("0-15"),
            nodes: set("0-3")
        }
    );
    assert_eq!(
        v[&1400].reason().map(ToString::to_string).as_deref(),
        Some("thread 1401 is real-time (SCHED_FIFO)")
    );
    assert!(matches!(
        v[&1500].reason(),
        Some(Reason::PinnedByOther { tid: 1501, .. })
    ));

    // Managing confined processes within their cpuset instead.
    let within = Rules {
        cpuset_confined: Confined::ManageWithin,
        ..Rules::default()
    };
    assert_eq!(
        verdicts(&root, &within)[&1200],
        Verdict::Manage {
            cpus: set("8-11"),
            nodes: set("2")
        }
    );
}

#[test]
fn config_rules_on_the_multinode_tree() {
    let root = fixture("multinode-4n");
    let mut r = Rules::default();
    r.exclude.cgroups.push("/system.slice".into());
    assert_eq!(label(&verdicts(&root, &r)[&1000]), "excluded_cgroup");
    let mut r = Rules::default();
    r.exclude.comms.insert("db server".into());
    assert_eq!(label(&verdicts(&root, &r)[&1000]), "excluded_comm");
    let mut r = Rules::default();
    r.exclude.uids.insert(999);
    assert_eq!(label(&verdicts(&root, &r)[&1000]), "excluded_user");
    let mut r = Rules::default();
    let mut inc = linux::exclude::Matcher::default();
    inc.pids.insert(1300);
    r.include = Some(inc);
    let v = verdicts(&root, &r);
    assert_eq!(label(&v[&1000]), "not_included");
    // Included, but pinned by someone else: still left alone.
    assert_eq!(label(&v[&1300]), "pinned_by_other");
}

#[test]
fn captured_host_rules() {
    let root = fixture("host-1node");
    let v = verdicts(&root, &Rules::default());
    assert_eq!(label(&v[&host::PYTHON]), "manage");
    assert_eq!(label(&v[&host::WEIRD]), "manage");
    assert_eq!(label(&v[&host::PREFER]), "foreign_mempolicy");
    assert_eq!(label(&v[&host::PINNED]), "pinned_by_other");
    assert_eq!(label(&v[&host::KTHREADD]), "kernel_thread");
    assert_eq!(label(&v[&host::MIGRATION]), "kernel_thread");
}
