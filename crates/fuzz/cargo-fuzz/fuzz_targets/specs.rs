#![no_main]
//! cargo-fuzz target `specs`: the stable harness's `specs` target (docs/FUZZ.md).

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    assert!(fuzz::targets::run_text("specs", data));
});
