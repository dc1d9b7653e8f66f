//! `check-log FILE [--json]`: judge a log recorded from a real system (docs/check-log.md).

use std::process::ExitCode;

use crate::check::recorded::{self, Verdict};
use crate::cli::{Ctx, out};

#[derive(clap::Args)]
#[command(
    after_help = "Exit codes: 0 every property held, 1 violated for certain given the clock bounds, \
                  2 bad input, 3 inconclusive (a violation only possible within the bounds)."
)]
pub struct Args {
    /// A `distlock-log/1` JSON-lines file: a header naming the hosts and their clock bounds,
    /// then one lock call or resource read/write per line (docs/check-log.md).
    file: String,
    /// Print the findings as one JSON object instead of text and the timeline.
    #[arg(long)]
    json: bool,
}

/// Exit code: 0 every property held, 1 one was violated for certain, 3 none certain but one
/// possibly violated within the clocks' bounds (inconclusive); 2 is bad input.
pub fn exec(a: Args, _ctx: &Ctx) -> ExitCode {
    let file = match std::fs::File::open(&a.file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {}: cannot read log: {e}", a.file);
            return ExitCode::from(2);
        }
    };
    let report = match recorded::judge(std::io::BufReader::new(file)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {}:{}:{}: {}", a.file, e.line, e.column, e.message);
            return ExitCode::from(2);
        }
    };
    for w in &report.warnings {
        eprintln!("warning: {}:{}:1: {}", a.file, w.line, w.message);
    }
    if report.warnings_total > report.warnings.len() {
        eprintln!(
            "warning: {}: {} more warnings",
            a.file,
            report.warnings_total - report.warnings.len()
        );
    }
    let code = report.exit_code();
    if a.json {
        let props: Vec<serde_json::Value> = report
            .findings
            .iter()
            .map(|f| {
                serde_json::json!({
                    "property": f.property,
                    "verdict": f.verdict.name().to_lowercase(),
                    "lines": f.lines,
                    "message": f.message,
                })
            })
            .collect();
        let warnings: Vec<serde_json::Value> = report
            .warnings
            .iter()
            .map(|w| serde_json::json!({"line": w.line, "message": w.message}))
            .collect();
        let v = serde_json::json!({
            "schema": recorded::SCHEMA,
            "file": a.file,
            "events": report.events,
            "holdings": report.holdings,
            "properties": props,
            "warnings": warnings,
            "warnings_total": report.warnings_total,
            "exit_code": code,
        });
        out(&format!("{v}\n"));
    } else {
        let mut s = format!(
            "{}: {} events, {} host(s), {} believed holdings\n",
            a.file,
            report.events,
            report.hosts.len(),
            report.holdings
        );
        for f in &report.findings {
            s.push_str(&format!(
                "  {:<17} {:<10} {}\n",
                f.property,
                f.verdict.name(),
                f.message
            ));
        }
        s.push_str(match report.verdict() {
            Verdict::Unobserved | Verdict::Held => "verdict: held (exit code 0)\n",
            Verdict::Violated => "verdict: VIOLATED, certain given the clock bounds (exit code 1)\n",
            Verdict::Possible => {
                "verdict: inconclusive, a violation is possible within the clock bounds (exit code 3)\n"
            }
        });
        s.push('\n');
        s.push_str(&report.timeline());
        out(&s);
    }
    ExitCode::from(code)
}
