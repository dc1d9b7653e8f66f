//! `explore MODEL`: every placement of up to K faults at the decision points of one run,
//! breadth-first (so the first violation is a shortest one), or with `--depth` the PCT-style
//! random mode with its bound (docs/explore.md).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Ctx, Outcome, bad_input, exit_with, out, program_for_replay, save_found};
use crate::explore::systematic as sys;
use crate::explore::threshold;
use crate::view::exploration;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: crate::cli::ModelArg,
    /// K: most faults per schedule (0..=4); not with --depth, which sets its own count.
    #[arg(long, default_value_t = 2, conflicts_with = "depth", value_parser = clap::value_parser!(u64).range(0..=sys::MAX_FAULTS as u64))]
    faults: u64,
    /// The seed of the run whose decision points are explored (its network and client
    /// randomness; the model's random faults are off).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Most runs to start (schedules and the probes collecting their points; default 20000),
    /// and as many again for --thresholds (default 200000 there); reaching it reports the
    /// search inconclusive (exit 3).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    budget: Option<u64>,
    /// Re-simulate every schedule from time 0 instead of resuming a clone (to measure what
    /// prefix sharing saves; results are the same).
    #[arg(long)]
    no_prefix_sharing: bool,
    /// Keep the model's own scripted faults in the world explored.
    #[arg(long)]
    keep_scripted: bool,
    /// A one-fault schedule opens a server's own fault (a node's crash, clock step or pause)
    /// before each of the server's events too, not only at the decision points; a client's
    /// faults and cuts always go before each of its events.
    #[arg(long)]
    every_offset: bool,
    /// PCT-style random mode: d faults at uniformly drawn decision points per run (1..=4).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=sys::MAX_FAULTS as u64))]
    depth: Option<u64>,
    /// Runs of the random mode (default: as many as 99 % confidence at its bound needs, at
    /// most 1000000); only with --depth.
    #[arg(long, requires = "depth", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    runs: Option<u64>,
    /// Write the scripted model of a violation here (default: print it).
    #[arg(long)]
    out: Option<PathBuf>,
    /// After the search: at every start of one fault, the magnitude at which the verdict
    /// flips, to 1 µs (clock steps to 1 ms), with the two replay commands either side
    /// (docs/explore.md, "Thresholds"). Not with --depth.
    #[arg(long, conflicts_with = "depth")]
    thresholds: bool,
    /// One JSON object instead of text (with --thresholds, then one line per flip and a
    /// summary line).
    #[arg(long)]
    json: bool,
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    let (sc, text) = match ctx.load_model(&a.model) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let cfg = sys::ExploreConfig {
        faults: a.faults as usize,
        seed: a.seed,
        budget_runs: a.budget.unwrap_or(sys::DEFAULT_BUDGET_RUNS),
        prefix_sharing: !a.no_prefix_sharing,
        keep_scripted: a.keep_scripted,
        every_offset: a.every_offset,
    };
    if let Some(d) = a.depth {
        // The runs 99 % confidence needs, unless told otherwise (bounded all the same).
        let probe = match sys::pct(&sc, cfg.seed, d as usize, 0) {
            Ok(r) => r,
            Err(e) => return bad_input(&e),
        };
        let n = a.runs.unwrap_or(if probe.runs_needed_99.is_finite() {
            (probe.runs_needed_99 as u64).clamp(1, 1_000_000)
        } else {
            0
        });
        #[allow(clippy::disallowed_methods)]
        let wall = std::time::Instant::now();
        let mut r = match sys::pct(&sc, cfg.seed, d as usize, n) {
            Ok(r) => r,
            Err(e) => return bad_input(&e),
        };
        r.wall_s = wall.elapsed().as_secs_f64();
        if a.json {
            out(&format!(
                "{}\n",
                serde_json::json!({
                    "model": r.model, "seed": r.seed, "depth": r.depth,
                    "decision_points": r.points, "max_menu": r.max_menu,
                    "p_per_run": r.p_per_run, "runs_needed_99": r.runs_needed_99,
                    "runs": r.runs, "violating_runs": r.violating_runs,
                    "confidence": r.confidence, "wall_s": r.wall_s,
                })
            ));
        } else {
            out(&exploration::pct_text(&r));
        }
        return exit_with(Outcome::of(
            r.violating_runs > 0,
            r.confidence < 0.99,
            r.points == 0,
        ));
    }
    #[allow(clippy::disallowed_methods)]
    let wall = std::time::Instant::now();
    let mut r = match sys::explore(&sc, &text, &cfg) {
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
        out(&format!("{}\n", exploration::report_json(&r)));
    } else {
        out(&exploration::report_text(
            &r,
            saved.as_deref(),
            &program_for_replay(),
        ));
    }
    if !a.thresholds {
        return exit_with(Outcome::of(
            r.found.is_some(),
            r.inconclusive(),
            r.vacuous(),
        ));
    }
    let cfg = sys::ExploreConfig {
        budget_runs: a.budget.unwrap_or(threshold::DEFAULT_BUDGET_RUNS),
        ..cfg
    };
    let t = match threshold::thresholds(&sc, &text, &cfg, &program_for_replay()) {
        Ok(t) => t,
        Err(e) => return bad_input(&e),
    };
    if a.json {
        let mut lines = String::new();
        for l in threshold::report_json_lines(&t) {
            lines.push_str(&format!("{l}\n"));
        }
        lines.push_str(&format!("{}\n", threshold::summary_json(&t)));
        out(&lines);
    } else {
        out(&threshold::report_text(&t));
    }
    // A flip, or a start where even the smallest magnitude breaks it, is a violation the
    // menu's magnitudes may have missed.
    exit_with(Outcome::of(
        r.found.is_some() || t.violates(),
        r.inconclusive() || t.inconclusive(),
        r.vacuous(),
    ))
}
