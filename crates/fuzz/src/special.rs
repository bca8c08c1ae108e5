//! Special files where a loader expects a regular file: a FIFO (opening one for reading blocks
//! until a writer comes, so a loader that does not check would wait for ever), `/dev/zero`
//! and `/dev/urandom` (reads that never end: a loader without a bound grows until memory
//! runs out) and `/dev/null`. Every loader of a user's file (machine spec, workload,
//! experiment directory, daemon configuration, journal and its lock, benchmark report) and
//! the `/proc` and `/sys` readers of a rooted tree get each one in place of a file; each must
//! return within [`DEADLINE`], and an error must be one line naming the file.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// What stands in for the file.
pub const KINDS: &[&str] = &["fifo", "/dev/zero", "/dev/urandom", "/dev/null"];

/// How long a loader may take before it is reported as hung. Far above what a refusal takes
/// (microseconds): only a loader that blocks or reads without end reaches it.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A loader handed the path of one file.
pub struct FileLoader {
    pub name: &'static str,
    /// The file's name in the scratch directory (`.toml` for the experiment loader, which
    /// reads a directory).
    pub file: &'static str,
    /// Loads from the scratch directory `dir`, whose `file` is the special file.
    pub load: fn(&Path) -> Result<(), String>,
}

/// A reader of a rooted tree, with the files to replace and the reader that must refuse
/// each.
pub struct TreeReader {
    pub name: &'static str,
    pub fixture: &'static str,
    pub files: &'static [&'static str],
    pub read: fn(&Path) -> Result<(), String>,
}

fn s<T, E: std::fmt::Display>(r: Result<T, E>) -> Result<(), String> {
    r.map(drop).map_err(|e| e.to_string())
}

fn path_str(dir: &Path, file: &str) -> String {
    dir.join(file).display().to_string()
}

pub const FILE_LOADERS: &[FileLoader] = &[
    FileLoader {
        name: "machine-spec",
        file: "m.toml",
        load: |d| s(topo::MachineSpec::from_file(&path_str(d, "m.toml"))),
    },
    FileLoader {
        name: "workload",
        file: "w.toml",
        load: |d| {
            let p = d.join("w.toml");
            let text = sim::budget::read_input(&p).map_err(|e| e.to_string())?;
            s(sim::workload::parse_workload(
                &text,
                &p.display().to_string(),
            ))
        },
    },
    FileLoader {
        name: "experiment",
        file: "e.toml",
        load: |d| s(sim::experiments::load_all(Some(d))),
    },
    FileLoader {
        name: "daemon-config",
        file: "homenode.toml",
        load: |d| {
            s(linux::daemon::DaemonConfig::load(
                &d.join("homenode.toml"),
                true,
            ))
        },
    },
    FileLoader {
        name: "journal",
        file: "journal.json",
        load: |d| s(linux::journal::Journal::load(&d.join("journal.json"))),
    },
    FileLoader {
        name: "journal-lock",
        file: "journal.json.lock",
        load: |d| s(linux::trust::open_persistent(&d.join("journal.json.lock"))),
    },
    FileLoader {
        name: "bench-report",
        file: "bench.json",
        load: |d| s(bench::report::Report::read(&path_str(d, "bench.json"))),
    },
];

fn read_topology(root: &Path) -> Result<(), String> {
    s(topo::read_host_detailed(root))
}

fn read_proc(root: &Path) -> Result<(), String> {
    use linux::procfs::{cpustat, loadavg, meminfo, numa_maps, stat, status, uptime, vmstat};
    // The scanner is lenient (a bad process file drops that process): it must only return.
    let _ = linux::Scanner::new().scan(root, &linux::ScanOptions::default());
    s(cpustat::read(root))?;
    s(vmstat::read(root))?;
    s(stat::read(root, 1000))?;
    s(status::read(root, 1000))?;
    s(numa_maps::read(root, 1000))?;
    s(linux::sysfs::online_cpus(root))?;
    // Files the fixture does not have: absent is an error too, naming them.
    let _ = meminfo::read_mem_available(root);
    let _ = loadavg::last_pid(root);
    let _ = uptime::read(root);
    Ok(())
}

pub const TREE_READERS: &[TreeReader] = &[
    TreeReader {
        name: "sysfs-topology",
        fixture: "crates/topo/tests/fixtures/kunpeng-4n",
        files: &[
            "sys/devices/system/node/node1/distance",
            "sys/devices/system/node/node0/cpulist",
            "sys/devices/system/node/node0/meminfo",
            "sys/devices/system/cpu/online",
        ],
        read: read_topology,
    },
    TreeReader {
        name: "proc-tree",
        fixture: "crates/linux/tests/fixtures/multinode-4n",
        files: &[
            "proc/stat",
            "proc/vmstat",
            "proc/1000/stat",
            "proc/1000/status",
            "proc/1000/numa_maps",
            "sys/devices/system/cpu/online",
        ],
        read: read_proc,
    },
];

/// Puts `kind` at `path` (removing what is there).
fn plant(path: &Path, kind: &str) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    if kind == "fifo" {
        let status = std::process::Command::new("mkfifo").arg(path).status()?;
        if status.success() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!("mkfifo: {status}")))
        }
    } else {
        std::os::unix::fs::symlink(kind, path)
    }
}

/// Runs `f` on a thread of its own: `Err` when it does not return within [`DEADLINE`] (the
/// thread is left blocked: the process is a test or the fuzzer, which exits soon after).
fn within_deadline(
    f: impl FnOnce() -> Result<(), String> + Send + 'static,
) -> Result<Result<(), String>, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE)
        .map_err(|_| format!("did not return within {} s", DEADLINE.as_secs()))
}

/// What went wrong with one case, `None` when the loader refused the file properly.
fn judge(
    what: &str,
    path: &Path,
    r: Result<Result<(), String>, String>,
    must_fail: bool,
) -> Option<String> {
    match r {
        Err(hung) => Some(format!("{what}: {hung}")),
        Ok(Ok(())) if must_fail => Some(format!("{what}: accepted")),
        Ok(Ok(())) => None,
        Ok(Err(e)) if e.contains('\n') => Some(format!("{what}: not one line: {e}")),
        Ok(Err(e)) if !e.contains(&path.display().to_string()) => {
            Some(format!("{what}: does not name {}: {e}", path.display()))
        }
        Ok(Err(_)) => None,
    }
}

fn scratch(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!(
        "homenode-fuzz-special-{name}-{}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Every loader and tree reader with every kind of special file; the problems found (a hang,
/// an acceptance, an error of several lines or not naming the file), and the cases run.
pub fn run_all() -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut cases = 0;
    for l in FILE_LOADERS {
        for kind in KINDS {
            cases += 1;
            let dir = scratch(l.name);
            let path = dir.join(l.file);
            if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| plant(&path, kind)) {
                problems.push(format!("{} {kind}: cannot set up: {e}", l.name));
                continue;
            }
            let load = l.load;
            let d = dir.clone();
            let r = within_deadline(move || load(&d));
            problems.extend(judge(&format!("{} as {kind}", l.name), &path, r, true));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    for t in TREE_READERS {
        for file in t.files {
            for kind in KINDS {
                cases += 1;
                let dir = scratch(t.name);
                if let Err(e) = crate::copy_tree(&crate::targets::repo().join(t.fixture), &dir) {
                    problems.push(format!("{}: cannot copy the fixture: {e}", t.name));
                    continue;
                }
                let path = dir.join(file);
                if let Err(e) = plant(&path, kind) {
                    problems.push(format!("{} {file} {kind}: cannot set up: {e}", t.name));
                    continue;
                }
                let read = t.read;
                let d = dir.clone();
                let r = within_deadline(move || read(&d));
                problems.extend(judge(
                    &format!("{} {file} as {kind}", t.name),
                    &path,
                    r,
                    true,
                ));
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    (problems, cases)
}

#[cfg(test)]
mod tests {
    /// Without the safe opener, the FIFO cases block for ever (the test fails at the
    /// deadline) and the `/dev/zero` cases grow until memory runs out.
    #[test]
    fn every_loader_refuses_fifos_and_devices_at_once() {
        let (problems, cases) = super::run_all();
        assert!(cases >= 60, "{cases} cases");
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
