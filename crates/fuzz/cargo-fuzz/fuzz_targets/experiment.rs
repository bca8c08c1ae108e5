#![no_main]
//! cargo-fuzz target `experiment`: the stable harness's `experiment` target (docs/FUZZ.md).

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    assert!(fuzz::targets::run_text("experiment", data));
});
