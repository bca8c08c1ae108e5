//! `autonuma-bench`: numa01 and numa02 with NUMA balancing off, on and in its 2012 form, and
//! their hard-bind (best) and inverse-bind (worst) variants, on one machine: elapsed time,
//! user and system time, NUMA counters, and the memory of each node over time (SVG).
//!
//! The bind variants run with balancing off only: their memory is bound (not scanned: NUMA
//! balancing only handles default-policy memory) and their threads are pinned.

use super::{StudyError, machine, prepare_placed, secs, watch};
use crate::charts::{ChartError, Series, time_chart};
use crate::kernel::NumaCounters;
use crate::placement::PlacementSpec;
use crate::time::Ns;
use crate::workload::autonuma::{AutonumaParams, Bind, numa01, numa02};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;
use topo::Topology;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub program: String,
    pub numa_balancing: String,
    pub elapsed_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub numa: NumaCounters,
}

/// Bytes on each node over time.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MemSeries {
    pub program: String,
    pub numa_balancing: String,
    pub times_s: Vec<f64>,
    /// `node_gib[node][sample]`.
    pub node_gib: Vec<Vec<f64>>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Autonuma {
    pub machine: String,
    pub rows: Vec<Row>,
    pub memory: Vec<MemSeries>,
}

pub const MODES: [&str; 3] = ["off", "on", "sched-numa-2012"];

struct Case {
    numa01: bool,
    bind: Bind,
    mode: &'static str,
}

pub fn study(
    machine_name: &str,
    p: &AutonumaParams,
    sample_every: Ns,
    seed: u64,
) -> Result<Autonuma, StudyError> {
    let topo = machine(machine_name)?;
    let mut cases = Vec::new();
    for numa01 in [true, false] {
        for mode in MODES {
            cases.push(Case {
                numa01,
                bind: Bind::Free,
                mode,
            });
        }
        for bind in [Bind::HardBind, Bind::InverseBind] {
            cases.push(Case {
                numa01,
                bind,
                mode: "off",
            });
        }
    }
    let out = cases
        .par_iter()
        .map(|c| {
            let spec = format!("linux:numa_balancing={}", c.mode);
            let (mut row, mut series) =
                run_one(&topo, c.numa01, c.bind, p, &spec, None, sample_every, seed)?;
            row.numa_balancing = c.mode.into();
            series.numa_balancing = c.mode.into();
            Ok((row, (c.bind == Bind::Free).then_some(series)))
        })
        .collect::<Result<Vec<_>, StudyError>>()?;
    let (rows, memory): (Vec<Row>, Vec<Option<MemSeries>>) = out.into_iter().unzip();
    Ok(Autonuma {
        machine: topo.name.clone(),
        rows,
        memory: memory.into_iter().flatten().collect(),
    })
}

/// One run of numa01 (`numa01`) or numa02 with binding `bind`, scheduler spec `sched` and,
/// when given, a node-level placement policy on top; the memory of each node is sampled
/// every `sample_every`. The row's and the series' `numa_balancing` is the scheduler spec.
#[allow(clippy::too_many_arguments)]
pub fn run_one(
    topo: &Arc<Topology>,
    numa01_not_02: bool,
    bind: Bind,
    p: &AutonumaParams,
    sched: &str,
    placement: Option<&PlacementSpec>,
    sample_every: Ns,
    seed: u64,
) -> Result<(Row, MemSeries), StudyError> {
    let w = if numa01_not_02 {
        numa01(topo, bind, p)
    } else {
        numa02(topo, bind, p)
    };
    let name = w.name.clone();
    let mut sim = prepare_placed(topo, w, sched, placement, seed)?;
    let nodes = topo.nr_nodes();
    let mut series = MemSeries {
        program: name.clone(),
        numa_balancing: sched.into(),
        times_s: Vec::new(),
        node_gib: vec![Vec::new(); nodes],
    };
    let err = |source| StudyError::Run {
        workload: name.clone(),
        sched: sched.into(),
        source,
    };
    watch(&mut sim, sample_every, Ns::MAX, |k, at| {
        series.times_s.push(at as f64 / 1e9);
        for (n, v) in series.node_gib.iter_mut().enumerate() {
            v.push(k.mem.used[n] as f64 / f64::from(1u32 << 30));
        }
        false
    })
    .map_err(err)?;
    let r = sim.run().map_err(err)?;
    let row = Row {
        program: name,
        numa_balancing: sched.into(),
        elapsed_s: r.end_ns as f64 / 1e9,
        user_s: r.tasks.iter().map(|t| t.user_ns).sum::<f64>() / 1e9,
        sys_s: r.tasks.iter().map(|t| t.sys_ns).sum::<f64>() / 1e9,
        numa: r.counters.numa.clone(),
    };
    Ok((row, series))
}

impl Autonuma {
    pub fn to_markdown(&self) -> String {
        let mut s = format!(
            "### autonuma-benchmark on {}\n\n\
             | program | numa_balancing | elapsed (s) | user (s) | system (s) | hint faults | local | pages migrated | task moves | swaps |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            self.machine
        );
        for r in &self.rows {
            let n = &r.numa;
            s += &format!(
                "| {} | {} | {} | {:.1} | {:.2} | {} | {} | {} | {} | {} |\n",
                r.program,
                r.numa_balancing,
                secs(r.elapsed_s * 1e9),
                r.user_s,
                r.sys_s,
                n.numa_hint_faults,
                n.numa_hint_faults_local,
                n.numa_pages_migrated,
                n.migrations_numa_move,
                n.migrations_numa_swap
            );
        }
        s
    }
}

impl MemSeries {
    /// A line chart of each node's memory (GiB) over time.
    pub fn svg(&self) -> Result<String, ChartError> {
        let t_max = self.times_s.last().copied().unwrap_or(1.0);
        let series: Vec<Series> = self
            .node_gib
            .iter()
            .enumerate()
            .map(|(n, v)| {
                let points = self.times_s.iter().copied().zip(v.iter().copied());
                Series::new(format!("node {n}"), points.collect())
            })
            .collect();
        let title = format!(
            "{} (numa_balancing={}): GiB per node over {t_max:.1} s",
            self.program, self.numa_balancing
        );
        time_chart(&title, "time (s)", "GiB", &series)
    }
}
