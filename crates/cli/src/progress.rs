//! What the tools print while they work: progress bars on stderr with a total, the elapsed
//! time and an estimate of the time left, and whether stderr may be coloured.
//!
//! Colour follows <https://no-color.org>: a `NO_COLOR` variable with any non-empty value turns
//! it off; an empty one does not. Without a terminal there is neither colour nor bar.

use indicatif::{ProgressBar, ProgressStyle};
use std::ffi::OsString;
use std::io::IsTerminal;

/// Whether text for a terminal may carry colour, given whether it is a terminal and the
/// value of `NO_COLOR`.
pub fn colour_allowed(terminal: bool, no_color: Option<OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Whether stderr may be coloured.
pub fn stderr_colour() -> bool {
    colour_allowed(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR"),
    )
}

/// The template of a bar counting `unit` (`runs`), coloured or not.
fn template(unit: &str, colour: bool) -> String {
    let bar = if colour {
        "{bar:40.cyan/blue}"
    } else {
        "{bar:40}"
    };
    format!("{bar} {{pos}}/{{len}} {unit}  {{elapsed}} (eta {{eta}})  {{msg}}")
}

/// A bar on stderr counting to `total` `unit`, or None when stderr is not a terminal.
pub fn bar(total: u64, unit: &str) -> Option<ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template(&template(unit, stderr_colour()))
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_non_empty_no_color_turns_colour_off() {
        assert!(colour_allowed(true, None));
        assert!(colour_allowed(true, Some(OsString::new())));
        assert!(!colour_allowed(true, Some("1".into())));
        assert!(!colour_allowed(true, Some("false".into())));
        assert!(!colour_allowed(false, None));
    }

    #[test]
    fn a_bar_shows_its_total_and_the_time_left_and_colour_only_when_allowed() {
        let plain = template("runs", false);
        assert!(
            plain.contains("{pos}/{len} runs") && plain.contains("{eta}"),
            "{plain}"
        );
        assert!(!plain.contains("cyan"), "{plain}");
        assert!(template("runs", true).contains("cyan"));
        assert!(ProgressStyle::with_template(&plain).is_ok());
        assert!(ProgressStyle::with_template(&template("runs", true)).is_ok());
    }
}
