//! `homenode sim ...`

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use policy::NodePolicy as _;
use sim::numa_test::{self as nt, Matrix};
use sim::sched::SchedSpec;
use sim::workload::NumaTestParams;
use std::sync::Arc;
use std::time::Instant;

#[derive(Args)]
pub struct SimArgs {
    #[command(subcommand)]
    what: Option<SimCmd>,
}

#[derive(Subcommand)]
enum SimCmd {
    /// The numa_test benchmark: N random-update jobs plus a hackbench load peak at t = 3 s.
    NumaTest(NumaTestArgs),
    /// A workload file (workloads/*.toml) on one machine with one scheduler.
    Workload(WorkloadArgs),
}

#[derive(Args, Clone)]
pub struct NumaTestArgs {
    /// Machine: preset name, spec file (.toml) or synthetic spec (nodes=4,cpus-per-node=4,remote-ratio=1.6).
    #[arg(long, default_value = "azusa16")]
    machine: String,
    /// A cost-model figure of the machine, PARAM=VALUE (repeatable): freq_mhz, out_of_order
    /// (0 or 1), mlp, stream_mlp, llc_latency_ns, llc_kib, local_latency_ns, bandwidth_gbps,
    /// remote_bandwidth_ratio
    /// (`homenode bench probe` prints this host's).
    #[arg(long = "machine-set", value_name = "PARAM=VALUE")]
    machine_set: Vec<String>,
    /// Schedulers, comma separated; options after a colon (o1,node-affine-static:home_bonus=2).
    #[arg(long, default_value = "o1,node-affine-static,node-affine-dynamic")]
    sched: String,
    /// Task counts, comma separated.
    #[arg(long, default_value = "4,8,16,32,64", value_delimiter = ',')]
    tasks: Vec<u32>,
    /// Repetitions per (scheduler, N).
    #[arg(long, default_value_t = 10)]
    reps: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// PROBLEMSIZE: elements per array (20 bytes per element per job); 1,000,000 when only
    /// --passes is given. Without both: chosen for the machine (docs/WORKLOADS.md).
    #[arg(long)]
    size: Option<u64>,
    /// Passes over the arrays; 100 when only --size is given. Without both: chosen for the
    /// machine so that a lone job runs past the disturbance (docs/WORKLOADS.md).
    #[arg(long)]
    passes: Option<u32>,
    /// Do not start hackbench at t = 3 s.
    #[arg(long)]
    no_disturb: bool,
    /// Messages a hackbench receiver's socket holds before its senders block (0: no limit;
    /// docs/model/left-out.md).
    #[arg(long, default_value_t = NumaTestParams::default().hackbench_buffer_msgs)]
    socket_buffer: u32,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
    /// Shortest simulated time between two refreshes of memory contention: 0 (exact) after
    /// every switch of memory-bound work; 1ms for machines of hundreds of CPUs (docs/model/memory-and-cost.md).
    #[arg(long, default_value = "0", value_parser = contention_period)]
    contention_period: sim::time::Ns,
    /// Leave out the per-job tables.
    #[arg(long)]
    summary_only: bool,
    /// Print simulator speed (events, events per second, wall time) to stderr.
    #[arg(long)]
    stats: bool,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    #[arg(long, default_value = "none", help = placement_help(
        "Node-level placement on top of each scheduler, as the daemon would run it",
        "homenode:min_rss_mib=16,interval_s=1",
    ))]
    placement: String,
}

#[derive(Args)]
pub struct WorkloadArgs {
    /// Workload file.
    file: String,
    #[arg(long, default_value = "azusa16")]
    machine: String,
    /// A cost-model figure of the machine, PARAM=VALUE (repeatable), as for `numa-test`.
    #[arg(long = "machine-set", value_name = "PARAM=VALUE")]
    machine_set: Vec<String>,
    #[arg(long, default_value = "o1")]
    sched: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    json: bool,
    /// Shortest simulated time between two refreshes of memory contention: 0 (exact) after
    /// every switch of memory-bound work; 1ms for machines of hundreds of CPUs (docs/model/memory-and-cost.md).
    #[arg(long, default_value = "0", value_parser = contention_period)]
    contention_period: sim::time::Ns,
    #[arg(long, default_value = "none", help = placement_help(
        "Node-level placement",
        "homenode:min_cpu=0.3",
    ))]
    placement: String,
    /// With a placement: list, after its actions, what each decision held back and why (the
    /// policy's notes, docs/PLACEMENT.md).
    #[arg(long)]
    notes: bool,
}

impl Default for NumaTestArgs {
    fn default() -> Self {
        NumaTestArgs {
            machine: "azusa16".into(),
            machine_set: Vec::new(),
            sched: "o1,node-affine-static,node-affine-dynamic".into(),
            tasks: vec![4, 8, 16, 32, 64],
            reps: 10,
            seed: 1,
            size: None,
            passes: None,
            no_disturb: false,
            socket_buffer: NumaTestParams::default().hackbench_buffer_msgs,
            json: false,
            contention_period: sim::kernel::CONTENTION_PERIOD,
            summary_only: false,
            stats: false,
            threads: None,
            placement: "none".into(),
        }
    }
}

pub fn run(a: SimArgs) -> Result<()> {
    match a.what {
        None => numa_test(NumaTestArgs::default()),
        Some(SimCmd::NumaTest(a)) => numa_test(a),
        Some(SimCmd::Workload(a)) => workload(a),
    }
}

fn machine(arg: &str) -> Result<Arc<topo::Topology>> {
    machine_with_sets(arg, &[])
}

/// The machine `arg` with each `--machine-set PARAM=VALUE` applied in order.
fn machine_with_sets(arg: &str, sets: &[String]) -> Result<Arc<topo::Topology>> {
    // A name that is no preset or synthetic spec is a usage error; a spec file that does not
    // read or parse is not.
    let is_file = arg.contains('/') || arg.ends_with(".toml");
    let t = topo::resolve_machine(arg).map_err(|e| {
        let e = anyhow!("{e}");
        if is_file { e } else { crate::usage(e) }
    })?;
    Ok(Arc::new(machine_sets(t, sets).map_err(crate::usage)?))
}

/// Each `--machine-set PARAM=VALUE` applied in order to `t`.
fn machine_sets(mut t: topo::Topology, sets: &[String]) -> Result<topo::Topology> {
    use sim::experiments::sweep::{MACHINE_PARAMS, MachineParamError, machine_value, machine_with};
    for item in sets {
        let Some((k, v)) = item.split_once('=') else {
            let valid = MACHINE_PARAMS.join(", ");
            bail!("--machine-set `{item}`: expected PARAM=VALUE (PARAM: {valid})");
        };
        let (k, v) = (k.trim(), v.trim());
        let v = machine_value(k, v).map_err(|e| match e {
            MachineParamError::BadValue { range, .. } => {
                anyhow!("--machine-set `{item}`: the value must be {range}")
            }
            e => anyhow!("--machine-set `{item}`: {e}"),
        })?;
        t = machine_with(&t, k, v)
            .ok_or_else(|| anyhow!("--machine-set `{item}`: unknown PARAM `{k}`"))?;
    }
    Ok(t)
}

/// Help of a `--placement` option: `what`, the policies of the registry, an example.
fn placement_help(what: &str, example: &str) -> String {
    format!(
        "{what}: {}, with options ({example})",
        policy::registry::names_or()
    )
}

/// `--placement`: `None` for the policy that never acts, without options (the plain
/// scheduler).
fn placement(arg: &str) -> Result<Option<sim::PlacementSpec>> {
    let p = sim::PlacementSpec::parse(arg)
        .with_context(|| format!("--placement {arg}"))
        .map_err(crate::usage)?;
    Ok((p.policy != policy::NoPolicy.name()).then_some(p))
}

fn numa_test(a: NumaTestArgs) -> Result<()> {
    let topo = machine_with_sets(&a.machine, &a.machine_set)?;
    let scheds = numa_test_args(&a, &topo).map_err(crate::usage)?;
    if let Some(n) = a.threads {
        set_threads(n).map_err(crate::usage)?;
    }
    numa_test_run(a, topo, scheds)
}

/// The checks of numa-test's arguments; the schedulers named.
fn numa_test_args(a: &NumaTestArgs, topo: &topo::Topology) -> Result<Vec<SchedSpec>> {
    let scheds = SchedSpec::parse_list(&a.sched)?;
    // Each name and its options, as the runs will build them.
    for spec in &scheds {
        sim::sched::build(spec, topo)?;
    }
    if scheds.is_empty() {
        bail!("--sched names no scheduler");
    }
    if a.tasks.is_empty() || a.tasks.contains(&0) {
        bail!("--tasks needs task counts of at least 1");
    }
    if a.reps == 0 || a.size == Some(0) || a.passes == Some(0) {
        bail!("--reps, --size and --passes must be at least 1");
    }
    for &n in &a.tasks {
        sim::budget::tasks("--tasks", f64::from(n))?;
    }
    sim::budget::reps("--reps", f64::from(a.reps))?;
    if let Some(p) = a.passes {
        sim::budget::at_most(
            "--passes",
            f64::from(p),
            f64::from(nt::MAX_PASSES),
            "passes",
        )?;
    }
    let most = *a.tasks.iter().max().unwrap_or(&1);
    check_memory(topo, a.size.unwrap_or(nt::ORIGINAL_PROBLEM_SIZE), most)?;
    placement(&a.placement)?;
    Ok(scheds)
}

fn numa_test_run(a: NumaTestArgs, topo: Arc<topo::Topology>, scheds: Vec<SchedSpec>) -> Result<()> {
    let base = NumaTestParams {
        disturb: !a.no_disturb,
        hackbench_buffer_msgs: a.socket_buffer,
        contention_period: a.contention_period,
        ..Default::default()
    };
    let size = nt::resolve_size(&topo, a.size, a.passes, &base)
        .with_context(|| format!("numa_test size on {}", topo.name))?;
    let m = Matrix {
        scheds,
        tasks: a.tasks.clone(),
        reps: a.reps,
        seed: a.seed,
        params: size.apply(&base),
    };
    let total = (m.scheds.len() * m.tasks.len()) as u64 * u64::from(m.reps);
    let bar = (!a.json && total > 1)
        .then(|| crate::progress::bar(total, "runs"))
        .flatten();
    let start = Instant::now();
    let tick = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let placement = placement(&a.placement)?;
    let cells = nt::run_matrix_placed(&topo, &m, placement.as_ref(), &tick)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let wall = start.elapsed().as_secs_f64();
    let warnings = early_end_warnings(&cells, &size);
    if a.json {
        let out = serde_json::json!({
            "machine": topo.name,
            "problem_size": size.problem_size,
            "passes": size.passes,
            "size_auto": size.auto,
            "disturb": !a.no_disturb,
            "seed": a.seed,
            "warnings": warnings,
            "results": cells,
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
        for w in &warnings {
            eprintln!("{w}");
        }
    } else {
        out!("{}", text_report(&topo, &a, &size, &cells));
        for w in &warnings {
            outln!("{w}");
        }
    }
    if a.stats {
        stats(&cells, total, wall);
    }
    Ok(())
}

/// PROBLEMSIZE `size` for `tasks` jobs must fit in the machine's memory.
fn check_memory(topo: &topo::Topology, size: u64, tasks: u32) -> Result<()> {
    let bytes = size.saturating_mul(20).saturating_mul(u64::from(tasks));
    if bytes > topo.total_mem_bytes() {
        bail!(
            "--size {size} with {tasks} tasks needs {} MiB, more than {}'s {} MiB of memory",
            bytes >> 20,
            topo.name,
            topo.total_mem_bytes() >> 20
        );
    }
    Ok(())
}

/// One line per cell whose jobs ended before hackbench did, naming the flag to change.
fn early_end_warnings(cells: &[nt::CellSummary], size: &nt::JobSize) -> Vec<String> {
    let fix = if size.auto {
        "give more --passes".to_string()
    } else {
        format!(
            "raise --passes (now {}), or leave out --size and --passes for the machine's \
             automatic size",
            size.passes
        )
    };
    cells
        .iter()
        .filter_map(|c| nt::early_end_warning(c, &fix))
        .collect()
}

/// The `--stats` line on stderr.
fn stats(cells: &[nt::CellSummary], total: u64, wall: f64) {
    let events: f64 = cells.iter().map(|c| c.events * f64::from(c.reps)).sum();
    let skipped: f64 = cells
        .iter()
        .map(|c| c.skipped_ticks * f64::from(c.reps))
        .sum();
    let simulated: f64 = cells
        .iter()
        .map(|c| c.elapsed_s.mean * f64::from(c.reps))
        .sum();
    eprintln!(
        "{}",
        stats_line(total, events - skipped, skipped, simulated, wall)
    );
}

fn text_report(
    topo: &topo::Topology,
    a: &NumaTestArgs,
    size: &nt::JobSize,
    cells: &[nt::CellSummary],
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "numa_test on {} ({}): {}, hackbench {}, {}, seed {}",
        topo.name,
        topo.description,
        size.describe(),
        if a.no_disturb {
            "off"
        } else {
            "20 groups at 3 s"
        },
        topo::count(a.reps, "rep"),
        a.seed
    );
    let mut seen = Vec::new();
    for c in cells {
        if !seen.contains(&c.scheduler) {
            seen.push(c.scheduler.clone());
            let opts: Vec<String> = c.options.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(s, "  {}: {}", c.scheduler, opts.join(" "));
        }
    }
    s.push('\n');
    if !a.summary_only {
        for c in cells {
            let _ = writeln!(
                s,
                "== {} N={} (jobs of rep 1 of {})",
                c.scheduler, c.tasks, c.reps
            );
            s.push_str(&nt::job_table(&c.jobs, topo.nr_nodes()));
            s.push_str(&nt::summary_block(c));
            s.push('\n');
        }
    }
    let _ = writeln!(
        s,
        "== Summary: mean(stddev) in seconds over {}",
        topo::count(a.reps, "rep")
    );
    s.push_str(&nt::comparison_table(cells));
    s
}

/// `--contention-period`: a duration (`1ms`, `100us`, `0`; bare numbers are ms).
fn contention_period(v: &str) -> Result<sim::time::Ns, NotADuration> {
    sim::sched::parse_duration(v).ok_or_else(|| NotADuration(v.to_string()))
}

/// A `--contention-period` value that is not a duration.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a duration (1ms, 100us, 0; bare numbers are ms)")]
struct NotADuration(String);

fn workload(a: WorkloadArgs) -> Result<()> {
    let topo = machine_with_sets(&a.machine, &a.machine_set)?;
    let text = sim::budget::read_input(std::path::Path::new(&a.file))?;
    let w = sim::workload::parse_workload(&text, &a.file).map_err(|e| anyhow!("{e}"))?;
    w.check_machine(&topo).with_context(|| a.file.clone())?;
    let spec = SchedSpec::parse(&a.sched).map_err(|e| crate::usage(e.into()))?;
    let s = sim::sched::build(&spec, &topo).map_err(|e| crate::usage(e.into()))?;
    let mut sim = sim::Sim::new(topo.clone(), Arc::new(w), s, a.seed)
        .with_contention_period(a.contention_period);
    if let Some(p) = placement(&a.placement)? {
        sim = sim.with_placement(p.build()?);
    }
    let r = sim.run().map_err(|e| anyhow!("{}: {e}", a.file))?;
    if a.json {
        outln!("{}", workload_json(&a, &topo, &spec, &r)?);
        return Ok(());
    }
    outln!(
        "{} on {} with {}: elapsed {:.3} s",
        a.file,
        topo.name,
        spec,
        r.end_ns as f64 / 1e9
    );
    outln!(
        "{:<5} {:<20} {:>9} {:>9} {:>9} {:>9}  node share of user time",
        "task",
        "program",
        "start_s",
        "end_s",
        "user_s",
        "sys_s"
    );
    for (i, t) in r.tasks.iter().enumerate() {
        let tot: f64 = t.node_user_ns.iter().sum();
        let share: Vec<String> = t
            .node_user_ns
            .iter()
            .map(|x| format!("{:.0}%", if tot > 0.0 { 100.0 * x / tot } else { 0.0 }))
            .collect();
        outln!(
            "{:<5} {:<20} {:>9.3} {:>9.3} {:>9.3} {:>9.3}  {}",
            i,
            t.program,
            t.created as f64 / 1e9,
            t.exited as f64 / 1e9,
            t.user_ns / 1e9,
            t.sys_ns / 1e9,
            share.join(" ")
        );
    }
    let c = &r.counters;
    outln!(
        "context switches {}, wakeups {}, preemptions {}, starvation expiries {}, sends blocked on a full channel {}, migrations {} ({} across nodes), refused: running {} affinity {} cache-hot {}",
        c.context_switches,
        c.wakeups,
        c.preemptions,
        c.starvation_expiries,
        c.send_blocks,
        c.migrations,
        c.node_migrations,
        c.refused[0],
        c.refused[1],
        c.refused[2]
    );
    if let Some(p) = &r.placement {
        outln!(
            "placement {}: {} decisions, {} first looks, {} homes set, {} cleared, {} slices set, {} memory moves ({} MiB)",
            a.placement,
            p.decisions,
            p.looks,
            p.set_home,
            p.clear_home,
            p.set_slice,
            p.moves,
            p.bytes_moved >> 20
        );
        for (at, action) in &p.log {
            outln!("  {:>8.3} s  {action}", *at as f64 / 1e9);
        }
        if a.notes {
            outln!("held back ({} notes):", p.notes.len());
            for (at, note) in &p.notes {
                outln!("  {:>8.3} s  {note}", *at as f64 / 1e9);
            }
        }
    }
    Ok(())
}

/// `sim workload --json`: the run as one JSON object.
fn workload_json(
    a: &WorkloadArgs,
    topo: &topo::Topology,
    spec: &SchedSpec,
    r: &sim::RunResult,
) -> Result<String> {
    let tasks: Vec<serde_json::Value> = r
        .tasks
        .iter()
        .map(|t| {
            serde_json::json!({
                "program": t.program, "user_s": t.user_ns / 1e9, "sys_s": t.sys_ns / 1e9,
                "node_user_s": t.node_user_ns.iter().map(|x| x / 1e9).collect::<Vec<_>>(),
                "created_s": t.created as f64 / 1e9, "exited_s": t.exited as f64 / 1e9,
                "node_migrations": t.node_migrations,
            })
        })
        .collect();
    let placement = r.placement.as_ref().map(|p| {
        let mut v = serde_json::json!({
            "policy": a.placement, "decisions": p.decisions, "first_looks": p.looks, "set_home": p.set_home,
            "clear_home": p.clear_home, "set_slice": p.set_slice, "moves": p.moves, "bytes_moved": p.bytes_moved,
            "actions": p.log.iter().map(|(at, act)| serde_json::json!({"at_s": *at as f64 / 1e9, "action": act})).collect::<Vec<_>>(),
        });
        if a.notes {
            let notes: Vec<serde_json::Value> = p
                .notes
                .iter()
                .map(|(at, n)| serde_json::json!({"at_s": *at as f64 / 1e9, "note": n}))
                .collect();
            v["notes"] = serde_json::Value::Array(notes);
        }
        v
    });
    let out = serde_json::json!({"machine": topo.name, "scheduler": spec.to_string(),
        "elapsed_s": r.end_ns as f64 / 1e9, "counters": r.counters, "tasks": tasks,
        "placement": placement});
    Ok(serde_json::to_string_pretty(&out)?)
}

/// The SLIT, one row per node.
pub(crate) fn print_distances(t: &topo::Topology) -> Result<()> {
    outln!("distances:");
    for row in &t.distance {
        let cells: Vec<String> = row.iter().map(|d| format!("{d:3}")).collect();
        outln!("  {}", cells.join(" "));
    }
    Ok(())
}

/// The cost model's facts of a machine (docs/model/memory-and-cost.md), one line per part: core, LLC,
/// TLB and memory, so that a reader sees what a simulation on it assumes.
fn cost_model_lines(t: &topo::Topology) -> Vec<String> {
    let c = &t.cpu_model;
    let m = &t.memory;
    let sharing = t.cpus.iter().filter(|x| x.llc == t.cpus[0].llc).count();
    let kib = |b: u64| b >> 10;
    let mut v = vec![format!(
        "core: {:.0} MHz, {}, MLP {} (streams {}), store buffer {}",
        c.freq_mhz,
        if c.out_of_order {
            "out of order"
        } else {
            "in order"
        },
        c.mlp,
        c.stream_mlp(),
        c.store_buffer
    )];
    let ways = c
        .llc_ways
        .map_or("fully associative".to_string(), |w| format!("{w}-way"));
    let hits = c
        .llc_latency_ns
        .map_or("hits free".to_string(), |l| format!("hits {l} ns"));
    let holders = if c.llc_private {
        format!("held by each of its {sharing} CPU(s) alone")
    } else {
        format!("shared by {sharing} CPU(s)")
    };
    v.push(format!(
        "last-level cache: {} KiB {holders}, {} B lines, {ways}, {hits}, streams count {}",
        kib(c.llc_bytes),
        c.line_bytes,
        c.llc_stream_share
    ));
    v.push(match (c.tlb_entries, t.tlb()) {
        (Some(n), Some((reach, cycles))) => format!(
            "data TLB: {n} entries x {} KiB pages = {:.1} MiB, a walk {cycles} cycles ({:.1} ns)",
            kib(m.page_bytes),
            reach / f64::from(1u32 << 20),
            cycles * t.ns_per_cycle()
        ),
        _ => "data TLB: none given (translation free)".to_string(),
    });
    v.push(format!(
        "memory: {} KiB pages, loaded-latency ratio {}, dirty line {} / {} ns (local / \
         remote), page fault {:.0} ns",
        kib(m.page_bytes),
        m.loaded_latency_ratio,
        m.line_transfer_local_ns,
        m.line_transfer_remote_ns,
        m.fault_overhead_ns
    ));
    v
}

pub fn machines(m: Option<&str>) -> Result<()> {
    match m {
        None => {
            for name in topo::presets::PRESETS {
                let t = topo::presets::preset(name).map_err(|e| anyhow!("{e}"))?;
                outln!("{name:<14} {}", t.description);
            }
        }
        Some(arg) => {
            let t = machine(arg)?;
            outln!("{}: {}", t.name, t.description);
            for n in &t.nodes {
                outln!(
                    "node {}: cpus {}  memory {} MiB  bandwidth {:.1} GB/s (remote in {:.1} GB/s)",
                    n.id,
                    n.cpus,
                    n.mem_bytes >> 20,
                    n.bandwidth_gbps,
                    n.remote_bandwidth_gbps
                );
            }
            print_distances(&t)?;
            outln!("idle latency ns (cpu node x memory node):");
            for row in &t.latency_ns {
                outln!(
                    "  {}",
                    row.iter()
                        .map(|d| format!("{d:6.1}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                );
            }
            for line in cost_model_lines(&t) {
                outln!("{line}");
            }
            outln!("scheduling domains (CPU 0):");
            for l in topo::sched_domains(&t) {
                let groups: Vec<String> = l.groups[0].iter().map(|g| format!("{{{g}}}")).collect();
                outln!(
                    "  {:<10} span {{{}}} groups {}",
                    l.name,
                    l.spans[0],
                    groups.join(" ")
                );
            }
        }
    }
    Ok(())
}

/// `--threads N`: at most one worker per CPU of this host (more only cost memory and
/// switching; `--threads 100000` used to start them all).
pub(crate) fn set_threads(n: usize) -> Result<()> {
    let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
    sim::budget::at_most(
        "--threads",
        n as f64,
        cpus as f64,
        "threads (this host's CPUs)",
    )?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(n.max(1))
        .build_global()
        .ok();
    Ok(())
}

/// The `--stats` line: what was simulated, and what it cost this process in CPU time (user +
/// system, all threads, from `getrusage`), which unlike wall time does not depend on how much
/// of a shared machine the run got.
fn stats_line(runs: u64, handled: f64, skipped: f64, simulated_s: f64, wall_s: f64) -> String {
    let (cpu_s, peak_mib) = process_cost();
    format!(
        "stats: {}, {handled:.0} events handled (and {skipped:.0} idle ticks accounted \
         in bulk), {simulated_s:.1} s simulated; {cpu_s:.2} CPU s ({wall_s:.2} s wall, {} worker \
         threads), {:.2} M events handled per CPU second, {:.4} CPU s per simulated s, peak \
         memory {peak_mib:.0} MiB",
        topo::count(runs, "run"),
        rayon::current_num_threads(),
        handled / cpu_s.max(1e-9) / 1e6,
        cpu_s / simulated_s.max(1e-9),
    )
}

/// CPU seconds (user + system) this process has used, and its peak resident memory in MiB.
pub(crate) fn process_cost() -> (f64, f64) {
    use nix::sys::resource::{UsageWho, getrusage};
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
            // ru_maxrss is in KiB on Linux.
            (
                tv(u.user_time()) + tv(u.system_time()),
                u.max_rss() as f64 / 1024.0,
            )
        }
        Err(_) => (0.0, 0.0),
    }
}
