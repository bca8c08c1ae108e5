//! Text on a chart: an estimate of how wide a string is drawn, wrapping to a width, and
//! drawing a line of text at a pixel position.
//!
//! No font is loaded (the SVG names a generic `sans-serif`), so widths are estimated from
//! per-character advances a little wider than those of the common sans-serif faces (DejaVu
//! Sans, Liberation Sans, Helvetica): an estimate errs towards more room, never less.

use super::{Area, DrawError};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The family every text is set in.
pub const FONT: &str = "sans-serif";
/// Height of a line of text, as a multiple of its font size.
pub const LINE: f64 = 1.3;

/// A text style whose SVG font size is `px` (plotters writes its size divided by 1.24).
pub fn style(px: f64) -> TextStyle<'static> {
    TextStyle::from((FONT, plotters_size(px)).into_font())
}

/// The size to give plotters for an SVG font size of `px`: `px * 1.24`, moved by a few units
/// in the last place where that makes the division come back to `px` exactly, so the SVG
/// says `12`, not `12.000000000000002`.
fn plotters_size(px: f64) -> f64 {
    let s = px * 1.24;
    (0..8u64)
        .flat_map(|k| [s.to_bits() + k, s.to_bits().saturating_sub(k)])
        .map(f64::from_bits)
        .find(|c| c / 1.24 == px)
        .unwrap_or(s)
}

/// The advance of `c` in ems.
fn advance(c: char) -> f64 {
    match c {
        ' ' | 'i' | 'j' | 'l' | '\'' | '|' | '.' | ',' | ':' | ';' | '!' => 0.34,
        'f' | 't' | 'r' | 'I' | '(' | ')' | '[' | ']' | '-' | '/' => 0.45,
        'm' | 'w' => 1.0,
        'M' | 'W' | '%' | '@' => 1.05,
        'A'..='Z' => 0.78,
        '0'..='9' => 0.66,
        c if c.is_ascii() => 0.64,
        _ => 1.0,
    }
}

/// Estimated width in pixels of `s` set at `px`.
pub fn width(s: &str, px: f64) -> f64 {
    s.chars().map(advance).sum::<f64>() * px
}

/// `s` broken into lines no wider than `max_w` at `px`: breaks after spaces, commas, slashes
/// and `+`; a piece wider than the line on its own is cut between characters.
pub fn wrap(s: &str, px: f64, max_w: f64) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        cur.push(c);
        if matches!(c, ' ' | ',' | '/' | '+') {
            pieces.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        pieces.push(cur);
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for p in pieces {
        if width(format!("{line}{p}").trim_end(), px) <= max_w {
            line.push_str(&p);
            continue;
        }
        if !line.trim().is_empty() {
            lines.push(line.trim_end().to_string());
        }
        line = String::new();
        for c in p.chars() {
            if !line.is_empty() && width(&line, px) + width(&c.to_string(), px) > max_w {
                lines.push(std::mem::take(&mut line));
            }
            line.push(c);
        }
    }
    if !line.trim().is_empty() || lines.is_empty() {
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// The widest of `lines` at `px`.
pub fn widest<S: AsRef<str>>(lines: &[S], px: f64) -> f64 {
    lines
        .iter()
        .map(|l| width(l.as_ref(), px))
        .fold(0.0, f64::max)
}

/// Draws `text` at pixel `at` of `area`, anchored by `h` and `v`.
pub fn draw(
    area: &Area<'_>,
    text: &str,
    at: (i32, i32),
    px: f64,
    (h, v): (HPos, VPos),
) -> Result<(), DrawError> {
    let s = style(px).pos(Pos::new(h, v));
    area.draw(&Text::new(text.to_string(), at, s))
}

/// A title wrapped to the canvas: lines at `px`, drawn centred from the top margin.
pub struct Title {
    pub lines: Vec<String>,
    pub px: f64,
}

/// Title size, and the smallest it shrinks to before it wraps onto a fourth line.
const TITLE_PX: f64 = 16.0;
const TITLE_MIN_PX: f64 = 12.0;

impl Title {
    /// `title` fitted to `max_w` pixels: wrapped at the full size when that takes at most
    /// three lines, else at the smaller size.
    pub fn fit(title: &str, max_w: f64) -> Title {
        let full = wrap(title, TITLE_PX, max_w);
        if full.len() <= 3 {
            return Title {
                lines: full,
                px: TITLE_PX,
            };
        }
        Title {
            lines: wrap(title, TITLE_MIN_PX, max_w),
            px: TITLE_MIN_PX,
        }
    }

    /// Height the title takes, pixels.
    pub fn height(&self) -> i32 {
        (self.lines.len() as f64 * self.px * LINE).ceil() as i32
    }

    /// Draws the lines centred on `centre_x`, the first one's top at `top`.
    pub fn draw(&self, area: &Area<'_>, centre_x: i32, top: i32) -> Result<(), DrawError> {
        for (i, l) in self.lines.iter().enumerate() {
            let y = top + (i as f64 * self.px * LINE).round() as i32;
            draw(area, l, (centre_x, y), self.px, (HPos::Center, VPos::Top))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_every_character_and_each_line_fits() {
        let s = "pool:pool_delay=0,initial_lb=off + homenode:min_rss_mib=16 on epyc-nps4";
        let lines = wrap(s, 12.0, 150.0);
        assert!(lines.len() > 2, "{lines:?}");
        assert!(lines.iter().all(|l| width(l, 12.0) <= 150.0), "{lines:?}");
        assert_eq!(lines.concat().replace(' ', ""), s.replace(' ', ""));
        let long = "x".repeat(100);
        let cut = wrap(&long, 12.0, 100.0);
        assert!(cut.iter().all(|l| width(l, 12.0) <= 100.0), "{cut:?}");
        assert_eq!(cut.concat(), long);
        assert_eq!(wrap("", 12.0, 100.0), vec![String::new()]);
    }

    #[test]
    fn font_sizes_come_out_whole() {
        for px in [super::super::LABEL_PX, TITLE_PX, TITLE_MIN_PX] {
            assert_eq!(plotters_size(px) / 1.24, px);
        }
    }

    #[test]
    fn wide_letters_count_wider_than_narrow_ones() {
        assert!(width("WWW", 10.0) > width("iii", 10.0) * 2.0);
        assert!((width("0123", 10.0) - 4.0 * 6.6).abs() < 1e-9);
    }

    #[test]
    fn a_long_title_shrinks_before_it_takes_a_fourth_line() {
        let t = Title::fit(&"word ".repeat(60), 400.0);
        assert_eq!(t.px, TITLE_MIN_PX);
        assert!(t.lines.iter().all(|l| width(l, t.px) <= 400.0));
        let short = Title::fit("short", 400.0);
        assert_eq!((short.lines.len(), short.px), (1, TITLE_PX));
    }
}
