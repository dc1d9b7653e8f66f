//! Safety margins: for each acquisition, the distance between what the client believed (the
//! end of its validity, measured on its own clock and mapped to true time by the loop) and
//! reality (when its key actually left each node that had granted it). A negative margin is
//! a window in which the client believed it held a lock that was already gone.

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;

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
    history.records.iter().for_each(|r| m.observe(r));
    m.finish()
}

/// The margins, fed one record at a time (what `safety_margins` replays over a kept history,
/// and what a streamed run keeps).
///
/// Every acquired token stays: a later `Extended` moves its belief and a later removal may
/// still come from any node, so no token's margin is final before the history ends.
#[derive(Clone, Default)]
pub struct Margins {
    /// token -> (client, acquired_at, believed_until), in order of first acquisition;
    /// extensions move the belief. Fixed-hasher maps: deterministic, and cheap over
    /// thousands of tokens.
    belief: IndexMap<Bytes, (ProcId, SimTime, SimTime), FxBuildHasher>,
    /// token -> the removals that were losses, in order.
    removals: IndexMap<Bytes, Vec<(ProcId, SimTime, Removal)>, FxBuildHasher>,
    /// The margins of retired tokens (`retire`), already final.
    retired: MarginTally,
}

/// A distribution of margins: what a sweep reports per seed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MarginTally {
    /// Counts over `MARGIN_BUCKETS`.
    pub histogram: [u64; 6],
    /// The smallest margin (ns).
    pub min_ns: Option<i64>,
}

impl MarginTally {
    pub fn add(&mut self, margin_ns: i64) {
        self.histogram[margin_bucket(margin_ns)] += 1;
        self.min_ns = Some(self.min_ns.map_or(margin_ns, |x| x.min(margin_ns)));
    }
}

impl Margins {
    #[inline]
    pub fn observe(&mut self, r: &Record) {
        match &r.obs {
            Observation::Acquired {
                token,
                believed_until: Some(b),
                ..
            } => {
                // A token acquired again keeps its place (its first acquisition's).
                let belief = (r.proc, r.at, *b);
                *super::slot(&mut self.belief, token, || belief) = belief;
            }
            Observation::Extended {
                token,
                believed_until: Some(b),
                ..
            } => {
                if let Some(e) = self.belief.get_mut(token) {
                    e.2 = *b;
                }
            }
            Observation::KeyRemoved { value, how, by, .. } => {
                let Some(&(holder, _, _)) = self.belief.get(value) else {
                    return;
                };
                // The holder's own unlock is not a loss; nor is a replica applying its master's
                // DEL (`by` unknown): the master's own removal is what counts.
                let not_a_loss = *how == Removal::Del && by.is_none_or(|b| holder == b);
                if !not_a_loss {
                    super::slot(&mut self.removals, value, Vec::new).push((r.proc, r.at, *how));
                }
            }
            _ => {}
        }
    }

    /// Forgets the tokens `dead` names, tallying their margins: final, since no later record
    /// may name them (see `monitor::Retirement`).
    pub fn retire(&mut self, dead: &dyn Fn(&Bytes) -> bool) {
        let Margins {
            belief,
            removals,
            retired,
        } = self;
        belief.retain(|t, &mut (_, _, believed_until)| {
            if !dead(t) {
                return true;
            }
            if let Some(rs) = removals.swap_remove(t)
                && let Some(first) = rs.iter().map(|(_, at, _)| *at).min()
            {
                retired.add(first.0 as i64 - believed_until.0 as i64);
            }
            false
        });
    }

    /// Token-keyed entries kept (what grows with a run).
    pub fn token_entries(&self) -> usize {
        self.belief.len() + self.removals.len()
    }

    /// The tokens kept (every token in `removals` is in `belief`).
    pub fn tokens(&self) -> impl Iterator<Item = &Bytes> {
        self.belief.keys()
    }

    /// The distribution of every margin: of the tokens retired and of those still kept.
    pub fn tally(self) -> MarginTally {
        let mut t = self.retired;
        for m in self.finish() {
            t.add(m.margin_ns);
        }
        t
    }

    /// Estimated bytes kept (for the run's memory budget).
    pub fn retained_bytes(&self) -> u64 {
        super::token_map_bytes(self.belief.len(), 24)
            + super::token_map_bytes(self.removals.len(), 24 + 24)
    }

    /// The margins of the acquisitions whose key was lost, in order of first acquisition
    /// (of the tokens not retired: a kept history retires none).
    pub fn finish(mut self) -> Vec<Margin> {
        let mut out = Vec::new();
        for (t, (client, acquired_at, believed_until)) in std::mem::take(&mut self.belief) {
            let Some(rs) = self.removals.swap_remove(&t) else {
                continue;
            };
            let Some(first) = rs.iter().map(|(_, at, _)| *at).min() else {
                continue;
            };
            let margin_ns = first.0 as i64 - believed_until.0 as i64;
            out.push(Margin {
                client,
                token: t,
                acquired_at,
                believed_until,
                removals: rs,
                margin_ns,
            });
        }
        out
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
