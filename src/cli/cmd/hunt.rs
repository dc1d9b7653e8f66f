//! `hunt MODEL`: seeds to the first violation, from several starting points.

use std::process::ExitCode;

use crate::cli::{self, Ctx, exit_for, out};
use crate::explore;
use crate::scenario::adversary::AdversaryStyle;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: crate::cli::ModelArg,
    /// Independent hunts, starting at seeds 0, 1e6, 2e6, ... (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    repeats: u64,
    /// Give up a hunt after this many seeds (1..=1000000000).
    #[arg(long, default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=cli::MAX_SWEEP_SEEDS))]
    max_seeds: u64,
    /// Worker threads, 1..=256.
    #[arg(long, default_value_t = cli::default_jobs(), value_parser = cli::parse_jobs)]
    jobs: usize,
    /// Time the model's random faults uniformly, as a swarm, or at protocol triggers
    /// (same kinds and magnitudes; for the efficiency table in docs/efficiency.md).
    #[arg(long, value_enum, default_value = "as-written")]
    adversary: AdversaryStyle,
    /// K times fewer faults in every style (each random fault and trigger firing applies
    /// with chance 1/K): the sparse baseline of docs/efficiency.md.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    sparser: u32,
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    let (sc, _) = match ctx.load_model(&a.model) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let sc = match super::replay::timed(&sc, a.sparser, a.adversary) {
        Ok(s) => s,
        Err(code) => return code,
    };
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.jobs)
        .build()
        .expect("thread pool");
    // Wall time of the hunts, for people: outside any simulated run.
    #[allow(clippy::disallowed_methods)]
    let wall = std::time::Instant::now();
    let max_seeds = a.max_seeds;
    let results: Vec<explore::HuntResult> = pool.install(|| {
        (0..a.repeats)
            .into_par_iter()
            .map(|r| explore::hunt(&sc, r * 1_000_000, max_seeds))
            .collect()
    });
    let wall_s = wall.elapsed().as_secs_f64();
    let adversary = clap::ValueEnum::to_possible_value(&a.adversary)
        .expect("no skipped variants")
        .get_name()
        .to_string();
    out(&cli::hunt_text(
        &sc, &results, max_seeds, &adversary, a.sparser, wall_s,
    ));
    exit_for(results.iter().any(|r| r.first_violating_seed.is_some()))
}
