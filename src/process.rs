//! The sans-IO process interface: what every actor (Redis node, lock client, resource, a
//! user's own algorithm) implements, and the context the event loop hands it.
//!
//! A process never reads a clock, sleeps, spawns or owns an RNG: the loop passes in its node's
//! clock readings and its own RNG stream, and collects what it wants done (send, arm a timer,
//! report an observation). That is what makes every run a pure function of model and seed.

use crate::clock::NodeClock;
use crate::history::Observation;
use crate::proto::Msg;
use crate::rng::Prng;
use crate::time::{ProcId, SimTime};

/// What a process asks the loop to do.
#[derive(Clone, Debug)]
pub enum Output {
    Send {
        to: ProcId,
        msg: Msg,
    },
    /// Fire `on_timer(tag)` after `after_ns` of this node's *monotonic* time.
    Timer {
        after_ns: u64,
        tag: u64,
    },
    Observe(Observation),
}

/// Where a process's requests go. The event loop routes each one the moment it is made (no
/// buffer to fill and drain per event); a `Vec<Output>` collects them, for driving a process
/// by hand in tests.
pub trait OutputSink {
    fn send(&mut self, to: ProcId, msg: Msg);
    fn set_timer(&mut self, after_ns: u64, tag: u64);
    fn observe(&mut self, obs: Observation);
    /// Starts the process's periodic timer (see `sim::periodic`): `on_timer(tag)` every
    /// `period_ns` of its monotonic time from `first_ns` from now, made an event only at the
    /// points where `Process::tick_due` says a tick can matter, the others handed to
    /// `Process::on_skipped_ticks`. `false` from a sink that does not keep one (a process
    /// driven by hand): the process arms its own timers.
    fn start_periodic(&mut self, _first_ns: u64, _period_ns: u64, _tag: u64) -> bool {
        false
    }
    /// The process changed something `Process::tick_due` reads (what is due may have moved):
    /// the loop asks it again after this event. A tick, a skipped tick that says so, and a
    /// change to the clock make the loop ask anyway.
    fn tick_due_changed(&mut self) {}
}

/// Which points of a periodic timer can change what anyone observes, as the process says
/// after each event (`Process::tick_due`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickDue {
    /// Every point (a Redis replica, a node with WAIT clients).
    Every,
    /// The first point whose wall reading is past this Unix ms (`now > t`: Redis's expiry
    /// rule), and every point after it.
    WallPast(i64),
    /// None, however late.
    Never,
}

/// Consecutive points of a periodic timer that were not events, as the process sees them:
/// their local readings, never their true times.
pub struct SkippedTicks<'a> {
    clock: &'a NodeClock,
    first: SimTime,
    step_ns: u64,
    count: u64,
    first_mono_ns: u64,
    /// No drift at `first`: monotonic readings grow with true time, ns for ns.
    mono_linear: bool,
}

impl<'a> SkippedTicks<'a> {
    /// `count` points from `first`, `step_ns` apart (no rate change among them); with
    /// `mono_linear`, `first_mono_ns` is the monotonic reading at `first`.
    #[inline]
    pub(crate) fn new(
        clock: &'a NodeClock,
        first: SimTime,
        step_ns: u64,
        count: u64,
        first_mono_ns: u64,
        mono_linear: bool,
    ) -> SkippedTicks<'a> {
        assert!(count > 0, "no point skipped");
        SkippedTicks {
            clock,
            first,
            step_ns,
            count,
            first_mono_ns,
            mono_linear,
        }
    }
    /// How many points (at least one).
    #[inline]
    pub fn count(&self) -> u64 {
        self.count
    }
    fn at(&self, k: u64) -> SimTime {
        debug_assert!(k < self.count);
        self.first.plus_ns(k * self.step_ns)
    }
    /// The monotonic reading at point `k` (0 is the first).
    #[inline]
    pub fn mono_ns(&self, k: u64) -> u64 {
        if self.mono_linear {
            self.first_mono_ns + k * self.step_ns
        } else {
            self.clock.mono_ns(self.at(k))
        }
    }
    /// The wall reading (Unix ms) at point `k`.
    pub fn wall_ms(&self, k: u64) -> i64 {
        self.clock.wall_ms(self.at(k))
    }
}

impl OutputSink for Vec<Output> {
    fn send(&mut self, to: ProcId, msg: Msg) {
        self.push(Output::Send { to, msg });
    }
    fn set_timer(&mut self, after_ns: u64, tag: u64) {
        self.push(Output::Timer { after_ns, tag });
    }
    fn observe(&mut self, obs: Observation) {
        self.push(Output::Observe(obs));
    }
}

/// Context for one reaction: local clock readings, the process's RNG stream and where its
/// requests go. Built by the loop for each event.
pub struct Cx<'a> {
    pub me: ProcId,
    /// The node's wall clock, Unix ms (what Redis and naive clients read).
    pub wall_ms: i64,
    /// The node's monotonic clock, ns (what careful clients measure elapsed time with).
    pub mono_ns: u64,
    pub rng: &'a mut Prng,
    out: &'a mut dyn OutputSink,
}

impl<'a> Cx<'a> {
    /// A context whose requests are collected in `out`, in order.
    pub fn new(
        me: ProcId,
        wall_ms: i64,
        mono_ns: u64,
        rng: &'a mut Prng,
        out: &'a mut Vec<Output>,
    ) -> Cx<'a> {
        Cx::with_sink(me, wall_ms, mono_ns, rng, out)
    }
    /// A context whose requests go to `out` as they are made.
    pub fn with_sink(
        me: ProcId,
        wall_ms: i64,
        mono_ns: u64,
        rng: &'a mut Prng,
        out: &'a mut dyn OutputSink,
    ) -> Cx<'a> {
        Cx {
            me,
            wall_ms,
            mono_ns,
            rng,
            out,
        }
    }
    pub fn send(&mut self, to: ProcId, msg: Msg) {
        self.out.send(to, msg);
    }
    pub fn set_timer(&mut self, after_ns: u64, tag: u64) {
        self.out.set_timer(after_ns, tag);
    }
    pub fn observe(&mut self, obs: Observation) {
        self.out.observe(obs);
    }
    /// See `OutputSink::tick_due_changed`.
    pub fn tick_due_changed(&mut self) {
        self.out.tick_due_changed();
    }
    /// See `OutputSink::start_periodic`.
    pub fn start_periodic(&mut self, first_ns: u64, period_ns: u64, tag: u64) -> bool {
        self.out.start_periodic(first_ns, period_ns, tag)
    }
}

/// A simulated process. Timers cannot be cancelled: a process that no longer wants a timer
/// ignores it when it fires (tags usually carry a generation number for that).
pub trait Process {
    /// Called once when the run starts, and again after each restart.
    fn on_start(&mut self, cx: &mut Cx<'_>);
    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg);
    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64);
    /// The process crashed and is being restarted: drop volatile state; `keep_data` says
    /// whether durable state survived. `on_start` follows.
    fn on_restart(&mut self, keep_data: bool);
    /// Points of its periodic timer (`Cx::start_periodic`) the loop did not make events of,
    /// run before the next thing the process handles, at their own local readings. They
    /// may change the process's state, but nothing anyone observes (no send, no
    /// observation). Returns whether they may have changed what `tick_due` reads.
    fn on_skipped_ticks(&mut self, _ticks: &SkippedTicks<'_>) -> bool {
        false
    }
    /// The process changed something `Process::tick_due` reads (what is due may have moved):
    /// the loop asks it again after this event. A tick, a skipped tick that says so, and a
    /// change to the clock make the loop ask anyway.
    fn tick_due_changed(&mut self) {}
    /// Which points of its periodic timer can change what anyone observes: asked after
    /// every tick, and after an event while the next point is not armed.
    fn tick_due(&mut self) -> TickDue {
        TickDue::Every
    }
    /// A copy of this process in its current state, for snapshots of a running world
    /// (`distlock-sim explore` resumes many schedules from one prefix). `None`, the default,
    /// says it cannot be copied: a world holding it is then re-simulated from the start
    /// instead of cloned — slower, same results.
    fn clone_box(&self) -> Option<Box<dyn Process>> {
        None
    }
}

/// A boxed process (a registered algorithm's, `Actor::Custom`) is one: every call forwarded.
impl Process for Box<dyn Process> {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        (**self).on_start(cx)
    }
    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        (**self).on_message(cx, from, msg)
    }
    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        (**self).on_timer(cx, tag)
    }
    fn on_restart(&mut self, keep_data: bool) {
        (**self).on_restart(keep_data)
    }
    fn on_skipped_ticks(&mut self, ticks: &SkippedTicks<'_>) -> bool {
        (**self).on_skipped_ticks(ticks)
    }
    fn tick_due(&mut self) -> TickDue {
        (**self).tick_due()
    }
    fn clone_box(&self) -> Option<Box<dyn Process>> {
        (**self).clone_box()
    }
}
