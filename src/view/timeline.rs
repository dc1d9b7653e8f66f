//! The text timeline of a run: true time down the side, one narrow lane per actor (lock
//! holds as bars, pauses, crashes, the lock key's presence on each node), the acting node's
//! wall clock, and what happened. Fits a 100-column terminal.

use std::fmt::Write as _;

use crate::check::Violation;
use crate::check::margin::{is_loss, removal_margin_ns};
use crate::history::episodes::Holdings;
use crate::history::{Observation, Record, Removal};
use crate::proto::{Bytes, Msg};
use crate::sim::World;
use crate::sim::trace::{TraceKind, describe_msg};
use crate::time::{ProcId, SimTime, fmt_duration_ns};

pub const WIDTH: usize = 100;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Lane {
    Idle,
    Trying,
    Holding,
    KeyPresent,
}

struct LaneState {
    base: Lane,
    paused: bool,
    down: bool,
}

impl LaneState {
    fn glyph(&self) -> char {
        if self.down {
            'x'
        } else if self.paused {
            '‖'
        } else {
            match self.base {
                Lane::Idle => '·',
                Lane::Trying => '?',
                Lane::Holding => '█',
                Lane::KeyPresent => '▓',
            }
        }
    }
}

/// Which messages a timeline shows besides the observations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Messages {
    None,
    /// Messages within a window around each violation (the default of `replay`): the lines
    /// that explain it, without thousands of retries before it.
    AroundViolations,
    All,
}

/// What to include.
#[derive(Clone, Copy, Debug)]
pub struct TimelineOptions {
    pub messages: Messages,
}

/// Lines of events a timeline prints at most (violations are always printed): a day-long
/// run has millions of events, and a timeline of them all would be gigabytes of text that
/// nobody reads. The bundled models print a few thousand.
pub const MAX_TIMELINE_LINES: usize = 200_000;

/// Window of messages shown around a violation: from this long before it...
pub const WINDOW_BEFORE_NS: u64 = 2 * crate::time::NS_PER_S;
/// ...to this long after.
pub const WINDOW_AFTER_NS: u64 = crate::time::NS_PER_S / 2;

enum Row<'a> {
    Obs(&'a Record),
    Trace(SimTime, ProcId, &'a TraceKind),
    Violation(&'a Violation),
}

/// Renders the timeline of a finished world. `lock_keys` are the keys whose presence the
/// Redis lanes show; `epoch_ms` is the world's Unix time at true time 0.
pub fn render(
    world: &World,
    violations: &[Violation],
    lock_keys: &[Bytes],
    epoch_ms: i64,
    opts: TimelineOptions,
) -> String {
    let names = world.names();
    let n = names.len();
    // token -> (holder, believed end), from Acquired/Extended, for margins at key removals.
    let mut believed: std::collections::BTreeMap<Bytes, (ProcId, SimTime)> =
        std::collections::BTreeMap::new();
    let mut holdings = Holdings::default();
    let mut lanes: Vec<LaneState> = (0..n)
        .map(|_| LaneState {
            base: Lane::Idle,
            paused: false,
            down: false,
        })
        .collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "lanes: {}",
        names
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{}={n}", lane_label(i)))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(
        s,
        "glyphs: █ holds the lock  ? trying  ▓ lock key stored  ‖ paused  x down  · idle"
    );
    let _ = writeln!(
        s,
        "wall: the acting node's wall clock, seconds since the epoch of the run (steps show as jumps)"
    );
    let _ = writeln!(
        s,
        "{:>11} {:<w$} {:>10}  event",
        "true time",
        lane_header(n),
        "wall",
        w = n
    );
    let _ = writeln!(s, "{}", "-".repeat(WIDTH.min(11 + 1 + n + 1 + 10 + 9)));

    // Merge history, trace and violations by time (trace first at equal times: the loop
    // records the delivery before the observations it causes).
    let mut rows: Vec<(SimTime, u8, usize, Row<'_>)> = Vec::new();
    let in_window = |t: SimTime| match opts.messages {
        Messages::None => false,
        Messages::All => true,
        Messages::AroundViolations => violations.iter().any(|v| {
            t.0 + WINDOW_BEFORE_NS >= v.at.0 && t.0 <= v.at.0.saturating_add(WINDOW_AFTER_NS)
        }),
    };
    if opts.messages != Messages::None {
        for (i, e) in world.trace.entries.iter().enumerate() {
            if matches!(e.kind, TraceKind::Recv { .. } | TraceKind::Dropped { .. })
                && in_window(e.at)
            {
                rows.push((e.at, 0, i, Row::Trace(e.at, e.proc, &e.kind)));
            }
        }
    }
    for (i, r) in world.history.records.iter().enumerate() {
        rows.push((r.at, 1, i, Row::Obs(r)));
    }
    for (i, v) in violations.iter().enumerate() {
        rows.push((v.at, 2, i, Row::Violation(v)));
    }
    rows.sort_by_key(|(t, k, i, _)| (*t, *k, *i));

    let (mut printed, mut not_printed) = (0usize, 0u64);
    for (_, _, _, row) in rows {
        let (at, proc, text) = match row {
            Row::Violation(v) => {
                // In full, wrapped under itself: the message is the lesson of the run.
                let text = format!("!!! VIOLATION {}: {}", v.property, v.message);
                for (i, line) in wrap_words(&text, WIDTH - 12).iter().enumerate() {
                    if i == 0 {
                        let _ = writeln!(s, "{:>11} {line}", v.at.to_string());
                    } else {
                        let _ = writeln!(s, "{:>11}     {line}", "");
                    }
                }
                continue;
            }
            Row::Trace(at, p, kind) => {
                let text = match kind {
                    TraceKind::Recv { from, msg, .. } => match msg {
                        Msg::Request { .. }
                        | Msg::ResourceRead { .. }
                        | Msg::ResourceWrite { .. } => {
                            format!(
                                "{} <- {} {}",
                                names[p.index()],
                                names[from.index()],
                                describe_msg(msg)
                            )
                        }
                        Msg::Reply { .. }
                        | Msg::ResourceAck { .. }
                        | Msg::SentinelReq { .. }
                        | Msg::SentinelResp { .. }
                        | Msg::Repl(_)
                        | Msg::Consensus(_)
                        | Msg::Push { .. }
                        | Msg::Refused { .. } => {
                            format!(
                                "{} <- {} {}",
                                names[p.index()],
                                names[from.index()],
                                describe_msg(msg)
                            )
                        }
                    },
                    TraceKind::Dropped {
                        from, msg, reason, ..
                    } => {
                        format!(
                            "DROPPED {} -> {} ({}): {}",
                            names[from.index()],
                            names[p.index()],
                            reason.as_str(),
                            describe_msg(msg)
                        )
                    }
                    _ => continue,
                };
                (at, p, text)
            }
            Row::Obs(r) => {
                let (at, p, obs) = (r.at, r.proc, &r.obs);
                holdings.observe(r, |_| {});
                let holds = !holdings.of(p).is_empty();
                apply(&mut lanes[p.index()], obs, lock_keys, holds);
                if let Observation::Acquired {
                    token,
                    believed_until: Some(u),
                    ..
                }
                | Observation::Extended {
                    token,
                    believed_until: Some(u),
                    ..
                } = obs
                {
                    believed.insert(token.clone(), (p, *u));
                }
                let who = &names[p.index()];
                let text = match obs {
                    Observation::Attempt { token, .. } => {
                        format!("{who} tries to lock (token {})", show(token))
                    }
                    Observation::Acquired {
                        token,
                        fence,
                        validity_ns,
                        believed_until,
                        ..
                    } => {
                        let mut t = format!("{who} ACQUIRED (token {}", show(token));
                        if let Some(f) = fence {
                            let _ = write!(t, ", fence {f}");
                        }
                        match (validity_ns, believed_until) {
                            (Some(v), Some(u)) => {
                                let _ = write!(
                                    t,
                                    ", believes it valid {} → until {u})",
                                    fmt_duration_ns(*v)
                                );
                            }
                            _ => t.push_str(", no expiry)"),
                        }
                        t
                    }
                    Observation::Extended {
                        token, validity_ns, ..
                    } => {
                        format!(
                            "{who} extended (token {}, +{})",
                            show(token),
                            validity_ns.map_or("?".into(), fmt_duration_ns)
                        )
                    }
                    Observation::Released { token, .. } => {
                        format!("{who} releases (token {})", show(token))
                    }
                    Observation::Lost { reason, .. } => {
                        format!("{who} learns it lost the lock: {reason}")
                    }
                    Observation::GaveUp { .. } => format!("{who} gives up"),
                    Observation::ResourceRead { .. } | Observation::ResourceWrite { .. } => {
                        format!("{who}: {}", resource_op(obs, &names).unwrap_or_default())
                    }
                    Observation::KeyWritten {
                        key,
                        value,
                        expire_at_ms,
                        by,
                    } => {
                        if !lock_keys.contains(key) && opts.messages != Messages::All {
                            continue;
                        }
                        format!(
                            "{who}: {} = {}{}{}",
                            show(key),
                            show(value),
                            expire_at_ms.map_or(String::new(), |t| format!(
                                ", expires at wall {}",
                                wall(t, epoch_ms)
                            )),
                            by.map_or(String::new(), |b| format!(" (by {})", names[b.index()]))
                        )
                    }
                    Observation::KeyRemoved {
                        key,
                        value,
                        how,
                        by,
                    } => {
                        let how_text = match how {
                            Removal::Del => match by {
                                Some(b) => format!("deleted by {}", names[b.index()]),
                                None => "deleted (the master's DEL, replicated)".into(),
                            },
                            Removal::Expired => "expired".into(),
                            Removal::Overwritten => "overwritten".into(),
                            Removal::Flushed => "flushed".into(),
                        };
                        // Belief against reality: the key is gone; when did its holder think it
                        // would be?
                        // The holder's own unlock, or a replica echoing its master's DEL, is
                        // not a loss of the lock (`check::margin` says which removals are).
                        let margin = match believed.get(value) {
                            Some((c, until)) if is_loss(*how, *by, *c) => format!(
                                " [margin {} vs {}'s belief]",
                                crate::time::fmt_signed_ns(removal_margin_ns(at, *until)),
                                names[c.index()]
                            ),
                            _ => String::new(),
                        };
                        format!("{who}: {} ({}) {how_text}{margin}", show(key), show(value))
                    }
                    Observation::Fault { what } => format!("FAULT {what}"),
                    Observation::Note(t) => format!("{who}: {t}"),
                    Observation::Sentinel { what } => format!("{who}: {what}"),
                    Observation::Replication { what } => format!("{who}: {what}"),
                    Observation::Crashed
                    | Observation::Restarted { .. }
                    | Observation::Paused
                    | Observation::Resumed
                    // Said in words by the fault and replication lines.
                    | Observation::Fact(_) => continue,
                };
                (at, p, text)
            }
        };
        if printed >= MAX_TIMELINE_LINES {
            not_printed += 1;
            continue;
        }
        printed += 1;
        let lanes_str: String = lanes.iter().map(LaneState::glyph).collect();
        let w = wall(world.clock(proc).wall_ms(at), epoch_ms);
        let head = format!("{:>11} {lanes_str} {w:>10}  ", at.to_string());
        let room = WIDTH.saturating_sub(head.chars().count()).max(20);
        let _ = writeln!(s, "{head}{}", fit(&text, room));
    }
    if not_printed > 0 {
        let _ = writeln!(
            s,
            "... timeline capped at {MAX_TIMELINE_LINES} lines: {not_printed} later events not shown (violations are; replay --format json has them all)"
        );
    }
    s
}

/// A resource read or write in words: `c1 reads v3 with token 5 → ok`, `c2 writes v3+1
/// with token - → accepted, now v4`; `None` for other observations.
pub fn resource_op(obs: &Observation, names: &[String]) -> Option<String> {
    let token = |t: &Option<u64>| t.map_or("-".into(), |t| t.to_string());
    match obs {
        Observation::ResourceRead {
            client,
            token: t,
            version,
            accepted,
        } => Some(format!(
            "{} reads v{version} with token {} → {}",
            names[client.index()],
            token(t),
            if *accepted {
                "ok"
            } else {
                "REJECTED (stale token)"
            }
        )),
        Observation::ResourceWrite {
            client,
            token: t,
            base_version,
            accepted,
            version_after,
        } => Some(format!(
            "{} writes v{base_version}+1 with token {} → {}",
            names[client.index()],
            token(t),
            if *accepted {
                format!("accepted, now v{version_after}")
            } else {
                "REJECTED (stale token)".into()
            }
        )),
        _ => None,
    }
}

/// The lane after `obs`; `holds`: whether its process holds a lock after it (as
/// `Holdings` pairs the history: a release that ends no hold leaves the bar).
fn apply(l: &mut LaneState, obs: &Observation, lock_keys: &[Bytes], holds: bool) {
    match obs {
        Observation::Attempt { .. } if l.base != Lane::Holding => l.base = Lane::Trying,
        Observation::Acquired { .. }
        | Observation::Released { .. }
        | Observation::Lost { .. }
        | Observation::GaveUp { .. }
            if holds =>
        {
            l.base = Lane::Holding
        }
        Observation::Acquired { .. }
        | Observation::Released { .. }
        | Observation::Lost { .. }
        | Observation::GaveUp { .. } => l.base = Lane::Idle,
        Observation::KeyWritten { key, .. } if lock_keys.contains(key) => l.base = Lane::KeyPresent,
        Observation::KeyRemoved { key, .. } if lock_keys.contains(key) => l.base = Lane::Idle,
        Observation::Crashed => {
            l.down = true;
            l.paused = false;
            if l.base != Lane::KeyPresent {
                l.base = Lane::Idle;
            }
        }
        Observation::Restarted { .. } => l.down = false,
        Observation::Paused => l.paused = true,
        Observation::Resumed => l.paused = false,
        _ => {}
    }
}

fn lane_label(i: usize) -> char {
    const L: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    L.get(i).map_or('+', |&b| b as char)
}

fn lane_header(n: usize) -> String {
    (0..n).map(lane_label).collect()
}

/// Wall clock as seconds since the run's epoch, e.g. `+12.345`.
fn wall(ms: i64, epoch_ms: i64) -> String {
    let d = ms - epoch_ms;
    let sign = if d < 0 { '-' } else { '+' };
    let a = d.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `s` in lines of at most `room` characters, broken at spaces (a longer word stands alone).
fn wrap_words(s: &str, room: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    // Continuation lines are indented by 4 under the first.
    let mut width = room;
    for w in s.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + w.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
            width = room.saturating_sub(4).max(1);
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

fn fit(s: &str, room: usize) -> String {
    if s.chars().count() <= room {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(room.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}
