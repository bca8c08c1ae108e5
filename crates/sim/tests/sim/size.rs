//! numa_test's automatic size: jobs that outlast the disturbance on today's machines, the
//! original size on the era presets, and the runs whose jobs end first flagged.

use crate::common::machine;
use sim::numa_test::{self, JobSize, LONE_JOB_SPAN, figures, lone_job_ns, resolve_size};
use sim::sched::SchedSpec;
use sim::workload::NumaTestParams;

fn o1() -> SchedSpec {
    SchedSpec::parse("o1").expect("o1")
}

/// A cheap numa_test with the full disturbance (hackbench 20 at 3 s): N = 2, one run.
fn run_small(m: &str, size: JobSize) -> numa_test::RunFigures {
    let topo = machine(m);
    let params = size.apply(&NumaTestParams {
        tasks: 2,
        ..Default::default()
    });
    let r = numa_test::run_one(&topo, &o1(), &params, 1).expect("run");
    figures(&r, topo.nr_nodes())
}

#[test]
fn the_automatic_size_outlasts_the_disturbance_on_todays_machines() {
    for m in ["epyc-nps4", "xeon2s"] {
        // The original size measures hackbench there: the jobs are done before it is.
        let original = run_small(m, JobSize::ORIGINAL);
        assert!(original.jobs_ended_first, "{m}: original size");
        let topo = machine(m);
        let base = NumaTestParams::default();
        let size = resolve_size(&topo, None, None, &base).expect("size");
        assert!(size.auto && size.passes > 100, "{m}: {size:?}");
        assert_eq!(size.problem_size, 1_000_000, "{m}");
        let lone = lone_job_ns(&topo, &base, size.passes).expect("lone") as f64;
        assert!(
            lone >= LONE_JOB_SPAN * base.disturb_at as f64,
            "{m}: a lone job runs {lone} ns"
        );
        // The fewest such passes: 1% fewer fall short.
        let fewer = lone_job_ns(&topo, &base, size.passes * 99 / 100).expect("lone") as f64;
        assert!(fewer < LONE_JOB_SPAN * base.disturb_at as f64, "{m}");
        let f = run_small(m, size);
        assert!(!f.jobs_ended_first, "{m}: automatic size {size:?}");
        assert!(
            f.elapsed_s > 6.0 && f.hackbench_s > 0.0,
            "{m}: {}",
            f.elapsed_s
        );
    }
}

#[test]
fn era_presets_keep_the_original_size() {
    let base = NumaTestParams::default();
    for m in ["azusa16", "tx7-8", "wildfire8"] {
        let size = resolve_size(&machine(m), None, None, &base).expect("size");
        assert_eq!(
            size,
            JobSize {
                auto: true,
                ..JobSize::ORIGINAL
            },
            "{m}"
        );
    }
}

#[test]
fn a_given_size_is_kept_and_the_other_half_is_the_originals() {
    let topo = machine("epyc-nps4");
    let base = NumaTestParams::default();
    let s = resolve_size(&topo, None, Some(3), &base).expect("size");
    assert_eq!((s.problem_size, s.passes, s.auto), (1_000_000, 3, false));
    let s = resolve_size(&topo, Some(5000), None, &base).expect("size");
    assert_eq!((s.problem_size, s.passes, s.auto), (5000, 100, false));
    assert_eq!(s.describe(), "PROBLEMSIZE 5000, 100 passes (given)");
}
