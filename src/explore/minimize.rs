//! Minimisation: turn the realised fault schedule of a failing run into a scripted model,
//! remove faults by delta debugging while the same property still fails, then shrink what is
//! left (shorter pauses, smaller steps, shorter cuts), and write the minimal model — a
//! reproduction people can read, that survives code changes better than a seed.
//!
//! It works because streams are independent: with the random faults replaced by the same
//! faults scripted, every other stream (network links, clients' jitter) draws exactly what it
//! drew before, so the scripted model replays the failing run.

use std::fmt::Write as _;

use crate::check::Property;
use crate::explore::run_world;
use crate::rng::Ratio;
use crate::scenario::{self, Scenario};
use crate::sim::{FaultAction, TraceMode};
use crate::time::{NS_PER_MS, ProcId, SimTime};

/// One fault as a model states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unit {
    Pause {
        proc: ProcId,
        at: SimTime,
        duration_ns: u64,
    },
    Crash {
        proc: ProcId,
        at: SimTime,
        restart_after_ns: Option<u64>,
        keep_data: bool,
    },
    ClockStep {
        proc: ProcId,
        at: SimTime,
        delta_ms: i64,
    },
    Drift {
        proc: ProcId,
        at: SimTime,
        ppm: i64,
    },
    Cut {
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        at: SimTime,
        duration_ns: Option<u64>,
    },
    Spike {
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        at: SimTime,
        duration_ns: u64,
        extra_ns: u64,
    },
    Loss {
        from: Vec<ProcId>,
        to: Vec<ProcId>,
        at: SimTime,
        duration_ns: u64,
        loss: Ratio,
    },
}

/// Pairs the applied faults of a run (pause/resume, crash/restart, cut/heal, ...) into units.
pub fn units_of(applied: &[(SimTime, FaultAction)], end: SimTime) -> Vec<Unit> {
    let mut units = Vec::new();
    for (i, (at, f)) in applied.iter().enumerate() {
        let later = || applied[i + 1..].iter();
        match f {
            FaultAction::Pause(p) => {
                let resume = later()
                    .find(|(_, g)| matches!(g, FaultAction::Resume(q) if q == p))
                    .map(|(t, _)| *t);
                let until = resume.unwrap_or(end);
                units.push(Unit::Pause {
                    proc: *p,
                    at: *at,
                    duration_ns: until.saturating_sub(*at),
                });
            }
            FaultAction::Crash(p) => {
                let restart = later().find_map(|(t, g)| match g {
                    FaultAction::Restart { proc, keep_data } if proc == p => Some((*t, *keep_data)),
                    _ => None,
                });
                units.push(Unit::Crash {
                    proc: *p,
                    at: *at,
                    restart_after_ns: restart.map(|(t, _)| t.saturating_sub(*at)),
                    keep_data: restart.is_some_and(|(_, k)| k),
                });
            }
            FaultAction::ClockStep { proc, delta_ms } => units.push(Unit::ClockStep {
                proc: *proc,
                at: *at,
                delta_ms: *delta_ms,
            }),
            FaultAction::Drift { proc, drift_ppm } => units.push(Unit::Drift {
                proc: *proc,
                at: *at,
                ppm: *drift_ppm,
            }),
            FaultAction::Partition {
                from,
                to,
                blocked: true,
            } => {
                let heal = later()
                    .find(|(_, g)| matches!(g, FaultAction::Partition { from: f2, to: t2, blocked: false } if f2 == from && t2 == to))
                    .map(|(t, _)| t.saturating_sub(*at));
                units.push(Unit::Cut {
                    from: from.clone(),
                    to: to.clone(),
                    at: *at,
                    duration_ns: heal,
                });
            }
            FaultAction::LatencySpike { from, to, extra_ns } if *extra_ns > 0 => {
                let stop = later()
                    .find(|(_, g)| matches!(g, FaultAction::LatencySpike { from: f2, to: t2, .. } if f2 == from && t2 == to))
                    .map_or(end, |(t, _)| *t);
                units.push(Unit::Spike {
                    from: from.clone(),
                    to: to.clone(),
                    at: *at,
                    duration_ns: stop.saturating_sub(*at),
                    extra_ns: *extra_ns,
                });
            }
            FaultAction::Loss { from, to, loss } if !loss.is_never() => {
                let stop = later()
                    .find(|(_, g)| matches!(g, FaultAction::Loss { from: f2, to: t2, .. } if f2 == from && t2 == to))
                    .map_or(end, |(t, _)| *t);
                units.push(Unit::Loss {
                    from: from.clone(),
                    to: to.clone(),
                    at: *at,
                    duration_ns: stop.saturating_sub(*at),
                    loss: *loss,
                });
            }
            _ => {}
        }
    }
    units
}

fn dur(ns: u64) -> String {
    // Exact decimal seconds, trailing zeros trimmed: "33.863461406s", "12s", "0.5s".
    let secs = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if frac == 0 {
        return format!("\"{secs}s\"");
    }
    let f = format!("{frac:09}");
    format!("\"{secs}.{}s\"", f.trim_end_matches('0'))
}

/// RON text of one unit, as a `faults` entry.
pub fn unit_ron(u: &Unit, name: &dyn Fn(ProcId) -> String) -> String {
    let list = |v: &[ProcId]| {
        v.iter()
            .map(|p| format!("\"{}\"", name(*p)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match u {
        Unit::Pause {
            proc,
            at,
            duration_ns,
        } => {
            format!(
                "pause(target: \"{}\", at: {}, duration: {})",
                name(*proc),
                dur(at.0),
                dur(*duration_ns)
            )
        }
        Unit::Crash {
            proc,
            at,
            restart_after_ns,
            keep_data,
        } => format!(
            "crash(target: \"{}\", at: {}{}, keep_data: {keep_data})",
            name(*proc),
            dur(at.0),
            restart_after_ns.map_or(String::new(), |r| format!(", restart_after: {}", dur(r)))
        ),
        Unit::ClockStep { proc, at, delta_ms } => {
            format!(
                "clock_step(target: \"{}\", at: {}, delta: \"{delta_ms:+}ms\")",
                name(*proc),
                dur(at.0)
            )
        }
        Unit::Drift { proc, at, ppm } => format!(
            "drift(target: \"{}\", at: {}, ppm: {ppm})",
            name(*proc),
            dur(at.0)
        ),
        Unit::Cut {
            from,
            to,
            at,
            duration_ns,
        } => format!(
            "partition(from: [{}], to: [{}], at: {}{}, one_way: true)",
            list(from),
            list(to),
            dur(at.0),
            duration_ns.map_or(String::new(), |d| format!(", duration: {}", dur(d)))
        ),
        Unit::Spike {
            from,
            to,
            at,
            duration_ns,
            extra_ns,
        } => format!(
            "latency_spike(from: [{}], to: [{}], at: {}, duration: {}, extra: {})",
            list(from),
            list(to),
            dur(at.0),
            dur(*duration_ns),
            dur(*extra_ns)
        ),
        Unit::Loss {
            from,
            to,
            at,
            duration_ns,
            loss,
        } => format!(
            "loss(from: [{}], to: [{}], at: {}, duration: {}, loss_ppm: {})",
            list(from),
            list(to),
            dur(at.0),
            dur(*duration_ns),
            u64::from(loss.num()) * 1_000_000 / u64::from(loss.den())
        ),
    }
}

/// Removes a top-level `key: <value>,` from RON text (brackets matched, strings and comments
/// skipped). Returns the text unchanged when the key is absent.
pub fn remove_field(text: &str, key: &str) -> String {
    let pat = format!("{key}:");
    let bytes = text.as_bytes();
    let mut search = 0;
    while let Some(off) = text[search..].find(&pat) {
        let start = search + off;
        // A field name, not the tail of another word or inside a comment line.
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let prefix = &text[line_start..start];
        let is_word_start =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if prefix.contains("//") || !is_word_start {
            search = start + pat.len();
            continue;
        }
        let mut i = start + pat.len();
        let mut depth = 0i32;
        let mut in_str = false;
        while i < bytes.len() {
            let c = bytes[i];
            if in_str {
                if c == b'\\' {
                    i += 1;
                } else if c == b'"' {
                    in_str = false;
                }
            } else {
                match c {
                    b'"' => in_str = true,
                    b'(' | b'[' => depth += 1,
                    b')' | b']' => {
                        depth -= 1;
                        if depth < 0 {
                            break;
                        }
                    }
                    b',' if depth == 0 => {
                        i += 1;
                        break;
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        // Drop the whole lines the field occupied.
        let end = text[i..].find('\n').map_or(text.len(), |n| i + n + 1);
        let from = if text[line_start..start].trim().is_empty() {
            line_start
        } else {
            start
        };
        return format!("{}{}", &text[..from], &text[end..]);
    }
    text.to_string()
}

/// The model text with the given faults scripted and every other source of faults removed.
pub fn scripted_text(
    original: &str,
    units: &[Unit],
    name: &dyn Fn(ProcId) -> String,
    header: &str,
) -> String {
    let mut t = original.to_string();
    for k in ["random_faults", "swarm", "triggers", "faults", "expect"] {
        // A field may appear once; remove until gone.
        loop {
            let next = remove_field(&t, k);
            if next == t {
                break;
            }
            t = next;
        }
    }
    let mut faults = String::from("    faults: [\n");
    for u in units {
        let _ = writeln!(faults, "        {},", unit_ron(u, name));
    }
    faults.push_str("    ],\n");
    let at = t
        .find("    check:")
        .or_else(|| t.find("check:"))
        .unwrap_or(t.len());
    t.insert_str(at, &faults);
    format!("{header}{t}")
}

/// What minimisation found.
#[derive(Clone, Debug)]
pub struct Minimized {
    pub property: Property,
    pub before: Vec<Unit>,
    pub after: Vec<Unit>,
    pub model_text: String,
    pub runs: u64,
}

/// Minimises the failing run of `seed`: `Err` when the seed does not violate anything.
pub fn minimize(sc: &Scenario, original_text: &str, seed: u64) -> Result<Minimized, String> {
    let (outcome, world) = run_world(sc, seed, TraceMode::Off);
    let Some(first) = outcome.violations.first() else {
        return Err(format!("seed {seed} violates nothing in {}", sc.name));
    };
    let property = first.property;
    let names = world.names();
    let name = |p: ProcId| names[p.index()].clone();
    let before = units_of(&world.applied_faults, world.now());
    let mut runs = 0u64;
    let mut fails = |units: &[Unit]| -> bool {
        runs += 1;
        let text = scripted_text(original_text, units, &name, "");
        match scenario::load_str(&sc.name, &sc.path, &text) {
            Ok(s) => run_world(&s, seed, TraceMode::Off)
                .0
                .violations
                .iter()
                .any(|v| v.property == property),
            Err(_) => false,
        }
    };
    if !fails(&before) {
        return Err(format!(
            "the scripted schedule of seed {seed} does not reproduce {property}: the failure depends on something the schedule does not capture"
        ));
    }
    // ddmin over units (complements).
    let mut cur = before.clone();
    let mut n = 2usize;
    while cur.len() >= 2 {
        let chunk = cur.len().div_ceil(n);
        let mut reduced: Option<Vec<Unit>> = None;
        for i in 0..n {
            let lo = i * chunk;
            if lo >= cur.len() {
                break;
            }
            let hi = (lo + chunk).min(cur.len());
            let complement: Vec<Unit> = cur[..lo].iter().chain(&cur[hi..]).cloned().collect();
            if fails(&complement) {
                reduced = Some(complement);
                break;
            }
        }
        match reduced {
            Some(c) => {
                cur = c;
                n = (n - 1).max(2);
            }
            None if n >= cur.len() => break,
            None => n = (n * 2).min(cur.len()),
        }
    }
    if cur.len() == 1 && fails(&[]) {
        cur.clear();
    }
    // Shrink magnitudes: halve while it still fails.
    for i in 0..cur.len() {
        for _ in 0..12 {
            let mut trial = cur.clone();
            let changed = match &mut trial[i] {
                Unit::Pause { duration_ns, .. } if *duration_ns > NS_PER_MS => {
                    *duration_ns /= 2;
                    true
                }
                Unit::ClockStep { delta_ms, .. } if delta_ms.abs() > 1 => {
                    *delta_ms /= 2;
                    true
                }
                Unit::Cut {
                    duration_ns: Some(d),
                    ..
                }
                | Unit::Spike { duration_ns: d, .. }
                    if *d > NS_PER_MS =>
                {
                    *d /= 2;
                    true
                }
                _ => false,
            };
            if !changed || !fails(&trial) {
                break;
            }
            cur = trial;
        }
        // Fewer affected processes: drop members of a cut one by one.
        if let Unit::Cut { from, to, .. } = &cur[i] {
            let (from, to) = (from.clone(), to.clone());
            for side in 0..2 {
                let members = if side == 0 { from.clone() } else { to.clone() };
                for m in members {
                    let mut trial = cur.clone();
                    if let Unit::Cut { from: f, to: t, .. } = &mut trial[i] {
                        let v = if side == 0 { f } else { t };
                        if v.len() > 1 {
                            v.retain(|q| *q != m);
                        }
                    }
                    if trial != cur && fails(&trial) {
                        cur = trial;
                    }
                }
            }
        }
    }
    let header = format!(
        "// {name}-minimized — {property} at seed {seed} of {path}, with {after} of its {before} faults.\n//\n// Written by `distlock-sim minimize {path} --seed {seed}`: the realised fault schedule of the\n// failing run, scripted, reduced by delta debugging and shrunk ({runs} runs).\n",
        name = sc.name,
        path = sc.path,
        after = cur.len(),
        before = before.len(),
    );
    let model_text = scripted_text(original_text, &cur, &name, &header);
    Ok(Minimized {
        property,
        before,
        after: cur,
        model_text,
        runs,
    })
}
