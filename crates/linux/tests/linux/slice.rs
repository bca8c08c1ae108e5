//! Scheduling slices on fixture trees with threads' attributes on a table ([`FakeSlices`]):
//! which threads are given a slice and which keep theirs, taking it back, a kernel without
//! custom slices, the journal's record of a slice and its restore after a crash, and damaged
//! `/proc` files.

use std::path::Path;
use std::sync::{Arc, Mutex};

use linux::daemon::config::MemoryConfig;
use linux::daemon::{Actuator, HeldSlice, Outcome, SliceRequest};
use linux::journal::{self, Journal, JournalEntry, RestoreOutcome, ThreadOriginal};
use linux::procfs::ProcDir;
use linux::sample::ProcessKey;
use linux::slice::{self, SchedAttr, SliceOps, SliceRestored};
use linux::{Live, SliceError, Tid};

use crate::common::{FakeSlices, copy_fixture, fair, fixture, set};

const BASE: u64 = 1_400_000;
const HOMENODE: u64 = 100_000_000;
/// The database of `multinode-4n`: PID 1000, start time 5000, threads 1000-1003.
const DB: ProcessKey = ProcessKey {
    pid: 1000,
    starttime: 5000,
};
const DB_THREADS: [Tid; 4] = [1000, 1001, 1002, 1003];

fn dir(root: &Path, pid: u32) -> ProcDir {
    ProcDir::open(root, pid)
        .expect("open")
        .expect_alive("fixture process")
}

#[test]
fn threads_at_the_default_get_the_slice_and_the_others_keep_theirs() {
    let root = fixture("multinode-4n");
    let mut ops = FakeSlices::with_threads(BASE, &DB_THREADS);
    // A batch thread at nice 5: its policy and nice are passed back, with the flag that
    // gives its children the default slice.
    ops.attrs.insert(
        1000,
        SchedAttr {
            policy: slice::SCHED_BATCH,
            flags: 0,
            nice: 5,
            priority: 0,
            runtime_ns: BASE,
        },
    );
    ops.attrs.insert(
        1001,
        SchedAttr {
            policy: 1, // SCHED_FIFO
            priority: 10,
            ..SchedAttr::default()
        },
    );
    ops.attrs.insert(1002, fair(5_000_000)); // someone set their own
    ops.attrs.insert(1003, fair(HOMENODE)); // already ours
    let done = slice::set_threads_slice(&dir(&root, 1000), HOMENODE, BASE, &[HOMENODE], &mut ops)
        .expect("set")
        .expect_alive("db");
    assert_eq!(
        ops.sets,
        vec![(
            1000,
            SchedAttr {
                policy: slice::SCHED_BATCH,
                flags: slice::SCHED_FLAG_RESET_ON_FORK,
                nice: 5,
                priority: 0,
                runtime_ns: HOMENODE,
            }
        )]
    );
    assert_eq!(ops.attrs[&1001].runtime_ns, 0);
    assert_eq!(ops.slice_of(1002), 5_000_000);
    assert_eq!(
        (done.set, done.already, done.own_slice, done.gone),
        (1, 1, 1, 0)
    );
    assert_eq!(done.other_policy, vec![(1, 1)]);
    assert_eq!(
        done.describe(),
        "1 thread set to 100 ms, 1 had it already; kept their own: 1 SCHED_FIFO thread, \
         1 thread with a slice someone else set (thread 1002: 5 ms)"
    );
}

#[test]
fn threads_that_reset_their_children_or_run_at_negative_nice_keep_their_attributes() {
    let root = fixture("multinode-4n");
    let mut ops = FakeSlices::with_threads(BASE, &DB_THREADS);
    let reset = SchedAttr {
        flags: slice::SCHED_FLAG_RESET_ON_FORK,
        ..fair(BASE)
    };
    ops.attrs.insert(1000, reset); // its owner's flag: homenode could not tell it from its own
    ops.attrs.insert(
        1001,
        SchedAttr {
            nice: -5,
            ..fair(BASE)
        },
    );
    // homenode's earlier slice, with the flag homenode set: replaced, the flag kept.
    ops.attrs.insert(
        1002,
        SchedAttr {
            flags: slice::SCHED_FLAG_RESET_ON_FORK,
            ..fair(50_000_000)
        },
    );
    let ours = [HOMENODE, 50_000_000];
    let done = slice::set_threads_slice(&dir(&root, 1000), HOMENODE, BASE, &ours, &mut ops)
        .expect("set")
        .expect_alive("db");
    assert_eq!(
        (done.set, done.own_reset_on_fork, done.negative_nice),
        (2, 1, 1)
    );
    assert_eq!(ops.attrs[&1000], reset);
    assert_eq!((ops.slice_of(1001), ops.attrs[&1001].nice), (BASE, -5));
    for t in [1002, 1003] {
        assert_eq!(ops.slice_of(t), HOMENODE);
        assert!(ops.attrs[&t].resets_on_fork(), "thread {t}");
    }
    assert_eq!(
        done.describe(),
        "2 threads set to 100 ms; kept their own: 1 thread resetting its children's \
         attributes itself, 1 thread at a negative nice"
    );
    // Taking it back clears homenode's flag and leaves the owner's.
    let back = slice::restore_threads_slice(&dir(&root, 1000), &ours, &mut ops)
        .expect("restore")
        .expect_alive("db");
    assert_eq!((back.restored, back.left), (2, 2));
    for t in [1002, 1003] {
        assert_eq!(ops.attrs[&t], fair(BASE), "thread {t}");
    }
    assert_eq!(ops.attrs[&1000], reset);
}

#[test]
fn a_slice_homenode_gave_before_is_replaced_and_an_exited_thread_counted() {
    let root = fixture("multinode-4n");
    let mut ops = FakeSlices::with_threads(BASE, &DB_THREADS);
    ops.attrs.insert(1001, fair(50_000_000)); // homenode's earlier slice_ms = 50
    ops.attrs.remove(&1003); // exited between the listing and the call
    let ours = [80_000_000, 50_000_000];
    let done = slice::set_threads_slice(&dir(&root, 1000), 80_000_000, BASE, &ours, &mut ops)
        .expect("set")
        .expect_alive("db");
    assert_eq!((done.set, done.own_slice, done.gone), (3, 0, 1));
    for t in [1000, 1001, 1002] {
        assert_eq!(ops.slice_of(t), 80_000_000);
    }
    // Asked for more than the kernel keeps: set and counted at what it keeps.
    let mut ops = FakeSlices::with_threads(BASE, &DB_THREADS);
    let done = slice::set_threads_slice(&dir(&root, 1000), 500_000_000, BASE, &[], &mut ops)
        .expect("set")
        .expect_alive("db");
    assert_eq!(done.slice_ns, slice::MAX_SLICE_NS);
    assert_eq!(ops.slice_of(1002), slice::MAX_SLICE_NS);
    // Every thread gone: the process is gone.
    let mut ops = FakeSlices {
        base: Some(BASE),
        ..FakeSlices::default()
    };
    assert!(
        slice::set_threads_slice(&dir(&root, 1000), HOMENODE, BASE, &[], &mut ops)
            .expect("set")
            .is_gone()
    );
}

#[test]
fn taking_back_touches_only_threads_at_homenodes_slices() {
    let root = fixture("multinode-4n");
    let mut ops = FakeSlices::with_threads(BASE, &DB_THREADS);
    ops.attrs.insert(1000, fair(HOMENODE));
    ops.attrs.insert(1001, fair(50_000_000)); // an earlier slice of homenode's
    ops.attrs.insert(1002, fair(5_000_000)); // someone else's since
    let back = slice::restore_threads_slice(&dir(&root, 1000), &[HOMENODE, 50_000_000], &mut ops)
        .expect("restore")
        .expect_alive("db");
    assert_eq!(
        back,
        SliceRestored {
            restored: 2,
            left: 2,
            gone: 0
        }
    );
    assert_eq!(
        ops.sets
            .iter()
            .map(|(t, a)| (*t, a.runtime_ns))
            .collect::<Vec<_>>(),
        vec![(1000, 0), (1001, 0)],
        "the default is asked with sched_runtime 0"
    );
    assert_eq!(ops.slice_of(1000), BASE);
    assert_eq!(ops.slice_of(1002), 5_000_000);
}

/// A `FakeSlices` the test keeps a hand on while the actuator owns its calls.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<FakeSlices>>);

impl SliceOps for Shared {
    fn get(&mut self, tid: Tid) -> Result<Live<SchedAttr>, SliceError> {
        self.0.lock().expect("fake").get(tid)
    }
    fn set(&mut self, tid: Tid, attr: &SchedAttr) -> Result<Live<()>, SliceError> {
        self.0.lock().expect("fake").set(tid, attr)
    }
    fn base_slice(&mut self) -> Result<Option<u64>, SliceError> {
        self.0.lock().expect("fake").base_slice()
    }
}

fn db_entry() -> JournalEntry {
    JournalEntry {
        pid: DB.pid,
        starttime: DB.starttime,
        comm: "db server".into(),
        recorded_unix_s: 1_700_000_000,
        default_cpus: set("0-15"),
        threads: DB_THREADS
            .iter()
            .map(|&tid| ThreadOriginal {
                tid,
                starttime: 5000,
                cpus: set("0-15"),
            })
            .collect(),
        applied: None,
        slice: None,
    }
}

/// The multinode fixture host and a scratch journal path (the directory lives as long as the
/// returned handle).
fn scene() -> (std::path::PathBuf, tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = tmp.path().join("journal.json");
    (fixture("multinode-4n"), tmp, path)
}

/// Fake slices holding the database's threads at the base slice.
fn db_ops() -> Shared {
    let ops = Shared::default();
    *ops.0.lock().expect("fake") = FakeSlices::with_threads(BASE, &DB_THREADS);
    ops
}

fn actuator(root: &Path, journal: &Path, dry_run: bool, ops: &Shared) -> Actuator {
    Actuator::new(root, journal, dry_run, MemoryConfig::default())
        .with_slice_ops(Box::new(ops.clone()))
}

fn set_slice(ns: u64) -> Vec<SliceRequest> {
    vec![SliceRequest {
        key: DB,
        slice_ns: ns,
    }]
}

#[test]
fn the_actuator_journals_the_slice_first_and_takes_it_back() {
    let (root, _tmp, path) = scene();
    let ops = db_ops();
    let mut act = actuator(&root, &path, false, &ops);
    let mut j = Journal::new();
    j.record(db_entry());
    let out = act.set_slices(&mut j, &set_slice(HOMENODE));
    assert_eq!(
        out,
        vec![(
            Outcome::Done("4 threads set to 100 ms".into()),
            Some(HeldSlice {
                ns: HOMENODE,
                given: true
            })
        )]
    );
    // On disk before any thread was touched, and still there.
    let stored = Journal::load(&path).expect("journal");
    assert_eq!(
        stored.get(DB).and_then(|e| e.slice.as_ref()).map(|s| s.ns),
        Some(HOMENODE)
    );
    assert!(
        std::fs::read_to_string(&path)
            .expect("text")
            .contains("\"slice\"")
    );
    // A thread born since from a thread that had it, and one someone gave its own.
    {
        let mut f = ops.0.lock().expect("fake");
        f.attrs.insert(1003, fair(7_000_000));
        f.sets.clear();
    }
    let out = act.set_slices(&mut j, &set_slice(0));
    assert_eq!(
        out[0].0,
        Outcome::Done(
            "3 threads given the kernel's default slice back (1 at another slice left so, 0 gone)"
                .into()
        )
    );
    assert_eq!(out[0].1, None);
    let f = ops.0.lock().expect("fake");
    assert_eq!(f.slice_of(1000), BASE);
    assert_eq!(f.slice_of(1003), 7_000_000);
    assert!(j.get(DB).expect("entry").slice.is_none());
    let stored = Journal::load(&path).expect("journal");
    assert!(stored.get(DB).expect("entry").slice.is_none());
    // The base slice was measured once, for the decision that gave a slice.
    assert_eq!(f.probes, 1);
}

#[test]
fn without_custom_slices_nothing_is_called_or_written_and_it_is_asked_once() {
    let (root, _tmp, path) = scene();
    let ops = Shared::default();
    {
        let mut f = ops.0.lock().expect("fake");
        *f = FakeSlices::with_threads(BASE, &DB_THREADS);
        // A 6.1 kernel: fair threads read 0, and so does the probe.
        f.base = None;
        for t in DB_THREADS {
            f.attrs.insert(t, fair(0));
        }
    }
    let mut act = actuator(&root, &path, false, &ops);
    let mut j = Journal::new();
    j.record(db_entry());
    for _ in 0..2 {
        let out = act.set_slices(&mut j, &set_slice(HOMENODE));
        assert!(
            matches!(&out[0].0, Outcome::Skipped(why) if why.contains("no custom scheduling slices")),
            "{out:?}"
        );
        // Held as asked but not given: the policy does not ask again, the status shows none.
        assert_eq!(
            out[0].1,
            Some(HeldSlice {
                ns: HOMENODE,
                given: false
            })
        );
    }
    assert!(act.no_custom_slices());
    let out = act.set_slices(&mut j, &set_slice(0));
    assert!(matches!(&out[0].0, Outcome::Skipped(_)), "{out:?}");
    assert_eq!(out[0].1, None);
    let f = ops.0.lock().expect("fake");
    assert!(f.sets.is_empty(), "{:?}", f.sets);
    assert_eq!(f.probes, 1, "measured once, remembered");
    assert!(!path.exists(), "nothing to journal");
    assert!(j.get(DB).expect("entry").slice.is_none());
}

#[test]
fn a_dry_run_calls_nothing_and_holds_the_slice_it_would_give() {
    let (root, _tmp, path) = scene();
    let ops = Shared::default();
    let mut act = actuator(&root, &path, true, &ops);
    let mut j = Journal::new();
    let out = act.set_slices(&mut j, &set_slice(HOMENODE));
    assert_eq!(
        out,
        vec![(
            Outcome::DryRun,
            Some(HeldSlice {
                ns: HOMENODE,
                given: true
            })
        )]
    );
    assert_eq!(
        act.set_slices(&mut j, &set_slice(0))[0],
        (Outcome::DryRun, None)
    );
    let f = ops.0.lock().expect("fake");
    assert_eq!((f.probes, f.sets.len()), (0, 0));
    assert!(!path.exists());
}

#[test]
fn processes_without_a_home_an_exit_or_a_reused_pid_are_skipped() {
    let (root, _tmp, path) = scene();
    let ops = db_ops();
    let mut act = actuator(&root, &path, false, &ops);
    let mut j = Journal::new();
    let reused = ProcessKey {
        pid: 1000,
        starttime: 4999,
    };
    let exited = ProcessKey {
        pid: 3000,
        starttime: 1,
    };
    for key in [reused, exited] {
        let mut e = db_entry();
        e.pid = key.pid;
        e.starttime = key.starttime;
        j.record(e);
    }
    let reqs = [
        // Not journaled: homenode did not home it.
        SliceRequest {
            key: DB,
            slice_ns: HOMENODE,
        },
        SliceRequest {
            key: reused,
            slice_ns: HOMENODE,
        },
        SliceRequest {
            key: exited,
            slice_ns: HOMENODE,
        },
    ];
    let out = act.set_slices(&mut j, &reqs);
    let why: Vec<String> = out.iter().map(|(o, _)| o.to_string()).collect();
    assert!(why[0].contains("only to processes it homed"), "{why:?}");
    assert!(why[1].contains("another process"), "{why:?}");
    assert!(why[2].contains("exited"), "{why:?}");
    assert!(
        out.iter()
            .all(|(o, h)| matches!(o, Outcome::Skipped(_)) && h.is_none())
    );
    assert!(ops.0.lock().expect("fake").sets.is_empty());
    assert!(
        j.entries().all(|e| e.slice.is_none()),
        "nothing recorded for them"
    );
}

#[test]
fn damaged_proc_files_fail_the_action_naming_the_file() {
    let tmp = copy_fixture("multinode-4n");
    let stat = tmp.path().join("proc/1000/stat");
    std::fs::write(&stat, "1000 (db server) S 1 x\n").expect("damage");
    let jdir = tempfile::tempdir().expect("tmp");
    let path = jdir.path().join("journal.json");
    let ops = db_ops();
    let mut act = actuator(tmp.path(), &path, false, &ops);
    let mut j = Journal::new();
    j.record(db_entry());
    let out = act.set_slices(&mut j, &set_slice(HOMENODE));
    match &out[0].0 {
        Outcome::Failed(e) => {
            assert!(e.contains(&stat.display().to_string()), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(ops.0.lock().expect("fake").sets.is_empty());
    assert!(j.get(DB).expect("entry").slice.is_none());

    // Entries of task/ that are not thread IDs are not threads; a task/ that cannot be listed
    // (removed with the process) reads as an exit, not an error.
    let tmp = copy_fixture("multinode-4n");
    std::fs::create_dir(tmp.path().join("proc/1000/task/not-a-tid")).expect("mkdir");
    let mut fake = FakeSlices::with_threads(BASE, &DB_THREADS);
    let done = slice::set_threads_slice(&dir(tmp.path(), 1000), HOMENODE, BASE, &[], &mut fake)
        .expect("set")
        .expect_alive("db");
    assert_eq!(done.set, 4);
    std::fs::remove_dir_all(tmp.path().join("proc/1000/task")).expect("rm");
    let mut fake = FakeSlices::with_threads(BASE, &DB_THREADS);
    assert!(
        slice::restore_threads_slice(&dir(tmp.path(), 1000), &[HOMENODE], &mut fake)
            .expect("restore")
            .is_gone()
    );
    assert!(fake.sets.is_empty());
}

#[test]
fn after_a_crash_the_journal_gives_the_default_slice_back() {
    let (root, _tmp, path) = scene();
    // The daemon homed the database, gave it a slice, and was killed.
    {
        let ops = db_ops();
        let mut act = actuator(&root, &path, false, &ops);
        let mut j = Journal::new();
        j.record(db_entry());
        j.set_applied(DB, set("8-11"), set("2"));
        j.store(&path).expect("store");
        let out = act.set_slices(&mut j, &set_slice(HOMENODE));
        assert!(matches!(out[0].0, Outcome::Done(_)), "{out:?}");
    }
    // What the next start (or `homenode run --restore`) reads.
    let j = Journal::load(&path).expect("journal");
    assert_eq!(
        j.get(DB).and_then(|e| e.slice.as_ref()).map(|s| s.ours()),
        Some(vec![HOMENODE])
    );
    let mut affinity = FakeAffinity::default();
    for t in DB_THREADS {
        affinity.0.insert(t, set("8-11"));
    }
    // Since the crash: one thread set its own slice, one was born with the inherited one.
    let mut slices = FakeSlices::with_threads(BASE, &DB_THREADS);
    for t in [1000, 1001, 1003] {
        slices.attrs.insert(t, fair(HOMENODE));
    }
    slices.attrs.insert(1002, fair(2_000_000));
    let report = journal::restore_with(&j, &root, &mut affinity, &mut slices);
    assert_eq!(
        report.outcomes[0].2,
        RestoreOutcome::Restored {
            threads_restored: 4,
            threads_unchanged: 0,
            changed_by_others: 0,
            threads_gone: 0,
            slice: Some(SliceRestored {
                restored: 3,
                left: 1,
                gone: 0
            }),
        }
    );
    assert_eq!(report.slices_restored(), 3);
    for t in [1000, 1001, 1003] {
        assert_eq!(slices.slice_of(t), BASE);
    }
    assert_eq!(slices.slice_of(1002), 2_000_000);
    assert!(affinity.0.values().all(|m| *m == set("0-15")));
}

#[test]
fn journals_without_slices_still_load_and_slices_round_trip() {
    let mut j = Journal::new();
    j.record(db_entry());
    let plain = j.to_json();
    assert!(!plain.contains("slice"), "{plain}");
    let p = Path::new("j.json");
    assert_eq!(Journal::from_json(&plain, p).expect("old journal"), j);
    assert!(j.set_slice(DB, 50_000_000));
    assert!(j.set_slice(DB, HOMENODE));
    assert!(!j.set_slice(
        ProcessKey {
            pid: 9,
            starttime: 9
        },
        HOMENODE
    ));
    let s = j.get(DB).and_then(|e| e.slice.clone()).expect("slice");
    assert_eq!((s.ns, s.previous.clone()), (HOMENODE, vec![50_000_000]));
    assert_eq!(s.ours(), vec![HOMENODE, 50_000_000]);
    let text = j.to_json();
    assert_eq!(Journal::from_json(&text, p).expect("round trip"), j);
    // A key this version does not know inside the record: refused, as anywhere else.
    let bad = text.replace("\"ns\"", "\"nanos\": 1, \"ns\"");
    assert!(Journal::from_json(&bad, p).is_err());
    assert_eq!(j.clear_slice(DB).map(|s| s.ns), Some(HOMENODE));
    assert!(j.clear_slice(DB).is_none());
}

/// Affinity calls on a table (every set applied).
#[derive(Default)]
struct FakeAffinity(std::collections::BTreeMap<Tid, topo::CpuSet>);

impl linux::affinity::AffinityOps for FakeAffinity {
    fn get(&mut self, tid: Tid) -> Result<Live<topo::CpuSet>, linux::SysError> {
        Ok(self.0.get(&tid).cloned().into())
    }
    fn set(&mut self, tid: Tid, cpus: &topo::CpuSet) -> Result<Live<()>, linux::SysError> {
        Ok(match self.0.get_mut(&tid) {
            Some(m) => {
                *m = cpus.clone();
                Live::Alive(())
            }
            None => Live::Gone,
        })
    }
}
