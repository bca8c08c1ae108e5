//! The disk queue and the load average through the whole simulator.

use crate::common::*;
use sim::program::{Launch, Phase, Program, Workload};
use sim::time::{MS, SEC};

fn program(name: &str, phases: Vec<Phase>) -> Program {
    Program {
        name: name.into(),
        phases,
        regions: vec![],
        job: false,
        affinity: None,
        nice: 0,
    }
}

/// `procs` processes, each making `requests` waited 10 ms requests to disk 0 in a row.
fn io_streams(procs: u32, requests: u32) -> Workload {
    let p = program(
        "io",
        vec![
            Phase::Loop { count: requests },
            Phase::Kernel { cycles: 1000.0 },
            Phase::Io {
                disk: 0,
                service: 10 * MS,
                wait: true,
            },
            Phase::EndLoop,
        ],
    );
    Workload {
        name: "io".into(),
        programs: vec![p],
        launches: vec![Launch {
            count: procs,
            ..Launch::once(0)
        }],
        channels: 0,
        disturbance: None,
    }
}

/// Two I/O streams on one disk each take about twice as long as one alone: the disk serves
/// one request at a time, in arrival order.
#[test]
fn two_io_streams_slow_each_other_down() {
    let topo = machine(SMALL);
    let alone = run(&topo, &io_streams(1, 50), "o1", 1);
    let both = run(&topo, &io_streams(2, 50), "o1", 1);
    let life =
        |r: &sim::RunResult| -> Vec<u64> { r.tasks.iter().map(|t| t.exited - t.created).collect() };
    let one = life(&alone)[0];
    assert!((500 * MS..510 * MS).contains(&one), "{one} ns");
    for l in life(&both) {
        assert!(l >= 2 * one - 20 * MS, "{l} ns alone {one} ns");
    }
    assert_eq!(both.disks.requests, vec![100]);
    assert_eq!(both.disks.busy_ns, vec![100 * 10 * MS]);
}

/// N tasks that are always runnable (more of them than CPUs) give a load average that
/// converges to N; so do N tasks that always wait for a disk (uninterruptible sleep counts).
#[test]
fn the_load_average_of_n_active_tasks_converges_to_n() {
    let topo = machine(SMALL);
    for n in [1u32, 6] {
        // Longer than the 1000 s watched at any clock of the small machine.
        let w = std::sync::Arc::new(Workload {
            name: "hogs".into(),
            programs: vec![program("hog", vec![Phase::Compute { cycles: 1e13 }])],
            launches: vec![Launch {
                count: n,
                ..Launch::once(0)
            }],
            channels: 0,
            disturbance: None,
        });
        let mut s = sim::Sim::new(topo.clone(), w, scheduler("o1", &topo), 1);
        while s.k.now < 1000 * SEC && s.step().expect("step") {}
        let last = *s.load.samples.last().expect("samples");
        assert!(
            (last - f64::from(n)).abs() < 0.01,
            "{n} hogs: load {last} after {} samples",
            s.load.samples.len()
        );
    }
    let mut s = sim::Sim::new(
        topo.clone(),
        std::sync::Arc::new(io_streams(3, 40_000)),
        scheduler("o1", &topo),
        1,
    );
    while s.k.now < 1000 * SEC && s.step().expect("step") {}
    let last = *s.load.samples.last().expect("samples");
    assert!((last - 3.0).abs() < 0.02, "3 disk waiters: load {last}");
}
