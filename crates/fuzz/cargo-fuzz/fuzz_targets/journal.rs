#![no_main]
//! cargo-fuzz target `journal`: the stable harness's `journal` target (docs/FUZZ.md).

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    assert!(fuzz::targets::run_text("journal", data));
});
