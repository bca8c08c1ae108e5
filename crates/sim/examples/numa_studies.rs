//! Run one of the issue-4 studies at full size and print its markdown (until the experiments
//! runner calls them): `cargo run --release -p homenode-sim --example numa_studies -- NAME`
//! with NAME one of light-load, oltp, autonuma-xeon2s, autonuma-epyc, convergence. Sizes
//! here are cut for a quick look (oltp: 20,000 transactions per thread; autonuma: 5 loops);
//! the autonuma study writes its per-node memory charts as SVG files to the current directory.

use sim::studies::{autonuma, convergence, light_load, oltp};
use sim::time::{MS, SEC};
use sim::workload::{
    autonuma::AutonumaParams, convergence::ConvergenceParams, light_load::LightLoadParams,
    oltp::OltpParams,
};

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let out = match name.as_str() {
        "light-load" => light_load::study("kunpeng96", &LightLoadParams::default(), "on", 1)
            .map(|r| r.to_markdown()),
        "oltp" => oltp::study(
            "xeon2s",
            &oltp::THREADS,
            &OltpParams {
                tx_per_thread: 20_000,
                ..Default::default()
            },
            "on",
            1,
        )
        .map(|r| r.to_markdown()),
        "autonuma-xeon2s" | "autonuma-epyc" => {
            let m = if name.ends_with("xeon2s") {
                "xeon2s"
            } else {
                "epyc-nps4"
            };
            let p = AutonumaParams {
                loops: 5,
                ..Default::default()
            };
            autonuma::study(m, &p, 500 * MS, 1).map(|r| {
                for s in &r.memory {
                    let file = format!("{m}-{}-{}.svg", s.program, s.numa_balancing);
                    match s.svg() {
                        Ok(svg) => {
                            if let Err(e) = std::fs::write(&file, svg) {
                                eprintln!("{file}: {e}");
                            }
                        }
                        Err(e) => eprintln!("{file}: {e}"),
                    }
                }
                r.to_markdown()
            })
        }
        "convergence" => convergence::study(
            "epyc-nps4",
            &convergence::SHAPES,
            &convergence::MODES,
            &ConvergenceParams::default(),
            60 * SEC,
            1,
        )
        .map(|r| r.to_markdown()),
        _ => {
            eprintln!(
                "numa_studies: unknown study `{name}` (valid: light-load, oltp, autonuma-xeon2s, autonuma-epyc, convergence)"
            );
            std::process::exit(2);
        }
    };
    match out {
        Ok(md) => print!("{md}"),
        Err(e) => {
            eprintln!("numa_studies: {e}");
            std::process::exit(1);
        }
    }
}
