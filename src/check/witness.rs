//! Hazards reached: which of the dangers a lock must survive actually happened in a run.
//!
//! A verdict of "holds" says nothing unless the run went through the danger the model is
//! about: a fencing model whose pauses never outlived a key has not shown that fencing
//! works. Each detector here reads only the history (like the checkers) and says whether,
//! and first when, its hazard occurred. A sweep counts the seeds that reached each hazard,
//! and a model that requires a hazard (`witness: [...]`) which no seed reached is vacuous.
//!
//! "Holds" below means what the checkers mean: from `Acquired` until `Released`, `Lost` or
//! the client's crash. A token is "live on a node" from its `KeyWritten` there until its
//! `KeyRemoved` there.

use std::collections::BTreeMap;
use std::fmt;

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;

use crate::check::slot;
use crate::history::{Fact, History, Observation, Record, Removal};
use crate::proto::Bytes;
use crate::time::{ProcId, SimTime};

/// The hazards the detectors know. Closed: a model names them in `witness: [...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hazard {
    /// A client paused while holding, and its key left a node that had granted it (expired,
    /// overwritten, flushed, or deleted by another) before the client resumed.
    PauseOutlivedKey,
    /// A holder's key expired on a node while the holder still held the lock.
    KeyExpiredWhileHeld,
    /// The resource rejected a read or write (a stale fencing token).
    StaleTokenRejected,
    /// A node was promoted to master while some holder's token, granted on another node,
    /// was not in its keyspace: the failover lost an acknowledged lock.
    PromotedReplicaLackedLock,
    /// As `PromotedReplicaLackedLock`, and another replica did have the holder's token: the
    /// replica that could acknowledge a `WAIT` was not the one promoted.
    LockReplicaNotPromoted,
    /// A node's wall clock was stepped (or its drift changed) while it kept a held lock's key
    /// with an expiry: the step moved when that key expires in true time.
    ClockMovedExpiry,
    /// A holder's own clock was stepped (or its drift changed) while it held.
    HolderClockMoved,
    /// A holder's renewal or extend failed (it learnt it lost the lock).
    RenewalFailed,
    /// A holder's believed validity ran out while it still held: it gave the lock up early
    /// (`Lost`, "validity ran out") or kept on past its belief.
    ValidityRanOut,
    /// A holder held past the end of the validity it acquired with, on renewed validity
    /// (critical sections longer than the lease, kept safe by renewal).
    HeldBeyondLease,
    /// A node restarted without a key it had before its crash.
    RestartLostKeys,
    /// A node crashed while it kept a held lock's key.
    NodeCrashedWithLock,
    /// A client crashed while holding (without a TTL, its lock stays forever).
    HolderCrashed,
    /// A holder was cut off from a node that kept its key (either direction).
    HolderPartitioned,
    /// A node granted a client's attempt after the client had given that attempt up (its
    /// lock command landed late): a lock on the node that no caller knows it holds.
    GrantedAfterGaveUp,
    /// A node's grant of a client's attempt expired there before the client settled the
    /// attempt (its replies in flight, or the client paused): if the client now counts that
    /// grant, it acquires a lock already gone (Kleppmann's GC pause).
    GrantExpiredInFlight,
}

impl Hazard {
    pub const ALL: [Hazard; 16] = [
        Hazard::PauseOutlivedKey,
        Hazard::KeyExpiredWhileHeld,
        Hazard::StaleTokenRejected,
        Hazard::PromotedReplicaLackedLock,
        Hazard::LockReplicaNotPromoted,
        Hazard::ClockMovedExpiry,
        Hazard::HolderClockMoved,
        Hazard::RenewalFailed,
        Hazard::ValidityRanOut,
        Hazard::HeldBeyondLease,
        Hazard::RestartLostKeys,
        Hazard::NodeCrashedWithLock,
        Hazard::HolderCrashed,
        Hazard::HolderPartitioned,
        Hazard::GrantedAfterGaveUp,
        Hazard::GrantExpiredInFlight,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Hazard::PauseOutlivedKey => "pause_outlived_key",
            Hazard::KeyExpiredWhileHeld => "key_expired_while_held",
            Hazard::StaleTokenRejected => "stale_token_rejected",
            Hazard::PromotedReplicaLackedLock => "promoted_replica_lacked_lock",
            Hazard::LockReplicaNotPromoted => "lock_replica_not_promoted",
            Hazard::ClockMovedExpiry => "clock_moved_expiry",
            Hazard::HolderClockMoved => "holder_clock_moved",
            Hazard::RenewalFailed => "renewal_failed",
            Hazard::ValidityRanOut => "validity_ran_out",
            Hazard::HeldBeyondLease => "held_beyond_lease",
            Hazard::RestartLostKeys => "restart_lost_keys",
            Hazard::NodeCrashedWithLock => "node_crashed_with_lock",
            Hazard::HolderCrashed => "holder_crashed",
            Hazard::HolderPartitioned => "holder_partitioned",
            Hazard::GrantedAfterGaveUp => "granted_after_gave_up",
            Hazard::GrantExpiredInFlight => "grant_expired_in_flight",
        }
    }

    pub fn from_name(s: &str) -> Option<Hazard> {
        Hazard::ALL.into_iter().find(|h| h.name() == s)
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of hazards, as bits: what one seed reached, kept per outcome in sweeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hazards(u32);

impl Hazards {
    /// The hazards of these witnesses.
    pub fn of(found: &[Witness]) -> Hazards {
        let mut set = Hazards::default();
        for w in found {
            set.insert(w.hazard);
        }
        set
    }
    pub fn insert(&mut self, h: Hazard) {
        self.0 |= h.bit();
    }
    pub fn contains(self, h: Hazard) -> bool {
        self.0 & h.bit() != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// In `Hazard::ALL` order.
    pub fn iter(self) -> impl Iterator<Item = Hazard> {
        Hazard::ALL.into_iter().filter(move |h| self.contains(*h))
    }
}

/// The first time a run reached a hazard, and who was involved (holder first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    pub hazard: Hazard,
    pub at: SimTime,
    pub actors: Vec<ProcId>,
}

/// A lock held right now.
#[derive(Clone, Copy)]
struct Hold {
    client: ProcId,
    /// Believed end at acquisition (true time), if the client measures validity.
    initial_until: Option<SimTime>,
    /// Believed end now (extensions move it).
    until: Option<SimTime>,
    extended: bool,
}

/// A client's latest attempt: its token, and how far it got.
#[derive(Clone)]
struct Attempting {
    token: Bytes,
    stage: Stage,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Sent, not settled: a grant now is one the client is still waiting for.
    Open,
    /// The client gave it up: a grant now is one nobody waits for.
    GaveUp,
    /// The client acquired with it (from here on the holds are what count).
    Acquired,
}

/// A key as a node keeps it.
#[derive(Clone)]
struct Kept {
    value: Bytes,
    has_expiry: bool,
    /// Written by the master's stream (no client named), not by a client's command.
    replicated: bool,
}

/// The hazard detectors, fed one record at a time in history order: what `witnesses`
/// replays over a kept history, and what a streamed run keeps.
#[derive(Clone, Default)]
pub struct Scan {
    found: Vec<Witness>,
    seen: Hazards,
    /// token -> its hold. Fixed-hasher map: deterministic and cheap over many tokens.
    holds: IndexMap<Bytes, Hold, FxBuildHasher>,
    /// Paused clients and the tokens they held when the pause began.
    paused: BTreeMap<ProcId, Vec<Bytes>>,
    /// node -> key -> what it keeps.
    nodes: BTreeMap<ProcId, IndexMap<Bytes, Kept, FxBuildHasher>>,
    /// Tokens a client's own command wrote on some node (granted, not just replicated).
    /// Every one stays: a failover judges the holds open then by whether their token was
    /// ever granted, and a token may be acquired again (Redisson's lock name).
    granted: IndexMap<Bytes, ProcId, FxBuildHasher>,
    /// When each node last restarted.
    restarted_at: BTreeMap<ProcId, SimTime>,
    /// Each client's latest acquisition attempt, by process index (one per client: bounded;
    /// a vector, for an attempt is made far more often than anything else here happens).
    attempts: Vec<Option<Attempting>>,
    /// (node, key) -> the client whose attempt, still open, that node granted there.
    grants_in_flight: BTreeMap<(ProcId, Bytes), ProcId>,
    /// The time of the last record (holds still open are judged there).
    last: SimTime,
}

impl Scan {
    fn hit(&mut self, hazard: Hazard, at: SimTime, actors: Vec<ProcId>) {
        if !self.seen.contains(hazard) {
            self.seen.insert(hazard);
            self.found.push(Witness { hazard, at, actors });
        }
    }

    /// The tokens client `p` holds now.
    fn tokens_held_by(&self, p: ProcId) -> Vec<Bytes> {
        self.holds
            .iter()
            .filter(|(_, h)| h.client == p)
            .map(|(t, _)| t.clone())
            .collect()
    }

    fn holder_of(&self, token: &Bytes) -> Option<ProcId> {
        self.holds.get(token).map(|h| h.client)
    }

    /// Nodes on which `token` is live.
    fn nodes_keeping<'s>(&'s self, token: &'s Bytes) -> impl Iterator<Item = ProcId> + 's {
        self.nodes
            .iter()
            .filter(move |(_, ks)| ks.values().any(|k| k.value == *token))
            .map(|(n, _)| *n)
    }

    /// A hold ends: judge validity and lease on the way out.
    fn end_hold(&mut self, token: &Bytes, at: SimTime) {
        let Some(h) = self.holds.swap_remove(token) else {
            return;
        };
        self.judge_hold_end(&h, at);
    }

    /// Node `n` wrote `value` at `key` (by client `by`, if a client's command did): a grant
    /// of an attempt given up, or one to watch until the attempt settles.
    fn note_grant(
        &mut self,
        at: SimTime,
        n: ProcId,
        key: &Bytes,
        value: &Bytes,
        by: Option<ProcId>,
    ) {
        let stage = by.and_then(|c| {
            self.attempt(c)
                .filter(|a| a.token == *value)
                .map(|a| (c, a.stage))
        });
        match stage {
            Some((c, Stage::GaveUp)) => {
                self.grants_in_flight.remove(&(n, key.clone()));
                self.hit(Hazard::GrantedAfterGaveUp, at, vec![c, n]);
            }
            Some((c, Stage::Open)) => {
                self.grants_in_flight.insert((n, key.clone()), c);
            }
            // Anything else written there (a holder's extend, another client's grant, the
            // master's stream) ends the watch on that key.
            Some((_, Stage::Acquired)) | None => {
                if !self.grants_in_flight.is_empty() {
                    let place = (n, key.clone());
                    if self
                        .grants_in_flight
                        .get(&place)
                        .is_some_and(|c| Some(*c) != by)
                    {
                        self.grants_in_flight.remove(&place);
                    }
                }
            }
        }
    }

    fn attempt(&self, c: ProcId) -> Option<&Attempting> {
        self.attempts.get(c.index()).and_then(Option::as_ref)
    }

    fn attempt_mut(&mut self, c: ProcId) -> Option<&mut Attempting> {
        self.attempts.get_mut(c.index()).and_then(Option::as_mut)
    }

    fn judge_hold_end(&mut self, h: &Hold, at: SimTime) {
        if h.until.is_some_and(|u| at > u) {
            self.hit(Hazard::ValidityRanOut, at, vec![h.client]);
        }
        if h.extended && h.initial_until.is_some_and(|u| at > u) {
            self.hit(Hazard::HeldBeyondLease, at, vec![h.client]);
        }
    }
}

/// Every hazard the run reached, each with its first occurrence, in order of time.
pub fn witnesses(history: &History) -> Vec<Witness> {
    let mut s = Scan::default();
    history.records.iter().for_each(|r| s.observe(r));
    s.finish()
}

impl Kept {
    /// Overwritten at once (see `slot`).
    fn placeholder() -> Kept {
        Kept {
            value: Bytes::new(),
            has_expiry: false,
            replicated: false,
        }
    }
}

impl Scan {
    /// A record no detector reads (a fault text, a sentinel or replication note): only its
    /// time counts.
    #[inline]
    pub fn skip(&mut self, r: &Record) {
        self.last = r.at;
    }

    pub fn observe(&mut self, r: &Record) {
        let s = self;
        s.last = r.at;
        let (at, p) = (r.at, r.proc);
        {
            match &r.obs {
                Observation::Attempt { token, .. } => {
                    let i = p.index();
                    if s.attempts.len() <= i {
                        s.attempts.resize(i + 1, None);
                    }
                    match &mut s.attempts[i] {
                        Some(a) => {
                            a.token.clone_from(token);
                            a.stage = Stage::Open;
                        }
                        none => {
                            *none = Some(Attempting {
                                token: token.clone(),
                                stage: Stage::Open,
                            });
                        }
                    }
                }
                Observation::GaveUp { .. } => {
                    if let Some(a) = s.attempt_mut(p)
                        && a.stage == Stage::Open
                    {
                        a.stage = Stage::GaveUp;
                    }
                }
                Observation::Acquired {
                    token,
                    believed_until,
                    ..
                } => {
                    if let Some(a) = s.attempt_mut(p)
                        && a.token == *token
                    {
                        a.stage = Stage::Acquired;
                    }
                    let hold = Hold {
                        client: p,
                        initial_until: *believed_until,
                        until: *believed_until,
                        extended: false,
                    };
                    // A token acquired again keeps its place (as `insert` would).
                    *slot(&mut s.holds, token, || hold) = hold;
                }
                Observation::Extended {
                    token,
                    believed_until,
                    ..
                } => {
                    if let Some(h) = s.holds.get_mut(token) {
                        h.extended = true;
                        h.until = *believed_until;
                    }
                }
                Observation::Released { token, .. } => s.end_hold(token, at),
                Observation::Lost { token, reason, .. } => {
                    if s.holds.contains_key(token) {
                        match *reason {
                            "renewal failed" | "extend failed" => {
                                s.hit(Hazard::RenewalFailed, at, vec![p]);
                            }
                            "validity ran out" => s.hit(Hazard::ValidityRanOut, at, vec![p]),
                            _ => {}
                        }
                    }
                    s.end_hold(token, at);
                }
                Observation::Crashed => {
                    // A crashed client's attempt has no caller left, and a grant of it is
                    // a crashed holder's lock (`holder_crashed`), not a late one.
                    if let Some(a) = s.attempts.get_mut(p.index()) {
                        *a = None;
                    }
                    let held = s.tokens_held_by(p);
                    if !held.is_empty() {
                        s.hit(Hazard::HolderCrashed, at, vec![p]);
                    }
                    for t in &held {
                        s.end_hold(t, at);
                    }
                    s.paused.remove(&p);
                    // A node that crashes keeps its keyspace until it restarts (what it then
                    // finds depends on persistence); a held lock on it is at risk.
                    if let Some(ks) = s.nodes.get(&p) {
                        let holder = ks.values().find_map(|k| s.holder_of(&k.value));
                        if let Some(h) = holder {
                            s.hit(Hazard::NodeCrashedWithLock, at, vec![h, p]);
                        }
                    }
                }
                Observation::Restarted { .. } => {
                    s.restarted_at.insert(p, at);
                }
                Observation::Paused => {
                    let held = s.tokens_held_by(p);
                    if !held.is_empty() {
                        s.paused.insert(p, held);
                    }
                }
                Observation::Resumed => {
                    s.paused.remove(&p);
                }
                Observation::ResourceRead {
                    client,
                    accepted: false,
                    ..
                }
                | Observation::ResourceWrite {
                    client,
                    accepted: false,
                    ..
                } => s.hit(Hazard::StaleTokenRejected, at, vec![*client]),
                Observation::KeyWritten {
                    key,
                    value,
                    expire_at_ms,
                    by,
                } => {
                    if let Some(c) = by {
                        slot(&mut s.granted, value, || *c);
                    }
                    s.note_grant(at, p, key, value, *by);
                    let kept = Kept {
                        value: value.clone(),
                        has_expiry: expire_at_ms.is_some(),
                        replicated: by.is_none(),
                    };
                    // A key written again keeps its place (as `insert` would).
                    let ks = s.nodes.entry(p).or_default();
                    *slot(ks, key, Kept::placeholder) = kept;
                }
                Observation::KeyRemoved {
                    key,
                    value,
                    how,
                    by,
                } => {
                    if let Some(ks) = s.nodes.get_mut(&p) {
                        ks.swap_remove(key);
                    }
                    if !s.grants_in_flight.is_empty()
                        && let Some(c) = s.grants_in_flight.remove(&(p, key.clone()))
                        && *how == Removal::Expired
                        && s.attempt(c)
                            .is_some_and(|a| a.stage == Stage::Open && a.token == *value)
                    {
                        s.hit(Hazard::GrantExpiredInFlight, at, vec![c, p]);
                    }
                    let holder = s.holder_of(value);
                    // The holder's own unlock, or a replica applying its master's DEL (no client
                    // named), is not the key leaving under the holder.
                    let own_del = *how == Removal::Del && by.is_none_or(|b| Some(b) == holder);
                    if let Some(h) = holder
                        && !own_del
                    {
                        if *how == Removal::Expired {
                            s.hit(Hazard::KeyExpiredWhileHeld, at, vec![h, p]);
                        }
                        if s.paused.get(&h).is_some_and(|ts| ts.contains(value)) {
                            s.hit(Hazard::PauseOutlivedKey, at, vec![h, p]);
                        }
                    }
                    if *how == Removal::Flushed && s.restarted_at.get(&p) == Some(&at) {
                        s.hit(Hazard::RestartLostKeys, at, vec![p]);
                    }
                }
                Observation::Fact(Fact::Promoted) => {
                    let empty = IndexMap::default();
                    let mine = s.nodes.get(&p).unwrap_or(&empty);
                    let mut lacked = None;
                    let mut elsewhere = None;
                    for (t, h) in &s.holds {
                        let granted_elsewhere = s.granted.contains_key(t);
                        if !granted_elsewhere || mine.values().any(|k| k.value == *t) {
                            continue;
                        }
                        lacked.get_or_insert(h.client);
                        let on_replica = s.nodes.iter().any(|(n, ks)| {
                            *n != p && ks.values().any(|k| k.replicated && k.value == *t)
                        });
                        if on_replica {
                            elsewhere.get_or_insert(h.client);
                        }
                    }
                    if let Some(h) = lacked {
                        s.hit(Hazard::PromotedReplicaLackedLock, at, vec![h, p]);
                    }
                    if let Some(h) = elsewhere {
                        s.hit(Hazard::LockReplicaNotPromoted, at, vec![h, p]);
                    }
                }
                Observation::Fact(Fact::ClockStepped { .. } | Fact::DriftChanged { .. }) => {
                    let moved =
                        !matches!(r.obs, Observation::Fact(Fact::ClockStepped { delta_ms: 0 }));
                    if moved {
                        if s.holds.values().any(|h| h.client == p) {
                            s.hit(Hazard::HolderClockMoved, at, vec![p]);
                        }
                        let holder = s.nodes.get(&p).and_then(|ks| {
                            ks.values()
                                .filter(|k| k.has_expiry)
                                .find_map(|k| s.holder_of(&k.value))
                        });
                        if let Some(h) = holder {
                            s.hit(Hazard::ClockMovedExpiry, at, vec![h, p]);
                        }
                    }
                }
                Observation::Fact(Fact::Links {
                    from,
                    to,
                    blocked: true,
                }) => {
                    let mut cut = None;
                    'holds: for (t, h) in &s.holds {
                        for n in s.nodes_keeping(t) {
                            let c = h.client;
                            if (from.contains(&c) && to.contains(&n))
                                || (from.contains(&n) && to.contains(&c))
                            {
                                cut = Some((c, n));
                                break 'holds;
                            }
                        }
                    }
                    if let Some((c, n)) = cut {
                        s.hit(Hazard::HolderPartitioned, at, vec![c, n]);
                    }
                }
                Observation::Fact(Fact::Isolated) => {
                    // Cut off from everyone: a holder from its nodes, or a node from its holders.
                    let cut = s.holds.iter().find_map(|(t, h)| {
                        let mut nodes = s.nodes_keeping(t);
                        if h.client == p {
                            nodes.next().map(|n| (p, n))
                        } else {
                            nodes.any(|n| n == p).then_some((h.client, p))
                        }
                    });
                    if let Some((c, n)) = cut {
                        s.hit(Hazard::HolderPartitioned, at, vec![c, n]);
                    }
                }
                _ => {}
            }
        }
    }

    /// Forgets the tokens `dead` names (see `monitor::Retirement`). Only tokens neither held
    /// nor kept on a node may be retired (`live_tokens`): only the grants are forgotten.
    pub fn retire(&mut self, dead: &dyn Fn(&Bytes) -> bool) {
        self.granted.retain(|t, _| !dead(t));
    }

    /// Tokens still in play: held, or kept on some node.
    pub fn live_tokens(&self) -> impl Iterator<Item = &Bytes> {
        self.holds
            .keys()
            .chain(
                self.nodes
                    .values()
                    .flat_map(|ks| ks.values().map(|k| &k.value)),
            )
            .chain(self.attempts.iter().flatten().map(|a| &a.token))
    }

    /// Token-keyed entries kept (what grows with a run).
    pub fn token_entries(&self) -> usize {
        self.granted.len()
    }

    /// The tokens kept that `live_tokens` does not give.
    pub fn retirable_tokens(&self) -> impl Iterator<Item = &Bytes> {
        self.granted.keys()
    }

    /// Estimated bytes kept (for the run's memory budget): the token-keyed maps, which
    /// grow with the run (the rest is bounded by processes and keys).
    pub fn retained_bytes(&self) -> u64 {
        let kept: usize = self.nodes.values().map(|ks| ks.len()).sum();
        crate::check::token_map_bytes(self.holds.len(), std::mem::size_of::<Hold>())
            + crate::check::token_map_bytes(kept, std::mem::size_of::<Kept>())
            + crate::check::token_map_bytes(self.granted.len(), std::mem::size_of::<ProcId>())
    }

    /// Every hazard reached, each with its first occurrence, in order of time.
    pub fn finish(mut self) -> Vec<Witness> {
        // Holds still open at the end are judged at the last record.
        let open: Vec<Hold> = std::mem::take(&mut self.holds).into_values().collect();
        for h in &open {
            self.judge_hold_end(h, self.last);
        }
        self.found
    }
}

/// The hazards a run reached, as a set.
pub fn reached(history: &History) -> Hazards {
    Hazards::of(&witnesses(history))
}

#[cfg(test)]
mod tests;
