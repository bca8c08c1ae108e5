//! bonnie: a disk benchmark process (bonnie++), mostly blocked on I/O.
//!
//! It repeats `ops` times: a short burst of system time (the file system and the copy of one
//! block), a little user time (bonnie's own loop), then a wait for the disk. It keeps a small
//! buffer that it first-touches at the start.

use crate::memory::MemPolicy;
use crate::program::{Phase, Program, RegionSpec};
use crate::time::{MS, Ns};

/// Parameters of one bonnie process.
#[derive(Clone, Debug, PartialEq)]
pub struct BonnieParams {
    /// I/O operations.
    pub ops: u32,
    /// Kernel cycles per operation (file system, block copy).
    pub sys_cycles: f64,
    /// User cycles per operation.
    pub user_cycles: f64,
    /// Disk wait per operation.
    pub io_wait: Ns,
    pub io_jitter: f64,
    /// Its buffer (MiB).
    pub buffer_mib: u64,
    /// Bytes of one disk request, when it runs on a disk queue ([`bonnie_disk_program`]).
    pub io_bytes: u64,
}

impl Default for BonnieParams {
    fn default() -> Self {
        BonnieParams {
            ops: 6000,
            sys_cycles: 400_000.0,
            user_cycles: 100_000.0,
            io_wait: 10 * MS,
            io_jitter: 0.5,
            buffer_mib: 1,
            io_bytes: 8 << 10,
        }
    }
}

/// The bonnie program.
pub fn bonnie_program(p: &BonnieParams, name: &str) -> Program {
    Program {
        name: name.into(),
        regions: vec![RegionSpec {
            name: "buffer".into(),
            bytes: p.buffer_mib << 20,
            policy: MemPolicy::FirstTouch,
        }],
        phases: vec![
            Phase::Touch { region: 0 },
            Phase::Loop { count: p.ops },
            Phase::Kernel {
                cycles: p.sys_cycles,
            },
            Phase::Compute {
                cycles: p.user_cycles,
            },
            Phase::Sleep {
                ns: p.io_wait,
                jitter: p.io_jitter,
            },
            Phase::EndLoop,
        ],
        job: false,
        affinity: None,
        nice: 0,
    }
}

/// The bonnie program on a disk queue: each operation's wait is one request of `io_bytes` to
/// disk `disk`, served in turn with every other request to that disk (`crate::disk`), instead
/// of a fixed sleep.
pub fn bonnie_disk_program(
    p: &BonnieParams,
    name: &str,
    disk: usize,
    d: &crate::disk::DiskParams,
) -> Program {
    let mut prog = bonnie_program(p, name);
    for ph in &mut prog.phases {
        if let Phase::Sleep { .. } = ph {
            *ph = Phase::Io {
                disk,
                service: d.service_ns(p.io_bytes),
                wait: true,
            };
        }
    }
    prog
}
