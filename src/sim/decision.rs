//! Decision points: the protocol moments where one fault does the most harm, as the
//! triggered adversary (`sim::adversary`) knows them — a client that just acquired (for
//! Redlock: just reached its quorum), a node that just granted (stored a client's write and
//! replied, before its replication stream got anywhere), a client about to send its `DEL`
//! or its resource write. A world asked to (`World::log_decisions`) records each as it
//! happens; `explore` places faults at them instead of at random times.

use crate::time::{ProcId, SimTime};

/// What happened at a decision point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DecisionKind {
    /// `proc` (a client) reported it acquired.
    Acquired,
    /// `proc` (a Redis node) stored a write of `peer` (the writer; a client, or a master
    /// streaming to its replica — the reader tells them apart).
    Granted,
    /// `proc` (a client) is about to send a `DEL` to `peer`.
    BeforeDel,
    /// `proc` (a client) is about to send a write to the resource `peer`.
    BeforeResourceWrite,
    /// An event reached `proc`: a delivery from `peer`, or (no peer) a timer or its start.
    /// A fault of `proc` that opens anywhere after its previous event and before this one
    /// meets its future at this event first — for a pause, the run depends on the pause's
    /// start only through which event it parks first — so one fault opened just before each
    /// event covers every start of that fault (docs/explore.md, "Offsets").
    Arrival,
}

impl DecisionKind {
    /// Whether the point is met while sending (a fault must come before the event, so that
    /// the message waits for it) rather than after something happened.
    pub fn is_before_send(self) -> bool {
        matches!(
            self,
            DecisionKind::BeforeDel | DecisionKind::BeforeResourceWrite | DecisionKind::Arrival
        )
    }
}

/// One decision point of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// True time of the event during which it happened.
    pub at: SimTime,
    pub kind: DecisionKind,
    pub proc: ProcId,
    pub peer: Option<ProcId>,
    /// For `Acquired`: the client's belief mapped to true time, if it has one.
    pub believed_until: Option<SimTime>,
}

/// FNV-1a over text written into it: state fingerprints hash `Debug` output without
/// building the string.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn finish(self) -> u64 {
        self.0
    }
}

impl std::fmt::Write for Fnv {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for b in s.bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        Ok(())
    }
}
