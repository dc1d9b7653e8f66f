//! `run MODEL --seed N`: one seed's verdict, faults and timeline.

use std::process::ExitCode;

use crate::cli::{Ctx, exit_with, out, run_report};
use crate::explore;
use crate::view::timeline::Messages;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: crate::cli::ModelArg,
    /// The seed to run: it draws every random choice of the run (same model and seed, same run).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Run the seed twice and report the first event where the runs diverge.
    #[arg(long)]
    check_determinism: bool,
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    let (sc, _) = match ctx.load_model(&a.model) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if a.check_determinism {
        // One seed, checked as itself: `seed..seed + 1` would wrap at u64::MAX.
        let first = explore::determinism::check_seed(&sc, a.seed).err();
        let summary = explore::determinism::DeterminismSummary {
            seeds_run: 1,
            divergent_seeds: u64::from(first.is_some()),
            first,
        };
        return determinism_report(&sc, &summary);
    }
    let (text, outcome) = run_report(&sc, a.seed, Messages::None);
    out(&text);
    exit_with(outcome)
}

/// `--check-determinism`: every seed twice; exit 1 if any diverged.
pub(super) fn determinism_report(
    sc: &crate::scenario::Scenario,
    summary: &explore::determinism::DeterminismSummary,
) -> ExitCode {
    out(&format!(
        "model {}: {} seeds run twice, {} divergences\n",
        sc.name, summary.seeds_run, summary.divergent_seeds
    ));
    match &summary.first {
        Some(d) => {
            out(&format!("{d}\n"));
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    }
}
