//! CPU affinity is a hard limit: no scheduler runs a task outside it, whatever the pressure.

use crate::common::*;
use sim::kernel::Refusal;
use sim::program::{Access, Launch, OpCost, Pattern, Phase, Program, RegionSpec, Workload};
use sim::workload::parse_workload;

/// Four jobs pinned to node 0 (CPUs 0-1), two free jobs, all started from CPU 3 (node 1):
/// node 1 sits mostly idle and its balancers keep trying to pull the pinned jobs over.
const PINNED: &str = r#"
name = "pinned"
[[program]]
name = "pinned"
job = true
affinity = [0, 1]
region = [{ name = "data", mib = 8 }]
phase = [
  { touch = "data" },
  { memory = { ops = 2e6, cycles = 4, access = [{ region = "data", pattern = "random", bytes = 8, write = true }] } },
  { loop = { count = 3, body = [{ sleep = { ms = 2, jitter = 0.5 } }, { compute = { cycles = 2e6 } }] } },
]
[[program]]
name = "free"
job = true
region = [{ name = "data", mib = 8 }]
phase = [
  { touch = "data" },
  { memory = { ops = 1e6, cycles = 4, access = [{ region = "data", pattern = "stream", bytes = 8 }] } },
]
[[launch]]
program = "pinned"
count = 4
cpu = 3
[[launch]]
program = "free"
count = 2
cpu = 3
"#;

#[test]
fn tasks_never_run_outside_their_affinity() {
    let topo = machine(SMALL);
    let w = parse_workload(PINNED, "pinned.toml").expect("valid workload");
    let pinned = w.program_index("pinned").expect("program");
    for s in scheduler_names() {
        for seed in [1, 2] {
            // step_checked also checks, after every event, that no task runs or waits on a
            // CPU outside its mask.
            let (sim, _) = step_checked(&topo, &w, s, seed);
            let k = &sim.k;
            let mut n = 0;
            for t in k.tasks.iter().filter(|t| t.program == pinned) {
                n += 1;
                assert!(t.user_ns > 0.0, "{s}: pinned task {} never ran", t.id);
                assert_eq!(
                    t.node_user_ns()[1],
                    0.0,
                    "{s} seed {seed}: task {} pinned to node 0 ran {} ns on node 1",
                    t.id,
                    t.node_user_ns()[1]
                );
                assert_eq!(t.first_cpu.map(|c| topo.node_of(c)), Some(0), "{s}");
            }
            assert_eq!(n, 4, "{s}");
            // There was pressure to break the mask: balancers wanted to move pinned tasks.
            // (Not for pmqs: it never looks outside the pool except through its 500 ms
            // inter-pool balancer, and this run ends before that first fires.)
            if s == "pmqs" {
                continue;
            }
            assert!(
                k.counters.refused[Refusal::Affinity as usize] > 0,
                "{s} seed {seed}: no balancer ever tried to move a pinned task ({:?})",
                k.counters.refused
            );
        }
    }
}

/// A workload built in code: `n` single-CPU-pinned jobs on CPU `cpu`, `free` unpinned ones.
fn pinned_to_cpu(cpu: usize, n: u32, free: u32) -> Workload {
    let job = |name: &str, affinity: Option<Vec<usize>>| Program {
        name: name.into(),
        phases: vec![
            Phase::Touch { region: 0 },
            Phase::Memory {
                ops: 3e6,
                op: OpCost {
                    cycles: 2.0,
                    accesses: vec![Access {
                        region: 0,
                        pattern: Pattern::Random,
                        bytes: 8.0,
                        write: false,
                        contended: 0.0,
                    }],
                },
            },
        ],
        regions: vec![RegionSpec {
            name: "data".into(),
            bytes: 16 << 20,
            policy: Default::default(),
        }],
        job: true,
        affinity,
        nice: 0,
    };
    let w = Workload {
        name: "one-cpu".into(),
        programs: vec![job("pinned", Some(vec![cpu])), job("free", None)],
        launches: vec![
            Launch {
                program: 0,
                count: n,
                threads: 1,
                at: 0,
                cpu: Some(0),
            },
            Launch {
                program: 1,
                count: free,
                threads: 1,
                at: 0,
                cpu: Some(0),
            },
        ],
        channels: 0,
        disturbance: None,
    };
    w.validate().expect("valid");
    w
}

#[test]
fn single_cpu_affinity_holds_while_other_cpus_idle() {
    // Three jobs on CPU 3 alone while CPUs 0-2 have little to do: they must share CPU 3.
    let topo = machine(SMALL);
    let w = pinned_to_cpu(3, 3, 1);
    for s in scheduler_names() {
        let (sim, _) = step_checked(&topo, &w, s, 4);
        let k = &sim.k;
        let pinned: Vec<_> = k.tasks.iter().filter(|t| t.program == 0).collect();
        assert_eq!(pinned.len(), 3);
        for t in &pinned {
            assert_eq!(t.node_user_ns()[0], 0.0, "{s}: task {} ran on node 0", t.id);
            assert_eq!(t.first_cpu, Some(3), "{s}");
            assert_eq!(t.migrations, 0, "{s}: a task pinned to one CPU moved");
        }
        // Sharing one CPU, the three took about three times as long as their CPU time each.
        let last = pinned
            .iter()
            .filter_map(|t| t.exited)
            .max()
            .expect("exited") as f64;
        let cpu_time: f64 = pinned.iter().map(|t| t.user_ns + t.sys_ns).sum();
        assert!(last >= cpu_time, "{s}: {last} < {cpu_time}");
        assert!(k.rqs[3].busy_ns as f64 >= cpu_time - 1.0, "{s}");
    }
}

/// A parent limited to CPU 3 that creates two threads and forks-and-execs two processes of a
/// program with no mask of its own.
fn creator_on_cpu3() -> Workload {
    let program = |name: &str, phases: Vec<Phase>, affinity: Option<Vec<usize>>| Program {
        name: name.into(),
        phases,
        regions: Vec::new(),
        job: false,
        affinity,
        nice: 0,
    };
    let w = Workload {
        name: "inherit".into(),
        programs: vec![
            program(
                "parent",
                vec![
                    Phase::Thread {
                        program: 1,
                        count: 2,
                    },
                    Phase::Spawn {
                        program: 1,
                        count: 2,
                        exec: true,
                    },
                    Phase::Wait,
                ],
                Some(vec![3]),
            ),
            program("child", vec![Phase::Compute { cycles: 1e6 }], None),
        ],
        launches: vec![Launch {
            program: 0,
            count: 1,
            threads: 1,
            at: 0,
            cpu: Some(3),
        }],
        channels: 0,
        disturbance: None,
    };
    w.validate().expect("valid");
    w
}

#[test]
fn threads_and_processes_start_with_their_creators_mask() {
    // clone and fork copy the creator's CPU mask and exec keeps it (sched_setaffinity(2)), so
    // a process homed before it starts its workers keeps them at home. Before, the children
    // got every CPU: the oltp server homed on node 0 started its clients anywhere.
    let topo = machine(SMALL);
    let w = creator_on_cpu3();
    for s in scheduler_names() {
        let (sim, _) = step_checked(&topo, &w, s, 1);
        let children: Vec<_> = sim.k.tasks.iter().filter(|t| t.program == 1).collect();
        assert_eq!(children.len(), 4, "{s}");
        for t in children {
            assert_eq!(
                t.affinity.iter().collect::<Vec<_>>(),
                vec![3],
                "{s}: task {}",
                t.id
            );
            assert_eq!(t.first_cpu, Some(3), "{s}: task {}", t.id);
        }
    }
}
