//! What a task's share of the last-level cache holds of its own regions.
//!
//! The model reads the LLC as LRU (as for turns on a cache, docs/model/memory-and-cost.md), in Che's
//! approximation (Che, Tung and Wang, "Hierarchical Web caching systems: modeling, design and
//! experimental results", IEEE JSAC 20(7), 2002): a line stays a fixed characteristic time
//! `T` after its last use, and hits when its next use comes within `T`; `T` is where the lines
//! used within the last `T` fill the cache. Time is counted in the task's own operations, so
//! the share is the task's alone (tasks that share a cache split it equally, `rates.rs`):
//!
//! - a region read at random, `n` lines of which one operation touches `r`: each line is used
//!   at rate `r / n`, so it is resident, and hits, with probability `1 - exp(-r T / n)`;
//! - a stream, `n` lines that one operation advances through by `s` lines: `min(s T, n)` of its
//!   lines were used within `T`. They are never used again while cached, but each counts for
//!   `cpu.llc_stream_share` of a line: 1 in an LRU cache (or any cache that inserts a new line
//!   as most recently used: the classic machines'), less in one that inserts streamed lines
//!   where they leave first (scan resistance: Qureshi et al., "Adaptive insertion policies for
//!   high performance caching", ISCA 2007; in Intel's L3 since Ivy Bridge, H. Wong, 2013).
//!
//! `T` solves `sum_random n (1 - exp(-r T / n)) + share sum_stream min(s T, n) = C` for a
//! share of `C` lines. Streams still miss on every new line, as before (their lines come
//! back once per pass). Random regions alone reduce to the hit ratio `share / footprint` of
//! the model before streams counted (one region is taken in that closed form, to the bit).

use super::sets::{LinesPerSet, MAX_POINTS, SetMapping};
use crate::memory::Region;
use crate::program::{Access, OpCost, Pattern};

/// One region of an operation: its lines and the lines one operation touches of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RegionUse {
    pub lines: f64,
    pub per_op: f64,
}

impl RegionUse {
    /// The hit ratio of a region read at random, for a characteristic time `t`.
    pub fn random_hit(&self, t: f64) -> f64 {
        if self.lines <= 0.0 || t.is_infinite() {
            return 1.0;
        }
        -(-self.per_op * t / self.lines).exp_m1()
    }
}

/// The characteristic time of a cache of `cache_lines` over `random` and `streams`
/// (`f64::INFINITY` when what counts fits: every random line is resident). Newton's method
/// from `T = 0`: the occupancy is increasing and concave in `T`, so the iterates rise to the
/// root without passing it.
pub fn characteristic_time<R, S>(random: R, streams: S, stream_share: f64, cache_lines: f64) -> f64
where
    R: Iterator<Item = RegionUse> + Clone,
    S: Iterator<Item = RegionUse> + Clone,
{
    let live = |u: &RegionUse| u.lines > 0.0 && u.per_op > 0.0;
    let counted = random.clone().filter(live).map(|u| u.lines).sum::<f64>()
        + stream_share * streams.clone().filter(live).map(|u| u.lines).sum::<f64>();
    if counted <= cache_lines {
        return f64::INFINITY;
    }
    let mut t = 0.0f64;
    for _ in 0..200 {
        let (mut fill, mut slope) = (-cache_lines, 0.0);
        for u in random.clone().filter(live) {
            let rate = u.per_op / u.lines;
            fill -= u.lines * (-rate * t).exp_m1();
            slope += u.per_op * (-rate * t).exp();
        }
        for u in streams.clone().filter(live) {
            if u.per_op * t < u.lines {
                fill += stream_share * u.per_op * t;
                slope += stream_share * u.per_op;
            } else {
                fill += stream_share * u.lines;
            }
        }
        if fill >= 0.0 || slope <= 0.0 {
            break;
        }
        let step = -fill / slope;
        t += step;
        if step <= t * 1e-12 {
            break;
        }
    }
    t
}

/// How a share of the cache treats one operation's random regions.
#[derive(Clone, Debug, PartialEq)]
pub enum LruShare {
    /// One random region and no streams that count: this hit ratio, `share / footprint`.
    Uniform(f64),
    /// The characteristic time, in the task's operations (infinite: the random regions and
    /// what counts of the streams fit).
    Time(f64),
    /// A set-associative cache (`kernel::sets`): the characteristic time of a set holding
    /// `n` of the random lines, for the points of their spread over the sets, each with the
    /// share of the lines in such sets: `(share, time)`.
    Sets(Box<[(f64, f64); MAX_POINTS]>, usize),
}

/// The lines per operation that `op` touches of access `i`'s region with its pattern (a
/// random access touches whole lines, a stream advances by its bytes), and the region's lines.
fn region_use(op: &OpCost, regions: &[Region], i: usize, line: f64) -> RegionUse {
    let a = &op.accesses[i];
    let per_op = op
        .accesses
        .iter()
        .filter(|b| b.region == a.region && b.pattern == a.pattern)
        .map(|b| lines_per_op(b, line))
        .sum();
    RegionUse {
        lines: regions[a.region].bytes as f64 / line,
        per_op,
    }
}

/// Lines one access touches per operation: whole lines at random, its bytes in a stream.
pub(super) fn lines_per_op(a: &Access, line: f64) -> f64 {
    match a.pattern {
        Pattern::Random => (a.bytes / line).ceil(),
        Pattern::Stream => a.bytes / line,
    }
}

/// Whether access `i` is the first of `op`'s accesses to its region with its pattern (a
/// region counts once per pattern; a region read both ways counts as random only).
fn first_use(op: &OpCost, i: usize) -> bool {
    let a = &op.accesses[i];
    let earlier = |b: &Access| b.region == a.region && b.pattern == a.pattern;
    if op.accesses[..i].iter().any(earlier) {
        return false;
    }
    a.pattern == Pattern::Random
        || !op
            .accesses
            .iter()
            .any(|b| b.region == a.region && b.pattern == Pattern::Random)
}

/// Every region of `op` with `pattern`, once, with what one operation does to it.
fn uses<'a>(
    op: &'a OpCost,
    regions: &'a [Region],
    pattern: Pattern,
    line: f64,
) -> impl Iterator<Item = RegionUse> + Clone + 'a {
    (0..op.accesses.len())
        .filter(move |&i| op.accesses[i].pattern == pattern && first_use(op, i))
        .map(move |i| region_use(op, regions, i, line))
        .filter(|u| u.lines > 0.0 && u.per_op > 0.0)
}

impl LruShare {
    /// Solve for `op` over `regions` with `share` bytes of cache, `line` bytes per line and
    /// streamed lines counting for `stream_share`; in a fully associative cache when `sets`
    /// is `None`, else in one mapped by `sets` (`kernel::sets`).
    pub fn solve(
        op: &OpCost,
        regions: &[Region],
        share: f64,
        line: f64,
        stream_share: f64,
        sets: Option<SetMapping>,
    ) -> LruShare {
        let random = uses(op, regions, Pattern::Random, line);
        let streams = uses(op, regions, Pattern::Stream, line);
        let cache_lines = share / line;
        let streams_count = stream_share > 0.0 && streams.clone().next().is_some();
        let spread = sets.and_then(|m| {
            let lines: f64 = random.clone().map(|u| u.lines).sum();
            Some((m, LinesPerSet::of(lines, cache_lines, m)?, lines))
        });
        if !streams_count && random.clone().count() == 1 {
            if let Some((m, spread, _)) = spread {
                return LruShare::Uniform(spread.uniform_hit(m.ways));
            }
            if let Some(bytes) = random_region_bytes(op, regions) {
                return LruShare::Uniform((share / bytes).min(1.0));
            }
        }
        if let Some((m, spread, lines)) = spread {
            return Self::in_sets(
                random,
                streams,
                stream_share,
                cache_lines,
                m,
                &spread,
                lines,
            );
        }
        LruShare::Time(characteristic_time(
            random,
            streams,
            stream_share,
            cache_lines,
        ))
    }

    /// Che's approximation in each set: a set that drew `n` of the `lines` random lines holds
    /// `n / lines` of each random region (at the region's own rate per line), a `1 / sets`
    /// part of each stream, and `ways` lines.
    fn in_sets<R, S>(
        random: R,
        streams: S,
        stream_share: f64,
        cache_lines: f64,
        m: SetMapping,
        spread: &LinesPerSet,
        lines: f64,
    ) -> LruShare
    where
        R: Iterator<Item = RegionUse> + Clone,
        S: Iterator<Item = RegionUse> + Clone,
    {
        let ways = f64::from(m.ways.max(1));
        let sets = (cache_lines / ways).floor();
        let mut out = [(0.0, 0.0); MAX_POINTS];
        let points = spread.points();
        for (o, &(n, w)) in out.iter_mut().zip(points) {
            let part = n / lines;
            let in_set = random.clone().map(move |u| RegionUse {
                lines: u.lines * part,
                per_op: u.per_op * part,
            });
            let streamed = streams.clone().map(move |u| RegionUse {
                lines: u.lines / sets,
                per_op: u.per_op / sets,
            });
            *o = (w, characteristic_time(in_set, streamed, stream_share, ways));
        }
        LruShare::Sets(Box::new(out), points.len())
    }

    /// The hit ratio of access `i` of `op` (0 for a stream).
    pub fn hit(&self, op: &OpCost, regions: &[Region], i: usize, line: f64) -> f64 {
        match (self, op.accesses[i].pattern) {
            (_, Pattern::Stream) => 0.0,
            (LruShare::Uniform(h), Pattern::Random) => *h,
            (LruShare::Time(t), Pattern::Random) => region_use(op, regions, i, line).random_hit(*t),
            (LruShare::Sets(points, len), Pattern::Random) => {
                let u = region_use(op, regions, i, line);
                points[..*len]
                    .iter()
                    .map(|&(w, t)| w * u.random_hit(t))
                    .sum()
            }
        }
    }

    /// Bytes of `op`'s random regions that the share holds.
    pub fn random_bytes_held(&self, op: &OpCost, regions: &[Region], line: f64) -> f64 {
        let mut held = 0.0;
        for (i, a) in op.accesses.iter().enumerate() {
            if a.pattern == Pattern::Random && first_use(op, i) {
                held += self.hit(op, regions, i, line) * regions[a.region].bytes as f64;
            }
        }
        held
    }
}

/// The bytes of `op`'s random regions, each once, as the regions state them (the closed form
/// divides by these, not by lines times the line size); `None` when there are none.
fn random_region_bytes(op: &OpCost, regions: &[Region]) -> Option<f64> {
    let mut bytes = None;
    for (i, a) in op.accesses.iter().enumerate() {
        if a.pattern == Pattern::Random && first_use(op, i) {
            *bytes.get_or_insert(0.0) += regions[a.region].bytes as f64;
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemPolicy;

    fn u(lines: f64, per_op: f64) -> RegionUse {
        RegionUse { lines, per_op }
    }

    /// The hit ratio of random region `target` beside `streams`.
    fn hit_beside(
        target: RegionUse,
        others: &[RegionUse],
        streams: &[RegionUse],
        share: f64,
        cache: f64,
    ) -> f64 {
        let random = std::iter::once(target).chain(others.iter().copied());
        target.random_hit(characteristic_time(
            random,
            streams.iter().copied(),
            share,
            cache,
        ))
    }
    use crate::program::Access;

    const LINE: f64 = 64.0;

    fn region(bytes: u64) -> Region {
        Region::new("r", bytes, MemPolicy::FirstTouch, 2 << 20, 1)
    }

    fn access(region: usize, pattern: Pattern, bytes: f64) -> Access {
        Access {
            region,
            pattern,
            bytes,
            write: false,
            contended: 0.0,
        }
    }

    /// numa_test's `randupdt` at PROBLEMSIZE 10^6: streams of `ix` (4 B) and `b` (8 B), a
    /// random update of `a` (8 B).
    fn randupdt() -> (OpCost, Vec<Region>) {
        let op = OpCost {
            cycles: 10.0,
            accesses: vec![
                access(2, Pattern::Stream, 4.0),
                access(1, Pattern::Stream, 8.0),
                access(0, Pattern::Random, 8.0),
            ],
        };
        (
            op,
            vec![region(8_000_000), region(8_000_000), region(4_000_000)],
        )
    }

    #[test]
    fn a_random_region_alone_keeps_the_share_over_its_footprint() {
        let op = OpCost {
            cycles: 0.0,
            accesses: vec![access(0, Pattern::Random, 8.0)],
        };
        let r = vec![region(8 << 20)];
        let lru = LruShare::solve(&op, &r, (2 << 20) as f64, LINE, 1.0, None);
        assert_eq!(lru, LruShare::Uniform(0.25));
        assert_eq!(lru.random_bytes_held(&op, &r, LINE), (2 << 20) as f64);
    }

    #[test]
    fn two_random_regions_of_one_density_split_the_share_as_one() {
        let op = OpCost {
            cycles: 0.0,
            accesses: vec![
                access(0, Pattern::Random, 8.0),
                access(1, Pattern::Random, 8.0),
            ],
        };
        let r = vec![region(4 << 20), region(4 << 20)];
        let lru = LruShare::solve(&op, &r, (2 << 20) as f64, LINE, 1.0, None);
        for i in 0..2 {
            assert!((lru.hit(&op, &r, i, LINE) - 0.25).abs() < 1e-9);
        }
    }

    #[test]
    fn streams_push_the_random_array_out_of_a_share_that_holds_it() {
        let (op, r) = randupdt();
        // 8 MiB holds the 7.6 MiB array, but the 12 MB of streams per pass take their part.
        let lru = LruShare::solve(&op, &r, (8 << 20) as f64, LINE, 1.0, None);
        let hit = lru.hit(&op, &r, 2, LINE);
        assert!(hit > 0.70 && hit < 0.85, "hit {hit}");
        assert_eq!(lru.hit(&op, &r, 0, LINE), 0.0);
        // With 16 MiB the streams leave the array almost whole.
        let big = LruShare::solve(&op, &r, (16 << 20) as f64, LINE, 1.0, None);
        let hit = big.hit(&op, &r, 2, LINE);
        assert!(hit > 0.99 && hit < 1.0, "hit {hit}");
    }

    #[test]
    fn a_share_that_holds_every_region_keeps_the_array_and_streams_still_miss() {
        let (op, r) = randupdt();
        let lru = LruShare::solve(&op, &r, (32 << 20) as f64, LINE, 1.0, None);
        assert_eq!(lru, LruShare::Time(f64::INFINITY));
        assert_eq!(lru.hit(&op, &r, 2, LINE), 1.0);
        assert_eq!(lru.hit(&op, &r, 0, LINE), 0.0);
    }

    #[test]
    fn sets_cost_hits_near_the_knee_and_hardly_far_above_it() {
        let (op, r) = randupdt();
        let four = Some(SetMapping {
            ways: 4,
            page_lines: 256.0,
        });
        let hit = |share: f64, sets| {
            LruShare::solve(&op, &r, share, LINE, 1.0, sets).hit(&op, &r, 2, LINE)
        };
        // 16 MiB holds the array beside its streams when fully associative; in 4-way sets the
        // sets that drew more of its lines lose some.
        let (fully, in_sets) = (hit((16 << 20) as f64, None), hit((16 << 20) as f64, four));
        assert!(fully > 0.99 && in_sets < fully - 0.01, "{fully} {in_sets}");
        // At a quarter of the array both miss most of it, within a few points.
        let (fully, in_sets) = (hit((2 << 20) as f64, None), hit((2 << 20) as f64, four));
        assert!(
            in_sets < fully && fully - in_sets < 0.03,
            "{fully} {in_sets}"
        );
        // Without streams that count, one random region takes the closed form over the sets.
        let lone = LruShare::solve(&op, &r, (8 << 20) as f64, LINE, 0.0, four);
        assert!(
            matches!(lone, LruShare::Uniform(h) if h > 0.8 && h < 1.0),
            "{lone:?}"
        );
    }

    #[test]
    fn the_characteristic_time_fills_the_share_exactly() {
        let (op, r) = randupdt();
        let share = (4 << 20) as f64;
        let LruShare::Time(t) = LruShare::solve(&op, &r, share, LINE, 1.0, None) else {
            panic!("expected a characteristic time");
        };
        let random = 125_000.0 * -(-t / 125_000.0f64).exp_m1();
        let streams = (12.0 / LINE) * t;
        let lines = share / LINE;
        assert!(((random + streams) - lines).abs() < 1e-6 * lines);
    }

    #[test]
    fn random_data_alone_hits_in_proportion_to_the_cache() {
        let h = hit_beside(u(1000.0, 1.0), &[], &[], 1.0, 250.0);
        assert!((h - 0.25).abs() < 1e-9, "{h}");
    }

    #[test]
    fn what_fits_always_hits() {
        let one = || std::iter::once(u(100.0, 1.0));
        assert_eq!(characteristic_time(one(), one(), 1.0, 200.0), f64::INFINITY);
        assert_eq!(
            hit_beside(u(100.0, 1.0), &[], &[u(1e6, 1.0)], 0.0, 200.0),
            1.0
        );
    }

    #[test]
    fn streams_push_random_data_out_only_as_far_as_they_count() {
        // numa_test's randupdt in a cache that holds its array: 125,000 lines at random,
        // 12 bytes of streams per update (187,500 lines per pass), a 131,072-line cache.
        let array = u(125_000.0, 1.0);
        let streams = [u(62_500.0, 4.0 / 64.0), u(125_000.0, 8.0 / 64.0)];
        let lru = hit_beside(array, &[], &streams, 1.0, 131_072.0);
        let half = hit_beside(array, &[], &streams, 0.5, 131_072.0);
        let none = hit_beside(array, &[], &streams, 0.0, 131_072.0);
        assert!(lru > 0.70 && lru < 0.80, "{lru}");
        assert!(half > lru && half < none, "{half}");
        assert_eq!(none, 1.0);
    }

    #[test]
    fn the_characteristic_time_fills_the_cache() {
        let random = [u(125_000.0, 1.0)];
        let streams = [u(187_500.0, 12.0 / 64.0)];
        let t = characteristic_time(random.into_iter(), streams.into_iter(), 1.0, 65_536.0);
        let fill = 125_000.0 * -(-t / 125_000.0f64).exp_m1() + 12.0 / 64.0 * t;
        assert!((fill - 65_536.0).abs() < 1e-6 * 65_536.0, "{fill}");
    }
}
