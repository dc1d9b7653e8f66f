//! Safety margins: for each acquisition, the distance between what the client believed (the
//! end of its validity, measured on its own clock and mapped to true time by the loop) and
//! reality (when its key actually left each node that had granted it). A negative margin is
//! a window in which the client believed it held a lock that was already gone.

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;

use super::token::{self, TokenId, Tokens};
use crate::history::{History, Observation, Record, Removal};
use crate::proto::Bytes;
use crate::time::{ProcId, SimTime};

/// One acquisition's margin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Margin {
    pub client: ProcId,
    pub token: Bytes,
    pub acquired_at: SimTime,
    pub believed_until: SimTime,
    /// Nodes where the key left for another reason than the holder's own unlock: (node,
    /// when, how).
    pub removals: Vec<(ProcId, SimTime, Removal)>,
    /// Earliest removal minus believed end, in ns (negative: belief outlived the key).
    pub margin_ns: i64,
}

/// Margins of every acquisition whose key was lost (expired, overwritten, flushed, or deleted
/// by someone else) on at least one node, in history order.
pub fn safety_margins(history: &History) -> Vec<Margin> {
    let mut m = Margins::default();
    let mut tokens = Tokens::default();
    for r in &history.records {
        m.observe(r, tokens.name(r, |_| false).id());
    }
    m.finish(&tokens)
}

/// The margins, fed one record at a time (what `safety_margins` replays over a kept history,
/// and what a streamed run keeps).
///
/// Every acquired token stays: a later `Extended` moves its belief and a later removal may
/// still come from any node, so no token's margin is final before the history ends.
#[derive(Clone, Default)]
pub struct Margins {
    /// Token id -> what its acquisition believed (`seq` 0: not acquired).
    beliefs: Vec<Belief>,
    /// Token id -> the removals that were losses, in order (fewer than the acquisitions:
    /// kept apart, so that a token without one costs nothing here).
    losses: IndexMap<u32, Vec<(ProcId, SimTime, Removal)>, FxBuildHasher>,
    /// Acquisitions numbered in order from 1, for `finish` to give them in that order.
    next_seq: u64,
    /// The margins of retired tokens (`forget`), already final.
    retired: MarginTally,
    /// The smallest release slack (believed end - release, ns) over the releases fed in, and
    /// when that release was (see `release_slack`). A monitor feeds no releases (a sweep
    /// reports no slack): only the whole-history fold does.
    closest_release: Option<(i64, SimTime)>,
}

/// One token's acquisition, as `Margins` keeps it.
#[derive(Clone, Copy)]
struct Belief {
    /// The order of its first acquisition (0: the token was not acquired).
    seq: u64,
    client: ProcId,
    acquired_at: SimTime,
    /// Extensions move it.
    believed_until: SimTime,
}

impl Default for Belief {
    /// No acquisition.
    fn default() -> Belief {
        Belief {
            seq: 0,
            client: ProcId(0),
            acquired_at: SimTime::ZERO,
            believed_until: SimTime::ZERO,
        }
    }
}

/// The safety margin of one removal: when the key left its node (the removal's record,
/// `removed_at`) minus the end of the validity its holder believed in (`believed_until`),
/// in ns; negative: the belief outlived the key. The one definition: sweeps (the smallest
/// over an acquisition's removals), the text timeline (`[margin …]` at each removal) and the
/// page (its hover and its dotted line) all compute a margin here.
///
/// A key whose TTL ran out is gone for readers from that instant, but leaves its node when
/// Redis removes it: lazily, on the next command that touches it (a waiting client's SET NX
/// among them), or by the expiry cycle up to 100 ms later. The margin is measured to the
/// removal, so it goes negative exactly when the key was removed (and so could be taken)
/// while its holder still believed in it.
pub fn removal_margin_ns(removed_at: SimTime, believed_until: SimTime) -> i64 {
    removed_at.0 as i64 - believed_until.0 as i64
}

/// Whether a removal of a key that holds `holder`'s token is a loss of that holder's lock:
/// anything but its own unlock (a DEL by the holder) or a replica applying its master's DEL
/// (`by` unknown: the master's own removal is what counts).
pub fn is_loss(how: Removal, by: Option<ProcId>, holder: ProcId) -> bool {
    !(how == Removal::Del && by.is_none_or(|b| b == holder))
}

/// The margin of a belief whose key was lost somewhere.
fn margin_ns(b: &Belief, losses: &[(ProcId, SimTime, Removal)]) -> Option<i64> {
    first_loss(losses).map(|first| removal_margin_ns(first, b.believed_until))
}

/// When the key of a belief first left a node.
fn first_loss(losses: &[(ProcId, SimTime, Removal)]) -> Option<SimTime> {
    losses.iter().map(|(_, at, _)| *at).min()
}

/// A distribution of margins: what a sweep reports per seed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MarginTally {
    /// Counts over `MARGIN_BUCKETS`.
    pub histogram: [u64; 6],
    /// The smallest margin (ns).
    pub min_ns: Option<i64>,
    /// When the key of the smallest margin's acquisition first left a node (the earliest,
    /// on ties).
    pub min_at: Option<SimTime>,
}

impl MarginTally {
    /// A margin, of a key that first left a node at `lost_at`.
    pub fn add(&mut self, margin_ns: i64, lost_at: SimTime) {
        self.histogram[margin_bucket(margin_ns)] += 1;
        let smaller = match (self.min_ns, self.min_at) {
            (Some(m), Some(at)) => (margin_ns, lost_at) < (m, at),
            _ => true,
        };
        if smaller {
            self.min_ns = Some(margin_ns);
            self.min_at = Some(lost_at);
        }
    }
}

impl Margins {
    /// Feeds one record; `token`: the token it names (`token::Tokens::name`).
    #[inline(always)]
    pub fn observe(&mut self, r: &Record, token: Option<TokenId>) {
        let Some(t) = token else {
            return;
        };
        match &r.obs {
            Observation::Acquired {
                believed_until: Some(b),
                ..
            } => {
                let e = token::slot_mut(&mut self.beliefs, t);
                // A token acquired again keeps its place (its first acquisition's).
                if e.seq == 0 {
                    self.next_seq += 1;
                    e.seq = self.next_seq;
                }
                e.client = r.proc;
                e.acquired_at = r.at;
                e.believed_until = *b;
            }
            Observation::Extended {
                believed_until: Some(b),
                ..
            } => {
                if let Some(e) = self.beliefs.get_mut(t.index())
                    && e.seq != 0
                {
                    e.believed_until = *b;
                }
            }
            Observation::Released { .. } => {
                if let Some(e) = self.beliefs.get(t.index()).filter(|e| e.seq != 0) {
                    let slack = e.believed_until.0 as i64 - r.at.0 as i64;
                    if self.closest_release.is_none_or(|x| (slack, r.at) < x) {
                        self.closest_release = Some((slack, r.at));
                    }
                }
            }
            Observation::KeyRemoved { how, by, .. } => {
                let Some(e) = self.beliefs.get(t.index()).filter(|e| e.seq != 0) else {
                    return;
                };
                if is_loss(*how, *by, e.client) {
                    let id = t.index() as u32;
                    self.losses
                        .entry(id)
                        .or_default()
                        .push((r.proc, r.at, *how));
                }
            }
            _ => {}
        }
    }

    /// Forgets the tokens `dead`, tallying their margins: final, since no later record may
    /// name them (see `monitor::Retirement`); their ids may name other tokens from now on.
    pub fn forget(&mut self, dead: &[TokenId]) {
        for &t in dead {
            let Some(e) = self.beliefs.get_mut(t.index()) else {
                continue;
            };
            let e = std::mem::take(e);
            if let Some(ls) = self.losses.swap_remove(&(t.index() as u32))
                && e.seq != 0
                && let Some(m) = margin_ns(&e, &ls)
                && let Some(at) = first_loss(&ls)
            {
                self.retired.add(m, at);
            }
        }
    }

    /// The distribution of every margin: of the tokens retired and of those still kept.
    pub fn tally(self) -> MarginTally {
        let mut t = self.retired;
        for (id, ls) in &self.losses {
            if let (Some(m), Some(at)) =
                (margin_ns(&self.beliefs[*id as usize], ls), first_loss(ls))
            {
                t.add(m, at);
            }
        }
        t
    }

    /// Estimated bytes kept (for the run's memory budget): a slot per token id, and the
    /// losses.
    pub fn retained_bytes(&self) -> u64 {
        (self.beliefs.len() * std::mem::size_of::<Belief>()
            + self.losses.len() * (8 + 4 + 24 + 8 + 24)) as u64
    }

    /// The margins of the acquisitions whose key was lost, in order of first acquisition
    /// (of the tokens not retired: a kept history retires none); `tokens` names them.
    pub fn finish(self, tokens: &Tokens) -> Vec<Margin> {
        let mut out: Vec<(u64, Margin)> = Vec::new();
        for (id, ls) in self.losses {
            let b = self.beliefs[id as usize];
            let Some(margin_ns) = margin_ns(&b, &ls) else {
                continue;
            };
            out.push((
                b.seq,
                Margin {
                    client: b.client,
                    token: tokens.token(TokenId::from_index(id as usize)).clone(),
                    acquired_at: b.acquired_at,
                    believed_until: b.believed_until,
                    removals: ls,
                    margin_ns,
                },
            ));
        }
        out.sort_by_key(|(seq, _)| *seq);
        out.into_iter().map(|(_, m)| m).collect()
    }
}

/// Buckets of a margin distribution (ns upper bounds, exclusive), for sweep summaries.
pub const MARGIN_BUCKETS: [(i64, &str); 6] = [
    (-1_000_000_000, "< -1s"),
    (0, "-1s..0"),
    (100_000_000, "0..100ms"),
    (1_000_000_000, "100ms..1s"),
    (10_000_000_000, "1s..10s"),
    (i64::MAX, ">= 10s"),
];

/// Index of the bucket a margin falls in.
pub fn margin_bucket(ns: i64) -> usize {
    MARGIN_BUCKETS
        .iter()
        .position(|(hi, _)| ns < *hi)
        .unwrap_or(MARGIN_BUCKETS.len() - 1)
}

/// The holding that came closest to outliving its holder's belief without its key being
/// lost: over every release of an acquisition that believed it held until some time, the
/// smallest (believed end - release), in ns, and when the release was (the earliest on
/// ties). Negative: the holder released after its belief ended (it acted past its validity).
/// With `safety_margins`, the closeness `search` steers by: a holding whose key was lost has
/// a margin; one released in time has this slack.
pub fn release_slack(history: &History) -> Option<(i64, SimTime)> {
    let mut m = Margins::default();
    let mut tokens = Tokens::default();
    for r in &history.records {
        m.observe(r, tokens.name(r, |_| false).id());
    }
    m.closest_release
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(records: Vec<(u64, u32, Observation)>) -> History {
        let mut h = History::default();
        for (ms, p, o) in records {
            h.push(SimTime::from_ms(ms), ProcId(p), o);
        }
        h
    }
    fn tok(s: &str) -> Bytes {
        Bytes::from(s)
    }

    #[test]
    fn a_key_that_expires_before_the_belief_ends_gives_a_negative_margin() {
        let hist = h(vec![
            (
                0,
                1,
                Observation::Acquired {
                    lock: 0,
                    token: tok("a"),
                    fence: None,
                    validity_ns: Some(10),
                    believed_until: Some(SimTime::from_ms(10_000)),
                },
            ),
            (
                7_000,
                0,
                Observation::KeyRemoved {
                    key: tok("lock"),
                    value: tok("a"),
                    how: Removal::Expired,
                    by: None,
                },
            ),
        ]);
        let m = safety_margins(&hist);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].margin_ns, -3_000_000_000);
    }

    #[test]
    fn the_holders_own_unlock_is_not_a_loss() {
        let hist = h(vec![
            (
                0,
                1,
                Observation::Acquired {
                    lock: 0,
                    token: tok("a"),
                    fence: None,
                    validity_ns: Some(10),
                    believed_until: Some(SimTime::from_ms(10_000)),
                },
            ),
            (
                2_000,
                0,
                Observation::KeyRemoved {
                    key: tok("lock"),
                    value: tok("a"),
                    how: Removal::Del,
                    by: Some(ProcId(1)),
                },
            ),
        ]);
        assert!(safety_margins(&hist).is_empty());
    }
}
