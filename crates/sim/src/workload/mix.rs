//! A mix of kernel builds and bonnie processes started together, as in the AA-vs-PMQS
//! comparison (two `make -j16` and eight bonnie++). Each build's `make` is a separate
//! program (`b0-make`, `b1-make`, ...), so each build's wall time can be read from its run.

use super::bonnie::{BonnieParams, bonnie_disk_program, bonnie_program};
use super::kbuild::{KbuildParams, PipelineParams, add_kbuild, add_kbuild_pipeline};
use crate::disk::DiskParams;
use crate::program::{Launch, Workload};

/// What the mix holds.
#[derive(Clone, Debug, PartialEq)]
pub struct MixParams {
    pub builds: u32,
    pub kbuild: KbuildParams,
    pub bonnies: u32,
    pub bonnie: BonnieParams,
    /// The disk queue: with `Some`, the builds run as the 2.4 process
    /// pipeline and every disk wait of the builds and the bonnie processes queues on these
    /// disks; with `None`, compile jobs are single processes and I/O waits are fixed sleeps.
    pub disks: Option<MixDisks>,
}

/// The disks of a mix and who uses which.
#[derive(Clone, Debug, PartialEq)]
pub struct MixDisks {
    /// Number of disks (at least 1). Build `b` uses disk `b % count`, bonnie `i` disk
    /// `i % count`.
    pub count: u32,
    pub params: DiskParams,
    /// The compile pipeline (its `disk` is set per build).
    pub pipeline: PipelineParams,
}

/// Name of build `i`'s make program.
pub fn make_name(i: u32) -> String {
    format!("b{i}-make")
}

pub fn mix(p: &MixParams) -> Workload {
    let mut programs = Vec::new();
    let mut launches = Vec::new();
    let mut channels = 0;
    for b in 0..p.builds {
        let tag = format!("b{b}-");
        let make = match &p.disks {
            None => add_kbuild(&p.kbuild, &tag, &mut programs),
            Some(d) => {
                let pp = PipelineParams {
                    disk: (b % d.count.max(1)) as usize,
                    disk_params: d.params,
                    ..d.pipeline.clone()
                };
                add_kbuild_pipeline(&p.kbuild, &pp, &tag, &mut programs, &mut channels)
            }
        };
        launches.push(Launch {
            program: make,
            count: 1,
            threads: 1,
            at: 0,
            cpu: Some(p.kbuild.cpu),
        });
    }
    match &p.disks {
        _ if p.bonnies == 0 => {}
        None => {
            programs.push(bonnie_program(&p.bonnie, "bonnie"));
            launches.push(Launch {
                program: programs.len() - 1,
                count: p.bonnies,
                threads: 1,
                at: 0,
                cpu: Some(0),
            });
        }
        Some(d) => {
            let n = d.count.max(1);
            for disk in 0..n.min(p.bonnies) {
                programs.push(bonnie_disk_program(
                    &p.bonnie,
                    &format!("bonnie-d{disk}"),
                    disk as usize,
                    &d.params,
                ));
                launches.push(Launch {
                    program: programs.len() - 1,
                    count: (disk..p.bonnies).step_by(n as usize).count() as u32,
                    threads: 1,
                    at: 0,
                    cpu: Some(0),
                });
            }
        }
    }
    Workload {
        name: format!(
            "{} x kbuild -j{} + {} x bonnie",
            p.builds, p.kbuild.parallelism, p.bonnies
        ),
        programs,
        launches,
        channels,
        disturbance: None,
    }
}
