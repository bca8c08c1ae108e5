//! Disks as FIFO servers.
//!
//! A request arrives with its service time (seek + rotation + transfer, computed by the
//! workload from [`DiskParams`]) and is served after every request queued before it on the
//! same disk. Service times are known on arrival and the order is first come first served, so
//! the completion time is fixed at arrival: `max(now, disk free) + service`. The kernel then
//! puts the task to sleep until that time; no event is needed for the queue itself.
//!
//! A request may be waited for (a read, a write the writer must see on disk): its task sleeps
//! in the uninterruptible disk wait that the load average counts. Or not (write-behind: the
//! page cache takes the data and the disk writes it later): it only occupies the disk.

use crate::program::{Phase, Workload};
use crate::time::{MS, Ns, SEC};
use std::collections::VecDeque;

/// One disk's mechanics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskParams {
    /// Average seek time (ns).
    pub seek_ns: Ns,
    /// Spindle speed; a request waits half a rotation on average.
    pub rpm: u32,
    /// Media transfer rate, bytes per second.
    pub bytes_per_s: f64,
}

impl Default for DiskParams {
    /// A late-1990s 10,000 rpm SCSI disk (docs/model/disks-and-loadavg.md gives the sources and what is
    /// assumed).
    fn default() -> Self {
        DiskParams {
            seek_ns: 6 * MS,
            rpm: 10_000,
            bytes_per_s: 20e6,
        }
    }
}

impl DiskParams {
    /// Service time of one request of `bytes`: an average seek, half a rotation, the
    /// transfer.
    pub fn service_ns(&self, bytes: u64) -> Ns {
        let half_rotation = 60.0 * SEC as f64 / f64::from(self.rpm.max(1)) / 2.0;
        let transfer = bytes as f64 / self.bytes_per_s.max(1.0) * SEC as f64;
        self.seek_ns + (half_rotation + transfer).round() as Ns
    }
}

/// One disk: when it is free again and the completion times of the waited requests not yet
/// served (both in arrival order, hence ascending).
#[derive(Clone, Debug, Default)]
struct Disk {
    free_at: Ns,
    waited: VecDeque<Ns>,
    requests: u64,
    busy_ns: Ns,
}

/// The machine's disks.
#[derive(Clone, Debug, Default)]
pub struct Disks {
    disks: Vec<Disk>,
}

/// What the disks did over a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskStats {
    /// Requests per disk.
    pub requests: Vec<u64>,
    /// Time each disk spent serving, ns.
    pub busy_ns: Vec<Ns>,
}

impl Disks {
    /// `n` idle disks.
    pub fn new(n: usize) -> Disks {
        Disks {
            disks: vec![Disk::default(); n],
        }
    }

    /// As many disks as the workload's `Io` phases name (none for a workload without I/O).
    pub fn for_workload(w: &Workload) -> Disks {
        let n = w
            .programs
            .iter()
            .flat_map(|p| &p.phases)
            .filter_map(|ph| match ph {
                Phase::Io { disk, .. } => Some(disk + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        Disks::new(n)
    }

    pub fn len(&self) -> usize {
        self.disks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.disks.is_empty()
    }

    /// Queue a request taking `service` ns on disk `d` at `now`; returns when it is served.
    /// A `waited` one counts as a task in disk wait until then.
    ///
    /// # Panics
    /// If `d` is not a disk of this machine ([`Disks::for_workload`] sizes them).
    pub fn submit(&mut self, d: usize, now: Ns, service: Ns, waited: bool) -> Ns {
        let disk = &mut self.disks[d];
        while disk.waited.front().is_some_and(|&t| t <= now) {
            disk.waited.pop_front();
        }
        let done = disk.free_at.max(now) + service;
        disk.free_at = done;
        disk.requests += 1;
        disk.busy_ns += service;
        if waited {
            disk.waited.push_back(done);
        }
        done
    }

    /// Tasks waiting for a disk at `now` (their request is queued or being served).
    pub fn waiting(&self, now: Ns) -> usize {
        self.disks
            .iter()
            .map(|d| d.waited.len() - d.waited.partition_point(|&t| t <= now))
            .sum()
    }

    pub fn stats(&self) -> DiskStats {
        DiskStats {
            requests: self.disks.iter().map(|d| d.requests).collect(),
            busy_ns: self.disks.iter().map(|d| d.busy_ns).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_time_is_seek_half_rotation_and_transfer() {
        let p = DiskParams {
            seek_ns: 6 * MS,
            rpm: 10_000,
            bytes_per_s: 20e6,
        };
        // 6 ms + 3 ms (half of 6 ms per turn) + 8192 B / 20 MB/s = 0.4096 ms.
        assert_eq!(p.service_ns(8192), 9_409_600);
    }

    #[test]
    fn a_disk_serves_in_arrival_order() {
        let mut d = Disks::new(1);
        let a = d.submit(0, 0, 10 * MS, true);
        let b = d.submit(0, MS, 5 * MS, true);
        let c = d.submit(0, 2 * MS, MS, true);
        // b arrived after a and waits for it even though it is shorter; c waits for both.
        assert_eq!((a, b, c), (10 * MS, 15 * MS, 16 * MS));
        assert_eq!(d.waiting(2 * MS), 3);
        assert_eq!(d.waiting(10 * MS), 2);
        assert_eq!(d.waiting(16 * MS), 0);
        // Idle again: a late request is served at once.
        assert_eq!(d.submit(0, 30 * MS, 2 * MS, false), 32 * MS);
        assert_eq!(d.waiting(31 * MS), 0, "write-behind is not waited for");
        assert_eq!(d.stats().requests, vec![4]);
        assert_eq!(d.stats().busy_ns, vec![18 * MS]);
    }

    #[test]
    fn disks_are_independent() {
        let mut d = Disks::new(2);
        assert_eq!(d.submit(0, 0, 10 * MS, true), 10 * MS);
        assert_eq!(d.submit(1, 0, 10 * MS, true), 10 * MS);
        assert_eq!(d.waiting(MS), 2);
    }

    /// Two streams of back-to-back requests: each alone finishes its requests at the disk's
    /// pace; together each takes about twice as long.
    #[test]
    fn two_streams_slow_each_other_down() {
        let service = 9 * MS;
        let run = |streams: usize| {
            let mut d = Disks::new(1);
            let mut next = vec![0; streams];
            for _ in 0..100 {
                for t in next.iter_mut() {
                    *t = d.submit(0, *t, service, true);
                }
            }
            next
        };
        let alone = run(1)[0];
        let both = run(2);
        assert_eq!(alone, 100 * service);
        assert!(both.iter().all(|&t| t >= 2 * alone - service), "{both:?}");
    }
}
