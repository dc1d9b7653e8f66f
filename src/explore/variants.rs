//! A model's variants (`variants:` in the model, `scenario::variants`) run on one seed: the
//! same seed gives the same fault schedule and network draws (every source of randomness
//! has its own stream), so what differs is what the variant changed.

use crate::scenario::Scenario;
use crate::sim::{TraceMode, World};

use super::{RunOutcome, run_world};

/// One variant's run.
pub struct VariantRun {
    pub name: String,
    /// The model's sentence about it (`note:`).
    pub note: Option<String>,
    pub sc: Scenario,
    pub world: World,
    pub outcome: RunOutcome,
}

/// Runs every variant of `sc` on `seed` (traced, for pictures). A variant that no longer
/// loads is left out: `scenario::load_str` checked each when the model was read.
pub fn run_variants(sc: &Scenario, seed: u64) -> Vec<VariantRun> {
    sc.variants
        .iter()
        .filter_map(|v| {
            let vsc = crate::scenario::load_str(&sc.name, &sc.path, &v.text).ok()?;
            let (outcome, world) = run_world(&vsc, seed, TraceMode::Full);
            Some(VariantRun {
                name: v.name.clone(),
                note: v.note.clone(),
                sc: vsc,
                world,
                outcome,
            })
        })
        .collect()
}

/// Where two runs of one seed part: the instant of the first record in which their histories
/// differ (what the stepper shows differs from there on), or `None` when they are the same
/// record for record.
pub fn parts_at(a: &World, b: &World) -> Option<crate::time::SimTime> {
    let (ra, rb) = (&a.history.records, &b.history.records);
    match ra.iter().zip(rb).find(|(x, y)| x != y) {
        Some((x, y)) => Some(x.at.min(y.at)),
        // One is a prefix of the other: they part at the first record only one has.
        None => ra.get(rb.len()).or_else(|| rb.get(ra.len())).map(|r| r.at),
    }
}

/// When the first fault of a run opened.
pub fn first_fault(w: &World) -> Option<crate::time::SimTime> {
    w.applied_faults.iter().map(|f| f.at).min()
}
