//! A mix of kernel builds and bonnie processes started together, as in the AA-vs-PMQS
//! comparison (two `make -j16` and eight bonnie++). Each build's `make` is a separate
//! program (`b0-make`, `b1-make`, ...), so each build's wall time can be read from its run.

use super::bonnie::{BonnieParams, bonnie_program};
use super::kbuild::{KbuildParams, add_kbuild};
use crate::program::{Launch, Workload};

/// What the mix holds.
#[derive(Clone, Debug, PartialEq)]
pub struct MixParams {
    pub builds: u32,
    pub kbuild: KbuildParams,
    pub bonnies: u32,
    pub bonnie: BonnieParams,
}

/// Name of build `i`'s make program.
pub fn make_name(i: u32) -> String {
    format!("b{i}-make")
}

pub fn mix(p: &MixParams) -> Workload {
    let mut programs = Vec::new();
    let mut launches = Vec::new();
    for b in 0..p.builds {
        let make = add_kbuild(&p.kbuild, &format!("b{b}-"), &mut programs);
        launches.push(Launch {
            program: make,
            count: 1,
            threads: 1,
            at: 0,
            cpu: Some(p.kbuild.cpu),
        });
    }
    if p.bonnies > 0 {
        programs.push(bonnie_program(&p.bonnie, "bonnie"));
        launches.push(Launch {
            program: programs.len() - 1,
            count: p.bonnies,
            threads: 1,
            at: 0,
            cpu: Some(0),
        });
    }
    Workload {
        name: format!(
            "{} x kbuild -j{} + {} x bonnie",
            p.builds, p.kbuild.parallelism, p.bonnies
        ),
        programs,
        launches,
        channels: 0,
        disturbance: None,
    }
}
