//! Safety maps (`distlock-sim map MODEL --x FIELD=A..B:N [--y FIELD=A..B:M]`): a sweep of
//! seeds at every cell of a grid of one or two of the model's fields, each cell's violating
//! fraction with its exact 95 % interval, drawn as a heat map with the boundary between the
//! cells where no seed violated and those where one did, and, where the model's family has
//! one, the textbook inequality beside it (docs/map.md).
//!
//! A cell is the model with the user's `--set`s and the axes' values spliced in
//! (`scenario::overrides`), read by the loader as a file would be: so a cell means what the
//! same edit to the file would mean, and every cell is loaded before any runs (bad input is
//! refused at once, exit 2, naming the `--set` it came from).

use std::fmt::Write as _;

use crate::explore::rate::clopper_pearson;
use crate::explore::systematic::ExploreConfig;
use crate::explore::threshold::{self, Unit};
use crate::explore::{self, Shard, SweepSummary};
use crate::scenario::Scenario;
use crate::scenario::clients::AlgorithmSpec;
use crate::scenario::model::{FaultSpec, RandomFaultSpec, Target};
use crate::scenario::overrides::{Override, load_with};
use crate::scenario::units::parse_duration_ns;
use crate::time::{NS_PER_MS, NS_PER_S, NS_PER_US};

/// Most values on one axis (a map is for looking at: 64 × 64 cells).
pub const MAX_STEPS: usize = 64;

/// One axis: `NAME.FIELD=A..B:N`, N values from A to B evenly spaced.
#[derive(Clone, Debug)]
pub struct Axis {
    /// `NAME.FIELD` (or `FIELD`) as written.
    pub field: String,
    /// The values as spliced into the model (`12500ms`, `3`).
    pub texts: Vec<String>,
    /// The same values as numbers to draw: seconds for a duration, else the number.
    pub values: Vec<f64>,
    /// A duration (drawn in s).
    pub duration: bool,
}

impl std::str::FromStr for Axis {
    type Err = String;
    fn from_str(s: &str) -> Result<Axis, String> {
        let form = "is not FIELD=A..B:N (e.g. c.ttl=5s..20s:16, sentinels.quorum=1..3:3)";
        let (field, range) = s.split_once('=').ok_or_else(|| format!("{s:?} {form}"))?;
        let (span, n) = range
            .rsplit_once(':')
            .ok_or_else(|| format!("{s:?} {form}"))?;
        let (a, b) = span
            .split_once("..")
            .ok_or_else(|| format!("{s:?} {form}"))?;
        let n: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("{s:?}: N {n:?} is not a number of steps"))?;
        if !(1..=MAX_STEPS).contains(&n) {
            return Err(format!("{s:?}: N is {n}, not in 1..={MAX_STEPS}"));
        }
        // The field as an override takes it (the same checks and errors).
        let probe: Override = format!("{field}=0").parse()?;
        let (a, b) = (a.trim(), b.trim());
        let as_number = |t: &str| t.parse::<f64>().ok().filter(|x| x.is_finite());
        let (texts, values, duration) = match (as_number(a), as_number(b)) {
            (Some(x), Some(y)) => {
                let integral = a.parse::<i64>().is_ok()
                    && b.parse::<i64>().is_ok()
                    && (n == 1 || (y - x) as i64 % (n as i64 - 1).max(1) == 0);
                let vals: Vec<f64> = (0..n).map(|i| step(x, y, n, i)).collect();
                let texts = vals
                    .iter()
                    .map(|v| {
                        if integral {
                            format!("{}", v.round() as i64)
                        } else {
                            trim_float(*v)
                        }
                    })
                    .collect();
                (texts, vals, false)
            }
            _ => {
                let x = parse_duration_ns(a).map_err(|e| format!("{s:?}: {e}"))?;
                let y = parse_duration_ns(b).map_err(|e| format!("{s:?}: {e}"))?;
                let ns: Vec<i64> = (0..n)
                    .map(|i| step(x as f64, y as f64, n, i).round() as i64)
                    .collect();
                let texts = ns.iter().map(|&v| duration_text(v)).collect();
                let values = ns.iter().map(|&v| v as f64 / NS_PER_S as f64).collect();
                (texts, values, true)
            }
        };
        Ok(Axis {
            field: match probe.name {
                Some(name) => format!("{name}.{}", probe.field),
                None => probe.field,
            },
            texts,
            values,
            duration,
        })
    }
}

fn step(a: f64, b: f64, n: usize, i: usize) -> f64 {
    if n == 1 {
        a
    } else {
        a + (b - a) * i as f64 / (n - 1) as f64
    }
}

/// A duration in the largest unit that writes it exactly.
fn duration_text(ns: i64) -> String {
    let (neg, a) = (ns < 0, ns.unsigned_abs());
    let sign = if neg { "-" } else { "" };
    if a % NS_PER_S == 0 {
        format!("{sign}{}s", a / NS_PER_S)
    } else if a % NS_PER_MS == 0 {
        format!("{sign}{}ms", a / NS_PER_MS)
    } else if a % NS_PER_US == 0 {
        format!("{sign}{}us", a / NS_PER_US)
    } else {
        format!("{sign}{a}ns")
    }
}

/// A magnitude short enough for a cell: `7.08s`, `+1200ms`.
fn short(b: &Breaking) -> String {
    if b.holds_at.is_none() {
        // The smallest magnitude breaks it: the model is broken without this fault.
        return "any".into();
    }
    match b.unit {
        Unit::Window => short_ns(b.violates_at),
        Unit::Latency => format!("+{}", short_ns(b.violates_at)),
        Unit::Step | Unit::Drift => b.unit.text(b.violates_at),
    }
}

/// A window as a cell shows it: `7.08s`, `12.5s`, `4.4ms`, `12us`.
fn short_ns(ns: i64) -> String {
    let v = ns as f64 / NS_PER_S as f64;
    if v >= 10.0 {
        format!("{v:.1}s")
    } else if v >= 0.01 {
        format!("{v:.2}s")
    } else if v >= 1e-5 {
        format!("{:.1}ms", v * 1e3)
    } else {
        format!("{}us", ns / NS_PER_US as i64)
    }
}

fn trim_float(v: f64) -> String {
    let t = format!("{v:.6}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    t.to_string()
}

/// What one cell measured.
#[derive(Clone, Debug)]
pub struct Cell {
    pub ix: usize,
    pub iy: usize,
    pub seeds: u64,
    pub violating: u64,
    pub inconclusive: u64,
    /// Per checked property: seeds that violated it, of the seeds that decided it.
    pub rates: Vec<(String, u64, u64)>,
    /// The seeds that reached the hazard most of them reached (the sweep counts seeds per
    /// hazard, not their union): a lower bound on the seeds that reached any, and 0 exactly
    /// when none did — a cell that held with 0 met nothing to hold against.
    pub hazard_seeds: u64,
    /// The first violating seed (its replay command).
    pub first_violating: Option<u64>,
    /// `map --thresholds`: per fault kind, the smallest magnitude that breaks the cell's
    /// model (empty for a sweep's cell).
    pub least: Vec<Breaking>,
    /// Runs the cell's thresholds started.
    pub runs: u64,
}

/// `map --thresholds`: the smallest magnitude of one fault kind that breaks a cell's model,
/// at its most harmful one-fault start, over the cell's seeds and the kind's targets
/// (`threshold::smallest` on each seed).
#[derive(Clone, Debug)]
pub struct Breaking {
    /// The family as the thresholds name it ("pause", "clock step forward").
    pub kind: String,
    pub target: String,
    pub seed: u64,
    pub unit: Unit,
    /// Signed, as `Threshold::violates_at`; `holds_at` the magnitude 1 µs (1 ms) short of it
    /// that holds, `None` where the smallest magnitude already violates.
    pub violates_at: i64,
    pub holds_at: Option<i64>,
    /// When the fault opens.
    pub at_ns: u64,
    /// The two commands (`None` with `holds_at`), and whether running them from time 0
    /// held and violated.
    pub replay_holds: Option<String>,
    pub replay_violates: Option<String>,
    pub confirmed: Option<bool>,
    /// For a pause of a SET-NX-PX client: the textbook's edge, `ttl − longest hold` (a
    /// pause before the hold's end that outlasts what is left of the TTL), for comparison.
    pub textbook_ns: Option<i64>,
}

impl Breaking {
    /// The magnitude as text ("7.079121s", "+1200ms").
    pub fn text(&self) -> String {
        self.unit.text(self.violates_at)
    }
}

impl Cell {
    pub fn rate(&self) -> f64 {
        if self.seeds == 0 {
            0.0
        } else {
            self.violating as f64 / self.seeds as f64
        }
    }
}

/// The textbook edge of the model's family on these axes, where it has one.
#[derive(Clone, Debug)]
pub struct Textbook {
    /// As people write it.
    pub text: String,
    /// The edge, in the axes' numbers: y as a function of x (two axes), or an x (one axis).
    pub edge: Edge,
}

#[derive(Clone, Debug)]
pub enum Edge {
    /// x = c (one axis, or a vertical line).
    X(f64),
    /// y = a·x + b.
    Line { a: f64, b: f64 },
}

/// A whole map.
#[derive(Clone, Debug)]
pub struct Map {
    pub model: String,
    pub x: Axis,
    pub y: Option<Axis>,
    pub seeds: std::ops::Range<u64>,
    pub shard: Shard,
    pub cells: Vec<Cell>,
    pub textbook: Option<Textbook>,
    /// The cells' replay prefix: `PROG run PATH --set ...` (the cell's `--set`s follow).
    pub program: String,
    pub path: String,
    pub user_sets: Vec<String>,
    /// `--thresholds`: the fault kind the picture draws (every kind is in the JSON).
    pub family: Option<String>,
    /// `--thresholds --decision-points`: starts at the decision points only.
    pub decision_points: bool,
}

/// The `--set` words of cell (ix, iy): the user's, then the axes'. A range field (`hold`)
/// takes one value as a fixed range, as the loader reads `hold: "2s"`.
fn cell_sets(
    user: &[Override],
    x: &Axis,
    y: Option<&Axis>,
    ix: usize,
    iy: usize,
) -> Result<Vec<Override>, String> {
    let mut sets = user.to_vec();
    sets.push(format!("{}={}", x.field, x.texts[ix]).parse()?);
    if let Some(y) = y {
        sets.push(format!("{}={}", y.field, y.texts[iy]).parse()?);
    }
    Ok(sets)
}

/// A cell's model: its place on the grid, the model with its values (its replay lines
/// carry the cell's `--set`s), and the text it was read from.
pub type CellModel = (usize, usize, Scenario, String);

/// Every cell's model, loaded before anything runs.
pub fn cells(
    sc: &Scenario,
    text: &str,
    user: &[Override],
    x: &Axis,
    y: Option<&Axis>,
    shard: Shard,
) -> Result<Vec<CellModel>, String> {
    let ny = y.map_or(1, |a| a.texts.len());
    let mut out = Vec::new();
    for ix in 0..x.texts.len() {
        for iy in 0..ny {
            let index = (ix * ny + iy) as u64;
            if !shard.contains(index) {
                continue;
            }
            let sets = cell_sets(user, x, y, ix, iy)?;
            let (mut cell, patched) = load_with(&sc.name, &sc.path, text, &sets)?;
            cell.replay_program = sc.replay_program.clone();
            cell.replay_flags = sets
                .iter()
                .map(|s| format!(" --set {}", crate::scenario::model::shell_word(&s.arg)))
                .collect();
            out.push((ix, iy, cell, patched));
        }
    }
    Ok(out)
}

/// One cell's sweep.
pub fn measure(
    ix: usize,
    iy: usize,
    sc: &Scenario,
    seeds: std::ops::Range<u64>,
    jobs: usize,
) -> Cell {
    let s: SweepSummary = explore::sweep(sc, seeds, Shard::WHOLE, jobs, &|| {});
    let rates = sc
        .properties
        .iter()
        .map(|p| {
            (
                p.name().to_string(),
                s.violations_per_property.get(p).copied().unwrap_or(0),
                s.decided_per_property.get(p).copied().unwrap_or(0),
            )
        })
        .collect();
    Cell {
        ix,
        iy,
        seeds: s.seeds_run,
        violating: s.violating_seeds,
        inconclusive: s.inconclusive_seeds,
        rates,
        hazard_seeds: s.witnesses.values().map(|&(n, _)| n).max().unwrap_or(0),
        first_violating: s.first_violating_seed,
        least: Vec::new(),
        runs: s.seeds_run,
    }
}

/// Runs each cell's thresholds may start, per seed, unless `--budget` says otherwise.
pub const CELL_BUDGET_RUNS: u64 = 200_000;

/// One cell's thresholds (`map --thresholds`): on each seed, `threshold::smallest`; per
/// fault kind, the smallest over seeds and targets. `violating` counts the seeds where some
/// magnitude breaks the model, `inconclusive` those a budget cut short (their smallest may be
/// too large).
pub fn measure_thresholds(
    cell: &CellModel,
    seeds: std::ops::Range<u64>,
    budget_runs: u64,
    every_event: bool,
    program: &str,
) -> Result<Cell, String> {
    let (ix, iy, sc, text) = cell;
    let mut out = Cell {
        ix: *ix,
        iy: *iy,
        seeds: 0,
        violating: 0,
        inconclusive: 0,
        rates: Vec::new(),
        hazard_seeds: 0,
        first_violating: None,
        least: Vec::new(),
        runs: 0,
    };
    for seed in seeds {
        let cfg = ExploreConfig {
            faults: 1,
            seed,
            budget_runs,
            ..ExploreConfig::default()
        };
        let r = threshold::smallest(sc, text, &cfg, program, every_event)?;
        out.seeds += 1;
        out.runs += r.runs;
        if r.inconclusive() {
            out.inconclusive += 1;
        }
        let least = r.least();
        if !least.is_empty() {
            out.violating += 1;
            out.first_violating.get_or_insert(seed);
        }
        for l in least {
            let replay = l
                .threshold
                .and_then(|i| r.replays.iter().find(|p| p.threshold == i));
            let b = Breaking {
                kind: l.kind,
                target: l.target,
                seed,
                unit: l.unit,
                violates_at: l.violates_at,
                holds_at: l.threshold.map(|i| r.thresholds[i].holds_at),
                at_ns: l.at.0,
                replay_holds: replay.map(|p| p.holds_cmd.clone()),
                replay_violates: replay.map(|p| p.violates_cmd.clone()),
                confirmed: replay.and_then(|p| p.confirmed),
                textbook_ns: None,
            };
            match out.least.iter_mut().find(|e| e.kind == b.kind) {
                Some(e) if b.violates_at.abs() < e.violates_at.abs() => *e = b,
                Some(_) => {}
                None => out.least.push(b),
            }
        }
    }
    out.least.sort_by(|a, b| a.kind.cmp(&b.kind));
    for b in &mut out.least {
        if b.kind == "pause" {
            b.textbook_ns = pause_textbook_ns(sc, &b.target);
        }
    }
    Ok(out)
}

/// `ttl − longest hold` of the SET-NX-PX group client `target` belongs to (`c` of `c2`).
fn pause_textbook_ns(sc: &Scenario, target: &str) -> Option<i64> {
    let group = sc.model.clients.value.iter().find(|c| {
        target == c.name.0
            || target
                .strip_prefix(c.name.0.as_str())
                .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|ch| ch.is_ascii_digit()))
    })?;
    let AlgorithmSpec::Single { algorithm, .. } = &group.spec else {
        return None;
    };
    if !matches!(
        algorithm.name(),
        "set-px-del" | "set-px-cad" | "set-px-get-del"
    ) {
        return None;
    }
    Some(group.ttl.value.ns() as i64 - group.hold.value.max.ns() as i64)
}

/// Cells measured over `jobs` threads, each cell whole on one thread: the result does not
/// depend on `jobs`.
pub fn measure_thresholds_all(
    cells: &[CellModel],
    seeds: std::ops::Range<u64>,
    budget_runs: u64,
    every_event: bool,
    program: &str,
    jobs: usize,
) -> Result<Vec<Cell>, String> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| format!("--jobs {jobs}: {e}"))?;
    pool.install(|| {
        cells
            .par_iter()
            .map(|c| measure_thresholds(c, seeds.clone(), budget_runs, every_event, program))
            .collect()
    })
}

/// The longest pause the model declares for the clients of group `g` (random or scripted).
fn pause_max_ns(sc: &Scenario, g: &str) -> Option<u64> {
    let ours = |n: &str| {
        n == g
            || n.strip_prefix(g)
                .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
    };
    let mut best: Option<u64> = None;
    for f in &sc.model.random_faults {
        if let RandomFaultSpec::Pause {
            targets, duration, ..
        } = f
            && targets.iter().any(|t| ours(&t.0))
        {
            best = best.max(Some(duration.max.ns()));
        }
    }
    for f in &sc.model.faults {
        if let FaultSpec::Pause {
            target: Target::Proc(t),
            duration,
            ..
        } = f
            && ours(&t.0)
        {
            best = best.max(Some(duration.ns()));
        }
    }
    best
}

/// The textbook edge where the axes are a SET-NX-PX client group's `ttl` and/or `hold` and
/// the model pauses that group's clients: the lock is unsafe once a hold plus the longest
/// pause can outlast the TTL, `ttl ≤ hold + pause_max` (latency and retry ignored, as the
/// textbook does: `tests/thresholds.rs` measures what they add).
pub fn textbook(sc: &Scenario, x: &Axis, y: Option<&Axis>) -> Option<Textbook> {
    let split = |a: &Axis| {
        a.field
            .split_once('.')
            .map(|(g, f)| (g.to_string(), f.to_string()))
    };
    let (gx, fx) = split(x)?;
    let group = sc.model.clients.value.iter().find(|c| c.name.0 == gx)?;
    let AlgorithmSpec::Single { algorithm, .. } = &group.spec else {
        return None;
    };
    if !matches!(
        algorithm.name(),
        "set-px-del" | "set-px-cad" | "set-px-get-del"
    ) {
        return None;
    }
    let pause_s = pause_max_ns(sc, &gx)? as f64 / NS_PER_S as f64;
    let hold_s = group.hold.value.max.ns() as f64 / NS_PER_S as f64;
    let ttl_s = group.ttl.value.ns() as f64 / NS_PER_S as f64;
    let text = format!(
        "unsafe iff ttl ≤ hold + longest pause ({})",
        duration_text((pause_s * NS_PER_S as f64) as i64)
    );
    let edge = match (fx.as_str(), y.map(|a| (split(a), a))) {
        ("ttl", None) if x.duration => Edge::X(hold_s + pause_s),
        ("hold", None) if x.duration => Edge::X(ttl_s - pause_s),
        ("ttl", Some((Some((gy, fy)), ya))) if gy == gx && fy == "hold" && ya.duration => {
            // hold = ttl − pause
            Edge::Line {
                a: 1.0,
                b: -pause_s,
            }
        }
        ("hold", Some((Some((gy, fy)), ya))) if gy == gx && fy == "ttl" && ya.duration => {
            // ttl = hold + pause
            Edge::Line { a: 1.0, b: pause_s }
        }
        ("ttl", Some(_)) if x.duration => Edge::X(hold_s + pause_s),
        ("hold", Some(_)) if x.duration => Edge::X(ttl_s - pause_s),
        _ => return None,
    };
    Some(Textbook { text, edge })
}

impl Map {
    fn ny(&self) -> usize {
        self.y.as_ref().map_or(1, |a| a.texts.len())
    }

    fn cell(&self, ix: usize, iy: usize) -> Option<&Cell> {
        self.cells.iter().find(|c| c.ix == ix && c.iy == iy)
    }

    /// `--thresholds`: the drawn kind's smallest breaking magnitude in a cell.
    fn least<'c>(&self, c: &'c Cell) -> Option<&'c Breaking> {
        let f = self.family.as_deref()?;
        c.least.iter().find(|b| b.kind == f)
    }

    /// The kind a thresholds map draws when none is named: `pause` if any cell has it, else
    /// the first kind found (by name).
    pub fn default_family(cells: &[Cell]) -> Option<String> {
        let kinds: std::collections::BTreeSet<&str> = cells
            .iter()
            .flat_map(|c| c.least.iter().map(|b| b.kind.as_str()))
            .collect();
        if kinds.contains("pause") {
            return Some("pause".into());
        }
        kinds.first().map(|k| k.to_string())
    }

    /// Whether a cell counts as broken (the boundary's two sides): for a sweep, a seed
    /// violated; for thresholds, the drawn kind breaks it at some magnitude.
    fn broken(&self, c: &Cell) -> bool {
        if self.family.is_some() {
            self.least(c).is_some()
        } else {
            c.violating > 0
        }
    }

    /// The replay command of a cell's first violating seed.
    pub fn replay(&self, c: &Cell) -> Option<String> {
        let seed = c.first_violating?;
        let mut sets: Vec<String> = self.user_sets.clone();
        sets.push(format!("{}={}", self.x.field, self.x.texts[c.ix]));
        if let Some(y) = &self.y {
            sets.push(format!("{}={}", y.field, y.texts[c.iy]));
        }
        let words: String = sets
            .iter()
            .map(|s| format!(" --set {}", crate::scenario::model::shell_word(s)))
            .collect();
        Some(format!(
            "{} replay {}{words} --seed {seed}",
            self.program,
            crate::scenario::model::shell_word(&self.path)
        ))
    }

    /// The JSON object: `{"map": {...}, "cells": [...]}`.
    pub fn json(&self) -> serde_json::Value {
        use serde_json::json;
        let axis = |a: &Axis| json!({"field": a.field, "values": a.texts, "unit": if a.duration { "s" } else { "" }});
        let cells: Vec<serde_json::Value> = self
            .cells
            .iter()
            .map(|c| {
                let (lo, hi) = clopper_pearson(c.violating, c.seeds);
                let rates: serde_json::Map<String, serde_json::Value> = c
                    .rates
                    .iter()
                    .map(|(p, k, n)| {
                        let (lo, hi) = clopper_pearson(*k, *n);
                        (
                            p.clone(),
                            json!({"violating": k, "decided": n,
                                   "estimate": if *n == 0 { 0.0 } else { *k as f64 / *n as f64 },
                                   "ci95": [lo, hi]}),
                        )
                    })
                    .collect();
                if self.family.is_some() {
                    let least: serde_json::Map<String, serde_json::Value> = c
                        .least
                        .iter()
                        .map(|b| {
                            let unit = b.unit.name();
                            (
                                b.kind.clone(),
                                json!({"target": b.target, "seed": b.seed, "at_ns": b.at_ns,
                                       "unit": unit, "boundary": b.violates_at, "holds": b.holds_at,
                                       "text": b.text(), "textbook_ns": b.textbook_ns,
                                       "replay_holds": b.replay_holds, "replay_violates": b.replay_violates,
                                       "replay_confirmed": b.confirmed}),
                            )
                        })
                        .collect();
                    return json!({
                        "x": self.x.texts[c.ix],
                        "y": self.y.as_ref().map(|a| a.texts[c.iy].clone()),
                        "seeds": c.seeds,
                        "violating": c.violating,
                        "inconclusive": c.inconclusive,
                        "runs": c.runs,
                        "least": least,
                    });
                }
                json!({
                    "x": self.x.texts[c.ix],
                    "y": self.y.as_ref().map(|a| a.texts[c.iy].clone()),
                    "seeds": c.seeds,
                    "violating": c.violating,
                    "inconclusive": c.inconclusive,
                    "hazard_seeds": c.hazard_seeds,
                    "estimate": c.rate(),
                    "ci95": [lo, hi],
                    "rates": rates,
                    "replay": self.replay(c),
                })
            })
            .collect();
        json!({
            "map": {
                "model": self.model,
                "x": axis(&self.x),
                "y": self.y.as_ref().map(axis),
                "seeds": format!("{}..{}", self.seeds.start, self.seeds.end),
                "shard": format!("{}/{}", self.shard.index, self.shard.count),
                "textbook": self.textbook.as_ref().map(|t| t.text.clone()),
                "thresholds": self.family.is_some(),
                "family": self.family,
                "starts": self.family.as_ref().map(|_| self.starts_text()),
            },
            "cells": cells,
        })
    }

    /// A text grid for the terminal: each cell's violating seeds of its seeds.
    pub fn text(&self) -> String {
        let mut t = String::new();
        let ny = self.ny();
        let _ = writeln!(
            t,
            "map of {}: {} × {} cells, seeds {}..{} each{}",
            self.model,
            self.x.texts.len(),
            ny,
            self.seeds.start,
            self.seeds.end,
            if self.shard.count > 1 {
                format!(" (shard {}/{})", self.shard.index, self.shard.count)
            } else {
                String::new()
            }
        );
        let yname = self.y.as_ref().map_or("", |a| a.field.as_str());
        match &self.family {
            Some(f) => {
                let _ = writeln!(
                    t,
                    "smallest {f} that breaks the model, at its worst one-fault start, per cell ('-': none up to the declared largest); rows {yname}, columns {}",
                    self.x.field
                );
            }
            None => {
                let _ = writeln!(
                    t,
                    "violating seeds per cell; rows {yname}, columns {}",
                    self.x.field
                );
            }
        }
        let w = self
            .x
            .texts
            .iter()
            .map(|s| s.len())
            .max()
            .unwrap_or(4)
            .max(if self.family.is_some() { 11 } else { 7 });
        let yw = self
            .y
            .as_ref()
            .map_or(0, |a| a.texts.iter().map(|s| s.len()).max().unwrap_or(0));
        let _ = write!(t, "{:>yw$} ", "");
        for x in &self.x.texts {
            let _ = write!(t, " {x:>w$}");
        }
        t.push('\n');
        for iy in (0..ny).rev() {
            let label = self.y.as_ref().map_or("", |a| a.texts[iy].as_str());
            let _ = write!(t, "{label:>yw$} ");
            for ix in 0..self.x.texts.len() {
                let v = match self.cell(ix, iy) {
                    Some(c) if self.family.is_some() => {
                        let mark = if c.inconclusive > 0 { "?" } else { "" };
                        match self.least(c) {
                            Some(b) if b.holds_at.is_none() => format!("any{mark}"),
                            Some(b) => format!("{}{mark}", b.text()),
                            None => format!("-{mark}"),
                        }
                    }
                    Some(c) if c.inconclusive > 0 => format!("{}/{}?", c.violating, c.seeds),
                    Some(c) => format!("{}/{}", c.violating, c.seeds),
                    None => "-".into(),
                };
                let _ = write!(t, " {v:>w$}");
            }
            t.push('\n');
        }
        if let Some(tb) = &self.textbook {
            let _ = writeln!(t, "textbook: {}", tb.text);
        }
        if let Some(f) = &self.family {
            let broken = self.cells.iter().filter(|c| self.broken(c)).count();
            let runs: u64 = self.cells.iter().map(|c| c.runs).sum();
            let _ = writeln!(
                t,
                "{broken} cells broken by some {f}, {} not ({runs} runs); --json has every kind's smallest with its replay lines",
                self.cells.len() - broken
            );
            let cut = self.cells.iter().filter(|c| c.inconclusive > 0).count();
            if cut > 0 {
                let _ = writeln!(
                    t,
                    "INCONCLUSIVE: {cut} cells stopped on a budget (marked ?): their smallest may be smaller"
                );
            }
            return t;
        }
        let clean = self.cells.iter().filter(|c| c.violating == 0).count();
        let unmet = self
            .cells
            .iter()
            .filter(|c| c.violating == 0 && c.hazard_seeds == 0)
            .count();
        let _ = writeln!(
            t,
            "{} cells violated, {clean} held ({unmet} of them never met a hazard); a held cell's rate is below its interval's upper bound (--json)",
            self.cells.len() - clean
        );
        let cut: u64 = self.cells.iter().map(|c| c.inconclusive).sum();
        if cut > 0 {
            let _ = writeln!(
                t,
                "INCONCLUSIVE: {cut} seeds stopped on a budget (cells marked ?)"
            );
        }
        t
    }

    /// The heat map as SVG: cells shaded by violating fraction (white none, red all; a
    /// cell that held without meeting a hazard hatched grey), the boundary between held and
    /// violated cells drawn black, the textbook edge dashed blue.
    pub fn svg(&self) -> String {
        let nx = self.x.texts.len();
        let ny = self.ny();
        let (cw, ch) = (
            (560 / nx).clamp(8, 80) as f64,
            (if ny == 1 { 60 } else { 420 / ny }).clamp(8, 80) as f64,
        );
        let (left, top) = (90.0, 50.0);
        let (w, h) = (left + cw * nx as f64 + 30.0, top + ch * ny as f64 + 90.0);
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">"#
        );
        let _ = writeln!(
            s,
            r#"<defs><pattern id="unmet" width="6" height="6" patternUnits="userSpaceOnUse"><path d="M0,6 L6,0" stroke="rgb(170,170,170)" stroke-width="1"/></pattern></defs>"#
        );
        match &self.family {
            Some(f) => {
                let _ = writeln!(
                    s,
                    r#"<text x="{left}" y="20" font-size="13">{}: the smallest {} that breaks it, per cell (seeds {}..{})</text>"#,
                    esc(&self.model),
                    esc(f),
                    self.seeds.start,
                    self.seeds.end
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    r#"<text x="{left}" y="20" font-size="13">{}: violating seeds of {} per cell</text>"#,
                    esc(&self.model),
                    self.seeds.end - self.seeds.start
                );
            }
        }
        // Thresholds: the largest smallest magnitude drawn is the palest red.
        let largest = self
            .cells
            .iter()
            .filter_map(|c| self.least(c))
            .map(|b| b.violates_at.unsigned_abs())
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        // Cell (ix, iy) has its lower-left corner at (ix, iy) in grid units; y grows up.
        let px = |gx: f64| left + gx * cw;
        let py = |gy: f64| top + ch * ny as f64 - gy * ch;
        for c in &self.cells {
            // Red for all seeds violating (a sweep) or for breaking at the smallest magnitude
            // (thresholds), white for none.
            let (r, what) = match &self.family {
                Some(f) => match self.least(c) {
                    Some(b) => (
                        1.0 - 0.8 * b.violates_at.unsigned_abs() as f64 / largest,
                        format!(
                            "a {f} of {} breaks it ({} from {}, seed {}){}",
                            b.text(),
                            b.target,
                            crate::time::fmt_duration_ns(b.at_ns),
                            b.seed,
                            b.textbook_ns.map_or(String::new(), |t| format!(
                                "; textbook ttl − hold {}",
                                duration_text(t)
                            ))
                        ),
                    ),
                    None => (0.0, format!("no {f} up to the declared largest breaks it")),
                },
                None => (
                    c.rate(),
                    format!("{} of {} seeds violate", c.violating, c.seeds),
                ),
            };
            let shade = (255.0 * (1.0 - r)).round() as u8;
            let fill = if !self.broken(c) {
                "rgb(255,255,255)".to_string()
            } else {
                format!("rgb(255,{shade},{shade})")
            };
            let (x0, y0) = (px(c.ix as f64), py(c.iy as f64 + 1.0));
            let _ = writeln!(
                s,
                r#"<rect x="{x0}" y="{y0}" width="{cw}" height="{ch}" fill="{fill}" stroke="rgb(220,220,220)"><title>{} = {}{}: {}</title></rect>"#,
                esc(&self.x.field),
                esc(&self.x.texts[c.ix]),
                self.y.as_ref().map_or(String::new(), |a| format!(
                    ", {} = {}",
                    esc(&a.field),
                    esc(&a.texts[c.iy])
                )),
                esc(&what)
            );
            if let Some(b) = self.least(c)
                && cw >= 36.0
                && ch >= 16.0
            {
                let _ = writeln!(
                    s,
                    r#"<text x="{}" y="{}" text-anchor="middle" font-size="9">{}</text>"#,
                    x0 + cw / 2.0,
                    y0 + ch / 2.0 + 3.0,
                    esc(&short(b))
                );
            }
            if self.family.is_none() && c.violating == 0 && c.hazard_seeds == 0 {
                let _ = writeln!(
                    s,
                    r#"<rect x="{x0}" y="{y0}" width="{cw}" height="{ch}" fill="url(#unmet)"/>"#
                );
            }
        }
        // The boundary: every edge between a cell that held and a neighbour that violated.
        let bad = |ix: usize, iy: usize| self.cell(ix, iy).map(|c| self.broken(c));
        let mut path = String::new();
        for ix in 0..nx {
            for iy in 0..ny {
                let Some(me) = bad(ix, iy) else { continue };
                if ix + 1 < nx && bad(ix + 1, iy).is_some_and(|o| o != me) {
                    let x = px(ix as f64 + 1.0);
                    let _ = write!(path, "M{x},{} L{x},{} ", py(iy as f64), py(iy as f64 + 1.0));
                }
                if iy + 1 < ny && bad(ix, iy + 1).is_some_and(|o| o != me) {
                    let y = py(iy as f64 + 1.0);
                    let _ = write!(path, "M{},{y} L{},{y} ", px(ix as f64), px(ix as f64 + 1.0));
                }
            }
        }
        if !path.is_empty() {
            let _ = writeln!(
                s,
                r#"<path d="{}" stroke="black" stroke-width="2.5" fill="none"/>"#,
                path.trim_end()
            );
        }
        // Axis positions: value v sits at the centre of its cell, linear in between.
        let grid_of = |vals: &[f64], v: f64| -> f64 {
            if vals.len() == 1 {
                return 0.5;
            }
            let (a, b) = (vals[0], vals[vals.len() - 1]);
            0.5 + (v - a) / (b - a) * (vals.len() - 1) as f64
        };
        if let Some(tb) = &self.textbook {
            let (x0, x1) = (0.0, nx as f64);
            let seg = match (&tb.edge, &self.y) {
                (Edge::X(c), _) => {
                    let gx = grid_of(&self.x.values, *c);
                    Some(((gx, 0.0), (gx, ny as f64)))
                }
                (Edge::Line { a, b }, Some(y)) => {
                    // Walk x across the grid, map y = a·x + b into grid units.
                    let xv = |g: f64| {
                        let vals = &self.x.values;
                        if vals.len() == 1 {
                            vals[0]
                        } else {
                            vals[0]
                                + (g - 0.5) / (vals.len() - 1) as f64
                                    * (vals[vals.len() - 1] - vals[0])
                        }
                    };
                    let gy = |g: f64| grid_of(&y.values, a * xv(g) + b);
                    Some(((x0, gy(x0)), (x1, gy(x1))))
                }
                _ => None,
            };
            if let Some(((ax, ay), (bx, by))) = seg {
                let _ = writeln!(
                    s,
                    r#"<clipPath id="plot"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath>"#,
                    px(0.0),
                    py(ny as f64),
                    cw * nx as f64,
                    ch * ny as f64
                );
                let _ = writeln!(
                    s,
                    r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="rgb(30,80,220)" stroke-width="2" stroke-dasharray="6,4" clip-path="url(#plot)"/>"#,
                    px(ax),
                    py(ay),
                    px(bx),
                    py(by)
                );
            }
        }
        // Ticks: at most ~10 labels an axis.
        let every = |n: usize| n.div_ceil(10).max(1);
        for ix in (0..nx).step_by(every(nx)) {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                px(ix as f64 + 0.5),
                py(0.0) + 15.0,
                esc(&self.x.texts[ix])
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="12">{}</text>"#,
            px(nx as f64 / 2.0),
            py(0.0) + 32.0,
            esc(&self.x.field)
        );
        if let Some(y) = &self.y {
            for iy in (0..ny).step_by(every(ny)) {
                let _ = writeln!(
                    s,
                    r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                    left - 6.0,
                    py(iy as f64 + 0.5) + 4.0,
                    esc(&y.texts[iy])
                );
            }
            let _ = writeln!(
                s,
                r#"<text x="14" y="{}" text-anchor="middle" font-size="12" transform="rotate(-90 14 {})">{}</text>"#,
                py(ny as f64 / 2.0),
                py(ny as f64 / 2.0),
                esc(&y.field)
            );
        }
        // Legend.
        let ly = py(0.0) + 52.0;
        if self.family.is_some() {
            // A cell's shade is 255·(1 − r), r = 1 − 0.8·v/largest: the largest is 204.
            let palest = 204;
            let _ = writeln!(
                s,
                r#"<rect x="{left}" y="{}" width="12" height="12" fill="rgb(255,0,0)"/><text x="{}" y="{}">breaks at the smallest</text><rect x="{}" y="{}" width="12" height="12" fill="rgb(255,{palest},{palest})"/><text x="{}" y="{}">at {}</text><rect x="{}" y="{}" width="12" height="12" fill="white" stroke="rgb(180,180,180)"/><text x="{}" y="{}">nothing declared breaks it</text>"#,
                ly - 10.0,
                left + 16.0,
                ly,
                left + 150.0,
                ly - 10.0,
                left + 166.0,
                ly,
                esc(&short_ns(largest as i64)),
                left + 240.0,
                ly - 10.0,
                left + 256.0,
                ly
            );
        } else {
            let _ = writeln!(
                s,
                r#"<rect x="{left}" y="{}" width="12" height="12" fill="rgb(255,0,0)"/><text x="{}" y="{}">all seeds violate</text>"#,
                ly - 10.0,
                left + 16.0,
                ly
            );
            let _ = writeln!(
                s,
                r#"<rect x="{}" y="{}" width="12" height="12" fill="white" stroke="rgb(180,180,180)"/><text x="{}" y="{}">none</text>"#,
                left + 130.0,
                ly - 10.0,
                left + 146.0,
                ly
            );
            let _ = writeln!(
                s,
                r#"<rect x="{}" y="{}" width="12" height="12" fill="url(#unmet)" stroke="rgb(180,180,180)"/><text x="{}" y="{}">none, hazard never met</text>"#,
                left + 190.0,
                ly - 10.0,
                left + 206.0,
                ly
            );
        }
        let _ = writeln!(
            s,
            r#"<line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="black" stroke-width="2.5"/><text x="{}" y="{}">boundary</text>"#,
            ly + 12.0,
            left + 24.0,
            ly + 12.0,
            left + 30.0,
            ly + 16.0
        );
        if let Some(tb) = &self.textbook {
            let _ = writeln!(
                s,
                r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="rgb(30,80,220)" stroke-width="2" stroke-dasharray="6,4"/><text x="{}" y="{}">textbook: {}</text>"#,
                left + 100.0,
                ly + 12.0,
                left + 124.0,
                ly + 12.0,
                left + 130.0,
                ly + 16.0,
                esc(&tb.text)
            );
        }
        s.push_str("</svg>\n");
        s
    }

    /// The SVG in a page, with the cells' table (rates, intervals, replay lines) under it.
    pub fn html(&self) -> String {
        if self.family.is_some() {
            return self.html_thresholds();
        }
        let mut rows = String::new();
        for c in &self.cells {
            let (lo, hi) = clopper_pearson(c.violating, c.seeds);
            let _ = writeln!(
                rows,
                "<tr><td>{}</td><td>{}</td><td>{} / {}</td><td>{:.1} % [{:.1}, {:.1}]</td><td>{}</td><td><code>{}</code></td></tr>",
                esc(&self.x.texts[c.ix]),
                esc(self.y.as_ref().map_or("", |a| a.texts[c.iy].as_str())),
                c.violating,
                c.seeds,
                100.0 * c.rate(),
                100.0 * lo,
                100.0 * hi,
                c.hazard_seeds,
                esc(&self.replay(c).unwrap_or_default())
            );
        }
        self.page(
            "Safety map",
            &format!(
                "seeds {}..{}. Rates with exact 95 % (Clopper–Pearson) intervals; a cell where no seed violated still has the upper bound shown.",
                self.seeds.start, self.seeds.end
            ),
            &[
                "violating",
                "rate [95 %]",
                "seeds meeting its most met hazard",
                "replay of the first violating seed",
            ],
            &rows,
        )
    }

    /// The page around the SVG: a heading, what a cell is (`intro` after the cell's fields),
    /// and a table with the axes' columns, then `columns`, then `rows` (already `<tr>`s).
    fn page(&self, heading: &str, intro: &str, columns: &[&str], rows: &str) -> String {
        let th: String = columns
            .iter()
            .map(|c| format!("<th>{}</th>", esc(c)))
            .collect();
        format!(
            "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>map of {m}</title>\n<style>body{{font-family:sans-serif;margin:1em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;font-size:12px}}</style></head>\n<body><h1>{heading}: {m}</h1>\n{svg}<p>Each cell: the model with <code>{x}</code>{y} set, {intro}</p>\n<table><tr><th>{x}</th><th>{yf}</th>{th}</tr>\n{rows}</table></body></html>\n",
            m = esc(&self.model),
            svg = self.svg(),
            x = esc(&self.x.field),
            y = self.y.as_ref().map_or(String::new(), |a| format!(
                " and <code>{}</code>",
                esc(&a.field)
            )),
            yf = esc(self.y.as_ref().map_or("", |a| a.field.as_str())),
            intro = esc(intro),
        )
    }
}

impl Map {
    /// `--thresholds`: the picture and a row per cell and fault kind.
    fn html_thresholds(&self) -> String {
        let mut rows = String::new();
        for c in &self.cells {
            for b in &c.least {
                let _ = writeln!(
                    rows,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code><br><code>{}</code></td></tr>",
                    esc(&self.x.texts[c.ix]),
                    esc(self.y.as_ref().map_or("", |a| a.texts[c.iy].as_str())),
                    esc(&b.kind),
                    if b.holds_at.is_none() {
                        "any (the smallest breaks it)".to_string()
                    } else {
                        esc(&b.text())
                    },
                    esc(&format!(
                        "{} from {}, seed {}",
                        b.target,
                        crate::time::fmt_duration_ns(b.at_ns),
                        b.seed
                    )),
                    b.textbook_ns.map_or(String::new(), duration_text),
                    match b.confirmed {
                        Some(true) => "yes",
                        Some(false) => "NO",
                        None => "",
                    },
                    esc(b.replay_holds.as_deref().unwrap_or("")),
                    esc(b.replay_violates.as_deref().unwrap_or(""))
                );
            }
        }
        self.page(
            "Threshold map",
            &format!(
                "on each of seeds {}..{}, one fault at {}, its magnitude bisected to 1 µs (a clock step to 1 ms); per kind, the smallest that breaks it. Each smallest's two commands run from time 0: the first holds, the second violates.",
                self.seeds.start,
                self.seeds.end,
                self.starts_text()
            ),
            &[
                "fault kind",
                "smallest that breaks it",
                "where",
                "textbook ttl − hold",
                "confirmed",
                "holds / violates",
            ],
            &rows,
        )
    }

    /// What starts a thresholds map tried.
    fn starts_text(&self) -> &'static str {
        if self.decision_points {
            "each decision point only (acquired, granted, before a DEL or a resource write)"
        } else {
            "each decision point and before each event of a client"
        }
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
