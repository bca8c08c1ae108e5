//! Test programs for the guest of the VM rig (tests/vm). Standard library only, so that
//! `rustc --target x86_64-unknown-linux-musl` builds it in a second without Cargo.
//!
//! The mode comes from the name it is started as (the rig links it under each name, so each
//! kind of test process has its own `comm` for the daemon's include list), or else from the
//! first argument:
//!
//! - `memhog MIB [--ready FILE]`: allocates MIB of memory, writes every page once (first
//!   touch: the pages land on the node of the CPU it runs on), creates FILE, then runs until
//!   killed, reading and writing its memory in a pseudo-random order (busy and memory-bound).
//! - `lightjob THREADS PERMILLE MIB`: THREADS threads, each busy PERMILLE/1000 of every
//!   100 ms and asleep the rest, plus MIB of touched memory; runs until killed.
//! - `selfhog MIB WIDEN_S`: a process of two threads, one a busy memhog, the other holding
//!   half the memory and asleep (so the process needs one CPU); WIDEN_S seconds after it is
//!   ready each thread sets its own CPU mask to every CPU with `sched_setaffinity` (as `perf
//!   bench numa`'s workers do), once.
//! - `vmhelper mem PID`: one line `own N0 N1 ... total N0 N1 ...` with the process's pages
//!   per node from `/proc/PID/numa_maps`: first its own memory (anonymous, heap and stack
//!   mappings: what a placement daemon moves), then every mapping.
//! - `vmhelper benchjobs FILE`: for each result cell of a `homenode bench numa-test --json`
//!   report, one line per job: `CELL JOB MSCHED HOME LOCAL_PCT` (the node it ran on most, its
//!   home node or `-`, the percent of its memory on MSCHED at exit).
//! - `vmhelper status FILE [MIN_MIB]`: from a `homenode status --json` answer, one line: the
//!   interval count, then `PID:HOME` for each process the daemon lists with at least MIN_MIB
//!   (default 0) resident, HOME its (first) home node or `-`.

use std::env;
use std::fs;
use std::path::Path;
use std::process::exit;
use std::thread;
use std::time::{Duration, Instant};

fn die(msg: &str) -> ! {
    eprintln!("vmhelper: {msg}");
    exit(2)
}

fn num(s: Option<&String>, what: &str) -> usize {
    s.and_then(|v| v.parse().ok())
        .unwrap_or_else(|| die(&format!("{what}: expected a number")))
}

/// Allocates `mib` MiB and writes one word in every page.
fn touch(mib: usize) -> Vec<u64> {
    let words = mib * 1024 * 1024 / 8;
    let mut v: Vec<u64> = Vec::with_capacity(words);
    // Filled through push, so every page is first written by this thread.
    for i in 0..words {
        v.push(i as u64);
    }
    v
}

/// xorshift64: cheap pseudo-random indices.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Random read-modify-write updates of a buffer: the busy, memory-bound work of memhog and
/// selfhog.
struct Updates {
    x: u64,
    sum: u64,
}

impl Updates {
    fn new(seed: u64) -> Self {
        Updates {
            x: 0x9e37_79b9_7f4a_7c15u64 ^ seed,
            sum: 0,
        }
    }

    /// `count` updates of random words of `v`.
    fn run(&mut self, v: &mut [u64], count: usize) {
        let n = v.len() as u64;
        for _ in 0..count {
            let k = (next(&mut self.x) % n) as usize;
            v[k] = v[k].wrapping_add(1);
            self.sum = self.sum.wrapping_add(v[k]);
        }
        std::hint::black_box(self.sum);
    }
}

fn memhog(args: &[String]) {
    let mib = num(args.first(), "memhog MIB");
    let mut ready = None;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--ready" => {
                ready = args.get(i + 1).cloned();
                i += 2;
            }
            other => die(&format!("memhog: unknown argument {other}")),
        }
    }
    let mut v = touch(mib);
    if let Some(f) = ready {
        fs::write(&f, format!("{}\n", std::process::id()))
            .unwrap_or_else(|e| die(&format!("{f}: {e}")));
    }
    let mut updates = Updates::new(u64::from(std::process::id()));
    loop {
        updates.run(&mut v, 1_000_000);
    }
}

unsafe extern "C" {
    /// musl's `sched_setaffinity(2)` wrapper (std links libc; no crate needed).
    fn sched_setaffinity(pid: i32, cpusetsize: usize, mask: *const u64) -> i32;
}

/// Sets the calling thread's CPU mask to every CPU; the kernel keeps those it may use.
fn widen_self() {
    let mask = [u64::MAX; 16];
    // SAFETY: the mask is a valid buffer of the size passed; pid 0 is the calling thread.
    let rc = unsafe { sched_setaffinity(0, std::mem::size_of_val(&mask), mask.as_ptr()) };
    if rc != 0 {
        die(&format!("sched_setaffinity: {}", std::io::Error::last_os_error()));
    }
}

fn selfhog(args: &[String]) {
    let mib = num(args.first(), "selfhog MIB");
    let widen_s = num(args.get(1), "selfhog WIDEN_S") as u64;
    let at = Instant::now() + Duration::from_secs(widen_s);
    // The second thread holds half the memory and sleeps: the process needs one CPU, so it
    // fits one node of the 2n guest (two busy threads measured 1.9 CPUs under TCG, no 2-CPU
    // node had room, and the process got both nodes, every CPU, as its home).
    let other = touch(mib / 2);
    thread::Builder::new()
        .name("selfhog1".into())
        .spawn(move || {
            std::hint::black_box(&other);
            while Instant::now() < at {
                thread::sleep(Duration::from_millis(100));
            }
            widen_self();
            loop {
                thread::sleep(Duration::from_secs(3600));
            }
        })
        .unwrap_or_else(|e| die(&format!("spawn: {e}")));
    let mut v = touch(mib - mib / 2);
    let mut updates = Updates::new(1);
    let mut widened = false;
    loop {
        // Short rounds: under TCG a million random updates take seconds, and the widening
        // must come on time.
        updates.run(&mut v, 10_000);
        if !widened && Instant::now() >= at {
            widen_self();
            widened = true;
        }
    }
}

fn lightjob(args: &[String]) {
    let threads = num(args.first(), "lightjob THREADS");
    let permille = num(args.get(1), "lightjob PERMILLE").min(1000) as u64;
    let mib = num(args.get(2), "lightjob MIB");
    let mem = touch(mib);
    let period = Duration::from_millis(100);
    let busy = Duration::from_micros(permille * 100);
    let mut handles = Vec::new();
    for t in 0..threads.saturating_sub(1) {
        handles.push(
            thread::Builder::new()
                .name(format!("light{t}"))
                .spawn(move || duty(busy, period))
                .unwrap_or_else(|e| die(&format!("spawn: {e}"))),
        );
    }
    std::hint::black_box(&mem);
    duty(busy, period);
}

fn duty(busy: Duration, period: Duration) -> ! {
    let mut x = 1u64;
    loop {
        let start = Instant::now();
        while start.elapsed() < busy {
            for _ in 0..1000 {
                std::hint::black_box(next(&mut x));
            }
        }
        if let Some(rest) = period.checked_sub(start.elapsed()) {
            thread::sleep(rest);
        }
    }
}

/// Pages per node of one `numa_maps` line, and whether the mapping is the process's own.
fn parse_line(line: &str, per_node: &mut Vec<u64>, own: &mut Vec<u64>) {
    let mut is_own = false;
    let mut page_kib = 4u64;
    let mut counts: Vec<(usize, u64)> = Vec::new();
    for f in line.split_whitespace().skip(2) {
        if f == "heap" || f == "stack" || f.starts_with("anon=") {
            is_own = true;
        } else if let Some(k) = f.strip_prefix("kernelpagesize_kB=") {
            page_kib = k.parse().unwrap_or(4);
        } else if let Some(rest) = f.strip_prefix('N') {
            if let Some((node, pages)) = rest.split_once('=') {
                if let (Ok(node), Ok(pages)) = (node.parse::<usize>(), pages.parse::<u64>()) {
                    counts.push((node, pages));
                }
            }
        }
    }
    // A file mapping that a process wrote to privately shows both file= and anon=; its
    // pages are counted as its own, like the daemon does for copied-on-write pages.
    if line.contains(" file=") && !line.contains("anon=") {
        is_own = false;
    }
    for (node, pages) in counts {
        let pages4k = pages * page_kib / 4;
        if per_node.len() <= node {
            per_node.resize(node + 1, 0);
            own.resize(node + 1, 0);
        }
        per_node[node] += pages4k;
        if is_own {
            own[node] += pages4k;
        }
    }
}

fn mem(args: &[String]) {
    let pid = num(args.first(), "mem PID");
    let nodes = fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("node"))
                        .and_then(|n| n.parse::<usize>().ok())
                })
                .max()
                .map_or(1, |m| m + 1)
        })
        .unwrap_or(1);
    let text = fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("numa_maps"))
        .unwrap_or_else(|e| die(&format!("numa_maps of {pid}: {e}")));
    let mut all = vec![0u64; nodes];
    let mut own = vec![0u64; nodes];
    for line in text.lines() {
        parse_line(line, &mut all, &mut own);
    }
    let join = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
    println!("own {} total {}", join(&own), join(&all));
}

/// A JSON value: just enough of JSON for the bench's report.
enum Json {
    Null,
    Bool,
    Num(f64),
    Str,
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn arr(&self) -> &[Json] {
        match self {
            Json::Arr(v) => v,
            _ => &[],
        }
    }
    fn num(&self) -> Option<f64> {
        match self {
            Json::Num(x) => Some(*x),
            _ => None,
        }
    }
}

/// Parses the JSON value at `b[*i..]` (whitespace skipped), advancing `i`.
fn parse_json(b: &[u8], i: &mut usize) -> Json {
    let ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    ws(i);
    let string = |i: &mut usize| -> String {
        *i += 1;
        let start = *i;
        while *i < b.len() && b[*i] != b'"' {
            if b[*i] == b'\\' {
                *i += 1;
            }
            *i += 1;
        }
        *i += 1;
        String::from_utf8_lossy(&b[start..*i - 1]).into_owned()
    };
    match b.get(*i) {
        Some(b'{') => {
            *i += 1;
            let mut kv = Vec::new();
            loop {
                ws(i);
                match b.get(*i) {
                    Some(b'}') => {
                        *i += 1;
                        return Json::Obj(kv);
                    }
                    Some(b',') => *i += 1,
                    Some(b'"') => {
                        let k = string(i);
                        ws(i);
                        *i += 1; // ':'
                        kv.push((k, parse_json(b, i)));
                    }
                    _ => die("benchjobs: malformed JSON object"),
                }
            }
        }
        Some(b'[') => {
            *i += 1;
            let mut v = Vec::new();
            loop {
                ws(i);
                match b.get(*i) {
                    Some(b']') => {
                        *i += 1;
                        return Json::Arr(v);
                    }
                    Some(b',') => *i += 1,
                    Some(_) => v.push(parse_json(b, i)),
                    None => die("benchjobs: malformed JSON array"),
                }
            }
        }
        Some(b'"') => {
            string(i);
            Json::Str
        }
        Some(b't') | Some(b'f') => {
            while *i < b.len() && b[*i].is_ascii_alphabetic() {
                *i += 1;
            }
            Json::Bool
        }
        Some(b'n') => {
            *i += 4;
            Json::Null
        }
        Some(_) => {
            let start = *i;
            while *i < b.len() && (b[*i].is_ascii_digit() || b"+-.eE".contains(&b[*i])) {
                *i += 1;
            }
            let t = String::from_utf8_lossy(&b[start..*i]);
            Json::Num(t.parse().unwrap_or_else(|_| die(&format!("benchjobs: bad number {t}"))))
        }
        None => die("benchjobs: JSON ends early"),
    }
}

fn benchjobs(args: &[String]) {
    let path = args.first().unwrap_or_else(|| die("benchjobs FILE"));
    let text = fs::read(path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
    let doc = parse_json(&text, &mut 0);
    let results = doc.get("results").map(Json::arr).unwrap_or(&[]);
    for (c, cell) in results.iter().enumerate() {
        for (j, job) in cell.get("jobs").map(Json::arr).unwrap_or(&[]).iter().enumerate() {
            let msched = job.get("msched").and_then(Json::num).unwrap_or(-1.0) as i64;
            let home = match job.get("home_node").and_then(Json::num) {
                Some(h) => (h as i64).to_string(),
                None => "-".into(),
            };
            let mem = job.get("mem_pct").map(Json::arr).unwrap_or(&[]);
            let local = usize::try_from(msched)
                .ok()
                .and_then(|m| mem.get(m))
                .and_then(Json::num)
                .unwrap_or(0.0);
            println!("{c} {} {msched} {home} {local:.1}", j + 1);
        }
    }
}

fn status(args: &[String]) {
    let path = args.first().unwrap_or_else(|| die("status FILE"));
    let text = fs::read(path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
    if text.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let doc = parse_json(&text, &mut 0);
    let min_bytes = args.get(1).map_or(0.0, |_| num(args.get(1), "MIN_MIB") as f64 * 1048576.0);
    let k = doc.get("intervals").and_then(Json::num).unwrap_or(0.0) as u64;
    let mut line = k.to_string();
    for p in doc.get("processes").map(Json::arr).unwrap_or(&[]) {
        if p.get("rss_bytes").and_then(Json::num).unwrap_or(0.0) < min_bytes {
            continue;
        }
        let pid = p.get("pid").and_then(Json::num).unwrap_or(0.0) as u64;
        // The first home node (a process homed on several nodes is named by the first).
        let home = match p.get("home").map(Json::arr).and_then(|h| h.first()?.num()) {
            Some(h) => (h as u64).to_string(),
            None => "-".into(),
        };
        line.push_str(&format!(" {pid}:{home}"));
    }
    println!("{line}");
}

fn main() {
    let argv: Vec<String> = env::args().collect();
    let name = argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
        .unwrap_or_default();
    let (mode, rest) = match name.as_str() {
        "memhog" | "lightjob" | "pinhog" | "selfhog" => (name.clone(), &argv[1..]),
        _ => match argv.get(1) {
            Some(m) => (m.clone(), &argv[2..]),
            None => die("usage: vmhelper memhog|lightjob|mem ARGS"),
        },
    };
    match mode.as_str() {
        "memhog" | "pinhog" => memhog(rest),
        "lightjob" => lightjob(rest),
        "selfhog" => selfhog(rest),
        "mem" => mem(rest),
        "benchjobs" => benchjobs(rest),
        "status" => status(rest),
        m => die(&format!("unknown mode {m}")),
    }
}
