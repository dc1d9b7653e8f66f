//! `sweep MODEL --seeds A..B`: many seeds in parallel, summarised.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{self, Ctx, SeedRange, ShardArg, bad_input, exit_with, out};
use crate::explore::stopping::StopRule;
use crate::explore::{self, Shard};
use crate::scenario::Scenario;
use crate::view;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: crate::cli::ModelArg,
    /// Seeds to run, as A..B (B excluded), e.g. 0..1000.
    #[arg(long, default_value = "0..1000")]
    seeds: SeedRange,
    /// Worker threads, 1..=256 (each run is single-threaded; results do not depend on
    /// this).
    #[arg(long, default_value_t = cli::default_jobs(), value_parser = cli::parse_jobs)]
    jobs: usize,
    /// Run only the seeds with seed % N == I, written I/N (to split a sweep across machines;
    /// with --json the summary line then carries what `merge` needs: docs/scale-out.md).
    #[arg(long)]
    shard: Option<ShardArg>,
    /// One JSON line per violating seed and a summary line, instead of text.
    #[arg(long)]
    json: bool,
    /// Run every seed twice and report the seeds whose runs diverge (no verdicts).
    #[arg(long)]
    check_determinism: bool,
    /// Write the HTML page of the first violating seed into this directory (created if
    /// missing) as MODEL-seedN.html: a CI artifact to look at. The exit code is still the
    /// sweep's verdict.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Stop once every checked property's per-seed 95 % interval is within ±H (a rate,
    /// e.g. 0.02 for ±2 %), decided after every 250 seeds in seed order; --seeds is then the
    /// most it runs (docs/rates.md).
    #[arg(long, value_name = "H", value_parser = parse_half_width, conflicts_with_all = ["until_saturated", "check_determinism"])]
    until_ci: Option<f64>,
    /// Stop once every required witness was reached and the coverage signature (hazards,
    /// fault kinds, their pairs, properties violated) gained nothing for N seeds, decided
    /// after every 250 seeds; --seeds is then the most it runs (docs/rates.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "check_determinism")]
    until_saturated: Option<u64>,
}

/// `--until-ci`: a half-width strictly between 0 and 0.5 (a rate, not a percentage).
fn parse_half_width(s: &str) -> Result<f64, String> {
    let h: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number (a rate, e.g. 0.02 for ±2 %)"))?;
    if h > 0.0 && h < 0.5 {
        Ok(h)
    } else {
        Err(format!(
            "{s} is outside (0, 0.5): a half-width is a rate, e.g. 0.02 for ±2 %"
        ))
    }
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    let (sc, _) = match ctx.load_model(&a.model) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let shard = a.shard.map_or(Shard::WHOLE, |s| s.0);
    let rule = match (a.until_ci, a.until_saturated) {
        (Some(h), _) => Some(StopRule::Precise { half_width: h }),
        (None, Some(n)) => Some(StopRule::Saturated { seeds: n }),
        (None, None) => None,
    };
    // A shard cannot stop on the whole sweep's figures, which it does not see.
    if rule.is_some() && a.shard.is_some() {
        return bad_input(
            "--until-ci and --until-saturated decide on the whole sweep: they cannot run with --shard",
        );
    }
    if a.check_determinism {
        let summary = explore::determinism::check_seeds(&sc, a.seeds.0.clone(), shard, a.jobs);
        return super::run::determinism_report(&sc, &summary);
    }
    // A directory that cannot be made is bad input, before a long sweep.
    if let Some(dir) = &a.report
        && let Err(e) = explore::create_dir_all(dir)
    {
        return bad_input(&format!("--report {e}"));
    }
    let json = a.json;
    let total = shard.count_in(&a.seeds.0);
    let bar = (std::io::stderr().is_terminal() && !json).then(|| {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} seeds {per_sec} eta {eta}",
            )
            .expect("template"),
        );
        b
    });
    let tick = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    // Wall time of the sweep, for the seeds/s figure: outside any simulated run.
    #[allow(clippy::disallowed_methods)]
    let wall = std::time::Instant::now();
    // --json streams each violating seed's line as the sweep reaches it: memory stays flat
    // however many seeds violate.
    let mut stream = |seed: u64, vs: &[crate::check::Violation]| {
        if json {
            out(&format!("{}\n", cli::violating_seed_json(&sc, seed, vs)));
        }
    };
    let (summary, stop) = explore::sweep_until(
        &sc,
        a.seeds.0.clone(),
        shard,
        a.jobs,
        rule,
        &tick,
        &mut stream,
    );
    let wall_s = wall.elapsed().as_secs_f64();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let text = if json {
        // A shard's line carries what `merge` needs to rebuild the whole sweep.
        let mut extra = Vec::new();
        if a.shard.is_some() {
            extra.push(("partial", cli::shard::partial_json(&sc, &summary)));
        }
        if let Some(stop) = &stop {
            extra.push(("stopped", stop.json()));
        }
        cli::sweep_json_with(&sc, &summary, &a.seeds, shard, a.jobs, wall_s, extra)
    } else {
        cli::sweep_text(
            &sc,
            &summary,
            &a.seeds,
            shard,
            a.jobs,
            wall_s,
            stop.as_ref(),
        )
    };
    out(&text);
    if let (Some(dir), Some(seed)) = (a.report, summary.first_violating_seed) {
        match write_report(&sc, seed, &dir) {
            Ok(path) if !json => out(&format!("report: {}\n", path.display())),
            Ok(_) => {}
            Err(e) => return bad_input(&e),
        }
    }
    exit_with(cli::sweep_outcome(&sc, &summary))
}

/// `sweep --report DIR`: the page of one seed, written as DIR/MODEL-seedN.html.
fn write_report(sc: &Scenario, seed: u64, dir: &Path) -> Result<PathBuf, String> {
    let (o, world) = explore::run_world(sc, seed, crate::sim::TraceMode::Full);
    let page = view::report::html(sc, seed, &world, &o.violations, None);
    let path = dir.join(format!("{}-seed{seed}.html", sc.name));
    std::fs::write(&path, page).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}
