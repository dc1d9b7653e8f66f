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

use std::fmt;

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;

use crate::check::token::{TokenId, Tokens};
use crate::history::{Fact, History, Observation, Record, Removal};
use crate::proto::Bytes;
use crate::proto::bytes::bytes_eq;
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
    token: TokenId,
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
#[derive(Clone, Copy)]
struct Kept {
    value: TokenId,
    has_expiry: bool,
    /// Written by the master's stream (no client named), not by a client's command.
    replicated: bool,
    /// The client whose attempt, still open, this node granted at this key (a grant in
    /// flight: watched until the attempt settles or the key changes).
    in_flight: Option<ProcId>,
}

/// A node's keys, as `Scan` keeps them, in the order an index map gives (appended when new,
/// swap-removed): the detectors that look over a node's keys report the first they find.
/// A node keeps a few keys (its locks), found by comparing a few bytes each; past
/// `KEYSPACE_SCAN` keys, a map finds them.
#[derive(Clone, Default)]
struct Keyspace {
    /// The keys kept (`..live`), then slots of keys removed, kept with their key for the
    /// next key appended: a node's lock key is removed and written again all the time, and
    /// a slot that still holds the key needs no copy of it.
    entries: Vec<(Bytes, Kept)>,
    // Invariant: `live <= entries.len()`, and `live == entries.len()` when `index` is
    // `Some`.
    live: usize,
    /// key -> its position in `entries`, once there are more than `KEYSPACE_SCAN`.
    // Invariant: `index[k] == i` exactly when `entries[i].0 == k`, when `Some`.
    index: Option<IndexMap<Bytes, usize, FxBuildHasher>>,
}

/// Keys a node keeps before they are found by a map rather than one by one.
const KEYSPACE_SCAN: usize = 8;

impl Keyspace {
    #[inline(always)]
    fn position(&self, key: &Bytes) -> Option<usize> {
        match &self.index {
            Some(ix) => ix.get(key).copied(),
            None => {
                // A loop, not `position`: the iterator's is a call (of more instructions
                // than a node's one or two keys take to compare).
                for (i, (k, _)) in self.entries[..self.live].iter().enumerate() {
                    if bytes_eq(k, key) {
                        return Some(i);
                    }
                }
                None
            }
        }
    }

    /// Writes `kept` at `key` (where it stands if the key is kept, else appended), keeping
    /// the grant in flight there.
    #[inline(always)]
    fn write(&mut self, key: &Bytes, kept: Kept) -> &mut Kept {
        let i = match self.position(key) {
            Some(i) => {
                let k = &mut self.entries[i].1;
                let in_flight = k.in_flight;
                *k = kept;
                k.in_flight = in_flight;
                i
            }
            None => {
                let i = self.live;
                match self.entries.get_mut(i) {
                    // The slot past the keys kept, from a key removed: the same key
                    // written again (the usual case) is already there.
                    Some((k, v)) => {
                        if !bytes_eq(k, key) {
                            *k = key.clone();
                        }
                        *v = kept;
                    }
                    None => self.entries.push((key.clone(), kept)),
                }
                self.live += 1;
                match &mut self.index {
                    Some(ix) => {
                        ix.insert(key.clone(), i);
                    }
                    None if self.live > KEYSPACE_SCAN => {
                        self.entries.truncate(self.live);
                        let ix = self.entries.iter().enumerate();
                        self.index = Some(ix.map(|(i, (k, _))| (k.clone(), i)).collect());
                    }
                    None => {}
                }
                i
            }
        };
        &mut self.entries[i].1
    }

    /// Removes `key`, giving what was kept there.
    #[inline(always)]
    fn remove(&mut self, key: &Bytes) -> Option<Kept> {
        let i = self.position(key)?;
        let last = self.live - 1;
        self.live = last;
        if let Some(ix) = &mut self.index {
            let (_, kept) = self.entries.swap_remove(i);
            ix.swap_remove(key);
            if let Some((moved, _)) = self.entries.get(i) {
                ix.insert(moved.clone(), i);
            }
            return Some(kept);
        }
        // As `swap_remove`, with the removed key's slot kept past the keys kept.
        if i != last {
            self.entries.swap(i, last);
        }
        Some(self.entries[last].1)
    }

    fn values(&self) -> impl Iterator<Item = &Kept> {
        self.entries[..self.live].iter().map(|(_, k)| k)
    }

    fn len(&self) -> usize {
        self.live
    }
}

/// No position in `Scan::holds`.
const NOT_HELD: u32 = u32::MAX;

/// The hazard detectors, fed one record at a time in history order: what `witnesses`
/// replays over a kept history, and what a streamed run keeps.
#[derive(Clone, Default)]
pub struct Scan {
    found: Vec<Witness>,
    seen: Hazards,
    /// The holds now, with their tokens, in the order an index map gives (appended when
    /// acquired, swap-removed when they end): the detectors that look over every hold
    /// report the first they find.
    holds: Vec<(TokenId, Hold)>,
    /// Token id -> its position in `holds` (`NOT_HELD`: none).
    // Invariant: `holds[hold_at[t]].0 == t` wherever `hold_at[t] != NOT_HELD`.
    hold_at: Vec<u32>,
    /// Process index -> the tokens that client held when its pause began (empty: not
    /// paused, or paused holding nothing).
    paused: Vec<Vec<TokenId>>,
    /// Process index -> (node) key -> what it keeps. By index, in process order (the order
    /// a map by process gave).
    nodes: Vec<Keyspace>,
    /// Token id -> whether a client's own command wrote it on some node (granted, not just
    /// replicated). Every one stays: a failover judges the holds open then by whether their
    /// token was ever granted, and a token may be acquired again (Redisson's lock name).
    granted: Vec<bool>,
    /// Process index -> when that node last restarted.
    restarted_at: Vec<Option<SimTime>>,
    /// Each client's latest acquisition attempt, by process index (one per client: bounded;
    /// a vector, for an attempt is made far more often than anything else here happens).
    attempts: Vec<Option<Attempting>>,
    /// The time of the last record (holds still open are judged there).
    last: SimTime,
}

/// `v[p]`, grown to it.
#[inline(always)]
fn at_proc<T: Default + Clone>(v: &mut Vec<T>, p: ProcId) -> &mut T {
    let i = p.index();
    if v.len() <= i {
        v.resize(i + 1, T::default());
    }
    &mut v[i]
}

impl Scan {
    /// Notes the hazard's first occurrence (the actors are copied only then: most hits are
    /// of a hazard already seen).
    #[inline]
    fn hit(&mut self, hazard: Hazard, at: SimTime, actors: &[ProcId]) {
        if !self.seen.contains(hazard) {
            self.seen.insert(hazard);
            self.found.push(Witness {
                hazard,
                at,
                actors: actors.to_vec(),
            });
        }
    }

    /// The tokens client `p` holds now.
    fn tokens_held_by(&self, p: ProcId) -> Vec<TokenId> {
        self.holds
            .iter()
            .filter(|(_, h)| h.client == p)
            .map(|(t, _)| *t)
            .collect()
    }

    #[inline(always)]
    fn hold(&self, token: TokenId) -> Option<&Hold> {
        let at = *self.hold_at.get(token.index())?;
        (at != NOT_HELD).then(|| &self.holds[at as usize].1)
    }

    #[inline(always)]
    fn hold_mut(&mut self, token: TokenId) -> Option<&mut Hold> {
        let at = *self.hold_at.get(token.index())?;
        (at != NOT_HELD).then(|| &mut self.holds[at as usize].1)
    }

    #[inline(always)]
    fn holder_of(&self, token: TokenId) -> Option<ProcId> {
        self.hold(token).map(|h| h.client)
    }

    /// Nodes on which `token` is live.
    fn nodes_keeping(&self, token: TokenId) -> impl Iterator<Item = ProcId> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, ks)| ks.values().any(|k| k.value == token))
            .map(|(n, _)| ProcId(n as u32))
    }

    /// A hold begins, or a held token is acquired again (it keeps its place, as an index
    /// map's `insert` would).
    #[inline(always)]
    fn begin_hold(&mut self, token: TokenId, hold: Hold) {
        if let Some(h) = self.hold_mut(token) {
            *h = hold;
            return;
        }
        *at_slot(&mut self.hold_at, token) = self.holds.len() as u32;
        self.holds.push((token, hold));
    }

    /// A hold ends: judge validity and lease on the way out.
    #[inline(always)]
    fn end_hold(&mut self, token: TokenId, at: SimTime) {
        let Some(&i) = self.hold_at.get(token.index()) else {
            return;
        };
        if i == NOT_HELD {
            return;
        }
        self.hold_at[token.index()] = NOT_HELD;
        // `swap_remove`, in place (the library's was a call).
        let last = self.holds.len() - 1;
        self.holds.swap(i as usize, last);
        let (_, h) = self.holds.pop().expect("a hold at its position");
        if let Some(&(moved, _)) = self.holds.get(i as usize) {
            self.hold_at[moved.index()] = i;
        }
        self.judge_hold_end(&h, at);
    }

    fn attempt_of(&self, c: ProcId) -> Option<&Attempting> {
        self.attempts.get(c.index()).and_then(Option::as_ref)
    }

    fn attempt_mut(&mut self, c: ProcId) -> Option<&mut Attempting> {
        self.attempts.get_mut(c.index()).and_then(Option::as_mut)
    }

    #[inline(always)]
    fn judge_hold_end(&mut self, h: &Hold, at: SimTime) {
        if h.until.is_some_and(|u| at > u) {
            self.hit(Hazard::ValidityRanOut, at, &[h.client]);
        }
        if h.extended && h.initial_until.is_some_and(|u| at > u) {
            self.hit(Hazard::HeldBeyondLease, at, &[h.client]);
        }
    }
}

/// `v[t]` of a per-token vector of positions, grown to it (new slots `NOT_HELD`).
#[inline(always)]
fn at_slot(v: &mut Vec<u32>, t: TokenId) -> &mut u32 {
    let i = t.index();
    if v.len() <= i {
        crate::check::token::grow(v, i, NOT_HELD);
    }
    &mut v[i]
}

/// Every hazard the run reached, each with its first occurrence, in order of time.
pub fn witnesses(history: &History) -> Vec<Witness> {
    let mut s = Scan::default();
    let mut tokens = Tokens::default();
    for r in &history.records {
        s.observe(r, tokens.name(r, |_| false).id());
    }
    s.finish()
}

impl Scan {
    /// A record no detector reads (a fault text, a sentinel or replication note): only its
    /// time counts.
    #[inline]
    pub fn skip(&mut self, r: &Record) {
        self.last = r.at;
    }

    /// Feeds one record; `token`: the token it names (`token::Tokens::name`). A monitor
    /// that has matched the record's kind already calls the part for that kind directly
    /// (`attempt`, `acquired`, ...): the same code, without a second dispatch.
    pub fn observe(&mut self, r: &Record, token: Option<TokenId>) {
        let (at, p) = (r.at, r.proc);
        match &r.obs {
            Observation::Attempt { .. } => self.attempt(at, p, token),
            Observation::GaveUp { .. } => self.gave_up(at, p),
            Observation::Acquired { believed_until, .. } => {
                self.acquired(at, p, token, *believed_until)
            }
            Observation::Extended { believed_until, .. } => {
                self.extended(at, token, *believed_until)
            }
            Observation::Released { .. } => self.released(at, token),
            Observation::Lost { reason, .. } => self.lost(at, p, token, reason),
            Observation::KeyWritten {
                key,
                expire_at_ms,
                by,
                ..
            } => self.key_written(at, p, token, key, expire_at_ms.is_some(), *by),
            Observation::KeyRemoved { key, how, by, .. } => {
                self.key_removed(at, p, token, key, *how, *by)
            }
            _ => self.other(r),
        }
    }

    /// Client `p` starts an attempt with `token`.
    #[inline(always)]
    pub fn attempt(&mut self, at: SimTime, p: ProcId, token: Option<TokenId>) {
        self.last = at;
        let Some(t) = token else { return };
        let a = at_proc(&mut self.attempts, p);
        *a = Some(Attempting {
            token: t,
            stage: Stage::Open,
        });
    }

    /// Client `p` gave its attempt up.
    #[inline(always)]
    pub fn gave_up(&mut self, at: SimTime, p: ProcId) {
        self.last = at;
        if let Some(a) = self.attempt_mut(p)
            && a.stage == Stage::Open
        {
            a.stage = Stage::GaveUp;
        }
    }

    /// Client `p` acquired with `token`, believing it valid until `believed_until`.
    #[inline(always)]
    pub fn acquired(
        &mut self,
        at: SimTime,
        p: ProcId,
        token: Option<TokenId>,
        believed_until: Option<SimTime>,
    ) {
        self.last = at;
        let Some(t) = token else { return };
        if let Some(a) = self.attempt_mut(p)
            && a.token == t
        {
            a.stage = Stage::Acquired;
        }
        let hold = Hold {
            client: p,
            initial_until: believed_until,
            until: believed_until,
            extended: false,
        };
        self.begin_hold(t, hold);
    }

    /// A holder's extend of `token` succeeded.
    #[inline(always)]
    pub fn extended(
        &mut self,
        at: SimTime,
        token: Option<TokenId>,
        believed_until: Option<SimTime>,
    ) {
        self.last = at;
        if let Some(h) = token.and_then(|t| self.hold_mut(t)) {
            h.extended = true;
            h.until = believed_until;
        }
    }

    /// A holder released `token`.
    #[inline(always)]
    pub fn released(&mut self, at: SimTime, token: Option<TokenId>) {
        self.last = at;
        if let Some(t) = token {
            self.end_hold(t, at);
        }
    }

    /// Client `p` learnt it lost `token`, for `reason`.
    pub fn lost(&mut self, at: SimTime, p: ProcId, token: Option<TokenId>, reason: &str) {
        self.last = at;
        let Some(t) = token else { return };
        if self.hold(t).is_some() {
            match reason {
                "renewal failed" | "extend failed" => {
                    self.hit(Hazard::RenewalFailed, at, &[p]);
                }
                "validity ran out" => self.hit(Hazard::ValidityRanOut, at, &[p]),
                _ => {}
            }
        }
        self.end_hold(t, at);
    }

    /// Node `p` wrote `token` at `key` (by client `by`, if a client's command did).
    #[inline(always)]
    pub fn key_written(
        &mut self,
        at: SimTime,
        p: ProcId,
        token: Option<TokenId>,
        key: &Bytes,
        has_expiry: bool,
        by: Option<ProcId>,
    ) {
        let s = self;
        s.last = at;
        let Some(t) = token else { return };
        if by.is_some() {
            *crate::check::token::slot_mut(&mut s.granted, t) = true;
        }
        // Node `p` wrote the token at `key` (by client `by`, if a client's command
        // did): a grant of an attempt given up, or one to watch until the attempt
        // settles.
        let stage = by.and_then(|c| {
            s.attempt_of(c)
                .filter(|a| a.token == t)
                .map(|a| (c, a.stage))
        });
        let ks = at_proc(&mut s.nodes, p);
        let kept = Kept {
            value: t,
            has_expiry,
            replicated: by.is_none(),
            in_flight: None,
        };
        // A key written again keeps its place (as an index map's `insert` would).
        let k = ks.write(key, kept);
        match stage {
            Some((c, Stage::GaveUp)) => {
                k.in_flight = None;
                s.hit(Hazard::GrantedAfterGaveUp, at, &[c, p]);
            }
            Some((c, Stage::Open)) => k.in_flight = Some(c),
            // Anything else written there (a holder's extend, another client's
            // grant, the master's stream) ends the watch on that key.
            Some((_, Stage::Acquired)) | None => {
                if k.in_flight.is_some_and(|c| Some(c) != by) {
                    k.in_flight = None;
                }
            }
        }
    }

    /// `key` holding `token` left node `p` (`how`; by client `by`, if a client's command
    /// removed it).
    #[inline(always)]
    pub fn key_removed(
        &mut self,
        at: SimTime,
        p: ProcId,
        token: Option<TokenId>,
        key: &Bytes,
        how: Removal,
        by: Option<ProcId>,
    ) {
        let s = self;
        s.last = at;
        let in_flight = s
            .nodes
            .get_mut(p.index())
            .and_then(|ks| ks.remove(key))
            .and_then(|k| k.in_flight);
        if let Some(c) = in_flight
            && how == Removal::Expired
            && s.attempt_of(c)
                .is_some_and(|a| a.stage == Stage::Open && Some(a.token) == token)
        {
            s.hit(Hazard::GrantExpiredInFlight, at, &[c, p]);
        }
        let Some(t) = token else { return };
        let holder = s.holder_of(t);
        // The holder's own unlock, or a replica applying its master's DEL (no client
        // named), is not the key leaving under the holder.
        let own_del = how == Removal::Del && by.is_none_or(|b| Some(b) == holder);
        if let Some(h) = holder
            && !own_del
        {
            if how == Removal::Expired {
                s.hit(Hazard::KeyExpiredWhileHeld, at, &[h, p]);
            }
            if s.paused.get(h.index()).is_some_and(|ts| ts.contains(&t)) {
                s.hit(Hazard::PauseOutlivedKey, at, &[h, p]);
            }
        }
        if how == Removal::Flushed && s.restarted_at.get(p.index()).copied().flatten() == Some(at) {
            s.hit(Hazard::RestartLostKeys, at, &[p]);
        }
    }

    /// Any other record: crashes, restarts, pauses, the resource's answers, facts (none of
    /// which names a token).
    #[inline(never)]
    pub fn other(&mut self, r: &Record) {
        let s = self;
        s.last = r.at;
        let (at, p) = (r.at, r.proc);
        match &r.obs {
            Observation::Crashed => {
                // A crashed client's attempt has no caller left, and a grant of it is
                // a crashed holder's lock (`holder_crashed`), not a late one.
                if let Some(a) = s.attempts.get_mut(p.index()) {
                    *a = None;
                }
                let held = s.tokens_held_by(p);
                if !held.is_empty() {
                    s.hit(Hazard::HolderCrashed, at, &[p]);
                }
                for t in &held {
                    s.end_hold(*t, at);
                }
                if let Some(ts) = s.paused.get_mut(p.index()) {
                    *ts = Vec::new();
                }
                // A node that crashes keeps its keyspace until it restarts (what it then
                // finds depends on persistence); a held lock on it is at risk.
                if let Some(ks) = s.nodes.get(p.index()) {
                    let holder = ks.values().find_map(|k| s.holder_of(k.value));
                    if let Some(h) = holder {
                        s.hit(Hazard::NodeCrashedWithLock, at, &[h, p]);
                    }
                }
            }
            Observation::Restarted { .. } => {
                *at_proc(&mut s.restarted_at, p) = Some(at);
            }
            Observation::Paused => {
                let held = s.tokens_held_by(p);
                if !held.is_empty() {
                    *at_proc(&mut s.paused, p) = held;
                }
            }
            Observation::Resumed => {
                if let Some(ts) = s.paused.get_mut(p.index()) {
                    *ts = Vec::new();
                }
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
            } => s.hit(Hazard::StaleTokenRejected, at, &[*client]),
            Observation::Fact(Fact::Promoted) => {
                let empty = Keyspace::default();
                let mine = s.nodes.get(p.index()).unwrap_or(&empty);
                let mut lacked = None;
                let mut elsewhere = None;
                for (t, h) in &s.holds {
                    let granted_elsewhere = s.granted.get(t.index()).copied().unwrap_or(false);
                    if !granted_elsewhere || mine.values().any(|k| k.value == *t) {
                        continue;
                    }
                    lacked.get_or_insert(h.client);
                    let on_replica = s.nodes.iter().enumerate().any(|(n, ks)| {
                        n != p.index() && ks.values().any(|k| k.replicated && k.value == *t)
                    });
                    if on_replica {
                        elsewhere.get_or_insert(h.client);
                    }
                }
                if let Some(h) = lacked {
                    s.hit(Hazard::PromotedReplicaLackedLock, at, &[h, p]);
                }
                if let Some(h) = elsewhere {
                    s.hit(Hazard::LockReplicaNotPromoted, at, &[h, p]);
                }
            }
            Observation::Fact(Fact::ClockStepped { .. } | Fact::DriftChanged { .. }) => {
                let moved = !matches!(r.obs, Observation::Fact(Fact::ClockStepped { delta_ms: 0 }));
                if moved {
                    if s.holds.iter().any(|(_, h)| h.client == p) {
                        s.hit(Hazard::HolderClockMoved, at, &[p]);
                    }
                    let holder = s.nodes.get(p.index()).and_then(|ks| {
                        ks.values()
                            .filter(|k| k.has_expiry)
                            .find_map(|k| s.holder_of(k.value))
                    });
                    if let Some(h) = holder {
                        s.hit(Hazard::ClockMovedExpiry, at, &[h, p]);
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
                    for n in s.nodes_keeping(*t) {
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
                    s.hit(Hazard::HolderPartitioned, at, &[c, n]);
                }
            }
            Observation::Fact(Fact::Isolated) => {
                // Cut off from everyone: a holder from its nodes, or a node from its holders.
                let cut = s.holds.iter().find_map(|(t, h)| {
                    let mut nodes = s.nodes_keeping(*t);
                    if h.client == p {
                        nodes.next().map(|n| (p, n))
                    } else {
                        nodes.any(|n| n == p).then_some((h.client, p))
                    }
                });
                if let Some((c, n)) = cut {
                    s.hit(Hazard::HolderPartitioned, at, &[c, n]);
                }
            }
            _ => {}
        }
    }

    /// Forgets the tokens `dead` (see `monitor::Retirement`). Only tokens not in play
    /// (`live_tokens`) may be retired: only their grants are forgotten.
    pub fn forget(&mut self, dead: &[TokenId]) {
        for t in dead {
            debug_assert!(self.hold(*t).is_none(), "a held token retired");
            if let Some(g) = self.granted.get_mut(t.index()) {
                *g = false;
            }
        }
    }

    /// Tokens still in play: held, kept on some node, a client's latest attempt, or held
    /// by a paused client when its pause began.
    pub fn live_tokens(&self) -> impl Iterator<Item = TokenId> + '_ {
        self.holds
            .iter()
            .map(|(t, _)| *t)
            .chain(
                self.nodes
                    .iter()
                    .flat_map(|ks| ks.values().map(|k| k.value)),
            )
            .chain(self.attempts.iter().flatten().map(|a| a.token))
            .chain(self.paused.iter().flatten().copied())
    }

    /// Estimated bytes kept (for the run's memory budget): the per-token vectors, which
    /// grow with the tokens known, and the keys kept (the rest is bounded by processes).
    pub fn retained_bytes(&self) -> u64 {
        let kept: usize = self.nodes.iter().map(|ks| ks.len()).sum();
        let key_entry = 8 + std::mem::size_of::<Bytes>() + std::mem::size_of::<Kept>() + 8;
        (self.holds.len() * std::mem::size_of::<(TokenId, Hold)>()
            + self.hold_at.len() * 4
            + self.granted.len()
            + kept * key_entry) as u64
    }

    /// Every hazard reached, each with its first occurrence, in order of time.
    pub fn finish(mut self) -> Vec<Witness> {
        // Holds still open at the end are judged at the last record.
        let open: Vec<Hold> = std::mem::take(&mut self.holds)
            .into_iter()
            .map(|(_, h)| h)
            .collect();
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
