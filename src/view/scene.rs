//! What the picture of a run shows, extracted once from the history, the trace and the
//! applied faults: spans on lanes (holds, keys, pauses, crashes, network faults), marks
//! (acquires, expiries, resource operations, faults), believed validities, overlaps, the
//! gap between a key's end and its holder's validity, and message arrows; and the window a
//! reader wants first (`View`). Drawing them is `svg.rs`; the page around them `report.rs`.

use crate::check::Violation;
use crate::history::episodes::{Change, Hold, HoldEnd, Holdings};
use crate::history::{Observation, Removal};
use crate::proto::{Bytes, Msg};
use crate::scenario::{ProcKind, Scenario};
use crate::sim::World;
use crate::sim::fault::{FaultKind, LinkEffect};
use crate::sim::trace::{TraceKind, describe_msg};
use crate::time::{NS_PER_MS, NS_PER_S, ProcId, SimTime, fmt_duration_ns};

use super::expiry::{Gap, KeyLife, Validity, explain};

/// Width of the picture in pixels.
pub(super) const WIDTH_PX: f64 = 1200.0;
/// Left edge of the plot: lane labels live left of it.
pub(super) const PLOT_X0: f64 = 180.0;
/// Right edge of the plot.
pub(super) const PLOT_X1: f64 = 1185.0;
/// Height of one lane.
pub(super) const LANE_PX: f64 = 50.0;
/// At most this many message arrows in the static picture (the page draws more): the ones
/// nearest to the first violation.
pub(super) const ARROWS_STATIC: usize = 300;
pub(super) const ARROWS_PAGE: usize = 3000;
/// A run without a violation is pictured over its first this-many nanoseconds: enough for a
/// few rounds of every catalogue model, few enough to read.
pub(super) const QUIET_WINDOW_NS: u64 = 20 * NS_PER_S;
/// Client colours; red is kept for violations.
pub(super) const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
];

/// What the picture shows and where.

#[derive(Clone, Copy, Debug)]
pub struct View {
    /// True-time window laid out at first (the static SVG shows only this).
    pub from: SimTime,
    pub to: SimTime,
    /// Arrows are drawn for messages within `arrows_from..arrows_to`, at most `max_arrows`.
    pub arrows_from: SimTime,
    pub arrows_to: SimTime,
    pub max_arrows: usize,
}

impl View {
    /// The window a reader wants first: from shortly before the holds that the first
    /// violation involves to shortly after it. When nothing was violated: around the first
    /// time a safeguard acted (`first_safeguard`), else the run's first 20 s.
    pub fn around_first_violation(world: &World, violations: &[Violation]) -> View {
        let end = world.now();
        let (from, to) = match violations.iter().min_by_key(|v| v.at) {
            None => match first_safeguard(world) {
                // Nothing broke: show where a safeguard acted, if one did.
                Some((start, at)) => {
                    let span = (at.0 - start.0).max(2 * NS_PER_S);
                    (
                        SimTime(start.0.saturating_sub(span / 5)),
                        SimTime(at.0.saturating_add(span / 5).min(end.0.max(at.0))),
                    )
                }
                None => (SimTime::ZERO, SimTime(end.0.min(QUIET_WINDOW_NS))),
            },
            Some(v) => {
                // The latest start of a hold by each involved client before the violation.
                let mut start = v.at;
                for a in &v.actors {
                    let last = world
                        .history
                        .records
                        .iter()
                        .filter(|r| {
                            r.proc == *a
                                && r.at <= v.at
                                && matches!(r.obs, Observation::Acquired { .. })
                        })
                        .map(|r| r.at)
                        .next_back();
                    if let Some(t) = last {
                        start = start.min(t);
                    }
                }
                // Later violations that follow within a few seconds belong to the same story
                // (a pause's two holders, then the foreign unlock).
                let last = violations
                    .iter()
                    .map(|w| w.at)
                    .filter(|t| *t >= v.at && t.0 - v.at.0 <= 5 * NS_PER_S)
                    .max()
                    .unwrap_or(v.at);
                let span = (last.0 - start.0).max(2 * NS_PER_S);
                let from = SimTime(start.0.saturating_sub(span / 5));
                let to = SimTime(last.0.saturating_add(span / 5).min(end.0.max(last.0)));
                (from, to)
            }
        };
        let to = if to <= from {
            SimTime(from.0 + NS_PER_S)
        } else {
            to
        };
        View {
            from,
            to,
            arrows_from: from,
            arrows_to: to,
            max_arrows: ARROWS_STATIC,
        }
    }

    /// For the page: the same first window, arrows for three windows' width around it.
    pub fn page(world: &World, violations: &[Violation]) -> View {
        let v = View::around_first_violation(world, violations);
        let w = v.to.0 - v.from.0;
        View {
            arrows_from: SimTime(v.from.0.saturating_sub(w)),
            arrows_to: SimTime(v.to.0.saturating_add(w)),
            max_arrows: ARROWS_PAGE,
            ..v
        }
    }

    pub(super) fn x(&self, t: SimTime) -> f64 {
        let w = (self.to.0 - self.from.0).max(1) as f64;
        PLOT_X0 + (t.0 as f64 - self.from.0 as f64) / w * (PLOT_X1 - PLOT_X0)
    }

    /// Whether `[a, b]` shows in the window (static pictures leave the rest out).
    pub(super) fn shows(&self, a: SimTime, b: SimTime) -> bool {
        b >= self.from && a <= self.to
    }
}

/// Where a run's story starts: the attempt that won the lock each actor of the first
/// violation held (or, in a run without one, the attempt behind the first safeguard that
/// acted), moved back to the start of any fault still open then on one of those actors (a
/// pause that began before its victim's hold is part of its story). `None`: from the start.
/// What comes before is set-up, which the stepper folds into one step.
pub(super) fn story_start(world: &World, violations: &[Violation]) -> Option<SimTime> {
    let records = &world.history.records;
    let (s0, actors) = match violations.iter().min_by_key(|v| v.at) {
        Some(v) => {
            let won = |a: ProcId| {
                let j = records.iter().rposition(|r| {
                    r.proc == a && r.at <= v.at && matches!(r.obs, Observation::Acquired { .. })
                })?;
                Some(
                    records[..j]
                        .iter()
                        .rev()
                        .find(|r| r.proc == a && matches!(r.obs, Observation::Attempt { .. }))
                        .map_or(records[j].at, |r| r.at),
                )
            };
            let s = v
                .actors
                .iter()
                .filter_map(|a| won(*a))
                .min()
                .unwrap_or(v.at);
            (s, v.actors.clone())
        }
        None => {
            let (start, at) = first_safeguard(world)?;
            let who = records.iter().find(|r| r.at == at).map(|r| r.proc);
            (start, who.into_iter().collect())
        }
    };
    let touches = |k: &FaultKind| match k {
        FaultKind::Pause(p) | FaultKind::Isolate(p) => actors.contains(p),
        FaultKind::Crash { proc, .. }
        | FaultKind::ClockStep { proc, .. }
        | FaultKind::Drift { proc, .. } => actors.contains(proc),
        FaultKind::Partition { from, to, .. }
        | FaultKind::LatencySpike { from, to, .. }
        | FaultKind::Loss { from, to, .. } => from.iter().chain(to).any(|p| actors.contains(p)),
    };
    let s = world
        .applied_faults
        .iter()
        .filter(|f| f.at <= s0 && f.end().is_none_or(|e| e > s0) && touches(&f.kind))
        .map(|f| f.at)
        .fold(s0, SimTime::min);
    (s > SimTime::ZERO).then_some(s)
}

/// The first time a safeguard acted in a run — a client learnt it lost its lock (validity
/// ran out, renewal or extend failed, session expired) or the resource rejected a stale
/// token — and when the attempt that gave the client involved its lock began: (attempt,
/// acted).
pub fn first_safeguard(world: &World) -> Option<(SimTime, SimTime)> {
    let records = &world.history.records;
    let (i, client) = records.iter().enumerate().find_map(|(i, r)| match &r.obs {
        Observation::Lost { .. } => Some((i, r.proc)),
        Observation::ResourceWrite {
            client,
            accepted: false,
            ..
        }
        | Observation::ResourceRead {
            client,
            accepted: false,
            ..
        } => Some((i, *client)),
        _ => None,
    })?;
    // From the attempt that won the lock (a slow acquisition is part of the story).
    let acquired = records[..i]
        .iter()
        .rposition(|r| r.proc == client && matches!(r.obs, Observation::Acquired { .. }))
        .map(|j| {
            records[..j]
                .iter()
                .rev()
                .find(|r| r.proc == client && matches!(r.obs, Observation::Attempt { .. }))
                .map_or(records[j].at, |r| r.at)
        })
        .unwrap_or(records[i].at);
    Some((acquired, records[i].at))
}

/// What the page of a log recorded from a real system (`check-log --format html`) shows
/// beside the scene drawn from it: each lane's host and clock bound (in place of a simulated
/// clock, which a log does not have), every instant's uncertainty, and what judged it.
pub(super) struct LogLanes {
    /// Per process (lane): the words under its role, in place of the wall clock's.
    pub(super) notes: Vec<String>,
    /// (lane, from, to, tip): where an instant of the log lies, given its host's bound.
    pub(super) bands: Vec<(usize, SimTime, SimTime, String)>,
    /// The command that judged the log.
    pub(super) command: String,
    /// Each property's verdict, as `check-log` prints it.
    pub(super) findings: Vec<String>,
    /// Events judged but not drawn.
    pub(super) left_out: usize,
    /// With no certain violation: the violations the clock bounds leave possible, in words
    /// (check-log's exit code 3).
    pub(super) possible: Option<String>,
    /// Whether the log records the resource's versions (`read_version`, `wrote_version`):
    /// without them the stepper tells reads and writes without versions.
    pub(super) versioned: bool,
}

/// Escapes text for XML attributes and content.
pub(super) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// A lock by its key, as the model names it.
pub(super) fn lock_text(lock_keys: &[Bytes], lock: u32) -> String {
    lock_keys
        .get(lock as usize)
        .map_or_else(|| lock.to_string(), text_of)
}

pub(super) fn text_of(b: &Bytes) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What a span on a lane shows.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SpanKind {
    /// A client believes it holds the lock.
    Hold,
    /// The lock key lives on a node.
    Key,
    /// A client tries to acquire.
    Trying,
    Paused,
    Down,
    /// Cut off by a partition.
    Partition,
    /// A latency spike or a lossy link.
    Slow,
}

impl SpanKind {
    /// Drawing order: network faults and states under the bars, holds on top.
    pub(super) const LAYERS: [SpanKind; 7] = [
        SpanKind::Partition,
        SpanKind::Slow,
        SpanKind::Down,
        SpanKind::Paused,
        SpanKind::Trying,
        SpanKind::Key,
        SpanKind::Hold,
    ];

    /// The CSS class (and, for states, the label) in the picture.
    pub(super) fn class(self) -> &'static str {
        match self {
            SpanKind::Hold => "hold",
            SpanKind::Key => "key",
            SpanKind::Trying => "trying",
            SpanKind::Paused => "paused",
            SpanKind::Down => "down",
            SpanKind::Partition => "partition",
            SpanKind::Slow => "slow",
        }
    }

    /// Top offset in the lane and height.
    pub(super) fn band(self) -> (f64, f64) {
        match self {
            SpanKind::Partition | SpanKind::Slow => (2.0, 6.0),
            SpanKind::Down | SpanKind::Paused => (4.0, LANE_PX - 8.0),
            SpanKind::Trying => (20.0, 2.0),
            SpanKind::Hold | SpanKind::Key => (12.0, 16.0),
        }
    }
}

/// A span on a lane.
pub(super) struct Span {
    pub(super) lane_proc: usize,
    pub(super) start: SimTime,
    pub(super) end: SimTime,
    pub(super) kind: SpanKind,
    pub(super) fill: Option<&'static str>,
    pub(super) label: String,
    pub(super) tip: String,
}

/// What a point event on a lane shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MarkKind {
    /// A client acquired (the start of its belief).
    Acquired,
    /// A client deleted a key holding another client's token.
    ForeignDelete,
    ResourceRead {
        accepted: bool,
    },
    ResourceWrite {
        accepted: bool,
    },
    Fault,
    /// A clock step or drift change.
    ClockChange,
    /// A Sentinel, replication or free-text note.
    Info,
    /// The lock key expired on a node: the pivot of most pitfalls.
    Expiry,
    /// A replica became master (a failover's promotion).
    Promoted,
}

impl MarkKind {
    pub(super) fn class(self) -> &'static str {
        match self {
            MarkKind::Acquired => "ev",
            MarkKind::ForeignDelete | MarkKind::ResourceRead { accepted: false } => "bad",
            MarkKind::ResourceRead { accepted: true } => "read",
            MarkKind::ResourceWrite { accepted: true } => "write",
            MarkKind::ResourceWrite { accepted: false } => "rejected",
            MarkKind::Fault | MarkKind::ClockChange => "fault",
            MarkKind::Info => "info",
            MarkKind::Expiry => "expiry",
            MarkKind::Promoted => "promoted",
        }
    }

    /// Width, top offset in the lane, height, and the glyph beside it.
    pub(super) fn shape(self) -> (f64, f64, f64, &'static str) {
        match self {
            MarkKind::ClockChange => (3.0, 2.0, LANE_PX - 4.0, "⏱"),
            MarkKind::Fault => (3.0, 2.0, LANE_PX - 4.0, "⚡"),
            MarkKind::Acquired => (2.0, 6.0, 26.0, ""),
            MarkKind::ForeignDelete => (7.0, 10.0, 20.0, "✗"),
            MarkKind::Expiry => (3.0, 6.0, 30.0, ""),
            MarkKind::Promoted => (4.0, 2.0, LANE_PX - 4.0, "★"),
            MarkKind::ResourceRead { .. } | MarkKind::ResourceWrite { .. } | MarkKind::Info => {
                (6.0, 14.0, 12.0, "")
            }
        }
    }
}

/// A point event on a lane.
pub(super) struct Mark {
    pub(super) proc: usize,
    pub(super) at: SimTime,
    pub(super) kind: MarkKind,
    pub(super) tip: String,
    /// Words drawn beside the mark ("r1 is now master"); most marks have none.
    pub(super) label: Option<String>,
}

/// Everything the picture draws, extracted once from the history and the trace.
pub(super) struct Scene {
    pub(super) spans: Vec<Span>,
    /// Belief brackets: (client, from, believed until, end of the hold it belongs to).
    pub(super) beliefs: Vec<(usize, SimTime, SimTime, SimTime)>,
    /// Two clients holding the same lock at once: (client a, client b, from, to).
    pub(super) overlaps: Vec<(usize, usize, SimTime, SimTime)>,
    pub(super) marks: Vec<Mark>,
    /// A key's expiry next to the end of the belief it stood for.
    pub(super) gaps: Vec<Gap>,
    /// (from, to, sent, received, dropped, text, kind)
    pub(super) arrows: Vec<(usize, usize, SimTime, SimTime, bool, String, &'static str)>,
}

pub(super) fn client_colour(sc: &Scenario, p: usize) -> &'static str {
    let clients_before = sc.procs[..p]
        .iter()
        .filter(|(_, k)| *k == ProcKind::Client)
        .count();
    PALETTE[clients_before % PALETTE.len()]
}

/// Beliefs (client, from, believed until, ended) with the still-open ones indexed, so that
/// closing a client's beliefs does not scan every belief of the run (a day-long run has
/// hundreds of thousands).
#[derive(Default)]
pub(super) struct Beliefs {
    all: Vec<(usize, SimTime, SimTime, Option<SimTime>)>,
    // Invariant: exactly the indices of `all` whose end is `None`.
    open: Vec<usize>,
}

impl Beliefs {
    fn push(&mut self, c: usize, at: SimTime, until: SimTime) {
        self.open.push(self.all.len());
        self.all.push((c, at, until, None));
    }

    /// Ends every open belief of client `c` at `at`.
    fn close(&mut self, c: usize, at: SimTime) {
        let all = &mut self.all;
        self.open.retain(|&i| {
            if all[i].0 == c {
                all[i].3 = Some(at);
                false
            } else {
                true
            }
        });
    }
}

/// How a hold's bar's tip says it ended.
fn ended(how: HoldEnd) -> String {
    match how {
        HoldEnd::Released => "released".into(),
        HoldEnd::Lost(reason) => format!("lost ({reason})"),
        HoldEnd::Crashed => "its holder crashed".into(),
    }
}

pub(super) fn scene(
    sc: &Scenario,
    world: &World,
    lock_keys: &[Bytes],
    view: &View,
    violations: &[Violation],
) -> Scene {
    let names = world.names();
    let end = world.now();
    let story = story_start(world, violations);
    let mut spans: Vec<Span> = Vec::new();
    // (client, from, until, hold end once known)
    let mut beliefs = Beliefs::default();
    let mut marks = Vec::new();
    // Open intervals.
    let mut trying: Vec<(usize, SimTime)> = Vec::new();
    let mut holdings = Holdings::default();
    let mut closed_holds: Vec<(usize, u32, SimTime, SimTime)> = Vec::new();
    let mut keys: Vec<KeyLife> = Vec::new();
    let mut paused: Vec<(usize, SimTime)> = Vec::new();
    let mut token_owner: Vec<(Bytes, usize)> = Vec::new();
    let mut crashed_keys: Vec<KeyLife> = Vec::new();
    let mut down: Vec<(usize, SimTime)> = Vec::new();
    // The validity each token's key stands for, to set a key's expiry beside its end.
    let mut token_belief: Vec<Validity> = Vec::new();
    let mut gaps: Vec<Gap> = Vec::new();

    let close_hold = |spans: &mut Vec<Span>,
                      closed: &mut Vec<(usize, u32, SimTime, SimTime)>,
                      beliefs: &mut Beliefs,
                      h: &Hold,
                      at: SimTime,
                      how: &str| {
        let (c, lock, token, fence, start) = (h.client.index(), h.lock, &h.token, h.fence, h.since);
        beliefs.close(c, at);
        // A fencing token is what the resource compares: named on the bar, first.
        let label = fence.map_or(text_of(token), |f| {
            format!("token {f} · {}", text_of(token))
        });
        let fence = fence.map_or(String::new(), |f| format!(", fence {f}"));
        spans.push(Span {
            lane_proc: c,
            start,
            end: at,
            kind: SpanKind::Hold,
            fill: Some(client_colour(sc, c)),
            label,
            tip: format!(
                "{} holds lock `{}` (token {}{fence}) from {start} to {at}: {how}",
                names[c],
                lock_text(lock_keys, lock),
                text_of(token)
            ),
        });
        closed.push((c, lock, start, at));
    };
    let close_key = |spans: &mut Vec<Span>, k: KeyLife, at: SimTime, how: String| {
        let KeyLife {
            node,
            key,
            value,
            writer,
            shown_from: start,
            expire_at_ms,
            ..
        } = k;
        let expire = expire_at_ms.map_or(String::from(", no expiry"), |e| {
            format!(
                ", expires at node wall +{}",
                fmt_duration_ns(((e - sc.epoch_unix_ms).max(0) as u64) * NS_PER_MS)
            )
        });
        spans.push(Span {
            lane_proc: node,
            start,
            end: at,
            kind: SpanKind::Key,
            fill: Some(writer.map_or("#999999", |w| client_colour(sc, w))),
            label: text_of(&value),
            tip: format!(
                "{}: {} = {} from {start} to {at}{expire}; {how}",
                names[node],
                text_of(&key),
                text_of(&value)
            ),
        });
    };

    for r in &world.history.records {
        let p = r.proc.index();
        let at = r.at;
        match &r.obs {
            Observation::Attempt { .. } => {
                if !trying.iter().any(|(c, _)| *c == p) {
                    trying.push((p, at));
                }
            }
            Observation::Acquired {
                lock,
                token,
                validity_ns,
                believed_until,
                ..
            } => {
                if let Some(i) = trying.iter().position(|(c, _)| *c == p) {
                    let (_, s) = trying.swap_remove(i);
                    spans.push(trying_span(&names, p, s, at, "acquired"));
                }
                holdings.observe(r, |_| {});
                if let Some(u) = believed_until {
                    if let Some(v) = validity_ns {
                        token_belief.push(Validity {
                            client: p,
                            token: token.clone(),
                            from: at,
                            validity_ns: *v,
                            until: *u,
                        });
                    }
                    beliefs.push(p, at, *u);
                    marks.push(Mark {
                        proc: p,
                        at,
                        kind: MarkKind::Acquired,
                        tip: format!(
                            "{} acquired lock `{}` (token {}) at {at}; believes it valid for {} → until {u}",
                            names[p],
                            lock_text(lock_keys, *lock),
                            text_of(token),
                            validity_ns.map_or("?".into(), fmt_duration_ns)
                        ),
                        label: None,
                    });
                }
            }
            Observation::Extended {
                believed_until: Some(u),
                validity_ns,
                token,
                ..
            } => {
                if let Some(v) = validity_ns {
                    token_belief.push(Validity {
                        client: p,
                        token: token.clone(),
                        from: at,
                        validity_ns: *v,
                        until: *u,
                    });
                }
                beliefs.push(p, at, *u);
            }
            Observation::Extended { .. } => {}
            Observation::GaveUp { .. } => {
                if let Some(i) = trying.iter().position(|(c, _)| *c == p) {
                    let (_, s) = trying.swap_remove(i);
                    spans.push(trying_span(&names, p, s, at, "gave up"));
                }
            }
            Observation::Released { .. } | Observation::Lost { .. } => {
                holdings.observe(r, |c| {
                    if let Change::Ended { hold, at, how } = c {
                        close_hold(&mut spans, &mut closed_holds, &mut beliefs, &hold, at, &ended(how));
                    }
                });
            }
            Observation::Crashed => {
                holdings.observe(r, |c| {
                    if let Change::Ended { hold, at, how } = c {
                        close_hold(&mut spans, &mut closed_holds, &mut beliefs, &hold, at, &ended(how));
                    }
                });
                if let Some(i) = trying.iter().position(|(c, _)| *c == p) {
                    let (_, s) = trying.swap_remove(i);
                    spans.push(trying_span(&names, p, s, at, "crashed"));
                }
                if let Some(i) = paused.iter().position(|(c, _)| *c == p) {
                    let (_, s) = paused.swap_remove(i);
                    spans.push(state_span(
                        &names,
                        p,
                        s,
                        at,
                        SpanKind::Paused,
                        "crashed while paused",
                    ));
                }
                // A down node serves no key; what survives shows again if it restarts with
                // its data (the restart's load writes it back).
                while let Some(i) = keys.iter().position(|k| k.node == p) {
                    let k = keys.swap_remove(i);
                    crashed_keys.push(k.clone());
                    close_key(&mut spans, k, at, "the node crashed".into());
                }
                down.push((p, at));
            }
            Observation::Restarted { with_data } => {
                while let Some(i) = crashed_keys.iter().position(|k| k.node == p) {
                    let mut k = crashed_keys.swap_remove(i);
                    if *with_data {
                        k.shown_from = at;
                        keys.push(k);
                    }
                }
                if let Some(i) = down.iter().position(|(c, _)| *c == p) {
                    let (_, s) = down.swap_remove(i);
                    let how = if *with_data {
                        "restarted with its data"
                    } else {
                        "restarted empty"
                    };
                    spans.push(state_span(&names, p, s, at, SpanKind::Down, how));
                }
            }
            Observation::Paused => paused.push((p, at)),
            Observation::Resumed => {
                if let Some(i) = paused.iter().position(|(c, _)| *c == p) {
                    let (_, s) = paused.swap_remove(i);
                    spans.push(state_span(&names, p, s, at, SpanKind::Paused, "resumed"));
                }
            }
            Observation::KeyWritten {
                key,
                value,
                expire_at_ms,
                by,
            } if lock_keys.contains(key) => {
                if let Some(i) = keys.iter().position(|k| k.node == p && k.key == *key) {
                    let k = keys.swap_remove(i);
                    close_key(&mut spans, k, at, "overwritten".into());
                }
                // A replica's copy has no client behind the write: colour it after the
                // client whose token it carries, as the master's write said.
                let writer = match by {
                    Some(b) => {
                        token_owner.push((value.clone(), b.index()));
                        Some(b.index())
                    }
                    None => token_owner
                        .iter()
                        .rev()
                        .find(|(t, _)| t == value)
                        .map(|(_, c)| *c),
                };
                keys.push(KeyLife {
                    node: p,
                    key: key.clone(),
                    value: value.clone(),
                    writer,
                    shown_from: at,
                    written: at,
                    expire_at_ms: *expire_at_ms,
                    copied: by.is_none(),
                });
            }
            Observation::KeyRemoved { key, how, by, .. } if lock_keys.contains(key) => {
                if let Some(i) = keys.iter().position(|k| k.node == p && k.key == *key) {
                    let k = keys.swap_remove(i);
                    let writer = k.writer;
                    // When the key stopped existing for readers: its removal, or for an
                    // expiry the instant its TTL ran out on the node's clock (the active
                    // expiry cycle frees the memory up to 100 ms later).
                    let mut dead_at = at;
                    let (how_text, foreign) = match how {
                        Removal::Del => match by {
                            Some(b) => (
                                format!("deleted by {}", names[b.index()]),
                                writer.is_some_and(|w| w != b.index()),
                            ),
                            None => ("deleted (its master's DEL, replicated)".into(), false),
                        },
                        Removal::Expired => {
                            let e = explain(
                                world,
                                &names,
                                sc.epoch_unix_ms,
                                &k,
                                at,
                                token_belief.iter().rev().find(|b| b.token == k.value),
                                holdings.open().any(|h| h.token == k.value),
                            );
                            dead_at = e.at;
                            marks.push(Mark {
                                proc: p,
                                at: dead_at,
                                kind: MarkKind::Expiry,
                                tip: e.tip,
                                label: Some(e.label),
                            });
                            gaps.extend(e.gap);
                            ("expired".into(), false)
                        }
                        Removal::Overwritten => ("overwritten".into(), false),
                        Removal::Flushed => {
                            ("flushed (restart without data or resync)".into(), false)
                        }
                    };
                    if foreign {
                        marks.push(Mark {
                            proc: p,
                            at,
                            kind: MarkKind::ForeignDelete,
                            tip: format!(
                                "{}: {} deleted a lock key holding another client's token ({})",
                                names[p],
                                by.map_or("?", |b| names[b.index()].as_str()),
                                text_of(&k.value)
                            ),
                            label: None,
                        });
                    }
                    close_key(&mut spans, k, dead_at, how_text);
                }
            }
            Observation::KeyWritten { .. } | Observation::KeyRemoved { .. } => {}
            Observation::ResourceRead {
                accepted,
                token: fence,
                ..
            }
            | Observation::ResourceWrite {
                accepted,
                token: fence,
                ..
            } => {
                let write = matches!(r.obs, Observation::ResourceWrite { .. });
                // The token the resource compared, named beside a write or a refusal from
                // where the story starts (the set-up's many writes would bury each other's
                // names, and a read just before its write would sit on the write's).
                let named = (write || !*accepted) && story.is_none_or(|s| at >= s);
                let label = fence.filter(|_| named).map(|f| {
                    format!("token {f}{}", if *accepted { "" } else { " ✗ refused" })
                });
                marks.push(Mark {
                    proc: p,
                    at,
                    kind: if write {
                        MarkKind::ResourceWrite {
                            accepted: *accepted,
                        }
                    } else {
                        MarkKind::ResourceRead {
                            accepted: *accepted,
                        }
                    },
                    tip: crate::view::timeline::resource_op(&r.obs, &names).unwrap_or_default(),
                    label,
                })
            }
            Observation::Fault { what } => marks.push(Mark {
                proc: p,
                at,
                kind: MarkKind::Fault,
                tip: format!("fault at {at}: {what}"),
                label: None,
            }),
            Observation::Sentinel { what } | Observation::Replication { what } => {
                marks.push(Mark {
                    proc: p,
                    at,
                    kind: MarkKind::Info,
                    tip: format!("{} at {at}: {what}", names[p]),
                    label: None,
                })
            }
            Observation::Note(what) => marks.push(Mark {
                proc: p,
                at,
                kind: MarkKind::Info,
                tip: format!("{} at {at}: {what}", names[p]),
                label: None,
            }),
            // Said in words where a reader looks for it: on the lane of the new master.
            Observation::Fact(crate::history::Fact::Promoted) => marks.push(Mark {
                proc: p,
                at,
                kind: MarkKind::Promoted,
                tip: format!(
                    "{} is now master (promoted at {at}): clients that follow the failover write their locks here, and the keys it holds are only what replication had brought it",
                    names[p]
                ),
                label: Some(format!("{} is now master", names[p])),
            }),
            // Said in words by the fault and replication marks.
            Observation::Fact(_) => {}
        }
    }
    for (c, s) in trying {
        spans.push(trying_span(&names, c, s, end, "still trying at the end"));
    }
    for h in holdings.open() {
        close_hold(
            &mut spans,
            &mut closed_holds,
            &mut beliefs,
            h,
            end,
            "still held at the end",
        );
    }
    for k in keys {
        close_key(&mut spans, k, end, "still there at the end".into());
    }
    for (p, s) in paused {
        spans.push(state_span(
            &names,
            p,
            s,
            end,
            SpanKind::Paused,
            "still paused at the end",
        ));
    }
    for (p, s) in down {
        spans.push(state_span(
            &names,
            p,
            s,
            end,
            SpanKind::Down,
            "still down at the end",
        ));
    }
    network_fault_spans(world, &names, &mut spans);

    // Two holders of one lock at once: where safety broke.
    // Candidates by a sweep over the holds sorted by start (a day-long run has hundreds of
    // thousands: every pair would be ~10^10), then taken in the order of the pairs' indices.
    let mut overlaps = Vec::new();
    let mut by_start: Vec<usize> = (0..closed_holds.len()).collect();
    by_start.sort_unstable_by_key(|&i| (closed_holds[i].2, i));
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (x, &i) in by_start.iter().enumerate() {
        for &j in &by_start[x + 1..] {
            // Sorted by start: once one starts after `i` ends, so do all the rest.
            if closed_holds[j].2 >= closed_holds[i].3 {
                break;
            }
            pairs.push((i.min(j), i.max(j)));
        }
    }
    pairs.sort_unstable();
    for (i, j) in pairs {
        let (a, b) = (closed_holds[i], closed_holds[j]);
        let (s, e) = (a.2.max(b.2), a.3.min(b.3));
        if a.0 != b.0 && a.1 == b.1 && s < e {
            overlaps.push((a.0, b.0, s, e));
        }
    }
    // Clock steps and drift changes show where they happen.
    for f in &world.applied_faults {
        if let FaultKind::ClockStep { proc, .. } | FaultKind::Drift { proc, .. } = &f.kind {
            marks.push(Mark {
                proc: proc.index(),
                at: f.at,
                kind: MarkKind::ClockChange,
                tip: format!("at {}: {}", f.at, world.describe_fault(f)),
                label: None,
            });
        }
    }
    Scene {
        spans,
        beliefs: beliefs
            .all
            .into_iter()
            .map(|(c, a, u, e)| (c, a, u, e.unwrap_or(end)))
            .collect(),
        overlaps,
        marks,
        gaps,
        arrows: arrows(world, &names, view, violations),
    }
}

pub(super) fn trying_span(names: &[String], p: usize, s: SimTime, e: SimTime, how: &str) -> Span {
    Span {
        lane_proc: p,
        start: s,
        end: e,
        kind: SpanKind::Trying,
        fill: None,
        label: String::new(),
        tip: format!("{} tries to lock from {s} to {e}: {how}", names[p]),
    }
}

pub(super) fn state_span(
    names: &[String],
    p: usize,
    s: SimTime,
    e: SimTime,
    kind: SpanKind,
    how: &str,
) -> Span {
    Span {
        lane_proc: p,
        start: s,
        end: e,
        kind,
        fill: None,
        label: kind.class().to_string(),
        tip: format!(
            "{} {} from {s} to {e} ({}): {how}",
            names[p],
            kind.class(),
            fmt_duration_ns(e.0 - s.0)
        ),
    }
}

/// Partitions, isolations, latency spikes and loss as spans on the lanes they cut off, from
/// each fault's opening to its closing (or the end of the run).
pub(super) fn network_fault_spans(world: &World, names: &[String], spans: &mut Vec<Span>) {
    let list = |ps: &[ProcId]| {
        ps.iter()
            .map(|p| names[p.index()].as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    for f in &world.applied_faults {
        let Some((from, to, effect)) = f.kind.links() else {
            // Drawn from the history: pauses and downs as state spans, clock changes as
            // marks on their lanes.
            continue;
        };
        // The smaller side is the one cut off: with a partition of one process from the
        // rest, that single process's lane is marked.
        let (marked, links) = if to.is_empty() {
            (from, String::new())
        } else {
            (
                if from.len() <= to.len() { from } else { to },
                format!(" ({} → {})", list(from), list(to)),
            )
        };
        let kind = match effect {
            LinkEffect::Cut => SpanKind::Partition,
            LinkEffect::Slowed => SpanKind::Slow,
        };
        let until = f.end().map_or(world.now(), |e| e.min(world.now()));
        let what = format!("{}{links}", world.describe_fault(f));
        for p in marked {
            spans.push(Span {
                lane_proc: p.index(),
                start: f.at,
                end: until,
                kind,
                fill: None,
                label: String::new(),
                tip: format!("{what} from {} to {until}", f.at),
            });
        }
    }
}

pub(super) type Arrow = (usize, usize, SimTime, SimTime, bool, String, &'static str);

pub(super) fn arrows(
    world: &World,
    names: &[String],
    view: &View,
    violations: &[Violation],
) -> Vec<Arrow> {
    let mut out: Vec<Arrow> = Vec::new();
    for e in &world.trace.entries {
        let (from, msg, sent, dropped) = match &e.kind {
            TraceKind::Recv { from, msg, sent_at } => (from, msg, *sent_at, None),
            TraceKind::Dropped {
                from,
                msg,
                reason,
                sent_at,
            } => (from, msg, *sent_at, Some(reason.as_str())),
            _ => continue,
        };
        if e.at < view.arrows_from || sent > view.arrows_to {
            continue;
        }
        let kind = match msg {
            Msg::Request { .. } | Msg::ResourceRead { .. } | Msg::ResourceWrite { .. } => "req",
            Msg::Reply { .. }
            | Msg::ResourceAck { .. }
            | Msg::Push { .. }
            | Msg::Refused { .. } => "rep",
            Msg::SentinelReq { .. } | Msg::SentinelResp { .. } | Msg::Repl(_) => "bg",
            Msg::Consensus(_) => "req",
        };
        let text = format!(
            "{} → {}: {}{} (sent {sent}, {} {})",
            names[from.index()],
            names[e.proc.index()],
            describe_msg(msg),
            dropped.map_or(String::new(), |r| format!(" — DROPPED: {r}")),
            if dropped.is_some() {
                "dropped"
            } else {
                "received"
            },
            e.at
        );
        out.push((
            from.index(),
            e.proc.index(),
            sent,
            e.at,
            dropped.is_some(),
            text,
            kind,
        ));
    }
    if out.len() > view.max_arrows {
        match violations.iter().map(|v| v.at).min() {
            // The ones nearest the first violation, in time order.
            Some(focus) => {
                let dist = |a: &Arrow| a.3.0.abs_diff(focus.0);
                out.sort_by_key(|a| (dist(a), a.3, a.2));
                out.truncate(view.max_arrows);
                out.sort_by_key(|a| (a.3, a.2));
            }
            // Nothing broke: a sample spread over the window.
            None => {
                let every = out.len().div_ceil(view.max_arrows);
                out = out.into_iter().step_by(every).collect();
            }
        }
    }
    out
}

/// Lane order: clients on top (as in the hand-drawn pictures), then the resource they
/// protect, the Redis nodes, sentinels and the consensus service.
pub(super) fn lane_order(sc: &Scenario) -> Vec<usize> {
    let rank = |k: ProcKind| match k {
        ProcKind::Client => 0,
        ProcKind::Resource => 1,
        ProcKind::Redis => 2,
        ProcKind::Sentinel => 3,
        ProcKind::Consensus => 4,
    };
    let mut order: Vec<usize> = (0..sc.procs.len()).collect();
    order.sort_by_key(|&i| (rank(sc.procs[i].1), i));
    order
}

impl View {
    /// `self` on `window` instead (the user's `--window`), arrows for that window.
    pub(super) fn on(self, window: Option<(SimTime, SimTime)>) -> View {
        match window {
            Some((from, to)) => View {
                from,
                to,
                arrows_from: self.arrows_from.min(from),
                arrows_to: self.arrows_to.max(to),
                ..self
            },
            None => self,
        }
    }
}
