//! Counts in text: `count(1, "node")` is "1 node", `count(4, "node")` "4 nodes".

use std::fmt::Display;

/// `n` and `noun` (singular), the noun in its plural unless `n` is 1: nouns ending in s, x,
/// ch or sh take "es", a consonant and y "ies", every other "s" ("CPU", "CPUs").
pub fn count(n: impl Display, noun: &str) -> String {
    let n = n.to_string();
    if n == "1" {
        return format!("1 {noun}");
    }
    format!("{n} {}", plural(noun))
}

/// The plural of `noun`.
pub fn plural(noun: &str) -> String {
    let ends = |s: &str| noun.ends_with(s);
    if ends("s") || ends("x") || ends("ch") || ends("sh") {
        format!("{noun}es")
    } else if let Some(stem) = noun.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "node"), "1 node");
        assert_eq!(count(1u64, "task"), "1 task");
        assert_eq!(count(0, "node"), "0 nodes");
        assert_eq!(count(2, "CPU"), "2 CPUs");
        assert_eq!(count(3, "process"), "3 processes");
        assert_eq!(count(1, "process"), "1 process");
        assert_eq!(count(5, "entry"), "5 entries");
        assert_eq!(count(5, "day"), "5 days");
        assert_eq!(count(2, "pass"), "2 passes");
        assert_eq!(count(10, "repetition"), "10 repetitions");
    }
}
