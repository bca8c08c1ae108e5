//! The opt-in Prometheus endpoint (`--metrics 127.0.0.1:9750`): `GET /metrics` answers the
//! OpenMetrics text of the last interval's [`StatusReport`]. Loopback only unless the
//! configuration says otherwise (checked in [`super::config`]).
//!
//! | Metric | Labels | What |
//! | --- | --- | --- |
//! | `homenode_node_busy_cpus` | node | CPUs busy over the last interval |
//! | `homenode_node_free_bytes` | node | free memory |
//! | `homenode_node_homed_processes` | node | processes whose home includes the node |
//! | `homenode_process_home` | pid, comm, node | 1 for each home node of a managed process |
//! | `homenode_process_locality` | pid, comm | share of its memory on its home nodes (0..1) |
//! | `homenode_process_cpus` | pid, comm | CPUs used |
//! | `homenode_process_slice_seconds` | pid, comm | the scheduling slice homenode gave its threads (only processes that have one) |
//! | `homenode_actions` (counter) | kind, outcome | actions taken (`set_home`, `clear_home`, `move_memory`, `set_slice`) |
//! | `homenode_pages_moved` (counter) | | pages moved to their home |
//! | `homenode_skipped_processes` (counter) | reason | candidates left alone |
//! | `homenode_first_looks` (counter) | found | first looks between intervals (docs/PLACEMENT.md), `found="yes"` when one found a new candidate |
//! | `homenode_kernel_numa_events` | counter | `/proc/vmstat` `numa_*`, `pgmigrate_*` over the last interval |
//! | `homenode_interval_cpu_seconds` | | the daemon's CPU time in the last interval |
//! | `homenode_interval_wall_seconds` | | wall time of the last interval's work (above the interval: it overran) |

mod server;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::status::{SharedStatus, StatusReport};

type Labels = Vec<(String, String)>;
type FGauge = Family<Labels, Gauge<f64, AtomicU64>>;

/// A label set; every value escaped ([`escape_label`]).
fn l(pairs: &[(&str, String)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), escape_label(v)))
        .collect()
}

/// A label value as the exposition format wants it: backslash, double quote and line feed
/// escaped (`\\`, `\"`, `\n`). The client library writes values as given, and process names
/// are chosen by whoever starts the process: unescaped, a name could end the label set and add
/// samples of its own.
fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for ch in v.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// The per-process families: home, locality, CPUs, slice.
fn register_processes(reg: &mut Registry, r: &StatusReport) {
    let home = FGauge::default();
    let locality = FGauge::default();
    let cpus = FGauge::default();
    let slice = FGauge::default();
    for p in &r.processes {
        let who = [("pid", p.pid.to_string()), ("comm", p.comm.clone())];
        cpus.get_or_create(&l(&who)).set(p.cpu_use);
        if p.slice_ns > 0 {
            slice.get_or_create(&l(&who)).set(p.slice_ns as f64 / 1e9);
        }
        for &h in &p.home {
            let mut lb = l(&who);
            lb.push(("node".into(), h.to_string()));
            home.get_or_create(&lb).set(1.0);
        }
        if !p.home.is_empty() && !p.memory_pct.is_empty() {
            let local: f64 = p
                .home
                .iter()
                .filter_map(|&h| p.memory_pct.get(h))
                .sum::<f64>()
                / 100.0;
            locality.get_or_create(&l(&who)).set(local);
        }
    }
    reg.register("process_home", "1 for each home node of a process", home);
    reg.register(
        "process_locality",
        "Share of the process's memory on its home nodes",
        locality,
    );
    reg.register("process_cpus", "CPUs used by the process", cpus);
    reg.register(
        "process_slice_seconds",
        "The scheduling slice homenode gave the process's threads",
        slice,
    );
}

/// The OpenMetrics text of `r`.
pub fn render(r: &StatusReport) -> String {
    let mut reg = Registry::with_prefix("homenode");
    let busy = FGauge::default();
    let free = FGauge::default();
    let homed = FGauge::default();
    for n in &r.nodes {
        let lb = l(&[("node", n.node.to_string())]);
        busy.get_or_create(&lb).set(n.busy_cpus);
        free.get_or_create(&lb).set(n.free_bytes as f64);
        homed.get_or_create(&lb).set(n.homed as f64);
    }
    reg.register("node_busy_cpus", "CPUs busy over the last interval", busy);
    reg.register("node_free_bytes", "Free memory of the node", free);
    reg.register(
        "node_homed_processes",
        "Processes whose home includes the node",
        homed,
    );
    register_processes(&mut reg, r);
    let actions = Family::<Labels, Counter>::default();
    for (k, v) in &r.counters.actions {
        let (kind, outcome) = k.split_once('/').unwrap_or((k, ""));
        actions
            .get_or_create(&l(&[("kind", kind.into()), ("outcome", outcome.into())]))
            .inc_by(*v);
    }
    reg.register("actions", "Actions taken, by kind and outcome", actions);
    let pages: Counter = Counter::default();
    pages.inc_by(r.counters.pages_moved);
    reg.register("pages_moved", "Pages moved to their home node", pages);
    let skipped = Family::<Labels, Counter>::default();
    for (k, v) in &r.counters.skipped {
        skipped
            .get_or_create(&l(&[("reason", k.clone())]))
            .inc_by(*v);
    }
    reg.register(
        "skipped_processes",
        "Candidate processes left alone, by reason",
        skipped,
    );
    let looks = Family::<Labels, Counter>::default();
    let c = &r.counters;
    for (found, n) in [
        ("yes", c.first_looks_found),
        ("no", c.first_looks - c.first_looks_found.min(c.first_looks)),
    ] {
        looks
            .get_or_create(&l(&[("found", found.into())]))
            .inc_by(n);
    }
    reg.register(
        "first_looks",
        "First looks between intervals, by whether they found a new candidate",
        looks,
    );
    let kernel = FGauge::default();
    for (k, v) in &r.kernel_numa {
        kernel
            .get_or_create(&l(&[("counter", k.clone())]))
            .set(*v as f64);
    }
    reg.register(
        "kernel_numa_events",
        "The kernel's /proc/vmstat NUMA counters over the last interval",
        kernel,
    );
    seconds_gauge(
        &mut reg,
        "interval_cpu_seconds",
        "The daemon's CPU time in the last interval",
        r.last_cpu_ms / 1000.0,
    );
    seconds_gauge(
        &mut reg,
        "interval_wall_seconds",
        "Wall time of the daemon's last interval's work",
        r.last_wall_ms / 1000.0,
    );
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut out, &reg);
    out
}

/// Registers one unlabelled gauge holding `v`.
fn seconds_gauge(reg: &mut Registry, name: &str, help: &str, v: f64) {
    let g: Gauge<f64, AtomicU64> = Gauge::default();
    g.set(v);
    reg.register(name, help, g);
}

/// The HTTP endpoint ([`server`]); dropping it stops serving.
pub struct MetricsServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (the caller has checked that it is loopback or allowed).
    pub fn start(addr: SocketAddr, status: SharedStatus) -> std::io::Result<MetricsServer> {
        MetricsServer::start_with(addr, status, REQUEST_DEADLINE)
    }

    /// As [`MetricsServer::start`], with the deadline for a whole request head.
    fn start_with(
        addr: SocketAddr,
        status: SharedStatus,
        deadline: Duration,
    ) -> std::io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("homenode-metrics".into())
            .spawn(move || server::serve(listener, status, stop2, deadline))?;
        Ok(MetricsServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The whole request head must arrive within this time, however it is cut in pieces.
const REQUEST_DEADLINE: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::status::{NodeStatus, ProcessStatus};
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;
    use std::sync::Mutex;

    /// A sample line: name, labels, value.
    type Sample = (String, Labels, f64);

    /// The exposition lines that are not comments, each checked to be
    /// `name{label="value",...} number` with only escaped quotes, backslashes and line feeds
    /// inside values; the first malformed line is the error.
    fn samples(text: &str) -> Result<Vec<Sample>, String> {
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let bad = || format!("malformed sample line {line:?}");
            let name_end = line.find(['{', ' ']).ok_or_else(bad)?;
            let name = &line[..name_end];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(bad());
            }
            let mut rest = &line[name_end..];
            let mut labels = Vec::new();
            if let Some(r) = rest.strip_prefix('{') {
                rest = r;
                while let Some((key, r)) = rest.split_once("=\"") {
                    let key = key.trim_start_matches(',');
                    let mut value = String::new();
                    let mut chars = r.char_indices();
                    let end = loop {
                        match chars.next().ok_or_else(bad)? {
                            (_, '\\') => match chars.next().ok_or_else(bad)?.1 {
                                'n' => value.push('\n'),
                                c @ ('\\' | '"') => value.push(c),
                                _ => return Err(bad()),
                            },
                            (i, '"') => break i,
                            (_, c) => value.push(c),
                        }
                    };
                    labels.push((key.to_string(), value));
                    rest = &r[end + 1..];
                    if let Some(r) = rest.strip_prefix('}') {
                        rest = r;
                        break;
                    }
                }
            }
            let value = rest.strip_prefix(' ').ok_or_else(bad)?;
            out.push((name.to_string(), labels, value.parse().map_err(|_| bad())?));
        }
        Ok(out)
    }

    fn report() -> StatusReport {
        let mut r = StatusReport::default();
        r.nodes.push(NodeStatus {
            node: 1,
            busy_cpus: 2.5,
            free_bytes: 1024,
            homed: 1,
            ..NodeStatus::default()
        });
        r.processes.push(ProcessStatus {
            pid: 42,
            comm: "db".into(),
            cpu_use: 1.5,
            home: vec![1],
            memory_pct: vec![25.0, 75.0],
            slice_ns: 100_000_000,
            ..ProcessStatus::default()
        });
        r.counters.actions.insert("set_home/done".into(), 3);
        r.counters.pages_moved = 512;
        r.counters.skipped.insert("realtime".into(), 2);
        r.counters.first_looks = 9;
        r.counters.first_looks_found = 2;
        r.kernel_numa.insert("numa_hint_faults".into(), 77);
        r.last_cpu_ms = 3.0;
        r.last_wall_ms = 7500.0;
        r
    }

    #[test]
    fn renders_every_family() {
        let t = render(&report());
        for want in [
            "homenode_node_busy_cpus{node=\"1\"} 2.5",
            "homenode_process_home{pid=\"42\",comm=\"db\",node=\"1\"} 1",
            "homenode_process_locality{pid=\"42\",comm=\"db\"} 0.75",
            "homenode_process_slice_seconds{pid=\"42\",comm=\"db\"} 0.1",
            "homenode_actions_total{kind=\"set_home\",outcome=\"done\"} 3",
            "homenode_pages_moved_total 512",
            "homenode_skipped_processes_total{reason=\"realtime\"} 2",
            "homenode_first_looks_total{found=\"yes\"} 2",
            "homenode_first_looks_total{found=\"no\"} 7",
            "homenode_kernel_numa_events{counter=\"numa_hint_faults\"} 77",
            "homenode_interval_cpu_seconds 0.003",
            "homenode_interval_wall_seconds 7.5",
            "# EOF",
        ] {
            assert!(t.contains(want), "missing {want} in\n{t}");
        }
    }

    /// A process may name itself anything: its name must stay inside its label value.
    #[test]
    fn a_hostile_process_name_cannot_add_samples() {
        let mut r = report();
        let hostile = "x\"} 9\nevil 1\n#\\";
        r.processes[0].comm = hostile.into();
        let t = render(&r);
        let s = samples(&t).unwrap_or_else(|e| panic!("{e} in\n{t}"));
        assert!(
            s.iter().all(|(name, _, _)| name.starts_with("homenode_")),
            "{t}"
        );
        let cpus = s
            .iter()
            .find(|(name, _, _)| name == "homenode_process_cpus")
            .expect("process_cpus");
        assert!(
            cpus.1.contains(&("comm".into(), hostile.into())),
            "{cpus:?}"
        );
        assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    }

    /// Clients that hold idle connections and reconnect as soon as one is closed, more of them
    /// than the table holds from one peer (and, in the second round, than it holds in all),
    /// must not stop a scraper: every scrape is answered.
    #[test]
    fn idle_reconnecting_clients_do_not_starve_scrapes() {
        for attackers in [server::MAX_PER_PEER + 4, server::MAX_CONNECTIONS + 8] {
            let shared = Arc::new(Mutex::new(report()));
            let m =
                MetricsServer::start("127.0.0.1:0".parse().expect("addr"), shared).expect("bind");
            let stop = Arc::new(AtomicBool::new(false));
            let idle: Vec<_> = (0..attackers)
                .map(|_| {
                    let (addr, stop) = (m.addr, stop.clone());
                    std::thread::spawn(move || {
                        while !stop.load(Ordering::Relaxed) {
                            // Connect and send nothing; when the server closes, at once again.
                            if let Ok(mut s) = TcpStream::connect(addr) {
                                let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                                let mut b = [0u8; 1];
                                while !stop.load(Ordering::Relaxed)
                                    && !matches!(s.read(&mut b), Ok(0) | Ok(1))
                                {
                                }
                            }
                        }
                    })
                })
                .collect();
            let answered = (0..20).filter(|_| scrape(m.addr)).count();
            stop.store(true, Ordering::Relaxed);
            for t in idle {
                t.join().expect("idle client");
            }
            assert_eq!(answered, 20, "{attackers} idle clients");
        }
    }

    /// One scrape, given a minute (the machine may be loaded): answered with the metrics?
    fn scrape(addr: SocketAddr) -> bool {
        let Ok(mut s) = TcpStream::connect(addr) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
        if s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .is_err()
        {
            return false;
        }
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.starts_with("HTTP/1.1 200 OK") && out.contains("# EOF")
    }

    #[test]
    fn serves_over_http_on_loopback() {
        let shared = Arc::new(Mutex::new(report()));
        let m = MetricsServer::start("127.0.0.1:0".parse().expect("addr"), shared).expect("bind");
        let get = |path: &str| {
            let mut s = TcpStream::connect(m.addr).expect("connect");
            // In pieces, as clients may send it.
            for part in ["GET ", path, " HTTP/1.1\r\n", "Host: x\r\n", "\r\n"] {
                s.write_all(part.as_bytes()).expect("send");
            }
            let mut out = String::new();
            s.read_to_string(&mut out).expect("read");
            out
        };
        let ok = get("/metrics");
        assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
        assert!(ok.contains("homenode_pages_moved_total 512"), "{ok}");
        assert!(get("/").starts_with("HTTP/1.1 404"));
    }

    /// A client that trickles its request must not stop others from scraping.
    #[test]
    fn a_slow_client_blocks_nobody() {
        let shared = Arc::new(Mutex::new(report()));
        let long = Duration::from_secs(600);
        let m = MetricsServer::start_with("127.0.0.1:0".parse().expect("addr"), shared, long)
            .expect("bind");
        let mut slow = TcpStream::connect(m.addr).expect("connect");
        slow.write_all(b"GET /met").expect("send");
        let mut s = TcpStream::connect(m.addr).expect("connect");
        s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").expect("send");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
        // The slow client is still being served: its request can still be completed.
        slow.write_all(b"rics HTTP/1.1\r\n\r\n").expect("send");
        let mut rest = String::new();
        slow.read_to_string(&mut rest).expect("read");
        assert!(rest.starts_with("HTTP/1.1 200 OK"), "{rest}");
    }

    /// A client that keeps sending a byte at a time is cut off at the deadline for the whole
    /// head (a deadline per read never fired: each byte renewed it).
    #[test]
    fn a_trickling_client_is_cut_off() {
        let shared = Arc::new(Mutex::new(report()));
        let short = Duration::from_millis(300);
        let m = MetricsServer::start_with("127.0.0.1:0".parse().expect("addr"), shared, short)
            .expect("bind");
        let mut slow = TcpStream::connect(m.addr).expect("connect");
        // Up to 10,000 bytes, one every 10 ms (100 s): the server must close it long before.
        let mut closed = false;
        for _ in 0..10_000 {
            if slow.write_all(b"x").is_err() {
                closed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(closed, "the server kept a trickling connection open");
    }
}
