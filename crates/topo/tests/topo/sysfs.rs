//! The host reader on captured and synthetic sysfs trees (`tests/fixtures/*`), on broken copies
//! of them, and on this machine; fake NUMA on what it reads.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use topo::{
    CpuSet, HostTopology, TopoError, Topology, fake_numa, read_host, read_host_detailed,
    resolve_machine, sched_domains,
};

const FIXTURES: &[&str] = &[
    "real-2cpu",
    "xeon-2s",
    "kunpeng-4n",
    "nonuma-4cpu",
    "snc2-cxl",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn detailed(name: &str) -> HostTopology {
    let h = read_host_detailed(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    check(&h.topology);
    assert_eq!(h.os_cpu.len(), h.topology.nr_cpus());
    assert_eq!(h.os_node.len(), h.topology.nr_nodes());
    h
}

/// The invariants every consumer of a [`Topology`] relies on, and that the scheduling domains
/// built from it nest and partition.
fn check(t: &Topology) {
    let n = t.nr_nodes();
    assert!(n >= 1 && t.nr_cpus() >= 1);
    let mut covered = CpuSet::new();
    for (k, node) in t.nodes.iter().enumerate() {
        assert_eq!(node.id, k);
        assert!(!node.cpus.is_empty(), "node {k} has no CPUs");
        assert!(!node.cpus.intersects(&covered), "node {k} overlaps");
        covered = covered.union(&node.cpus);
        assert!(node.bandwidth_gbps.is_finite() && node.bandwidth_gbps > 0.0);
        assert!(node.remote_bandwidth_gbps.is_finite() && node.remote_bandwidth_gbps > 0.0);
    }
    assert_eq!(covered, t.all_cpus());
    for (i, cpu) in t.cpus.iter().enumerate() {
        assert_eq!(cpu.id, i);
        assert!(t.node_cpus(cpu.node).contains(i));
        assert!(t.core_cpus(i).is_subset(&t.llc_cpus(i)));
        assert!(t.llc_cpus(i).is_subset(t.node_cpus(cpu.node)));
    }
    assert_eq!(t.distance.len(), n);
    assert_eq!(t.latency_ns.len(), n);
    for a in 0..n {
        assert_eq!(t.distance[a].len(), n);
        assert_eq!(t.distance(a, a), 10);
        for b in 0..n {
            assert_eq!(t.distance(a, b), t.distance(b, a));
            assert!(a == b || (11..=254).contains(&t.distance(a, b)));
            let l = t.latency_ns(a, b);
            assert!(l.is_finite() && l > 0.0);
        }
    }
    let (c, m) = (&t.cpu_model, &t.memory);
    assert!(c.freq_mhz.is_finite() && c.freq_mhz > 0.0 && c.mlp >= 1.0);
    assert!(c.llc_bytes > 0 && c.line_bytes.is_power_of_two());
    assert!(m.loaded_latency_ratio >= 1.0 && m.page_bytes.is_power_of_two());
    assert!(m.line_transfer_local_ns > 0.0 && m.line_transfer_remote_ns > 0.0);
    assert!(m.fault_overhead_ns.is_finite() && m.fault_overhead_ns >= 0.0);
    assert!(!t.description.contains('\n'));
    let levels = sched_domains(t);
    for l in &levels {
        for cpu in 0..t.nr_cpus() {
            let mut union = CpuSet::new();
            for g in l.groups(cpu) {
                assert!(g.is_subset(l.span(cpu)) && !g.intersects(&union));
                union = union.union(g);
            }
            assert_eq!(&union, l.span(cpu));
        }
    }
    for pair in levels.windows(2) {
        for cpu in 0..t.nr_cpus() {
            assert!(pair[0].span(cpu).is_subset(pair[1].span(cpu)));
        }
    }
}

fn lists(t: &Topology) -> Vec<String> {
    t.nodes.iter().map(|n| n.cpus.to_list_string()).collect()
}

fn level_names(t: &Topology) -> Vec<String> {
    sched_domains(t).into_iter().map(|l| l.name).collect()
}

const KIB: u64 = 1024;

#[test]
fn real_two_cpu_capture() {
    let h = detailed("real-2cpu");
    let t = &h.topology;
    assert_eq!(t.name, "host");
    assert_eq!((t.nr_nodes(), t.nr_cpus()), (1, 2));
    assert_eq!(t.distance, vec![vec![10]]);
    assert_eq!(t.nodes[0].mem_bytes, 24_684_084 * KIB);
    assert_eq!(t.core_cpus(1).to_list_string(), "1");
    assert_eq!(t.llc_cpus(0).to_list_string(), "0-1");
    assert_eq!(t.cpu_model.llc_bytes, 32 << 20);
    assert_eq!(t.cpu_model.line_bytes, 64);
    assert_eq!(t.cpu_model.llc_ways, Some(16));
    assert!(
        t.description.contains("32768 KiB, 16-way"),
        "{}",
        t.description
    );
    // No cpufreq in this VM: the clock comes from /proc/cpuinfo.
    assert_eq!(t.cpu_model.freq_mhz, 2596.144);
    assert!(h.is_identity_numbered() && h.warnings.is_empty(), "{h:?}");
    assert!(
        t.description.contains("latencies and bandwidths assumed")
            && t.description.contains("/proc/cpuinfo"),
        "{}",
        t.description
    );
    assert_eq!(t.latency_ns, vec![vec![89.0]]);
    assert_eq!(level_names(t), ["MC"]);
}

#[test]
fn two_socket_with_interleaved_numbering() {
    let h = detailed("xeon-2s");
    let t = &h.topology;
    assert_eq!(lists(t), ["0-1,4-5", "2-3,6-7"]);
    assert_eq!(t.distance, vec![vec![10, 21], vec![21, 10]]);
    assert!((t.latency_ns[0][1] - 89.0 * 2.1).abs() < 1e-9);
    assert_eq!(t.nodes[0].mem_bytes, 33_554_432 * KIB);
    assert_eq!(t.nodes[1].mem_bytes, 33_030_144 * KIB);
    assert_eq!(t.core_cpus(0).to_list_string(), "0,4");
    assert_eq!(t.core_cpus(7).to_list_string(), "3,7");
    assert_eq!(t.llc_cpus(6), *t.node_cpus(1));
    assert_ne!(t.cpus[0].llc, t.cpus[2].llc);
    assert_eq!(t.cpu_model.llc_bytes, 55_296 * KIB);
    // cpufreq wins over /proc/cpuinfo's 2400.
    assert_eq!(t.cpu_model.freq_mhz, 3500.0);
    // Two cores per node at the base's per-core bandwidth (xeon2s: 176 GB/s over 36 cores).
    assert!((t.nodes[1].bandwidth_gbps - 176.0 / 36.0 * 2.0).abs() < 1e-9);
    assert!((t.nodes[1].remote_bandwidth_gbps - 56.0 / 36.0 * 2.0).abs() < 1e-9);
    // The xeon2s line-transfer ratio applied to this host's nearest remote latency.
    assert!((t.memory.line_transfer_remote_ns - 120.0 / 143.0 * 186.9).abs() < 1e-6);
    assert!((t.memory.fault_overhead_ns - 1042.0 * 2400.0 / 3500.0).abs() < 1e-6);
    assert!(h.is_identity_numbered() && h.warnings.is_empty(), "{h:?}");
    assert!(t.description.contains("2 packages"), "{}", t.description);
    assert_eq!(level_names(t), ["SMT", "MC", "NUMA-21"]);
}

#[test]
fn four_node_kunpeng_like_without_node_online_file() {
    let h = detailed("kunpeng-4n");
    let t = &h.topology;
    assert_eq!(lists(t), ["0-3", "4-7", "8-11", "12-15"]);
    assert_eq!(
        t.distance,
        vec![
            vec![10, 12, 20, 22],
            vec![12, 10, 22, 24],
            vec![20, 22, 10, 12],
            vec![22, 24, 12, 10],
        ]
    );
    assert!((t.latency_ns[1][3] - 89.0 * 2.4).abs() < 1e-9);
    assert_eq!(t.nodes[3].mem_bytes, 66_846_720 * KIB);
    assert_eq!(t.llc_cpus(9), *t.node_cpus(2));
    assert_eq!(t.core_cpus(9).to_list_string(), "9");
    assert_eq!(t.cpu_model.llc_bytes, 24 << 20);
    // ARM /proc/cpuinfo has no `cpu MHz` and there is no cpufreq: the synthetic default.
    assert_eq!(t.cpu_model.freq_mhz, 2400.0);
    assert!(
        t.description.contains("clock 2400 MHz"),
        "{}",
        t.description
    );
    assert_eq!(
        level_names(t),
        ["MC", "NUMA-12", "NUMA-20", "NUMA-22", "NUMA-24"]
    );
}

#[test]
fn kernel_without_numa_is_one_node() {
    let h = detailed("nonuma-4cpu");
    let t = &h.topology;
    assert_eq!((t.nr_nodes(), t.nr_cpus()), (1, 4));
    assert_eq!(t.nodes[0].mem_bytes, 8_052_268 * KIB);
    assert_eq!(t.core_cpus(1).to_list_string(), "0-1");
    assert_eq!(t.llc_cpus(3).to_list_string(), "0-3");
    // The largest `cpu MHz` line.
    assert_eq!(t.cpu_model.freq_mhz, 3400.0);
    assert!(t.description.contains("no NUMA"), "{}", t.description);
    assert_eq!(level_names(t), ["SMT", "MC"]);
}

#[test]
fn memory_only_node_offline_cpu_and_shared_llc() {
    let h = detailed("snc2-cxl");
    let t = &h.topology;
    assert_eq!(h.os_cpu, vec![0, 2, 3, 4, 5, 6, 7]);
    assert_eq!(h.os_node, vec![0, 1]);
    assert!(!h.is_identity_numbered());
    assert_eq!(lists(t), ["0-2", "3-6"]);
    assert_eq!(t.distance, vec![vec![10, 12], vec![12, 10]]);
    assert_eq!(t.total_mem_bytes(), 32 << 30);
    // One L3 spans both SNC nodes: split per node.
    assert_eq!(t.llc_cpus(0), *t.node_cpus(0));
    assert_eq!(t.llc_cpus(4), *t.node_cpus(1));
    assert_eq!(t.cpu_model.freq_mhz, 2000.0);
    let w = h.warnings.join(" | ");
    assert!(w.contains("node 2 is memory-only (131072 MiB"), "{w}");
    assert!(w.contains("split per node"), "{w}");
    assert!(
        t.description.contains("kernel CPUs 0,2-7 renumbered 0-6"),
        "{}",
        t.description
    );
    // read_host gives the same machine without the extras.
    assert_eq!(read_host(&fixture("snc2-cxl")).unwrap(), *t);
}

#[test]
fn this_host() {
    let online = match std::fs::read_to_string("/sys/devices/system/cpu/online") {
        Ok(s) => CpuSet::parse_list(&s).expect("cpu/online"),
        Err(_) => return, // not Linux, or no sysfs: nothing to compare with
    };
    let h = read_host_detailed(Path::new("/")).unwrap_or_else(|e| panic!("{e}"));
    let t = &h.topology;
    check(t);
    assert_eq!(t.nr_cpus(), online.count());
    assert_eq!(h.os_cpu, online.iter().collect::<Vec<_>>());
    assert!(t.total_mem_bytes() > 0);
    assert_eq!(t.name, "host");
    assert_eq!(resolve_machine("host").unwrap(), *t);
    // fake NUMA always applies to a one-node host with 2+ CPUs.
    if t.nr_nodes() == 1 && t.nr_cpus() >= 2 {
        let f = fake_numa(t, 2).unwrap();
        check(&f);
        assert_eq!(f.nr_nodes(), 2);
    }
}

#[test]
fn resolve_machine_reads_host_roots() {
    let root = fixture("xeon-2s");
    let t = resolve_machine(&format!("host:{}", root.display())).unwrap();
    assert_eq!(t, read_host(&root).unwrap());
    let e = resolve_machine("host:").unwrap_err().to_string();
    assert!(e.contains("`host:`") && e.contains("host:ROOT"), "{e}");
    let e = resolve_machine("hosts").unwrap_err().to_string();
    assert!(e.contains("`host` or `host:ROOT`"), "{e}");
    let e = resolve_machine("host:/nonexistent-root")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "/nonexistent-root/sys/devices/system/cpu/online: is missing"
    );
}

#[test]
fn fake_numa_on_fixtures() {
    let real = read_host(&fixture("real-2cpu")).unwrap();
    let f = fake_numa(&real, 2).unwrap();
    check(&f);
    assert_eq!(lists(&f), ["0", "1"]);
    assert_eq!(f.distance, vec![vec![10, 20], vec![20, 10]]);
    assert_eq!(f.total_mem_bytes(), real.total_mem_bytes());
    assert_eq!(f.cpu_model.llc_bytes, 16 << 20);
    assert_eq!(f.name, "host-fake-numa-2");

    let smt = read_host(&fixture("nonuma-4cpu")).unwrap();
    let f = fake_numa(&smt, 3).unwrap();
    check(&f);
    assert_eq!(lists(&f), ["0-1", "2", "3"]);
    assert_eq!(f.core_cpus(2).to_list_string(), "2");

    let e = fake_numa(&real, 3).unwrap_err();
    assert!(matches!(e, TopoError::FakeNuma { nodes: 3, .. }), "{e}");
    let e = fake_numa(&real, 0).unwrap_err().to_string();
    assert!(e.contains("at least 1"), "{e}");
    let two = read_host(&fixture("xeon-2s")).unwrap();
    let e = fake_numa(&two, 4).unwrap_err().to_string();
    assert!(e.contains("already has 2 nodes"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Broken trees.

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A writable copy of a fixture under the system temp directory, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn copy_of(name: &str) -> Tree {
        let tree = Tree::copy_of_nothing();
        copy_dir(&fixture(name), &tree.0);
        tree
    }

    /// A cheap copy of a fixture in which only the files `rels` are real (writable) copies;
    /// every other entry along the way is a symlink into the fixture. File creation is slow on
    /// some filesystems, and the property test makes many trees.
    fn overlay_of(name: &str, rels: &[&str]) -> Tree {
        let tree = Tree::copy_of_nothing();
        let wanted: Vec<Vec<&str>> = rels.iter().map(|r| r.split('/').collect()).collect();
        overlay(&fixture(name), &tree.0, &wanted);
        tree
    }

    fn copy_of_nothing() -> Tree {
        let dir = std::env::temp_dir().join(format!(
            "homenode-topo-sysfs-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Tree(dir)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    fn write(&self, rel: &str, text: impl AsRef<[u8]>) -> &Self {
        std::fs::write(self.path(rel), text).unwrap();
        self
    }

    fn remove(&self, rel: &str) -> &Self {
        let p = self.path(rel);
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
        self
    }

    /// The error of reading this tree; checks it is one line naming `rel`.
    fn error(&self, rel: &str) -> String {
        let e = read_host(&self.0).expect_err("broken tree must be refused");
        assert!(matches!(e, TopoError::Sysfs { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "not one line: {msg}");
        let want = format!("{}: ", self.path(rel).display());
        assert!(msg.starts_with(&want), "expected `{want}...`, got: {msg}");
        msg
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::write(&target, std::fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}

/// Mirrors `from` into `to`: entries on the way to a `wanted` path are made (directories) or
/// copied (files), every other entry is a symlink to the original.
fn overlay(from: &Path, to: &Path, wanted: &[Vec<&str>]) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let name = name.to_str().unwrap();
        let target = to.join(name);
        let below: Vec<Vec<&str>> = wanted
            .iter()
            .filter(|w| w.first() == Some(&name))
            .map(|w| w[1..].to_vec())
            .collect();
        if below.is_empty() {
            std::os::unix::fs::symlink(entry.path(), &target).unwrap();
        } else if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir(&target).unwrap();
            overlay(&entry.path(), &target, &below);
        } else {
            std::fs::write(&target, std::fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}

fn files(dir: &Path, base: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, base, out);
        } else {
            out.push(p.strip_prefix(base).unwrap().display().to_string());
        }
    }
}

const NODE: &str = "sys/devices/system/node";
const CPU: &str = "sys/devices/system/cpu";

#[test]
fn bad_cpulist() {
    let t = Tree::copy_of("xeon-2s");
    let rel = format!("{NODE}/node1/cpulist");
    let e = t.write(&rel, "2-3,6-x\n").error(&rel);
    assert!(e.contains("`x`"), "{e}");
    let e = t.write(&rel, "7-2\n").error(&rel);
    assert!(e.contains("backwards"), "{e}");
}

#[test]
fn distance_row_of_wrong_length() {
    let t = Tree::copy_of("xeon-2s");
    let rel = format!("{NODE}/node1/distance");
    let e = t.write(&rel, "21 10 30\n").error(&rel);
    assert!(e.contains("has 3 entries, expected 2"), "{e}");
    let e = t.write(&rel, "21 ten\n").error(&rel);
    assert!(e.contains("`ten` is not a distance"), "{e}");
}

/// A FIFO or a link to `/dev/zero` or `/dev/urandom` in place of a sysfs file is refused
/// with one line naming it: without the check the read blocks forever or grows without bound.
#[test]
fn fifos_and_devices_in_place_of_sysfs_files() {
    let t = Tree::copy_of("xeon-2s");
    for rel in [
        format!("{NODE}/node1/distance"),
        format!("{NODE}/node0/cpulist"),
        format!("{NODE}/node0/meminfo"),
    ] {
        t.remove(&rel);
        let status = std::process::Command::new("mkfifo")
            .arg(t.path(&rel))
            .status()
            .unwrap();
        assert!(status.success());
        let e = t.error(&rel);
        assert!(e.contains("not a regular file (a FIFO)"), "{e}");
        for dev in ["/dev/zero", "/dev/urandom"] {
            t.remove(&rel);
            std::os::unix::fs::symlink(dev, t.path(&rel)).unwrap();
            let e = t.error(&rel);
            assert!(e.contains("a character device"), "{e}");
        }
        t.remove(&rel);
        std::fs::copy(fixture("xeon-2s").join(&rel), t.path(&rel)).unwrap();
    }
}

#[test]
fn non_numeric_meminfo() {
    let t = Tree::copy_of("xeon-2s");
    let rel = format!("{NODE}/node0/meminfo");
    let e = t
        .write(&rel, "Node 0 MemTotal:       lots kB\n")
        .error(&rel);
    assert!(e.contains("`lots`"), "{e}");
    let e = t.write(&rel, "Node 1 MemTotal: 5 kB\n").error(&rel);
    assert!(e.contains("expected node 0"), "{e}");
    let e = t.write(&rel, "Node 0 MemFree: 5 kB\n").error(&rel);
    assert!(e.contains("no MemTotal"), "{e}");
    let e = t.remove(&rel).error(&rel);
    assert!(e.ends_with("is missing"), "{e}");
}

#[test]
fn llc_ways_read_checked_and_zero_taken_as_fully_associative() {
    let rel = format!("{CPU}/cpu0/cache/index3/ways_of_associativity");
    let t = Tree::copy_of("real-2cpu");
    let e = t.write(&rel, "sixteen\n").error(&rel);
    assert!(e.contains("sixteen"), "{e}");
    // Fully associative caches report 0; a cache without the file gives no ways either.
    for cpu in ["cpu0", "cpu1"] {
        t.write(
            &format!("{CPU}/{cpu}/cache/index3/ways_of_associativity"),
            "0\n",
        );
    }
    let host = read_host(&t.0).expect("read");
    assert_eq!(host.cpu_model.llc_ways, None);
    for cpu in ["cpu0", "cpu1"] {
        t.remove(&format!("{CPU}/{cpu}/cache/index3/ways_of_associativity"));
    }
    let host = read_host(&t.0).expect("read");
    assert_eq!(host.cpu_model.llc_ways, None);
}

#[test]
fn missing_cpu_online_file() {
    let t = Tree::copy_of("real-2cpu");
    let rel = format!("{CPU}/online");
    let e = t.remove(&rel).error(&rel);
    assert!(e.ends_with(": is missing"), "{e}");
    let e = t.write(&rel, "\n").error(&rel);
    assert!(e.contains("no online CPU"), "{e}");
    let e = t.write(&rel, "0-100000\n").error(&rel);
    assert!(e.contains("at most 4096"), "{e}");
}

#[test]
fn asymmetric_slit() {
    let t = Tree::copy_of("kunpeng-4n");
    let rel = format!("{NODE}/node1/distance");
    let e = t.write(&rel, "12 10 22 20\n").error(&rel);
    assert!(e.contains("symmetric") && e.contains("node 3"), "{e}");
    let e = t.write(&rel, "12 11 22 24\n").error(&rel);
    assert!(e.contains("to itself is 11"), "{e}");
    let e = t.write(&rel, "255 10 22 24\n").error(&rel);
    assert!(e.contains("distance to node 0 is 255"), "{e}");
}

#[test]
fn other_broken_files_name_the_file() {
    let t = Tree::copy_of("xeon-2s");
    // A CPU claimed by two nodes; an online CPU in none.
    let rel = format!("{NODE}/node1/cpulist");
    let e = t.write(&rel, "2-4,6-7\n").error(&rel);
    assert!(e.contains("CPU 4 is also in node 0"), "{e}");
    let e = t.write(&rel, "2-3,6\n").error(NODE);
    assert!(e.contains("online CPU 7 is in no node"), "{e}");
    t.write(&rel, "2-3,6-7\n");

    let rel = format!("{CPU}/cpu5/cache/index3/size");
    let e = t.write(&rel, "big\n").error(&rel);
    assert!(e.contains("`big` is not a size"), "{e}");
    t.write(&rel, "55296K\n");

    let rel = format!("{CPU}/cpu2/cache/index3/level");
    let e = t.write(&rel, "three\n").error(&rel);
    assert!(e.contains("`three` is not a number"), "{e}");
    t.write(&rel, "3\n");

    let rel = format!("{CPU}/cpu0/cache/index3/coherency_line_size");
    let e = t.write(&rel, "48\n").error(&rel);
    assert!(e.contains("power of two"), "{e}");
    t.write(&rel, "64\n");

    let rel = format!("{CPU}/cpu3/topology/thread_siblings_list");
    let e = t.write(&rel, [0xff, 0xfe]).error(&rel);
    assert!(e.contains("not UTF-8"), "{e}");
    t.write(&rel, "3,7\n");

    let rel = format!("{CPU}/cpu0/cpufreq/cpuinfo_max_freq");
    let e = t.write(&rel, "0\n").error(&rel);
    assert!(e.contains("0 kHz"), "{e}");
    t.remove(&rel);
    // Without cpufreq, /proc/cpuinfo is read.
    assert_eq!(read_host(&t.0).unwrap().cpu_model.freq_mhz, 2400.0);
    let e = t
        .write("proc/cpuinfo", "cpu MHz\t\t: fast\n")
        .error("proc/cpuinfo");
    assert!(e.contains("`fast`"), "{e}");

    let rel = format!("{NODE}/online");
    let e = t.write(&rel, "\n").error(&rel);
    assert!(e.contains("no online node"), "{e}");
    t.write(&rel, "0-1\n");

    // A directory where a file should be.
    let rel = format!("{NODE}/node0/distance");
    t.remove(&rel);
    std::fs::create_dir(t.path(&rel)).unwrap();
    let e = t.error(&rel);
    assert!(e.contains("not a regular file (a directory)"), "{e}");
}

#[test]
fn optional_files_fall_back() {
    let t = Tree::copy_of("xeon-2s");
    // Without sibling lists, package + core_id give the cores.
    for c in 0..8 {
        t.remove(&format!("{CPU}/cpu{c}/topology/thread_siblings_list"));
    }
    let top = read_host(&t.0).unwrap();
    check(&top);
    assert_eq!(top.core_cpus(1).to_list_string(), "1,5");
    // Without any topology or cache directory: one core per CPU, one LLC per node, the
    // synthetic LLC size; the node online file is optional too.
    for c in 0..8 {
        t.remove(&format!("{CPU}/cpu{c}/topology"));
        t.remove(&format!("{CPU}/cpu{c}/cache"));
    }
    t.remove(&format!("{NODE}/online"));
    let h = read_host_detailed(&t.0).unwrap();
    check(&h.topology);
    assert_eq!(h.topology.llc_cpus(0).to_list_string(), "0-1,4-5");
    assert_eq!(h.topology.core_cpus(0).to_list_string(), "0");
    // xeon2s: 54 MiB over 36 cores = 1.5 MiB per core, 4 cores per LLC here.
    assert_eq!(h.topology.cpu_model.llc_bytes, 6 << 20);
    assert!(h.topology.description.contains("LLC 6144 KiB"));
    assert!(h.warnings.iter().any(|w| w.contains("one LLC per node")));
    // A one-node tree may omit its distance file.
    let t = Tree::copy_of("real-2cpu");
    t.remove(&format!("{NODE}/node0/distance"));
    assert_eq!(read_host(&t.0).unwrap().distance, vec![vec![10]]);
    // A node directory without nodes reads as a kernel without NUMA.
    let t = Tree::copy_of("real-2cpu");
    t.remove(&format!("{NODE}/node0"))
        .remove(&format!("{NODE}/online"));
    let h = read_host_detailed(&t.0).unwrap();
    assert_eq!(h.topology.nr_nodes(), 1);
    assert!(
        h.warnings[0].contains("no node directories"),
        "{:?}",
        h.warnings
    );
    // ... and then /proc/meminfo is mandatory.
    let e = t.remove("proc/meminfo").error("proc/meminfo");
    assert!(e.ends_with("is missing"), "{e}");
}

#[test]
fn memoryless_node_is_kept_with_a_warning() {
    let t = Tree::copy_of("xeon-2s");
    t.write(
        &format!("{NODE}/node1/meminfo"),
        "Node 1 MemTotal:       0 kB\n",
    );
    let h = read_host_detailed(&t.0).unwrap();
    assert_eq!(h.topology.nodes[1].mem_bytes, 0);
    assert!(
        h.warnings
            .iter()
            .any(|w| w.contains("node 1 has CPUs but no memory")),
        "{:?}",
        h.warnings
    );
}

// ---------------------------------------------------------------------------------------------
// Random damage never panics.

#[derive(Debug, Clone)]
enum Damage {
    Delete,
    Truncate(usize),
    Bytes(Vec<u8>),
    /// Replace the byte at (index modulo length) with one of a few troublesome characters.
    Poke(usize, u8),
    Append(String),
    MakeDir,
}

fn damage() -> impl Strategy<Value = Damage> {
    let poke = prop::sample::select(b"x-, \n09:\xff".to_vec());
    prop_oneof![
        2 => Just(Damage::Delete),
        2 => (0usize..12).prop_map(Damage::Truncate),
        2 => prop::collection::vec(any::<u8>(), 0..24).prop_map(Damage::Bytes),
        4 => (any::<usize>(), poke).prop_map(|(i, b)| Damage::Poke(i, b)),
        2 => prop_oneof![
            Just(",4095".to_string()),
            Just(" 99999999999999999999".to_string()),
            Just("-1".to_string()),
            Just("\nNode 0 MemTotal: 1 kB".to_string()),
            "[0-9a-z ,\\-]{0,8}",
        ]
        .prop_map(Damage::Append),
        1 => Just(Damage::MakeDir),
    ]
}

fn apply(tree: &Tree, rel: &str, d: &Damage) {
    let path = tree.path(rel);
    if !path.is_file() {
        return; // already deleted or turned into a directory by an earlier damage
    }
    let old = std::fs::read(&path).unwrap();
    match d {
        Damage::Delete => {
            tree.remove(rel);
        }
        Damage::Truncate(n) => {
            tree.write(rel, &old[..(*n).min(old.len())]);
        }
        Damage::Bytes(b) => {
            tree.write(rel, b);
        }
        Damage::Poke(i, b) => {
            let mut new = old;
            if !new.is_empty() {
                let at = i % new.len();
                new[at] = *b;
            }
            tree.write(rel, new);
        }
        Damage::Append(s) => {
            let mut new = old;
            while new.last() == Some(&b'\n') {
                new.pop();
            }
            new.extend_from_slice(s.as_bytes());
            tree.write(rel, new);
        }
        Damage::MakeDir => {
            tree.remove(rel);
            std::fs::create_dir(&path).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn damaged_trees_never_panic(
        which in 0..FIXTURES.len(),
        hits in prop::collection::vec((any::<prop::sample::Index>(), damage()), 1..4),
    ) {
        let name = FIXTURES[which];
        let mut all = Vec::new();
        files(&fixture(name), &fixture(name), &mut all);
        let rels: Vec<&str> = hits.iter().map(|(idx, _)| all[idx.index(all.len())].as_str()).collect();
        let tree = Tree::overlay_of(name, &rels);
        for (rel, (_, d)) in rels.iter().zip(&hits) {
            apply(&tree, rel, d);
        }
        match read_host_detailed(&tree.0) {
            Ok(h) => {
                check(&h.topology);
                prop_assert_eq!(h.os_cpu.len(), h.topology.nr_cpus());
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(!msg.contains('\n'), "not one line: {}", msg);
                let root = tree.0.display().to_string();
                prop_assert!(msg.starts_with(&root), "error must name a file: {}", msg);
            }
        }
    }
}
