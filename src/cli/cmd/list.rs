//! `list`: the bundled models with their descriptions and declared verdicts.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Ctx, bad_input, list_models, models_dir, out};

#[derive(clap::Args)]
pub struct Args {
    /// Directory of models (default: ./models, else the source tree's).
    #[arg(long)]
    dir: Option<PathBuf>,
}

pub fn exec(a: Args, _ctx: &Ctx) -> ExitCode {
    let dir = a.dir.unwrap_or_else(models_dir);
    match list_models(&dir) {
        Ok(text) => {
            out(&text);
            ExitCode::SUCCESS
        }
        Err(e) => bad_input(&e),
    }
}
