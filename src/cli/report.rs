//! What the command line prints: reports for run, replay and sweep. Kept in the library so
//! that tests can check the exact text users see.

use std::fmt::Write as _;

use crate::check::witness::Hazard;
use crate::cli::args::SeedRange;
use crate::explore::{self, Shard, SweepSummary};
use crate::scenario::{Expect, Scenario};
use crate::sim::{RunEnd, TraceMode};
use crate::time::{fmt_duration_ns, fmt_signed_ns};
use crate::view::timeline::{self, Messages, TimelineOptions};

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

/// What a run or a sweep amounts to; each has its exit code (2, bad input, is the loader's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every checked property held, in runs that all reached their end.
    Held,
    /// Some property was violated (whatever else happened: a violation is a fact).
    Violated,
    /// No violation, but some run stopped on a budget before its duration: what held there
    /// held only as far as it ran.
    Inconclusive,
    /// No violation and every run reached its end, but a hazard the model requires
    /// (`witness`) was never reached: "held" would claim more than the runs showed.
    Vacuous,
}

impl Outcome {
    /// Violations win over inconclusive runs, and those over a hazard not reached (a run
    /// stopped early may simply not have got there).
    pub fn of(violated: bool, inconclusive: bool, vacuous: bool) -> Outcome {
        match (violated, inconclusive, vacuous) {
            (true, _, _) => Outcome::Violated,
            (false, true, _) => Outcome::Inconclusive,
            (false, false, true) => Outcome::Vacuous,
            (false, false, false) => Outcome::Held,
        }
    }
    /// 0 held, 1 violated, 3 inconclusive, 4 vacuous.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Held => 0,
            Outcome::Violated => 1,
            Outcome::Inconclusive => 3,
            Outcome::Vacuous => 4,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Held => "held",
            Outcome::Violated => "violated",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Vacuous => "vacuous",
        }
    }
}

/// `inconclusive: event budget of N events reached at t=... before the model's duration (D)`
/// for a run that stopped on a budget at `at`; None for a run that reached its end.
pub fn inconclusive_text(sc: &Scenario, end: RunEnd, at: crate::time::SimTime) -> Option<String> {
    match end {
        RunEnd::TimeLimit | RunEnd::Quiescent => None,
        RunEnd::EventLimit => Some(format!(
            "inconclusive: event budget of {} events reached at t={at} before the model's duration ({})",
            sc.limits.max_events,
            fmt_duration_ns(sc.limits.max_time.0)
        )),
        RunEnd::HistoryLimit => Some(format!(
            "inconclusive: history memory budget of {} MiB reached at t={at} before the model's duration ({})",
            crate::history::HISTORY_BUDGET_BYTES >> 20,
            fmt_duration_ns(sc.limits.max_time.0)
        )),
    }
}

/// `run` and `replay`: verdict, realised faults, and the timeline. Returns the text and
/// what the run amounts to.
pub fn run_report(sc: &Scenario, seed: u64, messages: Messages) -> (String, Outcome) {
    // Without messages the timeline reads no trace entry: only the cap's note is printed,
    // which a counting trace knows without holding ~190 bytes an entry.
    let trace = match messages {
        Messages::None => TraceMode::Count,
        Messages::AroundViolations | Messages::All => TraceMode::Full,
    };
    let (outcome, world) = explore::run_world(sc, seed, trace);
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
        for f in applied.iter().take(40) {
            let _ = writeln!(s, "  {}  {}", f.at, world.describe_fault(f));
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
    let inconclusive = inconclusive_text(sc, outcome.end, outcome.ended_at);
    if let Some(t) = &inconclusive {
        let _ = writeln!(s, "{t}");
    }
    s.push_str(&verdict_text(
        sc,
        seed,
        &outcome.violations,
        inconclusive.is_some(),
    ));
    let _ = writeln!(
        s,
        "{}",
        run_expectation_line(sc, &outcome.violations, inconclusive.is_some())
    );
    let names = world.names();
    let reached = crate::check::witness::witnesses(&world.history);
    s.push_str(&run_witness_text(sc, &reached, &|p| {
        names[p.index()].clone()
    }));
    let missing = outcome.missing_witnesses(sc);
    if outcome.violations.is_empty() && !missing.is_empty() {
        let _ = writeln!(
            s,
            "VACUOUS: this seed never reached {} (required by `witness`): that nothing broke says nothing about it",
            hazard_names(&missing)
        );
    }
    let outcome = Outcome::of(
        outcome.violated(),
        outcome.inconclusive(),
        !missing.is_empty(),
    );
    (s, outcome)
}

fn hazard_names(hs: &[Hazard]) -> String {
    hs.iter().map(|h| h.name()).collect::<Vec<_>>().join(", ")
}

/// `run`: the hazards one seed reached, each at its first occurrence.
pub fn run_witness_text(
    sc: &Scenario,
    reached: &[crate::check::witness::Witness],
    name: &dyn Fn(crate::time::ProcId) -> String,
) -> String {
    let mut s = String::new();
    if reached.is_empty() {
        let _ = writeln!(s, "witnesses: none reached");
    } else {
        let items: Vec<String> = reached
            .iter()
            .map(|w| {
                let who: Vec<String> = w.actors.iter().map(|p| name(*p)).collect();
                format!("{} (at {}, {})", w.hazard, w.at, who.join("/"))
            })
            .collect();
        let _ = writeln!(s, "witnesses: {}", items.join(", "));
    }
    if !sc.model.witness.is_empty() {
        let _ = writeln!(
            s,
            "{}",
            required_text(sc, &|h| reached.iter().any(|w| w.hazard == h))
        );
    }
    s
}

/// `required: a (reached), b (NOT reached)`.
fn required_text(sc: &Scenario, was_reached: &dyn Fn(Hazard) -> bool) -> String {
    let items: Vec<String> = sc
        .model
        .witness
        .iter()
        .map(|h| {
            let how = if was_reached(h.0) {
                "reached"
            } else {
                "NOT reached"
            };
            format!("{} ({how})", h.0)
        })
        .collect();
    format!("required witnesses: {}", items.join(", "))
}

/// The sweep's witness lines: each hazard reached, in how many seeds and first where; then
/// the model's required hazards.
pub fn sweep_witness_text(sc: &Scenario, summary: &SweepSummary) -> String {
    let mut s = String::new();
    if summary.witnesses.is_empty() {
        let _ = writeln!(s, "  witnesses: none reached");
    } else {
        let items: Vec<String> = summary
            .witnesses
            .iter()
            .map(|(h, (n, first))| format!("{h} {n}/{} (first seed {first})", summary.seeds_run))
            .collect();
        let _ = writeln!(s, "  witnesses: {}", items.join(", "));
    }
    if !sc.model.witness.is_empty() {
        let _ = writeln!(
            s,
            "  {}",
            required_text(sc, &|h| summary.witnesses.contains_key(&h))
        );
    }
    s
}

/// The vacuous verdict, when it applies: nothing violated, and a required hazard unreached.
pub fn vacuity_line(sc: &Scenario, summary: &SweepSummary) -> Option<String> {
    summary.vacuous(sc).then(|| {
        format!(
            "VACUOUS: no seed reached {} (required by `witness`): that nothing broke says nothing about it",
            hazard_names(&summary.missing_witnesses(sc))
        )
    })
}

/// Per-property verdict lines, with the replay command for violations. `inconclusive`: the
/// run stopped on a budget, so what held, held only as far as it ran.
pub fn verdict_text(
    sc: &Scenario,
    seed: u64,
    violations: &[crate::check::Violation],
    inconclusive: bool,
) -> String {
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
            None if inconclusive => {
                let _ = writeln!(s, "held     {p} (as far as the run went: inconclusive)");
            }
            None => {
                let _ = writeln!(s, "held     {p}");
            }
        }
    }
    if !violations.is_empty() {
        let _ = writeln!(s, "replay: {}", sc.replay_command(seed));
    }
    s
}

/// `sweep`: the declared verdict against the set of properties violated in any seed,
/// compared as sets (`scenario::expectation`).
fn expectation_line(sc: &Scenario, summary: &SweepSummary) -> String {
    let Some(expect) = &sc.model.expect else {
        return "expected: nothing declared".into();
    };
    let c = expect.compare(summary.violated_properties());
    let judgement = if !c.matches() {
        format!("NOT as declared: {}", c.differences(""))
    } else if summary.inconclusive_seeds > 0 {
        format!(
            "as declared, over the {} conclusive seeds; {} inconclusive",
            summary.conclusive_seeds(),
            summary.inconclusive_seeds
        )
    } else {
        "as declared".into()
    };
    format!(
        "expected: {} — observed: {} ({judgement})",
        expect_text(Some(expect)),
        c.observed_text()
    )
}

/// `run`: the declared verdict against this one seed. A property violated but not declared
/// contradicts the declaration; a declared one not violated here does not (an unsafe model
/// need not fail in every seed: a sweep decides).
pub fn run_expectation_line(
    sc: &Scenario,
    violations: &[crate::check::Violation],
    inconclusive: bool,
) -> String {
    let Some(expect) = &sc.model.expect else {
        return "expected: nothing declared".into();
    };
    let c = expect.compare(violations.iter().map(|v| v.property));
    let judgement = if c.matches() {
        // A violation is a fact however the run ended; "holds" is only as far as it went.
        if inconclusive && c.declared.is_empty() {
            "as declared so far: the run was inconclusive".to_string()
        } else {
            "as declared".to_string()
        }
    } else if !c.undeclared().is_empty() {
        format!("NOT as declared: {}", c.differences(" in this seed"))
    } else {
        format!(
            "{}; a declared violation need not happen in every seed: `sweep` decides",
            c.differences(" in this seed")
        )
    };
    format!(
        "expected: {} — observed in this seed: {} ({judgement})",
        expect_text(Some(expect)),
        c.observed_text()
    )
}

fn shard_text(shard: Shard) -> String {
    if shard == Shard::WHOLE {
        String::new()
    } else {
        format!(", shard {}/{}", shard.index, shard.count)
    }
}

/// The sweep summary people read.
pub fn sweep_text(
    sc: &Scenario,
    summary: &SweepSummary,
    seeds: &SeedRange,
    shard: Shard,
    jobs: usize,
    wall_s: f64,
    stop: Option<&explore::stopping::Stop>,
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
    if let Some(stop) = stop {
        let _ = writeln!(s, "{}", stop.text());
    }
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
            None if summary.conclusive_seeds() == 0 => {
                let _ = writeln!(
                    s,
                    "  {:<18} not decided: no seed ran to its end ({} inconclusive: held as far as they ran)",
                    p.name(),
                    summary.inconclusive_seeds
                );
            }
            None if summary.inconclusive_seeds > 0 => {
                let _ = writeln!(
                    s,
                    "  {:<18} held in all {} conclusive seeds ({} inconclusive: held as far as they ran)",
                    p.name(),
                    summary.conclusive_seeds(),
                    summary.inconclusive_seeds
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
        if let Some(line) = rate_line(summary, *p) {
            let _ = writeln!(s, "{line}");
        }
    }
    s.push_str(&sweep_witness_text(sc, summary));
    if let Some((ns, seed)) = summary.longest_overlap {
        let mean = summary.total_overlap_ns / summary.seeds_run.max(1);
        let _ = writeln!(
            s,
            "  two holders at once: longest single stretch {} (seed {seed}); in total {} per seed on average",
            fmt_duration_ns(ns),
            fmt_duration_ns(mean)
        );
    }
    if let Some(line) = overlap_rate_line(summary) {
        let _ = writeln!(s, "{line}");
    }
    if let Some(line) = closest_approach_line(summary) {
        let _ = writeln!(s, "{line}");
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
    if let Some((seed, end, at)) = summary.first_inconclusive {
        let _ = writeln!(
            s,
            "  inconclusive: {} of {} seeds stopped before the model's duration (first: seed {seed}, {})",
            summary.inconclusive_seeds,
            summary.seeds_run,
            inconclusive_text(sc, end, at)
                .unwrap_or_default()
                .trim_start_matches("inconclusive: ")
        );
    }
    // The line above names the first seed's budget; say so when the seeds stopped on both.
    if summary.history_limit_seeds > 0 && summary.history_limit_seeds < summary.inconclusive_seeds {
        let _ = writeln!(
            s,
            "  of those, {} at the history memory budget of {} MiB, the rest at the event budget",
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
            let _ = writeln!(s, "  replay: {}", sc.replay_command(seed));
            let _ = writeln!(
                s,
                "  picture: {} --format html --out {}-seed{seed}.html",
                sc.replay_command(seed),
                sc.name
            );
        }
        None => {
            let _ = writeln!(s, "no violation");
        }
    }
    let _ = writeln!(s, "{}", expectation_line(sc, summary));
    if let Some(line) = vacuity_line(sc, summary) {
        let _ = writeln!(s, "{line}");
    }
    s
}

/// `    rate: per seed 81.75 % [77.60 %, 85.43 %], per acquisition ...`: a property's rates
/// with their 95 % intervals; for a property that held, the upper bounds. None when no seed
/// decided it, or when the figures are missing (a shard of an older build).
fn rate_line(summary: &SweepSummary, p: crate::check::Property) -> Option<String> {
    use crate::explore::rate::percent;
    if summary.rates_missing {
        return Some("    rate: not available (a merged shard was written by a build that did not count rates)".into());
    }
    let seeds = summary.per_seed(p);
    if seeds.n == 0 {
        return None;
    }
    let (lo, hi) = seeds.ci95();
    let mut line = if seeds.k == 0 {
        format!(
            "    rate at 95 %: per seed < {} (0 of {} seeds)",
            percent(hi),
            seeds.n
        )
    } else {
        format!(
            "    rate at 95 %: per seed {} [{}, {}] ({} of {} seeds)",
            percent(seeds.estimate()),
            percent(lo),
            percent(hi),
            seeds.k,
            seeds.n
        )
    };
    if let Some(r) = summary.per_acquisition.get(&p)
        && r.sum_n > 0
    {
        let (lo, hi) = r.rate_ci95();
        if r.sum_x == 0 {
            let _ = write!(
                line,
                ", per acquisition < {} (0 of {})",
                percent(hi),
                r.sum_n
            );
        } else {
            let _ = write!(
                line,
                ", per acquisition {} [{}, {}] ({} of {})",
                percent(r.estimate()),
                percent(lo),
                percent(hi),
                r.sum_x,
                r.sum_n
            );
        }
    }
    Some(line)
}

/// Two-holder time per acquisition, with its 95 % interval over seeds.
fn overlap_rate_line(summary: &SweepSummary) -> Option<String> {
    let r = &summary.overlap_per_acquisition;
    if summary.rates_missing || r.sum_x == 0 {
        return None;
    }
    // Per acquisition reads better than per million here (the JSON gives per million).
    let ns = |x: f64| fmt_duration_ns(x.round() as u64);
    let mut line = format!(
        "  two holders at once per acquisition: {}",
        ns(r.estimate())
    );
    if let Some((lo, hi)) = r.delta_ci95() {
        let _ = write!(line, " [{}, {}] at 95 %", ns(lo), ns(hi));
    }
    Some(line)
}

/// How close the sweep came to a double grant: the shortest time a lock stood free between
/// two clients' holdings, and the smallest safety margin, each with its seed and time.
fn closest_approach_line(summary: &SweepSummary) -> Option<String> {
    let mut parts = Vec::new();
    if let Some((gap, seed, at)) = summary.closest_handover {
        parts.push(format!(
            "handover gap {} (seed {seed} at {at})",
            fmt_duration_ns(gap)
        ));
    }
    if let (Some((m, seed)), Some(at)) = (summary.min_margin, summary.min_margin_at) {
        parts.push(format!(
            "safety margin {} (seed {seed}, key gone at {at})",
            fmt_signed_ns(m)
        ));
    }
    (!parts.is_empty()).then(|| format!("  closest approach: {}", parts.join("; ")))
}

/// `"rates"` of the `--json` summary: per checked property, per seed and per acquisition,
/// each as {"k", "n", "p", "ci95": [lo, hi]}.
pub fn rates_json(sc: &Scenario, summary: &SweepSummary) -> serde_json::Value {
    use serde_json::json;
    if summary.rates_missing {
        return serde_json::Value::Null;
    }
    let m: serde_json::Map<String, serde_json::Value> = sc
        .properties
        .iter()
        .map(|p| {
            let seeds = summary.per_seed(*p);
            let (lo, hi) = seeds.ci95();
            let per_acq = summary.per_acquisition.get(p).map(|r| {
                let (lo, hi) = r.rate_ci95();
                json!({
                    "k": u64::try_from(r.sum_x).unwrap_or(u64::MAX),
                    "n": u64::try_from(r.sum_n).unwrap_or(u64::MAX),
                    "p": r.estimate(),
                    "ci95": [lo, hi],
                })
            });
            (
                p.name().to_string(),
                json!({
                    "per_seed": {"k": seeds.k, "n": seeds.n, "p": seeds.estimate(), "ci95": [lo, hi]},
                    "per_acquisition": per_acq,
                }),
            )
        })
        .collect();
    serde_json::Value::Object(m)
}

/// What a sweep amounts to: violated if any seed violated, else inconclusive if any seed
/// stopped on a budget, else held.
pub fn sweep_outcome(sc: &Scenario, summary: &SweepSummary) -> Outcome {
    Outcome::of(
        summary.violating_seeds > 0,
        summary.inconclusive_seeds > 0,
        summary.vacuous(sc),
    )
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
        "replay": sc.replay_command(seed),
    })
    .to_string()
}

/// `"witnesses": {"pause_outlived_key": {"seeds": 812, "first": 0}, ...}`: hazards reached.
pub fn witnesses_json(summary: &SweepSummary) -> serde_json::Value {
    let m: serde_json::Map<String, serde_json::Value> = summary
        .witnesses
        .iter()
        .map(|(h, (n, first))| {
            (
                h.name().to_string(),
                serde_json::json!({"seeds": n, "first": first}),
            )
        })
        .collect();
    serde_json::Value::Object(m)
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
    sweep_json_with(sc, summary, seeds, shard, jobs, wall_s, Vec::new())
}

/// `sweep_json`, with `extra` keys added to the summary: the `partial` object a `--shard`
/// sweep adds for `merge`, `stopped` of a stopping rule.
pub fn sweep_json_with(
    sc: &Scenario,
    summary: &SweepSummary,
    seeds: &SeedRange,
    shard: Shard,
    jobs: usize,
    wall_s: f64,
    extra: Vec<(&str, serde_json::Value)>,
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
        "inconclusive_seeds": summary.inconclusive_seeds,
        "first_inconclusive_seed": summary.first_inconclusive.map(|(seed, _, _)| seed),
        "first_inconclusive_at_ns": summary.first_inconclusive.map(|(_, _, at)| at.0),
        "outcome": sweep_outcome(sc, summary).name(),
        "as_declared": sc
            .model
            .expect
            .as_ref()
            .map(|e| e.compare(summary.violated_properties()).matches()),
        "history_limit_seeds": summary.history_limit_seeds,
        "longest_overlap_ns": summary.longest_overlap.map(|(ns, _)| ns),
        "longest_overlap_seed": summary.longest_overlap.map(|(_, seed)| seed),
        "mean_overlap_ns_per_seed": summary.total_overlap_ns / summary.seeds_run.max(1),
        "min_safety_margin_ns": summary.min_margin.map(|(ns, _)| ns),
        "min_safety_margin_seed": summary.min_margin.map(|(_, seed)| seed),
        "safety_margins": margins,
        "min_safety_margin_at_ns": summary.min_margin_at.map(|t| t.0),
        "rates": rates_json(sc, summary),
        "overlap_per_million_acquisitions_ns": (!summary.rates_missing).then(|| {
            let r = &summary.overlap_per_acquisition;
            json!({
                "p": r.estimate() * 1e6,
                "ci95": r.delta_ci95().map(|(lo, hi)| [lo * 1e6, hi * 1e6]),
            })
        }),
        "closest_handover": summary.closest_handover.map(|(gap, seed, at)| json!({"gap_ns": gap, "seed": seed, "at_ns": at.0})),
        "witnesses": witnesses_json(summary),
        "witness_required": sc.model.witness.iter().map(|h| h.0.name()).collect::<Vec<_>>(),
        "witness_missing": summary.missing_witnesses(sc).iter().map(|h| h.name()).collect::<Vec<_>>(),
        "vacuous": summary.vacuous(sc),
        "jobs": jobs,
        "wall_s": (wall_s * 1000.0).round() / 1000.0,
        "seeds_per_s": (summary.seeds_run as f64 / wall_s.max(1e-9) * 10.0).round() / 10.0,
    }});
    let mut line = line;
    for (k, v) in extra {
        line["summary"][k] = v;
    }
    let _ = writeln!(s, "{line}");
    s
}

/// `hunt`: the median seeds to the first violation, one line per hunt, and a replay line for
/// the first violating seed found.
pub fn hunt_text(
    sc: &Scenario,
    results: &[explore::HuntResult],
    max_seeds: u64,
    adversary: &str,
    sparser: u32,
    wall_s: f64,
) -> String {
    let mut text = String::new();
    let mut counts: Vec<u64> = Vec::new();
    for r in results {
        match (r.seeds_to_violation, r.first_violating_seed) {
            (Some(n), Some(s)) => {
                counts.push(n);
                let _ = writeln!(
                    text,
                    "  from seed {}: first violation at seed {s} ({n} seeds)",
                    r.start
                );
            }
            _ => {
                let _ = writeln!(text, "  from seed {}: none in {max_seeds} seeds", r.start);
            }
        }
    }
    counts.sort_unstable();
    let found = counts.len();
    let median = if found == results.len() && found > 0 {
        format!("{}", counts[found / 2])
    } else {
        format!(
            "> {max_seeds} in {} of {} hunts",
            results.len() - found,
            results.len()
        )
    };
    if let Some(s) = results.iter().find_map(|r| r.first_violating_seed) {
        let _ = writeln!(text, "replay: {}", sc.replay_command(s));
    }
    let sparse = if sparser > 1 {
        format!(", {sparser}x sparser")
    } else {
        String::new()
    };
    format!(
        "model {} ({adversary} faults{sparse}): {} hunts, median seeds to first violation {median}, {wall_s:.2}s wall in all\n{text}",
        sc.name,
        results.len()
    )
}
