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
use crate::scenario::Scenario;
use crate::scenario::model::{FaultSpec, HostSpec, Target, crash_host_up};
use crate::scenario::units::{Bounded, Dur, Name, SignedDur};
use crate::sim::{Fault, FaultKind, TraceMode};
use crate::time::{NS_PER_MS, ProcId};

/// A fault of the realised schedule as a model states it (`faults: [...]` entry).
pub fn fault_spec(f: &Fault, name: &dyn Fn(ProcId) -> String) -> FaultSpec {
    let n = |p: &ProcId| Name::new(name(*p));
    let list = |v: &[ProcId]| v.iter().map(n).collect::<Vec<_>>();
    let at = Dur(f.at.0);
    let dur = f.duration_ns.map(Dur);
    match &f.kind {
        FaultKind::Pause(p) => FaultSpec::Pause {
            target: Target::Proc(n(p)),
            at,
            duration: Dur(f.duration_ns.expect("a realised pause has a duration")),
        },
        FaultKind::Crash {
            proc,
            keep_data,
            host_up,
        } => FaultSpec::Crash {
            target: Target::Proc(n(proc)),
            at,
            restart_after: dur,
            keep_data: Some(*keep_data),
            host: Some(HostSpec::of(*host_up)),
        },
        FaultKind::ClockStep { proc, delta_ms } => FaultSpec::ClockStep {
            target: Target::Proc(n(proc)),
            at,
            delta: SignedDur(delta_ms * NS_PER_MS as i64),
        },
        FaultKind::Drift { proc, drift_ppm } => FaultSpec::Drift {
            target: Target::Proc(n(proc)),
            at,
            ppm: Bounded(*drift_ppm),
            duration: dur,
        },
        FaultKind::Partition {
            from,
            to,
            both_ways,
        } => FaultSpec::Partition {
            from: list(from),
            to: list(to),
            at,
            duration: dur,
            one_way: !both_ways,
        },
        FaultKind::Isolate(p) => FaultSpec::Isolate {
            target: Target::Proc(n(p)),
            at,
            duration: dur,
        },
        FaultKind::LatencySpike { from, to, extra_ns } => FaultSpec::LatencySpike {
            from: list(from),
            to: list(to),
            at,
            duration: Dur(f.duration_ns.expect("a realised spike has a duration")),
            extra: Dur(*extra_ns),
        },
        FaultKind::Loss { from, to, loss } => FaultSpec::Loss {
            from: list(from),
            to: list(to),
            at,
            duration: Dur(f
                .duration_ns
                .expect("a realised loss window has a duration")),
            loss_ppm: Bounded(i64::from(loss.num()) * 1_000_000 / i64::from(loss.den())),
        },
    }
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

/// RON text of one scripted fault, as a `faults` entry.
pub fn fault_ron(f: &FaultSpec) -> String {
    let list = |v: &[Name]| {
        v.iter()
            .map(|p| format!("\"{}\"", p.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let opt =
        |key: &str, d: &Option<Dur>| d.map_or(String::new(), |d| format!(", {key}: {}", dur(d.0)));
    match f {
        FaultSpec::Pause {
            target,
            at,
            duration,
        } => format!(
            "pause(target: \"{}\", at: {}, duration: {})",
            target.text(),
            dur(at.0),
            dur(duration.0)
        ),
        FaultSpec::Crash {
            target,
            at,
            restart_after,
            keep_data,
            host,
        } => format!(
            "crash(target: \"{}\", at: {}{}, keep_data: {}, host: {})",
            target.text(),
            dur(at.0),
            opt("restart_after", restart_after),
            keep_data.unwrap_or(false),
            host.unwrap_or(HostSpec::of(crash_host_up(*keep_data, None)))
                .as_str()
        ),
        FaultSpec::ClockStep { target, at, delta } => format!(
            "clock_step(target: \"{}\", at: {}, delta: \"{:+}ms\")",
            target.text(),
            dur(at.0),
            delta.ms()
        ),
        FaultSpec::Drift {
            target,
            at,
            ppm,
            duration,
        } => format!(
            "drift(target: \"{}\", at: {}, ppm: {}{})",
            target.text(),
            dur(at.0),
            ppm.0,
            opt("duration", duration)
        ),
        FaultSpec::Isolate {
            target,
            at,
            duration,
        } => format!(
            "isolate(target: \"{}\", at: {}{})",
            target.text(),
            dur(at.0),
            opt("duration", duration)
        ),
        FaultSpec::Partition {
            from,
            to,
            at,
            duration,
            one_way,
        } => format!(
            "partition(from: [{}], to: [{}], at: {}{}, one_way: {one_way})",
            list(from),
            list(to),
            dur(at.0),
            opt("duration", duration)
        ),
        FaultSpec::LatencySpike {
            from,
            to,
            at,
            duration,
            extra,
        } => format!(
            "latency_spike(from: [{}], to: [{}], at: {}, duration: {}, extra: {})",
            list(from),
            list(to),
            dur(at.0),
            dur(duration.0),
            dur(extra.0)
        ),
        FaultSpec::Loss {
            from,
            to,
            at,
            duration,
            loss_ppm,
        } => format!(
            "loss(from: [{}], to: [{}], at: {}, duration: {}, loss_ppm: {})",
            list(from),
            list(to),
            dur(at.0),
            dur(duration.0),
            loss_ppm.0
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

/// The model text with the given faults scripted and every other source of faults removed:
/// the user's own text (comments, layout) with those fields replaced. Only the final model is
/// written this way; the search runs on the typed model (`Scenario::with_scripted_faults`),
/// and `minimize` checks that this text reads back as exactly that model.
pub fn scripted_text(original: &str, faults: &[FaultSpec], header: &str) -> String {
    let mut t = original.to_string();
    // `variants` first: a variant may carry its own `expect` (and faults), which the
    // scripted model does not declare, and it is not this schedule's story.
    for k in [
        "variants",
        "random_faults",
        "swarm",
        "triggers",
        "faults",
        "expect",
    ] {
        // A field may appear once; remove until gone.
        loop {
            let next = remove_field(&t, k);
            if next == t {
                break;
            }
            t = next;
        }
    }
    let mut list = String::from("    faults: [\n");
    for f in faults {
        let _ = writeln!(list, "        {},", fault_ron(f));
    }
    list.push_str("    ],\n");
    // The line that starts the `check` field (not the word in a description or comment).
    let mut at = t.len();
    let mut pos = 0;
    for line in t.split_inclusive('\n') {
        if line.trim_start().starts_with("check:") {
            at = pos;
            break;
        }
        pos += line.len();
    }
    t.insert_str(at, &list);
    format!("{header}{t}")
}

/// What minimisation found.
#[derive(Clone, Debug)]
pub struct Minimized {
    pub property: Property,
    pub before: Vec<FaultSpec>,
    pub after: Vec<FaultSpec>,
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
    let before: Vec<FaultSpec> = world
        .applied_faults
        .iter()
        .map(|f| fault_spec(f, &name))
        .collect();
    let mut runs = 0u64;
    // A schedule the typed model refuses is a bug of this module, not "does not fail".
    let mut writer_bug: Option<String> = None;
    let mut fails = |faults: &[FaultSpec]| -> bool {
        runs += 1;
        match sc.with_scripted_faults(faults.to_vec()) {
            Ok(s) => run_world(&s, seed, TraceMode::Off)
                .0
                .violations
                .iter()
                .any(|v| v.property == property),
            Err(e) => {
                writer_bug.get_or_insert(e.message);
                false
            }
        }
    };
    if !fails(&before) {
        if let Some(e) = writer_bug {
            return Err(format!(
                "the realised schedule does not make a valid model: {e}"
            ));
        }
        return Err(format!(
            "the scripted schedule of seed {seed} does not reproduce {property}: the failure depends on something the schedule does not capture"
        ));
    }
    // ddmin over faults (complements).
    let mut cur = before.clone();
    let mut n = 2usize;
    while cur.len() >= 2 {
        let chunk = cur.len().div_ceil(n);
        let mut reduced: Option<Vec<FaultSpec>> = None;
        for i in 0..n {
            let lo = i * chunk;
            if lo >= cur.len() {
                break;
            }
            let hi = (lo + chunk).min(cur.len());
            let complement: Vec<FaultSpec> = cur[..lo].iter().chain(&cur[hi..]).cloned().collect();
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
                FaultSpec::Pause { duration: d, .. }
                | FaultSpec::LatencySpike { duration: d, .. }
                | FaultSpec::Partition {
                    duration: Some(d), ..
                }
                | FaultSpec::Isolate {
                    duration: Some(d), ..
                } if d.0 > NS_PER_MS => {
                    d.0 /= 2;
                    true
                }
                FaultSpec::ClockStep { delta, .. } if delta.ms().abs() > 1 => {
                    delta.0 = delta.ms() / 2 * NS_PER_MS as i64;
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
        if let FaultSpec::Partition { from, to, .. } = &cur[i] {
            let (from, to) = (from.clone(), to.clone());
            for side in 0..2 {
                let members = if side == 0 { from.clone() } else { to.clone() };
                for m in members {
                    let mut trial = cur.clone();
                    if let FaultSpec::Partition { from: f, to: t, .. } = &mut trial[i] {
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
    let model_text = scripted_text(original_text, &cur, &header);
    // The written text must read back as the model the search settled on.
    let typed = sc
        .with_scripted_faults(cur.clone())
        .map_err(|e| format!("minimised schedule refused: {}", e.message))?;
    let read = crate::scenario::load_str(&sc.name, &sc.path, &model_text)
        .map_err(|e| format!("minimised model does not read back: {e}\n{model_text}"))?;
    if read.fault_schedule(seed) != typed.fault_schedule(seed) {
        return Err(format!(
            "minimised model reads back with another schedule:\n{model_text}"
        ));
    }
    Ok(Minimized {
        property,
        before,
        after: cur,
        model_text,
        runs,
    })
}
