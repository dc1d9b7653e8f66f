//! The subcommands. Each lives in its own file as `Args` (its clap arguments, whose doc
//! comments are its help) and `exec(args, ctx) -> ExitCode`. Registering one is three lines
//! here: its `mod`, its variant of `Cmd` (the doc comment is its one-line help), and its arm
//! in `dispatch`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cli::Ctx;

mod assess;
mod check;
mod check_log;
mod conformance;
mod explore;
mod hunt;
mod list;
mod map;
mod merge;
mod minimize;
mod pitfalls;
mod replay;
mod run;
mod search;
mod serve;
mod site;
mod sweep;

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
    Run(run::Args),
    /// Run many seeds in parallel and summarise the violations found.
    Sweep(sweep::Args),
    /// Merge the outputs of `sweep --shard I/N --json` into the whole sweep's summary.
    Merge(merge::Args),
    /// Re-run one seed and print the full timeline, with the messages around each violation.
    Replay(replay::Args),
    /// Serve the pages on loopback, where a click on a lane adds a fault there and shows the
    /// new future under the old one ("what if").
    Serve(serve::Args),
    /// How fast a model finds its first violation: run seeds in order from several starting
    /// points until one violates; print seeds and wall time to each, and the median.
    Hunt(hunt::Args),
    /// Turn a failing seed into a minimal scripted model: the faults that matter, shrunk.
    Minimize(minimize::Args),
    /// Place up to K faults at every decision point of one run, breadth-first (a shortest
    /// counterexample), or at random ones (--depth, PCT-style); docs/explore.md.
    Explore(explore::Args),
    /// A sweep at every cell of a grid of one or two fields of the model (--x c.ttl=5s..30s:11),
    /// drawn as a heat map with its boundary and the textbook edge (docs/map.md).
    Map(map::Args),
    /// Search for a violation by moving the model's drawn faults toward the runs that came
    /// closest to breaking (smallest safety margin or release slack); docs/rates.md.
    Search(search::Args),
    /// Is this setup's lock safe? Read a Redisson config, redis.conf, sentinel.conf and the
    /// library's options, and run the catalogue's pitfalls that apply (docs/assess.md).
    Assess(assess::Args),
    /// Validate a model without running it.
    Check(check::Args),
    /// Judge a log recorded from a real system (lock calls and resource writes with their
    /// hosts' clock bounds): violated only where certain, else possible or held.
    CheckLog(check_log::Args),
    /// List the bundled models with their descriptions.
    List(list::Args),
    /// Regenerate the pitfall guide (docs/pitfalls.md) from the bundled models and their replays.
    Pitfalls(pitfalls::Args),
    /// Write a static teaching site: an index of the catalogue and one lesson page per model
    /// (the stepper on its first failing seed, its fix beside it, "what happens next?" stops).
    Site(site::Args),
    /// Replay a recorded Redis conformance corpus (a directory of *.txt files) against the model.
    Conformance(conformance::Args),
}

fn dispatch(cmd: Cmd, ctx: &Ctx) -> ExitCode {
    match cmd {
        Cmd::Run(a) => run::exec(a, ctx),
        Cmd::Sweep(a) => sweep::exec(a, ctx),
        Cmd::Merge(a) => merge::exec(a, ctx),
        Cmd::Replay(a) => replay::exec(a, ctx),
        Cmd::Serve(a) => serve::exec(a, ctx),
        Cmd::Hunt(a) => hunt::exec(a, ctx),
        Cmd::Minimize(a) => minimize::exec(a, ctx),
        Cmd::Explore(a) => explore::exec(a, ctx),
        Cmd::Search(a) => search::exec(a, ctx),
        Cmd::Assess(a) => assess::exec(a, ctx),
        Cmd::Check(a) => check::exec(a, ctx),
        Cmd::CheckLog(a) => check_log::exec(a, ctx),
        Cmd::List(a) => list::exec(a, ctx),
        Cmd::Map(a) => map::exec(a, ctx),
        Cmd::Pitfalls(a) => pitfalls::exec(a, ctx),
        Cmd::Site(a) => site::exec(a, ctx),
        Cmd::Conformance(a) => conformance::exec(a, ctx),
    }
}

/// Parses this process's arguments and runs the subcommand. A usage error exits 2; `--help`
/// and `--version` exit 0.
pub fn main() -> ExitCode {
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
    dispatch(cli.cmd, &Ctx::from_env())
}
