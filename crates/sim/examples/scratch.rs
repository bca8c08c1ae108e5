use sim::workload::light_load::{LightLoadParams, light_load};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let topo = sim::studies::machine(&a[1]).unwrap();
    let p = LightLoadParams {
        iterations: a[3].parse().unwrap(),
        ..Default::default()
    };
    let r = sim::studies::run(&topo, light_load(&p), &a[2], 1).unwrap();
    println!(
        "end {:.2}s mig {} nodemig {}",
        r.end_ns as f64 / 1e9,
        r.counters.migrations,
        r.counters.node_migrations
    );
    println!("{:?}", r.counters.numa);
    for t in &r.tasks {
        println!(
            "{} home {:?} nodes {:?} mig {} nm {}",
            t.program,
            t.home_node,
            t.node_user_ns
                .iter()
                .map(|x| (x / 1e9 * 100.0).round() / 100.0)
                .collect::<Vec<_>>(),
            t.migrations,
            t.node_migrations
        );
    }
}
