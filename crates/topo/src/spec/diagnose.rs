//! Locating TOML errors: turns the byte span of a `toml` error into file:line:column and the
//! dotted name of the key at fault (`cpu.freq_mhz`), so every error names its culprit.
//!
//! The `toml` crate reports *where* but not always *which key* (a type error only says "invalid
//! type: string, expected f64"). The key is recovered from the text: the nearest `key =` before
//! the span whose value is still open there (multi-line arrays), qualified by the enclosing
//! `[table]` header.

use crate::error::{TopoError, one_line};

pub fn toml_error(text: &str, origin: &str, e: &toml::de::Error) -> TopoError {
    let message = one_line(e.message());
    let mut start = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let (line, column) = line_col(text, start);
    let table = table_at(text, start);
    let qualify = |key: &str| match &table {
        // An unknown table is reported at its own header: the key is the table.
        Some(t) if t == key || t.ends_with(&format!(".{key}")) => t.clone(),
        Some(t) if !key.contains('.') => format!("{t}.{key}"),
        _ => key.to_string(),
    };
    if let Some(key) = quoted_after(&message, "unknown field `") {
        let valid = message
            .split_once("expected ")
            .map(|(_, v)| v.replace('`', "").trim_start_matches("one of ").to_string())
            .unwrap_or_default();
        return TopoError::UnknownKey {
            origin: origin.to_string(),
            line,
            column,
            key: qualify(&key),
            valid,
        };
    }
    let field = match quoted_after(&message, "missing field `") {
        Some(key) => qualify(&key),
        None => match key_at(text, start).or_else(|| first_word(text, start)) {
            Some(key) => qualify(&key),
            None => table.clone().unwrap_or_else(|| "(end of file)".to_string()),
        },
    };
    TopoError::Toml {
        origin: origin.to_string(),
        line,
        column,
        field,
        message,
    }
}

/// 1-based line and column (in characters) of byte offset `pos`.
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let before = &text[..pos];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// The text between `prefix` and the next backtick, if `s` contains `prefix`.
fn quoted_after(s: &str, prefix: &str) -> Option<String> {
    let rest = &s[s.find(prefix)? + prefix.len()..];
    Some(rest[..rest.find('`')?].to_string())
}

fn strip_comment(line: &str) -> &str {
    // Good enough for machine files: a '#' outside quotes starts a comment.
    let mut in_str = false;
    for (i, ch) in line.char_indices() {
        match ch {
            '"' | '\'' => in_str = !in_str,
            '#' if !in_str => return &line[..i],
            _ => {}
        }
    }
    line
}

/// `[table]` or `[[table]]` header name, if `line` is a header.
fn header_name(line: &str) -> Option<String> {
    let t = strip_comment(line).trim();
    let inner = t
        .strip_prefix("[[")
        .and_then(|r| r.strip_suffix("]]"))
        .or_else(|| t.strip_prefix('[').and_then(|r| r.strip_suffix(']')))?;
    let name = inner.trim().trim_matches('"');
    let bare = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    (bare && name.starts_with(|c: char| c.is_ascii_alphabetic())).then(|| name.to_string())
}

fn line_bounds(text: &str, pos: usize) -> (usize, usize) {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
    (start, end)
}

/// The table whose body contains `pos` (the header itself counts).
fn table_at(text: &str, pos: usize) -> Option<String> {
    let (start, end) = line_bounds(text, pos);
    if let Some(h) = header_name(&text[start..end]) {
        return Some(h);
    }
    text[..start].lines().rev().find_map(header_name)
}

/// The key whose value contains `pos`: the nearest `key =` before it whose value is still open
/// (a multi-line array) or on the same line.
fn key_at(text: &str, pos: usize) -> Option<String> {
    let (line_start, _) = line_bounds(text, pos);
    let mut depth = 0i64; // brackets closed minus opened between the candidate and `pos`
    let mut end = pos;
    let mut first = true;
    let mut cursor = line_start;
    loop {
        let segment = strip_comment(&text[cursor..end]);
        if header_name(segment).is_some() && !first {
            return None;
        }
        if let Some(eq) = segment.find('=') {
            let value = &segment[eq + 1..];
            let open =
                value.matches('[').count() as i64 + depth - value.matches(']').count() as i64;
            if first || open > 0 {
                let key = segment[..eq].trim().trim_matches('"').trim_matches('\'');
                if !key.is_empty() {
                    return Some(key.to_string());
                }
            }
            return None;
        }
        depth += segment.matches('[').count() as i64 - segment.matches(']').count() as i64;
        if cursor == 0 {
            return None;
        }
        end = cursor - 1;
        cursor = text[..end].rfind('\n').map_or(0, |i| i + 1);
        first = false;
    }
}

/// The first token of the line holding `pos`, unless the line is blank or a table header.
fn first_word(text: &str, pos: usize) -> Option<String> {
    let (start, end) = line_bounds(text, pos);
    let line = strip_comment(&text[start..end]);
    if header_name(line).is_some() {
        return None;
    }
    let word: String = line.split_whitespace().next()?.chars().take(40).collect();
    Some(word)
}
