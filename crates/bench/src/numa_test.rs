//! The dispatcher: start N workers together, measure where each one runs, start the load
//! peak three seconds in, wait for everything, and turn it into the simulator's figures
//! ([`report::RunFigures`], [`report::CellSummary`], the `report` crate's, shared with the
//! simulator).
//!
//! # Per-node time without a kernel patch
//!
//! Every `sample` interval (10 ms by default) the dispatcher reads each live worker's
//! `/proc/PID/stat` and charges the worker's user time accumulated since the previous sample
//! (field 14, utime) to the node of the CPU it is seen on now (field 39, processor). The
//! zombie of a worker that has exited still has its final times, and the worker itself
//! reports its CPU and utime at the end of the job, so the last stretch is charged too; the
//! difference between the sampled total and the kernel's `getrusage` user time (clock-tick
//! rounding) goes to the node the worker ended on.
//!
//! The samples telescope, so each job's total is exact; only the split between nodes can be
//! wrong, and only around a change of node: time run on node A just before a move to B is
//! charged to B if it falls after A's last sample. Each node change (seen or unseen)
//! misattributes at most one sample interval plus the kernel's accounting granularity
//! (utime is kept in clock ticks of 10 ms, and a running task's time lags by up to one
//! scheduler tick): at most about `interval + 14 ms` per change. A worker that leaves a node and
//! comes back within one interval is not seen to have left.

use crate::error::BenchError;
use crate::hackbench::{self, HackbenchParams};
use crate::worker::{WorkerParams, WorkerReport, worker_seed};
use linux::Live;
use linux::nodemap::CpuNodeMap;
use linux::procfs::{self, stat::StatReader};
use report::{CellSummary, JobRow, RunFigures};
use std::io::Read as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The scheduler column of a benchmark run: the host kernel's own scheduler.
pub const SCHEDULER: &str = "host";

/// How to start a worker: a program and the arguments before the worker's own.
#[derive(Clone, Debug)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub prefix_args: Vec<String>,
}

/// The disturbance: a hackbench load peak started `at` after the jobs.
#[derive(Clone, Debug)]
pub struct Disturbance {
    pub at: Duration,
    pub hackbench: HackbenchParams,
    /// Its senders and receivers are processes forked by a helper started with this command
    /// (`homenode bench hackbench`, [`crate::hackbench_procs`]), as in the original; `None`:
    /// threads of the dispatcher (`hackbench -T`).
    pub processes: Option<WorkerCommand>,
}

impl Disturbance {
    /// "G groups of processes at T s" (or "of threads").
    pub fn describe(&self) -> String {
        let tasks = if self.processes.is_some() {
            "processes"
        } else {
            "threads"
        };
        format!(
            "{} groups of {tasks} at {} s",
            self.hackbench.groups,
            self.at.as_secs_f64()
        )
    }
}

/// One run's configuration.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub worker: WorkerCommand,
    pub tasks: u32,
    /// PROBLEMSIZE.
    pub size: u64,
    pub passes: u32,
    /// Seed of this run (each worker derives its own from it).
    pub seed: u64,
    /// Sampling interval; `None` switches measuring off (the overhead benchmark's baseline:
    /// the dispatcher then just waits for the workers).
    pub sample: Option<Duration>,
    pub disturb: Option<Disturbance>,
    pub nodes: CpuNodeMap,
    /// Root of the filesystem whose `proc/` is read, `/`.
    pub root: PathBuf,
    /// Test hook: this worker (1-based) kills itself with SIGKILL after initialising.
    pub kill_worker: Option<usize>,
}

/// What happened to the load peak in one run.
#[derive(Clone, Debug, PartialEq)]
pub enum PeakOutcome {
    /// `--no-disturb`.
    Off,
    /// It ran, for this long.
    Ran(Duration),
}

/// The result of one run.
#[derive(Clone, Debug)]
pub struct BenchRun {
    /// The simulator's figures: `events` holds the number of `/proc` samples taken,
    /// `node_migrations` the node changes seen, `refused` is zero (not observable).
    pub figures: RunFigures,
    pub peak: PeakOutcome,
    /// The workers' own reports, in job order.
    pub reports: Vec<WorkerReport>,
    /// CPU time (user + system) the dispatcher's sampling thread used: the direct cost of
    /// measuring.
    pub sampler_cpu_s: f64,
}

/// One live worker and what was measured about it.
struct Job {
    index: usize,
    child: Child,
    pid: u32,
    stat: StatReader,
    status: Option<ExitStatus>,
    last_utime: Option<u64>,
    last_node: Option<usize>,
    /// Node of the first sample.
    first_node: Option<usize>,
    node_ticks: Vec<u64>,
    node_changes: u32,
}

/// Kills and reaps the workers still running when it is dropped (an error, a panic), so no
/// worker outlives its dispatcher.
struct Jobs(Vec<Job>);

impl Drop for Jobs {
    fn drop(&mut self) {
        for j in &mut self.0 {
            if j.status.is_none() {
                let _ = j.child.kill();
                let _ = j.child.wait();
            }
        }
    }
}

fn describe(status: ExitStatus) -> String {
    if let Some(sig) = status.signal() {
        let name = nix::sys::signal::Signal::try_from(sig)
            .map(|s| s.as_str().to_string())
            .unwrap_or_else(|_| format!("signal {sig}"));
        format!("was killed by signal {sig} ({name})")
    } else {
        format!("exited with status {}", status.code().unwrap_or(-1))
    }
}

/// Starts the `cfg.tasks` workers, each with its own seed; `on_spawn` as in [`run_once`].
fn spawn_jobs(cfg: &RunConfig, on_spawn: &mut dyn FnMut(usize, u32)) -> Result<Jobs, BenchError> {
    let nr_nodes = cfg.nodes.nr_nodes();
    let mut jobs = Jobs(Vec::new());
    for i in 1..=cfg.tasks as usize {
        let wp = WorkerParams {
            index: i,
            size: cfg.size,
            passes: cfg.passes,
            seed: worker_seed(cfg.seed, i),
            kill_self: cfg.kill_worker == Some(i),
            root: cfg.root.clone(),
        };
        let child = Command::new(&cfg.worker.program)
            .args(&cfg.worker.prefix_args)
            .args(wp.to_args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| BenchError::Spawn {
                worker: i,
                program: cfg.worker.program.display().to_string(),
                source,
            })?;
        let pid = child.id();
        on_spawn(i, pid);
        jobs.0.push(Job {
            index: i,
            child,
            pid,
            stat: StatReader::of_pid(&cfg.root, pid),
            status: None,
            last_utime: None,
            last_node: None,
            first_node: None,
            node_ticks: vec![0; nr_nodes],
            node_changes: 0,
        });
    }
    Ok(jobs)
}

/// Run the benchmark once. `on_spawn(job, pid)` is called as each worker starts (job is
/// 1-based).
pub fn run_once(
    cfg: &RunConfig,
    on_spawn: &mut dyn FnMut(usize, u32),
) -> Result<BenchRun, BenchError> {
    if cfg.tasks == 0 {
        return Err(BenchError::Config("N must be at least 1".into()));
    }
    let t0 = Instant::now();
    let mut jobs = spawn_jobs(cfg, on_spawn)?;

    // The disturbance waits in its own thread until it is due and then runs, as the original
    // dispatch script did (`sleep 3; hackbench 20`), even when the jobs are already done: the
    // elapsed time then includes it, as in the simulator. Only a failed run cancels it.
    let (cancel_tx, cancel_rx) = mpsc::channel::<()>();
    let peak = cfg.disturb.clone().map(|d| {
        std::thread::spawn(move || -> Option<Result<Duration, BenchError>> {
            let due = t0 + d.at;
            match cancel_rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Err(mpsc::RecvTimeoutError::Timeout) => Some(match &d.processes {
                    Some(cmd) => crate::hackbench_procs::run(cmd, &d.hackbench),
                    None => hackbench::run(&d.hackbench),
                }),
                _ => None,
            }
        })
    });

    let mut samples = 0u64;
    let cpu0 = thread_cpu_s();
    let waited = match cfg.sample {
        Some(interval) => sample_loop(cfg, &mut jobs, interval, &mut samples),
        None => wait_all(&mut jobs),
    };
    let sampler_cpu_s = (thread_cpu_s() - cpu0).max(0.0);
    if waited.is_err() {
        let _ = cancel_tx.send(());
    }
    let peak = match peak {
        None => PeakOutcome::Off,
        Some(h) => match h.join() {
            // Cancelled: only when the run failed, which is reported below.
            Ok(None) => PeakOutcome::Off,
            Ok(Some(Ok(d))) => PeakOutcome::Ran(d),
            Ok(Some(Err(e))) => return Err(waited.err().unwrap_or(e)),
            Err(_) => {
                return Err(waited.err().unwrap_or(BenchError::Hackbench(
                    "the hackbench thread panicked".into(),
                )));
            }
        },
    };
    drop(cancel_tx);
    let elapsed = t0.elapsed();
    waited?;

    // Everything exited with status 0: read the reports.
    let mut rows = Vec::new();
    let mut reports = Vec::new();
    for j in &mut jobs.0 {
        let report = read_report(j)?;
        rows.push(job_row(j, &report, &cfg.nodes));
        reports.push(report);
    }
    let node_migrations = rows.iter().map(|r| u64::from(r.node_migrations)).sum();
    let hackbench_s = match &peak {
        PeakOutcome::Ran(d) => d.as_secs_f64(),
        _ => 0.0,
    };
    Ok(BenchRun {
        figures: RunFigures::from_jobs(
            rows,
            elapsed.as_secs_f64(),
            hackbench_s,
            samples,
            node_migrations,
            [0; 3],
        ),
        peak,
        reports,
        sampler_cpu_s,
    })
}

/// CPU time of the calling thread so far (user + system), seconds; 0 if it cannot be read.
fn thread_cpu_s() -> f64 {
    crate::probe::thread_cpu_s().unwrap_or(0.0)
}

/// Charge the user time since the last sample to the node of the CPU seen now.
fn charge(j: &mut Job, utime: u64, cpu: usize, nodes: &CpuNodeMap) {
    let node = nodes.node_or_zero(cpu);
    let delta = utime.saturating_sub(j.last_utime.unwrap_or(0));
    j.node_ticks[node] += delta;
    if j.last_node.is_some_and(|n| n != node) {
        j.node_changes += 1;
    }
    j.last_node = Some(node);
    j.first_node.get_or_insert(node);
    j.last_utime = Some(utime.max(j.last_utime.unwrap_or(0)));
}

/// Sample every live job, reap the ones that ended, until all have; stop at the first
/// failure.
fn sample_loop(
    cfg: &RunConfig,
    jobs: &mut Jobs,
    interval: Duration,
    samples: &mut u64,
) -> Result<(), BenchError> {
    let mut next = Instant::now();
    loop {
        for j in jobs.0.iter_mut().filter(|j| j.status.is_none()) {
            if let Live::Alive(st) = j.stat.read()? {
                *samples += 1;
                charge(j, st.utime, st.processor, &cfg.nodes);
            }
        }
        let mut live = 0;
        for k in 0..jobs.0.len() {
            if jobs.0[k].status.is_some() {
                continue;
            }
            let j = &mut jobs.0[k];
            match j.child.try_wait() {
                Ok(Some(st)) => {
                    j.status = Some(st);
                    if !st.success() {
                        return Err(failed(j, st));
                    }
                }
                Ok(None) => live += 1,
                Err(source) => {
                    return Err(BenchError::Wait {
                        worker: j.index,
                        pid: j.pid,
                        source,
                    });
                }
            }
        }
        if live == 0 {
            return Ok(());
        }
        next += interval;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
}

/// Without measuring: wait for each job in turn.
fn wait_all(jobs: &mut Jobs) -> Result<(), BenchError> {
    for j in jobs.0.iter_mut() {
        let st = j.child.wait().map_err(|source| BenchError::Wait {
            worker: j.index,
            pid: j.pid,
            source,
        })?;
        j.status = Some(st);
        if !st.success() {
            return Err(failed(j, st));
        }
    }
    Ok(())
}

/// The error of a job that ended badly, with the last line it wrote on stderr.
fn failed(j: &mut Job, st: ExitStatus) -> BenchError {
    let mut err = String::new();
    if let Some(mut e) = j.child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let mut how = describe(st);
    if let Some(last) = err.lines().rev().find(|l| !l.trim().is_empty()) {
        how.push_str(": ");
        how.push_str(last.trim());
    }
    BenchError::WorkerFailed {
        worker: j.index,
        pid: j.pid,
        how,
    }
}

fn read_report(j: &mut Job) -> Result<WorkerReport, BenchError> {
    let mut out = String::new();
    if let Some(mut o) = j.child.stdout.take() {
        o.read_to_string(&mut out)
            .map_err(|source| BenchError::Wait {
                worker: j.index,
                pid: j.pid,
                source,
            })?;
    }
    let line = out.lines().rev().find(|l| l.trim_start().starts_with('{'));
    let bad = |how: String| BenchError::WorkerFailed {
        worker: j.index,
        pid: j.pid,
        how,
    };
    let line = line.ok_or_else(|| bad("exited with status 0 but wrote no report".into()))?;
    serde_json::from_str(line).map_err(|e| bad(format!("wrote a report that does not parse: {e}")))
}

/// The report line of one job.
fn job_row(j: &mut Job, r: &WorkerReport, nodes: &CpuNodeMap) -> JobRow {
    let nr_nodes = nodes.nr_nodes();
    let isched = r.start_cpu.map(|c| nodes.node_or_zero(c));
    // The worker's own last reading: the stretch after the dispatcher's last sample.
    if let (Some(cpu), Some(ut)) = (r.end_cpu, r.end_utime_ticks) {
        if j.last_utime.is_none_or(|l| ut > l) {
            charge(j, ut, cpu, nodes);
        }
    }
    let end_node = j
        .last_node
        .or(r.end_cpu.map(|c| nodes.node_or_zero(c)))
        .or(isched)
        .unwrap_or(0);
    let hz = clock_ticks_per_sec();
    let mut node_s: Vec<f64> = j.node_ticks.iter().map(|&t| t as f64 / hz).collect();
    let sampled: f64 = node_s.iter().sum();
    // Clock-tick rounding: the kernel's exact user time decides the total.
    if r.user_s > sampled {
        node_s[end_node] += r.user_s - sampled;
    }
    let total: f64 = node_s.iter().sum();
    let node_pct: Vec<f64> = if total > 0.0 {
        report::node_share_pct(&node_s)
    } else {
        (0..nr_nodes)
            .map(|n| if n == end_node { 100.0 } else { 0.0 })
            .collect()
    };
    // Most time; the lowest node on a tie, as the simulator does.
    let msched = report::busiest_node(&node_pct, nr_nodes);
    // Memory on a node the topology leaves out (memory-only) counts in the total only.
    let (mem_cols, _) = nodes.mem_columns(&r.mem_node_bytes);
    let mem_total: u64 = r.mem_node_bytes.iter().sum();
    let mem_pct = report::mem_pct(&mem_cols, mem_total);
    // A start on another node than the first sample is a change of node too.
    let first_change =
        u32::from(isched.is_some() && j.first_node.is_some() && j.first_node != isched);
    JobRow {
        node_pct,
        isched,
        msched,
        user_s: r.user_s,
        sys_s: r.sys_s,
        mem_pct,
        home_node: None,
        node_migrations: j.node_changes + first_change,
    }
}

/// `sysconf(_SC_CLK_TCK)`: the unit of utime and stime in `/proc/PID/stat` (100 when the
/// call fails, as on every common architecture).
pub fn clock_ticks_per_sec() -> f64 {
    use nix::unistd::{SysconfVar, sysconf};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as f64,
        _ => 100.0,
    }
}

/// Summary of one N over its repetitions, in the simulator's schema.
pub fn summarise(tasks: u32, options: &[(String, String)], runs: &[BenchRun]) -> CellSummary {
    let figures: Vec<RunFigures> = runs.iter().map(|r| r.figures.clone()).collect();
    report::summarise(SCHEDULER, options, tasks, &figures)
}

/// A whole benchmark: every task count, `reps` runs each.
#[derive(Clone, Debug)]
pub struct NumaTestSet {
    pub tasks: Vec<u32>,
    pub reps: u32,
    /// Master seed; run `rep` of N uses [`report::run_seed`]`(seed, N, rep)`, as the
    /// simulator does.
    pub seed: u64,
    /// Everything else; its `tasks` and `seed` are set per run.
    pub run: RunConfig,
}

/// The options column of the benchmark's cells: what the host and the run were.
pub fn host_options(set: &NumaTestSet, runs: &[BenchRun]) -> Vec<(String, String)> {
    let r = &set.run;
    let value =
        |name: &str| procfs::read_sysctl(&r.root, name).unwrap_or_else(|| "unknown".to_string());
    let mut v = vec![
        ("kernel".to_string(), value("kernel/osrelease")),
        ("numa_balancing".to_string(), value("kernel/numa_balancing")),
        (
            if r.nodes.is_fake() {
                "fake_numa"
            } else {
                "nodes"
            }
            .to_string(),
            r.nodes.node_lists().join("|"),
        ),
        (
            "sample_ms".to_string(),
            r.sample
                .map_or("off".to_string(), |d| format!("{}", d.as_secs_f64() * 1e3)),
        ),
    ];
    let peak = match &r.disturb {
        None => "off".to_string(),
        Some(d) => {
            let ran = runs
                .iter()
                .filter(|x| matches!(x.peak, PeakOutcome::Ran(_)))
                .count();
            format!("{}, ran in {ran} of {} runs", d.describe(), runs.len())
        }
    };
    v.push(("hackbench".to_string(), peak));
    v
}

/// Check that N jobs of PROBLEMSIZE fit in the memory available now (20 bytes per element
/// per job).
pub fn check_memory(set: &NumaTestSet) -> Result<(), BenchError> {
    let n = set.tasks.iter().copied().max().unwrap_or(1);
    let need = set.run.size.saturating_mul(20).saturating_mul(u64::from(n));
    let avail = procfs::meminfo::read_mem_available(&set.run.root)?;
    if need > avail / 10 * 9 {
        return Err(BenchError::Config(format!(
            "--size {} with {n} jobs needs {} MiB, more than 90% of the {} MiB available",
            set.run.size,
            need >> 20,
            avail >> 20
        )));
    }
    Ok(())
}

/// Run the whole set. `on_run(N, rep)` is called after each run; `on_cell` with each
/// finished task count (its summary and its runs) before the next starts, so a caller can
/// show results as they come. The first failure ends the set with an error naming N and the
/// repetition; the runs of a failed task count are not summarised.
pub fn run_set(
    set: &NumaTestSet,
    on_spawn: &mut dyn FnMut(u32, u32, usize, u32),
    on_run: &mut dyn FnMut(u32, u32),
    on_cell: &mut dyn FnMut(&CellSummary, &[BenchRun]),
) -> Result<Vec<CellSummary>, BenchError> {
    if set.tasks.is_empty() || set.tasks.contains(&0) {
        return Err(BenchError::Config("N must be at least 1".into()));
    }
    if set.reps == 0 {
        return Err(BenchError::Config("--reps must be at least 1".into()));
    }
    let mut cells = Vec::new();
    for &n in &set.tasks {
        let mut runs = Vec::new();
        for rep in 0..set.reps {
            let cfg = RunConfig {
                tasks: n,
                seed: report::run_seed(set.seed, n, rep),
                ..set.run.clone()
            };
            let r =
                run_once(&cfg, &mut |job, pid| on_spawn(n, rep + 1, job, pid)).map_err(|e| {
                    BenchError::Run {
                        tasks: n,
                        rep: rep + 1,
                        err: Box::new(e),
                    }
                })?;
            runs.push(r);
            on_run(n, rep + 1);
        }
        let cell = summarise(n, &host_options(set, &runs), &runs);
        on_cell(&cell, &runs);
        cells.push(cell);
    }
    Ok(cells)
}
