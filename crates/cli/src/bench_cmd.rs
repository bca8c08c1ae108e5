//! `homenode bench ...`: numa_test on this host, comparing it with a simulation, and what the
//! measuring costs.

use anyhow::{Context, Result, anyhow, bail};
use bench::numa_test::{self as bnt, Disturbance, NumaTestSet, RunConfig};
use bench::{CpuNodeMap, Report, WorkerCommand};
use clap::{Args, Subcommand};
use indicatif::ProgressBar;
use sim::numa_test as snt;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchCmd,
}

#[derive(Subcommand)]
enum BenchCmd {
    /// numa_test on this host: N random-update jobs started together, a hackbench load peak
    /// at t = 3 s, the share of each job's user time on each node.
    NumaTest(NumaTestArgs),
    /// A simulation and a benchmark side by side (both `numa-test --json` files), with the
    /// prediction error sim/bench - 1 of each figure.
    Compare {
        /// `homenode sim numa-test --json` output.
        sim: String,
        /// `homenode bench numa-test --json` output.
        bench: String,
    },
    /// What the per-node sampling costs the workers: the same jobs with sampling on and off,
    /// alternately; prints the median ratios (on / off) of their user time and elapsed time.
    Overhead(OverheadArgs),
    /// Memory latency (a pointer chase through a buffer far larger than the caches) and one
    /// core's streaming read rate, from every node to every node, and what all of a node's
    /// CPUs read together: the cost model's facts.
    Probe(ProbeArgs),
    /// One worker (started by numa-test).
    #[command(hide = true)]
    Worker {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The load peak's processes (started by numa-test): forks them and waits for them.
    #[command(hide = true)]
    Hackbench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Args)]
pub struct NumaTestArgs {
    /// Task counts N, comma separated (4 or 4,8,16).
    #[arg(value_name = "N", required = true, value_delimiter = ',')]
    tasks: Vec<u32>,
    /// PROBLEMSIZE: elements per array (20 bytes per element per job).
    #[arg(long, default_value_t = bench::worker::DEFAULT_SIZE)]
    size: u64,
    /// Passes over the arrays.
    #[arg(long, default_value_t = 100)]
    passes: u32,
    /// Repetitions per N.
    #[arg(long, default_value_t = 3)]
    reps: u32,
    /// Seed of the random indices (run `rep` of N derives its own, as the simulator does).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Do not start hackbench at t = 3 s.
    #[arg(long)]
    no_disturb: bool,
    /// hackbench groups (20 senders and 20 receivers each).
    #[arg(long, default_value_t = 20)]
    hackbench_groups: u32,
    /// hackbench's senders and receivers as threads of this process (`hackbench -T`) instead
    /// of processes (the original's).
    #[arg(long)]
    hackbench_threads: bool,
    /// Interval of the per-node sampling, milliseconds.
    #[arg(long, default_value_t = 10)]
    sample_ms: u64,
    /// Split the CPUs into K pseudo-nodes for the attribution (memory stays where it is).
    #[arg(long, value_name = "K")]
    fake_numa: Option<usize>,
    /// Print one JSON object (the schema of `homenode sim numa-test --json`) instead of tables.
    #[arg(long)]
    json: bool,
    /// Leave out the per-job tables.
    #[arg(long)]
    summary_only: bool,
    /// Start of the load peak, milliseconds after the jobs (tests).
    #[arg(long, default_value_t = 3000, hide = true)]
    disturb_at_ms: u64,
    /// Make worker I (1-based) kill itself with SIGKILL (tests).
    #[arg(long, hide = true)]
    test_kill_worker: Option<usize>,
    /// Run the whole set twice: without, then with `homenode run` active (started from this
    /// binary, managing this benchmark's processes, stopped with SIGTERM at the end).
    #[arg(long)]
    with_daemon: bool,
    /// A setting for the daemon of --with-daemon, as `homenode run --set KEY=VALUE`;
    /// repeatable (placement.homenode.min_rss_mib=16 lets it manage 20 MB jobs).
    #[arg(
        long = "daemon-set",
        value_name = "KEY=VALUE",
        requires = "with_daemon"
    )]
    daemon_set: Vec<String>,
}

#[derive(Args)]
pub struct ProbeArgs {
    /// Buffer size, MiB (make it many times the last-level cache).
    #[arg(long, default_value_t = bench::probe::ProbeConfig::default().mib)]
    mib: usize,
    /// Dependent loads per timed run.
    #[arg(long, default_value_t = bench::probe::ProbeConfig::default().loads)]
    loads: u64,
    /// Timed runs per figure (the median is printed).
    #[arg(long, default_value_t = bench::probe::ProbeConfig::default().rounds)]
    rounds: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct OverheadArgs {
    /// Jobs per run (default: one per CPU).
    #[arg(value_name = "N")]
    tasks: Option<u32>,
    #[arg(long, default_value_t = 2_000_000)]
    size: u64,
    #[arg(long, default_value_t = 100)]
    passes: u32,
    /// Pairs of runs (one sampled, one not).
    #[arg(long, default_value_t = 5)]
    runs: u32,
    #[arg(long, default_value_t = 10)]
    sample_ms: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(a: BenchArgs) -> Result<()> {
    match a.what {
        BenchCmd::NumaTest(a) => numa_test(a),
        BenchCmd::Compare { sim, bench } => compare(&sim, &bench),
        BenchCmd::Overhead(a) => overhead(a),
        BenchCmd::Probe(a) => probe(a),
        BenchCmd::Worker { args } => {
            let line =
                bench::worker::main_with_args(&args).map_err(|e| crate::usage(anyhow!("{e}")))?;
            outln!("{line}");
            Ok(())
        }
        BenchCmd::Hackbench { args } => {
            bench::hackbench_procs::helper_main(&args).map_err(|e| anyhow!("{e}"))
        }
    }
}

/// The host's CPU to node map, split into pseudo-nodes with `--fake-numa`.
fn host_nodes(fake: Option<usize>) -> Result<CpuNodeMap> {
    bench::host_cpu_nodes(Path::new("/"), fake).map_err(|e| anyhow!("{e}"))
}

fn worker_command() -> Result<WorkerCommand> {
    self_command("worker")
}

/// This binary's hidden `bench SUB` subcommand, as a command to start.
fn self_command(sub: &str) -> Result<WorkerCommand> {
    let program = std::env::current_exe()
        .with_context(|| format!("cannot find the homenode binary to start `bench {sub}`"))?;
    Ok(WorkerCommand {
        program,
        prefix_args: vec!["bench".into(), sub.into()],
    })
}

fn check_sizes(size: u64, passes: u32, sample_ms: u64) -> Result<()> {
    if size == 0 || size > bench::worker::MAX_SIZE {
        bail!("--size must be 1..={}", bench::worker::MAX_SIZE);
    }
    if passes == 0 {
        bail!("--passes must be at least 1");
    }
    if sample_ms == 0 || sample_ms > 10_000 {
        bail!("--sample-ms must be 1..=10000");
    }
    Ok(())
}

fn progress(total: u64, json: bool) -> Option<ProgressBar> {
    let b = (!json)
        .then(|| crate::progress::bar(total, "runs"))
        .flatten()?;
    // Runs last seconds: keep the clock moving (two wake-ups a second, next to the
    // sampler's hundred).
    b.enable_steady_tick(Duration::from_millis(500));
    Some(b)
}

/// Refuses bad arguments, and a bad daemon setting, before anything runs.
fn check_args(a: &NumaTestArgs) -> Result<()> {
    check_sizes(a.size, a.passes, a.sample_ms)?;
    if a.tasks.contains(&0) {
        bail!("N must be at least 1");
    }
    if let Some(n) = a
        .tasks
        .iter()
        .find(|&&n| a.tasks.iter().filter(|&&m| m == n).count() > 1)
    {
        bail!("N={n} is given twice");
    }
    if a.reps == 0 {
        bail!("--reps must be at least 1");
    }
    sim::budget::reps("--reps", f64::from(a.reps))?;
    if let Some(k) = a.test_kill_worker {
        if k == 0 || a.tasks.iter().all(|&n| k as u32 > n) {
            bail!("--test-kill-worker {k}: no such worker");
        }
    }
    if a.with_daemon {
        // Refuse a bad daemon setting before anything runs.
        let sets: Vec<(String, String)> = a
            .daemon_set
            .iter()
            .map(|s| {
                s.split_once('=')
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .ok_or_else(|| anyhow!("--daemon-set {s}: expected KEY=VALUE"))
            })
            .collect::<Result<_>>()?;
        linux::daemon::DaemonConfig::with_overrides("", "--daemon-set", &sets)
            .map_err(|e| anyhow!("--with-daemon: {e}"))?;
    }
    Ok(())
}

fn numa_test(a: NumaTestArgs) -> Result<()> {
    check_args(&a).map_err(crate::usage)?;
    let nodes = host_nodes(a.fake_numa).map_err(crate::usage)?;
    let hackbench_helper = if a.hackbench_threads {
        None
    } else {
        Some(self_command("hackbench")?)
    };
    let set = NumaTestSet {
        tasks: a.tasks.clone(),
        reps: a.reps,
        seed: a.seed,
        run: RunConfig {
            worker: worker_command()?,
            tasks: 1,
            size: a.size,
            passes: a.passes,
            seed: a.seed,
            sample: Some(Duration::from_millis(a.sample_ms)),
            disturb: (!a.no_disturb && a.hackbench_groups > 0).then(|| Disturbance {
                at: Duration::from_millis(a.disturb_at_ms),
                hackbench: bench::hackbench::HackbenchParams::groups(a.hackbench_groups),
                processes: hackbench_helper,
            }),
            nodes,
            root: PathBuf::from("/"),
            kill_worker: a.test_kill_worker,
        },
    };
    bnt::check_memory(&set).map_err(|e| crate::usage(anyhow!("{e}")))?;
    let machine = if let Some(k) = a.fake_numa {
        format!("host,fake-numa={k}")
    } else {
        "host".to_string()
    };
    let nr_nodes = set.run.nodes.nr_nodes();

    if !a.json {
        outln!("{}", header(&set, &a));
    }
    let mut cells = run_cells(&set, &a, nr_nodes, "")?;
    if a.with_daemon {
        let program = set.run.worker.program.clone();
        let d = bench::daemon::DaemonChild::start(&program, &a.daemon_set, a.fake_numa)
            .map_err(|e| anyhow!("--with-daemon: {e}"))?;
        let daemon_args = d.args.join(" ");
        if !a.json {
            outln!("== The same set with `homenode {daemon_args}` active\n");
        }
        let with = run_cells(&set, &a, nr_nodes, "+homenode run");
        let log = d.stop().map_err(|e| anyhow!("--with-daemon: {e}"))?;
        let mut with = with?;
        let actions = log.lines().filter(|l| l.contains(" -> ")).count();
        for c in &mut with {
            c.options.push(("daemon".into(), daemon_args.clone()));
            c.options
                .push(("daemon_actions".into(), actions.to_string()));
        }
        if !a.json {
            outln!("daemon: {actions} actions taken; its log:");
            for l in log
                .lines()
                .filter(|l| l.contains(" -> ") || l.contains("WARN") || l.contains("ERROR"))
            {
                outln!("  {l}");
            }
            outln!("");
        }
        cells.extend(with);
    }
    if a.json {
        let r = Report {
            machine,
            problem_size: a.size,
            passes: a.passes,
            disturb: set.run.disturb.is_some(),
            seed: a.seed,
            results: cells,
        };
        outln!("{}", r.to_json());
    } else {
        outln!(
            "== Summary: mean(stddev) in seconds over {}",
            topo::count(a.reps, "rep")
        );
        out!("{}", snt::comparison_table(&cells));
    }
    Ok(())
}

/// Runs the set once; `suffix` is added to the cells' scheduler label.
fn run_cells(
    set: &NumaTestSet,
    a: &NumaTestArgs,
    nr_nodes: usize,
    suffix: &str,
) -> Result<Vec<snt::CellSummary>> {
    let total = a.tasks.len() as u64 * u64::from(a.reps);
    let bar = progress(total, a.json);
    let mut printed: Result<()> = Ok(());
    let cells = bnt::run_set(
        set,
        &mut |n, rep, _, _| {
            if let Some(b) = &bar {
                b.set_message(format!("N={n} rep {rep}"));
            }
        },
        &mut |_, _| {
            if let Some(b) = &bar {
                b.inc(1);
            }
        },
        &mut |cell, _runs| {
            if a.json || a.summary_only || printed.is_err() {
                return;
            }
            let text = cell_block(cell, nr_nodes, suffix);
            printed = match &bar {
                Some(b) => b.suspend(|| crate::emit(&text)),
                None => crate::emit(&text),
            }
            .map_err(anyhow::Error::from);
        },
    );
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    printed?;
    let mut cells = cells.map_err(|e| anyhow!("{e}"))?;
    for c in &mut cells {
        c.scheduler.push_str(suffix);
    }
    Ok(cells)
}

fn header(set: &NumaTestSet, a: &NumaTestArgs) -> String {
    let r = &set.run;
    let kernel =
        linux::procfs::read_sysctl(&r.root, "kernel/osrelease").unwrap_or_else(|| "?".into());
    let nb = linux::procfs::read_sysctl(&r.root, "kernel/numa_balancing")
        .unwrap_or_else(|| "absent".into());
    let nodes = r.nodes.node_lists();
    let layout = format!(
        "{} in {} {}node{} ({})",
        topo::count(r.nodes.cpus().len(), "CPU"),
        nodes.len(),
        if r.nodes.is_fake() { "pseudo-" } else { "" },
        if nodes.len() == 1 { "" } else { "s" },
        nodes.join(" | ")
    );
    let peak = match &r.disturb {
        None => "off".to_string(),
        Some(d) => d.describe(),
    };
    format!(
        "numa_test on host (Linux {kernel}, {layout}, numa_balancing={nb}): PROBLEMSIZE {}, {}, hackbench {peak}, {}, seed {}, sampling every {} ms\n",
        a.size,
        topo::count(a.passes, "pass"),
        topo::count(a.reps, "rep"),
        a.seed,
        a.sample_ms
    )
}

fn cell_block(c: &snt::CellSummary, nr_nodes: usize, suffix: &str) -> String {
    let mut s = format!(
        "== host{suffix} N={} (jobs of rep 1 of {})\n",
        c.tasks, c.reps
    );
    s.push_str(&snt::job_table(&c.jobs, nr_nodes));
    s.push_str(&snt::summary_block(c));
    let samples = c.events;
    s.push_str(&format!(
        "({samples:.0} /proc samples per run, {:.1} node changes seen per run)\n\n",
        c.node_migrations
    ));
    s
}

fn compare(sim_path: &str, bench_path: &str) -> Result<()> {
    let s = Report::read(sim_path).map_err(|e| anyhow!("{e}"))?;
    let b = Report::read(bench_path).map_err(|e| anyhow!("{e}"))?;
    out!("{}", bench::report::compare(&s, sim_path, &b, bench_path));
    Ok(())
}

fn probe(a: ProbeArgs) -> Result<()> {
    let cfg = bench::probe::ProbeConfig {
        mib: a.mib,
        loads: a.loads,
        rounds: a.rounds,
        seed: a.seed,
    };
    let r = bench::probe::run(std::path::Path::new("/"), &cfg).context("memory probe")?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        out!("{}", r.to_text());
    }
    Ok(())
}

fn overhead(a: OverheadArgs) -> Result<()> {
    check_sizes(a.size, a.passes, a.sample_ms).map_err(crate::usage)?;
    let nodes = host_nodes(None)?;
    let tasks = a.tasks.unwrap_or(nodes.cpus().len() as u32).max(1);
    if a.runs == 0 {
        return Err(crate::usage(anyhow!("--runs must be at least 1")));
    }
    let cfg = RunConfig {
        worker: worker_command()?,
        tasks,
        size: a.size,
        passes: a.passes,
        seed: a.seed,
        sample: None,
        disturb: None,
        nodes,
        root: PathBuf::from("/"),
        kill_worker: None,
    };
    bnt::check_memory(&NumaTestSet {
        tasks: vec![tasks],
        reps: 1,
        seed: a.seed,
        run: cfg.clone(),
    })
    .map_err(|e| anyhow!("{e}"))?;
    outln!(
        "sampling overhead: N={tasks}, PROBLEMSIZE {}, {} passes, sampling every {} ms, {} pairs",
        a.size,
        a.passes,
        a.sample_ms,
        a.runs
    );
    outln!("{}", bench::overhead::header());
    let mut printed: Result<()> = Ok(());
    let r = bench::overhead::measure(
        &cfg,
        Duration::from_millis(a.sample_ms),
        a.runs,
        &mut |i, p| {
            if printed.is_ok() {
                printed = crate::emit(&format!("{}\n", p.row(i))).map_err(anyhow::Error::from);
            }
        },
    )
    .map_err(|e| anyhow!("{e}"))?;
    printed?;
    outln!("{}", r.summary());
    Ok(())
}
