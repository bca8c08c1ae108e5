//! The `[study]` section: which issue-4 study to run and its sizes. Every key is optional and
//! falls back to the study's reference size (the workload defaults of docs/WORKLOADS.md, and
//! 20,000 transactions per oltp client); a key that belongs to another kind is refused.

use super::ExperimentError;
use super::error::{ValueError, key_line};
use crate::budget;
use crate::sched::{self, SchedSpec};
use crate::studies::{convergence, oltp};
use crate::time::{MS, Ns, SEC};
use crate::workload::autonuma::AutonumaParams;
use crate::workload::convergence::ConvergenceParams;
use crate::workload::light_load::LightLoadParams;
use crate::workload::oltp::OltpParams;
use serde::{Deserialize, Serialize};

/// Which study.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StudyKind {
    LightLoad,
    Oltp,
    Autonuma,
    Convergence,
}

impl StudyKind {
    pub fn name(self) -> &'static str {
        match self {
            StudyKind::LightLoad => "light-load",
            StudyKind::Oltp => "oltp",
            StudyKind::Autonuma => "autonuma",
            StudyKind::Convergence => "convergence",
        }
    }

    /// The keys this kind reads (besides `kind` and `extra_machines`).
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            StudyKind::LightLoad => &["iterations", "numa_balancing"],
            StudyKind::Oltp => &["threads", "tx_per_thread", "numa_balancing"],
            StudyKind::Autonuma => &["loops", "numa02_loops", "sample_ms"],
            StudyKind::Convergence => &["shapes", "modes", "watch_s"],
        }
    }
}

/// A study experiment as written in its file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudySection {
    pub kind: StudyKind,
    /// Machines to run on besides the experiment's `machine`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_machines: Vec<String>,
    /// light-load: loop iterations per thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<f64>,
    /// light-load: `numa_balancing` of every run; oltp: the mode compared with `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing: Option<String>,
    /// oltp: client thread counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<Vec<u32>>,
    /// oltp: transactions per client while clients <= CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_per_thread: Option<u32>,
    /// autonuma: times each numa01 thread writes its process's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loops: Option<u32>,
    /// autonuma: times each numa02 thread writes its slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa02_loops: Option<u32>,
    /// autonuma: sampling interval of the per-node memory charts, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_ms: Option<u64>,
    /// convergence: process x thread shapes, `"PxT"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shapes: Option<Vec<String>>,
    /// convergence: `numa_balancing` modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Vec<String>>,
    /// convergence: how long to watch for convergence, simulated seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_s: Option<f64>,
}

/// Reference sizes (what a key means when it is left out).
pub const REF_OLTP_TX: u32 = 20_000;
pub const REF_SAMPLE_MS: u64 = 500;
/// The finest sampling a study may ask for: a tenth of the reference interval, as work keys
/// may be at most ten times their reference ([`budget::MAX_WORK_FACTOR`]).
pub const MIN_SAMPLE_MS: u64 = REF_SAMPLE_MS / 10;
pub const REF_WATCH_S: f64 = 60.0;

impl StudySection {
    /// Keys given in the file.
    fn given(&self) -> Vec<&'static str> {
        let set = [
            ("iterations", self.iterations.is_some()),
            ("numa_balancing", self.numa_balancing.is_some()),
            ("threads", self.threads.is_some()),
            ("tx_per_thread", self.tx_per_thread.is_some()),
            ("loops", self.loops.is_some()),
            ("numa02_loops", self.numa02_loops.is_some()),
            ("sample_ms", self.sample_ms.is_some()),
            ("shapes", self.shapes.is_some()),
            ("modes", self.modes.is_some()),
            ("watch_s", self.watch_s.is_some()),
        ];
        set.iter().filter(|(_, g)| *g).map(|(k, _)| *k).collect()
    }

    pub(super) fn check(
        &self,
        machine: &str,
        text: &str,
        file: &str,
    ) -> Result<(), ExperimentError> {
        let err = |key: &str, msg: String| ExperimentError::Parse {
            file: file.into(),
            line: key_line(text, key),
            msg: format!("{key}: {msg}"),
        };
        let keys = self.kind.keys();
        if let Some(k) = self.given().into_iter().find(|k| !keys.contains(k)) {
            return Err(err(
                k,
                format!(
                    "not a key of study kind `{}` (its keys: kind, extra_machines, {})",
                    self.kind.name(),
                    keys.join(", ")
                ),
            ));
        }
        for m in &self.extra_machines {
            topo::resolve_machine(m).map_err(|e| err("extra_machines", e.to_string()))?;
        }
        let positive = |key: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(err(key, "must be positive".into()))
            }
        };
        positive("iterations", self.iterations.is_none_or(|v| v >= 1.0))?;
        positive("tx_per_thread", self.tx_per_thread != Some(0))?;
        positive("loops", self.loops != Some(0))?;
        positive("numa02_loops", self.numa02_loops != Some(0))?;
        positive("sample_ms", self.sample_ms != Some(0))?;
        positive("watch_s", self.watch_s.is_none_or(|v| v > 0.0))?;
        self.check_budget()
            .map_err(|e| err(&e.key, format!("{}: {}", e.value, e.why)))?;
        if let Some(t) = &self.threads
            && (t.is_empty() || t.contains(&0))
        {
            return Err(err(
                "threads",
                "give at least one count, each at least 1".into(),
            ));
        }
        if let Some(s) = &self.shapes {
            if s.is_empty() {
                return Err(err("shapes", "give at least one `PxT` shape".into()));
            }
            for x in s {
                parse_shape(x).map_err(|e| err("shapes", e.to_string()))?;
            }
        }
        let topo = topo::resolve_machine(machine).map_err(|e| err("machine", e.to_string()))?;
        for (key, mode) in self.modes_given() {
            let spec = SchedSpec::parse(&format!("linux:numa_balancing={mode}"))
                .map_err(|e| err(key, e.to_string()))?;
            sched::build(&spec, &topo).map_err(|e| err(key, e.to_string()))?;
        }
        if self.modes.as_ref().is_some_and(Vec::is_empty) {
            return Err(err("modes", "give at least one mode".into()));
        }
        Ok(())
    }

    /// Work keys against [`crate::budget`]: each at most ten times its reference size (so a
    /// study never asks for more than ten reference runs' worth of simulation), task
    /// counts and simulated durations within the engine's limits.
    fn check_budget(&self) -> Result<(), budget::BudgetError> {
        let work = |key: &str, v: Option<f64>, reference: f64| match v {
            Some(v) => budget::work(key, v, reference),
            None => Ok(()),
        };
        work("iterations", self.iterations, 1e9)?;
        work(
            "tx_per_thread",
            self.tx_per_thread.map(f64::from),
            f64::from(REF_OLTP_TX),
        )?;
        work("loops", self.loops.map(f64::from), 20.0)?;
        work("numa02_loops", self.numa02_loops.map(f64::from), 2000.0)?;
        if let Some(w) = self.watch_s {
            budget::sim_seconds("watch_s", w)?;
        }
        if let Some(ms) = self.sample_ms {
            budget::sim_seconds("sample_ms", ms as f64 / 1e3)?;
            budget::at_least("sample_ms", ms as f64, MIN_SAMPLE_MS as f64)?;
        }
        let tx = f64::from(self.tx_per_thread.unwrap_or(REF_OLTP_TX));
        for &t in self.threads.iter().flatten() {
            budget::tasks("threads", f64::from(t))?;
            // Each transaction starts 10 phases (a blocking one counted as 3).
            let steps = f64::from(t) * tx * 10.0;
            if steps > budget::MAX_RUN_STEPS as f64 {
                return Err(budget::BudgetError {
                    place: String::new(),
                    key: "threads".into(),
                    value: t.to_string(),
                    why: format!(
                        "x {tx} transactions each is {steps:.2e} steps, more than the limit of {} steps a run may take: lower `threads` or `tx_per_thread`",
                        budget::MAX_RUN_STEPS
                    ),
                });
            }
        }
        for shape in self.shapes.iter().flatten() {
            if let Ok((p, t)) = parse_shape(shape) {
                budget::tasks("shapes", f64::from(p) * f64::from(t))?;
            }
        }
        Ok(())
    }

    fn modes_given(&self) -> Vec<(&'static str, &str)> {
        let mut v: Vec<(&'static str, &str)> = self
            .modes
            .iter()
            .flatten()
            .map(|m| ("modes", m.as_str()))
            .collect();
        if let Some(m) = &self.numa_balancing {
            v.push(("numa_balancing", m));
        }
        v
    }

    /// Every machine, `machine` first.
    pub fn machines(&self, machine: &str) -> Vec<String> {
        std::iter::once(machine.to_string())
            .chain(self.extra_machines.iter().cloned())
            .collect()
    }

    pub fn light_load(&self) -> (LightLoadParams, String) {
        let mut p = LightLoadParams::default();
        if let Some(i) = self.iterations {
            p.iterations = i;
        }
        (
            p,
            self.numa_balancing.clone().unwrap_or_else(|| "on".into()),
        )
    }

    /// (threads, params, the `numa_balancing` mode compared with `off`).
    pub fn oltp(&self) -> (Vec<u32>, OltpParams, String) {
        let p = OltpParams {
            tx_per_thread: self.tx_per_thread.unwrap_or(REF_OLTP_TX),
            ..Default::default()
        };
        (
            self.threads.clone().unwrap_or(oltp::THREADS.to_vec()),
            p,
            self.numa_balancing.clone().unwrap_or_else(|| "on".into()),
        )
    }

    pub fn autonuma(&self) -> (AutonumaParams, Ns) {
        let mut p = AutonumaParams::default();
        p.loops = self.loops.unwrap_or(p.loops);
        p.numa02_loops = self.numa02_loops.unwrap_or(p.numa02_loops);
        (p, self.sample_ms.unwrap_or(REF_SAMPLE_MS) * MS)
    }

    /// (shapes, modes, params, watch).
    pub fn convergence(&self) -> (Vec<(u32, u32)>, Vec<String>, ConvergenceParams, Ns) {
        let shapes = match &self.shapes {
            Some(s) => s.iter().filter_map(|x| parse_shape(x).ok()).collect(),
            None => convergence::SHAPES.to_vec(),
        };
        let modes = match &self.modes {
            Some(m) => m.clone(),
            None => convergence::MODES.iter().map(|m| m.to_string()).collect(),
        };
        let watch = (self.watch_s.unwrap_or(REF_WATCH_S) * SEC as f64) as Ns;
        (shapes, modes, ConvergenceParams::default(), watch)
    }

    /// The `numa_balancing` modes the study runs (for the options table).
    pub fn linux_specs(&self) -> Vec<String> {
        let lb = |m: &str| format!("linux:numa_balancing={m}");
        match self.kind {
            StudyKind::LightLoad => {
                let nb = self.light_load().1;
                crate::studies::light_load::RULES
                    .iter()
                    .map(|r| format!("linux:numa_imbalance={r},numa_balancing={nb}"))
                    .collect()
            }
            StudyKind::Oltp => ["off".to_string(), self.oltp().2]
                .iter()
                .map(|m| lb(m))
                .collect(),
            StudyKind::Autonuma => crate::studies::autonuma::MODES
                .iter()
                .map(|m| lb(m))
                .collect(),
            StudyKind::Convergence => self.convergence().1.iter().map(|m| lb(m)).collect(),
        }
    }

    /// Effective parameters with the reference value of each: (key, value, reference).
    pub fn effective(&self) -> Vec<(&'static str, String, String)> {
        match self.kind {
            StudyKind::LightLoad => {
                let (p, nb) = self.light_load();
                let r = LightLoadParams::default();
                vec![
                    (
                        "iterations",
                        format!("{:e}", p.iterations),
                        format!("{:e}", r.iterations),
                    ),
                    ("numa_balancing", nb, "on".into()),
                ]
            }
            StudyKind::Oltp => {
                let (t, p, mode) = self.oltp();
                vec![
                    ("threads", list(&t), list(&oltp::THREADS)),
                    (
                        "tx_per_thread",
                        p.tx_per_thread.to_string(),
                        REF_OLTP_TX.to_string(),
                    ),
                    ("numa_balancing", mode, "on".into()),
                ]
            }
            StudyKind::Autonuma => {
                let (p, every) = self.autonuma();
                let r = AutonumaParams::default();
                vec![
                    ("loops", p.loops.to_string(), r.loops.to_string()),
                    (
                        "numa02_loops",
                        p.numa02_loops.to_string(),
                        r.numa02_loops.to_string(),
                    ),
                    (
                        "sample_ms",
                        (every / MS).to_string(),
                        REF_SAMPLE_MS.to_string(),
                    ),
                ]
            }
            StudyKind::Convergence => {
                let (s, m, _, w) = self.convergence();
                let shapes = |s: &[(u32, u32)]| {
                    s.iter()
                        .map(|(p, t)| format!("{p}x{t}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                vec![
                    ("shapes", shapes(&s), shapes(&convergence::SHAPES)),
                    ("modes", m.join(", "), convergence::MODES.join(", ")),
                    (
                        "watch_s",
                        format!("{}", w as f64 / SEC as f64),
                        format!("{REF_WATCH_S}"),
                    ),
                ]
            }
        }
    }
}

fn list(v: &[u32]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `"4x2"` -> (4, 2).
pub fn parse_shape(s: &str) -> Result<(u32, u32), ValueError> {
    let bad = || ValueError::BadShape { shape: s.into() };
    let (p, t) = s.split_once('x').ok_or_else(bad)?;
    let p: u32 = p.trim().parse().map_err(|_| bad())?;
    let t: u32 = t.trim().parse().map_err(|_| bad())?;
    if p == 0 || t == 0 {
        return Err(bad());
    }
    Ok((p, t))
}
