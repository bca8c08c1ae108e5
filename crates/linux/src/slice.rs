//! The fair class's custom scheduling slice of threads (Linux 6.12 and later), read with
//! `sched_getattr(2)` and set with `sched_setattr(2)` (through the private `sys` module, with
//! the first, 48-byte version of `struct sched_attr`).
//!
//! What the kernel does (6.12, commit 857b158dc5e8 "sched/eevdf: Use sched_attr::sched_runtime
//! to set request/slice suggestion"):
//!
//! - `sched_setattr` of a thread whose policy is `SCHED_OTHER` or `SCHED_BATCH` with
//!   `sched_runtime` not 0 gives it a *custom slice*, clamped to 0.1-100 ms
//!   ([`kernel_slice`]); with `sched_runtime` 0 it takes the custom slice away, and the thread
//!   runs with the kernel's base slice again.
//! - `sched_getattr` of such a thread reports its slice in `sched_runtime`: the custom one, or
//!   the base slice when it has none (1.4 ms on this 2-CPU host under 6.18: 0.70 ms times
//!   `1 + ilog2(min(online CPUs, 8))`; kernels before 6.15 or so used 0.75 ms, and the
//!   base can be changed in debugfs). Before 6.12 it reports 0 and the kernel ignores
//!   `sched_runtime` for these policies: a fair thread that reads 0 means *this kernel has no
//!   custom slices*.
//! - `sched_setattr` sets the policy, nice value and flags too, all in one call. So a slice is
//!   set by passing back the thread's own policy and nice as just read
//!   ([`SchedAttr::with_slice`]), never `SCHED_FLAG_KEEP_PARAMS` (which would skip the
//!   slice). If the thread's owner changes its nice value between the read and the write, the
//!   write puts the old one back: a race of a few microseconds, accepted.
//! - New threads and child processes inherit their creator's custom slice, unless the creator
//!   has `SCHED_FLAG_RESET_ON_FORK`: then `sched_fork` gives the child the base slice (and
//!   clears the flag in the child), and for a fair thread at nice 0 or above changes nothing
//!   else (it would also reset a negative nice, or a real-time policy). So homenode sets the
//!   flag with its slice: nothing it gave outlives the threads it set, in a child process it
//!   never journaled. Threads whose owner set the flag, and threads at a negative nice, are
//!   left alone: undoing could not tell the owner's flag from homenode's, and the flag would
//!   change what a negative nice passes on. Taking the slice back clears the flag again.
//! - A thread born during [`set_threads_slice`] from one not yet set has the base slice, one
//!   born from one already set too; [`set_threads_slice`] and [`restore_threads_slice`] list
//!   `task/` again until no new thread appears, as [`crate::affinity::set_process_affinity`]
//!   does.
//!
//! The kernel's base slice is not computed here (its formula changed between kernels) but
//! measured ([`probe_base_slice`]): a short-lived thread of the caller takes its own custom
//! slice away and reads back what the kernel gives it.
//!
//! [`SliceOps`] is the interface (the kernel's calls in [`SystemSlice`]) so that the rules
//! can be tested with a table instead of real threads.

use nix::errno::Errno;

pub use crate::error::SliceError;
use crate::error::{Error, ProcError};
use crate::procfs::ProcDir;
use crate::{Live, Tid, sys};

/// `SCHED_OTHER` (`SCHED_NORMAL`).
pub const SCHED_OTHER: u32 = 0;
/// `SCHED_BATCH`.
pub const SCHED_BATCH: u32 = 3;
/// `SCHED_FLAG_RESET_ON_FORK`: children start with the default policy, nice and slice.
pub const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;
/// The shortest custom slice the kernel keeps, ns (0.1 ms).
pub const MIN_SLICE_NS: u64 = 100_000;
/// The longest custom slice the kernel keeps, ns (100 ms).
pub const MAX_SLICE_NS: u64 = 100_000_000;

/// The slice the kernel holds after being asked for `ns` (not 0): `ns` clamped to 0.1-100 ms,
/// as `__setscheduler_params` does.
pub fn kernel_slice(ns: u64) -> u64 {
    ns.clamp(MIN_SLICE_NS, MAX_SLICE_NS)
}

/// A slice in milliseconds for messages: `100 ms`, `1.4 ms`.
pub fn fmt_ms(ns: u64) -> String {
    format!("{} ms", ns as f64 / 1e6)
}

/// A thread's scheduling attributes, as `sched_getattr` reports them (the fields of the first
/// version of `struct sched_attr` that matter here).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAttr {
    /// `SCHED_*`.
    pub policy: u32,
    /// `SCHED_FLAG_*`; the kernel reports only `SCHED_FLAG_RESET_ON_FORK`.
    pub flags: u64,
    /// The nice value (fair policies).
    pub nice: i32,
    /// The real-time priority (0 for the fair policies).
    pub priority: u32,
    /// The slice, ns: for a fair thread under 6.12 and later its custom slice or the base
    /// slice; 0 before 6.12 and for other policies.
    pub runtime_ns: u64,
}

impl SchedAttr {
    /// `SCHED_OTHER` or `SCHED_BATCH`: the policies whose slice `sched_runtime` sets.
    /// (`SCHED_IDLE` is in the fair class too, but the kernel does not take its
    /// `sched_runtime`.)
    pub fn is_fair(&self) -> bool {
        self.policy == SCHED_OTHER || self.policy == SCHED_BATCH
    }

    /// The same attributes asking for slice `ns` (0: the kernel's default): the policy and the
    /// nice value are passed back as read. With a slice, `SCHED_FLAG_RESET_ON_FORK` is set, so
    /// that the thread's children start with the base slice; with 0 it is cleared (homenode
    /// slices only threads that did not have it). Every other flag is dropped,
    /// `SCHED_FLAG_KEEP_PARAMS` above all (it would skip the slice).
    pub fn with_slice(&self, ns: u64) -> SchedAttr {
        SchedAttr {
            policy: self.policy,
            flags: if ns > 0 { SCHED_FLAG_RESET_ON_FORK } else { 0 },
            nice: self.nice,
            priority: 0,
            runtime_ns: ns,
        }
    }

    /// Whether its children start with the default attributes (`SCHED_FLAG_RESET_ON_FORK`).
    pub fn resets_on_fork(&self) -> bool {
        self.flags & SCHED_FLAG_RESET_ON_FORK != 0
    }

    fn policy_name(&self) -> String {
        crate::procfs::stat::SchedPolicy::from_raw(self.policy).to_string()
    }
}

fn to_pid_t(op: &'static str, tid: Tid) -> Result<libc::pid_t, SliceError> {
    match libc::pid_t::try_from(tid) {
        Ok(t) if t > 0 => Ok(t),
        _ => Err(SliceError::InvalidTid { op, tid }),
    }
}

/// The scheduling attributes of thread `tid`; `Gone` when there is no such thread.
pub fn get_attr(tid: Tid) -> Result<Live<SchedAttr>, SliceError> {
    const OP: &str = "sched_getattr";
    match sys::sched_getattr(to_pid_t(OP, tid)?) {
        Ok(a) => Ok(Live::Alive(SchedAttr {
            policy: a.sched_policy,
            flags: a.sched_flags,
            nice: a.sched_nice,
            priority: a.sched_priority,
            runtime_ns: a.sched_runtime,
        })),
        Err(Errno::ESRCH) => Ok(Live::Gone),
        Err(e) => Err(SliceError::from_errno(OP, tid, e)),
    }
}

/// Sets the scheduling attributes of thread `tid` (all of them: pass back what
/// [`get_attr`] read, changed by [`SchedAttr::with_slice`]); `Gone` when there is no such
/// thread.
pub fn set_attr(tid: Tid, attr: &SchedAttr) -> Result<Live<()>, SliceError> {
    const OP: &str = "sched_setattr";
    let raw = sys::SchedAttrV0 {
        size: sys::SCHED_ATTR_SIZE_VER0,
        sched_policy: attr.policy,
        sched_flags: attr.flags,
        sched_nice: attr.nice,
        sched_priority: attr.priority,
        sched_runtime: attr.runtime_ns,
        sched_deadline: 0,
        sched_period: 0,
    };
    match sys::sched_setattr(to_pid_t(OP, tid)?, &raw) {
        Ok(()) => Ok(Live::Alive(())),
        Err(Errno::ESRCH) => Ok(Live::Gone),
        Err(errno @ (Errno::EINVAL | Errno::E2BIG)) => Err(SliceError::Refused {
            op: OP,
            tid,
            policy: attr.policy,
            nice: attr.nice,
            runtime_ns: attr.runtime_ns,
            errno,
        }),
        Err(e) => Err(SliceError::from_errno(OP, tid, e)),
    }
}

/// The kernel's base slice now, ns, measured: a new thread of the caller asks for the default
/// slice (`sched_runtime` 0, its own policy and nice kept; `SCHED_OTHER` at nice 0 if the
/// caller is not in the fair class) and reads back what it got. `None` when the kernel has no
/// custom slices (a fair thread reads 0: before 6.12). Only the probe thread is changed, and
/// it exits before this returns.
pub fn probe_base_slice() -> Result<Option<u64>, SliceError> {
    let probe = || -> Result<Option<u64>, SliceError> {
        let tid = crate::affinity::current_tid();
        let gone = || SliceError::Os {
            op: "sched_getattr",
            tid,
            errno: Errno::ESRCH,
        };
        let now = get_attr(tid)?.alive().ok_or_else(gone)?;
        if now.is_fair() && now.runtime_ns == 0 {
            return Ok(None);
        }
        let ask = if now.is_fair() {
            now.with_slice(0)
        } else {
            SchedAttr {
                policy: SCHED_OTHER,
                ..SchedAttr::default()
            }
        };
        set_attr(tid, &ask)?.alive().ok_or_else(gone)?;
        let back = get_attr(tid)?.alive().ok_or_else(gone)?;
        Ok((back.runtime_ns > 0).then_some(back.runtime_ns))
    };
    let failed = |errno| SliceError::Probe { errno };
    std::thread::scope(|s| {
        let t = std::thread::Builder::new()
            .name("homenode-slice".into())
            .spawn_scoped(s, probe)
            .map_err(|e| failed(Errno::from_raw(e.raw_os_error().unwrap_or(libc::EAGAIN))))?;
        t.join().unwrap_or(Err(failed(Errno::EFAULT)))
    })
}

/// Reading and setting threads' scheduling attributes, as an interface so that the slice rules
/// (and the journal's restore) can be tested without touching real threads. [`SystemSlice`]
/// is the real one.
pub trait SliceOps {
    fn get(&mut self, tid: Tid) -> Result<Live<SchedAttr>, SliceError>;
    fn set(&mut self, tid: Tid, attr: &SchedAttr) -> Result<Live<()>, SliceError>;
    /// The slice a fair thread without a custom one has now, ns; `None` when the kernel has
    /// no custom slices.
    fn base_slice(&mut self) -> Result<Option<u64>, SliceError>;
}

/// The kernel's `sched_getattr` / `sched_setattr`, and [`probe_base_slice`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemSlice;

impl SliceOps for SystemSlice {
    fn get(&mut self, tid: Tid) -> Result<Live<SchedAttr>, SliceError> {
        get_attr(tid)
    }

    fn set(&mut self, tid: Tid, attr: &SchedAttr) -> Result<Live<()>, SliceError> {
        set_attr(tid, attr)
    }

    fn base_slice(&mut self) -> Result<Option<u64>, SliceError> {
        probe_base_slice()
    }
}

/// What [`set_threads_slice`] did to a process's threads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceSet {
    /// The slice set, ns (as the kernel holds it).
    pub slice_ns: u64,
    /// Threads given it.
    pub set: usize,
    /// Threads that had it already (set before, or born from a thread that had it).
    pub already: usize,
    /// Threads not `SCHED_OTHER` or `SCHED_BATCH`, left as they were, by policy.
    pub other_policy: Vec<(u32, usize)>,
    /// Threads with a slice that is neither the kernel's base slice nor one of homenode's
    /// (someone set their own), left as they were; the first of them and its slice.
    pub own_slice: usize,
    pub own_example: Option<(Tid, u64)>,
    /// Threads whose owner set `SCHED_FLAG_RESET_ON_FORK`, left as they were: homenode sets
    /// that flag with its slice and clears it when it takes the slice back, so it could not
    /// tell the owner's from its own.
    pub own_reset_on_fork: usize,
    /// Threads at a negative nice value, left as they were: with the flag their children would
    /// start at nice 0, without it they would keep homenode's slice.
    pub negative_nice: usize,
    /// Threads that exited before they were set.
    pub gone: usize,
}

impl SliceSet {
    /// One line for the log and the status table: `2 threads set to 100 ms; kept their own:
    /// 1 SCHED_FIFO thread, 1 thread with a slice someone else set (thread 12: 5 ms)`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} thread{} set to {}",
            self.set,
            plural(self.set),
            fmt_ms(self.slice_ns)
        );
        if self.already > 0 {
            s.push_str(&format!(", {} had it already", self.already));
        }
        let mut kept: Vec<String> = self
            .other_policy
            .iter()
            .map(|(p, n)| {
                let name = crate::procfs::stat::SchedPolicy::from_raw(*p);
                format!("{n} {name} thread{}", plural(*n))
            })
            .collect();
        if self.own_slice > 0 {
            let example = self
                .own_example
                .map(|(tid, ns)| format!(" (thread {tid}: {})", fmt_ms(ns)))
                .unwrap_or_default();
            kept.push(format!(
                "{} thread{} with a slice someone else set{example}",
                self.own_slice,
                plural(self.own_slice)
            ));
        }
        if self.own_reset_on_fork > 0 {
            kept.push(format!(
                "{} thread{} resetting {} children's attributes itself",
                self.own_reset_on_fork,
                plural(self.own_reset_on_fork),
                if self.own_reset_on_fork == 1 {
                    "its"
                } else {
                    "their"
                }
            ));
        }
        if self.negative_nice > 0 {
            kept.push(format!(
                "{} thread{} at a negative nice",
                self.negative_nice,
                plural(self.negative_nice)
            ));
        }
        if !kept.is_empty() {
            s.push_str("; kept their own: ");
            s.push_str(&kept.join(", "));
        }
        if self.gone > 0 {
            s.push_str(&format!("; {} exited meanwhile", self.gone));
        }
        s
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Listings of `task/` tried before giving up on catching every new thread.
const MAX_PASSES: usize = 4;

/// Threads of `dir`'s process listed in `task/` and not in `seen`; `Gone` when the process
/// has exited.
fn new_tids(dir: &ProcDir, seen: &[Tid]) -> Result<Live<Vec<Tid>>, ProcError> {
    Ok(dir
        .tids()?
        .map(|t| t.into_iter().filter(|t| !seen.contains(t)).collect()))
}

/// Calls `f` once for each thread of `dir`'s process with its attributes (`Gone` for one that
/// exited before it was read), listing `task/` again until no new thread appears. Returns the
/// number of threads seen, or `Gone` when the process has exited.
fn each_thread(
    dir: &ProcDir,
    ops: &mut dyn SliceOps,
    mut f: impl FnMut(Tid, Live<SchedAttr>, &mut dyn SliceOps) -> Result<(), Error>,
) -> Result<Live<usize>, Error> {
    let mut seen: Vec<Tid> = Vec::new();
    for _ in 0..MAX_PASSES {
        let Live::Alive(new) = new_tids(dir, &seen)? else {
            return Ok(Live::Gone);
        };
        if new.is_empty() {
            break;
        }
        for tid in new {
            seen.push(tid);
            let attr = ops.get(tid)?;
            f(tid, attr, ops)?;
        }
    }
    Ok(Live::Alive(seen.len()))
}

/// Gives every thread of `dir`'s process the custom slice `slice_ns` (clamped as the kernel
/// does) and `SCHED_FLAG_RESET_ON_FORK`, except threads whose policy is not `SCHED_OTHER` or
/// `SCHED_BATCH`, threads with a slice that is neither `base_ns` (the kernel's default) nor
/// one of `ours` (slices homenode gave this process: the new one and any earlier one), threads
/// whose owner set `SCHED_FLAG_RESET_ON_FORK`, and threads at a negative nice: they keep
/// theirs (module docs). Lists `task/` again until no new thread appears (at most 4
/// passes). `Gone` when the process has exited. An error from any thread stops the pass: the
/// threads already set keep the slice, and the caller's journal says it is homenode's.
pub fn set_threads_slice(
    dir: &ProcDir,
    slice_ns: u64,
    base_ns: u64,
    ours: &[u64],
    ops: &mut dyn SliceOps,
) -> Result<Live<SliceSet>, Error> {
    let want = kernel_slice(slice_ns);
    let mut done = SliceSet {
        slice_ns: want,
        ..SliceSet::default()
    };
    let seen = each_thread(dir, ops, |tid, attr, ops| {
        let Live::Alive(now) = attr else {
            done.gone += 1;
            return Ok(());
        };
        if !now.is_fair() {
            match done.other_policy.iter_mut().find(|(p, _)| *p == now.policy) {
                Some((_, n)) => *n += 1,
                None => done.other_policy.push((now.policy, 1)),
            }
        } else if now.runtime_ns == want {
            done.already += 1;
        } else if now.runtime_ns != base_ns && !ours.contains(&now.runtime_ns) {
            done.own_slice += 1;
            done.own_example.get_or_insert((tid, now.runtime_ns));
        } else if now.resets_on_fork() && !ours.contains(&now.runtime_ns) {
            done.own_reset_on_fork += 1;
        } else if now.nice < 0 {
            done.negative_nice += 1;
        } else {
            match ops.set(tid, &now.with_slice(want))? {
                Live::Alive(()) => done.set += 1,
                Live::Gone => done.gone += 1,
            }
        }
        Ok(())
    })?;
    let Live::Alive(seen) = seen else {
        return Ok(Live::Gone);
    };
    if seen == 0 || done.gone == seen {
        return Ok(Live::Gone);
    }
    done.other_policy.sort_unstable();
    Ok(Live::Alive(done))
}

/// What [`restore_threads_slice`] did to a process's threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SliceRestored {
    /// Threads at one of homenode's slices, given the kernel's default back.
    pub restored: usize,
    /// Threads at another slice (the default, or one someone else set), left as they were.
    pub left: usize,
    /// Threads that exited meanwhile.
    pub gone: usize,
}

/// Gives the kernel's default slice back to every fair thread of `dir`'s process whose slice
/// is one of `ours` (the slices homenode gave it), and clears the `SCHED_FLAG_RESET_ON_FORK`
/// that homenode set with it; every other thread is left as it is.
/// Lists `task/` again until no new thread appears: a thread born during the pass from one
/// that has homenode's slice without the flag (given by an older homenode) inherits
/// the slice. `Gone` when the process has exited.
pub fn restore_threads_slice(
    dir: &ProcDir,
    ours: &[u64],
    ops: &mut dyn SliceOps,
) -> Result<Live<SliceRestored>, Error> {
    let mut done = SliceRestored::default();
    let seen = each_thread(dir, ops, |tid, attr, ops| {
        let Live::Alive(now) = attr else {
            done.gone += 1;
            return Ok(());
        };
        if !now.is_fair() || !ours.contains(&now.runtime_ns) {
            done.left += 1;
            return Ok(());
        }
        match ops.set(tid, &now.with_slice(0))? {
            Live::Alive(()) => done.restored += 1,
            Live::Gone => done.gone += 1,
        }
        Ok(())
    })?;
    if !matches!(seen, Live::Alive(n) if n > 0) {
        return Ok(Live::Gone);
    }
    Ok(Live::Alive(done))
}

impl std::fmt::Display for SchedAttr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} nice {} slice {}",
            self.policy_name(),
            self.nice,
            fmt_ms(self.runtime_ns)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_clamps_and_a_slice_resets_on_fork_until_taken_back() {
        assert_eq!(kernel_slice(1), MIN_SLICE_NS);
        assert_eq!(kernel_slice(3_000_000), 3_000_000);
        assert_eq!(kernel_slice(u64::MAX), MAX_SLICE_NS);
        let read = SchedAttr {
            policy: SCHED_BATCH,
            // KEEP_POLICY (0x08), KEEP_PARAMS (0x10): never passed on.
            flags: 0x08 | 0x10,
            nice: 5,
            priority: 0,
            runtime_ns: 1_400_000,
        };
        let ask = read.with_slice(100_000_000);
        assert_eq!(
            ask,
            SchedAttr {
                policy: SCHED_BATCH,
                flags: SCHED_FLAG_RESET_ON_FORK,
                nice: 5,
                priority: 0,
                runtime_ns: 100_000_000,
            }
        );
        assert!(ask.resets_on_fork() && !read.resets_on_fork());
        let back = ask.with_slice(0);
        assert_eq!((back.flags, back.runtime_ns, back.nice), (0, 0, 5));
        assert!(read.is_fair());
        assert!(!SchedAttr { policy: 5, ..read }.is_fair(), "SCHED_IDLE");
        assert_eq!(fmt_ms(1_400_000), "1.4 ms");
        assert_eq!(ask.to_string(), "SCHED_BATCH nice 5 slice 100 ms");
    }

    #[test]
    fn an_id_that_is_not_a_thread_is_refused_before_the_kernel() {
        for tid in [0, u32::MAX] {
            let e = get_attr(tid).expect_err("refused");
            assert!(matches!(e, SliceError::InvalidTid { .. }), "{e}");
            assert_eq!(e.tid(), tid);
            let e = set_attr(tid, &SchedAttr::default()).expect_err("refused");
            assert!(e.to_string().contains("not a valid thread ID"), "{e}");
        }
    }

    #[test]
    fn what_was_done_reads_as_one_line() {
        let s = SliceSet {
            slice_ns: 100_000_000,
            set: 2,
            already: 1,
            other_policy: vec![(1, 1)],
            own_slice: 2,
            own_example: Some((12, 5_000_000)),
            own_reset_on_fork: 1,
            negative_nice: 2,
            gone: 1,
        };
        assert_eq!(
            s.describe(),
            "2 threads set to 100 ms, 1 had it already; kept their own: 1 SCHED_FIFO thread, \
             2 threads with a slice someone else set (thread 12: 5 ms), 1 thread resetting \
             its children's attributes itself, 2 threads at a negative nice; 1 exited meanwhile"
        );
        let one = SliceSet {
            slice_ns: 100_000_000,
            set: 1,
            ..SliceSet::default()
        };
        assert_eq!(one.describe(), "1 thread set to 100 ms");
    }
}
