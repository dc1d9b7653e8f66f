//! Checking a log recorded from a real system (`check-log`, docs/check-log.md).
//!
//! A real log has no true time: each event carries the invoke and complete instants its host's
//! clock read, and the host states a bound `u` on how far that clock may be from true time.
//! So an event's true interval is `[invoke - u, complete + u]`, and a judgement is made for
//! every placement of the events inside their intervals, as Jepsen's checkers treat
//! invoke/complete: **violated** when every placement violates, **possible** when some do,
//! **held** when none do. The simulator's checkers (`check::mutual_exclusion`, ...) judge
//! exact true instants, so they cannot be reused as they are; these follow the same ideas.
//!
//! Memory is bounded: lines are read one at a time (at most `MAX_LINE_BYTES` each), and a
//! log with more than `MAX_EVENTS` events is refused with an error rather than grown into.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::rc::Rc;

use serde::Deserialize;

use crate::time::fmt_duration_ns;

/// The one schema version this reader understands.
pub const SCHEMA: &str = "distlock-log/1";
/// Longest accepted line; a longer one is bad input, not an allocation.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Most events kept: a log at the cap peaks near 300 MB (docs/check-log.md, measured).
pub const MAX_EVENTS: usize = 1_000_000;
/// Most holdings open at once (acquired, neither released nor expired yet).
pub const MAX_OPEN_HOLDINGS: usize = 100_000;
/// Lines of timeline printed; the rest are counted.
pub const TIMELINE_LINES: usize = 200;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    schema: String,
    hosts: BTreeMap<String, HostSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostSpec {
    clock_uncertainty_ms: f64,
}

/// What a call returned, as its caller saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ok,
    Fail,
    /// Timed out or the connection broke: it may or may not have taken effect.
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Acquire,
    Extend,
    Release,
    Read,
    Write,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvent {
    op: Op,
    host: String,
    client: String,
    invoke_ms: f64,
    complete_ms: f64,
    result: Outcome,
    #[serde(default)]
    lock: Option<String>,
    #[serde(default)]
    resource: Option<String>,
    /// Lock calls: the value stored in the key (string). Resource calls: the fencing token.
    token: serde_json::Value,
    #[serde(default)]
    validity_ms: Option<f64>,
    #[serde(default)]
    removed_token: Option<String>,
}

/// One event, times in microseconds of its host's clock.
/// Invariant: `invoke_us <= complete_us`; `host` indexes `Log::hosts`.
#[derive(Clone, Debug)]
pub struct Event {
    pub line: usize,
    pub op: Op,
    pub host: usize,
    // Shared: clients and objects are interned, tokens shared with their holdings, so a
    // large log costs about 100 bytes an event.
    pub client: Rc<str>,
    pub invoke_us: i64,
    pub complete_us: i64,
    pub result: Outcome,
    /// Lock name (lock calls) or resource name (reads and writes).
    pub object: Rc<str>,
    pub lock_token: Rc<str>,
    pub fence: Option<u64>,
    pub validity_us: Option<i64>,
    pub removed_token: Option<Box<str>>,
}

/// A host and its clock bound.
#[derive(Clone, Debug)]
pub struct Host {
    pub name: String,
    pub uncertainty_us: i64,
}

/// A parsed log.
#[derive(Debug, Default)]
pub struct Log {
    pub hosts: Vec<Host>,
    pub events: Vec<Event>,
}

/// A bad line: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

fn err(line: usize, column: usize, message: impl Into<String>) -> LogError {
    LogError {
        line,
        column,
        message: message.into(),
    }
}

fn to_us(line: usize, field: &str, ms: f64) -> Result<i64, LogError> {
    // 2^53 µs is ~285 years: any finite epoch-ms timestamp fits exactly enough.
    if !ms.is_finite() || ms.abs() > 9.0e15 {
        return Err(err(
            line,
            1,
            format!("field `{field}`: {ms} is not a time in ms"),
        ));
    }
    Ok((ms * 1000.0).round() as i64)
}

impl Log {
    /// Reads a log line by line. Blank lines are skipped.
    pub fn read(input: impl BufRead) -> Result<Log, LogError> {
        let mut log = Log::default();
        let mut host_index: BTreeMap<String, usize> = BTreeMap::new();
        let mut names: BTreeMap<String, Rc<str>> = BTreeMap::new();
        let mut header_seen = false;
        let mut input = input;
        let mut buf = Vec::new();
        let mut line_no = 0;
        loop {
            buf.clear();
            line_no += 1;
            let n = std::io::Read::take(&mut input, MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| err(line_no, 1, format!("cannot read: {e}")))?;
            if n == 0 {
                break;
            }
            if buf.len() > MAX_LINE_BYTES {
                return Err(err(
                    line_no,
                    MAX_LINE_BYTES,
                    format!("line longer than {MAX_LINE_BYTES} bytes"),
                ));
            }
            let text = std::str::from_utf8(&buf)
                .map_err(|e| err(line_no, e.valid_up_to() + 1, "not UTF-8"))?;
            if text.trim().is_empty() {
                continue;
            }
            let located = |e: serde_json::Error| err(line_no, e.column().max(1), e.to_string());
            if !header_seen {
                let h: Header = serde_json::from_str(text).map_err(located)?;
                if h.schema != SCHEMA {
                    return Err(err(
                        line_no,
                        1,
                        format!("field `schema`: {:?} is not {SCHEMA:?}", h.schema),
                    ));
                }
                if h.hosts.is_empty() {
                    return Err(err(line_no, 1, "field `hosts`: no host declared"));
                }
                for (name, spec) in h.hosts {
                    let u = to_us(line_no, "clock_uncertainty_ms", spec.clock_uncertainty_ms)?;
                    if u < 0 {
                        return Err(err(line_no, 1, "field `clock_uncertainty_ms`: negative"));
                    }
                    host_index.insert(name.clone(), log.hosts.len());
                    log.hosts.push(Host {
                        name,
                        uncertainty_us: u,
                    });
                }
                header_seen = true;
                continue;
            }
            let raw: RawEvent = serde_json::from_str(text).map_err(located)?;
            let ev = Self::event(line_no, raw, &host_index, &mut names)?;
            if log.events.len() == MAX_EVENTS {
                return Err(err(
                    line_no,
                    1,
                    format!(
                        "more than {MAX_EVENTS} events: split the log by time and check each part"
                    ),
                ));
            }
            log.events.push(ev);
        }
        if !header_seen {
            return Err(err(
                1,
                1,
                format!("empty log: the first line must be the {SCHEMA} header"),
            ));
        }
        Ok(log)
    }

    fn event(
        line: usize,
        raw: RawEvent,
        hosts: &BTreeMap<String, usize>,
        names: &mut BTreeMap<String, Rc<str>>,
    ) -> Result<Event, LogError> {
        let mut intern = |s: String| -> Rc<str> {
            names
                .entry(s)
                .or_insert_with_key(|k| Rc::from(k.as_str()))
                .clone()
        };
        let host = *hosts.get(&raw.host).ok_or_else(|| {
            err(
                line,
                1,
                format!("field `host`: {:?} is not declared in the header", raw.host),
            )
        })?;
        let invoke_us = to_us(line, "invoke_ms", raw.invoke_ms)?;
        let complete_us = to_us(line, "complete_ms", raw.complete_ms)?;
        if complete_us < invoke_us {
            return Err(err(line, 1, "field `complete_ms`: before `invoke_ms`"));
        }
        let is_lock = matches!(raw.op, Op::Acquire | Op::Extend | Op::Release);
        let (lock_token, fence) = if is_lock {
            match raw.token {
                serde_json::Value::String(s) => (Rc::from(s), None),
                _ => {
                    return Err(err(
                        line,
                        1,
                        "field `token`: a lock call's token is a string",
                    ));
                }
            }
        } else {
            match raw.token.as_u64() {
                Some(t) => (Rc::from(""), Some(t)),
                None if raw.token.is_null() => (Rc::from(""), None),
                None => {
                    return Err(err(
                        line,
                        1,
                        "field `token`: a resource call's token is a non-negative integer or null",
                    ));
                }
            }
        };
        let validity_us = match raw.validity_ms {
            Some(v) if v < 0.0 => return Err(err(line, 1, "field `validity_ms`: negative")),
            Some(v) => Some(to_us(line, "validity_ms", v)?),
            None => None,
        };
        let object = if is_lock {
            if raw.resource.is_some() {
                return Err(err(line, 1, "field `resource`: only on read and write"));
            }
            intern(raw.lock.unwrap_or_else(|| "lock".to_string()))
        } else {
            if raw.lock.is_some() {
                return Err(err(
                    line,
                    1,
                    "field `lock`: only on acquire, extend and release",
                ));
            }
            intern(raw.resource.unwrap_or_else(|| "resource".to_string()))
        };
        Ok(Event {
            line,
            op: raw.op,
            host,
            client: intern(raw.client),
            invoke_us,
            complete_us,
            result: raw.result,
            object,
            lock_token,
            fence,
            validity_us,
            removed_token: raw.removed_token.map(String::into_boxed_str),
        })
    }
}

/// A judgement over all placements of the events in their intervals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// The log does not record what the property needs (e.g. no `removed_token`): not
    /// judged, and not counted as held.
    Unobserved,
    Held,
    /// Some placement inside the uncertainty violates; none is certain.
    Possible,
    /// Every placement violates.
    Violated,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Unobserved => "unobserved",
            Verdict::Held => "held",
            Verdict::Possible => "possible",
            Verdict::Violated => "VIOLATED",
        }
    }
}

/// One property's verdict, with the witnessing events' lines when not held.
#[derive(Clone, Debug)]
pub struct Finding {
    pub property: &'static str,
    pub verdict: Verdict,
    pub lines: Vec<usize>,
    pub message: String,
}

/// The span a client believed it held a lock, in its host's clock.
/// Invariant: `start_us <= end_us`.
#[derive(Clone, Debug)]
pub struct Holding {
    pub lock: Rc<str>,
    pub client: Rc<str>,
    pub token: Rc<str>,
    pub host: usize,
    pub start_us: i64,
    pub end_us: i64,
    /// Lines of the acquire and of the event that ended the belief (if any).
    pub lines: (usize, Option<usize>),
}

/// (lock, client, token): one client's holding of one lock under one token.
type HoldingKey = (Rc<str>, Rc<str>, Rc<str>);

/// Believed holdings: from an `ok` acquire's completion (when the client learns it holds)
/// until the first of its release's invocation, a failed extend's completion, or the expiry
/// it believed (`validity_ms` counted from the invoke of the last ok acquire/extend, as
/// Redlock measures it); with no validity and no release, the log's end.
pub fn holdings(log: &Log) -> Result<Vec<Holding>, LogError> {
    struct Open {
        start_us: i64,
        believed_until_us: Option<i64>,
        line: usize,
    }
    let log_end = log.events.iter().map(|e| e.complete_us).max().unwrap_or(0);
    let mut open: BTreeMap<HoldingKey, (usize, Open)> = BTreeMap::new();
    let mut out = Vec::new();
    let close =
        |out: &mut Vec<Holding>, key: HoldingKey, host, o: Open, end, line: Option<usize>| {
            // At the log's end (no closing line) a belief with a validity still runs to it:
            // the recording stopped, the client's belief did not.
            let end = match (o.believed_until_us, line) {
                (Some(b), None) => b,
                (Some(b), Some(_)) => b.min(end),
                (None, _) => end,
            };
            out.push(Holding {
                lock: key.0,
                client: key.1,
                token: key.2,
                host,
                start_us: o.start_us,
                end_us: end.max(o.start_us),
                lines: (o.line, line),
            });
        };
    for e in &log.events {
        let key = (e.object.clone(), e.client.clone(), e.lock_token.clone());
        match (e.op, e.result) {
            (Op::Acquire, Outcome::Ok) => {
                if open.len() == MAX_OPEN_HOLDINGS {
                    return Err(err(
                        e.line,
                        1,
                        format!("more than {MAX_OPEN_HOLDINGS} holdings open at once"),
                    ));
                }
                let o = Open {
                    start_us: e.complete_us,
                    believed_until_us: e.validity_us.map(|v| e.invoke_us + v),
                    line: e.line,
                };
                if let Some((host, prev)) = open.insert(key.clone(), (e.host, o)) {
                    close(&mut out, key, host, prev, e.invoke_us, Some(e.line));
                }
            }
            (Op::Extend, Outcome::Ok) => {
                if let Some((_, o)) = open.get_mut(&key) {
                    o.believed_until_us = e.validity_us.map(|v| e.invoke_us + v);
                }
            }
            (Op::Extend, Outcome::Fail) => {
                if let Some((host, o)) = open.remove(&key) {
                    close(&mut out, key, host, o, e.complete_us, Some(e.line));
                }
            }
            (Op::Release, _) => {
                if let Some((host, o)) = open.remove(&key) {
                    close(&mut out, key, host, o, e.invoke_us, Some(e.line));
                }
            }
            _ => {}
        }
    }
    for (key, (host, o)) in open {
        close(&mut out, key, host, o, log_end, None);
    }
    Ok(out)
}

/// Two clients believed they held the same lock at the same true instant.
/// Certain when the holdings overlap even shrunk by their hosts' bounds
/// (`[start + u, end - u]`), possible when they overlap grown by them.
pub fn mutual_exclusion(log: &Log, hs: &[Holding]) -> Finding {
    let u = |h: &Holding| log.hosts[h.host].uncertainty_us;
    let certain = first_overlap(hs, |h| (h.start_us + u(h), h.end_us - u(h)));
    let possible = first_overlap(hs, |h| (h.start_us - u(h), h.end_us + u(h)));
    let (verdict, pair) = match (certain, possible) {
        (Some(p), _) => (Verdict::Violated, Some(p)),
        (None, Some(p)) => (Verdict::Possible, Some(p)),
        (None, None) => (Verdict::Held, None),
    };
    let (lines, message) = match pair {
        None => (
            vec![],
            "no two clients believed they held a lock at once".to_string(),
        ),
        Some((a, b)) => {
            let (a, b) = (&hs[a], &hs[b]);
            let shared = a.end_us.min(b.end_us) - a.start_us.max(b.start_us);
            (
                vec![a.lines.0, b.lines.0],
                format!(
                    "{} (line {}) and {} (line {}) both believed they held {:?}; by their \
                     clocks for {}, bounds ±{} and ±{}",
                    a.client,
                    a.lines.0,
                    b.client,
                    b.lines.0,
                    a.lock,
                    fmt_signed_us(shared),
                    fmt_us(u(a)),
                    fmt_us(u(b)),
                ),
            )
        }
    };
    Finding {
        property: "mutual_exclusion",
        verdict,
        lines,
        message,
    }
}

/// The first (by start) pair of holdings of one lock by different clients whose spans, as
/// `span` gives them, overlap (an empty span overlaps nothing). One sweep: sorted by start,
/// keeping the two furthest-reaching spans of distinct clients seen so far.
fn first_overlap(hs: &[Holding], span: impl Fn(&Holding) -> (i64, i64)) -> Option<(usize, usize)> {
    let mut order: Vec<(&str, i64, i64, usize)> = hs
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let (s, e) = span(h);
            (&*h.lock, s, e, i)
        })
        .filter(|&(_, s, e, _)| s < e)
        .collect();
    order.sort();
    let mut lock = "";
    // (end, holding index) of the furthest-reaching span, and of the furthest one from a
    // client other than that one's.
    let mut best: Option<(i64, usize)> = None;
    let mut second: Option<(i64, usize)> = None;
    for &(l, s, e, i) in &order {
        if l != lock {
            lock = l;
            best = None;
            second = None;
        }
        let client = &*hs[i].client;
        for cand in [best, second].into_iter().flatten() {
            if &*hs[cand.1].client != client && cand.0 > s {
                return Some((cand.1, i));
            }
        }
        match best {
            Some(b) if &*hs[b.1].client == client => {
                if e > b.0 {
                    best = Some((e, i));
                }
            }
            Some(b) if e > b.0 => {
                second = Some(b);
                best = Some((e, i));
            }
            Some(_) => {
                if second.is_none_or(|s2| e > s2.0) {
                    second = Some((e, i));
                }
            }
            None => best = Some((e, i)),
        }
    }
    None
}

/// The resource applied a write whose fencing token is lower than one it had already
/// applied. Certain when an `ok` write with a higher token completed, by the bounds, before
/// the lower one was invoked; possible when the bounds allow that order, or when one of
/// the two writes' outcome is `unknown`. `fail` writes were refused and do not count.
pub fn resource_safety(log: &Log) -> Finding {
    let u = |e: &Event| log.hosts[e.host].uncertainty_us;
    let writes: Vec<&Event> = log
        .events
        .iter()
        .filter(|e| e.op == Op::Write && e.result != Outcome::Fail && e.fence.is_some())
        .collect();
    // For each lower write, the highest token among writes certainly (or possibly) applied
    // before it started; a sweep per resource over writes sorted by when they surely ended.
    let search = |certain: bool| -> Option<(usize, usize)> {
        let mut by_end: Vec<(&str, i64, usize)> = Vec::new();
        let mut by_start: Vec<(&str, i64, usize)> = Vec::new();
        for (i, w) in writes.iter().enumerate() {
            if certain && w.result != Outcome::Ok {
                continue;
            }
            let (end, start) = if certain {
                (w.complete_us + u(w), w.invoke_us - u(w))
            } else {
                (w.invoke_us - u(w), w.complete_us + u(w))
            };
            by_end.push((&*w.object, end, i));
            by_start.push((&*w.object, start, i));
        }
        by_end.sort();
        by_start.sort();
        let mut found: Option<(usize, usize)> = None;
        let mut j = 0;
        let mut max: Option<(u64, usize)> = None;
        let mut object = "";
        for &(obj, start, lo) in &by_start {
            if obj != object {
                object = obj;
                max = None;
                while j < by_end.len() && by_end[j].0 < obj {
                    j += 1;
                }
            }
            while j < by_end.len() && by_end[j].0 == obj && by_end[j].1 < start {
                let hi = by_end[j].2;
                let t = writes[hi].fence.unwrap_or(0);
                if max.is_none_or(|(m, _)| t > m) {
                    max = Some((t, hi));
                }
                j += 1;
            }
            if let Some((t, hi)) = max
                && writes[lo].fence.unwrap_or(0) < t
                && hi != lo
            {
                let pair = (hi, lo);
                if found.is_none_or(|f| writes[f.1].line > writes[lo].line) {
                    found = Some(pair);
                }
            }
        }
        found
    };
    let (verdict, pair) = match (search(true), search(false)) {
        (Some(p), _) => (Verdict::Violated, Some(p)),
        (None, Some(p)) => (Verdict::Possible, Some(p)),
        (None, None) => (Verdict::Held, None),
    };
    let (lines, message) = match pair {
        None => (
            vec![],
            "no write with a lower token was applied after a higher one".to_string(),
        ),
        Some((hi, lo)) => {
            let (hi, lo) = (writes[hi], writes[lo]);
            (
                vec![hi.line, lo.line],
                format!(
                    "{:?} applied {}'s write with token {} (line {}, {}) after {}'s with token {} \
                     (line {}, {})",
                    lo.object,
                    lo.client,
                    lo.fence.unwrap_or(0),
                    lo.line,
                    outcome_name(lo.result),
                    hi.client,
                    hi.fence.unwrap_or(0),
                    hi.line,
                    outcome_name(hi.result),
                ),
            )
        }
    };
    Finding {
        property: "resource_safety",
        verdict,
        lines,
        message,
    }
}

/// A release removed a key holding another token. Only a log that records what the release
/// removed (`removed_token`, e.g. from GETDEL) can show it; that record is direct, so a
/// mismatch is certain.
pub fn foreign_unlock(log: &Log) -> Finding {
    let recorded = log
        .events
        .iter()
        .filter(|e| e.removed_token.is_some())
        .count();
    let foreign = log.events.iter().find(|e| {
        e.op == Op::Release
            && e.result == Outcome::Ok
            && e.removed_token
                .as_deref()
                .is_some_and(|r| r != &*e.lock_token)
    });
    match foreign {
        Some(e) => Finding {
            property: "foreign_unlock",
            verdict: Verdict::Violated,
            lines: vec![e.line],
            message: format!(
                "{}'s release of {:?} (line {}) removed token {:?}, not its own {:?}",
                e.client,
                e.object,
                e.line,
                e.removed_token.as_deref().unwrap_or(""),
                e.lock_token
            ),
        },
        None => Finding {
            property: "foreign_unlock",
            verdict: if recorded == 0 {
                Verdict::Unobserved
            } else {
                Verdict::Held
            },
            lines: vec![],
            message: if recorded == 0 {
                "not observable: no release records `removed_token`".to_string()
            } else {
                format!("every one of {recorded} recorded removals took the releaser's own token")
            },
        },
    }
}

/// All properties, in a fixed order, given the log's `holdings`.
pub fn check(log: &Log, hs: &[Holding]) -> Vec<Finding> {
    vec![
        mutual_exclusion(log, hs),
        resource_safety(log),
        foreign_unlock(log),
    ]
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Fail => "fail",
        Outcome::Unknown => "unknown",
    }
}

fn op_name(o: Op) -> &'static str {
    match o {
        Op::Acquire => "acquire",
        Op::Extend => "extend",
        Op::Release => "release",
        Op::Read => "read",
        Op::Write => "write",
    }
}

fn fmt_us(us: i64) -> String {
    fmt_duration_ns(us.unsigned_abs() * 1000)
}

fn fmt_signed_us(us: i64) -> String {
    if us < 0 {
        format!("-{}", fmt_us(us))
    } else {
        fmt_us(us)
    }
}

/// A text timeline: events by invoke time (relative to the earliest), with the host's
/// bound, then each believed holding as a span. Lines marked `!` witness a finding.
pub fn timeline(log: &Log, hs: &[Holding], findings: &[Finding]) -> String {
    use std::fmt::Write;
    let origin = log.events.iter().map(|e| e.invoke_us).min().unwrap_or(0);
    let marked = |line: usize| findings.iter().any(|f| f.lines.contains(&line));
    let mut order: Vec<&Event> = log.events.iter().collect();
    order.sort_by_key(|e| (e.invoke_us, e.line));
    let mut s = String::new();
    let _ = writeln!(s, "timeline (host clocks, from the earliest invoke):");
    for e in order.iter().take(TIMELINE_LINES) {
        let what = match e.op {
            Op::Read | Op::Write => format!(
                "{} {:?} token={}",
                op_name(e.op),
                e.object,
                e.fence.map_or("-".to_string(), |t| t.to_string())
            ),
            _ => format!(
                "{} {:?} token={:?}{}",
                op_name(e.op),
                e.object,
                e.lock_token,
                e.validity_us
                    .map_or(String::new(), |v| format!(" validity={}", fmt_us(v)))
            ),
        };
        let _ = writeln!(
            s,
            "{} {:>10} .. {:<10} ±{:<6} {:<6} {:<8} {} -> {}  (line {})",
            if marked(e.line) { '!' } else { ' ' },
            fmt_us(e.invoke_us - origin),
            fmt_us(e.complete_us - origin),
            fmt_us(log.hosts[e.host].uncertainty_us),
            log.hosts[e.host].name,
            e.client,
            what,
            outcome_name(e.result),
            e.line
        );
    }
    if order.len() > TIMELINE_LINES {
        let _ = writeln!(s, "  ... {} more events", order.len() - TIMELINE_LINES);
    }
    let _ = writeln!(s, "believed holdings:");
    let mut hs: Vec<&Holding> = hs.iter().collect();
    hs.sort_by_key(|h| (h.start_us, h.lines.0));
    for h in hs.iter().take(TIMELINE_LINES) {
        let _ = writeln!(
            s,
            "{} {:>10} .. {:<10} {:<8} holds {:?} token={:?}  (line {})",
            if marked(h.lines.0) { '!' } else { ' ' },
            fmt_us(h.start_us - origin),
            fmt_us(h.end_us - origin),
            h.client,
            h.lock,
            h.token,
            h.lines.0
        );
    }
    if hs.len() > TIMELINE_LINES {
        let _ = writeln!(s, "  ... {} more holdings", hs.len() - TIMELINE_LINES);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(text: &str) -> Log {
        Log::read(text.as_bytes()).unwrap()
    }
    fn verdicts(text: &str) -> Vec<Verdict> {
        let log = log(text);
        let hs = holdings(&log).unwrap();
        check(&log, &hs).iter().map(|f| f.verdict).collect()
    }
    const HEAD: &str = r#"{"schema":"distlock-log/1","hosts":{"a":{"clock_uncertainty_ms":5},"b":{"clock_uncertainty_ms":5}}}"#;
    fn acq(host: &str, client: &str, inv: u64, comp: u64, tok: &str, validity: u64) -> String {
        format!(
            r#"{{"op":"acquire","host":"{host}","client":"{client}","invoke_ms":{inv},"complete_ms":{comp},"result":"ok","token":"{tok}","validity_ms":{validity}}}"#
        )
    }
    fn write(host: &str, client: &str, inv: u64, comp: u64, fence: u64, result: &str) -> String {
        format!(
            r#"{{"op":"write","host":"{host}","client":"{client}","invoke_ms":{inv},"complete_ms":{comp},"result":"{result}","token":{fence}}}"#
        )
    }
    fn lines(ls: &[String]) -> String {
        let mut s = HEAD.to_string();
        for l in ls {
            s.push('\n');
            s.push_str(l);
        }
        s
    }

    #[test]
    fn holdings_that_overlap_beyond_both_bounds_are_a_certain_violation() {
        // a believes 0..100, b believes 50..150: 50 ms shared, far more than 5+5.
        let v = verdicts(&lines(&[
            acq("a", "c1", 0, 1, "x", 100),
            acq("b", "c2", 49, 50, "y", 100),
        ]));
        assert_eq!(v[0], Verdict::Violated);
    }

    #[test]
    fn holdings_that_overlap_only_within_the_bounds_are_only_possible() {
        // a believes until 100, b from 95: the 5 ms could be clock error (±5 each side).
        let v = verdicts(&lines(&[
            acq("a", "c1", 0, 1, "x", 100),
            acq("b", "c2", 94, 95, "y", 100),
        ]));
        assert_eq!(v[0], Verdict::Possible);
    }

    #[test]
    fn holdings_further_apart_than_the_bounds_hold() {
        let v = verdicts(&lines(&[
            acq("a", "c1", 0, 1, "x", 100),
            acq("b", "c2", 110, 111, "y", 100),
        ]));
        assert_eq!(v[..2], [Verdict::Held; 2]);
        assert_eq!(v[2], Verdict::Unobserved);
    }

    #[test]
    fn a_release_ends_the_belief_at_its_invocation() {
        let rel = r#"{"op":"release","host":"a","client":"c1","invoke_ms":40,"complete_ms":41,"result":"ok","token":"x"}"#;
        let v = verdicts(&lines(&[
            acq("a", "c1", 0, 1, "x", 100),
            rel.to_string(),
            acq("b", "c2", 60, 61, "y", 100),
        ]));
        assert_eq!(v[0], Verdict::Held);
    }

    #[test]
    fn one_client_overlapping_itself_is_not_a_violation() {
        let v = verdicts(&lines(&[
            acq("a", "c1", 0, 1, "x", 100),
            acq("a", "c1", 50, 51, "y", 100),
        ]));
        assert_eq!(v[0], Verdict::Held);
    }

    #[test]
    fn a_lower_token_written_surely_after_a_higher_one_is_a_certain_violation() {
        let v = verdicts(&lines(&[
            write("a", "c2", 100, 101, 34, "ok"),
            write("b", "c1", 200, 201, 33, "ok"),
        ]));
        assert_eq!(v[1], Verdict::Violated);
    }

    #[test]
    fn a_lower_token_written_within_the_bounds_of_a_higher_one_is_only_possible() {
        let v = verdicts(&lines(&[
            write("a", "c2", 100, 101, 34, "ok"),
            write("b", "c1", 105, 106, 33, "ok"),
        ]));
        assert_eq!(v[1], Verdict::Possible);
    }

    #[test]
    fn a_refused_stale_write_is_fencing_working_not_a_violation() {
        let v = verdicts(&lines(&[
            write("a", "c2", 100, 101, 34, "ok"),
            write("b", "c1", 200, 201, 33, "fail"),
        ]));
        assert_eq!(v[1], Verdict::Held);
    }

    #[test]
    fn a_stale_write_of_unknown_outcome_is_only_possible() {
        let v = verdicts(&lines(&[
            write("a", "c2", 100, 101, 34, "ok"),
            write("b", "c1", 200, 201, 33, "unknown"),
        ]));
        assert_eq!(v[1], Verdict::Possible);
    }

    #[test]
    fn tokens_written_in_increasing_order_hold() {
        let v = verdicts(&lines(&[
            write("a", "c1", 100, 101, 33, "ok"),
            write("b", "c2", 200, 201, 34, "ok"),
        ]));
        assert_eq!(v[1], Verdict::Held);
    }

    #[test]
    fn a_release_that_removed_another_token_is_a_foreign_unlock() {
        let rel = r#"{"op":"release","host":"a","client":"c1","invoke_ms":40,"complete_ms":41,"result":"ok","token":"x","removed_token":"y"}"#;
        let v = verdicts(&lines(&[rel.to_string()]));
        assert_eq!(v[2], Verdict::Violated);
        let own = rel.replace(r#""removed_token":"y""#, r#""removed_token":"x""#);
        assert_eq!(verdicts(&lines(&[own]))[2], Verdict::Held);
    }

    #[test]
    fn bad_lines_are_located_by_line_and_field() {
        let e = Log::read(
            lines(&[
                acq("a", "c1", 0, 1, "x", 100),
                acq("zz", "c1", 0, 1, "x", 1),
            ])
            .as_bytes(),
        )
        .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("field `host`"), "{}", e.message);
        let e = Log::read(format!("{HEAD}\n{{\"op\":\"acquire\"}}").as_bytes()).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("missing field"), "{}", e.message);
        let e = Log::read(r#"{"schema":"distlock-log/9","hosts":{}}"#.as_bytes()).unwrap_err();
        assert!(e.message.contains("field `schema`"), "{}", e.message);
    }

    #[test]
    fn an_overlong_line_is_refused_without_reading_it_whole() {
        let long = format!("{HEAD}\n{}\n", "x".repeat(MAX_LINE_BYTES * 4));
        let e = Log::read(long.as_bytes()).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("longer than"));
    }
}
