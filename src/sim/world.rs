//! The event loop: one queue ordered by (true time, sequence number), processes as sans-IO
//! state machines, the network, per-node clocks, faults, history and trace.

use crate::clock::NodeClock;
use crate::history::{Fact, History, Observation};
use crate::net::{DropReason, LinkSpec, Network};
use crate::process::{Cx, OutputSink, Process};
use crate::proto::Msg;
use crate::rng::{Prng, Seed};
use crate::sim::actor::Actor;
use crate::sim::actor::ProcKind;
use crate::sim::adversary::{SendKind, Trigger};
use crate::sim::decision::{Decision, DecisionKind};
use crate::sim::fault::{Aim, Fault, FaultKind};
use crate::sim::periodic::{Change, Fired, Periodic};
use crate::sim::queue::{EventQueue, QueueEntry};
pub use crate::sim::run::{Limits, RunEnd};
use crate::sim::trace::{Trace, TraceEntry, TraceKind, TraceMode};
use crate::time::{ProcId, SimTime};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Up,
    Paused,
    Down,
}

/// What a process's reaction runs on: its state and its own RNG stream. Kept apart from the
/// rest of its slot so that the world can route the reaction's requests while it runs.
#[derive(Clone)]
struct Proc {
    actor: Actor,
    rng: Prng,
}

#[derive(Clone, Debug)]
struct Slot {
    name: String,
    clock: NodeClock,
    state: RunState,
    /// Bumped by every crash: timers and messages addressed to an older incarnation are void.
    incarnation: u32,
    /// Events that reached the process while paused, in arrival order, with their send times.
    parked: Vec<(Event, SimTime)>,
    /// Open pause windows of this incarnation: the process runs only while this is 0.
    // Invariant: pauses > 0 iff state == Paused (a crash zeroes it).
    pauses: u32,
    /// Open crash windows: the process comes back only when the last one closes.
    // Invariant: downs > 0 implies state == Down.
    downs: u32,
    /// Whether every crash window open since the process went down kept its data.
    keep_data: bool,
    /// Whether every crash window open since the process went down left its host up (so
    /// connections to it are refused rather than unanswered).
    host_up: bool,
    /// The drift rate set by the clock spec or the latest drift without a duration, and the
    /// sum of the open drift windows: the clock runs at their sum (clamped to the limit).
    drift_base_ppm: i64,
    drift_windows_ppm: i64,
    /// The process's periodic timer, if it started one (`Cx::start_periodic`).
    periodic: Periodic,
}

/// A fault the world knows of, and what its opening did (so that closing undoes exactly that).
#[derive(Clone)]
struct FaultState {
    fault: Fault,
    /// The opening took effect (a pause of a process that was down does nothing, and neither
    /// does its end).
    took: bool,
    /// The incarnation a pause was opened in: a crash in between ends every pause.
    incarnation: u32,
}

#[derive(Clone, Debug)]
enum Event {
    Deliver {
        from: ProcId,
        to: ProcId,
        to_incarnation: u32,
        msg: Msg,
    },
    Timer {
        proc: ProcId,
        incarnation: u32,
        tag: u64,
    },
    /// Open (`close: false`) or close the fault of index `id` in `World::faults`.
    Fault { id: u32, close: bool },
    /// A process whose start is offset (`ProcSpec::start_at`) starts now, unless it crashed
    /// before (a restart starts it) — or waits for its resume, if paused.
    Start { proc: ProcId, incarnation: u32 },
}

/// Hands one input to process `$p` of world `$world`: `$call` runs with `$actor` and `$cx`
/// bound, and the process's requests are routed into the engine as it makes them. A macro
/// rather than a method taking a closure: a message captured by a closure is copied once
/// more, ~1 % of a run.
macro_rules! dispatch {
    ($world:expr, $p:expr, |$actor:ident, $cx:ident| $call:expr) => {{
        let World { procs, engine } = $world;
        let p: ProcId = $p;
        let clock = &engine.slots[p.index()].clock;
        let (wall_ms, mono_ns) = (clock.wall_ms(engine.now), clock.mono_ns(engine.now));
        // The process and the engine are disjoint borrows: the router routes into the
        // engine while the process reacts.
        let Proc { actor, rng } = &mut procs[p.index()];
        let mut router = Router {
            engine,
            from: p,
            held_until: None,
        };
        let $cx = &mut Cx::with_sink(p, wall_ms, mono_ns, rng, &mut router);
        let $actor = actor;
        $call;
    }};
}

/// A world ready to run: processes, clocks, network, queue. `Clone` copies it mid-run (see
/// `snapshot`): the copy continues exactly as the original would.
///
/// Two halves, so that a process can react while the world routes what it asks for: the
/// processes themselves, and the `Engine` (everything else), which a reacting process's
/// router borrows mutably beside the one process borrowed from `procs`. Routing never needs
/// a process: what it needs to know of them (which are Redis nodes, which sentinels) the
/// engine keeps. The world derefs to its engine for the read-only views (`history`, `trace`).
#[derive(Clone)]
pub struct World {
    // Indexed like `engine.slots`.
    procs: Vec<Proc>,
    engine: Engine,
}

/// Everything of a world but its processes: clocks and run states, network, queue, faults,
/// triggers, history and trace.
#[derive(Clone)]
pub struct Engine {
    seed: Seed,
    slots: Vec<Slot>,
    /// What each process is, fixed for its life (a restart keeps the actor).
    kinds: Vec<ProcKind>,
    // Heap entries point into `events` (a slab) so that sifting moves a key and an index, not
    // a message. The key packs (time, seq, slot) into one u128 (`QueueEntry`): one comparison per
    // sift step.
    queue: EventQueue,
    events: Vec<Option<Event>>,
    /// Send time of the event in the same slab slot; kept only with a full trace (reports
    /// draw messages as arrows from sender to receiver).
    sent_at: Vec<SimTime>,
    /// Send time of the message being delivered (full trace only).
    delivering_sent_at: SimTime,
    free: Vec<u32>,
    seq: u64,
    now: SimTime,
    pub net: Network,
    pub history: History,
    pub trace: Trace,
    limits: Limits,
    /// Triggered adversaries, consulted on every observation.
    triggers: Vec<Trigger>,
    /// Clients that believe they hold a lock, in the order they acquired (`@holder` aims).
    holders: Vec<(ProcId, u32)>,
    /// Set once a fault aimed at a role is scheduled (before the run starts: triggers never
    /// aim), so that `holders` and `promoted_at` are kept only when something reads them.
    tracks_roles: bool,
    /// When each process last became a master by promotion (`@master` aims).
    promoted_at: Vec<SimTime>,
    /// Every fault the world was given (scheduled up front or triggered), by index.
    faults: Vec<FaultState>,
    /// Every fault opened, in order, with the time it opened: the realised schedule
    /// (scripted, random, swarm and triggered alike), which minimisation turns into a
    /// scripted model.
    pub applied_faults: Vec<Fault>,
    events_handled: u64,
    /// Set while the event being handled still sits at the top of the queue: the first event
    /// it schedules takes its place, one sift instead of a pop and a push.
    top_spent: bool,
    started: bool,
    /// Per process, when `start` starts it.
    start_at: Vec<SimTime>,
    /// Decision points met so far, when asked for (`log_decisions`; `explore` places its
    /// faults at them); `None` costs one branch per observation and send.
    decisions: Option<Vec<Decision>>,
    /// Changes the engine made to the clock or run state of a process with a periodic timer,
    /// applied to its grid by the world at the end of the event that made them
    /// (`World::deliver_notices`).
    notices: Vec<(ProcId, Change)>,
}

impl std::ops::Deref for World {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl std::ops::DerefMut for World {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }
}

/// A process to add to a world.
pub struct ProcSpec {
    pub name: String,
    pub actor: Actor,
    pub clock: NodeClock,
    /// When the process starts (true time): 0 for all but clients given a `start` offset.
    pub start_at: SimTime,
}

impl World {
    pub fn new(
        seed: Seed,
        limits: Limits,
        default_link: LinkSpec,
        procs: Vec<ProcSpec>,
        trace: TraceMode,
    ) -> World {
        let n = procs.len();
        let start_at = procs.iter().map(|p| p.start_at).collect();
        let (procs, slots): (Vec<Proc>, Vec<Slot>) = procs
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let proc = Proc {
                    actor: p.actor,
                    rng: seed.stream("proc", i as u64),
                };
                let slot = Slot {
                    name: p.name,
                    state: RunState::Up,
                    incarnation: 0,
                    parked: Vec::new(),
                    pauses: 0,
                    downs: 0,
                    keep_data: true,
                    host_up: true,
                    drift_base_ppm: p.clock.drift_ppm(SimTime::ZERO),
                    drift_windows_ppm: 0,
                    clock: p.clock,
                    periodic: Periodic::default(),
                };
                (proc, slot)
            })
            .unzip();
        let kinds = procs
            .iter()
            .map(|p: &Proc| ProcKind::of(&p.actor))
            .collect();
        let engine = Engine {
            seed,
            slots,
            kinds,
            queue: EventQueue::new(),
            events: Vec::new(),
            sent_at: Vec::new(),
            delivering_sent_at: SimTime::ZERO,
            free: Vec::new(),
            seq: 0,
            now: SimTime::ZERO,
            net: Network::new(n, seed, default_link),
            history: History::default(),
            trace: Trace::new(trace),
            limits,
            triggers: Vec::new(),
            holders: Vec::new(),
            tracks_roles: false,
            promoted_at: vec![SimTime::ZERO; n],
            faults: Vec::new(),
            applied_faults: Vec::new(),
            events_handled: 0,
            top_spent: false,
            started: false,
            start_at,
            decisions: None,
            notices: Vec::new(),
        };
        World { procs, engine }
    }

    /// From now on, record every decision point met (see `sim::decision`).
    pub fn log_decisions(&mut self) {
        self.engine.decisions.get_or_insert_with(Vec::new);
    }

    /// Stops recording decision points (and drops those recorded): a run whose points
    /// nobody reads (an explored schedule's last stretch, the cursor beside its probe).
    pub fn stop_logging_decisions(&mut self) {
        self.engine.decisions = None;
    }

    /// The decision points recorded since the last call (empty if not logging).
    pub fn take_decisions(&mut self) -> Vec<Decision> {
        self.engine
            .decisions
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// A fingerprint of what decides this world's future: the processes' states and RNGs,
    /// clocks and run states, the pending events (in order, with their times; a fault event
    /// by what it does, not by its index), the links, the triggers and the roles. Left out:
    /// the history, the trace and the record of faults applied, which only look back.
    /// Equal fingerprints mean equal futures; unequal ones need not mean different futures
    /// (a node's compiled-script cache shows, and a clone starts with it empty): that only
    /// costs deduplication. `None` for a world with a custom process (its state is its own).
    pub fn fingerprint(&self) -> Option<u64> {
        use std::fmt::Write as _;
        let mut h = crate::sim::decision::Fnv::default();
        let _ = write!(h, "{:?}|", self.engine.now);
        for (proc, slot) in self.procs.iter().zip(&self.engine.slots) {
            match &proc.actor {
                Actor::Custom(_) => return None,
                a => {
                    let _ = write!(h, "{:?}|{:?}|{:?}|", a, proc.rng, slot);
                }
            }
        }
        let mut keys = self.engine.queue.keys_unordered().to_vec();
        keys.sort_unstable();
        for k in keys {
            let e = QueueEntry(k);
            let ev = self.engine.events[e.idx() as usize]
                .as_ref()
                .expect("queued event present");
            let _ = write!(h, "{:?}:", e.time());
            match ev {
                Event::Fault { id, close } => {
                    let st = &self.engine.faults[*id as usize];
                    let _ = write!(h, "F{close}{:?}{}{}|", st.fault, st.took, st.incarnation);
                }
                other => {
                    let _ = write!(h, "{other:?}|");
                }
            }
        }
        let _ = write!(
            h,
            "{:?}|{:?}|{:?}|{:?}|{}",
            self.engine.net,
            self.engine.triggers,
            self.engine.holders,
            self.engine.promoted_at,
            self.engine.started
        );
        Some(h.finish())
    }

    /// A copy of this world as it is now, which continues byte-identically to the original
    /// (tests/snapshot.rs); `None` if a custom process cannot be copied.
    pub fn snapshot(&self) -> Option<World> {
        self.procs
            .iter()
            .all(|p| p.actor.can_clone())
            .then(|| self.clone())
    }

    pub fn seed(&self) -> Seed {
        self.engine.seed
    }
    pub fn now(&self) -> SimTime {
        self.engine.now
    }
    pub fn events_handled(&self) -> u64 {
        self.engine.events_handled
    }
    pub fn proc_count(&self) -> usize {
        self.engine.slots.len()
    }
    pub fn name(&self, p: ProcId) -> &str {
        &self.engine.slots[p.index()].name
    }
    pub fn names(&self) -> Vec<String> {
        self.engine.slots.iter().map(|s| s.name.clone()).collect()
    }
    pub fn clock(&self, p: ProcId) -> &NodeClock {
        &self.engine.slots[p.index()].clock
    }
    pub fn state(&self, p: ProcId) -> RunState {
        self.engine.slots[p.index()].state
    }
    pub fn actor(&self, p: ProcId) -> &Actor {
        &self.procs[p.index()].actor
    }
    pub fn actor_mut(&mut self, p: ProcId) -> &mut Actor {
        &mut self.procs[p.index()].actor
    }

    /// Starts every process: now (true time 0), or at its `start_at` through a queued event
    /// (after the faults already scheduled for that instant). Idempotent.
    pub fn start(&mut self) {
        if self.engine.started {
            return;
        }
        self.engine.started = true;
        for i in 0..self.engine.slots.len() {
            let p = ProcId(i as u32);
            if self.engine.start_at[i] > self.engine.now {
                let incarnation = self.engine.slots[i].incarnation;
                self.engine.push(
                    self.engine.start_at[i],
                    Event::Start {
                        proc: p,
                        incarnation,
                    },
                );
                continue;
            }
            self.engine.trace_entry(p, TraceKind::Start);
            dispatch!(self, p, |actor, cx| actor.on_start(cx));
        }
        self.deliver_notices();
    }

    /// Runs until a limit or quiescence.
    pub fn run(&mut self) -> RunEnd {
        self.start();
        loop {
            if let Some(end) = self.step() {
                return end;
            }
        }
    }

    /// Runs until true time `until` (inclusive) or a limit; `None` if stopped by `until`.
    pub fn run_until(&mut self, until: SimTime) -> Option<RunEnd> {
        self.start();
        loop {
            match self.engine.queue.peek() {
                Some(e) if QueueEntry(e).time() <= until => {}
                _ => {
                    self.engine.now = self.engine.now.max(until.min(self.engine.limits.max_time));
                    return None;
                }
            }
            if let Some(end) = self.step() {
                return Some(end);
            }
        }
    }

    /// Handles one event; `Some` when the run is over.
    pub fn step(&mut self) -> Option<RunEnd> {
        let Some(entry) = self.engine.queue.peek().map(QueueEntry) else {
            // A periodic timer (sim/periodic.rs) queues no tick while nothing is due, but its
            // process still ticks: a run with one up goes on to its duration, as it did when
            // every tick was an event.
            if self.periodic_keeps_running() {
                self.engine.now = self.engine.now.max(self.engine.limits.max_time);
                return Some(RunEnd::TimeLimit);
            }
            return Some(RunEnd::Quiescent);
        };
        let (at, idx) = (entry.time(), entry.idx());
        if at > self.engine.limits.max_time {
            self.engine.now = self.engine.limits.max_time;
            return Some(RunEnd::TimeLimit);
        }
        if self.engine.events_handled >= self.engine.limits.max_events {
            return Some(RunEnd::EventLimit);
        }
        if self.engine.history.over_budget() {
            return Some(RunEnd::HistoryLimit);
        }
        // The event's key stays at the top of the queue until its handler schedules an event
        // in its place, or is popped after the handler.
        self.engine.top_spent = true;
        debug_assert!(at >= self.engine.now, "time went back");
        self.engine.now = at;
        self.engine.events_handled += 1;
        if self.engine.decisions.is_some() {
            self.engine.log_arrival(idx);
        }
        self.handle(idx);
        if std::mem::take(&mut self.engine.top_spent) {
            self.engine.queue.pop();
        }
        // The notices this event raised (a fault's opening or closing, or a trigger's pause
        // while a process reacted), at its true time.
        self.deliver_notices();
        None
    }

    /// A process with a periodic timer is up or paused: its grid goes on, whether or not a
    /// tick of it is queued.
    fn periodic_keeps_running(&self) -> bool {
        self.engine
            .slots
            .iter()
            .any(|s| s.state != RunState::Down && s.periodic.running())
    }

    /// Applies the changes the engine made to the clock or run state of processes with a
    /// periodic timer (see `sim::periodic::Change`) to their grids, in the order they were
    /// made, at the end of the event that made them (the same true time; a change only arms
    /// timers, so nothing else of the event depends on it): not an event, nothing traced or
    /// counted. A process that crashed since still has its grid told of the crash: it was up
    /// when it happened.
    #[inline(always)]
    fn deliver_notices(&mut self) {
        if !self.engine.notices.is_empty() {
            self.deliver_pending_notices();
        }
    }

    #[inline(never)]
    fn deliver_pending_notices(&mut self) {
        let notices = std::mem::take(&mut self.engine.notices);
        for (p, change) in notices {
            // A fault's event was queued before any tick at its instant: points before it
            // only.
            self.run_skipped(p, false);
            let slot = &mut self.engine.slots[p.index()];
            let (plan, arm) = slot.periodic.change(&slot.clock, change);
            if let Some(at) = arm {
                self.arm_periodic(p, at);
            }
            if plan {
                self.plan_periodic(p);
            }
        }
    }

    /// Runs the points of `p`'s periodic timer skipped up to now (the point at now too if
    /// `inclusive`), stopping at the next armed one.
    fn run_skipped(&mut self, p: ProcId, inclusive: bool) {
        let World { procs, engine } = self;
        let Slot {
            periodic, clock, ..
        } = &mut engine.slots[p.index()];
        if let Some(ticks) = periodic.take_skipped(clock, engine.now, inclusive)
            && procs[p.index()].actor.on_skipped_ticks(&ticks)
        {
            periodic.unsettle();
        }
    }

    /// Arms the next point of `p`'s periodic timer that can matter, from what the process
    /// says is due (after an event of it, or a change to its clock).
    fn plan_periodic(&mut self, p: ProcId) {
        let due = self.procs[p.index()].actor.tick_due();
        let slot = &mut self.engine.slots[p.index()];
        if let Some(at) = slot.periodic.plan(&slot.clock, due) {
            self.arm_periodic(p, at);
        }
    }

    fn arm_periodic(&mut self, p: ProcId, at: SimTime) {
        let slot = &self.engine.slots[p.index()];
        let tag = slot.periodic.tag().expect("a running periodic timer");
        assert!(at >= self.engine.now, "a tick armed in the past");
        self.engine.push_timer(at, p, slot.incarnation, tag);
    }

    /// Before `p` handles an event, unless its periodic timer is quiet (then so is it after
    /// the event, see `Periodic::quiet`): the points the timer skipped up to now.
    #[inline]
    fn periodic_before(&mut self, p: ProcId) -> bool {
        let periodic = &self.engine.slots[p.index()].periodic;
        if periodic.quiet() {
            return false;
        }
        if periodic.behind(self.engine.now) {
            self.run_skipped(p, true);
        }
        true
    }

    /// After `p` handled an event (its timer not quiet before it): the next point that can
    /// matter is armed, unless it is armed (the skipped points ran up to it) or nothing the
    /// last plan read has changed (`Cx::tick_due_changed`).
    #[inline]
    fn periodic_after(&mut self, p: ProcId) {
        let periodic = &self.engine.slots[p.index()].periodic;
        if periodic.may_plan() {
            self.replan_periodic(p);
        } else if cfg!(debug_assertions) && periodic.is_settled() {
            // Checked as a release assertion over every catalogue model's sweep (30 seeds)
            // and the cron, replication, transaction, golden and snapshot tests.
            let due = self.procs[p.index()].actor.tick_due();
            let periodic = &self.engine.slots[p.index()].periodic;
            debug_assert!(
                periodic.nothing_to_plan(due),
                "a settled plan is still settled"
            );
        }
    }

    #[inline(never)]
    fn replan_periodic(&mut self, p: ProcId) {
        let due = self.procs[p.index()].actor.tick_due();
        let slot = &mut self.engine.slots[p.index()];
        if let Some(at) = slot.periodic.plan_after_event(&slot.clock, due) {
            self.arm_periodic(p, at);
        }
    }

    /// A timer of `p` fired, while it is up: a tick of its periodic timer, or its own.
    #[inline(always)]
    fn fire_timer(&mut self, p: ProcId, tag: u64) {
        if self.engine.slots[p.index()].periodic.owns(tag) {
            self.fire_periodic(p, tag);
            return;
        }
        let watched = self.periodic_before(p);
        dispatch!(self, p, |actor, cx| actor.on_timer(cx, tag));
        if watched {
            self.periodic_after(p);
        }
    }

    /// A timer with the tag of `p`'s periodic timer fired: the tick, if the point is still
    /// on the grid, after the points skipped before it; then the next point that matters.
    #[inline(never)]
    fn fire_periodic(&mut self, p: ProcId, tag: u64) {
        let now = self.engine.now;
        let Fired::Tick { parked } = self.engine.slots[p.index()].periodic.fire(now) else {
            return;
        };
        self.run_skipped(p, false);
        self.engine.slots[p.index()].periodic.ticking(parked);
        dispatch!(self, p, |actor, cx| actor.on_timer(cx, tag));
        let slot = &mut self.engine.slots[p.index()];
        slot.periodic.set_cursor(&slot.clock, now);
        self.plan_periodic(p);
    }

    /// A message reaches `to`, which is up: the points its periodic timer skipped first,
    /// the message, then the plan.
    #[inline(always)]
    fn deliver(&mut self, from: ProcId, to: ProcId, msg: Msg) {
        let watched = self.periodic_before(to);
        dispatch!(self, to, |actor, cx| actor.on_message(cx, from, msg));
        if watched {
            self.periodic_after(to);
        }
    }

    /// Handles the event in slab slot `idx`, freeing the slot.
    fn handle(&mut self, idx: u32) {
        self.engine.free.push(idx);
        if let Some(&t) = self.engine.sent_at.get(idx as usize) {
            self.engine.delivering_sent_at = t;
        }
        // The common case first, decided on the message where it lies: a delivery to a
        // process that is up and reachable, in a run without a trace. The message then moves
        // once, from the slab straight into the handler's argument. (A traced run takes the
        // general path below, which records what it hands over.)
        if let Some(Event::Deliver {
            from,
            to,
            to_incarnation,
            ..
        }) = self.engine.events[idx as usize]
        {
            let slot = &self.engine.slots[to.index()];
            if slot.state == RunState::Up
                && slot.incarnation == to_incarnation
                && !self.engine.net.is_blocked(from, to)
                && !self.engine.trace.enabled()
            {
                let Some(Event::Deliver { msg, .. }) = self.engine.events[idx as usize].take()
                else {
                    unreachable!("matched a delivery")
                };
                self.deliver(from, to, msg);
                return;
            }
        }
        // The same for a timer of a process that is up: only its three fields are read.
        if let Some(Event::Timer {
            proc,
            incarnation,
            tag,
        }) = self.engine.events[idx as usize]
        {
            let slot = &self.engine.slots[proc.index()];
            if slot.state == RunState::Up
                && slot.incarnation == incarnation
                && !self.engine.trace.enabled()
            {
                // A timer owns nothing: its slot is emptied without moving it out.
                self.engine.events[idx as usize] = None;
                self.fire_timer(proc, tag);
                return;
            }
        }
        // Matched where it is taken out of the slab: the event is not copied on the way.
        match self.engine.events[idx as usize]
            .take()
            .expect("queued event present")
        {
            Event::Deliver {
                from,
                to,
                to_incarnation,
                msg,
            } => {
                let slot = &mut self.engine.slots[to.index()];
                let reason = if self.engine.net.is_blocked(from, to) {
                    Some(DropReason::Partition)
                } else if slot.state == RunState::Down
                    && slot.host_up
                    && msg.refusable_id().is_some()
                {
                    Some(DropReason::Refused)
                } else if slot.state == RunState::Down || slot.incarnation != to_incarnation {
                    Some(DropReason::Down)
                } else {
                    None
                };
                if let Some(reason) = reason {
                    let refused = msg.refusable_id().filter(|_| reason == DropReason::Refused);
                    self.engine
                        .trace_drop(from, to, msg, reason, self.engine.delivering_sent_at);
                    if let Some(id) = refused {
                        // The kernel of the crashed process's host answers for it.
                        self.engine.send(to, from, Msg::Refused { id });
                    }
                    return;
                }
                if slot.state == RunState::Paused {
                    slot.parked.push((
                        Event::Deliver {
                            from,
                            to,
                            to_incarnation,
                            msg,
                        },
                        self.engine.delivering_sent_at,
                    ));
                    self.engine.trace_entry(to, TraceKind::Parked);
                    return;
                }
                if self.engine.trace.enabled() {
                    self.engine.trace_entry(
                        to,
                        TraceKind::Recv {
                            from,
                            msg: msg.clone(),
                            sent_at: self.engine.delivering_sent_at,
                        },
                    );
                }
                self.deliver(from, to, msg);
            }
            Event::Timer {
                proc,
                incarnation,
                tag,
            } => {
                let slot = &mut self.engine.slots[proc.index()];
                if slot.incarnation != incarnation || slot.state == RunState::Down {
                    return;
                }
                if slot.state == RunState::Paused {
                    slot.parked.push((
                        Event::Timer {
                            proc,
                            incarnation,
                            tag,
                        },
                        self.engine.now,
                    ));
                    return;
                }
                if self.engine.trace.enabled() {
                    self.engine.trace_entry(proc, TraceKind::Timer { tag });
                }
                self.fire_timer(proc, tag);
            }
            Event::Fault { id, close: false } => self.engine.open_fault(id, Some(&self.procs)),
            Event::Fault { id, close: true } => self.close_fault(id),
            Event::Start { proc, incarnation } => {
                let slot = &mut self.engine.slots[proc.index()];
                if slot.incarnation != incarnation || slot.state == RunState::Down {
                    return;
                }
                if slot.state == RunState::Paused {
                    slot.parked
                        .push((Event::Start { proc, incarnation }, self.engine.now));
                    return;
                }
                self.engine.trace_entry(proc, TraceKind::Start);
                dispatch!(self, proc, |actor, cx| actor.on_start(cx));
            }
        }
    }

    /// Closes fault `id` now: undoes what its opening did, and no more.
    fn close_fault(&mut self, id: u32) {
        let now = self.engine.now;
        let st = &self.engine.faults[id as usize];
        let (f, took, incarnation) = (st.fault.clone(), st.took, st.incarnation);
        if !took {
            // Its opening did nothing (a pause of a process that was down, a role nobody was
            // in): neither does its end.
            return;
        }
        let mut text = format!("end: {}", self.engine.describe_kind(&f.kind));
        let subject_name = f
            .subject()
            .map_or_else(String::new, |p| self.engine.slots[p.index()].name.clone());
        match &f.kind {
            FaultKind::Pause(p) => {
                let slot = &mut self.engine.slots[p.index()];
                // A crash since the opening ended this pause with the process.
                if slot.incarnation == incarnation && slot.pauses > 0 {
                    slot.pauses -= 1;
                    if slot.pauses == 0 {
                        slot.state = RunState::Up;
                        // Everything that queued up is handled now, in arrival order.
                        for (ev, sent_at) in std::mem::take(&mut slot.parked) {
                            self.engine.push_sent(now, ev, sent_at);
                        }
                        self.engine.history.push(now, *p, Observation::Resumed);
                        text = format!("resume {subject_name}");
                    } else {
                        text = format!("{text} (still paused by another pause)");
                    }
                }
            }
            FaultKind::Crash { proc, .. } => {
                let slot = &mut self.engine.slots[proc.index()];
                assert!(slot.downs > 0 && slot.state == RunState::Down);
                slot.downs -= 1;
                if slot.downs == 0 {
                    let keep_data = slot.keep_data;
                    slot.state = RunState::Up;
                    text = format!(
                        "restart {subject_name} ({})",
                        if keep_data { "data kept" } else { "empty" }
                    );
                    self.engine.note(*proc, text);
                    self.procs[proc.index()].actor.on_restart(keep_data);
                    self.engine.history.push(
                        now,
                        *proc,
                        Observation::Restarted {
                            with_data: keep_data,
                        },
                    );
                    dispatch!(self, *proc, |actor, cx| actor.on_start(cx));
                    return;
                }
                text = format!("{text} (still down by another crash)");
            }
            FaultKind::ClockStep { .. } => unreachable!("instant faults have no closing"),
            FaultKind::Drift { proc, drift_ppm } => {
                self.engine.slots[proc.index()].drift_windows_ppm -= drift_ppm;
                self.engine.apply_drift(*proc);
            }
            FaultKind::Partition { .. }
            | FaultKind::Isolate(_)
            | FaultKind::LatencySpike { .. }
            | FaultKind::Loss { .. } => self.engine.link_window(&f, false),
        }
        let subject = f.subject().unwrap_or(ProcId(0));
        self.engine.note(subject, text);
    }
}

impl Engine {
    /// Logs the event in slot `idx` as an arrival at its process (`explore`'s offsets), before
    /// it is handled: a delivery (whether it will be dropped, parked or handled), a timer or a
    /// start. Fault events reach no process.
    #[cold]
    fn log_arrival(&mut self, idx: u32) {
        let (proc, peer) = match self.events[idx as usize] {
            Some(Event::Deliver { from, to, .. }) => (to, Some(from)),
            Some(Event::Timer { proc, .. } | Event::Start { proc, .. }) => (proc, None),
            Some(Event::Fault { .. }) | None => return,
        };
        self.decision(DecisionKind::Arrival, proc, peer);
    }

    fn decision(&mut self, kind: DecisionKind, proc: ProcId, peer: Option<ProcId>) {
        let at = self.now;
        if let Some(log) = &mut self.decisions {
            log.push(Decision {
                at,
                kind,
                proc,
                peer,
                believed_until: None,
            });
        }
    }

    fn push(&mut self, at: SimTime, ev: Event) {
        self.push_sent(at, ev, self.now);
    }

    /// `push` for an event sent earlier than now (a message parked at a paused process).
    #[inline]
    fn push_sent(&mut self, at: SimTime, ev: Event, sent_at: SimTime) {
        let idx = self.free_slot();
        self.events[idx as usize] = Some(ev);
        self.enqueue(at, idx, sent_at);
    }

    /// A slab slot to write an event into, empty.
    #[inline(always)]
    fn free_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(i) => {
                // Asserting the slot is free also tells the compiler there is nothing to drop
                // before the write that follows, which spares a copy of the event.
                assert!(self.events[i as usize].is_none(), "free slot in use");
                i
            }
            None => {
                self.events.push(None);
                (self.events.len() - 1) as u32
            }
        }
    }

    /// Queues the event written in slot `idx`, due at `at`.
    #[inline(always)]
    fn enqueue(&mut self, at: SimTime, idx: u32, sent_at: SimTime) {
        if self.trace.mode == TraceMode::Full {
            if self.sent_at.len() <= idx as usize {
                self.sent_at.resize(idx as usize + 1, SimTime::ZERO);
            }
            self.sent_at[idx as usize] = sent_at;
        }
        let key = QueueEntry::new(at, self.seq, idx).0;
        if std::mem::take(&mut self.top_spent) {
            self.queue.replace_top(key);
        } else {
            self.queue.push(key);
        }
        self.seq += 1;
    }

    /// Adds a triggered adversary.
    pub fn add_trigger(&mut self, t: Trigger) {
        self.triggers.push(t);
    }

    /// Schedules a fault (scripted faults, adversaries): its opening at `fault.at` (or now,
    /// if that has passed) and its closing a duration later.
    pub fn schedule(&mut self, fault: Fault) {
        let open_at = fault.at.max(self.now);
        let close_at = fault.end().map(|e| e.max(open_at));
        let id = self.register(fault);
        self.push(open_at, Event::Fault { id, close: false });
        if let Some(t) = close_at {
            self.push(t, Event::Fault { id, close: true });
        }
    }

    /// Schedules a whole schedule before the run: every opening and closing in time order,
    /// ties in the order given (a fault's own opening first), so that faults due at the same
    /// instant apply in the order the model declares them.
    pub fn schedule_all(&mut self, faults: Vec<Fault>) {
        let mut points: Vec<(SimTime, u32, bool)> = Vec::with_capacity(2 * faults.len());
        for f in faults {
            let open_at = f.at.max(self.now);
            let close_at = f.end().map(|e| e.max(open_at));
            let id = self.register(f);
            points.push((open_at, id, false));
            if let Some(t) = close_at {
                points.push((t, id, true));
            }
        }
        // Stable: the declaration order survives among equal times.
        points.sort_by_key(|(t, _, _)| *t);
        for (t, id, close) in points {
            self.push(t, Event::Fault { id, close });
        }
    }

    fn register(&mut self, fault: Fault) -> u32 {
        assert!(
            fault.aim.is_none() || !self.started,
            "a fault aimed at a role is scheduled before the run: its roles are tracked from the start"
        );
        self.tracks_roles |= fault.aim.is_some();
        let id = u32::try_from(self.faults.len()).expect("fewer than 2^32 faults");
        self.faults.push(FaultState {
            fault,
            took: false,
            incarnation: 0,
        });
        id
    }

    /// Opens a fault now (a pause a trigger puts before a send, while the process reacts)
    /// and schedules its closing.
    fn open_now(&mut self, mut fault: Fault) {
        assert!(
            fault.aim.is_none(),
            "a fault opened mid-reaction aims at no role"
        );
        fault.at = self.now;
        let close_at = fault.end();
        let id = self.register(fault);
        self.open_fault(id, None);
        if let Some(t) = close_at {
            self.push(t, Event::Fault { id, close: true });
        }
    }

    fn trace_entry(&mut self, proc: ProcId, kind: TraceKind) {
        if self.trace.enabled() {
            let wall_ms = self.slots[proc.index()].clock.wall_ms(self.now);
            self.trace.record(TraceEntry {
                at: self.now,
                proc,
                wall_ms,
                kind,
            });
        }
    }

    /// Arms a timer of `p`, given in its local monotonic time, as an event at true time.
    #[inline]
    fn set_timer(&mut self, p: ProcId, after_ns: u64, tag: u64) {
        let slot = &self.slots[p.index()];
        let true_ns = slot.clock.true_ns_for_local(self.now, after_ns);
        let incarnation = slot.incarnation;
        self.push_timer(self.now.plus_ns(true_ns), p, incarnation, tag);
    }

    /// Queues a timer, written straight into its slab slot, like a message: built elsewhere
    /// and passed on (`push`), the event would be copied whole (its size is a message's)
    /// twice.
    #[inline(always)]
    fn push_timer(&mut self, at: SimTime, proc: ProcId, incarnation: u32, tag: u64) {
        let idx = self.free_slot();
        self.events[idx as usize] = Some(Event::Timer {
            proc,
            incarnation,
            tag,
        });
        self.enqueue(at, idx, self.now);
    }

    /// Notes a change to the clock or run state of a process that is not down, for the
    /// world to tell it (`World::deliver_notices`) once the change is done.
    fn notify_clock(&mut self, p: ProcId, change: Change) {
        let slot = &self.slots[p.index()];
        if slot.state != RunState::Down && slot.periodic.running() {
            self.notices.push((p, change));
        }
    }

    /// Consults the `PauseBeforeSend` triggers for a message `p` is about to send; if one
    /// fires, pauses `p` now and schedules its resume, and returns the resume time.
    fn pause_before_send(&mut self, p: ProcId, msg: &Msg) -> Option<SimTime> {
        let pause_ns = self
            .triggers
            .iter_mut()
            .find_map(|t| t.react_send(p, msg))?;
        let until = self.now.plus_ns(pause_ns);
        self.open_now(Fault::new(self.now, Some(pause_ns), FaultKind::Pause(p)));
        // A pause that did not take (the process was already paused by a longer one) still
        // holds the message at least until its own end.
        Some(until)
    }

    fn trace_drop(
        &mut self,
        from: ProcId,
        to: ProcId,
        msg: Msg,
        reason: DropReason,
        sent_at: SimTime,
    ) {
        self.trace_entry(
            to,
            TraceKind::Dropped {
                from,
                msg,
                reason,
                sent_at,
            },
        );
    }

    #[inline]
    fn send(&mut self, from: ProcId, to: ProcId, msg: Msg) {
        self.send_at(from, to, msg, self.now);
    }

    /// Sends a message that leaves `from` at `leave` (now, or the end of a pause that held
    /// it); links are consulted as they are now.
    #[inline]
    fn send_at(&mut self, from: ProcId, to: ProcId, msg: Msg, leave: SimTime) {
        assert!(
            to.index() < self.slots.len(),
            "send to unknown process {to:?}"
        );
        match self.net.route(leave, from, to) {
            Ok(at) => {
                let to_incarnation = self.slots[to.index()].incarnation;
                // Written straight into its slab slot: the message is copied once, from the
                // sender's hands to where it waits.
                let idx = self.free_slot();
                // The event is written with a stand-in message, and the message then moved
                // into it where it lies: built whole and then stored, the event would be
                // assembled on the stack first, a copy more of the message.
                let slot = self.events[idx as usize].insert(Event::Deliver {
                    from,
                    to,
                    to_incarnation,
                    msg: Msg::Refused { id: 0 },
                });
                if let Event::Deliver { msg: m, .. } = slot {
                    *m = msg;
                }
                self.enqueue(at, idx, leave);
            }
            Err(reason) => self.trace_drop(from, to, msg, reason, leave),
        }
    }

    /// Records an observation, mapping a client's believed validity to true time.
    fn observe(&mut self, p: ProcId, mut obs: Observation) {
        match &mut obs {
            Observation::Acquired {
                validity_ns: Some(v),
                believed_until,
                ..
            }
            | Observation::Extended {
                validity_ns: Some(v),
                believed_until,
                ..
            } => {
                let true_ns = self.slots[p.index()].clock.true_ns_for_local(self.now, *v);
                *believed_until = Some(self.now.plus_ns(true_ns));
            }
            _ => {}
        }
        if self.decisions.is_some() {
            match &obs {
                Observation::Acquired { believed_until, .. } => {
                    let until = *believed_until;
                    self.decision(DecisionKind::Acquired, p, None);
                    if let Some(d) = self.decisions.as_mut().and_then(|l| l.last_mut()) {
                        d.believed_until = until;
                    }
                }
                // The actors are lent out while one reacts: whether `by` is a client (not a
                // master streaming to its replica) is for the reader of the log to tell.
                Observation::KeyWritten { by: Some(c), .. } => {
                    self.decision(DecisionKind::Granted, p, Some(*c));
                }
                _ => {}
            }
        }
        // Roles are tracked only for a world with a fault aimed at one: off the hot path
        // otherwise.
        if self.tracks_roles {
            self.track_roles(p, &obs);
        }
        if !self.triggers.is_empty() {
            let now = self.now;
            let mut faults = Vec::new();

            for t in &mut self.triggers {
                faults.extend(t.react(now, p, &obs));
            }
            for f in faults {
                self.schedule(f);
            }
        }
        self.history.push(self.now, p, obs);
    }

    /// Opens fault `id` now.
    fn open_fault(&mut self, id: u32, procs: Option<&[Proc]>) {
        let now = self.now;
        let mut f = self.faults[id as usize].fault.clone();
        f.at = now;
        if let Some(aim) = f.aim {
            match self.resolve(aim, procs) {
                Some(p) => {
                    f.kind.retarget(p);
                    self.faults[id as usize].fault.kind = f.kind.clone();
                }
                None => {
                    let (role, why) = match aim {
                        Aim::Holder => ("@holder", "nobody holds a lock"),
                        Aim::Master => ("@master", "no master is up"),
                    };
                    let what = f.kind.describe(&|_| role.to_string());
                    self.note(ProcId(0), format!("{what} not applied: {why}"));
                    return;
                }
            }
        }
        let text = self.describe_fault(&f);
        self.note_fault(&f, text);
        let mut took = true;
        match &f.kind {
            FaultKind::Pause(p) => {
                let slot = &mut self.slots[p.index()];
                if slot.state == RunState::Down {
                    took = false;
                } else {
                    slot.pauses += 1;
                    self.faults[id as usize].incarnation = slot.incarnation;
                    if slot.state == RunState::Up {
                        slot.state = RunState::Paused;
                        self.history.push(now, *p, Observation::Paused);
                        self.notify_clock(*p, Change::Paused);
                    }
                }
            }
            FaultKind::Crash {
                proc,
                keep_data,
                host_up,
            } => {
                let mut reset = false;
                self.notify_clock(*proc, Change::Crashing);
                let slot = &mut self.slots[proc.index()];
                if slot.state != RunState::Down {
                    slot.state = RunState::Down;
                    slot.incarnation += 1;
                    slot.parked.clear();
                    slot.pauses = 0;
                    slot.keep_data = true;
                    slot.host_up = true;
                    self.history.push(now, *proc, Observation::Crashed);
                    self.holders.retain(|(q, _)| q != proc);
                    reset = *host_up
                        && matches!(
                            self.kinds[proc.index()],
                            ProcKind::Redis | ProcKind::ConsensusService
                        );
                }
                let slot = &mut self.slots[proc.index()];
                slot.downs += 1;
                slot.keep_data &= *keep_data;
                slot.host_up &= *host_up;
                if reset {
                    self.reset_connections(*proc);
                }
            }
            FaultKind::ClockStep { proc, delta_ms } => {
                self.slots[proc.index()].clock.add_step(now, *delta_ms);
                let fact = Fact::ClockStepped {
                    delta_ms: *delta_ms,
                };
                self.history.push(now, *proc, Observation::Fact(fact));
                self.notify_clock(*proc, Change::Stepped);
            }
            FaultKind::Drift { proc, drift_ppm } => {
                let slot = &mut self.slots[proc.index()];
                if f.duration_ns.is_some() {
                    slot.drift_windows_ppm += drift_ppm;
                } else {
                    slot.drift_base_ppm = *drift_ppm;
                }
                self.apply_drift(*proc);
            }
            FaultKind::Partition { .. }
            | FaultKind::Isolate(_)
            | FaultKind::LatencySpike { .. }
            | FaultKind::Loss { .. } => self.link_window(&f, true),
        }
        self.faults[id as usize].took = took;
        self.applied_faults.push(f);
    }

    /// A server process (a Redis node, the consensus service) died on a host that stays up:
    /// its kernel closes its connections at once, with a reset (RST) to each peer, one link
    /// latency later (`Msg::Refused { id: 0 }`). A sentinel reconnects on its next tick; a
    /// client with a request in flight on the connection — sent, or parked at the server
    /// like a blocked WAIT — has it fail at once instead of at its timeout (Redisson is the
    /// exception its source makes, `client::redisson`). Every sentinel and client is told,
    /// as the engine does not track who holds a connection; a client with nothing in flight
    /// to that process ignores it, and learns of the death on its next send, by a refusal.
    /// A crash of the whole host (`host: down`) resets nothing: nobody is there to send one.
    fn reset_connections(&mut self, p: ProcId) {
        let server = self.kinds[p.index()];
        for i in 0..self.kinds.len() {
            let told = match self.kinds[i] {
                ProcKind::Sentinel => server == ProcKind::Redis,
                ProcKind::Client => true,
                ProcKind::Redis | ProcKind::ConsensusService | ProcKind::Other => false,
            };
            if told && i != p.index() {
                self.send(p, ProcId(i as u32), Msg::Refused { id: 0 });
            }
        }
    }

    /// Who holds and who was promoted, as observations arrive (for `@holder` / `@master`).
    fn track_roles(&mut self, p: ProcId, obs: &Observation) {
        match obs {
            Observation::Acquired { lock, .. } => self.holders.push((p, *lock)),
            Observation::Released { lock, .. } | Observation::Lost { lock, .. } => {
                if let Some(i) = self.holders.iter().position(|h| *h == (p, *lock)) {
                    self.holders.remove(i);
                }
            }
            Observation::Fact(crate::history::Fact::Promoted) => {
                self.promoted_at[p.index()] = self.now;
            }
            _ => {}
        }
    }

    /// The process in a role now (see `Aim`).
    /// `procs` is given where the fault opens between events (a queued opening); a fault
    /// opened while a process reacts (a trigger's pause) aims at no role.
    fn resolve(&self, aim: Aim, procs: Option<&[Proc]>) -> Option<ProcId> {
        match aim {
            Aim::Holder => self.holders.last().map(|(p, _)| *p),
            Aim::Master => (0..self.slots.len())
                .filter(|&i| {
                    self.slots[i].state != RunState::Down
                        && procs.expect("a role is resolved between events")[i]
                            .actor
                            .as_redis()
                            .is_some_and(|r| !r.node.is_replica())
                })
                // The most recently promoted; a node master from the start counts as promoted
                // at 0, and among those the first declared.
                .max_by_key(|&i| (self.promoted_at[i], std::cmp::Reverse(i)))
                .map(|i| ProcId(i as u32)),
        }
    }

    fn note_fault(&mut self, f: &Fault, text: String) {
        // A fault with no subject (empty lists) is noted under the first process.
        self.note(f.subject().unwrap_or(ProcId(0)), text);
    }

    /// A fault's opening or closing, in the trace and the history.
    fn note(&mut self, subject: ProcId, text: String) {
        self.trace_entry(subject, TraceKind::Fault(text.clone()));
        self.history
            .push(self.now, subject, Observation::Fault { what: text });
    }

    /// Opens or closes a fault on links (partition, isolation, spike, loss): the one place
    /// both directions of a window go through, so closing undoes exactly what opening did.
    /// Cuts are recorded as facts for the hazard detectors (an isolation only where it starts).
    fn link_window(&mut self, f: &Fault, open: bool) {
        let now = self.now;
        match &f.kind {
            FaultKind::Partition {
                from,
                to,
                both_ways,
            } => {
                self.cut_links(from, to, *both_ways, open);
                let fact = Fact::Links {
                    from: from.clone(),
                    to: to.clone(),
                    blocked: open,
                };
                let subject = f.subject().unwrap_or(ProcId(0));
                self.history.push(now, subject, Observation::Fact(fact));
            }
            FaultKind::Isolate(p) => {
                self.isolate(*p, open);
                if open {
                    self.history
                        .push(now, *p, Observation::Fact(Fact::Isolated));
                }
            }
            FaultKind::LatencySpike { from, to, extra_ns } => {
                for &a in from {
                    for &b in to {
                        self.net.spike(a, b, *extra_ns, open);
                    }
                }
            }
            FaultKind::Loss { from, to, loss } => {
                for &a in from {
                    for &b in to {
                        self.net.loss_window(a, b, *loss, open);
                    }
                }
            }
            _ => unreachable!("not a link fault: {:?}", f.kind),
        }
    }

    fn cut_links(&mut self, from: &[ProcId], to: &[ProcId], both_ways: bool, open: bool) {
        for &a in from {
            for &b in to {
                if a != b {
                    self.net.cut(a, b, open);
                    if both_ways {
                        self.net.cut(b, a, open);
                    }
                }
            }
        }
    }

    fn isolate(&mut self, p: ProcId, open: bool) {
        for i in 0..self.slots.len() as u32 {
            let q = ProcId(i);
            if q != p {
                self.net.cut(p, q, open);
                self.net.cut(q, p, open);
            }
        }
    }

    /// One line of plain text for a fault, naming processes as the model does;
    /// shared by the trace and the CLI so a fault reads the same everywhere.
    pub fn describe_fault(&self, f: &Fault) -> String {
        f.describe(&|p: ProcId| self.slots[p.index()].name.clone())
    }

    fn describe_kind(&self, k: &FaultKind) -> String {
        k.describe(&|p: ProcId| self.slots[p.index()].name.clone())
    }
    /// Sets `p`'s clock rate to its base plus the open windows, clamped to what a clock
    /// takes, and records the change as a fact.
    fn apply_drift(&mut self, p: ProcId) {
        let now = self.now;
        let slot = &mut self.slots[p.index()];
        let limit = crate::clock::DRIFT_PPM_LIMIT;
        let ppm = (slot.drift_base_ppm + slot.drift_windows_ppm).clamp(-limit, limit);
        if ppm != slot.clock.drift_ppm(now) {
            slot.clock.set_drift(now, ppm);
            let fact = Fact::DriftChanged { drift_ppm: ppm };
            self.history.push(now, p, Observation::Fact(fact));
            self.notify_clock(p, Change::RateChanged);
        }
    }
}

/// Routes the requests of the process that is reacting, in the order it makes them.
struct Router<'w> {
    engine: &'w mut Engine,
    from: ProcId,
    /// Set once a `PauseBeforeSend` trigger paused the process before one of its messages:
    /// that message and the rest of this reaction's sends leave at the resume.
    held_until: Option<SimTime>,
}

impl OutputSink for Router<'_> {
    fn send(&mut self, to: ProcId, msg: Msg) {
        if self.engine.decisions.is_some() {
            let kind = if SendKind::Del.matches(&msg) {
                Some(DecisionKind::BeforeDel)
            } else if SendKind::ResourceWrite.matches(&msg) {
                Some(DecisionKind::BeforeResourceWrite)
            } else {
                None
            };
            if let Some(k) = kind {
                self.engine.decision(k, self.from, Some(to));
            }
        }
        if self.held_until.is_none() && !self.engine.triggers.is_empty() {
            self.held_until = self.engine.pause_before_send(self.from, &msg);
        }
        match self.held_until {
            Some(t) => self.engine.send_at(self.from, to, msg, t),
            None => self.engine.send(self.from, to, msg),
        }
    }
    fn set_timer(&mut self, after_ns: u64, tag: u64) {
        self.engine.set_timer(self.from, after_ns, tag);
    }
    fn observe(&mut self, obs: Observation) {
        self.engine.observe(self.from, obs);
    }
    fn tick_due_changed(&mut self) {
        self.engine.slots[self.from.index()].periodic.unsettle();
    }
    fn start_periodic(&mut self, first_ns: u64, period_ns: u64, tag: u64) -> bool {
        let now = self.engine.now;
        let slot = &mut self.engine.slots[self.from.index()];
        let at = slot
            .periodic
            .start(&slot.clock, now, first_ns, period_ns, tag);
        let incarnation = slot.incarnation;
        self.engine.push_timer(at, self.from, incarnation, tag);
        true
    }
}
