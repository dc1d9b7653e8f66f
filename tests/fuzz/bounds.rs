//! What the fuzz targets share (tests/fuzz.rs and the cargo-fuzz targets in fuzz/, which
//! include this file by path): how a loaded model is clamped so that one run costs
//! milliseconds. (It held an allow-list of known defects, 12.8 and 12.9, until the bounded
//! fault schedule landed: every model the loader accepts now runs.)

use distlock_sim::scenario::Scenario;
use distlock_sim::time::{NS_PER_MS, SimTime};

/// Longest simulated time of one fuzzed run.
pub const RUN_MAX_TIME_NS: u64 = 2_000 * NS_PER_MS;
/// Largest event budget of one fuzzed run.
pub const RUN_MAX_EVENTS: u64 = 200_000;

/// Clamps a loaded model's limits (never raises them): the fault schedule is drawn up to
/// `limits.max_time`, so this bounds the drawn faults as well as the run.
pub fn clamp(sc: &mut Scenario) {
    sc.limits.max_time = SimTime(sc.limits.max_time.0.min(RUN_MAX_TIME_NS));
    sc.limits.max_events = sc.limits.max_events.min(RUN_MAX_EVENTS);
}
