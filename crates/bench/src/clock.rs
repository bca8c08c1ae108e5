//! The core clock as the core runs it, for the cost model's `cpu.freq_mhz`.
//!
//! `/proc/cpuinfo` and cpufreq give a nominal clock, and a guest often sees only the TSC rate
//! (2596 MHz on this project's development guest, whose cores ran at 4.2 GHz). The probe times
//! a chain of dependent register adds instead: each add needs the result of the one before, and
//! an integer add has a latency of one cycle on every x86-64 core (Agner Fog, "Instruction
//! tables": ADD r,r, latency 1) and on Arm's server cores (Arm Neoverse N1 Software
//! Optimization Guide: ADD, execution latency 1), so the chain runs at one add per cycle
//! whatever the width of the core. It is timed in the thread's own CPU time, so another task
//! sharing the CPU does not slow the clock it reports.

/// Dependent adds per pass of the timed loop (the loop's own counter runs beside them).
const ADDS_PER_PASS: u64 = 20;

/// An assembly line twenty times, one per line: the chain of [`ADDS_PER_PASS`] adds.
#[allow(unused_macros)] // used only on the architectures that have the chain
macro_rules! twenty {
    ($line:literal) => {
        concat!(
            $line, "\n", $line, "\n", $line, "\n", $line, "\n", $line, "\n", $line, "\n", $line,
            "\n", $line, "\n", $line, "\n", $line, "\n", $line, "\n", $line, "\n", $line, "\n",
            $line, "\n", $line, "\n", $line, "\n", $line, "\n", $line, "\n", $line, "\n", $line
        )
    };
}

/// The timed loop in this architecture's assembly: twenty adds, then count down and branch
/// back. Register arithmetic only.
#[allow(unused_macros)] // used only on the architectures that have the chain
macro_rules! chain {
    ($x:ident, $step:ident, $n:ident, $add:literal, $count:literal, $back:literal) => {
        // SAFETY: register arithmetic only; no memory, no stack.
        unsafe {
            std::arch::asm!(
                "2:",
                twenty!($add),
                $count,
                $back,
                x = inout(reg) $x,
                y = in(reg) $step,
                n = inout(reg) $n,
                options(nomem, nostack),
            );
        }
    };
}

/// Runs `passes` passes of [`ADDS_PER_PASS`] dependent adds; returns the sum (so the chain
/// has a result). `None` on an architecture without the chain.
#[allow(unsafe_code)] // inline assembly: the only way to get a chain of known latency
fn add_chain(passes: u64) -> Option<u64> {
    let mut x: u64 = 1;
    let step: u64 = std::hint::black_box(3);
    let mut n = passes.max(1);
    #[cfg(target_arch = "x86_64")]
    chain!(x, step, n, "add {x}, {y}", "dec {n}", "jnz 2b");
    #[cfg(target_arch = "aarch64")]
    chain!(
        x,
        step,
        n,
        "add {x}, {x}, {y}",
        "subs {n}, {n}, #1",
        "b.ne 2b"
    );
    let _ = (&mut x, &mut n, step); // used by the assembly, where there is one
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64")).then_some(x)
}

/// Cycles per second as MHz from `adds` dependent adds that took `cpu_s` seconds of the
/// thread's CPU time (`None` when too short to time).
pub fn mhz(adds: u64, cpu_s: f64) -> Option<f64> {
    (cpu_s > 1e-3).then(|| adds as f64 / cpu_s / 1e6)
}

/// The clock of the calling thread's core, MHz: the median of `rounds` timed chains of
/// about `adds` adds. `None` on an architecture without the chain or without thread CPU
/// times.
pub fn core_mhz(adds: u64, rounds: usize, cpu_s: impl Fn() -> Option<f64>) -> Option<f64> {
    let passes = (adds / ADDS_PER_PASS).max(1);
    add_chain(passes / 10)?; // wake the core from a low clock state first
    let mut v = Vec::with_capacity(rounds);
    for _ in 0..rounds.max(1) {
        let start = cpu_s()?;
        std::hint::black_box(add_chain(passes)?);
        v.push(mhz(passes * ADDS_PER_PASS, cpu_s()? - start)?);
    }
    Some(report::median(&v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_adds_what_it_is_asked() {
        if let Some(x) = add_chain(5) {
            assert_eq!(x, 1 + 3 * 5 * ADDS_PER_PASS);
        }
    }

    #[test]
    fn mhz_is_adds_per_microsecond_and_refuses_too_short_a_run() {
        assert_eq!(mhz(4_000_000_000, 1.0), Some(4000.0));
        assert_eq!(mhz(1000, 0.0), None);
    }

    #[test]
    fn a_clock_comes_from_the_thread_times_it_is_given() {
        // A fake CPU clock that advances 1 ms per reading: the chain takes "1 ms".
        let t = std::cell::Cell::new(0.0);
        let tick = || {
            t.set(t.get() + 1e-3 * 1.000_001);
            Some(t.get())
        };
        let got = core_mhz(2_000_000, 3, tick);
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            let got = got.expect("timed");
            assert!((got - 2000.0).abs() < 0.01, "{got}");
        }
        assert_eq!(core_mhz(2_000_000, 3, || None), None);
    }
}
