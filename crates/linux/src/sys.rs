//! The raw syscalls that no safe crate offers with masks of any size: `sched_getaffinity`,
//! `sched_setaffinity` (glibc's and nix's `cpu_set_t` stop at 1024 CPUs), `move_pages`,
//! `migrate_pages` and `get_mempolicy` (in no safe crate at all); and `sched_getattr` /
//! `sched_setattr`, which glibc wraps only from 2.41 and the `libc` crate not at all.
//!
//! This is the only module of the crate allowed `unsafe`. Each unsafe block is one
//! `libc::syscall` whose pointer arguments point into live Rust buffers of the length passed
//! alongside; the kernel copies from and into them and keeps no reference after the call.
//! The functions here are safe and return the raw `Errno`; [`crate::affinity`],
//! [`crate::migrate`], [`crate::mempolicy`] and [`crate::slice`] turn errors into typed ones.
//!
//! Masks are arrays of `unsigned long` (`c_ulong`), bit `i % BITS` of word `i / BITS` for
//! CPU or node `i`, as the kernel reads them on every architecture.

#![allow(unsafe_code)]

use libc::{c_long, c_ulong, pid_t};
use nix::errno::Errno;
use topo::CpuSet;

/// `get_mempolicy` flags (`include/uapi/linux/mempolicy.h`).
pub(crate) const MPOL_F_NODE: i32 = 1 << 0;
pub(crate) const MPOL_F_ADDR: i32 = 1 << 1;
pub(crate) const MPOL_F_MEMS_ALLOWED: i32 = 1 << 2;
/// Mode flags OR-ed into a policy's mode.
pub(crate) const MPOL_F_STATIC_NODES: i32 = 1 << 15;
pub(crate) const MPOL_F_RELATIVE_NODES: i32 = 1 << 14;
pub(crate) const MPOL_F_NUMA_BALANCING: i32 = 1 << 13;
pub(crate) const MPOL_MODE_FLAGS: i32 =
    MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING;
/// `move_pages` flags: move pages mapped only by this process / all pages (CAP_SYS_NICE).
pub(crate) const MPOL_MF_MOVE: i32 = 1 << 1;
pub(crate) const MPOL_MF_MOVE_ALL: i32 = 1 << 2;

const WORD_BITS: usize = c_ulong::BITS as usize;
/// First mask size tried when the kernel's size is not known: 1024 bits, glibc's size.
const FIRST_WORDS: usize = 1024 / WORD_BITS;
/// Largest mask tried: 2^22 bits (the kernel's `NR_CPUS` limit is 8192, `MAX_NUMNODES` 1024;
/// `get_mempolicy` refuses more than a page of bits).
const MAX_WORDS: usize = (1 << 22) / WORD_BITS;

/// A set as kernel mask words, at least `min_words` long.
pub(crate) fn to_words(set: &CpuSet, min_words: usize) -> Vec<c_ulong> {
    let len = set
        .iter()
        .last()
        .map_or(0, |max| max / WORD_BITS + 1)
        .max(min_words);
    let mut words: Vec<c_ulong> = vec![0; len];
    for i in set.iter() {
        words[i / WORD_BITS] |= 1 << (i % WORD_BITS);
    }
    words
}

/// Kernel mask words as a set.
pub(crate) fn from_words(words: &[c_ulong]) -> CpuSet {
    let mut set = CpuSet::new();
    for (wi, &w) in words.iter().enumerate() {
        let mut bits = w;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            set.insert(wi * WORD_BITS + b);
            bits &= bits - 1;
        }
    }
    set
}

fn check(ret: c_long) -> Result<c_long, Errno> {
    if ret < 0 { Err(Errno::last()) } else { Ok(ret) }
}

/// `sched_getaffinity(tid)`: the mask grows until the kernel's `nr_cpu_ids` bits fit (the
/// kernel answers EINVAL while the buffer is smaller).
pub(crate) fn sched_getaffinity(tid: pid_t) -> Result<CpuSet, Errno> {
    let mut words = FIRST_WORDS;
    loop {
        let mut buf: Vec<c_ulong> = vec![0; words];
        let bytes = words * size_of::<c_ulong>();
        // SAFETY: `buf` is a live, writable buffer of exactly `bytes` bytes; the kernel writes
        // at most `bytes` bytes into it and keeps no reference after returning.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                tid as c_long,
                bytes as c_long,
                buf.as_mut_ptr(),
            )
        };
        match check(ret) {
            Ok(written) => {
                let written_words = (written as usize).div_ceil(size_of::<c_ulong>());
                return Ok(from_words(&buf[..written_words.min(words)]));
            }
            Err(Errno::EINVAL) if words < MAX_WORDS => words *= 2,
            Err(e) => return Err(e),
        }
    }
}

/// `sched_setaffinity(tid, mask)`. The kernel ignores bits beyond its `nr_cpu_ids` and
/// intersects the mask with the task's cpuset.
pub(crate) fn sched_setaffinity(tid: pid_t, set: &CpuSet) -> Result<(), Errno> {
    let buf = to_words(set, 1);
    let bytes = buf.len() * size_of::<c_ulong>();
    // SAFETY: `buf` is a live buffer of exactly `bytes` bytes that the kernel only reads.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            tid as c_long,
            bytes as c_long,
            buf.as_ptr(),
        )
    };
    check(ret).map(drop)
}

/// `move_pages(pid, count, pages, nodes, status, flags)` for one batch: `pages` holds
/// addresses in the target's address space (numbers, never dereferenced here); `nodes`, when
/// given, the target node of each page (else the call only queries); `status` receives, per
/// page, its node or a negative errno. Returns the number of pages not migrated (Linux 4.17+;
/// 0 before).
pub(crate) fn move_pages(
    pid: pid_t,
    pages: &[usize],
    nodes: Option<&[i32]>,
    status: &mut [i32],
    flags: i32,
) -> Result<c_long, Errno> {
    if status.len() != pages.len() || nodes.is_some_and(|n| n.len() != pages.len()) {
        return Err(Errno::EINVAL);
    }
    let nodes_ptr = nodes.map_or(std::ptr::null(), <[i32]>::as_ptr);
    // SAFETY: `pages` (read), `nodes` (read, or null) and `status` (written) are live buffers of
    // `pages.len()` elements each, as checked above; the kernel's `void *` is the size of
    // `usize` and `int` is `i32` on every Linux target; it keeps no reference after returning.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as c_long,
            pages.len() as c_ulong,
            pages.as_ptr(),
            nodes_ptr,
            status.as_mut_ptr(),
            flags as c_long,
        )
    };
    check(ret)
}

/// `migrate_pages(pid, maxnode, old_nodes, new_nodes)`: moves every page of the process on
/// `from` to `to`. Returns the number of pages that could not be moved.
pub(crate) fn migrate_pages(pid: pid_t, from: &CpuSet, to: &CpuSet) -> Result<c_long, Errno> {
    let min = to_words(from, 1).len().max(to_words(to, 1).len());
    let old = to_words(from, min);
    let new = to_words(to, min);
    // The kernel reads `maxnode - 1` bits (a historical off-by-one that libnuma also
    // compensates for).
    let maxnode = min * WORD_BITS + 1;
    // SAFETY: `old` and `new` are live buffers of `min` words, which hold the `maxnode - 1`
    // bits the kernel reads; it only reads them and keeps no reference.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            pid as c_long,
            maxnode as c_ulong,
            old.as_ptr(),
            new.as_ptr(),
        )
    };
    check(ret)
}

/// `get_mempolicy(&mode, nodemask, maxnode, addr, flags)` for the calling thread. Returns the
/// mode word (mode and flags; the node with `MPOL_F_NODE`) and the node mask. The mask grows
/// until the kernel's `nr_node_ids` fits.
pub(crate) fn get_mempolicy(addr: usize, flags: i32) -> Result<(i32, CpuSet), Errno> {
    let mut words = FIRST_WORDS;
    loop {
        let mut mode: libc::c_int = 0;
        let mut buf: Vec<c_ulong> = vec![0; words];
        let maxnode = words * WORD_BITS;
        // SAFETY: `mode` is a live `int` and `buf` a live buffer of `words` words; with
        // `maxnode` = its size in bits the kernel writes at most that many bytes
        // (`ALIGN(maxnode - 1, 64) / 8`), and it keeps no reference.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                &mut mode as *mut libc::c_int,
                buf.as_mut_ptr(),
                maxnode as c_ulong,
                addr,
                flags as c_long,
            )
        };
        match check(ret) {
            Ok(_) => return Ok((mode, from_words(&buf))),
            Err(Errno::EINVAL) if words < MAX_WORDS && maxnode < 4096 * 8 => words *= 2,
            Err(e) => return Err(e),
        }
    }
}

/// `struct sched_attr` of `include/uapi/linux/sched/types.h` in its first version
/// (`SCHED_ATTR_SIZE_VER0`, 48 bytes): without the utilization clamps, which homenode never
/// reads or sets. The kernel accepts this size from every version on (3.14).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SchedAttrV0 {
    pub size: u32,
    pub sched_policy: u32,
    pub sched_flags: u64,
    pub sched_nice: i32,
    pub sched_priority: u32,
    pub sched_runtime: u64,
    pub sched_deadline: u64,
    pub sched_period: u64,
}

/// `SCHED_ATTR_SIZE_VER0`.
pub(crate) const SCHED_ATTR_SIZE_VER0: u32 = 48;
const _: () = assert!(size_of::<SchedAttrV0>() == SCHED_ATTR_SIZE_VER0 as usize);

/// `sched_getattr(tid, &attr, 48, 0)`: the thread's policy, flags, nice, real-time priority
/// and (fair class, Linux 6.12 and later) its slice in `sched_runtime`.
pub(crate) fn sched_getattr(tid: pid_t) -> Result<SchedAttrV0, Errno> {
    let mut attr = SchedAttrV0::default();
    // SAFETY: `attr` is a live, writable `#[repr(C)]` struct of exactly
    // `SCHED_ATTR_SIZE_VER0` bytes (checked at compile time above); the kernel writes at most
    // the size passed and keeps no reference after returning.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid as c_long,
            &mut attr as *mut SchedAttrV0,
            SCHED_ATTR_SIZE_VER0 as c_ulong,
            0 as c_ulong,
        )
    };
    check(ret).map(|_| attr)
}

/// `sched_setattr(tid, &attr, 0)` with `attr.size` set to 48. Policy, flags, nice, priority
/// and runtime are all taken from `attr`: the caller passes back what it read.
pub(crate) fn sched_setattr(tid: pid_t, attr: &SchedAttrV0) -> Result<(), Errno> {
    let attr = SchedAttrV0 {
        size: SCHED_ATTR_SIZE_VER0,
        ..*attr
    };
    // SAFETY: `attr` is a live `#[repr(C)]` struct of `SCHED_ATTR_SIZE_VER0` bytes whose
    // `size` field says so; the kernel only reads it and keeps no reference.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            tid as c_long,
            &attr as *const SchedAttrV0,
            0 as c_ulong,
        )
    };
    check(ret).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        let s: CpuSet = [0, 1, 63, 64, 1000, 5000].into_iter().collect();
        let w = to_words(&s, 1);
        assert_eq!(w.len(), 5000 / WORD_BITS + 1);
        assert_eq!(from_words(&w), s);
        assert_eq!(to_words(&CpuSet::new(), 3), vec![0; 3]);
        assert_eq!(to_words(&CpuSet::single(2), 4).len(), 4);
    }
}
