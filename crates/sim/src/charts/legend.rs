//! The series key of a line chart, set beside the plot: per series a sample of its line and
//! marker, and its label wrapped to the key's width.

use super::style::look;
use super::text::{self, LINE};
use super::{Area, DrawError};
use plotters::style::text_anchor::{HPos, VPos};

/// Key text size, and the widest a label may be before it wraps.
const PX: f64 = 12.0;
const TEXT_MAX_W: f64 = 300.0;
/// Width of the line sample and the gap after it.
const SAMPLE_W: i32 = 30;
const SAMPLE_GAP: i32 = 6;
/// Space between entries.
const ENTRY_GAP: i32 = 5;

/// A key laid out: every label's lines, and the key's size.
pub struct Legend {
    entries: Vec<Vec<String>>,
    pub width: i32,
    pub height: i32,
}

impl Legend {
    pub fn layout(labels: &[&str]) -> Legend {
        let entries: Vec<Vec<String>> = labels
            .iter()
            .map(|l| text::wrap(l, PX, TEXT_MAX_W))
            .collect();
        let text_w = entries
            .iter()
            .map(|e| text::widest(e, PX))
            .fold(0.0, f64::max);
        let height = entries
            .iter()
            .map(|e| entry_height(e.len()) + ENTRY_GAP)
            .sum();
        Legend {
            width: SAMPLE_W + SAMPLE_GAP + text_w.ceil() as i32,
            height,
            entries,
        }
    }

    /// Draws the key with its top left corner at `(x, y)`.
    pub fn draw(&self, area: &Area<'_>, (x, mut y): (i32, i32)) -> Result<(), DrawError> {
        let line_h = (PX * LINE).round() as i32;
        for (i, lines) in self.entries.iter().enumerate() {
            let l = look(i);
            let mid = y + line_h / 2;
            l.line(area, &[(x, mid), (x + SAMPLE_W, mid)])?;
            l.mark(area, (x + SAMPLE_W / 2, mid))?;
            for (k, t) in lines.iter().enumerate() {
                let at = (x + SAMPLE_W + SAMPLE_GAP, mid + k as i32 * line_h);
                text::draw(area, t, at, PX, (HPos::Left, VPos::Center))?;
            }
            y += entry_height(lines.len()) + ENTRY_GAP;
        }
        Ok(())
    }
}

fn entry_height(lines: usize) -> i32 {
    (lines.max(1) as f64 * PX * LINE).ceil() as i32
}
