//! The markdown report and its charts: the effective scheduler options, then one table per
//! figure (rows N, one column per scheduler, mean(stddev) seconds) with its chart and the
//! model assumptions that drive it.

use super::assumptions;
use super::spec::{Metric, NumaTestSection};
use super::{MixCell, Outcome};
use crate::charts::{Bar, ChartError, Series, bar_chart, line_chart};
use crate::numa_test::{CellSummary, MeanStd};
use std::fmt::Write as _;
use topo::Topology;

/// (markdown, charts).
pub fn write(o: &Outcome, topo: &Topology) -> Result<(String, Vec<(String, String)>), ChartError> {
    let mut md = String::new();
    let e = &o.spec;
    let _ = writeln!(md, "# {}\n", e.title);
    if !e.description.is_empty() {
        let _ = writeln!(md, "{}\n", e.description.trim());
    }
    let _ = writeln!(
        md,
        "Machine `{}`, {} per cell, seed {}. Every figure comes from the simulator's model \
         (docs/model/), nothing is fitted to published results.\n",
        e.machine,
        topo::count(e.reps, "repetition"),
        e.seed
    );
    if let Some(size) = &o.numa_size {
        numa_size(&mut md, o, size);
    }
    let _ = writeln!(md, "## Schedulers and their effective options\n");
    let _ = writeln!(
        md,
        "| column | kernel base (model) | options |\n| --- | --- | --- |"
    );
    for (i, (name, opts)) in o.options.iter().enumerate() {
        let list: Vec<String> = opts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let base = o.kernels.get(i).copied().unwrap_or("");
        let _ = writeln!(md, "| `{name}` | {base} | {} |", list.join(", "));
    }
    md.push('\n');
    let mut charts = Vec::new();
    if let Some(n) = &e.numa_test {
        numa_tables(&mut md, &mut charts, o, n)?;
        for r in &o.sweeps {
            sweep_table(&mut md, r);
        }
        let _ = writeln!(
            md,
            "## Model assumptions

The machine facts behind every table above:

{}",
            assumptions::memory_bound(topo)
        );
    } else {
        let disks = e.mix.as_ref().and_then(|m| m.disks);
        let params = e
            .mix
            .as_ref()
            .map(super::mixrun::disk_params)
            .unwrap_or_default();
        mix_table(&mut md, &mut charts, &o.mix, topo, (disks, params))?;
        for r in &o.mix_sweeps {
            mix_sweep_table(&mut md, r);
        }
    }
    Ok((md, charts))
}

/// The size every numa_test cell ran at, and a line per cell whose jobs ended before
/// hackbench did (its ElapsedTime is hackbench's).
fn numa_size(md: &mut String, o: &Outcome, size: &crate::numa_test::JobSize) {
    let how = if size.auto {
        "chosen for the machine: a lone job runs at least twice the time hackbench starts at, \
         docs/WORKLOADS.md"
    } else {
        "as the file gives it"
    };
    let _ = writeln!(md, "numa_test size: {} ({how}).\n", size.describe());
    let fix = if size.auto {
        "set `passes` in `[numa_test]` higher".to_string()
    } else {
        format!(
            "raise `passes` in `[numa_test]` (now {}) or leave out `problem_size` and `passes` \
             for the machine's automatic size",
            size.passes
        )
    };
    let mut any = false;
    for c in &o.numa_test {
        if let Some(w) = crate::numa_test::early_end_warning(c, &fix) {
            let _ = writeln!(md, "- **{w}**");
            any = true;
        }
    }
    if any {
        md.push('\n');
    }
}

fn metric_of(c: &CellSummary, m: Metric) -> MeanStd {
    match m {
        Metric::AverageUserTime => c.avg_user_s,
        Metric::TotalUserTime => c.total_user_s,
        Metric::ElapsedTime => c.elapsed_s,
        Metric::TotalSysTime => c.total_sys_s,
        Metric::HackbenchTime => c.hackbench_s,
    }
}

fn cell<'a>(o: &'a Outcome, sched: &str, n: u32) -> Option<&'a CellSummary> {
    o.numa_test
        .iter()
        .find(|c| c.scheduler == sched && c.tasks == n)
}

fn numa_tables(
    md: &mut String,
    charts: &mut Vec<(String, String)>,
    o: &Outcome,
    n: &NumaTestSection,
) -> Result<(), ChartError> {
    let scheds: Vec<String> = o.options.iter().map(|(s, _)| s.clone()).collect();
    let quiet = if n.no_hackbench.is_empty() {
        String::new()
    } else {
        let ns: Vec<String> = n
            .no_hackbench
            .iter()
            .map(|q| match q {
                super::spec::Quiet::Tasks(t) => format!("N = {t}"),
                super::spec::Quiet::Column { sched, tasks } => format!("N = {tasks} of `{sched}`"),
            })
            .collect();
        format!("{} ran without hackbench (H is 0 there). ", ns.join(", "))
    };
    for &m in &n.tables {
        let _ = writeln!(md, "## {} [s], mean(stddev)\n", m.label());
        header_row(md, "N", &scheds);
        let mut series: Vec<Series> = scheds
            .iter()
            .map(|s| Series::new(s.clone(), Vec::new()))
            .collect();
        for &t in &n.tasks {
            let _ = write!(md, "| {t} |");
            for (i, s) in scheds.iter().enumerate() {
                match cell(o, s, t) {
                    Some(c) => {
                        let v = metric_of(c, m);
                        series[i].points.push((f64::from(t), v.mean));
                        series[i].whiskers.push((v.mean - v.std, v.mean + v.std));
                        let _ = write!(md, " {v} |");
                    }
                    None => md.push_str(" - |"),
                }
            }
            md.push('\n');
        }
        let file = format!("{}.svg", m.key());
        let _ = writeln!(md, "\n{quiet}![{}]({file})\n", m.label());
        let title = format!(
            "{}: {} on {} (mean, whiskers +-1 stddev over {})",
            o.spec.name,
            m.label(),
            o.spec.machine,
            topo::count(o.spec.reps, "repetition")
        );
        charts.push((file, line_chart(&title, "N (tasks)", "seconds", &series)?));
    }
    if let Some(base) = &n.gain_over {
        gain_table(md, o, n, base, &scheds);
    }
    Ok(())
}

/// One mix sweep: rows the parameter's values, columns the schedulers (mean build time and
/// mean load average during the builds).
fn mix_sweep_table(md: &mut String, r: &super::mix_sweep::MixSweepResult) {
    let w = &r.sweep;
    let _ = writeln!(
        md,
        "## Sensitivity: disk model `{}`, mean build time [s] / load average during the \
         builds, over {}\n\n{}\n",
        w.param,
        topo::count(w.reps, "repetition"),
        w.why.trim()
    );
    let Some((_, first)) = r.rows.first() else {
        return;
    };
    let _ = write!(md, "| {} |", w.param);
    for c in first {
        let _ = write!(md, " `{}` |", c.scheduler);
    }
    let _ = write!(md, "\n| --- |");
    for _ in first {
        md.push_str(" --- |");
    }
    md.push('\n');
    for (value, cells) in &r.rows {
        let _ = write!(md, "| {value} |");
        for c in cells {
            let _ = write!(md, " {:.1} / {:.1} |", c.build.mean, c.load_mean);
        }
        md.push('\n');
    }
    md.push('\n');
}

/// One sensitivity sweep: rows the option's values, columns the task counts.
fn sweep_table(md: &mut String, r: &super::sweep::SweepResult) {
    let w = &r.sweep;
    let _ = writeln!(
        md,
        "## Sensitivity: `{}` of `{}`, {} [s], mean(stddev) over {}\n\n{}\n",
        w.option,
        w.scheduler,
        w.metric.label(),
        topo::count(w.reps, "repetition"),
        w.why.trim()
    );
    let cols: Vec<String> = w.tasks.iter().map(|t| format!("N = {t}")).collect();
    let _ = write!(md, "| {} |", w.option);
    for c in &cols {
        let _ = write!(md, " {c} |");
    }
    let _ = write!(md, "\n| --- |");
    for _ in &cols {
        md.push_str(" --- |");
    }
    md.push('\n');
    for (value, cells) in &r.rows {
        let _ = write!(md, "| `{value}` |");
        for &t in &w.tasks {
            match cells.iter().find(|c| c.tasks == t) {
                Some(c) => {
                    let _ = write!(md, " {} |", metric_of(c, w.metric));
                }
                None => md.push_str(" - |"),
            }
        }
        md.push('\n');
    }
    md.push('\n');
}

fn header_row(md: &mut String, first: &str, cols: &[String]) {
    let _ = write!(md, "| {first} |");
    for c in cols {
        let _ = write!(md, " `{c}` |");
    }
    let _ = write!(md, "\n| --- |");
    for _ in cols {
        md.push_str(" --- |");
    }
    md.push('\n');
}

fn gain_table(md: &mut String, o: &Outcome, n: &NumaTestSection, base: &str, scheds: &[String]) {
    let others: Vec<String> = scheds.iter().filter(|s| *s != base).cloned().collect();
    let _ = writeln!(
        md,
        "## Relative gain over `{base}` [%]\n\n(base - other) / base x 100 of the means: \
         positive means shorter than `{base}`.\n"
    );
    let cols: Vec<String> = n
        .tables
        .iter()
        .flat_map(|m| others.iter().map(move |s| format!("{} {s}", m.key())))
        .collect();
    header_row(md, "N", &cols);
    for &t in &n.tasks {
        let _ = write!(md, "| {t} |");
        for &m in &n.tables {
            for s in &others {
                let g = match (cell(o, base, t), cell(o, s, t)) {
                    (Some(b), Some(x)) if metric_of(b, m).mean > 0.0 => {
                        let (b, x) = (metric_of(b, m).mean, metric_of(x, m).mean);
                        format!("{:+.1}", 100.0 * (b - x) / b)
                    }
                    _ => "-".into(),
                };
                let _ = write!(md, " {g} |");
            }
        }
        md.push('\n');
    }
    md.push('\n');
}

fn mix_table(
    md: &mut String,
    charts: &mut Vec<(String, String)>,
    cells: &[MixCell],
    t: &Topology,
    (disks, params): (Option<u32>, crate::disk::DiskParams),
) -> Result<(), ChartError> {
    let _ = writeln!(md, "## Build wall time [s]\n");
    let _ = writeln!(
        md,
        "| scheduler | min-max | mean | runs | elapsed (mean) | node moves per run |\n\
         | --- | --- | --- | --- | --- | --- |"
    );
    let mut bars = Vec::new();
    for c in cells {
        let _ = writeln!(
            md,
            "| `{}` | {:.2}-{:.2} | {:.2} | {} | {:.2} | {:.0} |",
            c.scheduler,
            c.build.min,
            c.build.max,
            c.build.mean,
            c.reps,
            c.elapsed_s,
            c.node_migrations
        );
        bars.push(Bar {
            label: c.scheduler.clone(),
            mean: c.build.mean,
            min: c.build.min,
            max: c.build.max,
        });
    }
    let _ = writeln!(
        md,
        "\nEach build's wall time is its make's life; min, max and mean are over every build of \
         every repetition.\n\n![build wall time](build_time.svg)\n"
    );
    let _ = writeln!(
        md,
        "## Load average\n\n\
         The kernel's 1-minute load average (running, runnable and disk-waiting tasks, sampled \
         every 5 s, `EXP_1` = 1884/2048, from 0 at the start as after boot). Published for the \
         original runs: 100-200.\n\n\
         | scheduler | mean during the builds | peak | mean over the run | disk busy |\n\
         | --- | --- | --- | --- | --- |"
    );
    for c in cells {
        let busy = if disks.is_some() {
            format!("{:.0}%", 100.0 * c.disk_busy)
        } else {
            "no disk queue".into()
        };
        let _ = writeln!(
            md,
            "| `{}` | {:.1} | {:.1} | {:.1} | {busy} |",
            c.scheduler, c.load_mean, c.load_peak, c.load_mean_run
        );
    }
    let _ = writeln!(
        md,
        "\nDuring the builds: the samples up to the end of the last build; mean: of each run's \
         samples, averaged over the runs; peak: the highest such sample of any run; disk busy: \
         the share of the whole run a disk spent serving requests.\n"
    );
    let _ = writeln!(
        md,
        "Model assumptions behind these tables:\n\n{}",
        assumptions::io_mix(t, disks, params)
    );
    charts.push((
        "build_time.svg".into(),
        bar_chart("Build wall time (mean, min-max)", "seconds", &bars)?,
    ));
    Ok(())
}
