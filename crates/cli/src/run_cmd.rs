//! `homenode run`, `homenode status`, `homenode topo`: the live daemon and its companions.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, anyhow};
use clap::Args;
use linux::daemon::{self, DaemonConfig, config::DEFAULT_CONFIG, config::DEFAULT_METRICS};

#[derive(Args)]
pub struct RunArgs {
    /// Configuration file (TOML). Default /etc/homenode.toml, used if it exists.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Log every decision with its reason; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Seconds between decisions (`placement.interval_s`; wins over the file and --set).
    #[arg(long)]
    interval: Option<f64>,
    #[arg(long, help = format!("Placement policy: {}", policy::registry::names_or()))]
    policy: Option<String>,
    /// Undo journal (originals of every changed affinity).
    #[arg(long)]
    journal: Option<PathBuf>,
    /// Unix socket for `homenode status` (mode 0600, in a 0700 directory).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Serve Prometheus metrics at this address (default 127.0.0.1:9750 when given alone).
    #[arg(long, num_args = 0..=1, default_missing_value = DEFAULT_METRICS)]
    metrics: Option<String>,
    /// Allow a metrics address that is not loopback.
    #[arg(long)]
    metrics_allow_remote: bool,
    /// Split a one-node host's CPUs into N pseudo-nodes (memory actions are skipped).
    #[arg(long, value_name = "N")]
    fake_numa: Option<usize>,
    /// What to do with a journal left by a crash: adopt or restore.
    #[arg(long, value_name = "adopt|restore")]
    on_start: Option<String>,
    /// Read /proc and /sys under this root (tests and captured trees).
    #[arg(long)]
    root: Option<PathBuf>,
    /// Any configuration key, dotted (placement.homenode.min_rss_mib=16); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Only restore what the journal holds, then exit.
    #[arg(long)]
    restore: bool,
    /// Stop after this many intervals (restoring, as on SIGTERM).
    #[arg(long, value_name = "N")]
    intervals: Option<u64>,
    /// At exit, print the daemon's CPU time per interval (median, max) to stderr.
    #[arg(long)]
    stats: bool,
    /// Print the effective configuration as TOML and exit.
    #[arg(long)]
    print_config: bool,
}

#[derive(Args)]
pub struct StatusArgs {
    /// The daemon's socket.
    #[arg(long, default_value = "/run/homenode/homenode.sock")]
    socket: PathBuf,
    /// Print the JSON report.
    #[arg(long)]
    json: bool,
    /// Show every column and line in full (by default the report fits 100 columns).
    #[arg(long)]
    wide: bool,
    /// Ask again every SECONDS (default 2) and redraw, until interrupted.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "2")]
    watch: Option<f64>,
    /// With --watch: stop after N reports.
    #[arg(long, value_name = "N", requires = "watch")]
    count: Option<u64>,
}

/// The width `homenode status` fits without `--wide`.
const STATUS_COLUMNS: usize = 100;

#[derive(Args)]
pub struct ControlArgs {
    /// The process.
    pid: u32,
    /// The daemon's socket.
    #[arg(long, default_value = "/run/homenode/homenode.sock")]
    socket: PathBuf,
}

#[derive(Args)]
pub struct TopoArgs {
    /// Read /sys under this root.
    #[arg(long, default_value = "/")]
    root: PathBuf,
    /// Split a one-node host into N pseudo-nodes, as `run --fake-numa N` does.
    #[arg(long, value_name = "N")]
    fake_numa: Option<usize>,
}

fn config(a: &RunArgs) -> Result<DaemonConfig> {
    config_with_default(a, Path::new(DEFAULT_CONFIG)).map(|(cfg, _)| cfg)
}

/// The configuration from `--config FILE` (which must exist), or else from `default` if it
/// exists (absent: the defaults, and the second value is `false`), then the command line.
/// A file that does not parse is a runtime error, a bad value on the command line a usage
/// error.
fn config_with_default(a: &RunArgs, default: &Path) -> Result<(DaemonConfig, bool)> {
    let (path, required) = match &a.config {
        Some(p) => (p.clone(), true),
        None => (default.to_path_buf(), false),
    };
    let text = DaemonConfig::read(&path, required)?;
    let found = required || path.exists();
    let mut sets: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| sets.push((k.to_string(), v));
    let quote = |s: &str| format!("{:?}", s);
    if a.dry_run {
        put("dry_run", "true".into());
    }
    if let Some(p) = &a.policy {
        put("policy", quote(p));
    }
    if let Some(p) = &a.journal {
        put("journal", quote(&p.to_string_lossy()));
    }
    if let Some(p) = &a.socket {
        put("socket", quote(&p.to_string_lossy()));
    }
    if let Some(m) = &a.metrics {
        put("metrics", quote(m));
    }
    if a.metrics_allow_remote {
        put("metrics_allow_remote", "true".into());
    }
    if let Some(n) = a.fake_numa {
        put("fake_numa", n.to_string());
    }
    if let Some(s) = &a.on_start {
        put("on_start", quote(s));
    }
    if let Some(r) = &a.root {
        put("root", quote(&r.to_string_lossy()));
    }
    for s in &a.set {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| crate::usage(anyhow!("--set {s}: expected KEY=VALUE")))?;
        sets.push((k.trim().to_string(), v.trim().to_string()));
    }
    let origin = path.display().to_string();
    let mut cfg = DaemonConfig::with_overrides(&text, &origin, &sets).map_err(|e| {
        // The file alone is fine: the command line is what is wrong.
        match DaemonConfig::parse(&text, &origin) {
            Ok(_) => crate::usage(e.into()),
            Err(_) => e.into(),
        }
    })?;
    if let Some(i) = a.interval {
        // Straight into the one placement interval, then the same check as the file's.
        cfg.placement.interval_s = i;
        cfg.validate("--interval")
            .map_err(|e| crate::usage(e.into()))?;
    }
    Ok((cfg, found))
}

pub fn run(a: RunArgs) -> Result<()> {
    crate::init_logging();
    let (cfg, found) = config_with_default(&a, Path::new(DEFAULT_CONFIG))?;
    if !found {
        // Said once, at start: a reload finds the same.
        tracing::info!("{DEFAULT_CONFIG} does not exist: running with the defaults");
    }
    if a.print_config {
        out!(
            "{}",
            toml::to_string(&cfg).context("printing the configuration")?
        );
        return Ok(());
    }
    if a.restore {
        let r = daemon::restore_only(&cfg.journal, &cfg.root)?;
        eprintln!(
            "homenode: restored {} threads' masks and {} threads' slices of {} ({} gone, {} left as they are)",
            r.threads_restored(),
            r.slices_restored(),
            topo::count(r.outcomes.len(), "process"),
            r.count(|o| matches!(o, linux::journal::RestoreOutcome::Gone)),
            r.count(|o| matches!(o, linux::journal::RestoreOutcome::Failed { .. })),
        );
        return Ok(());
    }
    let caps = daemon::privileges::effective_caps(Path::new("/"));
    let euid = linux::trust::effective_uid();
    if let Some(note) = daemon::privileges::limits_note(euid, caps, cfg.dry_run) {
        tracing::warn!("{note}");
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone())
            .with_context(|| format!("installing the handler of signal {sig}"))?;
    }
    let hup = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, hup.clone())
        .context("installing the SIGHUP handler")?;
    // SIGHUP: read the file and the command line again, as at start.
    let read = || config(&a).map_err(daemon::ReadError::from);
    let reload = daemon::Reload {
        requested: &hup,
        read: &read,
    };
    let summary = daemon::run_reloading(cfg, &stop, a.intervals, Some(reload))?;
    let r = &summary.restore;
    tracing::info!(
        "stopped after {}; restored {} threads' masks and {} threads' slices of {}",
        topo::count(summary.intervals, "interval"),
        r.threads_restored(),
        r.slices_restored(),
        topo::count(r.outcomes.len(), "process")
    );
    if a.stats {
        let mut v = summary.cpu_per_interval_s.clone();
        v.sort_by(f64::total_cmp);
        if let (Some(&max), false) = (v.last(), v.is_empty()) {
            let med = report::median(&v);
            eprintln!(
                "daemon CPU per interval: median {:.3} ms, max {:.3} ms over {}; {} took longer than the interval",
                med * 1e3,
                max * 1e3,
                topo::count(v.len(), "interval"),
                summary.overruns
            );
        }
        let mut v = summary.look_cpu_s.clone();
        v.sort_by(f64::total_cmp);
        if let Some(&max) = v.last() {
            eprintln!(
                "daemon CPU per first look: median {:.3} ms, max {:.3} ms over {} looks ({} found a new candidate)",
                report::median(&v) * 1e3,
                max * 1e3,
                v.len(),
                summary.looks_placing
            );
        }
    }
    Ok(())
}

fn pct_list(v: &[f64]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.iter()
        .map(|p| format!("{p:.0}"))
        .collect::<Vec<_>>()
        .join("/")
}

/// Each process's own memory per node in MiB, as `numastat -p` shows it (`-`: not read).
fn mib_list(bytes: &[u64]) -> String {
    if bytes.is_empty() {
        return "-".into();
    }
    bytes
        .iter()
        .map(|b| format!("{}", b >> 20))
        .collect::<Vec<_>>()
        .join("/")
}

/// A table with no borders; unless `wide`, at most [`STATUS_COLUMNS`] wide, each row on one
/// line (a cell too long for its column is cut, ending in `...`).
fn plain_table(wide: bool) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::NOTHING);
    if !wide {
        t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
        t.set_width(STATUS_COLUMNS as u16);
    }
    t
}

/// Adds `cells` to `t`, on one line unless `wide`.
fn add_row(t: &mut comfy_table::Table, cells: Vec<String>, wide: bool) {
    let mut row = comfy_table::Row::from(cells);
    if !wide {
        row.max_height(1);
    }
    t.add_row(row);
}

/// `line` cut to [`STATUS_COLUMNS`] characters (ending in `...`) unless `wide`.
fn fit(line: &str, wide: bool) -> String {
    if wide || line.chars().count() <= STATUS_COLUMNS {
        return line.to_string();
    }
    let cut: String = line.chars().take(STATUS_COLUMNS - 3).collect();
    format!("{cut}...")
}

/// The status's process table: home, slice, time and memory by node, last action, one row
/// each.
fn processes_table(r: &daemon::status::StatusReport, wide: bool) -> comfy_table::Table {
    let mut t = plain_table(wide);
    t.set_header([
        "pid",
        "command",
        "cpus",
        "home",
        "slice",
        "time % by node",
        "MiB by node",
        "last action",
    ]);
    for p in &r.processes {
        let home = if p.home.is_empty() {
            "-".to_string()
        } else {
            p.home
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let last = match (&p.left_alone, &p.last_action) {
            (Some(why), _) => format!("left alone: {why}"),
            (None, Some(a)) => format!("{a} [{}]", p.last_outcome.clone().unwrap_or_default()),
            (None, None) => String::new(),
        };
        // The name and reasons come from the processes themselves: no terminal escapes.
        let esc = |s: &str| linux::text::escape_control(s).into_owned();
        let cells = vec![
            p.pid.to_string(),
            esc(&p.comm),
            format!("{:.2}", p.cpu_use),
            home,
            if p.slice_ns > 0 {
                linux::slice::fmt_ms(p.slice_ns)
            } else {
                "-".into()
            },
            pct_list(&p.time_pct),
            mib_list(&p.memory_bytes),
            esc(&last),
        ];
        add_row(&mut t, cells, wide);
    }
    t
}

/// The last decision's notes, one per line under a heading (each cut to fit unless `wide`).
/// They name processes by their command, which the process chose: no terminal escapes.
fn notes_text(notes: &[String], wide: bool) -> String {
    let mut out = String::from("held back in the last decision:");
    for n in notes {
        out.push('\n');
        out.push_str(&fit(&format!("  {}", linux::text::escape_control(n)), wide));
    }
    out
}

pub fn status(a: StatusArgs) -> Result<()> {
    let Some(every) = a.watch else {
        let r = daemon::status::query(&a.socket)?;
        return print_status(&r, &a);
    };
    if !(every.is_finite() && every > 0.0) {
        return Err(crate::usage(anyhow!(
            "--watch {every}: the period must be a positive number of seconds"
        )));
    }
    let mut shown = 0u64;
    loop {
        let r = daemon::status::query(&a.socket)?;
        // Home the cursor and clear the screen, as `watch` does.
        out!("\x1b[H\x1b[2J");
        print_status(&r, &a)?;
        shown += 1;
        if a.count.is_some_and(|n| shown >= n) {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_secs_f64(every));
    }
}

fn print_status(r: &daemon::status::StatusReport, a: &StatusArgs) -> Result<()> {
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    out!("{}", status_text(r, a.wide));
    Ok(())
}

/// The status report as `homenode status` prints it: at most [`STATUS_COLUMNS`] wide unless
/// `wide`.
fn status_text(r: &daemon::status::StatusReport, wide: bool) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}",
        fit(
            &format!(
                "homenode {}: policy {}{}{}{}, {} of {} s",
                r.version,
                r.policy,
                if r.dry_run { " (dry run)" } else { "" },
                r.fake_numa
                    .map(|n| format!(", fake NUMA {n}"))
                    .unwrap_or_default(),
                if r.no_custom_slices {
                    ", no custom slices in this kernel (slices skipped)"
                } else {
                    ""
                },
                topo::count(r.intervals, "interval"),
                r.interval_s
            ),
            wide
        )
    );
    let _ = writeln!(
        o,
        "{} seen, {} looked at closely, last interval {:.2} ms CPU in {:.0} ms",
        topo::count(r.processes_seen, "process"),
        r.candidates,
        r.last_cpu_ms,
        r.last_wall_ms
    );
    let mut nodes = plain_table(wide);
    nodes.set_header(["node", "cpus", "busy CPUs", "free MiB", "homed"]);
    for n in &r.nodes {
        let cells = vec![
            n.node.to_string(),
            n.cpus.clone(),
            format!("{:.1}", n.busy_cpus),
            (n.free_bytes >> 20).to_string(),
            n.homed.to_string(),
        ];
        add_row(&mut nodes, cells, wide);
    }
    let _ = writeln!(o, "{nodes}");
    let _ = writeln!(o);
    let t = processes_table(r, wide);
    let _ = writeln!(o, "{t}");
    let c = &r.counters;
    let actions: Vec<String> = c.actions.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let skipped: Vec<String> = c.skipped.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let kernel: Vec<String> = [
        "numa_hint_faults",
        "numa_hint_faults_local",
        "numa_pages_migrated",
        "numa_miss",
    ]
    .iter()
    .filter_map(|k| r.kernel_numa.get(*k).map(|v| format!("{k} {v}")))
    .collect();
    if !kernel.is_empty() {
        let line = format!("kernel, last interval: {}", kernel.join(", "));
        let _ = writeln!(o, "\n{}", fit(&line, wide));
    }
    if !r.notes.is_empty() {
        let _ = writeln!(o, "\n{}", notes_text(&r.notes, wide));
    }
    let list = |v: Vec<String>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let _ = writeln!(o, "\n{}", fit(&format!("actions: {}", list(actions)), wide));
    let _ = writeln!(
        o,
        "pages moved: {} ({} MiB), failed {}",
        c.pages_moved,
        c.bytes_moved >> 20,
        c.pages_failed
    );
    let _ = writeln!(
        o,
        "{}",
        fit(&format!("left alone: {}", list(skipped)), wide)
    );
    o
}

/// `homenode manage PID` / `homenode unmanage PID`: one request to the running daemon.
pub fn control(a: &ControlArgs, verb: &str) -> Result<()> {
    let answer = daemon::status::request(&a.socket, &format!("{verb} {}", a.pid))?;
    outln!("{answer}");
    Ok(())
}

pub fn topo(a: TopoArgs) -> Result<()> {
    let host = daemon::Host::read(&a.root, a.fake_numa)?;
    let h = &host.host;
    let t = &h.topology;
    outln!(
        "host: {}, {}{}",
        topo::count(t.nr_nodes(), "node"),
        topo::count(t.nr_cpus(), "CPU"),
        if host.fake {
            " (fake NUMA: pseudo-nodes of one real node)"
        } else {
            ""
        }
    );
    for n in &t.nodes {
        outln!(
            "node {} (kernel node {}): CPUs {} (kernel {}), memory {} MiB",
            n.id,
            h.os_node[n.id],
            n.cpus,
            host.kernel_cpus(&n.cpus),
            n.mem_bytes >> 20
        );
    }
    crate::sim_cmd::print_distances(t)?;
    for w in &h.warnings {
        outln!("note: {w}");
    }
    if t.nr_nodes() == 1 && !host.fake {
        outln!("one node: homenode has nothing to place here (try --fake-numa 2 to exercise it)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        run: RunArgs,
    }

    fn args(a: &[&str]) -> RunArgs {
        Cmd::parse_from(std::iter::once("run").chain(a.iter().copied())).run
    }

    /// The systemd unit starts `homenode run` without `--config`: an absent default file gives
    /// the defaults (and says so once); a file named with `--config` must exist.
    #[test]
    fn an_absent_default_file_gives_the_defaults_a_named_one_is_required() {
        let dir = tempfile::tempdir().expect("tmp");
        let absent = dir.path().join("homenode.toml");
        let (cfg, found) = config_with_default(&args(&[]), &absent).expect("defaults");
        assert!(!found);
        assert_eq!(cfg.policy, DaemonConfig::default().policy);
        assert_eq!(cfg.placement.interval_s, 2.0);
        let named = absent.to_string_lossy().into_owned();
        let e = config_with_default(&args(&["--config", &named]), &absent)
            .expect_err("a named file must exist");
        assert!(crate::error_line(&e).contains(&named), "{e:#}");
        assert_eq!(crate::exit_code(&e), 1);
        std::fs::write(&absent, "policy = \"numad\"\n").expect("write");
        let (cfg, found) = config_with_default(&args(&[]), &absent).expect("the file");
        assert!(found);
        assert_eq!(cfg.policy, "numad");
    }

    /// A report whose rows, notes and counters run long: every line fits 100 columns by
    /// default (the last action cut with `...`), and `--wide` shows it whole. Memory is in MiB
    /// per node.
    #[test]
    fn the_status_fits_100_columns_unless_wide() {
        use daemon::status::{NodeStatus, ProcessStatus, StatusReport};
        let long = format!(
            "pid 31020: set home 1 (CPUs 8-15): {}",
            "because ".repeat(30)
        );
        let mut r = StatusReport {
            version: "0.1.0".into(),
            policy: "homenode".into(),
            dry_run: true,
            fake_numa: Some(2),
            no_custom_slices: true,
            notes: vec![format!("rebalance: {}", "waiting ".repeat(20))],
            ..StatusReport::default()
        };
        r.nodes = (0..2)
            .map(|n| NodeStatus {
                node: n,
                cpus: format!("{}-{}", n * 8, n * 8 + 7),
                ..NodeStatus::default()
            })
            .collect();
        r.processes.push(ProcessStatus {
            pid: 31020,
            comm: "worker-with-a-long-name".into(),
            home: vec![1],
            time_pct: vec![10.0, 90.0],
            memory_bytes: vec![300 << 20, 2 << 30],
            last_action: Some(long.clone()),
            last_outcome: Some("done: 4 threads set to CPUs 8-15".into()),
            ..ProcessStatus::default()
        });
        for i in 0..12 {
            r.counters.actions.insert(format!("move_memory/kind{i}"), i);
        }
        let narrow = status_text(&r, false);
        for l in narrow.lines() {
            assert!(
                l.chars().count() <= STATUS_COLUMNS,
                "{} columns: {l}",
                l.len()
            );
        }
        assert!(narrow.contains("300/2048"), "{narrow}");
        assert!(narrow.contains("..."), "{narrow}");
        let wide = status_text(&r, true);
        assert!(wide.contains(long.trim_end()), "{wide}");
        assert!(wide.lines().any(|l| l.chars().count() > STATUS_COLUMNS));
    }

    /// The shipped unit must not name a file the daemon then requires.
    #[test]
    fn the_systemd_unit_leaves_the_config_file_optional() {
        let unit = include_str!("../../../dist/homenode.service");
        let exec = unit
            .lines()
            .find(|l| l.starts_with("ExecStart="))
            .expect("ExecStart");
        assert!(!exec.contains("--config"), "{exec}");
    }

    #[test]
    fn notes_are_listed_without_terminal_escapes() {
        let notes = vec![
            "rebalance: node 0 at 0.75 CPUs/CPU against node 1 at 0.00: seen in 1 of the 3 decisions".to_string(),
            "pid 7 (\u{1b}[2Jx): 64.0 MiB on node 0 stays there this interval".to_string(),
        ];
        let text = notes_text(&notes, true);
        assert!(
            text.starts_with("held back in the last decision:\n  rebalance: node 0"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }
}
