//! Study experiments: call the issue-4 study of the `[study]` section on each machine, once
//! per machine with the experiment's seed (a study has no repetitions).

use super::error::RunFailure;
use super::study_spec::{StudyKind, StudySection};
use crate::studies::{autonuma, convergence, light_load, oltp};
use serde::Serialize;

/// The results of a study, one entry per machine.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", content = "machines", rename_all = "kebab-case")]
pub enum StudyResults {
    LightLoad(Vec<light_load::LightLoad>),
    Oltp(Vec<oltp::Oltp>),
    Autonuma(Vec<autonuma::Autonuma>),
    Convergence(Vec<convergence::Convergence>),
}

/// How many times [`run`] calls its `tick`: once per table row of every machine.
pub fn planned(s: &StudySection, machine: &str) -> u64 {
    let rows = match s.kind {
        StudyKind::LightLoad => light_load::RULES.len(),
        StudyKind::Oltp => 2 * s.oltp().0.len(),
        // numa01 and numa02, each in every mode and under the two binds.
        StudyKind::Autonuma => 2 * (autonuma::MODES.len() + 2),
        StudyKind::Convergence => {
            let (shapes, modes, ..) = s.convergence();
            shapes.len() * modes.len()
        }
    };
    (rows * s.machines(machine).len()) as u64
}

/// Run `s` on every machine; `tick` is called once per table row.
pub fn run(
    s: &StudySection,
    machine: &str,
    seed: u64,
    tick: &(dyn Fn() + Sync),
) -> Result<StudyResults, RunFailure> {
    let machines = s.machines(machine);
    let ticks = |n: usize| (0..n).for_each(|_| tick());
    let each = |m: &String| -> Result<StudyResults, RunFailure> {
        let r = match s.kind {
            StudyKind::LightLoad => {
                let (p, nb) = s.light_load();
                let r = light_load::study(m, &p, &nb, seed)?;
                ticks(r.rows.len());
                StudyResults::LightLoad(vec![r])
            }
            StudyKind::Oltp => {
                let (t, p, mode) = s.oltp();
                let r = oltp::study(m, &t, &p, &mode, seed)?;
                ticks(r.rows.len() * 2);
                StudyResults::Oltp(vec![r])
            }
            StudyKind::Autonuma => {
                let (p, every) = s.autonuma();
                let r = autonuma::study(m, &p, every, seed)?;
                ticks(r.rows.len());
                StudyResults::Autonuma(vec![r])
            }
            StudyKind::Convergence => {
                let (shapes, modes, p, watch) = s.convergence();
                let modes: Vec<&str> = modes.iter().map(String::as_str).collect();
                let r = convergence::study(m, &shapes, &modes, &p, watch, seed)?;
                ticks(r.rows.len());
                StudyResults::Convergence(vec![r])
            }
        };
        Ok(r)
    };
    let mut all: Option<StudyResults> = None;
    for m in &machines {
        let r = each(m)?;
        all = Some(match all {
            None => r,
            Some(acc) => acc.append(r),
        });
    }
    all.ok_or(RunFailure::NoMachine)
}

impl StudyResults {
    fn append(self, other: StudyResults) -> StudyResults {
        use StudyResults::*;
        match (self, other) {
            (LightLoad(mut a), LightLoad(b)) => {
                a.extend(b);
                LightLoad(a)
            }
            (Oltp(mut a), Oltp(b)) => {
                a.extend(b);
                Oltp(a)
            }
            (Autonuma(mut a), Autonuma(b)) => {
                a.extend(b);
                Autonuma(a)
            }
            (Convergence(mut a), Convergence(b)) => {
                a.extend(b);
                Convergence(a)
            }
            (a, _) => a,
        }
    }
}
