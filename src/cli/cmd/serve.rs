//! `serve [--port P] [--models DIR]`: the pages on loopback, where a click on a lane adds a
//! fault there and shows the new future under the old one ("what if"); the user's own model
//! files beside the catalogue.

use std::process::ExitCode;

use crate::cli::{Ctx, bad_input, models_dir};
use crate::view;

#[derive(clap::Args)]
pub struct Args {
    /// The port on 127.0.0.1 (0: any free one).
    #[arg(long, default_value_t = 8417)]
    port: u16,
    /// A directory of your own model files (*.ron), served beside the catalogue (one of
    /// yours named like a catalogue model is served in its place).
    #[arg(long, value_name = "DIR")]
    models: Option<std::path::PathBuf>,
}

pub fn exec(a: Args, _ctx: &Ctx) -> ExitCode {
    if let Some(d) = &a.models
        && !d.is_dir()
    {
        return bad_input(&format!("--models {}: not a directory", d.display()));
    }
    let shelf = view::serve::Shelf {
        catalogue: models_dir(),
        own: a.models,
    };
    match view::serve::serve(&shelf, a.port) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => bad_input(&e),
    }
}
