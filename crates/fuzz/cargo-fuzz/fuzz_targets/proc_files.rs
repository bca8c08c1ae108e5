#![no_main]
//! cargo-fuzz target `proc_files`: the stable harness's `proc-files` target (docs/FUZZ.md).

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    assert!(fuzz::targets::run_text("proc-files", data));
});
