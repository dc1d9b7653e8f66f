//! A model's variants (`variants:` in the model, `scenario::variants`) run on one seed: the
//! same seed gives the same fault schedule and network draws (every source of randomness
//! has its own stream), so what differs is what the variant changed.

use crate::scenario::Scenario;
use crate::sim::{TraceMode, World};

use super::{RunOutcome, run_world};

/// One variant's run.
pub struct VariantRun {
    pub name: String,
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
                sc: vsc,
                world,
                outcome,
            })
        })
        .collect()
}
