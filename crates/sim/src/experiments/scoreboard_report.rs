//! The markdown report and charts of a `[scoreboard]`: the headline table (per row the best
//! configuration and where the focus stands against it and against the baseline), the two
//! targets counted, then per row every configuration side by side (schedulers
//! down, placements across) with its chart.

use super::scoreboard::ScoreboardSection;
use super::scoreboard_run::{ConfigResult, ScoreRow, ScoreboardResults};
use super::{ExperimentSpec, Outcome};
use crate::charts::{Bar, ChartError, bar_chart};
use std::fmt::Write as _;

type Charts = Vec<(String, String)>;

fn label(sched: &str, placement: &str) -> String {
    format!("{sched} + {placement}")
}

fn cell(c: &ConfigResult) -> String {
    if let Some(e) = &c.error {
        return format!("failed: {e}");
    }
    let prec = if c.mean >= 1000.0 { 0 } else { 2 };
    let mut s = format!("{:.p$}({:.p$})", c.mean, c.std, p = prec);
    if c.never > 0 {
        let _ = write!(s, ", {} never", c.never);
    }
    s
}

/// File-name-safe id of a row: `numa_test-azusa16-n16`.
pub fn row_id(r: &ScoreRow) -> String {
    let mut id = format!("{}-{}", r.workload, r.machine);
    if !r.size.is_empty() {
        id.push('-');
        id.push_str(&r.size);
    }
    id.chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '_' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect::<String>()
        .replace("--", "-")
        .trim_end_matches('-')
        .to_string()
}

/// (markdown, charts).
pub fn write(
    o: &Outcome,
    s: &ScoreboardSection,
    r: &ScoreboardResults,
) -> Result<(String, Charts), ChartError> {
    let e: &ExperimentSpec = &o.spec;
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", e.title);
    if !e.description.is_empty() {
        let _ = writeln!(md, "{}\n", e.description.trim());
    }
    let (fs, fp) = (&s.focus[0], &s.focus[1]);
    let (bs, bp) = (&s.baseline[0], &s.baseline[1]);
    let _ = writeln!(
        md,
        "Seed {}, {} per configuration (numa_test: repetitions; the studies: \
         seeds). Every figure comes from the \
         simulator's model (docs/model/), nothing is fitted to a published or wished-for \
         result. Every configuration of a row runs on the same seeds.\n\n\
         Configurations: CPU schedulers {} on every row, plus the historical schedulers of a \
         row's machine; each with placement {}. **Focus**: `{}`. **Baseline** (what a user \
         already has): `{}`.\n\n\
         Best: the configuration with the best mean. *Within one stddev*: the focus is the \
         best, or its mean is no further from the best's than the larger of the two standard \
         deviations. *Beats baseline*: the focus is better than the baseline by more than the \
         larger of their two standard deviations. numa_test runs with hackbench in every \
         cell. A convergence run that never converged counts as the watch length (the cell \
         says how many never did).\n",
        e.seed,
        topo::count(r.reps, "repetition"),
        list(&s.schedulers),
        list(&s.placements),
        label(fs, fp),
        label(bs, bp),
    );
    headline(&mut md, r, s);
    let mut charts = Vec::new();
    charts.push(("standing.svg".to_string(), standing_chart(r)?));
    let _ = writeln!(md, "![focus against the best, per row](standing.svg)\n");
    disturbance(&mut md, r);
    let _ = writeln!(md, "## Every configuration, per row\n");
    for row in &r.rows {
        detail(&mut md, &mut charts, row, s)?;
    }
    Ok((md, charts))
}

/// The best configuration's name in a table cell (`none ran` when no configuration did).
fn best_label(best: Option<&ConfigResult>) -> String {
    best.map_or("none ran".into(), |b| {
        format!("`{}`", label(&b.scheduler, &b.placement))
    })
}

fn list(v: &[String]) -> String {
    v.iter()
        .map(|x| format!("`{x}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn headline(md: &mut String, r: &ScoreboardResults, s: &ScoreboardSection) {
    let _ = writeln!(
        md,
        "## Where `{}` stands\n\n\
         | workload | machine | size | figure | best configuration | best | focus | focus vs best | within one stddev | baseline | focus vs baseline | beats baseline |\n\
         | --- | --- | --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |",
        label(&s.focus[0], &s.focus[1])
    );
    let mut within = (0, 0);
    let mut beats = (0, 0);
    for row in &r.rows {
        let get = |i: Option<usize>| i.map(|i| &row.configs[i]);
        let best = get(row.best);
        let focus = get(row.focus);
        let base = get(row.baseline);
        let st = row.standing.as_ref();
        let yn = |b: Option<bool>| match b {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "-",
        };
        within.1 += 1;
        if st.is_some_and(|x| x.within_one_std) {
            within.0 += 1;
        }
        if row.tasks_vs_cpus.is_some_and(|x| x >= 1.0) {
            beats.1 += 1;
            if st.and_then(|x| x.beats_baseline) == Some(true) {
                beats.0 += 1;
            }
        }
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.workload,
            row.machine,
            if row.size.is_empty() { "-" } else { &row.size },
            row.metric,
            best_label(best),
            best.map_or("-".into(), cell),
            focus.map_or_else(
                || {
                    row.configs
                        .iter()
                        .find(|c| c.scheduler == s.focus[0] && c.placement == s.focus[1])
                        .map_or("-".into(), cell)
                },
                cell
            ),
            st.map_or("-".into(), |x| format!("{:+.1}%", x.vs_best_pct)),
            yn(st.map(|x| x.within_one_std)),
            base.map_or("-".into(), cell),
            st.and_then(|x| x.vs_baseline_pct)
                .map_or("-".into(), |v| format!("{v:+.1}%")),
            yn(st.and_then(|x| x.beats_baseline)),
        );
    }
    let _ = writeln!(
        md,
        "\n\"focus vs best\": how much worse the focus is than the best (+ is worse). \"focus \
         vs baseline\": how much better the focus is than the baseline (+ is better).\n\n\
         Targets: the focus is the best or within one stddev of it in **{} of {}** \
         rows (target: all); it beats the baseline by more than one stddev in **{} of {}** \
         numa_test rows with N >= CPUs (target: at least half).\n",
        within.0, within.1, beats.0, beats.1
    );
}

/// hackbench's time (s) of a configuration, `-` where it has none.
fn hackbench_cell(c: &ConfigResult) -> String {
    c.hackbench_s
        .filter(|_| c.error.is_none())
        .map_or("-".into(), |h| format!("{:.2}({:.2})", h.mean, h.std))
}

/// Per numa_test row, how long hackbench took under the best configuration and under the
/// focus: the other half of what numa_test measures.
fn disturbance(md: &mut String, r: &ScoreboardResults) {
    let rows: Vec<&ScoreRow> = r
        .rows
        .iter()
        .filter(|row| row.configs.iter().any(|c| c.hackbench_s.is_some()))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "### hackbench beside numa_test's ElapsedTime\n\n\
         ElapsedTime runs until the last task exits, hackbench included; each row's jobs are \
         sized to outlast hackbench (its PROBLEMSIZE and passes below), so it is the jobs' \
         end. hackbench, the disturbance, runs on the same CPUs: a configuration that gives it \
         less CPU time finishes the jobs sooner and hackbench later. HackbenchTime (s), \
         mean(stddev), beside each row's ElapsedTime.\n\n\
         | machine | size | PROBLEMSIZE, passes | best configuration | its ElapsedTime | its HackbenchTime | focus ElapsedTime | focus HackbenchTime |\n\
         | --- | --- | --- | --- | ---: | ---: | ---: | ---: |"
    );
    for row in &rows {
        let get = |i: Option<usize>| i.map(|i| &row.configs[i]);
        let (best, focus) = (get(row.best), get(row.focus));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.machine,
            row.size,
            size_cell(row),
            best_label(best),
            best.map_or("-".into(), cell),
            best.map_or("-".into(), hackbench_cell),
            focus.map_or("-".into(), cell),
            focus.map_or("-".into(), hackbench_cell),
        );
    }
    md.push('\n');
    let warnings: Vec<String> = rows.iter().flat_map(|row| early_end(row)).collect();
    for w in &warnings {
        let _ = writeln!(md, "- **{w}**");
    }
    if !warnings.is_empty() {
        md.push('\n');
    }
}

/// A numa_test row's PROBLEMSIZE and passes, `(auto)` when chosen for the machine.
fn size_cell(row: &ScoreRow) -> String {
    row.numa_size.map_or("-".into(), |z| {
        format!(
            "{}, {}{}",
            z.problem_size,
            z.passes,
            if z.auto { " (auto)" } else { "" }
        )
    })
}

/// One line per configuration of a numa_test row whose jobs ended before hackbench did.
fn early_end(row: &ScoreRow) -> Vec<String> {
    let fix = match row.numa_size {
        Some(z) if !z.auto => format!(
            "raise `passes` of its `[[scoreboard.rows]]` entry (now {}), or leave out \
             `problem_size` and `passes` for the machine's automatic size",
            z.passes
        ),
        _ => "give its `[[scoreboard.rows]]` entry more `passes`".into(),
    };
    row.configs
        .iter()
        .filter(|c| c.jobs_ended_first > 0)
        .map(|c| {
            format!(
                "warning: {} {} {}, {}: the jobs ended before hackbench did in {} of {} \
                 repetitions, so ElapsedTime is hackbench's, not the jobs'; {fix}",
                row.workload,
                row.machine,
                row.size,
                label(&c.scheduler, &c.placement),
                c.jobs_ended_first,
                c.values.len()
            )
        })
        .collect()
}

fn detail(
    md: &mut String,
    charts: &mut Charts,
    row: &ScoreRow,
    s: &ScoreboardSection,
) -> Result<(), ChartError> {
    let id = row_id(row);
    let _ = writeln!(
        md,
        "### {} on {}{}\n\n{}{}, mean(stddev); **bold**: the best; *italic*: the focus.\n",
        row.workload,
        row.machine,
        if row.size.is_empty() {
            String::new()
        } else {
            format!(", {}", row.size)
        },
        row.metric,
        if row.higher_is_better {
            " (higher is better)"
        } else {
            " (lower is better)"
        }
    );
    grid(md, row, s, |i, c| {
        let mut t = cell(c);
        if Some(i) == row.focus {
            t = format!("*{t}*");
        }
        if Some(i) == row.best {
            t = format!("**{t}**");
        }
        t
    });
    if row.configs.iter().any(|c| c.hackbench_s.is_some()) {
        if let Some(z) = row.numa_size {
            let _ = writeln!(md, "\nnuma_test size: {}.", z.describe());
        }
        let _ = writeln!(md, "\nHackbenchTime (s), mean(stddev), the same runs:\n");
        grid(md, row, s, |_, c| hackbench_cell(c));
    }
    let bars: Vec<Bar> = row
        .configs
        .iter()
        .filter(|c| c.error.is_none())
        .map(|c| Bar {
            label: label(&c.scheduler, &c.placement),
            mean: c.mean,
            min: (c.mean - c.std).max(0.0),
            max: c.mean + c.std,
        })
        .collect();
    let title = format!(
        "{} on {} {}: {} (mean, whisker +-1 stddev)",
        row.workload, row.machine, row.size, row.metric
    );
    charts.push((format!("{id}.svg"), bar_chart(&title, &row.metric, &bars)?));
    let _ = writeln!(md, "\n![{}]({id}.svg)\n", row.metric);
    Ok(())
}

/// A row's configurations as a table: schedulers down, placements across, each cell
/// `text(index in row.configs, configuration)`.
fn grid(
    md: &mut String,
    row: &ScoreRow,
    s: &ScoreboardSection,
    text: impl Fn(usize, &ConfigResult) -> String,
) {
    let _ = write!(md, "| scheduler |");
    for p in &s.placements {
        let _ = write!(md, " `{p}` |");
    }
    let _ = write!(md, "\n| --- |");
    for _ in &s.placements {
        let _ = write!(md, " ---: |");
    }
    md.push('\n');
    let np = s.placements.len().max(1);
    for (k, chunk) in row.configs.chunks(np).enumerate() {
        let _ = write!(md, "| `{}` |", chunk[0].scheduler);
        for (j, c) in chunk.iter().enumerate() {
            let _ = write!(md, " {} |", text(k * np + j, c));
        }
        md.push('\n');
    }
}

/// The focus's distance to the best per row, percent (0: the focus is the best).
fn standing_chart(r: &ScoreboardResults) -> Result<String, ChartError> {
    let bars: Vec<Bar> = r
        .rows
        .iter()
        .filter_map(|row| {
            row.standing.as_ref().map(|s| {
                Bar::single(
                    format!("{} {} {}", row.workload, row.machine, row.size),
                    s.vs_best_pct.max(0.0),
                )
            })
        })
        .collect();
    bar_chart(
        "focus configuration: % worse than the row's best (0: it is the best)",
        "% worse than best",
        &bars,
    )
}
