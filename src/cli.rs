//! What the command line prints: reports for run/replay/sweep/list, and argument types.
//! Kept in the library so that tests can check the exact text users see.

use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::check::Property;
use crate::explore::timeline::{self, Messages, TimelineOptions};
use crate::explore::{self, Shard, SweepSummary};
use crate::scenario::{Expect, Scenario};
use crate::sim::{RunEnd, TraceMode};
use crate::time::fmt_duration_ns;

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

/// The bundled models directory: `./models` if present, else the one in the source tree.
pub fn models_dir() -> PathBuf {
    let local = PathBuf::from("models");
    if local.is_dir() {
        local
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
    }
}

/// A model argument: a path, or the name of a bundled model.
pub fn resolve_model(arg: &str) -> String {
    if Path::new(arg).exists() || arg.ends_with(".ron") || arg.contains('/') {
        return arg.to_string();
    }
    let p = models_dir().join(format!("{arg}.ron"));
    if p.exists() {
        p.display().to_string()
    } else {
        arg.to_string()
    }
}

pub fn expect_text(e: Option<&Expect>) -> String {
    match e {
        None => "nothing declared".into(),
        Some(Expect::Holds) => "holds".into(),
        Some(Expect::Violates(v)) => {
            format!(
                "violates({})",
                v.iter().map(|p| p.0.name()).collect::<Vec<_>>().join(", ")
            )
        }
    }
}

/// `list`: one line per bundled model.
pub fn list_models(dir: &Path) -> Result<String, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    paths.sort();
    let mut s = String::new();
    for p in paths {
        match crate::scenario::load(&p) {
            Ok(sc) => {
                let _ = writeln!(s, "{:<28} {}", sc.name, sc.model.description);
                let _ = writeln!(
                    s,
                    "{:<28} expect: {}",
                    "",
                    expect_text(sc.model.expect.as_ref())
                );
            }
            Err(e) => {
                let _ = writeln!(
                    s,
                    "{:<34} INVALID: {e}",
                    p.file_stem().unwrap_or_default().to_string_lossy()
                );
            }
        }
    }
    Ok(s)
}

/// The command that replays a seed.
pub fn replay_command(sc: &Scenario, seed: u64) -> String {
    format!(
        "distlock-sim replay {} --seed {seed}{}",
        sc.path, sc.replay_flags
    )
}

fn end_text(end: RunEnd) -> &'static str {
    match end {
        RunEnd::TimeLimit => "ran to its duration",
        RunEnd::EventLimit => {
            "STOPPED at the event limit (inconclusive: raise max_events or look for a livelock)"
        }
        RunEnd::Quiescent => "stopped: nothing left to do",
        RunEnd::HistoryLimit => {
            "STOPPED at the history memory budget (inconclusive: the verdict covers the run up to here; shorten the duration)"
        }
    }
}

/// `run` and `replay`: verdict, realised faults, and the timeline. Returns the text and
/// whether a checked property was violated.
pub fn run_report(sc: &Scenario, seed: u64, messages: Messages) -> (String, bool) {
    let (outcome, world) = explore::run_world(sc, seed, TraceMode::Full);
    let mut s = String::new();
    let _ = writeln!(s, "model {} ({}), seed {seed}", sc.name, sc.path);
    let _ = writeln!(
        s,
        "{} simulated, {} events, {} acquisitions: {}",
        world.now(),
        outcome.events,
        outcome.acquisitions,
        end_text(outcome.end)
    );
    if let Some(cap) = world.trace.cap() {
        let _ = writeln!(s, "{}", cap.note());
    }
    let swarm = sc.swarm_text(seed);
    if !swarm.is_empty() {
        let _ = writeln!(s, "swarm drawn by this seed: {}", swarm.join("; "));
    }
    // What was applied, triggered faults included (the schedule drawn up front has only
    // the scripted and random ones).
    let applied = &world.applied_faults;
    if applied.is_empty() {
        let _ = writeln!(s, "faults: none");
    } else {
        let _ = writeln!(s, "faults applied ({}):", applied.len());
        for (at, f) in applied.iter().take(40) {
            let _ = writeln!(s, "  {at}  {}", world.describe_fault(f));
        }
        if applied.len() > 40 {
            let _ = writeln!(s, "  ... {} more", applied.len() - 40);
        }
    }
    let lock_keys = sc.lock_keys();
    let _ = writeln!(s);
    match messages {
        Messages::AroundViolations if !outcome.violations.is_empty() => {
            let _ = writeln!(
                s,
                "messages: shown from {} before to {} after each violation (--messages all: every one)",
                crate::time::fmt_duration_ns(timeline::WINDOW_BEFORE_NS),
                crate::time::fmt_duration_ns(timeline::WINDOW_AFTER_NS)
            );
        }
        _ => {}
    }
    s.push_str(&timeline::render(
        &world,
        &outcome.violations,
        &lock_keys,
        sc.epoch_unix_ms,
        TimelineOptions { messages },
    ));
    let _ = writeln!(s);
    s.push_str(&verdict_text(sc, seed, &outcome.violations));
    (s, !outcome.violations.is_empty())
}

/// Per-property verdict lines, with the replay command for violations.
pub fn verdict_text(sc: &Scenario, seed: u64, violations: &[crate::check::Violation]) -> String {
    let mut s = String::new();
    for p in &sc.properties {
        match violations.iter().find(|v| v.property == *p) {
            Some(v) => {
                let _ = writeln!(
                    s,
                    "VIOLATED {p} at {} (seed {seed}):\n         {}",
                    v.at, v.message
                );
            }
            None => {
                let _ = writeln!(s, "held     {p}");
            }
        }
    }
    if !violations.is_empty() {
        let _ = writeln!(s, "replay: {}", replay_command(sc, seed));
    }
    s
}

fn expectation_line(sc: &Scenario, summary: &SweepSummary) -> String {
    let observed = summary.violated_properties();
    match &sc.model.expect {
        None => "expected: nothing declared".into(),
        Some(Expect::Holds) if observed.is_empty() => {
            "expected: holds — observed: holds (as declared)".into()
        }
        Some(Expect::Holds) => {
            format!(
                "expected: holds — observed: VIOLATED {} (NOT as declared)",
                names(&observed)
            )
        }
        Some(Expect::Violates(v)) => {
            let want: Vec<Property> = v.iter().map(|p| p.0).collect();
            let all = want.iter().all(|p| observed.contains(p));
            format!(
                "expected: violates({}) — observed: {} ({})",
                names(&want),
                if observed.is_empty() {
                    "holds".into()
                } else {
                    format!("violates({})", names(&observed))
                },
                if all {
                    "as declared"
                } else {
                    "NOT as declared"
                }
            )
        }
    }
}

fn names(ps: &[Property]) -> String {
    ps.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
}

fn shard_text(shard: Shard) -> String {
    if shard == Shard::WHOLE {
        String::new()
    } else {
        format!(", shard {}/{}", shard.index, shard.count)
    }
}

/// A signed duration for people: `-3.2s`, `+850ms`.
pub fn fmt_signed_ns(ns: i64) -> String {
    format!(
        "{}{}",
        if ns < 0 { '-' } else { '+' },
        fmt_duration_ns(ns.unsigned_abs())
    )
}

/// The sweep summary people read.
pub fn sweep_text(
    sc: &Scenario,
    summary: &SweepSummary,
    seeds: &SeedRange,
    shard: Shard,
    jobs: usize,
    wall_s: f64,
) -> String {
    let mut s = String::new();
    let rate = summary.seeds_run as f64 / wall_s.max(1e-9);
    let _ = writeln!(
        s,
        "model {}: {} seeds ({}..{}{}) in {wall_s:.2}s wall, {rate:.0} seeds/s, jobs {jobs}",
        sc.name,
        summary.seeds_run,
        seeds.0.start,
        seeds.0.end,
        shard_text(shard)
    );
    let _ = writeln!(
        s,
        "simulated {} per seed, {} events, {} acquisitions in all",
        fmt_duration_ns(sc.limits.max_time.0),
        summary.events,
        summary.acquisitions
    );
    for p in &sc.properties {
        let n = summary.violations_per_property.get(p).copied().unwrap_or(0);
        let first = summary.first_seed_per_property.get(p).copied();
        match first {
            Some(f) => {
                let _ = writeln!(
                    s,
                    "  {:<18} VIOLATED in {n} of {} seeds (first: seed {f})",
                    p.name(),
                    summary.seeds_run
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "  {:<18} held in all {} seeds",
                    p.name(),
                    summary.seeds_run
                );
            }
        }
    }
    if let Some((ns, seed)) = summary.longest_overlap {
        let mean = summary.total_overlap_ns / summary.seeds_run.max(1);
        let _ = writeln!(
            s,
            "  two holders at once: longest {} (seed {seed}), {} per seed on average",
            fmt_duration_ns(ns),
            fmt_duration_ns(mean)
        );
    }
    if let Some((ns, seed)) = summary.min_margin {
        let hist: Vec<String> = crate::check::margin::MARGIN_BUCKETS
            .iter()
            .zip(summary.margin_histogram)
            .filter(|(_, n)| *n > 0)
            .map(|((_, label), n)| format!("{label}: {n}"))
            .collect();
        let _ = writeln!(
            s,
            "  safety margin (key gone - believed end): min {} (seed {seed}); {}",
            fmt_signed_ns(ns),
            hist.join(", ")
        );
    }
    if summary.event_limit_seeds > 0 {
        let _ = writeln!(
            s,
            "  {} seeds stopped at the event limit (inconclusive)",
            summary.event_limit_seeds
        );
    }
    if summary.history_limit_seeds > 0 {
        let _ = writeln!(
            s,
            "  {} seeds stopped at the history memory budget of {} MB (inconclusive)",
            summary.history_limit_seeds,
            crate::history::HISTORY_BUDGET_BYTES >> 20
        );
    }
    match summary.first_violating_seed {
        Some(seed) => {
            let _ = writeln!(s, "first violating seed: {seed}");
            let swarm = sc.swarm_text(seed);
            if !swarm.is_empty() {
                let _ = writeln!(s, "  swarm drawn: {}", swarm.join("; "));
            }
            for v in &summary.first_violations {
                let _ = writeln!(s, "  {} at {}: {}", v.property, v.at, v.message);
            }
            let _ = writeln!(s, "  replay: {}", replay_command(sc, seed));
            let _ = writeln!(
                s,
                "  picture: {} --format html --out {}-seed{seed}.html",
                replay_command(sc, seed),
                sc.name
            );
        }
        None => {
            let _ = writeln!(s, "no violation");
        }
    }
    let _ = writeln!(s, "{}", expectation_line(sc, summary));
    s
}

/// `--json`: the line of one violating seed (printed as the sweep finds it).
pub fn violating_seed_json(sc: &Scenario, seed: u64, vs: &[crate::check::Violation]) -> String {
    use serde_json::json;
    let name = |p: &crate::time::ProcId| sc.procs[p.index()].0.clone();
    let viols: Vec<serde_json::Value> = vs
        .iter()
        .map(|v| {
            json!({
                "property": v.property.name(),
                "at_ns": v.at.0,
                "actors": v.actors.iter().map(name).collect::<Vec<_>>(),
                "message": v.message,
            })
        })
        .collect();
    json!({
        "model": sc.name,
        "seed": seed,
        "swarm": sc.swarm_text(seed),
        "violations": viols,
        "replay": replay_command(sc, seed),
    })
    .to_string()
}

/// `--json`: the summary line that ends the output.
pub fn sweep_json(
    sc: &Scenario,
    summary: &SweepSummary,
    seeds: &SeedRange,
    shard: Shard,
    jobs: usize,
    wall_s: f64,
) -> String {
    use serde_json::json;
    let mut s = String::new();
    let per: serde_json::Map<String, serde_json::Value> = sc
        .properties
        .iter()
        .map(|p| {
            (
                p.name().to_string(),
                json!(summary.violations_per_property.get(p).copied().unwrap_or(0)),
            )
        })
        .collect();
    let margins: serde_json::Map<String, serde_json::Value> = crate::check::margin::MARGIN_BUCKETS
        .iter()
        .zip(summary.margin_histogram)
        .map(|((_, label), n)| (label.to_string(), json!(n)))
        .collect();
    let line = json!({ "summary": {
        "model": sc.name,
        "seeds": [seeds.0.start, seeds.0.end],
        "shard": [shard.index, shard.count],
        "seeds_run": summary.seeds_run,
        "violating_seeds": summary.violating_seeds,
        "violations_per_property": per,
        "first_violating_seed": summary.first_violating_seed,
        "event_limit_seeds": summary.event_limit_seeds,
        "history_limit_seeds": summary.history_limit_seeds,
        "longest_overlap_ns": summary.longest_overlap.map(|(ns, _)| ns),
        "longest_overlap_seed": summary.longest_overlap.map(|(_, seed)| seed),
        "mean_overlap_ns_per_seed": summary.total_overlap_ns / summary.seeds_run.max(1),
        "min_safety_margin_ns": summary.min_margin.map(|(ns, _)| ns),
        "min_safety_margin_seed": summary.min_margin.map(|(_, seed)| seed),
        "safety_margins": margins,
        "jobs": jobs,
        "wall_s": (wall_s * 1000.0).round() / 1000.0,
        "seeds_per_s": (summary.seeds_run as f64 / wall_s.max(1e-9) * 10.0).round() / 10.0,
    }});
    let _ = writeln!(s, "{line}");
    s
}
