//! `check MODEL`: validate a model without running it.

use std::process::ExitCode;

use crate::cli::{Ctx, expect_text, out};

#[derive(clap::Args)]
pub struct Args {
    /// Model file, or the name of a bundled model (`distlock-sim list`), e.g. single-px-del-pause.
    model: String,
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    match ctx.load(&a.model) {
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
                expect_text(sc.model.expect.as_ref())
            ));
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}
