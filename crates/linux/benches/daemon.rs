//! The daemon's CPU cost per interval on this host with many processes and threads.
//!
//! `cargo bench -p homenode-linux --bench daemon` starts `DAEMON_BENCH_PROCS` (default 1000)
//! idle processes of `DAEMON_BENCH_THREADS` (default 10) threads each — this binary
//! re-executed in child mode — then runs the daemon's interval (dry run, fake NUMA 2 when
//! the host has one node and 2+ CPUs) `DAEMON_BENCH_INTERVALS` times (default 15) and
//! reports the loop thread's CPU time per interval: median, mean and max, and the mean as a
//! percentage of one CPU at the default 2 s interval. Two cases:
//!
//! - `default`: the configured thresholds, so idle processes get the light pass only;
//! - `all candidates`: `candidate_min_cpu = 0`, so every process gets the full pass
//!   (threads, cgroup, numa_maps): the worst case, as if every process were busy.
//!
//! After each interval it takes the first looks the loop would take before the next one (3 at
//! the defaults: every 0.5 s of a 2 s interval) and reports their CPU time too. No process is
//! new during the bench, so a look lists `/proc` and reads nothing more: the cost of a quiet
//! host.
//!
//! `DAEMON_BENCH_CASE=default` (or `all`) runs one case only, for profiling.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use linux::daemon::{Daemon, DaemonConfig};

const CHILD_ENV: &str = "HOMENODE_DAEMON_BENCH_CHILD";

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn child(threads: usize) -> ! {
    for _ in 1..threads {
        std::thread::spawn(|| {
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        });
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
    }
}

fn measure(name: &str, cfg: DaemonConfig, intervals: usize) {
    let mut d = Daemon::start(cfg).expect("daemon start");
    let mut cpu = Vec::new();
    let mut sampling = Vec::new();
    let mut looks = Vec::new();
    let mut seen = (0, 0);
    // First looks per interval, as the loop takes them at the defaults (0.5 s in 2 s).
    let per_interval = d.first_look_every().map_or(0, |e| {
        ((d.config().placement.interval_s / e.as_secs_f64()).ceil() as usize).saturating_sub(1)
    });
    for i in 0..intervals {
        let r = d.interval().expect("interval");
        // The first interval has no rates yet (no candidates): not counted.
        if i > 0 {
            cpu.push(r.cpu_s);
            sampling.push(r.sample_cpu_s);
        }
        seen = (r.light_read, r.candidates);
        for _ in 0..per_interval {
            std::thread::sleep(Duration::from_millis(50));
            let c0 = linux::daemon::thread_cpu_s();
            d.look().expect("look");
            looks.push(linux::daemon::thread_cpu_s() - c0);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let sampling = report::median(&sampling);
    let med = report::median(&cpu);
    let mean = cpu.iter().sum::<f64>() / cpu.len() as f64;
    let max = cpu.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    println!(
        "{name:<15} processes read {:>5}, candidates {:>5}: CPU per interval median {:>7.2} ms (sampling {:.2} ms), mean {:>7.2} ms, max {:>7.2} ms; at a 2 s interval (mean) {:.3}% of one CPU",
        seen.0,
        seen.1,
        med * 1e3,
        sampling * 1e3,
        mean * 1e3,
        max * 1e3,
        mean / 2.0 * 100.0
    );
    if !looks.is_empty() {
        let med = report::median(&looks);
        looks.sort_by(f64::total_cmp);
        let mean_look = looks.iter().sum::<f64>() / looks.len() as f64;
        println!(
            "{name:<15} first looks (no new process): {per_interval} per interval, CPU per look median {:>6.2} ms, max {:>6.2} ms; interval and looks at 2 s (mean) {:.3}% of one CPU",
            med * 1e3,
            looks[looks.len() - 1] * 1e3,
            (mean + per_interval as f64 * mean_look) / 2.0 * 100.0
        );
    }
}

fn main() {
    if let Ok(t) = std::env::var(CHILD_ENV) {
        child(t.parse().unwrap_or(1));
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too: keep that quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let procs = if quick {
        20
    } else {
        env_num("DAEMON_BENCH_PROCS", 1000)
    };
    let threads = env_num("DAEMON_BENCH_THREADS", 10);
    let intervals = if quick {
        3
    } else {
        env_num("DAEMON_BENCH_INTERVALS", 15)
    };
    let exe = std::env::current_exe().expect("current exe");
    let mut kids = Children(Vec::with_capacity(procs));
    for _ in 0..procs {
        kids.0.push(
            Command::new(&exe)
                .env(CHILD_ENV, threads.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn child"),
        );
    }
    // Let every child start its threads.
    std::thread::sleep(Duration::from_millis(500 + procs as u64 * 2));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cfg = DaemonConfig {
        dry_run: true,
        ..DaemonConfig::default()
    };
    let nodes = topo::read_host(std::path::Path::new("/")).map_or(1, |t| t.nr_nodes());
    if nodes == 1 && cpus >= 2 {
        cfg.fake_numa = Some(2);
    }
    println!(
        "daemon bench: {procs} idle processes x {threads} threads, {intervals} intervals, fake NUMA {:?}",
        cfg.fake_numa
    );
    // DAEMON_BENCH_CASE=default or =all runs one case only (for profiling).
    let case = std::env::var("DAEMON_BENCH_CASE").unwrap_or_default();
    if case != "all" {
        measure("default", cfg.clone(), intervals);
    }
    if case != "default" {
        let mut all = cfg;
        all.scan.candidate_min_cpu = 0.0;
        measure("all candidates", all, intervals);
    }
}
