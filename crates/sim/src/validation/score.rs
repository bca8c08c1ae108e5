//! Scoring: what the model got right about each comparison and each figure.
//!
//! A comparison is a configuration against its case's first (baseline) configuration. Its
//! effect is `figure / baseline figure - 1`, published and simulated. The direction agrees
//! when both effects have the same sign, or when both are inside the no-effect band
//! ([`NO_EFFECT`]: a change too small for the sources' own noise to call either way). The
//! effect ratio is simulated over published effect; an effect is "within k x" when the ratio
//! lies in `[1/k, k]` (both inside the no-effect band counts as within any factor). Absolute
//! figures are scored by their relative error, only for cases run at the source's size.

use super::run::CaseResult;
use serde::Serialize;

/// Effects smaller than this (2%) in magnitude count as "no effect".
pub const NO_EFFECT: f64 = 0.02;

/// One configuration against its case's baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub case: String,
    pub config: String,
    pub baseline: String,
    pub published_effect: f64,
    /// `None` when either run failed.
    pub simulated_effect: Option<f64>,
    pub agrees: bool,
    /// Simulated over published effect (`None` when the published effect is zero or a run
    /// failed).
    pub ratio: Option<f64>,
    pub within_2x: bool,
    pub within_1_3x: bool,
}

/// The whole run in a few numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub cases: usize,
    pub comparisons: usize,
    /// Share (0..1) of comparisons whose direction agrees.
    pub direction_agrees: f64,
    pub within_2x: f64,
    pub within_1_3x: f64,
    /// Absolute figures scored (cases run at the source's size).
    pub absolute_figures: usize,
    /// Median of |simulated - published| / published over them (`None` if there are none).
    pub median_abs_error: Option<f64>,
    /// Runs that failed.
    pub failed_runs: usize,
}

/// `other / base - 1`.
pub fn effect(base: f64, other: f64) -> f64 {
    other / base - 1.0
}

/// Whether two effects point the same way: both outside the no-effect band with one sign, or
/// both inside it.
pub fn agrees(published: f64, simulated: f64) -> bool {
    let quiet = |e: f64| e.abs() < NO_EFFECT;
    match (quiet(published), quiet(simulated)) {
        (true, true) => true,
        (false, false) => published.signum() == simulated.signum(),
        _ => false,
    }
}

/// Whether the simulated effect is within a factor `k` of the published one.
pub fn within(published: f64, simulated: f64, k: f64) -> bool {
    if published.abs() < NO_EFFECT && simulated.abs() < NO_EFFECT {
        return true;
    }
    if published == 0.0 {
        return false;
    }
    let r = simulated / published;
    r >= 1.0 / k && r <= k
}

/// The median of `v` (`None` when empty); NaNs sort last.
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// Every comparison of `results`, in order.
pub fn comparisons(results: &[CaseResult]) -> Vec<Comparison> {
    let mut out = Vec::new();
    for r in results {
        let Some(base) = r.configs.first() else {
            continue;
        };
        for c in &r.configs[1..] {
            let published_effect = effect(base.published, c.published);
            let simulated_effect = match (&base.simulated, &c.simulated) {
                (Ok(b), Ok(o)) => Some(effect(*b, *o)),
                _ => None,
            };
            let (agrees, ratio, w2, w13) = match simulated_effect {
                Some(s) => (
                    agrees(published_effect, s),
                    (published_effect != 0.0).then(|| s / published_effect),
                    within(published_effect, s, 2.0),
                    within(published_effect, s, 1.3),
                ),
                None => (false, None, false, false),
            };
            out.push(Comparison {
                case: r.case.name.clone(),
                config: c.name.clone(),
                baseline: base.name.clone(),
                published_effect,
                simulated_effect,
                agrees,
                ratio,
                within_2x: w2,
                within_1_3x: w13,
            });
        }
    }
    out
}

/// Relative errors of the absolute figures of the cases run at the source's size.
pub fn absolute_errors(results: &[CaseResult]) -> Vec<f64> {
    results
        .iter()
        .filter(|r| r.case.absolute)
        .flat_map(|r| r.configs.iter())
        .filter_map(|c| {
            c.simulated
                .as_ref()
                .ok()
                .map(|s| (s - c.published).abs() / c.published)
        })
        .collect()
}

/// The summary of `results` with their `comparisons`.
pub fn summarise(results: &[CaseResult], comparisons: &[Comparison]) -> Summary {
    let n = comparisons.len();
    let share = |f: &dyn Fn(&Comparison) -> bool| {
        if n == 0 {
            0.0
        } else {
            comparisons.iter().filter(|c| f(c)).count() as f64 / n as f64
        }
    };
    let errs = absolute_errors(results);
    Summary {
        cases: results.len(),
        comparisons: n,
        direction_agrees: share(&|c| c.agrees),
        within_2x: share(&|c| c.within_2x),
        within_1_3x: share(&|c| c.within_1_3x),
        absolute_figures: errs.len(),
        median_abs_error: median(&errs),
        failed_runs: results
            .iter()
            .flat_map(|r| r.configs.iter())
            .filter(|c| c.simulated.is_err())
            .count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::case::Case;
    use crate::validation::run::{CaseResult, ConfigResult};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn effects_signs_and_ratios() {
        assert!(close(effect(100.0, 80.0), -0.2));
        assert!(close(effect(50.0, 75.0), 0.5));
        // Same sign outside the band agrees; opposite signs do not.
        assert!(agrees(-0.2, -0.05));
        assert!(!agrees(-0.2, 0.05));
        // Inside the band on both sides agrees; one side only does not.
        assert!(agrees(0.01, -0.015));
        assert!(!agrees(0.01, 0.3));
        assert!(!agrees(-0.2, -0.01));
        // Within k x: the ratio of effects in [1/k, k].
        assert!(within(-0.2, -0.35, 2.0));
        assert!(!within(-0.2, -0.35, 1.3));
        assert!(within(-0.2, -0.25, 1.3));
        assert!(!within(-0.2, -0.5, 2.0));
        assert!(!within(-0.2, 0.2, 2.0));
        assert!(within(0.005, -0.01, 1.3));
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    fn result(name: &str, absolute: bool, figures: &[(f64, Result<f64, String>)]) -> CaseResult {
        let mut text = format!(
            "title = \"t\"\nmachine = \"xeon2s\"\nworkload = \"numa01\"\nmetric = \"elapsed\"\nunit = \"s\"\nabsolute = {absolute}\nassumptions = []\n[source]\ntitle = \"s\"\nauthor = \"a\"\ndate = \"d\"\nurl = \"u\"\n"
        );
        for (i, (p, _)) in figures.iter().enumerate() {
            text += &format!("[[config]]\nname = \"c{i}\"\nsched = \"linux\"\npublished = {p:?}\n");
        }
        let case = Case::parse(&text, "v.toml", name).unwrap();
        CaseResult {
            case,
            configs: figures
                .iter()
                .enumerate()
                .map(|(i, (p, s))| ConfigResult {
                    name: format!("c{i}"),
                    published: *p,
                    spread: None,
                    simulated: s.clone(),
                })
                .collect(),
        }
    }

    #[test]
    fn summary_of_hand_made_results() {
        let results = vec![
            // Published -20% and -40%; simulated -30% (ratio 1.5) and +10% (wrong way).
            result(
                "a",
                true,
                &[(100.0, Ok(110.0)), (80.0, Ok(77.0)), (60.0, Ok(121.0))],
            ),
            // Published +50%, simulated +55% (ratio 1.1); not at the source's size.
            result("b", false, &[(10.0, Ok(1.0)), (15.0, Ok(1.55))]),
            // A failed run: its comparison counts as a miss.
            result("c", true, &[(1.0, Ok(1.0)), (2.0, Err("boom".into()))]),
        ];
        let comps = comparisons(&results);
        assert_eq!(comps.len(), 4);
        assert!(comps[0].agrees && comps[0].within_2x && !comps[0].within_1_3x);
        assert!(close(comps[0].ratio.unwrap(), 1.5));
        assert!(!comps[1].agrees && !comps[1].within_2x);
        assert!(comps[2].agrees && comps[2].within_1_3x);
        assert!(!comps[3].agrees && comps[3].simulated_effect.is_none());
        let s = summarise(&results, &comps);
        assert_eq!((s.cases, s.comparisons, s.failed_runs), (3, 4, 1));
        assert!(close(s.direction_agrees, 0.5));
        assert!(close(s.within_2x, 0.5));
        assert!(close(s.within_1_3x, 0.25));
        // Absolute errors of a and c only: 10%, 3.75%, 101.67%, 0% -> median 6.875%.
        assert_eq!(s.absolute_figures, 4);
        assert!(close(s.median_abs_error.unwrap(), (0.1 + 0.0375) / 2.0));
    }
}
