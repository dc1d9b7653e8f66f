//! The event loop: one queue ordered by (true time, sequence number), processes as sans-IO
//! state machines, the network, per-node clocks, faults, history and trace.

use crate::clock::NodeClock;
use crate::history::{History, Observation};
use crate::net::{DropReason, LinkSpec, Network};
use crate::process::{Cx, OutputSink, Process};
use crate::proto::Msg;
use crate::rng::{Prng, Seed};
use crate::sim::actor::Actor;
use crate::sim::adversary::Trigger;
use crate::sim::fault::FaultAction;
use crate::sim::queue::EventQueue;
use crate::sim::trace::{Trace, TraceEntry, TraceKind, TraceMode};
use crate::time::{ProcId, SimTime};

/// Bounds of a run. Hitting one ends the run with that verdict; nothing loops forever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_time: SimTime,
    pub max_events: u64,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// The run reached `max_time` (the normal end of a timed model).
    TimeLimit,
    /// The event budget ran out before `max_time`: the world produced events faster than the
    /// model allows (a livelock, or a budget set too low).
    EventLimit,
    /// No event was left to handle.
    Quiescent,
    /// The history outgrew its memory budget (`history::HISTORY_BUDGET_BYTES`) before
    /// `max_time`: the run stopped between two events, like `EventLimit` a budget stop whose
    /// verdict covers only the run so far (inconclusive where it reports no violation).
    HistoryLimit,
}

impl RunEnd {
    /// A run cut short by one of its budgets (events, history memory) rather than ended by
    /// its duration or by running out of work.
    pub fn is_budget_stop(self) -> bool {
        match self {
            RunEnd::EventLimit | RunEnd::HistoryLimit => true,
            RunEnd::TimeLimit | RunEnd::Quiescent => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Up,
    Paused,
    Down,
}

/// What a process's reaction runs on: its state and its own RNG stream. Kept apart from the
/// rest of its slot so that the world can route the reaction's requests while it runs.
struct Proc {
    actor: Actor,
    rng: Prng,
}

struct Slot {
    name: String,
    clock: NodeClock,
    state: RunState,
    /// Bumped by every crash: timers and messages addressed to an older incarnation are void.
    incarnation: u32,
    /// Events that reached the process while paused, in arrival order, with their send times.
    parked: Vec<(Event, SimTime)>,
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
    Fault(FaultAction),
}

/// Queue entry, one `u128`: `time << 64 | seq << 24 | slot`. Ordering by it is ordering by
/// (time, seq) — the loop's total order, since `seq` is unique — and the slot index rides in
/// the low bits, so the heap moves and compares 16 bytes per entry.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct QueueEntry(u128);

/// Bits of the slot index; the slab never holds more than 2^24 pending events.
const SLOT_BITS: u32 = 24;
/// Bits of the sequence number: 2^40 events is far beyond any `max_events`.
const SEQ_BITS: u32 = 40;

impl QueueEntry {
    #[inline]
    fn new(at: SimTime, seq: u64, idx: u32) -> QueueEntry {
        assert!(
            seq < 1 << SEQ_BITS && idx < 1 << SLOT_BITS,
            "event queue beyond its bounds"
        );
        QueueEntry((u128::from(at.0) << 64) | (u128::from(seq) << SLOT_BITS) | u128::from(idx))
    }
    fn time(self) -> SimTime {
        SimTime((self.0 >> 64) as u64)
    }
    fn idx(self) -> u32 {
        (self.0 as u32) & ((1 << SLOT_BITS) - 1)
    }
}

/// Hands one input to process `$p` of world `$world`: `$call` runs with `$actor` and `$cx`
/// bound, and the process's requests are routed into the world as it makes them. A macro
/// rather than a method taking a closure: a message captured by a closure is copied once
/// more, ~1 % of a run.
macro_rules! dispatch {
    ($world:expr, $p:expr, |$actor:ident, $cx:ident| $call:expr) => {{
        let world: &mut World = $world;
        let p: ProcId = $p;
        let clock = &world.slots[p.index()].clock;
        let (wall_ms, mono_ns) = (clock.wall_ms(world.now), clock.mono_ns(world.now));
        // The actors are lent out of the world while this one reacts, so that the router can
        // borrow the rest of the world mutably; routing never reaches for an actor.
        let mut procs = std::mem::take(&mut world.procs);
        let Proc { actor, rng } = &mut procs[p.index()];
        let mut router = Router {
            world,
            from: p,
            held_until: None,
        };
        let $cx = &mut Cx::with_sink(p, wall_ms, mono_ns, rng, &mut router);
        let $actor = actor;
        $call;
        // Put the actors back. What comes out is the empty Vec that `take` left: forgetting
        // it skips a drop call per event and leaks nothing.
        let lent = std::mem::replace(&mut world.procs, procs);
        assert_eq!(lent.capacity(), 0, "the lent-out actors came back");
        std::mem::forget(lent);
    }};
}

/// A world ready to run: processes, clocks, network, queue.
pub struct World {
    seed: Seed,
    // Indexed like `slots`; lent out (empty) while a process reacts, see `dispatch`.
    procs: Vec<Proc>,
    slots: Vec<Slot>,
    // Heap entries point into `events` (a slab) so that sifting moves a key and an index, not
    // a message. The key packs (time, seq) into one u128: one comparison per sift step.
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
    /// Every fault applied, in order: the realised schedule (scripted, random, swarm and
    /// triggered alike), which minimisation turns into a scripted model.
    pub applied_faults: Vec<(SimTime, FaultAction)>,
    events_handled: u64,
    /// Set while the event being handled still sits at the top of the queue: the first event
    /// it schedules takes its place, one sift instead of a pop and a push.
    top_spent: bool,
    started: bool,
}

/// A process to add to a world.
pub struct ProcSpec {
    pub name: String,
    pub actor: Actor,
    pub clock: NodeClock,
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
        let (procs, slots) = procs
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let proc = Proc {
                    actor: p.actor,
                    rng: seed.stream("proc", i as u64),
                };
                let slot = Slot {
                    name: p.name,
                    clock: p.clock,
                    state: RunState::Up,
                    incarnation: 0,
                    parked: Vec::new(),
                };
                (proc, slot)
            })
            .unzip();
        World {
            seed,
            procs,
            slots,
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
            applied_faults: Vec::new(),
            events_handled: 0,
            top_spent: false,
            started: false,
        }
    }

    pub fn seed(&self) -> Seed {
        self.seed
    }
    pub fn now(&self) -> SimTime {
        self.now
    }
    pub fn events_handled(&self) -> u64 {
        self.events_handled
    }
    pub fn proc_count(&self) -> usize {
        self.slots.len()
    }
    pub fn name(&self, p: ProcId) -> &str {
        &self.slots[p.index()].name
    }
    pub fn names(&self) -> Vec<String> {
        self.slots.iter().map(|s| s.name.clone()).collect()
    }
    pub fn clock(&self, p: ProcId) -> &NodeClock {
        &self.slots[p.index()].clock
    }
    pub fn state(&self, p: ProcId) -> RunState {
        self.slots[p.index()].state
    }
    pub fn actor(&self, p: ProcId) -> &Actor {
        &self.procs[p.index()].actor
    }
    pub fn actor_mut(&mut self, p: ProcId) -> &mut Actor {
        &mut self.procs[p.index()].actor
    }

    fn push(&mut self, at: SimTime, ev: Event) {
        self.push_sent(at, ev, self.now);
    }

    /// `push` for an event sent earlier than now (a message parked at a paused process).
    #[inline]
    fn push_sent(&mut self, at: SimTime, ev: Event, sent_at: SimTime) {
        let idx = match self.free.pop() {
            Some(i) => {
                // Asserting the slot is free also tells the compiler there is nothing to drop
                // before the write, which spares a copy of the event.
                let slot = &mut self.events[i as usize];
                assert!(slot.is_none(), "free slot in use");
                *slot = Some(ev);
                i
            }
            None => {
                self.events.push(Some(ev));
                (self.events.len() - 1) as u32
            }
        };
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

    /// Schedules a fault at true time `at` (scripted faults, adversaries).
    pub fn schedule_fault(&mut self, at: SimTime, fault: FaultAction) {
        self.push(at.max(self.now), Event::Fault(fault));
    }

    /// Starts every process (at true time 0). Idempotent.
    pub fn start(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        for i in 0..self.slots.len() {
            let p = ProcId(i as u32);
            self.trace_entry(p, TraceKind::Start);
            dispatch!(self, p, |actor, cx| actor.on_start(cx));
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
            match self.queue.peek() {
                Some(e) if QueueEntry(e).time() <= until => {}
                _ => {
                    self.now = self.now.max(until.min(self.limits.max_time));
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
        let Some(entry) = self.queue.peek().map(QueueEntry) else {
            return Some(RunEnd::Quiescent);
        };
        let (at, idx) = (entry.time(), entry.idx());
        if at > self.limits.max_time {
            self.now = self.limits.max_time;
            return Some(RunEnd::TimeLimit);
        }
        if self.events_handled >= self.limits.max_events {
            return Some(RunEnd::EventLimit);
        }
        if self.history.over_budget() {
            return Some(RunEnd::HistoryLimit);
        }
        // The event's key stays at the top of the queue until its handler schedules an event
        // in its place, or is popped after the handler.
        self.top_spent = true;
        debug_assert!(at >= self.now, "time went back");
        self.now = at;
        self.events_handled += 1;
        self.handle(idx);
        if std::mem::take(&mut self.top_spent) {
            self.queue.pop();
        }
        None
    }

    /// Handles the event in slab slot `idx`, freeing the slot.
    fn handle(&mut self, idx: u32) {
        self.free.push(idx);
        if let Some(&t) = self.sent_at.get(idx as usize) {
            self.delivering_sent_at = t;
        }
        // Matched where it is taken out of the slab: the event is not copied on the way.
        match self.events[idx as usize]
            .take()
            .expect("queued event present")
        {
            Event::Deliver {
                from,
                to,
                to_incarnation,
                msg,
            } => {
                let slot = &mut self.slots[to.index()];
                let reason = if self.net.is_blocked(from, to) {
                    Some(DropReason::Partition)
                } else if slot.state == RunState::Down || slot.incarnation != to_incarnation {
                    Some(DropReason::Down)
                } else {
                    None
                };
                if let Some(reason) = reason {
                    self.trace_drop(from, to, msg, reason, self.delivering_sent_at);
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
                        self.delivering_sent_at,
                    ));
                    self.trace_entry(to, TraceKind::Parked);
                    return;
                }
                if self.trace.enabled() {
                    self.trace_entry(
                        to,
                        TraceKind::Recv {
                            from,
                            msg: msg.clone(),
                            sent_at: self.delivering_sent_at,
                        },
                    );
                }
                dispatch!(self, to, |actor, cx| actor.on_message(cx, from, msg));
            }
            Event::Timer {
                proc,
                incarnation,
                tag,
            } => {
                let slot = &mut self.slots[proc.index()];
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
                        self.now,
                    ));
                    return;
                }
                if self.trace.enabled() {
                    self.trace_entry(proc, TraceKind::Timer { tag });
                }
                dispatch!(self, proc, |actor, cx| actor.on_timer(cx, tag));
            }
            Event::Fault(f) => self.apply_fault(f),
        }
    }

    /// Arms a timer of `p`, given in its local monotonic time, as an event at true time.
    #[inline]
    fn set_timer(&mut self, p: ProcId, after_ns: u64, tag: u64) {
        let slot = &self.slots[p.index()];
        let true_ns = slot.clock.true_ns_for_local(self.now, after_ns);
        let incarnation = slot.incarnation;
        self.push(
            self.now.plus_ns(true_ns),
            Event::Timer {
                proc: p,
                incarnation,
                tag,
            },
        );
    }

    /// Consults the `PauseBeforeSend` triggers for a message `p` is about to send; if one
    /// fires, pauses `p` now and schedules its resume, and returns the resume time.
    fn pause_before_send(&mut self, p: ProcId, msg: &Msg) -> Option<SimTime> {
        let pause_ns = self
            .triggers
            .iter_mut()
            .find_map(|t| t.react_send(p, msg))?;
        let until = self.now.plus_ns(pause_ns);
        self.apply_fault(FaultAction::Pause(p));
        self.schedule_fault(until, FaultAction::Resume(p));
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
                self.push_sent(
                    at,
                    Event::Deliver {
                        from,
                        to,
                        to_incarnation,
                        msg,
                    },
                    leave,
                );
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
        if !self.triggers.is_empty() {
            let now = self.now;
            let mut faults = Vec::new();
            for t in &mut self.triggers {
                faults.extend(t.react(now, p, &obs));
            }
            for (at, f) in faults {
                self.schedule_fault(at, f);
            }
        }
        self.history.push(self.now, p, obs);
    }

    /// Applies a fault now.
    pub fn apply_fault(&mut self, f: FaultAction) {
        self.applied_faults.push((self.now, f.clone()));
        let text = self.describe_fault(&f);
        let subject = fault_subject(&f);
        self.trace_entry(subject, TraceKind::Fault(text.clone()));
        self.history
            .push(self.now, subject, Observation::Fault { what: text });
        let now = self.now;
        match f {
            FaultAction::Pause(p) => {
                let slot = &mut self.slots[p.index()];
                if slot.state == RunState::Up {
                    slot.state = RunState::Paused;
                    self.history.push(now, p, Observation::Paused);
                }
            }
            FaultAction::Resume(p) => {
                let slot = &mut self.slots[p.index()];
                if slot.state == RunState::Paused {
                    slot.state = RunState::Up;
                    // Everything that queued up is handled now, in arrival order.
                    for (ev, sent_at) in std::mem::take(&mut slot.parked) {
                        self.push_sent(now, ev, sent_at);
                    }
                    self.history.push(now, p, Observation::Resumed);
                }
            }
            FaultAction::Crash(p) => {
                let slot = &mut self.slots[p.index()];
                if slot.state != RunState::Down {
                    slot.state = RunState::Down;
                    slot.incarnation += 1;
                    slot.parked.clear();
                    self.history.push(now, p, Observation::Crashed);
                }
            }
            FaultAction::Restart { proc, keep_data } => {
                let slot = &mut self.slots[proc.index()];
                if slot.state == RunState::Down {
                    slot.state = RunState::Up;
                    self.procs[proc.index()].actor.on_restart(keep_data);
                    self.history.push(
                        now,
                        proc,
                        Observation::Restarted {
                            with_data: keep_data,
                        },
                    );
                    dispatch!(self, proc, |actor, cx| actor.on_start(cx));
                }
            }
            FaultAction::ClockStep { proc, delta_ms } => {
                self.slots[proc.index()].clock.add_step(now, delta_ms);
            }
            FaultAction::Drift { proc, drift_ppm } => {
                self.slots[proc.index()].clock.set_drift(now, drift_ppm);
            }
            FaultAction::Partition { from, to, blocked } => {
                for &a in &from {
                    for &b in &to {
                        if a != b {
                            self.net.set_blocked(a, b, blocked);
                        }
                    }
                }
            }
            FaultAction::LatencySpike { from, to, extra_ns } => {
                for &a in &from {
                    for &b in &to {
                        self.net.set_extra_latency(a, b, extra_ns);
                    }
                }
            }
            FaultAction::Loss { from, to, loss } => {
                for &a in &from {
                    for &b in &to {
                        self.net.set_loss(a, b, loss);
                    }
                }
            }
        }
    }

    /// One line of plain text for a fault, naming processes as the model does;
    /// shared by the trace and the CLI so a fault reads the same everywhere.
    pub fn describe_fault(&self, f: &FaultAction) -> String {
        let n = |p: &ProcId| self.slots[p.index()].name.clone();
        let list = |v: &[ProcId]| v.iter().map(n).collect::<Vec<_>>().join(",");
        match f {
            FaultAction::Pause(p) => format!("pause {}", n(p)),
            FaultAction::Resume(p) => format!("resume {}", n(p)),
            FaultAction::Crash(p) => format!("crash {}", n(p)),
            FaultAction::Restart { proc, keep_data } => {
                format!(
                    "restart {} ({})",
                    n(proc),
                    if *keep_data { "data kept" } else { "empty" }
                )
            }
            FaultAction::ClockStep { proc, delta_ms } => {
                format!("clock step {} {delta_ms:+}ms", n(proc))
            }
            FaultAction::Drift { proc, drift_ppm } => format!("drift {} {drift_ppm:+}ppm", n(proc)),
            FaultAction::Partition {
                from,
                to,
                blocked: true,
            } => {
                format!("partition [{}] -x-> [{}]", list(from), list(to))
            }
            FaultAction::Partition {
                from,
                to,
                blocked: false,
            } => {
                format!("heal [{}] --> [{}]", list(from), list(to))
            }
            FaultAction::LatencySpike { from, to, extra_ns } => {
                format!(
                    "latency +{} [{}] -> [{}]",
                    crate::time::fmt_duration_ns(*extra_ns),
                    list(from),
                    list(to)
                )
            }
            FaultAction::Loss { from, to, loss } => {
                format!(
                    "loss {}/{} [{}] -> [{}]",
                    loss.num(),
                    loss.den(),
                    list(from),
                    list(to)
                )
            }
        }
    }
}

/// Routes the requests of the process that is reacting, in the order it makes them.
struct Router<'w> {
    world: &'w mut World,
    from: ProcId,
    /// Set once a `PauseBeforeSend` trigger paused the process before one of its messages:
    /// that message and the rest of this reaction's sends leave at the resume.
    held_until: Option<SimTime>,
}

impl OutputSink for Router<'_> {
    fn send(&mut self, to: ProcId, msg: Msg) {
        if self.held_until.is_none() && !self.world.triggers.is_empty() {
            self.held_until = self.world.pause_before_send(self.from, &msg);
        }
        match self.held_until {
            Some(t) => self.world.send_at(self.from, to, msg, t),
            None => self.world.send(self.from, to, msg),
        }
    }
    fn set_timer(&mut self, after_ns: u64, tag: u64) {
        self.world.set_timer(self.from, after_ns, tag);
    }
    fn observe(&mut self, obs: Observation) {
        self.world.observe(self.from, obs);
    }
}

fn fault_subject(f: &FaultAction) -> ProcId {
    match f {
        FaultAction::Pause(p) | FaultAction::Resume(p) | FaultAction::Crash(p) => *p,
        FaultAction::Restart { proc, .. }
        | FaultAction::ClockStep { proc, .. }
        | FaultAction::Drift { proc, .. } => *proc,
        FaultAction::Partition { from, .. }
        | FaultAction::LatencySpike { from, .. }
        | FaultAction::Loss { from, .. } => from.first().copied().unwrap_or(ProcId(0)),
    }
}

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
}
