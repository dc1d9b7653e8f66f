//! The run as a picture: an SVG timeline (lanes per actor, true time across) and the same
//! picture in a self-contained HTML page that zooms, pans and explains what is under the
//! pointer. Drawn the way the Redis docs and Kleppmann draw lock races by hand: lock-holding
//! bars per client next to the belief they act on, the lock key's life on each node, each
//! node's wall clock beside true time, messages as arrows, faults as marked spans and the
//! violation in red where the bars overlap.
//!
//! Every element placed in time carries `data-t0` (and `data-t1`) in nanoseconds of true
//! time, so the page's script can lay the picture out again for any zoom; the static SVG is
//! laid out once, by the same formula, for a window around the first violation.

use std::fmt::Write as _;

use crate::check::Violation;
use crate::history::{Observation, Removal};
use crate::proto::{Bytes, Msg};
use crate::scenario::{ProcKind, Scenario};
use crate::sim::World;
use crate::sim::fault::{FaultKind, LinkEffect};
use crate::sim::trace::{TraceKind, describe_msg};
use crate::time::{NS_PER_MS, NS_PER_S, ProcId, SimTime, fmt_duration_ns};

/// Width of the picture in pixels.
const WIDTH_PX: f64 = 1200.0;
/// Left edge of the plot: lane labels live left of it.
const PLOT_X0: f64 = 180.0;
/// Right edge of the plot.
const PLOT_X1: f64 = 1185.0;
/// Height of one lane.
const LANE_PX: f64 = 50.0;
/// At most this many message arrows in the static picture (the page draws more): the ones
/// nearest to the first violation.
const ARROWS_STATIC: usize = 300;
const ARROWS_PAGE: usize = 3000;
/// More arrows than this in the first window make a run busy: its arrows hide the lanes and
/// the clock labels (redlock-clock-jump has ~400 between 11 and 16 s), so they are off until
/// the reader asks.
const BUSY_ARROWS: usize = 120;
/// Points sampled along a clock-offset curve (clock steps add their own).
const CLOCK_SAMPLES: u64 = 240;
/// A run without a violation is pictured over its first this-many nanoseconds: enough for a
/// few rounds of every catalogue model, few enough to read.
const QUIET_WINDOW_NS: u64 = 20 * NS_PER_S;
/// Client colours; red is kept for violations.
const PALETTE: [&str; 8] = [
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

    fn x(&self, t: SimTime) -> f64 {
        let w = (self.to.0 - self.from.0).max(1) as f64;
        PLOT_X0 + (t.0 as f64 - self.from.0 as f64) / w * (PLOT_X1 - PLOT_X0)
    }

    /// Whether `[a, b]` shows in the window (static pictures leave the rest out).
    fn shows(&self, a: SimTime, b: SimTime) -> bool {
        b >= self.from && a <= self.to
    }
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

/// Escapes text for XML attributes and content.
fn esc(s: &str) -> String {
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
fn lock_text(lock_keys: &[Bytes], lock: u32) -> String {
    lock_keys
        .get(lock as usize)
        .map_or_else(|| lock.to_string(), text_of)
}

fn text_of(b: &Bytes) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What a span on a lane shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SpanKind {
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
    const LAYERS: [SpanKind; 7] = [
        SpanKind::Partition,
        SpanKind::Slow,
        SpanKind::Down,
        SpanKind::Paused,
        SpanKind::Trying,
        SpanKind::Key,
        SpanKind::Hold,
    ];

    /// The CSS class (and, for states, the label) in the picture.
    fn class(self) -> &'static str {
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
    fn band(self) -> (f64, f64) {
        match self {
            SpanKind::Partition | SpanKind::Slow => (2.0, 6.0),
            SpanKind::Down | SpanKind::Paused => (4.0, LANE_PX - 8.0),
            SpanKind::Trying => (20.0, 2.0),
            SpanKind::Hold | SpanKind::Key => (12.0, 16.0),
        }
    }
}

/// A span on a lane.
struct Span {
    lane_proc: usize,
    start: SimTime,
    end: SimTime,
    kind: SpanKind,
    fill: Option<&'static str>,
    label: String,
    tip: String,
}

/// What a point event on a lane shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MarkKind {
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
    fn class(self) -> &'static str {
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
    fn shape(self) -> (f64, f64, f64, &'static str) {
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
struct Mark {
    proc: usize,
    at: SimTime,
    kind: MarkKind,
    tip: String,
    /// Words drawn beside the mark ("r1 is now master"); most marks have none.
    label: Option<String>,
}

/// A lock key's expiry on a node and the end of the belief of the client whose token it
/// held: joined by a dotted line, so the gap between them is seen.
struct Gap {
    client: usize,
    believed_until: SimTime,
    node: usize,
    expired_at: SimTime,
}

/// Everything the picture draws, extracted once from the history and the trace.
struct Scene {
    spans: Vec<Span>,
    /// Belief brackets: (client, from, believed until, end of the hold it belongs to).
    beliefs: Vec<(usize, SimTime, SimTime, SimTime)>,
    /// Two clients holding the same lock at once: (client a, client b, from, to).
    overlaps: Vec<(usize, usize, SimTime, SimTime)>,
    marks: Vec<Mark>,
    /// A key's expiry next to the end of the belief it stood for.
    gaps: Vec<Gap>,
    /// (from, to, sent, received, dropped, text, kind)
    arrows: Vec<(usize, usize, SimTime, SimTime, bool, String, &'static str)>,
}

fn client_colour(sc: &Scenario, p: usize) -> &'static str {
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
struct Beliefs {
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

fn scene(
    sc: &Scenario,
    world: &World,
    lock_keys: &[Bytes],
    view: &View,
    violations: &[Violation],
) -> Scene {
    let names = world.names();
    let end = world.now();
    let mut spans: Vec<Span> = Vec::new();
    // (client, from, until, hold end once known)
    let mut beliefs = Beliefs::default();
    let mut marks = Vec::new();
    // Open intervals.
    let mut trying: Vec<(usize, SimTime)> = Vec::new();
    // (client, lock, token, fence, start)
    let mut holds: Vec<(usize, u32, Bytes, Option<u64>, SimTime)> = Vec::new();
    let mut closed_holds: Vec<(usize, u32, SimTime, SimTime)> = Vec::new();
    // (node, key, value, writer, start, expire_at_ms)
    type OpenKey = (usize, Bytes, Bytes, Option<usize>, SimTime, Option<i64>);
    let mut keys: Vec<OpenKey> = Vec::new();
    let mut paused: Vec<(usize, SimTime)> = Vec::new();
    let mut token_owner: Vec<(Bytes, usize)> = Vec::new();
    let mut crashed_keys: Vec<OpenKey> = Vec::new();
    let mut down: Vec<(usize, SimTime)> = Vec::new();
    // (token, client, believed until): the belief each token's key stands for, to set a
    // key's expiry beside the end of that belief.
    let mut token_belief: Vec<(Bytes, usize, SimTime)> = Vec::new();
    let mut gaps: Vec<Gap> = Vec::new();

    let close_hold = |spans: &mut Vec<Span>,
                      closed: &mut Vec<(usize, u32, SimTime, SimTime)>,
                      beliefs: &mut Beliefs,
                      h: (usize, u32, Bytes, Option<u64>, SimTime),
                      at: SimTime,
                      how: &str| {
        let (c, lock, token, fence, start) = h;
        beliefs.close(c, at);
        let fence = fence.map_or(String::new(), |f| format!(", fence {f}"));
        spans.push(Span {
            lane_proc: c,
            start,
            end: at,
            kind: SpanKind::Hold,
            fill: Some(client_colour(sc, c)),
            label: text_of(&token),
            tip: format!(
                "{} holds lock `{}` (token {}{fence}) from {start} to {at}: {how}",
                names[c],
                lock_text(lock_keys, lock),
                text_of(&token)
            ),
        });
        closed.push((c, lock, start, at));
    };
    let close_key = |spans: &mut Vec<Span>, k: OpenKey, at: SimTime, how: String| {
        let (node, key, value, writer, start, expire) = k;
        let expire = expire.map_or(String::from(", no expiry"), |e| {
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
                fence,
                validity_ns,
                believed_until,
            } => {
                if let Some(i) = trying.iter().position(|(c, _)| *c == p) {
                    let (_, s) = trying.swap_remove(i);
                    spans.push(trying_span(&names, p, s, at, "acquired"));
                }
                holds.push((p, *lock, token.clone(), *fence, at));
                if let Some(u) = believed_until {
                    token_belief.push((token.clone(), p, *u));
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
                token,
                ..
            } => {
                token_belief.push((token.clone(), p, *u));
                beliefs.push(p, at, *u);
            }
            Observation::Extended { .. } => {}
            Observation::GaveUp { .. } => {
                if let Some(i) = trying.iter().position(|(c, _)| *c == p) {
                    let (_, s) = trying.swap_remove(i);
                    spans.push(trying_span(&names, p, s, at, "gave up"));
                }
            }
            Observation::Released { token, .. } | Observation::Lost { token, .. } => {
                let how = match &r.obs {
                    Observation::Lost { reason, .. } => format!("lost ({reason})"),
                    _ => "released".into(),
                };
                if let Some(i) = holds.iter().position(|h| h.0 == p && h.2 == *token) {
                    let h = holds.swap_remove(i);
                    close_hold(&mut spans, &mut closed_holds, &mut beliefs, h, at, &how);
                }
            }
            Observation::Crashed => {
                while let Some(i) = holds.iter().position(|h| h.0 == p) {
                    let h = holds.swap_remove(i);
                    close_hold(
                        &mut spans,
                        &mut closed_holds,
                        &mut beliefs,
                        h,
                        at,
                        "its holder crashed",
                    );
                }
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
                while let Some(i) = keys.iter().position(|k| k.0 == p) {
                    let k = keys.swap_remove(i);
                    crashed_keys.push(k.clone());
                    close_key(&mut spans, k, at, "the node crashed".into());
                }
                down.push((p, at));
            }
            Observation::Restarted { with_data } => {
                while let Some(i) = crashed_keys.iter().position(|k| k.0 == p) {
                    let mut k = crashed_keys.swap_remove(i);
                    if *with_data {
                        k.4 = at;
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
                if let Some(i) = keys.iter().position(|k| k.0 == p && k.1 == *key) {
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
                keys.push((p, key.clone(), value.clone(), writer, at, *expire_at_ms));
            }
            Observation::KeyRemoved { key, how, by, .. } if lock_keys.contains(key) => {
                if let Some(i) = keys.iter().position(|k| k.0 == p && k.1 == *key) {
                    let k = keys.swap_remove(i);
                    let writer = k.3;
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
                            dead_at = expiry_instant(world, p, k.4, at, k.5);
                            let (label, tip, gap) = expiry_words(
                                sc,
                                &names,
                                p,
                                &k,
                                dead_at,
                                at,
                                token_belief.iter().rev().find(|(t, _, _)| *t == k.2),
                                holds.iter().any(|h| h.2 == k.2),
                            );
                            marks.push(Mark {
                                proc: p,
                                at: dead_at,
                                kind: MarkKind::Expiry,
                                tip,
                                label: Some(label),
                            });
                            gaps.extend(gap);
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
                                text_of(&k.2)
                            ),
                            label: None,
                        });
                    }
                    close_key(&mut spans, k, dead_at, how_text);
                }
            }
            Observation::KeyWritten { .. } | Observation::KeyRemoved { .. } => {}
            Observation::ResourceRead { accepted, .. }
            | Observation::ResourceWrite { accepted, .. } => {
                let write = matches!(r.obs, Observation::ResourceWrite { .. });
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
                    label: None,
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
    for h in holds {
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

/// The words for a lock key's expiry: the label beside its mark, the tooltip, and the gap
/// to the belief of the client whose token it held. The belief is measured on the client's
/// clock from before its SET; the key's TTL on the node's clock from the write: the two ends
/// differ by the round trip and by what the two clocks did, and the lesson of most pitfalls
/// is which comes first.
/// The first true instant in `written..=removed` at which `node`'s wall clock is past
/// `expire_at_ms` (Redis: a key is expired once `mstime() > when`); `removed` without one.
fn expiry_instant(
    world: &World,
    node: usize,
    written: SimTime,
    removed: SimTime,
    expire_at_ms: Option<i64>,
) -> SimTime {
    let Some(when) = expire_at_ms else {
        return removed;
    };
    let clock = world.clock(ProcId(node as u32));
    let (mut lo, mut hi) = (written.0, removed.0);
    if clock.wall_ms(SimTime(hi)) <= when {
        return removed;
    }
    // Invariant: the clock is past `when` at `hi`, and not at `lo` unless lo == written.
    if clock.wall_ms(SimTime(lo)) > when {
        return written;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if clock.wall_ms(SimTime(mid)) > when {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    SimTime(hi)
}

#[allow(clippy::too_many_arguments)]
fn expiry_words(
    sc: &Scenario,
    names: &[String],
    node: usize,
    k: &(usize, Bytes, Bytes, Option<usize>, SimTime, Option<i64>),
    at: SimTime,
    removed: SimTime,
    belief: Option<&(Bytes, usize, SimTime)>,
    still_held: bool,
) -> (String, String, Option<Gap>) {
    let wall = k.5.map_or(String::new(), |e| {
        format!(
            " (at +{} on {}'s clock)",
            fmt_duration_ns(((e - sc.epoch_unix_ms).max(0) as u64) * NS_PER_MS),
            names[node]
        )
    });
    let freed = if removed > at {
        format!("; freed at {removed} by the expiry cycle")
    } else {
        String::new()
    };
    let head = format!(
        "{}: key {} (token {}) expired at {at}{wall}{freed}",
        names[node],
        text_of(&k.1),
        text_of(&k.2)
    );
    let Some((_, c, until)) = belief else {
        return ("key expires".into(), head, None);
    };
    let holder = &names[*c];
    let held = if still_held {
        format!(" {holder} still holds the lock now: it acts on a lock that is gone.")
    } else {
        String::new()
    };
    let (label, why) = if *until > at {
        let d = fmt_duration_ns(until.0 - at.0);
        (
            format!("key expires {d} before {holder}'s belief ends"),
            format!(
                "{holder} believed it valid until {until}, {d} LATER: for that long it believes in a key that no longer exists (its clock ran slow, or the node's ran fast)."
            ),
        )
    } else {
        let d = fmt_duration_ns(at.0 - until.0);
        (
            format!("key expires ({d} after {holder}'s belief)"),
            format!(
                "{holder} believed it valid until {until}, {d} earlier: it counts its validity from before it sent SET, the node from when it wrote the key, so the belief should end first (dashed line)."
            ),
        )
    };
    (
        label,
        format!("{head}. {why}{held}"),
        Some(Gap {
            client: *c,
            believed_until: *until,
            node,
            expired_at: at,
        }),
    )
}

fn trying_span(names: &[String], p: usize, s: SimTime, e: SimTime, how: &str) -> Span {
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

fn state_span(
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
fn network_fault_spans(world: &World, names: &[String], spans: &mut Vec<Span>) {
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

type Arrow = (usize, usize, SimTime, SimTime, bool, String, &'static str);

fn arrows(world: &World, names: &[String], view: &View, violations: &[Violation]) -> Vec<Arrow> {
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
fn lane_order(sc: &Scenario) -> Vec<usize> {
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

/// A "nice" tick step (1, 2 or 5 × 10^k ns) giving about `n` ticks over `span_ns`.
fn tick_step_ns(span_ns: u64, n: u64) -> u64 {
    let raw = (span_ns / n.max(1)).max(1);
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if step.saturating_mul(m) >= raw {
                return step * m;
            }
        }
        step = step.saturating_mul(10);
    }
}

fn fmt_tick(t_ns: u64, step_ns: u64) -> String {
    let decimals = if step_ns >= NS_PER_S {
        0
    } else if step_ns >= NS_PER_S / 10 {
        1
    } else if step_ns >= NS_PER_S / 100 {
        2
    } else if step_ns >= NS_PER_MS {
        3
    } else {
        6
    };
    format!("{:.*}s", decimals, t_ns as f64 / NS_PER_S as f64)
}

fn fmt_signed_ms(ms: i64) -> String {
    if ms == 0 {
        return "±0".into();
    }
    let s = fmt_duration_ns(ms.unsigned_abs() * NS_PER_MS);
    if ms < 0 {
        format!("−{s}")
    } else {
        format!("+{s}")
    }
}

/// Clock offset (wall − true time) of a process, sampled over `[from, to]`, with the
/// instants just before and at every step; `None` when the clock never deviates.
fn clock_curve(
    world: &World,
    epoch_unix_ms: i64,
    p: usize,
    from: SimTime,
    to: SimTime,
) -> Option<Vec<(u64, f64)>> {
    let clock = world.clock(ProcId(p as u32));
    let epoch_ns = i128::from(epoch_unix_ms) * 1_000_000;
    let offset_ms = |t: u64| (clock.wall_ns(SimTime(t)) - epoch_ns - t as i128) as f64 / 1e6;
    let mut ts: Vec<u64> = (0..=CLOCK_SAMPLES)
        .map(|i| from.0 + (to.0 - from.0) / CLOCK_SAMPLES * i)
        .collect();
    ts.push(to.0);
    for f in &world.applied_faults {
        if let FaultKind::ClockStep { proc, .. } = &f.kind
            && proc.index() == p
            && f.at >= from
            && f.at <= to
        {
            ts.push(f.at.0.saturating_sub(1));
            ts.push(f.at.0);
        }
    }
    ts.sort_unstable();
    ts.dedup();
    let pts: Vec<(u64, f64)> = ts.into_iter().map(|t| (t, offset_ms(t))).collect();
    let moved = pts.iter().any(|(_, o)| o.abs() >= 0.001);
    moved.then_some(pts)
}

/// Everything needed to write the SVG.
struct Layout<'a> {
    sc: &'a Scenario,
    world: &'a World,
    view: View,
    lane_of: Vec<usize>,
    top: f64,
    /// Whether elements outside the window are left out (the static picture).
    clip_to_window: bool,
}

impl Layout<'_> {
    fn lane_y(&self, p: usize) -> f64 {
        self.top + self.lane_of[p] as f64 * LANE_PX
    }
    fn x(&self, t: SimTime) -> f64 {
        self.view.x(t)
    }
    fn keep(&self, a: SimTime, b: SimTime) -> bool {
        !self.clip_to_window || self.view.shows(a, b)
    }
}

fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for w in s.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + w.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// The timeline as a standalone SVG document. `page` adds what the HTML page's script needs
/// (every element of the run, not only the window's) and leaves the header to the page.
fn render_svg(
    sc: &Scenario,
    seed: u64,
    world: &World,
    violations: &[Violation],
    view: View,
    page: bool,
) -> String {
    let lock_keys = sc.lock_keys();
    let order = lane_order(sc);
    let mut lane_of = vec![0; order.len()];
    for (i, &p) in order.iter().enumerate() {
        lane_of[p] = i;
    }
    let names = world.names();
    let scene = scene(sc, world, &lock_keys, &view, violations);
    let end = world.now();
    let in_window = scene
        .arrows
        .iter()
        .filter(|a| a.3 >= view.from && a.2 <= view.to)
        .count();
    // Busy: the arrows would bury the lanes and the clock labels. The page hides them until
    // asked; the static picture leaves them out.
    let busy_run = in_window > BUSY_ARROWS;
    let busy = busy_run && !page;

    // Header text (the static picture carries its own explanation).
    let mut header: Vec<(String, &str)> = Vec::new();
    if !page {
        let verdict = if violations.is_empty() {
            "no violation".to_string()
        } else {
            let mut props: Vec<String> =
                violations.iter().map(|v| v.property.to_string()).collect();
            props.dedup();
            format!("VIOLATED: {}", props.join(", "))
        };
        header.push((format!("{} — seed {seed} — {verdict}", sc.name), "title"));
        for l in wrap(&sc.model.description, 170) {
            header.push((l, "sub"));
        }
        header.push((
            format!(
                "true time {} … {} of {}; replay: {}",
                view.from,
                view.to,
                end,
                sc.replay_command(seed)
            ),
            "sub",
        ));
        for (i, v) in violations.iter().take(3).enumerate() {
            let line = format!("({}) {} at {}: {}", i + 1, v.property, v.at, v.message);
            for l in wrap(&line, 170) {
                header.push((l, "vtext"));
            }
        }
        if violations.len() > 3 {
            header.push((
                format!("… {} more violations", violations.len() - 3),
                "vtext",
            ));
        }
        if busy {
            header.push((
                format!(
                    "{in_window} message arrows in this window are not drawn (a busy run: they would hide the lanes); the HTML page (--format html) shows them on demand"
                ),
                "sub",
            ));
        }
    }
    let legend_y = 14.0 + header.len() as f64 * 16.0 + 8.0;
    let mut legend_svg = String::new();
    let legend_h = legend(&mut legend_svg, legend_y);
    let axis_y = legend_y + legend_h + 10.0;
    let top = axis_y + 8.0;
    let height = top + order.len() as f64 * LANE_PX + 24.0;
    let l = Layout {
        sc,
        world,
        view,
        lane_of,
        top,
        clip_to_window: !page,
    };

    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" id="timeline" width="{WIDTH_PX}" height="{height}" viewBox="0 0 {WIDTH_PX} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11" data-w0="{}" data-w1="{}" data-end="{}" data-x0="{PLOT_X0}" data-x1="{PLOT_X1}" data-top="{top}" data-bottom="{}" data-msgs="{in_window}"{}>"##,
        view.from.0,
        view.to.0,
        end.0,
        top + order.len() as f64 * LANE_PX,
        match (page, busy_run) {
            (true, true) => r#" class="timeline nomsgs""#,
            (true, false) => r#" class="timeline""#,
            _ => "",
        }
    );
    s.push_str(
        STYLE_AND_DEFS
            .replace("PLOTX0", &PLOT_X0.to_string())
            .replace("PLOTW", &(PLOT_X1 - PLOT_X0).to_string())
            .replace("PLOTY", &(top - 2.0).to_string())
            .replace("PLOTH", &(order.len() as f64 * LANE_PX + 4.0).to_string())
            .as_str(),
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    for (i, (line, class)) in header.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text class="{class}" x="10" y="{}">{}</text>"#,
            20.0 + i as f64 * 16.0,
            esc(line)
        );
    }
    s.push_str(&legend_svg);

    // Lanes: background, name, role and what the clock does.
    for (i, &p) in order.iter().enumerate() {
        let y = top + i as f64 * LANE_PX;
        let fill = if i % 2 == 0 { "#f7f7f7" } else { "#ffffff" };
        let _ = writeln!(
            s,
            r#"<rect x="0" y="{y}" width="{WIDTH_PX}" height="{LANE_PX}" fill="{fill}"/>"#
        );
        let role = match sc.procs[p].1 {
            ProcKind::Client => "client",
            ProcKind::Redis => "redis",
            ProcKind::Resource => "resource",
            ProcKind::Sentinel => "sentinel",
            ProcKind::Consensus => "consensus",
        };
        let colour = if sc.procs[p].1 == ProcKind::Client {
            client_colour(sc, p)
        } else {
            "#333333"
        };
        // Whether the node's wall clock ever leaves true time: then its lane carries the
        // offset curve; otherwise its reading is the axis.
        let clock = if clock_curve(world, sc.epoch_unix_ms, p, SimTime::ZERO, end).is_some() {
            "wall clock: curve below"
        } else {
            "wall clock = true time"
        };
        let _ = writeln!(
            s,
            r#"<text class="lane" x="8" y="{}" fill="{colour}">{}</text><text class="role" x="8" y="{}">{role}</text><text class="role" x="8" y="{}">{clock}</text>"#,
            y + 17.0,
            esc(&names[p]),
            y + 29.0,
            y + 40.0
        );
    }
    // Axis ticks (the page's script redraws them on zoom).
    let _ = writeln!(s, r#"<g id="ticks">"#);
    let span = view.to.0 - view.from.0;
    let step = tick_step_ns(span, 10);
    let first = view.from.0.div_ceil(step) * step;
    let mut t = first;
    while t <= view.to.0 {
        let x = l.x(SimTime(t));
        let _ = writeln!(
            s,
            r#"<line class="grid" x1="{x:.1}" x2="{x:.1}" y1="{axis_y}" y2="{}"/><text class="tick" x="{x:.1}" y="{}">{}</text>"#,
            top + order.len() as f64 * LANE_PX,
            axis_y - 4.0,
            fmt_tick(t, step)
        );
        t += step;
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(
        s,
        r#"<text class="axis" x="8" y="{}">true time →</text>"#,
        axis_y - 4.0
    );

    let _ = writeln!(s, r#"<g id="plot" clip-path="url(#plotclip)">"#);
    draw_spans(&mut s, &l, &scene);
    draw_clocks(&mut s, &l, &order, &names);
    if busy {
        // Left out of the static picture: on a busy run they hide the lanes and the clocks.
        let _ = writeln!(s, r#"<g id="msgs"></g>"#);
    } else {
        let _ = writeln!(s, r#"<g id="msgs">"#);
        draw_arrows(&mut s, &l, &scene);
        let _ = writeln!(s, "</g>");
    }
    draw_gaps(&mut s, &l, &scene);
    draw_marks(&mut s, &l, &scene);
    draw_violations(&mut s, &l, violations, order.len());
    let _ = writeln!(s, "</g>");
    s.push_str("</svg>\n");
    s
}

/// `<title>` child: the tooltip of SVG viewers; the page turns it into its own.
fn title(tip: &str) -> String {
    format!("<title>{}</title>", esc(tip))
}

fn draw_spans(s: &mut String, l: &Layout<'_>, scene: &Scene) {
    // Overlaps go on top of everything, after this.
    for kind in SpanKind::LAYERS {
        let class = kind.class();
        for sp in scene.spans.iter().filter(|sp| sp.kind == kind) {
            if !l.keep(sp.start, sp.end) {
                continue;
            }
            let (top, h) = kind.band();
            let y = l.lane_y(sp.lane_proc) + top;
            let x0 = l.x(sp.start);
            // The static picture leaves out key writes and tries too short to see (a failed
            // Redlock round writes and deletes its key on every node within milliseconds).
            if l.clip_to_window
                && matches!(kind, SpanKind::Key | SpanKind::Trying)
                && l.x(sp.end) - x0 < 0.5
            {
                continue;
            }
            let w = (l.x(sp.end) - x0).max(1.0);
            let fill = sp.fill.map_or(String::new(), |f| format!(r#" fill="{f}""#));
            let _ = write!(
                s,
                r#"<rect class="{class}" data-t0="{}" data-t1="{}" x="{x0:.1}" y="{y}" width="{w:.1}" height="{h}"{fill}>{}</rect>"#,
                sp.start.0,
                sp.end.0,
                title(&sp.tip)
            );
            if !sp.label.is_empty() {
                // Labels show only where their bar is wide enough (the script re-decides).
                let min_w = sp.label.chars().count() as f64 * 6.2 + 6.0;
                if w < min_w && l.clip_to_window {
                    s.push('\n');
                    continue;
                }
                let vis = if w >= min_w { "" } else { r#" display="none""# };
                let _ = write!(
                    s,
                    r#"<text class="label {class}-label" data-t0="{}" data-t1="{}" data-minw="{min_w:.0}" data-dx="3" x="{:.1}" y="{}"{vis}>{}</text>"#,
                    sp.start.0,
                    sp.end.0,
                    x0 + 3.0,
                    y + h - 4.0,
                    esc(&sp.label)
                );
            }
            s.push('\n');
        }
    }
    for (c, a, u, hold_end) in &scene.beliefs {
        // The belief matters while the lock is held: drawn up to the hold's end, with its
        // end marked when it ran out first (the holder kept going on an expired belief).
        let e = (*u).min(*hold_end);
        if !l.keep(*a, e) {
            continue;
        }
        let y = l.lane_y(*c) + 8.0;
        let _ = write!(
            s,
            r#"<line class="belief" data-t0="{}" data-t1="{}" x1="{:.1}" x2="{:.1}" y1="{y}" y2="{y}">{}</line>"#,
            a.0,
            e.0,
            l.x(*a),
            l.x(e),
            title(&format!(
                "{} believes its lock valid from {a} until {u}",
                l.world.names()[*c]
            )),
        );
        if u <= hold_end {
            let _ = write!(
                s,
                r#"<line class="belief-end" data-t0="{}" x1="{:.1}" x2="{:.1}" y1="{}" y2="{}">{}</line>"#,
                u.0,
                l.x(*u),
                l.x(*u),
                y - 4.0,
                y + 22.0,
                title(&format!(
                    "{}'s belief ran out at {u} while it still held the lock (until {hold_end})",
                    l.world.names()[*c]
                ))
            );
        }
        s.push('\n');
    }
    for (a, b, from, to) in &scene.overlaps {
        if !l.keep(*from, *to) {
            continue;
        }
        for c in [a, b] {
            let y = l.lane_y(*c) + 10.0;
            let _ = writeln!(
                s,
                r#"<rect class="overlap" data-t0="{}" data-t1="{}" x="{:.1}" y="{y}" width="{:.1}" height="20">{}</rect>"#,
                from.0,
                to.0,
                l.x(*from),
                (l.x(*to) - l.x(*from)).max(1.5),
                title(&format!(
                    "two holders at once: {} and {} both believe they hold the lock from {from} to {to} ({})",
                    l.world.names()[*a],
                    l.world.names()[*b],
                    fmt_duration_ns(to.0 - from.0)
                ))
            );
        }
    }
}

fn draw_clocks(s: &mut String, l: &Layout<'_>, order: &[usize], names: &[String]) {
    let (from, to) = if l.clip_to_window {
        (l.view.from, l.view.to)
    } else {
        (SimTime::ZERO, l.world.now())
    };
    for &p in order {
        let Some(pts) = clock_curve(l.world, l.sc.epoch_unix_ms, p, from, to) else {
            continue;
        };
        let lo = pts.iter().map(|p| p.1).fold(0.0f64, f64::min);
        let hi = pts.iter().map(|p| p.1).fold(0.0f64, f64::max);
        let y0 = l.lane_y(p);
        // The band: the lane's lowest 14 px; zero offset is a dotted line in it.
        let (band_top, band_h) = (y0 + 33.0, 13.0);
        let yv = |o: f64| {
            if hi - lo < 1e-9 {
                band_top + band_h / 2.0
            } else {
                band_top + band_h * (hi - o) / (hi - lo)
            }
        };
        let ts: Vec<String> = pts.iter().map(|(t, _)| t.to_string()).collect();
        let ys: Vec<String> = pts.iter().map(|(_, o)| format!("{:.1}", yv(*o))).collect();
        let points: Vec<String> = pts
            .iter()
            .map(|(t, o)| format!("{:.1},{:.1}", l.x(SimTime(*t)), yv(*o)))
            .collect();
        let _ = writeln!(
            s,
            r#"<line class="clock-zero" data-t0="{}" data-t1="{}" x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/>"#,
            from.0,
            to.0,
            l.x(from),
            l.x(to),
            yv(0.0),
            yv(0.0)
        );
        let _ = writeln!(
            s,
            r#"<polyline class="clock" data-ts="{}" data-ys="{}" points="{}">{}</polyline>"#,
            ts.join(" "),
            ys.join(" "),
            points.join(" "),
            title(&format!(
                "{}'s wall clock minus true time: from {} to {} ms over the run (steps and drift)",
                names[p],
                fmt_signed_ms(lo.round() as i64),
                fmt_signed_ms(hi.round() as i64)
            ))
        );
        // The reading at a few instants, so a stepped clock can be read off the picture.
        let n = 6u64;
        for i in 0..n {
            let t = SimTime(
                l.view.from.0
                    + (l.view.to.0 - l.view.from.0) / n * i
                    + (l.view.to.0 - l.view.from.0) / (2 * n),
            );
            let off = pts
                .iter()
                .rev()
                .find(|(pt, _)| *pt <= t.0)
                .map_or(0.0, |p| p.1);
            let wall_ms = l.world.clock(ProcId(p as u32)).wall_ms(t) - l.sc.epoch_unix_ms;
            let _ = writeln!(
                s,
                r#"<text class="wall" data-t0="{}" x="{:.1}" y="{:.1}">wall +{:.3}s ({})</text>"#,
                t.0,
                l.x(t),
                y0 + 31.0,
                wall_ms as f64 / 1000.0,
                fmt_signed_ms(off.round() as i64)
            );
        }
    }
}

fn draw_arrows(s: &mut String, l: &Layout<'_>, scene: &Scene) {
    for (from, to, sent, recv, dropped, text, kind) in &scene.arrows {
        let y1 = l.lane_y(*from) + LANE_PX / 2.0;
        let y2 = l.lane_y(*to) + LANE_PX / 2.0;
        let class = if *dropped {
            "msg dropped".to_string()
        } else {
            format!("msg {kind}")
        };
        let _ = writeln!(
            s,
            r#"<line class="{class}" data-t0="{}" data-t1="{}" x1="{:.1}" x2="{:.1}" y1="{y1}" y2="{y2}">{}</line>"#,
            sent.0,
            recv.0,
            l.x(*sent),
            l.x(*recv),
            title(text)
        );
    }
}

fn draw_gaps(s: &mut String, l: &Layout<'_>, scene: &Scene) {
    for g in &scene.gaps {
        if !l.keep(
            g.believed_until.min(g.expired_at),
            g.believed_until.max(g.expired_at),
        ) {
            continue;
        }
        let _ = writeln!(
            s,
            r#"<line class="gap" data-t0="{}" data-t1="{}" x1="{:.1}" x2="{:.1}" y1="{}" y2="{}"/>"#,
            g.believed_until.0,
            g.expired_at.0,
            l.x(g.believed_until),
            l.x(g.expired_at),
            l.lane_y(g.client) + 8.0,
            l.lane_y(g.node) + 20.0,
        );
    }
}

fn draw_marks(s: &mut String, l: &Layout<'_>, scene: &Scene) {
    for m in &scene.marks {
        if !l.keep(m.at, m.at) {
            continue;
        }
        let y0 = l.lane_y(m.proc);
        let x = l.x(m.at);
        let (w, top, h, label) = m.kind.shape();
        let y = y0 + top;
        let _ = write!(
            s,
            r#"<rect class="mark {}" data-t0="{}" data-w="{w}" x="{:.1}" y="{y}" width="{w}" height="{h}">{}</rect>"#,
            m.kind.class(),
            m.at.0,
            x - w / 2.0,
            title(&m.tip)
        );
        if !label.is_empty() {
            let _ = write!(
                s,
                r#"<text class="glyph" data-t0="{}" data-dx="3" x="{:.1}" y="{}">{label}</text>"#,
                m.at.0,
                x + 3.0,
                y0 + 12.0
            );
        }
        if let Some(words) = &m.label {
            // Promotions on the lane's top line (the lane's role changes there); expiries
            // under the key bar.
            let (dx, dy) = match m.kind {
                MarkKind::Promoted => (14.0, 12.0),
                _ => (4.0, 40.0),
            };
            let _ = write!(
                s,
                r#"<text class="mlabel {}" data-t0="{}" data-dx="{dx}" x="{:.1}" y="{}">{}</text>"#,
                m.kind.class(),
                m.at.0,
                x + dx,
                y0 + dy,
                esc(words)
            );
        }
        s.push('\n');
    }
}

fn draw_violations(s: &mut String, l: &Layout<'_>, violations: &[Violation], lanes: usize) {
    for (i, v) in violations.iter().enumerate().take(20) {
        let x = l.x(v.at);
        let bottom = l.top + lanes as f64 * LANE_PX;
        let _ = writeln!(
            s,
            r#"<line class="violation" data-t0="{}" data-t1="{}" x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{bottom}">{}</line><text class="vlabel" data-t0="{}" data-dx="3" x="{:.1}" y="{}">({}) {}</text>"#,
            v.at.0,
            v.at.0,
            l.top,
            title(&format!(
                "VIOLATION {} at {}: {}",
                v.property, v.at, v.message
            )),
            v.at.0,
            x + 3.0,
            l.top + 10.0 + (i % 3) as f64 * 11.0,
            i + 1,
            v.property
        );
        for a in &v.actors {
            let y = l.lane_y(a.index());
            let _ = writeln!(
                s,
                r#"<rect class="vactor" data-t0="{}" data-w="10" x="{:.1}" y="{y}" width="10" height="{LANE_PX}">{}</rect>"#,
                v.at.0,
                x - 5.0,
                title(&format!(
                    "{} is involved in violation ({})",
                    l.world.names()[a.index()],
                    i + 1
                ))
            );
        }
    }
}

/// The legend from `y` down, wrapped to the picture's width; returns its height.
fn legend(s: &mut String, mut y: f64) -> f64 {
    let top = y;
    let items: [(&str, &str); 12] = [
        ("hold", "holds the lock (its own belief)"),
        ("belief", "validity it believes in"),
        ("key", "lock key on a node (writer's colour)"),
        ("trying", "trying"),
        ("paused", "paused"),
        ("down", "down"),
        ("partition", "partitioned"),
        ("slow", "slow/lossy link"),
        ("msg req", "message"),
        ("overlap", "two holders"),
        ("clock", "wall − true time"),
        ("mark expiry", "key expires (dotted: to the belief's end)"),
    ];
    let mut x = 10.0;
    for (class, text) in items {
        let width = 22.0 + text.chars().count() as f64 * 5.6 + 14.0;
        if x + width > WIDTH_PX {
            x = 10.0;
            y += 16.0;
        }
        let sw = match class {
            "belief" | "msg req" | "clock" => format!(
                r#"<line class="{class}" x1="{x}" x2="{}" y1="{}" y2="{}"/>"#,
                x + 18.0,
                y + 5.0,
                y + 5.0
            ),
            "hold" | "key" => format!(
                r##"<rect class="{class}" x="{x}" y="{y}" width="18" height="10" fill="#1f77b4"/>"##
            ),
            _ => format!(r#"<rect class="{class}" x="{x}" y="{y}" width="18" height="10"/>"#),
        };
        let _ = write!(
            s,
            r#"{sw}<text class="legend" x="{}" y="{}">{}</text>"#,
            x + 22.0,
            y + 9.0,
            esc(text)
        );
        x += width;
    }
    s.push('\n');
    y - top + 16.0
}

const STYLE_AND_DEFS: &str = r##"<defs>
<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff3c4"/><line x1="0" y1="0" x2="0" y2="6" stroke="#e0a800" stroke-width="2"/></pattern>
<pattern id="cross" width="6" height="6" patternUnits="userSpaceOnUse"><rect width="6" height="6" fill="#d9d9d9"/><path d="M0,0 L6,6 M6,0 L0,6" stroke="#777" stroke-width="0.8"/></pattern>
<marker id="arrow" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="5" markerHeight="5" orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#777"/></marker>
<clipPath id="plotclip"><rect x="PLOTX0" y="PLOTY" width="PLOTW" height="PLOTH"/></clipPath>
</defs>
<style>
.title{font-size:15px;font-weight:bold;fill:#111}
.sub{font-size:11px;fill:#444}
.vtext{font-size:11px;fill:#c00000;font-weight:bold}
.legend{font-size:10px;fill:#333}
.lane{font-size:13px;font-weight:bold}
.role{font-size:9px;fill:#777}
.axis,.tick{font-size:10px;fill:#555;text-anchor:middle}
.axis{text-anchor:start}
.grid{stroke:#e3e3e3;stroke-width:1}
.hold{fill-opacity:.85;stroke:#222;stroke-width:.5}
.key{fill-opacity:.35;stroke-width:.8;stroke:#444}
.label{font-size:9px;fill:#111;pointer-events:none}
.trying{fill:#aaaaaa}
.paused{fill:url(#hatch);stroke:#e0a800;stroke-width:.8}
.down{fill:url(#cross);stroke:#555;stroke-width:.8}
.paused-label,.down-label{font-size:9px;fill:#555}
.partition{fill:#ff9f43;fill-opacity:.8}
.slow{fill:#ffd166;fill-opacity:.8}
.belief{stroke:#333;stroke-width:1.2;stroke-dasharray:4 2}
.belief-end{stroke:#333;stroke-width:1.2}
.overlap{fill:#e00000;fill-opacity:.35;stroke:#c00000;stroke-width:1.2}
.clock{fill:none;stroke:#6a3d9a;stroke-width:1.2}
.clock-zero{stroke:#bbb;stroke-dasharray:1 2}
.wall{font-size:8.5px;fill:#6a3d9a;text-anchor:middle}
.msg{stroke-width:.7;marker-end:url(#arrow);opacity:.75}
.req{stroke:#777}
.rep{stroke:#444;stroke-dasharray:3 1}
.bg{stroke:#b9a7d6;opacity:.5}
.dropped{stroke:#d62728;stroke-dasharray:2 2}
.mark{fill:#777}
.mark.ev{fill:#222}
.mark.read{fill:#9ecae1}
.mark.write{fill:#2ca02c}
.mark.rejected{fill:#fdae6b;stroke:#e6550d}
.mark.bad{fill:#e00000}
.mark.fault{fill:#e6550d}
.mark.info{fill:#9467bd}
.glyph{font-size:11px;fill:#e6550d;pointer-events:none}
.violation{stroke:#e00000;stroke-width:2}
.vlabel{font-size:10px;font-weight:bold;fill:#e00000}
.vactor{fill:#e00000;fill-opacity:.12}
.mark.expiry{fill:#8b0000}
.mark.promoted{fill:#6a3d9a}
.mlabel{font-size:9.5px;pointer-events:none}
.mlabel.expiry{fill:#8b0000}
.mlabel.promoted{font-size:11px;font-weight:bold;fill:#6a3d9a}
.gap{stroke:#8b0000;stroke-width:1;stroke-dasharray:1 2}
.nomsgs #msgs{display:none}
</style>
"##;

impl View {
    /// `self` on `window` instead (the user's `--window`), arrows for that window.
    fn on(self, window: Option<(SimTime, SimTime)>) -> View {
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

/// The static picture: `window`, or by default the window around the first violation (the
/// first 20 s when nothing broke).
pub fn svg(
    sc: &Scenario,
    seed: u64,
    world: &World,
    violations: &[Violation],
    window: Option<(SimTime, SimTime)>,
) -> String {
    let view = View::around_first_violation(world, violations).on(window);
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    s.push_str(&render_svg(sc, seed, world, violations, view, false));
    s
}

/// One run the page shows: the model itself, or one of its variants on the same seed.
pub struct PageRun<'a> {
    /// "as written" for the model itself, else the variant's name.
    pub name: String,
    pub sc: &'a Scenario,
    pub world: &'a World,
    pub violations: &'a [Violation],
}

fn verdict_text(violations: &[Violation]) -> String {
    if violations.is_empty() {
        "no violation".to_string()
    } else {
        let mut props: Vec<String> = violations.iter().map(|v| v.property.to_string()).collect();
        props.sort();
        props.dedup();
        format!("VIOLATED: {}", props.join(", "))
    }
}

/// The page: one self-contained HTML file (inline SVG, CSS and script; nothing fetched),
/// opened on `window` or by default on the static picture's window. The model's variants
/// (`variants:` in the model) run on the same seed and show beside it.
pub fn html(
    sc: &Scenario,
    seed: u64,
    world: &World,
    violations: &[Violation],
    window: Option<(SimTime, SimTime)>,
) -> String {
    let variants = crate::explore::variants::run_variants(sc, seed);
    let mut runs = vec![PageRun {
        name: "as written".into(),
        sc,
        world,
        violations,
    }];
    for v in &variants {
        runs.push(PageRun {
            name: v.name.clone(),
            sc: &v.sc,
            world: &v.world,
            violations: &v.outcome.violations,
        });
    }
    html_runs(seed, &runs, window)
}

/// How much smaller each fault of a violating run would have to be for the run to hold, each
/// figure checked by a run from time 0 (`threshold::counterfactuals`); empty for a run that
/// held or whose faults alone do not replay its violation.
fn counterfactuals(
    sc: &Scenario,
    seed: u64,
    names: &[String],
) -> Vec<crate::explore::threshold::Counterfactual> {
    let (_, faults) = sc.build_with(seed, crate::sim::TraceMode::Off, None);
    let name = |p: crate::time::ProcId| names[p.index()].clone();
    crate::explore::threshold::counterfactuals(sc, seed, &faults, &name)
}

/// The counterfactuals under the violations.
fn counterfactuals_html(cf: &[crate::explore::threshold::Counterfactual]) -> String {
    if cf.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<div class=\"counterfactuals\"><p>What would have saved this run — each fault made smaller alone, the others as they were, each figure checked by a run from time 0:</p><ul>\n",
    );
    for c in cf {
        let _ = writeln!(s, "<li>{}</li>", esc(&c.sentence()));
    }
    s.push_str("</ul></div>\n");
    s
}

/// The page for `runs` (the first is the model as written), aligned on one time axis.
pub fn html_runs(seed: u64, runs: &[PageRun<'_>], window: Option<(SimTime, SimTime)>) -> String {
    let base = &runs[0];
    let (sc, world, violations) = (base.sc, base.world, base.violations);
    let view = View::page(world, violations).on(window);
    let names = world.names();
    let cf = if violations.is_empty() {
        Vec::new()
    } else {
        counterfactuals(sc, seed, &names)
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>distlock-sim: {} seed {seed}</title>
<style>{PAGE_CSS}</style></head>
<body>
<header><h1>{} <span class="seed">seed {seed}</span> <span class="{}">{}</span></h1>
<p>{}</p>
<p class="replay">replay: <code>{}</code></p>
"#,
        esc(&sc.name),
        esc(&sc.name),
        if violations.is_empty() { "ok" } else { "bad" },
        if violations.is_empty() {
            "no violation".to_string()
        } else {
            format!("{} violation(s)", violations.len())
        },
        esc(&sc.model.description),
        esc(&sc.replay_command(seed)),
    );
    if !violations.is_empty() {
        s.push_str("<ol class=\"violations\">\n");
        for v in violations.iter().take(20) {
            let _ = writeln!(
                s,
                r##"<li><a href="#" data-goto="{}"><b>{}</b> at {}</a>: {}</li>"##,
                v.at.0,
                v.property,
                v.at,
                esc(&v.message)
            );
        }
        s.push_str("</ol>\n");
        s.push_str(&counterfactuals_html(&cf));
    }
    s.push_str(
        r#"</header>
<nav><button id="fit">whole run</button> <button id="focus">first violation</button> <button id="zin">zoom in</button> <button id="zout">zoom out</button>
<label class="toggle"><input type="checkbox" id="msgs-toggle" checked> message arrows</label>
<span class="hint">wheel: zoom at the pointer · drag: pan · hover: details · click a violation above to go there</span>
<span id="range"></span></nav>
<div id="stepper"><button id="first-step" title="first event (Home)">|◀ first</button> <button id="prev-notable" title="previous notable event: acquire, expiry, fault, violation (Shift+← or PageUp)">◀◀ notable</button> <button id="prev" title="previous event (←)">◀ prev</button> <button id="play" title="play / pause (Space)">▶ play</button> <select id="pace" title="pace"><option value="1">1 step/s</option><option value="2" selected>2 steps/s</option><option value="5">5 steps/s</option><option value="20">20 steps/s</option></select> <button id="next" title="next event (→)">next ▶</button> <button id="next-notable" title="next notable event (Shift+→ or PageDown)">notable ▶▶</button> <input type="range" id="scrub" min="0" value="0" aria-label="step"> <span id="stepno"></span>
<p id="sentence"></p></div>
"#,
    );
    if runs.len() > 1 {
        s.push_str("<div id=\"variants\">compare on the same seed — the same faults, and every random draw from the same stream, so the runs stay alike until a variant sends other messages: ");
        for (i, r) in runs.iter().enumerate() {
            let _ = write!(
                s,
                r#"<label class="variant"><input type="radio" name="variant" value="{}"{}> {} <span class="{}">({})</span></label> "#,
                esc(&r.name),
                if i == 0 { " checked" } else { "" },
                esc(&r.name),
                if r.violations.is_empty() { "ok" } else { "bad" },
                esc(&verdict_text(r.violations))
            );
        }
        s.push_str("</div>\n");
    }
    let _ = writeln!(
        s,
        r#"<p id="verdict" class="{}">{}: {}</p>"#,
        if violations.is_empty() { "ok" } else { "bad" },
        esc(&base.name),
        esc(&verdict_text(violations))
    );
    for (i, r) in runs.iter().enumerate() {
        let rv = View::page(r.world, r.violations).on(window);
        // All runs on the first one's window, so that one instant is one x everywhere.
        let rv = View {
            from: view.from,
            to: view.to,
            arrows_from: rv.arrows_from.min(view.arrows_from),
            arrows_to: rv.arrows_to.max(view.arrows_to),
            ..rv
        };
        let mut svg = render_svg(r.sc, seed, r.world, r.violations, rv, true);
        if i > 0 {
            svg = svg.replacen(r#"id="timeline""#, &format!(r#"id="timeline-{i}""#), 1);
        }
        let _ = writeln!(s, r#"<div class="run" data-variant="{}">"#, esc(&r.name));
        if runs.len() > 1 {
            let _ = writeln!(
                s,
                r#"<h3>{} <span class="{}">{}</span></h3>"#,
                esc(&r.name),
                if r.violations.is_empty() { "ok" } else { "bad" },
                esc(&verdict_text(r.violations))
            );
        }
        let _ = writeln!(
            s,
            r#"<div class="chart{}">"#,
            if i == 0 { r#"" id="chart"# } else { "" }
        );
        s.push_str(&svg);
        s.push_str("</div></div>\n");
    }
    s.push_str("<div id=\"state\" aria-live=\"polite\"></div>\n<div id=\"tip\" hidden></div>\n");
    let _ = writeln!(
        s,
        "<section><h2>Faults applied ({})</h2><ul class=\"faults\">",
        world.applied_faults.len()
    );
    for f in world.applied_faults.iter().take(500) {
        let _ = writeln!(
            s,
            r##"<li><a href="#" data-goto="{}">{}</a> {}</li>"##,
            f.at.0,
            f.at,
            esc(&world.describe_fault(f))
        );
    }
    if world.applied_faults.len() > 500 {
        let _ = writeln!(s, "<li>… {} more</li>", world.applied_faults.len() - 500);
    }
    let _ = writeln!(
        s,
        "</ul><p class=\"note\">Lanes: {}. Message arrows are drawn from {} to {} (at most {ARROWS_PAGE}); the JSON trace (<code>--format json</code>) has every message. Keys: ← → step, Shift+← → notable step, Space play, Home/End, m messages. The address <code>#step=N&amp;variant=NAME</code> opens the page at step N of that run.</p></section>",
        esc(&names.join(", ")),
        view.arrows_from,
        view.arrows_to
    );
    // The steps and their state, computed from each run's history (`explore::stepper`).
    // The fault's own step says its counterfactual too (the variants ran other faults' worth
    // of messages: theirs are not computed).
    let said: Vec<(SimTime, String)> = cf
        .iter()
        .map(|c| (c.at, format!("Counterfactual (this fault alone made smaller, checked by a run from time 0): {}.", c.sentence())))
        .collect();
    for (i, r) in runs.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<script type="application/json" class="steps" data-variant="{}" data-verdict="{}" data-ok="{}">{}</script>"#,
            esc(&r.name),
            esc(&verdict_text(r.violations)),
            r.violations.is_empty(),
            crate::view::stepper::steps_json(
                r.sc,
                r.world,
                r.violations,
                if i == 0 { &said } else { &[] }
            )
        );
    }
    s.push_str("<script>\n");
    s.push_str(PAGE_JS);
    s.push_str("</script>\n</body></html>\n");
    s
}

const PAGE_CSS: &str = r#"
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:15px;margin:18px 0 6px} h3{font-size:13px;margin:8px 0 2px}
.seed{color:#666;font-weight:normal} .bad{color:#c00000} .ok{color:#2a7a2a}
.replay code{background:#f3f3f3;padding:1px 4px}
.violations li{color:#c00000;margin:2px 0} .violations a{color:#c00000}
nav{margin:8px 0;font-size:12px} nav button{font-size:12px;margin-right:4px}
.hint{color:#777;margin-left:8px} #range{margin-left:12px;color:#444}
.toggle{margin-left:8px}
#stepper{font-size:12px;margin:6px 0;padding:6px 8px;background:#f4f6fa;border:1px solid #d8dde8;border-radius:4px}
#stepper button,#stepper select{font-size:12px} #scrub{width:240px;vertical-align:middle} #stepno{color:#444;margin-left:6px}
#sentence{font-size:14px;margin:6px 0 0;min-height:1.3em}
#sentence.violation{color:#c00000;font-weight:bold} #sentence.expiry{color:#8b0000} #sentence.fault{color:#b34700}
#variants{font-size:12px;margin:4px 0} .variant{margin-right:10px}
#verdict{font-size:13px;font-weight:bold;margin:4px 0}
.chart{border:1px solid #ddd;overflow-x:auto;user-select:none;cursor:grab}
.chart svg{display:block}
#state{font-size:12px;margin:8px 0;display:flex;flex-wrap:wrap;gap:16px}
#state table{border-collapse:collapse} #state th,#state td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
#state th{background:#f3f3f3} #state .gone{color:#c00000;font-weight:bold} #state .when{color:#555}
#state h4{font-size:13px;margin:0 0 4px}
#tip{position:fixed;max-width:560px;background:#222;color:#fff;font-size:12px;padding:6px 8px;border-radius:4px;pointer-events:none;white-space:pre-wrap;z-index:10}
.faults{font-size:12px;columns:2} .note{font-size:12px;color:#666}
svg .cursor{stroke:#0057d9;stroke-width:2;opacity:.8;pointer-events:none}
"#;

/// Zoom, pan, tooltips and the stepper. Every element placed in time carries its true times,
/// and `layout()` places it again for the current window with the same formula as the Rust
/// side; every chart (the model and its variants) shares one window and one cursor. The
/// state panel shows the state `explore::stepper` computed and embedded: this script only
/// applies its deltas and prints it.
const PAGE_JS: &str = r#"
(function () {
  'use strict';
  const svgs = Array.from(document.querySelectorAll('svg.timeline'));
  const svg = svgs[0];
  const params = {};
  for (const part of location.hash.replace(/^#/, '').split('&')) {
    const i = part.indexOf('=');
    if (part) params[i < 0 ? part : part.slice(0, i)] = i < 0 ? '' : decodeURIComponent(part.slice(i + 1));
  }
  const SELFTEST = 'selftest' in params;
  const NS = 'http://www.w3.org/2000/svg';
  const X0 = +svg.dataset.x0, X1 = +svg.dataset.x1;
  const END = Math.max.apply(null, svgs.map(s => +s.dataset.end));
  const FIRST = [+svg.dataset.w0, +svg.dataset.w1];
  let w0 = FIRST[0], w1 = FIRST[1];
  const charts = svgs.map(s => ({
    svg: s, top: +s.dataset.top, bottom: +s.dataset.bottom,
    timed: Array.from(s.querySelectorAll('[data-t0],[data-ts]')), cursor: null,
  }));
  const x = t => X0 + (t - w0) / Math.max(1, w1 - w0) * (X1 - X0);
  function fmt(t, step) {
    const d = step >= 1e9 ? 0 : step >= 1e8 ? 1 : step >= 1e7 ? 2 : step >= 1e6 ? 3 : 6;
    return (t / 1e9).toFixed(d) + 's';
  }
  function ticks(c) {
    const g = c.svg.querySelector('#ticks');
    while (g.firstChild) g.removeChild(g.firstChild);
    const span = w1 - w0, raw = Math.max(1, span / 10);
    let step = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) { if (step * m >= raw) { step *= m; break; } }
    for (let t = Math.ceil(w0 / step) * step; t <= w1; t += step) {
      const l = document.createElementNS(NS, 'line');
      l.setAttribute('class', 'grid');
      l.setAttribute('x1', x(t)); l.setAttribute('x2', x(t));
      l.setAttribute('y1', c.top - 8); l.setAttribute('y2', c.bottom);
      const tx = document.createElementNS(NS, 'text');
      tx.setAttribute('class', 'tick'); tx.setAttribute('x', x(t)); tx.setAttribute('y', c.top - 12);
      tx.textContent = fmt(t, step);
      g.appendChild(l); g.appendChild(tx);
    }
  }
  // The address: the cursor's step and run when the reader has moved it, and the window.
  let cursorMoved = 'step' in params;
  function address() {
    if (!history.replaceState) return;
    const parts = [];
    if (cursorMoved && runs.length) {
      parts.push('step=' + cur);
      if (active > 0) parts.push('variant=' + encodeURIComponent(runs[active].name));
    }
    parts.push('w=' + (w0 / 1e9).toFixed(6) + ',' + (w1 / 1e9).toFixed(6));
    try { history.replaceState(null, '', '#' + parts.join('&')); } catch (e) { /* file:// may refuse */ }
  }
  function layout() {
    for (const c of charts) {
      for (const el of c.timed) {
        const d = el.dataset;
        if (d.ts !== undefined) {
          const ts = d.ts.split(' '), ys = d.ys.split(' ');
          el.setAttribute('points', ts.map((t, i) => x(+t).toFixed(1) + ',' + ys[i]).join(' '));
          continue;
        }
        const a = x(+d.t0);
        const tag = el.tagName;
        if (tag === 'line') {
          el.setAttribute('x1', a.toFixed(1));
          el.setAttribute('x2', (d.t1 !== undefined ? x(+d.t1) : a).toFixed(1));
        } else if (tag === 'rect') {
          if (d.w !== undefined) { el.setAttribute('x', (a - d.w / 2).toFixed(1)); }
          else {
            el.setAttribute('x', a.toFixed(1));
            el.setAttribute('width', Math.max(1, x(+d.t1) - a).toFixed(1));
          }
        } else if (tag === 'text') {
          el.setAttribute('x', (a + (+d.dx || 0)).toFixed(1));
          if (d.minw !== undefined) {
            const w = x(+d.t1) - a;
            if (w >= +d.minw) el.removeAttribute('display'); else el.setAttribute('display', 'none');
          }
        }
      }
      ticks(c);
      if (c.cursor && c.cursor.dataset.t0 !== undefined) {
        const cx = x(+c.cursor.dataset.t0).toFixed(1);
        c.cursor.setAttribute('x1', cx); c.cursor.setAttribute('x2', cx);
      }
    }
    document.getElementById('range').textContent =
      'showing ' + (w0 / 1e9).toFixed(6) + 's … ' + (w1 / 1e9).toFixed(6) + 's of ' + (END / 1e9).toFixed(3) + 's';
    address();
  }
  function setWindow(a, b) {
    const minSpan = 1e5;
    if (b - a < minSpan) { const m = (a + b) / 2; a = m - minSpan / 2; b = m + minSpan / 2; }
    const pad = (END || 1) * 0.05;
    w0 = Math.max(-pad, a); w1 = Math.min(END + pad, b);
    layout();
  }
  function zoom(f, at) {
    const t = at === undefined ? (w0 + w1) / 2 : at;
    setWindow(t - (t - w0) * f, t + (w1 - t) * f);
  }
  const tAt = px => w0 + (px - X0) / (X1 - X0) * (w1 - w0);
  const tip = document.getElementById('tip');
  let drag = null;
  window.addEventListener('mouseup', () => { drag = null; });
  for (const c of charts) {
    const s = c.svg;
    const svgX = ev => { const r = s.getBoundingClientRect(); return (ev.clientX - r.left) * (s.viewBox.baseVal.width / r.width); };
    s.addEventListener('wheel', ev => { ev.preventDefault(); zoom(ev.deltaY < 0 ? 0.8 : 1.25, tAt(svgX(ev))); }, { passive: false });
    s.addEventListener('mousedown', ev => { drag = { px: svgX(ev), w0, w1 }; });
    s.addEventListener('mousemove', ev => {
      if (drag) {
        const dt = (svgX(ev) - drag.px) / (X1 - X0) * (drag.w1 - drag.w0);
        w0 = drag.w0 - dt; w1 = drag.w1 - dt; layout();
      }
    });
    // Tooltips: the SVG's <title>s become the page's own tip (one, styled, instant).
    for (const t of Array.from(s.querySelectorAll('title'))) {
      t.parentNode.setAttribute('data-tip', t.textContent);
      t.parentNode.removeChild(t);
    }
    s.addEventListener('mouseover', ev => {
      const el = ev.target.closest('[data-tip]');
      if (!el) { tip.hidden = true; return; }
      tip.textContent = el.getAttribute('data-tip');
      tip.hidden = false;
    });
    s.addEventListener('mousemove', ev => {
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 580) + 'px';
      tip.style.top = (ev.clientY + 14) + 'px';
    });
    s.addEventListener('mouseleave', () => { tip.hidden = true; });
    // The cursor: one line across the lanes at the stepper's instant.
    const line = document.createElementNS(NS, 'line');
    line.setAttribute('class', 'cursor');
    line.setAttribute('y1', c.top - 6); line.setAttribute('y2', c.bottom);
    line.setAttribute('display', 'none');
    s.querySelector('#plot').appendChild(line);
    c.cursor = line;
  }
  document.getElementById('fit').onclick = () => setWindow(0, END);
  document.getElementById('focus').onclick = () => setWindow(FIRST[0], FIRST[1]);
  document.getElementById('zin').onclick = () => zoom(0.5);
  document.getElementById('zout').onclick = () => zoom(2);
  for (const a of document.querySelectorAll('[data-goto]')) {
    a.addEventListener('click', ev => {
      ev.preventDefault();
      const t = +a.dataset.goto, span = Math.max(2e9, (w1 - w0) / 2);
      setWindow(t - span * 0.7, t + span * 0.3);
    });
  }
  // Message arrows: off from the start on a busy run (the SVG says so), a click away.
  const msgsBox = document.getElementById('msgs-toggle');
  msgsBox.checked = !svg.classList.contains('nomsgs');
  const showMsgs = on => { msgsBox.checked = on; for (const s of svgs) s.classList.toggle('nomsgs', !on); };
  msgsBox.addEventListener('change', () => showMsgs(msgsBox.checked));

  // ---- The stepper: the state each run's history gave, step by step. ----
  const runs = Array.from(document.querySelectorAll('script.steps')).map(el => {
    const data = JSON.parse(el.textContent);
    return { name: el.dataset.variant, verdict: el.dataset.verdict, ok: el.dataset.ok === 'true', data, steps: data.steps };
  });
  let active = 0, cur = 0, timer = null;
  // The part of the plot's width the window shows without scrolling (1 on a wide screen).
  const VIS = (() => {
    const room = document.getElementById('chart').clientWidth - X0 - 10;
    return room > 50 && room < X1 - X0 ? room / (X1 - X0) : 1;
  })();
  const sentence = document.getElementById('sentence');
  const statePanel = document.getElementById('state');
  const scrub = document.getElementById('scrub');
  const stepno = document.getElementById('stepno');
  const verdict = document.getElementById('verdict');
  const esc = s => String(s).replace(/[&<>"]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  const secs = ns => (ns / 1e9).toFixed(3) + ' s';
  const wall = ms => (ms < 0 ? '−' : '+') + (Math.abs(ms) / 1000).toFixed(3) + ' s';
  const dur = ns => { const a = Math.abs(ns); return a < 1e6 ? Math.round(a / 1e3) + ' µs' : a < 1e9 ? (a / 1e6).toFixed(1) + ' ms' : (a / 1e9).toFixed(3) + ' s'; };
  function apply(s, d) {
    if (!d) return;
    for (const part of ['n', 'c', 'w']) { if (d[part]) for (const k in d[part]) s[part][k] = d[part][k]; }
    if (d.r) s.r = d.r;
  }
  // The state after step n of run r: the nearest snapshot before it, then the deltas.
  function stateAt(r, n) {
    const D = r.data, j = Math.floor(n / D.every);
    const s = JSON.parse(JSON.stringify(D.frames[j]));
    for (let i = j * D.every + 1; i <= n; i++) apply(s, r.steps[i].d);
    return s;
  }
  // The last step of run r at or before true time t (runs share the time axis, not steps).
  function stepAtTime(r, t) {
    let lo = 0, hi = r.steps.length - 1;
    if (hi < 0 || r.steps[0].t > t) return 0;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (r.steps[m].t <= t) lo = m; else hi = m - 1; }
    return lo;
  }
  function renderState(r, n) {
    const st = stateAt(r, n), step = r.steps[n], t = step.t, names = r.data.names;
    const clock = p => t / 1e6 + (st.w[p] || 0);
    const off = p => { const o = st.w[p] || 0; return o === 0 ? '' : ' <span class="when">(' + (o > 0 ? '+' : '−') + dur(Math.abs(o) * 1e6) + ' off true time)</span>'; };
    let h = '<div><h4>Redis nodes at ' + secs(t) + ' (true time)</h4><table><tr><th>node</th><th>role</th><th>its clock reads</th><th>keys (value, expiry on this node\'s clock)</th></tr>';
    for (const p in st.n) {
      const nd = st.n[p], now = clock(+p);
      const keys = Object.keys(nd.keys).map(k => {
        const [v, e] = nd.keys[k];
        const left = e === null ? 'no expiry' : 'expires at ' + wall(e) + ' <span class="when">(' + (e > now ? 'in ' + dur((e - now) * 1e6) : 'due') + ')</span>';
        return '<b>' + esc(k) + '</b> = ' + esc(v) + ', ' + left;
      });
      h += '<tr><td>' + esc(names[p]) + '</td><td>' + esc(nd.role) + (nd.down ? ' <span class="gone">DOWN</span>' : '') + '</td><td>' + wall(Math.floor(now)) + off(+p) + '</td><td>' + (keys.length ? keys.join('<br>') : '<span class="when">no lock key</span>') + '</td></tr>';
    }
    h += '</table></div><div><h4>Clients: what each believes</h4><table><tr><th>client</th><th>doing</th><th>belief</th><th>its clock reads</th></tr>';
    for (const p in st.c) {
      const c = st.c[p], now = clock(+p);
      const doing = c.down ? 'down' : c.paused ? 'PAUSED' : c.holds.length ? 'in its critical section' : c.trying ? 'trying to lock' : 'idle';
      const beliefs = c.holds.map(hd => {
        let b = 'holds lock ' + esc(hd.lock) + ' with token ' + esc(hd.token) + (hd.fence !== null ? ' (fencing token ' + hd.fence + ')' : '');
        if (hd.until_own !== null) {
          b += ', until ' + wall(hd.until_own) + ' on ' + esc(names[p]) + '\'s clock';
          if (hd.until !== null && hd.until <= t) b += ' — <span class="gone">its belief ran out ' + dur(t - hd.until) + ' ago</span>';
        } else b += ', with no end it checks';
        const present = Object.values(st.n).some(nd => Object.values(nd.keys).some(kv => kv[0] === hd.token));
        if (Object.keys(st.n).length && !present) b += ' — <span class="gone">its key is gone</span>';
        return b;
      });
      h += '<tr><td>' + esc(names[p]) + '</td><td>' + doing + '</td><td>' + (beliefs.length ? beliefs.join('<br>') : '<span class="when">holds nothing</span>') + '</td><td>' + wall(Math.floor(now)) + off(+p) + '</td></tr>';
    }
    h += '</table></div>';
    if (st.r) {
      h += '<div><h4>Resource</h4><table><tr><th>version</th><td>' + st.r.version + '</td></tr><tr><th>highest token seen</th><td>' + (st.r.highest === null ? '—' : st.r.highest) + '</td></tr><tr><th>last</th><td>' + esc(st.r.last || '—') + '</td></tr></table></div>';
    }
    statePanel.innerHTML = h;
    statePanel.dataset.step = String(n);
    statePanel.dataset.variant = r.name;
  }
  function show(pan) {
    if (!runs.length) return;
    const r = runs[active], step = r.steps[cur];
    if (!step) return;
    const t = step.t;
    sentence.textContent = step.s;
    sentence.className = step.k || '';
    scrub.max = String(r.steps.length - 1);
    scrub.value = String(cur);
    stepno.textContent = 'step ' + cur + ' of ' + (r.steps.length - 1) + ' · ' + secs(t) + (step.k ? ' · ' + step.k : '') + (r.data.cut !== null ? ' (steps cut at ' + secs(r.data.cut) + ')' : '');
    verdict.textContent = r.name + ': ' + r.verdict;
    verdict.className = r.ok ? 'ok' : 'bad';
    renderState(r, cur);
    for (const c of charts) { c.cursor.setAttribute('data-t0', String(t)); c.cursor.removeAttribute('display'); }
    // Keep the cursor in what the reader sees (a narrow window shows only the left part).
    if (pan && (t < w0 || t > w0 + (w1 - w0) * VIS)) { const span = w1 - w0; w0 = Math.max(0, t - span * VIS * 0.6); w1 = w0 + span; }
    layout();
  }
  function go(n) {
    const r = runs[active];
    cur = Math.max(0, Math.min(r.steps.length - 1, n));
    cursorMoved = true;
    show(true);
  }
  function notable(dir) {
    const r = runs[active];
    for (let i = cur + dir; i >= 0 && i < r.steps.length; i += dir) { if (r.steps[i].k) { go(i); return; } }
  }
  function play() {
    if (timer) { clearInterval(timer); timer = null; document.getElementById('play').textContent = '▶ play'; return; }
    document.getElementById('play').textContent = '❚❚ pause';
    timer = setInterval(() => {
      if (cur >= runs[active].steps.length - 1) { play(); return; }
      go(cur + 1);
    }, 1000 / +document.getElementById('pace').value);
  }
  function setVariant(name) {
    const i = runs.findIndex(r => r.name === name);
    if (i < 0 || i === active) return;
    const t = runs[active].steps[cur] ? runs[active].steps[cur].t : 0;
    active = i;
    cur = stepAtTime(runs[i], t);
    for (const el of document.querySelectorAll('input[name=variant]')) el.checked = el.value === name;
    show(false);
  }
  document.getElementById('next').onclick = () => go(cur + 1);
  document.getElementById('prev').onclick = () => go(cur - 1);
  document.getElementById('next-notable').onclick = () => notable(1);
  document.getElementById('prev-notable').onclick = () => notable(-1);
  document.getElementById('first-step').onclick = () => go(0);
  document.getElementById('play').onclick = play;
  scrub.addEventListener('input', () => go(+scrub.value));
  for (const el of document.querySelectorAll('input[name=variant]')) el.addEventListener('change', () => { if (el.checked) { cursorMoved = true; setVariant(el.value); } });
  document.addEventListener('keydown', ev => {
    if (ev.target && (ev.target.tagName === 'SELECT' || (ev.target.tagName === 'INPUT' && ev.target.type !== 'range' && ev.target.type !== 'radio' && ev.target.type !== 'checkbox'))) return;
    let used = true;
    if (ev.key === 'ArrowRight') ev.shiftKey ? notable(1) : go(cur + 1);
    else if (ev.key === 'ArrowLeft') ev.shiftKey ? notable(-1) : go(cur - 1);
    else if (ev.key === 'PageDown') notable(1);
    else if (ev.key === 'PageUp') notable(-1);
    else if (ev.key === 'Home') go(0);
    else if (ev.key === 'End') go(runs[active].steps.length - 1);
    else if (ev.key === ' ') play();
    else if (ev.key === 'm') showMsgs(!msgsBox.checked);
    else used = false;
    if (used) ev.preventDefault();
  });

  const m = /^(-?[0-9.]+),(-?[0-9.]+)$/.exec(params.w || '');
  if (m && +m[2] > +m[1]) { w0 = +m[1] * 1e9; w1 = +m[2] * 1e9; }
  else if (VIS < 1) {
    // A narrow window shows only the left of the picture: widen the time window so that
    // the part around the violation lands in what is visible, beside the lane names.
    w1 = w0 + (w1 - w0) / VIS;
  }
  if (runs.length) {
    if (params.variant) {
      const i = runs.findIndex(r => r.name === params.variant);
      if (i >= 0) { active = i; for (const el of document.querySelectorAll('input[name=variant]')) el.checked = el.value === params.variant; }
    }
    // Without a step in the address: the first event of the window the page opens on.
    cur = 'step' in params
      ? Math.max(0, Math.min(runs[active].steps.length - 1, parseInt(params.step, 10) || 0))
      : Math.min(runs[active].steps.length - 1, stepAtTime(runs[active], w0) + (runs[active].steps[0] && runs[active].steps[0].t < w0 ? 1 : 0));
    show('step' in params && !m);
  } else {
    layout();
  }
  document.body.dataset.rendered = String(charts.reduce((n, c) => n + c.timed.length, 0));
  // `#selftest`: the page drives itself as a reader would (wheel, hover, "whole run") and
  // writes what happened into the body, for the headless browser test.
  if (SELFTEST) {
    const out = [];
    const before = w1 - w0, r = svg.getBoundingClientRect();
    svg.dispatchEvent(new WheelEvent('wheel', { deltaY: -100, clientX: r.left + r.width * 0.6, clientY: r.top + 80, bubbles: true, cancelable: true }));
    out.push((w1 - w0) < before ? 'zoom:ok' : 'zoom:FAIL');
    const bar = svg.querySelector('rect.hold[data-tip]');
    if (bar) {
      bar.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
      out.push(!tip.hidden && tip.textContent.indexOf('holds lock') >= 0 ? 'tip:ok' : 'tip:FAIL');
    } else {
      out.push('tip:none');
    }
    document.getElementById('fit').click();
    out.push(w0 <= 0 && w1 >= END ? 'fit:ok' : 'fit:FAIL');
    document.body.dataset.selftest = out.join(' ');
  }
})();
"#;
