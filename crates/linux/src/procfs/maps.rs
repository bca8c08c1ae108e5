//! `/proc/PID/maps`: the address ranges of a process's mappings
//! (`START-END PERMS OFFSET DEV INODE [PATH]`).
//!
//! `numa_maps` gives each mapping's start and its pages per node but not its end; to move a
//! mapping's pages with [`crate::migrate::move_pages`], join the two on the start address and
//! take the page addresses from here ([`Mapping::page_addresses`]). Cheaper than `numa_maps`
//! (no page-table walk).

use std::path::Path;

use crate::error::ProcError;
use crate::{Live, Pid};

/// One line of `maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// `rwxp` / `rw-s`: read, write, execute, private or shared.
    pub perms: String,
    pub offset: u64,
    pub inode: u64,
    /// The file, `[heap]`, `[stack]`, `[vdso]`, ... or empty for anonymous memory.
    pub path: String,
}

impl Mapping {
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Private (copy-on-write) rather than shared.
    pub fn is_private(&self) -> bool {
        self.perms.as_bytes().get(3) == Some(&b'p')
    }

    /// The address of every page of the mapping, for pages of `page_bytes` bytes.
    pub fn page_addresses(&self, page_bytes: u64) -> impl Iterator<Item = usize> + '_ {
        let step = page_bytes.max(1);
        (0..self.len().div_ceil(step)).map(move |i| (self.start + i * step) as usize)
    }
}

/// Parses the text of `maps`. Reasons name the line.
pub fn parse(text: &str) -> Result<Vec<Mapping>, crate::error::ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let mut rest = line;
        let mut next = |what: &str| -> Result<&str, crate::error::ParseError> {
            let t = rest.trim_start();
            let end = t.find(' ').unwrap_or(t.len());
            if end == 0 {
                return Err(crate::error::ParseError::from(format!(
                    "line {ln}: no {what} (truncated?)"
                )));
            }
            rest = &t[end..];
            Ok(&t[..end])
        };
        let range = next("address range")?;
        let perms = next("permissions")?.to_string();
        let offset = next("offset")?;
        let _dev = next("device")?;
        let inode = next("inode")?;
        let path = rest.trim_start().to_string();
        let hex = |what: &str, v: &str| {
            u64::from_str_radix(v, 16).map_err(|_| {
                crate::error::ParseError::from(format!(
                    "line {ln}: {what} `{v}` is not hexadecimal"
                ))
            })
        };
        let (s, e) = range.split_once('-').ok_or_else(|| {
            crate::error::ParseError::from(format!("line {ln}: address range `{range}` has no `-`"))
        })?;
        let (start, end) = (hex("start", s)?, hex("end", e)?);
        if end < start {
            return Err(crate::error::ParseError::from(format!(
                "line {ln}: address range `{range}` runs backwards"
            )));
        }
        out.push(Mapping {
            start,
            end,
            perms,
            offset: hex("offset", offset)?,
            inode: inode.parse().map_err(|_| {
                crate::error::ParseError::from(format!(
                    "line {ln}: inode `{inode}` is not a number"
                ))
            })?,
            path,
        });
    }
    Ok(out)
}

/// Reads `ROOT/proc/PID/maps`. `Gone` when the process has exited.
pub fn read(root: &Path, pid: Pid) -> Result<Live<Vec<Mapping>>, ProcError> {
    super::with_dir(root, pid, |d| d.maps())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
55d0c8a00000-55d0c8a02000 r--p 00000000 fe:00 1311 /usr/bin/my prog
55d0c9000000-55d0c9021000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000004000 rw-s 00000000 00:01 1234 /dev/shm/x
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0
";

    #[test]
    fn lines() {
        let m = parse(TEXT).expect("parses");
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].path, "/usr/bin/my prog");
        assert_eq!(m[0].inode, 1311);
        assert_eq!(m[1].path, "[heap]");
        assert_eq!(m[1].len(), 0x21000);
        assert!(m[1].is_private() && !m[2].is_private());
        assert_eq!(m[3].path, "");
        let pages: Vec<usize> = m[2].page_addresses(4096).collect();
        assert_eq!(
            pages,
            vec![
                0x7f0000000000,
                0x7f0000001000,
                0x7f0000002000,
                0x7f0000003000
            ]
        );
    }

    #[test]
    fn malformed() {
        assert!(
            parse("zz-10 r--p 0 00:00 0\n")
                .unwrap_err()
                .contains("start `zz`")
        );
        assert!(
            parse("10-5 r--p 0 00:00 0\n")
                .unwrap_err()
                .contains("backwards")
        );
        assert!(parse("10-20 r--p\n").unwrap_err().contains("no offset"));
        assert!(parse("1020 r--p 0 0:0 0\n").unwrap_err().contains("no `-`"));
        assert!(
            parse("10-20 r--p 0 00:00 x\n")
                .unwrap_err()
                .contains("inode `x`")
        );
    }
}
