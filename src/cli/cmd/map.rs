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
    /// Seeds each cell runs, as A..B.
    #[arg(long, default_value = "0..100")]
    seeds: SeedRange,
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
    let measured = cells
        .iter()
        .map(|(ix, iy, cell)| map::measure(*ix, *iy, cell, a.seeds.0.clone(), a.jobs))
        .collect();
    let m = Map {
        model: sc.name.clone(),
        textbook: map::textbook(&sc, &a.x, a.y.as_ref()),
        x: a.x,
        y: a.y,
        seeds: a.seeds.0.clone(),
        shard,
        cells: measured,
        program: ctx.program.clone(),
        path: sc.path.clone(),
        user_sets: a.model.set.iter().map(|s| s.arg.clone()).collect(),
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
