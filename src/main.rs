//! The `distlock-sim` command line.
#![forbid(unsafe_code)]

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use distlock_sim::cli::{self, SeedRange};
use distlock_sim::explore::timeline::Messages;
use distlock_sim::explore::{self, Shard};
use distlock_sim::scenario;

#[derive(Parser)]
#[command(
    name = "distlock-sim",
    version,
    about = "Deterministic simulator of Redis-based distributed locks"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one seed of a model: verdict, realised faults and a timeline of what happened.
    Run {
        /// Model file (or the name of a bundled model, e.g. single-px-del-pause).
        model: String,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Run the seed twice and report the first event where the runs diverge.
        #[arg(long)]
        check_determinism: bool,
    },
    /// Run many seeds in parallel and summarise the violations found.
    Sweep {
        model: String,
        /// Seeds to run, as A..B (B excluded), e.g. 0..1000.
        #[arg(long, default_value = "0..1000")]
        seeds: SeedRange,
        /// Worker threads, 1..=256 (each run is single-threaded; results do not depend on
        /// this).
        #[arg(long, default_value_t = cli::default_jobs(), value_parser = cli::parse_jobs)]
        jobs: usize,
        /// Run only the seeds with seed % N == I, written I/N (to split a sweep across machines).
        #[arg(long)]
        shard: Option<cli::ShardArg>,
        /// One JSON line per violating seed and a summary line, instead of text.
        #[arg(long)]
        json: bool,
        /// Run every seed twice and report the seeds whose runs diverge (no verdicts).
        #[arg(long)]
        check_determinism: bool,
        /// Write the HTML page of the first violating seed into this directory (created if
        /// missing) as MODEL-seedN.html: a CI artifact to look at.
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Re-run one seed and print the full timeline, with the messages around each violation.
    Replay {
        model: String,
        #[arg(long)]
        seed: u64,
        /// Which messages to show: around (each violation), all, none.
        #[arg(long, value_enum, default_value = "around")]
        messages: MessagesArg,
        /// text (timeline), json (JSON lines, docs/trace-format.md), chrome (Trace Event
        /// JSON for Perfetto / chrome://tracing), html (a self-contained page that zooms and
        /// explains; docs/trace-format.md) or svg (the static picture around the first
        /// violation).
        #[arg(long, value_enum, default_value = "text")]
        format: FormatArg,
        /// Write to this file instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Time the random faults as `hunt --adversary` did, to replay a seed it found.
        #[arg(long, value_enum, default_value = "as-written")]
        adversary: distlock_sim::scenario::adversary::AdversaryStyle,
        /// svg/html: the span of true time to show (e.g. `30s..45s`; default: around the
        /// first violation).
        #[arg(long)]
        window: Option<cli::TimeWindow>,
        /// Thin the faults as `hunt --sparser` did.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        sparser: u32,
        /// Add a scripted fault, as `serve`'s what-if address writes it:
        /// KIND:TARGET:AT[:ARG] in seconds (pause:c1:43.2:5, clock:r1:10:-2, crash:r1:5:3,
        /// isolate:c1:5:2). Repeatable.
        #[arg(long = "fault")]
        faults: Vec<String>,
    },
    /// Serve the pages on loopback, where a click on a lane adds a fault there and shows the
    /// new future under the old one ("what if").
    Serve {
        /// The port on 127.0.0.1 (0: any free one).
        #[arg(long, default_value_t = 8417)]
        port: u16,
    },
    /// How fast a model finds its first violation: run seeds in order from several starting
    /// points until one violates; print seeds and wall time to each, and the median.
    Hunt {
        model: String,
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
        adversary: distlock_sim::scenario::adversary::AdversaryStyle,
        /// K times fewer faults in every style (each random fault and trigger firing applies
        /// with chance 1/K): the sparse baseline of docs/efficiency.md.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        sparser: u32,
    },
    /// Turn a failing seed into a minimal scripted model: the faults that matter, shrunk.
    Minimize {
        model: String,
        #[arg(long)]
        seed: u64,
        /// Write the minimal model here (default: print it).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Validate a model without running it.
    Check { model: String },
    /// List the bundled models with their descriptions.
    List {
        /// Directory of models (default: ./models).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Regenerate the pitfall guide (docs/pitfalls.md) from the bundled models and their replays.
    Pitfalls {
        /// Where to write it (default: print it); its pictures go to `pitfalls/` beside it.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads, 1..=256.
        #[arg(long, default_value_t = cli::default_jobs(), value_parser = cli::parse_jobs)]
        jobs: usize,
    },
    /// Write a static teaching site: an index of the catalogue and one lesson page per model
    /// (the stepper on its first failing seed, its fix beside it, "what happens next?" stops).
    Site {
        /// The directory to write (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// Replay a recorded Redis conformance corpus (a directory of *.txt files) against the model.
    Conformance {
        /// Directory (or single file) in the corpus format.
        dir: PathBuf,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FormatArg {
    Text,
    Json,
    Chrome,
    Html,
    Svg,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum MessagesArg {
    Around,
    All,
    None,
}

/// Writes the guide and, next to it, its pictures (replacing stale ones).
fn write_guide(p: &std::path::Path, guide: &explore::pitfalls::Guide) -> Result<(), String> {
    let err = |q: &std::path::Path, e: std::io::Error| format!("{}: {e}", q.display());
    std::fs::write(p, &guide.markdown).map_err(|e| err(p, e))?;
    let dir = p
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join(explore::pitfalls::PICTURE_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| err(&dir, e))?;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let q = e.path();
            if q.extension().is_some_and(|x| x == "svg") {
                std::fs::remove_file(&q).map_err(|e| err(&q, e))?;
            }
        }
    }
    for (file, text) in &guide.pictures {
        let q = dir.join(file);
        std::fs::write(&q, text).map_err(|e| err(&q, e))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.cmd {
        Cmd::Conformance { dir } => match distlock_sim::conformance::run_dir(&dir) {
            Ok(report) => {
                out(&report.render());
                if report.failed() > 0 {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                }
            }
            Err(e) => bad_input(&e.to_string()),
        },
        Cmd::Serve { port } => match explore::serve::serve(&cli::models_dir(), port) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => bad_input(&e),
        },
        Cmd::Site { out: dir } => match explore::site::write(&cli::models_dir(), &dir) {
            Ok(n) => {
                out(&format!("wrote {n} pages to {}\n", dir.display()));
                ExitCode::SUCCESS
            }
            Err(e) => bad_input(&e),
        },
        Cmd::Pitfalls { out: path, jobs } => {
            match explore::pitfalls::render(&cli::models_dir(), jobs) {
                Ok(guide) => match path {
                    Some(p) => match write_guide(&p, &guide) {
                        Ok(()) => ExitCode::SUCCESS,
                        Err(e) => bad_input(&e),
                    },
                    None => {
                        out(&guide.markdown);
                        ExitCode::SUCCESS
                    }
                },
                Err(e) => bad_input(&e),
            }
        }
        Cmd::Hunt {
            model,
            repeats,
            max_seeds,
            jobs,
            adversary,
            sparser,
        } => match load(&model) {
            Ok(sc) => {
                let sc = match timed(&sc, sparser, adversary) {
                    Ok(s) => s,
                    Err(code) => return code,
                };
                use rayon::prelude::*;
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(jobs.max(1))
                    .build()
                    .expect("thread pool");
                // Wall time of the hunts, for people: outside any simulated run.
                #[allow(clippy::disallowed_methods)]
                let wall = std::time::Instant::now();
                let results: Vec<explore::HuntResult> = pool.install(|| {
                    (0..repeats)
                        .into_par_iter()
                        .map(|r| explore::hunt(&sc, r * 1_000_000, max_seeds))
                        .collect()
                });
                let wall_s = wall.elapsed().as_secs_f64();
                let mut text = String::new();
                let mut counts: Vec<u64> = Vec::new();
                for r in &results {
                    match (r.seeds_to_violation, r.first_violating_seed) {
                        (Some(n), Some(s)) => {
                            counts.push(n);
                            text.push_str(&format!(
                                "  from seed {}: first violation at seed {s} ({n} seeds)\n",
                                r.start
                            ));
                        }
                        _ => text.push_str(&format!(
                            "  from seed {}: none in {max_seeds} seeds\n",
                            r.start
                        )),
                    }
                }
                counts.sort_unstable();
                let found = counts.len();
                let median = if found == results.len() {
                    format!("{}", counts[found / 2])
                } else {
                    format!(
                        "> {max_seeds} in {} of {} hunts",
                        results.len() - found,
                        results.len()
                    )
                };
                let replay = match results.iter().find_map(|r| r.first_violating_seed) {
                    Some(s) => format!("replay: {}\n", cli::replay_command(&sc, s)),
                    None => String::new(),
                };
                let sparse = if sparser > 1 {
                    format!(", {sparser}x sparser")
                } else {
                    String::new()
                };
                out(&format!(
                    "model {} ({} faults{sparse}): {} hunts, median seeds to first violation {median}, {wall_s:.2}s wall in all\n{text}{replay}",
                    sc.name,
                    clap::ValueEnum::to_possible_value(&adversary)
                        .expect("no skipped variants")
                        .get_name(),
                    results.len()
                ));
                exit_for(found > 0)
            }
            Err(code) => code,
        },
        Cmd::Minimize {
            model,
            seed,
            out: path,
        } => {
            let file = cli::resolve_model(&model);
            let sc = match load(&model) {
                Ok(sc) => sc,
                Err(code) => return code,
            };
            let text = match std::fs::read_to_string(&file) {
                Ok(t) => t,
                Err(e) => return bad_input(&format!("{file}: {e}")),
            };
            match explore::minimize::minimize(&sc, &text, seed) {
                Ok(m) => {
                    let mut report = format!(
                        "{} at seed {seed}: {} faults before, {} after ({} runs)\nbefore:\n",
                        m.property,
                        m.before.len(),
                        m.after.len(),
                        m.runs
                    );
                    for u in &m.before {
                        report.push_str(&format!("  {}\n", explore::minimize::fault_ron(u)));
                    }
                    report.push_str("after:\n");
                    for u in &m.after {
                        report.push_str(&format!("  {}\n", explore::minimize::fault_ron(u)));
                    }
                    match path {
                        Some(p) => {
                            if let Err(e) = std::fs::write(&p, &m.model_text) {
                                return bad_input(&format!("{}: {e}", p.display()));
                            }
                            report.push_str(&format!("minimal model written to {}\n", p.display()));
                        }
                        None => {
                            report.push_str("minimal model:\n");
                            report.push_str(&m.model_text);
                        }
                    }
                    out(&report);
                    ExitCode::SUCCESS
                }
                Err(e) => bad_input(&e),
            }
        }
        Cmd::List { dir } => {
            let dir = dir.unwrap_or_else(cli::models_dir);
            match cli::list_models(&dir) {
                Ok(text) => {
                    out(&text);
                    ExitCode::SUCCESS
                }
                Err(e) => bad_input(&e),
            }
        }
        Cmd::Check { model } => match load(&model) {
            Ok(sc) => {
                out(&format!(
                    "{}: ok ({} processes, checks {}, expect {})\n",
                    sc.path,
                    sc.procs.len(),
                    sc.properties
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", "),
                    cli::expect_text(sc.model.expect.as_ref())
                ));
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        Cmd::Run {
            model,
            seed,
            check_determinism,
        } => match load(&model) {
            Ok(sc) if check_determinism => {
                // One seed, checked as itself: `seed..seed + 1` would wrap at u64::MAX.
                let first = explore::determinism::check_seed(&sc, seed).err();
                let summary = explore::determinism::DeterminismSummary {
                    seeds_run: 1,
                    divergent_seeds: u64::from(first.is_some()),
                    first,
                };
                determinism_report(&sc, &summary)
            }
            Ok(sc) => {
                let (text, outcome) = cli::run_report(&sc, seed, Messages::None);
                out(&text);
                exit_with(outcome)
            }
            Err(code) => code,
        },
        Cmd::Replay {
            model,
            seed,
            messages,
            format,
            out: path,
            adversary,
            window,
            sparser,
            faults,
        } => match load(&model) {
            Ok(sc) => {
                // A what-if from `serve`: the model with those faults added.
                let sc = if faults.is_empty() {
                    sc
                } else {
                    match explore::serve::what_if(std::path::Path::new(&model), &faults) {
                        Ok(w) => w,
                        Err(e) => return bad_input(&e),
                    }
                };
                let sc = match timed(&sc, sparser, adversary) {
                    Ok(s) => s,
                    Err(code) => return code,
                };
                let messages = match messages {
                    MessagesArg::Around => Messages::AroundViolations,
                    MessagesArg::All => Messages::All,
                    MessagesArg::None => Messages::None,
                };
                let (text, outcome) = match format {
                    FormatArg::Text => cli::run_report(&sc, seed, messages),
                    FormatArg::Json | FormatArg::Chrome | FormatArg::Html | FormatArg::Svg => {
                        let (o, world) =
                            explore::run_world(&sc, seed, distlock_sim::sim::TraceMode::Full);
                        let v = &o.violations;
                        // On stderr: the output itself stays a valid JSON / HTML / SVG file.
                        if let Some(cap) = world.trace.cap() {
                            eprintln!("note: {}", cap.note());
                        }
                        let w = window.map(|w| (w.0, w.1));
                        let text = match format {
                            FormatArg::Json => explore::export::json_lines(&sc, seed, &world, v),
                            FormatArg::Chrome => {
                                explore::export::chrome_trace(&sc, seed, &world, v)
                            }
                            FormatArg::Html => explore::report::html(&sc, seed, &world, v, w),
                            _ => explore::report::svg(&sc, seed, &world, v, w),
                        };
                        (
                            text,
                            cli::Outcome::of(o.violated(), o.inconclusive(), false),
                        )
                    }
                };
                match path {
                    Some(p) => {
                        if let Err(e) = std::fs::write(&p, text) {
                            return bad_input(&format!("{}: {e}", p.display()));
                        }
                    }
                    None => out(&text),
                }
                exit_with(outcome)
            }
            Err(code) => code,
        },
        Cmd::Sweep {
            model,
            seeds,
            jobs,
            shard,
            json,
            check_determinism,
            report,
        } => match load(&model) {
            Ok(sc) if check_determinism => {
                let shard = shard.map_or(Shard::WHOLE, |s| s.0);
                let summary = explore::determinism::check_seeds(&sc, seeds.0.clone(), shard, jobs);
                determinism_report(&sc, &summary)
            }
            Ok(sc) => {
                // A directory that cannot be made is bad input, before a long sweep.
                if let Some(dir) = &report
                    && let Err(e) = std::fs::create_dir_all(dir)
                {
                    return bad_input(&format!("--report {}: {e}", dir.display()));
                }
                let shard = shard.map_or(Shard::WHOLE, |s| s.0);
                let total = shard.count_in(&seeds.0);
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
                // --json streams each violating seed's line as the sweep reaches it: memory
                // stays flat however many seeds violate.
                let mut stream = |seed: u64, vs: &[distlock_sim::check::Violation]| {
                    if json {
                        out(&format!("{}\n", cli::violating_seed_json(&sc, seed, vs)));
                    }
                };
                let summary =
                    explore::sweep_each(&sc, seeds.0.clone(), shard, jobs, &tick, &mut stream);
                let wall_s = wall.elapsed().as_secs_f64();
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
                let text = if json {
                    cli::sweep_json(&sc, &summary, &seeds, shard, jobs, wall_s)
                } else {
                    cli::sweep_text(&sc, &summary, &seeds, shard, jobs, wall_s)
                };
                out(&text);
                if let (Some(dir), Some(seed)) = (report, summary.first_violating_seed) {
                    match write_report(&sc, seed, &dir) {
                        Ok(path) if !json => out(&format!("report: {}\n", path.display())),
                        Ok(_) => {}
                        Err(e) => return bad_input(&e),
                    }
                }
                exit_with(cli::sweep_outcome(&sc, &summary))
            }
            Err(code) => code,
        },
    }
}

/// `sweep --report DIR`: the page of one seed, written as DIR/MODEL-seedN.html.
fn write_report(sc: &scenario::Scenario, seed: u64, dir: &Path) -> Result<PathBuf, String> {
    let (o, world) = explore::run_world(sc, seed, distlock_sim::sim::TraceMode::Full);
    let page = explore::report::html(sc, seed, &world, &o.violations, None);
    let path = dir.join(format!("{}-seed{seed}.html", sc.name));
    std::fs::write(&path, page).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// `--check-determinism`: every seed twice; exit 1 if any diverged.
fn determinism_report(
    sc: &scenario::Scenario,
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

/// The model with its faults thinned (`--sparser`) and timed (`--adversary`), as `hunt`
/// ran it and `replay` rebuilds it.
fn timed(
    sc: &scenario::Scenario,
    sparser: u32,
    adversary: distlock_sim::scenario::adversary::AdversaryStyle,
) -> Result<scenario::Scenario, ExitCode> {
    sc.sparser(sparser)
        .with_adversary(adversary)
        .map_err(|e| bad_input(&format!("{}: --adversary: {}", sc.path, e.message)))
}

fn load(model: &str) -> Result<scenario::Scenario, ExitCode> {
    let path = cli::resolve_model(model);
    scenario::load(Path::new(&path)).map_err(|e| bad_input(&e.to_string()))
}

/// Writes to stdout; a closed pipe (`| head`) is not an error worth a panic.
fn out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn bad_input(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// Exit code: 0 every property held, 1 a property was violated, 3 nothing violated but a run
/// stopped on its budget before its duration (inconclusive), 4 nothing violated but a hazard
/// the model requires (`witness`) was never reached (vacuous); 2 is bad input.
fn exit_with(outcome: cli::Outcome) -> ExitCode {
    ExitCode::from(outcome.exit_code())
}

fn exit_for(violated: bool) -> ExitCode {
    if violated {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
