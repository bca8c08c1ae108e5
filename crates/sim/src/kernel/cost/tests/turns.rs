use super::*;

/// A decomposition of `mixed_op` over a random region of `random_mib` and a stream
/// region of 1 MiB, with `share_mib` of LLC to itself.
fn turns_op(random_mib: u64, share_mib: f64) -> LinearOp {
    let t = out_of_order();
    let regions = [
        region_on(&t, 0, random_mib << 20),
        region_on(&t, 0, 1 << 20),
    ];
    linear_op(
        &t,
        &mixed_op(10.0, 8.0, 8.0),
        &regions,
        0,
        share_mib * 1048576.0,
        &[],
    )
}

#[test]
fn a_decomposition_knows_what_the_task_holds_and_touches() {
    // 8 MiB at random with 4 MiB of cache: half of it held.
    let op = turns_op(8, 4.0);
    assert_eq!(op.random_footprint, 8.0 * 1048576.0);
    assert_eq!(op.cached_bytes, 4.0 * 1048576.0);
    assert_eq!(op.footprint, 9.0 * 1048576.0);
    // One random line and an eighth of a streamed one per operation.
    assert_eq!(op.random_lines, 1.0);
    assert!((op.touched_lines - 1.125).abs() < 1e-12);
}

#[test]
fn lines_survive_the_others_turns_while_both_fit_and_are_fetched_again_after() {
    let mib = 1048576.0;
    let op = turns_op(4, 16.0);
    let (line, per_line, op_ns) = (64.0, 5.0, 1.0);
    // Back after a cold refill: the cache's reach left by the others is all its own.
    let fresh = TurnHistory::default();
    let refill = |others: f64, run: f64| {
        refill_after_turns(
            &op,
            &fresh.walk(others * mib, 16.0 * mib, op.footprint),
            16.0 * mib,
            line,
            per_line,
            op_ns,
            run,
        )
        .0
    };
    let held_lines = 4.0 * mib / line;
    // Its 5 MiB (4 at random, 1 streamed) beside 11 MiB of others' lines: all survive.
    assert_eq!(op.footprint, 5.0 * mib);
    assert_eq!(refill(11.0, 1e9), (0.0, 0.0));
    // 14 MiB: the 2 MiB of reach left hold its most recent 2 of 5 MiB, so 3/5 of what
    // it held is evicted. Under LRU its old lines are the oldest in the cache, so the
    // lines it fetches in a long run push out its own survivors before the others'
    // lines: it fetches more than the 3/5, less than all.
    let (stall, lines) = refill(14.0, 1e12);
    assert!(
        lines > held_lines * 3.0 / 5.0 && lines < held_lines,
        "{lines}"
    );
    assert!((stall - lines * per_line).abs() < 1e-6);
    // More than the cache: every line it held is fetched once, each a miss.
    let (_, all) = refill(100.0, 1e12);
    assert!(
        (all - held_lines).abs() < 1e-6 * held_lines,
        "{all} vs {held_lines}"
    );
    // Nobody else ran, or nothing was held: nothing to pay.
    assert_eq!(refill(0.0, 1e12), (0.0, 0.0));
    let none = turns_op(4, 0.0);
    assert_eq!(
        refill_after_turns(
            &none,
            &fresh.walk(100.0 * mib, 16.0 * mib, none.footprint),
            16.0 * mib,
            line,
            per_line,
            op_ns,
            1e12
        )
        .0,
        (0.0, 0.0)
    );
}

/// An exact LRU cache of `lines` lines: `touch` says whether the line was there.
struct ExactLru {
    prev: Vec<u32>,
    next: Vec<u32>,
    held: Vec<bool>,
    head: u32,
    tail: u32,
    len: usize,
    lines: usize,
}

impl ExactLru {
    const NONE: u32 = u32::MAX;

    fn new(lines: usize, ids: usize) -> Self {
        let none = Self::NONE;
        ExactLru {
            prev: vec![none; ids],
            next: vec![none; ids],
            held: vec![false; ids],
            head: none,
            tail: none,
            len: 0,
            lines,
        }
    }

    fn unlink(&mut self, x: u32) {
        let (p, n) = (self.prev[x as usize], self.next[x as usize]);
        if p == Self::NONE {
            self.head = n
        } else {
            self.next[p as usize] = n
        }
        if n == Self::NONE {
            self.tail = p
        } else {
            self.prev[n as usize] = p
        }
    }

    fn push_front(&mut self, x: u32) {
        self.prev[x as usize] = Self::NONE;
        self.next[x as usize] = self.head;
        if self.head != Self::NONE {
            self.prev[self.head as usize] = x;
        }
        self.head = x;
        if self.tail == Self::NONE {
            self.tail = x;
        }
    }

    fn touch(&mut self, x: u32) -> bool {
        if self.held[x as usize] {
            self.unlink(x);
            self.push_front(x);
            return true;
        }
        if self.len == self.lines {
            let victim = self.tail;
            self.unlink(victim);
            self.held[victim as usize] = false;
            self.len -= 1;
        }
        self.push_front(x);
        self.held[x as usize] = true;
        self.len += 1;
        false
    }
}

/// Two tasks, each reading uniformly at random over its own `footprint` lines, taking
/// turns of `turn` reads on an exact LRU cache of `cache` lines: the misses per turn
/// beyond what a task misses alone (`1 - min(1, cache / footprint)` of its reads).
fn exact_extra_misses(cache: usize, footprint: usize, turn: usize) -> f64 {
    let mut lru = ExactLru::new(cache, 2 * footprint);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let turns = (2_000_000 / turn).max(64);
    let (mut hits, mut reads) = (0u64, 0u64);
    for k in 0..turns {
        let base = (k % 2 * footprint) as u32;
        for _ in 0..turn {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let hit = lru.touch(base + (x % footprint as u64) as u32);
            if k >= turns / 4 {
                hits += u64::from(hit);
                reads += 1;
            }
        }
    }
    let alone = (cache as f64 / footprint as f64).min(1.0);
    (alone - hits as f64 / reads as f64) * turn as f64
}

/// The same with the model: the histories as the engine keeps them, then the refill of
/// a run of `turn` reads.
fn model_extra_misses(cache: usize, footprint: usize, turn: usize) -> f64 {
    let line = 64.0;
    let bytes = footprint as f64 * line;
    let op = LinearOp {
        random_lines: 1.0,
        touched_lines: 1.0,
        random_footprint: bytes,
        footprint: bytes,
        cached_bytes: (cache as f64 * line).min(bytes),
        ..Default::default()
    };
    let run = (turn as f64 * line).min(bytes);
    let mut h = TurnHistory::default();
    for _ in 0..2 * TURN_RUNS {
        h.begin(run);
        h.end(run);
    }
    let llc = cache as f64 * line;
    refill_after_turns(
        &op,
        &h.walk(run, llc, op.footprint),
        llc,
        line,
        0.0,
        1.0,
        turn as f64,
    )
    .0
    .1
}

#[test]
fn the_refill_memo_gives_the_bits_of_the_refill_it_stands_for() {
    let line = 64.0;
    let mib = 1024.0 * 1024.0;
    let op = LinearOp {
        random_lines: 1.0,
        touched_lines: 3.0,
        random_footprint: 6.0 * mib,
        footprint: 10.0 * mib,
        cached_bytes: 3.0 * mib,
        ..Default::default()
    };
    let llc = 4.0 * mib;
    let mut memo = RefillMemo::default();
    let mut h = TurnHistory::default();
    // Runs of every length around the integral's own, histories that repeat and change,
    // the others' bytes from none to the whole cache and more.
    for round in 0..6 * TURN_RUNS {
        let others = [0.0, 0.5, 3.0, 0.5, 5.0][round % 5] * mib;
        for run_ns in [1e2, 1e4, 1e5, 1e6, 1e9, 1e5, 1e9] {
            for op_ns in [10.0, 10.0, 20.0] {
                let held = memo.walk(&h, others, llc, op.footprint).held;
                let walk = h.walk(others, llc, op.footprint);
                assert_eq!(held.to_bits(), walk.held.to_bits());
                if held >= 1.0 {
                    continue;
                }
                let want = refill_after_turns(&op, &walk, llc, line, 90.0, op_ns, run_ns).0;
                let got = memo.refill(&op, line, 90.0, op_ns, run_ns);
                assert_eq!(got.0.to_bits(), want.0.to_bits());
                assert_eq!(got.1.to_bits(), want.1.to_bits());
            }
        }
        h.begin(others);
        h.end([1.0, 2.0, 1.0][round % 3] * mib);
    }
}

#[test]
fn the_refill_after_turns_follows_an_exact_lru_cache() {
    // A footprint of 2048 lines on caches that hold a half and a quarter of it, turns
    // from a sixteenth of the footprint to four times it. The model keeps the histories
    // as independent samples, which is within a fifth of the exact cache here; after a
    // long absence it is exact (`F (h + (1 - h) ln(1 - h))` lines). The rule before
    // (every evicted line a miss when next touched) fetched 3.3 times too many there.
    let footprint = 2048;
    for cache in [1024, 512] {
        for turn in [128, 512, 2048, 8192] {
            let exact = exact_extra_misses(cache, footprint, turn);
            let model = model_extra_misses(cache, footprint, turn);
            let ratio = model / exact;
            assert!(
                (0.9..1.2).contains(&ratio),
                "cache {cache}, turn {turn}: model {model:.1} against exact {exact:.1}"
            );
        }
    }
}

/// Two tasks alternating on one cache, each touching `turn` MiB per run of a `footprint`
/// (MiB) much larger than the cache: the share each still holds at its return, once the
/// histories are full.
fn alternating_share(cache: f64, footprint: f64, turn: f64) -> f64 {
    let mut h = TurnHistory::default();
    let mut share = 1.0;
    let mib = 1048576.0;
    for _ in 0..4 * TURN_RUNS {
        share = h.held_share(turn * mib, cache * mib, footprint * mib);
        h.begin(turn * mib);
        h.end(turn * mib);
    }
    share
}

#[test]
fn tasks_taking_short_turns_each_keep_about_their_part_of_the_recent_touches() {
    let (cache, footprint) = (4.0, 20.0);
    // Turns of a sixteenth of the cache: the reach holds about half of each task's own
    // recent touches, so each keeps about half of its alone share.
    let short = alternating_share(cache, footprint, cache / 16.0);
    assert!((0.45..0.56).contains(&short), "{short}");
    // Longer turns leave it more of its own lines at each return, up to a turn that
    // fills the cache, after which the other's turn evicts everything.
    let mut last = short;
    for turn in [cache / 8.0, cache / 4.0, cache / 2.0] {
        let s = alternating_share(cache, footprint, turn);
        assert!(s > last - 1e-9, "turn {turn}: {s} after {last}");
        last = s;
    }
    assert_eq!(alternating_share(cache, footprint, cache), 0.0);
    // A footprint the cache holds beside the other's: nothing is lost.
    assert_eq!(alternating_share(16.0, 4.0, 4.0), 1.0);
}

#[test]
fn runs_that_nobody_else_separates_count_as_one() {
    // Eight runs of an eighth of the cache each, with nothing touched between them, hold
    // what one run of the whole cache holds: all of the share.
    let mib = 1048576.0;
    let mut h = TurnHistory::default();
    for _ in 0..8 {
        h.begin(0.0);
        h.end(0.5 * mib);
    }
    assert_eq!(h.held_share(0.0, 4.0 * mib, 20.0 * mib), 1.0);
    // The same runs, each after the others touched a little, hold less.
    let mut h = TurnHistory::default();
    for _ in 0..8 {
        h.begin(0.1 * mib);
        h.end(0.5 * mib);
    }
    assert!(h.held_share(0.1 * mib, 4.0 * mib, 20.0 * mib) < 1.0);
}

#[test]
fn a_short_run_fetches_only_the_lines_it_touches_and_never_stalls_longer_than_it_runs() {
    let mib = 1048576.0;
    let op = turns_op(4, 16.0);
    let lines_held = 4.0 * mib / 64.0;
    let (per_line, op_ns) = (50.0, 1.0);
    // Back after the others filled the cache: nothing of its own is left.
    let fresh = TurnHistory::default();
    let refill = |run: f64| {
        refill_after_turns(
            &op,
            &fresh.walk(100.0 * mib, 16.0 * mib, op.footprint),
            16.0 * mib,
            64.0,
            per_line,
            op_ns,
            run,
        )
        .0
    };
    let mut last = 0.0;
    for run in [1e3, 1e5, 1e6, 1e7, 1e9] {
        let (stall, lines) = refill(run);
        assert!(stall < run, "run {run} ns, stall {stall} ns");
        assert!(
            lines <= lines_held * (1.0 + 1e-9) && lines >= last,
            "{lines}"
        );
        last = lines;
    }
    // 1 us at 51 ns per operation (every read a miss at first) is about 20 operations,
    // each fetching a line.
    let (_, few) = refill(1e3);
    assert!((few - 1e3 / 51.0).abs() < 0.2, "{few}");
}
