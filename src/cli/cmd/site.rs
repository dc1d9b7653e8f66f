//! `site --out DIR`: a static teaching site, an index of the catalogue and one lesson page
//! per model.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Ctx, bad_input, models_dir, out};
use crate::view;

#[derive(clap::Args)]
pub struct Args {
    /// The directory to write (created if missing).
    #[arg(long)]
    out: PathBuf,
}

pub fn exec(a: Args, _ctx: &Ctx) -> ExitCode {
    match view::site::write(&models_dir(), &a.out) {
        Ok(n) => {
            out(&format!("wrote {n} pages to {}\n", a.out.display()));
            ExitCode::SUCCESS
        }
        Err(e) => bad_input(&e),
    }
}
