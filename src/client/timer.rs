//! The lock clients' timers, typed: what a timer is for and which generation of it, encoded
//! into the process interface's `u64` tag and decoded back here and nowhere else.
//!
//! The encoding is pinned: traces print timer tags (`timer 7`) and the trace hash covers
//! them, so the values are those the clients used before they were typed — a step timer of
//! generation `g` is `g`, a background timer is `1 << 63 | g`, the request timeout is
//! `u64::MAX`. Changing it changes every catalogue model's trace.

use crate::process::Cx;

/// A closed range `[min, max]` of ns from which a duration (a retry delay, a hold) is
/// drawn per use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NsRange {
    pub min: u64,
    // Invariant: min <= max.
    pub max: u64,
}

impl NsRange {
    pub fn fixed(ns: u64) -> NsRange {
        NsRange { min: ns, max: ns }
    }
    pub fn new(min: u64, max: u64) -> NsRange {
        assert!(min <= max);
        NsRange { min, max }
    }
    // Inlined: the draw is a few instructions once the stream has its block, and a call
    // saves and restores six registers around them.
    #[inline]
    pub(crate) fn draw(self, cx: &mut Cx<'_>) -> u64 {
        cx.rng.range_inclusive(self.min, self.max)
    }
}

/// Set in the tag of every background timer; never in a step timer's.
const BACKGROUND_BIT: u64 = 1 << 63;
/// The request timeout's tag (all bits: above any background generation in use).
const REQUEST_TAG: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// The request timeout shared by everything a client has in flight (`RequestTimeout`);
    /// one per client, so it needs no generation.
    Request,
    /// A timer of the client's work loop (hold, think, retry; Redlock's extend and validity
    /// timers share its generations). Invariant: `gen < 1 << 63`.
    Step(u64),
    /// A timer running beside the work loop (the watchdog's renewal, the consensus
    /// session's heartbeat), with its own generations. Invariant: `gen < (1 << 63) - 1`, so
    /// that no background tag equals the request tag.
    Background(u64),
}

impl Timer {
    pub fn tag(self) -> u64 {
        match self {
            Timer::Request => REQUEST_TAG,
            Timer::Step(g) => {
                assert!(g < BACKGROUND_BIT, "step timer generation {g} overflows");
                g
            }
            Timer::Background(g) => {
                assert!(
                    g < BACKGROUND_BIT - 1,
                    "background timer generation {g} overflows"
                );
                BACKGROUND_BIT | g
            }
        }
    }

    pub fn from_tag(tag: u64) -> Timer {
        if tag == REQUEST_TAG {
            Timer::Request
        } else if tag & BACKGROUND_BIT != 0 {
            Timer::Background(tag & !BACKGROUND_BIT)
        } else {
            Timer::Step(tag)
        }
    }

    /// Fires `on_timer(self.tag())` after `after_ns` of the node's monotonic time.
    pub fn set(self, cx: &mut Cx<'_>, after_ns: u64) {
        cx.set_timer(after_ns, self.tag());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_timer_decodes_to_itself() {
        for t in [
            Timer::Request,
            Timer::Step(0),
            Timer::Step(1),
            Timer::Step((1 << 63) - 1),
            Timer::Background(0),
            Timer::Background(5),
            Timer::Background((1 << 63) - 2),
        ] {
            assert_eq!(Timer::from_tag(t.tag()), t, "{t:?}");
        }
    }

    #[test]
    fn tags_keep_the_values_traces_were_pinned_with() {
        assert_eq!(Timer::Step(7).tag(), 7);
        assert_eq!(Timer::Background(3).tag(), (1 << 63) | 3);
        assert_eq!(Timer::Request.tag(), u64::MAX);
    }

    #[test]
    #[should_panic(expected = "overflows")]
    fn a_background_generation_that_would_collide_with_the_request_tag_is_refused() {
        Timer::Background((1 << 63) - 1).tag();
    }
}
