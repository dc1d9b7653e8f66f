//! Argument types of the command line: seed ranges, shards, time windows, worker counts.

use std::ops::Range;
use std::str::FromStr;

use crate::explore::Shard;

/// Largest seed count one sweep accepts (and most seeds one hunt runs).
pub const MAX_SWEEP_SEEDS: u64 = 1_000_000_000;

/// Most worker threads any command accepts (`--jobs`). Each run is single-threaded and a
/// worker holds one run's world at a time, so memory grows with jobs; past the machine's
/// cores more workers only add memory. 256 leaves room for large machines and refuses the
/// absurd (every subcommand with `--jobs` checks it the same way: exit 2, naming `--jobs`).
pub const MAX_JOBS: usize = 256;

/// `--jobs N`: 1..=MAX_JOBS.
pub fn parse_jobs(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of worker threads"))?;
    if n == 0 || n > MAX_JOBS {
        return Err(format!("{n} is not in 1..={MAX_JOBS}"));
    }
    Ok(n)
}

/// The default `--jobs`: the available cores, within `MAX_JOBS`.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_JOBS))
}

/// `A..B` on the command line.
#[derive(Clone, Debug)]
pub struct SeedRange(pub Range<u64>);

/// `--window A..B`: a span of true time, e.g. `30s..45.5s`.
#[derive(Clone, Copy, Debug)]
pub struct TimeWindow(pub crate::time::SimTime, pub crate::time::SimTime);

impl FromStr for TimeWindow {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| format!("window {s:?} is not A..B (e.g. 30s..45s)"))?;
        let t = |x: &str| -> Result<crate::time::SimTime, String> {
            let ns = crate::scenario::units::parse_duration_ns(x.trim())
                .map_err(|e| format!("window {s:?}: {e}"))?;
            u64::try_from(ns)
                .map(crate::time::SimTime)
                .map_err(|_| format!("window {s:?}: {x:?} is before the start of the run"))
        };
        let (a, b) = (t(a)?, t(b)?);
        if b <= a {
            return Err(format!(
                "window {s:?} is empty: its end is not after its start"
            ));
        }
        Ok(TimeWindow(a, b))
    }
}

impl FromStr for SeedRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| format!("seed range {s:?} is not A..B (e.g. 0..1000)"))?;
        let a: u64 = a
            .trim()
            .parse()
            .map_err(|_| format!("seed range start {a:?} is not a number"))?;
        let b: u64 = b
            .trim()
            .parse()
            .map_err(|_| format!("seed range end {b:?} is not a number"))?;
        if b <= a {
            return Err(format!("seed range {s:?} is empty (the end is excluded)"));
        }
        if b - a > MAX_SWEEP_SEEDS {
            return Err(format!(
                "seed range {s:?} has more than {MAX_SWEEP_SEEDS} seeds"
            ));
        }
        Ok(SeedRange(a..b))
    }
}

/// `I/N` on the command line.
#[derive(Clone, Copy, Debug)]
pub struct ShardArg(pub Shard);

impl FromStr for ShardArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("shard {s:?} is not I/N (e.g. 0/4)"))?;
        let index: u64 = i
            .trim()
            .parse()
            .map_err(|_| format!("shard index {i:?} is not a number"))?;
        let count: u64 = n
            .trim()
            .parse()
            .map_err(|_| format!("shard count {n:?} is not a number"))?;
        if count == 0 || index >= count {
            return Err(format!("shard {s:?}: need 0 <= I < N"));
        }
        Ok(ShardArg(Shard { index, count }))
    }
}

/// A model argument and its overrides, shared by the commands that take them (`run`,
/// `replay`, `sweep`, `explore`, `search`): `#[command(flatten)]` it, load it with
/// `Ctx::load_model`.
#[derive(clap::Args, Clone, Debug)]
pub struct ModelArg {
    /// Model file, or the name of a bundled model (`distlock-sim list`), e.g. single-px-del-pause.
    #[arg(value_name = "MODEL")]
    pub file: String,
    /// Change a field of the model for this command, as the same edit to the file would:
    /// NAME.FIELD=VALUE, NAME a client group, a node, or a block (sentinels, network,
    /// resource, consensus, swarm); FIELD=VALUE alone for a field of the model. VALUE as in
    /// the file, a string without its quotes: --set c.ttl=25s, --set 'c.hold=("1s","3s")',
    /// --set duration=120s. Repeatable; printed replay lines carry it.
    #[arg(long = "set", value_name = "NAME.FIELD=VALUE")]
    pub set: Vec<crate::scenario::overrides::Override>,
    /// Run the model's variant NAME (an entry of its `variants:`, usually the fix) instead
    /// of the model as written: the same edit to the file its variant stands for, after any
    /// --set. Printed replay lines carry it.
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
}
