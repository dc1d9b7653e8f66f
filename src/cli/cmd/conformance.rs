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
            out(&report.render());
            exit_for(report.failed() > 0)
        }
        Err(e) => bad_input(&e.to_string()),
    }
}
