//! What the per-node sampling costs the workers: `cargo bench -p homenode-bench --bench overhead`.
//!
//! Runs the same numa_test worker set (no load peak) with sampling on and off, in alternating
//! order, and prints each pair and the median ratios on / off of the workers' total user time
//! and of the elapsed time. The target is at most 1% (a ratio of at most 1.01).
//!
//! Environment: OVERHEAD_PAIRS (default 7), OVERHEAD_TASKS (default: one per CPU),
//! OVERHEAD_SIZE (2000000), OVERHEAD_PASSES (100), OVERHEAD_SAMPLE_MS (10).
//! `homenode bench overhead` does the same from the installed binary.

use bench::numa_test::{RunConfig, WorkerCommand};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let nodes = bench::host_cpu_nodes(Path::new("/"), None).expect("host CPU to node map");
    let tasks = env("OVERHEAD_TASKS", nodes.cpus().len() as u64) as u32;
    let pairs = env("OVERHEAD_PAIRS", 7) as u32;
    let sample_ms = env("OVERHEAD_SAMPLE_MS", 10);
    let cfg = RunConfig {
        worker: WorkerCommand {
            program: PathBuf::from(env!("CARGO_BIN_EXE_homenode-bench-worker")),
            prefix_args: vec![],
        },
        tasks,
        size: env("OVERHEAD_SIZE", 2_000_000),
        passes: env("OVERHEAD_PASSES", 100) as u32,
        seed: 1,
        sample: None,
        disturb: None,
        nodes,
        root: PathBuf::from("/"),
        kill_worker: None,
    };
    println!(
        "sampling overhead: N={tasks}, PROBLEMSIZE {}, {} passes, sampling every {sample_ms} ms, {pairs} pairs",
        cfg.size, cfg.passes
    );
    println!("{}", bench::overhead::header());
    let r = bench::overhead::measure(
        &cfg,
        Duration::from_millis(sample_ms),
        pairs,
        &mut |i, p| println!("{}", p.row(i)),
    )
    .expect("overhead runs");
    println!("{}", r.summary());
}
