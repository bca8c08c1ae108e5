//! `oltp-numa` on xeon2s: transactions per second of the oltp server for 2..512 client
//! threads with NUMA balancing off and with a fault-driven mode (`on`, or the 2012 patch set
//! `sched-numa-2012` that the no-regression table measured), and the relative difference per
//! row (the bar for the feature: no regression). The `Row` fields ending in `_on` belong to
//! the compared mode, whichever it is.
//!
//! Every row simulates about the same span of client time: each thread runs `tx_per_thread`
//! transactions while there are no more threads than CPUs, and `tx_per_thread * CPUs / threads`
//! beyond (the machine is then saturated and each thread gets its share of it).
//!
//! The table also says how much NUMA balancing could do in each `on` run: the length of the
//! client phase, the scan passes over the process (each unmaps up to `scan_size_mb`), the
//! hinting faults and how many were local, and the pages migrated. A client phase much
//! shorter than the scanner's sweep of the buffer cache leaves balancing little to act on,
//! which is why the experiment file runs the reference size.

use super::{StudyError, machine, run_placed};
use crate::placement::PlacementSpec;
use crate::sim::RunResult;
use crate::workload::oltp::{OltpParams, oltp};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;
use topo::Topology;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub threads: u32,
    pub tps_off: f64,
    pub tps_on: f64,
    /// (on - off) / off, percent.
    pub diff_pct: f64,
    /// Seconds from the first client's start to the last client's end, `on` run.
    pub client_s_on: f64,
    /// Scan passes over the process, `on` run (from its start, buffer initialisation included).
    pub scan_passes_on: u64,
    pub hint_faults_on: u64,
    /// Of those, faults on memory of the faulting CPU's node.
    pub hint_faults_local_on: u64,
    pub pages_migrated_on: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Oltp {
    pub machine: String,
    /// The `numa_balancing` mode compared with `off`.
    pub mode: String,
    pub tx_per_thread: u32,
    pub rows: Vec<Row>,
}

/// The client counts of the kernel's regression runs.
pub const THREADS: [u32; 9] = [2, 4, 8, 16, 32, 64, 128, 256, 512];

/// Transactions per thread for `threads` clients on `cpus` CPUs.
fn tx_for(per_thread: u32, threads: u32, cpus: u32) -> u32 {
    if threads <= cpus {
        per_thread
    } else {
        (u64::from(per_thread) * u64::from(cpus) / u64::from(threads)).max(1) as u32
    }
}

/// Seconds from the first client's start to the last client's end.
fn client_s(r: &RunResult) -> f64 {
    let jobs = r.tasks.iter().filter(|t| t.job);
    let start = jobs.clone().map(|t| t.created).min().unwrap_or(0);
    let end = jobs.map(|t| t.exited).max().unwrap_or(0);
    (end - start).max(1) as f64 / 1e9
}

/// Transactions per second: all transactions over the client phase.
fn tps(r: &RunResult, tx: u64) -> f64 {
    tx as f64 / client_s(r)
}

/// One run of the oltp server with `clients` client threads (transactions per thread scaled
/// as [`study`] does), scheduler spec `sched` and, when given, a node-level placement policy
/// on top. Returns the transactions per second and the run.
pub fn run_one(
    topo: &Arc<Topology>,
    clients: u32,
    base: &OltpParams,
    sched: &str,
    placement: Option<&PlacementSpec>,
    seed: u64,
) -> Result<(f64, RunResult), StudyError> {
    let cpus = topo.nr_cpus() as u32;
    let per = tx_for(base.tx_per_thread, clients, cpus);
    let p = OltpParams {
        clients,
        tx_per_thread: per,
        ..base.clone()
    };
    let r = run_placed(topo, oltp(&p), sched, placement, seed)?;
    Ok((tps(&r, u64::from(clients) * u64::from(per)), r))
}

pub fn study(
    machine_name: &str,
    threads: &[u32],
    base: &OltpParams,
    mode: &str,
    seed: u64,
) -> Result<Oltp, StudyError> {
    let topo = machine(machine_name)?;
    let cpus = topo.nr_cpus() as u32;
    let runs: Vec<(u32, &str)> = threads
        .iter()
        .flat_map(|&n| [(n, "off"), (n, mode)])
        .collect();
    let results = runs
        .par_iter()
        .map(|&(n, mode)| {
            run_one(
                &topo,
                n,
                base,
                &format!("linux:numa_balancing={mode}"),
                None,
                seed,
            )
            .map(|(_, r)| r)
        })
        .collect::<Result<Vec<RunResult>, StudyError>>()?;
    let rows = threads
        .iter()
        .zip(results.chunks(2))
        .map(|(&n, pair)| {
            let tx = u64::from(n) * u64::from(tx_for(base.tx_per_thread, n, cpus));
            let (off, on) = (tps(&pair[0], tx), tps(&pair[1], tx));
            Row {
                threads: n,
                tps_off: off,
                tps_on: on,
                diff_pct: (on / off - 1.0) * 100.0,
                client_s_on: client_s(&pair[1]),
                scan_passes_on: pair[1].counters.numa.numa_scan_passes,
                hint_faults_on: pair[1].counters.numa.numa_hint_faults,
                hint_faults_local_on: pair[1].counters.numa.numa_hint_faults_local,
                pages_migrated_on: pair[1].counters.numa.numa_pages_migrated,
            }
        })
        .collect();
    Ok(Oltp {
        machine: topo.name.clone(),
        mode: mode.to_string(),
        tx_per_thread: base.tx_per_thread,
        rows,
    })
}

impl Oltp {
    /// The compared mode as the table names it (`on` keeps its old column titles).
    fn mode_label(&self) -> String {
        if self.mode == "on" {
            "on".into()
        } else {
            format!("`{}`", self.mode)
        }
    }

    pub fn to_markdown(&self) -> String {
        let mut s = format!(
            "### oltp on {} ({} transactions per client thread, scaled by CPUs / threads above the CPU count)\n\n\
             | threads | tx/s balancing off | tx/s {t} | difference | client phase ({m}) | scan passes ({m}) | hint faults ({m}) | local | pages migrated ({m}) |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            self.machine,
            self.tx_per_thread,
            t = if self.mode == "on" {
                "balancing on".to_string()
            } else {
                self.mode_label()
            },
            m = self.mode_label()
        );
        for r in &self.rows {
            let local = if r.hint_faults_on == 0 {
                "-".to_string()
            } else {
                format!(
                    "{:.0}%",
                    r.hint_faults_local_on as f64 * 100.0 / r.hint_faults_on as f64
                )
            };
            s += &format!(
                "| {} | {:.0} | {:.0} | {:+.2}% | {:.2} s | {} | {} | {} | {} |\n",
                r.threads,
                r.tps_off,
                r.tps_on,
                r.diff_pct,
                r.client_s_on,
                r.scan_passes_on,
                r.hint_faults_on,
                local,
                r.pages_migrated_on
            );
        }
        s += "\nScan passes and hinting faults count from the server's start, its buffer \
              initialisation included; each pass unmaps at most `scan_size_mb` of the process. \
              Whether a faulting page group moves is decided by the two-stage filter \
              (`should_numa_migrate_memory`): a group shared between threads moves only when its \
              previous fault came from the same node, or when the process's numa group runs \
              mostly on the faulting node.\n";
        s
    }
}
