#![no_main]
//! cargo-fuzz target `machine_spec`: the stable harness's `machine-spec` target (docs/FUZZ.md).

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    assert!(fuzz::targets::run_text("machine-spec", data));
});
