//! `minimize MODEL --seed N`: the faults of a failing seed that matter, as a scripted model.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Ctx, bad_input, out, resolve_model};
use crate::explore;

#[derive(clap::Args)]
pub struct Args {
    /// Model file, or the name of a bundled model (`distlock-sim list`), e.g. single-px-del-pause.
    model: String,
    /// The violating seed to minimise, as a sweep or hunt printed it.
    #[arg(long)]
    seed: u64,
    /// Write the minimal model here (default: print it).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    let sc = match ctx.load(&a.model) {
        Ok(sc) => sc,
        Err(code) => return code,
    };
    let file = match resolve_model(&a.model) {
        Ok(f) => f,
        Err(e) => return bad_input(&e),
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => return bad_input(&format!("{file}: {e}")),
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
