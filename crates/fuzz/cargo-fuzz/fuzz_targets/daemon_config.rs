#![no_main]
//! cargo-fuzz target `daemon_config`: the stable harness's `daemon-config` target (docs/FUZZ.md).

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    assert!(fuzz::targets::run_text("daemon-config", data));
});
