//! Observations: what processes and the loop report about a run, stamped with true time.
//! Checkers read only this history (plus the fault log that is part of it).

use crate::proto::Bytes;
use crate::time::{ProcId, SimTime};

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
}

/// A history entry: who observed what, when (true time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub at: SimTime,
    pub proc: ProcId,
    pub obs: Observation,
}

/// The history of one run, in order of true time (ties in loop order).
#[derive(Clone, Debug, Default)]
pub struct History {
    pub records: Vec<Record>,
}

impl History {
    pub fn push(&mut self, at: SimTime, proc: ProcId, obs: Observation) {
        debug_assert!(
            self.records.last().is_none_or(|r| r.at <= at),
            "history goes back in time"
        );
        self.records.push(Record { at, proc, obs });
    }
}
