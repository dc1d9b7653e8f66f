//! `check-log FILE [--json | --format html --out F]`: judge a log recorded from a real
//! system (docs/check-log.md), and draw it as a page (`view::recorded`).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::check::recorded::{self, Verdict};
use crate::cli::{Ctx, bad_input, out};

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
    /// text (the findings and the timeline, the default), json (as --json) or html (the
    /// log drawn as a replay's page: lanes per client and resource, the believed holdings,
    /// each call's interval widened by its host's clock bound, the violations and the
    /// stepper; needs --out).
    #[arg(long, value_enum, default_value = "text")]
    format: FormatArg,
    /// With --format html: write the page to this file. The exit code is still the
    /// verdict's (1 when violated), as without it: chain with `;`, not `&&`.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FormatArg {
    Text,
    Json,
    Html,
}

/// Exit code: 0 every property held, 1 one was violated for certain, 3 none certain but one
/// possibly violated within the clocks' bounds (inconclusive); 2 is bad input.
pub fn exec(a: Args, _ctx: &Ctx) -> ExitCode {
    let html = a.format == FormatArg::Html;
    if html && a.json {
        return bad_input("check-log: --json and --format html are two outputs: give one");
    }
    match (html, &a.out) {
        (true, None) => {
            return bad_input(
                "check-log: --format html writes a page: give the file to write with --out FILE",
            );
        }
        (false, Some(_)) => {
            return bad_input(
                "check-log: --out is for --format html (text and json go to standard output)",
            );
        }
        _ => {}
    }
    let json = a.json || a.format == FormatArg::Json;
    let file = match std::fs::File::open(&a.file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {}: cannot read log: {e}", a.file);
            return ExitCode::from(2);
        }
    };
    let reader = std::io::BufReader::new(file);
    let judged = if html {
        recorded::judge_drawn(reader)
    } else {
        recorded::judge(reader)
    };
    let report = match judged {
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
    if let (true, Some(path)) = (html, &a.out) {
        let command = format!(
            "{} check-log {}",
            crate::scenario::names::shell_word(&crate::cli::program_for_replay()),
            crate::scenario::names::shell_word(&a.file)
        );
        let page = crate::view::recorded::html(&a.file, &command, &report);
        if let Err(e) = std::fs::write(path, page) {
            return bad_input(&format!("{}: {e}", path.display()));
        }
        // On stderr, so that the exit code that follows is not a surprise.
        eprintln!(
            "wrote {} ({}: {}, exit code {code})",
            path.display(),
            a.file,
            match report.verdict() {
                Verdict::Unobserved | Verdict::Held => "held",
                Verdict::Violated => "VIOLATED",
                Verdict::Possible => "inconclusive",
            }
        );
        return ExitCode::from(code);
    }
    if json {
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
