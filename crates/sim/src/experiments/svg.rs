//! Minimal SVG charts written by hand (no plotting dependency): a line chart of one value
//! against N per scheduler, and a bar chart with min-max whiskers. Numbers are printed with
//! fixed decimals so the bytes are reproducible.

use std::fmt::Write as _;

const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

/// One line: a label and its (x, y) points.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

fn header(title: &str, y_label: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        esc(title)
    );
    let _ = writeln!(
        s,
        r#"<text x="16" y="{:.1}" transform="rotate(-90 16 {:.1})" text-anchor="middle">{}</text>"#,
        H / 2.0,
        H / 2.0,
        esc(y_label)
    );
    s
}

/// A "nice" upper bound for the y axis and its tick step.
fn y_scale(max: f64) -> (f64, f64) {
    let max = if max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

fn y_axis(s: &mut String, ymax: f64, step: f64) -> impl Fn(f64) -> f64 + use<> {
    let plot_h = H - TOP - BOTTOM;
    let y = move |v: f64| TOP + plot_h * (1.0 - v / ymax);
    let mut v = 0.0;
    while v <= ymax + step / 2.0 {
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            y(v),
            y(v),
            LEFT - 6.0,
            y(v) + 4.0,
            fmt_tick(v)
        );
        v += step;
    }
    y
}

fn fmt_tick(v: f64) -> String {
    if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn legend(s: &mut String, labels: &[&str]) {
    for (i, l) in labels.iter().enumerate() {
        let y = TOP + 10.0 + 18.0 * i as f64;
        let x = W - RIGHT + 14.0;
        let c = COLORS[i % COLORS.len()];
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="12" height="4" fill="{c}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            y - 4.0,
            x + 18.0,
            y + 2.0,
            esc(l)
        );
    }
}

/// Line chart of each series against x (x values are placed evenly, labelled as given).
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let ymax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let (ymax, step) = y_scale(ymax);
    let mut s = header(title, y_label);
    let y = y_axis(&mut s, ymax, step);
    let plot_w = W - LEFT - RIGHT;
    let xpos = |v: f64| {
        let i = xs.iter().position(|&x| x == v).unwrap_or(0) as f64;
        LEFT + plot_w * (i + 0.5) / xs.len().max(1) as f64
    };
    for &x in &xs {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            xpos(x),
            H - BOTTOM + 18.0,
            fmt_tick(x)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        H - 12.0,
        esc(x_label)
    );
    for (i, se) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let pts: Vec<String> = se
            .points
            .iter()
            .map(|&(x, v)| format!("{:.1},{:.1}", xpos(x), y(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        );
        for p in &pts {
            let (px, py) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(s, r#"<circle cx="{px}" cy="{py}" r="3" fill="{c}"/>"#);
        }
    }
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    legend(&mut s, &labels);
    s.push_str("</svg>\n");
    s
}

/// Bar chart: one bar per (label, mean, min, max), with a min-max whisker.
pub fn bar_chart(title: &str, y_label: &str, bars: &[(String, f64, f64, f64)]) -> String {
    let ymax = bars.iter().map(|b| b.3).fold(0.0, f64::max);
    let (ymax, step) = y_scale(ymax);
    let mut s = header(title, y_label);
    let y = y_axis(&mut s, ymax, step);
    let plot_w = W - LEFT - RIGHT;
    let slot = plot_w / bars.len().max(1) as f64;
    for (i, (_, mean, min, max)) in bars.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let x = LEFT + slot * i as f64 + slot * 0.2;
        let bw = slot * 0.6;
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="{bw:.1}" height="{:.1}" fill="{c}"/>"#,
            y(*mean),
            y(0.0) - y(*mean)
        );
        let cx = x + bw / 2.0;
        let _ = writeln!(
            s,
            r#"<line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}" stroke="black"/>"#,
            y(*min),
            y(*max)
        );
    }
    let labels: Vec<&str> = bars.iter().map(|b| b.0.as_str()).collect();
    legend(&mut s, &labels);
    s.push_str("</svg>\n");
    s
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
