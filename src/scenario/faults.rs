//! One fault entry at the model's edge. A model names faults in four lists — `faults`
//! (scripted), `random_faults` and a swarm's `faults` (drawn per seed), `triggers` (fired by
//! a protocol event) — each in its own words, but every entry is the same three things:
//! **when** it strikes, the processes or links it **spans**, and its **kind** with the
//! magnitude of that kind (one value, or a range drawn from). [`FaultEntry`] is that one
//! shape; the rest of the crate reads, lowers, narrows (swarm), re-times (`hunt
//! --adversary`), places (`explore`), minimises and writes back only it.
//!
//! The four spellings are kept as they were, so that every model file reads as before with
//! the same meaning and the same located errors: each list is parsed into its own spelling
//! (a private serde enum below), then turned into entries at once. A scripted entry is written
//! back in its spelling through `ron` ([`FaultEntry::ron`]): `minimize`, `explore`'s replay
//! lines and `serve`'s what-ifs write what the loader reads.
//!
//! A new fault kind: its [`KindSpec`] variant and spellings here, its `FaultKind` and its
//! description in `sim/fault.rs`, its opening and closing in `sim/world.rs`, and its effect
//! where it lives (`net.rs` for a link, `clock.rs` for a clock).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::rng::{Prng, Ratio};
use crate::scenario::marks::{Mark, Pos};
use crate::scenario::units::{Bounded, Dur, DurRange, Name, SignedDur, SignedDurRange};
use crate::sim::adversary::{SendKind, TriggerKind};
use crate::sim::fault::Aim;
use crate::sim::{Fault, FaultKind};
use crate::time::{NS_PER_MS, ProcId, SimTime};

/// A drift's rate bounds (ppm).
pub type Ppm = Bounded<-500_000, 500_000>;
/// A loss chance (ppm).
pub type LossPpm = Bounded<0, 1_000_000>;

/// A triggered crash waits this long for nothing by default; a triggered spike (delayed
/// replies) lasts this long unless the entry says (`window`).
pub const DEFAULT_DELAY_WINDOW_NS: u64 = 100 * NS_PER_MS;

/// The process a scripted fault falls on: a name, or a role resolved when the fault starts —
/// `"@holder"`: the client that most recently acquired a lock and still believes it holds
/// it; `"@master"`: the Redis node that is master now (the most recently promoted one, if
/// several believe they are). With nobody in the role then, the fault does nothing.
#[derive(Clone, Debug)]
pub enum Target {
    Proc(Name),
    /// With the mark of where it was read (not part of its identity).
    Holder(Mark),
    Master(Mark),
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mark = Mark::take()?;
        let s = String::deserialize(d)?;
        match s.as_str() {
            "@holder" => Ok(Target::Holder(mark)),
            "@master" => Ok(Target::Master(mark)),
            _ if s.starts_with('@') => Err(serde::de::Error::custom(format!(
                "unknown role {s:?}: a fault may aim at \"@holder\" or \"@master\", or name a process"
            ))),
            _ => {
                use serde::de::IntoDeserializer;
                let d: serde::de::value::StringDeserializer<D::Error> = s.into_deserializer();
                Name::deserialize(d).map(|n| Target::Proc(Name(n.0, mark)))
            }
        }
    }
}

impl PartialEq for Target {
    fn eq(&self, other: &Target) -> bool {
        match (self, other) {
            (Target::Proc(a), Target::Proc(b)) => a == b,
            (Target::Holder(_), Target::Holder(_)) | (Target::Master(_), Target::Master(_)) => true,
            _ => false,
        }
    }
}
impl Eq for Target {}

impl Target {
    /// As a model writes it.
    pub fn text(&self) -> &str {
        match self {
            Target::Proc(n) => &n.0,
            Target::Holder(_) => "@holder",
            Target::Master(_) => "@master",
        }
    }
}

/// Whether a crash took its host down with it (`host:` on crash faults).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostSpec {
    /// Only the process died (`kill -9`, a segfault, the OOM killer): the host's kernel
    /// answers connections to its port with a refusal (RST), so clients and sentinels learn
    /// at once.
    Up,
    /// The host went down too (power loss, a kernel panic): requests vanish, and callers
    /// find out only by their timeouts.
    Down,
}

impl HostSpec {
    pub fn of(host_up: bool) -> HostSpec {
        if host_up {
            HostSpec::Up
        } else {
            HostSpec::Down
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            HostSpec::Up => "up",
            HostSpec::Down => "down",
        }
    }
}

/// A crash entry's host: as written, else `down` when the entry says `keep_data: false`
/// (the spelling the format has always documented as a power loss), else `up` — a plain
/// `crash` is what `kill -9` is. docs/model-format.md, "Faults", says why.
pub fn crash_host_up(keep_data: Option<bool>, host: Option<HostSpec>) -> bool {
    match host {
        Some(h) => h == HostSpec::Up,
        None => keep_data != Some(false),
    }
}

/// A message a `pause_before_send` trigger waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageSpec {
    /// The write of a critical section, to the protected resource.
    ResourceWrite,
    /// A `DEL` to a Redis node.
    Del,
}

/// One fault entry of a model, whichever list it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultEntry {
    pub when: When,
    pub span: Span,
    pub kind: KindSpec,
}

/// When an entry strikes.
#[derive(Clone, Debug, PartialEq)]
pub enum When {
    /// At this instant of true time (`faults`).
    At(Dur),
    /// Drawn per seed (`random_faults`, a swarm's `faults`): each target on its own stream,
    /// gaps drawn in `every`; with `at_once: N`, each draw hits N of the targets together.
    Every {
        every: Pos<DurRange>,
        at_once: Option<Pos<Bounded<1, 64>>>,
    },
    /// When a protocol event happens (`triggers`).
    On(On),
}

/// A trigger: the event, the chance a matching event fires it (default: always) and its
/// bound of firings per run (default 1).
#[derive(Clone, Debug, PartialEq)]
pub struct On {
    pub event: Event,
    pub chance_ppm: Option<Bounded<0, 1_000_000>>,
    pub max: Option<Bounded<1, 1_000_000>>,
}

/// The protocol events a trigger waits for.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A client is about to send `message`: the pause holds the message until it resumes.
    BeforeSend(MessageSpec),
    /// A client reports it acquired (for Redlock: its quorum is reached).
    AfterAcquire,
    /// The resource served a client's read (between the read and the write of a section).
    AfterRead,
    /// A client starts an attempt.
    AfterAttempt,
    /// A node grants a lock (stores a client's write). `after` delays the fault so that the
    /// client's next commands (its `WAIT`, its fencing `INCR`) run first; `isolate_from`: the
    /// processes (its replicas) cut from the node together with the fault.
    AfterGrant {
        after: Option<DurRange>,
        isolate_from: Vec<Name>,
    },
}

/// What an entry spans.
#[derive(Clone, Debug, PartialEq)]
pub enum Span {
    /// One process, or a role resolved when the fault starts (a scripted entry's `target`).
    One(Target),
    /// Each of these processes (`targets`).
    Each(Vec<Name>),
    /// Every directed link from a member of `from` to a member of `to`.
    Links { from: Vec<Name>, to: Vec<Name> },
}

/// A fault kind with its magnitude: a range to draw from, one value for a scripted entry
/// (`min == max`).
#[derive(Clone, Debug, PartialEq)]
pub enum KindSpec {
    /// Freeze the process for `duration`.
    Pause { duration: DurRange },
    /// The process dies; restarted after `down` (never: `None`). `keep_data` and `host` as
    /// the entry wrote them (`crash_host_up` reads their defaults).
    Crash {
        down: Option<DurRange>,
        keep_data: Option<bool>,
        host: Option<HostSpec>,
    },
    /// Step the node's wall clock by `delta` (negative: back).
    ClockStep { delta: SignedDurRange },
    /// Add `ppm` to the node's drift rate for `duration`; without one (scripted only), set
    /// the rate from then on.
    Drift {
        ppm: Pos<(Ppm, Ppm)>,
        duration: Option<DurRange>,
    },
    /// Cut the process off from every other, both ways, for `duration` (for good: `None`).
    Isolate { duration: Option<DurRange> },
    /// Cut the spanned links (and back, unless `one_way`), for `duration` (for good: `None`).
    Partition {
        duration: Option<DurRange>,
        one_way: bool,
    },
    /// Add `extra` latency to the spanned links for `duration`.
    LatencySpike { extra: DurRange, duration: DurRange },
    /// Drop messages on the spanned links with a chance drawn in `loss_ppm`, for `duration`.
    Loss {
        loss_ppm: Pos<(LossPpm, LossPpm)>,
        duration: DurRange,
    },
}

impl FaultEntry {
    /// The entry's kind as its list spells it (`pause`, `clock_step`, a random `partition`
    /// that isolates, `crash_after_grant`, ...).
    pub fn name(&self) -> &'static str {
        match (&self.when, &self.kind) {
            (When::On(on), kind) => match (&on.event, kind) {
                (Event::BeforeSend(_), _) => "pause_before_send",
                (Event::AfterAcquire, KindSpec::Pause { .. }) => "pause_after_acquire",
                (Event::AfterAcquire, _) => "partition_after_acquire",
                (Event::AfterRead, _) => "pause_after_read",
                (Event::AfterAttempt, _) => "delay_replies_after_attempt",
                (Event::AfterGrant { .. }, KindSpec::ClockStep { .. }) => "clock_step_after_grant",
                (Event::AfterGrant { .. }, _) => "crash_after_grant",
            },
            // A random `partition` cuts a target off from every other process.
            (When::Every { .. }, KindSpec::Isolate { .. }) => "partition",
            (_, kind) => kind.name(),
        }
    }

    /// Where the entry was read, for an error about it as a whole: a random entry's `every`,
    /// else the first process it names.
    pub fn mark(&self) -> Mark {
        if let When::Every { every, .. } = &self.when {
            return every.mark;
        }
        self.names().first().map_or_else(
            || match &self.span {
                Span::One(Target::Holder(m) | Target::Master(m)) => *m,
                _ => Mark::NONE,
            },
            |n| n.1,
        )
    }

    /// The processes it falls on (for link faults, the senders; a scripted role: none).
    pub fn targets(&self) -> &[Name] {
        match &self.span {
            Span::One(_) => &[],
            Span::Each(v) | Span::Links { from: v, .. } => v,
        }
    }

    /// Every process it names, in the order it names them, to be looked up.
    pub fn names(&self) -> Vec<&Name> {
        let mut out: Vec<&Name> = match &self.span {
            Span::One(Target::Proc(n)) => vec![n],
            Span::One(_) => Vec::new(),
            Span::Each(v) => v.iter().collect(),
            // Delayed replies name the clients first (`targets`), then the nodes (`from`).
            Span::Links { from, to } if self.is_trigger() => to.iter().chain(from).collect(),
            Span::Links { from, to } => from.iter().chain(to).collect(),
        };
        if let When::On(On {
            event: Event::AfterGrant { isolate_from, .. },
            ..
        }) = &self.when
        {
            out.extend(isolate_from);
        }
        out
    }

    fn is_trigger(&self) -> bool {
        matches!(self.when, When::On(_))
    }

    /// A random entry's `every`.
    pub fn every(&self) -> Option<Pos<DurRange>> {
        match &self.when {
            When::Every { every, .. } => Some(*every),
            When::At(_) | When::On(_) => None,
        }
    }

    /// `at_once`: how many targets one draw hits together (None: each target on its own).
    pub fn at_once(&self) -> Option<Pos<Bounded<1, 64>>> {
        match &self.when {
            When::Every { at_once, .. } => *at_once,
            When::At(_) | When::On(_) => None,
        }
    }

    /// Independent streams of draws a random entry uses: one per target, or one in all (a
    /// link fault, or `at_once`, hits several together).
    pub fn streams(&self) -> usize {
        match (&self.span, self.at_once()) {
            (Span::Links { .. }, _) | (_, Some(_)) => 1,
            _ => self.targets().len(),
        }
    }

    /// A trigger's bound of firings, to be set (`hunt --adversary triggered`).
    pub fn max_mut(&mut self) -> Option<&mut Option<Bounded<1, 1_000_000>>> {
        match &mut self.when {
            When::On(on) => Some(&mut on.max),
            When::At(_) | When::Every { .. } => None,
        }
    }

    /// The magnitude in words, as a swarm's drawn configuration says it.
    pub fn describe_magnitude(&self) -> String {
        let range = |r: &DurRange| format!("{}..{}", r.min, r.max);
        match &self.kind {
            KindSpec::Pause { duration } => range(duration),
            KindSpec::Isolate { duration } | KindSpec::Partition { duration, .. } => {
                duration.as_ref().map_or("for good".into(), range)
            }
            KindSpec::Crash { down, .. } => match down {
                Some(d) => format!("down {}", range(d)),
                None => "never restarted".into(),
            },
            KindSpec::ClockStep { delta } => format!(
                "delta {}..{}",
                crate::time::fmt_signed_ns(delta.min.0),
                crate::time::fmt_signed_ns(delta.max.0)
            ),
            KindSpec::Drift { ppm, duration } => format!(
                "{}, {:+}..{:+}ppm",
                duration.as_ref().map_or("from then on".into(), range),
                ppm.0.0,
                ppm.1.0
            ),
            KindSpec::LatencySpike { extra, duration } => {
                format!("{}, +{}..{}", range(duration), extra.min, extra.max)
            }
            KindSpec::Loss { loss_ppm, duration } => {
                format!("{}, {}..{}ppm", range(duration), loss_ppm.0.0, loss_ppm.1.0)
            }
        }
    }

    /// A scripted entry as a `faults` list writes it, through `ron` (the loader reads it
    /// back as this entry). `None` for a drawn or triggered entry.
    pub fn ron(&self) -> Option<String> {
        let spelt = Scripted::of(self)?;
        let options = ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
        let pretty = ron::ser::PrettyConfig::new()
            .compact_structs(true)
            .compact_arrays(true);
        Some(
            options
                .to_string_pretty(&spelt, pretty)
                .expect("a scripted entry always serialises"),
        )
    }
}

impl KindSpec {
    /// The kind's name, as `faults` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            KindSpec::Pause { .. } => "pause",
            KindSpec::Crash { .. } => "crash",
            KindSpec::ClockStep { .. } => "clock_step",
            KindSpec::Drift { .. } => "drift",
            KindSpec::Isolate { .. } => "isolate",
            KindSpec::Partition { .. } => "partition",
            KindSpec::LatencySpike { .. } => "latency_spike",
            KindSpec::Loss { .. } => "loss",
        }
    }

    /// The window a realised fault of this kind stays open, when it has one to draw: the
    /// range of its duration (a crash's downtime).
    pub fn window(&self) -> Option<DurRange> {
        match self {
            KindSpec::Pause { duration }
            | KindSpec::LatencySpike { duration, .. }
            | KindSpec::Loss { duration, .. } => Some(*duration),
            KindSpec::Crash { down: d, .. }
            | KindSpec::Drift { duration: d, .. }
            | KindSpec::Isolate { duration: d }
            | KindSpec::Partition { duration: d, .. } => *d,
            KindSpec::ClockStep { .. } => None,
        }
    }
}

/// Resolves a name of the model to its process.
pub type Resolve<'a> = &'a dyn Fn(&Name) -> ProcId;

impl FaultEntry {
    /// A scripted entry as the loop runs it (a role's target is a placeholder the loop
    /// resolves when the fault starts).
    pub fn scripted_fault(&self, id: Resolve<'_>) -> Fault {
        let When::At(at) = self.when else {
            unreachable!("`faults` reads only scripted entries")
        };
        let (proc, aim) = match &self.span {
            Span::One(Target::Proc(n)) => (id(n), None),
            Span::One(Target::Holder(_)) => (ProcId(0), Some(Aim::Holder)),
            Span::One(Target::Master(_)) => (ProcId(0), Some(Aim::Master)),
            Span::Each(_) | Span::Links { .. } => (ProcId(0), None),
        };
        let ids = |v: &[Name]| v.iter().map(id).collect::<Vec<_>>();
        let (from, to) = match &self.span {
            Span::Links { from, to } => (ids(from), ids(to)),
            Span::One(_) | Span::Each(_) => (Vec::new(), Vec::new()),
        };
        let window = self.kind.window().map(|d| d.min.ns());
        let kind = self.kind.at(proc, from, to, &mut Magnitudes::Least);
        Fault {
            aim,
            ..Fault::new(SimTime(at.ns()), window, kind)
        }
    }

    /// One draw of a random entry on process `p` (for a link fault: the links from `from` to
    /// `to`): the fault and how long it stays open. The window is drawn first, then the
    /// magnitude — the order the draws have always been taken in.
    pub fn draw(
        &self,
        p: ProcId,
        from: &[ProcId],
        to: Option<&[ProcId]>,
        rng: &mut Prng,
    ) -> (FaultKind, Option<u64>) {
        let window = self
            .kind
            .window()
            .map(|d| rng.range_inclusive(d.min.ns(), d.max.ns()));
        let kind = self.kind.at(
            p,
            from.to_vec(),
            to.unwrap_or_default().to_vec(),
            &mut Magnitudes::Drawn(rng),
        );
        (kind, window)
    }

    /// A swarm entry narrowed to the intensity a seed drew: a busier `every` (a shorter
    /// upper bound of the gap between faults) and a larger magnitude within its ranges.
    pub fn narrowed(&self, rng: &mut Prng) -> FaultEntry {
        let narrow = |rng: &mut Prng, r: DurRange| DurRange {
            min: r.min,
            max: Dur(rng.range_inclusive(r.min.ns(), r.max.ns())),
        };
        let mut drawn = self.clone();
        if let When::Every { every, .. } = &mut drawn.when {
            every.value = narrow(rng, every.value);
        }
        match &mut drawn.kind {
            KindSpec::Pause { duration }
            | KindSpec::Isolate {
                duration: Some(duration),
            } => *duration = narrow(rng, *duration),
            KindSpec::Crash {
                down: Some(down), ..
            } => *down = narrow(rng, *down),
            KindSpec::ClockStep { delta } => {
                let hi = rng.range_i64(delta.min.0.max(0).min(delta.max.0), delta.max.0);
                let lo = rng.range_i64(delta.min.0, delta.max.0.min(0).max(delta.min.0));
                *delta = SignedDurRange {
                    min: SignedDur(lo.min(hi)),
                    max: SignedDur(hi.max(lo)),
                };
            }
            KindSpec::Drift {
                duration: Some(duration),
                ppm,
            } => {
                *duration = narrow(rng, *duration);
                // Harder = a wider range around zero, within the given one.
                let (lo, hi) = (ppm.0.0, ppm.1.0);
                let h = rng.range_i64(lo.max(0).min(hi), hi);
                let l = rng.range_i64(lo, hi.min(0).max(lo));
                ppm.value = (Bounded(l.min(h)), Bounded(h.max(l)));
            }
            KindSpec::LatencySpike { duration, extra } => {
                *duration = narrow(rng, *duration);
                *extra = narrow(rng, *extra);
            }
            KindSpec::Loss { duration, loss_ppm } => {
                *duration = narrow(rng, *duration);
                let hi = rng.range_i64(loss_ppm.0.0, loss_ppm.1.0);
                loss_ppm.value = (loss_ppm.0, Bounded(hi));
            }
            // A random entry always has a window (`Random` below); a partition of links is
            // scripted only.
            KindSpec::Isolate { duration: None }
            | KindSpec::Crash { down: None, .. }
            | KindSpec::Drift { duration: None, .. }
            | KindSpec::Partition { .. } => unreachable!("not a random entry: {}", self.name()),
        }
        drawn
    }

    /// A triggered entry as the loop's adversary runs it.
    pub fn trigger_kind(&self, id: Resolve<'_>) -> TriggerKind {
        let When::On(on) = &self.when else {
            unreachable!("`triggers` reads only triggered entries")
        };
        let ids = |v: &[Name]| v.iter().map(id).collect::<Vec<_>>();
        let range = |r: &DurRange| (r.min.ns(), r.max.ns());
        let targets = ids(self.targets());
        match (&on.event, &self.kind, &self.span) {
            (Event::BeforeSend(message), KindSpec::Pause { duration }, _) => {
                TriggerKind::PauseBeforeSend {
                    targets,
                    message: match message {
                        MessageSpec::ResourceWrite => SendKind::ResourceWrite,
                        MessageSpec::Del => SendKind::Del,
                    },
                    pause_ns: range(duration),
                }
            }
            (Event::AfterAcquire, KindSpec::Pause { duration }, _) => {
                TriggerKind::PauseAfterAcquire {
                    targets,
                    pause_ns: range(duration),
                }
            }
            (Event::AfterRead, KindSpec::Pause { duration }, _) => TriggerKind::PauseAfterRead {
                targets,
                pause_ns: range(duration),
            },
            (
                Event::AfterAcquire,
                KindSpec::Isolate {
                    duration: Some(duration),
                },
                _,
            ) => TriggerKind::PartitionAfterAcquire {
                targets,
                cut_ns: range(duration),
            },
            (
                Event::AfterAttempt,
                KindSpec::LatencySpike { extra, duration },
                Span::Links { from, to },
            ) => TriggerKind::DelayRepliesAfterAttempt {
                targets: ids(to),
                from: ids(from),
                delay_ns: range(extra),
                window_ns: duration.min.ns(),
            },
            (Event::AfterGrant { .. }, KindSpec::ClockStep { delta }, _) => {
                TriggerKind::ClockStepAfterGrant {
                    targets,
                    delta_ms: (delta.min.ms(), delta.max.ms()),
                }
            }
            (
                Event::AfterGrant {
                    after,
                    isolate_from,
                },
                KindSpec::Crash {
                    down,
                    keep_data,
                    host,
                },
                _,
            ) => TriggerKind::CrashAfterGrant {
                targets,
                isolate_from: ids(isolate_from),
                after_ns: after.as_ref().map(range),
                restart_after_ns: down.map(|d| d.min.ns()),
                keep_data: keep_data.unwrap_or(false),
                host_up: crash_host_up(*keep_data, *host),
            },
            _ => unreachable!("`Triggered` makes no other entry: {}", self.name()),
        }
    }

    /// A fault of a run's realised schedule as a `faults` entry states it (minimisation,
    /// `explore`'s replay lines).
    pub fn realised(f: &Fault, name: &dyn Fn(ProcId) -> String) -> FaultEntry {
        let n = |p: &ProcId| Name::new(name(*p));
        let list = |v: &[ProcId]| v.iter().map(n).collect::<Vec<_>>();
        let one = |p: &ProcId| Span::One(Target::Proc(n(p)));
        let links = |from: &[ProcId], to: &[ProcId]| Span::Links {
            from: list(from),
            to: list(to),
        };
        let window = f.duration_ns.map(|d| DurRange::fixed(Dur(d)));
        let open = || window.expect("a realised window of this kind has a duration");
        let (span, kind) = match &f.kind {
            FaultKind::Pause(p) => (one(p), KindSpec::Pause { duration: open() }),
            FaultKind::Crash {
                proc,
                keep_data,
                host_up,
            } => (
                one(proc),
                KindSpec::Crash {
                    down: window,
                    keep_data: Some(*keep_data),
                    host: Some(HostSpec::of(*host_up)),
                },
            ),
            FaultKind::ClockStep { proc, delta_ms } => {
                let d = SignedDur(delta_ms * NS_PER_MS as i64);
                (
                    one(proc),
                    KindSpec::ClockStep {
                        delta: SignedDurRange { min: d, max: d },
                    },
                )
            }
            FaultKind::Drift { proc, drift_ppm } => (
                one(proc),
                KindSpec::Drift {
                    ppm: pinned(Bounded(*drift_ppm)),
                    duration: window,
                },
            ),
            FaultKind::Partition {
                from,
                to,
                both_ways,
            } => (
                links(from, to),
                KindSpec::Partition {
                    duration: window,
                    one_way: !both_ways,
                },
            ),
            FaultKind::Isolate(p) => (one(p), KindSpec::Isolate { duration: window }),
            FaultKind::LatencySpike { from, to, extra_ns } => (
                links(from, to),
                KindSpec::LatencySpike {
                    extra: DurRange::fixed(Dur(*extra_ns)),
                    duration: open(),
                },
            ),
            FaultKind::Loss { from, to, loss } => (
                links(from, to),
                KindSpec::Loss {
                    loss_ppm: pinned(Bounded(
                        i64::from(loss.num()) * 1_000_000 / i64::from(loss.den()),
                    )),
                    duration: open(),
                },
            ),
        };
        FaultEntry {
            when: When::At(Dur(f.at.0)),
            span,
            kind,
        }
    }
}

/// Where a magnitude comes from when an entry is lowered: its least value (a scripted entry's
/// only one), or drawn in its range.
enum Magnitudes<'r> {
    Least,
    Drawn(&'r mut Prng),
}

impl Magnitudes<'_> {
    fn dur(&mut self, r: &DurRange) -> u64 {
        match self {
            Magnitudes::Least => r.min.ns(),
            Magnitudes::Drawn(rng) => rng.range_inclusive(r.min.ns(), r.max.ns()),
        }
    }
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        match self {
            Magnitudes::Least => lo,
            Magnitudes::Drawn(rng) => rng.range_i64(lo, hi),
        }
    }
}

impl KindSpec {
    /// The realised kind on process `p` (a link fault: on the links from `from` to `to`),
    /// its magnitude from `m`.
    fn at(
        &self,
        p: ProcId,
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        m: &mut Magnitudes<'_>,
    ) -> FaultKind {
        match self {
            KindSpec::Pause { .. } => FaultKind::Pause(p),
            KindSpec::Crash {
                keep_data, host, ..
            } => FaultKind::Crash {
                proc: p,
                keep_data: keep_data.unwrap_or(false),
                host_up: crash_host_up(*keep_data, *host),
            },
            KindSpec::ClockStep { delta } => FaultKind::ClockStep {
                proc: p,
                delta_ms: m.int(delta.min.0, delta.max.0) / NS_PER_MS as i64,
            },
            KindSpec::Drift { ppm, .. } => FaultKind::Drift {
                proc: p,
                drift_ppm: m.int(ppm.0.0, ppm.1.0),
            },
            KindSpec::Isolate { .. } => FaultKind::Isolate(p),
            KindSpec::Partition { one_way, .. } => FaultKind::Partition {
                from,
                to,
                both_ways: !one_way,
            },
            KindSpec::LatencySpike { extra, .. } => FaultKind::LatencySpike {
                from,
                to,
                extra_ns: m.dur(extra),
            },
            KindSpec::Loss { loss_ppm, .. } => {
                let ppm = m.int(loss_ppm.0.0, loss_ppm.1.0);
                FaultKind::Loss {
                    from,
                    to,
                    loss: Ratio::per_million(ppm as u32).expect("bounded"),
                }
            }
        }
    }
}

fn one(d: Dur) -> DurRange {
    DurRange::fixed(d)
}

fn pinned<T: Copy>(v: T) -> Pos<(T, T)> {
    Pos::new((v, v))
}

// ---- The four spellings -------------------------------------------------------------------

/// `faults: [...]`: a fault at an instant.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Scripted {
    Pause {
        target: Target,
        at: Dur,
        duration: Dur,
    },
    Crash {
        target: Target,
        at: Dur,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        restart_after: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        keep_data: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<HostSpec>,
    },
    ClockStep {
        target: Target,
        at: Dur,
        delta: SignedDur,
    },
    /// Without `duration`: the node's drift rate from `at` on. With: `ppm` added to the rate
    /// for that long (windows add up).
    Drift {
        target: Target,
        at: Dur,
        ppm: Ppm,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Dur>,
    },
    /// Cut `target` off from every other process, both ways.
    Isolate {
        target: Target,
        at: Dur,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Dur>,
    },
    Partition {
        from: Vec<Name>,
        to: Vec<Name>,
        at: Dur,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Dur>,
        #[serde(default)]
        one_way: bool,
    },
    LatencySpike {
        from: Vec<Name>,
        to: Vec<Name>,
        at: Dur,
        duration: Dur,
        extra: Dur,
    },
    Loss {
        from: Vec<Name>,
        to: Vec<Name>,
        at: Dur,
        duration: Dur,
        loss_ppm: LossPpm,
    },
}

impl From<Scripted> for FaultEntry {
    fn from(s: Scripted) -> FaultEntry {
        let (at, span, kind) = match s {
            Scripted::Pause {
                target,
                at,
                duration,
            } => (
                at,
                Span::One(target),
                KindSpec::Pause {
                    duration: one(duration),
                },
            ),
            Scripted::Crash {
                target,
                at,
                restart_after,
                keep_data,
                host,
            } => (
                at,
                Span::One(target),
                KindSpec::Crash {
                    down: restart_after.map(one),
                    keep_data,
                    host,
                },
            ),
            Scripted::ClockStep { target, at, delta } => (
                at,
                Span::One(target),
                KindSpec::ClockStep {
                    delta: SignedDurRange {
                        min: delta,
                        max: delta,
                    },
                },
            ),
            Scripted::Drift {
                target,
                at,
                ppm,
                duration,
            } => (
                at,
                Span::One(target),
                KindSpec::Drift {
                    ppm: pinned(ppm),
                    duration: duration.map(one),
                },
            ),
            Scripted::Isolate {
                target,
                at,
                duration,
            } => (
                at,
                Span::One(target),
                KindSpec::Isolate {
                    duration: duration.map(one),
                },
            ),
            Scripted::Partition {
                from,
                to,
                at,
                duration,
                one_way,
            } => (
                at,
                Span::Links { from, to },
                KindSpec::Partition {
                    duration: duration.map(one),
                    one_way,
                },
            ),
            Scripted::LatencySpike {
                from,
                to,
                at,
                duration,
                extra,
            } => (
                at,
                Span::Links { from, to },
                KindSpec::LatencySpike {
                    extra: one(extra),
                    duration: one(duration),
                },
            ),
            Scripted::Loss {
                from,
                to,
                at,
                duration,
                loss_ppm,
            } => (
                at,
                Span::Links { from, to },
                KindSpec::Loss {
                    loss_ppm: pinned(loss_ppm),
                    duration: one(duration),
                },
            ),
        };
        FaultEntry {
            when: When::At(at),
            span,
            kind,
        }
    }
}

impl Scripted {
    /// A scripted entry in its spelling (its ranges are single values).
    fn of(e: &FaultEntry) -> Option<Scripted> {
        let When::At(at) = e.when else {
            return None;
        };
        let target = || match &e.span {
            Span::One(t) => Some(t.clone()),
            Span::Each(_) | Span::Links { .. } => None,
        };
        let links = || match &e.span {
            Span::Links { from, to } => Some((from.clone(), to.clone())),
            Span::One(_) | Span::Each(_) => None,
        };
        Some(match &e.kind {
            KindSpec::Pause { duration } => Scripted::Pause {
                target: target()?,
                at,
                duration: duration.min,
            },
            KindSpec::Crash {
                down,
                keep_data,
                host,
            } => Scripted::Crash {
                target: target()?,
                at,
                restart_after: down.map(|d| d.min),
                keep_data: *keep_data,
                host: *host,
            },
            KindSpec::ClockStep { delta } => Scripted::ClockStep {
                target: target()?,
                at,
                delta: delta.min,
            },
            KindSpec::Drift { ppm, duration } => Scripted::Drift {
                target: target()?,
                at,
                ppm: ppm.0,
                duration: duration.map(|d| d.min),
            },
            KindSpec::Isolate { duration } => Scripted::Isolate {
                target: target()?,
                at,
                duration: duration.map(|d| d.min),
            },
            KindSpec::Partition { duration, one_way } => {
                let (from, to) = links()?;
                Scripted::Partition {
                    from,
                    to,
                    at,
                    duration: duration.map(|d| d.min),
                    one_way: *one_way,
                }
            }
            KindSpec::LatencySpike { extra, duration } => {
                let (from, to) = links()?;
                Scripted::LatencySpike {
                    from,
                    to,
                    at,
                    duration: duration.min,
                    extra: extra.min,
                }
            }
            KindSpec::Loss { loss_ppm, duration } => {
                let (from, to) = links()?;
                Scripted::Loss {
                    from,
                    to,
                    at,
                    duration: duration.min,
                    loss_ppm: loss_ppm.0,
                }
            }
        })
    }
}

/// `random_faults: [...]` and a swarm's `faults`: faults drawn per seed. Each target
/// independently suffers the fault at intervals drawn from `every` (one stream per entry and
/// target). With `at_once: N`, each draw instead picks N distinct targets of the list and
/// hits them at the same instant (two nodes' clocks in one draw; one stream per entry). Link
/// faults (`latency_spike`, `loss`) hit every link from a member of `from` to a member of
/// `to` at each draw.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Random {
    Pause {
        targets: Vec<Name>,
        every: Pos<DurRange>,
        duration: DurRange,
        #[serde(default)]
        at_once: Option<Pos<Bounded<1, 64>>>,
    },
    Crash {
        targets: Vec<Name>,
        every: Pos<DurRange>,
        down: DurRange,
        #[serde(default)]
        keep_data: Option<bool>,
        #[serde(default)]
        host: Option<HostSpec>,
        #[serde(default)]
        at_once: Option<Pos<Bounded<1, 64>>>,
    },
    ClockStep {
        targets: Vec<Name>,
        every: Pos<DurRange>,
        delta: SignedDurRange,
        #[serde(default)]
        at_once: Option<Pos<Bounded<1, 64>>>,
    },
    /// Cut a target off from every other process (both ways) for `duration`.
    Partition {
        targets: Vec<Name>,
        every: Pos<DurRange>,
        duration: DurRange,
        #[serde(default)]
        at_once: Option<Pos<Bounded<1, 64>>>,
    },
    /// Add `ppm` (drawn in the range) to a node's drift rate for `duration`.
    Drift {
        targets: Vec<Name>,
        every: Pos<DurRange>,
        duration: DurRange,
        ppm: Pos<(Ppm, Ppm)>,
        #[serde(default)]
        at_once: Option<Pos<Bounded<1, 64>>>,
    },
    /// Add `extra` latency to the links from `from` to `to` for `duration`.
    LatencySpike {
        from: Vec<Name>,
        to: Vec<Name>,
        every: Pos<DurRange>,
        duration: DurRange,
        extra: DurRange,
    },
    /// Drop messages on the links from `from` to `to` with a chance drawn in `loss_ppm`.
    Loss {
        from: Vec<Name>,
        to: Vec<Name>,
        every: Pos<DurRange>,
        duration: DurRange,
        loss_ppm: Pos<(LossPpm, LossPpm)>,
    },
}

impl From<Random> for FaultEntry {
    fn from(r: Random) -> FaultEntry {
        let each = |targets, every, at_once, kind| FaultEntry {
            when: When::Every { every, at_once },
            span: Span::Each(targets),
            kind,
        };
        let links = |from, to, every, kind| FaultEntry {
            when: When::Every {
                every,
                at_once: None,
            },
            span: Span::Links { from, to },
            kind,
        };
        match r {
            Random::Pause {
                targets,
                every,
                duration,
                at_once,
            } => each(targets, every, at_once, KindSpec::Pause { duration }),
            Random::Crash {
                targets,
                every,
                down,
                keep_data,
                host,
                at_once,
            } => each(
                targets,
                every,
                at_once,
                KindSpec::Crash {
                    down: Some(down),
                    keep_data,
                    host,
                },
            ),
            Random::ClockStep {
                targets,
                every,
                delta,
                at_once,
            } => each(targets, every, at_once, KindSpec::ClockStep { delta }),
            Random::Partition {
                targets,
                every,
                duration,
                at_once,
            } => each(
                targets,
                every,
                at_once,
                KindSpec::Isolate {
                    duration: Some(duration),
                },
            ),
            Random::Drift {
                targets,
                every,
                duration,
                ppm,
                at_once,
            } => each(
                targets,
                every,
                at_once,
                KindSpec::Drift {
                    ppm,
                    duration: Some(duration),
                },
            ),
            Random::LatencySpike {
                from,
                to,
                every,
                duration,
                extra,
            } => links(from, to, every, KindSpec::LatencySpike { extra, duration }),
            Random::Loss {
                from,
                to,
                every,
                duration,
                loss_ppm,
            } => links(from, to, every, KindSpec::Loss { loss_ppm, duration }),
        }
    }
}

/// `triggers: [...]`: a triggered adversary. `chance_ppm` (default 1,000,000: always) is the
/// chance that a matching event fires it; `max` (default 1) bounds its firings per run.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Triggered {
    /// Pause a client right before it sends `message`; the message leaves when it resumes —
    /// the stop-the-world pause between deciding and acting (after its GET said the lock is
    /// its own and before its DEL; after its lease check and before its write).
    PauseBeforeSend {
        targets: Vec<Name>,
        message: MessageSpec,
        duration: DurRange,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// Pause a client right after it reports it acquired the lock.
    PauseAfterAcquire {
        targets: Vec<Name>,
        duration: DurRange,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// Pause a client right after the resource serves it a read: between the read and the
    /// write of its critical section, the moment a lost update needs.
    PauseAfterRead {
        targets: Vec<Name>,
        duration: DurRange,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// Cut a client off from every other process (both ways) for `duration` right after it
    /// reports it acquired — for Redlock, right after its quorum is reached: it can neither
    /// renew, extend nor unlock, while it believes it holds.
    PartitionAfterAcquire {
        targets: Vec<Name>,
        duration: DurRange,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// When a client in `targets` starts an attempt, delay the replies of the nodes in
    /// `from` to it by `delay` (for `window`, default 100 ms, long enough to cover its
    /// requests): a reply held until just before the TTL, so the client acquires a lock
    /// that is about to expire.
    DelayRepliesAfterAttempt {
        targets: Vec<Name>,
        from: Vec<Name>,
        delay: DurRange,
        #[serde(default)]
        window: Option<Dur>,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// Step a node's wall clock right after it grants a lock (stores a client's write).
    ClockStepAfterGrant {
        targets: Vec<Name>,
        delta: SignedDurRange,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// Crash a node right after it grants, before its write reaches `isolate_from` (its
    /// replicas): the master that replied OK and died before replicating. `after` delays the
    /// crash (and the cut) so that the client's next commands — its `WAIT`, its fencing
    /// `INCR` — run first.
    CrashAfterGrant {
        targets: Vec<Name>,
        isolate_from: Vec<Name>,
        #[serde(default)]
        after: Option<DurRange>,
        #[serde(default)]
        restart_after: Option<Dur>,
        #[serde(default)]
        keep_data: Option<bool>,
        #[serde(default)]
        host: Option<HostSpec>,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
}

impl From<Triggered> for FaultEntry {
    fn from(t: Triggered) -> FaultEntry {
        let on = |event, chance_ppm, max| {
            When::On(On {
                event,
                chance_ppm,
                max,
            })
        };
        let (when, span, kind) = match t {
            Triggered::PauseBeforeSend {
                targets,
                message,
                duration,
                chance_ppm,
                max,
            } => (
                on(Event::BeforeSend(message), chance_ppm, max),
                Span::Each(targets),
                KindSpec::Pause { duration },
            ),
            Triggered::PauseAfterAcquire {
                targets,
                duration,
                chance_ppm,
                max,
            } => (
                on(Event::AfterAcquire, chance_ppm, max),
                Span::Each(targets),
                KindSpec::Pause { duration },
            ),
            Triggered::PauseAfterRead {
                targets,
                duration,
                chance_ppm,
                max,
            } => (
                on(Event::AfterRead, chance_ppm, max),
                Span::Each(targets),
                KindSpec::Pause { duration },
            ),
            Triggered::PartitionAfterAcquire {
                targets,
                duration,
                chance_ppm,
                max,
            } => (
                on(Event::AfterAcquire, chance_ppm, max),
                Span::Each(targets),
                KindSpec::Isolate {
                    duration: Some(duration),
                },
            ),
            // The replies of `from` to each target: the links from `from` to `targets`.
            Triggered::DelayRepliesAfterAttempt {
                targets,
                from,
                delay,
                window,
                chance_ppm,
                max,
            } => (
                on(Event::AfterAttempt, chance_ppm, max),
                Span::Links { from, to: targets },
                KindSpec::LatencySpike {
                    extra: delay,
                    duration: one(window.unwrap_or(Dur(DEFAULT_DELAY_WINDOW_NS))),
                },
            ),
            Triggered::ClockStepAfterGrant {
                targets,
                delta,
                chance_ppm,
                max,
            } => (
                on(
                    Event::AfterGrant {
                        after: None,
                        isolate_from: Vec::new(),
                    },
                    chance_ppm,
                    max,
                ),
                Span::Each(targets),
                KindSpec::ClockStep { delta },
            ),
            Triggered::CrashAfterGrant {
                targets,
                isolate_from,
                after,
                restart_after,
                keep_data,
                host,
                chance_ppm,
                max,
            } => (
                on(
                    Event::AfterGrant {
                        after,
                        isolate_from,
                    },
                    chance_ppm,
                    max,
                ),
                Span::Each(targets),
                KindSpec::Crash {
                    down: restart_after.map(one),
                    keep_data,
                    host,
                },
            ),
        };
        FaultEntry { when, span, kind }
    }
}

/// `faults: [...]` read into entries.
pub fn scripted<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<FaultEntry>, D::Error> {
    Ok(Vec::<Scripted>::deserialize(d)?
        .into_iter()
        .map(FaultEntry::from)
        .collect())
}

/// `random_faults: [...]` (and a swarm's `faults`) read into entries.
pub fn random<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<FaultEntry>, D::Error> {
    Ok(Vec::<Random>::deserialize(d)?
        .into_iter()
        .map(FaultEntry::from)
        .collect())
}

/// `triggers: [...]` read into entries.
pub fn triggered<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<FaultEntry>, D::Error> {
    Ok(Vec::<Triggered>::deserialize(d)?
        .into_iter()
        .map(FaultEntry::from)
        .collect())
}

// ---- Writing values back as a model spells them ------------------------------------------------

impl Serialize for Dur {
    /// Exact decimal seconds, trailing zeros trimmed: "33.863461406s", "12s", "0.5s".
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&exact_seconds(self.0))
    }
}

/// `ns` as exact decimal seconds, trailing zeros trimmed: "33.863461406s", "12s", "0.5s".
pub fn exact_seconds(ns: u64) -> String {
    let (secs, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return format!("{secs}s");
    }
    let f = format!("{frac:09}");
    format!("{secs}.{}s", f.trim_end_matches('0'))
}

impl Serialize for SignedDur {
    /// A signed whole number of ms ("+1200ms", "-5ms") when it is one, else of ns.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ms = NS_PER_MS as i64;
        if self.0 % ms == 0 {
            s.serialize_str(&format!("{:+}ms", self.0 / ms))
        } else {
            s.serialize_str(&format!("{:+}ns", self.0))
        }
    }
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text())
    }
}

impl<const LO: i64, const HI: i64> Serialize for Bounded<LO, HI> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.0)
    }
}

#[cfg(test)]
mod tests;
