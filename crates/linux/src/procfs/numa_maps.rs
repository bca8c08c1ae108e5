//! `/proc/PID/numa_maps`: one line per mapping, `ADDRESS POLICY [KEY[=VALUE]]...`
//! (`man 7 numa`), for example
//!
//! ```text
//! 7f2c4a000000 bind:1 anon=2048 dirty=2048 active=0 N1=2048 kernelpagesize_kB=4
//! ```
//!
//! Gives, per mapping, the pages present on each node (`N<node>=<pages>`, in pages of
//! `kernelpagesize_kB`) and the memory policy (see [`MemPolicy`]).
//!
//! **Cost**: the kernel walks every page-table entry of the process to produce this file; for
//! a process of tens of GB that takes milliseconds of system time and holds its mmap lock for
//! reading. Read it only for candidate processes, and less often for big ones.
//!
//! Kernels built without `CONFIG_NUMA` have no `numa_maps`; kernel threads and zombies have an
//! empty one.

use std::path::Path;

use crate::error::ProcError;
use crate::mempolicy::MemPolicy;
use crate::{Live, Pid};

/// What backs one mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MappingKind {
    /// Anonymous memory (no file).
    Anon,
    /// The `[heap]`.
    Heap,
    /// The main thread's `[stack]`.
    Stack,
    /// A file mapping (hugetlbfs included); the path as the kernel escapes it (`\040` for a
    /// space).
    File(String),
}

/// One line of `numa_maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaMapping {
    /// Start address of the mapping.
    pub addr: u64,
    /// The memory policy that governs the mapping.
    pub policy: MemPolicy,
    pub kind: MappingKind,
    /// A hugetlbfs mapping (`huge`).
    pub huge: bool,
    /// `anon=`: anonymous pages (private copies included).
    pub anon_pages: u64,
    /// Pages present on each node, `(node, pages)` in the order of the line.
    pub node_pages: Vec<(usize, u64)>,
    /// Bytes per page counted in `node_pages` (`kernelpagesize_kB`; 4 KiB when absent, as on
    /// kernels before 2.6.36).
    pub page_bytes: u64,
}

impl NumaMapping {
    /// The process's own memory (anonymous, heap, stack, or huge pages, including anonymous
    /// `MAP_HUGETLB` memory, which shows as a hugetlbfs file), as opposed to a mapped file
    /// such as the program text or a shared library.
    pub fn is_private_memory(&self) -> bool {
        self.huge || !matches!(self.kind, MappingKind::File(_))
    }

    /// Resident bytes of the mapping, all nodes.
    pub fn resident_bytes(&self) -> u64 {
        self.node_pages
            .iter()
            .map(|&(_, p)| p.saturating_mul(self.page_bytes))
            .fold(0, u64::saturating_add)
    }
}

/// A parsed `numa_maps`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NumaMaps {
    pub mappings: Vec<NumaMapping>,
}

impl NumaMaps {
    /// Resident bytes on each node (index = kernel node number), all mappings (file pages
    /// shared with other processes included).
    pub fn node_bytes(&self) -> Vec<u64> {
        sum_by_node(self.mappings.iter())
    }

    /// Resident bytes on each node of the process's own memory only
    /// ([`NumaMapping::is_private_memory`]): what is worth moving with the process.
    pub fn private_node_bytes(&self) -> Vec<u64> {
        sum_by_node(self.mappings.iter().filter(|m| m.is_private_memory()))
    }

    /// The first memory policy other than `default`, if any mapping has one: someone chose
    /// where this process's memory goes.
    pub fn foreign_policy(&self) -> Option<&MemPolicy> {
        self.mappings
            .iter()
            .map(|m| &m.policy)
            .find(|p| !p.is_default())
    }
}

fn sum_by_node<'a>(maps: impl Iterator<Item = &'a NumaMapping>) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::new();
    for m in maps {
        for &(node, pages) in &m.node_pages {
            if node >= v.len() {
                v.resize(node + 1, 0);
            }
            v[node] = v[node].saturating_add(pages.saturating_mul(m.page_bytes));
        }
    }
    v
}

/// Node numbers accepted: below the kernel's `MAX_NUMNODES`.
const MAX_NODE: usize = crate::mempolicy::MAX_NUMNODES;

/// Parses the text of `numa_maps`. Reasons name the line. Keys the parser does not know are
/// skipped, so newer kernels' fields do not break it.
pub fn parse(text: &str) -> Result<NumaMaps, crate::error::ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let (addr, rest) = line.split_once(' ').unwrap_or((line, ""));
        let addr = u64::from_str_radix(addr, 16).map_err(|_| {
            crate::error::ParseError::from(format!(
                "line {ln}: address `{addr}` is not hexadecimal"
            ))
        })?;
        if rest.trim().is_empty() {
            return Err(crate::error::ParseError::from(format!(
                "line {ln}: no memory policy after the address (truncated?)"
            )));
        }
        let (policy, rest) = MemPolicy::parse_prefix(rest)
            .map_err(|e| crate::error::ParseError::from(format!("line {ln}: {e}")))?;
        let mut m = NumaMapping {
            addr,
            policy,
            kind: MappingKind::Anon,
            huge: false,
            anon_pages: 0,
            node_pages: Vec::new(),
            page_bytes: 4096,
        };
        for tok in rest.split_ascii_whitespace() {
            let pages = |v: &str| -> Result<u64, crate::error::ParseError> {
                v.parse().map_err(|_| {
                    crate::error::ParseError::from(format!(
                        "line {ln}: `{tok}`: page count is not a number"
                    ))
                })
            };
            match tok.split_once('=') {
                None => match tok {
                    "heap" => m.kind = MappingKind::Heap,
                    "stack" => m.kind = MappingKind::Stack,
                    "huge" => m.huge = true,
                    _ => {}
                },
                Some(("file", path)) => m.kind = MappingKind::File(path.to_string()),
                Some(("anon", v)) => m.anon_pages = pages(v)?,
                Some(("kernelpagesize_kB", v)) => {
                    let kb: u64 = v.parse().map_err(|_| {
                        format!("line {ln}: kernelpagesize_kB `{v}` is not a number")
                    })?;
                    if kb == 0 {
                        return Err(crate::error::ParseError::from(format!(
                            "line {ln}: kernelpagesize_kB is 0"
                        )));
                    }
                    m.page_bytes = kb.saturating_mul(1024);
                }
                Some((k, v)) if k.len() > 1 && k.starts_with('N') => {
                    let Ok(node) = k[1..].parse::<usize>() else {
                        // Not a node field (a future key that starts with N).
                        continue;
                    };
                    if node >= MAX_NODE {
                        return Err(crate::error::ParseError::from(format!(
                            "line {ln}: node number {node} out of range"
                        )));
                    }
                    m.node_pages.push((node, pages(v)?));
                }
                Some(_) => {}
            }
        }
        out.push(m);
    }
    Ok(NumaMaps { mappings: out })
}

/// Reads `ROOT/proc/PID/numa_maps`. `Alive(None)` on a kernel without NUMA support, `Gone`
/// when the process has exited. **Costly** (see the module documentation).
pub fn read(root: &Path, pid: Pid) -> Result<Live<Option<NumaMaps>>, ProcError> {
    super::with_dir(root, pid, |d| d.numa_maps())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mempolicy::PolicyMode;

    const FOUR_NODES: &str = "\
00400000 default file=/usr/bin/worker mapped=12 active=0 N0=12 kernelpagesize_kB=4
00600000 default file=/usr/bin/worker anon=1 dirty=1 N1=1 kernelpagesize_kB=4
01a2b000 default heap anon=300 dirty=300 N0=100 N2=200 kernelpagesize_kB=4
7f0000000000 bind:1 anon=2048 dirty=2048 active=0 N1=2048 kernelpagesize_kB=4
7f4000000000 interleave:0-3 anon=4 dirty=4 N0=1 N1=1 N2=1 N3=1 kernelpagesize_kB=4
7f8000000000 default file=/dev/hugepages/db\\040buf huge dirty=2 N3=2 kernelpagesize_kB=2048
7f9000000000 prefer (many):2-3 anon=8 dirty=8 N2=8 kernelpagesize_kB=4
7ffd00000000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4
7ffd10000000 default
";

    #[test]
    fn multi_node() {
        let m = parse(FOUR_NODES).expect("parses");
        assert_eq!(m.mappings.len(), 9);
        assert_eq!(m.mappings[2].kind, MappingKind::Heap);
        assert_eq!(m.mappings[2].node_pages, vec![(0, 100), (2, 200)]);
        assert_eq!(m.mappings[3].policy.mode, PolicyMode::Bind);
        assert_eq!(m.mappings[3].anon_pages, 2048);
        assert!(m.mappings[5].huge && m.mappings[5].page_bytes == 2 << 20);
        assert_eq!(
            m.mappings[5].kind,
            MappingKind::File("/dev/hugepages/db\\040buf".into())
        );
        assert_eq!(m.mappings[6].policy.mode, PolicyMode::PreferredMany);
        assert_eq!(m.mappings[6].node_pages, vec![(2, 8)]);
        assert_eq!(m.mappings[8].node_pages, vec![]);
        let k = 4096;
        assert_eq!(
            m.node_bytes(),
            vec![
                (12 + 100 + 1 + 3) * k,
                (1 + 2048 + 1) * k,
                (200 + 1 + 8) * k,
                k + 2 * (2 << 20)
            ]
        );
        assert_eq!(
            m.private_node_bytes(),
            vec![
                (100 + 1 + 3) * k,
                (2048 + 1) * k,
                (200 + 1 + 8) * k,
                k + 2 * (2 << 20)
            ]
        );
        assert_eq!(
            m.foreign_policy().map(|p| p.to_string()).as_deref(),
            Some("bind:1")
        );
        assert_eq!(m.mappings[3].resident_bytes(), 2048 * k);
    }

    #[test]
    fn default_only_and_empty() {
        let m = parse("00400000 default file=/bin/x N0=1 kernelpagesize_kB=4\n").expect("ok");
        assert!(m.foreign_policy().is_none());
        assert_eq!(parse("").expect("empty").mappings.len(), 0);
        // Old kernels: no kernelpagesize_kB.
        let m = parse("00400000 default anon=2 N0=2\n").expect("old");
        assert_eq!(m.node_bytes(), vec![8192]);
        // Unknown keys, including one starting with N, are skipped.
        let m = parse("00400000 default Nfuture=3 zzz=1 N0=2\n").expect("new keys");
        assert_eq!(m.mappings[0].node_pages, vec![(0, 2)]);
    }

    #[test]
    fn malformed() {
        let e = parse("xyz default N0=1\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("`xyz`"), "{e}");
        let e = parse("00400000 default N0=1\n00500000\n").unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("no memory policy"),
            "{e}"
        );
        let e = parse("00400000 default N0=lots\n").unwrap_err();
        assert!(e.contains("`N0=lots`"), "{e}");
        let e = parse("00400000 default N99999=1\n").unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        let e = parse("00400000 default kernelpagesize_kB=0\n").unwrap_err();
        assert!(e.contains("is 0"), "{e}");
        let e = parse("00400000 sometimes:0 N0=1\n").unwrap_err();
        assert!(e.contains("unknown memory policy"), "{e}");
    }
}
