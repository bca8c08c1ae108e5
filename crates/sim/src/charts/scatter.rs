//! Scatter plots of one figure against another on square axes, with the diagonal y = x and
//! the lines y = x/2 and y = 2x (the validation's simulated against published effects).
//! Each series is one look of markers; the key stands to the right of the plot.

use super::axis;
use super::legend::Legend;
use super::style::look;
use super::text::{self, Title};
use super::{ChartError, FRAME, GRID, LABEL_PX, MARGIN, Series};
use plotters::prelude::*;

/// Side of the square plot inside its axes, pixels.
const PLOT_SIDE: i32 = 400;
/// Space above and to the right of the plot inside its area.
const TOP_GAP: i32 = 6;
const RIGHT_GAP: i32 = 14;
/// Height of the x axis below the plot, and the gap between plot and key.
const X_AREA: i32 = 44;
const KEY_GAP: i32 = 16;

/// Scatter plot of every series' points on axes from `-lim` to `lim`, `lim` the largest
/// magnitude rounded up, so that the diagonal runs corner to corner.
pub fn scatter_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<String, ChartError> {
    let biggest = series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|p| [p.0.abs(), p.1.abs()]))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let lim = axis::ValueAxis::fit([0.0, biggest].into_iter()).hi;
    let y_area = super::y_area_width(&axis::ValueAxis { lo: -lim, hi: lim });
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    let key = Legend::layout(&labels);
    let (chart_w, chart_h) = (PLOT_SIDE + y_area + RIGHT_GAP, PLOT_SIDE + X_AREA + TOP_GAP);
    let w = MARGIN + chart_w + KEY_GAP + key.width + MARGIN;
    let head = Title::fit(title, f64::from(w - 2 * MARGIN));
    let top = MARGIN + head.height() + 8;
    let h = (top + chart_h).max(top + key.height) + MARGIN;
    super::render(title, (w, h), |root| {
        head.draw(root, w / 2, MARGIN)?;
        let area = root.clone().shrink((MARGIN, top), (chart_w, chart_h));
        let mut b = ChartBuilder::on(&area);
        b.x_label_area_size(X_AREA)
            .y_label_area_size(y_area)
            .margin_top(TOP_GAP)
            .margin_right(RIGHT_GAP);
        let mut chart = b.build_cartesian_2d(-lim..lim, -lim..lim)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| axis::tick(*v))
            .y_label_formatter(&|v| axis::tick(*v))
            .x_desc(x_label)
            .y_desc(y_label)
            .label_style(text::style(LABEL_PX))
            .axis_desc_style(text::style(LABEL_PX))
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .draw()?;
        chart.draw_series(LineSeries::new(
            [(-lim, -lim), (lim, lim)],
            FRAME.stroke_width(1),
        ))?;
        // y = x/2 and y = 2x, each drawn only inside the square.
        for line in [
            [(-lim, -lim / 2.0), (lim, lim / 2.0)],
            [(-lim / 2.0, -lim), (lim / 2.0, lim)],
        ] {
            chart.draw_series(LineSeries::new(line, GRID.stroke_width(1)))?;
        }
        super::frame(root, &chart.plotting_area().get_pixel_range())?;
        for (i, s) in series.iter().enumerate() {
            let l = look(i);
            for p in s
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
            {
                l.mark(root, chart.backend_coord(p))?;
            }
        }
        key.draw(root, (MARGIN + chart_w + KEY_GAP, top))
    })
}
