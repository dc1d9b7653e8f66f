//! The closed fault vocabulary the loop knows how to apply.

use crate::rng::Ratio;
use crate::time::{ProcId, SimTime};

/// One fault action, applied by the loop at a true time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// Freeze a process: its messages and timers queue until `Resume`.
    Pause(ProcId),
    Resume(ProcId),
    /// The process dies: volatile state, queued messages and timers are lost.
    Crash(ProcId),
    /// Bring a crashed process back; `keep_data` says whether durable state survived.
    Restart {
        proc: ProcId,
        keep_data: bool,
    },
    /// Step the wall clock of a process's node by `delta_ms` (negative = back).
    ClockStep {
        proc: ProcId,
        delta_ms: i64,
    },
    /// Change a node's clock drift rate.
    Drift {
        proc: ProcId,
        drift_ppm: i64,
    },
    /// Block (or, with `blocked: false`, heal) every directed link from a member of `from`
    /// to a member of `to`; symmetric partitions list both directions.
    Partition {
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        blocked: bool,
    },
    /// Add latency to links from `from` to `to` (0 ends the spike).
    LatencySpike {
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        extra_ns: u64,
    },
    /// Set the loss rate of links from `from` to `to`.
    Loss {
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        loss: Ratio,
    },
}

impl FaultAction {
    /// Cut `p` off from every other of the `n_procs` processes, both ways, from `start`
    /// until `end`: the four partition actions, ordered by time.
    pub fn isolation(
        p: ProcId,
        n_procs: u32,
        start: SimTime,
        end: SimTime,
    ) -> [(SimTime, FaultAction); 4] {
        let others: Vec<ProcId> = (0..n_procs).map(ProcId).filter(|q| *q != p).collect();
        let cut = |blocked| FaultAction::Partition {
            from: vec![p],
            to: others.clone(),
            blocked,
        };
        let cut_in = |blocked| FaultAction::Partition {
            from: others.clone(),
            to: vec![p],
            blocked,
        };
        [
            (start, cut(true)),
            (start, cut_in(true)),
            (end, cut(false)),
            (end, cut_in(false)),
        ]
    }
}
