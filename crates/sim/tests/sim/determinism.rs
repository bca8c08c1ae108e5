//! The same seed gives the same run, byte for byte; another seed changes what timing decides.

use crate::common::*;
use sim::numa_test::{MeanStd, figures, job_table, run_one, run_seed, summary_block};
use sim::sched::SchedSpec;
use sim::workload::numa_test;

/// Text and JSON of cells, as the CLI prints them.
fn rendering(cells: &[sim::numa_test::CellSummary], nr_nodes: usize) -> (String, String) {
    let mut text = String::new();
    for c in cells {
        text.push_str(&job_table(&c.jobs, nr_nodes));
        text.push_str(&summary_block(c));
    }
    let json = serde_json::to_string(cells).expect("cells serialise");
    (text, json)
}

#[test]
fn same_seed_gives_identical_report_and_json() {
    let topo = machine(SMALL);
    let mut p = small_params(5, 50_000, 200, true);
    p.disturb_at = 5_000_000;
    let names = scheduler_names();
    let a = cell(&topo, &names, 5, 2, 7, &p);
    let b = cell(&topo, &names, 5, 2, 7, &p);
    let (ta, ja) = rendering(&a, 2);
    let (tb, jb) = rendering(&b, 2);
    assert_eq!(ta, tb, "same seed, different text report");
    assert_eq!(ja, jb, "same seed, different JSON");
    assert!(ja.contains("\"scheduler\":\"o1\""), "{ja}");
    // A whole run is reproducible too, down to every task's accounting and the event count.
    let w = numa_test(&p);
    for s in &names {
        let r1 = run(&topo, &w, s, 99);
        let r2 = run(&topo, &w, s, 99);
        assert_eq!(r1.tasks, r2.tasks, "{s}: task reports differ");
        assert_eq!(r1.end_ns, r2.end_ns, "{s}");
        assert_eq!(r1.events, r2.events, "{s}");
        assert_eq!(r1.cpu_busy_ns, r2.cpu_busy_ns, "{s}");
    }
}

#[test]
fn matrix_cells_equal_sequential_runs() {
    // run_matrix runs repetitions in parallel; its first repetition must be exactly the run
    // that run_one gives for the same derived seed.
    let topo = machine(SMALL);
    let p = small_params(3, 30_000, 50, true);
    let names = scheduler_names();
    let cells = cell(&topo, &names, 3, 3, 11, &p);
    assert_eq!(cells.len(), names.len());
    for (c, s) in cells.iter().zip(&names) {
        assert_eq!(c.scheduler, *s);
        assert_eq!(c.reps, 3);
        let spec = SchedSpec::parse(s).expect("spec");
        let r = run_one(&topo, &spec, &p, run_seed(11, 3, 0)).expect("run");
        let f = figures(&r, 2);
        assert_eq!(c.jobs, f.jobs, "{s}: matrix rep 0 differs from run_one");
        let elapsed: Vec<f64> = (0..3)
            .map(|rep| {
                let r = run_one(&topo, &spec, &p, run_seed(11, 3, rep)).expect("run");
                figures(&r, 2).elapsed_s
            })
            .collect();
        assert_eq!(c.elapsed_s, MeanStd::of(&elapsed), "{s}");
    }
}

#[test]
fn different_seeds_give_different_job_tables() {
    // o1 with the disturbance: where hackbench lands and which jobs the balancer moves depends
    // on the tick phases the seed draws, so the per-job figures differ between seeds.
    let topo = machine("nodes=2,cpus-per-node=2,llc-mib=0.25");
    let mut p = small_params(4, 50_000, 2000, true);
    p.disturb_at = 100_000_000;
    p.hackbench_loops = 100;
    let tables: Vec<String> = (1..=4)
        .map(|seed| {
            let c = cell(&topo, &["o1"], 4, 1, seed, &p);
            job_table(&c[0].jobs, 2)
        })
        .collect();
    let mut distinct = tables.clone();
    distinct.sort();
    distinct.dedup();
    assert!(
        distinct.len() >= 2,
        "4 seeds gave one job table:\n{}",
        tables[0]
    );
    // And the seed really is the only thing that changed: repeating a seed repeats its table.
    let again = cell(&topo, &["o1"], 4, 1, 1, &p);
    assert_eq!(job_table(&again[0].jobs, 2), tables[0]);
}
