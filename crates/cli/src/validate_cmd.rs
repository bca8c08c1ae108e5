//! `homenode validate`: run the validation set (`validation/*.toml`) and score the model
//! against the published figures.

use anyhow::{Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use sim::validation::{self, report, score};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct ValidateArgs {
    /// Cases to run, by file stem (default: all of them, or the --ci cut).
    cases: Vec<String>,
    /// Run only the quick cut CI runs (the cases marked `ci = true`).
    #[arg(long, conflicts_with = "cases")]
    ci: bool,
    /// Print the results as JSON on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Write report.txt, results.json and effects.svg (the scatter plot) into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Directory of case files.
    #[arg(long, default_value = "validation")]
    dir: PathBuf,
}

pub fn run(a: ValidateArgs) -> Result<()> {
    let all = validation::load_all(&a.dir)?;
    let mut cases = validation::select(&all, &a.cases).map_err(|e| crate::usage(e.into()))?;
    if a.ci {
        cases.retain(|c| c.ci);
    }
    if cases.is_empty() {
        bail!("no validation cases to run in {}", a.dir.display());
    }
    let total = validation::run::runs(&cases);
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {elapsed} (eta {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    });
    let start = Instant::now();
    let tick = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let results = validation::run::run(&cases, &tick);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let comparisons = score::comparisons(&results);
    let summary = score::summarise(&results, &comparisons);
    let table = report::table(&results, &comparisons);
    let line = report::summary_line(&summary);
    let json = report::json(&results, &comparisons, &summary);
    for f in report::failures(&results) {
        eprintln!("failed: {f}");
    }
    if let Some(dir) = &a.out {
        let svg = report::scatter(&comparisons)?;
        write_files(
            dir,
            &[
                ("report.txt", format!("{table}\n{line}\n")),
                ("results.json", json.clone()),
                ("effects.svg", svg),
            ],
        )?;
    }
    if a.json {
        out!("{json}");
    } else {
        out!("{table}\n");
        outln!("{line}");
    }
    eprintln!(
        "{} runs in {:.1} s{}",
        total,
        start.elapsed().as_secs_f64(),
        a.out
            .as_ref()
            .map_or(String::new(), |d| format!(", files in {}", d.display()))
    );
    Ok(())
}

fn write_files(dir: &Path, files: &[(&str, String)]) -> Result<()> {
    let ctx = |p: &Path| format!("cannot write {}", p.display());
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", ctx(dir)))?;
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| anyhow::anyhow!("{}: {e}", ctx(&p)))?;
    }
    Ok(())
}
