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
//! Memory is bounded whatever the log's size (docs/check-log.md, "Limits"): lines are read
//! one at a time (at most `MAX_LINE_BYTES` each) and judged as they come. What is kept is
//! what a verdict needs: a fixed-size record per holding and per applied write or versioned
//! read (at most `MAX_EVENTS` of them), the open holdings (at most `MAX_OPEN_HOLDINGS`,
//! each keyed by a 20-byte digest of its token, never by the token's text), the distinct
//! names (at most `MAX_NAME_BYTES`), and the first `TIMELINE_LINES` events and holdings for
//! the timeline, their long texts cut at `SHOWN_BYTES`.

use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;
use std::io::BufRead;
use std::rc::Rc;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::proto::command::sha1_of;

/// The one schema version this reader understands.
pub const SCHEMA: &str = "distlock-log/1";
/// Longest accepted line; a longer one is bad input, not an allocation.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Most events judged in one log (docs/check-log.md gives the measured peak at the cap).
pub const MAX_EVENTS: usize = 1_000_000;
/// Most holdings open at once (acquired, neither released nor expired yet).
pub const MAX_OPEN_HOLDINGS: usize = 100_000;
/// Bytes of distinct names (clients, locks, resources) kept, each name charged its length
/// plus `NAME_OVERHEAD_BYTES` for its table entries.
pub const MAX_NAME_BYTES: usize = 64 << 20;
const NAME_OVERHEAD_BYTES: usize = 64;
/// Largest time or duration accepted, in ms: 9e15 ms is 9e18 us, which fits an `i64`;
/// every sum and difference of such values is computed in `Us` (i128), which cannot overflow.
pub const MAX_TIME_MS: f64 = 9.0e15;
/// Lines of timeline printed; the rest are counted.
pub const TIMELINE_LINES: usize = 200;
/// Warnings kept (and printed); the rest are counted.
pub const MAX_WARNINGS: usize = 100;
/// Longer tokens and names are shown cut to this many bytes, with their length.
pub const SHOWN_BYTES: usize = 64;
/// A log's page (`check-log --format html`) draws the first this-many events of the file and
/// the holdings they open; the rest are judged but not drawn.
pub const DRAWN_EVENTS: usize = 20_000;

/// Microseconds, wide enough that no sum or difference of logged values overflows.
pub type Us = i128;

/// What a call returned, as its caller saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Ok,
    Fail,
    /// Timed out or the connection broke: it may or may not have taken effect.
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    Acquire,
    Extend,
    Release,
    Read,
    Write,
}

/// A host and its clock bound.
#[derive(Clone, Debug)]
pub struct Host {
    pub name: String,
    /// Invariant: `0 <= uncertainty_us <= MAX_TIME_MS * 1000`.
    pub uncertainty_us: Us,
}

/// A bad line: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Something the log allows but that is probably not what its writer meant (a release that
/// matches no acquire, ...): judged anyway, and said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogWarning {
    pub line: usize,
    pub message: String,
}

fn err(line: usize, column: usize, message: impl Into<String>) -> LogError {
    LogError {
        line,
        column,
        message: message.into(),
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

/// A judged log.
#[derive(Debug)]
pub struct Report {
    pub hosts: Vec<Host>,
    pub events: usize,
    /// Believed holdings (each `ok` acquire opens one).
    pub holdings: usize,
    /// One per property, in a fixed order: mutual_exclusion, resource_safety,
    /// foreign_unlock, stale_write, lost_update.
    pub findings: Vec<Finding>,
    /// The first `MAX_WARNINGS` warnings, in file order.
    pub warnings: Vec<LogWarning>,
    pub warnings_total: usize,
    /// What a page draws (`judge_drawn`); `None` from `judge`.
    pub drawn: Option<Drawn>,
    origin_us: Us,
    shown_events: Vec<ShownEvent>,
    shown_holdings: Vec<ShownHolding>,
}

/// One event as a log's page draws it, in its host's clock.
#[derive(Clone, Debug)]
pub struct DrawnEvent {
    pub line: usize,
    pub op: Op,
    /// Index into `Report::hosts`.
    pub host: usize,
    pub client: String,
    /// The lock (lock calls) or the resource (reads and writes).
    pub object: String,
    /// A lock call's token, cut at `SHOWN_BYTES` with its length.
    pub token: String,
    /// A resource call's fencing token.
    pub fence: Option<u64>,
    pub invoke_us: Us,
    pub complete_us: Us,
    pub result: Outcome,
    /// An acquire's or extend's believed end (`validity_ms` from the invoke, or
    /// `validity_left_ms` from the complete).
    pub believed_until_us: Option<Us>,
    pub read_version: Option<u64>,
    pub wrote_version: Option<u64>,
}

/// What ended a believed holding, as check-log judged it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldingEnd {
    /// Its client's release (at the release's invoke).
    Released,
    /// A failed extend (at its completion).
    ExtendFailed,
    /// The validity its client believed ran out first.
    ValidityRanOut,
    /// The client acquired the same lock with the same token again.
    AcquiredAgain,
    /// Still held when the log ends.
    LogEnd,
}

/// A believed holding as a log's page draws it: check-log's own span, in its host's clock.
#[derive(Clone, Debug)]
pub struct DrawnHolding {
    /// The line of the `ok` acquire that opened it.
    pub line: usize,
    pub start_us: Us,
    pub end_us: Us,
    pub end: HoldingEnd,
}

/// What a log's page draws: the first `DRAWN_EVENTS` events in file order and the holdings
/// they opened.
#[derive(Clone, Debug, Default)]
pub struct Drawn {
    pub events: Vec<DrawnEvent>,
    pub holdings: Vec<DrawnHolding>,
    /// Events judged but not drawn (past `DRAWN_EVENTS`).
    pub left_out: usize,
}

impl Report {
    /// The earliest invoke in the log (host clock, µs): where the text timeline counts from.
    pub fn origin_us(&self) -> Us {
        self.origin_us
    }

    /// The worst verdict (`Held` when every property held or was unobserved).
    pub fn verdict(&self) -> Verdict {
        self.findings
            .iter()
            .map(|f| f.verdict)
            .max()
            .unwrap_or(Verdict::Held)
            .max(Verdict::Held)
    }

    /// 0 every property held, 1 one was violated for certain, 3 none certain but one possible.
    pub fn exit_code(&self) -> u8 {
        match self.verdict() {
            Verdict::Unobserved | Verdict::Held => 0,
            Verdict::Violated => 1,
            Verdict::Possible => 3,
        }
    }
}

/// Reads and judges a log line by line. Blank lines are skipped.
pub fn judge(input: impl BufRead) -> Result<Report, LogError> {
    judge_with(input, None)
}

/// [`judge`], keeping what a page draws (`Report::drawn`): the first `DRAWN_EVENTS` events
/// and their holdings, so memory stays bounded.
pub fn judge_drawn(input: impl BufRead) -> Result<Report, LogError> {
    judge_with(input, Some(Drawn::default()))
}

fn judge_with(input: impl BufRead, drawn: Option<Drawn>) -> Result<Report, LogError> {
    let mut j = Judge {
        drawn,
        ..Judge::default()
    };
    let mut input = input;
    let mut buf = Vec::new();
    let mut line_no = 0;
    let mut header_seen = false;
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
        let node: Node = serde_json::from_str(text).map_err(|e| json_error(line_no, &e))?;
        if !header_seen {
            j.header(line_no, &node)?;
            header_seen = true;
            continue;
        }
        let ev = j.parse_event(line_no, &node)?;
        if j.events == MAX_EVENTS {
            return Err(err(
                line_no,
                1,
                format!("more than {MAX_EVENTS} events: split the log by time and check each part"),
            ));
        }
        j.event(ev)?;
    }
    if !header_seen {
        return Err(err(
            1,
            1,
            format!("empty log: the first line must be the {SCHEMA} header"),
        ));
    }
    Ok(j.finish())
}

// ---------------------------------------------------------------------------------------
// One JSON line, read without serde's typed derive: duplicate keys are kept (so they can be
// refused), and every error names the log's own line and the field, not serde's position
// in a one-line document.

#[derive(Clone, Copy, Debug)]
enum Num {
    U(u64),
    I(i64),
    F(f64),
}

#[derive(Debug)]
enum Node {
    Null,
    Bool,
    Num(Num),
    Str(String),
    Arr,
    /// Keys in the order given, duplicates kept.
    Obj(Vec<(String, Node)>),
}

impl Node {
    fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool => "a boolean",
            Node::Num(_) => "a number",
            Node::Str(_) => "a string",
            Node::Arr => "an array",
            Node::Obj(_) => "an object",
        }
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Bool)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Num(Num::U(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Num(Num::I(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Num(Num::F(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        // No field is an array: its contents are read past, not kept.
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Node::Arr)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut pairs = Vec::new();
        while let Some(k) = map.next_key::<String>()? {
            pairs.push((k, map.next_value::<Node>()?));
        }
        Ok(Node::Obj(pairs))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

/// A JSON syntax error, at serde's column (the line is parsed alone, so its column is the
/// log line's), with serde's "at line 1 column N" suffix dropped: the log line is ours.
fn json_error(line: usize, e: &serde_json::Error) -> LogError {
    let text = e.to_string();
    let text = match text.rfind(" at line ") {
        Some(i) if e.line() > 0 => &text[..i],
        _ => &text,
    };
    err(line, e.column().max(1), format!("not JSON: {text}"))
}

/// One JSON object's fields, each named at most once and each one the schema knows.
struct Fields<'a> {
    line: usize,
    pairs: &'a [(String, Node)],
}

impl<'a> Fields<'a> {
    fn new(line: usize, node: &'a Node, what: &str, known: &[&str]) -> Result<Self, LogError> {
        let Node::Obj(pairs) = node else {
            return Err(err(
                line,
                1,
                format!("{what} is a JSON object, not {}", node.kind()),
            ));
        };
        for (i, (k, _)) in pairs.iter().enumerate() {
            if !known.contains(&k.as_str()) {
                return Err(err(
                    line,
                    1,
                    format!(
                        "field `{}`: unknown in {what} (its fields are {})",
                        shown_plain(k),
                        known
                            .iter()
                            .map(|f| format!("`{f}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            if pairs[..i].iter().any(|(j, _)| j == k) {
                return Err(err(line, 1, format!("field `{k}`: given twice")));
            }
        }
        Ok(Fields { line, pairs })
    }

    /// The field's value; `None` when absent or `null` (every optional field allows both).
    fn get(&self, key: &str) -> Option<&'a Node> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .filter(|v| !matches!(v, Node::Null))
    }

    fn missing(&self, key: &str) -> LogError {
        err(self.line, 1, format!("missing field `{key}`"))
    }

    fn wrong(&self, key: &str, want: &str, got: &Node) -> LogError {
        err(
            self.line,
            1,
            format!("field `{key}`: expected {want}, not {}", got.kind()),
        )
    }

    fn str(&self, key: &str) -> Result<Option<&'a str>, LogError> {
        match self.get(key) {
            None => Ok(None),
            Some(Node::Str(s)) => Ok(Some(s)),
            Some(v) => Err(self.wrong(key, "a string", v)),
        }
    }

    fn req_str(&self, key: &str) -> Result<&'a str, LogError> {
        self.str(key)?.ok_or_else(|| self.missing(key))
    }

    fn num(&self, key: &str) -> Result<Option<f64>, LogError> {
        match self.get(key) {
            None => Ok(None),
            Some(Node::Num(Num::U(u))) => Ok(Some(*u as f64)),
            Some(Node::Num(Num::I(i))) => Ok(Some(*i as f64)),
            Some(Node::Num(Num::F(f))) => Ok(Some(*f)),
            Some(v) => Err(self.wrong(key, "a number", v)),
        }
    }

    fn req_num(&self, key: &str) -> Result<f64, LogError> {
        self.num(key)?.ok_or_else(|| self.missing(key))
    }

    fn uint(&self, key: &str) -> Result<Option<u64>, LogError> {
        match self.get(key) {
            None => Ok(None),
            Some(Node::Num(Num::U(u))) => Ok(Some(*u)),
            Some(Node::Num(Num::I(i))) if *i >= 0 => Ok(Some(*i as u64)),
            Some(v) => Err(self.wrong(key, "a non-negative integer", v)),
        }
    }

    fn choice<T: Copy>(&self, key: &str, options: &[(&str, T)]) -> Result<T, LogError> {
        let s = self.req_str(key)?;
        options
            .iter()
            .find(|(name, _)| *name == s)
            .map(|&(_, v)| v)
            .ok_or_else(|| {
                err(
                    self.line,
                    1,
                    format!(
                        "field `{key}`: {} is not one of {}",
                        shown_quoted(s),
                        options
                            .iter()
                            .map(|(n, _)| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
    }
}

const HEADER_FIELDS: [&str; 2] = ["schema", "hosts"];
const HOST_FIELDS: [&str; 1] = ["clock_uncertainty_ms"];
const EVENT_FIELDS: [&str; 14] = [
    "op",
    "host",
    "client",
    "invoke_ms",
    "complete_ms",
    "result",
    "lock",
    "resource",
    "token",
    "validity_ms",
    "validity_left_ms",
    "removed_token",
    "read_version",
    "wrote_version",
];

/// A logged time or duration in microseconds. Invariant of the result: within
/// `±MAX_TIME_MS * 1000`, so it fits an `i64` and any sum of a few fits a `Us` exactly.
fn to_us(line: usize, field: &str, ms: f64) -> Result<i64, LogError> {
    if !ms.is_finite() || ms.abs() > MAX_TIME_MS {
        return Err(err(
            line,
            1,
            format!("field `{field}`: {ms} is not a time in ms (finite, at most ±9e15)"),
        ));
    }
    Ok((ms * 1000.0).round() as i64)
}

/// One event as parsed, borrowing its line's text.
struct Ev<'a> {
    line: usize,
    op: Op,
    host: usize,
    client: &'a str,
    invoke_us: i64,
    complete_us: i64,
    result: Outcome,
    /// Lock name (lock calls) or resource name (reads and writes).
    object: &'a str,
    lock_token: &'a str,
    fence: Option<u64>,
    validity_us: Option<i64>,
    validity_left_us: Option<i64>,
    removed_token: Option<&'a str>,
    read_version: Option<u64>,
    wrote_version: Option<u64>,
}

impl Ev<'_> {
    /// Until when an ok acquire or extend makes its client believe it holds: `validity_ms`
    /// counts from the invoke (as Redlock measures it), `validity_left_ms` from the complete.
    fn believed_until_us(&self) -> Option<Us> {
        self.validity_us
            .map(|v| Us::from(self.invoke_us) + Us::from(v))
            .or(self
                .validity_left_us
                .map(|v| Us::from(self.complete_us) + Us::from(v)))
    }
}

// ---------------------------------------------------------------------------------------
// What is kept while reading.

/// Distinct names, each kept once. Invariant: `bytes <= cap_bytes` (`MAX_NAME_BYTES` outside tests).
struct Names {
    // One allocation per name, shared by the index and the table.
    ids: BTreeMap<Rc<str>, u32>,
    text: Vec<Rc<str>>,
    bytes: usize,
    cap_bytes: usize,
}

impl Default for Names {
    fn default() -> Names {
        Names {
            ids: BTreeMap::new(),
            text: Vec::new(),
            bytes: 0,
            cap_bytes: MAX_NAME_BYTES,
        }
    }
}

impl Names {
    fn id(&mut self, line: usize, field: &str, s: &str) -> Result<u32, LogError> {
        if let Some(&id) = self.ids.get(s) {
            return Ok(id);
        }
        let cost = s.len() + NAME_OVERHEAD_BYTES;
        if self.bytes + cost > self.cap_bytes {
            return Err(err(
                line,
                1,
                format!(
                    "field `{field}`: more than {} MiB of distinct names (clients, locks, \
                     resources): split the log by time and check each part",
                    self.cap_bytes >> 20
                ),
            ));
        }
        self.bytes += cost;
        let id = self.text.len() as u32;
        let name: Rc<str> = Rc::from(s);
        self.text.push(name.clone());
        self.ids.insert(name, id);
        Ok(id)
    }

    fn get(&self, id: u32) -> &str {
        &self.text[id as usize]
    }
}

/// A token's identity: its SHA-1 (a log's tokens can be 64 KiB each; only equality is
/// needed to match a release to its acquire, and the digest costs 20 bytes whatever the
/// token's length).
type TokenKey = [u8; 20];

/// (lock, client, token): one client's holding of one lock under one token.
type HoldingKey = (u32, u32, TokenKey);

struct Open {
    host: usize,
    start_us: Us,
    believed_until_us: Option<Us>,
    line: usize,
    /// The token as the timeline shows it (cut at `SHOWN_BYTES`).
    token_shown: String,
}

/// A closed believed holding: the span a client believed it held a lock, in its host's clock.
/// Invariant: `start_us <= end_us`.
#[derive(Clone, Copy, Debug)]
struct Held {
    lock: u32,
    client: u32,
    host: usize,
    start_us: Us,
    end_us: Us,
    /// Line of the acquire.
    line: usize,
}

/// An applied (or possibly applied) write: `ok` or `unknown`, never `fail`.
#[derive(Clone, Copy, Debug)]
struct WriteRec {
    resource: u32,
    client: u32,
    host: usize,
    invoke_us: i64,
    complete_us: i64,
    result: Outcome,
    fence: Option<u64>,
    /// The version the write made (given, or one above the version it was based on).
    wrote: Option<u64>,
    line: usize,
    /// The lock whose holding the writer was under (or had last been under).
    lock: Option<u32>,
}

/// An `ok` read that says which version it returned.
#[derive(Clone, Copy, Debug)]
struct ReadRec {
    resource: u32,
    client: u32,
    host: usize,
    invoke_us: i64,
    version: u64,
    line: usize,
}

/// How a client's last holding (or attempt) ended, for a write made after it.
#[derive(Clone, Copy, Debug)]
enum Ending {
    Released,
    ExtendFailed,
    NotAcquired,
}

#[derive(Default)]
struct ClientState {
    /// (line, complete, host) of its previous event: its events must come in program order.
    last: Option<(usize, i64, usize)>,
    /// It made a lock call before (so its writes can be judged against its holdings).
    lock_calls: bool,
    last_lock: Option<u32>,
    ended: Option<(usize, Ending, u32)>,
}

/// A property's witness while reading: the worst verdict, then the earliest line.
struct Candidate {
    verdict: Verdict,
    line: usize,
    lines: Vec<usize>,
    message: String,
}

fn offer(best: &mut Option<Candidate>, c: Candidate) {
    let better = match best {
        None => true,
        Some(b) => c.verdict > b.verdict || (c.verdict == b.verdict && c.line < b.line),
    };
    if better {
        *best = Some(c);
    }
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ShownEvent {
    invoke_us: i64,
    line: usize,
    complete_us: i64,
    host: usize,
    client: String,
    what: String,
    result: Outcome,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ShownHolding {
    start_us: Us,
    line: usize,
    end_us: Us,
    client: String,
    lock: String,
    token: String,
}

/// Keeps the `TIMELINE_LINES` smallest items pushed (a max-heap of them).
fn keep_first<T: Ord>(heap: &mut BinaryHeap<T>, item: T) {
    if heap.len() < TIMELINE_LINES {
        heap.push(item);
    } else if heap.peek().is_some_and(|top| item < *top) {
        heap.pop();
        heap.push(item);
    }
}

#[derive(Default)]
struct Judge {
    hosts: Vec<Host>,
    host_index: BTreeMap<String, usize>,
    names: Names,
    events: usize,
    origin_us: Option<i64>,
    log_end_us: Option<i64>,
    clients: BTreeMap<u32, ClientState>,
    /// (client, resource) -> the version the client last read or wrote there: the base of
    /// its next write.
    known: BTreeMap<(u32, u32), u64>,
    open: BTreeMap<HoldingKey, Open>,
    /// The same open holdings by (client, acquire line): a client's newest is the last.
    open_by_client: BTreeMap<(u32, usize), (u32, TokenKey)>,
    held: Vec<Held>,
    writes: Vec<WriteRec>,
    reads: Vec<ReadRec>,
    /// stale_write, judged as each write comes: against its writer's own holding.
    own: Option<Candidate>,
    judged_writes: usize,
    /// lost_update, judged as each write comes: a base that is not one below what it made.
    lost_at_write: Option<Candidate>,
    versioned_writes: usize,
    foreign: Option<Candidate>,
    removals_recorded: usize,
    warnings: Vec<LogWarning>,
    warnings_total: usize,
    shown_events: BinaryHeap<ShownEvent>,
    shown_holdings: BinaryHeap<ShownHolding>,
    drawn: Option<Drawn>,
}

impl Judge {
    fn u(&self, host: usize) -> Us {
        self.hosts[host].uncertainty_us
    }

    fn warn(&mut self, line: usize, message: String) {
        self.warnings_total += 1;
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(LogWarning { line, message });
        }
    }

    fn header(&mut self, line: usize, node: &Node) -> Result<(), LogError> {
        let f = Fields::new(line, node, "the header", &HEADER_FIELDS)?;
        let schema = f.req_str("schema")?;
        if schema != SCHEMA {
            return Err(err(
                line,
                1,
                format!("field `schema`: {} is not {SCHEMA:?}", shown_quoted(schema)),
            ));
        }
        let hosts = match f.get("hosts") {
            None => return Err(f.missing("hosts")),
            Some(Node::Obj(pairs)) => pairs,
            Some(v) => return Err(f.wrong("hosts", "an object of host names", v)),
        };
        if hosts.is_empty() {
            return Err(err(line, 1, "field `hosts`: no host declared"));
        }
        for (name, spec) in hosts {
            if self.host_index.contains_key(name) {
                return Err(err(
                    line,
                    1,
                    format!("field `hosts`: host {} declared twice", shown_quoted(name)),
                ));
            }
            let spec = Fields::new(
                line,
                spec,
                &format!("host {}", shown_quoted(name)),
                &HOST_FIELDS,
            )?;
            let u = to_us(
                line,
                "clock_uncertainty_ms",
                spec.req_num("clock_uncertainty_ms")?,
            )?;
            if u < 0 {
                return Err(err(line, 1, "field `clock_uncertainty_ms`: negative"));
            }
            self.host_index.insert(name.clone(), self.hosts.len());
            self.hosts.push(Host {
                name: name.clone(),
                uncertainty_us: Us::from(u),
            });
        }
        Ok(())
    }

    fn parse_event<'a>(&self, line: usize, node: &'a Node) -> Result<Ev<'a>, LogError> {
        let f = Fields::new(line, node, "an event", &EVENT_FIELDS)?;
        let op = f.choice(
            "op",
            &[
                ("acquire", Op::Acquire),
                ("extend", Op::Extend),
                ("release", Op::Release),
                ("read", Op::Read),
                ("write", Op::Write),
            ],
        )?;
        let host_name = f.req_str("host")?;
        let client = f.req_str("client")?;
        let invoke_ms = f.req_num("invoke_ms")?;
        let complete_ms = f.req_num("complete_ms")?;
        let result = f.choice(
            "result",
            &[
                ("ok", Outcome::Ok),
                ("fail", Outcome::Fail),
                ("unknown", Outcome::Unknown),
            ],
        )?;
        let token = f
            .pairs
            .iter()
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v)
            .ok_or_else(|| f.missing("token"))?;
        let host = *self.host_index.get(host_name).ok_or_else(|| {
            err(
                line,
                1,
                format!(
                    "field `host`: {} is not declared in the header",
                    shown_quoted(host_name)
                ),
            )
        })?;
        let invoke_us = to_us(line, "invoke_ms", invoke_ms)?;
        let complete_us = to_us(line, "complete_ms", complete_ms)?;
        if complete_us < invoke_us {
            return Err(err(line, 1, "field `complete_ms`: before `invoke_ms`"));
        }
        let is_lock = matches!(op, Op::Acquire | Op::Extend | Op::Release);
        let (lock_token, fence) = if is_lock {
            match token {
                Node::Str(s) => (s.as_str(), None),
                _ => {
                    return Err(err(
                        line,
                        1,
                        "field `token`: a lock call's token is a string",
                    ));
                }
            }
        } else {
            match token {
                Node::Num(Num::U(t)) => ("", Some(*t)),
                Node::Num(Num::I(t)) if *t >= 0 => ("", Some(*t as u64)),
                Node::Null => ("", None),
                _ => {
                    return Err(err(
                        line,
                        1,
                        "field `token`: a resource call's token is a non-negative integer or null",
                    ));
                }
            }
        };
        let duration = |key: &str| -> Result<Option<i64>, LogError> {
            match f.num(key)? {
                Some(v) if v < 0.0 => Err(err(line, 1, format!("field `{key}`: negative"))),
                Some(v) => Ok(Some(to_us(line, key, v)?)),
                None => Ok(None),
            }
        };
        let validity_us = duration("validity_ms")?;
        let validity_left_us = duration("validity_left_ms")?;
        if validity_left_us.is_some() {
            if !matches!(op, Op::Acquire | Op::Extend) {
                return Err(err(
                    line,
                    1,
                    "field `validity_left_ms`: only on acquire and extend",
                ));
            }
            if validity_us.is_some() {
                return Err(err(
                    line,
                    1,
                    "field `validity_left_ms`: give `validity_ms` (counted from `invoke_ms`) \
                     or `validity_left_ms` (counted from `complete_ms`), not both",
                ));
            }
        }
        let object = if is_lock {
            if f.get("resource").is_some() {
                return Err(err(line, 1, "field `resource`: only on read and write"));
            }
            f.str("lock")?.unwrap_or("lock")
        } else {
            if f.get("lock").is_some() {
                return Err(err(
                    line,
                    1,
                    "field `lock`: only on acquire, extend and release",
                ));
            }
            f.str("resource")?.unwrap_or("resource")
        };
        let read_version = f.uint("read_version")?;
        if read_version.is_some() && is_lock {
            return Err(err(line, 1, "field `read_version`: only on read and write"));
        }
        let wrote_version = f.uint("wrote_version")?;
        if wrote_version.is_some() && op != Op::Write {
            return Err(err(line, 1, "field `wrote_version`: only on write"));
        }
        Ok(Ev {
            line,
            op,
            host,
            client,
            invoke_us,
            complete_us,
            result,
            object,
            lock_token,
            fence,
            validity_us,
            validity_left_us,
            removed_token: f.str("removed_token")?,
            read_version,
            wrote_version,
        })
    }

    fn event(&mut self, e: Ev<'_>) -> Result<(), LogError> {
        let client = self.names.id(e.line, "client", e.client)?;
        let object = self.names.id(
            e.line,
            if matches!(e.op, Op::Read | Op::Write) {
                "resource"
            } else {
                "lock"
            },
            e.object,
        )?;
        // A client's events in the order it made them: a call cannot begin before the
        // client's previous call completed (beyond both timestamps' bounds).
        let u = self.u(e.host);
        let st = self.clients.entry(client).or_default();
        if let Some((prev_line, prev_complete, prev_host)) = st.last {
            let prev_u = self.hosts[prev_host].uncertainty_us;
            if Us::from(e.invoke_us) + u < Us::from(prev_complete) - prev_u {
                return Err(err(
                    e.line,
                    1,
                    format!(
                        "field `invoke_ms`: {}'s call began {} before its previous call \
                         (line {prev_line}) completed; a client's events must be in the order \
                         it made them",
                        shown_plain(e.client),
                        fmt_us(Us::from(prev_complete) - Us::from(e.invoke_us)),
                    ),
                ));
            }
        }
        st.last = Some((e.line, e.complete_us, e.host));
        if matches!(e.op, Op::Acquire | Op::Extend | Op::Release) {
            st.lock_calls = true;
        }
        self.events += 1;
        self.origin_us = Some(self.origin_us.map_or(e.invoke_us, |o| o.min(e.invoke_us)));
        self.log_end_us = Some(
            self.log_end_us
                .map_or(e.complete_us, |o| o.max(e.complete_us)),
        );
        if e.removed_token.is_some() {
            self.removals_recorded += 1;
        }
        self.show_event(&e);
        self.draw_event(&e);
        match e.op {
            Op::Acquire | Op::Extend | Op::Release => self.lock_call(&e, client, object),
            Op::Write => {
                self.write(&e, client, object);
                Ok(())
            }
            Op::Read => {
                self.read(&e, client, object);
                Ok(())
            }
        }
    }

    fn draw_event(&mut self, e: &Ev<'_>) {
        let Some(d) = self.drawn.as_mut() else {
            return;
        };
        if d.events.len() == DRAWN_EVENTS {
            d.left_out += 1;
            return;
        }
        d.events.push(DrawnEvent {
            line: e.line,
            op: e.op,
            host: e.host,
            client: e.client.to_string(),
            object: e.object.to_string(),
            token: shown_plain(e.lock_token),
            fence: e.fence,
            invoke_us: Us::from(e.invoke_us),
            complete_us: Us::from(e.complete_us),
            result: e.result,
            believed_until_us: e.believed_until_us(),
            read_version: e.read_version,
            wrote_version: e.wrote_version,
        });
    }

    fn show_event(&mut self, e: &Ev<'_>) {
        let full = self.shown_events.len() == TIMELINE_LINES;
        if full
            && self
                .shown_events
                .peek()
                .is_some_and(|top| (e.invoke_us, e.line) > (top.invoke_us, top.line))
        {
            return;
        }
        let what = match e.op {
            Op::Read | Op::Write => {
                let mut s = format!(
                    "{} {} token={}",
                    op_name(e.op),
                    shown_quoted(e.object),
                    e.fence.map_or("-".to_string(), |t| t.to_string())
                );
                if let Some(v) = e.read_version {
                    s.push_str(&format!(" read=v{v}"));
                }
                if let Some(v) = e.wrote_version {
                    s.push_str(&format!(" wrote=v{v}"));
                }
                s
            }
            _ => format!(
                "{} {} token={}{}{}",
                op_name(e.op),
                shown_quoted(e.object),
                shown_quoted(e.lock_token),
                e.validity_us.map_or(String::new(), |v| format!(
                    " validity={}",
                    fmt_us(Us::from(v))
                )),
                e.validity_left_us.map_or(String::new(), |v| format!(
                    " validity_left={}",
                    fmt_us(Us::from(v))
                )),
            ),
        };
        keep_first(
            &mut self.shown_events,
            ShownEvent {
                invoke_us: e.invoke_us,
                line: e.line,
                complete_us: e.complete_us,
                host: e.host,
                client: shown_plain(e.client),
                what,
                result: e.result,
            },
        );
    }

    /// Closes a believed holding at `end_us` (the event that ended it, at `end_line`), or at
    /// the log's end (`end_line` None), and forgets its token.
    fn close(
        &mut self,
        key: HoldingKey,
        o: Open,
        end_us: Us,
        end_line: Option<usize>,
        cause: HoldingEnd,
    ) {
        // At the log's end (no closing line) a belief with a validity still runs to it:
        // the recording stopped, the client's belief did not.
        let end = match (o.believed_until_us, end_line) {
            (Some(b), None) => b,
            (Some(b), Some(_)) => b.min(end_us),
            (None, _) => end_us,
        }
        .max(o.start_us);
        if let Some(d) = self.drawn.as_mut()
            && d.events.last().is_some_and(|e| e.line >= o.line)
        {
            let by_validity = o
                .believed_until_us
                .is_some_and(|b| end_line.is_none() || b < end_us);
            d.holdings.push(DrawnHolding {
                line: o.line,
                start_us: o.start_us,
                end_us: end,
                end: if by_validity {
                    HoldingEnd::ValidityRanOut
                } else {
                    cause
                },
            });
        }
        let (lock, client, _) = key;
        self.open_by_client.remove(&(client, o.line));
        self.held.push(Held {
            lock,
            client,
            host: o.host,
            start_us: o.start_us,
            end_us: end,
            line: o.line,
        });
        let full = self.shown_holdings.len() == TIMELINE_LINES;
        if !(full
            && self
                .shown_holdings
                .peek()
                .is_some_and(|top| (o.start_us, o.line) > (top.start_us, top.line)))
        {
            let item = ShownHolding {
                start_us: o.start_us,
                line: o.line,
                end_us: end,
                client: shown_plain(self.names.get(client)),
                lock: shown_quoted(self.names.get(lock)),
                token: o.token_shown,
            };
            keep_first(&mut self.shown_holdings, item);
        }
    }

    fn lock_call(&mut self, e: &Ev<'_>, client: u32, lock: u32) -> Result<(), LogError> {
        let key = (lock, client, sha1_of(e.lock_token.as_bytes()));
        let unmatched = |what: &str| {
            format!(
                "{}'s {what} of {} with token {} matches no open holding: its acquire is \
                 not in the log (before its start?) or came later in the file",
                shown_plain(e.client),
                shown_quoted(e.object),
                shown_quoted(e.lock_token)
            )
        };
        match (e.op, e.result) {
            (Op::Acquire, Outcome::Ok) => {
                if self.open.len() == MAX_OPEN_HOLDINGS {
                    return Err(err(
                        e.line,
                        1,
                        format!("more than {MAX_OPEN_HOLDINGS} holdings open at once"),
                    ));
                }
                let o = Open {
                    host: e.host,
                    start_us: Us::from(e.complete_us),
                    believed_until_us: e.believed_until_us(),
                    line: e.line,
                    token_shown: shown_quoted(e.lock_token),
                };
                if let Some(prev) = self.open.insert(key, o) {
                    self.close(
                        key,
                        prev,
                        Us::from(e.invoke_us),
                        Some(e.line),
                        HoldingEnd::AcquiredAgain,
                    );
                }
                self.open_by_client.insert((client, e.line), (lock, key.2));
                self.clients.entry(client).or_default().last_lock = Some(lock);
            }
            (Op::Acquire, _) => {
                let st = self.clients.entry(client).or_default();
                st.ended = Some((e.line, Ending::NotAcquired, lock));
                st.last_lock.get_or_insert(lock);
            }
            (Op::Extend, Outcome::Ok) => match self.open.get_mut(&key) {
                Some(o) => o.believed_until_us = e.believed_until_us(),
                None => self.warn(e.line, unmatched("extend")),
            },
            (Op::Extend, Outcome::Fail) => {
                match self.open.remove(&key) {
                    Some(o) => self.close(
                        key,
                        o,
                        Us::from(e.complete_us),
                        Some(e.line),
                        HoldingEnd::ExtendFailed,
                    ),
                    None => self.warn(e.line, unmatched("extend")),
                }
                let st = self.clients.entry(client).or_default();
                st.ended = Some((e.line, Ending::ExtendFailed, lock));
            }
            (Op::Extend, Outcome::Unknown) => {
                if !self.open.contains_key(&key) {
                    self.warn(e.line, unmatched("extend"));
                }
            }
            (Op::Release, _) => {
                match self.open.remove(&key) {
                    Some(o) => self.close(
                        key,
                        o,
                        Us::from(e.invoke_us),
                        Some(e.line),
                        HoldingEnd::Released,
                    ),
                    None => self.warn(e.line, unmatched("release")),
                }
                let st = self.clients.entry(client).or_default();
                st.ended = Some((e.line, Ending::Released, lock));
                // What the release removed, when the harness knows it (GETDEL's reply).
                if e.result == Outcome::Ok
                    && let Some(r) = e.removed_token
                    && r != e.lock_token
                {
                    offer(
                        &mut self.foreign,
                        Candidate {
                            verdict: Verdict::Violated,
                            line: e.line,
                            lines: vec![e.line],
                            message: format!(
                                "{}'s release of {} (line {}) removed token {}, not its own {}",
                                shown_plain(e.client),
                                shown_quoted(e.object),
                                e.line,
                                shown_quoted(r),
                                shown_quoted(e.lock_token)
                            ),
                        },
                    );
                }
            }
            (Op::Read | Op::Write, _) => {}
        }
        Ok(())
    }
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

/// `s` cut to `SHOWN_BYTES` (at a character boundary), and whether it was cut.
fn cut(s: &str) -> (&str, bool) {
    if s.len() <= SHOWN_BYTES {
        return (s, false);
    }
    let mut k = SHOWN_BYTES;
    while !s.is_char_boundary(k) {
        k -= 1;
    }
    (&s[..k], true)
}

/// A name or token as text shows it, quoted (`"w1"`); a long one cut, with its length.
fn shown_quoted(s: &str) -> String {
    match cut(s) {
        (s, false) => format!("{s:?}"),
        (head, true) => format!("{head:?}…({} bytes)", s.len()),
    }
}

/// A name as text shows it, unquoted; a long one cut, with its length.
fn shown_plain(s: &str) -> String {
    match cut(s) {
        (s, false) => s.to_string(),
        (head, true) => format!("{head}…({} bytes)", s.len()),
    }
}

/// A duration for people, as `time::fmt_duration_ns` writes it, for any `Us` (whose
/// nanoseconds may not fit a `u64`).
fn fmt_us(us: Us) -> String {
    let us = us.unsigned_abs();
    if us < 1000 {
        format!("{us}us")
    } else if us < 1_000_000 {
        let tenths = us / 100;
        if tenths.is_multiple_of(10) {
            format!("{}ms", tenths / 10)
        } else {
            format!("{}.{}ms", tenths / 10, tenths % 10)
        }
    } else {
        let ms = us / 1000;
        if ms.is_multiple_of(1000) {
            format!("{}s", ms / 1000)
        } else {
            format!("{}.{:03}s", ms / 1000, ms % 1000)
        }
    }
}

fn fmt_signed_us(us: Us) -> String {
    if us < 0 {
        format!("-{}", fmt_us(us))
    } else {
        fmt_us(us)
    }
}

impl Report {
    /// A text timeline: events by invoke time (relative to the earliest), with the host's
    /// bound, then each believed holding as a span. Lines marked `!` witness a finding.
    pub fn timeline(&self) -> String {
        use std::fmt::Write;
        let origin = self.origin_us;
        let marked = |line: usize| self.findings.iter().any(|f| f.lines.contains(&line));
        let mut s = String::new();
        let _ = writeln!(s, "timeline (host clocks, from the earliest invoke):");
        for e in &self.shown_events {
            let _ = writeln!(
                s,
                "{} {:>10} .. {:<10} ±{:<6} {:<6} {:<8} {} -> {}  (line {})",
                if marked(e.line) { '!' } else { ' ' },
                fmt_us(Us::from(e.invoke_us) - origin),
                fmt_us(Us::from(e.complete_us) - origin),
                fmt_us(self.hosts[e.host].uncertainty_us),
                shown_plain(&self.hosts[e.host].name),
                e.client,
                e.what,
                outcome_name(e.result),
                e.line
            );
        }
        if self.events > self.shown_events.len() {
            let _ = writeln!(
                s,
                "  ... {} more events",
                self.events - self.shown_events.len()
            );
        }
        let _ = writeln!(s, "believed holdings:");
        for h in &self.shown_holdings {
            let _ = writeln!(
                s,
                "{} {:>10} .. {:<10} {:<8} holds {} token={}  (line {})",
                if marked(h.line) { '!' } else { ' ' },
                fmt_us(h.start_us - origin),
                fmt_us(h.end_us - origin),
                h.client,
                h.lock,
                h.token,
                h.line
            );
        }
        if self.holdings > self.shown_holdings.len() {
            let _ = writeln!(
                s,
                "  ... {} more holdings",
                self.holdings - self.shown_holdings.len()
            );
        }
        s
    }
}

mod findings;
mod resource_calls;

#[cfg(test)]
mod tests;
