//! Text that came from outside (a process's name or command line, a file, the command line)
//! made safe to log or print: control characters are escaped, so a process named
//! `x\nERROR forged` cannot forge a log line, and a name with terminal escape sequences cannot
//! rewrite the operator's screen. So are the Unicode line and paragraph separators (which
//! some viewers break lines at) and the bidirectional formatting characters (which make text
//! read in another order than it is stored, U+202E above all), and the backslash itself, so
//! that an escape in the output always stands for one in the input.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Characters escaped besides the control characters: line and paragraph separators and the
/// bidirectional formatting characters (Unicode's Bidi_Control set).
fn invisible_layout(c: char) -> bool {
    matches!(
        c,
        '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// `s` with every control character escaped (`\n`, `\r`, `\t` by name, the others as
/// `\u{..}`), the layout characters of the module doc as `\u{..}` and a backslash as `\\`;
/// everything else is kept. Borrowed when there is nothing to escape.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// As [`escape_control`], for text that is already in Rust's `Debug` form (a quoted string,
/// whose backslashes already stand for escapes): the backslash is kept as it is.
pub fn escape_control_in_debug(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

fn escape(s: &str, backslash: bool) -> Cow<'_, str> {
    let needs = |c: char| c.is_control() || (backslash && c == '\\') || invisible_layout(c);
    if !s.chars().any(needs) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' if backslash => out.push_str("\\\\"),
            c if c.is_control() || invisible_layout(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Output text (a report, a table, a JSON document) made safe for a terminal: every control
/// character but line feed and tab, and the layout characters of the module doc, becomes a
/// JSON-style `\uXXXX` escape. Valid JSON stays valid and means the same (its writer escapes
/// the C0 controls inside strings already; this escapes DEL, the C1 controls and the layout
/// characters it leaves raw), and names read from input files cannot move the cursor, clear
/// the screen or reorder a line. Borrowed when there is nothing to escape.
pub fn terminal_safe(s: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && c != '\n' && c != '\t') || invisible_layout(c);
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            // Every such character is in the Basic Multilingual Plane: four digits suffice.
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_plain_text_borrowed() {
        assert!(matches!(escape_control("bash"), Cow::Borrowed("bash")));
        assert_eq!(escape_control("x\nERROR forged"), "x\\nERROR forged");
        assert_eq!(
            escape_control("a\r\tb\u{1b}[2J\u{7f}"),
            "a\\r\\tb\\u{1b}[2J\\u{7f}"
        );
        assert_eq!(escape_control("ünïcode ok"), "ünïcode ok");
    }

    #[test]
    fn terminal_output_keeps_lines_and_tabs_and_valid_json() {
        assert!(matches!(terminal_safe("a\tb\nc\\d"), Cow::Borrowed(_)));
        assert_eq!(
            terminal_safe("x\u{1b}[2J\ry\u{7f}\u{202e}z\n"),
            "x\\u001b[2J\\u000dy\\u007f\\u202ez\n"
        );
        let doc = serde_json::json!({ "name": "evil\u{1b}[31m\u{85}\u{202e}\u{2028}" }).to_string();
        let safe = terminal_safe(&doc);
        assert!(
            !safe.chars().any(|c| c.is_control() || invisible_layout(c)),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back["name"], "evil\u{1b}[31m\u{85}\u{202e}\u{2028}");
    }

    #[test]
    fn separators_bidi_overrides_and_backslashes_are_escaped() {
        assert_eq!(
            escape_control("a\u{2028}b\u{2029}c"),
            "a\\u{2028}b\\u{2029}c"
        );
        // A name that would read "exe.txt" while being "txt.exe".
        assert_eq!(escape_control("x\u{202e}txt.exe"), "x\\u{202e}txt.exe");
        assert_eq!(escape_control("\u{2066}a\u{2069}"), "\\u{2066}a\\u{2069}");
        // A literal backslash-n in a name is told from an escaped line feed.
        assert_eq!(escape_control("x\\nERROR"), "x\\\\nERROR");
        assert_ne!(escape_control("x\\n"), escape_control("x\n"));
    }
}
