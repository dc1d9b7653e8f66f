//! Parser for the Redis conformance corpus format
//! (`tests/conformance/redis7/README.md`).
//!
//! A corpus file is a list of cases. Each case starts with `# case: NAME`, has one
//! `# topology: single | master-replica` line before its first step, and a list of
//! `@T ...` steps (T = milliseconds since the case started):
//!
//! ```text
//! # case: set-nx-px-basic
//! # topology: single
//! @0     SET lock a NX PX 100               -> OK
//! @0     PTTL lock                          -> ~100
//! @250   GET lock                           -> (nil)
//! ```
//!
//! In master-replica cases a command names its node (`@0 master: GET k -> (nil)`), and the
//! directives `@T link replica master` and `@T wait-sync` (no reply) may appear. A command
//! may name a client connection of its own (`@0 [b] BLPOP l 0`, after the node prefix if
//! any; unnamed, it is the case's default connection); a command that blocks is written
//! `-> (blocked)`, and its reply, when it comes, on a line `@T [b] <- REPLY` of its own.
//! Arguments are split like redis-cli's `sdssplitargs`; the reply is everything after the
//! first bare `->` token. `{unix_ms+N}` / `{unix_s+N}` placeholders stand for the case start
//! time and are kept symbolic here ([`Arg`], [`IntPattern`]); the runner resolves them with
//! [`resolve_arg`] and [`Expect::matches`].
//!
//! The parser never panics: any malformed input gives a [`ParseError`] with its 1-based line.
//! Other lines starting with `#` are comments; blank lines are ignored. A step belongs to the
//! most recent `# case:`.

#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::fmt;

use crate::proto::reply::{Reply, write_quoted};

/// Longest accepted line, in bytes.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Most cases accepted in one file.
pub const MAX_CASES: usize = 10_000;
/// Most steps accepted in one file (all cases together).
pub const MAX_STEPS: usize = 100_000;
/// Largest accepted `@T`, in ms (one day).
pub const MAX_AT_MS: u64 = 86_400_000;
/// `~N` matches any integer in `[N - APPROX_TOLERANCE, N + APPROX_TOLERANCE]`.
pub const APPROX_TOLERANCE: i64 = 30;
/// Deepest accepted nesting of `[...]` in a reply.
pub const MAX_ARRAY_DEPTH: usize = 32;

/// One parsed corpus file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corpus {
    pub cases: Vec<Case>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// One node; commands carry no node prefix.
    Single,
    /// A master and a replica; commands carry `master:` or `replica:`.
    MasterReplica,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub name: String,
    pub topology: Topology,
    /// 1-based line of `# case: NAME`.
    pub line: usize,
    pub steps: Vec<Step>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeRole {
    Master,
    Replica,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Milliseconds since the case started; non-decreasing within a case.
    pub at_ms: u64,
    /// 1-based line of the step.
    pub line: usize,
    pub kind: StepKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// `@T [NODE:] [[CONN]] COMMAND ARG... -> REPLY`.
    Command {
        /// `None` in single-topology cases, always `Some` in master-replica cases.
        node: Option<NodeRole>,
        /// The client connection (`[name]`); `None`: the case's default one.
        conn: Option<String>,
        /// The command name and its arguments (never empty).
        argv: Vec<Arg>,
        expect: Expect,
    },
    /// `@T [NODE:] [[CONN]] COMMAND ARG... -> (blocked)`: no reply before the connection's
    /// `<-` line; the steps in between are sent meanwhile, on other connections.
    Blocked {
        node: Option<NodeRole>,
        conn: Option<String>,
        argv: Vec<Arg>,
    },
    /// `@T [NODE:] [[CONN]] <- REPLY`: the reply of the connection's blocked command has
    /// come, by @T and after the step before this line was sent.
    Await {
        node: Option<NodeRole>,
        conn: Option<String>,
        expect: Expect,
    },
    /// `@T link replica master`: the replica runs `REPLICAOF <master>`.
    Link,
    /// `@T wait-sync`: deliver everything in flight between master and replica.
    WaitSync,
}

/// An argument before placeholder substitution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    Bytes(Vec<u8>),
    /// `{unix_ms}`, `{unix_ms+N}`, `{unix_ms-N}`: the offset N (signed).
    UnixMs(i64),
    /// `{unix_s}`, `{unix_s+N}`, `{unix_s-N}`: the offset N (signed).
    UnixS(i64),
}

/// The bytes to send for `arg` in a case that started at `start_unix_ms`
/// (placeholders become decimal text; arithmetic saturates).
pub fn resolve_arg(arg: &Arg, start_unix_ms: i64) -> Vec<u8> {
    match arg {
        Arg::Bytes(b) => b.clone(),
        Arg::UnixMs(off) => unix_ms(start_unix_ms, *off).to_string().into_bytes(),
        Arg::UnixS(off) => unix_s(start_unix_ms, *off).to_string().into_bytes(),
    }
}

fn unix_ms(start_unix_ms: i64, off: i64) -> i64 {
    start_unix_ms.saturating_add(off)
}

fn unix_s(start_unix_ms: i64, off: i64) -> i64 {
    start_unix_ms.div_euclid(1000).saturating_add(off)
}

/// A reply pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A bare word: `OK`, `PONG`, `none`, ... (matches `Reply::Ok` too when it is `OK`).
    Status(String),
    /// `(nil)`: a null bulk or null array.
    Nil,
    /// `(integer) N`, `~N` and their placeholder forms.
    Int(IntPattern),
    /// `"..."` with redis-cli escapes.
    Bulk(Vec<u8>),
    /// `(error) MESSAGE`: the full message, prefix included (`ERR ...`).
    Error(String),
    /// `[a, b, ...]`, `[]`.
    Array(Vec<Expect>),
    /// `(info) "..."`: a real server's INFO text, matched field by field as
    /// `conformance::info` says (the fields the model answers; some only by presence).
    Info(Vec<u8>),
}

/// An integer reply pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntPattern {
    /// `(integer) N`
    Exact(i64),
    /// `(integer) {unix_ms+N}` (offset N)
    ExactUnixMs(i64),
    /// `(integer) {unix_s+N}` (offset N)
    ExactUnixS(i64),
    /// `~N`: within [`APPROX_TOLERANCE`] of N
    Approx(i64),
    /// `~{unix_ms+N}` (offset N)
    ApproxUnixMs(i64),
    /// `~{unix_s+N}` (offset N)
    ApproxUnixS(i64),
    /// `(integer) *`: any integer. Only for what a server assigns from its own history and
    /// no replay can know: a connection's id (CLIENT ID, HELLO's `id`).
    Any,
}

impl IntPattern {
    /// Does the integer `got` match, for a case that started at `start_unix_ms`?
    pub fn matches(&self, got: i64, start_unix_ms: i64) -> bool {
        let (target, approx) = match *self {
            IntPattern::Any => return true,
            IntPattern::Exact(n) => (n, false),
            IntPattern::ExactUnixMs(off) => (unix_ms(start_unix_ms, off), false),
            IntPattern::ExactUnixS(off) => (unix_s(start_unix_ms, off), false),
            IntPattern::Approx(n) => (n, true),
            IntPattern::ApproxUnixMs(off) => (unix_ms(start_unix_ms, off), true),
            IntPattern::ApproxUnixS(off) => (unix_s(start_unix_ms, off), true),
        };
        if approx {
            (i128::from(got) - i128::from(target)).abs() <= i128::from(APPROX_TOLERANCE)
        } else {
            got == target
        }
    }
}

impl Expect {
    /// Does `got` match this pattern, for a case that started at `start_unix_ms`?
    /// `~N` means `|got - N| <= 30`.
    pub fn matches(&self, got: &Reply, start_unix_ms: i64) -> bool {
        match (self, got) {
            (Expect::Status(s), Reply::Ok) => s == "OK",
            (Expect::Status(s), Reply::Status(g)) => s == g,
            (Expect::Nil, Reply::Nil) => true,
            (Expect::Int(p), Reply::Int(g)) => p.matches(*g, start_unix_ms),
            (Expect::Bulk(b), Reply::Bulk(g)) => b == g,
            (Expect::Error(e), Reply::Error(g)) => e == g,
            (Expect::Info(server), Reply::Bulk(g)) => {
                crate::conformance::info::info_matches(server, g)
            }
            (Expect::Array(items), Reply::Array(got_items)) => {
                items.len() == got_items.len()
                    && items
                        .iter()
                        .zip(got_items)
                        .all(|(e, g)| e.matches(g, start_unix_ms))
            }
            _ => false,
        }
    }

    /// Render the pattern back in corpus syntax (for "expected vs got" messages).
    pub fn render(&self) -> String {
        self.to_string()
    }
}

fn write_placeholder(f: &mut fmt::Formatter<'_>, unit: &str, off: i64) -> fmt::Result {
    match off {
        0 => write!(f, "{{{unit}}}"),
        o if o > 0 => write!(f, "{{{unit}+{o}}}"),
        o => write!(f, "{{{unit}-{}}}", o.unsigned_abs()),
    }
}

impl fmt::Display for IntPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IntPattern::Exact(n) => write!(f, "(integer) {n}"),
            IntPattern::Any => f.write_str("(integer) *"),
            IntPattern::ExactUnixMs(off) => {
                f.write_str("(integer) ")?;
                write_placeholder(f, "unix_ms", off)
            }
            IntPattern::ExactUnixS(off) => {
                f.write_str("(integer) ")?;
                write_placeholder(f, "unix_s", off)
            }
            IntPattern::Approx(n) => write!(f, "~{n}"),
            IntPattern::ApproxUnixMs(off) => {
                f.write_str("~")?;
                write_placeholder(f, "unix_ms", off)
            }
            IntPattern::ApproxUnixS(off) => {
                f.write_str("~")?;
                write_placeholder(f, "unix_s", off)
            }
        }
    }
}

impl fmt::Display for Expect {
    /// Corpus syntax, the same text [`parse`] accepts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Status(s) => f.write_str(s),
            Expect::Nil => f.write_str("(nil)"),
            Expect::Int(p) => write!(f, "{p}"),
            Expect::Bulk(b) => {
                f.write_str("\"")?;
                write_quoted(f, b)?;
                f.write_str("\"")
            }
            Expect::Info(b) => {
                f.write_str("(info) \"")?;
                write_quoted(f, b)?;
                f.write_str("\"")
            }
            Expect::Error(e) => {
                if e.is_empty() {
                    f.write_str("(error)")
                } else {
                    write!(f, "(error) {e}")
                }
            }
            Expect::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
        }
    }
}

impl fmt::Display for Arg {
    /// Corpus syntax: a bare word when that reads back the same, else a `"..."` string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::UnixMs(off) => write_placeholder(f, "unix_ms", *off),
            Arg::UnixS(off) => write_placeholder(f, "unix_s", *off),
            Arg::Bytes(b) => {
                let bare = !b.is_empty()
                    && b.as_slice() != b"->"
                    && b.as_slice() != b"<-"
                    && !b.starts_with(b"[")
                    && !b.starts_with(b"{unix")
                    && !b.ends_with(b":")
                    && b.iter()
                        .all(|&c| c.is_ascii_graphic() && !b"\"'\\".contains(&c));
                if bare {
                    // All bytes are ASCII graphic, so this is always valid UTF-8.
                    f.write_str(&String::from_utf8_lossy(b))
                } else {
                    f.write_str("\"")?;
                    write_quoted(f, b)?;
                    f.write_str("\"")
                }
            }
        }
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Topology::Single => "single",
            Topology::MasterReplica => "master-replica",
        })
    }
}

impl fmt::Display for NodeRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeRole::Master => "master",
            NodeRole::Replica => "replica",
        })
    }
}

/// A located parse error. `Display` gives `line N: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl ParseError {
    fn new(line: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// At most 40 characters of `s`, for error messages.
fn snippet(s: &str) -> String {
    const MAX: usize = 40;
    let mut out: String = s.chars().take(MAX).collect();
    if s.chars().nth(MAX).is_some() {
        out.push_str("...");
    }
    out
}

fn snippet_bytes(b: &[u8]) -> String {
    snippet(&String::from_utf8_lossy(b))
}

/// A case being read.
struct OpenCase {
    name: String,
    line: usize,
    topology: Option<Topology>,
    steps: Vec<Step>,
    /// Connections with a blocked command not yet answered: (node, connection, its line).
    blocked: Vec<(Option<NodeRole>, Option<String>, usize)>,
}

impl OpenCase {
    /// A connection sends nothing while blocked; each `<-` answers one blocked command.
    fn check_connection(&mut self, kind: &StepKind, line: usize) -> Result<(), String> {
        let (node, conn) = match kind {
            StepKind::Command { node, conn, .. }
            | StepKind::Blocked { node, conn, .. }
            | StepKind::Await { node, conn, .. } => (node, conn),
            StepKind::Link | StepKind::WaitSync => return Ok(()),
        };
        let pos = self
            .blocked
            .iter()
            .position(|(n, c, _)| n == node && c == conn);
        match (kind, pos) {
            (StepKind::Await { .. }, Some(i)) => {
                self.blocked.remove(i);
                Ok(())
            }
            (StepKind::Await { .. }, None) => {
                Err("'<-' on a connection with no blocked command".to_string())
            }
            (_, Some(i)) => Err(format!(
                "the connection is blocked since line {} (its '<-' line comes first)",
                self.blocked[i].2
            )),
            (StepKind::Blocked { .. }, None) => {
                self.blocked.push((*node, conn.clone(), line));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn finish(self) -> Result<Case, ParseError> {
        let Some(topology) = self.topology else {
            return Err(missing_topology(&self.name, self.line));
        };
        if let Some((_, _, line)) = self.blocked.first() {
            return Err(ParseError::new(
                *line,
                format!(
                    "case '{}': the command blocked here has no '<-' line",
                    self.name
                ),
            ));
        }
        if self.steps.is_empty() {
            return Err(ParseError::new(
                self.line,
                format!("case '{}' has no steps", self.name),
            ));
        }
        Ok(Case {
            name: self.name,
            topology,
            line: self.line,
            steps: self.steps,
        })
    }
}

fn missing_topology(name: &str, line: usize) -> ParseError {
    ParseError::new(
        line,
        format!(
            "case '{name}' (line {line}) has no '# topology: single | master-replica' line before its first step"
        ),
    )
}

enum Header<'a> {
    Case(&'a str),
    Topology(&'a str),
    Comment,
}

/// Classifies the text after a leading `#`.
fn header(after_hash: &str) -> Header<'_> {
    let s = after_hash.trim_start();
    if let Some(rest) = s.strip_prefix("case:") {
        Header::Case(rest.trim())
    } else if let Some(rest) = s.strip_prefix("topology:") {
        Header::Topology(rest.trim())
    } else {
        Header::Comment
    }
}

/// Parse one corpus file.
pub fn parse(text: &str) -> Result<Corpus, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut cases: Vec<Case> = Vec::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    let mut open: Option<OpenCase> = None;
    let mut total_steps = 0usize;

    for (idx, raw) in text.split('\n').enumerate() {
        let line_no = idx + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if raw.len() > MAX_LINE_BYTES {
            return Err(ParseError::new(
                line_no,
                format!(
                    "line is {} bytes long, more than the limit of {MAX_LINE_BYTES}",
                    raw.len()
                ),
            ));
        }
        // Only leading space is dropped: a reply's trailing spaces are part of it (Redis's
        // unknown-command error ends in one).
        let line = raw.trim_start();
        if line.trim_end().is_empty() {
            continue;
        }
        if let Some(after_hash) = line.strip_prefix('#') {
            match header(after_hash) {
                Header::Comment => {}
                Header::Case(name) => {
                    if let Some(prev) = open.take() {
                        cases.push(prev.finish()?);
                    }
                    if cases.len() >= MAX_CASES {
                        return Err(ParseError::new(
                            line_no,
                            format!("more than {MAX_CASES} cases in one file"),
                        ));
                    }
                    if name.is_empty() {
                        return Err(ParseError::new(line_no, "empty case name after '# case:'"));
                    }
                    if !names.insert(name.to_string()) {
                        return Err(ParseError::new(
                            line_no,
                            format!("duplicate case name '{}'", snippet(name)),
                        ));
                    }
                    open = Some(OpenCase {
                        name: name.to_string(),
                        line: line_no,
                        topology: None,
                        steps: Vec::new(),
                        blocked: Vec::new(),
                    });
                }
                Header::Topology(value) => {
                    let Some(case) = open.as_mut() else {
                        return Err(ParseError::new(
                            line_no,
                            "'# topology:' before any '# case:' line",
                        ));
                    };
                    if !case.steps.is_empty() {
                        return Err(ParseError::new(
                            line_no,
                            format!("'# topology:' after the first step of case '{}'", case.name),
                        ));
                    }
                    if case.topology.is_some() {
                        return Err(ParseError::new(
                            line_no,
                            format!("second '# topology:' line in case '{}'", case.name),
                        ));
                    }
                    case.topology = Some(match value {
                        "single" => Topology::Single,
                        "master-replica" => Topology::MasterReplica,
                        other => {
                            return Err(ParseError::new(
                                line_no,
                                format!(
                                    "unknown topology '{}' (expected 'single' or 'master-replica')",
                                    snippet(other)
                                ),
                            ));
                        }
                    });
                }
            }
        } else if line.starts_with('@') {
            let Some(case) = open.as_mut() else {
                return Err(ParseError::new(line_no, "step before any '# case:' line"));
            };
            let Some(topology) = case.topology else {
                return Err(missing_topology(&case.name, case.line));
            };
            let step = parse_step(line, topology).map_err(|m| ParseError::new(line_no, m))?;
            case.check_connection(&step.1, line_no)
                .map_err(|m| ParseError::new(line_no, m))?;
            let step = Step {
                at_ms: step.0,
                line: line_no,
                kind: step.1,
            };
            if let Some(prev) = case.steps.last()
                && step.at_ms < prev.at_ms
            {
                return Err(ParseError::new(
                    line_no,
                    format!(
                        "time goes backwards: @{} after @{} (line {})",
                        step.at_ms, prev.at_ms, prev.line
                    ),
                ));
            }
            total_steps += 1;
            if total_steps > MAX_STEPS {
                return Err(ParseError::new(
                    line_no,
                    format!("more than {MAX_STEPS} steps in one file"),
                ));
            }
            case.steps.push(step);
        } else {
            return Err(ParseError::new(
                line_no,
                format!(
                    "unexpected line '{}' (expected '# case:', '# topology:', a '#' comment, '@T ...' or a blank line)",
                    snippet(line)
                ),
            ));
        }
    }
    if let Some(prev) = open.take() {
        cases.push(prev.finish()?);
    }
    Ok(Corpus { cases })
}

/// Parses a trimmed line starting with `@` into its time and step.
fn parse_step(line: &str, topology: Topology) -> Result<(u64, StepKind), String> {
    let after_at = line.get(1..).unwrap_or("");
    let digits_end = after_at
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(after_at.len());
    let (digits, rest) = after_at.split_at(digits_end);
    let first_word = line.split(char::is_whitespace).next().unwrap_or(line);
    if digits.is_empty() || rest.chars().next().is_some_and(|c| !c.is_whitespace()) {
        return Err(format!(
            "bad step time '{}' (expected '@' and milliseconds, like '@250')",
            snippet(first_word)
        ));
    }
    let at_ms = match digits.parse::<u64>() {
        Ok(t) if t <= MAX_AT_MS => t,
        _ => {
            return Err(format!(
                "step time @{} is above the limit of {MAX_AT_MS} ms",
                snippet(digits)
            ));
        }
    };
    let body = rest.trim_start();
    if body.trim_end().is_empty() {
        return Err("empty command after the step time".to_string());
    }

    let mut lexer = ArgLexer::new(body);
    let mut tokens: Vec<Token> = Vec::new();
    let mut reply: Option<&str> = None;
    let mut awaits = false;
    while let Some(tok) = lexer.next_token()? {
        if !tok.quoted && (tok.bytes == b"->" || tok.bytes == b"<-") {
            awaits = tok.bytes == b"<-";
            reply = Some(lexer.rest());
            break;
        }
        tokens.push(tok);
    }

    // Directives.
    if let Some(first) = tokens.first().filter(|t| !t.quoted) {
        let directive = match first.bytes.as_slice() {
            b"wait-sync" => Some(("wait-sync", StepKind::WaitSync, 1)),
            b"link" => Some(("link replica master", StepKind::Link, 3)),
            _ => None,
        };
        if let Some((syntax, kind, len)) = directive {
            let words: Vec<&[u8]> = syntax.split(' ').map(str::as_bytes).collect();
            let exact = tokens.len() == len
                && tokens
                    .iter()
                    .zip(&words)
                    .all(|(t, w)| !t.quoted && t.bytes == *w);
            if !exact {
                return Err(format!("bad directive: expected exactly '{syntax}'"));
            }
            if reply.is_some() {
                return Err(format!("directive '{syntax}' takes no '->' reply"));
            }
            if topology != Topology::MasterReplica {
                return Err(format!(
                    "directive '{syntax}' needs '# topology: master-replica'"
                ));
            }
            return Ok((at_ms, kind));
        }
    }

    // Node prefix: a bare first word ending in ':'.
    let mut node = None;
    if let Some(first) = tokens
        .first()
        .filter(|t| !t.quoted && t.bytes.ends_with(b":"))
    {
        let name = &first.bytes[..first.bytes.len() - 1];
        let role = match name {
            b"master" => NodeRole::Master,
            b"replica" => NodeRole::Replica,
            _ => {
                return Err(format!(
                    "unknown node '{}' (expected 'master:' or 'replica:')",
                    snippet_bytes(name)
                ));
            }
        };
        if topology == Topology::Single {
            return Err(format!(
                "node prefix '{role}:' in a single-topology case (only master-replica cases name nodes)"
            ));
        }
        node = Some(role);
        tokens.remove(0);
    } else if topology == Topology::MasterReplica {
        return Err(
            "a command in a master-replica case needs a 'master:' or 'replica:' prefix".to_string(),
        );
    }

    let conn = match tokens.first() {
        Some(t) if !t.quoted && t.bytes.starts_with(b"[") => Some(conn_name(&t.bytes)?),
        _ => None,
    };
    if conn.is_some() {
        tokens.remove(0);
    }
    if awaits {
        if !tokens.is_empty() {
            return Err("'<-' takes no command: '@T [CONN] <- REPLY'".to_string());
        }
        let expect = parse_reply(reply.unwrap_or_default())?;
        return Ok((at_ms, StepKind::Await { node, conn, expect }));
    }
    if tokens.is_empty() {
        return Err("empty command".to_string());
    }
    let Some(reply) = reply else {
        return Err("command without '->' and a reply".to_string());
    };
    let argv = tokens
        .into_iter()
        .map(token_to_arg)
        .collect::<Result<Vec<Arg>, String>>()?;
    if reply.trim() == "(blocked)" {
        return Ok((at_ms, StepKind::Blocked { node, conn, argv }));
    }
    let expect = parse_reply(reply)?;
    Ok((
        at_ms,
        StepKind::Command {
            node,
            conn,
            argv,
            expect,
        },
    ))
}

/// A connection token `[name]`: 1 to 32 letters, digits, `_` or `-`.
fn conn_name(token: &[u8]) -> Result<String, String> {
    let name = token
        .strip_prefix(b"[")
        .and_then(|t| t.strip_suffix(b"]"))
        .filter(|n| {
            (1..=32).contains(&n.len())
                && n.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        });
    match name {
        Some(n) => Ok(String::from_utf8_lossy(n).into_owned()),
        None => Err(format!(
            "bad connection '{}' (expected [name]: 1 to 32 letters, digits, '_' or '-')",
            snippet_bytes(token)
        )),
    }
}

fn token_to_arg(tok: Token) -> Result<Arg, String> {
    if tok.quoted || !tok.bytes.starts_with(b"{unix") {
        return Ok(Arg::Bytes(tok.bytes));
    }
    match parse_placeholder(&tok.bytes) {
        Some((Unit::Ms, off)) => Ok(Arg::UnixMs(off)),
        Some((Unit::S, off)) => Ok(Arg::UnixS(off)),
        None => Err(bad_placeholder(&tok.bytes)),
    }
}

fn bad_placeholder(b: &[u8]) -> String {
    format!(
        "bad placeholder '{}' (expected {{unix_ms}}, {{unix_ms+N}}, {{unix_ms-N}} or the same with unix_s)",
        snippet_bytes(b)
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Ms,
    S,
}

/// `{unix_ms}`, `{unix_ms+N}`, `{unix_ms-N}`, `{unix_s...}` → unit and signed offset.
fn parse_placeholder(b: &[u8]) -> Option<(Unit, i64)> {
    let inner = b.strip_prefix(b"{")?.strip_suffix(b"}")?;
    let (unit, rest) = if let Some(rest) = inner.strip_prefix(b"unix_ms") {
        (Unit::Ms, rest)
    } else if let Some(rest) = inner.strip_prefix(b"unix_s") {
        (Unit::S, rest)
    } else {
        return None;
    };
    if rest.is_empty() {
        return Some((unit, 0));
    }
    let (negative, digits) = match rest.split_first()? {
        (b'+', d) => (false, d),
        (b'-', d) => (true, d),
        _ => return None,
    };
    let n = parse_digits(digits)?;
    Some((unit, if negative { -n } else { n }))
}

/// Non-empty ASCII digits that fit an `i64`.
fn parse_digits(digits: &[u8]) -> Option<i64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// A signed decimal integer (`-` allowed, `+` not) that fits an `i64`.
fn parse_int(b: &[u8]) -> Option<i64> {
    match b.split_first()? {
        (b'-', digits) => {
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(b).ok()?.parse().ok()
        }
        _ => parse_digits(b),
    }
}

struct Token {
    bytes: Vec<u8>,
    /// Any part of the token was quoted (so it is neither `->`, a node prefix nor a placeholder).
    quoted: bool,
}

/// `isspace()` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Reads a `"..."` body (the opening quote already consumed) with redis-cli escapes;
/// leaves `pos` after the closing quote.
fn read_double_quoted(s: &[u8], pos: &mut usize, out: &mut Vec<u8>) -> Result<(), String> {
    loop {
        let Some(&c) = s.get(*pos) else {
            return Err("unbalanced quotes: missing closing '\"'".to_string());
        };
        match c {
            b'\\' => {
                let Some(&e) = s.get(*pos + 1) else {
                    return Err("unbalanced quotes: missing closing '\"'".to_string());
                };
                let hex = (e == b'x')
                    .then(|| Some((hex_val(*s.get(*pos + 2)?)?, hex_val(*s.get(*pos + 3)?)?)))
                    .flatten();
                if let Some((hi, lo)) = hex {
                    out.push(hi * 16 + lo);
                    *pos += 4;
                } else {
                    out.push(match e {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                    *pos += 2;
                }
            }
            b'"' => {
                *pos += 1;
                return Ok(());
            }
            _ => {
                out.push(c);
                *pos += 1;
            }
        }
    }
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Splits arguments like redis-cli's `sdssplitargs`.
struct ArgLexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> ArgLexer<'a> {
    fn new(text: &'a str) -> ArgLexer<'a> {
        ArgLexer { text, pos: 0 }
    }

    /// The text after the last token read.
    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn next_token(&mut self) -> Result<Option<Token>, String> {
        let s = self.text.as_bytes();
        // NUL ends a C string in sdssplitargs; here it just separates arguments.
        while s.get(self.pos).is_some_and(|&c| is_space(c) || c == 0) {
            self.pos += 1;
        }
        if self.pos >= s.len() {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        let mut quoted = false;
        while let Some(&c) = s.get(self.pos) {
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | 0 => break,
                b'"' | b'\'' => {
                    quoted = true;
                    self.pos += 1;
                    if c == b'"' {
                        read_double_quoted(s, &mut self.pos, &mut bytes)?;
                    } else {
                        self.read_single_quoted(&mut bytes)?;
                    }
                    if s.get(self.pos).is_some_and(|&n| !is_space(n)) {
                        return Err(format!(
                            "closing quote must be followed by a space: '{}'",
                            snippet(self.rest())
                        ));
                    }
                    break;
                }
                _ => {
                    bytes.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(Some(Token { bytes, quoted }))
    }

    /// A `'...'` body (opening quote consumed): only `\'` is an escape.
    fn read_single_quoted(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        let s = self.text.as_bytes();
        loop {
            let Some(&c) = s.get(self.pos) else {
                return Err("unbalanced quotes: missing closing \"'\"".to_string());
            };
            if c == b'\\' && s.get(self.pos + 1) == Some(&b'\'') {
                out.push(b'\'');
                self.pos += 2;
            } else if c == b'\'' {
                self.pos += 1;
                return Ok(());
            } else {
                out.push(c);
                self.pos += 1;
            }
        }
    }
}

/// Parses the reply text after `->`.
/// Where an error message inside an array ends: at `]`, or at a `,` that starts the next
/// element. Redis's own texts contain commas (`ERR NX and XX, GT or LT ...`, a script's
/// `script: <sha>, on @user_script:1.`), so a comma ends the message only when what follows
/// looks like a reply: `(`, `"`, `[`, `~`, a number, or a bare upper-case status word (`OK`,
/// `QUEUED`) that is itself followed by `,` or `]`.
fn array_error_end(rest: &str) -> usize {
    let b = rest.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b']' {
            return i;
        }
        if c != b',' {
            continue;
        }
        let next = rest[i + 1..].trim_start();
        let starts_reply = match next.as_bytes().first() {
            None => true,
            Some(b'(' | b'"' | b'[' | b'~' | b'-' | b']') => true,
            Some(d) if d.is_ascii_digit() => true,
            Some(d) if d.is_ascii_uppercase() => {
                let word_end = next
                    .find(|ch: char| !(ch.is_ascii_uppercase() || ch == '_'))
                    .unwrap_or(next.len());
                matches!(
                    next[word_end..].trim_start().as_bytes().first(),
                    None | Some(b',' | b']')
                )
            }
            Some(_) => false,
        };
        if starts_reply {
            return i;
        }
    }
    rest.len()
}

fn parse_reply(text: &str) -> Result<Expect, String> {
    // Trailing spaces stay: a top-level `(error)` message keeps them; other forms skip them.
    let text = text.trim_start();
    if text.trim_end().is_empty() {
        return Err("empty reply after '->'".to_string());
    }
    let mut p = ReplyParser { text, pos: 0 };
    let expect = p.value(0)?;
    p.skip_ws();
    if p.pos < text.len() {
        return Err(format!(
            "unexpected text after the reply: '{}'",
            snippet(p.rest())
        ));
    }
    Ok(expect)
}

struct ReplyParser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> ReplyParser<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(is_space) {
            self.pos += 1;
        }
    }

    fn at_delimiter(&self) -> bool {
        self.peek()
            .is_none_or(|c| is_space(c) || c == b',' || c == b']')
    }

    /// Reads up to the next space, `,`, `]` or the end.
    fn atom(&mut self) -> &'a str {
        let start = self.pos;
        while !self.at_delimiter() {
            self.pos += 1;
        }
        self.text.get(start..self.pos).unwrap_or("")
    }

    /// One reply value; `depth` is the number of enclosing arrays.
    fn value(&mut self, depth: usize) -> Result<Expect, String> {
        self.skip_ws();
        let rest = self.rest();
        match self.peek() {
            None => Err("missing reply value".to_string()),
            Some(b'(') => {
                if rest.starts_with("(nil)") {
                    self.pos += "(nil)".len();
                    self.delimited(Expect::Nil)
                } else if rest.starts_with("(integer)") {
                    self.pos += "(integer)".len();
                    if !self.peek().is_some_and(is_space) {
                        return Err("expected a space after '(integer)'".to_string());
                    }
                    self.skip_ws();
                    let atom = self.atom();
                    let pattern = if atom == "*" {
                        IntPattern::Any
                    } else if atom.starts_with('{') {
                        match parse_placeholder(atom.as_bytes()) {
                            Some((Unit::Ms, off)) => IntPattern::ExactUnixMs(off),
                            Some((Unit::S, off)) => IntPattern::ExactUnixS(off),
                            None => return Err(bad_placeholder(atom.as_bytes())),
                        }
                    } else {
                        IntPattern::Exact(parse_int(atom.as_bytes()).ok_or_else(|| {
                            format!("bad integer '{}' after '(integer)'", snippet(atom))
                        })?)
                    };
                    Ok(Expect::Int(pattern))
                } else if rest.starts_with("(error)") {
                    self.pos += "(error)".len();
                    self.error_message(depth)
                } else if rest.starts_with("(info) \"") {
                    self.pos += "(info) \"".len();
                    let mut out = Vec::new();
                    read_double_quoted(self.bytes(), &mut self.pos, &mut out)?;
                    self.delimited(Expect::Info(out))
                } else {
                    let atom = self.atom();
                    Err(format!(
                        "unknown reply form '{}' (expected (nil), (integer) N, (error) MESSAGE or (info) \"TEXT\")",
                        snippet(atom)
                    ))
                }
            }
            Some(b'"') => {
                self.pos += 1;
                let mut out = Vec::new();
                read_double_quoted(self.bytes(), &mut self.pos, &mut out)?;
                if !self.at_delimiter() {
                    return Err(format!(
                        "closing quote must be followed by a space, ',' or ']': '{}'",
                        snippet(self.rest())
                    ));
                }
                Ok(Expect::Bulk(out))
            }
            Some(b'[') => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(format!("arrays nested deeper than {MAX_ARRAY_DEPTH}"));
                }
                self.pos += 1;
                self.array(depth + 1)
            }
            Some(b'~') => {
                self.pos += 1;
                let atom = self.atom();
                let pattern = if atom.starts_with('{') {
                    match parse_placeholder(atom.as_bytes()) {
                        Some((Unit::Ms, off)) => IntPattern::ApproxUnixMs(off),
                        Some((Unit::S, off)) => IntPattern::ApproxUnixS(off),
                        None => return Err(bad_placeholder(atom.as_bytes())),
                    }
                } else {
                    IntPattern::Approx(parse_int(atom.as_bytes()).ok_or_else(|| {
                        format!(
                            "bad approximate integer '~{}' (expected ~N or ~{{unix_ms+N}})",
                            snippet(atom)
                        )
                    })?)
                };
                Ok(Expect::Int(pattern))
            }
            Some(c) => {
                let atom = self.atom();
                if atom.is_empty() {
                    return Err(format!("unexpected '{}' in reply", char::from(c)));
                }
                if parse_int(atom.as_bytes()).is_some() {
                    return Err(format!(
                        "bare integer '{}' is not a reply form (write '(integer) {}' or '~{}')",
                        snippet(atom),
                        snippet(atom),
                        snippet(atom)
                    ));
                }
                if matches!(c, b'{' | b'}' | b'\'' | b')') {
                    return Err(format!("unknown reply form '{}'", snippet(atom)));
                }
                Ok(Expect::Status(atom.to_string()))
            }
        }
    }

    fn delimited(&self, e: Expect) -> Result<Expect, String> {
        if self.at_delimiter() {
            Ok(e)
        } else {
            Err(format!(
                "unknown reply form: unexpected '{}'",
                snippet(self.rest())
            ))
        }
    }

    /// After `(error)`: the rest of the line at top level; inside an array, the text up to
    /// the next `,` or `]`.
    fn error_message(&mut self, depth: usize) -> Result<Expect, String> {
        match self.peek() {
            None => return Ok(Expect::Error(String::new())),
            Some(b' ') => self.pos += 1,
            Some(c) if depth > 0 && (c == b',' || c == b']') => {
                return Ok(Expect::Error(String::new()));
            }
            Some(_) => return Err("expected a space after '(error)'".to_string()),
        }
        let rest = self.rest();
        let end = if depth == 0 {
            rest.len()
        } else {
            array_error_end(rest)
        };
        // At the top level the message is the rest of the line, trailing spaces included;
        // inside an array it ends at the delimiter, and spaces before it are layout.
        let message = rest.get(..end).unwrap_or("");
        let message = if depth == 0 {
            message
        } else {
            message.trim_end()
        };
        self.pos += end;
        Ok(Expect::Error(message.to_string()))
    }

    /// After `[`; `depth` counts this array.
    fn array(&mut self, depth: usize) -> Result<Expect, String> {
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return self.delimited(Expect::Array(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return self.delimited(Expect::Array(items));
                }
                None => return Err("unclosed '[' in reply".to_string()),
                Some(_) => {
                    return Err(format!(
                        "expected ',' or ']' in array, found '{}'",
                        snippet(self.rest())
                    ));
                }
            }
        }
    }
}

/// Unix ms at which every case starts (a whole second, as in the recording).
pub const CASE_START_UNIX_MS: i64 = 1_700_000_000_000;
/// What happened to one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaseResult {
    Passed,
    /// First mismatch: corpus line, command text, expected pattern, reply got.
    Failed {
        line: usize,
        command: String,
        expected: String,
        got: String,
    },
    Skipped {
        reason: &'static str,
    },
}

/// A command as a case shows it in a failure: plain words as they are, the rest quoted.
pub(crate) fn render_argv(argv: &[Vec<u8>]) -> String {
    let mut s = String::new();
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let plain = !a.is_empty()
            && a.iter()
                .all(|&b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
        if plain {
            s.push_str(&String::from_utf8_lossy(a));
        } else {
            s.push('"');
            let _ = write_quoted(&mut s, a);
            s.push('"');
        }
    }
    s
}

#[cfg(test)]
mod tests;
