//! How series are told apart: twelve colours, five marker shapes and three line patterns.
//! Series `i` takes colour `i mod 12`, marker `i mod 5` and pattern `(i / 6) mod 3`, so two
//! series of neighbouring hues also differ in marker and, from the seventh on, in pattern.

use super::{Area, DrawError};
use plotters::prelude::*;

/// Twelve colours of distinct hue and lightness, dark enough to read on white.
pub const PALETTE: [RGBColor; 12] = [
    RGBColor(0x1f, 0x5f, 0xbf), // blue
    RGBColor(0xe8, 0x71, 0x0a), // orange
    RGBColor(0x1a, 0x96, 0x41), // green
    RGBColor(0xd7, 0x19, 0x1c), // red
    RGBColor(0x7b, 0x3f, 0xbf), // purple
    RGBColor(0x8c, 0x5a, 0x2b), // brown
    RGBColor(0xe0, 0x3c, 0xa0), // magenta
    RGBColor(0x5a, 0x5a, 0x5a), // grey
    RGBColor(0x9a, 0x9a, 0x00), // olive
    RGBColor(0x10, 0xa5, 0xb8), // teal
    RGBColor(0x0b, 0x2a, 0x6f), // navy
    RGBColor(0xd9, 0xa4, 0x00), // gold
];

/// A point marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
}

/// A line pattern: (drawn, gap) lengths in pixels, or none for a solid line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
}

/// The look of series `i`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Look {
    pub colour: RGBColor,
    pub marker: Marker,
    pub dash: Dash,
}

pub fn look(i: usize) -> Look {
    const MARKERS: [Marker; 5] = [
        Marker::Circle,
        Marker::Square,
        Marker::Triangle,
        Marker::Diamond,
        Marker::Cross,
    ];
    const DASHES: [Dash; 3] = [Dash::Solid, Dash::Dashed, Dash::Dotted];
    Look {
        colour: PALETTE[i % PALETTE.len()],
        marker: MARKERS[i % MARKERS.len()],
        dash: DASHES[(i / 6) % DASHES.len()],
    }
}

impl Look {
    /// Draws the marker centred on `(x, y)`.
    pub fn mark(&self, area: &Area<'_>, (x, y): (i32, i32)) -> Result<(), DrawError> {
        let fill = self.colour.filled();
        match self.marker {
            Marker::Circle => area.draw(&Circle::new((x, y), 4, fill)),
            Marker::Square => area.draw(&Rectangle::new([(x - 3, y - 3), (x + 3, y + 3)], fill)),
            Marker::Triangle => area.draw(&Polygon::new(
                vec![(x, y - 5), (x - 5, y + 4), (x + 5, y + 4)],
                fill,
            )),
            Marker::Diamond => area.draw(&Polygon::new(
                vec![(x, y - 5), (x + 4, y), (x, y + 5), (x - 4, y)],
                fill,
            )),
            Marker::Cross => {
                let s = self.colour.stroke_width(2);
                area.draw(&PathElement::new(vec![(x - 4, y - 4), (x + 4, y + 4)], s))?;
                area.draw(&PathElement::new(vec![(x - 4, y + 4), (x + 4, y - 4)], s))
            }
        }
    }

    /// Draws the polyline through `points` in the series' colour and pattern.
    pub fn line(&self, area: &Area<'_>, points: &[(i32, i32)]) -> Result<(), DrawError> {
        let s = self.colour.stroke_width(2);
        for piece in dashes(points, self.dash) {
            area.draw(&PathElement::new(piece, s))?;
        }
        Ok(())
    }
}

/// The drawn pieces of a polyline in pattern `dash`; the pattern runs on across corners.
pub fn dashes(points: &[(i32, i32)], dash: Dash) -> Vec<Vec<(i32, i32)>> {
    let (on, off) = match dash {
        Dash::Solid => return vec![points.to_vec()],
        Dash::Dashed => (9.0, 5.0),
        Dash::Dotted => (2.5, 4.0),
    };
    let mut out = Vec::new();
    let mut cur: Vec<(i32, i32)> = Vec::new();
    // Distance left in the current phase, and whether it is drawn.
    let (mut left, mut drawn) = (on, true);
    for w in points.windows(2) {
        let (a, b) = (
            (f64::from(w[0].0), f64::from(w[0].1)),
            (f64::from(w[1].0), f64::from(w[1].1)),
        );
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let at = |t: f64| {
            let f = if len > 0.0 { t / len } else { 0.0 };
            (
                (a.0 + f * (b.0 - a.0)).round() as i32,
                (a.1 + f * (b.1 - a.1)).round() as i32,
            )
        };
        let mut t = 0.0;
        if drawn && cur.is_empty() {
            cur.push(at(0.0));
        }
        while len - t > left {
            t += left;
            if drawn {
                cur.push(at(t));
                out.push(std::mem::take(&mut cur));
                left = off;
            } else {
                cur.push(at(t));
                left = on;
            }
            drawn = !drawn;
        }
        left -= len - t;
        if drawn {
            cur.push(at(len));
        }
    }
    if cur.len() > 1 {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eighteen_series_look_different_and_neighbours_differ_in_colour_and_marker() {
        let looks: Vec<Look> = (0..18).map(look).collect();
        for (i, a) in looks.iter().enumerate() {
            for b in &looks[i + 1..] {
                assert_ne!((a.colour, a.marker, a.dash), (b.colour, b.marker, b.dash));
            }
        }
        for w in looks.windows(2) {
            assert!(w[0].colour != w[1].colour && w[0].marker != w[1].marker);
        }
        let mut colours: Vec<_> = PALETTE.iter().map(|c| (c.0, c.1, c.2)).collect();
        colours.dedup();
        assert_eq!(colours.len(), 12);
    }

    #[test]
    fn a_dashed_line_is_cut_into_pieces_along_its_length() {
        let pieces = dashes(&[(0, 0), (100, 0)], Dash::Dashed);
        // 100 px of 9 drawn, 5 left out: seven pieces and the start of an eighth.
        assert_eq!(pieces.len(), 8, "{pieces:?}");
        assert_eq!(pieces[0], vec![(0, 0), (9, 0)]);
        assert_eq!(pieces[1][0], (14, 0));
        assert_eq!(
            dashes(&[(0, 0), (5, 5)], Dash::Solid),
            vec![vec![(0, 0), (5, 5)]]
        );
        // The pattern runs on across a corner.
        let bent = dashes(&[(0, 0), (6, 0), (6, 6)], Dash::Dashed);
        assert_eq!(bent[0], vec![(0, 0), (6, 0), (6, 3)]);
    }
}
