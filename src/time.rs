//! True time of a run and the ids of its actors.
//!
//! `SimTime` is the simulator's own time: nanoseconds since the run began. Only the event
//! loop (`sim`) and the checkers (`check`) read it; processes see their node's clock readings.

use std::fmt;

/// Nanoseconds of true time since the run began.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_ms(ms: u64) -> SimTime {
        SimTime(ms * NS_PER_MS)
    }
    pub const fn from_us(us: u64) -> SimTime {
        SimTime(us * NS_PER_US)
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    pub const fn as_ms(self) -> u64 {
        self.0 / NS_PER_MS
    }
    /// Saturating: a run is bounded by `max_time`, so saturation only guards arithmetic
    /// on user-given durations, never a real schedule.
    pub const fn plus_ns(self, ns: u64) -> SimTime {
        SimTime(self.0.saturating_add(ns))
    }
    pub const fn saturating_sub(self, other: SimTime) -> u64 {
        self.0.saturating_sub(other.0)
    }
}

impl fmt::Display for SimTime {
    /// `12.345678s`: seconds with microsecond precision, the unit people read timelines in.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0 / NS_PER_US;
        write!(f, "{}.{:06}s", us / 1_000_000, us % 1_000_000)
    }
}

/// Formats a nanosecond duration compactly for people: `850us`, `12.5ms`, `3.2s`.
pub fn fmt_duration_ns(ns: u64) -> String {
    if ns < NS_PER_MS {
        format!("{}us", ns / NS_PER_US)
    } else if ns < NS_PER_S {
        let tenths = ns / (NS_PER_MS / 10);
        if tenths.is_multiple_of(10) {
            format!("{}ms", tenths / 10)
        } else {
            format!("{}.{}ms", tenths / 10, tenths % 10)
        }
    } else {
        let ms = ns / NS_PER_MS;
        if ms.is_multiple_of(1000) {
            format!("{}s", ms / 1000)
        } else {
            format!("{}.{:03}s", ms / 1000, ms % 1000)
        }
    }
}

/// A duration to the microsecond, for an edge found to 1 µs: `7.253327s`, `12.5ms`,
/// `3us` (trailing zeros trimmed; below 1 µs, rounded down).
pub fn fmt_duration_us(ns: u64) -> String {
    let us = ns / NS_PER_US;
    let trim = |whole: u64, frac: u64, width: usize, unit: &str| {
        let f = format!("{frac:0width$}");
        let f = f.trim_end_matches('0');
        if f.is_empty() {
            format!("{whole}{unit}")
        } else {
            format!("{whole}.{f}{unit}")
        }
    };
    if us < 1_000 {
        format!("{us}us")
    } else if us < 1_000_000 {
        trim(us / 1_000, us % 1_000, 3, "ms")
    } else {
        trim(us / 1_000_000, us % 1_000_000, 6, "s")
    }
}

/// A signed duration for people: `-3.2s`, `+850ms`.
pub fn fmt_signed_ns(ns: i64) -> String {
    format!(
        "{}{}",
        if ns < 0 { '-' } else { '+' },
        fmt_duration_ns(ns.unsigned_abs())
    )
}

/// Index of a process (Redis node, client, resource, ...) in its world.
/// Invariant: a `ProcId` is an index into the world's process table, assigned at build time
/// and never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProcId(pub u32);

impl ProcId {
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_seconds_with_microseconds() {
        assert_eq!(SimTime(1_234_567_891).to_string(), "1.234567s");
        assert_eq!(fmt_duration_ns(850_000), "850us");
        assert_eq!(fmt_duration_ns(12_500_000), "12.5ms");
        assert_eq!(fmt_duration_ns(3_000_000_000), "3s");
        assert_eq!(fmt_duration_ns(3_250_000_000), "3.250s");
    }
}
