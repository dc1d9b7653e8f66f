//! The closed fault vocabulary, in one shape: a fault is *what* (`FaultKind`), *when* (`at`)
//! and *for how long* (`duration_ns`). Scripted, random, swarm, triggered and minimised faults
//! are all `Fault`s; the loop opens each at `at` and closes it `duration_ns` later.
//!
//! Windows stack as they do in life (docs/model-format.md, "How faults combine"):
//! - a process runs while no pause window covers it, and is up while no crash window does
//!   (a crash ends every pause: the restarted process is a new one);
//! - a directed link carries while no cut covers it;
//! - latency spikes on a link add up; loss windows drop independently (a message survives
//!   a link only if it survives its base loss and every open loss window);
//! - drift windows add to the node's drift rate; a drift without a duration sets the rate
//!   the windows add to.

use crate::rng::Ratio;
use crate::time::{NS_PER_US, ProcId, SimTime, fmt_duration_ns, fmt_duration_us};

/// One fault: what happens, when it starts, and how long it lasts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// True time the fault starts.
    pub at: SimTime,
    /// How long its window stays open; `None`: until the end of the run (a crash with no
    /// restart, a cut never healed) or an instant fault (a clock step).
    pub duration_ns: Option<u64>,
    pub kind: FaultKind,
    /// Aimed at a role rather than a process: the loop puts the process in that role when
    /// the fault starts into `kind` (its process is a placeholder until then).
    pub aim: Option<Aim>,
}

/// A role a fault may aim at, resolved when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aim {
    /// The client that most recently acquired a lock and still believes it holds it.
    Holder,
    /// The Redis node that is master now (the most recently promoted, if several are).
    Master,
}

/// What a fault does while it is open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Freeze a process: its messages and timers queue until no pause covers it.
    Pause(ProcId),
    /// The process dies (volatile state, queued messages and timers are lost) and is
    /// restarted when the window closes; `keep_data` says whether durable state survives.
    /// `host_up`: only the process died (`kill -9`, a segfault, the OOM killer) and its
    /// host's kernel refuses connections to it at once; otherwise the host went down with it
    /// (a power loss) and requests to it vanish, like a pause or a partition.
    Crash {
        proc: ProcId,
        keep_data: bool,
        host_up: bool,
    },
    /// Step the wall clock of a process's node by `delta_ms` (negative = back). Instant.
    ClockStep { proc: ProcId, delta_ms: i64 },
    /// With a duration: add `drift_ppm` to the node's drift rate for the window. Without:
    /// set the rate that windows add to, from now on.
    Drift { proc: ProcId, drift_ppm: i64 },
    /// Cut every directed link from a member of `from` to a member of `to` (and back, with
    /// `both_ways`).
    Partition {
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        both_ways: bool,
    },
    /// Cut a process off from every other, both ways (no list of the others is kept: a
    /// model with hundreds of processes isolates one at the cost of one fault).
    Isolate(ProcId),
    /// Add `extra_ns` to the latency of links from `from` to `to`.
    LatencySpike {
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        extra_ns: u64,
    },
    /// Drop messages on links from `from` to `to` with chance `loss` (on top of the base loss).
    Loss {
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        loss: Ratio,
    },
}

impl FaultKind {
    /// The kind's name, as a model's `random_faults` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Pause(_) => "pause",
            FaultKind::Crash { .. } => "crash",
            FaultKind::ClockStep { .. } => "clock_step",
            FaultKind::Drift { .. } => "drift",
            FaultKind::Partition { .. } => "partition",
            FaultKind::Isolate(_) => "isolate",
            FaultKind::LatencySpike { .. } => "latency_spike",
            FaultKind::Loss { .. } => "loss",
        }
    }
}

impl Fault {
    pub fn new(at: SimTime, duration_ns: Option<u64>, kind: FaultKind) -> Fault {
        Fault {
            at,
            duration_ns,
            kind,
            aim: None,
        }
    }

    /// When the window closes, if it does.
    pub fn end(&self) -> Option<SimTime> {
        if self.kind.is_instant() {
            return None;
        }
        self.duration_ns.map(|d| self.at.plus_ns(d))
    }

    /// One line of text naming processes with `name`: "pause c1 for 2s".
    pub fn describe(&self, name: &dyn Fn(ProcId) -> String) -> String {
        let what = self.kind.describe(name);
        match (self.kind.is_instant(), self.duration_ns, &self.kind) {
            (true, _, _) => what,
            (false, None, FaultKind::Drift { .. }) => what,
            (false, None, FaultKind::Crash { .. }) => format!("{what}, never restarted"),
            (false, None, _) => format!("{what} until the end"),
            (false, Some(d), FaultKind::Crash { .. }) => {
                format!("{what}, restarted after {}", fmt_duration_ns(d))
            }
            (false, Some(d), _) => format!("{what} for {}", fmt_duration_ns(d)),
        }
    }

    /// The process a fault is reported under (its first subject).
    pub fn subject(&self) -> Option<ProcId> {
        match &self.kind {
            FaultKind::Pause(p) | FaultKind::Isolate(p) => Some(*p),
            FaultKind::Crash { proc, .. }
            | FaultKind::ClockStep { proc, .. }
            | FaultKind::Drift { proc, .. } => Some(*proc),
            FaultKind::Partition { from, .. }
            | FaultKind::LatencySpike { from, .. }
            | FaultKind::Loss { from, .. } => from.first().copied(),
        }
    }
}

impl FaultKind {
    /// The same fault on process `p` (for single-process kinds; others are unchanged).
    pub fn retarget(&mut self, p: ProcId) {
        match self {
            FaultKind::Pause(q) | FaultKind::Isolate(q) => *q = p,
            FaultKind::Crash { proc, .. }
            | FaultKind::ClockStep { proc, .. }
            | FaultKind::Drift { proc, .. } => *proc = p,
            FaultKind::Partition { .. }
            | FaultKind::LatencySpike { .. }
            | FaultKind::Loss { .. } => {}
        }
    }

    /// Faults that happen at an instant and have no window.
    pub fn is_instant(&self) -> bool {
        matches!(self, FaultKind::ClockStep { .. })
    }

    /// The fault in words, without its duration.
    pub fn describe(&self, name: &dyn Fn(ProcId) -> String) -> String {
        let list = |v: &[ProcId]| v.iter().map(|p| name(*p)).collect::<Vec<_>>().join(",");
        match self {
            FaultKind::Pause(p) => format!("pause {}", name(*p)),
            FaultKind::Crash {
                proc,
                keep_data,
                host_up,
            } => format!(
                "crash {} ({}{})",
                name(*proc),
                if *keep_data { "data kept" } else { "empty" },
                if *host_up { "" } else { ", host down" }
            ),
            FaultKind::ClockStep { proc, delta_ms } => {
                format!("clock step {} {delta_ms:+}ms", name(*proc))
            }
            FaultKind::Drift { proc, drift_ppm } => {
                format!("drift {} {drift_ppm:+}ppm", name(*proc))
            }
            FaultKind::Partition {
                from,
                to,
                both_ways,
            } => format!(
                "partition [{}] {} [{}]",
                list(from),
                if *both_ways { "<-x->" } else { "-x->" },
                list(to)
            ),
            FaultKind::Isolate(p) => format!("isolate {} from every other process", name(*p)),
            FaultKind::LatencySpike { from, to, extra_ns } => format!(
                "latency +{} [{}] -> [{}]",
                fmt_duration_ns(*extra_ns),
                list(from),
                list(to)
            ),
            FaultKind::Loss { from, to, loss } => format!(
                "loss {}/{} [{}] -> [{}]",
                loss.num(),
                loss.den(),
                list(from),
                list(to)
            ),
        }
    }
}

/// What a family's magnitude is, and how it is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A window's duration (pause, crash downtime, cut) in ns, resolved to 1 µs.
    Window,
    /// A clock step's delta in ms (the model's own unit for it).
    Step,
    /// A drift window's rate in ppm (signed: a clock running slow is negative), to 1 ppm.
    Drift,
    /// A latency spike's extra latency in ns, resolved to 1 µs (its window as declared).
    Latency,
}

impl Unit {
    pub fn resolution(self) -> i64 {
        match self {
            Unit::Window | Unit::Latency => NS_PER_US as i64,
            Unit::Step | Unit::Drift => 1,
        }
    }
    pub fn text(self, m: i64) -> String {
        match self {
            Unit::Window => fmt_duration_us(m as u64),
            Unit::Latency => format!("+{}", fmt_duration_us(m as u64)),
            Unit::Step => format!("{m:+}ms"),
            Unit::Drift => format!("{m:+}ppm"),
        }
    }
    /// The unit a magnitude is written in (JSON's `unit`).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Window | Unit::Latency => "ns",
            Unit::Step => "ms",
            Unit::Drift => "ppm",
        }
    }
    /// What the magnitude is, in a sentence ("violates iff duration ≥ …").
    pub fn quantity(self) -> &'static str {
        match self {
            Unit::Window => "duration",
            Unit::Step => "the step",
            Unit::Drift => "the drift",
            Unit::Latency => "the extra latency",
        }
    }
    /// A family whose sign matters: a step or drift forward and back are two families.
    pub fn signed(self) -> bool {
        matches!(self, Unit::Step | Unit::Drift)
    }
}

impl Fault {
    /// Its magnitude, if it has one to vary (`explore --thresholds`, counterfactuals): a
    /// window's length, a step's delta, a drift's rate, a spike's extra latency (its window
    /// stays as declared), a loss window's length (its chance is not varied). `None`: a crash
    /// never restarted, a cut never healed, a step or drift of 0.
    pub fn magnitude(&self) -> Option<(Unit, i64)> {
        let m = match self.kind {
            FaultKind::ClockStep { delta_ms, .. } => (Unit::Step, delta_ms),
            FaultKind::Drift { drift_ppm, .. } => (Unit::Drift, drift_ppm),
            FaultKind::LatencySpike { extra_ns, .. } => (Unit::Latency, extra_ns as i64),
            FaultKind::Pause(_)
            | FaultKind::Crash { .. }
            | FaultKind::Partition { .. }
            | FaultKind::Isolate(_)
            | FaultKind::Loss { .. } => (Unit::Window, self.duration_ns? as i64),
        };
        (m.1 != 0).then_some(m)
    }

    /// The same fault with its magnitude (`magnitude`'s) set to `m`.
    pub fn with_magnitude(&self, m: i64) -> Fault {
        let mut f = self.clone();
        match &mut f.kind {
            FaultKind::ClockStep { delta_ms, .. } => *delta_ms = m,
            FaultKind::Drift { drift_ppm, .. } => *drift_ppm = m,
            FaultKind::LatencySpike { extra_ns, .. } => *extra_ns = m as u64,
            FaultKind::Pause(_)
            | FaultKind::Crash { .. }
            | FaultKind::Partition { .. }
            | FaultKind::Isolate(_)
            | FaultKind::Loss { .. } => f.duration_ns = Some(m as u64),
        }
        f
    }
}

/// What a fault does to the links it spans (`FaultKind::links`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkEffect {
    /// Nothing passes.
    Cut,
    /// Messages are late or lost.
    Slowed,
}

impl FaultKind {
    /// Whether it cuts the directed link `from` → `to`.
    pub fn cuts(&self, from: ProcId, to: ProcId) -> bool {
        match self {
            FaultKind::Isolate(p) => *p == from || *p == to,
            FaultKind::Partition {
                from: a,
                to: b,
                both_ways,
            } => {
                (a.contains(&from) && b.contains(&to))
                    || (*both_ways && b.contains(&from) && a.contains(&to))
            }
            FaultKind::Pause(_)
            | FaultKind::Crash { .. }
            | FaultKind::ClockStep { .. }
            | FaultKind::Drift { .. }
            | FaultKind::LatencySpike { .. }
            | FaultKind::Loss { .. } => false,
        }
    }

    /// Whether it cuts any link of process `p`.
    pub fn cut_touches(&self, p: ProcId) -> bool {
        match self {
            FaultKind::Isolate(x) => *x == p,
            FaultKind::Partition { from, to, .. } => from.contains(&p) || to.contains(&p),
            FaultKind::Pause(_)
            | FaultKind::Crash { .. }
            | FaultKind::ClockStep { .. }
            | FaultKind::Drift { .. }
            | FaultKind::LatencySpike { .. }
            | FaultKind::Loss { .. } => false,
        }
    }

    /// For a fault of links: the processes whose lanes show it (the smaller side: with one
    /// process cut from the rest, that one) and what it does to them; `None` for a fault of
    /// a process (a pause, a crash, a clock's).
    pub fn links(&self) -> Option<(&[ProcId], &[ProcId], LinkEffect)> {
        match self {
            FaultKind::Partition { from, to, .. } => Some((from, to, LinkEffect::Cut)),
            FaultKind::Isolate(p) => Some((std::slice::from_ref(p), &[], LinkEffect::Cut)),
            FaultKind::LatencySpike { from, to, .. } | FaultKind::Loss { from, to, .. } => {
                Some((from, to, LinkEffect::Slowed))
            }
            FaultKind::Pause(_)
            | FaultKind::Crash { .. }
            | FaultKind::ClockStep { .. }
            | FaultKind::Drift { .. } => None,
        }
    }
}

impl FaultKind {
    /// Whether this fault, open across an event of `proc` (a delivery from `peer`, or a
    /// timer), can change what that event does: it stops `proc`, or cuts, slows or thins a
    /// link the event arrives on or what `proc` sends while handling it.
    pub fn affects(&self, proc: ProcId, peer: Option<ProcId>) -> bool {
        match self {
            FaultKind::Pause(p) | FaultKind::Crash { proc: p, .. } => proc == *p,
            FaultKind::Isolate(p) => proc == *p || peer == Some(*p),
            FaultKind::Partition {
                from,
                to,
                both_ways,
            } => {
                let link = |a: &[ProcId], b: &[ProcId]| {
                    b.contains(&proc) && peer.is_some_and(|q| a.contains(&q))
                };
                link(from, to) || (*both_ways && link(to, from))
            }
            FaultKind::LatencySpike { from, to, .. } | FaultKind::Loss { from, to, .. } => {
                from.contains(&proc)
                    || (to.contains(&proc) && peer.is_some_and(|q| from.contains(&q)))
            }
            FaultKind::ClockStep { proc: p, .. } | FaultKind::Drift { proc: p, .. } => proc == *p,
        }
    }
}
