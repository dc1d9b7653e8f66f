//! The picture of a run drawn as SVG: lanes per actor, true time across, the scene's spans,
//! marks, belief lines, clocks, arrows and violations laid out for a `View`. Every element
//! placed in time carries `data-t0` (and `data-t1`) in nanoseconds of true time, so the
//! page's script can lay the picture out again for any zoom with the same formula.

use std::fmt::Write as _;

use crate::check::Violation;
use crate::check::margin::removal_margin_ns;
use crate::scenario::{ProcKind, Scenario};
use crate::sim::World;
use crate::sim::fault::FaultKind;
use crate::time::{NS_PER_MS, NS_PER_S, ProcId, SimTime, fmt_duration_ns, fmt_signed_ns};

use super::scene::{
    LANE_PX, LogLanes, MarkKind, PLOT_X0, PLOT_X1, Scene, SpanKind, View, WIDTH_PX, client_colour,
    esc, lane_order, scene,
};

/// More arrows than this in the first window make a run busy: its arrows hide the lanes and
/// the clock labels (redlock-clock-jump has ~400 between 11 and 16 s), so they are off until
/// the reader asks.
const BUSY_ARROWS: usize = 120;
/// Points sampled along a clock-offset curve (clock steps add their own).
const CLOCK_SAMPLES: u64 = 240;

/// A "nice" tick step (1, 2 or 5 × 10^k ns) giving about `n` ticks over `span_ns`.
pub(super) fn tick_step_ns(span_ns: u64, n: u64) -> u64 {
    let raw = (span_ns / n.max(1)).max(1);
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if step.saturating_mul(m) >= raw {
                return step * m;
            }
        }
        step = step.saturating_mul(10);
    }
}

pub(super) fn fmt_tick(t_ns: u64, step_ns: u64) -> String {
    let decimals = if step_ns >= NS_PER_S {
        0
    } else if step_ns >= NS_PER_S / 10 {
        1
    } else if step_ns >= NS_PER_S / 100 {
        2
    } else if step_ns >= NS_PER_MS {
        3
    } else {
        6
    };
    format!("{:.*}s", decimals, t_ns as f64 / NS_PER_S as f64)
}

pub(super) fn fmt_signed_ms(ms: i64) -> String {
    if ms == 0 {
        return "±0".into();
    }
    let s = fmt_duration_ns(ms.unsigned_abs() * NS_PER_MS);
    if ms < 0 {
        format!("−{s}")
    } else {
        format!("+{s}")
    }
}

/// Clock offset (wall − true time) of a process, sampled over `[from, to]`, with the
/// instants just before and at every step; `None` when the clock never deviates.
pub(super) fn clock_curve(
    world: &World,
    epoch_unix_ms: i64,
    p: usize,
    from: SimTime,
    to: SimTime,
) -> Option<Vec<(u64, f64)>> {
    let clock = world.clock(ProcId(p as u32));
    let epoch_ns = i128::from(epoch_unix_ms) * 1_000_000;
    let offset_ms = |t: u64| (clock.wall_ns(SimTime(t)) - epoch_ns - t as i128) as f64 / 1e6;
    let mut ts: Vec<u64> = (0..=CLOCK_SAMPLES)
        .map(|i| from.0 + (to.0 - from.0) / CLOCK_SAMPLES * i)
        .collect();
    ts.push(to.0);
    for f in &world.applied_faults {
        if let FaultKind::ClockStep { proc, .. } = &f.kind
            && proc.index() == p
            && f.at >= from
            && f.at <= to
        {
            ts.push(f.at.0.saturating_sub(1));
            ts.push(f.at.0);
        }
    }
    ts.sort_unstable();
    ts.dedup();
    let pts: Vec<(u64, f64)> = ts.into_iter().map(|t| (t, offset_ms(t))).collect();
    let moved = pts.iter().any(|(_, o)| o.abs() >= 0.001);
    moved.then_some(pts)
}

/// Everything needed to write the SVG.
pub(super) struct Layout<'a> {
    sc: &'a Scenario,
    world: &'a World,
    view: View,
    lane_of: Vec<usize>,
    top: f64,
    /// Whether elements outside the window are left out (the static picture).
    clip_to_window: bool,
}

impl Layout<'_> {
    fn lane_y(&self, p: usize) -> f64 {
        self.top + self.lane_of[p] as f64 * LANE_PX
    }
    fn x(&self, t: SimTime) -> f64 {
        self.view.x(t)
    }
    fn keep(&self, a: SimTime, b: SimTime) -> bool {
        !self.clip_to_window || self.view.shows(a, b)
    }
}

pub(super) fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for w in s.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + w.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// The timeline as a standalone SVG document. `page` adds what the HTML page's script needs
/// (every element of the run, not only the window's) and leaves the header to the page.
/// `log`: the world is a recorded log's (`view::recorded`): its lanes say their host's clock
/// bound instead of a clock, and its instants' uncertainty is drawn.
pub(super) fn render_svg(
    sc: &Scenario,
    seed: u64,
    world: &World,
    violations: &[Violation],
    view: View,
    page: bool,
    log: Option<&LogLanes>,
) -> String {
    let lock_keys = sc.lock_keys();
    let order = lane_order(sc);
    let mut lane_of = vec![0; order.len()];
    for (i, &p) in order.iter().enumerate() {
        lane_of[p] = i;
    }
    let names = world.names();
    let scene = scene(sc, world, &lock_keys, &view, violations);
    let end = world.now();
    let in_window = scene
        .arrows
        .iter()
        .filter(|a| a.3 >= view.from && a.2 <= view.to)
        .count();
    // Busy: the arrows would bury the lanes and the clock labels. The page hides them until
    // asked; the static picture leaves them out.
    let busy_run = in_window > BUSY_ARROWS;
    let busy = busy_run && !page;

    // Header text (the static picture carries its own explanation).
    let mut header: Vec<(String, &str)> = Vec::new();
    if !page {
        let verdict = if violations.is_empty() {
            "no violation".to_string()
        } else {
            let mut props: Vec<String> =
                violations.iter().map(|v| v.property.to_string()).collect();
            props.dedup();
            format!("VIOLATED: {}", props.join(", "))
        };
        header.push((format!("{} — seed {seed} — {verdict}", sc.name), "title"));
        for l in wrap(&sc.model.description, 170) {
            header.push((l, "sub"));
        }
        header.push((
            format!(
                "true time {} … {} of {}; replay: {}",
                view.from,
                view.to,
                end,
                sc.replay_command(seed)
            ),
            "sub",
        ));
        for (i, v) in violations.iter().take(3).enumerate() {
            let line = format!("({}) {} at {}: {}", i + 1, v.property, v.at, v.message);
            for l in wrap(&line, 170) {
                header.push((l, "vtext"));
            }
        }
        if violations.len() > 3 {
            header.push((
                format!("… {} more violations", violations.len() - 3),
                "vtext",
            ));
        }
        if busy {
            header.push((
                format!(
                    "{in_window} message arrows in this window are not drawn (a busy run: they would hide the lanes); the HTML page (--format html) shows them on demand"
                ),
                "sub",
            ));
        }
    }
    let legend_y = 14.0 + header.len() as f64 * 16.0 + 8.0;
    let mut legend_svg = String::new();
    let legend_h = legend(&mut legend_svg, legend_y);
    let axis_y = legend_y + legend_h + 10.0;
    let top = axis_y + 8.0;
    let height = top + order.len() as f64 * LANE_PX + 24.0;
    let l = Layout {
        sc,
        world,
        view,
        lane_of,
        top,
        clip_to_window: !page,
    };

    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" id="timeline" width="{WIDTH_PX}" height="{height}" viewBox="0 0 {WIDTH_PX} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11" data-w0="{}" data-w1="{}" data-end="{}" data-x0="{PLOT_X0}" data-x1="{PLOT_X1}" data-top="{top}" data-bottom="{}" data-msgs="{in_window}"{}>"##,
        view.from.0,
        view.to.0,
        end.0,
        top + order.len() as f64 * LANE_PX,
        match (page, busy_run) {
            (true, true) => r#" class="timeline nomsgs""#,
            (true, false) => r#" class="timeline""#,
            _ => "",
        }
    );
    s.push_str(
        STYLE_AND_DEFS
            .replace("PLOTX0", &PLOT_X0.to_string())
            .replace("PLOTW", &(PLOT_X1 - PLOT_X0).to_string())
            .replace("PLOTY", &(top - 2.0).to_string())
            .replace("PLOTH", &(order.len() as f64 * LANE_PX + 4.0).to_string())
            .as_str(),
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    for (i, (line, class)) in header.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text class="{class}" x="10" y="{}">{}</text>"#,
            20.0 + i as f64 * 16.0,
            esc(line)
        );
    }
    s.push_str(&legend_svg);

    // Lanes: background, name, role and what the clock does.
    for (i, &p) in order.iter().enumerate() {
        let y = top + i as f64 * LANE_PX;
        let fill = if i % 2 == 0 { "#f7f7f7" } else { "#ffffff" };
        let _ = writeln!(
            s,
            r#"<rect x="0" y="{y}" width="{WIDTH_PX}" height="{LANE_PX}" fill="{fill}"/>"#
        );
        let role = match sc.procs[p].1 {
            ProcKind::Client => "client",
            ProcKind::Redis => "redis",
            ProcKind::Resource => "resource",
            ProcKind::Sentinel => "sentinel",
            ProcKind::Consensus => "consensus",
        };
        let colour = if sc.procs[p].1 == ProcKind::Client {
            client_colour(sc, p)
        } else {
            "#333333"
        };
        // Whether the node's wall clock ever leaves true time: then its lane carries the
        // offset curve; otherwise its reading is the axis.
        let clock = if let Some(note) = log.and_then(|l| l.notes.get(p)) {
            note.as_str()
        } else if clock_curve(world, sc.epoch_unix_ms, p, SimTime::ZERO, end).is_some() {
            "wall clock: curve below"
        } else {
            "wall clock = true time"
        };
        let _ = writeln!(
            s,
            r#"<text class="lane" x="8" y="{}" fill="{colour}">{}</text><text class="role" x="8" y="{}">{role}</text><text class="role" x="8" y="{}">{clock}</text>"#,
            y + 17.0,
            esc(&names[p]),
            y + 29.0,
            y + 40.0
        );
    }
    // Axis ticks (the page's script redraws them on zoom).
    let _ = writeln!(s, r#"<g id="ticks">"#);
    let span = view.to.0 - view.from.0;
    let step = tick_step_ns(span, 10);
    let first = view.from.0.div_ceil(step).saturating_mul(step);
    let mut t = first;
    while t <= view.to.0 {
        let x = l.x(SimTime(t));
        let _ = writeln!(
            s,
            r#"<line class="grid" x1="{x:.1}" x2="{x:.1}" y1="{axis_y}" y2="{}"/><text class="tick" x="{x:.1}" y="{}">{}</text>"#,
            top + order.len() as f64 * LANE_PX,
            axis_y - 4.0,
            fmt_tick(t, step)
        );
        // A window reaching the end of time (a recorded log's instants saturate there) ends
        // the ticks instead of wrapping around to the start.
        match t.checked_add(step) {
            Some(next) => t = next,
            None => break,
        }
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(
        s,
        r#"<text class="axis" x="8" y="{}">{}</text>"#,
        axis_y - 4.0,
        if log.is_some() {
            "host clocks →"
        } else {
            "true time →"
        }
    );

    let _ = writeln!(s, r#"<g id="plot" clip-path="url(#plotclip)">"#);
    if let Some(log) = log {
        draw_bands(&mut s, &l, log);
    }
    draw_spans(&mut s, &l, &scene);
    draw_clocks(&mut s, &l, &order, &names);
    if busy {
        // Left out of the static picture: on a busy run they hide the lanes and the clocks.
        let _ = writeln!(s, r#"<g id="msgs"></g>"#);
    } else {
        let _ = writeln!(s, r#"<g id="msgs">"#);
        draw_arrows(&mut s, &l, &scene);
        let _ = writeln!(s, "</g>");
    }
    draw_gaps(&mut s, &l, &scene);
    draw_marks(&mut s, &l, &scene);
    draw_violations(&mut s, &l, violations, order.len());
    let _ = writeln!(s, "</g>");
    s.push_str("</svg>\n");
    s
}

/// `<title>` child: the tooltip of SVG viewers; the page turns it into its own.
pub(super) fn title(tip: &str) -> String {
    format!("<title>{}</title>", esc(tip))
}

pub(super) fn draw_spans(s: &mut String, l: &Layout<'_>, scene: &Scene) {
    // Overlaps go on top of everything, after this.
    for kind in SpanKind::LAYERS {
        let class = kind.class();
        for sp in scene.spans.iter().filter(|sp| sp.kind == kind) {
            if !l.keep(sp.start, sp.end) {
                continue;
            }
            let (top, h) = kind.band();
            let y = l.lane_y(sp.lane_proc) + top;
            let x0 = l.x(sp.start);
            // The static picture leaves out key writes and tries too short to see (a failed
            // Redlock round writes and deletes its key on every node within milliseconds).
            if l.clip_to_window
                && matches!(kind, SpanKind::Key | SpanKind::Trying)
                && l.x(sp.end) - x0 < 0.5
            {
                continue;
            }
            let w = (l.x(sp.end) - x0).max(1.0);
            let fill = sp.fill.map_or(String::new(), |f| format!(r#" fill="{f}""#));
            let _ = write!(
                s,
                r#"<rect class="{class}" data-t0="{}" data-t1="{}" x="{x0:.1}" y="{y}" width="{w:.1}" height="{h}"{fill}>{}</rect>"#,
                sp.start.0,
                sp.end.0,
                title(&sp.tip)
            );
            if !sp.label.is_empty() {
                // Labels show only where their bar is wide enough (the script re-decides).
                let min_w = sp.label.chars().count() as f64 * 6.2 + 6.0;
                if w < min_w && l.clip_to_window {
                    s.push('\n');
                    continue;
                }
                let vis = if w >= min_w { "" } else { r#" display="none""# };
                let _ = write!(
                    s,
                    r#"<text class="label {class}-label" data-t0="{}" data-t1="{}" data-minw="{min_w:.0}" data-dx="3" x="{:.1}" y="{}"{vis}>{}</text>"#,
                    sp.start.0,
                    sp.end.0,
                    x0 + 3.0,
                    y + h - 4.0,
                    esc(&sp.label)
                );
            }
            s.push('\n');
        }
    }
    for (c, a, u, hold_end) in &scene.beliefs {
        // The belief matters while the lock is held: drawn up to the hold's end, with its
        // end marked when it ran out first (the holder kept going on an expired belief).
        let e = (*u).min(*hold_end);
        if !l.keep(*a, e) {
            continue;
        }
        let y = l.lane_y(*c) + 8.0;
        let _ = write!(
            s,
            r#"<line class="belief" data-t0="{}" data-t1="{}" x1="{:.1}" x2="{:.1}" y1="{y}" y2="{y}">{}</line>"#,
            a.0,
            e.0,
            l.x(*a),
            l.x(e),
            title(&format!(
                "{}'s believed validity: from {a} until {u}",
                l.world.names()[*c]
            )),
        );
        if u <= hold_end {
            let _ = write!(
                s,
                r#"<line class="belief-end" data-t0="{}" x1="{:.1}" x2="{:.1}" y1="{}" y2="{}">{}</line>"#,
                u.0,
                l.x(*u),
                l.x(*u),
                y - 4.0,
                y + 22.0,
                title(&format!(
                    "{}'s believed validity ended at {u} while it still held the lock (until {hold_end})",
                    l.world.names()[*c]
                ))
            );
        }
        s.push('\n');
    }
    for (a, b, from, to) in &scene.overlaps {
        if !l.keep(*from, *to) {
            continue;
        }
        for c in [a, b] {
            let y = l.lane_y(*c) + 10.0;
            let _ = writeln!(
                s,
                r#"<rect class="overlap" data-t0="{}" data-t1="{}" x="{:.1}" y="{y}" width="{:.1}" height="20">{}</rect>"#,
                from.0,
                to.0,
                l.x(*from),
                (l.x(*to) - l.x(*from)).max(1.5),
                title(&format!(
                    "two holders at once: {} and {} both believe they hold the lock from {from} to {to} ({})",
                    l.world.names()[*a],
                    l.world.names()[*b],
                    fmt_duration_ns(to.0 - from.0)
                ))
            );
        }
    }
}

/// A recorded log's uncertainty: each call from its invoke to its completion, widened by its
/// host's clock bound, as a pale band behind the lane's bars.
fn draw_bands(s: &mut String, l: &Layout<'_>, log: &LogLanes) {
    for (p, from, to, tip) in &log.bands {
        if !l.keep(*from, *to) {
            continue;
        }
        let x0 = l.x(*from);
        let _ = writeln!(
            s,
            r##"<rect class="bound" data-t0="{}" data-t1="{}" x="{x0:.1}" y="{}" width="{:.1}" height="{}" fill="#6a3d9a" fill-opacity=".12" stroke="#6a3d9a" stroke-opacity=".4" stroke-width=".6" stroke-dasharray="2 2">{}</rect>"##,
            from.0,
            to.0,
            l.lane_y(*p) + 9.0,
            (l.x(*to) - x0).max(1.0),
            LANE_PX - 18.0,
            title(tip)
        );
    }
}

pub(super) fn draw_clocks(s: &mut String, l: &Layout<'_>, order: &[usize], names: &[String]) {
    let (from, to) = if l.clip_to_window {
        (l.view.from, l.view.to)
    } else {
        (SimTime::ZERO, l.world.now())
    };
    for &p in order {
        let Some(pts) = clock_curve(l.world, l.sc.epoch_unix_ms, p, from, to) else {
            continue;
        };
        let lo = pts.iter().map(|p| p.1).fold(0.0f64, f64::min);
        let hi = pts.iter().map(|p| p.1).fold(0.0f64, f64::max);
        let y0 = l.lane_y(p);
        // The band: the lane's lowest 14 px; zero offset is a dotted line in it.
        let (band_top, band_h) = (y0 + 33.0, 13.0);
        let yv = |o: f64| {
            if hi - lo < 1e-9 {
                band_top + band_h / 2.0
            } else {
                band_top + band_h * (hi - o) / (hi - lo)
            }
        };
        let ts: Vec<String> = pts.iter().map(|(t, _)| t.to_string()).collect();
        let ys: Vec<String> = pts.iter().map(|(_, o)| format!("{:.1}", yv(*o))).collect();
        let points: Vec<String> = pts
            .iter()
            .map(|(t, o)| format!("{:.1},{:.1}", l.x(SimTime(*t)), yv(*o)))
            .collect();
        let _ = writeln!(
            s,
            r#"<line class="clock-zero" data-t0="{}" data-t1="{}" x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/>"#,
            from.0,
            to.0,
            l.x(from),
            l.x(to),
            yv(0.0),
            yv(0.0)
        );
        let _ = writeln!(
            s,
            r#"<polyline class="clock" data-ts="{}" data-ys="{}" points="{}">{}</polyline>"#,
            ts.join(" "),
            ys.join(" "),
            points.join(" "),
            title(&format!(
                "{}'s wall clock minus true time: from {} to {} ms over the run (steps and drift)",
                names[p],
                fmt_signed_ms(lo.round() as i64),
                fmt_signed_ms(hi.round() as i64)
            ))
        );
        // The reading at a few instants, so a stepped clock can be read off the picture.
        let n = 6u64;
        for i in 0..n {
            let t = SimTime(
                l.view.from.0
                    + (l.view.to.0 - l.view.from.0) / n * i
                    + (l.view.to.0 - l.view.from.0) / (2 * n),
            );
            let off = pts
                .iter()
                .rev()
                .find(|(pt, _)| *pt <= t.0)
                .map_or(0.0, |p| p.1);
            let wall_ms = l.world.clock(ProcId(p as u32)).wall_ms(t) - l.sc.epoch_unix_ms;
            let _ = writeln!(
                s,
                r#"<text class="wall" data-t0="{}" x="{:.1}" y="{:.1}">wall +{:.3}s ({})</text>"#,
                t.0,
                l.x(t),
                y0 + 31.0,
                wall_ms as f64 / 1000.0,
                fmt_signed_ms(off.round() as i64)
            );
        }
    }
}

pub(super) fn draw_arrows(s: &mut String, l: &Layout<'_>, scene: &Scene) {
    for (from, to, sent, recv, dropped, text, kind) in &scene.arrows {
        let y1 = l.lane_y(*from) + LANE_PX / 2.0;
        let y2 = l.lane_y(*to) + LANE_PX / 2.0;
        let class = if *dropped {
            "msg dropped".to_string()
        } else {
            format!("msg {kind}")
        };
        let _ = writeln!(
            s,
            r#"<line class="{class}" data-t0="{}" data-t1="{}" x1="{:.1}" x2="{:.1}" y1="{y1}" y2="{y2}">{}</line>"#,
            sent.0,
            recv.0,
            l.x(*sent),
            l.x(*recv),
            title(text)
        );
    }
}

pub(super) fn draw_gaps(s: &mut String, l: &Layout<'_>, scene: &Scene) {
    for g in &scene.gaps {
        if !l.keep(
            g.believed_until.min(g.removed_at),
            g.believed_until.max(g.removed_at),
        ) {
            continue;
        }
        let names = l.world.names();
        let _ = writeln!(
            s,
            r#"<line class="gap" data-t0="{}" data-t1="{}" x1="{:.1}" x2="{:.1}" y1="{}" y2="{}">{}</line>"#,
            g.believed_until.0,
            g.removed_at.0,
            l.x(g.believed_until),
            l.x(g.removed_at),
            l.lane_y(g.client) + 8.0,
            l.lane_y(g.node) + 20.0,
            title(&format!(
                "safety margin {}: {} removed the key at {}; {}'s believed validity ended at {}",
                fmt_signed_ns(removal_margin_ns(g.removed_at, g.believed_until)),
                names[g.node],
                g.removed_at,
                names[g.client],
                g.believed_until
            ))
        );
    }
}

pub(super) fn draw_marks(s: &mut String, l: &Layout<'_>, scene: &Scene) {
    for m in &scene.marks {
        if !l.keep(m.at, m.at) {
            continue;
        }
        let y0 = l.lane_y(m.proc);
        let x = l.x(m.at);
        let (w, top, h, label) = m.kind.shape();
        let y = y0 + top;
        let _ = write!(
            s,
            r#"<rect class="mark {}" data-t0="{}" data-w="{w}" x="{:.1}" y="{y}" width="{w}" height="{h}">{}</rect>"#,
            m.kind.class(),
            m.at.0,
            x - w / 2.0,
            title(&m.tip)
        );
        if !label.is_empty() {
            let _ = write!(
                s,
                r#"<text class="glyph" data-t0="{}" data-dx="3" x="{:.1}" y="{}">{label}</text>"#,
                m.at.0,
                x + 3.0,
                y0 + 12.0
            );
        }
        if let Some(words) = &m.label {
            // Promotions on the lane's top line (the lane's role changes there); expiries
            // under the key bar.
            let (dx, dy) = match m.kind {
                MarkKind::Promoted => (14.0, 12.0),
                _ => (4.0, 40.0),
            };
            let _ = write!(
                s,
                r#"<text class="mlabel {}" data-t0="{}" data-dx="{dx}" x="{:.1}" y="{}">{}</text>"#,
                m.kind.class(),
                m.at.0,
                x + dx,
                y0 + dy,
                esc(words)
            );
        }
        s.push('\n');
    }
}

pub(super) fn draw_violations(
    s: &mut String,
    l: &Layout<'_>,
    violations: &[Violation],
    lanes: usize,
) {
    for (i, v) in violations.iter().enumerate().take(20) {
        let x = l.x(v.at);
        let bottom = l.top + lanes as f64 * LANE_PX;
        let _ = writeln!(
            s,
            r#"<line class="violation" data-t0="{}" data-t1="{}" x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{bottom}">{}</line><text class="vlabel" data-t0="{}" data-dx="3" x="{:.1}" y="{}">({}) {}</text>"#,
            v.at.0,
            v.at.0,
            l.top,
            title(&format!(
                "VIOLATION {} at {}: {}",
                v.property, v.at, v.message
            )),
            v.at.0,
            x + 3.0,
            l.top + 10.0 + (i % 3) as f64 * 11.0,
            i + 1,
            v.property
        );
        for a in &v.actors {
            let y = l.lane_y(a.index());
            let _ = writeln!(
                s,
                r#"<rect class="vactor" data-t0="{}" data-w="10" x="{:.1}" y="{y}" width="10" height="{LANE_PX}">{}</rect>"#,
                v.at.0,
                x - 5.0,
                title(&format!(
                    "{} is involved in violation ({})",
                    l.world.names()[a.index()],
                    i + 1
                ))
            );
        }
    }
}

/// The legend from `y` down, wrapped to the picture's width; returns its height.
pub(super) fn legend(s: &mut String, mut y: f64) -> f64 {
    let top = y;
    let items: [(&str, &str); 12] = [
        ("hold", "holds the lock, as far as it knows"),
        ("belief", "its believed validity"),
        ("key", "lock key on a node (writer's colour)"),
        ("trying", "trying"),
        ("paused", "paused"),
        ("down", "down"),
        ("partition", "partitioned"),
        ("slow", "slow/lossy link"),
        ("msg req", "message"),
        ("overlap", "two holders"),
        ("clock", "wall − true time"),
        ("mark expiry", "TTL runs out (dotted: safety margin)"),
    ];
    let mut x = 10.0;
    for (class, text) in items {
        let width = 22.0 + text.chars().count() as f64 * 5.6 + 14.0;
        if x + width > WIDTH_PX {
            x = 10.0;
            y += 16.0;
        }
        let sw = match class {
            "belief" | "msg req" | "clock" => format!(
                r#"<line class="{class}" x1="{x}" x2="{}" y1="{}" y2="{}"/>"#,
                x + 18.0,
                y + 5.0,
                y + 5.0
            ),
            "hold" | "key" => format!(
                r##"<rect class="{class}" x="{x}" y="{y}" width="18" height="10" fill="#1f77b4"/>"##
            ),
            _ => format!(r#"<rect class="{class}" x="{x}" y="{y}" width="18" height="10"/>"#),
        };
        let _ = write!(
            s,
            r#"{sw}<text class="legend" x="{}" y="{}">{}</text>"#,
            x + 22.0,
            y + 9.0,
            esc(text)
        );
        x += width;
    }
    s.push('\n');
    y - top + 16.0
}

pub(super) const STYLE_AND_DEFS: &str = r##"<defs>
<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff3c4"/><line x1="0" y1="0" x2="0" y2="6" stroke="#e0a800" stroke-width="2"/></pattern>
<pattern id="cross" width="6" height="6" patternUnits="userSpaceOnUse"><rect width="6" height="6" fill="#d9d9d9"/><path d="M0,0 L6,6 M6,0 L0,6" stroke="#777" stroke-width="0.8"/></pattern>
<marker id="arrow" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="5" markerHeight="5" orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#777"/></marker>
<clipPath id="plotclip"><rect x="PLOTX0" y="PLOTY" width="PLOTW" height="PLOTH"/></clipPath>
</defs>
<style>
.title{font-size:15px;font-weight:bold;fill:#111}
.sub{font-size:11px;fill:#444}
.vtext{font-size:11px;fill:#c00000;font-weight:bold}
.legend{font-size:10px;fill:#333}
.lane{font-size:13px;font-weight:bold}
.role{font-size:9px;fill:#777}
.axis,.tick{font-size:10px;fill:#555;text-anchor:middle}
.axis{text-anchor:start}
.grid{stroke:#e3e3e3;stroke-width:1}
.hold{fill-opacity:.85;stroke:#222;stroke-width:.5}
.key{fill-opacity:.35;stroke-width:.8;stroke:#444}
.label{font-size:9px;fill:#111;pointer-events:none}
.trying{fill:#aaaaaa}
.paused{fill:url(#hatch);stroke:#e0a800;stroke-width:.8}
.down{fill:url(#cross);stroke:#555;stroke-width:.8}
.paused-label,.down-label{font-size:9px;fill:#555}
.partition{fill:#ff9f43;fill-opacity:.8}
.slow{fill:#ffd166;fill-opacity:.8}
.belief{stroke:#333;stroke-width:1.2;stroke-dasharray:4 2}
.belief-end{stroke:#333;stroke-width:1.2}
.overlap{fill:#e00000;fill-opacity:.35;stroke:#c00000;stroke-width:1.2}
.clock{fill:none;stroke:#6a3d9a;stroke-width:1.2}
.clock-zero{stroke:#bbb;stroke-dasharray:1 2}
.wall{font-size:8.5px;fill:#6a3d9a;text-anchor:middle}
.msg{stroke-width:.7;marker-end:url(#arrow);opacity:.75}
.req{stroke:#777}
.rep{stroke:#444;stroke-dasharray:3 1}
.bg{stroke:#b9a7d6;opacity:.5}
.dropped{stroke:#d62728;stroke-dasharray:2 2}
.mark{fill:#777}
.mark.ev{fill:#222}
.mark.read{fill:#9ecae1}
.mark.write{fill:#2ca02c}
.mark.rejected{fill:#fdae6b;stroke:#e6550d}
.mark.bad{fill:#e00000}
.mark.fault{fill:#e6550d}
.mark.info{fill:#9467bd}
.glyph{font-size:11px;fill:#e6550d;pointer-events:none}
.violation{stroke:#e00000;stroke-width:2}
.vlabel{font-size:10px;font-weight:bold;fill:#e00000}
.vactor{fill:#e00000;fill-opacity:.12}
.mark.expiry{fill:#8b0000}
.mark.promoted{fill:#6a3d9a}
.mlabel{font-size:9.5px;pointer-events:none}
.mlabel.expiry{fill:#8b0000}
.mlabel.promoted{font-size:11px;font-weight:bold;fill:#6a3d9a}
.gap{stroke:#8b0000;stroke-width:1;stroke-dasharray:1 2}
.nomsgs #msgs{display:none}
</style>
"##;
