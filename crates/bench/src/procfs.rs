//! Readers of the `/proc` files the benchmark needs: `/proc/PID/stat` (CPU times and the CPU
//! a task last ran on), `/proc/PID/numa_maps` (where a process's pages are) and
//! `/proc/meminfo`.
//!
//! Every parser takes the file's text, so tests feed it captured or malformed text; every
//! reader takes the root of the proc tree (`/proc` on a live host, a fixture directory in
//! tests). A process that is gone when its file is read (ENOENT, ESRCH) is not an error: the
//! readers return `None`.

use crate::error::BenchError;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The fields of `/proc/PID/stat` the benchmark uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    /// `comm`, as the kernel shows it (may hold spaces and parentheses).
    pub comm: String,
    /// Field 3: R, S, D, Z, ...
    pub state: char,
    /// Field 14: user time, in clock ticks (`sysconf(_SC_CLK_TCK)`, usually 100 per second).
    pub utime_ticks: u64,
    /// Field 15: system time, in clock ticks.
    pub stime_ticks: u64,
    /// Field 20.
    pub num_threads: u64,
    /// Field 39: the CPU the task is running on, or last ran on.
    pub processor: usize,
}

/// Parse the text of `/proc/PID/stat`.
///
/// The second field, `comm`, is in parentheses and may itself hold spaces and parentheses
/// (a process may name itself `a) b (c`), so it runs from the first `(` to the *last* `)`.
pub fn parse_stat(text: &str) -> Result<ProcStat, String> {
    let text = text.trim_end();
    let open = text.find('(').ok_or("no `(` opening the command name")?;
    let close = text
        .rfind(')')
        .filter(|&c| c > open)
        .ok_or("no `)` closing the command name")?;
    let pid = text[..open]
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("pid `{}` is not a number", text[..open].trim()))?;
    let comm = text[open + 1..close].to_string();
    // Fields 3.. after the command name; field k is at index k - 3.
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    let field = |k: usize| -> Result<&str, String> {
        rest.get(k - 3)
            .copied()
            .ok_or_else(|| format!("only {} fields, field {k} missing", rest.len() + 2))
    };
    let num = |k: usize, name: &str| -> Result<u64, String> {
        let f = field(k)?;
        f.parse::<u64>()
            .map_err(|_| format!("field {k} ({name}) `{f}` is not a number"))
    };
    let state_field = field(3)?;
    let mut chars = state_field.chars();
    let state = match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() => c,
        _ => {
            return Err(format!(
                "field 3 (state) `{state_field}` is not a state letter"
            ));
        }
    };
    Ok(ProcStat {
        pid,
        comm,
        state,
        utime_ticks: num(14, "utime")?,
        stime_ticks: num(15, "stime")?,
        num_threads: num(20, "num_threads")?,
        processor: usize::try_from(num(39, "processor")?)
            .map_err(|_| "field 39 (processor) out of range".to_string())?,
    })
}

/// `ROOT/PID/stat`.
pub fn stat_path(proc_root: &Path, pid: u32) -> PathBuf {
    proc_root.join(pid.to_string()).join("stat")
}

/// Whether an I/O error means that the process has gone away.
pub fn is_gone(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(3 /* ESRCH */)
}

/// Read and parse one `stat` file into `buf` (reused between calls, so a sampler does not
/// allocate). `Ok(None)` when the process is gone.
pub fn read_stat_at(path: &Path, buf: &mut String) -> Result<Option<ProcStat>, BenchError> {
    buf.clear();
    let r = std::fs::File::open(path).and_then(|mut f| f.read_to_string(buf));
    match r {
        Ok(_) => {}
        Err(e) if is_gone(&e) => return Ok(None),
        Err(e) => return Err(BenchError::io(path, e)),
    }
    // A process that exits while being read can leave an empty file behind.
    if buf.is_empty() {
        return Ok(None);
    }
    parse_stat(buf)
        .map(Some)
        .map_err(|msg| BenchError::parse(path, msg))
}

/// An open `stat` file, re-read in place (`pread` at offset 0) at each sample: cheaper than
/// opening the file each time (about 3 us instead of 8 us per read on a 6.x kernel).
pub struct StatReader {
    path: PathBuf,
    file: Option<std::fs::File>,
    buf: Vec<u8>,
}

impl StatReader {
    /// A reader of `path` (opened at the first read).
    pub fn new(path: PathBuf) -> Self {
        StatReader {
            path,
            file: None,
            buf: Vec::with_capacity(1024),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Read and parse the file again; `Ok(None)` when the process is gone.
    pub fn read(&mut self) -> Result<Option<ProcStat>, BenchError> {
        use std::os::unix::fs::FileExt as _;
        if self.file.is_none() {
            match std::fs::File::open(&self.path) {
                Ok(f) => self.file = Some(f),
                Err(e) if is_gone(&e) => return Ok(None),
                Err(e) => return Err(BenchError::io(&self.path, e)),
            }
        }
        let Some(f) = &self.file else { return Ok(None) };
        self.buf.clear();
        let mut chunk = [0u8; 1024];
        loop {
            match f.read_at(&mut chunk, self.buf.len() as u64) {
                Ok(0) => break,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if is_gone(&e) => return Ok(None),
                Err(e) => return Err(BenchError::io(&self.path, e)),
            }
            if self.buf.len() > 1 << 16 {
                return Err(BenchError::parse(&self.path, "longer than 64 KiB"));
            }
        }
        if self.buf.is_empty() {
            return Ok(None);
        }
        let text = std::str::from_utf8(&self.buf)
            .map_err(|_| BenchError::parse(&self.path, "not UTF-8"))?;
        parse_stat(text)
            .map(Some)
            .map_err(|msg| BenchError::parse(&self.path, msg))
    }
}

/// Read `ROOT/PID/stat`; `Ok(None)` when the process is gone.
pub fn read_stat(proc_root: &Path, pid: u32) -> Result<Option<ProcStat>, BenchError> {
    read_stat_at(&stat_path(proc_root, pid), &mut String::new())
}

/// What backs one mapping of `numa_maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MappingKind {
    /// Anonymous memory (no file).
    Anon,
    Heap,
    Stack,
    /// A file mapping (hugetlbfs files included; see [`NumaMapping::huge`]).
    File(String),
}

/// One line of `/proc/PID/numa_maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaMapping {
    /// Start address of the mapping.
    pub addr: u64,
    /// Memory policy: `default`, `bind:0-1`, `interleave:0-3`, `prefer:1`, ...
    pub policy: String,
    pub kind: MappingKind,
    /// A hugetlbfs mapping (`huge`): its page counts are in huge pages.
    pub huge: bool,
    /// Pages present on each node, `(node, pages)` as in the `N<node>=<pages>` fields.
    pub node_pages: Vec<(usize, u64)>,
    /// Size of the pages counted in `node_pages` (`kernelpagesize_kB`; 4 KiB when absent, as
    /// on kernels before 2.6.36).
    pub page_bytes: u64,
}

impl NumaMapping {
    /// Whether this mapping is the process's own memory (anonymous, heap, stack, or huge
    /// pages, including anonymous `MAP_HUGETLB` memory, which shows as a hugetlbfs file),
    /// as opposed to a mapped file such as the program text or a shared library.
    pub fn is_private_memory(&self) -> bool {
        self.huge || !matches!(self.kind, MappingKind::File(_))
    }
}

/// Parse the text of `/proc/PID/numa_maps`. Errors name the line. Keys the parser does not
/// know are skipped, so newer kernels' fields do not break it.
pub fn parse_numa_maps(text: &str) -> Result<Vec<NumaMapping>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        let mut toks = line.split_ascii_whitespace();
        let Some(addr) = toks.next() else { continue };
        let addr = u64::from_str_radix(addr, 16)
            .map_err(|_| format!("line {ln}: address `{addr}` is not hexadecimal"))?;
        let policy = toks
            .next()
            .ok_or_else(|| format!("line {ln}: no memory policy after the address"))?
            .to_string();
        let mut m = NumaMapping {
            addr,
            policy,
            kind: MappingKind::Anon,
            huge: false,
            node_pages: Vec::new(),
            page_bytes: 4096,
        };
        for tok in toks {
            match tok.split_once('=') {
                None => match tok {
                    "heap" => m.kind = MappingKind::Heap,
                    "stack" => m.kind = MappingKind::Stack,
                    "huge" => m.huge = true,
                    _ => {}
                },
                Some(("file", path)) => m.kind = MappingKind::File(path.to_string()),
                Some(("kernelpagesize_kB", v)) => {
                    let kb: u64 = v.parse().map_err(|_| {
                        format!("line {ln}: kernelpagesize_kB `{v}` is not a number")
                    })?;
                    if kb == 0 {
                        return Err(format!("line {ln}: kernelpagesize_kB is 0"));
                    }
                    m.page_bytes = kb.saturating_mul(1024);
                }
                Some((k, v)) if k.len() > 1 && k.starts_with('N') => {
                    let Ok(node) = k[1..].parse::<usize>() else {
                        // Not a node field (a future key that starts with N).
                        continue;
                    };
                    if node >= 1 << 16 {
                        return Err(format!("line {ln}: node number {node} out of range"));
                    }
                    let pages: u64 = v
                        .parse()
                        .map_err(|_| format!("line {ln}: `{tok}`: page count is not a number"))?;
                    m.node_pages.push((node, pages));
                }
                Some(_) => {}
            }
        }
        out.push(m);
    }
    Ok(out)
}

/// Bytes of the process's own memory (see [`NumaMapping::is_private_memory`]) on each node,
/// indexed by node id.
pub fn private_node_bytes(maps: &[NumaMapping]) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::new();
    for m in maps.iter().filter(|m| m.is_private_memory()) {
        for &(node, pages) in &m.node_pages {
            if node >= v.len() {
                v.resize(node + 1, 0);
            }
            v[node] = v[node].saturating_add(pages.saturating_mul(m.page_bytes));
        }
    }
    v
}

/// Read `ROOT/PID/numa_maps` (or `ROOT/self/numa_maps` with `pid` = `"self"`) and return the
/// process's own memory per node. A kernel without NUMA support has no `numa_maps`: then
/// `Ok(None)`.
pub fn read_numa_node_bytes(proc_root: &Path, pid: &str) -> Result<Option<Vec<u64>>, BenchError> {
    let path = proc_root.join(pid).join("numa_maps");
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_numa_maps(&text)
            .map(|m| Some(private_node_bytes(&m)))
            .map_err(|msg| BenchError::parse(&path, msg)),
        Err(e) if is_gone(&e) => Ok(None),
        Err(e) => Err(BenchError::io(&path, e)),
    }
}

/// `MemAvailable` of `/proc/meminfo` in bytes (`MemFree` on kernels before 3.14).
pub fn parse_mem_available(text: &str) -> Result<u64, String> {
    let find = |key: &str| -> Option<Result<u64, String>> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        let mut it = line[key.len()..].split_ascii_whitespace();
        let v = it.next()?;
        Some(
            v.parse::<u64>()
                .map(|kb| kb.saturating_mul(1024))
                .map_err(|_| format!("{} `{v}` is not a number", key.trim_end_matches(':'))),
        )
    };
    find("MemAvailable:")
        .or_else(|| find("MemFree:"))
        .unwrap_or_else(|| Err("neither MemAvailable nor MemFree found".into()))
}

/// Read `ROOT/meminfo` and return the memory available to new processes, in bytes.
pub fn read_mem_available(proc_root: &Path) -> Result<u64, BenchError> {
    let path = proc_root.join("meminfo");
    let text = std::fs::read_to_string(&path).map_err(|e| BenchError::io(&path, e))?;
    parse_mem_available(&text).map_err(|m| BenchError::parse(&path, m))
}

/// A one-line value file such as `ROOT/sys/kernel/osrelease`, trimmed; `None` if absent.
pub fn read_value(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}
