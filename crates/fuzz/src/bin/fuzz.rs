//! `fuzz`: the long run of the mutation fuzzer (docs/FUZZ.md).
//!
//! ```text
//! cargo run -p homenode-fuzz --release --bin fuzz -- --secs 600 [--target NAME] [--seed S]
//! ```

use std::time::Duration;

use anyhow::{Result, bail};
use clap::Parser;

#[derive(Parser)]
#[command(about = "Mutation fuzzing of homenode's parsers and loaders")]
struct Args {
    /// Seconds per target.
    #[arg(long, default_value_t = 10.0)]
    secs: f64,
    /// Only this target (default: all; `--list` names them).
    #[arg(long)]
    target: Option<String>,
    /// Seed of the mutator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// An input slower than this many seconds is reported as a hang.
    #[arg(long, default_value_t = 2.0)]
    slow_secs: f64,
    /// List the targets and stop.
    #[arg(long)]
    list: bool,
}

fn main() -> Result<()> {
    let a = Args::parse();
    if a.list {
        for t in fuzz::TARGETS {
            println!("{}", t.name);
        }
        return Ok(());
    }
    if !(a.secs.is_finite() && a.secs > 0.0 && a.slow_secs.is_finite() && a.slow_secs > 0.0) {
        bail!("--secs and --slow-secs must be positive numbers of seconds");
    }
    let chosen: Vec<&fuzz::Target> = match &a.target {
        Some(n) => vec![fuzz::find(n).ok_or_else(|| {
            let names: Vec<&str> = fuzz::TARGETS.iter().map(|t| t.name).collect();
            anyhow::anyhow!("unknown target `{n}` (targets: {})", names.join(", "))
        })?],
        None => fuzz::TARGETS.iter().collect(),
    };
    fuzz::silence_panics();
    let mut bad = 0;
    for t in chosen {
        let o = fuzz::run(
            t,
            a.seed,
            fuzz::Budget::For(Duration::from_secs_f64(a.secs)),
            Duration::from_secs_f64(a.slow_secs),
        );
        println!(
            "{:<16} {:>9} inputs  {} panics  {} slow",
            t.name,
            o.inputs,
            o.panics.len(),
            o.slow.len()
        );
        for f in o.panics.iter().take(3) {
            println!(
                "  panic in {:?}: {}\n    input: {:?}",
                f.file,
                f.what,
                String::from_utf8_lossy(&f.input)
            );
        }
        for (f, took) in o.slow.iter().take(3) {
            println!(
                "  slow ({took:?}) in {:?}: {:?}",
                f.file,
                String::from_utf8_lossy(&f.input)
                    .chars()
                    .take(200)
                    .collect::<String>()
            );
        }
        bad += o.panics.len() + o.slow.len();
    }
    if a.target.is_none() {
        // Every loader with a FIFO or a device in place of its file (fuzz::special).
        let (problems, cases) = fuzz::special::run_all();
        println!(
            "{:<16} {:>9} cases   {} problems",
            "special-files",
            cases,
            problems.len()
        );
        for p in problems.iter().take(5) {
            println!("  {p}");
        }
        bad += problems.len();
    }
    if bad > 0 {
        bail!("{bad} findings");
    }
    Ok(())
}
