//! Text that came from outside (a process's name or command line, a file, the command line)
//! made safe to log or print: control characters are escaped, so a process named
//! `x\nERROR forged` cannot forge a log line, and a name with terminal escape sequences cannot
//! rewrite the operator's screen.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `s` with every control character escaped: `\n`, `\r`, `\t` by name, the others as
/// `\u{..}`; everything else is kept. Borrowed when there is nothing to escape.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
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
}
