//! Observations: what processes and the loop report about a run, stamped with true time.
//! Checkers read only this history (plus the fault log that is part of it).

use crate::proto::Bytes;
use crate::time::{ProcId, SimTime};

pub mod episodes;

/// How a key left a node's keyspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// DEL (or a script's `del`) by the client `by` of the record.
    Del,
    /// Lazy or active expiry.
    Expired,
    /// Overwritten by a SET with another value.
    Overwritten,
    /// FLUSHALL, restart without data, full resync.
    Flushed,
}

/// One fact about a run. Locks are named by index (the model's lock table); tokens are the
/// values clients store in the lock key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observation {
    /// A client starts trying to take `lock` (first try of a round, with its token; retries
    /// use fresh tokens and are not reported again).
    Attempt {
        lock: u32,
        token: Bytes,
    },
    /// The client believes it holds `lock` from now on. `validity_ns`: how long it believes
    /// the lock stays valid, measured on its own clock (None: it never checks).
    /// `believed_until`: that belief mapped to true time by the loop.
    Acquired {
        lock: u32,
        token: Bytes,
        fence: Option<u64>,
        validity_ns: Option<u64>,
        believed_until: Option<SimTime>,
    },
    /// The client stops believing it holds the lock and sends its unlock.
    Released {
        lock: u32,
        token: Bytes,
    },
    /// The client learnt it no longer holds the lock (validity ran out, renewal failed).
    Lost {
        lock: u32,
        token: Bytes,
        reason: &'static str,
    },
    /// An attempt failed for good (retries exhausted or gave up this round).
    GaveUp {
        lock: u32,
    },
    /// The client's extend succeeded; new validity as for `Acquired`.
    Extended {
        lock: u32,
        token: Bytes,
        validity_ns: Option<u64>,
        believed_until: Option<SimTime>,
    },
    /// The resource served a read (start of a critical section).
    ResourceRead {
        client: ProcId,
        token: Option<u64>,
        version: u64,
        accepted: bool,
    },
    /// The resource got a write based on `base_version`; accepted or rejected (fencing).
    ResourceWrite {
        client: ProcId,
        token: Option<u64>,
        base_version: u64,
        accepted: bool,
        version_after: u64,
    },
    /// A key left a Redis node's keyspace; `by` is the client whose command removed it.
    KeyRemoved {
        key: Bytes,
        value: Bytes,
        how: Removal,
        by: Option<ProcId>,
    },
    /// A key was written on a node by client `by` (value and absolute expiry, node wall ms).
    KeyWritten {
        key: Bytes,
        value: Bytes,
        expire_at_ms: Option<i64>,
        by: Option<ProcId>,
    },
    /// A fault was applied (scripted, random or triggered); text for people.
    Fault {
        what: String,
    },
    Crashed,
    Restarted {
        with_data: bool,
    },
    Paused,
    Resumed,
    /// A sentinel's decision (SDOWN, ODOWN, vote, election, promotion, reconfiguration),
    /// in words for timelines.
    Sentinel {
        what: String,
    },
    /// A replication event on a node (link up, full sync, promotion, demotion).
    Replication {
        what: String,
    },
    /// Free text from a process (user algorithms may use it; shown in timelines).
    Note(String),
    /// A fact for checkers and hazard detectors (`check::witness`) that the texts of `Fault`
    /// and `Replication` give only in words. Not drawn in timelines nor exported: those
    /// texts already say it for people.
    Fact(Fact),
}

/// Structured facts about faults and roles, recorded beside their texts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fact {
    /// This Redis node became a master (`REPLICAOF NO ONE`: a failover's promotion).
    Promoted,
    /// This process's wall clock was stepped by `delta_ms` (negative: back).
    ClockStepped { delta_ms: i64 },
    /// This process's clock drift was set to `drift_ppm`.
    DriftChanged { drift_ppm: i64 },
    /// Every directed link from a member of `from` to a member of `to` was cut
    /// (`blocked: true`) or healed.
    Links {
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        blocked: bool,
    },
    /// This process was cut off from every other, both ways (no list kept: see
    /// `FaultKind::Isolate`).
    Isolated,
    /// This client called its library's unlock for `lock` (a section's release, lost or
    /// not): what `release_returns` times. Recorded by the Redlock clients.
    UnlockCalled { lock: u32 },
    /// That unlock call returned (resolved or threw) and the caller goes on.
    UnlockReturned { lock: u32 },
}

/// A history entry: who observed what, when (true time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub at: SimTime,
    pub proc: ProcId,
    pub obs: Observation,
}

/// Bytes one run may retain for judging before it stops (`RunEnd::HistoryLimit`): the
/// records themselves when the history is kept (`replay`, reports), or what the checkers
/// keep when it is streamed (`History::streamed`, sweeps). A sweep worker holds one run at
/// a time, so this bounds a sweep's memory at jobs x this; `run` and `replay` hold one. The
/// bundled models stay far below it (the largest, bench-w1, keeps ~1 MB of records per
/// seed); a day-long busy model at the default event budget would otherwise hold ~1.8 GB
/// of records.
pub const HISTORY_BUDGET_BYTES: u64 = 128 << 20;

/// Where a streamed history's records go instead of being kept: the checkers
/// (`check::monitor::Monitor`), which sit above the history and so are named here only
/// through this trait.
pub trait Sink: Send {
    /// Takes one record, in history order. Returns, now and then, its estimate of the bytes
    /// it keeps (what the memory budget counts); `None` between two estimates.
    fn observe(&mut self, r: &Record) -> Option<u64>;
    /// Its estimate of the bytes it keeps, now.
    fn retained_bytes(&self) -> u64;
    /// A copy (a world, history and all, is cloned by the stepper and the explorer).
    fn clone_box(&self) -> Box<dyn Sink>;
    /// For its owner to take it back as what it is.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}

impl Clone for Box<dyn Sink> {
    fn clone(&self) -> Box<dyn Sink> {
        self.clone_box()
    }
}

/// The history of one run, in order of true time (ties in loop order).
///
/// Kept whole by default. A streamed history (`History::stream_into`) hands each record to
/// its sink as it comes and keeps none: a sweep needs only the verdicts, and the records
/// of a long run are most of its memory.
#[derive(Clone)]
pub struct History {
    /// Every record when kept; empty when streamed.
    pub records: Vec<Record>,
    /// Estimated bytes retained: of `records` (the records themselves and the heap text and
    /// byte strings they own, not the vector's spare capacity) when kept, or the sink's
    /// latest estimate of what it keeps when streamed.
    // Invariant: the sum of `Record::bytes` over `records`, when `sink` is `None`.
    bytes: u64,
    budget_bytes: u64,
    /// Where records go when the history is streamed.
    sink: Option<Box<dyn Sink>>,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("records", &self.records)
            .field("bytes", &self.bytes)
            .field("budget_bytes", &self.budget_bytes)
            .field("streamed", &self.sink.is_some())
            .finish()
    }
}

impl Default for History {
    fn default() -> History {
        History::with_budget(HISTORY_BUDGET_BYTES)
    }
}

impl History {
    /// An empty history that reports `over_budget` past `budget_bytes`.
    pub fn with_budget(budget_bytes: u64) -> History {
        History {
            records: Vec::new(),
            bytes: 0,
            budget_bytes,
            sink: None,
        }
    }

    /// From now on, hands each record to `sink` instead of keeping it. Records kept so far
    /// (a world may record before it runs) are handed over first, in order.
    pub fn stream_into(&mut self, mut sink: Box<dyn Sink>) {
        for r in self.records.drain(..) {
            sink.observe(&r);
        }
        self.records = Vec::new();
        self.bytes = sink.retained_bytes();
        self.sink = Some(sink);
    }

    /// Whether records go to a sink rather than being kept.
    pub fn streamed(&self) -> bool {
        self.sink.is_some()
    }

    /// The sink of a streamed history (`None` when kept), leaving the history kept and
    /// empty.
    pub fn take_sink(&mut self) -> Option<Box<dyn Sink>> {
        let sink = self.sink.take()?;
        self.bytes = 0;
        Some(sink)
    }

    /// Records an observation. Never refuses one: the loop checks `over_budget` between
    /// events and ends the run there, so a history is never cut inside an event.
    #[inline]
    pub fn push(&mut self, at: SimTime, proc: ProcId, obs: Observation) {
        let r = Record { at, proc, obs };
        if let Some(sink) = &mut self.sink {
            // Estimated at the sink's pace: a few records more or less against a budget of
            // megabytes.
            if let Some(b) = sink.observe(&r) {
                self.bytes = b;
            }
            return;
        }
        debug_assert!(
            self.records.last().is_none_or(|r| r.at <= at),
            "history goes back in time"
        );
        self.bytes += r.bytes();
        self.records.push(r);
    }

    /// Estimated bytes retained (see `bytes`).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn budget_bytes(&self) -> u64 {
        self.budget_bytes
    }

    /// Whether the history has grown past its budget.
    #[inline]
    pub fn over_budget(&self) -> bool {
        self.bytes > self.budget_bytes
    }
}

impl Record {
    /// Estimated bytes: the record and what it owns on the heap.
    fn bytes(&self) -> u64 {
        let heap = Bytes::heap_bytes;
        let owned = match &self.obs {
            Observation::Fault { what }
            | Observation::Sentinel { what }
            | Observation::Replication { what }
            | Observation::Note(what) => what.len(),
            Observation::Attempt { token, .. }
            | Observation::Acquired { token, .. }
            | Observation::Released { token, .. }
            | Observation::Lost { token, .. }
            | Observation::Extended { token, .. } => heap(token),
            Observation::KeyRemoved { key, value, .. }
            | Observation::KeyWritten { key, value, .. } => heap(key) + heap(value),
            Observation::Fact(Fact::Links { from, to, .. }) => {
                (from.len() + to.len()) * std::mem::size_of::<ProcId>()
            }
            Observation::Fact(_) => 0,
            Observation::GaveUp { .. }
            | Observation::ResourceRead { .. }
            | Observation::ResourceWrite { .. }
            | Observation::Crashed
            | Observation::Restarted { .. }
            | Observation::Paused
            | Observation::Resumed => 0,
        };
        (std::mem::size_of::<Record>() + owned) as u64
    }
}
