//! One pass over `/proc`: a raw [`ProcessSample`] per process, with what the caller asked for.
//!
//! A sample holds what the kernel reported (clock ticks since the task started, bytes per
//! node, masks), nothing derived; [`crate::rates`] turns two samples into rates.
//!
//! | Always read | Per process | Cost |
//! | --- | --- | --- |
//! | `stat`, `status` | yes | cheap |
//! | `task/TID/stat` per thread | [`ScanOptions::threads`] | cheap per thread, but 10,000 threads are 10,000 reads |
//! | `task/TID/status` per thread | [`ScanOptions::thread_status`] | for per-thread affinity; 3x a `stat` |
//! | `cgroup` | [`ScanOptions::cgroup`] | cheap |
//! | cpuset files | [`ScanOptions::cpuset`] | once per distinct cgroup per scan |
//! | `numa_maps` | [`ScanOptions::numa_maps`] | **costly**: select the candidates |
//! | `sched` | [`ScanOptions::sched`] | moderate |
//! | `task/TID/schedstat` per thread | [`ScanOptions::schedstat`] (with `threads`) | cheap per thread: one short line |
//!
//! A process that exits during the scan is counted in [`ScanResult::gone`] and left out; a
//! thread that exits is left out of its process. A file that is malformed drops that process
//! and records the error in [`ScanResult::errors`]: one bad process does not stop a scan. Only
//! failing to list `ROOT/proc` itself fails the scan.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use topo::CpuSet;

use crate::error::ProcError;
use crate::mempolicy::MemPolicy;
use crate::procfs::cgroup::{self, CgroupMounts, Cpuset};
use crate::procfs::stat::SchedPolicy;
use crate::procfs::{self, ProcDir, SchedNuma, Schedstat};
use crate::{Live, Pid, Tid};

/// A process, named across PID reuse: the PID and its start time (clock ticks after boot,
/// field 22 of `stat`). A reused PID has a later start time, so it is a different key.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ProcessKey {
    pub pid: Pid,
    pub starttime: u64,
}

/// One thread of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSample {
    pub tid: Tid,
    /// Start time, ticks after boot (with the TID, names the thread across TID reuse).
    pub starttime: u64,
    pub comm: String,
    pub state: char,
    /// User time, ticks.
    pub utime: u64,
    /// System time, ticks.
    pub stime: u64,
    /// The CPU it last ran on (kernel numbering).
    pub processor: usize,
    pub policy: SchedPolicy,
    pub rt_priority: u32,
    /// Its own `Cpus_allowed_list`, when [`ScanOptions::thread_status`] asked for it.
    pub cpus_allowed: Option<CpuSet>,
    /// Its run time and run-queue wait (`task/TID/schedstat`), when [`ScanOptions::schedstat`]
    /// asked for them and the kernel has the file.
    pub schedstat: Option<Schedstat>,
}

impl ThreadSample {
    pub fn cpu_ticks(&self) -> u64 {
        self.utime.saturating_add(self.stime)
    }
}

/// Where a process's resident memory is, from `numa_maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaSample {
    /// Resident bytes per node (kernel node number), every mapping.
    pub node_bytes: Vec<u64>,
    /// Resident bytes per node of the process's own memory (anonymous, heap, stack, huge).
    pub private_node_bytes: Vec<u64>,
    /// The first memory policy other than `default` found, if any.
    pub foreign_policy: Option<MemPolicy>,
}

/// Everything read about one process in one scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSample {
    pub pid: Pid,
    /// Start time, ticks after boot.
    pub starttime: u64,
    /// Command name (`stat`).
    pub comm: String,
    pub state: char,
    pub ppid: Pid,
    /// `PF_*` flags.
    pub flags: u32,
    /// Real user ID.
    pub uid: u32,
    /// Effective user ID.
    pub euid: u32,
    /// User time of all threads, living and exited, ticks.
    pub utime: u64,
    /// System time, ticks.
    pub stime: u64,
    pub minflt: u64,
    pub majflt: u64,
    pub nice: i32,
    pub num_threads: u32,
    /// The CPU the main thread last ran on.
    pub processor: usize,
    /// Main thread's scheduling policy and real-time priority.
    pub policy: SchedPolicy,
    pub rt_priority: u32,
    /// `Cpus_allowed_list` (the main thread's affinity within its cpuset).
    pub cpus_allowed: CpuSet,
    /// `Mems_allowed_list`.
    pub mems_allowed: CpuSet,
    /// `VmRSS`, bytes; `None` without a memory map.
    pub vm_rss_bytes: Option<u64>,
    /// The threads, when [`ScanOptions::threads`] asked for them (ascending TID).
    pub threads: Vec<ThreadSample>,
    /// Cgroup path ([`procfs::ProcCgroup::path`]), when asked.
    pub cgroup: Option<String>,
    /// The effective cpuset of its cgroup, when asked and available.
    pub cpuset: Option<Cpuset>,
    /// Memory per node, when `numa_maps` was read for it.
    pub numa: Option<NumaSample>,
    /// NUMA balancing state from `sched`, when asked and available.
    pub sched: Option<SchedNuma>,
}

impl ProcessSample {
    pub fn key(&self) -> ProcessKey {
        ProcessKey {
            pid: self.pid,
            starttime: self.starttime,
        }
    }

    /// `PF_KTHREAD`, or a child of `kthreadd` (PID 2), or `kthreadd` itself.
    pub fn is_kernel_thread(&self) -> bool {
        crate::procfs::stat::is_kernel_thread(self.pid, self.ppid, self.flags)
    }

    pub fn cpu_ticks(&self) -> u64 {
        self.utime.saturating_add(self.stime)
    }
}

/// For which processes to read `numa_maps`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum NumaMapsSelect {
    /// None (the default: it is costly).
    #[default]
    None,
    /// Every user process.
    All,
    /// These PIDs only (the candidates).
    Pids(BTreeSet<Pid>),
}

impl NumaMapsSelect {
    fn wants(&self, pid: Pid) -> bool {
        match self {
            NumaMapsSelect::None => false,
            NumaMapsSelect::All => true,
            NumaMapsSelect::Pids(p) => p.contains(&pid),
        }
    }
}

/// What a scan reads besides `stat` and `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanOptions {
    /// Read every thread's `stat`.
    pub threads: bool,
    /// Also read every thread's `status` (its own affinity); implies `threads`.
    pub thread_status: bool,
    /// Read `cgroup`.
    pub cgroup: bool,
    /// Read the cgroup's effective cpuset; implies `cgroup`.
    pub cpuset: bool,
    /// For which processes to read `numa_maps`.
    pub numa_maps: NumaMapsSelect,
    /// Read `sched`.
    pub sched: bool,
    /// Read every thread's `schedstat` (run time and run-queue wait); needs `threads`.
    pub schedstat: bool,
    /// Keep kernel threads in the result (only `stat` and `status` are read for them);
    /// by default they are counted in [`ScanResult::kernel_threads`] and left out.
    pub kernel_threads: bool,
    /// Scan only these PIDs instead of listing `ROOT/proc`.
    pub only: Option<Vec<Pid>>,
}

/// The result of one scan.
#[derive(Debug)]
pub struct ScanResult {
    /// When the scan started (monotonic).
    pub taken_at: Instant,
    /// The processes read, ascending PID.
    pub processes: Vec<ProcessSample>,
    /// Processes that exited during the scan (skipped).
    pub gone: usize,
    /// Kernel threads left out (when [`ScanOptions::kernel_threads`] is off).
    pub kernel_threads: usize,
    /// Processes dropped because one of their files was malformed or unreadable.
    pub errors: Vec<ProcError>,
}

impl ScanResult {
    /// The sample of a process, by key (binary search; a reused PID does not match).
    pub fn get(&self, key: ProcessKey) -> Option<&ProcessSample> {
        self.processes
            .binary_search_by_key(&key.pid, |p| p.pid)
            .ok()
            .map(|i| &self.processes[i])
            .filter(|p| p.starttime == key.starttime)
    }
}

/// Scans `/proc`, reusing its buffers from one scan to the next.
#[derive(Debug, Default)]
pub struct Scanner {
    buf: Vec<u8>,
}

impl Scanner {
    pub fn new() -> Scanner {
        Scanner {
            buf: Vec::with_capacity(4096),
        }
    }

    /// Reads every process under `ROOT/proc` (or [`ScanOptions::only`]). Fails only if
    /// `ROOT/proc` cannot be listed (or the cgroup mounts cannot be read when cpusets are
    /// asked for); see the module documentation.
    pub fn scan(&mut self, root: &Path, opts: &ScanOptions) -> Result<ScanResult, ProcError> {
        let taken_at = Instant::now();
        let pids = match &opts.only {
            Some(p) => {
                let mut p = p.clone();
                p.sort_unstable();
                p.dedup();
                p
            }
            None => procfs::list_pids(root)?,
        };
        let mounts = if opts.cpuset {
            Some(CgroupMounts::read(root)?)
        } else {
            None
        };
        let mut cpusets: BTreeMap<String, Option<Cpuset>> = BTreeMap::new();
        let mut result = ScanResult {
            taken_at,
            processes: Vec::with_capacity(pids.len()),
            gone: 0,
            kernel_threads: 0,
            errors: Vec::new(),
        };
        for pid in pids {
            match self.read_process(root, pid, opts, mounts.as_ref(), &mut cpusets) {
                Ok(Some(Live::Alive(p))) => result.processes.push(p),
                Ok(Some(Live::Gone)) => result.gone += 1,
                Ok(None) => result.kernel_threads += 1,
                // A process that exits while it is read leaves a zombie whose files are empty
                // or cut short: that is an exit, not a read error worth a warning.
                Err(_) if has_exited(root, pid) => result.gone += 1,
                Err(e) => result.errors.push(e),
            }
        }
        Ok(result)
    }

    /// Reads one process. `Gone` when it has exited; kernel threads are read whatever
    /// [`ScanOptions::kernel_threads`] says.
    pub fn scan_one(
        &mut self,
        root: &Path,
        pid: Pid,
        opts: &ScanOptions,
    ) -> Result<Live<ProcessSample>, ProcError> {
        let mounts = if opts.cpuset {
            Some(CgroupMounts::read(root)?)
        } else {
            None
        };
        let opts = ScanOptions {
            kernel_threads: true,
            ..opts.clone()
        };
        Ok(self
            .read_process(root, pid, &opts, mounts.as_ref(), &mut BTreeMap::new())?
            .unwrap_or(Live::Gone))
    }

    /// `Ok(None)`: a kernel thread left out.
    fn read_process(
        &mut self,
        root: &Path,
        pid: Pid,
        opts: &ScanOptions,
        mounts: Option<&CgroupMounts>,
        cpusets: &mut BTreeMap<String, Option<Cpuset>>,
    ) -> Result<Option<Live<ProcessSample>>, ProcError> {
        macro_rules! alive {
            ($e:expr) => {
                match $e? {
                    Live::Alive(v) => v,
                    Live::Gone => return Ok(Some(Live::Gone)),
                }
            };
        }
        let dir = alive!(ProcDir::open(root, pid));
        let stat = alive!(dir.stat_file("stat", &mut self.buf));
        let kernel = crate::procfs::stat::is_kernel_thread(pid, stat.ppid, stat.flags);
        if kernel && !opts.kernel_threads {
            return Ok(None);
        }
        let status = alive!(dir.status());
        let mut p = ProcessSample {
            pid,
            starttime: stat.starttime,
            comm: stat.comm,
            state: stat.state,
            ppid: stat.ppid,
            flags: stat.flags,
            uid: status.real_uid(),
            euid: status.effective_uid(),
            utime: stat.utime,
            stime: stat.stime,
            minflt: stat.minflt,
            majflt: stat.majflt,
            nice: stat.nice,
            num_threads: stat.num_threads,
            processor: stat.processor,
            policy: stat.policy,
            rt_priority: stat.rt_priority,
            cpus_allowed: status.cpus_allowed,
            mems_allowed: status.mems_allowed,
            vm_rss_bytes: status.vm_rss_bytes,
            threads: Vec::new(),
            cgroup: None,
            cpuset: None,
            numa: None,
            sched: None,
        };
        if kernel {
            return Ok(Some(Live::Alive(p)));
        }
        if opts.threads || opts.thread_status {
            p.threads = alive!(self.read_threads(&dir, opts));
        }
        if opts.cgroup || opts.cpuset {
            if let Some(cg) = alive!(dir.cgroup()) {
                p.cgroup = cg.path().map(str::to_string);
                if let (Some(mounts), Some(path)) = (mounts, cg.cpuset_path().map(|(_, p)| p)) {
                    let cached = match cpusets.get(path) {
                        Some(c) => c.clone(),
                        None => {
                            let c = cgroup::read_cpuset(root, mounts, &cg)?;
                            cpusets.insert(path.to_string(), c.clone());
                            c
                        }
                    };
                    p.cpuset = cached;
                }
            }
        }
        if opts.numa_maps.wants(pid) {
            if let Some(m) = alive!(dir.numa_maps()) {
                p.numa = Some(NumaSample {
                    node_bytes: m.node_bytes(),
                    private_node_bytes: m.private_node_bytes(),
                    foreign_policy: m.foreign_policy().cloned(),
                });
            }
        }
        if opts.sched {
            p.sched = alive!(dir.sched());
        }
        Ok(Some(Live::Alive(p)))
    }

    /// The threads of `dir` (`task/*/stat`, and each one's allowed CPUs with
    /// `thread_status`); `Gone` when the process, or every thread, exited between the listing
    /// and the reads.
    fn read_threads(
        &mut self,
        dir: &ProcDir,
        opts: &ScanOptions,
    ) -> Result<Live<Vec<ThreadSample>>, ProcError> {
        let Live::Alive(tids) = dir.tids()? else {
            return Ok(Live::Gone);
        };
        let mut threads = Vec::with_capacity(tids.len());
        for tid in tids {
            let name = format!("task/{tid}/stat");
            let Live::Alive(t) = dir.stat_file(&name, &mut self.buf)? else {
                continue;
            };
            let cpus_allowed = if opts.thread_status {
                match dir.task_status(tid)? {
                    Live::Alive(s) => Some(s.cpus_allowed),
                    Live::Gone => continue,
                }
            } else {
                None
            };
            let schedstat = if opts.schedstat {
                match dir.task_schedstat(tid)? {
                    Live::Alive(s) => s,
                    Live::Gone => continue,
                }
            } else {
                None
            };
            threads.push(ThreadSample {
                tid,
                starttime: t.starttime,
                comm: t.comm,
                state: t.state,
                utime: t.utime,
                stime: t.stime,
                processor: t.processor,
                policy: t.policy,
                rt_priority: t.rt_priority,
                cpus_allowed,
                schedstat,
            });
        }
        if threads.is_empty() {
            // Every thread exited between the listing and the reads.
            return Ok(Live::Gone);
        }
        Ok(Live::Alive(threads))
    }
}

/// `sysconf(_SC_CLK_TCK)`: the unit of the CPU times in `stat` (100 when unknown).
pub fn clock_ticks_per_second() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as u64,
        _ => 100,
    }
}

/// Whether `pid` is gone or a zombie (`Z`) or dead (`X`) task now.
fn has_exited(root: &Path, pid: Pid) -> bool {
    match procfs::stat::read(root, pid) {
        Ok(Live::Alive(st)) => matches!(st.state, 'Z' | 'X' | 'x'),
        Ok(Live::Gone) => true,
        Err(_) => false,
    }
}
