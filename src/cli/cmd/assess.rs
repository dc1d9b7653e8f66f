//! `assess FILE... [--lib NAME:K=V,...]`: is this setup's lock safe? (docs/assess.md)

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::assess::{self, Assumptions, Input, LibArg};
use crate::cli::{self, Ctx, SeedRange, bad_input, out};

#[derive(clap::Args)]
pub struct Args {
    /// Configuration files, each recognised by its content: a Redisson YAML or JSON config,
    /// a redis.conf, a sentinel.conf.
    files: Vec<PathBuf>,
    /// The library and its options in its own names: redis-py:timeout=10,blocking_timeout=5;
    /// redisson:version=3.52.0,leaseTime=10000; redsync:expiry=8s,tries=32;
    /// node-redlock:duration=10000,retryCount=10,masters=5; pottery:auto_release_time=10,masters=3.
    #[arg(long = "lib")]
    libs: Vec<LibArg>,
    /// The faults assumed: none, or a list of crash, failover, pause:<=D, clock_step:<=D,
    /// latency:<=D, starve:<=D (a watchdog's renewals delayed), interrupt (a thread
    /// interrupted in Redisson's lock()).
    #[arg(long, default_value = assess::DEFAULT_FAULTS)]
    faults: String,
    /// Clients contending for the lock (2 to 16: one client has nobody to exclude).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..=16))]
    clients: u32,
    /// How long a critical section runs, A..B (drawn per round).
    #[arg(long, default_value = "1s..3s")]
    hold: String,
    /// Seeds each finding runs, as A..B.
    #[arg(long, default_value = "0..200")]
    seeds: SeedRange,
    /// Where the setup's model is written; each finding's model goes beside it
    /// (assess.ron, assess.pause-past-ttl.ron, ...), named by its replay line.
    #[arg(long, default_value = "assess.ron")]
    out: String,
    /// One JSON object ({"setup", "assumptions", "findings", "keys"}) instead of text.
    #[arg(long)]
    json: bool,
    /// Worker threads for each finding's sweep (results do not depend on this).
    #[arg(long, default_value_t = cli::default_jobs(), value_parser = cli::parse_jobs)]
    jobs: usize,
}

fn read_input(p: &PathBuf) -> Result<Input, String> {
    let name = p.display().to_string();
    let f = std::fs::File::open(p).map_err(|e| format!("{name}: {e}"))?;
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(format!("{name}: a directory, not a configuration file"));
    }
    let mut bytes = Vec::new();
    f.take(assess::setup::MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > assess::setup::MAX_INPUT_BYTES {
        return Err(format!(
            "{name}: larger than {} bytes: not a configuration file",
            assess::setup::MAX_INPUT_BYTES
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "{name}: not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok(Input { path: name, text })
}

fn hold_ms(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").unwrap_or((s, s));
    let one = |x: &str| -> Result<u64, String> {
        let ns = crate::scenario::units::parse_duration_ns(x.trim())
            .map_err(|e| format!("--hold {s}: {e}"))?;
        if !(1_000_000..=3_600_000_000_000).contains(&ns) {
            return Err(format!("--hold {s}: each end between 1ms and 1h"));
        }
        Ok((ns / 1_000_000) as u64)
    };
    let (a, b) = (one(a)?, one(b)?);
    if a > b {
        return Err(format!("--hold {s}: the first end is above the second"));
    }
    Ok((a, b))
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    if a.files.is_empty() && a.libs.is_empty() {
        return bad_input(
            "assess needs configuration files and/or --lib NAME[:K=V,...] (docs/assess.md)",
        );
    }
    if !a.out.ends_with(".ron") {
        return bad_input(&format!("--out {}: the model file must end in .ron", a.out));
    }
    if a.seeds.0.is_empty() {
        return bad_input("--seeds: an empty range");
    }
    let mut inputs = Vec::new();
    for p in &a.files {
        match read_input(p) {
            Ok(i) => inputs.push(i),
            Err(e) => return bad_input(&e),
        }
    }
    let setup = match assess::config::read(&inputs, &a.libs) {
        Ok(s) => s,
        Err(e) => {
            // Cluster and pottery are refused as "not modelled": no verdict, not bad input.
            if e.0.contains("not modelled yet") {
                eprintln!("assess: {e}");
                return ExitCode::from(3);
            }
            return bad_input(&e.0);
        }
    };
    let mut assumptions = match Assumptions::parse_faults(&a.faults, &setup.library) {
        Ok(x) => x,
        Err(e) => return bad_input(&e),
    };
    assumptions.clients = a.clients;
    assumptions.hold_ms = match hold_ms(&a.hold) {
        Ok(h) => h,
        Err(e) => return bad_input(&e),
    };
    assumptions.inputs = a
        .files
        .iter()
        .map(|p| p.display().to_string())
        .chain(a.libs.iter().map(|l| format!("--lib {}", l.name)))
        .collect();
    let report = match assess::assess(
        setup,
        assumptions,
        a.seeds.0.clone(),
        &a.out,
        &ctx.program,
        a.jobs,
    ) {
        Ok(r) => r,
        Err(e) => return bad_input(&e),
    };
    if a.json {
        out(&format!("{}\n", assess::json(&report)));
    } else {
        out(&assess::text(&report));
    }
    ExitCode::from(report.exit_code())
}
