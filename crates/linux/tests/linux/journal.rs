//! The undo journal: storage (atomic, strict parsing) and restore rules on fixture trees with
//! recorded affinity calls.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;

use linux::affinity::AffinityOps;
use linux::journal::{self, Journal, JournalEntry, RestoreOutcome, ThreadOriginal, restore_with};
use linux::sample::ProcessKey;
use linux::{JournalError, Live, SysError, Tid};
use topo::CpuSet;

use crate::common::{FakeSlices, assert_names_file, fair, fixture, set};

/// Affinity calls on a table instead of the kernel, recording every set.
#[derive(Default)]
struct FakeAffinity {
    masks: BTreeMap<Tid, CpuSet>,
    sets: Vec<(Tid, CpuSet)>,
}

impl AffinityOps for FakeAffinity {
    fn get(&mut self, tid: Tid) -> Result<Live<CpuSet>, SysError> {
        Ok(self.masks.get(&tid).cloned().into())
    }

    fn set(&mut self, tid: Tid, cpus: &CpuSet) -> Result<Live<()>, SysError> {
        self.sets.push((tid, cpus.clone()));
        Ok(match self.masks.get_mut(&tid) {
            Some(m) => {
                *m = cpus.clone();
                Live::Alive(())
            }
            None => Live::Gone,
        })
    }
}

fn thread(tid: Tid, starttime: u64, cpus: &str) -> ThreadOriginal {
    ThreadOriginal {
        tid,
        starttime,
        cpus: set(cpus),
    }
}

fn entry(pid: u32, starttime: u64, threads: Vec<ThreadOriginal>) -> JournalEntry {
    JournalEntry {
        pid,
        starttime,
        comm: format!("p{pid}"),
        recorded_unix_s: 1_700_000_000,
        default_cpus: set("0-15"),
        threads,
        applied: None,
        slice: None,
    }
}

fn key(pid: u32, starttime: u64) -> ProcessKey {
    ProcessKey { pid, starttime }
}

#[test]
fn store_and_load_round_trip_atomically() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("journal.json");
    // Absent: empty.
    assert!(Journal::load(&path).expect("absent").is_empty());
    let mut j = Journal::new();
    j.record(entry(
        1000,
        5000,
        vec![thread(1001, 5010, "0-15"), thread(1000, 5000, "0-15")],
    ));
    assert!(j.set_applied(key(1000, 5000), set("8-11"), set("2")));
    assert!(!j.set_applied(key(1000, 1), set("0"), set("0")));
    j.record(entry(1300, 8000, vec![thread(1300, 8000, "0-3")]));
    j.store(&path).expect("store");
    let back = Journal::load(&path).expect("load");
    assert_eq!(back, j);
    let e = back.get(key(1000, 5000)).expect("entry");
    assert_eq!(
        e.threads.iter().map(|t| t.tid).collect::<Vec<_>>(),
        vec![1000, 1001]
    );
    assert_eq!(
        e.applied.as_ref().map(|a| a.cpus.clone()),
        Some(set("8-11"))
    );
    // Atomic write: mode 0600 and no temporary file left.
    let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let names: Vec<_> = fs::read_dir(dir.path())
        .expect("ls")
        .map(|e| e.expect("e").file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("journal.json")]);
    // The text is the documented format.
    let text = fs::read_to_string(&path).expect("read");
    assert!(text.contains("\"format\": \"homenode-journal\"") && text.contains("\"version\": 1"));
    assert!(text.contains("\"cpus\": \"8-11\""));
    // Overwrite with a smaller journal.
    j.remove(key(1300, 8000));
    j.store(&path).expect("store again");
    assert_eq!(Journal::load(&path).expect("load").len(), 1);
}

#[test]
fn record_keeps_the_first_originals() {
    let mut j = Journal::new();
    j.record(entry(1000, 5000, vec![thread(1000, 5000, "0-15")]));
    // Recording again (the masks are homenode's now) keeps the originals, adds new threads.
    j.record(entry(
        1000,
        5000,
        vec![thread(1000, 5000, "0-3"), thread(1005, 6000, "0-3")],
    ));
    let e = j.get(key(1000, 5000)).expect("entry");
    assert_eq!(
        e.threads,
        vec![thread(1000, 5000, "0-15"), thread(1005, 6000, "0-3")]
    );
    // A reused TID within the process replaces the dead thread's record.
    assert!(j.record_thread(key(1000, 5000), thread(1005, 7000, "0-15")));
    assert!(!j.record_thread(key(9, 9), thread(9, 9, "0")));
    assert_eq!(
        j.get(key(1000, 5000)).expect("e").threads[1],
        thread(1005, 7000, "0-15")
    );
}

#[test]
fn corrupt_journals_are_typed_errors_naming_the_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("journal.json");
    let mut j = Journal::new();
    j.record(entry(1000, 5000, vec![thread(1000, 5000, "0-15")]));
    let good = j.to_json();
    let cases = [
        ("truncated", good[..good.len() / 2].to_string()),
        ("empty", String::new()),
        ("garbage", "\u{0}\u{1}not json".to_string()),
        (
            "other format",
            good.replace("homenode-journal", "something-else"),
        ),
        (
            "newer version",
            good.replace("\"version\": 1", "\"version\": 2"),
        ),
        (
            "unknown key",
            good.replace("\"comm\"", "\"command\": \"x\", \"comm\""),
        ),
        ("bad mask", good.replace("\"0-15\"", "\"0-x\"")),
        (
            "duplicate process",
            good.replace(
                "\"processes\": [",
                &format!(
                    "\"processes\": [{},",
                    serde_json::to_string(j.entries().next().expect("e")).expect("json")
                ),
            ),
        ),
    ];
    for (what, text) in cases {
        fs::write(&path, &text).expect("write");
        match Journal::load(&path) {
            Err(e @ JournalError::Corrupt { .. }) => assert_names_file(&e, &path),
            other => panic!("{what}: {other:?}"),
        }
    }
    fs::write(&path, [0xff, 0xfe]).expect("write");
    assert!(matches!(
        Journal::load(&path),
        Err(JournalError::Corrupt { .. })
    ));
    // A directory where the file should be: refused as not a regular file, naming it.
    let d = dir.path().join("adir");
    fs::create_dir(&d).expect("mkdir");
    let e = Journal::load(&d).unwrap_err();
    assert!(matches!(e, JournalError::Untrusted(_)), "{e:?}");
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert_names_file(&e, &d);
    // Storing into a missing directory: a write error naming the journal.
    let missing = dir.path().join("no/such/dir/journal.json");
    let e = j.store(&missing).unwrap_err();
    assert!(matches!(e, JournalError::Write { .. }));
    assert_names_file(&e, &missing);
}

#[test]
fn restore_rules_on_a_fixture_tree() {
    let root = fixture("multinode-4n");
    let mut j = Journal::new();
    // db server (1000, start 5000, threads 1000-1003).
    let mut db = entry(
        1000,
        5000,
        vec![
            thread(1000, 5000, "0-15"),
            thread(1001, 5010, "0-15"),
            // Recorded with another start time: the thread now at 1002 is a new one.
            thread(1002, 4000, "4-7"),
            thread(1003, 5012, "0-7"),
            // Exited since.
            thread(1009, 5020, "0-15"),
        ],
    );
    db.default_cpus = set("0-15");
    j.record(db);
    j.set_applied(key(1000, 5000), set("8-11"), set("2"));
    // pinned (1300, start 8000 in the tree) journaled with another start time: reused PID.
    j.record(entry(1300, 7777, vec![thread(1300, 7777, "0-15")]));
    j.set_applied(key(1300, 7777), set("0-3"), set("0"));
    // A process that has exited.
    j.record(entry(3000, 100, vec![thread(3000, 100, "0-15")]));
    j.set_applied(key(3000, 100), set("0-3"), set("0"));

    let mut ops = FakeAffinity::default();
    ops.masks.insert(1000, set("8-11")); // ours: restore to 0-15
    ops.masks.insert(1001, set("0-15")); // already original
    ops.masks.insert(1002, set("8-11")); // ours, new thread: the default 0-15
    ops.masks.insert(1003, set("9")); // someone else's since: leave
    ops.masks.insert(1300, set("0-3")); // the new process at PID 1300: never touched

    let report = restore_with(&j, &root, &mut ops, &mut FakeSlices::default());
    assert_eq!(
        ops.sets,
        vec![(1000, set("0-15")), (1002, set("0-15"))],
        "only our threads of the same process are set"
    );
    assert_eq!(ops.masks[&1300], set("0-3"));
    let outcomes: BTreeMap<u32, RestoreOutcome> = report
        .outcomes
        .iter()
        .map(|(k, _, o)| (k.pid, o.clone()))
        .collect();
    assert_eq!(
        outcomes[&1000],
        RestoreOutcome::Restored {
            threads_restored: 2,
            threads_unchanged: 1,
            changed_by_others: 1,
            threads_gone: 0,
            slice: None,
        }
    );
    assert_eq!(
        outcomes[&1300],
        RestoreOutcome::PidReused {
            starttime_now: 8000
        }
    );
    assert_eq!(outcomes[&3000], RestoreOutcome::Gone);
    assert_eq!(report.threads_restored(), 2);
    assert_eq!(report.done().len(), 3);
    assert_eq!(report.count(|o| matches!(o, RestoreOutcome::Gone)), 1);
}

#[test]
fn restore_without_applied_touches_nothing_and_failures_are_kept() {
    let root = fixture("multinode-4n");
    let mut j = Journal::new();
    j.record(entry(
        1200,
        7000,
        vec![thread(1200, 7000, "8-11"), thread(1201, 7001, "8-11")],
    ));
    let mut ops = FakeAffinity::default();
    ops.masks.insert(1200, set("8"));
    ops.masks.insert(1201, set("8-11"));
    let report = restore_with(&j, &root, &mut ops, &mut FakeSlices::default());
    assert!(ops.sets.is_empty());
    assert_eq!(
        report.outcomes[0].2,
        RestoreOutcome::Restored {
            threads_restored: 0,
            threads_unchanged: 1,
            changed_by_others: 1,
            threads_gone: 0,
            slice: None,
        }
    );

    /// Affinity calls that fail.
    struct Denied;
    impl AffinityOps for Denied {
        fn get(&mut self, tid: Tid) -> Result<Live<CpuSet>, SysError> {
            Err(SysError::Permission {
                op: "sched_getaffinity",
                pid: tid,
                errno: nix::errno::Errno::EPERM,
            })
        }
        fn set(&mut self, _: Tid, _: &CpuSet) -> Result<Live<()>, SysError> {
            unreachable!()
        }
    }
    let report = restore_with(&j, &root, &mut Denied, &mut FakeSlices::default());
    assert!(
        matches!(&report.outcomes[0].2, RestoreOutcome::Failed { error } if error.contains("permission denied"))
    );
    assert!(report.done().is_empty());
}

#[test]
fn forget_gone_and_capture_with_fake_calls() {
    let root = fixture("multinode-4n");
    let mut j = Journal::new();
    j.record(entry(1000, 5000, vec![]));
    j.record(entry(1300, 1, vec![]));
    j.record(entry(3000, 1, vec![]));
    assert_eq!(j.forget_gone(&root).expect("forget"), 2);
    assert_eq!(j.len(), 1);

    let mut ops = FakeAffinity::default();
    for t in [1000, 1001, 1002, 1003] {
        ops.masks.insert(t, set("0-15"));
    }
    ops.masks.insert(1003, set("1"));
    let e = journal::capture_with(&root, 1000, &mut ops)
        .expect("capture")
        .expect_alive("db");
    assert_eq!(e.key(), key(1000, 5000));
    assert_eq!(e.comm, "db server");
    assert_eq!(e.default_cpus, set("0-15"));
    assert_eq!(e.threads.len(), 4);
    assert_eq!(e.threads[3], thread(1003, 5012, "1"));
    assert!(
        journal::capture_with(&root, 3000, &mut ops)
            .expect("capture")
            .is_gone()
    );
}

#[test]
fn restore_after_a_crash_during_a_change_of_home_takes_back_the_old_mask_too() {
    // The daemon stored the new home (8-11) and crashed before setting it: the threads still
    // carry its previous home (0-3), which is homenode's and must be restored.
    let root = fixture("multinode-4n");
    let mut j = Journal::new();
    j.record(entry(
        1000,
        5000,
        vec![thread(1000, 5000, "0-15"), thread(1001, 5010, "0-15")],
    ));
    j.set_applied(key(1000, 5000), set("0-3"), set("0"));
    j.set_applied_changing(key(1000, 5000), set("8-11"), set("2"));
    let applied = j.get(key(1000, 5000)).and_then(|e| e.applied.clone());
    assert_eq!(applied.map(|a| a.previous), Some(vec![set("0-3")]));
    let mut ops = FakeAffinity::default();
    ops.masks.insert(1000, set("0-3")); // the old home: ours
    ops.masks.insert(1001, set("12")); // someone else's: left
    ops.masks.insert(1002, set("0-15")); // born after the recording, at the default
    ops.masks.insert(1003, set("0-15"));
    let report = restore_with(&j, &root, &mut ops, &mut FakeSlices::default());
    assert_eq!(ops.sets, vec![(1000, set("0-15"))]);
    assert_eq!(
        report.outcomes[0].2,
        RestoreOutcome::Restored {
            threads_restored: 1,
            threads_unchanged: 2,
            changed_by_others: 1,
            threads_gone: 0,
            slice: None,
        }
    );

    // Once the change is confirmed the old mask is no longer ours.
    j.set_applied(key(1000, 5000), set("8-11"), set("2"));
    let mut ops = FakeAffinity::default();
    for tid in [1001, 1002, 1003] {
        ops.masks.insert(tid, set("0-15"));
    }
    ops.masks.insert(1000, set("0-3"));
    restore_with(&j, &root, &mut ops, &mut FakeSlices::default());
    assert!(ops.sets.is_empty(), "{:?}", ops.sets);
}

#[test]
fn previous_masks_are_stored_only_while_a_change_is_under_way() {
    let mut j = Journal::new();
    j.record(entry(7, 70, vec![thread(7, 70, "0-15")]));
    // A first home has nothing before it.
    j.set_applied_changing(key(7, 70), set("0-3"), set("0"));
    let plain = j.to_json();
    assert!(!plain.contains("previous"), "{plain}");
    // The same mask again is no change: nothing to remember.
    j.set_applied_changing(key(7, 70), set("0-3"), set("0"));
    assert!(!j.to_json().contains("previous"));
    let previous = |j: &Journal| {
        j.get(key(7, 70))
            .and_then(|e| e.applied.as_ref())
            .map(|a| a.previous.clone())
            .unwrap_or_default()
    };
    j.set_applied_changing(key(7, 70), set("4-7"), set("1"));
    assert_eq!(previous(&j), [set("0-3")]);
    // A second change before the first was confirmed (it failed part-way): both older
    // masks stay ours.
    j.set_applied_changing(key(7, 70), set("8-11"), set("2"));
    assert_eq!(previous(&j), [set("0-3"), set("4-7")]);
    let text = j.to_json();
    assert!(text.contains("previous"), "{text}");
    let back = Journal::from_json(&text, std::path::Path::new("j.json")).expect("parses");
    assert_eq!(back, j);
    // Confirmed: only the new mask is ours.
    j.set_applied(key(7, 70), set("8-11"), set("2"));
    assert!(previous(&j).is_empty());
    // A journal written before the field existed still parses.
    let old = Journal::from_json(&plain, std::path::Path::new("j.json")).expect("parses");
    assert!(previous(&old).is_empty());
}

/// Root must not act on a journal that someone else could have written, nor create
/// or write files through links planted beside it.
#[test]
fn restore_refuses_untrusted_journal_places() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = fixture("multinode-4n");
    // A journal directory that others can write: refused before the journal is read.
    let open = tempfile::tempdir().expect("tmp");
    fs::set_permissions(open.path(), fs::Permissions::from_mode(0o1777)).expect("chmod");
    let journal = open.path().join("journal.json");
    fs::write(&journal, Journal::new().to_json()).expect("write");
    let e = linux::daemon::restore_only(&journal, &root).expect_err("open dir");
    assert!(e.to_string().contains("writable by group or others"), "{e}");
    // A private directory, but a dangling link where the lock file goes: the link's target is
    // not created.
    let private = tempfile::tempdir().expect("tmp");
    let journal = private.path().join("journal.json");
    let target = private.path().join("created-by-root");
    std::os::unix::fs::symlink(&target, private.path().join("journal.json.lock")).expect("ln");
    let e = linux::daemon::restore_only(&journal, &root).expect_err("lock link");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert!(!target.exists());
    // The journal itself a link: refused, and the file it points to is left as it was.
    fs::remove_file(private.path().join("journal.json.lock")).expect("rm");
    let elsewhere = private.path().join("elsewhere.json");
    fs::write(&elsewhere, Journal::new().to_json()).expect("write");
    std::os::unix::fs::symlink(&elsewhere, &journal).expect("ln");
    let e = linux::daemon::restore_only(&journal, &root).expect_err("journal link");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    // A journal others can write, in a private directory: refused too.
    fs::remove_file(&journal).expect("rm");
    fs::write(&journal, Journal::new().to_json()).expect("write");
    fs::set_permissions(&journal, fs::Permissions::from_mode(0o666)).expect("chmod");
    let e = linux::daemon::restore_only(&journal, &root).expect_err("0666 journal");
    assert!(e.to_string().contains("mode 0666"), "{e}");
    fs::set_permissions(&journal, fs::Permissions::from_mode(0o600)).expect("chmod");
    linux::daemon::restore_only(&journal, &root).expect("a trusted empty journal restores");
}

/// A journal that records a slice, stored, then read back after a "crash": the restore gives
/// the kernel's default slice back to every fair thread at one of homenode's slices (a thread
/// born since included) and to no other.
#[test]
fn a_stored_slice_is_taken_back_by_the_next_restore() {
    let root = fixture("multinode-4n");
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("journal.json");
    let mut j = Journal::new();
    j.record(entry(
        1000,
        5000,
        vec![thread(1000, 5000, "0-15"), thread(1001, 5010, "0-15")],
    ));
    j.set_applied(key(1000, 5000), set("8-11"), set("2"));
    assert!(j.set_slice(key(1000, 5000), 50_000_000));
    assert!(j.set_slice(key(1000, 5000), 100_000_000));
    j.store(&path).expect("store");
    drop(j);

    let j = Journal::load(&path).expect("load");
    let mut ops = FakeAffinity::default();
    for t in [1000, 1001, 1002, 1003] {
        ops.masks.insert(t, set("8-11"));
    }
    let base = 1_400_000;
    let mut slices = FakeSlices::with_threads(base, &[1000, 1001, 1002, 1003]);
    slices.attrs.insert(1000, fair(100_000_000)); // ours
    slices.attrs.insert(1001, fair(50_000_000)); // ours, from before a change of slice_ms
    slices.attrs.insert(1002, fair(100_000_000)); // born since, inherited ours
    slices.attrs.insert(
        1003,
        linux::slice::SchedAttr {
            policy: 1, // made real-time by its owner since: not ours to change
            priority: 5,
            ..linux::slice::SchedAttr::default()
        },
    );
    let report = restore_with(&j, &root, &mut ops, &mut slices);
    match &report.outcomes[0].2 {
        RestoreOutcome::Restored {
            threads_restored: 4,
            slice: Some(s),
            ..
        } => assert_eq!((s.restored, s.left, s.gone), (3, 1, 0)),
        other => panic!("{other:?}"),
    }
    assert_eq!(report.slices_restored(), 3);
    for t in [1000, 1001, 1002] {
        assert_eq!(slices.slice_of(t), base, "thread {t}");
    }
    assert_eq!(slices.attrs[&1003].policy, 1);
    // Restored twice: nothing more to do.
    slices.sets.clear();
    let again = restore_with(&j, &root, &mut ops, &mut slices);
    assert_eq!(again.slices_restored(), 0);
    assert!(slices.sets.is_empty());
}
