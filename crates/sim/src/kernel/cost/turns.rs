//! Turns on a cache: the lines a task fetches again after other tasks' turns on its LLC
//! evicted them, followed through an LRU stack of its last runs, with a memo of the refill.

use super::*;
/// How many of a task's last runs on its LLC [`TurnHistory`] remembers.
pub const TURN_RUNS: usize = 8;

/// A task's last runs on the LLC it last used, newest first (docs/model/caches.md, "Turns on a
/// cache"): per run, the bytes the others touched on the LLC between its previous run and
/// this one, and the distinct bytes it touched itself. The LLC keeps the most recently
/// touched bytes of everyone, so which of the task's lines are still there depends on how its
/// own touches and the others' interleave, not only on the others' last turn.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TurnHistory {
    runs: [(f64, f64); TURN_RUNS],
    len: usize,
    /// The others' bytes before the current run, until it ends.
    pending: f64,
}

impl TurnHistory {
    /// Forget the runs: after a cold refill the task holds its whole share again.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// A run starts after the others touched `others` bytes on the LLC since the last one.
    pub fn begin(&mut self, others: f64) {
        self.pending = others;
    }

    /// The run ends, having touched `own` distinct bytes. A run that nobody else's touches
    /// separate from the one before continues it (a task preempted by work that touches no
    /// memory keeps its lines as if it had run on).
    pub fn end(&mut self, own: f64) {
        if self.len > 0 && self.pending < 1.0 {
            self.runs[0].1 += own;
            return;
        }
        self.runs.copy_within(0..TURN_RUNS - 1, 1);
        self.runs[0] = (self.pending, own);
        self.len = (self.len + 1).min(TURN_RUNS);
        self.pending = 0.0;
    }

    /// The fraction of what the task holds alone (`cached_bytes`) still in an LLC of
    /// `llc_bytes` when it comes back after the others touched `others` bytes, for a task
    /// whose runs touch `footprint` bytes.
    ///
    /// The LLC is read as LRU: a line stays while fewer than `llc_bytes` were touched since
    /// its last touch. Walking back from now, the others' bytes and the task's own runs use
    /// up that reach; a run's last `x` distinct bytes are `x / footprint` of the task's lines,
    /// and a line is held if some run within reach touched it (runs taken as independent).
    /// Alone the reach is all its own, `min(1, llc_bytes / footprint)`: the share is the
    /// ratio of the two. Before the remembered runs the reach continues with the runs' own
    /// mix, or, while fewer runs than [`TURN_RUNS`] were seen since the last cold refill, as
    /// the task's own (the refill gave it its whole share).
    pub fn held_share(&self, others: f64, llc_bytes: f64, footprint: f64) -> f64 {
        self.walk(others, llc_bytes, footprint).held
    }

    /// The walk back from a return after the others touched `others` bytes, ready to be
    /// asked what the older lines hold as the run touches more ([`TurnWalk`]).
    pub fn walk(&self, others: f64, llc_bytes: f64, footprint: f64) -> TurnWalk {
        let mut w = TurnWalk {
            start: [0.0; TURN_RUNS + 1],
            missed: [1.0; TURN_RUNS + 1],
            own: [0.0; TURN_RUNS],
            len: self.len,
            own_mix: 1.0,
            alone: 1.0,
            footprint,
            degenerate: footprint <= 0.0 || llc_bytes <= 0.0,
            held: 1.0,
        };
        if w.degenerate {
            return w;
        }
        w.alone = (llc_bytes / footprint).min(1.0);
        let runs = &self.runs[..self.len];
        let mut reach = llc_bytes - others;
        for (i, &(before, own)) in runs.iter().enumerate() {
            w.start[i] = reach;
            w.own[i] = own;
            w.missed[i + 1] = w.missed[i] * (1.0 - (own / footprint).min(1.0));
            reach -= own + before;
        }
        w.start[self.len] = reach;
        if self.len == TURN_RUNS {
            let own: f64 = runs.iter().map(|r| r.1).sum();
            let all: f64 = runs.iter().map(|r| r.0 + r.1).sum();
            w.own_mix = own / all.max(1e-9);
        }
        w.held = w.held_share_beneath(0.0);
        w
    }
}

/// A task's remembered runs laid out along the cache's reach, back from its return: where
/// each run starts (`start[i]`, the reach left before it) and what the runs newer than it
/// missed together (`missed[i]`). Under LRU only the oldest run that the reach still touches
/// can be partly in it: a newer run has the older one's start plus what came between.
#[derive(Clone, Copy, Debug)]
pub struct TurnWalk {
    start: [f64; TURN_RUNS + 1],
    missed: [f64; TURN_RUNS + 1],
    own: [f64; TURN_RUNS],
    len: usize,
    own_mix: f64,
    alone: f64,
    footprint: f64,
    degenerate: bool,
    /// The share held at the return ([`TurnHistory::held_share`]), computed once.
    pub held: f64,
}

impl TurnWalk {
    /// Nothing of the task's is left within the reach: the others touched the whole cache.
    pub fn nothing_held(&self) -> bool {
        !self.degenerate && self.start[0] <= 0.0
    }

    /// [`TurnHistory::held_share`] of the lines from before the current run, once the run has
    /// touched `own_now` distinct bytes: the newest part of the cache's reach is the run's
    /// own, so what came before it holds less (under LRU a task's new lines push out its own
    /// old ones as well as the others').
    pub fn held_share_beneath(&self, own_now: f64) -> f64 {
        if self.degenerate {
            return 1.0;
        }
        let fp = self.footprint;
        // The runs the reach still touches: a prefix, as the starts decrease.
        let k = self.start[..self.len]
            .iter()
            .take_while(|&&s| s - own_now > 0.0)
            .count();
        let missed = if k == 0 {
            1.0
        } else {
            let reach = self.start[k - 1] - own_now;
            let own = self.own[k - 1];
            if own <= reach {
                // The whole run is within reach: what the walk already multiplied in.
                self.missed[k]
            } else {
                self.missed[k - 1] * (1.0 - (reach / fp).min(1.0))
            }
        };
        let tail = self.start[self.len] - own_now;
        let missed = if k == self.len && tail > 0.0 {
            missed * (1.0 - (tail * self.own_mix / fp).min(1.0))
        } else {
            missed
        };
        let share = (1.0 - missed) / self.alone;
        // Rounding must not turn "all of it" into a refill of a few bytes.
        if share > 1.0 - 1e-9 { 1.0 } else { share }
    }
}

/// Steps of the integral in [`refill_after_turns`].
pub(super) const REFILL_STEPS: u32 = 8;

/// `-ln(1 - v)` at the end and the middle of each step of [`refill_after_turns`] for one `h`:
/// the tasks of a run mostly share a few values of `h`, and the logarithms were a sixth of the
/// integral's time. Kept per thread for the last `h` seen (a pure function of it: the same
/// bits as computing them anew).
#[derive(Clone, Copy)]
pub(super) struct RefillLogs {
    h_bits: u64,
    at: [(f64, f64); REFILL_STEPS as usize],
}

thread_local! {
    static REFILL_LOGS: std::cell::Cell<RefillLogs> = const {
        std::cell::Cell::new(RefillLogs { h_bits: u64::MAX, at: [(0.0, 0.0); REFILL_STEPS as usize] })
    };
}

impl RefillLogs {
    fn of(h: f64) -> RefillLogs {
        REFILL_LOGS.with(|c| {
            let cached = c.get();
            if cached.h_bits == h.to_bits() {
                return cached;
            }
            let dv = h / f64::from(REFILL_STEPS);
            let mut at = [(0.0, 0.0); REFILL_STEPS as usize];
            for (k, e) in (0..REFILL_STEPS).zip(at.iter_mut()) {
                let lo = f64::from(k) * dv;
                let hi = (f64::from(k + 1) * dv).min(1.0 - 1e-12);
                let mid = 0.5 * (lo + hi);
                *e = (-(1.0 - hi).ln(), -(1.0 - mid).ln());
            }
            let fresh = RefillLogs {
                h_bits: h.to_bits(),
                at,
            };
            c.set(fresh);
            fresh
        })
    }

    fn at(&self, k: u32) -> (f64, f64) {
        self.at[k as usize]
    }
}

/// The stall of a task that comes back to its LLC after other tasks took turns on it, and
/// the lines it fetches again (docs/model/caches.md, "Turns on a cache").
///
/// Alone, a fraction `h` of its random lines is in the cache (`op.cached_bytes` of
/// `op.random_footprint`). Back after the others took their turns, it holds part of that
/// (`walk`, [`TurnHistory::walk`] from its return, for a footprint of `op.footprint`). Its
/// run then follows the LRU stack: after it touched a fraction `v` of its random lines
/// (uniform random accesses: `-ln(1 - v)` footprints of touches), those are held, and of the
/// rest only what its older runs left within the reach that the run's own bytes (random and
/// streamed) have not yet used ([`TurnWalk::held_share_beneath`]). An access hits with
/// probability `q(v) = v + (1 - v) h s(v)`, and costs `per_line_ns` more than alone while
/// `q < h`. The extra misses are the integral of `h - q` over its random touches until `q`
/// reaches `h` (the cache holds what it holds alone), or its own bytes fill the cache, or the
/// run (`run_ns`, the slice it was given) ends: the stall never outlasts the run. After a long
/// absence this gives `F (h + (1 - h) ln(1 - h))` lines, the exact figure for LRU, not the
/// whole of `h F`: while the task fills the cache again, many of its accesses would have
/// missed alone too.
///
/// Returns the stall and the lines, and the runs they hold for as well: `Some(end)` when any
/// run longer than `end` gives the same figures (the run's length did not cut the integral,
/// and no step ended at or after `end`), `None` when a run of another length might not.
#[allow(clippy::too_many_arguments)]
pub fn refill_after_turns(
    op: &LinearOp,
    walk: &TurnWalk,
    llc_bytes: f64,
    line_bytes: f64,
    per_line_ns: f64,
    op_ns: f64,
    run_ns: f64,
) -> ((f64, f64), Option<f64>) {
    let random = op.random_footprint;
    if op.cached_bytes <= 0.0 || random <= 0.0 || op.random_lines <= 0.0 {
        return ((0.0, 0.0), Some(f64::NEG_INFINITY));
    }
    if walk.held >= 1.0 {
        return ((0.0, 0.0), Some(f64::NEG_INFINITY));
    }
    let h = (op.cached_bytes / random).min(1.0);
    let random_bytes = op.random_lines * line_bytes;
    let stream_bytes = ((op.touched_lines - op.random_lines) * line_bytes).max(0.0);
    let stream_footprint = (op.footprint - random).max(0.0);
    // Operations per unit of `-ln(1 - v)`: `ops(v) = -ln(1 - v) * per_ln` operations touch a
    // fraction `v` of the random lines.
    let per_ln = random / random_bytes;
    let mut bounded = true;
    if walk.nothing_held() && h < 1.0 {
        // Back after the others filled the reach (a long absence, the common case of long
        // turns): `q = v`, and the integral has a closed form, `v + (1 - h) ln(1 - v)`
        // footprints of lines up to `v`, used when neither the run nor the cache cuts it.
        let ln_h = -(1.0 - h).ln();
        let lines = (h - (1.0 - h) * ln_h) * random / line_bytes;
        let own = h * random + (ln_h * per_ln * stream_bytes).min(stream_footprint);
        let t = ln_h * per_ln * op_ns + lines * per_line_ns;
        if own < llc_bytes && t <= run_ns {
            return ((lines * per_line_ns, lines), None);
        }
        // A longer run might have taken the closed form.
        bounded = false;
    }
    let dv = h / f64::from(REFILL_STEPS);
    let logs = RefillLogs::of(h);
    // Lines are a power of two of bytes: dividing by one is multiplying by its inverse, to
    // the bit (both round the same exact quotient), and a division costs several products.
    let per_byte = 1.0 / line_bytes;
    let exact_inverse = line_bytes > 0.0
        && line_bytes.is_normal()
        && line_bytes.to_bits() & ((1 << 52) - 1) == 0
        && per_byte.is_normal();
    let (mut lines, mut t, mut ln_lo) = (0.0, 0.0, 0.0);
    let mut end = f64::NEG_INFINITY;
    for k in 0..REFILL_STEPS {
        let lo = f64::from(k) * dv;
        let hi = (f64::from(k + 1) * dv).min(1.0 - 1e-12);
        let (ln_hi, ln_mid) = logs.at(k);
        let mid = 0.5 * (lo + hi);
        let streamed = if stream_bytes > 0.0 {
            (ln_mid * per_ln * stream_bytes).min(stream_footprint)
        } else {
            0.0
        };
        let own = mid * random + streamed;
        if own >= llc_bytes {
            break;
        }
        let q = mid + (1.0 - mid) * h * walk.held_share_beneath(own);
        // Per random line touched, `h - q` extra misses; `(1 - v)` of the touches in `dv`
        // are new lines, so `dx = random dv / (1 - v)` (taken at the midpoint, exact when
        // `h - q` is proportional to `1 - v`, as it is for a footprint the cache holds).
        let bytes = (h - q).max(0.0) / (1.0 - mid) * (hi - lo) * random;
        let d_lines = if exact_inverse {
            bytes * per_byte
        } else {
            bytes / line_bytes
        };
        let d_t = (ln_hi - ln_lo) * per_ln * op_ns + d_lines * per_line_ns;
        ln_lo = ln_hi;
        let step_end = t + d_t;
        if step_end >= run_ns {
            lines += d_lines * ((run_ns - t) / d_t).clamp(0.0, 1.0);
            bounded = false;
            break;
        }
        // A run longer than every step's end takes the same steps (`NaN` never compares).
        if step_end.is_nan() {
            bounded = false;
        } else if step_end > end {
            end = step_end;
        }
        lines += d_lines;
        t += d_t;
    }
    ((lines * per_line_ns, lines), bounded.then_some(end))
}

/// A task's last refill after turns ([`TurnHistory::walk`] and [`refill_after_turns`]) with
/// the bits it was computed from. A task that takes turns with the same others comes back
/// to the same history, after the same bytes of theirs, with the same operation: then the
/// walk and the integral are the ones it had, and are taken from here. A different run
/// length gives the same figures when it is longer than every step of the integral, which
/// is remembered too. Inputs are compared as bits, so a hit returns the same bits as the
/// computation it stands for.
#[derive(Clone, Debug, Default)]
pub struct RefillMemo {
    walk: Option<(WalkKey, TurnWalk)>,
    refill: Option<RefillEntry>,
}

/// What [`TurnHistory::walk`] reads.
#[derive(Clone, Copy, Debug)]
pub(super) struct WalkKey {
    runs: [(f64, f64); TURN_RUNS],
    len: usize,
    others: f64,
    llc_bytes: f64,
    footprint: f64,
}

/// What [`refill_after_turns`] reads besides the walk, the run's length, its result, and the
/// run length beyond which that result holds for any run (infinite when only for this one).
#[derive(Clone, Copy, Debug)]
pub(super) struct RefillEntry {
    key: [f64; 9],
    run_ns: f64,
    result: (f64, f64),
    end: f64,
}

/// The same bits.
pub(super) fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits()
}

impl WalkKey {
    /// The key of a walk of `turns` with these figures, compared in place (no key is built
    /// for a hit).
    fn matches(&self, turns: &TurnHistory, others: f64, llc_bytes: f64, footprint: f64) -> bool {
        same(self.others, others)
            && self.len == turns.len
            && same(self.llc_bytes, llc_bytes)
            && same(self.footprint, footprint)
            && self
                .runs
                .iter()
                .zip(&turns.runs)
                .all(|(a, b)| same(a.0, b.0) && same(a.1, b.1))
    }
}

impl RefillMemo {
    /// [`TurnHistory::walk`], the last one again if asked for the same bits. A new walk
    /// forgets the integral, which was for the old one.
    pub fn walk(
        &mut self,
        turns: &TurnHistory,
        others: f64,
        llc_bytes: f64,
        footprint: f64,
    ) -> &TurnWalk {
        let hit = self
            .walk
            .as_ref()
            .is_some_and(|(k, _)| k.matches(turns, others, llc_bytes, footprint));
        if !hit {
            let key = WalkKey {
                runs: turns.runs,
                len: turns.len,
                others,
                llc_bytes,
                footprint,
            };
            self.walk = Some((key, turns.walk(others, llc_bytes, footprint)));
            self.refill = None;
        }
        &self.walk.as_ref().expect("just made").1
    }

    /// [`refill_after_turns`] for the last [`RefillMemo::walk`], the last figures again if
    /// asked for the same bits and a run they hold for.
    pub fn refill(
        &mut self,
        op: &LinearOp,
        line_bytes: f64,
        per_line_ns: f64,
        op_ns: f64,
        run_ns: f64,
    ) -> (f64, f64) {
        let (wk, walk) = self.walk.as_ref().expect("a walk first");
        let key = [
            op.random_footprint,
            op.cached_bytes,
            op.random_lines,
            op.touched_lines,
            op.footprint,
            wk.llc_bytes,
            line_bytes,
            per_line_ns,
            op_ns,
        ];
        if let Some(e) = &self.refill
            && (run_ns > e.end || same(run_ns, e.run_ns))
            && e.key.iter().zip(&key).all(|(&a, &b)| same(a, b))
        {
            return e.result;
        }
        let (result, end) = refill_after_turns(
            op,
            walk,
            wk.llc_bytes,
            line_bytes,
            per_line_ns,
            op_ns,
            run_ns,
        );
        self.refill = Some(RefillEntry {
            key,
            run_ns,
            result,
            end: end.unwrap_or(f64::INFINITY),
        });
        result
    }
}
