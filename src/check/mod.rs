//! Properties evaluated over a run's history, in true time. Checkers see only the history
//! (observations and the fault log), never the processes: a checker judges what happened,
//! not what the code meant.

pub mod margin;
pub mod monitor;
pub mod recorded;
pub mod token;
pub mod witness;

use std::collections::BTreeMap;
use std::fmt;

use crate::history::episodes::{Change, Holdings};
use crate::history::{Fact, History, Observation, Record, Removal};
use crate::proto::Bytes;
use crate::time::{ProcId, SimTime, fmt_duration_ns};
use token::{TokenId, Tokens};

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
    /// A property `check-log` judged over a recorded log, by its name there (`stale_write`,
    /// `lost_update`, ...): what a log's page names. No model checks it (`ALL` leaves it
    /// out, so no model can name it).
    Recorded(&'static str),
    /// A client's unlock call had not returned `release_within` after it was called (it
    /// retries, or waits for ever): the caller is stuck in its release.
    ReleaseReturns,
}

impl Property {
    pub const ALL: [Property; 6] = [
        Property::MutualExclusion,
        Property::ResourceSafety,
        Property::ForeignUnlock,
        Property::FencingMonotonic,
        Property::Liveness,
        Property::ReleaseReturns,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Property::MutualExclusion => "mutual_exclusion",
            Property::ResourceSafety => "resource_safety",
            Property::ForeignUnlock => "foreign_unlock",
            Property::FencingMonotonic => "fencing_monotonic",
            Property::Liveness => "liveness",
            Property::Recorded(name) => name,
            Property::ReleaseReturns => "release_returns",
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
    /// `release_returns`: longest acceptable time between an unlock call and its return.
    pub release_within_ns: u64,
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
    let mut checks =
        Checks::new(props, cfg.liveness_bound_ns).release_within(cfg.release_within_ns);
    checks.observe_all(history);
    checks.violations(cfg.end, name, lock_name)
}

/// The named checkers as state machines fed one record at a time, in history order: what a
/// run judges as it goes (`monitor::Monitor`) and what `check_all` replays over a kept
/// history — one implementation, so the two cannot disagree.
///
/// Each checker keeps only what a later record could still need. It reports its first
/// violation, and goes on counting the acquisitions that take part in one (`occurrences`:
/// what a per-acquisition rate counts).
#[derive(Clone)]
pub struct Checks {
    /// As the model listed them (a property listed twice reports twice, as it always has).
    props: Vec<Property>,
    /// Who holds what: `mutual_exclusion` reads its changes, and so do the overlaps (one
    /// tracker for both).
    holding: Holdings,
    /// Time with two or more holders, when measured (a monitor's, `with_overlaps`): kept
    /// here, beside the tracker whose changes it reads, so that each change goes to it in
    /// the caller's arm rather than through a closure.
    overlaps: Option<Overlaps>,
    mutual_exclusion: Option<MutualExclusion>,
    resource_safety: Option<ResourceSafety>,
    foreign_unlock: Option<ForeignUnlock>,
    fencing_monotonic: Option<FencingMonotonic>,
    liveness: Option<Liveness>,
    release_returns: Option<ReleaseReturns>,
    /// Process index -> acquisitions it has reported so far: which of its holdings a finding
    /// blamed on it belongs to (`PerAcquisition`).
    serial: Vec<u32>,
}

impl Checks {
    pub fn new(props: &[Property], liveness_bound_ns: u64) -> Checks {
        let on = |p: Property| props.contains(&p);
        Checks {
            props: props.to_vec(),
            holding: Holdings::default(),
            overlaps: None,
            mutual_exclusion: on(Property::MutualExclusion).then(MutualExclusion::default),
            resource_safety: on(Property::ResourceSafety).then(ResourceSafety::default),
            foreign_unlock: on(Property::ForeignUnlock).then(ForeignUnlock::default),
            fencing_monotonic: on(Property::FencingMonotonic).then(FencingMonotonic::default),
            liveness: on(Property::Liveness).then(|| Liveness::new(liveness_bound_ns)),
            release_returns: on(Property::ReleaseReturns)
                .then(|| ReleaseReturns::new(DEFAULT_RELEASE_WITHIN_NS)),
            serial: Vec::new(),
        }
    }

    /// These checkers, with `release_returns` bounded by `bound_ns` (default
    /// `DEFAULT_RELEASE_WITHIN_NS`).
    pub fn release_within(mut self, bound_ns: u64) -> Checks {
        if let Some(c) = &mut self.release_returns {
            c.bound_ns = bound_ns;
        }
        self
    }

    /// Per checked property (liveness aside: it is judged per lock, not per acquisition),
    /// the acquisitions that took part in a violation of it: for `mutual_exclusion` each
    /// acquisition made while another client held the lock; for the others each holding (of
    /// the client blamed: the writer, the deleter, the client whose token went back) in which
    /// at least one finding was made, a finding before a client's first acquisition counting
    /// with its first.
    /// Liveness is listed with `None`.
    pub fn occurrences(&self) -> Vec<(Property, Option<u64>)> {
        let mut out = Vec::new();
        if let Some(c) = &self.mutual_exclusion {
            out.push((Property::MutualExclusion, Some(c.occurrences)));
        }
        if let Some(c) = &self.resource_safety {
            out.push((Property::ResourceSafety, Some(c.occurrences.count)));
        }
        if let Some(c) = &self.foreign_unlock {
            out.push((Property::ForeignUnlock, Some(c.occurrences.count)));
        }
        if let Some(c) = &self.fencing_monotonic {
            out.push((Property::FencingMonotonic, Some(c.occurrences.count)));
        }
        if self.liveness.is_some() {
            out.push((Property::Liveness, None));
        }
        if self.release_returns.is_some() {
            out.push((Property::ReleaseReturns, None));
        }
        out
    }

    /// These checkers, also measuring the time with two or more holders (`overlaps_ns`).
    pub fn with_overlaps(mut self) -> Checks {
        self.overlaps = Some(Overlaps::default());
        self
    }

    /// (longest single overlap, total time with two or more holders), in ns, if measured
    /// (`with_overlaps`); zeros if not.
    pub fn overlaps_ns(&self) -> (u64, u64) {
        self.overlaps.as_ref().map_or((0, 0), Overlaps::finish)
    }

    /// The closest handover of a lock between two clients, if measured (`with_overlaps`):
    /// see `Overlaps::closest_handover`.
    pub fn closest_handover(&self) -> Option<(u64, SimTime)> {
        self.overlaps.as_ref().and_then(|o| o.closest_handover)
    }

    /// Feeds every record of a kept history.
    pub fn observe_all(&mut self, history: &History) {
        let mut tokens = Tokens::default();
        for r in &history.records {
            self.observe(r, tokens.name(r, |_| false).id());
        }
    }

    /// Feeds one record; `token`: the token it names, as `token::Tokens::name` found it.
    #[inline(always)]
    pub fn observe(&mut self, r: &Record, token: Option<TokenId>) {
        self.observe_with(r, token, |_, _, _, _| {});
    }

    /// As `observe`, also handing each change of who holds what to `also` (as
    /// `Holdings::observe` gives them).
    #[inline(always)]
    pub fn observe_with(
        &mut self,
        r: &Record,
        token: Option<TokenId>,
        mut also: impl FnMut(SimTime, ProcId, u32, bool),
    ) {
        // Each record only to the checkers that read its kind (see their `observe`s).
        match &r.obs {
            Observation::Acquired { .. }
            | Observation::Released { .. }
            | Observation::Lost { .. }
            | Observation::Crashed => {
                if let Observation::Acquired { .. } = r.obs {
                    let i = r.proc.index();
                    if self.serial.len() <= i {
                        self.serial.resize(i + 1, 0);
                    }
                    self.serial[i] += 1;
                }
                let (me, overlaps) = (&mut self.mutual_exclusion, &mut self.overlaps);
                self.holding.observe(r, |c| {
                    let (at, p, lock, acquired) = match c {
                        Change::Began(h) => (h.since, h.client, h.lock, true),
                        Change::Ended { hold, at, .. } => (at, hold.client, hold.lock, false),
                        Change::Extended(_) => return,
                    };
                    if let Some(c) = me.as_mut() {
                        c.change(at, p, lock, acquired);
                    }
                    if let Some(o) = overlaps.as_mut() {
                        o.change(at, p, lock, acquired);
                    }
                    also(at, p, lock, acquired);
                });
                if let Some(c) = &mut self.liveness {
                    c.observe(r);
                }
                if let (Observation::Crashed, Some(c)) = (&r.obs, &mut self.release_returns) {
                    c.observe(r);
                }
            }
            Observation::Fact(Fact::UnlockCalled { .. } | Fact::UnlockReturned { .. }) => {
                if let Some(c) = &mut self.release_returns {
                    c.observe(r);
                }
            }
            Observation::Attempt { .. } => {
                if let Some(c) = &mut self.foreign_unlock {
                    c.observe(r, token, &self.serial);
                }
                if let Some(c) = &mut self.liveness {
                    c.observe(r);
                }
            }
            Observation::GaveUp { .. } => {
                if let Some(c) = &mut self.liveness {
                    c.observe(r);
                }
            }
            Observation::KeyWritten { .. } | Observation::KeyRemoved { .. } => {
                if let Some(c) = &mut self.foreign_unlock {
                    c.observe(r, token, &self.serial);
                }
            }
            Observation::ResourceRead { .. } | Observation::ResourceWrite { .. } => {
                if let Some(c) = &mut self.resource_safety {
                    c.observe(r, &self.serial);
                }
                if let Some(c) = &mut self.fencing_monotonic {
                    c.observe(r, &self.serial);
                }
            }
            _ => {}
        }
    }

    /// Forgets the tokens `dead` (see `monitor::Retirement`): none of them may be named by a
    /// later record, and their ids may name other tokens from now on.
    pub fn forget(&mut self, dead: &[TokenId]) {
        if let Some(c) = &mut self.foreign_unlock {
            for &t in dead {
                if let Some(o) = c.owner.get_mut(t.index()) {
                    c.owned -= usize::from(o.is_some());
                    *o = None;
                }
                if let Some(s) = c.shared.get_mut(t.index()) {
                    *s = false;
                }
            }
        }
    }

    /// Estimated bytes the checkers keep (for the run's memory budget).
    pub fn retained_bytes(&self) -> u64 {
        self.mutual_exclusion
            .as_ref()
            .map_or(0, |c| c.retained_bytes())
            + self
                .resource_safety
                .as_ref()
                .map_or(0, |c| c.retained_bytes())
            + self
                .foreign_unlock
                .as_ref()
                .map_or(0, |c| c.retained_bytes())
            + self.liveness.as_ref().map_or(0, |c| c.retained_bytes())
            + self
                .release_returns
                .as_ref()
                .map_or(0, |c| c.retained_bytes())
    }

    /// The violations, for a history that ended at `end`, in order of time.
    pub fn violations(
        &self,
        end: SimTime,
        name: &dyn Fn(ProcId) -> String,
        lock_name: &dyn Fn(u32) -> String,
    ) -> Vec<Violation> {
        let mut out: Vec<Violation> = self
            .props
            .iter()
            .filter_map(|&p| {
                let found = match p {
                    Property::MutualExclusion => self.mutual_exclusion.as_ref()?.found.clone(),
                    Property::ResourceSafety => self.resource_safety.as_ref()?.found.clone(),
                    Property::ForeignUnlock => self.foreign_unlock.as_ref()?.found.clone(),
                    Property::FencingMonotonic => self.fencing_monotonic.as_ref()?.found.clone(),
                    Property::Liveness => self.liveness.as_ref()?.finish(end),
                    Property::Recorded(_) => None,
                    Property::ReleaseReturns => self.release_returns.as_ref()?.finish(end),
                };
                found.map(|f| f.violation(name, lock_name))
            })
            .collect();
        out.sort_by_key(|v| (v.at, v.property));
        out
    }
}

/// What a checker found, in data: worded only when reported, so a run that streams its
/// history needs no process names while it runs.
#[derive(Clone, Debug)]
enum Finding {
    /// `taker` acquired `lock` while `holder` still believed it held it (since `since`).
    Overlap {
        at: SimTime,
        lock: u32,
        holder: ProcId,
        since: SimTime,
        taker: ProcId,
    },
    LostUpdate {
        at: SimTime,
        writer: ProcId,
        base_version: u64,
        expected_base: u64,
        /// Who wrote `expected_base`, if known.
        other: Option<ProcId>,
    },
    ForeignDel {
        at: SimTime,
        by: ProcId,
        key: Bytes,
        node: ProcId,
        owner: ProcId,
        value: Bytes,
    },
    TokenWentBack {
        at: SimTime,
        client: ProcId,
        token: u64,
        max: u64,
        max_by: ProcId,
    },
    Unobtainable {
        at: SimTime,
        lock: u32,
        bound_ns: u64,
        /// The waiter trying longest, and since when.
        who: ProcId,
        since: SimTime,
        /// When the lock was first free and wanted since the last acquisition.
        start: SimTime,
        /// Times the clock stopped in between.
        pauses: u32,
    },
    /// `client`'s unlock of `lock`, called at `since`, had not returned `bound_ns` later
    /// (`at`); `returned`: when it did, if it did before the run ended.
    ReleaseStuck {
        at: SimTime,
        lock: u32,
        client: ProcId,
        since: SimTime,
        bound_ns: u64,
        returned: Option<SimTime>,
    },
}

impl Finding {
    fn violation(
        &self,
        name: &dyn Fn(ProcId) -> String,
        lock_name: &dyn Fn(u32) -> String,
    ) -> Violation {
        match self {
            &Finding::Overlap {
                at,
                lock,
                holder,
                since,
                taker,
            } => Violation {
                property: Property::MutualExclusion,
                at,
                actors: vec![holder, taker],
                message: format!(
                    "{} acquired {} while {} still believed it held it (since {since})",
                    name(taker),
                    lock_name(lock),
                    name(holder)
                ),
            },
            &Finding::LostUpdate {
                at,
                writer,
                base_version,
                expected_base,
                other,
            } => {
                let mut actors = vec![writer];
                actors.extend(other);
                Violation {
                    property: Property::ResourceSafety,
                    at,
                    actors,
                    message: format!(
                        "lost update: {} wrote on top of v{base_version} but the resource was at v{expected_base}{}",
                        name(writer),
                        other.map_or(String::new(), |o| format!(" (written by {})", name(o)))
                    ),
                }
            }
            Finding::ForeignDel {
                at,
                by,
                key,
                node,
                owner,
                value,
            } => Violation {
                property: Property::ForeignUnlock,
                at: *at,
                actors: vec![*by, *owner],
                message: format!(
                    "{} deleted key {} on {} holding {}'s token {}",
                    name(*by),
                    String::from_utf8_lossy(key),
                    name(*node),
                    name(*owner),
                    String::from_utf8_lossy(value)
                ),
            },
            &Finding::TokenWentBack {
                at,
                client,
                token,
                max,
                max_by,
            } => Violation {
                property: Property::FencingMonotonic,
                at,
                actors: vec![client, max_by],
                message: format!(
                    "resource accepted token {token} from {} after token {max} from {}",
                    name(client),
                    name(max_by)
                ),
            },
            &Finding::Unobtainable {
                at,
                lock,
                bound_ns,
                who,
                since,
                start,
                pauses,
            } => {
                let how = if pauses == 0 && since == start {
                    format!("{} waiting since {start}", name(who))
                } else if pauses == 0 {
                    // The waiter came after the stretch began (one waiter took over from
                    // another, which crashed or gave up) or began trying while someone still
                    // held the lock.
                    format!(
                        "free and wanted since {start}; {} waiting since {since}",
                        name(who)
                    )
                } else {
                    // Said in full: the gaps are why this is more than one waiter's wait.
                    format!(
                        "free and wanted for {} in all since {start}, in {} stretches with nobody trying in between and nobody acquiring it; {} waiting since {since}",
                        fmt_duration_ns(bound_ns),
                        pauses + 1,
                        name(who)
                    )
                };
                Violation {
                    property: Property::Liveness,
                    at,
                    actors: vec![who],
                    message: format!(
                        "{} unobtainable for more than {} while no live client held it ({how})",
                        lock_name(lock),
                        fmt_duration_ns(bound_ns),
                    ),
                }
            }
            &Finding::ReleaseStuck {
                at,
                lock,
                client,
                since,
                bound_ns,
                returned,
            } => Violation {
                property: Property::ReleaseReturns,
                at,
                actors: vec![client],
                message: format!(
                    "{}'s unlock of {} called at {since} had not returned after {} ({})",
                    name(client),
                    lock_name(lock),
                    fmt_duration_ns(bound_ns),
                    returned.map_or("still unreturned when the run ended".to_string(), |t| {
                        format!("it returned at {t}")
                    }),
                ),
            },
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
    let (mut holding, mut o) = (Holdings::default(), Overlaps::default());
    for r in &history.records {
        holding.observe(r, |c| o.change_of(&c));
    }
    o.finish()
}

/// The closest approach of two holdings: from a whole history (see
/// `Overlaps::closest_handover`).
pub fn closest_handover(history: &History) -> Option<(u64, SimTime)> {
    let mut holding = Holdings::default();
    let mut o = Overlaps::default();
    for r in &history.records {
        holding.observe(r, |c| o.change_of(&c));
    }
    o.closest_handover
}

/// Time with two or more holders of one lock, fed each change of who holds what
/// (`Holdings::observe`); and how close two holdings came without overlapping.
#[derive(Clone, Default)]
pub struct Overlaps {
    holders: ByLock<LockHolders>,
    longest_ns: u64,
    total_ns: u64,
    /// The last change of holders.
    last: SimTime,
    /// The shortest time a lock stood free between one client's holding and another's
    /// (ns), and when the second began (the earliest, on ties): how close a run came to a
    /// double grant without one (an overlap is measured above instead).
    pub closest_handover: Option<(u64, SimTime)>,
}

/// One lock's holders, as `Overlaps` follows them.
#[derive(Clone, Default)]
struct LockHolders {
    holders: Vec<ProcId>,
    /// Since when it has had two or more (`None`: fewer now).
    since: Option<SimTime>,
    /// Who last left it free, and when.
    freed: Option<(ProcId, SimTime)>,
}

impl Overlaps {
    /// A hold began (`acquired`) or ended.
    #[inline(always)]
    /// `change` for a change as `Holdings::observe` gives it.
    fn change_of(&mut self, c: &Change<'_>) {
        match c {
            Change::Began(h) => self.change(h.since, h.client, h.lock, true),
            Change::Ended { hold, at, .. } => self.change(*at, hold.client, hold.lock, false),
            Change::Extended(_) => {}
        }
    }

    pub fn change(&mut self, at: SimTime, p: ProcId, lock: u32, acquired: bool) {
        self.last = at;
        let LockHolders {
            holders: hs,
            since,
            freed,
        } = self.holders.entry(lock);
        let before = hs.len();
        if acquired {
            if before == 0
                && let Some((q, t)) = *freed
                && q != p
            {
                let gap = at.saturating_sub(t);
                if self.closest_handover.is_none_or(|(g, _)| gap < g) {
                    self.closest_handover = Some((gap, at));
                }
            }
            hs.push(p);
        } else if let Some(i) = hs.iter().position(|q| *q == p) {
            remove_at(hs, i);
            if hs.is_empty() {
                *freed = Some((p, at));
            }
        }
        if before < 2 && hs.len() >= 2 {
            *since = Some(at);
        } else if before >= 2
            && hs.len() < 2
            && let Some(t) = since.take()
        {
            self.longest_ns = self.longest_ns.max(at.saturating_sub(t));
            self.total_ns += at.saturating_sub(t);
        }
    }

    /// (longest single overlap, total time with two or more holders), in ns.
    pub fn finish(&self) -> (u64, u64) {
        let (mut longest, mut total) = (self.longest_ns, self.total_ns);
        // An overlap still open at the end of the history lasted at least until its last
        // record.
        for t in self.holders.values().filter_map(|h| h.since.as_ref()) {
            longest = longest.max(self.last.saturating_sub(*t));
            total += self.last.saturating_sub(*t);
        }
        (longest, total)
    }
}

pub fn mutual_exclusion(history: &History, name: &dyn Fn(ProcId) -> String) -> Option<Violation> {
    single(
        history,
        Property::MutualExclusion,
        &CheckConfig::whole(history),
        name,
    )
}

/// One checker over a whole history.
fn single(
    history: &History,
    p: Property,
    cfg: &CheckConfig,
    name: &dyn Fn(ProcId) -> String,
) -> Option<Violation> {
    check_all(history, &[p], cfg, name).pop()
}

impl CheckConfig {
    /// For checkers that do not read the bound nor the end.
    fn whole(history: &History) -> CheckConfig {
        CheckConfig {
            liveness_bound_ns: u64::MAX,
            release_within_ns: u64::MAX,
            end: history.records.last().map_or(SimTime::ZERO, |r| r.at),
        }
    }
}

#[derive(Clone, Default)]
struct MutualExclusion {
    /// lock -> (holder, since).
    holders: ByLock<Vec<(ProcId, SimTime)>>,
    found: Option<Finding>,
    /// Acquisitions made while another client held the lock.
    occurrences: u64,
}

impl MutualExclusion {
    /// A hold began (`acquired`) or ended (see `Holdings::observe`).
    #[inline(always)]
    fn change(&mut self, at: SimTime, p: ProcId, lock: u32, acquired: bool) {
        let hs = self.holders.entry(lock);
        if acquired {
            if let Some(&(holder, since)) = hs.iter().find(|(q, _)| *q != p) {
                self.occurrences += 1;
                // The first is the one reported.
                self.found.get_or_insert(Finding::Overlap {
                    at,
                    lock,
                    holder,
                    since,
                    taker: p,
                });
            }
            hs.push((p, at));
        } else if let Some(i) = hs.iter().position(|(q, _)| *q == p) {
            remove_at(hs, i);
        }
    }

    fn retained_bytes(&self) -> u64 {
        // Bounded by clients x locks; counted per entry.
        (self.holders.len() * 48) as u64
    }
}

pub fn resource_safety(history: &History, name: &dyn Fn(ProcId) -> String) -> Option<Violation> {
    single(
        history,
        Property::ResourceSafety,
        &CheckConfig::whole(history),
        name,
    )
}

#[derive(Clone, Default)]
struct ResourceSafety {
    /// version -> writer that produced it.
    writer_of: BTreeMap<u64, ProcId>,
    found: Option<Finding>,
    occurrences: PerAcquisition,
}

impl ResourceSafety {
    #[inline]
    fn observe(&mut self, r: &Record, serial: &[u32]) {
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
                self.occurrences.note(*client, serial);
                if self.found.is_none() {
                    self.found = Some(Finding::LostUpdate {
                        at: r.at,
                        writer: *client,
                        base_version: *base_version,
                        expected_base,
                        other: self.writer_of.get(&expected_base).copied(),
                    });
                }
            }
            self.writer_of.insert(*version_after, *client);
        }
    }

    fn retained_bytes(&self) -> u64 {
        // A BTreeMap entry with its share of the node.
        (self.writer_of.len() * 24) as u64
    }
}

pub fn foreign_unlock(history: &History, name: &dyn Fn(ProcId) -> String) -> Option<Violation> {
    single(
        history,
        Property::ForeignUnlock,
        &CheckConfig::whole(history),
        name,
    )
}

#[derive(Clone, Default)]
struct ForeignUnlock {
    /// token id -> the client that first stored or tried it (tokens are unique per attempt).
    owner: Vec<Option<ProcId>>,
    // Invariant: the number of `Some` in `owner`.
    owned: usize,
    /// token id -> two clients stored or tried it: a value, not a token (Redisson's
    /// unlock latch holds "1" for every client), so removing it is nobody's foreign unlock.
    shared: Vec<bool>,
    found: Option<Finding>,
    occurrences: PerAcquisition,
}

impl ForeignUnlock {
    #[inline(always)]
    fn observe(&mut self, r: &Record, token: Option<TokenId>, serial: &[u32]) {
        let Some(t) = token else {
            return;
        };
        match &r.obs {
            // A token's owner is the client that stored it (tokens are unique per attempt).
            Observation::KeyWritten { by: Some(by), .. } => self.note_owner(t, *by),
            Observation::Attempt { .. } => self.note_owner(t, r.proc),
            Observation::KeyRemoved {
                key,
                value,
                how: Removal::Del,
                by: Some(by),
            } => {
                if let Some(&Some(o)) = self.owner.get(t.index())
                    && o != *by
                    && !self.shared.get(t.index()).copied().unwrap_or(false)
                {
                    self.occurrences.note(*by, serial);
                    if self.found.is_none() {
                        self.found = Some(Finding::ForeignDel {
                            at: r.at,
                            by: *by,
                            key: key.clone(),
                            node: r.proc,
                            owner: o,
                            value: value.clone(),
                        });
                    }
                }
            }
            _ => {}
        }
    }

    /// The first client named with `token` owns it; a second client naming it makes it a
    /// shared value (tokens are unique per attempt: one two clients write is not a token).
    #[inline]
    fn note_owner(&mut self, t: TokenId, by: ProcId) {
        let o = token::slot_mut(&mut self.owner, t);
        match *o {
            None => {
                *o = Some(by);
                self.owned += 1;
            }
            Some(first) if first != by => *token::slot_mut(&mut self.shared, t) = true,
            Some(_) => {}
        }
    }

    fn retained_bytes(&self) -> u64 {
        (self.owner.len() * std::mem::size_of::<Option<ProcId>>()) as u64
    }
}

/// Findings counted once per holding of the client blamed (`Checks::serial`): several lost
/// writes of one paused holder are one acquisition that went wrong.
#[derive(Clone, Default)]
struct PerAcquisition {
    /// Process index -> the serial of its holding last counted (0: a finding before its
    /// first acquisition, counted with the first).
    last: Vec<Option<u32>>,
    count: u64,
}

impl PerAcquisition {
    fn note(&mut self, client: ProcId, serial: &[u32]) {
        let s = serial.get(client.index()).copied().unwrap_or(0).max(1);
        let i = client.index();
        if self.last.len() <= i {
            self.last.resize(i + 1, None);
        }
        if self.last[i] != Some(s) {
            self.last[i] = Some(s);
            self.count += 1;
        }
    }
}

/// `v.remove(i)` (the order of the rest kept), without a call to move memory: these are
/// a lock's few holders or waiters.
#[inline(always)]
fn remove_at<T: Copy>(v: &mut Vec<T>, i: usize) {
    for j in i + 1..v.len() {
        v[j - 1] = v[j];
    }
    v.pop();
}

/// A small map keyed by lock index, in lock order (what a `BTreeMap` gave): the locks of a
/// model are few, so a sorted vector searched in place beats a tree's nodes.
#[derive(Clone, Debug)]
pub(crate) struct ByLock<V> {
    // Invariant: sorted by lock, each lock once.
    entries: Vec<(u32, V)>,
}

impl<V> Default for ByLock<V> {
    fn default() -> ByLock<V> {
        ByLock {
            entries: Vec::new(),
        }
    }
}

impl<V: Default> ByLock<V> {
    #[inline(always)]
    fn find(&self, lock: u32) -> Result<usize, usize> {
        match self.entries.as_slice() {
            // The usual case: one lock.
            [(l, _)] if *l == lock => Ok(0),
            es => es.binary_search_by_key(&lock, |(l, _)| *l),
        }
    }

    /// `lock`'s entry, made (as `V::default()`) if absent.
    #[inline(always)]
    pub(crate) fn entry(&mut self, lock: u32) -> &mut V {
        let i = match self.find(lock) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (lock, V::default()));
                i
            }
        };
        &mut self.entries[i].1
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &V)> {
        self.entries.iter().map(|(l, v)| (*l, v))
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

pub fn fencing_monotonic(history: &History, name: &dyn Fn(ProcId) -> String) -> Option<Violation> {
    single(
        history,
        Property::FencingMonotonic,
        &CheckConfig::whole(history),
        name,
    )
}

#[derive(Clone, Default)]
struct FencingMonotonic {
    /// The highest token accepted so far, and from whom.
    max: Option<(u64, ProcId)>,
    found: Option<Finding>,
    occurrences: PerAcquisition,
}

impl FencingMonotonic {
    #[inline]
    fn observe(&mut self, r: &Record, serial: &[u32]) {
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
            _ => return,
        };
        if let Some((m, by)) = self.max
            && token < m
        {
            self.occurrences.note(client, serial);
            self.found.get_or_insert(Finding::TokenWentBack {
                at: r.at,
                client,
                token,
                max: m,
                max_by: by,
            });
            return;
        }
        if self.max.is_none_or(|(m, _)| token > m) {
            self.max = Some((token, client));
        }
    }
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
    single(history, Property::Liveness, cfg, name)
}

#[derive(Clone, Default)]
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
    /// `p`'s round ends (it is in `trying` at most once: an attempt adds it only if absent).
    #[inline(always)]
    fn stop_trying(&mut self, p: ProcId) {
        if let Some(i) = self.trying.iter().position(|(q, _)| *q == p) {
            remove_at(&mut self.trying, i);
        }
    }

    /// After any change: start or stop the clock to match the invariant.
    #[inline(always)]
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
    #[inline(always)]
    fn overdue_at(&self, now: SimTime, bound: u64) -> Option<SimTime> {
        let t = self.running_since?;
        let total = self.blocked_ns + now.saturating_sub(t);
        (total > bound).then(|| t.plus_ns(bound.saturating_sub(self.blocked_ns)))
    }

    /// The violation, if the bound was passed by `now` (judged inline: at nearly every
    /// record it was not).
    #[inline(always)]
    fn overdue(&self, lock: u32, now: SimTime, bound_ns: u64) -> Option<Finding> {
        let at = self.overdue_at(now, bound_ns)?;
        self.overdue_finding(lock, at, bound_ns)
    }

    /// The violation of a bound passed at `at`.
    #[cold]
    #[inline(never)]
    fn overdue_finding(&self, lock: u32, at: SimTime, bound_ns: u64) -> Option<Finding> {
        // The waiter trying longest right now (the one the bound was broken for).
        let &(who, since) = self.trying.iter().min_by_key(|(_, t)| *t)?;
        Some(Finding::Unobtainable {
            at,
            lock,
            bound_ns,
            who,
            since,
            start: self.wanted_since.unwrap_or(since),
            pauses: self.pauses,
        })
    }
}

#[derive(Clone)]
struct Liveness {
    bound_ns: u64,
    locks: ByLock<LockState>,
    found: Option<Finding>,
}

impl Liveness {
    fn new(bound_ns: u64) -> Liveness {
        Liveness {
            bound_ns,
            locks: ByLock::default(),
            found: None,
        }
    }

    /// Inline: each of a monitor's arms calls it for one kind of record, so the match on
    /// the kind below folds to that kind's part.
    #[inline(always)]
    fn observe(&mut self, r: &Record) {
        if self.found.is_some() {
            return;
        }
        let lock = match &r.obs {
            Observation::Attempt { lock, .. }
            | Observation::Acquired { lock, .. }
            | Observation::GaveUp { lock }
            | Observation::Released { lock, .. }
            | Observation::Lost { lock, .. } => *lock,
            Observation::Crashed => return self.crashed(r),
            _ => return,
        };
        let bound = self.bound_ns;
        // The lock's state, made if new (every record of a lock makes it: a new one is
        // neither overdue nor changed by anything but an attempt or an acquisition).
        let st = self.locks.entry(lock);
        // Judge the clock up to this instant before the record changes it.
        if let Some(f) = st.overdue(lock, r.at, bound) {
            self.found = Some(f);
            self.locks = ByLock::default();
            return;
        }
        let p = r.proc;
        match &r.obs {
            Observation::Attempt { .. } => {
                if !st.trying.iter().any(|(q, _)| *q == p) {
                    st.trying.push((p, r.at));
                }
                st.settle(r.at);
            }
            Observation::Acquired { .. } => {
                st.holders.push(p);
                st.stop_trying(p);
                // The lock was obtainable: the clock restarts from zero.
                st.running_since = None;
                st.blocked_ns = 0;
                st.wanted_since = None;
                st.pauses = 0;
                st.stopped_at = None;
                // Other waiters' rounds go on, but they wait behind a holder now.
                st.settle(r.at);
            }
            Observation::GaveUp { .. } => {
                st.stop_trying(p);
                st.settle(r.at);
            }
            _ => {
                // Released or lost.
                if let Some(i) = st.holders.iter().position(|q| *q == p) {
                    st.holders.swap_remove(i);
                }
                st.settle(r.at);
            }
        }
    }

    /// A crashed client neither holds nor wants anything; the time it was trying stays on
    /// the clock (only an acquisition resets it).
    fn crashed(&mut self, r: &Record) {
        let bound = self.bound_ns;
        // Judge the clocks up to this instant before the crash changes them.
        self.found = self
            .locks
            .iter()
            .find_map(|(l, st)| st.overdue(l, r.at, bound));
        if self.found.is_some() {
            self.locks = ByLock::default();
            return;
        }
        let p = r.proc;
        for st in self.locks.values_mut() {
            if let Some(i) = st.holders.iter().position(|q| *q == p) {
                st.holders.swap_remove(i);
            }
            st.stop_trying(p);
            st.settle(r.at);
        }
    }

    /// The violation, for a history that ended at `end` (a wait still open then counts).
    fn finish(&self, end: SimTime) -> Option<Finding> {
        self.found.clone().or_else(|| {
            self.locks
                .iter()
                .find_map(|(l, st)| st.overdue(l, end, self.bound_ns))
        })
    }

    fn retained_bytes(&self) -> u64 {
        // Bounded by locks x clients; counted per lock.
        (self.locks.len() * 128) as u64
    }
}

/// `release_returns`'s bound when the model gives none (`release_within`).
pub const DEFAULT_RELEASE_WITHIN_NS: u64 = 10 * crate::time::NS_PER_S;

/// `release_returns`: each client's unlock call in progress (`Fact::UnlockCalled` until its
/// `Fact::UnlockReturned`), and the earliest instant one of them passed the bound. A crash
/// ends the call (the process that made it is gone); a pause does not.
#[derive(Clone)]
struct ReleaseReturns {
    bound_ns: u64,
    /// (client, lock, called at), one entry per client with a call in progress.
    open: Vec<(ProcId, u32, SimTime)>,
    found: Option<Finding>,
}

impl ReleaseReturns {
    fn new(bound_ns: u64) -> ReleaseReturns {
        ReleaseReturns {
            bound_ns,
            open: Vec::new(),
            found: None,
        }
    }

    fn keep_earliest(&mut self, f: Finding) {
        let at = |f: &Finding| match f {
            Finding::ReleaseStuck { at, .. } => *at,
            _ => SimTime(u64::MAX),
        };
        if self.found.as_ref().is_none_or(|g| at(&f) < at(g)) {
            self.found = Some(f);
        }
    }

    fn stuck(
        &self,
        client: ProcId,
        lock: u32,
        since: SimTime,
        returned: Option<SimTime>,
    ) -> Finding {
        Finding::ReleaseStuck {
            at: SimTime(since.0.saturating_add(self.bound_ns)),
            lock,
            client,
            since,
            bound_ns: self.bound_ns,
            returned,
        }
    }

    fn observe(&mut self, r: &Record) {
        let p = r.proc;
        let i = self.open.iter().position(|(q, ..)| *q == p);
        match &r.obs {
            Observation::Fact(Fact::UnlockCalled { lock }) => match i {
                Some(i) => self.open[i] = (p, *lock, r.at),
                None => self.open.push((p, *lock, r.at)),
            },
            Observation::Fact(Fact::UnlockReturned { .. }) => {
                let Some(i) = i else { return };
                let (_, lock, since) = self.open.swap_remove(i);
                if r.at.0.saturating_sub(since.0) > self.bound_ns {
                    let f = self.stuck(p, lock, since, Some(r.at));
                    self.keep_earliest(f);
                }
            }
            Observation::Crashed => {
                if let Some(i) = i {
                    self.open.swap_remove(i);
                }
            }
            _ => {}
        }
    }

    /// The violation, for a history that ended at `end` (a call still open then counts
    /// once the bound has passed).
    fn finish(&self, end: SimTime) -> Option<Finding> {
        let mut found = self.found.clone();
        for &(p, lock, since) in &self.open {
            if end.0.saturating_sub(since.0) > self.bound_ns {
                let f = self.stuck(p, lock, since, None);
                let earlier = match (&found, &f) {
                    (
                        Some(Finding::ReleaseStuck { at: g, .. }),
                        Finding::ReleaseStuck { at, .. },
                    ) => at < g,
                    _ => true,
                };
                if earlier {
                    found = Some(f);
                }
            }
        }
        found
    }

    fn retained_bytes(&self) -> u64 {
        (self.open.len() * 24) as u64
    }
}

#[cfg(test)]
mod tests;
