//! One target per parser or loader. A text target hands mutated bytes to a parser; a tree
//! target writes one mutated file into a scratch copy of a captured `/proc` + `/sys` tree and
//! runs the reader that walks the whole tree (topology, the daemon's scanner). A target
//! passes when the code under test returns `Ok` or `Err`, never panics.

use std::path::{Path, PathBuf};

/// The repository (seeds are read from its fixtures and shipped files).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What a target does with one input.
pub enum Kind {
    /// Parse the bytes; the seeds are these files of the repository.
    Text {
        parse: fn(&[u8]),
        seeds: &'static [&'static str],
    },
    /// Parse the bytes; the seeds are made by a function.
    Made {
        parse: fn(&[u8]),
        seeds: fn() -> Vec<Vec<u8>>,
    },
    /// Write the mutated text of one of the tree's files over it (any file of the fixture
    /// tree, chosen at random) and read the whole tree.
    Tree {
        fixture: &'static str,
        read: fn(&Path),
    },
}

pub struct Target {
    pub name: &'static str,
    pub kind: Kind,
}

/// Seeds from files of the repository.
pub fn file_seeds(paths: &[&str]) -> Vec<Vec<u8>> {
    paths
        .iter()
        .filter_map(|p| std::fs::read(repo().join(p)).ok())
        .collect()
}

fn spec_seeds() -> Vec<Vec<u8>> {
    [
        "o1,node-affine-static:home_bonus=2,pool_delay_busy=400ms",
        "linux:numa_balancing=on;pool:pool_delay=0,initial_lb=off",
        "homenode:min_rss_mib=16,interval_s=2",
        "nodes=4,cpus-per-node=4,remote-ratio=1.6",
        "0-3,8,10-11",
        "bind:0-3 prefer=1 interleave:0,2 default local",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// A journal recording two processes of the multinode fixture, one with an applied home.
fn journal_seeds() -> Vec<Vec<u8>> {
    let root = repo().join("crates/linux/tests/fixtures/multinode-4n");
    let mut j = linux::journal::Journal::new();
    for pid in [1000, 1100] {
        if let Ok(linux::Live::Alive(e)) = linux::journal::capture(&root, pid) {
            let key = e.key();
            j.record(e);
            if pid == 1000 {
                j.set_applied(
                    key,
                    topo::CpuSet::parse_list("0-3").unwrap_or_default(),
                    topo::CpuSet::single(0),
                );
            }
        }
    }
    vec![j.to_json().into_bytes()]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn daemon_config(b: &[u8]) {
    let _ = linux::daemon::DaemonConfig::parse(&text(b), "fuzz.toml");
}

fn journal(b: &[u8]) {
    let _ = linux::journal::Journal::from_json(&text(b), Path::new("journal.json"));
}

fn machine(b: &[u8]) {
    if let Ok(spec) = topo::MachineSpec::from_toml_str(&text(b), "fuzz.toml") {
        let _ = spec.into_topology();
    }
}

fn workload(b: &[u8]) {
    let _ = sim::workload::parse_workload(&text(b), "fuzz.toml");
}

fn experiment(b: &[u8]) {
    let _ = sim::experiments::ExperimentSpec::parse(&text(b), "fuzz.toml");
}

fn validation_case(b: &[u8]) {
    let _ = sim::validation::Case::parse(&text(b), "validation/fuzz.toml", "fuzz");
}

fn specs(b: &[u8]) {
    let t = text(b);
    let _ = sim::sched::SchedSpec::parse_list(&t);
    let _ = sim::placement::PlacementSpec::parse(&t);
    let _ = topo::parse_synthetic(&t);
    let _ = topo::CpuSet::parse_list(&t);
    for token in t.split_whitespace() {
        let _ = linux::mempolicy::MemPolicy::parse(token);
    }
}

fn proc_files(b: &[u8]) {
    use linux::procfs::{cgroup, cpustat, maps, numa_maps, sched, stat, status, vmstat};
    let t = text(b);
    let _ = stat::parse(b);
    let _ = status::parse(&t);
    let _ = numa_maps::parse(&t);
    let _ = maps::parse(&t);
    let _ = cgroup::parse(&t);
    let _ = cgroup::parse_mountinfo(&t);
    let _ = sched::parse(&t);
    let _ = vmstat::parse_lenient(&t);
    let _ = cpustat::parse_lenient(&t);
    let _ = linux::sysfs::parse_node_meminfo(&t);
}

fn read_topology(root: &Path) {
    let _ = topo::read_host_detailed(root);
}

fn scan_proc(root: &Path) {
    use linux::sample::NumaMapsSelect;
    let opts = linux::ScanOptions {
        threads: true,
        thread_status: true,
        cgroup: true,
        cpuset: true,
        numa_maps: NumaMapsSelect::All,
        sched: true,
        schedstat: true,
        kernel_threads: true,
        only: None,
    };
    let _ = linux::Scanner::new().scan(root, &opts);
    let _ = linux::procfs::cpustat::read_lenient(root);
    let _ = linux::procfs::vmstat::read_lenient(root);
    let _ = linux::sysfs::online_cpus(root);
    let _ = linux::sysfs::memory_nodes(root);
    for node in 0..4 {
        let _ = linux::sysfs::node_memory(root, node);
    }
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "proc-files",
        kind: Kind::Text {
            parse: proc_files,
            seeds: &[
                "crates/linux/tests/fixtures/multinode-4n/proc/1000/stat",
                "crates/linux/tests/fixtures/multinode-4n/proc/1000/status",
                "crates/linux/tests/fixtures/multinode-4n/proc/1000/numa_maps",
                "crates/linux/tests/fixtures/multinode-4n/proc/1000/cgroup",
                "crates/linux/tests/fixtures/multinode-4n/proc/1000/sched",
                "crates/linux/tests/fixtures/multinode-4n/proc/stat",
                "crates/linux/tests/fixtures/multinode-4n/proc/vmstat",
                "crates/linux/tests/fixtures/multinode-4n/proc/self/mountinfo",
                "crates/linux/tests/fixtures/multinode-4n/sys/devices/system/node/node0/meminfo",
            ],
        },
    },
    Target {
        name: "specs",
        kind: Kind::Made {
            parse: specs,
            seeds: spec_seeds,
        },
    },
    Target {
        name: "machine-spec",
        kind: Kind::Text {
            parse: machine,
            seeds: &[
                "machines/azusa16.toml",
                "machines/epyc-nps4.toml",
                "machines/wildfire8.toml",
            ],
        },
    },
    Target {
        name: "workload",
        kind: Kind::Text {
            parse: workload,
            seeds: &[
                "workloads/stream-pair.toml",
                "workloads/pingpong.toml",
                "workloads/make-like.toml",
                "workloads/shared-writer.toml",
            ],
        },
    },
    Target {
        name: "experiment",
        kind: Kind::Text {
            parse: experiment,
            seeds: &[
                "experiments/tx7-node-affine.toml",
                "experiments/wildfire-pmqs-vs-aa.toml",
                "experiments/convergence.toml",
                "experiments/light-load-2020.toml",
            ],
        },
    },
    Target {
        name: "validation-case",
        kind: Kind::Text {
            parse: validation_case,
            seeds: &[
                "validation/icelake-line-transfer.toml",
                "validation/rvr-pseudo-interleave-specjbb.toml",
                "validation/zen3-stream-imbalance.toml",
                "validation/amd-numab-disable.toml",
            ],
        },
    },
    Target {
        name: "daemon-config",
        kind: Kind::Text {
            parse: daemon_config,
            seeds: &["dist/homenode.toml"],
        },
    },
    Target {
        name: "journal",
        kind: Kind::Made {
            parse: journal,
            seeds: journal_seeds,
        },
    },
    Target {
        name: "sysfs-topology",
        kind: Kind::Tree {
            fixture: "crates/topo/tests/fixtures/kunpeng-4n",
            read: read_topology,
        },
    },
    Target {
        name: "proc-scan",
        kind: Kind::Tree {
            fixture: "crates/linux/tests/fixtures/multinode-4n",
            read: scan_proc,
        },
    },
];

/// Runs the text target `name` on `data` (for coverage-guided fuzzers such as cargo-fuzz,
/// which bring their own inputs); `false` when `name` is not a text target.
pub fn run_text(name: &str, data: &[u8]) -> bool {
    match find(name).map(|t| &t.kind) {
        Some(Kind::Text { parse, .. } | Kind::Made { parse, .. }) => {
            parse(data);
            true
        }
        _ => false,
    }
}

/// The target called `name`.
pub fn find(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
