//! A CPU (or node) bit set of any size: masks are never capped at 64 entries.

use std::fmt;

/// A set of small integer ids (CPUs or nodes), stored as a growable bit vector.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet {
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> Self {
        Self { words: Vec::new() }
    }

    /// The set `{0, 1, ..., n-1}`.
    pub fn full(n: usize) -> Self {
        let mut s = Self::new();
        if n > 0 {
            s.insert_range(0, n - 1);
        }
        s
    }

    /// Adds `a..=b` a word at a time (a range of a million ids is 16 K word writes, not a
    /// million bit writes).
    pub fn insert_range(&mut self, a: usize, b: usize) {
        if a > b {
            return;
        }
        let (wa, wb) = (a / 64, b / 64);
        if wb >= self.words.len() {
            self.words.resize(wb + 1, 0);
        }
        for w in wa..=wb {
            let lo = if w == wa { a % 64 } else { 0 };
            let hi = if w == wb { b % 64 } else { 63 };
            let width = hi - lo + 1;
            let bits = if width == 64 {
                u64::MAX
            } else {
                ((1u64 << width) - 1) << lo
            };
            self.words[w] |= bits;
        }
    }

    /// A set holding exactly one id.
    pub fn single(id: usize) -> Self {
        let mut s = Self::new();
        s.insert(id);
        s
    }

    pub fn insert(&mut self, id: usize) {
        let w = id / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (id % 64);
    }

    pub fn remove(&mut self, id: usize) {
        if let Some(word) = self.words.get_mut(id / 64) {
            *word &= !(1u64 << (id % 64));
        }
        self.trim();
    }

    pub fn contains(&self, id: usize) -> bool {
        self.words
            .get(id / 64)
            .is_some_and(|w| w & (1u64 << (id % 64)) != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Lowest id in the set.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// Ids in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut bits = w;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(wi * 64 + b)
            })
        })
    }

    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, &w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().max(other.words.len());
        let words = (0..n)
            .map(|i| {
                self.words.get(i).copied().unwrap_or(0) | other.words.get(i).copied().unwrap_or(0)
            })
            .collect();
        CpuSet { words }
    }

    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let mut s = CpuSet {
            words: self
                .words
                .iter()
                .zip(&other.words)
                .map(|(a, b)| a & b)
                .collect(),
        };
        s.trim();
        s
    }

    /// Kernel-style list format, e.g. `0-3,8,10-11`.
    pub fn to_list_string(&self) -> String {
        let mut out = String::new();
        let mut it = self.iter().peekable();
        while let Some(start) = it.next() {
            let mut end = start;
            while it.peek() == Some(&(end + 1)) {
                end = it.next().unwrap_or(end);
            }
            if !out.is_empty() {
                out.push(',');
            }
            if start == end {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        out
    }

    /// Parse the kernel's list format (`0-3,8,10-11`; empty string = empty set), as found in
    /// sysfs `cpulist` files. Ids up to 2^20 - 1.
    pub fn parse_list(s: &str) -> Result<CpuSet, CpuListError> {
        CpuSet::parse_list_below(s, 1 << 20, "CPU")
    }

    /// [`CpuSet::parse_list`] for ids below `limit`; `what` names them in errors ("CPU",
    /// "node").
    pub fn parse_list_below(s: &str, limit: usize, what: &str) -> Result<CpuSet, CpuListError> {
        let mut set = CpuSet::new();
        for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let num = |x: &str| {
                x.trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n < limit)
                    .ok_or_else(|| CpuListError::NotANumber {
                        item: x.trim().to_string(),
                        what: what.to_string(),
                        list: s.to_string(),
                        max: limit - 1,
                    })
            };
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b {
                        return Err(CpuListError::Backwards {
                            range: part.to_string(),
                            what: what.to_string(),
                            list: s.to_string(),
                        });
                    }
                    set.insert_range(a, b);
                }
                None => set.insert(num(part)?),
            }
        }
        Ok(set)
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }
}

/// A CPU or node list (`0-3,8`) that does not parse, naming the item and the list.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    #[error("`{item}` in {what} list `{list}` is not a {what} number (0 to {max})")]
    NotANumber {
        item: String,
        what: String,
        list: String,
        max: usize,
    },
    #[error("range `{range}` in {what} list `{list}` runs backwards")]
    Backwards {
        range: String,
        what: String,
        list: String,
    },
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut s = CpuSet::new();
        for i in iter {
            s.insert(i);
        }
        s
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{}}}", self.to_list_string())
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list_string())
    }
}

impl serde::Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_list_string())
    }
}

impl<'de> serde::Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        CpuSet::parse_list(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranges_fill_by_words_and_limits_name_the_kind() {
        let mut s = super::CpuSet::new();
        s.insert_range(3, 130);
        assert_eq!(s.count(), 128);
        assert!(!s.contains(2) && s.contains(3) && s.contains(64) && s.contains(130));
        assert!(!s.contains(131));
        assert_eq!(super::CpuSet::full(64).count(), 64);
        assert_eq!(super::CpuSet::full(0).count(), 0);
        let big = super::CpuSet::parse_list("0-1048575").expect("largest");
        assert_eq!(big.count(), 1 << 20);
        let e = super::CpuSet::parse_list_below("0-1024", 1024, "node").expect_err("cap");
        assert!(
            e.to_string().contains("not a node number (0 to 1023)"),
            "{e}"
        );
    }
    use super::*;

    #[test]
    fn list_round_trip_and_errors() {
        let s = CpuSet::parse_list("0-3, 8,10-11").expect("list");
        assert_eq!(s.to_list_string(), "0-3,8,10-11");
        assert_eq!(CpuSet::parse_list("").expect("empty"), CpuSet::new());
        assert!(
            CpuSet::parse_list("3-1")
                .unwrap_err()
                .to_string()
                .contains("backwards")
        );
        assert!(
            CpuSet::parse_list("x")
                .unwrap_err()
                .to_string()
                .contains("`x`")
        );
        assert!(CpuSet::parse_list("99999999").is_err());
    }

    #[test]
    fn beyond_64() {
        let s: CpuSet = [0, 63, 64, 200].into_iter().collect();
        assert_eq!(s.count(), 4);
        assert!(s.contains(200) && !s.contains(199));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 63, 64, 200]);
        assert_eq!(s.to_list_string(), "0,63-64,200");
    }

    #[test]
    fn set_ops() {
        let a = CpuSet::full(8);
        let b: CpuSet = [6, 7, 8, 9].into_iter().collect();
        assert_eq!(a.intersection(&b).to_list_string(), "6-7");
        assert_eq!(a.union(&b).to_list_string(), "0-9");
        assert!(a.intersects(&b));
        assert!(!b.is_subset(&a));
        assert!(a.intersection(&b).is_subset(&a));
        let mut c = b.clone();
        for i in 6..10 {
            c.remove(i);
        }
        assert!(c.is_empty());
        assert_eq!(c, CpuSet::new());
    }
}
