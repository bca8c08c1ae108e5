//! The readers the benchmark samples with (`stat`, `numa_maps`, `meminfo`, the in-place
//! [`StatReader`]) on captured and malformed text and on hand-made trees, and the CPU to node
//! map read from hand-made sysfs trees: holes in the kernel's numbering, memory-only nodes, no
//! NUMA at all, pseudo-nodes.

use std::path::{Path, PathBuf};

use linux::nodemap::{CpuNodeMap, host_cpu_nodes};
use linux::procfs::meminfo::parse_mem_available;
use linux::procfs::numa_maps::{self, MappingKind};
use linux::procfs::stat::{self, StatReader};
use topo::CpuSet;

/// A real line of /proc/PID/stat (captured on Linux 6.x), with the command name replaced.
fn stat_line(pid: u32, comm: &str, utime: u64, stime: u64, cpu: usize) -> String {
    format!(
        "{pid} ({comm}) R 12042 12042 11217 0 -1 4194304 99 0 0 0 {utime} {stime} 0 0 20 0 1 0 \
         322734 3133440 360 18446744073709551615 94760179212288 94760179232169 140736374753984 \
         0 0 0 0 0 0 0 0 0 17 {cpu} 0 0 0 0 0 94760179248176 94760179249792 94760243769344 \
         140736374758076 140736374758096 140736374758096 140736374759403 0\n"
    )
}

#[test]
fn stat_fields_are_read_by_position() {
    let s = stat::parse(stat_line(12051, "cat", 731, 12, 5).as_bytes()).expect("parses");
    assert_eq!(s.pid, 12051);
    assert_eq!(s.comm, "cat");
    assert_eq!(s.state, 'R');
    assert_eq!(s.utime, 731);
    assert_eq!(s.stime, 12);
    assert_eq!(s.num_threads, 1);
    assert_eq!(s.processor, 5);
}

#[test]
fn stat_command_names_with_spaces_and_parentheses() {
    for comm in [
        "a b",
        "x) R 1 2 (y",
        "((",
        "))",
        ") ) )",
        "",
        "tab\there",
        "名前",
    ] {
        let s = stat::parse(stat_line(7, comm, 40, 3, 2).as_bytes())
            .unwrap_or_else(|e| panic!("`{comm}`: {e}"));
        assert_eq!(s.comm, comm);
        assert_eq!((s.utime, s.stime, s.processor), (40, 3, 2), "`{comm}`");
    }
}

#[test]
fn stat_malformed_input_is_an_error_not_a_panic() {
    let good = stat_line(7, "w", 40, 3, 2);
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "no `(`"),
        ("7 w R 1 2".into(), "no `(`"),
        ("7 (w R 1 2".into(), "no `)`"),
        (")7 (w".into(), "no `)`"),
        ("x (w) R 1".into(), "pid `x`"),
        // Fields 3 to 13 present: the first missing one is utime.
        ("7 (w) R 1 2 3 4 5 6 7 8 9 10".into(), "field 14 missing"),
        ("7 (w)".into(), "field 3 missing"),
        (good.replace(" R ", " RR "), "state"),
        (good.replace(" 40 3 ", " 4x0 3 "), "field 14 (utime)"),
        (good.replace(" 40 3 ", " 40 -3 "), "field 15 (stime)"),
        (good.replace(" 17 2 ", " 17 cpu2 "), "field 39 (processor)"),
        (
            good.split(" 17 2 ").next().unwrap_or("").to_string(),
            "field 39 missing",
        ),
    ];
    for (text, want) in cases {
        let e = stat::parse(text.as_bytes()).expect_err(&text);
        assert!(e.contains(want), "{text:?}: `{e}` lacks `{want}`");
    }
}

const NUMA_MAPS: &str = "\
562989074000 default file=/usr/bin/cat mapped=2 N0=2 kernelpagesize_kB=4
5629c3c8a000 default heap anon=4 dirty=4 active=0 N0=3 N1=1 kernelpagesize_kB=4
7f0000000000 default anon=5120 dirty=5120 active=0 N0=1024 N1=4096 kernelpagesize_kB=4
7f1000000000 bind:1 file=/dev/hugepages/x huge dirty=3 N1=3 kernelpagesize_kB=2048
7f2000000000 prefer:0 file=/anon_hugepage\\040(deleted) huge anon=2 dirty=2 N0=2 kernelpagesize_kB=1048576
7ff323f57000 interleave:0-1 file=/usr/lib/locale/C.utf8/LC_CTYPE mapped=32 mapmax=6 N0=16 N1=16 kernelpagesize_kB=4
7ffd00000000 default stack anon=8 dirty=8 N1=8 kernelpagesize_kB=4

7ffe00000000 default
";

#[test]
fn numa_maps_per_node_bytes_count_only_own_memory_with_page_sizes() {
    let parsed = numa_maps::parse(NUMA_MAPS).expect("parses");
    let maps = &parsed.mappings;
    assert_eq!(maps.len(), 8);
    assert_eq!(maps[0].kind, MappingKind::File("/usr/bin/cat".into()));
    assert_eq!(maps[1].kind, MappingKind::Heap);
    assert_eq!(maps[2].kind, MappingKind::Anon);
    assert!(maps[3].huge && maps[3].page_bytes == 2 << 20);
    assert_eq!(maps[3].policy.to_string(), "bind:1");
    assert_eq!(maps[6].kind, MappingKind::Stack);
    assert!(maps[7].node_pages.is_empty());
    let b = parsed.private_node_bytes();
    let k = 4096u64;
    // heap + anon + 1 GiB huge pages on node 0; heap + anon + 2 MiB huge pages + stack on 1.
    assert_eq!(b[0], 3 * k + 1024 * k + 2 * (1 << 30));
    assert_eq!(b[1], k + 4096 * k + 3 * (2 << 20) + 8 * k);
    assert_eq!(b.len(), 2);
}

#[test]
fn numa_maps_without_page_size_count_4k_pages_and_unknown_keys_are_skipped() {
    let maps = numa_maps::parse("1000 default anon=2 N2=2 Nfuture=x swapcache=1 new_key\n")
        .expect("parses");
    assert_eq!(maps.mappings[0].page_bytes, 4096);
    assert_eq!(maps.private_node_bytes(), vec![0, 0, 8192]);
}

#[test]
fn numa_maps_malformed_lines_are_named() {
    let cases = [
        ("zz default N0=1\n", "line 1: address `zz`"),
        ("1000 default N0=1\n1000\n", "line 2: no memory policy"),
        ("1000 default N0=x\n", "line 1: `N0=x`"),
        ("1000 default N0=-1\n", "line 1: `N0=-1`"),
        ("1000 default N99999999=1\n", "line 1: node number"),
        (
            "1000 default N0=1 kernelpagesize_kB=big\n",
            "kernelpagesize_kB `big`",
        ),
        (
            "1000 default N0=1 kernelpagesize_kB=0\n",
            "kernelpagesize_kB is 0",
        ),
    ];
    for (text, want) in cases {
        let e = numa_maps::parse(text).expect_err(text);
        assert!(e.contains(want), "{text:?}: `{e}` lacks `{want}`");
    }
}

#[test]
fn meminfo_available_then_free() {
    let t = "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\n";
    assert_eq!(parse_mem_available(t), Ok(20_000_000 * 1024));
    assert_eq!(parse_mem_available("MemFree: 7 kB\n"), Ok(7 * 1024));
    assert!(parse_mem_available("MemAvailable: lots kB\n").is_err());
    assert!(parse_mem_available("nothing\n").is_err());
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

#[test]
fn readers_take_a_root_and_a_vanished_process_is_gone() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    write(root, "proc/42/stat", &stat_line(42, "job (1)", 500, 7, 3));
    write(root, "proc/42/numa_maps", NUMA_MAPS);
    write(root, "proc/43/stat", "43 (broken");
    write(
        root,
        "proc/meminfo",
        "MemTotal: 8388608 kB\nMemAvailable: 8000000 kB\n",
    );
    write(root, "proc/sys/kernel/osrelease", "6.18.0\n");
    let s = stat::read(root, 42).expect("reads").expect_alive("42");
    assert_eq!((s.comm.as_str(), s.utime, s.processor), ("job (1)", 500, 3));
    assert!(stat::read(root, 44).expect("gone is fine").is_gone());
    let e = stat::read(root, 43).expect_err("malformed").to_string();
    assert!(e.contains("43/stat") && e.contains("no `)`"), "{e}");
    let b = numa_maps::read(root, 42)
        .expect("reads")
        .expect_alive("42")
        .expect("present")
        .private_node_bytes();
    assert_eq!(b.len(), 2);
    assert!(numa_maps::read(root, 44).expect("gone is fine").is_gone());
    write(root, "proc/45/stat", &stat_line(45, "w", 1, 1, 0));
    write(root, "proc/45/numa_maps", "1000 default N0=oops\n");
    let e = numa_maps::read(root, 45)
        .expect_err("malformed")
        .to_string();
    assert!(e.contains("45/numa_maps") && e.contains("line 1"), "{e}");
    assert_eq!(
        linux::procfs::meminfo::read_mem_available(root).expect("meminfo"),
        8_000_000 * 1024
    );
    assert_eq!(
        linux::procfs::read_sysctl(root, "kernel/osrelease").as_deref(),
        Some("6.18.0")
    );
    assert_eq!(
        linux::procfs::read_sysctl(root, "kernel/numa_balancing"),
        None
    );
    // Missing (a kernel without the option), off, on, memory tiering only, both, malformed.
    assert!(!linux::procfs::numa_balancing_on(root));
    for (text, on) in [
        ("0\n", false),
        ("1\n", true),
        ("2\n", false),
        ("3\n", true),
        ("on\n", false),
        ("", false),
    ] {
        write(root, "proc/sys/kernel/numa_balancing", text);
        assert_eq!(linux::procfs::numa_balancing_on(root), on, "{text:?}");
    }
    write(root, "proc/meminfo", "MemAvailable: lots kB\n");
    let e = linux::procfs::meminfo::read_mem_available(root)
        .expect_err("malformed")
        .to_string();
    assert!(e.contains("proc/meminfo") && e.contains("`lots`"), "{e}");
}

#[test]
fn stat_reader_rereads_in_place_and_reports_a_vanished_process() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    write(root, "proc/50/stat", &stat_line(50, "w", 10, 1, 0));
    let mut r = StatReader::of_pid(root, 50);
    assert_eq!(r.read().expect("reads").alive().map(|s| s.utime), Some(10));
    write(
        root,
        "proc/50/stat",
        &stat_line(50, "w (long name to grow the file)", 25, 1, 1),
    );
    let s = r.read().expect("reads").expect_alive("50");
    assert_eq!((s.utime, s.processor), (25, 1));
    write(root, "proc/50/stat", "");
    assert!(r.read().expect("empty is gone").is_gone());
    write(root, "proc/50/stat", "50 (w R");
    let e = r.read().expect_err("malformed").to_string();
    assert!(e.contains("50/stat"), "{e}");
    let mut gone = StatReader::new(root.join("proc/51/stat"));
    assert!(gone.read().expect("gone is fine").is_gone());
    // The real thing.
    let me = std::process::id();
    let mut r = StatReader::new(PathBuf::from(format!("/proc/{me}/stat")));
    let s = r.read().expect("reads").expect_alive("self");
    assert_eq!(s.pid, me);
}

/// A minimal sysfs tree: online CPUs, and per node its CPU list, distance row and memory.
fn sys_tree(online: &str, nodes: &[(usize, &str, &str, u64)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    write(root, "sys/devices/system/cpu/online", online);
    write(
        root,
        "proc/meminfo",
        "MemTotal: 8388608 kB\nMemAvailable: 8000000 kB\n",
    );
    if !nodes.is_empty() {
        let ids: Vec<String> = nodes.iter().map(|n| n.0.to_string()).collect();
        write(root, "sys/devices/system/node/online", &ids.join(","));
    }
    for &(id, cpus, dist, kb) in nodes {
        let d = format!("sys/devices/system/node/node{id}");
        write(root, &format!("{d}/cpulist"), cpus);
        write(root, &format!("{d}/distance"), dist);
        write(
            root,
            &format!("{d}/meminfo"),
            &format!("Node {id} MemTotal: {kb} kB\n"),
        );
    }
    tmp
}

#[test]
fn node_map_translates_kernel_numbers_with_holes_and_memory_only_nodes() {
    // Node 1 is missing, node 3 has memory and no CPU (CXL): the report has two columns,
    // kernel node 2 is column 1, memory on node 3 has no column.
    let root = sys_tree(
        "0-9\n",
        &[
            (0, "0-3,8-9\n", "10 21 30\n", 4 << 20),
            (2, "4-7\n", "21 10 30\n", 4 << 20),
            (3, "\n", "30 30 10\n", 8 << 20),
        ],
    );
    let m = host_cpu_nodes(root.path(), None).expect("reads");
    assert_eq!(m.nr_nodes(), 2);
    assert!(!m.is_fake());
    assert_eq!(
        (m.node_or_zero(9), m.node_or_zero(5), m.node_or_zero(0)),
        (0, 1, 0)
    );
    // An unknown CPU counts as node 0.
    assert_eq!(m.node_or_zero(100), 0);
    assert_eq!(m.node_of(100), None);
    assert_eq!(m.node_lists(), vec!["0-3,8-9", "4-7"]);
    assert_eq!(
        (m.mem_column(0), m.mem_column(2), m.mem_column(3)),
        (Some(0), Some(1), None)
    );
    assert_eq!(m.mem_columns(&[10, 0, 20, 5]), (vec![10, 20], 5));
}

#[test]
fn node_map_without_numa_and_with_fake_numa() {
    let root = sys_tree("0-6\n", &[]);
    let m = host_cpu_nodes(root.path(), None).expect("reads");
    assert_eq!((m.nr_nodes(), m.cpus().len()), (1, 7));
    let f = host_cpu_nodes(root.path(), Some(3)).expect("splits");
    assert!(f.is_fake());
    assert_eq!(f.nr_nodes(), 3);
    assert_eq!(f.node_lists(), vec!["0-2", "3-4", "5-6"]);
    // The memory stays in the one real node: column 0.
    assert_eq!(f.mem_columns(&[100]), (vec![100, 0, 0], 0));
    for bad in [0, 8] {
        let e = host_cpu_nodes(root.path(), Some(bad))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("fake NUMA"), "{e}");
    }
}

#[test]
fn node_map_errors_name_the_file() {
    let root = sys_tree("0-3\n", &[(0, "0-x\n", "10\n", 1 << 20)]);
    let e = host_cpu_nodes(root.path(), None)
        .expect_err("malformed")
        .to_string();
    assert!(e.contains("node0/cpulist"), "{e}");
    let empty = tempfile::tempdir().expect("temp dir");
    let e = host_cpu_nodes(empty.path(), None)
        .expect_err("nothing")
        .to_string();
    assert!(e.contains("cpu/online"), "{e}");
}

#[test]
fn node_map_from_cpu_sets() {
    let sets = [
        CpuSet::parse_list("0-1").expect("list"),
        CpuSet::parse_list("2-3").expect("list"),
    ];
    let m = CpuNodeMap::try_from_node_cpus(&sets).expect("map");
    assert_eq!((m.nr_nodes(), m.node_or_zero(3)), (2, 1));
    let overlap = [
        CpuSet::parse_list("0-1").expect("list"),
        CpuSet::parse_list("1").expect("list"),
    ];
    assert!(
        CpuNodeMap::try_from_node_cpus(&overlap)
            .expect_err("overlap")
            .to_string()
            .contains("CPU 1")
    );
    // The lenient constructor keeps a CPU's first node.
    assert_eq!(CpuNodeMap::from_node_cpus(&overlap).node_of(1), Some(0));
    assert!(CpuNodeMap::try_from_node_cpus(&[]).is_err());
    assert!(CpuNodeMap::try_from_node_cpus(&[CpuSet::default()]).is_err());
    assert_eq!(CpuNodeMap::single(4).cpus(), vec![0, 1, 2, 3]);
}
