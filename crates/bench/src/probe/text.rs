//! The probe's results as a table, and the machine-file keys they give.

use super::*;

impl ProbeResult {
    /// The results as a table, and the `[memory]` keys of a machine file they give.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "memory probe: {} MiB buffer, {} dependent loads per run, median of {} runs",
            self.buffer_mib, self.loads, self.rounds
        );
        let _ = writeln!(
            s,
            "cpu node  memory node  latency (ns)  one-core read (GB/s)"
        );
        for c in &self.cells {
            let _ = writeln!(
                s,
                "{:>8}  {:>11}  {:>12.1}  {:>20.2}",
                c.cpu_node, c.mem_node, c.latency_ns, c.read_gbps
            );
        }
        if let Some(local) = self.local_latency_ns() {
            let _ = writeln!(
                s,
                "\nFor a machine file: [memory] local_latency_ns = {local:.0} (random access, \
                 TLB misses included); one core streams {:.1} GB/s",
                self.local_read_gbps().unwrap_or(0.0)
            );
        }
        let _ = writeln!(
            s,
            "last-level cache: {:.1} ns per dependent load through {} KiB, {:.2} ns per \
             independent random update (MLP {:.1})",
            self.llc_latency_ns,
            self.llc_chase_kib,
            self.llc_gather_ns,
            self.llc_mlp().unwrap_or(0.0)
        );
        if let Some(m) = self.random_mlp() {
            let _ = writeln!(
                s,
                "independent random updates beyond the LLC: MLP {m:.1} (latency / ns per update)"
            );
        }
        if !self.cache_curve.is_empty() {
            let pts: Vec<String> = self
                .cache_curve
                .iter()
                .map(|(k, ns)| format!("{} KiB {ns:.0} ns", k))
                .collect();
            let _ = writeln!(s, "dependent loads by buffer size: {}", pts.join(", "));
        }
        if let Some(kib) = self.effective_llc_kib() {
            let _ = writeln!(s, "last-level cache this core holds alone: about {kib} KiB");
        }
        self.llc_share_text(&mut s);
        self.refill_text(&mut s);
        self.turn_refill_text(&mut s);
        self.turns_text(&mut s);
        self.co_run_text(&mut s);
        if let Some(mhz) = self.core_mhz {
            let _ = writeln!(
                s,
                "core clock: {mhz:.0} MHz (dependent adds, one per cycle, in the thread's CPU time)"
            );
        }
        if let (Some(local), Some(stream), Some(mlp), Some(llc)) = (
            self.local_latency_ns(),
            self.stream_mlp(),
            self.random_mlp(),
            self.model_llc_latency_ns(),
        ) {
            let bandwidth = self
                .node_bandwidth_gbps()
                .map(|b| format!(" --machine-set bandwidth_gbps={b:.1}"))
                .unwrap_or_default();
            let llc_kib = self
                .model_llc_kib()
                .map(|k| format!(" {}", llc_flags(k, self.model_llc_private())))
                .unwrap_or_default();
            let clock = self
                .core_mhz
                .map(|m| format!(" --machine-set freq_mhz={m:.0}"))
                .unwrap_or_default();
            let refill = self
                .refill_ns()
                .map(|r| format!(" --machine-set refill_ns={r:.1}"))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "[cpu] mlp = {mlp:.1}, stream_mlp = {stream:.0} (latency x rate / line), \
                 llc_latency_ns = {llc:.0} (ns per independent LLC hit x mlp).\n\
                 For `homenode sim --machine host`: --machine-set local_latency_ns={local:.0} \
                 --machine-set mlp={mlp:.1} --machine-set stream_mlp={stream:.0} \
                 --machine-set llc_latency_ns={llc:.0}{llc_kib}{bandwidth}{clock}{refill}"
            );
        }
        s
    }

    /// The turns' line ([`crate::turns`]).
    fn turns_text(&self, s: &mut String) {
        use std::fmt::Write as _;
        if let Some(t) = &self.turns {
            let hz = match t.hz {
                Some(hz) => format!("slices end at ticks of HZ={hz} (--sched linux:hz={hz})"),
                None => "no tick of 100, 250, 300 or 1000 Hz explains them".to_string(),
            };
            let _ = writeln!(
                s,
                "two CPU-bound threads on CPU {} take turns of {:.2} ms: {hz}",
                t.cpu, t.turn_ms
            );
        }
    }

    /// The cost model's `cpu.refill_ns`: the turn test's figure, else the refill test's.
    pub fn refill_ns(&self) -> Option<f64> {
        self.turn_refill
            .as_ref()
            .map(|t| t.per_line_ns)
            .or(self.refill.as_ref().map(|r| r.per_line_ns))
    }

    /// The turn test's line ([`crate::turn_refill`]).
    fn turn_refill_text(&self, s: &mut String) {
        use std::fmt::Write as _;
        if let Some(t) = &self.turn_refill {
            let _ = writeln!(
                s,
                "two numa_test jobs (PROBLEMSIZE {}) taking turns of one pass on CPU {} in one \
                 thread: {:.2} ns per update against {:.2} alone, {:.0} us per turn, {:.2} ns \
                 per line of `a` fetched again (the cost model's refill_ns)",
                t.size, t.cpu, t.turns_ns, t.alone_ns, t.per_turn_us, t.per_line_ns
            );
        }
    }

    /// The refill's line ([`crate::refill`]), against the cost model's figure.
    fn refill_text(&self, s: &mut String) {
        use std::fmt::Write as _;
        if let (Some(r), Some(miss)) = (&self.refill, self.local_gather_ns()) {
            let _ = writeln!(
                s,
                "{} KiB updated at random on CPU {} after {} KiB were updated and read through: \
                 {:.2} ns per update against {:.2} warm, {:.2} ns per evicted line fetched \
                 again (the cost model's miss instead of a hit: {:.2} - {:.2} = {:.2} ns)",
                r.buffer_kib,
                r.cpu,
                r.evict_kib,
                r.cold_ns,
                r.warm_ns,
                r.per_line_ns,
                miss,
                self.llc_gather_ns,
                miss - self.llc_gather_ns
            );
        }
    }

    /// The LLC co-run's line ([`crate::llc_share`]): shared or each core's own.
    fn llc_share_text(&self, s: &mut String) {
        use std::fmt::Write as _;
        if let (Some(l), Some(knee)) = (&self.llc_share, self.effective_llc_kib()) {
            let _ = writeln!(
                s,
                "{} CPUs of one LLC updating {} KiB each at random together: {:.2} ns per update \
                 against {:.2} alone ({:.2}x; a shared cache of {knee} KiB would cost about \
                 {:.1}x): {} ({})",
                l.threads,
                l.buffer_kib,
                l.gather_ns,
                l.alone_gather_ns,
                l.slowdown,
                l.shared_slowdown,
                if l.private() {
                    "each core holds its own"
                } else {
                    "the CPUs share it"
                },
                llc_flags(knee, l.private())
            );
        }
    }

    /// The co-run table: per node, one thread alone against all CPUs together.
    fn co_run_text(&self, s: &mut String) {
        use std::fmt::Write as _;
        let Some(first) = self.co_run.first() else {
            return;
        };
        let _ = writeln!(
            s,
            "all CPUs of a node together (one thread per CPU, {} MiB each, started together), \
             against one thread alone:",
            first.buffer_mib
        );
        let _ = writeln!(
            s,
            "node  threads  read alone (GB/s)  read together (GB/s)  update alone (ns)  \
             update together (ns)  slowdown  on CPU alone / together"
        );
        let pct = |x: Option<f64>| x.map_or("?".to_string(), |x| format!("{:.0}%", 100.0 * x));
        for c in &self.co_run {
            let _ = writeln!(
                s,
                "{:>4}  {:>7}  {:>17.2}  {:>20.2}  {:>17.2}  {:>20.2}  {:>8.2}  {:>23}",
                c.node,
                c.threads,
                c.alone_read_gbps,
                c.aggregate_read_gbps,
                c.alone_gather_ns,
                c.gather_ns,
                c.slowdown,
                format!("{} / {}", pct(c.alone_on_cpu_share), pct(c.on_cpu_share)),
            );
        }
        let busy = self
            .co_run
            .iter()
            .flat_map(|c| [c.on_cpu_share, c.alone_on_cpu_share])
            .any(|x| x.is_some_and(|x| x < 0.9));
        if busy {
            let _ = writeln!(
                s,
                "(a thread was off its CPU for more than a tenth of its timed runs: other work \
                 shared the CPUs, and the co-run figures show that as well as the memory)"
            );
        }
        if let Some(b) = self.node_bandwidth_gbps() {
            let _ = writeln!(
                s,
                "[memory] bandwidth_gbps = {b:.1} (all of a node's CPUs reading together; \
                 each thread's random updates run at {:.2} of one thread's rate alone)",
                self.co_run_relative_rate().unwrap_or(0.0)
            );
        }
    }

    /// Median over nodes of the aggregate read rate of all a node's CPUs together, GB/s (the
    /// cost model's `bandwidth_gbps`).
    pub fn node_bandwidth_gbps(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .co_run
            .iter()
            .map(|c| c.aggregate_read_gbps)
            .filter(|&b| b > 0.0)
            .collect();
        (!v.is_empty()).then(|| median(&v))
    }

    /// Median over nodes of each thread's random-update rate beside the node's other CPUs'
    /// threads, as a fraction of one thread's alone: 1 / [`NodeCoRun::slowdown`].
    pub fn co_run_relative_rate(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .co_run
            .iter()
            .filter(|c| c.slowdown > 0.0)
            .map(|c| 1.0 / c.slowdown)
            .collect();
        (!v.is_empty()).then(|| median(&v))
    }

    fn local(&self) -> impl Iterator<Item = &ProbeCell> {
        self.cells.iter().filter(|c| c.cpu_node == c.mem_node)
    }

    /// Median latency of the node-local cells.
    pub fn local_latency_ns(&self) -> Option<f64> {
        let v: Vec<f64> = self.local().map(|c| c.latency_ns).collect();
        (!v.is_empty()).then(|| median(&v))
    }

    /// Lines one core keeps in flight while streaming, by Little's law: the local read rate
    /// in lines per ns times the local latency (the cost model's `cpu.stream_mlp`).
    pub fn stream_mlp(&self) -> Option<f64> {
        let lat = self.local_latency_ns()?;
        let gbps = self.local_read_gbps()?;
        (lat > 0.0 && gbps > 0.0).then(|| (gbps * lat / LINE as f64).max(1.0))
    }

    /// Lines one core keeps in flight for independent random accesses that miss the caches
    /// (the cost model's `cpu.mlp`): local latency over the local gather time per access.
    pub fn random_mlp(&self) -> Option<f64> {
        let lat = self.local_latency_ns()?;
        let g = self.local_gather_ns()?;
        (g > 0.0).then(|| (lat / g).max(1.0))
    }

    /// Median ns per independent random update of the node-local cells (a miss).
    pub fn local_gather_ns(&self) -> Option<f64> {
        let v: Vec<f64> = self.local().map(|c| c.gather_ns).collect();
        (!v.is_empty()).then(|| median(&v))
    }

    /// The same for accesses that hit the last-level cache.
    pub fn llc_mlp(&self) -> Option<f64> {
        (self.llc_gather_ns > 0.0).then(|| (self.llc_latency_ns / self.llc_gather_ns).max(1.0))
    }

    /// [`effective_llc_kib`] of this probe's curve against its local memory latency.
    pub fn effective_llc_kib(&self) -> Option<usize> {
        effective_llc_kib(&self.cache_curve, self.local_latency_ns()?)
    }

    /// The cost model's `llc_kib`: the knee, the cache one core holds alone. When the co-run
    /// found it each core's own, it is each CPU's own part ([`Self::model_llc_private`]);
    /// else the LLC that the model shares out among its CPUs' tasks.
    pub fn model_llc_kib(&self) -> Option<usize> {
        self.effective_llc_kib()
    }

    /// The cost model's `llc_private`: the co-run found that each core holds the knee itself,
    /// whatever the others do.
    pub fn model_llc_private(&self) -> bool {
        self.llc_share.as_ref().is_some_and(|s| s.private())
    }

    /// The cache all of the LLC's CPUs hold together: the knee, times the CPUs when each
    /// holds its own ([`crate::llc_share::LlcShare::capacity_kib`]).
    pub fn capacity_kib(&self) -> Option<usize> {
        let knee = self.effective_llc_kib()?;
        Some(
            self.llc_share
                .as_ref()
                .map_or(knee, |s| s.capacity_kib(knee)),
        )
    }

    /// The cost model's `cpu.llc_latency_ns`: the model charges an LLC hit its latency over
    /// `mlp`, so the figure that reproduces the measured time per independent hit is that
    /// time times [`random_mlp`](Self::random_mlp). (The dependent-load latency through the
    /// same buffer is printed too; the core overlaps hits more than misses.)
    pub fn model_llc_latency_ns(&self) -> Option<f64> {
        let mlp = self.random_mlp()?;
        (self.llc_gather_ns > 0.0).then_some(self.llc_gather_ns * mlp)
    }

    /// Median one-core read rate of the node-local cells.
    pub fn local_read_gbps(&self) -> Option<f64> {
        let v: Vec<f64> = self.local().map(|c| c.read_gbps).collect();
        (!v.is_empty()).then(|| median(&v))
    }
}

/// The `--machine-set` flags for an LLC of `kib` that each CPU holds on its own (`private`)
/// or that its CPUs share.
pub(super) fn llc_flags(kib: usize, private: bool) -> String {
    let own = if private {
        " --machine-set llc_private=1"
    } else {
        ""
    };
    format!("--machine-set llc_kib={kib}{own}")
}
