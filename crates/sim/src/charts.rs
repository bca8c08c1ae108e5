//! Every chart the simulator writes, drawn with `plotters` on its SVG backend: a line chart of
//! one value against evenly placed x values (N, client threads), a line chart against a linear
//! x axis (time), and a bar chart with min-max whiskers.
//!
//! Text is emitted as SVG `<text>` elements and laid out with plotters' built-in size estimate,
//! so no font is loaded. Coordinates are integer pixels and nothing depends on time or on
//! hashing: the same inputs give the same bytes.

use plotters::coord::Shift;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width of the plot of every chart, pixels; the series key is added on the right.
const PLOT_W: u32 = 450;
/// Height of the charts against N or per bar.
const H: u32 = 400;
/// Height of the charts against time.
const H_TIME: u32 = 280;
/// Narrowest series key, pixels, and the most it grows to fit long labels.
const KEY_MIN_W: u32 = 190;
const KEY_MAX_W: u32 = 450;
const FONT: &str = "sans-serif";
const TITLE_PX: u32 = 16;
const LABEL_PX: u32 = 13;
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// Grid lines at the labelled ticks.
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);

type DrawError = DrawingAreaErrorKind<std::io::Error>;
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("chart `{title}`: {source}")]
    Draw { title: String, source: DrawError },
}

/// One line: a label and its (x, y) points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// One bar: its label, height (`mean`) and whisker (`min` to `max`).
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub label: String,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl Bar {
    /// A bar of one measurement: no whisker.
    pub fn single(label: impl Into<String>, value: f64) -> Self {
        Bar {
            label: label.into(),
            mean: value,
            min: value,
            max: value,
        }
    }
}

/// Line chart of each series against x; the distinct x values are placed evenly and labelled
/// as given.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<String, ChartError> {
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let ymax = nice_max(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let slot = |x: f64| xs.iter().position(|&v| v == x);
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    render(title, H, &labels, |plot| {
        let mut chart = frame(plot, title)
            .build_cartesian_2d(categories(xs.len()).into_segmented(), 0.0..ymax)?;
        let x_tick = |v: &SegmentValue<u32>| match v {
            SegmentValue::Exact(i) | SegmentValue::CenterOf(i) => xs
                .get(*i as usize)
                .map_or_else(String::new, |x| fmt_tick(*x)),
            SegmentValue::Last => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(xs.len().max(1))
            .x_label_formatter(&x_tick)
            .y_label_formatter(&|v| fmt_tick(*v))
            .x_desc(x_label)
            .y_desc(y_label)
            .label_style((FONT, LABEL_PX))
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let points = s
                .points
                .iter()
                .filter_map(|&(x, y)| slot(x).map(|i| (SegmentValue::CenterOf(i as u32), y)));
            let style = colour(i).filled().stroke_width(2);
            chart.draw_series(LineSeries::new(points, style).point_size(3))?;
        }
        Ok(())
    })
}

/// Line chart of each series against a linear x axis from 0 to the largest x (time).
pub fn time_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<String, ChartError> {
    let xmax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let xmax = if xmax > 0.0 { xmax } else { 1.0 };
    let ymax = nice_max(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    render(title, H_TIME, &labels, |plot| {
        let mut chart = frame(plot, title).build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| fmt_tick(*v))
            .y_label_formatter(&|v| fmt_tick(*v))
            .x_desc(x_label)
            .y_desc(y_label)
            .label_style((FONT, LABEL_PX))
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let style = colour(i).stroke_width(2);
            chart.draw_series(LineSeries::new(s.points.iter().copied(), style))?;
        }
        Ok(())
    })
}

/// Scatter plot of `points` (x, y) on square axes from `-lim` to `lim` (the largest
/// magnitude, rounded up), with the diagonal y = x and a band between y = x/2 and y = 2x.
/// Each series is one colour of points.
pub fn scatter_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<String, ChartError> {
    let lim = nice_max(
        series
            .iter()
            .flat_map(|s| s.points.iter().flat_map(|p| [p.0.abs(), p.1.abs()])),
    );
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    render(title, PLOT_W, &labels, |plot| {
        let mut chart = frame(plot, title).build_cartesian_2d(-lim..lim, -lim..lim)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| fmt_tick(*v))
            .y_label_formatter(&|v| fmt_tick(*v))
            .x_desc(x_label)
            .y_desc(y_label)
            .label_style((FONT, LABEL_PX))
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .draw()?;
        let grey = RGBColor(0x99, 0x99, 0x99);
        chart.draw_series(LineSeries::new(
            [(-lim, -lim), (lim, lim)],
            grey.stroke_width(1),
        ))?;
        // y = x/2 and y = 2x, each drawn only inside the square.
        for line in [
            [(-lim, -lim / 2.0), (lim, lim / 2.0)],
            [(-lim / 2.0, -lim), (lim / 2.0, lim)],
        ] {
            chart.draw_series(LineSeries::new(line, GRID.stroke_width(1)))?;
        }
        for (i, s) in series.iter().enumerate() {
            let style = colour(i).filled();
            let pts = s
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite());
            chart.draw_series(pts.map(|&p| Circle::new(p, 4, style)))?;
        }
        Ok(())
    })
}

/// Bar chart: one bar per entry, in order, with a min-max whisker where min < max. The key
/// on the right names the bars by colour.
pub fn bar_chart(title: &str, y_label: &str, bars: &[Bar]) -> Result<String, ChartError> {
    let ymax = nice_max(bars.iter().map(|b| b.max.max(b.mean)));
    let labels: Vec<&str> = bars.iter().map(|b| b.label.as_str()).collect();
    render(title, H, &labels, |plot| {
        let mut chart = frame(plot, title)
            .build_cartesian_2d(categories(bars.len()).into_segmented(), 0.0..ymax)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(bars.len().max(1))
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(&|v| fmt_tick(*v))
            .y_desc(y_label)
            .label_style((FONT, LABEL_PX))
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .draw()?;
        let slot_px = chart.plotting_area().dim_in_pixel().0 / bars.len().max(1) as u32;
        let gap = slot_px / 5;
        for (i, b) in bars.iter().enumerate() {
            let i = i as u32;
            let mut rect = Rectangle::new(
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), b.mean),
                ],
                colour(i as usize).filled(),
            );
            rect.set_margin(0, 0, gap, gap);
            chart.draw_series(std::iter::once(rect))?;
            if b.max > b.min {
                let whisker = [
                    (SegmentValue::CenterOf(i), b.min),
                    (SegmentValue::CenterOf(i), b.max),
                ];
                chart.draw_series(std::iter::once(PathElement::new(whisker, BLACK)))?;
            }
        }
        Ok(())
    })
}

/// Draws a chart `height` pixels high: `draw` fills the plot on the left, and the key on the
/// right names `labels` by colour. Returns the SVG document.
fn render(
    title: &str,
    height: u32,
    labels: &[&str],
    draw: impl FnOnce(&Area<'_>) -> Result<(), DrawError>,
) -> Result<String, ChartError> {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let key_w = (40 + 7 * longest as u32).clamp(KEY_MIN_W, KEY_MAX_W);
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (PLOT_W + key_w, height)).into_drawing_area();
        let (plot, key) = root.split_horizontally(PLOT_W);
        root.fill(&WHITE)
            .and_then(|()| draw(&plot))
            .and_then(|()| key_box(&key, labels))
            .and_then(|()| root.present())
            .map_err(|source| ChartError::Draw {
                title: title.into(),
                source,
            })?;
    }
    if !buf.ends_with('\n') {
        buf.push('\n');
    }
    Ok(buf)
}

/// The title and axis areas shared by every chart.
fn frame<'a, 'b>(plot: &'a Area<'b>, title: &str) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(plot);
    b.caption(title, (FONT, TITLE_PX))
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(60);
    b
}

/// The inner range of a segmented axis with `n` evenly spaced slots (0..=n-1). A range of
/// one value has no width in plotters, so one slot is drawn as the first of two.
fn categories(n: usize) -> std::ops::Range<u32> {
    0..(n.max(2) - 1) as u32
}

/// The series key: a colour swatch and the label, one per line.
fn key_box(area: &Area<'_>, labels: &[&str]) -> Result<(), DrawError> {
    let left = Pos::new(HPos::Left, VPos::Center);
    for (i, label) in labels.iter().enumerate() {
        let y = 40 + 18 * i as i32;
        area.draw(&Rectangle::new(
            [(8, y - 2), (20, y + 2)],
            colour(i).filled(),
        ))?;
        let style = TextStyle::from((FONT, LABEL_PX).into_font()).pos(left);
        area.draw(&Text::new(*label, (26, y), style))?;
    }
    Ok(())
}

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A round upper bound for a y axis from 0 that holds every finite value.
fn nice_max(values: impl Iterator<Item = f64>) -> f64 {
    let max = values.filter(|v| v.is_finite()).fold(0.0, f64::max);
    let max = if max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    (max / step).ceil() * step
}

/// A tick label: whole numbers without decimals, others with at most two.
fn fmt_tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{:.0}", v.round())
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `svg` has a `<text>` element reading exactly `t` (escaped).
    fn has_text(svg: &str, t: &str) -> bool {
        svg.contains(&format!(">\n{t}\n</text>"))
    }

    fn sample() -> Vec<Series> {
        vec![
            Series {
                label: "sched-a".into(),
                points: vec![(4.0, 10.5), (8.0, 21.0), (16.0, 40.25)],
            },
            Series {
                label: "sched <b> & c".into(),
                points: vec![(4.0, 9.0), (16.0, 35.0)],
            },
        ]
    }

    #[test]
    fn same_input_same_bytes() {
        let s = sample();
        let a = line_chart("N chart", "N (tasks)", "seconds", &s).unwrap();
        let b = line_chart("N chart", "N (tasks)", "seconds", &s).unwrap();
        assert_eq!(a.as_bytes(), b.as_bytes());
        let t1 = time_chart("memory", "time (s)", "GiB", &s).unwrap();
        let t2 = time_chart("memory", "time (s)", "GiB", &s).unwrap();
        assert_eq!(t1.as_bytes(), t2.as_bytes());
        let bars = [Bar::single("x", 1.0), Bar::single("y", 2.5)];
        assert_eq!(
            bar_chart("bars", "seconds", &bars).unwrap(),
            bar_chart("bars", "seconds", &bars).unwrap()
        );
    }

    #[test]
    fn line_chart_names_title_axes_and_series() {
        let svg = line_chart("azusa: elapsed on AzusA", "N (tasks)", "seconds", &sample()).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.ends_with("</svg>\n"),
            "{svg}"
        );
        for text in [
            "azusa: elapsed on AzusA",
            "N (tasks)",
            "seconds",
            "sched-a",
            "sched &lt;b&gt; &amp; c",
            "16",
        ] {
            assert!(has_text(&svg, text), "{text} missing from {svg}");
        }
        // One line per series, each with a dot per point.
        for (c, dots) in [("#1F77B4", 3), ("#D62728", 2)] {
            let line = format!(r#"stroke="{c}" stroke-width="2" points="#);
            assert_eq!(svg.matches(&line).count(), 1, "{c} in {svg}");
            let dot = format!(r#"r="3" opacity="1" fill="{c}""#);
            assert_eq!(svg.matches(&dot).count(), dots, "{c} in {svg}");
        }
    }

    #[test]
    fn time_chart_names_series() {
        let svg = time_chart("numa01 (numa_balancing=on)", "time (s)", "GiB", &sample()).unwrap();
        for text in ["numa01 (numa_balancing=on)", "time (s)", "GiB", "sched-a"] {
            assert!(has_text(&svg, text), "{text} missing from {svg}");
        }
    }

    #[test]
    fn bar_chart_draws_each_bar_and_whisker() {
        let bars = [
            Bar {
                label: "pmqs".into(),
                mean: 30.0,
                min: 25.0,
                max: 35.0,
            },
            Bar::single("aa", 20.0),
        ];
        let svg = bar_chart("Build wall time (mean, min-max)", "seconds", &bars).unwrap();
        for text in ["Build wall time (mean, min-max)", "seconds", "pmqs", "aa"] {
            assert!(has_text(&svg, text), "{text} missing from {svg}");
        }
        // Each bar is filled with its own colour: #1F77B4, then #D62728.
        assert!(svg.contains("#1F77B4") && svg.contains("#D62728"), "{svg}");
    }

    #[test]
    fn scatter_chart_draws_points_and_diagonal() {
        let s = vec![Series {
            label: "agrees".into(),
            points: vec![(10.0, 12.0), (-20.0, -5.0), (f64::NAN, 1.0)],
        }];
        let svg = scatter_chart("effects", "published", "simulated", &s).unwrap();
        assert_eq!(svg.matches("<circle").count(), 2, "NaN points are left out");
        assert!(has_text(&svg, "effects") && has_text(&svg, "agrees"));
        assert_eq!(
            svg,
            scatter_chart("effects", "published", "simulated", &s).unwrap()
        );
    }

    #[test]
    fn degenerate_inputs_still_draw() {
        assert!(
            line_chart("empty", "x", "y", &[])
                .unwrap()
                .contains("empty")
        );
        assert!(bar_chart("none", "y", &[]).unwrap().contains("none"));
        let one = [Series {
            label: "only".into(),
            points: vec![(1.0, f64::NAN), (2.0, 0.0)],
        }];
        assert!(time_chart("flat", "x", "y", &one).unwrap().contains("only"));
        assert!(
            line_chart("one", "x", "y", &one[..1])
                .unwrap()
                .contains("only")
        );
    }

    #[test]
    fn ticks_and_scale() {
        assert_eq!(fmt_tick(0.0), "0");
        assert_eq!(fmt_tick(16.0), "16");
        assert_eq!(fmt_tick(2.5), "2.5");
        assert_eq!(fmt_tick(0.25), "0.25");
        assert_eq!(fmt_tick(0.001), "0");
        assert_eq!(fmt_tick(1.999), "2");
        assert_eq!(nice_max([0.0, 43.0].into_iter()), 50.0);
        assert_eq!(nice_max(std::iter::empty()), 1.0);
    }
}
