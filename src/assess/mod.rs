//! `assess`: "is my lock safe?" for a user's own configuration files and library options
//! (docs/assess.md). The files are read into a setup (`setup`), the setup is written as a
//! model, and each catalogue pitfall that applies (`pitfall`) runs as that model with the
//! pitfall's faults over a range of seeds: a finding per pitfall, with its rate and interval,
//! whether its hazard was reached, a threshold where one fault decides it, the fix, and the
//! replay line of its model file.

pub mod assumptions;
pub mod conf;
pub mod config;
pub mod edge;
mod no_bearing;
pub mod pitfall;
pub mod setup;
pub mod yaml;

use std::fmt::Write as _;
use std::ops::Range;

use crate::explore::{self, Shard, rate};
use crate::scenario;

pub use assumptions::{Assumptions, DEFAULT_FAULTS};
pub use setup::{Input, InputError, LibArg, Setup, Status};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Violated,
    Held,
    Inconclusive,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Violated => "violated",
            Verdict::Held => "held",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One property's count over the finding's seeds.
#[derive(Clone, Debug)]
pub struct PropertyRate {
    pub property: String,
    pub violating: u64,
    pub decided: u64,
}

impl PropertyRate {
    pub fn ci95(&self) -> (f64, f64) {
        rate::clopper_pearson(self.violating, self.decided)
    }
}

/// What one pitfall did to the setup.
#[derive(Clone, Debug)]
pub struct Finding {
    pub pitfall: &'static str,
    pub title: String,
    pub verdict: Verdict,
    pub seeds: u64,
    pub violating: u64,
    pub inconclusive: u64,
    pub rates: Vec<PropertyRate>,
    /// The hazard and the seeds that reached it.
    pub hazard: Option<(&'static str, u64)>,
    pub first_violating: Option<u64>,
    /// The edge in one sentence: the probe's (`edge`), else the first violating seed's
    /// counterfactual.
    pub threshold: Option<String>,
    /// The probe's edge, where one was found: both sizes' replay lines.
    pub edge: Option<edge::Edge>,
    pub fix: String,
    pub held_note: String,
    /// The model file and the command that replays the finding's first violating seed (or
    /// runs seed 0 when it held).
    pub model_path: String,
    pub replay: String,
    pub rests_on: Vec<&'static str>,
    pub stand_in: Option<String>,
    pub unreached_note: Option<String>,
}

/// The whole assessment.
pub struct Report {
    pub setup: Setup,
    pub assumptions: Assumptions,
    pub seeds: Range<u64>,
    pub model_path: String,
    pub findings: Vec<Finding>,
}

impl Report {
    /// 1 if a finding was violated, else 3 if one was inconclusive (or nothing applied),
    /// else 0.
    pub fn exit_code(&self) -> u8 {
        if self.findings.iter().any(|f| f.verdict == Verdict::Violated) {
            1
        } else if self.findings.is_empty()
            || self
                .findings
                .iter()
                .any(|f| f.verdict == Verdict::Inconclusive)
        {
            3
        } else {
            0
        }
    }
}

/// The model file of pitfall `id` beside `out` (`assess.ron` → `assess.pause-past-ttl.ron`).
pub fn pitfall_path(out: &str, id: &str) -> String {
    let stem = out.strip_suffix(".ron").unwrap_or(out);
    format!("{stem}.{id}.ron")
}

/// Runs every pitfall of the setup over `seeds`, writing each model beside `out` (the
/// setup's own model) so that the replay lines run as printed.
pub fn assess(
    setup: Setup,
    assumptions: Assumptions,
    seeds: Range<u64>,
    out: &str,
    program: &str,
    jobs: usize,
) -> Result<Report, String> {
    if !(2..=16).contains(&assumptions.clients) {
        return Err(format!(
            "{} clients: assess runs 2 to 16 (one client has nobody to exclude)",
            assumptions.clients
        ));
    }
    let base = pitfall::setup_model(&setup, &assumptions);
    scenario::load_str("assess", out, &base)
        .map_err(|e| format!("internal: the setup's model does not load: {e}\n{base}"))?;
    std::fs::write(out, &base).map_err(|e| format!("--out {out}: {e}"))?;
    let mut findings = Vec::new();
    for p in pitfall::pitfalls(&setup, &assumptions) {
        let path = pitfall_path(out, p.id);
        let mut sc = scenario::load_str(p.id, &path, &p.model)
            .map_err(|e| format!("internal: pitfall {} does not load: {e}\n{}", p.id, p.model))?;
        sc.replay_program = program.to_string();
        std::fs::write(&path, &p.model).map_err(|e| format!("{path}: {e}"))?;
        let s = explore::sweep(&sc, seeds.clone(), Shard::WHOLE, jobs, &|| {});
        let rates: Vec<PropertyRate> = sc
            .properties
            .iter()
            .map(|pr| PropertyRate {
                property: pr.name().to_string(),
                violating: s.violations_per_property.get(pr).copied().unwrap_or(0),
                decided: s.decided_per_property.get(pr).copied().unwrap_or(0),
            })
            .collect();
        let hazard = p.hazard.map(|h| {
            let reached = s
                .witnesses
                .iter()
                .find(|(k, _)| k.name() == h)
                .map_or(0, |(_, &(n, _))| n);
            (h, reached)
        });
        let verdict = if s.violating_seeds > 0 {
            Verdict::Violated
        } else if s.inconclusive_seeds > 0 {
            Verdict::Inconclusive
        } else {
            Verdict::Held
        };
        let seed = s.first_violating_seed.unwrap_or(seeds.start);
        let (threshold, edge) = match &p.probe {
            Some(probe) => match edge::find(probe, &p.model, &path, program, seeds.clone())? {
                Ok(e) => (Some(e.sentence()), Some(e)),
                Err(none) => (Some(none.sentence()), None),
            },
            None => (
                s.first_violating_seed
                    .and_then(|seed| threshold_of(&sc, seed)),
                None,
            ),
        };
        findings.push(Finding {
            pitfall: p.id,
            title: p.title,
            verdict,
            seeds: s.seeds_run,
            violating: s.violating_seeds,
            inconclusive: s.inconclusive_seeds,
            rates,
            hazard,
            first_violating: s.first_violating_seed,
            threshold,
            edge,
            fix: p.fix,
            held_note: p.held_note,
            replay: format!(
                "{program} replay {} --seed {seed}",
                scenario::names::shell_word(&path)
            ),
            model_path: path,
            rests_on: p.rests_on,
            stand_in: p.stand_in,
            unreached_note: p.unreached_note,
        });
    }
    Ok(Report {
        setup,
        assumptions,
        seeds,
        model_path: out.to_string(),
        findings,
    })
}

/// The edge of the first violating seed: each of its faults made smaller alone until the
/// run holds (`threshold::counterfactuals`, every figure checked by a run from time 0); the
/// first fault whose shrinking saves the run, as "breaks iff ≥ X".
fn threshold_of(sc: &scenario::Scenario, seed: u64) -> Option<String> {
    let (world, faults) = sc.build_with(seed, crate::sim::TraceMode::Off, None);
    let names = world.names();
    let name = |p: crate::time::ProcId| names[p.index()].clone();
    let cf = explore::threshold::counterfactuals(sc, seed, &faults, &name);
    // Slow replies have an edge of their own (`slow-replies`, measured where they hurt
    // most): a spike drawn by this seed is not where its finding's edge lies.
    use explore::threshold::Unit;
    let c = cf
        .iter()
        .find(|c| c.holds_at.is_some() && c.unit != Unit::Latency)?;
    let h = c.holds_at?;
    let edge = match c.unit {
        Unit::Window | Unit::Latency => format!(
            "{} holds, {} breaks it",
            crate::time::fmt_duration_us(h as u64),
            crate::time::fmt_duration_us((h as u64).saturating_add(1_000))
        ),
        Unit::Step => format!("a step of {h:+}ms holds"),
        Unit::Drift => format!("a drift of {h:+}ppm holds"),
    };
    Some(format!(
        "on seed {seed}, {} (the edge: {edge}; this fault alone changed, the others as drawn)",
        c.sentence()
    ))
}

/// The report as text: the setup, the assumptions, one block per finding, and the keys.
pub fn text(r: &Report) -> String {
    let mut s = String::new();
    s.push_str(&r.setup.describe());
    let a = &r.assumptions;
    let _ = writeln!(
        s,
        "assumed: faults {}; {} client(s), critical sections {}-{} ms; seeds {}..{} (--faults, --clients, --hold, --seeds change these)",
        a.faults_text(),
        a.clients,
        a.hold_ms.0,
        a.hold_ms.1,
        r.seeds.start,
        r.seeds.end
    );
    for d in &r.setup.defaults {
        let _ = writeln!(s, "default: {d}");
    }
    let _ = writeln!(s, "model: {} (the setup without faults)", r.model_path);
    let _ = writeln!(s);
    for f in &r.findings {
        let head = match f.verdict {
            Verdict::Violated => "VIOLATED",
            Verdict::Held => "held    ",
            Verdict::Inconclusive => "INCONCLUSIVE",
        };
        let _ = writeln!(s, "{head} {}: {}", f.pitfall, f.title);
        for p in &f.rates {
            let (lo, hi) = p.ci95();
            if p.violating > 0 {
                let _ = writeln!(
                    s,
                    "    {} violated in {}/{} seeds ({}, 95% CI {}-{})",
                    p.property,
                    p.violating,
                    p.decided,
                    rate::percent(p.violating as f64 / p.decided.max(1) as f64),
                    rate::percent(lo),
                    rate::percent(hi)
                );
            } else {
                let _ = writeln!(
                    s,
                    "    {} held in {}/{} seeds (rate ≤ {} at 95%)",
                    p.property,
                    p.decided,
                    f.seeds,
                    rate::percent(hi)
                );
            }
        }
        if f.inconclusive > 0 {
            let _ = writeln!(
                s,
                "    {} seed(s) inconclusive (a budget stopped them)",
                f.inconclusive
            );
        }
        match f.hazard {
            Some((h, 0)) if f.verdict != Verdict::Violated => {
                let why = f
                    .unreached_note
                    .as_deref()
                    .unwrap_or("under these assumptions the setup does not meet this danger");
                let _ = writeln!(s, "    hazard {h} never reached: {why}");
            }
            Some((h, n)) => {
                let _ = writeln!(s, "    hazard {h} reached in {n}/{} seeds", f.seeds);
            }
            None => {
                let _ = writeln!(s, "    (no detector names this hazard)");
            }
        }
        if let Some(t) = &f.threshold {
            let _ = writeln!(s, "    threshold: {t}");
        }
        if f.verdict == Verdict::Violated {
            let _ = writeln!(s, "    fix: {}", f.fix);
        } else if f.hazard.is_none_or(|(_, n)| n > 0) {
            let _ = writeln!(s, "    why: {}", f.held_note);
        }
        if let Some(si) = &f.stand_in {
            let _ = writeln!(s, "    stand-in: {si}");
        }
        let _ = writeln!(s, "    replay: {}", f.replay);
        let pages: Vec<String> = f
            .rests_on
            .iter()
            .map(|m| format!("docs/pitfalls.md#{m}"))
            .collect();
        let _ = writeln!(s, "    rests on: {}", pages.join(", "));
    }
    if r.findings.is_empty() {
        let _ = writeln!(
            s,
            "no pitfall applies under these assumptions: nothing was assessed"
        );
    }
    let _ = writeln!(s);
    let mapped = r
        .setup
        .keys
        .iter()
        .filter(|k| matches!(k.status, Status::Mapped(_)))
        .count();
    let bearing = r
        .setup
        .keys
        .iter()
        .filter(|k| k.status == Status::NoBearing)
        .count();
    let _ = writeln!(
        s,
        "keys: {} read, {mapped} mapped into the model, {bearing} with no bearing on the lock",
        r.setup.keys.len()
    );
    for k in &r.setup.keys {
        let at = if k.line > 0 {
            format!("{}:{}", k.source, k.line)
        } else {
            k.source.clone()
        };
        match &k.status {
            Status::NotModelled(why) => {
                let _ = writeln!(s, "  not modelled: {at}: {} {} ({why})", k.key, k.value);
            }
            Status::NotUnderstood => {
                let _ = writeln!(
                    s,
                    "  not understood: {at}: {} {} (nothing was read from it)",
                    k.key, k.value
                );
            }
            _ => {}
        }
    }
    let (v, h, i) = r
        .findings
        .iter()
        .fold((0, 0, 0), |(v, h, i), f| match f.verdict {
            Verdict::Violated => (v + 1, h, i),
            Verdict::Held => (v, h + 1, i),
            Verdict::Inconclusive => (v, h, i + 1),
        });
    let _ = writeln!(s, "assess: {v} violated, {h} held, {i} inconclusive");
    s
}

/// The report as one JSON object: `{"setup", "assumptions", "findings", "keys"}`.
pub fn json(r: &Report) -> serde_json::Value {
    use serde_json::json;
    let s = &r.setup;
    let topology = match &s.topology {
        setup::Topology::Single => json!({"kind": "single"}),
        setup::Topology::Replicated {
            replicas,
            sentinels,
        } => json!({
            "kind": if sentinels.is_some() { "sentinel" } else { "master-replica" },
            "replicas": replicas,
            "sentinels": sentinels.as_ref().map(|se| json!({
                "count": se.count, "quorum": se.quorum,
                "down_after_ms": se.down_after_ms, "failover_timeout_ms": se.failover_timeout_ms,
            })),
        }),
        setup::Topology::Masters(n) => json!({"kind": "masters", "masters": n}),
    };
    let findings: Vec<serde_json::Value> = r
        .findings
        .iter()
        .map(|f| {
            let rates: serde_json::Map<String, serde_json::Value> = f
                .rates
                .iter()
                .map(|p| {
                    let (lo, hi) = p.ci95();
                    (
                        p.property.clone(),
                        json!({
                            "violating": p.violating, "decided": p.decided,
                            "estimate": p.violating as f64 / p.decided.max(1) as f64,
                            "ci95": [lo, hi],
                        }),
                    )
                })
                .collect();
            json!({
                "pitfall": f.pitfall,
                "title": f.title,
                "verdict": f.verdict.word(),
                "seeds": f.seeds,
                "violating": f.violating,
                "inconclusive": f.inconclusive,
                "rates": rates,
                "hazard": f.hazard.map(|(h, n)| json!({"name": h, "seeds": n})),
                "threshold": f.threshold,
                "edge": f.edge.as_ref().map(|e| {
                    let ns = |v: u64| match e.unit {
                        edge::Unit::Us => v * 1_000,
                        edge::Unit::Ms => v * 1_000_000,
                    };
                    json!({
                        "fault": e.what, "seed": e.seed,
                        "holds_ns": ns(e.holds), "breaks_ns": ns(e.breaks),
                        "assumed_ns": ns(e.assumed), "within_assumptions": e.breaks <= e.assumed,
                        "replay_holds": e.replay_holds, "replay_violates": e.replay_breaks,
                    })
                }),
                "fix": if f.verdict == Verdict::Violated { Some(&f.fix) } else { None },
                "why_held": match (f.verdict, f.hazard) {
                    (Verdict::Violated, _) => None,
                    (_, Some((_, 0))) => Some(f.unreached_note.as_deref().unwrap_or("the hazard was never reached under these assumptions")),
                    _ => Some(f.held_note.as_str()),
                },
                "replay": f.replay,
                "model": f.model_path,
                "rests_on": f.rests_on,
                "stand_in": f.stand_in,
            })
        })
        .collect();
    let keys: Vec<serde_json::Value> = s
        .keys
        .iter()
        .map(|k| {
            let (status, to) = match &k.status {
                Status::Mapped(t) => ("mapped", Some(t.as_str())),
                Status::NoBearing => ("no_bearing", None),
                Status::NotModelled(t) => ("not_modelled", Some(t.as_str())),
                Status::NotUnderstood => ("not_understood", None),
            };
            json!({"source": k.source, "line": k.line, "key": k.key, "value": k.value, "status": status, "maps_to": to})
        })
        .collect();
    let a = &r.assumptions;
    json!({
        "setup": {
            "topology": topology,
            "persistence": s.persistence.words(),
            "min_replicas": s.min_replicas.map(|(n, lag)| json!({"to_write": n, "max_lag_s": lag})),
            "library": s.library.name(),
            "library_options": s.library_words(),
            "defaults": s.defaults,
            "model": r.model_path,
        },
        "assumptions": {
            "faults": a.faults_text(),
            "clients": a.clients,
            "hold_ms": [a.hold_ms.0, a.hold_ms.1],
            "seeds": [r.seeds.start, r.seeds.end],
        },
        "findings": findings,
        "keys": keys,
        "exit": r.exit_code(),
    })
}
