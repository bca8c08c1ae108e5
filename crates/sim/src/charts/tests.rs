//! Charts checked from their SVG: every text's estimated extent inside the canvas, the key
//! and the bar labels off the plot, nothing written over anything else, whiskers drawn.

use super::*;

/// A `<text>` element: what it says and its estimated box (x0, y0, x1, y1).
#[derive(Debug)]
struct Placed {
    text: String,
    b: (f64, f64, f64, f64),
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(tag[at..].split('"').next()?.to_string())
}

fn num(tag: &str, name: &str) -> f64 {
    attr(tag, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

fn canvas(svg: &str) -> (f64, f64) {
    let tag = svg.split('>').next().unwrap_or("");
    (num(tag, "width"), num(tag, "height"))
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Every text element with its box, from the attributes plotters writes: the anchor
/// (`text-anchor`), the vertical offset (`dy`: top, centre or bottom), the font size and a
/// rotation about the anchor point.
fn texts(svg: &str) -> Vec<Placed> {
    svg.split("<text")
        .skip(1)
        .map(|rest| {
            let (tag, after) = rest.split_once('>').unwrap_or((rest, ""));
            let text = unescape(after.split("</text>").next().unwrap_or("").trim());
            let (x, y, fs) = (num(tag, "x"), num(tag, "y"), num(tag, "font-size"));
            let w = text::width(&text, fs);
            let (l, r) = match attr(tag, "text-anchor").as_deref() {
                Some("middle") => (-w / 2.0, w / 2.0),
                Some("end") => (-w, 0.0),
                _ => (0.0, w),
            };
            let (t, b) = match attr(tag, "dy").as_deref() {
                Some("0.76em") => (0.0, fs),
                Some("-0.5ex") => (-fs, 0.0),
                _ => (-fs / 2.0, fs / 2.0),
            };
            let b = match attr(tag, "transform").as_deref() {
                Some(t270) if t270.starts_with("rotate(270") => (x + t, y - r, x + b, y - l),
                Some(t90) if t90.starts_with("rotate(90") => (x - b, y + l, x - t, y + r),
                _ => (x + l, y + t, x + r, y + b),
            };
            Placed { text, b }
        })
        .collect()
}

/// The plot's outline.
fn frame_box(svg: &str) -> (f64, f64, f64, f64) {
    let colour = format!("stroke=\"#{:02X}{:02X}{:02X}\"", FRAME.0, FRAME.1, FRAME.2);
    let tag = svg
        .split("<rect")
        .find(|t| t.split('>').next().is_some_and(|t| t.contains(&colour)))
        .expect("the plot is outlined");
    let (x, y) = (num(tag, "x"), num(tag, "y"));
    (x, y, x + num(tag, "width"), y + num(tag, "height"))
}

fn overlap(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// Every text lies on the canvas.
fn all_on_canvas(svg: &str) {
    let (w, h) = canvas(svg);
    assert!(w > 0.0 && h > 0.0, "{svg}");
    for t in texts(svg) {
        let (x0, y0, x1, y1) = t.b;
        assert!(
            x0 >= 0.0 && y0 >= 0.0 && x1 <= w && y1 <= h,
            "`{}` at {:?} leaves the {w} x {h} canvas",
            t.text,
            t.b
        );
    }
}

/// The texts that are pieces of `labels` (four characters or more), which must stand off
/// the plot and apart from each other; their words together are the labels' words.
fn labels_off_the_plot(svg: &str, labels: &[String]) -> Vec<Placed> {
    let frame = frame_box(svg);
    let found: Vec<Placed> = texts(svg)
        .into_iter()
        .filter(|t| t.text.len() >= 4 && labels.iter().any(|l| l.contains(&t.text)))
        .collect();
    for (i, a) in found.iter().enumerate() {
        assert!(
            !overlap(a.b, frame),
            "`{}` {:?} on the plot {frame:?}",
            a.text,
            a.b
        );
        for b in &found[i + 1..] {
            assert!(!overlap(a.b, b.b), "`{}` over `{}`", a.text, b.text);
        }
    }
    let words = |s: &str| s.split_whitespace().collect::<String>();
    let drawn: String = found.iter().map(|t| words(&t.text)).collect();
    let wanted: String = labels.iter().map(|l| words(l)).collect();
    assert_eq!(drawn, wanted, "every label is drawn in full, in order");
    found
}

fn long_labels(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 3 {
            0 => format!("linux:numa_balancing=off + homenode:min_rss_mib=16 #{i}"),
            1 => format!("pool:pool_delay=0,initial_lb=off + numad, with a label far too long to stand on one line of any key #{i}"),
            _ => format!("o1 #{i}"),
        })
        .collect()
}

const LONG_TITLE: &str = "azusa-a-to-f: ElapsedTime on azusa16 (mean, whiskers +-1 stddev over 10 \
    repetitions), a title much longer than the chart is wide, so that it has to be wrapped";

#[test]
fn fourteen_series_with_long_names_keep_their_key_off_the_plot_and_on_the_canvas() {
    let labels = long_labels(14);
    let series: Vec<Series> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let pts: Vec<(f64, f64)> = [4.0, 8.0, 16.0, 32.0, 64.0]
                .iter()
                .map(|&n| (n, n * (1.0 + i as f64 / 10.0)))
                .collect();
            let whiskers = pts.iter().map(|p| (p.1 * 0.95, p.1 * 1.05)).collect();
            Series {
                label: l.clone(),
                points: pts,
                whiskers,
            }
        })
        .collect();
    let svg = line_chart(LONG_TITLE, "N (tasks)", "seconds", &series).unwrap();
    all_on_canvas(&svg);
    labels_off_the_plot(&svg, &labels);
    // The title is wrapped: more than one line, each on the canvas (checked above).
    let title_lines = texts(&svg)
        .iter()
        .filter(|t| LONG_TITLE.contains(&t.text) && t.text.len() > 20)
        .count();
    assert!(title_lines >= 2, "{svg}");
    // Twelve colours at least, and the first series' whiskers: a stem and two caps per point.
    let colours: std::collections::BTreeSet<String> = svg
        .split("<polyline")
        .skip(1)
        .filter_map(|t| attr(t, "stroke"))
        .collect();
    assert!(colours.len() >= 13, "{colours:?}"); // 12 series colours and the axes'
    let c = &style::PALETTE[2];
    let thin = format!(
        "stroke=\"#{:02X}{:02X}{:02X}\" stroke-width=\"1\"",
        c.0, c.1, c.2
    );
    assert_eq!(svg.matches(&thin).count(), 5 * 3, "{svg}");
}

#[test]
fn twenty_series_against_time_grow_the_canvas_to_hold_the_key() {
    let labels: Vec<String> = (0..20).map(|n| format!("node {n}")).collect();
    let series: Vec<Series> = labels
        .iter()
        .enumerate()
        .map(|(n, l)| {
            let pts = (0..100).map(|t| (f64::from(t) * 0.5, (t as usize * n) as f64 / 50.0));
            Series::new(l.clone(), pts.collect())
        })
        .collect();
    let svg = time_chart("numa01 (numa_balancing=on)", "time (s)", "GiB", &series).unwrap();
    all_on_canvas(&svg);
    labels_off_the_plot(&svg, &labels);
    assert!(canvas(&svg).1 > 400.0, "{:?}", canvas(&svg));
}

#[test]
fn sixteen_bars_with_long_labels_are_labelled_beside_the_plot() {
    let labels = long_labels(16);
    let bars: Vec<Bar> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| Bar {
            label: l.clone(),
            mean: 10.0 + i as f64,
            min: 9.0 + i as f64,
            max: 11.5 + i as f64,
        })
        .collect();
    let svg = bar_chart(LONG_TITLE, "seconds", &bars).unwrap();
    all_on_canvas(&svg);
    labels_off_the_plot(&svg, &labels);
    // Every bar's value is written at its end, apart from the others.
    let values: Vec<Placed> = texts(&svg)
        .into_iter()
        .filter(|t| bars.iter().any(|b| axis::value(b.mean, 30.0) == t.text))
        .collect();
    assert!(values.len() >= bars.len(), "{values:?}");
}

#[test]
fn bars_of_close_values_get_an_axis_that_shows_the_difference_and_says_so() {
    let bars = [
        Bar::single("a", 95.0),
        Bar::single("b", 97.5),
        Bar::single("c", 100.0),
    ];
    let svg = bar_chart("close", "seconds", &bars).unwrap();
    all_on_canvas(&svg);
    assert!(
        texts(&svg).iter().any(|t| t.text.contains("not 0")),
        "{svg}"
    );
    let fill = format!(
        "fill=\"#{:02X}{:02X}{:02X}\"",
        style::PALETTE[0].0,
        style::PALETTE[0].1,
        style::PALETTE[0].2
    );
    let widths: Vec<f64> = svg
        .split("<rect")
        .filter(|t| t.split('>').next().is_some_and(|t| t.contains(&fill)))
        .map(|t| num(t, "width"))
        .collect();
    assert_eq!(widths.len(), 3, "{svg}");
    // From 0, the 95 bar would be 95% of the 100 bar; here it is much shorter.
    assert!(widths[0] < 0.6 * widths[2], "{widths:?}");
}

#[test]
fn same_input_same_bytes() {
    let s = vec![
        Series::new("sched-a", vec![(4.0, 10.5), (8.0, 21.0), (16.0, 40.25)]),
        Series::new("sched <b> & c", vec![(4.0, 9.0), (16.0, 35.0)]),
    ];
    let a = line_chart("N chart", "N (tasks)", "seconds", &s).unwrap();
    assert_eq!(
        a,
        line_chart("N chart", "N (tasks)", "seconds", &s).unwrap()
    );
    let t = time_chart("memory", "time (s)", "GiB", &s).unwrap();
    assert_eq!(t, time_chart("memory", "time (s)", "GiB", &s).unwrap());
    let bars = [Bar::single("x", 1.0), Bar::single("y", 2.5)];
    assert_eq!(
        bar_chart("bars", "seconds", &bars).unwrap(),
        bar_chart("bars", "seconds", &bars).unwrap()
    );
    // Text is escaped, and the chart names its title, axes and series.
    assert!(a.starts_with("<svg") && a.ends_with("</svg>\n"), "{a}");
    let said: Vec<String> = texts(&a).into_iter().map(|t| t.text).collect();
    for want in [
        "N chart",
        "N (tasks)",
        "seconds",
        "sched-a",
        "sched <b> & c",
        "16",
    ] {
        assert!(
            said.iter().any(|t| t == want),
            "{want} missing from {said:?}"
        );
    }
    assert!(a.contains("sched &lt;b&gt; &amp; c"), "{a}");
}

#[test]
fn degenerate_inputs_still_draw() {
    assert!(
        line_chart("empty", "x", "y", &[])
            .unwrap()
            .contains("empty")
    );
    assert!(bar_chart("none", "y", &[]).unwrap().contains("none"));
    let one = [Series::new("only", vec![(1.0, f64::NAN), (2.0, 0.0)])];
    assert!(time_chart("flat", "x", "y", &one).unwrap().contains("only"));
    assert!(line_chart("one", "x", "y", &one).unwrap().contains("only"));
    let neg = [
        Bar::single("down by a label as long as the rest", -3.0),
        Bar::single("up", 8.0),
    ];
    let svg = bar_chart("signed", "%", &neg).unwrap();
    all_on_canvas(&svg);
    let labels = ["down by a label as long as the rest".to_string()];
    let label = &labels_off_the_plot(&svg, &labels)[0];
    let value = texts(&svg)
        .into_iter()
        .find(|t| t.text == "-3.0")
        .expect("value");
    assert!(!overlap(label.b, value.b), "{label:?} {value:?}");
}

#[test]
fn a_scatter_is_square_around_zero_with_its_key_off_the_plot() {
    let labels = vec![
        "direction agrees".to_string(),
        "direction differs".to_string(),
    ];
    let agree = vec![(10.0, 8.0), (-30.0, -12.0), (150.0, 90.0)];
    let differ = vec![(5.0, -3.0)];
    let series = vec![
        Series::new(labels[0].clone(), agree),
        Series::new(labels[1].clone(), differ),
    ];
    let svg = scatter_chart(
        "Simulated vs published effect",
        "published",
        "simulated",
        &series,
    )
    .unwrap();
    all_on_canvas(&svg);
    labels_off_the_plot(&svg, &labels);
    let (x0, y0, x1, y1) = frame_box(&svg);
    assert!(
        ((x1 - x0) - (y1 - y0)).abs() < 4.0,
        "{:?}",
        (x0, y0, x1, y1)
    );
    // The axes run from -lim to lim, lim the largest magnitude (150) rounded to a tick.
    let ticks: Vec<String> = texts(&svg).into_iter().map(|t| t.text).collect();
    assert_eq!(
        ticks.iter().filter(|t| *t == "-150").count(),
        2,
        "{ticks:?}"
    );
    assert_eq!(ticks.iter().filter(|t| *t == "150").count(), 2, "{ticks:?}");
}

#[test]
fn a_scatter_leaves_out_points_it_cannot_place_and_repeats_its_bytes() {
    let with_nan = vec![Series::new(
        "agrees",
        vec![(10.0, 12.0), (-20.0, -5.0), (f64::NAN, 1.0)],
    )];
    let without = vec![Series::new("agrees", vec![(10.0, 12.0), (-20.0, -5.0)])];
    let a = scatter_chart("effects", "published", "simulated", &with_nan).unwrap();
    let b = scatter_chart("effects", "published", "simulated", &without).unwrap();
    assert_eq!(a, b, "a NaN point draws nothing");
    assert_eq!(
        a,
        scatter_chart("effects", "published", "simulated", &with_nan).unwrap()
    );
}
