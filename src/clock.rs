//! Per-node clocks: what a node *reads*, as opposed to true time.
//!
//! Each node (Redis server, client host, sentinel) owns a `NodeClock` that maps true time
//! (`SimTime`) to two readings:
//! - **wall**: Unix time, what `gettimeofday` returns. Redis stores expiries in it; naive
//!   clients measure elapsed time with it. It drifts, and it *steps* (NTP corrections, an
//!   operator's `date -s`), forwards and backwards.
//! - **monotonic**: what `clock_gettime(CLOCK_MONOTONIC)` returns. It drifts at the same rate
//!   as the wall clock (one crystal) but never steps and never goes back.
//!
//! Formulas, with `r(t)` the drift rate in ppm in force at true time `t`:
//! ```text
//! mono_ns(t) = t + ∫₀ᵗ r(s)/10⁶ ds                 (piecewise linear, never decreasing)
//! wall_ns(t) = epoch_ns + offset_ns + mono_ns(t) + Σ steps with at ≤ t
//! ```
//! Rates are bounded to (-10⁶, +10⁶) ppm exclusive, so `mono_ns` is strictly increasing.

use crate::time::{NS_PER_MS, SimTime};

/// Largest drift magnitude a clock accepts: 50% fast or slow is already absurd for a
/// crystal; the bound keeps the inverse mapping (timers) well defined.
pub const DRIFT_PPM_LIMIT: i64 = 500_000;

#[derive(Clone, Debug)]
struct RateSegment {
    from: SimTime,
    drift_ppm: i64,
    /// Monotonic reading at `from`, in ns.
    mono_at_from_ns: i128,
}

/// A node's clock. Cheap to query; append-only changes (steps and rate changes happen at
/// or after the latest one, which is how the event loop applies them).
#[derive(Clone, Debug)]
pub struct NodeClock {
    /// Unix time in ns that a perfect clock reads at true time 0, plus this node's offset.
    // Invariant: fixed after construction.
    wall_origin_ns: i128,
    // Invariant: non-empty, sorted by `from`, first segment starts at 0.
    segments: Vec<RateSegment>,
    // Invariant: sorted by time.
    steps: Vec<(SimTime, i64)>,
    /// Sum of all steps in `steps` (cached for the common query at the latest time).
    steps_total_ns: i128,
    /// `Some(wall origin in ns)` while the clock has never drifted nor stepped: readings are
    /// then one addition (the common case, on the loop's hot path).
    // Invariant: Some iff segments == [rate 0 from 0] and steps is empty and the origin fits.
    simple_origin_ns: Option<i64>,
}

impl NodeClock {
    /// `epoch_unix_ms` is the world's Unix time at true time 0; `offset_ms` this node's error.
    pub fn new(epoch_unix_ms: i64, offset_ms: i64, drift_ppm: i64) -> NodeClock {
        assert!(
            drift_ppm.abs() <= DRIFT_PPM_LIMIT,
            "drift out of range: {drift_ppm} ppm"
        );
        let wall_origin_ns =
            (i128::from(epoch_unix_ms) + i128::from(offset_ms)) * i128::from(NS_PER_MS);
        NodeClock {
            simple_origin_ns: if drift_ppm == 0 {
                i64::try_from(wall_origin_ns).ok()
            } else {
                None
            },
            wall_origin_ns,
            segments: vec![RateSegment {
                from: SimTime::ZERO,
                drift_ppm,
                mono_at_from_ns: 0,
            }],
            steps: Vec::new(),
            steps_total_ns: 0,
        }
    }

    /// A perfect clock: no offset, no drift.
    pub fn perfect(epoch_unix_ms: i64) -> NodeClock {
        NodeClock::new(epoch_unix_ms, 0, 0)
    }

    fn segment_at(&self, t: SimTime) -> &RateSegment {
        // Few segments (one unless a drift fault fired): scan from the end.
        self.segments
            .iter()
            .rev()
            .find(|s| s.from <= t)
            .unwrap_or(&self.segments[0])
    }

    fn mono_ns_i128(&self, t: SimTime) -> i128 {
        let s = self.segment_at(t);
        let dt = t.0 - s.from.0;
        // The drift term in i64 when it fits (runs under five hours at the largest drift): an
        // i128 division is a library call. Both truncate toward zero: the same result.
        let drift_ns = match i64::try_from(dt)
            .ok()
            .and_then(|d| d.checked_mul(s.drift_ppm))
        {
            Some(p) => i128::from(p / 1_000_000),
            None => i128::from(dt) * i128::from(s.drift_ppm) / 1_000_000,
        };
        s.mono_at_from_ns + i128::from(dt) + drift_ns
    }

    /// Monotonic reading in ns. Never decreases as `t` grows.
    // Always inlined, with the general case out of line: the loop reads both clocks for every
    // event it hands a process, and as calls they cost ~26 instructions an event on W1.
    #[inline(always)]
    pub fn mono_ns(&self, t: SimTime) -> u64 {
        if self.simple_origin_ns.is_some() {
            return t.0;
        }
        self.mono_ns_general(t)
    }

    /// `mono_ns` of a clock that stepped or drifts.
    #[inline(never)]
    fn mono_ns_general(&self, t: SimTime) -> u64 {
        self.mono_ns_i128(t).max(0) as u64
    }

    fn steps_until_ns(&self, t: SimTime) -> i128 {
        match self.steps.last() {
            None => 0,
            Some(&(last, _)) if last <= t => self.steps_total_ns,
            Some(_) => self
                .steps
                .iter()
                .take_while(|(at, _)| *at <= t)
                .map(|(_, d)| i128::from(*d) * i128::from(NS_PER_MS))
                .sum(),
        }
    }

    /// Wall reading in ns of Unix time.
    pub fn wall_ns(&self, t: SimTime) -> i128 {
        self.wall_origin_ns + self.mono_ns_i128(t) + self.steps_until_ns(t)
    }

    /// Wall reading in Unix ms (floor), what Redis's `mstime()` returns.
    #[inline(always)]
    pub fn wall_ms(&self, t: SimTime) -> i64 {
        if let Some(origin) = self.simple_origin_ns
            && let Some(ns) = origin.checked_add_unsigned(t.0)
        {
            // After 1970 (the usual case) floor division is unsigned division, which is a
            // multiply and a shift; `div_euclid` on i64 costs a sign fix-up on every event.
            return match u64::try_from(ns) {
                Ok(ns) => (ns / NS_PER_MS) as i64,
                Err(_) => ns.div_euclid(NS_PER_MS as i64),
            };
        }
        self.wall_ms_general(t)
    }

    /// `wall_ms` of a clock that stepped or drifts (out of line: the inlined fast path stays
    /// small).
    #[inline(never)]
    fn wall_ms_general(&self, t: SimTime) -> i64 {
        let ns = self.wall_ns(t);
        // After 1970: unsigned division, not an i128 library call.
        if let Ok(ns) = u64::try_from(ns) {
            return (ns / NS_PER_MS) as i64;
        }
        let ms = ns.div_euclid(i128::from(NS_PER_MS));
        ms.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// Steps the wall clock by `delta_ms` (positive = forward) at true time `at`.
    /// Invariant kept: steps stay sorted (an earlier `at` than the last step is refused).
    pub fn add_step(&mut self, at: SimTime, delta_ms: i64) {
        self.simple_origin_ns = None;
        if let Some(&(last, _)) = self.steps.last() {
            assert!(at >= last, "clock steps must be added in time order");
        }
        self.steps.push((at, delta_ms));
        self.steps_total_ns += i128::from(delta_ms) * i128::from(NS_PER_MS);
    }

    /// Changes the drift rate from true time `at` on.
    pub fn set_drift(&mut self, at: SimTime, drift_ppm: i64) {
        self.simple_origin_ns = None;
        assert!(
            drift_ppm.abs() <= DRIFT_PPM_LIMIT,
            "drift out of range: {drift_ppm} ppm"
        );
        let last = self.segments.last().expect("segments non-empty");
        assert!(at >= last.from, "drift changes must be added in time order");
        let mono = self.mono_ns_i128(at);
        self.segments.push(RateSegment {
            from: at,
            drift_ppm,
            mono_at_from_ns: mono,
        });
    }

    /// Drift in force at `t`.
    pub fn drift_ppm(&self, t: SimTime) -> i64 {
        self.segment_at(t).drift_ppm
    }

    /// True-time duration that elapses while this clock's monotonic reading advances by
    /// `local_ns`, at the rate in force at `now` (timers are armed in local time).
    pub fn true_ns_for_local(&self, now: SimTime, local_ns: u64) -> u64 {
        let ppm = self.drift_ppm(now);
        if ppm == 0 {
            return local_ns;
        }
        // local = true * (1 + ppm/1e6)  =>  true = local * 1e6 / (1e6 + ppm), rounded up so
        // that a timer never fires before its local deadline.
        let num = i128::from(local_ns) * 1_000_000;
        let den = 1_000_000 + i128::from(ppm);
        ((num + den - 1) / den) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const EPOCH: i64 = 1_700_000_000_000;

    #[test]
    fn perfect_clock_reads_epoch_plus_true_time() {
        let c = NodeClock::perfect(EPOCH);
        assert_eq!(c.wall_ms(SimTime::from_ms(1500)), EPOCH + 1500);
        assert_eq!(c.mono_ns(SimTime::from_ms(2)), 2_000_000);
    }

    #[test]
    fn offset_and_drift_shift_the_wall_reading() {
        // 1000 ppm fast: after 10 s of true time the clock shows 10.010 s.
        let c = NodeClock::new(EPOCH, -50, 1000);
        assert_eq!(c.wall_ms(SimTime::from_ms(10_000)), EPOCH - 50 + 10_010);
        assert_eq!(c.mono_ns(SimTime::from_ms(10_000)), 10_010_000_000);
        assert_eq!(c.true_ns_for_local(SimTime::ZERO, 1_001_000), 1_000_000);
    }

    #[test]
    fn wall_steps_forward_and_back_but_monotonic_never_goes_back() {
        let mut c = NodeClock::perfect(EPOCH);
        c.add_step(SimTime::from_ms(100), 5_000);
        c.add_step(SimTime::from_ms(200), -8_000);
        assert_eq!(c.wall_ms(SimTime::from_ms(99)), EPOCH + 99);
        assert_eq!(c.wall_ms(SimTime::from_ms(100)), EPOCH + 5_100);
        assert_eq!(c.wall_ms(SimTime::from_ms(150)), EPOCH + 5_150);
        assert_eq!(
            c.wall_ms(SimTime::from_ms(200)),
            EPOCH + 200 + 5_000 - 8_000
        );
        let mut prev = 0;
        for ms in 0..300 {
            let m = c.mono_ns(SimTime::from_ms(ms));
            assert!(m >= prev);
            prev = m;
        }
    }

    #[test]
    fn drift_change_is_continuous() {
        let mut c = NodeClock::new(EPOCH, 0, 0);
        c.set_drift(SimTime::from_ms(1000), 100_000);
        assert_eq!(c.wall_ms(SimTime::from_ms(1000)), EPOCH + 1000);
        assert_eq!(c.wall_ms(SimTime::from_ms(2000)), EPOCH + 2100);
    }
}
