//! `search MODEL`: a search for a violation that moves the model's drawn faults toward the
//! runs that came closest to breaking (src/explore/search.rs; docs/rates.md).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Ctx, Outcome, bad_input, exit_with, out, program_for_replay, save_found};
use crate::explore::search as s;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: crate::cli::ModelArg,
    /// Most runs, starting points included; spending it without a violation exits 0 with
    /// the closest approach.
    #[arg(long, default_value_t = s::DEFAULT_BUDGET_RUNS,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    budget: u64,
    /// Seeds run first as a sweep runs them (their schedules are the starting points).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    start_seeds: u64,
    /// Seed of the search's own draws (which fault moves, by how much).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the scripted model of a violation here (default: print it).
    #[arg(long)]
    out: Option<PathBuf>,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    let (sc, text) = match ctx.load_model(&a.model) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let cfg = s::SearchConfig {
        budget_runs: a.budget,
        start_seeds: a.start_seeds,
        seed: a.seed,
    };
    // Wall time of the search, for the report: outside any simulated run.
    #[allow(clippy::disallowed_methods)]
    let wall = std::time::Instant::now();
    let mut r = match s::search(&sc, &text, &cfg) {
        Ok(r) => r,
        Err(e) => return bad_input(&e),
    };
    r.wall_s = wall.elapsed().as_secs_f64();
    let saved = match save_found(
        a.out.as_deref(),
        r.found.as_ref().map(|f| f.model_text.as_str()),
    ) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if a.json {
        out(&format!("{}\n", s::report_json(&r)));
    } else {
        out(&s::report_text(&r, saved.as_deref(), &program_for_replay()));
    }
    // A spent budget is not inconclusive (the search said how far it went); runs cut short
    // by a budget are.
    exit_with(Outcome::of(
        r.found.is_some(),
        r.inconclusive_runs > 0,
        false,
    ))
}
