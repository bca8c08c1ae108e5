//! Property test: any small machine, any scheduler, any small numa_test: the run finishes,
//! every task exits, and the kernel's bookkeeping holds throughout.

use crate::common::*;
use proptest::prelude::*;
use sim::kernel::TaskState;
use sim::time::SEC;
use sim::workload::{NumaTestParams, numa_test};
use std::sync::Arc;

#[derive(Debug, Clone)]
struct Case {
    nodes: u32,
    cpus: u32,
    ratio: f64,
    sched: usize,
    params: NumaTestParams,
    seed: u64,
}

fn cases() -> impl Strategy<Value = Case> {
    (
        (1u32..=4, 1u32..=4, 1.1f64..=3.0),
        0..sim::sched::SCHEDULERS.len(),
        (1u32..=6, 2_000u64..=50_000, 1u32..=3),
        (any::<bool>(), 0u64..50_000_000, 1u32..=2, 1u32..=10),
        any::<u64>(),
    )
        .prop_map(
            |(
                (nodes, cpus, ratio),
                sched,
                (tasks, size, passes),
                (disturb, at, groups, loops),
                seed,
            )| {
                Case {
                    nodes,
                    cpus,
                    ratio,
                    sched,
                    params: NumaTestParams {
                        tasks,
                        problem_size: size,
                        passes,
                        disturb,
                        disturb_at: at,
                        hackbench_groups: groups,
                        hackbench_loops: loops,
                        ..Default::default()
                    },
                    seed,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_small_run_finishes_with_invariants_intact(c in cases()) {
        let spec = format!(
            "nodes={},cpus-per-node={},remote-ratio={:.2}",
            c.nodes, c.cpus, c.ratio
        );
        let topo = machine(&spec);
        let name = sim::sched::SCHEDULERS[c.sched].name;
        let w = numa_test(&c.params);
        let mut sim = sim::Sim::new(topo.clone(), Arc::new(w), scheduler(name, &topo), c.seed)
            .with_time_limit(600 * SEC);
        let mut steps = 0u64;
        loop {
            let more = sim.step();
            prop_assert!(more.is_ok(), "{spec} {name}: {:?}", more);
            steps += 1;
            let inv = sim.k.check_invariants();
            prop_assert!(inv.is_ok(), "{spec} {name} at event {steps}: {:?}", inv);
            if !more.unwrap_or(false) {
                break;
            }
        }
        let k = &sim.k;
        let inv = k.check_invariants();
        prop_assert!(inv.is_ok(), "{spec} {name} at the end: {:?}", inv);
        prop_assert!(k.is_done());
        prop_assert!(k.tasks.iter().all(|t| t.state == TaskState::Exited));
        let jobs = k.tasks.iter().filter(|t| t.job).count();
        prop_assert_eq!(jobs, c.params.tasks as usize);
        prop_assert!(k.tasks.iter().filter(|t| t.job).all(|t| t.user_ns > 0.0));
        prop_assert!(k.mem.used.iter().all(|&u| u == 0), "{:?}", k.mem.used);
        prop_assert!(k.rqs.iter().all(|r| r.curr.is_none() && r.queue.is_empty()));
    }
}
