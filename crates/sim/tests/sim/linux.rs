//! The `linux` scheduler model: NUMA balancing counters in scenarios where their values are
//! known, the NUMA imbalance rules, wake-up placement, determinism and option errors.

use crate::common::*;
use sim::Sim;
use sim::kernel::Refusal;
use sim::memory::MemPolicy;
use sim::program::{Launch, OpCost, Phase, Program, RegionSpec, Workload};
use sim::sched::{self, SchedSpec};
use sim::workload::light_load::{LightLoadParams, light_load};
use std::sync::Arc;

const MIB: u64 = 1 << 20;

fn mem_phase(ops: f64) -> Phase {
    Phase::Memory {
        ops,
        op: OpCost::random_write(4.0),
    }
}

/// More CPUs than any test machine has: a mask of all of them is every CPU.
const MAX_TEST_CPUS: usize = 256;

/// A process whose main thread, pinned to node 1, first-touches `bytes`, then starts one
/// worker that does random updates over it; the worker is pinned to `worker_cpus` (None:
/// free, its mask widened to every CPU, as a thread would with `sched_setaffinity`: it
/// would otherwise start with its creator's node-1 mask).
fn remote_memory(bytes: u64, ops: f64, worker_cpus: Option<Vec<usize>>) -> Workload {
    let worker_cpus = Some(worker_cpus.unwrap_or_else(|| (0..MAX_TEST_CPUS).collect()));
    let regions = vec![RegionSpec {
        name: "data".into(),
        bytes,
        policy: MemPolicy::FirstTouch,
    }];
    Workload {
        name: "remote-memory".into(),
        programs: vec![
            Program {
                name: "main".into(),
                phases: vec![
                    Phase::Touch { region: 0 },
                    Phase::Thread {
                        program: 1,
                        count: 1,
                    },
                    Phase::Wait,
                ],
                regions: regions.clone(),
                job: false,
                affinity: Some(vec![2, 3]),
                nice: 0,
            },
            Program {
                name: "worker".into(),
                phases: vec![mem_phase(ops)],
                regions,
                job: true,
                affinity: worker_cpus,
                nice: 0,
            },
        ],
        launches: vec![Launch {
            program: 0,
            count: 1,
            threads: 1,
            at: 0,
            cpu: Some(2),
        }],
        channels: 0,
        disturbance: None,
    }
}

#[test]
fn pinned_task_with_remote_memory_faults_and_pulls_its_pages() {
    let topo = machine(SMALL);
    // 64 MiB, all on node 1; the worker may only run on node 0 (CPUs 0-1).
    let w = remote_memory(64 * MIB, 2e8, Some(vec![0, 1]));
    let (s, _) = step_checked(&topo, &w, "linux:numa_balancing=on", 1);
    let c = &s.k.counters.numa;
    assert!(c.numa_scan_passes > 0, "{c:?}");
    assert!(c.numa_hint_faults > 0, "{c:?}");
    assert!(c.numa_hint_faults_local <= c.numa_hint_faults);
    assert!(
        c.numa_hint_faults_local > 0,
        "after migration faults turn local: {c:?}"
    );
    // Every page group (32 x 2 MiB) migrates once, on its first remote fault.
    assert_eq!(c.numa_pages_migrated, 64 * MIB / 4096, "{c:?}");
    assert_eq!(c.numa_pte_updates, 512 * c.numa_huge_pte_updates);
    assert_eq!(s.k.counters.migrated_bytes, 64 * MIB);
    // Pinned: NUMA balancing never moved it.
    assert_eq!(c.migrations_numa_move + c.migrations_numa_swap, 0);
    let worker = &s.k.tasks[1];
    assert_eq!(worker.node_migrations, 0);
    // System time was charged for scanning, faults and copies.
    assert!(worker.sys_ns > 0.0);
}

/// `remote_memory` plus a process pinned to node 0 that fills node 0's memory while the
/// worker runs, so that no page can migrate there.
fn remote_memory_full_node(worker_cpus: Option<Vec<usize>>) -> Workload {
    let mut w = remote_memory(256 * MIB, 2e8, worker_cpus);
    w.programs.push(Program {
        name: "filler".into(),
        phases: vec![
            Phase::Touch { region: 0 },
            Phase::Sleep {
                ns: 60_000_000_000,
                jitter: 0.0,
            },
        ],
        regions: vec![RegionSpec {
            name: "ballast".into(),
            bytes: 1024 * MIB,
            policy: MemPolicy::Bind(vec![0]),
        }],
        job: false,
        affinity: Some(vec![0]),
        nice: 0,
    });
    w.launches.insert(
        0,
        Launch {
            program: 2,
            count: 1,
            threads: 1,
            at: 0,
            cpu: Some(0),
        },
    );
    w.launches[1].at = 1_000_000_000;
    w
}

#[test]
fn pages_that_cannot_move_leave_a_pinned_task_failing_to_move() {
    let topo = machine("nodes=2,cpus-per-node=2,mem-gib=1");
    let w = remote_memory_full_node(Some(vec![0, 1]));
    let r = run(&topo, &w, "linux", 1);
    let c = &r.counters.numa;
    assert!(c.numa_hint_faults > 0, "{c:?}");
    assert_eq!(
        c.numa_hint_faults_local, 0,
        "all its memory stays remote: {c:?}"
    );
    assert_eq!(c.numa_pages_migrated, 0, "node 0 is full: {c:?}");
    assert!(
        c.numa_migrate_failed > 0,
        "preferred node 1 has no CPU it may use: {c:?}"
    );
    assert_eq!(c.migrations_numa_move + c.migrations_numa_swap, 0);
}

#[test]
fn pages_that_cannot_move_bring_a_free_task_to_them() {
    let topo = machine("nodes=2,cpus-per-node=2,mem-gib=1");
    let w = remote_memory_full_node(None);
    let r = run(&topo, &w, "linux:numa_imbalance=none", 1);
    let c = &r.counters.numa;
    assert_eq!(c.numa_pages_migrated, 0, "{c:?}");
    let worker = r
        .tasks
        .iter()
        .find(|t| t.program == "worker")
        .expect("worker");
    assert_eq!(c.migrations_numa_move + c.migrations_numa_swap, 1, "{c:?}");
    assert_eq!(
        worker.node_migrations, 1,
        "moved once and stayed: {worker:?}"
    );
    assert_eq!(worker.home_node, Some(1), "preferred node: {worker:?}");
    assert!(worker.node_user_ns[1] > 0.0);
}

#[test]
fn balancing_off_never_faults_or_migrates() {
    let topo = machine(SMALL);
    let w = remote_memory(64 * MIB, 2e8, Some(vec![0, 1]));
    let r = run(&topo, &w, "linux:numa_balancing=off", 1);
    let c = &r.counters.numa;
    assert_eq!(
        (
            c.numa_pte_updates,
            c.numa_hint_faults,
            c.numa_pages_migrated
        ),
        (0, 0, 0)
    );
    assert_eq!(r.counters.migrated_bytes, 0);
    // The memory stayed where it was first touched.
    assert_eq!(r.tasks[1].mem_node_bytes[1], 64 * MIB);
}

#[test]
fn free_task_follows_or_pulls_its_memory() {
    // Unpinned worker: either the task moves to node 1 or its pages come to it; at the end its
    // memory and its CPU time are on the same node.
    let topo = machine(SMALL);
    let w = remote_memory(64 * MIB, 3e8, None);
    let r = run(&topo, &w, "linux", 3);
    let t = &r.tasks[1];
    let mem_node = argmax_u64(&t.mem_node_bytes);
    let last_node_user = t.node_user_ns[mem_node];
    assert!(r.counters.numa.numa_hint_faults > 0);
    assert!(last_node_user > 0.0, "{t:?}");
}

#[test]
fn sched_numa_2012_scans_and_migrates_too() {
    let topo = machine(SMALL);
    let w = remote_memory(64 * MIB, 2e8, Some(vec![0, 1]));
    let r = run(&topo, &w, "linux:numa_balancing=sched-numa-2012", 1);
    assert!(r.counters.numa.numa_hint_faults > 0);
    assert_eq!(r.counters.numa.numa_pages_migrated, 64 * MIB / 4096);
}

fn light(iterations: f64) -> Workload {
    light_load(&LightLoadParams {
        iterations,
        ..Default::default()
    })
}

/// Nodes on which the light-load workers ran.
fn worker_nodes(r: &sim::RunResult) -> Vec<usize> {
    let mut v: Vec<usize> = r
        .tasks
        .iter()
        .filter(|t| t.job)
        .flat_map(|t| {
            (0..t.node_user_ns.len())
                .filter(|&n| t.node_user_ns[n] > 0.0)
                .collect::<Vec<_>>()
        })
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn rfc2020_keeps_light_load_packed_and_none_spreads_it() {
    // 24 CPUs per node as on kunpeng96: four threads plus the main thread stay below a quarter.
    let topo = machine("nodes=2,cpus-per-node=24");
    let packed = run(&topo, &light(2e7), "linux:numa_imbalance=rfc2020", 1);
    let spread = run(&topo, &light(2e7), "linux:numa_imbalance=none", 1);
    assert_eq!(
        worker_nodes(&packed).len(),
        1,
        "rfc2020: {:?}",
        worker_nodes(&packed)
    );
    assert_eq!(worker_nodes(&spread), vec![0, 1]);
    // Cross-node cache-line transfers make the spread run slower.
    assert!(
        spread.end_ns > packed.end_ns,
        "{} vs {}",
        spread.end_ns,
        packed.end_ns
    );
}

#[test]
fn light_load_runs_under_every_rule() {
    let topo = machine("nodes=2,cpus-per-node=8");
    for rule in ["none", "rfc2020", "two-tasks", "quarter", "imb_numa_nr"] {
        let spec = format!("linux:numa_imbalance={rule}");
        let (s, _) = step_checked(&topo, &light(2e6), &spec, 2);
        assert!(s.k.is_done(), "{rule}");
    }
}

#[test]
fn wake_up_goes_to_an_idle_cpu_of_the_llc() {
    // The pingpong pair wakes each other: wake-affine keeps them in one LLC (one node here),
    // and each wake-up finds an idle CPU there instead of queueing.
    let topo = machine("nodes=2,cpus-per-node=4");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../workloads/pingpong.toml"
    ))
    .expect("pingpong.toml");
    let w = sim::workload::parse_workload(&text, "pingpong.toml").expect("parse");
    let r = run(&topo, &w, "linux", 1);
    let pair: Vec<_> = r
        .tasks
        .iter()
        .filter(|t| t.program == "client" || t.program == "server")
        .collect();
    assert_eq!(pair.len(), 2);
    let node = |t: &sim::sim::TaskReport| {
        (0..t.node_user_ns.len())
            .max_by(|&a, &b| t.node_user_ns[a].total_cmp(&t.node_user_ns[b]))
            .expect("nodes")
    };
    assert_eq!(
        node(pair[0]),
        node(pair[1]),
        "wake-affine keeps the pair together"
    );
    assert!(r.counters.wakeups >= 4000);
}

#[test]
fn same_seed_same_run() {
    let topo = machine(SMALL);
    let w = remote_memory(32 * MIB, 1e8, None);
    let a = run(&topo, &w, "linux", 7);
    let b = run(&topo, &w, "linux", 7);
    assert_eq!(format!("{:?}", a.counters), format!("{:?}", b.counters));
    assert_eq!(a.end_ns, b.end_ns);
    let l1 = run(&topo, &light(1e6), "linux", 3);
    let l2 = run(&topo, &light(1e6), "linux", 3);
    assert_eq!(format!("{:?}", l1.tasks), format!("{:?}", l2.tasks));
}

#[test]
fn bad_options_name_the_option_and_the_choices() {
    let topo = machine(SMALL);
    for (spec, needle) in [
        ("linux:numa_balancing=maybe", "on, off, sched-numa-2012"),
        ("linux:numa_imbalance=half", "rfc2020"),
        ("linux:scan_delay=soon", "scan_delay"),
        ("linux:bogus=1", "numa_balancing"),
    ] {
        let s = SchedSpec::parse(spec).expect("spec");
        let e = sched::build(&s, &topo).err().expect(spec).to_string();
        assert!(e.contains(needle), "{spec}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    let _ = Arc::clone(&topo);
}

/// A parent pinned to CPU 0 forks one child (plain fork) and then one that execs, then
/// computes on: the children queue on CPU 0 behind it (they inherit its mask, widened here
/// to every CPU by their own program).
fn fork_then_exec() -> Workload {
    let child = |name: &str| Program {
        name: name.into(),
        phases: vec![Phase::Compute { cycles: 1e9 }],
        regions: vec![],
        job: true,
        affinity: Some((0..MAX_TEST_CPUS).collect()),
        nice: 0,
    };
    let spawn = |program, exec| Phase::Spawn {
        program,
        count: 1,
        exec,
    };
    Workload {
        name: "fork-then-exec".into(),
        programs: vec![
            Program {
                name: "parent".into(),
                phases: vec![
                    spawn(1, false),
                    spawn(2, true),
                    Phase::Compute { cycles: 1e9 },
                ],
                regions: vec![],
                job: false,
                affinity: Some(vec![0]),
                nice: 0,
            },
            child("forked"),
            child("execed"),
        ],
        launches: vec![Launch {
            program: 0,
            count: 1,
            threads: 1,
            at: 0,
            cpu: Some(0),
        }],
        channels: 0,
        disturbance: None,
    }
}

/// What `can_migrate` says of each child, to a CPU of the other node, at the first instant
/// both exist (before either has run).
fn hot_at_birth(sched_name: &str) -> Vec<Result<(), Refusal>> {
    let topo = machine(SMALL);
    let w = fork_then_exec();
    let mut sim = Sim::new(topo.clone(), Arc::new(w), scheduler(sched_name, &topo), 1);
    while sim.k.tasks.len() < 3 {
        assert!(
            sim.step().expect("step"),
            "ended before the children were born"
        );
    }
    (1..3)
        .map(|t| {
            assert_eq!(
                sim.k.tasks[t].first_cpu, None,
                "child {t} was picked already"
            );
            sim.k.can_migrate(t, 3, false)
        })
        .collect()
}

#[test]
fn a_fork_child_that_never_ran_is_not_cache_hot_under_the_fair_class() {
    // CFS and EEVDF: `se.exec_start` is 0 until the child first runs, so `task_hot` is false;
    // the exec'd child ran to call exec and counts as hot for `migration_cost`.
    for name in ["linux", "linux:class=cfs"] {
        assert_eq!(
            hot_at_birth(name),
            vec![Ok(()), Err(Refusal::CacheHot)],
            "{name}"
        );
    }
    // The O(1) base stamps the child at fork: both hot.
    assert_eq!(
        hot_at_birth("o1"),
        vec![Err(Refusal::CacheHot), Err(Refusal::CacheHot)]
    );
}
