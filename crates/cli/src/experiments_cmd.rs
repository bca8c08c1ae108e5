//! `homenode experiments list|run`: the classic comparisons described by `experiments/*.toml`.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use sim::experiments::{self, ExperimentSpec};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[derive(Args)]
pub struct ExperimentsArgs {
    /// Directory of experiment files (default: `experiments/` here if it exists, else the
    /// files built into homenode).
    #[arg(long, global = true)]
    dir: Option<PathBuf>,
    #[command(subcommand)]
    cmd: ExpCmd,
}

#[derive(Subcommand)]
enum ExpCmd {
    /// List the experiments.
    List,
    /// Run one experiment (or all) and write its report, charts and JSON.
    Run(RunArgs),
}

#[derive(Args)]
struct RunArgs {
    /// Experiment name (see `homenode experiments list`).
    name: Option<String>,
    /// Run every experiment.
    #[arg(long, conflicts_with = "name")]
    all: bool,
    /// Output directory (default: results/NAME/; with --all, DIR/NAME/).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the results as JSON on stdout (the files are written too).
    #[arg(long)]
    json: bool,
    /// Repetitions per cell instead of the file's.
    #[arg(long)]
    reps: Option<u32>,
}

pub fn run(a: ExperimentsArgs) -> Result<()> {
    let dir = a.dir.or_else(|| {
        let here = PathBuf::from("experiments");
        here.is_dir().then_some(here)
    });
    let all = experiments::load_all(dir.as_deref())?;
    match a.cmd {
        ExpCmd::List => {
            for e in &all {
                outln!("{:<22} {}", e.name, e.title);
            }
            Ok(())
        }
        ExpCmd::Run(r) => run_some(&all, r),
    }
}

fn run_some(all: &[ExperimentSpec], r: RunArgs) -> Result<()> {
    let chosen: Vec<ExperimentSpec> = match (&r.name, r.all) {
        (Some(n), false) => vec![experiments::find(all, n).map_err(|e| crate::usage(e.into()))?],
        (None, true) => all.to_vec(),
        _ => bail!(crate::usage(anyhow::anyhow!(
            "name an experiment or give --all (see `homenode experiments list`)"
        ))),
    };
    if let Some(n) = r.reps {
        if n == 0 {
            bail!(crate::usage(anyhow::anyhow!("--reps must be at least 1")));
        }
        sim::budget::reps("--reps", f64::from(n)).map_err(|e| crate::usage(e.into()))?;
    }
    let start = Instant::now();
    let command = command_line(std::env::args_os().skip(1));
    let mut docs = Vec::new();
    for e in &chosen {
        let out = match (&r.out, r.all) {
            (Some(d), false) => d.clone(),
            (Some(d), true) => d.join(&e.name),
            (None, _) => Path::new("results").join(&e.name),
        };
        let t0 = Instant::now();
        let done = AtomicU64::new(0);
        let bar = crate::progress::bar(experiments::planned_runs(e, r.reps), "runs");
        if let Some(b) = &bar {
            b.set_message(e.name.clone());
        }
        let tick = || {
            done.fetch_add(1, Ordering::Relaxed);
            if let Some(b) = &bar {
                b.inc(1);
                // The plan is exact for the shipped kinds; a longer run stretches the bar.
                if b.length().is_some_and(|l| b.position() > l) {
                    b.set_length(b.position());
                }
            }
        };
        let mut o = experiments::run(e, r.reps, &tick)?;
        o.stamp(env!("CARGO_PKG_VERSION"), &command);
        write_files(&out, &o)?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        eprintln!(
            "{}: {} in {:.1} s, report in {}",
            e.name,
            topo::count(done.load(Ordering::Relaxed), "run"),
            t0.elapsed().as_secs_f64(),
            out.join("report.md").display()
        );
        if r.json {
            docs.push(o.json());
        } else {
            out!("{}", o.markdown);
        }
    }
    if r.json {
        out!("{}", join_json(&docs));
    }
    if chosen.len() > 1 {
        eprintln!("all experiments: {:.1} s", start.elapsed().as_secs_f64());
    }
    Ok(())
}

/// The command line as typed, for the report: `homenode` and each argument, quoted for a
/// POSIX shell where it holds anything but letters, digits and `-_./=:,+@%`.
fn command_line(args: impl Iterator<Item = std::ffi::OsString>) -> String {
    let mut out = String::from("homenode");
    for a in args {
        let a = a.to_string_lossy();
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
        out.push(' ');
        if plain {
            out.push_str(&a);
        } else {
            out.push('\'');
            out.push_str(&a.replace('\'', r"'\''"));
            out.push('\'');
        }
    }
    out
}

/// One JSON document for one experiment, an array for several.
fn join_json(docs: &[String]) -> String {
    if docs.len() == 1 {
        return docs[0].clone();
    }
    format!("[\n{}]\n", docs.join(",\n"))
}

fn write_files(dir: &Path, o: &experiments::Outcome) -> Result<()> {
    let ctx = |p: &Path| format!("cannot write {}", p.display());
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", ctx(dir)))?;
    let mut files = vec![
        ("report.md".to_string(), o.markdown.clone()),
        ("results.json".to_string(), o.json()),
    ];
    files.extend(o.charts.iter().cloned());
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| anyhow::anyhow!("{}: {e}", ctx(&p)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::command_line;

    #[test]
    fn the_command_line_is_quoted_where_a_shell_needs_it() {
        let args = [
            "experiments",
            "run",
            "tx7-node-affine",
            "--out",
            "my dir/it's",
        ];
        assert_eq!(
            command_line(args.iter().map(Into::into)),
            r"homenode experiments run tx7-node-affine --out 'my dir/it'\''s'"
        );
        assert_eq!(command_line(["".into()].into_iter()), "homenode ''");
    }
}
