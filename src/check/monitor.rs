//! Judging a run as it goes: every checker, detector and measure a run's outcome carries,
//! fed each record as the loop produces it, so a run need not keep its history. A sweep's
//! memory is then what these keep (bounded by the clients, keys and tokens in play), not
//! ~10 bytes per event; `replay` and the reports, which draw the whole history, still keep
//! it and feed the same monitor from it afterwards (`Monitor::observe_all`).

use super::margin::{Margin, Margins};
use super::witness::{Hazards, Scan};
use super::{Checks, Overlaps, Property, Violation};
use crate::history::{History, Observation, Record};
use crate::time::{ProcId, SimTime};

/// Everything `explore::RunOutcome` reports about a run, computed record by record.
#[derive(Clone)]
pub struct Monitor {
    checks: Checks,
    overlaps: Overlaps,
    margins: Margins,
    hazards: Scan,
    acquisitions: u64,
}

/// What a monitor found over a whole run.
#[derive(Clone)]
pub struct Judgement {
    pub checks: Checks,
    pub acquisitions: u64,
    /// (longest single overlap, total time with two or more holders), in ns.
    pub overlaps_ns: (u64, u64),
    pub margins: Vec<Margin>,
    pub hazards: Hazards,
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

impl Monitor {
    /// A monitor for the properties `props` (`liveness_bound_ns` for `liveness`).
    pub fn new(props: &[Property], liveness_bound_ns: u64) -> Monitor {
        Monitor {
            checks: Checks::new(props, liveness_bound_ns),
            overlaps: Overlaps::default(),
            margins: Margins::default(),
            hazards: Scan::default(),
            acquisitions: 0,
        }
    }

    /// Feeds one record (in history order).
    #[inline]
    pub fn observe(&mut self, r: &Record) {
        if matches!(r.obs, Observation::Acquired { .. }) {
            self.acquisitions += 1;
        }
        self.checks.observe(r);
        self.overlaps.observe(r);
        self.margins.observe(r);
        self.hazards.observe(r);
    }

    /// Feeds every record of a kept history.
    pub fn observe_all(&mut self, history: &History) {
        history.records.iter().for_each(|r| self.observe(r));
    }

    /// Estimated bytes this monitor keeps: what a streamed run's memory budget counts.
    pub fn retained_bytes(&self) -> u64 {
        self.checks.retained_bytes() + self.margins.retained_bytes() + self.hazards.retained_bytes()
    }

    pub fn finish(self) -> Judgement {
        Judgement {
            checks: self.checks,
            acquisitions: self.acquisitions,
            overlaps_ns: self.overlaps.finish(),
            margins: self.margins.finish(),
            hazards: Hazards::of(&self.hazards.finish()),
        }
    }
}
