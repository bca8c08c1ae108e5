//! A set-associative last-level cache: how many of a task's random lines land in each set.
//!
//! A cache of `C` lines and `k` ways has `S = C / k` sets; a line's set comes from its physical
//! address. Pages are placed in physical memory in no order the program controls, so a page
//! lands on one of the cache's *colours* (`S` lines of one way over the lines of a page) as if
//! at random, and puts one line in each set of that colour. A region of `P` pages therefore
//! puts `n` of its lines in a given set, `n` binomial over `P` pages with chance one over the
//! colours (mean `R / S` for `R` lines); with one colour or fewer (a way no larger than a page)
//! every set gets the same count. A set holds at most `k` lines: random accesses over `n > k`
//! lines of a set hit `k / n` of the time whatever the replacement (uniform independent
//! references), and with streams beside them the set is an LRU cache of `k` lines in Che's
//! approximation (`kernel::lru`). The fully associative model is the limit of many ways.
//!
//! What this changes is the knee: an array slightly smaller than the cache share misses in the
//! sets that drew more than `k` of its lines (about 8% of updates at 95% of a 16-way share),
//! where the fully associative model hits every time.

/// How a cache maps lines to sets: its ways and the lines of a page.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SetMapping {
    pub ways: u32,
    pub page_lines: f64,
}

/// Points of a distribution of lines per set kept for the general case ([`LinesPerSet`]).
pub const MAX_POINTS: usize = 48;

/// Above this mean of lines per set the binomial's sum is not taken (its first term would
/// underflow); the region is then tens of times the cache, where the sets' spread no longer
/// matters and the fully associative figure is used.
const MAX_MEAN: f64 = 400.0;

/// The distribution of a region's lines per set, weighted by lines: `points[i] = (n, w)`, `w`
/// the share of the region's lines that sit in a set holding `n` of them (the weights add up to
/// 1). `n` is a whole number, or a weighted mean of neighbouring whole numbers when the
/// distribution is wider than [`MAX_POINTS`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinesPerSet {
    points: [(f64, f64); MAX_POINTS],
    len: usize,
}

impl LinesPerSet {
    /// The distribution for `lines` random lines in a share of `cache_lines` lines mapped by
    /// `m`; `None` when the share has fewer lines than one set, or the spread does not matter
    /// (more than [`MAX_MEAN`] lines per set on average).
    pub fn of(lines: f64, cache_lines: f64, m: SetMapping) -> Option<LinesPerSet> {
        let ways = f64::from(m.ways.max(1));
        let sets = (cache_lines / ways).floor();
        if !(sets >= 1.0 && lines > 0.0) {
            return None;
        }
        let mean = lines / sets;
        if mean > MAX_MEAN {
            return None;
        }
        let colours = sets / m.page_lines.max(1.0);
        let mut out = LinesPerSet {
            points: [(0.0, 0.0); MAX_POINTS],
            len: 0,
        };
        if colours <= 1.0 {
            out.points[0] = (mean, 1.0);
            out.len = 1;
            return Some(out);
        }
        let pages = (lines / m.page_lines.max(1.0)).max(1.0);
        let p = 1.0 / colours;
        let span = mean + 12.0 * mean.sqrt() + 30.0;
        let bins = span.ceil().min(MAX_POINTS as f64);
        let width = span / bins;
        // The binomial over pages, by its recurrence from 0; each term's lines weigh `n` (a
        // set with n lines holds n of the region's lines).
        let mut pmf = (pages * (-p).ln_1p()).exp();
        let mut n = 0.0;
        let (mut sum_w, mut bin, mut bin_w, mut bin_nw) = (0.0, 0usize, 0.0, 0.0);
        while n <= span && n <= pages {
            let b = ((n / width) as usize).min(MAX_POINTS - 1);
            if b != bin {
                out.push(bin_nw, bin_w);
                (bin, bin_w, bin_nw) = (b, 0.0, 0.0);
            }
            let w = pmf * n;
            bin_w += w;
            bin_nw += w * n;
            sum_w += w;
            pmf *= (pages - n) / (n + 1.0) * p / (1.0 - p);
            n += 1.0;
        }
        out.push(bin_nw, bin_w);
        if sum_w <= 0.0 {
            return None;
        }
        for pt in &mut out.points[..out.len] {
            pt.1 /= sum_w;
        }
        Some(out)
    }

    fn push(&mut self, nw: f64, w: f64) {
        if w > 0.0 && self.len < MAX_POINTS {
            self.points[self.len] = (nw / w, w);
            self.len += 1;
        }
    }

    /// The points `(n, w)`.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points[..self.len]
    }

    /// The hit ratio of uniform random accesses over the region's lines in sets of `ways`:
    /// a set of `n` lines holds `min(n, ways)` of them.
    pub fn uniform_hit(&self, ways: u32) -> f64 {
        let k = f64::from(ways.max(1));
        self.points()
            .iter()
            .map(|&(n, w)| w * if n > k { k / n } else { 1.0 })
            .sum::<f64>()
            .min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn mapping(ways: u32, page_lines: f64) -> SetMapping {
        SetMapping { ways, page_lines }
    }

    /// A placement: for each page of `lines` lines, a colour drawn at random among the
    /// cache's `sets / page_lines` colours.
    fn place(lines: usize, sets: usize, page_lines: usize, rng: &mut ChaCha8Rng) -> Vec<usize> {
        let colours = (sets / page_lines).max(1);
        (0..lines.div_ceil(page_lines))
            .map(|_| rng.gen_range(0..colours))
            .collect()
    }

    fn set_of(colour: &[usize], page_lines: usize, sets: usize, line: usize) -> usize {
        (colour[line / page_lines] * page_lines + line % page_lines) % sets
    }

    /// Of `lines` lines placed by `colour`, those a cache of `ways` per set can hold.
    fn held(colour: &[usize], lines: usize, sets: usize, ways: usize, page_lines: usize) -> f64 {
        let mut per_set = vec![0usize; sets];
        for line in 0..lines {
            per_set[set_of(colour, page_lines, sets, line)] += 1;
        }
        per_set.iter().map(|&n| n.min(ways)).sum::<usize>() as f64 / lines as f64
    }

    #[test]
    fn an_exact_lru_set_holds_its_ways_of_the_lines_it_drew() {
        // Uniform random reads through an exact set-associative LRU cache hit, per set, its ways
        // over the lines that set drew: the law the model averages over placements.
        let (sets, page_lines) = (256, 16);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (ways, fill) in [(16, 0.95), (4, 1.5), (1, 1.0)] {
            let lines = ((sets * ways) as f64 * fill) as usize;
            let colour = place(lines, sets, page_lines, &mut rng);
            let mut cache: Vec<Vec<usize>> = vec![Vec::with_capacity(ways); sets];
            let (reads, mut hits) = (16 * lines, 0usize);
            for i in 0..reads {
                let line = rng.gen_range(0..lines);
                let set = &mut cache[set_of(&colour, page_lines, sets, line)];
                let hit = match set.iter().position(|&l| l == line) {
                    Some(pos) => {
                        set.remove(pos);
                        true
                    }
                    None => {
                        if set.len() == ways {
                            set.remove(0);
                        }
                        false
                    }
                };
                set.push(line);
                hits += usize::from(hit && i >= reads / 2);
            }
            let exact = hits as f64 / (reads - reads / 2) as f64;
            let law = held(&colour, lines, sets, ways, page_lines);
            assert!(
                (exact - law).abs() < 0.015,
                "{ways} ways at {fill}: exact {exact:.4}, ways over lines {law:.4}"
            );
        }
    }

    #[test]
    fn the_sets_spread_is_the_mean_over_random_placements() {
        // 1,024 sets, pages of 16 lines (64 colours); arrays from half the cache to twice it.
        let (sets, page_lines) = (1024, 16);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for (ways, fill) in [
            (16, 0.5),
            (16, 0.95),
            (16, 1.5),
            (4, 0.9),
            (4, 2.0),
            (1, 1.0),
        ] {
            let cache = (sets * ways) as f64;
            let lines = (cache * fill) as usize;
            let model = LinesPerSet::of(lines as f64, cache, mapping(ways as u32, 16.0))
                .expect("a spread")
                .uniform_hit(ways as u32);
            let draws = 200;
            let mean = (0..draws)
                .map(|_| {
                    held(
                        &place(lines, sets, page_lines, &mut rng),
                        lines,
                        sets,
                        ways,
                        16,
                    )
                })
                .sum::<f64>()
                / f64::from(draws);
            let fully = (cache / lines as f64).min(1.0);
            assert!(
                (model - mean).abs() < 0.005,
                "{ways} ways at {fill}: model {model:.4}, placements {mean:.4}, \
                 fully associative {fully:.4}"
            );
        }
    }

    #[test]
    fn near_the_knee_the_sets_miss_where_a_fully_associative_cache_hits() {
        let m = LinesPerSet::of(0.95 * 16384.0, 16384.0, mapping(16, 64.0)).expect("spread");
        let h = m.uniform_hit(16);
        assert!(h > 0.90 && h < 0.95, "{h}");
        // Direct-mapped at the cache's size: 1 - 1/e of the lines find their set to themselves.
        let d = LinesPerSet::of(16384.0, 16384.0, mapping(1, 64.0)).expect("spread");
        let h = d.uniform_hit(1);
        assert!((h - (1.0 - (-1.0f64).exp())).abs() < 0.01, "{h}");
    }

    #[test]
    fn a_way_no_larger_than_a_page_spreads_lines_evenly() {
        // 64 sets of 16 ways, pages of 64 lines: one colour, every set gets lines / 64.
        let m = LinesPerSet::of(1000.0, 1024.0, mapping(16, 64.0)).expect("spread");
        assert_eq!(m.points(), &[(1000.0 / 64.0, 1.0)]);
        assert_eq!(m.uniform_hit(16), 1.0);
    }

    #[test]
    fn the_weights_add_up_to_one() {
        for (lines, cache) in [(1e5, 2e5), (2e6, 1e5), (1e7, 2.6e4)] {
            let Some(m) = LinesPerSet::of(lines, cache, mapping(12, 64.0)) else {
                assert!(lines / (cache / 12.0) > MAX_MEAN);
                continue;
            };
            let w: f64 = m.points().iter().map(|p| p.1).sum();
            assert!((w - 1.0).abs() < 1e-9, "{w}");
            assert!(m.points().len() <= MAX_POINTS);
        }
    }
}
