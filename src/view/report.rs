//! The run as a picture: an SVG timeline (lanes per actor, true time across) and the same
//! picture in a self-contained HTML page that zooms, pans, explains what is under the
//! pointer and steps through the run. Drawn the way the Redis docs and Kleppmann draw lock
//! races by hand: lock-holding bars per client next to the validity they act on, the lock
//! key's life on each node, each node's wall clock beside true time, messages as arrows,
//! faults as marked spans and the violation in red where the bars overlap.
//!
//! What is drawn comes from `scene.rs` (extracted once from the run), how from `svg.rs`; this
//! file is the two outputs: the static SVG and the page with its stepper, CSS and script
//! (`page/page.css`, `page/page.js`).

use std::fmt::Write as _;

use crate::check::Violation;
use crate::scenario::Scenario;
use crate::sim::World;
use crate::time::SimTime;

use super::scene::{ARROWS_PAGE, LogLanes, esc};
pub use super::scene::{View, first_safeguard};
use super::svg::render_svg;

/// The static picture: `window`, or by default the window around the first violation (the
/// first 20 s when nothing broke).
pub fn svg(
    sc: &Scenario,
    seed: u64,
    world: &World,
    violations: &[Violation],
    window: Option<(SimTime, SimTime)>,
) -> String {
    let view = View::around_first_violation(world, violations).on(window);
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    s.push_str(&render_svg(sc, seed, world, violations, view, false, None));
    s
}

/// One run the page shows: the model itself, or one of its variants on the same seed.
pub struct PageRun<'a> {
    /// "as written" for the model itself, else the variant's name.
    pub name: String,
    /// The model's sentence about this run (a variant's `note:`).
    pub note: Option<String>,
    pub sc: &'a Scenario,
    pub world: &'a World,
    pub violations: &'a [Violation],
}

fn verdict_text(violations: &[Violation]) -> String {
    if violations.is_empty() {
        "no violation".to_string()
    } else {
        let mut props: Vec<String> = violations.iter().map(|v| v.property.to_string()).collect();
        props.sort();
        props.dedup();
        format!("VIOLATED: {}", props.join(", "))
    }
}

/// What a reader needs to know of a variant's run beside the model's: where the two runs
/// part (before the first fault: the change alone made them differ, so the faults land on
/// another run) and the model's own sentence about it.
pub fn variant_words(base: &PageRun<'_>, r: &PageRun<'_>) -> String {
    use crate::explore::variants::{first_fault, parts_at};
    // The earlier of the two runs' first faults: a variant may bring its own (a drift in
    // place of a step), and a run that parts there parts by a fault, not by the change alone.
    let fault = first_fault(base.world)
        .into_iter()
        .chain(first_fault(r.world))
        .min();
    let parting = match (parts_at(base.world, r.world), fault) {
        (None, _) => "the same run as the model's, step for step.".to_string(),
        (Some(t), None) => format!("its run parts from the model's at {t} (no fault in either)."),
        (Some(t), Some(f)) if t < f => format!(
            "its run parts from the model's at {t}, before the first fault (at {f}): the change alone made them differ, so the same faults meet another run."
        ),
        (Some(t), Some(f)) => {
            format!("its run parts from the model's at {t}, after the first fault (at {f}).")
        }
    };
    match &r.note {
        Some(n) => format!("{} {}", upper_first(&parting), n),
        None => upper_first(&parting),
    }
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

/// The page: one self-contained HTML file (inline SVG, CSS and script; nothing fetched),
/// opened on `window` or by default on the static picture's window. The model's variants
/// (`variants:` in the model) run on the same seed and show beside it.
pub fn html(
    sc: &Scenario,
    seed: u64,
    world: &World,
    violations: &[Violation],
    window: Option<(SimTime, SimTime)>,
) -> String {
    let variants = crate::explore::variants::run_variants(sc, seed);
    let mut runs = vec![PageRun {
        name: "as written".into(),
        note: None,
        sc,
        world,
        violations,
    }];
    for v in &variants {
        runs.push(PageRun {
            name: v.name.clone(),
            note: v.note.clone(),
            sc: &v.sc,
            world: &v.world,
            violations: &v.outcome.violations,
        });
    }
    html_runs(seed, &runs, window)
}

/// How much smaller each fault of a violating run would have to be for the run to hold, each
/// figure checked by a run from time 0 (`threshold::counterfactuals`); empty for a run that
/// held or whose faults alone do not replay its violation.
fn counterfactuals(
    sc: &Scenario,
    seed: u64,
    names: &[String],
) -> Vec<crate::explore::threshold::Counterfactual> {
    let (_, faults) = sc.build_with(seed, crate::sim::TraceMode::Off, None);
    let name = |p: crate::time::ProcId| names[p.index()].clone();
    crate::explore::threshold::counterfactuals(sc, seed, &faults, &name)
}

/// The counterfactuals under the violations.
fn counterfactuals_html(cf: &[crate::explore::threshold::Counterfactual]) -> String {
    if cf.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<div class=\"counterfactuals\"><p>What would have saved this run — each fault made smaller alone, the others as they were, each figure checked by a run from time 0:</p><ul>\n",
    );
    for c in cf {
        let _ = writeln!(s, "<li>{}</li>", esc(&c.sentence()));
    }
    s.push_str("</ul></div>\n");
    s
}

/// The page for `runs` (the first is the model as written), aligned on one time axis.
///
/// One screen per step: the stepper (its controls and the step's sentence) stays at the top,
/// the chart around the cursor and the state panel ("what each client believes") sit side by
/// side under it — the panel under the chart on a narrow screen — and what is read once (the
/// replay command, the violations, the counterfactuals, a lesson's text) folds away above.
pub fn html_runs(seed: u64, runs: &[PageRun<'_>], window: Option<(SimTime, SimTime)>) -> String {
    html_runs_on(seed, runs, window, 0)
}

/// [`html_runs`], the page about run `open` (serve's what-if: the run with the added
/// faults): its header and verdict are that run's, and the page opens on it, at its first
/// violation. The first run stays the model as written the others are told against.
pub fn html_runs_on(
    seed: u64,
    runs: &[PageRun<'_>],
    window: Option<(SimTime, SimTime)>,
    open: usize,
) -> String {
    page(seed, runs, window, open, None)
}

/// The page of a log recorded from a real system (`view::recorded`): the same page, its
/// world the log's, with the command that judged it in place of a replay line, the clock
/// bounds on the lanes, and no counterfactuals (nothing can be re-run).
pub(super) fn html_log(run: &PageRun<'_>, log: &LogLanes) -> String {
    let runs = [PageRun {
        name: run.name.clone(),
        note: run.note.clone(),
        sc: run.sc,
        world: run.world,
        violations: run.violations,
    }];
    page(0, &runs, None, 0, Some(log))
}

fn page(
    seed: u64,
    runs: &[PageRun<'_>],
    window: Option<(SimTime, SimTime)>,
    open: usize,
    log: Option<&LogLanes>,
) -> String {
    let base = &runs[0];
    let (sc, world, violations) = (base.sc, base.world, base.violations);
    let about = &runs[open.min(runs.len() - 1)];
    let view = View::page(about.world, about.violations).on(window);
    let names = world.names();
    // What would have saved the run: the model's own faults, one by one (not the added).
    let cf = if violations.is_empty() || open > 0 || log.is_some() {
        Vec::new()
    } else {
        counterfactuals(sc, seed, &names)
    };
    let mut s = page_top(about.sc, seed, about.violations, &cf, log);
    s.push_str(&stepper_bar(runs));
    if open > 0 {
        let _ = write!(
            s,
            "<main id=\"stage\" data-open=\"{open}\"><div id=\"charts\">"
        );
    } else {
        s.push_str("<main id=\"stage\"><div id=\"charts\">");
    }
    s.push_str(CHART_NAV);
    let (words, ok) = verdict_of(about.violations, log);
    let _ = writeln!(
        s,
        r#"<p id="verdict" class="{}">{}: {}</p><p id="vwords"></p>"#,
        if ok { "ok" } else { "bad" },
        esc(&about.name),
        esc(&words)
    );
    s.push_str(&charts(seed, runs, view, window, log));
    s.push_str("</div>\n<aside id=\"state\" aria-live=\"polite\"></aside></main>\n<div id=\"tip\" hidden></div>\n");
    s.push_str(&page_bottom(runs, view, log));
    // The steps and their state, computed from each run's history (`view::stepper`). The
    // fault's own step says its counterfactual too (the variants ran other faults' worth of
    // messages: theirs are not computed).
    let said: Vec<(SimTime, String)> = cf
        .iter()
        .map(|c| (c.at, format!("Counterfactual (this fault alone made smaller, checked by a run from time 0): {}.", c.sentence())))
        .collect();
    for (i, r) in runs.iter().enumerate() {
        let (words, ok) = verdict_of(r.violations, log);
        let _ = writeln!(
            s,
            r#"<script type="application/json" class="steps" data-variant="{}" data-verdict="{}" data-ok="{}" data-words="{}">{}</script>"#,
            esc(&r.name),
            esc(&words),
            ok,
            if i == 0 {
                String::new()
            } else {
                esc(&variant_words(base, r))
            },
            crate::view::stepper::steps_json_of(
                r.sc,
                r.world,
                r.violations,
                if i == 0 { &said } else { &[] },
                log.map_or(crate::view::stepper::Telling::RUN, |l| {
                    crate::view::stepper::Telling {
                        versioned: l.versioned,
                        recorded: true,
                    }
                })
            )
        );
    }
    s.push_str("<script>\n");
    s.push_str(PAGE_JS);
    s.push_str("</script>\n</body></html>\n");
    s
}

fn ok_or_bad(violations: &[Violation]) -> &'static str {
    if violations.is_empty() { "ok" } else { "bad" }
}

/// A run's verdict in words and whether it is a pass: its violations', or for a recorded
/// log without a certain one, the violation its clock bounds leave possible (exit code 3:
/// not a pass).
fn verdict_of(violations: &[Violation], log: Option<&LogLanes>) -> (String, bool) {
    match log.and_then(|l| l.possible.as_ref()) {
        Some(p) if violations.is_empty() => (p.clone(), false),
        _ => (verdict_text(violations), violations.is_empty()),
    }
}

/// The document's head and the page's header: the model, its verdict, and folded away the
/// replay command, the violations and what would have saved the run.
fn page_top(
    sc: &Scenario,
    seed: u64,
    violations: &[Violation],
    cf: &[crate::explore::threshold::Counterfactual],
    log: Option<&LogLanes>,
) -> String {
    let mut s = String::new();
    let what = match log {
        Some(_) => "recorded log".to_string(),
        None => format!("seed {seed}"),
    };
    let _ = write!(
        s,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>distlock-sim: {} {what}</title>
<style>{PAGE_CSS}</style></head>
<body>
<header><h1>{} <span class="seed">{what}</span> <span class="{}">{}</span> <span class="desc">{}</span></h1>
"#,
        esc(&sc.name),
        esc(&sc.name),
        match log.and_then(|l| l.possible.as_ref()) {
            Some(_) if violations.is_empty() => "bad",
            _ => ok_or_bad(violations),
        },
        match log.and_then(|l| l.possible.as_ref()) {
            _ if !violations.is_empty() => format!("{} violation(s)", violations.len()),
            Some(_) => "possibly violated".to_string(),
            None => "no violation".to_string(),
        },
        esc(&sc.model.description),
    );
    // The first violation in the summary: what the run is about, even folded.
    let command = if log.is_some() {
        "every property's verdict, the command"
    } else {
        "the replay command"
    };
    let summary = match violations.first() {
        None => command.to_string(),
        Some(v) => format!(
            "{} at {}: {}",
            v.property,
            v.at,
            if violations.len() > 1 {
                format!("{} more below, {command}", violations.len() - 1)
            } else {
                command.to_string()
            }
        ),
    };
    let _ = writeln!(
        s,
        "<details id=\"about\"><summary>{}{}</summary>",
        esc(&summary),
        if cf.is_empty() {
            ""
        } else {
            ", what would have saved it"
        },
    );
    match log {
        Some(l) => {
            let _ = writeln!(
                s,
                "<p class=\"replay\">judged by: <code>{}</code> (times are the hosts' clocks, each within its bound of true time)</p>",
                esc(&l.command)
            );
            s.push_str("<ul class=\"findings\">\n");
            for f in &l.findings {
                let _ = writeln!(s, "<li><code>{}</code></li>", esc(f));
            }
            s.push_str("</ul>\n");
            if l.left_out > 0 {
                let _ = writeln!(
                    s,
                    "<p class=\"note\">The last {} events of the log were judged but are not drawn.</p>",
                    l.left_out
                );
            }
        }
        None => {
            let _ = writeln!(
                s,
                "<p class=\"replay\">replay: <code>{}</code></p>",
                esc(&sc.replay_command(seed))
            );
        }
    }
    if !violations.is_empty() {
        s.push_str("<ol class=\"violations\">\n");
        for v in violations.iter().take(20) {
            let _ = writeln!(
                s,
                r##"<li><a href="#" data-goto="{}"><b>{}</b> at {}</a>: {}</li>"##,
                v.at.0,
                v.property,
                v.at,
                esc(&v.message)
            );
        }
        s.push_str("</ol>\n");
        s.push_str(&counterfactuals_html(cf));
    }
    s.push_str("</details>\n</header>\n");
    s
}

/// The stepper: its controls, the runs to flip between, and the step's sentence; it stays at
/// the top of the screen while the page scrolls.
fn stepper_bar(runs: &[PageRun<'_>]) -> String {
    let mut s = String::from(
        r#"<div id="stepper"><div class="controls"><button id="first-step" title="first event (Home)">|◀ first</button> <button id="prev-notable" title="previous notable event: acquire, expiry, fault, violation (Shift+← or PageUp)">◀◀ notable</button> <button id="prev" title="previous event (←)">◀ prev</button> <button id="play" title="play / pause (Space)">▶ play</button> <select id="pace" title="pace"><option value="1">1 step/s</option><option value="2" selected>2 steps/s</option><option value="5">5 steps/s</option><option value="20">20 steps/s</option></select> <button id="next" title="next event (→)">next ▶</button> <button id="next-notable" title="next notable event (Shift+→ or PageDown)">notable ▶▶</button> <input type="range" id="scrub" min="1" value="1" aria-label="step"> <span id="stepno"></span></div>
"#,
    );
    if runs.len() > 1 {
        s.push_str("<div id=\"variants\">runs on the same seed: ");
        for (i, r) in runs.iter().enumerate() {
            let _ = write!(
                s,
                r#"<label class="variant"><input type="radio" name="variant" value="{}"{}> {} <span class="{}">({})</span></label> "#,
                esc(&r.name),
                if i == 0 { " checked" } else { "" },
                esc(&r.name),
                ok_or_bad(r.violations),
                esc(&verdict_text(r.violations))
            );
        }
        s.push_str("<span id=\"vnote\"></span></div>\n");
    }
    s.push_str("<p id=\"sentence\"></p></div>\n");
    s
}

/// Zoom and pan, above the charts.
const CHART_NAV: &str = r#"<nav><button id="fit">whole run</button> <button id="focus">first violation</button> <button id="zin">zoom in</button> <button id="zout">zoom out</button>
<label class="toggle"><input type="checkbox" id="msgs-toggle" checked> message arrows</label>
<span class="hint">wheel: zoom · drag: pan · hover: details</span>
<span id="range"></span></nav>
"#;

/// One chart per run, all on the first run's window, so that one instant is one x everywhere.
fn charts(
    seed: u64,
    runs: &[PageRun<'_>],
    view: View,
    window: Option<(SimTime, SimTime)>,
    log: Option<&LogLanes>,
) -> String {
    let mut s = String::new();
    for (i, r) in runs.iter().enumerate() {
        let rv = View::page(r.world, r.violations).on(window);
        let rv = View {
            from: view.from,
            to: view.to,
            arrows_from: rv.arrows_from.min(view.arrows_from),
            arrows_to: rv.arrows_to.max(view.arrows_to),
            ..rv
        };
        let mut svg = render_svg(r.sc, seed, r.world, r.violations, rv, true, log);
        if i > 0 {
            svg = svg.replacen(r#"id="timeline""#, &format!(r#"id="timeline-{i}""#), 1);
        }
        let _ = writeln!(s, r#"<div class="run" data-variant="{}">"#, esc(&r.name));
        // The first run's verdict is the line above the charts.
        if i > 0 {
            let _ = writeln!(
                s,
                r#"<h3>{} <span class="{}">{}</span></h3>"#,
                esc(&r.name),
                ok_or_bad(r.violations),
                esc(&verdict_text(r.violations))
            );
        }
        let _ = writeln!(
            s,
            r#"<div class="chart{}">"#,
            if i == 0 { r#"" id="chart"# } else { "" }
        );
        s.push_str(&svg);
        s.push_str("</div></div>\n");
    }
    s
}

/// Under the stage: each variant in words (where it parts from the model's run, its note),
/// the faults applied, and how to read and address the page.
fn page_bottom(runs: &[PageRun<'_>], view: View, log: Option<&LogLanes>) -> String {
    let base = &runs[0];
    let world = base.world;
    let mut s = String::from("<section id=\"below\">");
    if runs.len() > 1 {
        s.push_str("<h2>The runs compared</h2><p class=\"note\">The same seed: the same faults, and every random draw from the same stream, so the runs stay alike until a variant sends other messages.</p><ul class=\"vnotes\">");
        for r in &runs[1..] {
            let _ = write!(
                s,
                r#"<li data-variant="{}"><b>{}</b> <span class="{}">({})</span>: {}</li>"#,
                esc(&r.name),
                esc(&r.name),
                ok_or_bad(r.violations),
                esc(&verdict_text(r.violations)),
                esc(&variant_words(base, r))
            );
        }
        s.push_str("</ul>\n");
    }
    if log.is_some() {
        let _ = writeln!(
            s,
            "<h2>Reading a recorded log</h2><p class=\"note\">Lanes: {}. The time axis is the hosts' clocks, counted from the earliest instant any event may have had (its invoke less its host's bound); the log has no true time. A client believes it holds a lock from its acquire's completion to its release's invocation, its believed validity's end or a failed extend, as <code>check-log</code> judges it. Each pale band is one call from its invoke to its completion widened by its host's clock bound (under each client's name): the call took effect at some true instant inside it. A violation is marked where its last witnessing call completed. Keys: ← → step, Shift+← → notable step, Space play, Home/End. The address <code>#s=N</code> opens the page at step N.</p></section>",
            esc(&world.names().join(", ")),
        );
        return s;
    }
    let _ = writeln!(
        s,
        "<h2>Faults applied ({})</h2><ul class=\"faults\">",
        world.applied_faults.len()
    );
    for f in world.applied_faults.iter().take(500) {
        let _ = writeln!(
            s,
            r##"<li><a href="#" data-goto="{}">{}</a> {}</li>"##,
            f.at.0,
            f.at,
            esc(&world.describe_fault(f))
        );
    }
    if world.applied_faults.len() > 500 {
        let _ = writeln!(s, "<li>… {} more</li>", world.applied_faults.len() - 500);
    }
    let _ = writeln!(
        s,
        "</ul><p class=\"note\">Lanes: {}. Message arrows are drawn from {} to {} (at most {ARROWS_PAGE}); the JSON trace (<code>--format json</code>) has every message. Keys: ← → step, Shift+← → notable step, Space play, Home/End, m messages. The address <code>#s=N&amp;variant=NAME</code> opens the page at step N of that run (steps count from 1; the set-up before the story is step 1, folded).</p></section>",
        esc(&world.names().join(", ")),
        view.arrows_from,
        view.arrows_to
    );
    s
}

/// The page's style (a leading newline, as the page has always had it).
const PAGE_CSS: &str = concat!("\n", include_str!("page/page.css"));

/// Zoom, pan, tooltips and the stepper. Every element placed in time carries its true times,
/// and `layout()` places it again for the current window with the same formula as the Rust
/// side; every chart (the model and its variants) shares one window and one cursor. The
/// state panel shows the state `view::stepper` computed and embedded: this script only
/// applies its deltas and prints it.
const PAGE_JS: &str = concat!("\n", include_str!("page/page.js"));
