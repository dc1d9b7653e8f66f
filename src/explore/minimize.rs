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
use crate::scenario::faults::{FaultEntry, KindSpec, Span};
use crate::scenario::units::{Dur, DurRange, SignedDur, SignedDurRange};
use crate::sim::TraceMode;
use crate::time::{NS_PER_MS, ProcId};

/// RON text of one scripted entry, as a `faults` list writes it.
pub fn fault_ron(f: &FaultEntry) -> String {
    f.ron().expect("minimisation writes scripted entries only")
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
pub fn scripted_text(original: &str, faults: &[FaultEntry], header: &str) -> String {
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
    pub before: Vec<FaultEntry>,
    pub after: Vec<FaultEntry>,
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
    let before: Vec<FaultEntry> = world
        .applied_faults
        .iter()
        .map(|f| FaultEntry::realised(f, &name))
        .collect();
    let mut runs = 0u64;
    // A schedule the typed model refuses is a bug of this module, not "does not fail".
    let mut writer_bug: Option<String> = None;
    let mut fails = |faults: &[FaultEntry]| -> bool {
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
        let mut reduced: Option<Vec<FaultEntry>> = None;
        for i in 0..n {
            let lo = i * chunk;
            if lo >= cur.len() {
                break;
            }
            let hi = (lo + chunk).min(cur.len());
            let complement: Vec<FaultEntry> = cur[..lo].iter().chain(&cur[hi..]).cloned().collect();
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
            let changed = match &mut trial[i].kind {
                KindSpec::Pause { duration: d }
                | KindSpec::LatencySpike { duration: d, .. }
                | KindSpec::Partition {
                    duration: Some(d), ..
                }
                | KindSpec::Isolate { duration: Some(d) }
                    if d.min.0 > NS_PER_MS =>
                {
                    *d = DurRange::fixed(Dur(d.min.0 / 2));
                    true
                }
                KindSpec::ClockStep { delta } if delta.min.ms().abs() > 1 => {
                    let d = SignedDur(delta.min.ms() / 2 * NS_PER_MS as i64);
                    *delta = SignedDurRange { min: d, max: d };
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
        if let (KindSpec::Partition { .. }, Span::Links { from, to }) = (&cur[i].kind, &cur[i].span)
        {
            let (from, to) = (from.clone(), to.clone());
            for side in 0..2 {
                let members = if side == 0 { from.clone() } else { to.clone() };
                for m in members {
                    let mut trial = cur.clone();
                    if let Span::Links { from: f, to: t } = &mut trial[i].span {
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
