//! Episodes: the one reading of a history into what lasted. A record is an instant; what a
//! checker judges and what a picture draws are spans between records — a client's holding
//! of a lock from its `Acquired` to the record that ends it. Every reader pairs the
//! records through this fold, so a bar on a chart and the hold a verdict counted are the
//! same hold, begun and ended by the same records.
//!
//! A streaming fold: fed each record in history order, it keeps only what is open and
//! hands each change to the caller as it happens (a streamed sweep keeps no records).

use crate::history::{Observation, Record};
use crate::proto::Bytes;
use crate::time::{ProcId, SimTime};

/// A client's belief that it holds a lock, from the `Acquired` that began it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    pub client: ProcId,
    pub lock: u32,
    /// The value the client stored in the lock key.
    pub token: Bytes,
    /// The fencing token it was granted, if any.
    pub fence: Option<u64>,
    pub since: SimTime,
    /// What the `Acquired` said of the belief: its length on the client's clock and that
    /// mapped to true time.
    pub validity_ns: Option<u64>,
    pub believed_until: Option<SimTime>,
    /// Where the belief ends now: the `Acquired`'s, or the latest `Extended`'s that gave one.
    pub believed_until_now: Option<SimTime>,
}

/// How a hold ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldEnd {
    /// The client released it (it stopped believing and sent its unlock).
    Released,
    /// The client learnt it no longer held it, for this reason.
    Lost(&'static str),
    /// The client crashed holding it.
    Crashed,
}

/// A change of who holds what, as a record makes it.
#[derive(Debug)]
pub enum Change<'a> {
    Began(&'a Hold),
    /// An `Extended` moved the hold's belief (`believed_until_now`).
    Extended(&'a Hold),
    Ended {
        hold: Hold,
        at: SimTime,
        how: HoldEnd,
    },
}

/// The open holds, per client.
///
/// The pairing rule, the one every reader shares: an `Acquired` opens a hold; a `Released`
/// or `Lost` of client `c` for `lock` closes `c`'s open hold of `lock` with the record's
/// token, else (a library that reports another value than it stored, or a task sharing the
/// client's token) `c`'s earliest open hold of `lock`; one with no open hold of `lock` ends
/// nothing. An `Extended` moves the belief of the hold it names by the same rule. A crash
/// closes every hold of the client, earliest first.
#[derive(Clone, Debug, Default)]
pub struct Holdings {
    // Invariant: `by_client[c]` holds client c's open holds in the order they began.
    by_client: Vec<Vec<Hold>>,
}

impl Holdings {
    /// Folds in one record, calling `f` for each hold it begins or ends.
    #[inline]
    pub fn observe(&mut self, r: &Record, mut f: impl FnMut(Change<'_>)) {
        match &r.obs {
            Observation::Acquired {
                lock,
                token,
                fence,
                validity_ns,
                believed_until,
            } => {
                let i = r.proc.index();
                if self.by_client.len() <= i {
                    self.by_client.resize(i + 1, Vec::new());
                }
                let open = &mut self.by_client[i];
                open.push(Hold {
                    client: r.proc,
                    lock: *lock,
                    token: token.clone(),
                    fence: *fence,
                    since: r.at,
                    validity_ns: *validity_ns,
                    believed_until: *believed_until,
                    believed_until_now: *believed_until,
                });
                f(Change::Began(open.last().expect("just pushed")));
            }
            Observation::Extended {
                lock,
                token,
                believed_until,
                ..
            } => {
                if let Some(i) = self.find(r.proc, *lock, token) {
                    let hold = &mut self.by_client[r.proc.index()][i];
                    if believed_until.is_some() {
                        hold.believed_until_now = *believed_until;
                    }
                    f(Change::Extended(hold));
                }
            }
            Observation::Released { lock, token } => {
                if let Some(hold) = self.close(r.proc, *lock, token) {
                    f(Change::Ended {
                        hold,
                        at: r.at,
                        how: HoldEnd::Released,
                    });
                }
            }
            Observation::Lost {
                lock,
                token,
                reason,
            } => {
                if let Some(hold) = self.close(r.proc, *lock, token) {
                    f(Change::Ended {
                        hold,
                        at: r.at,
                        how: HoldEnd::Lost(reason),
                    });
                }
            }
            Observation::Crashed => {
                let open = self
                    .by_client
                    .get_mut(r.proc.index())
                    .map(std::mem::take)
                    .unwrap_or_default();
                for hold in open {
                    f(Change::Ended {
                        hold,
                        at: r.at,
                        how: HoldEnd::Crashed,
                    });
                }
            }
            _ => {}
        }
    }

    /// Where client `c`'s hold of `lock` that a record with `token` names is among its open
    /// holds, by the pairing rule (see the type).
    fn find(&self, c: ProcId, lock: u32, token: &Bytes) -> Option<usize> {
        let open = self.by_client.get(c.index())?;
        open.iter()
            .position(|h| h.lock == lock && h.token == *token)
            .or_else(|| open.iter().position(|h| h.lock == lock))
    }

    /// Closes client `c`'s hold of `lock` that a record with `token` names.
    fn close(&mut self, c: ProcId, lock: u32, token: &Bytes) -> Option<Hold> {
        let i = self.find(c, lock, token)?;
        Some(self.by_client[c.index()].remove(i))
    }

    /// Client `c`'s open holds, in the order they began.
    pub fn of(&self, c: ProcId) -> &[Hold] {
        self.by_client.get(c.index()).map_or(&[], |v| v.as_slice())
    }

    /// Every open hold, by client and then in the order they began.
    pub fn open(&self) -> impl Iterator<Item = &Hold> {
        self.by_client.iter().flatten()
    }

    /// Bytes kept (for a streamed history's budget).
    pub fn retained_bytes(&self) -> u64 {
        let per = std::mem::size_of::<Hold>() as u64;
        self.by_client
            .iter()
            .map(|v| (std::mem::size_of::<Vec<Hold>>() as u64) + v.capacity() as u64 * per)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(at: u64, p: u32, obs: Observation) -> Record {
        Record {
            at: SimTime(at),
            proc: ProcId(p),
            obs,
        }
    }

    fn acquired(lock: u32, token: &str) -> Observation {
        Observation::Acquired {
            lock,
            token: Bytes::from(token.as_bytes()),
            fence: None,
            validity_ns: None,
            believed_until: None,
        }
    }

    fn released(lock: u32, token: &str) -> Observation {
        Observation::Released {
            lock,
            token: Bytes::from(token.as_bytes()),
        }
    }

    /// (client, lock, token, since, at, how) of every hold the records end.
    fn ended(records: &[Record]) -> Vec<(u32, u32, String, u64, u64, HoldEnd)> {
        let mut h = Holdings::default();
        let mut out = Vec::new();
        for r in records {
            h.observe(r, |c| {
                if let Change::Ended { hold, at, how } = c {
                    out.push((
                        hold.client.0,
                        hold.lock,
                        String::from_utf8_lossy(&hold.token).into_owned(),
                        hold.since.0,
                        at.0,
                        how,
                    ));
                }
            });
        }
        out
    }

    #[test]
    fn a_release_ends_the_hold_with_its_token_before_an_earlier_one_of_the_same_lock() {
        let e = ended(&[
            rec(1, 0, acquired(0, "a")),
            rec(2, 0, acquired(0, "b")),
            rec(3, 0, released(0, "b")),
            rec(4, 0, released(0, "a")),
        ]);
        assert_eq!(e[0], (0, 0, "b".into(), 2, 3, HoldEnd::Released));
        assert_eq!(e[1], (0, 0, "a".into(), 1, 4, HoldEnd::Released));
    }

    #[test]
    fn a_release_with_a_token_no_hold_has_ends_the_earliest_hold_of_that_lock_and_none_of_another()
    {
        let e = ended(&[
            rec(1, 0, acquired(1, "x")),
            rec(2, 0, acquired(0, "a")),
            rec(3, 0, acquired(0, "b")),
            rec(4, 0, released(0, "zz")),
            rec(5, 0, released(2, "x")),
            rec(6, 1, released(0, "b")),
        ]);
        assert_eq!(e, vec![(0, 0, "a".into(), 2, 4, HoldEnd::Released)]);
    }

    #[test]
    fn a_crash_ends_every_hold_of_the_client_earliest_first_and_no_other_clients() {
        let e = ended(&[
            rec(1, 0, acquired(0, "a")),
            rec(2, 1, acquired(1, "c")),
            rec(3, 0, acquired(1, "b")),
            rec(
                4,
                0,
                Observation::Lost {
                    lock: 9,
                    token: Bytes::from(&b"q"[..]),
                    reason: "validity ran out",
                },
            ),
            rec(5, 0, Observation::Crashed),
        ]);
        assert_eq!(
            e,
            vec![
                (0, 0, "a".into(), 1, 5, HoldEnd::Crashed),
                (0, 1, "b".into(), 3, 5, HoldEnd::Crashed),
            ]
        );
    }

    #[test]
    fn an_extension_moves_the_belief_of_the_hold_it_names_and_no_other() {
        let mut h = Holdings::default();
        let acq = |token: &str, until: u64| Observation::Acquired {
            lock: 0,
            token: Bytes::from(token.as_bytes()),
            fence: None,
            validity_ns: Some(10),
            believed_until: Some(SimTime(until)),
        };
        let ext = |token: &str, until: Option<u64>| Observation::Extended {
            lock: 0,
            token: Bytes::from(token.as_bytes()),
            validity_ns: Some(10),
            believed_until: until.map(SimTime),
        };
        let mut extended = 0;
        for r in [
            rec(1, 0, acq("a", 11)),
            rec(2, 0, acq("b", 12)),
            rec(3, 0, ext("b", Some(30))),
            rec(4, 0, ext("b", None)),
            rec(5, 1, ext("a", Some(99))),
        ] {
            h.observe(&r, |c| {
                if let Change::Extended(_) = c {
                    extended += 1;
                }
            });
        }
        // The client 1 record names no hold of its own; one without a belief keeps the last.
        assert_eq!(extended, 2);
        let until: Vec<_> = h
            .of(ProcId(0))
            .iter()
            .map(|x| x.believed_until_now)
            .collect();
        assert_eq!(until, vec![Some(SimTime(11)), Some(SimTime(30))]);
        assert_eq!(h.of(ProcId(0))[1].believed_until, Some(SimTime(12)));
    }
}
