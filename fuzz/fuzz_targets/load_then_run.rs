//! Load, then run one seed of what loads, clamped to a short run (tests/fuzz/bounds.rs):
//! no panic, no hang, bounded memory (run with `-rss_limit_mb` and `-timeout`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/fuzz/bounds.rs"]
mod bounds;

fuzz_target!(|data: &[u8]| {
    if data.len() as u64 > distlock_sim::scenario::MAX_MODEL_BYTES {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut sc) = distlock_sim::scenario::load_str("fuzz", "fuzz.ron", text) else {
        return;
    };
    bounds::clamp(&mut sc);
    let _ = distlock_sim::explore::run_seed(&sc, 1);
});
