//! Mutation fuzzing of every parser and loader that reads what a user or the kernel wrote:
//! the `/proc` and `/sys` readers (one by one, and as whole captured trees), machine specs,
//! workload and experiment files, the daemon's configuration and its journal, and the
//! command-line spec strings. docs/FUZZ.md says how to run it and what it found.
//!
//! cargo-fuzz needs a nightly toolchain, which CI machines do not have, so this is a plain
//! mutation fuzzer that runs on stable: valid seeds (the test fixtures and the shipped files)
//! are mutated by [`mutate::mutate`] under a seeded generator, and each input is run under
//! `catch_unwind`. `cargo test -p homenode-fuzz` runs a small fixed number of inputs per
//! target (deterministic); `cargo run -p homenode-fuzz --release --bin fuzz -- --secs N` runs
//! for N seconds and also reports slow inputs.

pub mod mutate;
pub mod special;
pub mod targets;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::SeedableRng as _;
use rand::seq::SliceRandom as _;
use rand_chacha::ChaCha8Rng;

pub use targets::{TARGETS, Target, find};

/// An input that made the code under test panic, or run longer than the slow limit.
#[derive(Debug, Clone)]
pub struct Finding {
    pub target: &'static str,
    /// For tree targets, the file the input was written over.
    pub file: Option<String>,
    pub input: Vec<u8>,
    pub what: String,
}

/// How long to run.
#[derive(Clone, Copy, Debug)]
pub enum Budget {
    Inputs(u64),
    For(Duration),
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub inputs: u64,
    pub panics: Vec<Finding>,
    /// Inputs slower than `slow` (only reported: timing depends on the machine).
    pub slow: Vec<(Finding, Duration)>,
}

/// Runs `target` for `budget`, seeded by `seed`; an input taking longer than `slow` is listed
/// in [`Outcome::slow`].
pub fn run(target: &Target, seed: u64, budget: Budget, slow: Duration) -> Outcome {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Outcome::default();
    let start = Instant::now();
    let more = |n: u64| match budget {
        Budget::Inputs(max) => n < max,
        Budget::For(d) => start.elapsed() < d,
    };
    match &target.kind {
        targets::Kind::Text { parse, seeds } => {
            text_loop(
                target.name,
                *parse,
                &targets::file_seeds(seeds),
                &mut rng,
                &more,
                slow,
                &mut out,
            );
        }
        targets::Kind::Made { parse, seeds } => {
            text_loop(
                target.name,
                *parse,
                &seeds(),
                &mut rng,
                &more,
                slow,
                &mut out,
            );
        }
        targets::Kind::Tree { fixture, read } => {
            tree_loop(target.name, fixture, *read, &mut rng, &more, slow, &mut out);
        }
    }
    out
}

fn text_loop(
    name: &'static str,
    parse: fn(&[u8]),
    seeds: &[Vec<u8>],
    rng: &mut ChaCha8Rng,
    more: &dyn Fn(u64) -> bool,
    slow: Duration,
    out: &mut Outcome,
) {
    assert!(!seeds.is_empty(), "target {name} has no seed");
    while more(out.inputs) {
        let seed = seeds.choose(rng).expect("seeds");
        let input = mutate::mutate(rng, seed);
        out.inputs += 1;
        let t0 = Instant::now();
        let r = std::panic::catch_unwind(|| parse(&input));
        record(name, None, input, r, t0.elapsed(), slow, out);
    }
}

fn tree_loop(
    name: &'static str,
    fixture: &str,
    read: fn(&Path),
    rng: &mut ChaCha8Rng,
    more: &dyn Fn(u64) -> bool,
    slow: Duration,
    out: &mut Outcome,
) {
    let src = targets::repo().join(fixture);
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scratch =
        std::env::temp_dir().join(format!("homenode-fuzz-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    copy_tree(&src, &scratch).expect("copy the fixture tree");
    let mut files = Vec::new();
    list_files(&scratch, &mut files);
    files.sort();
    while more(out.inputs) {
        let file = files.choose(rng).expect("files").clone();
        let original = std::fs::read(&file).unwrap_or_default();
        let input = mutate::mutate(rng, &original);
        out.inputs += 1;
        let _ = std::fs::write(&file, &input);
        let t0 = Instant::now();
        let r = std::panic::catch_unwind(|| read(&scratch));
        let rel = file
            .strip_prefix(&scratch)
            .unwrap_or(&file)
            .display()
            .to_string();
        record(name, Some(rel), input, r, t0.elapsed(), slow, out);
        let _ = std::fs::write(&file, &original);
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

fn record(
    target: &'static str,
    file: Option<String>,
    input: Vec<u8>,
    r: std::thread::Result<()>,
    took: Duration,
    slow: Duration,
    out: &mut Outcome,
) {
    let finding = |what: String| Finding {
        target,
        file: file.clone(),
        input: input.clone(),
        what,
    };
    if let Err(p) = r {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into());
        out.panics.push(finding(what));
    } else if took > slow {
        out.slow.push((finding(format!("took {took:?}")), took));
    }
}

pub(crate) fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let dst = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &dst)?;
        } else {
            std::fs::copy(e.path(), &dst)?;
        }
    }
    Ok(())
}

fn list_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            list_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Keeps a panicking input quiet (its message is collected in the finding instead).
pub fn silence_panics() {
    std::panic::set_hook(Box::new(|_| {}));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CI budget: a fixed number of inputs per target, the same inputs every run. Any
    /// panic fails the test and prints the input that caused it.
    #[test]
    fn every_target_survives_its_ci_budget() {
        silence_panics();
        for t in TARGETS {
            let inputs = match t.kind {
                targets::Kind::Tree { .. } => 150,
                _ => 400,
            };
            let o = run(t, 1, Budget::Inputs(inputs), Duration::from_secs(3600));
            assert_eq!(o.inputs, inputs, "{}", t.name);
            if let Some(f) = o.panics.first() {
                let _ = std::panic::take_hook();
                panic!(
                    "target {} panicked on {:?} ({} bytes): {}\ninput: {:?}",
                    t.name,
                    f.file,
                    f.input.len(),
                    f.what,
                    String::from_utf8_lossy(&f.input)
                );
            }
        }
    }

    /// The entry the cargo-fuzz targets use: every text target by name, tree targets not.
    #[test]
    fn cargo_fuzz_entry_runs_text_targets_by_name() {
        for t in TARGETS {
            let text = matches!(
                t.kind,
                targets::Kind::Text { .. } | targets::Kind::Made { .. }
            );
            assert_eq!(targets::run_text(t.name, b"x = 1\n"), text, "{}", t.name);
        }
        assert!(!targets::run_text("no-such-target", b""));
    }

    #[test]
    fn a_panicking_parser_is_caught_and_reported() {
        silence_panics();
        let t = Target {
            name: "test-panics",
            kind: targets::Kind::Made {
                parse: |b| assert!(b.len() < 10, "too long"),
                seeds: || vec![b"short".to_vec()],
            },
        };
        let o = run(&t, 3, Budget::Inputs(200), Duration::from_secs(3600));
        assert!(!o.panics.is_empty());
        assert!(o.panics[0].what.contains("too long"));
    }
}
