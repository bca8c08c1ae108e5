//! Shared helpers: fixture paths, copying a fixture tree to a temporary directory to damage it,
//! threads' scheduling attributes on a table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use linux::slice::{SchedAttr, SliceOps};
use linux::{Live, SliceError, Tid};
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

pub fn copy_dir(from: &Path, to: &Path) {
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

/// `sched_getattr` / `sched_setattr` on a table instead of the kernel, recording every set. A
/// thread not in the table has exited. `base` is the kernel's base slice (`None`: a kernel
/// without custom slices).
#[derive(Debug, Default)]
pub struct FakeSlices {
    pub attrs: BTreeMap<Tid, SchedAttr>,
    pub sets: Vec<(Tid, SchedAttr)>,
    pub base: Option<u64>,
    /// Base slice measurements asked for.
    pub probes: usize,
}

impl FakeSlices {
    /// A kernel whose base slice is `base` ns, with `threads` in the fair class at it.
    pub fn with_threads(base: u64, threads: &[Tid]) -> FakeSlices {
        let mut f = FakeSlices {
            base: Some(base),
            ..FakeSlices::default()
        };
        for &t in threads {
            f.attrs.insert(t, fair(base));
        }
        f
    }

    /// The slice thread `tid` reads now.
    pub fn slice_of(&self, tid: Tid) -> u64 {
        self.attrs[&tid].runtime_ns
    }
}

/// A `SCHED_OTHER` thread at nice 0 reading `runtime_ns`.
pub fn fair(runtime_ns: u64) -> SchedAttr {
    SchedAttr {
        policy: linux::slice::SCHED_OTHER,
        runtime_ns,
        ..SchedAttr::default()
    }
}

impl SliceOps for FakeSlices {
    fn get(&mut self, tid: Tid) -> Result<Live<SchedAttr>, SliceError> {
        Ok(self.attrs.get(&tid).copied().into())
    }

    fn set(&mut self, tid: Tid, attr: &SchedAttr) -> Result<Live<()>, SliceError> {
        self.sets.push((tid, *attr));
        let base = self.base.unwrap_or(0);
        Ok(match self.attrs.get_mut(&tid) {
            Some(a) => {
                // As the kernel does: policy, flags, nice and priority as given; the slice
                // clamped, or the base for 0.
                *a = SchedAttr {
                    runtime_ns: match attr.runtime_ns {
                        0 => base,
                        ns => linux::slice::kernel_slice(ns),
                    },
                    ..*attr
                };
                Live::Alive(())
            }
            None => Live::Gone,
        })
    }

    fn base_slice(&mut self) -> Result<Option<u64>, SliceError> {
        self.probes += 1;
        Ok(self.base)
    }
}
