//! Tests of the actuator: originals inherited across decisions, one batch journaling every
//! home, a reused PID skipped.

use super::*;
use crate::journal::{Applied, ThreadOriginal};

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).expect("cpus")
}

fn thread(tid: u32, starttime: u64, cpus: &str) -> ThreadOriginal {
    ThreadOriginal {
        tid,
        starttime,
        cpus: set(cpus),
    }
}

#[test]
fn threads_born_under_homenode_get_the_main_threads_original() {
    let old = JournalEntry {
        pid: 10,
        starttime: 5,
        comm: "w".into(),
        recorded_unix_s: 0,
        default_cpus: set("0-7"),
        threads: vec![thread(10, 5, "0-7")],
        applied: Some(Applied {
            cpus: set("0-3"),
            nodes: set("0"),
            unix_s: 0,
            previous: Vec::new(),
        }),
        slice: None,
    };
    // Captured again at a home change: the main thread and a new thread both have
    // homenode's mask; a third thread was pinned by its program to CPU 6.
    let now = JournalEntry {
        threads: vec![
            thread(10, 5, "0-3"),
            thread(11, 9, "0-3"),
            thread(12, 9, "6"),
        ],
        ..old.clone()
    };
    let fixed = inherit_originals(Some(&old), now.clone());
    assert_eq!(
        fixed.threads[1].cpus,
        set("0-7"),
        "new thread: main's original"
    );
    assert_eq!(
        fixed.threads[2].cpus,
        set("6"),
        "its own mask is its original"
    );
    // The known main thread keeps what the journal has (record keeps old originals).
    let mut j = Journal::new();
    j.record(old.clone());
    j.record(fixed);
    let e = j.get(old.key()).expect("entry");
    assert_eq!(e.threads[0].cpus, set("0-7"));
    assert_eq!(e.threads.len(), 3);
    // A first recording is taken as is.
    assert_eq!(inherit_originals(None, now.clone()), now);
}

mod batch_tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// Two live children and one PID whose start time does not match are homed in one batch
    /// (to the children's own masks, so the test needs no particular CPUs): the children are
    /// done, the mismatch skipped, and the journal on disk holds both children with the
    /// applied mask read back.
    #[test]
    fn one_batch_journals_every_home_and_skips_a_reused_pid() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("journal.json");
        let mut kids: Vec<_> = (0..2)
            .map(|_| {
                Command::new("sleep")
                    .arg("30")
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("sleep")
            })
            .collect();
        let root = Path::new("/");
        let keys: Vec<(ProcessKey, CpuSet)> = kids
            .iter()
            .map(|k| {
                let Ok(Live::Alive(e)) = journal::capture(root, k.id()) else {
                    panic!("child {} not found", k.id());
                };
                (
                    ProcessKey {
                        pid: k.id(),
                        starttime: e.starttime,
                    },
                    e.default_cpus,
                )
            })
            .collect();
        let reused = ProcessKey {
            pid: keys[0].0.pid,
            starttime: keys[0].0.starttime + 1,
        };
        let nodes = [0usize];
        let mut reqs: Vec<HomeRequest<'_>> = keys
            .iter()
            .map(|(key, cpus)| HomeRequest {
                key: *key,
                nodes: &nodes,
                kcpus: cpus.clone(),
            })
            .collect();
        reqs.insert(
            1,
            HomeRequest {
                key: reused,
                nodes: &nodes,
                kcpus: keys[0].1.clone(),
            },
        );
        let mut act = Actuator::new(root, &path, false, MemoryConfig::default());
        let mut journal = Journal::new();
        let out = act.set_homes(&mut journal, &reqs);
        for k in &mut kids {
            let _ = k.kill();
            let _ = k.wait();
        }
        assert_eq!(out.len(), 3);
        assert!(matches!(out[0].0, Outcome::Done(_)), "{out:?}");
        assert!(matches!(out[1].0, Outcome::Skipped(_)), "{out:?}");
        assert!(matches!(out[2].0, Outcome::Done(_)), "{out:?}");
        let stored = Journal::load(&path).expect("journal");
        for (key, cpus) in &keys {
            let e = stored.get(*key).expect("journaled");
            let applied = e.applied.as_ref().expect("applied");
            assert_eq!(&applied.cpus, cpus);
            assert!(applied.previous.is_empty(), "read back: {applied:?}");
        }
        assert!(stored.get(reused).is_none());
    }
}
