//! Properties evaluated over a run's history, in true time. Checkers see only the history
//! (observations and the fault log), never the processes: a checker judges what happened,
//! not what the code meant.

pub mod margin;
pub mod recorded;
pub mod witness;

use std::collections::BTreeMap;
use std::fmt;

use crate::history::{History, Observation, Removal};
use crate::proto::Bytes;
use crate::time::{ProcId, SimTime, fmt_duration_ns};

/// The properties a model can check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Property {
    /// Two clients believe they hold the same lock at the same true instant.
    MutualExclusion,
    /// The resource accepted interleaved critical sections (a lost update).
    ResourceSafety,
    /// A client removed a lock key that held another client's token.
    ForeignUnlock,
    /// The resource accepted a token lower than one it had seen.
    FencingMonotonic,
    /// The lock stayed unobtainable longer than the bound while no live client held it: its
    /// free-and-wanted time since the last acquisition, summed, passed the bound.
    Liveness,
}

impl Property {
    pub const ALL: [Property; 5] = [
        Property::MutualExclusion,
        Property::ResourceSafety,
        Property::ForeignUnlock,
        Property::FencingMonotonic,
        Property::Liveness,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Property::MutualExclusion => "mutual_exclusion",
            Property::ResourceSafety => "resource_safety",
            Property::ForeignUnlock => "foreign_unlock",
            Property::FencingMonotonic => "fencing_monotonic",
            Property::Liveness => "liveness",
        }
    }
    pub fn from_name(s: &str) -> Option<Property> {
        Property::ALL.into_iter().find(|p| p.name() == s)
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One violation: when (true time), who, and why in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub property: Property,
    pub at: SimTime,
    pub actors: Vec<ProcId>,
    pub message: String,
}

/// Checker parameters.
#[derive(Clone, Copy, Debug)]
pub struct CheckConfig {
    /// `liveness`: longest acceptable time the lock may stay unobtainable while wanted.
    pub liveness_bound_ns: u64,
    /// End of the run (open intervals are closed here).
    pub end: SimTime,
}

/// Runs the named checkers; returns every violation found (at most one per property: the
/// first, which is the one worth explaining).
pub fn check_all(
    history: &History,
    props: &[Property],
    cfg: &CheckConfig,
    name: &dyn Fn(ProcId) -> String,
) -> Vec<Violation> {
    check_all_named(history, props, cfg, name, &lock_by_index)
}

/// A lock named by its index in the model's lock table (when the keys are not at hand).
fn lock_by_index(lock: u32) -> String {
    format!("lock {lock}")
}

/// As `check_all`, with locks named in messages by `lock_name` (a run names them by their
/// key: "lock `lock`" reads as the model wrote it; "lock 0" reads as a bug).
pub fn check_all_named(
    history: &History,
    props: &[Property],
    cfg: &CheckConfig,
    name: &dyn Fn(ProcId) -> String,
    lock_name: &dyn Fn(u32) -> String,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for &p in props {
        let v = match p {
            Property::MutualExclusion => mutual_exclusion_named(history, name, lock_name),
            Property::ResourceSafety => resource_safety(history, name),
            Property::ForeignUnlock => foreign_unlock(history, name),
            Property::FencingMonotonic => fencing_monotonic(history, name),
            Property::Liveness => liveness_named(history, cfg, name, lock_name),
        };
        out.extend(v);
    }
    out.sort_by_key(|v| (v.at, v.property));
    out
}

/// Hold intervals per lock: a client holds from `Acquired` until it releases, learns it
/// lost the lock, or crashes.
fn for_each_hold_change(
    history: &History,
    mut f: impl FnMut(SimTime, ProcId, u32, bool, &Observation),
) {
    let mut holding: BTreeMap<ProcId, Vec<u32>> = BTreeMap::new();
    for r in &history.records {
        match &r.obs {
            Observation::Acquired { lock, .. } => {
                holding.entry(r.proc).or_default().push(*lock);
                f(r.at, r.proc, *lock, true, &r.obs);
            }
            Observation::Released { lock, .. } | Observation::Lost { lock, .. } => {
                if let Some(v) = holding.get_mut(&r.proc)
                    && let Some(i) = v.iter().position(|l| l == lock)
                {
                    v.swap_remove(i);
                    f(r.at, r.proc, *lock, false, &r.obs);
                }
            }
            Observation::Crashed => {
                for lock in holding.remove(&r.proc).unwrap_or_default() {
                    f(r.at, r.proc, lock, false, &r.obs);
                }
            }
            _ => {}
        }
    }
}

/// The longest time two clients believed they held the same lock at once, in ns (0: never):
/// how wide the unsafe window was, for comparing two configurations.
pub fn longest_overlap_ns(history: &History) -> u64 {
    overlaps_ns(history).0
}

/// (longest single overlap, total time with two or more holders), in ns.
pub fn overlaps_ns(history: &History) -> (u64, u64) {
    let mut holders: BTreeMap<u32, Vec<ProcId>> = BTreeMap::new();
    let mut since: BTreeMap<u32, SimTime> = BTreeMap::new();
    let mut longest = 0;
    let mut total = 0;
    let mut last = SimTime::ZERO;
    for_each_hold_change(history, |at, p, lock, acquired, _| {
        last = at;
        let hs = holders.entry(lock).or_default();
        let before = hs.len();
        if acquired {
            hs.push(p);
        } else if let Some(i) = hs.iter().position(|q| *q == p) {
            hs.remove(i);
        }
        if before < 2 && hs.len() >= 2 {
            since.insert(lock, at);
        } else if before >= 2
            && hs.len() < 2
            && let Some(t) = since.remove(&lock)
        {
            longest = longest.max(at.saturating_sub(t));
            total += at.saturating_sub(t);
        }
    });
    // An overlap still open at the end of the history lasted at least until its last record.
    for t in since.values() {
        longest = longest.max(last.saturating_sub(*t));
        total += last.saturating_sub(*t);
    }
    (longest, total)
}

pub fn mutual_exclusion(history: &History, name: &dyn Fn(ProcId) -> String) -> Option<Violation> {
    mutual_exclusion_named(history, name, &lock_by_index)
}

fn mutual_exclusion_named(
    history: &History,
    name: &dyn Fn(ProcId) -> String,
    lock_name: &dyn Fn(u32) -> String,
) -> Option<Violation> {
    // lock -> (holder, since)
    let mut holders: BTreeMap<u32, Vec<(ProcId, SimTime)>> = BTreeMap::new();
    let mut found = None;
    for_each_hold_change(history, |at, p, lock, acquired, _| {
        let hs = holders.entry(lock).or_default();
        if acquired {
            if found.is_none()
                && let Some(&(other, since)) = hs.iter().find(|(q, _)| *q != p)
            {
                found = Some(Violation {
                    property: Property::MutualExclusion,
                    at,
                    actors: vec![other, p],
                    message: format!(
                        "{} acquired {} while {} still believed it held it (since {since})",
                        name(p),
                        lock_name(lock),
                        name(other)
                    ),
                });
            }
            hs.push((p, at));
        } else if let Some(i) = hs.iter().position(|(q, _)| *q == p) {
            hs.remove(i);
        }
    });
    found
}

pub fn resource_safety(history: &History, name: &dyn Fn(ProcId) -> String) -> Option<Violation> {
    // version -> writer that produced it
    let mut writer_of: BTreeMap<u64, ProcId> = BTreeMap::new();
    for r in &history.records {
        if let Observation::ResourceWrite {
            client,
            base_version,
            accepted: true,
            version_after,
            ..
        } = &r.obs
        {
            let expected_base = version_after - 1;
            if *base_version != expected_base {
                let other = writer_of.get(&expected_base).copied();
                let mut actors = vec![*client];
                actors.extend(other);
                return Some(Violation {
                    property: Property::ResourceSafety,
                    at: r.at,
                    actors,
                    message: format!(
                        "lost update: {} wrote on top of v{base_version} but the resource was at v{expected_base}{}",
                        name(*client),
                        other.map_or(String::new(), |o| format!(" (written by {})", name(o)))
                    ),
                });
            }
            writer_of.insert(*version_after, *client);
        }
    }
    None
}

pub fn foreign_unlock(history: &History, name: &dyn Fn(ProcId) -> String) -> Option<Violation> {
    // Fixed hasher: deterministic, and faster than a BTreeMap over thousands of tokens.
    let mut owner: indexmap::IndexMap<&Bytes, ProcId, rustc_hash::FxBuildHasher> =
        Default::default();
    for r in &history.records {
        match &r.obs {
            // A token's owner is the client that stored it (tokens are unique per attempt).
            Observation::KeyWritten {
                value,
                by: Some(by),
                ..
            } => {
                owner.entry(value).or_insert(*by);
            }
            Observation::Attempt { token, .. } => {
                owner.entry(token).or_insert(r.proc);
            }
            Observation::KeyRemoved {
                key,
                value,
                how: Removal::Del,
                by: Some(by),
            } => {
                if let Some(&o) = owner.get(value)
                    && o != *by
                {
                    return Some(Violation {
                        property: Property::ForeignUnlock,
                        at: r.at,
                        actors: vec![*by, o],
                        message: format!(
                            "{} deleted key {} on {} holding {}'s token {}",
                            name(*by),
                            String::from_utf8_lossy(key),
                            name(r.proc),
                            name(o),
                            String::from_utf8_lossy(value)
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    None
}

pub fn fencing_monotonic(history: &History, name: &dyn Fn(ProcId) -> String) -> Option<Violation> {
    let mut max: Option<(u64, ProcId)> = None;
    for r in &history.records {
        let (client, token) = match &r.obs {
            Observation::ResourceRead {
                client,
                token: Some(t),
                accepted: true,
                ..
            }
            | Observation::ResourceWrite {
                client,
                token: Some(t),
                accepted: true,
                ..
            } => (*client, *t),
            _ => continue,
        };
        if let Some((m, by)) = max
            && token < m
        {
            return Some(Violation {
                property: Property::FencingMonotonic,
                at: r.at,
                actors: vec![client, by],
                message: format!(
                    "resource accepted token {token} from {} after token {m} from {}",
                    name(client),
                    name(by)
                ),
            });
        }
        if max.is_none_or(|(m, _)| token > m) {
            max = Some((token, client));
        }
    }
    None
}

/// The lock is wanted (some live client has an attempt open) but nobody gets it for longer
/// than the bound, while no live client holds it.
///
/// What is measured, per lock, is the time during which the lock was *free and wanted*,
/// summed since the last acquisition of that lock:
/// - free: no live client believes it holds the lock;
/// - wanted: some live client has a round open (between its `Attempt` and its `Acquired`,
///   `GaveUp` or crash) — by anyone: one waiter taking over from another keeps the clock
///   running.
///
/// The clock stops (without resetting) while nobody wants the lock — a waiter thinking after
/// a give-up, down after a crash, or no waiter at all — so that idleness is never counted as
/// unavailability. It resets only when someone acquires the lock, the one proof that the lock
/// was obtainable. So a lock that every waiter keeps failing to get is caught however often
/// the waiters give up, crash and come back (a livelock is a string of give-ups; a stuck key
/// with crashing waiters is a string of crashes), and the unavailability is never measured
/// from an attempt made before an idle stretch.
///
/// The state changes only at the lock's own records (and at crashes), so the clock is read
/// there; a violation is dated at the instant the summed time passed the bound.
pub fn liveness(
    history: &History,
    cfg: &CheckConfig,
    name: &dyn Fn(ProcId) -> String,
) -> Option<Violation> {
    liveness_named(history, cfg, name, &lock_by_index)
}

fn liveness_named(
    history: &History,
    cfg: &CheckConfig,
    name: &dyn Fn(ProcId) -> String,
    lock_name: &dyn Fn(u32) -> String,
) -> Option<Violation> {
    #[derive(Default)]
    struct LockState {
        holders: Vec<ProcId>,
        /// Live clients with a round open, and when their round began.
        trying: Vec<(ProcId, SimTime)>,
        /// Free-and-wanted time since the last acquisition, up to `running_since`.
        blocked_ns: u64,
        /// Invariant: `Some` exactly when the lock is free and wanted (`holders` empty,
        /// `trying` not); the instant the current free-and-wanted stretch began.
        running_since: Option<SimTime>,
        /// When the lock was first free and wanted since the last acquisition (for people).
        wanted_since: Option<SimTime>,
        /// Times the clock stopped for a while since then (nobody wanting the lock).
        pauses: u32,
        /// When the clock last stopped: a stretch resumed at that same instant (one waiter
        /// crashing as another starts) is no pause.
        stopped_at: Option<SimTime>,
    }
    impl LockState {
        /// After any change: start or stop the clock to match the invariant.
        fn settle(&mut self, now: SimTime) {
            let blocked = self.holders.is_empty() && !self.trying.is_empty();
            match (blocked, self.running_since) {
                (true, None) => {
                    self.running_since = Some(now);
                    self.wanted_since.get_or_insert(now);
                    if self.stopped_at.take() == Some(now) {
                        self.pauses -= 1;
                    }
                }
                (false, Some(t)) => {
                    self.blocked_ns += now.saturating_sub(t);
                    self.running_since = None;
                    // Stopped because nobody wants it (a holder stopping it is an acquisition,
                    // which resets everything).
                    if self.holders.is_empty() {
                        self.pauses += 1;
                        self.stopped_at = Some(now);
                    }
                }
                _ => {}
            }
        }
        /// The instant the summed free-and-wanted time passed `bound`, if it has by `now`.
        fn overdue_at(&self, now: SimTime, bound: u64) -> Option<SimTime> {
            let t = self.running_since?;
            let total = self.blocked_ns + now.saturating_sub(t);
            (total > bound).then(|| t.plus_ns(bound.saturating_sub(self.blocked_ns)))
        }
    }
    let bound = cfg.liveness_bound_ns;
    let mut locks: BTreeMap<u32, LockState> = BTreeMap::new();
    let overdue = |st: &LockState, lock: u32, now: SimTime| -> Option<Violation> {
        let at = st.overdue_at(now, bound)?;
        // The waiter trying longest right now (the one the bound was broken for).
        let &(who, since) = st.trying.iter().min_by_key(|(_, t)| *t)?;
        let start = st.wanted_since.unwrap_or(since);
        let how = if st.pauses == 0 && since == start {
            format!("{} waiting since {start}", name(who))
        } else if st.pauses == 0 {
            // The waiter came after the stretch began (one waiter took over from another,
            // which crashed or gave up) or began trying while someone still held the lock.
            format!(
                "free and wanted since {start}; {} waiting since {since}",
                name(who)
            )
        } else {
            // Said in full: the gaps are why this is more than one waiter's wait.
            format!(
                "free and wanted for {} in all since {start}, in {} stretches with nobody trying in between and nobody acquiring it; {} waiting since {since}",
                fmt_duration_ns(bound),
                st.pauses + 1,
                name(who)
            )
        };
        Some(Violation {
            property: Property::Liveness,
            at,
            actors: vec![who],
            message: format!(
                "{} unobtainable for more than {} while no live client held it ({how})",
                lock_name(lock),
                fmt_duration_ns(bound),
            ),
        })
    };
    for r in &history.records {
        let lock = match &r.obs {
            Observation::Attempt { lock, .. }
            | Observation::Acquired { lock, .. }
            | Observation::GaveUp { lock }
            | Observation::Released { lock, .. }
            | Observation::Lost { lock, .. } => Some(*lock),
            Observation::Crashed => None,
            _ => continue,
        };
        // Judge the clock up to this instant before the record changes it.
        match lock {
            Some(l) => {
                if let Some(v) = locks.get(&l).and_then(|st| overdue(st, l, r.at)) {
                    return Some(v);
                }
            }
            None => {
                for (&l, st) in &locks {
                    if let Some(v) = overdue(st, l, r.at) {
                        return Some(v);
                    }
                }
            }
        }
        let p = r.proc;
        match (&r.obs, lock) {
            (Observation::Attempt { .. }, Some(l)) => {
                let st = locks.entry(l).or_default();
                if !st.trying.iter().any(|(q, _)| *q == p) {
                    st.trying.push((p, r.at));
                }
                st.settle(r.at);
            }
            (Observation::Acquired { .. }, Some(l)) => {
                let st = locks.entry(l).or_default();
                st.holders.push(p);
                st.trying.retain(|(q, _)| *q != p);
                // The lock was obtainable: the clock restarts from zero.
                st.running_since = None;
                st.blocked_ns = 0;
                st.wanted_since = None;
                st.pauses = 0;
                st.stopped_at = None;
                // Other waiters' rounds go on, but they wait behind a holder now.
                st.settle(r.at);
            }
            (Observation::GaveUp { .. }, Some(l)) => {
                let st = locks.entry(l).or_default();
                st.trying.retain(|(q, _)| *q != p);
                st.settle(r.at);
            }
            (Observation::Released { .. } | Observation::Lost { .. }, Some(l)) => {
                let st = locks.entry(l).or_default();
                if let Some(i) = st.holders.iter().position(|q| *q == p) {
                    st.holders.swap_remove(i);
                }
                st.settle(r.at);
            }
            _ => {
                // A crashed client neither holds nor wants anything; the time it was trying
                // stays on the clock (only an acquisition resets it).
                for st in locks.values_mut() {
                    if let Some(i) = st.holders.iter().position(|q| *q == p) {
                        st.holders.swap_remove(i);
                    }
                    st.trying.retain(|(q, _)| *q != p);
                    st.settle(r.at);
                }
            }
        }
    }
    locks.iter().find_map(|(&l, st)| overdue(st, l, cfg.end))
}

#[cfg(test)]
mod tests;
