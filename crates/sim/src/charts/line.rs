//! Line charts: one value against evenly placed x values (N, client threads), with a whisker
//! per point where the series has a spread, and one value against a linear x axis (time).
//! The key stands to the right of the plot, never on it.

use super::axis::{self, ValueAxis};
use super::legend::Legend;
use super::style::look;
use super::text::{self, Title};
use super::{Area, ChartError, DrawError, GRID, LABEL_PX, MARGIN, Series};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

/// Width of the plot with its axes, pixels.
const CHART_W: i32 = 470;
/// Height of the plot with its x axis: charts against N, and against time.
const CHART_H: i32 = 380;
const CHART_H_TIME: i32 = 280;
/// Height of the x axis below the plot, and the gap between plot and key.
const X_AREA: i32 = 44;
const KEY_GAP: i32 = 16;
/// Widest spread of the series at one x, pixels: their whiskers stand side by side.
const SPREAD_PX: f64 = 4.0;

/// Line chart of each series against x; the distinct x values are placed evenly and labelled
/// as given. A series with whiskers gets a vertical whisker with caps at each point.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<String, ChartError> {
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite())
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let labels = (title, x_label, y_label);
    chart(labels, XAxis::Slots(xs), series, CHART_H)
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
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max);
    let xmax = if xmax > 0.0 { xmax } else { 1.0 };
    let labels = (title, x_label, y_label);
    chart(labels, XAxis::Linear(xmax), series, CHART_H_TIME)
}

enum XAxis {
    /// The distinct x values, one evenly spaced slot each.
    Slots(Vec<f64>),
    /// From 0 to this.
    Linear(f64),
}

/// A point in pixels and its whisker's ends, if it has one.
type Px = (i32, i32, Option<(i32, i32)>);

fn chart(
    (title, x_label, y_label): (&str, &str, &str),
    x: XAxis,
    series: &[Series],
    chart_h: i32,
) -> Result<String, ChartError> {
    let y = ValueAxis::fit(series.iter().flat_map(|s| {
        let ends = s.whiskers.iter().flat_map(|w| [w.0, w.1]);
        s.points.iter().map(|p| p.1).chain(ends)
    }));
    let y_desc = y.describe(y_label);
    let y_area = super::y_area_width(&y);
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    let key = Legend::layout(&labels);
    let w = MARGIN + CHART_W + KEY_GAP + key.width + MARGIN;
    let head = Title::fit(title, f64::from(w - 2 * MARGIN));
    let top = MARGIN + head.height() + 8;
    let h = (top + chart_h).max(top + key.height) + MARGIN;
    super::render(title, (w, h), |root| {
        head.draw(root, w / 2, MARGIN)?;
        let area = root.clone().shrink((MARGIN, top), (CHART_W, chart_h));
        let mut b = ChartBuilder::on(&area);
        b.x_label_area_size(X_AREA)
            .y_label_area_size(y_area)
            .margin_top(6)
            .margin_right(14);
        let (frame, pixels) = match &x {
            XAxis::Slots(xs) => slots(b, xs, &y, (x_label, &y_desc), series)?,
            XAxis::Linear(xmax) => linear(b, *xmax, &y, (x_label, &y_desc), series)?,
        };
        super::frame(root, &frame)?;
        for (i, pts) in pixels.iter().enumerate() {
            draw_series(root, i, pts)?;
        }
        key.draw(root, (MARGIN + CHART_W + KEY_GAP, top))
    })
}

/// The plot's pixel rectangle and every series' points in pixels.
type Placed = ((std::ops::Range<i32>, std::ops::Range<i32>), Vec<Vec<Px>>);

fn slots(
    mut b: ChartBuilder<'_, '_, SVGBackend<'_>>,
    xs: &[f64],
    y: &ValueAxis,
    (x_desc, y_desc): (&str, &str),
    series: &[Series],
) -> Result<Placed, DrawError> {
    let mut chart =
        b.build_cartesian_2d(super::categories(xs.len()).into_segmented(), y.lo..y.hi)?;
    let x_tick = |v: &SegmentValue<u32>| match v {
        SegmentValue::Exact(i) | SegmentValue::CenterOf(i) => xs
            .get(*i as usize)
            .map_or_else(String::new, |x| axis::tick(*x)),
        SegmentValue::Last => String::new(),
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(xs.len().max(1))
        .x_label_formatter(&x_tick)
        .y_label_formatter(&|v| axis::tick(*v))
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style(text::style(LABEL_PX))
        .axis_desc_style(text::style(LABEL_PX))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .draw()?;
    let range = chart.plotting_area().get_pixel_range();
    let slot_px = f64::from(range.0.end - range.0.start) / xs.len().max(1) as f64;
    let n = series.len();
    let step = (slot_px / (n as f64 + 1.0)).min(SPREAD_PX);
    let pixels = series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let dx = ((i as f64 - (n as f64 - 1.0) / 2.0) * step).round() as i32;
            let at = |j: usize, v: f64| chart.backend_coord(&(SegmentValue::CenterOf(j as u32), v));
            s.points
                .iter()
                .enumerate()
                .filter(|(_, p)| p.1.is_finite())
                .filter_map(|(k, &(xv, yv))| {
                    let j = xs.iter().position(|&v| v == xv)?;
                    let (px, py) = at(j, yv);
                    let whisker = s
                        .whiskers
                        .get(k)
                        .filter(|w| w.0.is_finite() && w.1.is_finite() && w.1 > w.0)
                        .map(|w| (at(j, w.0).1, at(j, w.1).1));
                    Some((px + dx, py, whisker))
                })
                .collect()
        })
        .collect();
    Ok((range, pixels))
}

fn linear(
    mut b: ChartBuilder<'_, '_, SVGBackend<'_>>,
    xmax: f64,
    y: &ValueAxis,
    (x_desc, y_desc): (&str, &str),
    series: &[Series],
) -> Result<Placed, DrawError> {
    let mut chart = b.build_cartesian_2d(0.0..xmax, y.lo..y.hi)?;
    chart
        .configure_mesh()
        .x_label_formatter(&|v| axis::tick(*v))
        .y_label_formatter(&|v| axis::tick(*v))
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style(text::style(LABEL_PX))
        .axis_desc_style(text::style(LABEL_PX))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .draw()?;
    let range = chart.plotting_area().get_pixel_range();
    let pixels = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|&p| {
                    let (px, py) = chart.backend_coord(&p);
                    (px, py, None)
                })
                .collect()
        })
        .collect();
    Ok((range, pixels))
}

/// Series `i`: its line, whiskers and markers (every point up to 30 points, else about
/// twelve spread along the line so the series can still be matched to its key).
fn draw_series(root: &Area<'_>, i: usize, pts: &[Px]) -> Result<(), DrawError> {
    let l = look(i);
    let line: Vec<(i32, i32)> = pts.iter().map(|p| (p.0, p.1)).collect();
    l.line(root, &line)?;
    let s = l.colour.stroke_width(1);
    for &(x, _, w) in pts {
        if let Some((lo, hi)) = w {
            root.draw(&PathElement::new(vec![(x, lo), (x, hi)], s))?;
            for end in [lo, hi] {
                root.draw(&PathElement::new(vec![(x - 3, end), (x + 3, end)], s))?;
            }
        }
    }
    let every = if pts.len() <= 30 {
        1
    } else {
        pts.len().div_ceil(12)
    };
    for (k, p) in pts.iter().enumerate() {
        if k % every == 0 {
            l.mark(root, (p.0, p.1))?;
        }
    }
    Ok(())
}
