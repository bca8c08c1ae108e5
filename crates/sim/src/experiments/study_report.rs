//! The markdown report of a study experiment: title and description, the effective parameters
//! against the reference sizes, the `linux` options the study ran, then per machine the
//! study's own table, its chart and the model assumptions behind it.

use super::assumptions;
use super::studyrun::StudyResults;
use super::{ExperimentSpec, Outcome};
use crate::charts::{Bar, ChartError, Series, bar_chart, line_chart};
use crate::studies::{autonuma, convergence, light_load, oltp};
use std::fmt::Write as _;

type Charts = Vec<(String, String)>;

/// (markdown, charts).
pub fn write(o: &Outcome, r: &StudyResults) -> Result<(String, Charts), ChartError> {
    let e = &o.spec;
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", e.title);
    if !e.description.is_empty() {
        let _ = writeln!(md, "{}\n", e.description.trim());
    }
    let machines = e.study.as_ref().map_or(vec![], |s| s.machines(&e.machine));
    let _ = writeln!(
        md,
        "Machine(s) {}, seed {}. Every figure comes from the simulator's model \
         (docs/model/), nothing is fitted to published results. A study runs each configuration once with this seed: it has no repetitions, so \
         `--reps` is ignored.\n",
        machines
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", "),
        e.seed
    );
    params_table(&mut md, e);
    options_table(&mut md, o);
    let mut charts = Vec::new();
    match r {
        StudyResults::LightLoad(v) => v.iter().try_for_each(|x| light(&mut md, &mut charts, x)),
        StudyResults::Oltp(v) => v.iter().try_for_each(|x| tps(&mut md, &mut charts, x)),
        StudyResults::Autonuma(v) => v.iter().try_for_each(|x| numa(&mut md, &mut charts, x)),
        StudyResults::Convergence(v) => v.iter().try_for_each(|x| conv(&mut md, &mut charts, x)),
    }?;
    assumptions_once(&mut md, &machines);
    Ok((md, charts))
}

/// The model assumptions, once per machine, after every table.
fn assumptions_once(md: &mut String, machines: &[String]) {
    for m in machines {
        let text = topo::resolve_machine(m)
            .map(|t| assumptions::numa_balancing(&t))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "## Model assumptions on `{m}`\n\nThe machine facts behind the tables of `{m}` \
             above:\n\n{text}"
        );
    }
}

fn params_table(md: &mut String, e: &ExperimentSpec) {
    let Some(s) = &e.study else { return };
    let _ = writeln!(
        md,
        "## Parameters (study `{}`)\n\n| key | value | reference size |\n| --- | --- | --- |",
        s.kind.name()
    );
    let eff = s.effective();
    for (k, v, reference) in &eff {
        let _ = writeln!(md, "| `{k}` | {v} | {reference} |");
    }
    let cut: Vec<String> = eff
        .iter()
        .filter(|(_, v, r)| v != r)
        .map(|(k, v, r)| format!("`{k}` {v} instead of {r}"))
        .collect();
    if cut.is_empty() {
        let _ = writeln!(md, "\nEvery parameter has its reference size.\n");
    } else {
        let _ = writeln!(
            md,
            "\nCut relative to the reference run: {}. The cut keeps `homenode experiments run \
             --all` within a few minutes on a 2-core machine; it is a runtime choice, not \
             tuning: no model parameter differs from the reference run.\n",
            cut.join("; ")
        );
    }
}

fn options_table(md: &mut String, o: &Outcome) {
    let _ = writeln!(
        md,
        "## Scheduler runs and their effective options\n\n| run | options |\n| --- | --- |"
    );
    for (name, opts) in &o.options {
        let list: Vec<String> = opts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(md, "| `{name}` | {} |", list.join(", "));
    }
    md.push('\n');
}

/// The study's table and its chart links.
fn section(md: &mut String, table: &str, charts: &[&str]) {
    let _ = writeln!(md, "{table}");
    for c in charts {
        let _ = writeln!(md, "![{c}]({c})\n");
    }
}

fn light(
    md: &mut String,
    charts: &mut Charts,
    r: &light_load::LightLoad,
) -> Result<(), ChartError> {
    let file = format!("{}-runtime.svg", r.machine);
    let bars: Vec<_> = r
        .rows
        .iter()
        .map(|x| Bar::single(x.rule.clone(), x.runtime_s))
        .collect();
    let title = format!("light-load on {}: run time per numa_imbalance", r.machine);
    charts.push((file.clone(), bar_chart(&title, "seconds", &bars)?));
    section(md, &r.to_markdown(), &[&file]);
    Ok(())
}

fn tps(md: &mut String, charts: &mut Charts, r: &oltp::Oltp) -> Result<(), ChartError> {
    let file = format!("{}-tps.svg", r.machine);
    let line = |label: &str, f: fn(&oltp::Row) -> f64| {
        let points = r.rows.iter().map(|x| (f64::from(x.threads), f(x)));
        Series::new(label, points.collect())
    };
    // The second line is whichever mode the study compared with off.
    let series = [
        line("numa_balancing=off", |x| x.tps_off),
        line(&format!("numa_balancing={}", r.mode), |x| x.tps_on),
    ];
    let title = format!("oltp on {}: transactions/s", r.machine);
    charts.push((
        file.clone(),
        line_chart(&title, "client threads", "tx/s", &series)?,
    ));
    section(md, &r.to_markdown(), &[&file]);
    Ok(())
}

fn numa(md: &mut String, charts: &mut Charts, r: &autonuma::Autonuma) -> Result<(), ChartError> {
    let elapsed = format!("{}-elapsed.svg", r.machine);
    let bars: Vec<_> = r
        .rows
        .iter()
        .map(|x| {
            let l = format!("{} {}", x.program, x.numa_balancing);
            Bar::single(l, x.elapsed_s)
        })
        .collect();
    let title = format!("autonuma-benchmark on {}: elapsed", r.machine);
    charts.push((elapsed.clone(), bar_chart(&title, "seconds", &bars)?));
    let mut files = vec![elapsed];
    for s in &r.memory {
        let f = format!("{}-{}-{}.svg", r.machine, s.program, s.numa_balancing);
        charts.push((f.clone(), s.svg()?));
        files.push(f);
    }
    let refs: Vec<&str> = files.iter().map(String::as_str).collect();
    section(md, &r.to_markdown(), &refs);
    Ok(())
}

fn conv(
    md: &mut String,
    charts: &mut Charts,
    r: &convergence::Convergence,
) -> Result<(), ChartError> {
    let file = format!("{}-convergence.svg", r.machine);
    // A run that never converged is drawn at the watch length and labelled so.
    let bars: Vec<_> = r
        .rows
        .iter()
        .map(|x| {
            let (v, tag) = x.converged_s.map_or((r.watch_s, " (never)"), |t| (t, ""));
            Bar::single(format!("{} {}{tag}", x.shape, x.mode), v)
        })
        .collect();
    let title = format!("convergence on {}: time to converge", r.machine);
    charts.push((file.clone(), bar_chart(&title, "seconds", &bars)?));
    section(md, &r.to_markdown(), &[&file]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oltp_chart_names_the_mode_it_compared() {
        let row = oltp::Row {
            threads: 2,
            tps_off: 100.0,
            tps_on: 99.0,
            diff_pct: -1.0,
            client_s_on: 1.0,
            scan_passes_on: 0,
            hint_faults_on: 0,
            hint_faults_local_on: 0,
            pages_migrated_on: 0,
        };
        let r = oltp::Oltp {
            machine: "xeon2s".into(),
            mode: "sched-numa-2012".into(),
            tx_per_thread: 1,
            rows: vec![row.clone(), oltp::Row { threads: 4, ..row }],
        };
        let (mut md, mut charts) = (String::new(), Vec::new());
        tps(&mut md, &mut charts, &r).unwrap();
        let svg = &charts[0].1;
        assert!(svg.contains("numa_balancing=sched-numa-2012"), "{svg}");
        assert!(!svg.contains("numa_balancing=on"));
    }
}
