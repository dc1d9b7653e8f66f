//! `serve [--port P]`: the pages on loopback, where a click on a lane adds a fault there and
//! shows the new future under the old one ("what if").

use std::process::ExitCode;

use crate::cli::{Ctx, bad_input, models_dir};
use crate::view;

#[derive(clap::Args)]
pub struct Args {
    /// The port on 127.0.0.1 (0: any free one).
    #[arg(long, default_value_t = 8417)]
    port: u16,
}

pub fn exec(a: Args, _ctx: &Ctx) -> ExitCode {
    match view::serve::serve(&models_dir(), a.port) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => bad_input(&e),
    }
}
