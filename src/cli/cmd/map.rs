//! `map MODEL --x FIELD=A..B:N [--y FIELD=A..B:M]`: a sweep at every cell of a grid of the
//! model's fields, drawn as a heat map (docs/map.md).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{self, Ctx, SeedRange, ShardArg, bad_input, exit_with, out};
use crate::explore::Shard;
use crate::explore::map::{self, Axis, Map};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: crate::cli::ModelArg,
    /// The first axis: FIELD=A..B:N, N values from A to B evenly spaced, FIELD as --set
    /// names it (c.ttl=5s..30s:11). A range field (hold) is fixed at each value.
    #[arg(long)]
    x: Axis,
    /// The second axis, as --x.
    #[arg(long)]
    y: Option<Axis>,
    /// Seeds each cell runs, as A..B (default 0..100; with --thresholds 0..1, each seed
    /// being a search of its own).
    #[arg(long)]
    seeds: Option<SeedRange>,
    /// Instead of a sweep, each cell's thresholds: per fault kind, the smallest magnitude
    /// that breaks the cell's model at its worst one-fault start (explore --faults 1
    /// --thresholds, cut to the smallest), drawn as a heat map of that magnitude.
    #[arg(long)]
    thresholds: bool,
    /// With --thresholds: the fault kind the text grid and picture draw, as the thresholds
    /// name it ("pause", "clock step forward", "crash (empty, host down)"); default pause if
    /// any cell has one. Every kind is in --json.
    #[arg(long, requires = "thresholds")]
    family: Option<String>,
    /// With --thresholds: most runs each seed of a cell may start (default 200000); a cell
    /// cut short is marked inconclusive.
    #[arg(long, requires = "thresholds")]
    budget: Option<u64>,
    /// With --thresholds: start faults only at the decision points (acquired, granted,
    /// before a DEL or a resource write), not also before every event of a client as
    /// explore --thresholds does: far fewer runs, and a smallest that may be too large
    /// (docs/map.md says by how much on the models measured).
    #[arg(long, requires = "thresholds")]
    decision_points: bool,
    /// Worker threads for each cell's sweep (results do not depend on this).
    #[arg(long, default_value_t = cli::default_jobs(), value_parser = cli::parse_jobs)]
    jobs: usize,
    /// Run only the cells whose index (x · rows + y) % N == I, written I/N; each cell is
    /// whole, so the shards' JSON cells together are the whole map's.
    #[arg(long)]
    shard: Option<ShardArg>,
    /// Draw the map here: F.svg (the heat map) or F.html (it, and every cell's rates,
    /// intervals and replay line).
    #[arg(long)]
    out: Option<PathBuf>,
    /// One JSON object ({"map": {...}, "cells": [...]}) instead of the text grid.
    #[arg(long)]
    json: bool,
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    let (sc, text) = match ctx.load_model(&a.model) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let kind = match &a.out {
        None => None,
        Some(p) => match p.extension().and_then(|e| e.to_str()) {
            Some("svg") => Some(false),
            Some("html") => Some(true),
            _ => {
                return bad_input(&format!(
                    "--out {}: the file must end in .svg or .html",
                    p.display()
                ));
            }
        },
    };
    let shard = a.shard.map_or(Shard::WHOLE, |s| s.0);
    // Every cell's model is read before any runs: bad input is refused at once.
    let cells = match map::cells(&sc, &text, &a.model.set, &a.x, a.y.as_ref(), shard) {
        Ok(c) => c,
        Err(e) => return bad_input(&e),
    };
    let seeds = a
        .seeds
        .map_or(if a.thresholds { 0..1 } else { 0..100 }, |s| s.0);
    let measured: Vec<map::Cell> = if a.thresholds {
        let budget = a.budget.unwrap_or(map::CELL_BUDGET_RUNS);
        match map::measure_thresholds_all(
            &cells,
            seeds.clone(),
            budget,
            !a.decision_points,
            &crate::cli::program_for_replay(),
            a.jobs,
        ) {
            Ok(c) => c,
            Err(e) => return bad_input(&e),
        }
    } else {
        cells
            .iter()
            .map(|(ix, iy, cell, _)| map::measure(*ix, *iy, cell, seeds.clone(), a.jobs))
            .collect()
    };
    let family = if a.thresholds {
        match a.family {
            Some(f) => {
                let known: std::collections::BTreeSet<&str> = measured
                    .iter()
                    .flat_map(|c| c.least.iter().map(|b| b.kind.as_str()))
                    .collect();
                if !known.is_empty() && !known.contains(f.as_str()) {
                    return bad_input(&format!(
                        "--family {f}: no cell has it; the kinds that break a cell: {}",
                        known.into_iter().collect::<Vec<_>>().join(", ")
                    ));
                }
                Some(f)
            }
            None => Some(Map::default_family(&measured).unwrap_or_else(|| "pause".into())),
        }
    } else {
        None
    };
    let m = Map {
        model: sc.name.clone(),
        textbook: map::textbook(&sc, &a.x, a.y.as_ref()),
        x: a.x,
        y: a.y,
        seeds,
        shard,
        cells: measured,
        program: ctx.program.clone(),
        path: sc.path.clone(),
        user_sets: a.model.set.iter().map(|s| s.arg.clone()).collect(),
        family,
        decision_points: a.decision_points,
    };
    if let (Some(p), Some(html)) = (&a.out, kind) {
        let page = if html { m.html() } else { m.svg() };
        if let Err(e) = std::fs::write(p, page) {
            return bad_input(&format!("--out {}: {e}", p.display()));
        }
    }
    if a.json {
        out(&format!("{}\n", m.json()));
    } else {
        out(&m.text());
        if let Some(p) = &a.out {
            out(&format!("map: {}\n", p.display()));
        }
    }
    exit_with(cli::Outcome::of(
        m.cells.iter().any(|c| c.violating > 0),
        m.cells.iter().any(|c| c.inconclusive > 0),
        false,
    ))
}
