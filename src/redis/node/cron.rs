//! Where the server cron ticks, and which of its ticks are events.
//!
//! A real server's cron runs every 100 ms of its monotonic clock. In the loop each tick arms
//! the next one from its own firing time, converted to true time at the drift rate in force
//! then (`NodeClock::true_ns_for_local`): that chain of true times is the node's *grid*, and
//! every active expiry happens on it. A tick can change what anyone observes only when a key
//! is due, or when the node has replicas, blocked WAIT clients, BLPOP clients with a
//! timeout or keys outside db 0. Every
//! other tick only moves state nobody sees until the next event at the node (table sizes,
//! the replication ack clock, the disk): `CronMode::WhenDue` arms a timer only for grid
//! points where a key is due (or every point while the node needs them all) and runs the
//! skipped points, in order and at their own clock readings, when the node next handles
//! anything. So removal times, their records and every later tick are those of a server
//! that ticked throughout.
//!
//! What the node could not otherwise foresee, the loop tells it (`ClockNotice`): a wall-clock
//! step can make a key due at an earlier point, a drift change moves every point after the
//! next one, a pause parks the next point's tick until the resume (where the grid restarts),
//! and a crash ends the grid (the skipped points before it still count for what a restart
//! keeps).

use crate::clock::NodeClock;
use crate::process::{ClockNotice, Cx};
use crate::redis::node::{CRON_PERIOD_NS, RedisProcess, TIMER_CRON};
use crate::redis::replication::ACK_PERIOD_NS;
use crate::time::SimTime;

/// Which grid points of the cron are events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CronMode {
    /// Every point: the reference the sleeping cron is compared with.
    EveryTick,
    /// Only the points where a tick can change what is observed.
    WhenDue,
}

/// The cron's grid as far as the node has walked it.
#[derive(Clone, Debug)]
pub struct CronGrid {
    pub mode: CronMode,
    /// The loop offers true time and the clock (a process driven by hand gets every tick).
    // Invariant: false unless mode == WhenDue.
    sleeping: bool,
    /// The last grid point run, as a tick or caught up; `None` until the first tick.
    cursor: Option<SimTime>,
    /// The grid point after `cursor` (`SimTime::MAX` without one).
    next: SimTime,
    /// The true time between the points from `next` on (at the rate in force at `next`).
    step_ns: u64,
    /// No drift at `next`: the monotonic reading there on grows with true time, ns for ns.
    mono_linear: bool,
    /// The monotonic reading at `next` (`u64::MAX` without one): an
    /// event whose reading is below it has no skipped point to run, which the node sees
    /// without a look at the clock (readings never decrease as true time grows).
    next_mono_ns: u64,
    /// The earliest deadline for which the first armed timer is known to come no later
    /// than the first point where it is due (then so for every later deadline), with the
    /// clock as it is now: `plan_cron` has nothing to do for those.
    covered_ms: Option<i64>,
    /// Inputs (keys, keys with a deadline) for which the tables are known to be where a
    /// skipped tick leaves them.
    tables_settled_for: Option<(u64, u64)>,
    /// `pending` starts with `next`, or there is nothing to plan (not sleeping, or before
    /// the first tick): an event at the node need not plan.
    // Invariant: equals `armed_now()` between calls into the grid (every change of
    // `sleeping`, `cursor`, `next` or `pending` is followed by `sync_armed` before the
    // process returns to the loop).
    next_armed: bool,
    /// Timers armed at grid points after `cursor`. A timer that fires at a time not here is
    /// one the grid moved away from: ignored.
    // Invariant: sorted, unique.
    pending: Vec<SimTime>,
    /// The last event at the node found nothing to plan (`cron_after_event`), and since then
    /// neither what that test reads of the grid (the cursor's presence, `covered_ms`) nor
    /// what it reads of the node (its role, replicas, WAIT clients, dbs, active expiry and
    /// earliest deadline) has changed, except by quiet events, which change none of it.
    plan_settled: bool,
}

impl Default for CronGrid {
    fn default() -> Self {
        CronGrid {
            mode: CronMode::WhenDue,
            sleeping: false,
            cursor: None,
            next: SimTime::MAX,
            step_ns: CRON_PERIOD_NS,
            mono_linear: false,
            next_mono_ns: u64::MAX,
            covered_ms: None,
            tables_settled_for: None,
            next_armed: true,
            pending: Vec::new(),
            plan_settled: false,
        }
    }
}

/// The grid point after `t`: where the timer armed by a tick at `t` fires.
fn next_point(clock: &NodeClock, t: SimTime) -> SimTime {
    t.plus_ns(clock.true_ns_for_local(t, CRON_PERIOD_NS))
}

/// Points this far out are never reached (a TTL of years): no timer is armed for them.
const FAR_NS: u64 = 1 << 62;

/// The first grid point from `next` on (a point, with the clock as it is known now) whose
/// wall reading is past `deadline_ms` (`now > t`, the expiry rule), if any.
fn first_due_point(clock: &NodeClock, next: SimTime, deadline_ms: i64) -> Option<SimTime> {
    if clock.wall_ms(next) > deadline_ms {
        return Some(next);
    }
    // From `next` on every point converts at the rate in force now (rate changes are told,
    // and re-plan): the points are `next + k·step`, and the wall reading grows with k.
    let step = clock.true_ns_for_local(next, CRON_PERIOD_NS);
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

impl CronGrid {
    fn armed_now(&self) -> bool {
        !self.sleeping || self.cursor.is_none() || self.pending.first() == Some(&self.next)
    }

    fn sync_armed(&mut self) {
        self.next_armed = self.armed_now();
    }
}

impl RedisProcess {
    /// Which cron ticks are events (before the run starts; `WhenDue` by default).
    pub fn set_cron_mode(&mut self, mode: CronMode) {
        self.grid.mode = mode;
    }

    /// Arms the first tick of a start, `first_ns` of monotonic time from now.
    pub(super) fn start_cron(&mut self, cx: &mut Cx<'_>, first_ns: u64) {
        let g = &mut self.grid;
        g.cursor = None;
        g.next = SimTime::MAX;
        g.next_mono_ns = u64::MAX;
        g.covered_ms = None;
        g.tables_settled_for = None;
        g.next_armed = true;
        g.plan_settled = false;
        g.pending.clear();
        let at = match cx.true_clock() {
            Some((now, clock)) if g.mode == CronMode::WhenDue => {
                now.plus_ns(clock.true_ns_for_local(now, first_ns))
            }
            _ => {
                g.sleeping = false;
                cx.set_timer(first_ns, TIMER_CRON);
                return;
            }
        };
        g.sleeping = true;
        g.pending.push(at);
        cx.set_timer_at(at, TIMER_CRON);
    }

    /// A cron timer fired: runs the tick and arms what comes next.
    pub(super) fn cron_timer(&mut self, cx: &mut Cx<'_>) {
        // A tick changes the node, and the grid's covered deadline.
        self.grid.plan_settled = false;
        if !self.grid.sleeping {
            self.run_tick(cx);
            cx.set_timer(CRON_PERIOD_NS, TIMER_CRON);
            return;
        }
        let (now, clock) = cx.true_clock().expect("a sleeping cron has a clock");
        let parked = match self.grid.pending.first() {
            Some(&p) if p == now => false,
            // Parked through a pause: the tick runs at the resume, and the grid restarts
            // from here, so the later timers are off it.
            Some(&p) if p < now => true,
            _ => return,
        };
        self.catch_up(clock, now, false);
        if parked {
            self.grid.pending.clear();
        } else {
            self.grid.pending.remove(0);
        }
        self.grid.covered_ms = None;
        self.run_tick(cx);
        self.grid.tables_settled_for = None;
        self.set_cursor(cx, now);
        self.plan_cron(cx);
        self.grid.sync_armed();
    }

    fn run_tick(&mut self, cx: &mut Cx<'_>) {
        for (to, id, reply) in self.node.cron(cx.wall_ms, cx.mono_ns) {
            cx.send(to, crate::proto::Msg::Reply { id, reply });
        }
        self.flush(cx);
    }

    /// Before the node handles a message at true time now: the skipped points up to now
    /// (one at now ran before it: its timer would have been armed ~100 ms earlier than any
    /// message sent to arrive now).
    #[inline]
    pub(super) fn cron_before_event(&mut self, cx: &mut Cx<'_>) {
        // With the very next point armed there is nothing to catch up: the catch-up stops
        // at an armed point. `next_mono_ns` is `u64::MAX` unless sleeping.
        if !self.grid.next_armed && cx.mono_ns >= self.grid.next_mono_ns {
            self.catch_up_to_event(cx);
        }
    }

    // Out of line: the check above is all most events pay.
    #[inline(never)]
    fn catch_up_to_event(&mut self, cx: &mut Cx<'_>) {
        let (now, clock) = cx.true_clock().expect("a sleeping cron has a clock");
        self.catch_up(clock, now, true);
    }

    /// After the node handled a message: the next tick that can matter is armed.
    #[inline]
    pub(super) fn cron_after_event(&mut self, cx: &mut Cx<'_>) {
        // With the very next point armed nothing can come earlier (a node with a key due at
        // every tick, W1's, stops here).
        if !self.grid.next_armed {
            // Quiet: since the last test, the only messages were lock commands on the
            // process's fast path that propagated nothing (a refused SET NX, an unlock of a
            // key that changed hands). Those leave the node's side of the test as it was:
            // every write of that path propagates (a Lua script is counted as one), and
            // every other request or replication message counts as a change
            // (`RedisNode::wrote`). Checked as a release assertion once, over every model's
            // sweep and the cron, replication and transaction tests.
            let quiet = !std::mem::take(&mut self.node.wrote);
            // Settled and quiet: the test below would find nothing to plan again (~20
            // instructions an event on W2, most of whose events are refused SETs and
            // unlocks of keys that changed hands).
            if quiet && self.grid.plan_settled {
                debug_assert!(self.nothing_to_plan(), "a settled plan is still settled");
                return;
            }
            // Only `plan_cron` can change what `next_armed` is computed from here (the
            // catch-up before the event synced it; handling a message leaves the grid).
            if self.nothing_to_plan() {
                self.grid.plan_settled = true;
            } else {
                self.grid.plan_settled = false;
                self.plan_cron(cx);
                self.grid.sync_armed();
            }
            debug_assert_eq!(self.grid.next_armed, self.grid.armed_now());
        }
    }

    /// `plan_cron`'s own first exits, inline: most events change no deadline that its
    /// armed timers do not already cover.
    #[inline]
    fn nothing_to_plan(&mut self) -> bool {
        self.grid.cursor.is_some()
            && !self.node.cron_must_tick()
            && self
                .node
                .earliest_expiry_ms()
                .is_none_or(|t| self.grid.covered_ms.is_some_and(|c| t >= c))
    }

    pub(super) fn cron_notice(&mut self, cx: &mut Cx<'_>, notice: ClockNotice) {
        self.grid.plan_settled = false;
        if !self.grid.sleeping {
            return;
        }
        let (now, clock) = cx.true_clock().expect("a sleeping cron has a clock");
        // A fault's event was queued before any tick at its instant: points before it only.
        self.catch_up(clock, now, false);
        // What was proven about the armed timers held for the clock before the change.
        self.grid.covered_ms = None;
        let Some(cursor) = self.grid.cursor else {
            // The first tick is armed and nothing before it moves.
            return;
        };
        // The points after the next one convert at the rate in force now.
        self.set_cursor(cx, cursor);
        let next = self.grid.next;
        match notice {
            // Its timers die with it; the points before the crash have run (a restart keeps
            // what they saved to disk).
            ClockNotice::Crashing => {
                self.grid.sync_armed();
                return;
            }
            ClockNotice::Stepped => {}
            // The next point was armed at the old rate; the ones after it move.
            ClockNotice::RateChanged => self.grid.pending.retain(|&p| p <= next),
            // The next point's tick parks until the resume, where the grid restarts: it
            // must be a timer.
            ClockNotice::Paused => {
                if self.grid.pending.first() != Some(&next) {
                    self.grid.pending.insert(0, next);
                    cx.set_timer_at(next, TIMER_CRON);
                }
                self.grid.sync_armed();
                return;
            }
        }
        self.plan_cron(cx);
        self.grid.sync_armed();
    }

    /// Runs the skipped grid points up to `until` (inclusive or not), stopping at the next
    /// armed one. `clock` is the loop's (`Cx::true_clock`), which every caller has read
    /// already: one call through the sink, not two.
    fn catch_up(&mut self, clock: &NodeClock, until: SimTime, inclusive: bool) {
        if self.grid.cursor.is_none() {
            return;
        }
        // One bound for the three stops (the next armed point, `until`, and `until` itself
        // unless inclusive): `until` is a true time reached, never `SimTime::MAX`.
        debug_assert!(until < SimTime::MAX, "catch-up to a time reached");
        let end = until.0.saturating_add(u64::from(inclusive));
        let end = self.grid.pending.first().map_or(end, |b| b.0.min(end));
        let stop = |t: SimTime| t.0 >= end;
        let mut t = self.grid.next;
        if stop(t) {
            return;
        }
        // No rate change falls inside the points run here (each is told, and catches up to
        // where it happened): they are `step` apart.
        let step = self.grid.step_ns;
        let first = t;
        let (next, next_mono_ns) = (self.grid.next, self.grid.next_mono_ns);
        let mono_at = |p: SimTime| {
            if self.grid.mono_linear {
                next_mono_ns + (p.0 - next.0)
            } else {
                clock.mono_ns(p)
            }
        };
        if self.node.cron_is_light() {
            let mut n = 0u64;
            let mut last;
            loop {
                last = t;
                n += 1;
                t = t.plus_ns(step);
                if stop(t) {
                    break;
                }
            }
            let inputs = self.node.light_tick_inputs();
            if self.grid.tables_settled_for != Some(inputs) {
                for _ in 0..n {
                    if !self.node.skipped_light_tables(inputs) {
                        self.grid.tables_settled_for = Some(inputs);
                        break;
                    }
                }
            }
            // The replication cron of a master without replicas: its ack clock moves to a
            // tick's reading once a second has passed on it.
            let last_mono_ns = mono_at(last);
            let repl = &mut self.node.repl;
            if last_mono_ns.saturating_sub(repl.last_ack_sent_mono_ns) >= ACK_PERIOD_NS {
                let mut p = first;
                for _ in 0..n {
                    let mono_ns = mono_at(p);
                    if mono_ns.saturating_sub(repl.last_ack_sent_mono_ns) >= ACK_PERIOD_NS {
                        repl.last_ack_sent_mono_ns = mono_ns;
                    }
                    p = p.plus_ns(step);
                }
            }
            repl.mono_ns = last_mono_ns;
            self.grid.cursor = Some(last);
        } else {
            self.grid.tables_settled_for = None;
            // A whole skipped tick (of a node with a disk to write, say) runs the node's
            // cron: taken as a change for the planning test too. A light one moves only
            // the tables and the ack clock, which that test does not read.
            self.grid.plan_settled = false;
            loop {
                self.node.skipped_cron(clock.wall_ms(t), mono_at(t));
                self.grid.cursor = Some(t);
                t = t.plus_ns(step);
                if stop(t) {
                    break;
                }
            }
        }
        self.grid.next_mono_ns = mono_at(t);
        self.grid.next = t;
        self.grid.sync_armed();
    }

    /// Moves the cursor to `c` and computes what follows it with the clock as it is now.
    fn set_cursor(&mut self, cx: &Cx<'_>, c: SimTime) {
        let clock = cx.true_clock().expect("a sleeping cron has a clock").1;
        let next = next_point(clock, c);
        self.grid.cursor = Some(c);
        self.grid.next = next;
        self.grid.step_ns = clock.true_ns_for_local(next, CRON_PERIOD_NS);
        self.grid.mono_linear = clock.drift_ppm(next) == 0;
        self.grid.next_mono_ns = clock.mono_ns(next);
        self.grid.sync_armed();
    }

    /// Arms the first grid point after the cursor where a tick can change what is observed,
    /// unless a timer at or before it is armed already.
    #[inline(never)]
    fn plan_cron(&mut self, cx: &mut Cx<'_>) {
        if self.grid.cursor.is_none() {
            return;
        }
        let must_tick = self.node.cron_must_tick();
        let deadline = if must_tick {
            None
        } else {
            match self.node.earliest_expiry_ms() {
                // No tick removes anything: none is wanted.
                None => return,
                Some(t) if self.grid.covered_ms.is_some_and(|c| t >= c) => return,
                Some(t) => Some(t),
            }
        };
        let want = {
            let clock = cx.true_clock().expect("a sleeping cron has a clock").1;
            let next = self.grid.next;
            match deadline {
                None => Some(next),
                Some(t) => match self.grid.pending.first() {
                    // An armed point that is not due comes before the due one.
                    Some(&p) if clock.wall_ms(p) <= t => None,
                    _ => first_due_point(clock, next, t),
                },
            }
        };
        if let Some(w) = want
            && self.grid.pending.first().is_none_or(|&p| p > w)
        {
            self.grid.pending.insert(0, w);
            cx.set_timer_at(w, TIMER_CRON);
        }
        if let Some(t) = deadline
            && !self.grid.pending.is_empty()
        {
            // The first timer is at or before the point where `t` is due.
            self.grid.covered_ms = Some(self.grid.covered_ms.map_or(t, |c| c.min(t)));
        }
    }
}
