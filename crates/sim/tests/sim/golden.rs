//! Golden test of the report format: a fixed small numa_test, rendered as the CLI renders it
//! (job tables, summary blocks, comparison table), compared with `tests/golden/`.
//!
//! After an intended change of the format or of the model, regenerate with
//! `UPDATE_GOLDEN=1 cargo test -p homenode-sim --test sim golden` and review the diff.

use crate::common::*;
use std::path::PathBuf;

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Compare `actual` with the golden file `name`, or rewrite it when UPDATE_GOLDEN is set.
fn check_golden(name: &str, actual: &str) {
    let path = golden_path(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| !v.is_empty() && v != "0") {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create golden dir");
        std::fs::write(&path, actual).expect("write golden file");
        eprintln!("updated {}", path.display());
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read golden file {}: {e}\n(create it with UPDATE_GOLDEN=1)",
            path.display()
        )
    });
    if expected == actual {
        return;
    }
    let exp: Vec<&str> = expected.lines().collect();
    let act: Vec<&str> = actual.lines().collect();
    let mut diff = String::new();
    let mut shown = 0;
    for i in 0..exp.len().max(act.len()) {
        let (e, a) = (exp.get(i), act.get(i));
        if e != a {
            if shown < 40 {
                diff.push_str(&format!(
                    "line {:>3}:\n  - {}\n  + {}\n",
                    i + 1,
                    e.unwrap_or(&"<missing>"),
                    a.unwrap_or(&"<missing>")
                ));
            }
            shown += 1;
        }
    }
    panic!(
        "report differs from {} in {shown} line(s) (- golden, + now):\n{diff}\n\
         If the change is intended, regenerate with:\n  \
         UPDATE_GOLDEN=1 cargo test -p homenode-sim --test sim golden\n\
         --- full output now ---\n{actual}",
        path.display()
    );
}

#[test]
fn numa_test_report_matches_golden() {
    // Memory-bound jobs (small LLC) of about a second, hackbench at 100 ms: the schedulers
    // differ, and every figure has digits to compare.
    let topo = machine("nodes=2,cpus-per-node=2,llc-mib=0.25");
    let mut p = small_params(4, 50_000, 1000, true);
    p.disturb_at = 100_000_000;
    p.hackbench_loops = 100;
    // The schedulers the golden file was made with (the registry grows; the file stays).
    let names = ["o1", "node-affine-static", "node-affine-dynamic"];
    let cells = cell(&topo, &names, 4, 2, 1, &p);
    let text = report_text(&cells, topo.nr_nodes());
    // The report is not degenerate before it is compared.
    assert_eq!(cells.len(), 3);
    assert!(
        cells
            .iter()
            .all(|c| c.avg_user_s.mean > 0.1 && c.jobs.len() == 4)
    );
    assert!(text.contains("AverageUserTime") && text.contains("node01"));
    check_golden("numa_test_report.txt", &text);
}
