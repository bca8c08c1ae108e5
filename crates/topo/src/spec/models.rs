//! The `[cpu]` and `[memory]` sections of a spec, checked and turned into the cost model's
//! facts ([`CpuModel`], [`MemoryModel`]).

use super::*;

impl MachineSpec {
    pub(super) fn cpu_model(&self, o: &str) -> Result<CpuModel, TopoError> {
        let c = &self.cpu;
        positive(o, "cpu.freq_mhz", c.freq_mhz)?;
        if !(c.mlp.is_finite() && c.mlp >= 1.0) {
            return Err(TopoError::impossible(
                o,
                "cpu.mlp",
                format!("is {}, must be a finite number >= 1", c.mlp),
            ));
        }
        let llc_bytes = c
            .llc_kib
            .checked_mul(1024)
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                TopoError::impossible(o, "cpu.llc_kib", format!("is {}, must be > 0", c.llc_kib))
            })?;
        power_of_two(o, "cpu.line_bytes", c.line_bytes)?;
        if let Some(s) = c.stream_mlp.filter(|s| !(s.is_finite() && *s >= 1.0)) {
            return Err(TopoError::impossible(
                o,
                "cpu.stream_mlp",
                format!("is {s}, must be a finite number >= 1"),
            ));
        }
        if let Some(l) = c.llc_latency_ns.filter(|l| !(l.is_finite() && *l >= 0.0)) {
            return Err(TopoError::impossible(
                o,
                "cpu.llc_latency_ns",
                format!("is {l}, must be a finite number >= 0"),
            ));
        }
        if let Some(r) = c.refill_ns.filter(|r| !(r.is_finite() && *r >= 0.0)) {
            return Err(TopoError::impossible(
                o,
                "cpu.refill_ns",
                format!("is {r}, must be a finite number >= 0"),
            ));
        }
        if !(c.llc_stream_share.is_finite() && (0.0..=1.0).contains(&c.llc_stream_share)) {
            return Err(TopoError::impossible(
                o,
                "cpu.llc_stream_share",
                format!("is {}, must be a number from 0 to 1", c.llc_stream_share),
            ));
        }
        if c.llc_ways == Some(0) {
            return Err(TopoError::impossible(
                o,
                "cpu.llc_ways",
                "is 0, must be >= 1",
            ));
        }
        let tlb_walk_cycles = self.tlb(o)?;
        Ok(CpuModel {
            freq_mhz: c.freq_mhz,
            mlp: c.mlp,
            stream_mlp: c.stream_mlp,
            llc_latency_ns: c.llc_latency_ns,
            llc_bytes,
            line_bytes: c.line_bytes,
            store_buffer: c.store_buffer,
            out_of_order: c.out_of_order,
            refill_ns: c.refill_ns,
            llc_stream_share: c.llc_stream_share,
            llc_ways: c.llc_ways,
            llc_private: c.llc_private,
            tlb_entries: c.tlb_entries,
            tlb_walk_cycles,
        })
    }

    /// The TLB's walk cycles, checked: `tlb_entries` and `tlb_walk_cycles` come together.
    pub(super) fn tlb(&self, o: &str) -> Result<f64, TopoError> {
        let c = &self.cpu;
        match (c.tlb_entries, c.tlb_walk_cycles) {
            (None, None) => Ok(0.0),
            (Some(0), _) => Err(TopoError::impossible(
                o,
                "cpu.tlb_entries",
                "is 0, must be >= 1",
            )),
            (Some(_), Some(w)) if w.is_finite() && w >= 0.0 => Ok(w),
            (Some(_), Some(w)) => Err(TopoError::impossible(
                o,
                "cpu.tlb_walk_cycles",
                format!("is {w}, must be a finite number >= 0"),
            )),
            (Some(_), None) => Err(TopoError::impossible(
                o,
                "cpu.tlb_walk_cycles",
                "is missing: give it with cpu.tlb_entries",
            )),
            (None, Some(_)) => Err(TopoError::impossible(
                o,
                "cpu.tlb_entries",
                "is missing: give it with cpu.tlb_walk_cycles",
            )),
        }
    }

    pub(super) fn memory_model(&self, o: &str) -> Result<MemoryModel, TopoError> {
        let m = &self.memory;
        positive(o, "memory.bandwidth_gbps", m.bandwidth_gbps)?;
        positive(o, "memory.remote_bandwidth_gbps", m.remote_bandwidth_gbps)?;
        if !(m.loaded_latency_ratio.is_finite() && m.loaded_latency_ratio >= 1.0) {
            return Err(TopoError::impossible(
                o,
                "memory.loaded_latency_ratio",
                format!(
                    "is {}, must be a finite number >= 1",
                    m.loaded_latency_ratio
                ),
            ));
        }
        power_of_two(o, "memory.page_kib", m.page_kib)?;
        let page_bytes = m.page_kib.checked_mul(1024).ok_or_else(|| {
            TopoError::impossible(o, "memory.page_kib", format!("{} is too large", m.page_kib))
        })?;
        positive(o, "memory.line_transfer_local_ns", m.line_transfer_local_ns)?;
        positive(
            o,
            "memory.line_transfer_remote_ns",
            m.line_transfer_remote_ns,
        )?;
        if !(m.fault_overhead_ns.is_finite() && m.fault_overhead_ns >= 0.0) {
            return Err(TopoError::impossible(
                o,
                "memory.fault_overhead_ns",
                format!("is {}, must be a finite number >= 0", m.fault_overhead_ns),
            ));
        }
        Ok(MemoryModel {
            loaded_latency_ratio: m.loaded_latency_ratio,
            page_bytes,
            line_transfer_local_ns: m.line_transfer_local_ns,
            line_transfer_remote_ns: m.line_transfer_remote_ns,
            fault_overhead_ns: m.fault_overhead_ns,
        })
    }
}
