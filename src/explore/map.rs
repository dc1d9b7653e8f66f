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

use crate::explore::rate::clopper_pearson;
use crate::explore::systematic::ExploreConfig;
use crate::explore::threshold::{self, Unit};
use crate::explore::{self, Shard, SweepSummary};
use crate::scenario::Scenario;
use crate::scenario::clients::AlgorithmSpec;
use crate::scenario::faults::{KindSpec, Span, Target};
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
pub(crate) fn duration_text(ns: i64) -> String {
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
                .map(|s| format!(" --set {}", crate::scenario::names::shell_word(&s.arg)))
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
    for f in sc.model.random_faults.iter().chain(&sc.model.faults) {
        let KindSpec::Pause { duration } = &f.kind else {
            continue;
        };
        let hits = match &f.span {
            Span::One(Target::Proc(t)) => ours(&t.0),
            Span::Each(targets) => targets.iter().any(|t| ours(&t.0)),
            Span::One(_) | Span::Links { .. } => false,
        };
        if hits {
            best = best.max(Some(duration.max.ns()));
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
    pub(crate) fn ny(&self) -> usize {
        self.y.as_ref().map_or(1, |a| a.texts.len())
    }

    pub(crate) fn cell(&self, ix: usize, iy: usize) -> Option<&Cell> {
        self.cells.iter().find(|c| c.ix == ix && c.iy == iy)
    }

    /// `--thresholds`: the drawn kind's smallest breaking magnitude in a cell.
    pub(crate) fn least<'c>(&self, c: &'c Cell) -> Option<&'c Breaking> {
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
    pub(crate) fn broken(&self, c: &Cell) -> bool {
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
            .map(|s| format!(" --set {}", crate::scenario::names::shell_word(s)))
            .collect();
        Some(format!(
            "{} replay {}{words} --seed {seed}",
            self.program,
            crate::scenario::names::shell_word(&self.path)
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
}

impl Map {
    /// What starts a thresholds map tried.
    pub(crate) fn starts_text(&self) -> &'static str {
        if self.decision_points {
            "each decision point only (acquired, granted, before a DEL or a resource write)"
        } else {
            "each decision point and before each event of a client"
        }
    }
}
