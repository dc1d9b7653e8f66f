//! The trace of a run: every event the loop handled, in order. `Full` keeps structured
//! entries (replay, determinism checks); `Hash` folds them into a running FNV-1a hash
//! (cheap determinism checks); `Count` keeps none but knows where a `Full` trace would have
//! stopped keeping them (`run`, which prints no message but that note); `Off` costs nothing
//! (sweeps).

use std::fmt::Write as _;

use crate::net::DropReason;
use crate::proto::Msg;
use crate::proto::sentinel::ReplMsg;
use crate::time::{ProcId, SimTime};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceMode {
    Off,
    Hash,
    /// No entry kept: only the count a `Full` trace would keep, and its cap (`Trace::cap`).
    Count,
    Full,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceKind {
    Start,
    Recv {
        from: ProcId,
        msg: Msg,
        /// When the sender sent it (true time): the tail of the message's arrow in reports.
        /// Not part of the trace's hash or text, which stay as they were before it existed.
        sent_at: SimTime,
    },
    Timer {
        tag: u64,
    },
    Dropped {
        from: ProcId,
        msg: Msg,
        reason: DropReason,
        sent_at: SimTime,
    },
    Fault(String),
    /// An event that reached a paused process and was parked until it resumes.
    Parked,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    pub at: SimTime,
    pub proc: ProcId,
    /// The process's node wall clock at that instant (Unix ms).
    pub wall_ms: i64,
    pub kind: TraceKind,
}

/// Entries a `Full` trace keeps (`run`, `replay`, determinism checks). An entry holds the
/// message it records, ~190 bytes with its share of the heap, so this bounds a trace at
/// ~190 MB; the bundled models stay far below it (the largest, bench-w1, ~110,000 events
/// per seed). Past the cap the trace stops keeping entries and folds them into a hash
/// (the history, and so the verdict, still covers the whole run).
pub const MAX_TRACE_ENTRIES: usize = 1_000_000;
/// Bytes per kept entry, as measured on a day-long 3-client model (peak RSS of `run` less
/// that of a one-seed `sweep`, over the 1,000,000 entries kept); only for telling people
/// what the cap means.
pub const TRACE_ENTRY_BYTES_MEASURED: u64 = 190;

#[derive(Clone, Debug)]
pub struct Trace {
    pub mode: TraceMode,
    // Invariant: at most `MAX_TRACE_ENTRIES` long.
    pub entries: Vec<TraceEntry>,
    hash: u64,
    /// `Full` past the cap: the true time of the first entry not kept, and how many were not.
    capped_at: Option<SimTime>,
    dropped: u64,
    /// `Count`: the entries a `Full` trace would have kept so far.
    // Invariant: at most `MAX_TRACE_ENTRIES`.
    counted: usize,
}

/// Where a `Full` trace stopped keeping entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceCap {
    pub at: SimTime,
    pub kept: usize,
    pub dropped: u64,
    /// Hash of the entries not kept (compared by determinism checks).
    pub dropped_hash: u64,
}

impl TraceCap {
    /// The line `run` and `replay` print when the cap was hit.
    pub fn note(&self) -> String {
        format!(
            "trace capped at {} entries (~{} MB) at t={}: {} later entries are not kept; the verdict covers the whole run",
            self.kept,
            self.kept as u64 * TRACE_ENTRY_BYTES_MEASURED / 1_000_000,
            self.at,
            self.dropped
        )
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv(mut h: u64, x: u64) -> u64 {
    for b in x.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

impl Trace {
    pub fn new(mode: TraceMode) -> Trace {
        Trace {
            mode,
            entries: Vec::new(),
            hash: FNV_OFFSET,
            capped_at: None,
            dropped: 0,
            counted: 0,
        }
    }

    /// `Full` and `Count`: where the trace stopped (or would have stopped) keeping entries,
    /// if it did.
    pub fn cap(&self) -> Option<TraceCap> {
        self.capped_at.map(|at| TraceCap {
            at,
            kept: self.entries.len().max(self.counted),
            dropped: self.dropped,
            dropped_hash: self.hash,
        })
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.mode != TraceMode::Off
    }

    pub fn record(&mut self, entry: TraceEntry) {
        match self.mode {
            TraceMode::Off => {}
            TraceMode::Hash => self.fold(&entry),
            TraceMode::Full if self.entries.len() < MAX_TRACE_ENTRIES => self.entries.push(entry),
            TraceMode::Count if self.counted < MAX_TRACE_ENTRIES => self.counted += 1,
            TraceMode::Full | TraceMode::Count => {
                self.capped_at.get_or_insert(entry.at);
                self.dropped += 1;
                self.fold(&entry);
            }
        }
    }

    /// Folds an entry into the running hash.
    fn fold(&mut self, entry: &TraceEntry) {
        let mut h = fnv(self.hash, entry.at.0);
        h = fnv(h, u64::from(entry.proc.0));
        h = fnv(h, entry.wall_ms as u64);
        let (tag, a, b) = match &entry.kind {
            TraceKind::Start => (0, 0, 0),
            TraceKind::Recv { from, msg, .. } => (1, u64::from(from.0), msg_id(msg)),
            TraceKind::Timer { tag } => (2, *tag, 0),
            TraceKind::Dropped { from, msg, .. } => (3, u64::from(from.0), msg_id(msg)),
            TraceKind::Fault(s) => (4, s.len() as u64, 0),
            TraceKind::Parked => (5, 0, 0),
        };
        h = fnv(h, tag);
        h = fnv(h, a);
        self.hash = fnv(h, b);
    }

    /// Hash of the trace: in `Hash` mode the running hash, in `Full` mode the hash of the
    /// rendered text.
    pub fn digest(&self) -> u64 {
        match self.mode {
            TraceMode::Full => {
                // Line by line, so that hashing never holds the whole text at once.
                let mut line = String::new();
                let mut h = FNV_OFFSET;
                for e in &self.entries {
                    line.clear();
                    write_entry(&mut line, e, &|p| p.0.to_string());
                    h = line
                        .bytes()
                        .fold(h, |h, b| (h ^ u64::from(b)).wrapping_mul(FNV_PRIME));
                }
                match self.cap() {
                    Some(cap) => fnv(fnv(h, cap.dropped), cap.dropped_hash),
                    None => h,
                }
            }
            _ => self.hash,
        }
    }

    /// One line per entry kept; `name` renders a process id.
    pub fn render_text(&self, name: &dyn Fn(ProcId) -> String) -> String {
        let mut s = String::new();
        for e in &self.entries {
            write_entry(&mut s, e, name);
        }
        s
    }

    /// One line per entry kept, and a last line for the entries past the cap (their count
    /// and hash), so that two runs that differ only past the cap still compare different.
    pub fn lines(&self, name: &dyn Fn(ProcId) -> String) -> Vec<String> {
        let mut lines: Vec<String> = self
            .entries
            .iter()
            .map(|e| {
                let mut s = String::new();
                write_entry(&mut s, e, name);
                s.pop();
                s
            })
            .collect();
        if let Some(cap) = self.cap() {
            lines.push(format!(
                "(capped at {}: {} entries not kept, hash {:016x})",
                cap.at, cap.dropped, cap.dropped_hash
            ));
        }
        lines
    }
}

/// One line of `render_text`, newline included.
fn write_entry(s: &mut String, e: &TraceEntry, name: &dyn Fn(ProcId) -> String) {
    let _ = write!(s, "{} {} wall={} ", e.at, name(e.proc), e.wall_ms);
    let _ = match &e.kind {
        TraceKind::Start => writeln!(s, "start"),
        TraceKind::Recv { from, msg, .. } => {
            writeln!(s, "recv from {} {}", name(*from), describe_msg(msg))
        }
        TraceKind::Timer { tag } => writeln!(s, "timer {tag}"),
        TraceKind::Dropped {
            from, msg, reason, ..
        } => {
            writeln!(
                s,
                "drop from {} ({}) {}",
                name(*from),
                reason.as_str(),
                describe_msg(msg)
            )
        }
        TraceKind::Fault(f) => writeln!(s, "fault {f}"),
        TraceKind::Parked => writeln!(s, "parked (paused)"),
    };
}

fn msg_id(m: &Msg) -> u64 {
    match m {
        Msg::Request { id, .. }
        | Msg::Reply { id, .. }
        | Msg::ResourceRead { id, .. }
        | Msg::ResourceWrite { id, .. }
        | Msg::ResourceAck { id, .. }
        | Msg::SentinelReq { id, .. }
        | Msg::SentinelResp { id, .. }
        | Msg::Refused { id } => *id,
        Msg::Repl(r) => match r {
            ReplMsg::Stream { offset, .. }
            | ReplMsg::FullSync { offset, .. }
            | ReplMsg::Ack { offset } => *offset,
            ReplMsg::Sync | ReplMsg::GetAck => 0,
        },
        Msg::Consensus(_) | Msg::Push { .. } => 0,
    }
}

fn argv_text(cmd: &crate::proto::Command) -> String {
    let mut s = String::new();
    for (i, a) in cmd.to_argv().into_iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        if a.len() > 40 {
            s.push_str(&String::from_utf8_lossy(&a[..37]));
            s.push_str("...");
        } else {
            s.push_str(&String::from_utf8_lossy(&a));
        }
    }
    s
}

/// A message as people read it: `#7 SET lock c1-3 NX PX 30`, `#7 -> OK`.
pub fn describe_msg(m: &Msg) -> String {
    match m {
        Msg::Request { id, cmd } => format!("#{id} {}", argv_text(cmd)),
        Msg::Reply { id, reply } => format!("#{id} -> {reply}"),
        Msg::Refused { id } => format!("#{id} -> connection refused"),
        Msg::ResourceRead { id, token } => format!("#{id} read token={}", fmt_token(*token)),
        Msg::ResourceWrite {
            id,
            token,
            base_version,
        } => {
            format!(
                "#{id} write token={} base=v{base_version}",
                fmt_token(*token)
            )
        }
        Msg::ResourceAck {
            id,
            accepted,
            version,
        } => {
            format!(
                "#{id} {} now v{version}",
                if *accepted { "accepted" } else { "REJECTED" }
            )
        }
        Msg::SentinelReq { id, req } => format!("#{id} {req:?}"),
        Msg::SentinelResp { id, resp } => format!("#{id} -> {resp:?}"),
        Msg::Repl(r) => match r {
            ReplMsg::Sync => "PSYNC (full sync requested)".into(),
            ReplMsg::FullSync { offset, cmds } => {
                format!("FULLSYNC {} keys at offset {offset}", cmds.len())
            }
            ReplMsg::Stream { offset, cmds } => {
                let c: Vec<String> = cmds.iter().map(argv_text).collect();
                format!("stream @{offset}: {}", c.join("; "))
            }
            ReplMsg::Ack { offset } => format!("REPLCONF ACK {offset}"),
            ReplMsg::GetAck => "REPLCONF GETACK".into(),
        },
        Msg::Consensus(c) => format!("{c:?}"),
        Msg::Push { reply } => format!("push {reply}"),
    }
}

fn fmt_token(t: Option<u64>) -> String {
    t.map_or_else(|| "-".into(), |t| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run` prints a `Count` trace's cap note where it printed a `Full` one's: the same
    /// instant, the same kept and dropped counts.
    #[test]
    fn a_counting_trace_caps_where_a_full_one_would() {
        let entry = |i: u64| TraceEntry {
            at: SimTime(i * 10),
            proc: ProcId(0),
            wall_ms: 0,
            kind: TraceKind::Timer { tag: 1 },
        };
        let mut t = Trace::new(TraceMode::Count);
        for i in 0..MAX_TRACE_ENTRIES as u64 {
            t.record(entry(i));
        }
        assert_eq!(t.cap(), None, "at the cap, nothing dropped yet");
        for i in 0..7 {
            t.record(entry(MAX_TRACE_ENTRIES as u64 + i));
        }
        let cap = t.cap().expect("past the cap");
        assert!(t.entries.is_empty(), "a counting trace keeps no entry");
        assert_eq!(cap.at, SimTime(MAX_TRACE_ENTRIES as u64 * 10));
        assert_eq!((cap.kept, cap.dropped), (MAX_TRACE_ENTRIES, 7));
    }
}
