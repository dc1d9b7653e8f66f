//! `replay MODEL --seed N`: one seed again, as a timeline, JSON lines, a Chrome trace, an
//! HTML page or an SVG picture.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{self, Ctx, TimeWindow, bad_input, exit_with, out};
use crate::explore;
use crate::scenario::Scenario;
use crate::scenario::adversary::AdversaryStyle;
use crate::view;
use crate::view::timeline::Messages;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: crate::cli::ModelArg,
    /// The seed to replay, as a sweep or hunt printed it (same model and seed, same run).
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
    /// Write to this file instead of standard output. The exit code is still the seed's
    /// verdict (1 when it violates), as without --out: chain with `;`, not `&&`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Time the random faults as `hunt --adversary` did, to replay a seed it found.
    #[arg(long, value_enum, default_value = "as-written")]
    adversary: AdversaryStyle,
    /// svg/html only: the span of true time to show (e.g. `30s..45s`; default: around the
    /// first violation). Refused with the other formats, which show the whole run.
    #[arg(long)]
    window: Option<TimeWindow>,
    /// Thin the faults as `hunt --sparser` did.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    sparser: u32,
    /// Add a scripted fault, as `serve`'s what-if address writes it:
    /// KIND:TARGET:AT[:ARG] in seconds (pause:c1:43.2:5, clock:r1:10:-2, crash:r1:5:3,
    /// isolate:c1:5:2). Repeatable.
    #[arg(long = "fault")]
    faults: Vec<String>,
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

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    if a.window.is_some() && !matches!(a.format, FormatArg::Svg | FormatArg::Html) {
        return bad_input(
            "--window applies to --format svg and html (the picture's span); text, json and \
             chrome always cover the whole run",
        );
    }
    let (sc, text) = match ctx.load_model(&a.model) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    // A what-if from `serve`: the model with those faults added.
    let sc = if a.faults.is_empty() {
        sc
    } else {
        match view::serve::what_if_text(&sc, &text, &a.faults) {
            Ok(w) => w,
            Err(e) => return bad_input(&e),
        }
    };
    let sc = match timed(&sc, a.sparser, a.adversary) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let messages = match a.messages {
        MessagesArg::Around => Messages::AroundViolations,
        MessagesArg::All => Messages::All,
        MessagesArg::None => Messages::None,
    };
    let seed = a.seed;
    let (text, outcome) = match a.format {
        FormatArg::Text => cli::run_report(&sc, seed, messages),
        format => {
            let (o, world) = explore::run_world(&sc, seed, crate::sim::TraceMode::Full);
            let v = &o.violations;
            // On stderr: the output itself stays a valid JSON / HTML / SVG file.
            if let Some(cap) = world.trace.cap() {
                eprintln!("note: {}", cap.note());
            }
            let w = a.window.map(|w| (w.0, w.1));
            let text = match format {
                FormatArg::Json => view::export::json_lines(&sc, seed, &world, v),
                FormatArg::Chrome => view::export::chrome_trace(&sc, seed, &world, v),
                FormatArg::Html => view::report::html(&sc, seed, &world, v, w),
                _ => view::report::svg(&sc, seed, &world, v, w),
            };
            (
                text,
                cli::Outcome::of(o.violated(), o.inconclusive(), false),
            )
        }
    };
    match a.out {
        Some(p) => {
            if let Err(e) = std::fs::write(&p, text) {
                return bad_input(&format!("{}: {e}", p.display()));
            }
            // On stderr, so that the exit code that follows is not a surprise.
            eprintln!(
                "wrote {} (seed {seed}: {}, exit code {})",
                p.display(),
                outcome.name(),
                outcome.exit_code()
            );
        }
        None => out(&text),
    }
    exit_with(outcome)
}

/// The model with its faults thinned (`--sparser`) and timed (`--adversary`), as `hunt`
/// ran it and `replay` rebuilds it.
pub(super) fn timed(
    sc: &Scenario,
    sparser: u32,
    adversary: AdversaryStyle,
) -> Result<Scenario, ExitCode> {
    sc.sparser(sparser)
        .with_adversary(adversary)
        .map_err(|e| bad_input(&format!("{}: --adversary: {}", sc.path, e.message)))
}
