//! The mutator: small, structure-blind edits of a valid input, the kinds that found bugs in
//! hand-written parsers before (cut lines, huge or negative numbers, stray control characters,
//! duplicated or swapped lines, random bytes). Deterministic for a seed.

use rand::Rng as _;
use rand::seq::SliceRandom as _;
use rand_chacha::ChaCha8Rng;

/// Numbers that sit on the edges parsers get wrong.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1e9",
    "1e30",
    "-1e30",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "NaN",
    "inf",
    "-0",
    "1048575",
    "65536",
    "0x10",
    "1.5",
    "",
];

/// Pieces of text that change how a line is read.
const PIECES: &[&str] = &[
    "\n",
    "\r\n",
    "\t",
    " ",
    "  ",
    ":",
    "=",
    ",",
    "-",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    "\\",
    "\0",
    "\u{1b}[2J",
    "é",
    "#",
    "=N",
    "N1=",
    "cpu",
    "numa_",
    "0-",
    "-0",
];

/// One mutated copy of `seed` (one to four edits).
pub fn mutate(rng: &mut ChaCha8Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        edit(rng, &mut v);
    }
    v
}

fn edit(rng: &mut ChaCha8Rng, v: &mut Vec<u8>) {
    let at = |rng: &mut ChaCha8Rng, v: &Vec<u8>| rng.gen_range(0..=v.len());
    match rng.gen_range(0..10) {
        // Truncate.
        0 => {
            let n = at(rng, v);
            v.truncate(n);
        }
        // Flip a byte.
        1 if !v.is_empty() => {
            let i = rng.gen_range(0..v.len());
            v[i] = rng.r#gen();
        }
        // Replace a run of digits with an edge number.
        2 => replace_number(rng, v),
        // Insert a piece.
        3 => {
            let i = at(rng, v);
            let p = PIECES.choose(rng).copied().unwrap_or("\n");
            v.splice(i..i, p.bytes());
        }
        // Delete a span.
        4 if !v.is_empty() => {
            let a = rng.gen_range(0..v.len());
            let b = (a + rng.gen_range(1..32)).min(v.len());
            v.drain(a..b);
        }
        // Duplicate or drop a line, or swap two.
        5 | 6 => lines(rng, v),
        // Random bytes.
        7 => {
            let i = at(rng, v);
            let n = rng.gen_range(1..16);
            let bytes: Vec<u8> = (0..n).map(|_| rng.r#gen()).collect();
            v.splice(i..i, bytes);
        }
        // Repeat a span many times (long lines, many entries).
        8 if !v.is_empty() => {
            let a = rng.gen_range(0..v.len());
            let b = (a + rng.gen_range(1..64)).min(v.len());
            let span = v[a..b].to_vec();
            let times = rng.gen_range(2..200);
            let rep: Vec<u8> = span
                .iter()
                .copied()
                .cycle()
                .take(span.len() * times)
                .collect();
            v.splice(b..b, rep);
        }
        _ => replace_number(rng, v),
    }
}

fn replace_number(rng: &mut ChaCha8Rng, v: &mut Vec<u8>) {
    let starts: Vec<usize> = (0..v.len())
        .filter(|&i| v[i].is_ascii_digit() && (i == 0 || !v[i - 1].is_ascii_digit()))
        .collect();
    let Some(&a) = starts.choose(rng) else {
        return;
    };
    let b = (a..v.len())
        .find(|&i| !v[i].is_ascii_digit())
        .unwrap_or(v.len());
    let n = NUMBERS.choose(rng).copied().unwrap_or("0");
    v.splice(a..b, n.bytes());
}

fn lines(rng: &mut ChaCha8Rng, v: &mut Vec<u8>) {
    let mut ls: Vec<Vec<u8>> = v.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if ls.is_empty() {
        return;
    }
    let i = rng.gen_range(0..ls.len());
    match rng.gen_range(0..3) {
        0 => {
            let l = ls[i].clone();
            ls.insert(i, l);
        }
        1 => {
            ls.remove(i);
        }
        _ => {
            let j = rng.gen_range(0..ls.len());
            ls.swap(i, j);
        }
    }
    *v = ls.join(&b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng as _;

    #[test]
    fn deterministic_for_a_seed_and_changes_the_input() {
        let seed = b"numa_hit 10\nnuma_miss 2\n";
        let a: Vec<Vec<u8>> = {
            let mut r = ChaCha8Rng::seed_from_u64(7);
            (0..50).map(|_| mutate(&mut r, seed)).collect()
        };
        let mut r = ChaCha8Rng::seed_from_u64(7);
        let b: Vec<Vec<u8>> = (0..50).map(|_| mutate(&mut r, seed)).collect();
        assert_eq!(a, b);
        assert!(a.iter().filter(|m| m.as_slice() != seed).count() > 40);
    }
}
