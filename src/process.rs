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
    /// The true time now and the node's clock, for a process that must reproduce where the
    /// loop's timers land (a Redis node's cron grid, which it skips while nothing is due).
    /// `None` from a sink that has no clock (a process driven by hand).
    fn true_clock(&self) -> Option<(SimTime, &NodeClock)> {
        None
    }
    /// Fires `on_timer(tag)` at true time `at` (not before now). Only offered by a sink whose
    /// `true_clock` is `Some`.
    fn set_timer_at(&mut self, _at: SimTime, _tag: u64) {
        unreachable!("set_timer_at on a sink without a clock");
    }
}

/// A change the loop made to a process's clock or run state, told to the process the moment
/// it happens (it would otherwise learn of it only at its next event): what a process that
/// sleeps through events it can prove empty needs to wake in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockNotice {
    /// The wall clock stepped.
    Stepped,
    /// The drift rate changed: timers armed from now on convert at the new rate.
    RateChanged,
    /// The process was paused: its timers park until the resume.
    Paused,
    /// The process is about to crash (told before it goes down).
    Crashing,
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
    pub fn true_clock(&self) -> Option<(SimTime, &NodeClock)> {
        self.out.true_clock()
    }
    pub fn set_timer_at(&mut self, at: SimTime, tag: u64) {
        self.out.set_timer_at(at, tag);
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
    /// The loop changed this process's clock or run state (see `ClockNotice`). The process
    /// may only arm timers here: it is not running (it may even be paused).
    fn on_clock_notice(&mut self, _cx: &mut Cx<'_>, _notice: ClockNotice) {}
    /// A copy of this process in its current state, for snapshots of a running world
    /// (`distlock-sim explore` resumes many schedules from one prefix). `None`, the default,
    /// says it cannot be copied: a world holding it is then re-simulated from the start
    /// instead of cloned — slower, same results.
    fn clone_box(&self) -> Option<Box<dyn Process>> {
        None
    }
}
