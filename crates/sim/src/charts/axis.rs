//! The value axis: its range, chosen so the differences between the values show, and the
//! text of its ticks.

/// The range of a value axis and where bars start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValueAxis {
    pub lo: f64,
    pub hi: f64,
}

/// An axis starts above 0 when every value is positive and the values differ by less than
/// this share of the largest: from 0, such differences would be a sliver of each bar.
const ZOOM_BELOW: f64 = 0.4;

impl ValueAxis {
    /// A round range holding every finite value of `values`; it starts at 0 unless the
    /// values span a small range far from it ([`ZOOM_BELOW`]).
    pub fn fit(values: impl Iterator<Item = f64>) -> ValueAxis {
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite()) {
            min = min.min(v);
            max = max.max(v);
        }
        if min > max {
            return ValueAxis { lo: 0.0, hi: 1.0 };
        }
        let span = max - min;
        if min > 0.0 && span > 0.0 && span < ZOOM_BELOW * max {
            let step = nice_step((max - min) * 1.25 / 5.0);
            let lo = ((min - 0.15 * span) / step).floor() * step;
            let hi = (max / step).ceil() * step;
            return ValueAxis {
                lo: lo.max(0.0),
                hi: if hi > max { hi } else { hi + step },
            };
        }
        let (lo, hi) = (min.min(0.0), max.max(0.0));
        if hi == lo {
            return ValueAxis { lo, hi: lo + 1.0 };
        }
        let step = nice_step((hi - lo) / 5.0);
        ValueAxis {
            lo: (lo / step).floor() * step,
            hi: (hi / step).ceil() * step,
        }
    }

    /// Where a bar starts: at 0 when the axis holds it, else at the axis's start.
    pub fn base(&self) -> f64 {
        0.0f64.clamp(self.lo, self.hi)
    }

    /// The axis's description: `label`, and where it starts when that is not 0.
    pub fn describe(&self, label: &str) -> String {
        if self.lo > 0.0 {
            format!("{label} (axis starts at {}, not 0)", tick(self.lo))
        } else {
            label.to_string()
        }
    }
}

/// The smallest of 1, 2, 5 times a power of ten that is at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-12))
        .unwrap_or(10.0 * mag)
}

/// A tick label: whole numbers without decimals, others with at most two.
pub fn tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{:.0}", v.round())
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A value written beside its bar on an axis that spans `span`: with two decimals on an axis
/// of less than 10, one below 100, none above, so close values stay apart.
pub fn value(v: f64, span: f64) -> String {
    let decimals = if span > 0.0 {
        (2.0 - span.log10().floor()).clamp(0.0, 2.0) as usize
    } else {
        2
    };
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_values() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(16.0), "16");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(0.001), "0");
        assert_eq!(tick(1.999), "2");
        assert_eq!(value(117.02, 150.0), "117");
        assert_eq!(value(21.96, 50.0), "22.0");
        assert_eq!(value(9.524, 5.0), "9.52");
        assert_eq!(value(105.5, 8.0), "105.50");
    }

    #[test]
    fn an_axis_starts_at_zero_unless_the_values_are_close_together() {
        assert_eq!(
            ValueAxis::fit([0.0, 43.0].into_iter()),
            ValueAxis { lo: 0.0, hi: 50.0 }
        );
        assert_eq!(
            ValueAxis::fit(std::iter::empty()),
            ValueAxis { lo: 0.0, hi: 1.0 }
        );
        assert_eq!(
            ValueAxis::fit([3.0, 3.0].into_iter()),
            ValueAxis { lo: 0.0, hi: 3.0 }
        );
        // Values of 95 to 100: from 0 a 5% effect is a sliver; the axis starts near them.
        let z = ValueAxis::fit([95.0, 97.5, 100.0].into_iter());
        assert!(
            z.lo > 80.0 && z.lo < 95.0 && z.hi > 100.0 && z.hi <= 105.0,
            "{z:?}"
        );
        assert_eq!(z.base(), z.lo);
        assert!(
            z.describe("seconds").contains("not 0"),
            "{}",
            z.describe("s")
        );
        // Values half the largest apart: from 0.
        assert_eq!(ValueAxis::fit([50.0, 100.0].into_iter()).lo, 0.0);
        // Negative values: the axis holds them and bars start at 0.
        let n = ValueAxis::fit([-3.0, 8.0].into_iter());
        assert!(n.lo <= -3.0 && n.hi >= 8.0 && n.base() == 0.0, "{n:?}");
        assert_eq!(n.describe("%"), "%");
    }
}
