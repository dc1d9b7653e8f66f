//! What `explore` prints: the systematic search's report as text and JSON, and the
//! PCT-style run's (the searches themselves are `explore::systematic`'s).

use std::fmt::Write as _;

use crate::explore::minimize::fault_ron;
use crate::explore::systematic::{Coverage, ExploreReport, Found, PctReport};
use crate::time::fmt_duration_ns;

/// The magnitudes one fault family was placed with, as a phrase ("durations 1s, 2s").
fn magnitudes_text(c: &Coverage) -> String {
    const SHOWN: usize = 6;
    let all: Vec<&str> = c.magnitudes.iter().map(|(_, s)| s.as_str()).collect();
    if all.len() <= SHOWN {
        return format!("magnitudes {}", all.join(", "));
    }
    format!(
        "{} magnitudes from {} to {}",
        all.len(),
        all[0],
        all[all.len() - 1]
    )
}

/// The report as text; `saved` is where the scripted model was written, if it was.
/// `program` begins the printed replay command (the CLI passes the program as invoked, so
/// the line runs as pasted).
pub fn report_text(r: &ExploreReport, saved: Option<&str>, program: &str) -> String {
    let mut t = String::new();
    let kinds: Vec<String> = r
        .points_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let _ = writeln!(
        t,
        "explore {} seed {}: up to {} fault{} per schedule at the decision points of the run",
        r.model,
        r.seed,
        r.faults,
        if r.faults == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        t,
        "decision points: {}{}",
        r.points,
        if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", kinds.join(", "))
        }
    );
    if !r.not_placed.is_empty() {
        let _ = writeln!(
            t,
            "not placed (the model declares them; no decision-point menu item is of that kind): {}",
            r.not_placed.join(", ")
        );
    }
    if r.faults >= 1 {
        let _ = writeln!(
            t,
            "offsets: a schedule of one fault opens it just before each event of its target ({} such points: every offset at which it first acts) and at the decision points, for {}; a schedule of {} opens every fault at a decision point",
            r.event_points,
            if r.every_offset {
                "the faults of every process"
            } else {
                "a client's faults and cuts (a server's own faults at the decision points only; --every-offset places them at every event too)"
            },
            match r.faults {
                1 => "more faults".to_string(),
                2 => "2 faults".to_string(),
                k => format!("2 to {k} faults"),
            }
        );
        for ((kind, target), c) in &r.coverage {
            let _ = writeln!(
                t,
                "  one fault: {kind} {target}: before {} of its events and at {} decision points, {} ({} schedules)",
                c.at_events,
                c.at_decisions,
                magnitudes_text(c),
                c.placements
            );
        }
    }
    let _ = writeln!(
        t,
        "schedules run: {} ({} runs in all, {} skipped as explored states), distinct states: {}, horizon: each schedule runs to {} after its last fault ends (2 x TTL + the longest hold and request wait + 1s, or the liveness bound + TTL), at most the model's duration",
        r.schedules,
        r.runs,
        r.duplicates,
        r.distinct_states,
        fmt_duration_ns(r.horizon_ns)
    );
    let _ = writeln!(
        t,
        "wall time: {:.2}s, {:.0} schedules/s{}",
        r.wall_s,
        r.schedules_per_s(),
        if r.prefix_sharing {
            ""
        } else {
            " (no prefix sharing: every schedule from time 0)"
        }
    );
    match &r.found {
        Some(f) => found_text(&mut t, r, f, saved, program),
        None if r.budget_hit => {
            let _ = writeln!(
                t,
                "INCONCLUSIVE: the budget of runs ran out in the search with {} fault{}: no violation with ≤ {} faults at {} points (levels below searched in full)",
                r.levels_done,
                if r.levels_done == 1 { "" } else { "s" },
                r.levels_done.saturating_sub(1),
                r.points
            );
        }
        None => {
            let _ = writeln!(
                t,
                "no violation with ≤ {} faults at {} points (one fault: at {} event offsets and the decision points, of the magnitudes listed; more: at the decision points)",
                r.faults, r.points, r.event_points
            );
            if r.inconclusive_runs > 0 {
                let _ = writeln!(
                    t,
                    "INCONCLUSIVE: {} schedule(s) stopped on the model's event or history budget",
                    r.inconclusive_runs
                );
            }
            if r.points == 0 {
                let _ = writeln!(
                    t,
                    "VACUOUS: no decision point of the run takes a fault the model declares"
                );
            }
        }
    }
    t
}

/// The found schedule: its violations, its faults as placed and as scripted, and where the
/// scripted model is (or the model itself) with its replay line.
fn found_text(t: &mut String, r: &ExploreReport, f: &Found, saved: Option<&str>, program: &str) {
    let _ = writeln!(
        t,
        "VIOLATED with {} fault{} (a shortest schedule: every schedule with fewer held):",
        f.placed.len(),
        if f.placed.len() == 1 { "" } else { "s" }
    );
    for v in &f.violations {
        let _ = writeln!(t, "  {}: {}", v.property, v.message);
    }
    let _ = writeln!(t, "schedule:");
    for p in &f.placed {
        let _ = writeln!(
            t,
            "  at {} ({} of {}): {}",
            p.point_at, p.point, r.model, p.item
        );
    }
    let _ = writeln!(t, "as scripted faults:");
    for s in &f.scripted {
        let _ = writeln!(t, "  {}", fault_ron(s));
    }
    if !f.replay_confirms {
        let _ = writeln!(
            t,
            "WARNING: the scripted model run from the start does not show {} (a fault placed at the same nanosecond as another event is ordered differently there)",
            f.violations[0].property
        );
    }
    let path = saved.unwrap_or("EXPLORED.ron");
    match saved {
        Some(p) => {
            let _ = writeln!(t, "scripted model written to {p}");
        }
        None => {
            let _ = writeln!(t, "scripted model (save it as {path}):");
            t.push_str(&f.model_text);
        }
    }
    let _ = writeln!(t, "timeline: {program} replay {path} --seed {}", r.seed);
}

/// The report as one JSON object.
pub fn report_json(r: &ExploreReport) -> serde_json::Value {
    let found = r.found.as_ref().map(|f| {
        serde_json::json!({
            "faults": f.placed.len(),
            "properties": f.violations.iter().map(|v| v.property.to_string()).collect::<Vec<_>>(),
            "schedule": f.placed.iter().map(|p| serde_json::json!({
                "point": p.point, "at_ns": p.point_at.0, "fault": p.item,
            })).collect::<Vec<_>>(),
            "scripted": f.scripted.iter().map(fault_ron).collect::<Vec<_>>(),
            "replay_confirms": f.replay_confirms,
            "model_text": f.model_text,
        })
    });
    serde_json::json!({
        "model": r.model,
        "seed": r.seed,
        "max_faults": r.faults,
        "decision_points": r.points,
        "points_by_kind": r.points_by_kind,
        "schedules": r.schedules,
        "runs": r.runs,
        "duplicates": r.duplicates,
        "distinct_states": r.distinct_states,
        "levels_done": r.levels_done,
        "budget_hit": r.budget_hit,
        "inconclusive_runs": r.inconclusive_runs,
        "horizon_ns": r.horizon_ns,
        "event_points": r.event_points,
        "every_offset": r.every_offset,
        "coverage": r.coverage.iter().map(|((kind, target), c)| serde_json::json!({
            "kind": kind, "target": target, "placements": c.placements,
            "at_events": c.at_events, "at_decision_points": c.at_decisions,
            "magnitudes": c.magnitudes.iter().map(|(_, s)| s.clone()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "not_placed": r.not_placed,
        "prefix_sharing": r.prefix_sharing,
        "wall_s": r.wall_s,
        "schedules_per_s": r.schedules_per_s(),
        "violation": found,
    })
}

pub fn pct_text(r: &PctReport) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "explore {} seed {} (PCT-style, depth {}): {} decision points, menus of at most {} items",
        r.model, r.seed, r.depth, r.points, r.max_menu
    );
    let _ = writeln!(
        t,
        "bound: a bug that needs {} given fault(s) at given points of the run is found by one run with probability ≥ 1/(C({}, {}) · {}^{}) = {:.3e}; 99 % confidence takes {} runs",
        r.depth, r.points, r.depth, r.max_menu, r.depth, r.p_per_run, r.runs_needed_99
    );
    let _ = writeln!(
        t,
        "runs: {} ({:.2}s wall), confidence reached {:.2} %{}",
        r.runs,
        r.wall_s,
        100.0 * r.confidence,
        if r.confidence < 0.99 {
            " — FEWER runs than 99 % needs (inconclusive)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        t,
        "violating runs: {} of {} (measured rate {:.4})",
        r.violating_runs,
        r.runs,
        r.violating_runs as f64 / (r.runs.max(1)) as f64
    );
    if let Some((what, props)) = &r.first {
        let ps: Vec<String> = props.iter().map(|p| p.to_string()).collect();
        let _ = writeln!(t, "first violating run ({}):", ps.join(", "));
        for w in what {
            let _ = writeln!(t, "  {w}");
        }
    }
    t
}
