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

/// A cell's model: its place on the grid, and the model with its values.
pub type CellModel = (usize, usize, Scenario);

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
            let (cell, _) = load_with(&sc.name, &sc.path, text, &sets)?;
            out.push((ix, iy, cell));
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
    }
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
        let _ = writeln!(
            t,
            "violating seeds per cell; rows {yname}, columns {}",
            self.x.field
        );
        let w = self
            .x
            .texts
            .iter()
            .map(|s| s.len())
            .max()
            .unwrap_or(4)
            .max(7);
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
        let _ = writeln!(
            s,
            r#"<text x="{left}" y="20" font-size="13">{}: violating seeds of {} per cell</text>"#,
            esc(&self.model),
            self.seeds.end - self.seeds.start
        );
        // Cell (ix, iy) has its lower-left corner at (ix, iy) in grid units; y grows up.
        let px = |gx: f64| left + gx * cw;
        let py = |gy: f64| top + ch * ny as f64 - gy * ch;
        for c in &self.cells {
            let r = c.rate();
            let shade = (255.0 * (1.0 - r)).round() as u8;
            let fill = if c.violating == 0 {
                "rgb(255,255,255)".to_string()
            } else {
                format!("rgb(255,{shade},{shade})")
            };
            let (x0, y0) = (px(c.ix as f64), py(c.iy as f64 + 1.0));
            let _ = writeln!(
                s,
                r#"<rect x="{x0}" y="{y0}" width="{cw}" height="{ch}" fill="{fill}" stroke="rgb(220,220,220)"><title>{} = {}{}: {} of {} seeds violate</title></rect>"#,
                esc(&self.x.field),
                esc(&self.x.texts[c.ix]),
                self.y.as_ref().map_or(String::new(), |a| format!(
                    ", {} = {}",
                    esc(&a.field),
                    esc(&a.texts[c.iy])
                )),
                c.violating,
                c.seeds
            );
            if c.violating == 0 && c.hazard_seeds == 0 {
                let _ = writeln!(
                    s,
                    r#"<rect x="{x0}" y="{y0}" width="{cw}" height="{ch}" fill="url(#unmet)"/>"#
                );
            }
        }
        // The boundary: every edge between a cell that held and a neighbour that violated.
        let bad = |ix: usize, iy: usize| self.cell(ix, iy).map(|c| c.violating > 0);
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
        format!(
            "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>map of {m}</title>\n<style>body{{font-family:sans-serif;margin:1em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;font-size:12px}}</style></head>\n<body><h1>Safety map: {m}</h1>\n{svg}<p>Each cell: the model with <code>{x}</code>{y} set, seeds {a}..{b}. Rates with exact 95 % (Clopper–Pearson) intervals; a cell where no seed violated still has the upper bound shown.</p>\n<table><tr><th>{x}</th><th>{yf}</th><th>violating</th><th>rate [95 %]</th><th>seeds meeting its most met hazard</th><th>replay of the first violating seed</th></tr>\n{rows}</table></body></html>\n",
            m = esc(&self.model),
            svg = self.svg(),
            x = esc(&self.x.field),
            y = self.y.as_ref().map_or(String::new(), |a| format!(
                " and <code>{}</code>",
                esc(&a.field)
            )),
            yf = esc(self.y.as_ref().map_or("", |a| a.field.as_str())),
            a = self.seeds.start,
            b = self.seeds.end,
        )
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
