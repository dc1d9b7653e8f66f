//! The same faults, timed three ways: how a model's fault budget is spent for the
//! bug-finding efficiency table (`distlock-sim hunt --adversary`).
//!
//! - `uniform`: every random fault (the swarm's included) at uniformly random times;
//! - `swarm`: the same faults as a swarm, so each seed draws which kinds are on and how hard;
//! - `triggered`: each fault kind that has a protocol trigger fires at the protocol event
//!   instead (a client pause right after it acquires — or right after it reads, when the
//!   model checks `resource_safety` — a node's clock step or crash right after it grants);
//!   a client's partition right after it acquires; kinds without a trigger (node pauses
//!   and partitions) stay random.
//!
//! Kinds and magnitudes are the model's own in all three: only the timing changes, which
//! is what makes the comparison fair.

use super::model::{Invalid, ProcKind, RandomFaultSpec, Scenario, SwarmSpec, TriggerSpec};
use super::units::Name;
use crate::check::Property;

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
        let mut all: Vec<RandomFaultSpec> = std::mem::take(&mut m.random_faults);
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
                        Some(t) => m.triggers.push(t),
                        None => m.random_faults.push(f),
                    }
                }
            }
        }
        let mut sc = Scenario::new(self.name.clone(), self.path.clone(), m)?;
        let flag = clap::ValueEnum::to_possible_value(&style).expect("no skipped variants");
        sc.replay_flags = format!(" --adversary {}", flag.get_name());
        Ok(sc)
    }

    fn kind_of(&self, n: &Name) -> Option<ProcKind> {
        self.procs.iter().find(|(p, _)| *p == n.0).map(|(_, k)| *k)
    }

    /// The protocol trigger that fires this random fault's kind at its worst moment, if
    /// there is one for every target.
    fn trigger_for(&self, f: &RandomFaultSpec) -> Option<TriggerSpec> {
        let all = |targets: &[Name], k: ProcKind| {
            !targets.is_empty() && targets.iter().all(|t| self.kind_of(t) == Some(k))
        };
        match f {
            // A lost update needs the pause between read and write; a second holder needs it
            // anywhere after acquiring.
            RandomFaultSpec::Pause {
                targets, duration, ..
            } if all(targets, ProcKind::Client) => {
                let targets = targets.clone();
                let duration = *duration;
                Some(
                    if self
                        .model
                        .check
                        .iter()
                        .any(|p| p.0 == Property::ResourceSafety)
                    {
                        TriggerSpec::PauseAfterRead {
                            targets,
                            duration,
                            chance_ppm: None,
                            max: None,
                        }
                    } else {
                        TriggerSpec::PauseAfterAcquire {
                            targets,
                            duration,
                            chance_ppm: None,
                            max: None,
                        }
                    },
                )
            }
            RandomFaultSpec::ClockStep { targets, delta, .. } if all(targets, ProcKind::Redis) => {
                Some(TriggerSpec::ClockStepAfterGrant {
                    targets: targets.clone(),
                    delta: *delta,
                    chance_ppm: None,
                    max: None,
                })
            }
            RandomFaultSpec::Crash {
                targets,
                down,
                keep_data,
                ..
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
                Some(TriggerSpec::CrashAfterGrant {
                    targets: targets.clone(),
                    isolate_from,
                    restart_after: Some(down.min),
                    keep_data: *keep_data,
                    chance_ppm: None,
                    max: None,
                })
            }
            // Cut off right after acquiring: it cannot renew, extend or unlock.
            RandomFaultSpec::Partition {
                targets, duration, ..
            } if all(targets, ProcKind::Client) => Some(TriggerSpec::PartitionAfterAcquire {
                targets: targets.clone(),
                duration: *duration,
                chance_ppm: None,
                max: None,
            }),
            _ => None,
        }
    }
}
