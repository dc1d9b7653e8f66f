//! Triggered adversaries: faults fired by protocol events instead of by the clock. Uniform
//! random faults need thousands of seeds to hit "pause right after acquiring"; an adversary
//! that reacts to the protocol hits it at once.

use crate::history::Observation;
use crate::proto::{Command, Msg};
use crate::rng::{Prng, Ratio};
use crate::sim::fault::{Fault, FaultKind};
use crate::time::{ProcId, SimTime};

/// Messages a `PauseBeforeSend` trigger waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendKind {
    /// The write of a critical section, to the protected resource.
    ResourceWrite,
    /// A `DEL` to a Redis node (a naive unlock, or the second step of GET-then-DEL).
    Del,
}

impl SendKind {
    pub fn matches(self, msg: &Msg) -> bool {
        match self {
            SendKind::ResourceWrite => matches!(msg, Msg::ResourceWrite { .. }),
            SendKind::Del => matches!(
                msg,
                Msg::Request {
                    cmd: Command::Del(_),
                    ..
                }
            ),
        }
    }
}

/// What sets a trigger off, and what it does.
#[derive(Clone, Debug)]
pub enum TriggerKind {
    /// A client in `targets` is about to send a `message`: pause it for a duration in
    /// [min, max] ns first, so the message leaves when it resumes — the stop-the-world pause
    /// between deciding and acting (Kleppmann's GC pause before the write).
    PauseBeforeSend {
        targets: Vec<ProcId>,
        message: SendKind,
        pause_ns: (u64, u64),
    },
    /// A client in `targets` reports it acquired: pause it for a duration in [min, max] ns.
    PauseAfterAcquire {
        targets: Vec<ProcId>,
        pause_ns: (u64, u64),
    },
    /// The resource serves a read to a client in `targets`: pause that client for a duration
    /// in [min, max] ns, between the read and the write it bases on it.
    PauseAfterRead {
        targets: Vec<ProcId>,
        pause_ns: (u64, u64),
    },
    /// A client in `targets` reports it acquired: cut it off from every other process, both
    /// ways, for a duration in [min, max] ns.
    PartitionAfterAcquire {
        targets: Vec<ProcId>,
        cut_ns: (u64, u64),
    },
    /// A client in `targets` starts an attempt: add a delay in [min, max] ns to the links
    /// from `from` to it for `window_ns` (then back to none), so its replies arrive late.
    DelayRepliesAfterAttempt {
        targets: Vec<ProcId>,
        from: Vec<ProcId>,
        delay_ns: (u64, u64),
        window_ns: u64,
    },
    /// A node in `targets` stores a client's write (it granted a lock): step its wall clock
    /// by a delta in [min, max] ms.
    ClockStepAfterGrant {
        targets: Vec<ProcId>,
        delta_ms: (i64, i64),
    },
    /// A node in `targets` stores a client's write: cut it off from `isolate_from` at once
    /// (its replication stream in flight is lost) and crash it — the master that replied OK
    /// and died before replicating. With `after_ns`, both happen a delay in [min, max] ns
    /// later, once the client's next commands (its `WAIT`, its fencing `INCR`) have run.
    /// Restarted after `restart_after_ns` if given.
    CrashAfterGrant {
        targets: Vec<ProcId>,
        isolate_from: Vec<ProcId>,
        after_ns: Option<(u64, u64)>,
        restart_after_ns: Option<u64>,
        keep_data: bool,
        host_up: bool,
    },
}

#[derive(Clone, Debug)]
pub struct Trigger {
    pub kind: TriggerKind,
    /// Chance that a matching event fires it.
    pub chance: Ratio,
    /// At most this many firings per run.
    // Invariant: fired <= max_firings.
    pub max_firings: u32,
    pub fired: u32,
    /// A firing actually applies its fault with this chance (a thinned, sparser adversary:
    /// `--sparser K`); the firing counts either way, as a thinned random fault still takes
    /// its place in the schedule.
    pub keep: Ratio,
    pub rng: Prng,
}

impl Trigger {
    /// For a message `p` is about to send: the pause to put before it, if this trigger fires.
    pub fn react_send(&mut self, p: ProcId, msg: &Msg) -> Option<u64> {
        let TriggerKind::PauseBeforeSend {
            targets,
            message,
            pause_ns,
        } = &self.kind
        else {
            return None;
        };
        if self.fired >= self.max_firings
            || !targets.contains(&p)
            || !message.matches(msg)
            || !self.rng.chance(self.chance)
        {
            return None;
        }
        self.fired += 1;
        let d = self.rng.range_inclusive(pause_ns.0, pause_ns.1);
        self.kept().then_some(d)
    }

    /// Whether this firing applies its fault (see `keep`). No draw when every firing does, so
    /// unthinned runs draw exactly what they drew before thinning existed.
    fn kept(&mut self) -> bool {
        self.keep == Ratio::ALWAYS || self.rng.chance(self.keep)
    }

    /// The faults to apply now (and later) for an observation by `p` at `now`, if it fires.
    pub fn react(&mut self, now: SimTime, p: ProcId, obs: &Observation) -> Vec<Fault> {
        if self.fired >= self.max_firings {
            return Vec::new();
        }
        // The process the fault falls on: the observer, except for resource reads, which
        // the resource observes on behalf of the reading client.
        let mut subject = p;
        let matches = match (&self.kind, obs) {
            (TriggerKind::PauseAfterAcquire { targets, .. }, Observation::Acquired { .. })
            | (TriggerKind::PartitionAfterAcquire { targets, .. }, Observation::Acquired { .. })
            | (
                TriggerKind::DelayRepliesAfterAttempt { targets, .. },
                Observation::Attempt { .. },
            ) => targets.contains(&p),
            (
                TriggerKind::PauseAfterRead { targets, .. },
                Observation::ResourceRead {
                    client,
                    accepted: true,
                    ..
                },
            ) => {
                subject = *client;
                targets.contains(client)
            }
            (
                TriggerKind::ClockStepAfterGrant { targets, .. },
                Observation::KeyWritten { by: Some(_), .. },
            )
            | (
                TriggerKind::CrashAfterGrant { targets, .. },
                Observation::KeyWritten { by: Some(_), .. },
            ) => targets.contains(&p),
            _ => false,
        };
        if !matches || !self.rng.chance(self.chance) {
            return Vec::new();
        }
        self.fired += 1;
        let faults = self.faults(now, p, subject);
        if self.kept() { faults } else { Vec::new() }
    }

    /// What a firing does, drawn now.
    fn faults(&mut self, now: SimTime, p: ProcId, subject: ProcId) -> Vec<Fault> {
        match &self.kind {
            // Fired by `react_send`, never by an observation (`matches` is false above).
            TriggerKind::PauseBeforeSend { .. } => Vec::new(),
            TriggerKind::PauseAfterAcquire { pause_ns, .. }
            | TriggerKind::PauseAfterRead { pause_ns, .. } => {
                let d = self.rng.range_inclusive(pause_ns.0, pause_ns.1);
                vec![Fault::new(now, Some(d), FaultKind::Pause(subject))]
            }
            TriggerKind::PartitionAfterAcquire { cut_ns, .. } => {
                let d = self.rng.range_inclusive(cut_ns.0, cut_ns.1);
                vec![Fault::new(now, Some(d), FaultKind::Isolate(p))]
            }
            TriggerKind::DelayRepliesAfterAttempt {
                from,
                delay_ns,
                window_ns,
                ..
            } => {
                // The client's requests are already on their way; the replies are not sent
                // yet, so a spike applied now delays them all by the same amount.
                let d = self.rng.range_inclusive(delay_ns.0, delay_ns.1);
                vec![Fault::new(
                    now,
                    Some(*window_ns),
                    FaultKind::LatencySpike {
                        from: from.clone(),
                        to: vec![p],
                        extra_ns: d,
                    },
                )]
            }
            TriggerKind::ClockStepAfterGrant { delta_ms, .. } => {
                let d = self.rng.range_i64(delta_ms.0, delta_ms.1);
                vec![Fault::new(
                    now,
                    None,
                    FaultKind::ClockStep {
                        proc: p,
                        delta_ms: d,
                    },
                )]
            }
            TriggerKind::CrashAfterGrant {
                isolate_from,
                after_ns,
                restart_after_ns,
                keep_data,
                host_up,
                ..
            } => {
                let now = match after_ns {
                    Some((lo, hi)) => now.plus_ns(self.rng.range_inclusive(*lo, *hi)),
                    None => now,
                };
                // The cut stays until the restart, so the stream already in flight is lost.
                vec![
                    Fault::new(
                        now,
                        *restart_after_ns,
                        FaultKind::Partition {
                            from: vec![p],
                            to: isolate_from.clone(),
                            both_ways: false,
                        },
                    ),
                    Fault::new(
                        now,
                        *restart_after_ns,
                        FaultKind::Crash {
                            proc: p,
                            keep_data: *keep_data,
                            host_up: *host_up,
                        },
                    ),
                ]
            }
        }
    }
}
