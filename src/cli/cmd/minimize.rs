//! `minimize MODEL --seed N`: the faults of a failing seed that matter, as a scripted model.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Ctx, bad_input, out};
use crate::explore;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: crate::cli::ModelArg,
    /// The violating seed to minimise, as a sweep or hunt printed it.
    #[arg(long)]
    seed: u64,
    /// Write the minimal model here (default: print it).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    // The overrides' text: the minimal model is written from what ran.
    let (sc, text) = match ctx.load_model(&a.model) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let seed = a.seed;
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
            match a.out {
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
