//! The issue-4 studies at toy size: each runs, its rows are complete and sensible, its
//! markdown names every row, and its result serialises.

use sim::studies::{autonuma, convergence, light_load, oltp};
use sim::time::{MS, SEC};
use sim::workload::autonuma::AutonumaParams;
use sim::workload::convergence::ConvergenceParams;
use sim::workload::light_load::LightLoadParams;
use sim::workload::oltp::OltpParams;

const MACHINE: &str = "nodes=2,cpus-per-node=4";

#[test]
fn light_load_study() {
    let p = LightLoadParams {
        iterations: 2e6,
        ..Default::default()
    };
    let r = light_load::study("nodes=2,cpus-per-node=24", &p, "on", 1).expect("study");
    assert_eq!(r.rows.len(), light_load::RULES.len());
    let none = &r.rows[0];
    let rfc = &r.rows[1];
    assert_eq!((none.rule.as_str(), rfc.rule.as_str()), ("none", "rfc2020"));
    assert_eq!(rfc.nodes.len(), 1, "{rfc:?}");
    assert!(none.nodes.len() > 1, "{none:?}");
    let md = r.to_markdown();
    assert!(
        md.contains("| rfc2020 |") && md.contains("| imb_numa_nr |"),
        "{md}"
    );
    assert!(
        serde_json::to_string(&r)
            .expect("json")
            .contains("runtime_s")
    );
}

#[test]
fn oltp_study() {
    let p = OltpParams {
        tx_per_thread: 20,
        buffer_bytes: 64 << 20,
        ..Default::default()
    };
    let r = oltp::study(MACHINE, &[2, 16], &p, "on", 1).expect("study");
    assert_eq!(r.rows.len(), 2);
    for row in &r.rows {
        assert!(row.tps_off > 0.0 && row.tps_on > 0.0, "{row:?}");
        assert!(row.diff_pct.is_finite());
        assert!(row.client_s_on > 0.0, "{row:?}");
        assert!(row.hint_faults_local_on <= row.hint_faults_on, "{row:?}");
    }
    let md = r.to_markdown();
    assert!(
        md.contains("| 16 |") && md.contains("scan passes (on)"),
        "{md}"
    );
    // The 2012 patch set against off, as the no-regression table measured it.
    let r = oltp::study(MACHINE, &[16], &p, "sched-numa-2012", 1).expect("study");
    assert_eq!(r.mode, "sched-numa-2012");
    assert!(r.rows[0].tps_on > 0.0, "{:?}", r.rows[0]);
    let md = r.to_markdown();
    assert!(md.contains("tx/s `sched-numa-2012`"), "{md}");
}

#[test]
fn autonuma_study() {
    let p = AutonumaParams {
        numa01_bytes: 64 << 20,
        numa02_bytes: 32 << 20,
        loops: 2,
        numa02_loops: 4,
        ..Default::default()
    };
    let r = autonuma::study(MACHINE, &p, 50 * MS, 1).expect("study");
    // numa01 and numa02, each: off, on, sched-numa-2012, hard bind, inverse bind.
    assert_eq!(r.rows.len(), 10);
    assert_eq!(r.memory.len(), 6);
    let off = r
        .rows
        .iter()
        .find(|x| x.program == "numa01" && x.numa_balancing == "off");
    assert_eq!(off.expect("numa01 off").numa.numa_hint_faults, 0);
    for row in r.rows.iter().filter(|x| x.program.contains("BIND")) {
        assert_eq!(row.numa.numa_pages_migrated, 0, "{row:?}");
    }
    let svg = r.memory[0].svg().expect("chart");
    assert!(svg.starts_with("<svg") && svg.contains("polyline") && svg.contains("\nnode 1\n"));
    assert!(svg.contains("GiB per node over"), "{svg}");
    assert!(r.to_markdown().contains("numa02_INVERSE_BIND"));
}

#[test]
fn convergence_study() {
    let p = ConvergenceParams {
        bytes_per_process: 32 << 20,
        ..Default::default()
    };
    let r = convergence::study(MACHINE, &[(2, 2)], &["off", "on"], &p, 4 * SEC, 1).expect("study");
    assert_eq!(r.rows.len(), 2);
    for row in &r.rows {
        assert!((0.0..=1.0).contains(&row.mem_local), "{row:?}");
        if let Some(t) = row.converged_s {
            assert!(t <= 4.0);
        }
    }
    assert!(r.to_markdown().contains("| 2x2 | on |"));
}

/// perf's test (every process's threads on one node) against the stricter spread (one node
/// per process): single-threaded processes are always each on one node, so 4x1 converges at
/// the first look under any scheduler; the spread can only come at or after convergence.
#[test]
fn convergence_follows_perfs_test_and_reports_the_spread_beside_it() {
    let p = ConvergenceParams {
        bytes_per_process: 32 << 20,
        ..Default::default()
    };
    let r =
        convergence::study(MACHINE, &[(4, 1), (2, 2)], &["off"], &p, 3 * SEC, 1).expect("study");
    let four = r.rows.iter().find(|x| x.shape == "4x1").expect("4x1");
    assert!(four.converged_s.is_some_and(|t| t <= 0.2), "{four:?}");
    for row in &r.rows {
        if let (Some(c), Some(s)) = (row.converged_s, row.spread_s) {
            assert!(c <= s, "{row:?}");
        }
        assert!(
            row.converged_s.is_some() || row.spread_s.is_none(),
            "{row:?}"
        );
    }
    assert!(r.to_markdown().contains("one node each at (s)"));
}

#[test]
fn unknown_machine_is_one_clear_error() {
    let e = light_load::study("no-such-box", &LightLoadParams::default(), "on", 1).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("no-such-box") && !msg.contains('\n'), "{msg}");
}

#[test]
fn studies_are_deterministic() {
    let p = LightLoadParams {
        iterations: 1e6,
        ..Default::default()
    };
    let a = light_load::study(MACHINE, &p, "on", 5).expect("study");
    let b = light_load::study(MACHINE, &p, "on", 5).expect("study");
    let json = |x: &light_load::LightLoad| serde_json::to_string(x).expect("json");
    assert_eq!(json(&a), json(&b));
    assert_eq!(a.to_markdown(), b.to_markdown());
}
