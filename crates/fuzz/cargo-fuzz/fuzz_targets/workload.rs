#![no_main]
//! cargo-fuzz target `workload`: the stable harness's `workload` target (docs/FUZZ.md).

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    assert!(fuzz::targets::run_text("workload", data));
});
