//! Sampling `/proc` at two depths, so that the daemon's cost follows the number of busy
//! processes rather than the number of processes:
//!
//! 1. **Light pass**, every interval: `stat` only (one short read, though the kernel sums
//!    every thread's times to write it). It gives each process's CPU time, threads, last CPU
//!    and state. Kernel threads found once are skipped afterwards without a read, as long as
//!    their PID stays listed. A process that was idle at its last read (below half
//!    `candidate_min_cpu`) is read again only every `idle_every` intervals, so a process that
//!    wakes up is noticed within that many intervals. Neither skip holds for a PID handed out
//!    again since the last listing (the range between two readings of the last PID handed
//!    out, `/proc/loadavg`). Every `full_rescan_every` intervals all PIDs are read again. A
//!    process seen for the first time has no earlier read: its rate is its CPU time over its
//!    age (`/proc/uptime` minus its start time), so a new busy process is a candidate, and can
//!    get its first home, in the interval it first appears rather than the next.
//! 2. **Full pass**, for *candidates* only (processes that used at least
//!    `candidate_min_cpu` CPUs in the light pass, and processes homenode manages):
//!    `status`, every thread's `stat` and `status`, `cgroup` and the cpuset, `sched`, and
//!    `numa_maps` (re-read for a large process only every `memory_every_s`, because the kernel
//!    walks its page tables to write it).
//!
//! Rates come from two full passes (threads matched by TID and start time); a process that
//! has just become a candidate has its light-pass rate until the next interval.
//!
//! Between two intervals, a **first look** ([`Sampler::look`]) reads only what is new: `stat`
//! of PIDs never read before or handed out again since, and of those first read since the
//! last pass, and the full read of the ones among them that are candidates (or homed already,
//! at an earlier look).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::Pid;
use crate::error::ProcError;
use crate::exclude::{Rules, comm_matches};
use crate::procfs;
use crate::rates::{self, ProcessRate, Rates};
use crate::sample::{NumaMapsSelect, NumaSample, ProcessKey, ScanOptions, ScanResult, Scanner};

use super::config::ScanConfig;
use super::host::Host;

/// What the light pass keeps of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Light {
    pub key: ProcessKey,
    pub comm: String,
    pub ticks: u64,
    pub processor: usize,
    pub threads: u32,
}

/// A light-pass process with its CPU use over the interval.
#[derive(Clone, Debug, PartialEq)]
pub struct LightRate {
    pub light: Light,
    /// CPUs used (None: first seen in this pass).
    pub cpu: Option<f64>,
}

/// What one interval's sampling produced.
#[derive(Debug)]
pub struct Sample {
    /// Seconds since the previous sample, as measured (not the configured interval).
    pub elapsed_s: f64,
    /// Every user process of the light pass, ascending PID.
    pub light: Vec<LightRate>,
    /// The full pass over the candidates.
    pub full: ScanResult,
    /// Rates of candidates that were candidates in the previous interval too.
    pub rates: Rates,
    /// Memory per kernel node of candidates, with when it was read.
    pub memory: BTreeMap<ProcessKey, (NumaSample, Instant)>,
    /// Processes read in the light pass, and PIDs skipped as known kernel threads.
    pub light_read: usize,
    pub kthreads_skipped: usize,
}

/// The PIDs the kernel handed out between two reads of the last one it handed out
/// (`/proc/loadavg`): `(from, to]`, or, when the allocator wrapped round at `pid_max`, every
/// PID above `from` and every one up to `to`. A PID read before that lies in this range was
/// freed and given to a new process or thread since (the allocator skips PIDs in use). More
/// than `pid_max` PIDs between two reads go unnoticed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HandedOut {
    from: Option<Pid>,
    to: Option<Pid>,
}

impl HandedOut {
    fn contains(self, pid: Pid) -> bool {
        match (self.from, self.to) {
            (Some(from), Some(to)) if to >= from => pid > from && pid <= to,
            (Some(from), Some(to)) => pid > from || pid <= to,
            // Not known: the PIDs known stay as they are (the full rescan re-reads them).
            _ => false,
        }
    }
}

/// A process's last light read.
#[derive(Clone, Debug)]
struct PrevLight {
    rate: LightRate,
    at: Instant,
    /// The pass that read it.
    pass: u64,
}

/// The sampler's memory between intervals.
#[derive(Debug, Default)]
pub struct Sampler {
    scanner: Scanner,
    buf: Vec<u8>,
    kthreads: BTreeSet<Pid>,
    prev_light: BTreeMap<Pid, PrevLight>,
    prev_light_at: Option<Instant>,
    prev_full: Option<ScanResult>,
    memory: BTreeMap<ProcessKey, (NumaSample, Instant)>,
    passes: u64,
    /// Processes first read at the last pass, or at a first look before it: a look reads them
    /// again (they may have become busy or grown since) ...
    fresh: BTreeSet<ProcessKey>,
    /// ... and so it does those first read at a look since the last pass.
    looked: BTreeSet<ProcessKey>,
    /// Processes read for the first time (or a reused PID) since the last pass or look.
    first_reads: Vec<ProcessKey>,
    /// When the last pass or look read `/proc`.
    last_read_at: Option<Instant>,
    /// The PID most recently handed out (`/proc/loadavg`) before the last pass or look listed
    /// `/proc`: while it is the same, nothing was created since.
    last_pid: Option<Pid>,
}

impl Sampler {
    pub fn new() -> Sampler {
        Sampler::default()
    }

    /// One interval's sampling at `now` (the daemon's clock: rates are over the time between
    /// two samplings' `now`). `managed` are processes homenode manages (always candidates).
    pub fn sample(
        &mut self,
        root: &Path,
        host: &Host,
        cfg: &ScanConfig,
        managed: &BTreeSet<ProcessKey>,
        rules: &Rules,
        now: Instant,
    ) -> Result<Sample, ProcError> {
        let elapsed_s = self
            .prev_light_at
            .map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f64());
        let first_pass = self.prev_light_at.is_none();
        // Read before the listing: whatever is created after it shows up at the next look.
        let handed = self.read_last_pid(root);
        self.first_reads.clear();
        let (light, read, skipped) = self.light_pass(root, cfg, managed, now, handed)?;
        // At the first pass every process is new to the daemon, but none is new to the host.
        let looked = std::mem::take(&mut self.looked);
        let first_reads = std::mem::take(&mut self.first_reads);
        self.fresh = if first_pass {
            BTreeSet::new()
        } else {
            first_reads
                .into_iter()
                .chain(looked)
                .filter(|k| self.prev_light.contains_key(&k.pid))
                .collect()
        };
        self.last_read_at = Some(now);
        let tck = crate::sample::clock_ticks_per_second();
        let candidates = candidates_of(&light, cfg, managed, rules);
        let full = self.full_pass(root, cfg, candidates, now)?;
        let rates = match &self.prev_full {
            Some(prev) => rates::rates_over(
                prev,
                &full,
                full.taken_at.saturating_duration_since(prev.taken_at),
                tck,
                &host.map,
            ),
            None => rates::rates_over(&full, &full, Duration::ZERO, tck, &host.map),
        };
        self.prev_light_at = Some(now);
        // Forget memory of processes that are no longer candidates.
        let keys: BTreeSet<ProcessKey> = full.processes.iter().map(|p| p.key()).collect();
        self.memory.retain(|k, _| keys.contains(k));
        self.passes += 1;
        self.prev_full = Some(clone_scan(&full));
        Ok(Sample {
            elapsed_s,
            light,
            full,
            rates,
            memory: self.memory.clone(),
            light_read: read,
            kthreads_skipped: skipped,
        })
    }

    /// A first look between two passes: `stat` of the processes not read before (and of those
    /// first read since the last pass), and the full read of those busy enough to be
    /// candidates. `/proc` is listed only when `/proc/loadavg` says a PID was handed out since
    /// the last listing. Everything else is left to the next pass. `None` when no new process is a
    /// candidate. The sample's `light` holds the processes read, `rates` is empty (each has its
    /// light rate: since its last read, or over its life when first seen).
    pub fn look(
        &mut self,
        root: &Path,
        cfg: &ScanConfig,
        managed: &BTreeSet<ProcessKey>,
        rules: &Rules,
        now: Instant,
    ) -> Result<Option<Sample>, ProcError> {
        if self.prev_light_at.is_none() {
            return Ok(None);
        }
        let elapsed_s = self
            .last_read_at
            .map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f64());
        self.last_read_at = Some(now);
        let again: BTreeSet<Pid> = self
            .fresh
            .iter()
            .chain(&self.looked)
            .map(|k| k.pid)
            .collect();
        // No process or thread created since the last listing (the last PID handed out is the
        // same): only the fresh ones are read again, and `/proc` is not listed.
        let handed = self.read_last_pid(root);
        let created = handed.to.is_none() || handed.to != handed.from;
        let pids: Vec<Pid> = if created {
            procfs::list_pids(root)?
        } else {
            again.iter().copied().collect()
        };
        let tck = crate::sample::clock_ticks_per_second() as f64;
        let uptime_s = procfs::uptime::read(root).ok();
        let proc_root = procfs::proc_dir(root);
        let mut light = Vec::new();
        let (mut read, mut skipped) = (0, 0);
        for pid in pids {
            // A PID handed out since the last listing is a new process, whatever it was.
            let reused = handed.contains(pid);
            if reused {
                self.kthreads.remove(&pid);
            }
            if self.kthreads.contains(&pid) {
                skipped += 1;
                continue;
            }
            let known = self.prev_light.contains_key(&pid);
            if known && !reused && !again.contains(&pid) {
                continue;
            }
            read += 1;
            if let Some(rate) = self.read_light(&proc_root, pid, now, uptime_s, tck) {
                light.push(rate);
            }
        }
        self.looked.extend(self.first_reads.drain(..));
        // The new processes busy enough, and the new ones homed already (at an earlier look:
        // their home is provisional, and they may have started threads since).
        let candidates = candidates_of(&light, cfg, managed, rules);
        if candidates.is_empty() {
            return Ok(None);
        }
        let full = self.full_pass(root, cfg, candidates, now)?;
        let keys: BTreeSet<ProcessKey> = full.processes.iter().map(|p| p.key()).collect();
        Ok(Some(Sample {
            elapsed_s,
            light,
            rates: Rates::none(),
            memory: self
                .memory
                .iter()
                .filter(|(k, _)| keys.contains(k))
                .map(|(k, v)| (*k, v.clone()))
                .collect(),
            full,
            light_read: read,
            kthreads_skipped: skipped,
        }))
    }

    /// Reads the last PID handed out (`/proc/loadavg`) and keeps it: the PIDs handed out
    /// since the last reading.
    fn read_last_pid(&mut self, root: &Path) -> HandedOut {
        let to = procfs::loadavg::last_pid(root).ok();
        let from = std::mem::replace(&mut self.last_pid, to);
        HandedOut { from, to }
    }

    /// The light pass. A process idle at its last read (below half `candidate_min_cpu`) is
    /// read again only every `idle_every` passes; meanwhile its last figures stand.
    fn light_pass(
        &mut self,
        root: &Path,
        cfg: &ScanConfig,
        managed: &BTreeSet<ProcessKey>,
        now: Instant,
        handed: HandedOut,
    ) -> Result<(Vec<LightRate>, usize, usize), ProcError> {
        let pids = procfs::list_pids(root)?;
        let rescan = self.passes % u64::from(cfg.full_rescan_every.max(1)) == 0;
        let listed: BTreeSet<Pid> = pids.iter().copied().collect();
        // A kernel thread whose PID left the listing, or was handed out again since the last
        // read, may come back as a user process.
        self.kthreads
            .retain(|&p| listed.contains(&p) && !handed.contains(p));
        if rescan {
            self.kthreads.clear();
        }
        let tck = crate::sample::clock_ticks_per_second() as f64;
        // For the age of processes seen for the first time (absent in some test trees).
        let uptime_s = procfs::uptime::read(root).ok();
        let proc_root = procfs::proc_dir(root);
        let idle_cpu = cfg.candidate_min_cpu / 2.0;
        let mut out = Vec::with_capacity(pids.len());
        let (mut read, mut skipped) = (0, 0);
        for pid in pids {
            if self.kthreads.contains(&pid) {
                skipped += 1;
                continue;
            }
            if let Some(prev) = self.prev_light.get(&pid).filter(|_| !handed.contains(pid)) {
                let idle = prev.rate.cpu.is_some_and(|c| c < idle_cpu);
                // Due when its turn comes round: staggered by PID so that the re-reads spread
                // evenly over the intervals instead of bunching.
                let every = u64::from(cfg.idle_every.max(1));
                let due = (self.passes + u64::from(pid)) % every == 0
                    || self.passes.saturating_sub(prev.pass) >= every;
                if idle && !due && !rescan && !managed.contains(&prev.rate.light.key) {
                    out.push(prev.rate.clone());
                    continue;
                }
            }
            read += 1;
            if let Some(rate) = self.read_light(&proc_root, pid, now, uptime_s, tck) {
                out.push(rate);
            }
        }
        self.prev_light.retain(|p, _| listed.contains(p));
        Ok((out, read, skipped))
    }

    /// Reads `pid`'s `stat` now and remembers it (in `first_reads` too when first seen): its CPU
    /// rate since its last read, or over its life when first seen. `None` for a process gone, malformed, a zombie, or a kernel
    /// thread (remembered as one).
    fn read_light(
        &mut self,
        proc_root: &Path,
        pid: Pid,
        now: Instant,
        uptime_s: Option<f64>,
        tck: f64,
    ) -> Option<LightRate> {
        // One open of `PID/stat` by path (no directory handle: a single read cannot mix
        // two processes, and the start time read names the process).
        // Gone, or malformed: the full pass reports errors for candidates.
        let stat = read_stat(proc_root, pid, &mut self.buf)?;
        if stat.is_kernel_thread() {
            self.kthreads.insert(pid);
            return None;
        }
        if matches!(stat.state, 'Z' | 'X' | 'x') {
            return None;
        }
        let light = Light {
            key: ProcessKey {
                pid,
                starttime: stat.starttime,
            },
            ticks: stat.cpu_ticks(),
            processor: stat.processor,
            threads: stat.num_threads,
            comm: stat.comm,
        };
        let prev = self
            .prev_light
            .get(&pid)
            .filter(|p| p.rate.light.key == light.key);
        if prev.is_none() {
            self.first_reads.push(light.key);
        }
        let cpu = prev
            .and_then(|p| {
                let secs = now.saturating_duration_since(p.at).as_secs_f64();
                (secs > 0.0)
                    .then(|| light.ticks.saturating_sub(p.rate.light.ticks) as f64 / tck / secs)
            })
            .or_else(|| uptime_s.and_then(|u| lifetime_rate(&light, u, tck)))
            // No more CPUs than it has threads: `stat` counts whole ticks, so a window of a
            // few ticks (a first look soon after a read) can show more.
            .map(|c| c.min(f64::from(light.threads.max(1))));
        let rate = LightRate { light, cpu };
        self.prev_light.insert(
            pid,
            PrevLight {
                rate: rate.clone(),
                at: now,
                pass: self.passes,
            },
        );
        Some(rate)
    }

    fn full_pass(
        &mut self,
        root: &Path,
        cfg: &ScanConfig,
        candidates: Vec<Pid>,
        now: Instant,
    ) -> Result<ScanResult, ProcError> {
        let large = cfg.large_rss_mib.saturating_mul(1 << 20);
        let every = Duration::from_secs_f64(cfg.memory_every_s);
        // numa_maps is due for a candidate unless it is large and was read recently.
        let due: BTreeSet<Pid> = candidates
            .iter()
            .copied()
            .filter(|pid| {
                let cached = self.memory.iter().find(|(k, _)| k.pid == *pid);
                match cached {
                    Some((_, (m, at))) => {
                        let rss: u64 = m.node_bytes.iter().sum();
                        rss <= large || now.saturating_duration_since(*at) >= every
                    }
                    None => true,
                }
            })
            .collect();
        let opts = ScanOptions {
            threads: true,
            thread_status: true,
            cgroup: true,
            cpuset: true,
            numa_maps: NumaMapsSelect::Pids(due),
            sched: cfg.sched,
            schedstat: true,
            kernel_threads: false,
            only: Some(candidates),
        };
        let mut full = self.scanner.scan(root, &opts)?;
        // The daemon's clock, not the scanner's: rates are over the daemon's intervals.
        full.taken_at = now;
        for p in &mut full.processes {
            match p.numa.take() {
                Some(m) => {
                    self.memory.insert(p.key(), (m.clone(), now));
                    p.numa = Some(m);
                }
                None => p.numa = self.memory.get(&p.key()).map(|(m, _)| m.clone()),
            }
        }
        Ok(full)
    }
}

/// The PIDs of `light` to read in full, ascending: those homenode manages, and those busy enough
/// that no rule known from the light pass leaves out; never the daemon itself.
fn candidates_of(
    light: &[LightRate],
    cfg: &ScanConfig,
    managed: &BTreeSet<ProcessKey>,
    rules: &Rules,
) -> Vec<Pid> {
    let me = std::process::id();
    let mut out: Vec<Pid> = light
        .iter()
        .filter(|l| l.light.key.pid != me)
        .filter(|l| {
            managed.contains(&l.light.key)
                || (l.cpu.is_some_and(|c| c >= cfg.candidate_min_cpu)
                    && !ruled_out(rules, l.light.key.pid, &l.light.comm))
        })
        .map(|l| l.light.key.pid)
        .collect();
    out.sort_unstable();
    out
}

/// Ages below this many clock ticks give no lifetime rate: one tick of rounding would be more
/// than a tenth of the age.
const MIN_AGE_TICKS: f64 = 10.0;

/// CPUs a process seen for the first time used over its whole life (CPU ticks over its age,
/// from `uptime_s` and its start time), at most one per thread; `None` when it is younger than
/// [`MIN_AGE_TICKS`]. So a new busy process is a candidate, and can get its first home, in the
/// interval it is first seen rather than one interval later, before more of its memory lands
/// wherever the kernel runs it.
fn lifetime_rate(light: &Light, uptime_s: f64, tck: f64) -> Option<f64> {
    let age_s = uptime_s - light.key.starttime as f64 / tck;
    (age_s * tck >= MIN_AGE_TICKS)
        .then(|| (light.ticks as f64 / tck / age_s).min(f64::from(light.threads.max(1))))
}

/// Whether the configuration rules out the process from what the light pass knows (PID and
/// command), so that it needs no full read: an exclusion by PID or command, or an include list
/// made only of PIDs and commands that does not name it. Rules on users and cgroups need the
/// full read and are left to the verdict.
fn ruled_out(rules: &Rules, pid: Pid, comm: &str) -> bool {
    let names = |m: &crate::exclude::Matcher| {
        m.pids.contains(&pid) || m.comms.iter().any(|c| comm_matches(c, comm))
    };
    if names(&rules.exclude) {
        return true;
    }
    match &rules.include {
        Some(inc) if inc.uids.is_empty() && inc.cgroups.is_empty() => !names(inc),
        _ => false,
    }
}

/// `PID/stat` under `proc_root`, parsed; `None` when gone or malformed.
fn read_stat(proc_root: &Path, pid: Pid, buf: &mut Vec<u8>) -> Option<crate::procfs::Stat> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut path = proc_root.to_path_buf();
    path.push(pid.to_string());
    path.push("stat");
    // The light pass reads every PID's stat each interval: the file is checked on its
    // descriptor only (O_NONBLOCK, so a FIFO in a rooted tree cannot block the open), with no
    // stat of the path before it.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(&path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    topo::input::read_bounded(&path, f, crate::procfs::stat::MAX_STAT_BYTES, buf).ok()?;
    crate::procfs::stat::parse(buf).ok()
}

/// The rate of `key` in `rates`, if it was a candidate in both passes.
pub fn rate_of(rates: &Rates, key: ProcessKey) -> Option<&ProcessRate> {
    rates
        .processes
        .binary_search_by_key(&key.pid, |r| r.key.pid)
        .ok()
        .map(|i| &rates.processes[i])
        .filter(|r| r.key == key)
}

/// A copy without the errors (kept for rates only; errors are reported once).
fn clone_scan(s: &ScanResult) -> ScanResult {
    ScanResult {
        taken_at: s.taken_at,
        processes: s.processes.clone(),
        gone: s.gone,
        kernel_threads: s.kernel_threads,
        errors: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exclude::Matcher;

    #[test]
    fn lifetime_rate_of_a_process_seen_for_the_first_time() {
        let light = |starttime, ticks, threads| Light {
            key: ProcessKey { pid: 7, starttime },
            comm: "job".into(),
            ticks,
            processor: 0,
            threads,
        };
        // Started at 100.0 s (tick 10000), 1.5 s old at 101.5 s, 150 ticks: one CPU.
        let r = lifetime_rate(&light(10_000, 150, 1), 101.5, 100.0).expect("rate");
        assert!((r - 1.0).abs() < 1e-9, "{r}");
        // Younger than 10 ticks: no rate yet.
        assert_eq!(lifetime_rate(&light(10_000, 5, 1), 100.05, 100.0), None);
        // Never more than a CPU per thread (tick rounding).
        let r = lifetime_rate(&light(10_000, 30, 2), 100.2, 100.0).expect("rate");
        assert!((r - 1.5).abs() < 1e-9, "{r}");
        let r = lifetime_rate(&light(10_000, 30, 1), 100.2, 100.0).expect("rate");
        assert!((r - 1.0).abs() < 1e-9, "{r}");
    }

    #[test]
    fn pids_handed_out_between_two_reads() {
        let h = |from, to| HandedOut { from, to };
        // 100 to 150: 101..=150.
        let r = h(Some(100), Some(150));
        assert!(!r.contains(100) && r.contains(101) && r.contains(150) && !r.contains(151));
        // Nothing created: nothing.
        assert!(!(1..1000).any(|p| h(Some(100), Some(100)).contains(p)));
        // Wrapped at pid_max: above 4000000 - 10, and from the start up to 350.
        let w = h(Some(3_999_990), Some(350));
        assert!(w.contains(3_999_991) && w.contains(300) && w.contains(350));
        assert!(!w.contains(351) && !w.contains(3_999_990));
        // Not known: none.
        assert!(!h(None, Some(10)).contains(5) && !h(Some(1), None).contains(5));
    }

    #[test]
    fn rules_known_from_the_light_pass() {
        let mut r = Rules::default();
        assert!(!ruled_out(&r, 10, "java"));
        r.exclude.comms.insert("postgres".into());
        r.exclude.pids.insert(11);
        assert!(ruled_out(&r, 10, "postgres"));
        assert!(ruled_out(&r, 11, "java"));
        assert!(!ruled_out(&r, 12, "java"));
        r.include = Some(Matcher {
            comms: ["java".to_string()].into(),
            ..Matcher::default()
        });
        assert!(!ruled_out(&r, 12, "java"));
        assert!(ruled_out(&r, 12, "python3"));
        // An include list by user needs the full read to decide.
        r.include.as_mut().expect("include").uids.insert(1000);
        assert!(!ruled_out(&r, 12, "python3"));
    }
}
