//! The validation report: one table of every configuration and comparison, the summary line,
//! a JSON document and the scatter plot of simulated against published effects.

use super::run::CaseResult;
use super::score::{Comparison, Summary};
use crate::charts::{ChartError, Series, scatter_chart};
use serde::Serialize;
use std::fmt::Write as _;

/// Effects beyond this magnitude (percent) are drawn at the plot's edge.
pub const PLOT_LIMIT_PCT: f64 = 150.0;

/// A figure with up to four significant digits.
fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

fn pct(v: f64) -> String {
    format!("{:+.1}%", 100.0 * v)
}

/// The table: per configuration the published and simulated figures and the error; per
/// comparison (every configuration after a case's first) the effects, whether the direction
/// agrees and the effect ratio.
pub fn table(results: &[CaseResult], comparisons: &[Comparison]) -> String {
    let head = [
        "case",
        "configuration",
        "published",
        "simulated",
        "error",
        "pub effect",
        "sim effect",
        "dir",
        "ratio",
    ];
    let mut rows: Vec<[String; 9]> = Vec::new();
    let mut comps = comparisons.iter();
    for r in results {
        let unit = &r.case.unit;
        for (i, c) in r.configs.iter().enumerate() {
            let published = match c.spread {
                Some(s) => format!("{} ±{} {unit}", num(c.published), num(s)),
                None => format!("{} {unit}", num(c.published)),
            };
            let (simulated, error) = match &c.simulated {
                Ok(s) if r.case.absolute => (num(*s), pct(s / c.published - 1.0)),
                Ok(s) => (num(*s), "(scaled)".into()),
                Err(_) => ("failed".into(), "-".into()),
            };
            let mut row = [
                if i == 0 {
                    r.case.name.clone()
                } else {
                    String::new()
                },
                c.name.clone(),
                published,
                simulated,
                error,
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ];
            if i > 0 {
                if let Some(k) = comps.next() {
                    row[5] = pct(k.published_effect);
                    row[6] = k.simulated_effect.map_or("-".into(), pct);
                    row[7] = if k.agrees { "yes" } else { "NO" }.into();
                    row[8] = k.ratio.map_or("-".into(), |x| format!("{x:.2}"));
                }
            }
            rows.push(row);
        }
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|j| {
            rows.iter()
                .map(|r| r[j].chars().count())
                .chain([head[j].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let mut l = String::new();
        for (j, c) in cells.iter().enumerate() {
            let pad = widths[j] - c.chars().count();
            if j < 2 {
                let _ = write!(l, "{c}{}  ", " ".repeat(pad));
            } else {
                let _ = write!(l, "{}{c}  ", " ".repeat(pad));
            }
        }
        let _ = writeln!(out, "{}", l.trim_end());
    };
    line(head.to_vec(), &mut out);
    for r in &rows {
        line(r.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

/// The summary on one line.
pub fn summary_line(s: &Summary) -> String {
    let p = |v: f64| format!("{:.0}%", 100.0 * v);
    let mut l = format!(
        "validation: {} cases, {} comparisons: direction agrees {}, effect within 2x {}, within 1.3x {}",
        s.cases,
        s.comparisons,
        p(s.direction_agrees),
        p(s.within_2x),
        p(s.within_1_3x)
    );
    match s.median_abs_error {
        Some(e) => {
            let _ = write!(
                l,
                "; median absolute error {} over {} figures",
                p(e),
                s.absolute_figures
            );
        }
        None => l.push_str("; no absolute figures"),
    }
    if s.failed_runs > 0 {
        let _ = write!(l, "; {} runs FAILED", s.failed_runs);
    }
    l
}

/// The failed runs, one line each.
pub fn failures(results: &[CaseResult]) -> Vec<String> {
    results
        .iter()
        .flat_map(|r| {
            r.configs.iter().filter_map(move |c| {
                c.simulated
                    .as_ref()
                    .err()
                    .map(|e| format!("{} / {}: {e}", r.case.name, c.name))
            })
        })
        .collect()
}

#[derive(Serialize)]
struct JsonConfig<'a> {
    name: &'a str,
    published: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    spread: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    simulated: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonCase<'a> {
    name: &'a str,
    title: &'a str,
    source: &'a super::case::Source,
    machine: &'a str,
    unit: &'a str,
    absolute: bool,
    configs: Vec<JsonConfig<'a>>,
}

#[derive(Serialize)]
struct JsonDoc<'a> {
    summary: &'a Summary,
    cases: Vec<JsonCase<'a>>,
    comparisons: &'a [Comparison],
}

/// The whole run as one JSON document.
pub fn json(results: &[CaseResult], comparisons: &[Comparison], summary: &Summary) -> String {
    let doc = JsonDoc {
        summary,
        cases: results
            .iter()
            .map(|r| JsonCase {
                name: &r.case.name,
                title: &r.case.title,
                source: &r.case.source,
                machine: &r.case.machine,
                unit: &r.case.unit,
                absolute: r.case.absolute,
                configs: r
                    .configs
                    .iter()
                    .map(|c| JsonConfig {
                        name: &c.name,
                        published: c.published,
                        spread: c.spread,
                        simulated: c.simulated.as_ref().ok().copied(),
                        error: c.simulated.as_ref().err().map(String::as_str),
                    })
                    .collect(),
            })
            .collect(),
        comparisons,
    };
    let mut s =
        serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

/// Simulated against published effect (percent), one point per comparison, coloured by
/// whether the direction agrees, with the diagonal.
pub fn scatter(comparisons: &[Comparison]) -> Result<String, ChartError> {
    let clamp = |v: f64| (100.0 * v).clamp(-PLOT_LIMIT_PCT, PLOT_LIMIT_PCT);
    let mut agree = Vec::new();
    let mut differ = Vec::new();
    for c in comparisons {
        if let Some(s) = c.simulated_effect {
            let p = (clamp(c.published_effect), clamp(s));
            if c.agrees {
                agree.push(p);
            } else {
                differ.push(p);
            }
        }
    }
    scatter_chart(
        "Simulated vs published effect",
        "published effect (%)",
        "simulated effect (%)",
        &[
            Series::new("direction agrees", agree),
            Series::new("direction differs", differ),
        ],
    )
}
