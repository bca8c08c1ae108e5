use super::*;

fn party(node: NodeId, writes: bool, members: u32, interval_ns: f64) -> LineParty {
    LineParty {
        node,
        writes,
        members,
        interval_ns,
        cover_ns: 0.0,
    }
}

#[test]
fn a_lone_writer_and_readers_alone_pay_nothing() {
    let t = machine();
    assert_eq!(line_stalls(&t, &[party(0, true, 1, 1.0)]), vec![0.0]);
    let readers = [party(0, false, 3, 1.0), party(1, false, 2, 1.0)];
    assert_eq!(line_stalls(&t, &readers), vec![0.0, 0.0]);
    // An empty party is no sharer.
    let s = line_stalls(&t, &[party(0, true, 1, 1.0), party(1, false, 0, 1.0)]);
    assert_eq!(s, vec![0.0, 0.0]);
}

#[test]
fn a_reader_pays_at_most_one_transfer_per_foreign_write() {
    // A writer every 1000 ns, a reader every 1 ns, one node: the line comes back to the
    // reader once per write and then serves ~1000 reads. Known answer: window 1000 ns
    // (time to the next write) + 28.5 ns (half of the 57 ns transfer), 1029.5 reads per
    // transfer; the writer finds the line read after every write (1.0295 writes per
    // transfer). The line is in transit ~10% of the time: no waiting.
    let t = machine();
    let x = t.memory.line_transfer_local_ns;
    assert_eq!(x, 57.0);
    let s = line_stalls(&t, &[party(0, true, 1, 1000.0), party(0, false, 1, 1.0)]);
    assert!((s[1] - 57.0 / 1029.5).abs() < 1e-12, "{s:?}");
    assert!((s[0] - 57.0 / 1.0295).abs() < 1e-9, "{s:?}");
    let transfers_per_read = s[1] / x;
    assert!(transfers_per_read < 1.0 / 1000.0);
}

#[test]
fn a_reader_writer_pair_pays_fewer_transfers_than_accesses() {
    let t = machine();
    let x = t.memory.line_transfer_local_ns;
    let s = line_stalls(&t, &[party(0, true, 1, 1.0), party(0, false, 1, 1.0)]);
    for stall in s {
        assert!(stall > 0.0 && stall < x / 10.0, "{stall}");
    }
}

#[test]
fn a_store_buffer_hides_the_writers_ownership_requests() {
    let t = machine();
    let mut w = party(0, true, 1, 1000.0);
    let r = party(0, false, 1, 1.0);
    let bare = line_stalls(&t, &[w.clone(), r.clone()]);
    w.cover_ns = 30.0;
    let part = line_stalls(&t, &[w.clone(), r.clone()]);
    assert!((part[0] - (57.0 - 30.0) / 1.0295).abs() < 1e-9, "{part:?}");
    w.cover_ns = 100.0;
    let hidden = line_stalls(&t, &[w, r]);
    assert_eq!(hidden[0], 0.0);
    // Readers are not helped by the writer's store buffer.
    assert_eq!(hidden[1], bare[1]);
}

#[test]
fn a_saturated_line_makes_requests_wait() {
    // Two writers storing every 1 ns, no store buffer: alone each would hold the line
    // for 1 + 28.5 ns and transfer it in 57 ns, 2 x 57 / 87.5 = 130% of the time: more
    // than the line can carry. Each request then waits w with 2 x 57 / (87.5 + w) = 1,
    // w = 26.5 ns, and a write costs (57 + 26.5) / 30.5 ns.
    let t = machine();
    let s = line_stalls(&t, &[party(0, true, 2, 1.0)]);
    assert!((s[0] - 83.5 / 30.5).abs() < 1e-9, "{s:?}");
}

#[test]
fn scattered_lines_miss_once_per_contended_access_when_another_writer_runs() {
    let t = machine();
    let x = t.memory.line_transfer_local_ns;
    let mut w = party(0, true, 2, 1000.0);
    let r = party(0, false, 3, 1.0);
    // Readers pay a transfer, writers too (the other writer wrote the line).
    assert_eq!(scattered_stalls(&t, &[w.clone(), r.clone()]), vec![x, x]);
    w.cover_ns = 20.0;
    assert_eq!(
        scattered_stalls(&t, &[w.clone(), r.clone()]),
        vec![x - 20.0, x]
    );
    // A lone writer: nothing to fetch; readers of another node pay the remote transfer.
    w.members = 1;
    let far = party(1, false, 1, 1.0);
    let s = scattered_stalls(&t, &[w, far]);
    assert_eq!(s, vec![0.0, t.memory.line_transfer_remote_ns]);
}

#[test]
fn remote_sharers_pay_more_per_transfer() {
    let t = machine();
    let local = line_stalls(&t, &[party(0, true, 1, 1000.0), party(0, false, 1, 1.0)]);
    let remote = line_stalls(&t, &[party(0, true, 1, 1000.0), party(1, false, 1, 1.0)]);
    assert!(remote[1] > local[1] && remote[0] > local[0]);
    assert_eq!(line_transfer_ns(&t, 0, 1), t.memory.line_transfer_remote_ns);
}
