//! Every chart the simulator writes, drawn with `plotters` on its SVG backend: line charts of
//! one value against evenly placed x values (N, client threads) with whiskers for the
//! repetitions' spread ([`line_chart`]), line charts against time ([`time_chart`]), and bar
//! charts drawn across with labelled bars and whiskers ([`bar_chart`]), and scatter plots of
//! one figure against another with the diagonal ([`scatter_chart`]).
//!
//! Readable at any number of series: twelve colours, five markers and three line patterns
//! ([`style`]); the key stands beside the plot and the canvas grows to hold it; titles and
//! labels are wrapped to the canvas by an estimate of their width ([`text`]); a value axis
//! starts above 0 when the values are close together and says so ([`axis`]).
//!
//! Text is emitted as SVG `<text>` elements, so no font is loaded. Coordinates are integer
//! pixels and nothing depends on time or on hashing: the same inputs give the same bytes.

mod axis;
mod bar;
mod legend;
mod line;
mod scatter;
mod style;
#[cfg(test)]
mod tests;
mod text;

pub use bar::bar_chart;
pub use line::{line_chart, time_chart};
pub use scatter::scatter_chart;

use plotters::coord::Shift;
use plotters::prelude::*;

/// Space around everything on the canvas, pixels.
const MARGIN: i32 = 10;
/// Size of axis and label text (SVG pixels).
const LABEL_PX: f64 = 12.0;
/// Grid lines at the labelled ticks.
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
/// The outline of the plot area.
const FRAME: RGBColor = RGBColor(0x99, 0x99, 0x99);

type DrawError = DrawingAreaErrorKind<std::io::Error>;
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("chart `{title}`: {source}")]
    Draw { title: String, source: DrawError },
}

/// One line: a label, its (x, y) points and, where it has a spread, a whisker per point.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// (low, high) of each point, in the order of `points`; empty: no whiskers.
    pub whiskers: Vec<(f64, f64)>,
}

impl Series {
    /// A line without whiskers.
    pub fn new(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            label: label.into(),
            points,
            whiskers: Vec::new(),
        }
    }
}

/// One bar: its label, length (`mean`) and whisker (`min` to `max`).
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

/// Draws a `w` x `h` chart with `draw` on a white canvas; returns the SVG document.
fn render(
    title: &str,
    (w, h): (i32, i32),
    draw: impl FnOnce(&Area<'_>) -> Result<(), DrawError>,
) -> Result<String, ChartError> {
    let mut buf = String::new();
    {
        let size = (w.max(1) as u32, h.max(1) as u32);
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE)
            .and_then(|()| draw(&root))
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

/// Outlines the plot area (pixel ranges as plotters gives them).
fn frame(
    root: &Area<'_>,
    (x, y): &(std::ops::Range<i32>, std::ops::Range<i32>),
) -> Result<(), DrawError> {
    root.draw(&Rectangle::new(
        [(x.start, y.start), (x.end - 1, y.end - 1)],
        FRAME.stroke_width(1),
    ))
}

/// Width of a y axis's area: its widest tick label (up to two decimals), the tick marks and
/// the rotated axis description.
fn y_area_width(y: &axis::ValueAxis) -> i32 {
    let digits = axis::tick(y.lo).len().max(axis::tick(y.hi).len()).max(1);
    let widest = "8".repeat(digits + 3);
    (text::width(&widest, LABEL_PX) + 10.0 + 2.0 * LABEL_PX).ceil() as i32
}

/// The inner range of a segmented axis with `n` evenly spaced slots (0..=n-1). A range of
/// one value has no width in plotters, so one slot is drawn as the first of two.
fn categories(n: usize) -> std::ops::Range<u32> {
    0..(n.max(2) - 1) as u32
}
