//! Division of `u64` by a divisor fixed in advance (the tick, a pool's size), by a multiply
//! and shifts instead of the processor's divide: exact for every dividend (Granlund and
//! Montgomery, "Division by invariant integers using multiplication", 1994, figure 4.1).

/// A divisor `d >= 1` with its reciprocal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    d: u64,
    /// `floor(2^64 * (2^l - d) / d) + 1` with `l = ceil(log2 d)`; 0 for a power of two.
    m: u64,
    /// `l - 1`, or `log2 d` for a power of two.
    shift: u32,
}

impl Divisor {
    /// The divisor `d` (0 is taken as 1, as the `max(1)` of the divisions it replaces).
    pub fn new(d: u64) -> Self {
        let d = d.max(1);
        if d.is_power_of_two() {
            return Divisor {
                d,
                m: 0,
                shift: d.trailing_zeros(),
            };
        }
        // 2^(l-1) < d < 2^l, l >= 2.
        let l = 64 - (d - 1).leading_zeros();
        // 2^64 * (2^l - d) < 2^(63 + l) <= 2^127: no overflow.
        let m = ((1u128 << 64) * ((1u128 << l) - u128::from(d)) / u128::from(d) + 1) as u64;
        Divisor { d, m, shift: l - 1 }
    }

    pub fn get(self) -> u64 {
        self.d
    }

    /// `n / d`.
    #[inline]
    pub fn divide(self, n: u64) -> u64 {
        if self.m == 0 {
            return n >> self.shift;
        }
        let t = ((u128::from(self.m) * u128::from(n)) >> 64) as u64;
        (t + ((n - t) >> 1)) >> self.shift
    }

    /// `n.div_ceil(d)`.
    #[inline]
    pub fn divide_ceil(self, n: u64) -> u64 {
        let q = self.divide(n);
        q + u64::from(q * self.d != n)
    }
}

#[cfg(test)]
mod tests {
    use super::Divisor;

    #[test]
    fn exact_for_every_kind_of_dividend() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut divisors: Vec<u64> = (1..=1000).collect();
        divisors.extend([
            1_000_000,
            976_562,
            999_999_937,
            1 << 32,
            (1 << 32) + 1,
            u64::MAX / 3,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ]);
        for _ in 0..200 {
            let r = next();
            divisors.push((r >> (r % 64)).max(1));
        }
        for &d in &divisors {
            let dv = Divisor::new(d);
            let mut ns = vec![0, 1, 2, d - 1, d, d.wrapping_add(1), u64::MAX, u64::MAX - 1];
            for k in [2, 3, 1000, u64::MAX / d] {
                let m = d.saturating_mul(k);
                ns.extend([m.saturating_sub(1), m, m.saturating_add(1)]);
            }
            for _ in 0..200 {
                let r = next();
                ns.extend([r, r >> (r % 64), r % (d.saturating_mul(1000))]);
            }
            for n in ns {
                assert_eq!(dv.divide(n), n / d, "{n} / {d}");
                assert_eq!(dv.divide_ceil(n), n.div_ceil(d), "{n} div_ceil {d}");
            }
        }
        assert_eq!(Divisor::new(0).divide(7), 7);
    }
}
