//! The same faults, timed three ways: how a model's fault budget is spent for the
//! bug-finding efficiency table (`distlock-sim hunt --adversary`).
//!
//! - `uniform`: every random fault (the swarm's included) at uniformly random times;
//! - `swarm`: the same faults as a swarm, so each seed draws which kinds are on and how hard;
//! - `triggered`: each fault kind that has a protocol trigger fires at the protocol event
//!   instead (a client pause right after it acquires — or right after it reads, when the
//!   model checks `resource_safety`; right before the DEL of a GET-then-DEL unlock; right
//!   before a consensus client's write — a node's clock step or crash right after it grants);
//!   a client's partition right after it acquires; kinds without a trigger (node pauses
//!   and partitions) stay random.
//!
//! Kinds and magnitudes are the model's own in all three: only the timing changes, which
//! is what makes the comparison fair.

use super::clients::ClientKind;
use super::errors::Invalid;
use super::faults::{Event, FaultEntry, KindSpec, MessageSpec, On, Span, When};
use super::model::{ProcKind, Scenario};
use super::schema::SwarmSpec;
use super::units::{Bounded, Dur, DurRange, Name};
use crate::check::Property;
use crate::client::Algorithm;
use crate::time::NS_PER_MS;

/// How long after a grant a triggered crash waits when the client has more to do (its
/// `WAIT`'s 200 ms timeout or its `INCR` a millisecond later): a delay drawn in this range.
const CRASH_AFTER_FOLLOW_UP: DurRange = DurRange {
    min: Dur(NS_PER_MS),
    max: Dur(300 * NS_PER_MS),
};

/// How a model's random faults are timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AdversaryStyle {
    /// The model as written.
    AsWritten,
    Uniform,
    Swarm,
    Triggered,
}

impl Scenario {
    /// This model with its random faults timed in `style`. Scripted faults and declared
    /// triggers are kept in every style but `uniform`, which drops triggers.
    pub fn with_adversary(&self, style: AdversaryStyle) -> Result<Scenario, Invalid> {
        if style == AdversaryStyle::AsWritten {
            return Ok(self.clone());
        }
        let mut m = self.model.clone();
        let mut all: Vec<FaultEntry> = std::mem::take(&mut m.random_faults);
        let enable_ppm = m.swarm.as_ref().and_then(|s| s.enable_ppm);
        if let Some(sw) = m.swarm.take() {
            all.extend(sw.faults);
        }
        match style {
            AdversaryStyle::AsWritten => unreachable!("returned above"),
            AdversaryStyle::Uniform => {
                m.random_faults = all;
                m.triggers.clear();
            }
            AdversaryStyle::Swarm => {
                if !all.is_empty() {
                    m.swarm = Some(SwarmSpec {
                        enable_ppm,
                        faults: all,
                    });
                }
                m.triggers.clear();
            }
            AdversaryStyle::Triggered => {
                for f in all {
                    match self.trigger_for(&f) {
                        Some(mut t) => {
                            // The same fault budget: as many firings as the random fault
                            // would have had in a run, on average.
                            if let Some(max) = t.max_mut() {
                                *max = Some(Bounded(self.expected_firings(&f)));
                            }
                            m.triggers.push(t)
                        }
                        None => m.random_faults.push(f),
                    }
                }
            }
        }
        let mut sc = Scenario::new(self.name.clone(), self.path.clone(), m)?;
        let flag = clap::ValueEnum::to_possible_value(&style).expect("no skipped variants");
        sc.fault_keep = self.fault_keep;
        sc.replay_flags = format!("{} --adversary {}", self.replay_flags, flag.get_name());
        Ok(sc)
    }

    /// This model with `k` times fewer faults, alike for every style: each random fault (the
    /// swarm's too) and each trigger firing applies with chance 1/k, the rest of the schedule
    /// drawn as before — the sparse baseline of the efficiency table.
    pub fn sparser(&self, k: u32) -> Scenario {
        let mut sc = self.clone();
        if k > 1 {
            sc.fault_keep = crate::rng::Ratio::new(1, k).expect("1/k with k > 1");
            sc.replay_flags = format!("{} --sparser {k}", self.replay_flags);
        }
        sc
    }

    /// How many times a random fault fires in a run on average: for each target, the run's
    /// duration over the mean of its `every` range (at least once in all).
    fn expected_firings(&self, f: &FaultEntry) -> i64 {
        let targets = f.targets();
        let every = f
            .every()
            .map_or(DurRange::fixed(self.model.duration.value), |e| e.value);
        let mean_ns = (every.min.ns() / 2 + every.max.ns() / 2).max(1);
        let per_target = self.model.duration.ns() / mean_ns;
        (per_target.saturating_mul(targets.len() as u64) as i64).clamp(1, 1_000_000)
    }

    fn client_names(&self) -> Vec<Name> {
        self.procs
            .iter()
            .filter(|(_, k)| *k == ProcKind::Client)
            .map(|(n, _)| Name::new(n.clone()))
            .collect()
    }

    /// The algorithm all of `clients` run, when they run the same one.
    fn common_client_kind(&self, clients: &[Name]) -> Option<ClientKind> {
        let mut kinds = clients.iter().map(|c| {
            self.model
                .clients
                .iter()
                .find_map(|g| g.members().contains(c).then_some(g.kind()))
        });
        let first = kinds.next()??;
        kinds.all(|k| k == Some(first)).then_some(first)
    }

    fn kind_of(&self, n: &Name) -> Option<ProcKind> {
        self.procs.iter().find(|(p, _)| *p == n.0).map(|(_, k)| *k)
    }

    /// The protocol trigger that fires this random fault's kind at its worst moment, if
    /// there is one for every target: the same entry, its kind and magnitude kept, struck
    /// `On` that event instead of `Every`.
    fn trigger_for(&self, f: &FaultEntry) -> Option<FaultEntry> {
        let all = |targets: &[Name], k: ProcKind| {
            !targets.is_empty() && targets.iter().all(|t| self.kind_of(t) == Some(k))
        };
        let Span::Each(targets) = &f.span else {
            return None;
        };
        let on = |event| {
            Some(FaultEntry {
                when: When::On(On {
                    event,
                    chance_ppm: None,
                    max: None,
                }),
                span: f.span.clone(),
                kind: f.kind.clone(),
            })
        };
        match &f.kind {
            // Where a client's pause does harm depends on what it does next: a GET-then-DEL
            // unlock needs it between the GET and the DEL; a consensus client (which hears of
            // its expired session as soon as it resumes) needs it between deciding to write and
            // the write; a lost update otherwise needs it between read and write; a second
            // holder needs it anywhere after acquiring.
            KindSpec::Pause { .. } if all(targets, ProcKind::Client) => {
                let kind = self.common_client_kind(targets);
                let resource_safety = self
                    .model
                    .check
                    .iter()
                    .any(|p| p.0 == Property::ResourceSafety);
                on(match kind {
                    Some(ClientKind::Single(Algorithm::SetPxGetDel)) => {
                        Event::BeforeSend(MessageSpec::Del)
                    }
                    Some(ClientKind::Consensus) if resource_safety => {
                        Event::BeforeSend(MessageSpec::ResourceWrite)
                    }
                    _ if resource_safety => Event::AfterRead,
                    _ => Event::AfterAcquire,
                })
            }
            KindSpec::ClockStep { .. } if all(targets, ProcKind::Redis) => on(Event::AfterGrant {
                after: None,
                isolate_from: Vec::new(),
            }),
            KindSpec::Crash {
                down,
                keep_data,
                host,
            } if all(targets, ProcKind::Redis) => {
                // Cut from its replicas first, so the write in flight is lost with it.
                let isolate_from = self
                    .model
                    .nodes
                    .iter()
                    .filter(|n| {
                        n.replica_of
                            .as_ref()
                            .is_some_and(|m| targets.iter().any(|t| t.0 == m.0))
                    })
                    .map(|n| n.name.clone())
                    .collect();
                // Clients that follow their SET with a WAIT or a fencing INCR need the crash
                // after those: otherwise the WAIT fails (no lock) or the INCR never happens.
                let follow_up = matches!(
                    self.common_client_kind(&self.client_names()),
                    Some(ClientKind::Single(
                        Algorithm::SetPxWaitCad | Algorithm::SetPxCadFencing
                    ))
                );
                let mut t = on(Event::AfterGrant {
                    after: follow_up.then_some(CRASH_AFTER_FOLLOW_UP),
                    isolate_from,
                })?;
                // Restarted after the shortest downtime the random entry draws.
                t.kind = KindSpec::Crash {
                    down: down.map(|d| DurRange::fixed(d.min)),
                    keep_data: *keep_data,
                    host: *host,
                };
                Some(t)
            }
            // Cut off right after acquiring: it cannot renew, extend or unlock.
            KindSpec::Isolate { .. } if all(targets, ProcKind::Client) => on(Event::AfterAcquire),
            _ => None,
        }
    }
}
