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

fn needs_escape(c: char) -> bool {
    c.is_control() || c == '\\' || invisible_layout(c)
}

/// `s` with every control character escaped (`\n`, `\r`, `\t` by name, the others as
/// `\u{..}`), the layout characters of the module doc as `\u{..}` and a backslash as `\\`;
/// everything else is kept. Borrowed when there is nothing to escape.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || invisible_layout(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
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
