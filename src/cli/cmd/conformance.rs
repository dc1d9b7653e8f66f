//! `conformance DIR`: replay a recorded Redis corpus against the node model.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Ctx, bad_input, exit_for, out};

#[derive(clap::Args)]
pub struct Args {
    /// Directory (or single file) in the corpus format.
    dir: PathBuf,
}

pub fn exec(a: Args, _ctx: &Ctx) -> ExitCode {
    match crate::conformance::run_dir(&a.dir) {
        Ok(report) => {
            if let Some((path, line, command)) = report.first_over_memory_cap() {
                return bad_input(&format!(
                    "{}:{line}: {}: the case went past the simulator's memory cap of {} MiB of keys and values per node (the command was refused with OOM); the corpus cannot be replayed within it",
                    path.display(),
                    shorten(command),
                    crate::redis::node::MAX_USED_MEMORY_BYTES >> 20
                ));
            }
            out(&report.render());
            exit_for(report.failed() > 0)
        }
        Err(e) => bad_input(&e.to_string()),
    }
}

/// A command as an error quotes it: its first 120 characters.
fn shorten(command: &str) -> String {
    match command.char_indices().nth(120) {
        Some((i, _)) => format!("{}...", &command[..i]),
        None => command.to_string(),
    }
}
