//! Bar charts, drawn across: one bar per entry, top to bottom in order, its label on the
//! left (wrapped when long), its value at its end, and a whisker from `min` to `max` where
//! they differ. The value axis starts above 0 when the values are close together, and says so.

use super::axis::{self, ValueAxis};
use super::style::PALETTE;
use super::text::{self, LINE, Title};
use super::{Bar, ChartError, GRID, LABEL_PX, MARGIN};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

/// Width of the value axis, pixels; the labels' column is added on the left.
const PLOT_W: i32 = 420;
/// Widest a bar's label may be before it wraps.
const LABEL_MAX_W: f64 = 280.0;
/// Height of a bar's row at least, and the space between a bar and its row's edges.
const ROW_MIN: i32 = 24;
const ROW_PAD: i32 = 4;
/// Height of the value axis below the bars.
const X_AREA: i32 = 44;
/// Space between a label and the plot, and between a bar's end and its value.
const GAP: i32 = 8;

/// Bar chart: one bar per entry, in order, with a whisker where min < max.
pub fn bar_chart(title: &str, value_label: &str, bars: &[Bar]) -> Result<String, ChartError> {
    let labels: Vec<Vec<String>> = bars
        .iter()
        .map(|b| text::wrap(&b.label, LABEL_PX, LABEL_MAX_W))
        .collect();
    let line_h = LABEL_PX * LINE;
    let rows: Vec<i32> = labels
        .iter()
        .map(|l| ROW_MIN.max((l.len() as f64 * line_h).ceil() as i32 + 2 * ROW_PAD))
        .collect();
    let label_w = labels
        .iter()
        .map(|l| text::widest(l, LABEL_PX))
        .fold(0.0, f64::max)
        .ceil() as i32;
    let x = ValueAxis::fit(bars.iter().flat_map(|b| [b.mean, b.min, b.max]));
    let values: Vec<String> = bars
        .iter()
        .map(|b| axis::value(b.mean, x.hi - x.lo))
        .collect();
    let value_w = text::widest(&values, LABEL_PX).ceil() as i32 + GAP;
    let x_desc = x.describe(value_label);
    // Room left of the plot for the values of bars below 0.
    let below = if bars.iter().any(|b| b.mean < x.base()) {
        value_w
    } else {
        0
    };
    let label_right = MARGIN + label_w;
    let left = label_right + GAP + below;
    let w = left + PLOT_W + value_w + MARGIN;
    let head = Title::fit(title, f64::from(w - 2 * MARGIN));
    let top = MARGIN + head.height() + 10;
    let plot_h = rows.iter().sum::<i32>().max(ROW_MIN);
    let h = top + plot_h + X_AREA + MARGIN;
    super::render(title, (w, h), |root| {
        head.draw(root, w / 2, MARGIN)?;
        let area = root.clone().shrink((left, top), (PLOT_W, plot_h + X_AREA));
        let mut chart = ChartBuilder::on(&area)
            .x_label_area_size(X_AREA)
            .build_cartesian_2d(x.lo..x.hi, 0.0..1.0)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_label_formatter(&|v| axis::tick(*v))
            .x_desc(&x_desc)
            .label_style(text::style(LABEL_PX))
            .axis_desc_style(text::style(LABEL_PX))
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .draw()?;
        let px = |v: f64| chart.backend_coord(&(v, 0.0)).0;
        let frame = chart.plotting_area().get_pixel_range();
        let mut y = frame.1.start;
        let fill = PALETTE[0].mix(0.85).filled();
        let ink = BLACK.stroke_width(1);
        for (((b, lines), row), value) in bars.iter().zip(&labels).zip(&rows).zip(&values) {
            let mid = y + row / 2;
            let (from, to) = (px(x.base()), px(b.mean));
            let (l, r) = (from.min(to), from.max(to));
            let half = ROW_MIN / 2 - ROW_PAD;
            root.draw(&Rectangle::new(
                [(l, mid - half), (r.max(l + 1), mid + half)],
                fill,
            ))?;
            let (mut first_px, mut end) = (l, r);
            if b.max > b.min {
                let (a, z) = (px(b.min), px(b.max));
                root.draw(&PathElement::new(vec![(a, mid), (z, mid)], ink))?;
                for e in [a, z] {
                    root.draw(&PathElement::new(vec![(e, mid - 4), (e, mid + 4)], ink))?;
                }
                (first_px, end) = (first_px.min(a), end.max(z));
            }
            // The value stands past the bar's far end: right of it, or left of a bar that
            // reaches below 0.
            if b.mean < x.base() {
                let anchor = (HPos::Right, VPos::Center);
                text::draw(root, value, (first_px - 4, mid), LABEL_PX, anchor)?;
            } else {
                let anchor = (HPos::Left, VPos::Center);
                text::draw(root, value, (end + 4, mid), LABEL_PX, anchor)?;
            }
            let top_line = mid - ((lines.len() as f64 - 1.0) * line_h / 2.0).round() as i32;
            for (k, t) in lines.iter().enumerate() {
                let at = (label_right, top_line + (k as f64 * line_h).round() as i32);
                text::draw(root, t, at, LABEL_PX, (HPos::Right, VPos::Center))?;
            }
            y += row;
        }
        super::frame(root, &frame)
    })
}
