//! The model loader on arbitrary bytes: `Ok` or a located `Err`, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // `scenario::load` refuses larger files and non-UTF-8 before it reaches the parser.
    if data.len() as u64 > distlock_sim::scenario::MAX_MODEL_BYTES {
        return;
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = distlock_sim::scenario::load_str("fuzz", "fuzz.ron", text);
    }
});
