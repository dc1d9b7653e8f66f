//! A periodic timer the engine keeps for a process (`Cx::start_periodic`): a tick every
//! `period_ns` of the process's monotonic clock, from a first tick it chose, of which only
//! the points where the process says a tick can matter (`Process::tick_due`) are events.
//!
//! The Redis server cron is one: it ticks every 100 ms, but most ticks of a node with no key
//! due change nothing anyone sees until the next event at the node. The engine reads true
//! time, so it is the engine that walks the grid: each tick arms the next one from its own
//! firing time, converted to true time at the drift rate in force then
//! (`NodeClock::true_ns_for_local`), exactly where a timer the process re-armed at every tick
//! would fire. Points it does not make events of are handed to the process, in order and at
//! their own clock readings (`SkippedTicks`, local readings only), when the process next
//! handles anything (`Process::on_skipped_ticks`), so the process's state and every later
//! tick are those of a process that ticked throughout.
//!
//! What the process could not foresee the engine knows itself (`Change`): a wall-clock step
//! can make a deadline due at an earlier point, a drift change moves every point after the
//! next one, a pause parks the next point's tick until the resume (where the grid restarts),
//! and a crash ends the grid (the skipped points before it still count for what a restart
//! keeps).

use crate::clock::NodeClock;
use crate::process::{SkippedTicks, TickDue};
use crate::time::SimTime;

/// A change the engine made to a process's clock or run state: what a grid that skips points
/// must hear of at once (the process itself would learn of it only at its next event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The wall clock stepped.
    Stepped,
    /// The drift rate changed: timers armed from now on convert at the new rate.
    RateChanged,
    /// The process was paused: its timers park until the resume.
    Paused,
    /// The process is about to crash (told before it goes down).
    Crashing,
}

/// One process's periodic timer: its grid as far as the engine has walked it.
#[derive(Clone, Debug)]
pub struct Periodic {
    /// The timer tag its ticks fire with; `None`: the process has no periodic timer.
    tag: Option<u64>,
    period_ns: u64,
    /// The last grid point run, as a tick or skipped; `None` until the first tick.
    cursor: Option<SimTime>,
    /// The grid point after `cursor` (`SimTime::MAX` without one).
    next: SimTime,
    /// The true time between the points from `next` on (at the rate in force at `next`).
    step_ns: u64,
    /// No drift at `next`: the monotonic reading there on grows with true time, ns for ns.
    mono_linear: bool,
    /// The monotonic reading at `next` (meaningful while `mono_linear`).
    next_mono_ns: u64,
    /// The earliest deadline for which the first armed point is known to come no later than
    /// the first point where it is due (then so for every later deadline), with the clock as
    /// it is now: planning has nothing to do for those.
    covered_ms: Option<i64>,
    /// Nothing to run before an event, nor to plan after it: `pending` starts with `next`,
    /// or the timer is not running (none, or before its first tick).
    // Invariant: equals `armed_now()` between calls into the grid (every change of `tag`,
    // `cursor`, `next` or `pending` is followed by `sync_armed`).
    next_armed: bool,
    /// Points armed as timers, after `cursor`. A timer that fires at a time not here is one
    /// the grid moved away from: ignored.
    // Invariant: sorted, unique.
    pending: Vec<SimTime>,
    /// The last plan found nothing to do, and since then nothing the plan reads of the grid
    /// (the cursor's presence, `covered_ms`) has changed, nor what it reads of the process
    /// (`Cx::tick_due_changed`).
    settled: bool,
}

impl Default for Periodic {
    fn default() -> Self {
        Periodic {
            tag: None,
            period_ns: 0,
            cursor: None,
            next: SimTime::MAX,
            step_ns: 0,
            mono_linear: false,
            next_mono_ns: 0,
            covered_ms: None,
            next_armed: true,
            pending: Vec::new(),
            settled: false,
        }
    }
}

/// Points this far out are never reached (a TTL of years): no timer is armed for them.
const FAR_NS: u64 = 1 << 62;

/// What firing a timer with the periodic tag means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fired {
    /// A point of the grid: the tick runs. `parked`: it was parked through a pause and runs
    /// at the resume, where the grid restarts.
    Tick { parked: bool },
    /// A point the grid moved away from.
    Stale,
}

impl Periodic {
    fn armed_now(&self) -> bool {
        self.tag.is_none() || self.cursor.is_none() || self.pending.first() == Some(&self.next)
    }

    fn sync_armed(&mut self) {
        self.next_armed = self.armed_now();
    }

    /// Nothing to run before an event of the process, nor to plan after it: the next point
    /// is armed, or there is no grid. A reaction of the process leaves this as it is (it
    /// reaches the grid only through `unsettle`).
    #[inline]
    pub fn quiet(&self) -> bool {
        self.next_armed
    }

    /// Before an event of the process at `now` (not `quiet`): whether skipped points are
    /// due to run first (one at `now` itself ran before it: its timer was armed ~one period
    /// earlier than any message sent to arrive now).
    #[inline]
    pub fn behind(&self, now: SimTime) -> bool {
        now >= self.next
    }

    /// After an event of the process: whether the plan may have to arm a point (the next
    /// point is not armed, and something the last plan read has changed).
    #[inline]
    pub fn may_plan(&self) -> bool {
        !self.next_armed && !self.settled
    }

    /// Whether a timer with `tag` is one of this grid's.
    #[inline]
    pub fn owns(&self, tag: u64) -> bool {
        self.tag == Some(tag)
    }

    pub fn running(&self) -> bool {
        self.tag.is_some()
    }

    pub fn tag(&self) -> Option<u64> {
        self.tag
    }

    /// Starts the grid (at every start of the process): the first point `first_ns` of
    /// monotonic time from now. Returns where to arm it.
    pub fn start(
        &mut self,
        clock: &NodeClock,
        now: SimTime,
        first_ns: u64,
        period_ns: u64,
        tag: u64,
    ) -> SimTime {
        assert!(period_ns > 0, "a periodic timer with no period");
        let at = now.plus_ns(clock.true_ns_for_local(now, first_ns));
        *self = Periodic {
            tag: Some(tag),
            period_ns,
            step_ns: period_ns,
            pending: vec![at],
            ..Periodic::default()
        };
        self.sync_armed();
        at
    }

    /// A timer with this grid's tag fired at `now`.
    pub fn fire(&mut self, now: SimTime) -> Fired {
        // A tick changes the process, and the covered deadline; a stale one is treated
        // alike (the plan is merely checked again).
        self.settled = false;
        match self.pending.first() {
            Some(&p) if p == now => Fired::Tick { parked: false },
            Some(&p) if p < now => Fired::Tick { parked: true },
            _ => Fired::Stale,
        }
    }

    /// The tick of a fired point is about to run (its skipped points before it have).
    pub fn ticking(&mut self, parked: bool) {
        if parked {
            // The later timers are off the grid that restarts here.
            self.pending.clear();
        } else {
            self.pending.remove(0);
        }
        self.covered_ms = None;
        self.settled = false;
    }

    /// The points skipped up to `until` (inclusive or not), stopping at the next armed one;
    /// moves the cursor past them. `None`: nothing to run.
    pub fn take_skipped<'c>(
        &mut self,
        clock: &'c NodeClock,
        until: SimTime,
        inclusive: bool,
    ) -> Option<SkippedTicks<'c>> {
        self.cursor?;
        debug_assert!(until < SimTime::MAX, "catch-up to a time reached");
        // One bound for the three stops: the next armed point, `until`, and `until` itself
        // unless inclusive.
        let end = until.0.saturating_add(u64::from(inclusive));
        let end = self.pending.first().map_or(end, |b| b.0.min(end));
        let first = self.next;
        if first.0 >= end {
            return None;
        }
        // No rate change falls inside these points (each is a `Change`, which catches up to
        // where it happened): they are `step_ns` apart.
        let count = (end - first.0).div_ceil(self.step_ns);
        let last = first.plus_ns((count - 1) * self.step_ns);
        let first_mono_ns = self.next_mono_ns;
        let ticks = SkippedTicks::new(
            clock,
            first,
            self.step_ns,
            count,
            first_mono_ns,
            self.mono_linear,
        );
        self.cursor = Some(last);
        self.next = last.plus_ns(self.step_ns);
        if self.mono_linear {
            self.next_mono_ns = first_mono_ns + count * self.step_ns;
        }
        self.sync_armed();
        Some(ticks)
    }

    /// What the process did may have changed what `tick_due` says.
    pub fn unsettle(&mut self) {
        self.settled = false;
    }

    /// Moves the cursor to `c` and computes what follows it with the clock as it is now.
    pub fn set_cursor(&mut self, clock: &NodeClock, c: SimTime) {
        let next = c.plus_ns(clock.true_ns_for_local(c, self.period_ns));
        self.cursor = Some(c);
        self.next = next;
        self.step_ns = clock.true_ns_for_local(next, self.period_ns);
        self.mono_linear = clock.drift_ppm(next) == 0;
        self.next_mono_ns = clock.mono_ns(next);
        self.sync_armed();
    }

    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// Whether `due` asks for no point the armed timers do not already cover.
    pub fn nothing_to_plan(&self, due: TickDue) -> bool {
        self.cursor.is_some()
            && match due {
                TickDue::Every => false,
                TickDue::Never => true,
                TickDue::WallPast(t) => self.covered_ms.is_some_and(|c| t >= c),
            }
    }

    /// After an event: plans from what the process says is due, remembering whether there
    /// was nothing to do. Returns a point to arm as a timer.
    pub fn plan_after_event(&mut self, clock: &NodeClock, due: TickDue) -> Option<SimTime> {
        if self.nothing_to_plan(due) {
            self.settled = true;
            return None;
        }
        self.settled = false;
        self.plan(clock, due)
    }

    /// The first point after the cursor where a tick can change what is observed, unless a
    /// timer at or before it is armed already: returned to be armed as a timer.
    pub fn plan(&mut self, clock: &NodeClock, due: TickDue) -> Option<SimTime> {
        self.cursor?;
        let deadline = match due {
            TickDue::Every => None,
            // No tick changes anything: none is wanted.
            TickDue::Never => return None,
            TickDue::WallPast(t) if self.covered_ms.is_some_and(|c| t >= c) => return None,
            TickDue::WallPast(t) => Some(t),
        };
        let want = match deadline {
            None => Some(self.next),
            Some(t) => match self.pending.first() {
                // An armed point that is not due comes before the due one.
                Some(&p) if clock.wall_ms(p) <= t => None,
                _ => self.first_due_point(clock, t),
            },
        };
        let arm = want.filter(|&w| self.pending.first().is_none_or(|&p| p > w));
        if let Some(w) = arm {
            self.pending.insert(0, w);
        }
        if let Some(t) = deadline
            && !self.pending.is_empty()
        {
            // The first timer is at or before the point where `t` is due.
            self.covered_ms = Some(self.covered_ms.map_or(t, |c| c.min(t)));
        }
        self.sync_armed();
        arm
    }

    /// The first grid point from `next` on (with the clock as it is known now) whose wall
    /// reading is past `deadline_ms`, if any.
    fn first_due_point(&self, clock: &NodeClock, deadline_ms: i64) -> Option<SimTime> {
        let next = self.next;
        if clock.wall_ms(next) > deadline_ms {
            return Some(next);
        }
        // From `next` on every point converts at the rate in force now (rate changes are
        // told, and re-plan): the points are `next + k·step`, and the wall reading grows
        // with k.
        let step = clock.true_ns_for_local(next, self.period_ns);
        let at = |k: u64| -> Option<SimTime> {
            let t = next.0.checked_add(k.checked_mul(step)?)?;
            (t < FAR_NS).then_some(SimTime(t))
        };
        let (mut lo, mut hi) = (0u64, 1u64);
        loop {
            let t = at(hi)?;
            if clock.wall_ms(t) > deadline_ms {
                break;
            }
            lo = hi;
            hi *= 2;
        }
        // Invariant: point lo is not due, point hi is.
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if clock.wall_ms(at(mid)?) > deadline_ms {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        at(hi)
    }

    /// A change to the clock or run state, after the skipped points before it ran. Returns
    /// whether to plan afterwards, and a point to arm at once (a pause's parked tick).
    pub fn change(&mut self, clock: &NodeClock, change: Change) -> (bool, Option<SimTime>) {
        self.settled = false;
        // What was proven about the armed timers held for the clock before the change.
        self.covered_ms = None;
        let Some(cursor) = self.cursor else {
            // The first tick is armed and nothing before it moves.
            return (false, None);
        };
        // The points after the next one convert at the rate in force now.
        self.set_cursor(clock, cursor);
        let next = self.next;
        match change {
            // Its timers die with it; the points before the crash have run (a restart keeps
            // what they saved).
            Change::Crashing => (false, None),
            Change::Stepped => (true, None),
            // The next point was armed at the old rate; the ones after it move.
            Change::RateChanged => {
                self.pending.retain(|&p| p <= next);
                self.sync_armed();
                (true, None)
            }
            // The next point's tick parks until the resume, where the grid restarts: it must
            // be a timer.
            Change::Paused => {
                if self.pending.first() == Some(&next) {
                    return (false, None);
                }
                self.pending.insert(0, next);
                self.sync_armed();
                (false, Some(next))
            }
        }
    }
}
