//! Shared helpers: fixture paths, copying a fixture tree to a temporary directory to damage it.

use std::path::{Path, PathBuf};

use topo::CpuSet;

/// `tests/fixtures/NAME`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The captured one-node host: PIDs of the processes captured.
pub mod host {
    /// python3 with 2 extra threads.
    pub const PYTHON: u32 = 28818;
    pub const PYTHON_THREADS: [u32; 3] = [28818, 28903, 28904];
    /// A copy of sleep named `we) ird (name`.
    pub const WEIRD: u32 = 28819;
    /// sleep under `set_mempolicy(MPOL_PREFERRED, {0})`.
    pub const PREFER: u32 = 28820;
    /// `taskset -c 1 sleep`.
    pub const PINNED: u32 = 28821;
    pub const KTHREADD: u32 = 2;
    /// migration/0: SCHED_FIFO 99.
    pub const MIGRATION: u32 = 18;
}

/// Copies the fixture tree `name` into a new temporary directory.
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture(name), tmp.path());
    tmp
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let dest = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).expect("copy");
        }
    }
}

pub fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).expect("CPU list")
}

/// Asserts that an error renders as one line naming `file`.
pub fn assert_names_file(err: &dyn std::fmt::Display, file: &Path) {
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "not one line: {msg}");
    assert!(
        msg.contains(&file.display().to_string()),
        "`{msg}` does not name {}",
        file.display()
    );
}
