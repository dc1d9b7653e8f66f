//! Safety maps drawn (`distlock-sim map ... --out F.svg|F.html`, and the text grid): each
//! cell shaded by how many seeds violated (or, with `--thresholds`, by how small the smallest
//! breaking fault is), the boundary between broken and unbroken cells, and the textbook line
//! where the model's family has one. What the cells measured is `explore::map`.

use std::fmt::Write as _;

use crate::explore::map::{Breaking, Edge, Map, duration_text};
use crate::explore::rate::clopper_pearson;
use crate::explore::threshold::Unit;
use crate::time::{NS_PER_S, NS_PER_US};

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

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Map {
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
}
