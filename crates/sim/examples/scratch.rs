use sim::workload::oltp::{OltpParams, oltp};
use std::time::Instant;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let topo = sim::studies::machine(&a[1]).unwrap();
    let p = OltpParams {
        clients: a[2].parse().unwrap(),
        tx_per_thread: a[3].parse().unwrap(),
        ..Default::default()
    };
    let t0 = Instant::now();
    let r = sim::studies::run(&topo, oltp(&p), &a[4], 1).unwrap();
    println!(
        "clients {} tx {} {} end {:.2}s wall {:.2}s events {} solves {} ctx {}",
        p.clients,
        p.tx_per_thread,
        a[4],
        r.end_ns as f64 / 1e9,
        t0.elapsed().as_secs_f64(),
        r.events,
        r.counters.contention_solves,
        r.counters.context_switches
    );
    println!("{:?}", r.counters.numa);
}
