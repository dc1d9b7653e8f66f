//! The request timeout the lock clients share: one pending timer per client however many
//! requests it sends. A request moves its deadline, not the timer; a timer that fires before
//! the deadline re-arms itself for the remainder. Replies beat their timeout nearly always,
//! so coalescing leaves no dead timer events behind (a quarter of W1's events once).

use crate::client::timer::Timer;
use crate::process::Cx;

#[derive(Clone, Copy, Debug, Default)]
pub struct RequestTimeout {
    // Invariant: `armed` iff a `Timer::Request` timer of this incarnation is pending.
    armed: bool,
}

impl RequestTimeout {
    /// A request was sent whose deadline is `after_ns` from now. A pending timer is early
    /// enough: every request shares the same timeout, so deadlines only move later.
    pub fn ensure(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        if !self.armed {
            self.arm(cx, after_ns);
        }
    }

    /// The timer fired, with `deadline` the deadline of the request in flight: `true` when
    /// it has passed; otherwise (re-armed for the remainder, or nothing in flight) `false`.
    pub fn expired(&mut self, cx: &mut Cx<'_>, deadline: Option<u64>) -> bool {
        self.armed = false;
        match deadline {
            None => false,
            Some(d) if cx.mono_ns < d => {
                self.arm(cx, d - cx.mono_ns);
                false
            }
            Some(_) => true,
        }
    }

    /// The timer fired; the caller settles what expired and then arms for `earliest`, the
    /// earliest deadline still running, if any (several requests in flight at once).
    pub fn fired_then_arm_for(&mut self, cx: &mut Cx<'_>, earliest: Option<u64>) {
        self.armed = false;
        if let Some(d) = earliest {
            self.arm(cx, d - cx.mono_ns);
        }
    }

    /// After a restart: the previous incarnation's timer is void.
    pub fn reset(&mut self) {
        self.armed = false;
    }

    fn arm(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.armed = true;
        Timer::Request.set(cx, after_ns);
    }
}
