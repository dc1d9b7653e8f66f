//! Judging a run as it goes: every checker, detector and measure a run's outcome carries,
//! fed each record as the loop produces it, so a run need not keep its history. `replay`
//! and the reports, which draw the whole history, still keep it and feed the same monitor
//! from it afterwards (`Monitor::observe_all`): one implementation of each checker, so a
//! streamed run and a kept one cannot judge differently.
//!
//! What is left growing with the run is the checkers' memory of tokens: `foreign_unlock`
//! must know who first named every token, `margins` every acquisition's belief, the
//! hazards every grant — any later record might name any of them. A streamed monitor
//! therefore retires tokens (`Retirement`): the simulator's clients name their tokens
//! `prefix-N` with N counting up, so once every token of a prefix below some N is neither
//! held nor kept on a node, those tokens are forgotten — their margins tallied, their
//! owners and grants dropped — and any later record that names one of them (a late
//! delivery, a client reusing a token, a node reloading an old key) puts the monitor in
//! doubt: it stops, and the run is judged again from a kept history (`explore::run_seed`).
//! Retiring is thus never a guess: either no record names a retired token and the
//! judgement is the kept history's, or the kept history judges.

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;

use super::margin::{MarginTally, Margins};
use super::token::{Naming, TokenId, Tokens};
use super::witness::{Hazards, Scan};
use super::{Checks, Property, Violation};
use crate::history::{History, Observation, Record, Sink};
use crate::proto::Bytes;
use crate::time::{ProcId, SimTime};

/// Tokens a streamed monitor knows before it first retires tokens: runs of a few thousand
/// acquisitions never retire (and never pay for it).
pub const RETIRE_FROM_ENTRIES: usize = 16_384;

/// Records between two looks at what the monitor keeps (retiring, the memory budget): often
/// enough that they add little past a threshold, rarely enough to cost nothing per record.
pub const HOUSEKEEPING_EVERY: u64 = 64;

/// Everything `explore::RunOutcome` reports about a run, computed record by record.
#[derive(Clone)]
pub struct Monitor {
    /// The tokens the parts below know, each looked up here once per record.
    tokens: Tokens,
    /// The checkers, and the overlaps (`Checks::with_overlaps`).
    checks: Checks,
    margins: Margins,
    hazards: Scan,
    acquisitions: u64,
    /// Records observed.
    records: u64,
    /// `None`: keeps every token (a kept history's monitor).
    retirement: Option<Retirement>,
    /// A record named a retired token: the monitor stopped judging (see the module text).
    doubt: bool,
}

/// What a monitor found over a whole run.
pub struct Judgement {
    pub checks: Checks,
    pub acquisitions: u64,
    /// (longest single overlap, total time with two or more holders), in ns.
    pub overlaps_ns: (u64, u64),
    pub margins: MarginTally,
    pub hazards: Hazards,
    /// The monitor stopped judging (a record named a token it had retired): nothing here
    /// is the run's judgement; judge it from a kept history.
    pub doubt: bool,
}

impl Judgement {
    /// The violations of a run that ended at `end` (see `Checks::violations`).
    pub fn violations(
        &self,
        end: SimTime,
        name: &dyn Fn(ProcId) -> String,
        lock_name: &dyn Fn(u32) -> String,
    ) -> Vec<Violation> {
        self.checks.violations(end, name, lock_name)
    }
}

/// Which tokens a streamed monitor has forgotten.
#[derive(Clone)]
struct Retirement {
    /// prefix -> floor: every token `prefix-N` with N below the floor is retired (seen or
    /// not: a token never seen below a floor is treated as retired too).
    // Invariant: floors only rise.
    floors: IndexMap<Bytes, u64, FxBuildHasher>,
    /// Retire again when the token-keyed entries reach this (twice what the last
    /// retirement left, so the work stays proportional to the records).
    next_at: usize,
    first_at: usize,
    /// Times tokens were retired, and the most token-keyed entries kept at a housekeeping
    /// (what a test of flat memory reads).
    rounds: u64,
    peak_entries: usize,
}

impl Retirement {
    /// Whether `token` is retired.
    fn retired(&self, token: &Bytes) -> bool {
        counted(token).is_some_and(|(p, n)| self.floors.get(p).is_some_and(|&floor| n < floor))
    }
}

/// A token as the simulator's clients make them, `prefix-N` (`client::single::token_bytes`),
/// split: N in canonical decimal only (no leading zero), so one N is one spelling and two
/// tokens with the same parts are the same bytes.
fn counted(token: &[u8]) -> Option<(&[u8], u64)> {
    let dash = token.iter().rposition(|&b| b == b'-')?;
    let digits = &token[dash + 1..];
    let canonical = !digits.is_empty()
        && digits.len() <= 19
        && digits.iter().all(u8::is_ascii_digit)
        && (digits[0] != b'0' || digits.len() == 1);
    if !canonical {
        return None;
    }
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Some((&token[..dash], n))
}

impl Monitor {
    /// A monitor for the properties `props` (`liveness_bound_ns` for `liveness`) that keeps
    /// every token: what judges a kept history.
    pub fn new(props: &[Property], liveness_bound_ns: u64) -> Monitor {
        Monitor {
            tokens: Tokens::default(),
            checks: Checks::new(props, liveness_bound_ns).with_overlaps(),
            margins: Margins::default(),
            hazards: Scan::default(),
            acquisitions: 0,
            records: 0,
            retirement: None,
            doubt: false,
        }
    }

    /// This monitor, with `release_returns` bounded by `bound_ns` (`Checks::release_within`).
    pub fn release_within(mut self, bound_ns: u64) -> Monitor {
        self.checks = self.checks.release_within(bound_ns);
        self
    }

    /// This monitor, retiring tokens once it keeps `first_at` token-keyed entries (for a
    /// streamed history; see the module text).
    pub fn retiring(mut self, first_at: usize) -> Monitor {
        self.retirement = Some(Retirement {
            floors: IndexMap::default(),
            next_at: first_at,
            first_at,
            rounds: 0,
            peak_entries: 0,
        });
        self
    }

    /// Feeds one record (in history order).
    #[inline(always)]
    pub fn observe(&mut self, r: &Record) {
        if self.doubt {
            return;
        }
        let (at, p) = (r.at, r.proc);
        // One dispatch on the record's kind, each part handed the record in the arm of its
        // kind (where what the parts' own matches would test is known): most records are
        // read by few parts, and a match per part per record cost more than their work.
        match &r.obs {
            Observation::Attempt { .. } => {
                let Ok(t) = self.named(r) else { return };
                self.check(r, t);
                self.hazards.attempt(at, p, t);
            }
            Observation::Acquired { believed_until, .. } => {
                let Ok(t) = self.named(r) else { return };
                self.acquisitions += 1;
                self.check(r, t);
                self.margins.observe(r, t);
                self.hazards.acquired(at, p, t, *believed_until);
            }
            Observation::Released { .. } => {
                let Ok(t) = self.named(r) else { return };
                self.check(r, t);
                self.hazards.released(at, t);
            }
            Observation::KeyWritten {
                key,
                expire_at_ms,
                by,
                ..
            } => {
                let Ok(t) = self.named(r) else { return };
                self.check(r, t);
                self.hazards
                    .key_written(at, p, t, key, expire_at_ms.is_some(), *by);
            }
            Observation::KeyRemoved { key, how, by, .. } => {
                let Ok(t) = self.named(r) else { return };
                self.check(r, t);
                self.margins.observe(r, t);
                self.hazards.key_removed(at, p, t, key, *how, *by);
            }
            Observation::GaveUp { .. } => {
                self.check(r, None);
                self.hazards.gave_up(at, p);
            }
            Observation::Lost { reason, .. } => {
                let Ok(t) = self.named(r) else { return };
                self.check(r, t);
                self.hazards.lost(at, p, t, reason);
            }
            Observation::Extended { believed_until, .. } => {
                let Ok(t) = self.named(r) else { return };
                self.margins.observe(r, t);
                self.hazards.extended(at, t, *believed_until);
            }
            // Texts for people: only their time counts.
            Observation::Fault { .. }
            | Observation::Sentinel { .. }
            | Observation::Replication { .. }
            | Observation::Note(_) => self.hazards.skip(r),
            _ => {
                self.check(r, None);
                self.hazards.other(r);
            }
        }
        self.records += 1;
        if self.records.is_multiple_of(HOUSEKEEPING_EVERY) && self.retirement.is_some() {
            let entries = self.token_entries();
            if let Some(ret) = &mut self.retirement {
                ret.peak_entries = ret.peak_entries.max(entries);
                if entries >= ret.next_at {
                    self.retire();
                }
            }
        }
    }

    /// The token `r` names (`None`: none known); `Err` when it names a retired one, and
    /// then the monitor has stopped judging (see the module text).
    #[inline(always)]
    fn named(&mut self, r: &Record) -> Result<Option<TokenId>, ()> {
        // A token not known may be one retired (known tokens never are: retiring forgets
        // them), and then the parts below no longer know what they knew of it.
        let retirement = &self.retirement;
        let naming = self.tokens.name(r, |t| {
            retirement
                .as_ref()
                .is_some_and(|ret| !ret.floors.is_empty() && ret.retired(t))
        });
        if naming == Naming::Refused {
            self.give_up();
            return Err(());
        }
        Ok(naming.id())
    }

    /// Hands `r` (naming `t`) to the checkers (and the overlaps they measure).
    #[inline(always)]
    fn check(&mut self, r: &Record, t: Option<TokenId>) {
        self.checks.observe(r, t);
    }

    /// This monitor as a streamed history's sink.
    pub fn into_sink(self) -> Box<dyn Sink> {
        Box::new(self)
    }

    /// The monitor a streamed history handed its records to (`into_sink`).
    pub fn from_sink(sink: Box<dyn Sink>) -> Monitor {
        *sink
            .into_any()
            .downcast::<Monitor>()
            .expect("the sink is a monitor")
    }

    /// Feeds every record of a kept history.
    pub fn observe_all(&mut self, history: &History) {
        history.records.iter().for_each(|r| self.observe(r));
    }

    /// Tokens known: what grows with a run unless retired (each with its slot in every
    /// part's per-token vectors).
    pub fn token_entries(&self) -> usize {
        self.tokens.len()
    }

    /// (times tokens were retired, most tokens known at once); zeros when
    /// the monitor keeps every token.
    pub fn retirement_stats(&self) -> (u64, usize) {
        self.retirement
            .as_ref()
            .map_or((0, 0), |r| (r.rounds, r.peak_entries))
    }

    /// Whether a record named a retired token (the judgement is then void).
    pub fn in_doubt(&self) -> bool {
        self.doubt
    }

    /// Stops judging: nothing kept can be trusted to be the kept history's state.
    fn give_up(&mut self) {
        let props: Vec<Property> = Vec::new();
        *self = Monitor {
            doubt: true,
            ..Monitor::new(&props, 0)
        };
    }

    /// Retires every token of a counted prefix below the lowest one still in play (held or
    /// kept on a node) and below the highest one kept: the highest is the client's latest,
    /// whose attempt may still be under way.
    fn retire(&mut self) {
        let Some(mut ret) = self.retirement.take() else {
            return;
        };
        // prefix -> (highest N kept, lowest N in play).
        let mut seen: IndexMap<&[u8], (u64, u64), FxBuildHasher> = IndexMap::default();
        for (p, n) in self.tokens.iter().filter_map(|(_, t)| counted(t)) {
            let e = seen.entry(p).or_insert((n, u64::MAX));
            e.0 = e.0.max(n);
        }
        let live = self.hazards.live_tokens().map(|id| self.tokens.token(id));
        for (p, n) in live.filter_map(|t| counted(t)) {
            let e = seen.entry(p).or_insert((n, n));
            e.0 = e.0.max(n);
            e.1 = e.1.min(n);
        }
        for (p, (highest, lowest_live)) in seen {
            let floor = lowest_live.min(highest);
            match ret.floors.get_mut(p) {
                Some(f) => *f = (*f).max(floor),
                None => {
                    ret.floors.insert(Bytes::from_slice(p), floor);
                }
            }
        }
        let dead: Vec<TokenId> = self
            .tokens
            .iter()
            .filter(|(_, t)| ret.retired(t))
            .map(|(id, _)| id)
            .collect();
        self.checks.forget(&dead);
        self.margins.forget(&dead);
        self.hazards.forget(&dead);
        self.tokens.forget(&dead);
        ret.next_at = ret.first_at.max(2 * self.token_entries());
        ret.rounds += 1;
        self.retirement = Some(ret);
    }

    /// Estimated bytes this monitor keeps: what a streamed run's memory budget counts.
    pub fn retained_bytes(&self) -> u64 {
        self.tokens.retained_bytes()
            + self.checks.retained_bytes()
            + self.margins.retained_bytes()
            + self.hazards.retained_bytes()
    }

    pub fn finish(self) -> Judgement {
        Judgement {
            overlaps_ns: self.checks.overlaps_ns(),
            checks: self.checks,
            acquisitions: self.acquisitions,
            margins: self.margins.tally(),
            hazards: Hazards::of(&self.hazards.finish()),
            doubt: self.doubt,
        }
    }
}

impl Sink for Monitor {
    #[inline]
    fn observe(&mut self, r: &Record) -> Option<u64> {
        Monitor::observe(self, r);
        self.records
            .is_multiple_of(HOUSEKEEPING_EVERY)
            .then(|| self.retained_bytes())
    }

    fn retained_bytes(&self) -> u64 {
        Monitor::retained_bytes(self)
    }

    fn clone_box(&self) -> Box<dyn Sink> {
        Box::new(self.clone())
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{CheckConfig, check_all};
    use crate::history::Removal;

    fn p(i: u32) -> ProcId {
        ProcId(i)
    }
    fn tok(s: &str) -> Bytes {
        Bytes::from_slice(s.as_bytes())
    }
    fn name(p: ProcId) -> String {
        format!("c{}", p.0)
    }
    const ALL: [Property; 6] = Property::ALL;

    /// Client `c` (proc c) takes the lock with token `c-n` on node 0 and lets it go: every
    /// record a round of `set-px-cad` leaves.
    fn round(c: u32, n: u64, at_ms: u64) -> Vec<Record> {
        let t = tok(&format!("c{c}-{n}"));
        let at = |d: u64| SimTime::from_ms(at_ms + d);
        let r = |d: u64, proc: u32, obs: Observation| Record {
            at: at(d),
            proc: p(proc),
            obs,
        };
        vec![
            r(
                0,
                c,
                Observation::Attempt {
                    lock: 0,
                    token: t.clone(),
                },
            ),
            r(
                1,
                0,
                Observation::KeyWritten {
                    key: tok("lock"),
                    value: t.clone(),
                    expire_at_ms: Some(30),
                    by: Some(p(c)),
                },
            ),
            r(
                2,
                c,
                Observation::Acquired {
                    lock: 0,
                    token: t.clone(),
                    fence: None,
                    validity_ns: Some(30_000_000),
                    believed_until: Some(at(30)),
                },
            ),
            r(
                3,
                c,
                Observation::Released {
                    lock: 0,
                    token: t.clone(),
                },
            ),
            r(
                4,
                0,
                Observation::KeyRemoved {
                    key: tok("lock"),
                    value: t,
                    how: Removal::Del,
                    by: Some(p(c)),
                },
            ),
        ]
    }

    fn history(records: &[Record]) -> History {
        let mut h = History::default();
        for r in records {
            h.push(r.at, r.proc, r.obs.clone());
        }
        h
    }

    /// What a kept history's checkers say, and what a streamed, retiring monitor says (or
    /// `None` if it fell into doubt).
    fn both_ways(records: &[Record]) -> (Vec<Violation>, Option<Vec<Violation>>) {
        let end = records.last().map_or(SimTime::ZERO, |r| r.at);
        let cfg = CheckConfig {
            liveness_bound_ns: 1_000_000_000,
            release_within_ns: 1_000_000_000,
            end,
        };
        let kept = check_all(&history(records), &ALL, &cfg, &name);
        let mut m = Monitor::new(&ALL, cfg.liveness_bound_ns).retiring(1);
        records.iter().for_each(|r| m.observe(r));
        let judged = m.finish();
        let streamed =
            (!judged.doubt).then(|| judged.violations(end, &name, &|l| format!("lock {l}")));
        (kept, streamed)
    }

    /// Rounds of clients 1 and 2 taking turns, `n` each.
    fn turns(n: u64) -> Vec<Record> {
        (0..n)
            .flat_map(|i| round(1 + (i % 2) as u32, i / 2, i * 10))
            .collect()
    }

    #[test]
    fn a_streamed_monitor_retires_tokens_and_still_judges_as_the_kept_history() {
        let records = turns(2_000);
        let mut m = Monitor::new(&ALL, 1_000_000_000).retiring(256);
        records.iter().for_each(|r| m.observe(r));
        let (rounds, peak) = m.retirement_stats();
        assert!(rounds > 0 && !m.in_doubt());
        // 2,000 rounds name 2,000 tokens; the monitor never kept more than its threshold
        // and what one housekeeping interval adds.
        assert!(peak <= 256 + 3 * HOUSEKEEPING_EVERY as usize, "{peak}");
        let (kept, streamed) = both_ways(&records);
        assert_eq!(kept, Vec::new());
        assert_eq!(streamed, Some(kept));
    }

    #[test]
    fn a_record_naming_a_retired_token_puts_the_monitor_in_doubt() {
        // Client 2 deletes client 1's long-gone key: a foreign unlock the kept history
        // catches; a monitor that forgot the token's owner must not call the run clean.
        let mut records = turns(2_000);
        let at = records.last().expect("records").at.plus_ns(1_000_000);
        records.push(Record {
            at,
            proc: p(0),
            obs: Observation::KeyRemoved {
                key: tok("lock"),
                value: tok("c1-3"),
                how: Removal::Del,
                by: Some(p(2)),
            },
        });
        let (kept, streamed) = both_ways(&records);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].property, Property::ForeignUnlock);
        assert_eq!(streamed, None, "in doubt, not judged");
    }

    #[test]
    fn streamed_checkers_still_fail_on_violating_histories() {
        // Client 2 acquires while client 1 holds (mutual exclusion), after many clean
        // rounds (so tokens were retired), and deletes client 1's key (foreign unlock).
        let mut records = turns(1_000);
        let t0 = records.last().expect("records").at.plus_ns(1_000_000);
        let at = |ms: u64| t0.plus_ns(ms * 1_000_000);
        let mut late = round(1, 900, 0);
        late.truncate(3); // written and acquired, never released
        for (i, r) in late.iter_mut().enumerate() {
            r.at = at(i as u64);
        }
        records.extend(late);
        records.push(Record {
            at: at(5),
            proc: p(2),
            obs: Observation::Acquired {
                lock: 0,
                token: tok("c2-900"),
                fence: None,
                validity_ns: None,
                believed_until: None,
            },
        });
        records.push(Record {
            at: at(6),
            proc: p(0),
            obs: Observation::KeyRemoved {
                key: tok("lock"),
                value: tok("c1-900"),
                how: Removal::Del,
                by: Some(p(2)),
            },
        });
        let (kept, streamed) = both_ways(&records);
        let props: Vec<Property> = kept.iter().map(|v| v.property).collect();
        assert_eq!(
            props,
            vec![Property::MutualExclusion, Property::ForeignUnlock]
        );
        assert_eq!(streamed, Some(kept));
    }

    #[test]
    fn a_streamed_history_counts_what_its_monitor_keeps_against_the_budget() {
        // Without retiring, the tokens pile up in the monitor and the budget sees them;
        // with retiring, the same records stay under it.
        let records = turns(4_000);
        let budget = 64 << 10;
        let run = |m: Monitor| {
            let mut h = History::with_budget(budget);
            h.stream_into(m.into_sink());
            let mut over = false;
            for r in &records {
                h.push(r.at, r.proc, r.obs.clone());
                over |= h.over_budget();
            }
            assert!(h.records.is_empty());
            over
        };
        assert!(run(Monitor::new(&ALL, 1_000_000_000)));
        assert!(!run(Monitor::new(&ALL, 1_000_000_000).retiring(256)));
    }

    #[test]
    fn only_canonical_counted_tokens_are_split() {
        assert_eq!(counted(b"c1-0"), Some((&b"c1"[..], 0)));
        assert_eq!(counted(b"a-b-17"), Some((&b"a-b"[..], 17)));
        assert_eq!(counted(b"c1-07"), None);
        assert_eq!(counted(b"c1-"), None);
        assert_eq!(counted(b"c1:1"), None);
        assert_eq!(counted(b"c1-99999999999999999999"), None);
    }
}
