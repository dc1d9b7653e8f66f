//! Overrides: `--set NAME.FIELD=VALUE` on the command line changes one field of a model for
//! one command — of a client group or a node (by its `name`), of a block (`sentinels`,
//! `network`, `resource`, `consensus`, `swarm`), or of the model itself (`--set
//! duration=120s`, no NAME).
//!
//! An override is the model's text with VALUE spliced in as the field's value (added to the
//! entry when the file leaves the field out), read by the same loader as the file — so an
//! override means exactly what the same edit to the file would mean, with the loader's
//! checks and error texts; an error inside a spliced value is reported at its `--set`.
//! VALUE is written as in the file, except that a string needs no quotes: `25s`, `always`,
//! `("1s","3s")`, `3`.

use crate::scenario::units::closest_name;
use crate::scenario::variants::{field_slot, fields, items, offset_of, string_value, value_end};
use crate::scenario::{Scenario, load_str};

/// The blocks of a model named by their field: `--set network.latency=...`.
pub const BLOCKS: &[&str] = &["sentinels", "network", "resource", "consensus", "swarm"];

/// Longest VALUE accepted (a value, not a model).
pub const MAX_VALUE_BYTES: usize = 4096;

/// One `--set NAME.FIELD=VALUE`, as written and taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    /// The argument as given (what replay lines print again).
    pub arg: String,
    /// The client group, node or block; `None` for a field of the model.
    pub name: Option<String>,
    pub field: String,
    pub value: String,
}

impl std::str::FromStr for Override {
    type Err = String;
    fn from_str(s: &str) -> Result<Override, String> {
        let form = "is not NAME.FIELD=VALUE (e.g. c.ttl=25s, redis.priority=0, duration=120s)";
        let (key, value) = s.split_once('=').ok_or_else(|| format!("{s:?} {form}"))?;
        let (name, field) = match key.split_once('.') {
            Some((n, f)) => (Some(n.to_string()), f.to_string()),
            None => (None, key.to_string()),
        };
        let word = |w: &str| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
        };
        if !word(&field) || field.contains('-') || name.as_deref().is_some_and(|n| !word(n)) {
            return Err(format!("{s:?} {form}"));
        }
        let value = value.trim();
        if value.is_empty() {
            return Err(format!("{s:?}: the value after '=' is empty"));
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(format!("{s:?}: a value is at most {MAX_VALUE_BYTES} bytes"));
        }
        Ok(Override {
            arg: s.to_string(),
            name,
            field,
            value: value.to_string(),
        })
    }
}

/// True for a value RON reads as it stands, were it not a string: a literal, a group, or an
/// identifier (`always`, `holds`, `aof(fsync: always)`). Anything else (`25s`, `-2s`,
/// `set-px-del`) is a string written without its quotes.
fn reads_as_written(v: &str) -> bool {
    let first = v.as_bytes()[0];
    b"\"'([{".contains(&first)
        || v == "true"
        || v == "false"
        || v.parse::<i64>().is_ok()
        || v.parse::<f64>().is_ok_and(f64::is_finite)
        || identifier(v)
}

fn identifier(v: &str) -> bool {
    let head = v.split('(').next().unwrap_or(v);
    head.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn quote(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The model `text` with `sets` applied in order (a later one over an earlier one of the same
/// field), loaded and validated as the loader validates a file. `name` and `path` are the
/// model's, as `load_str` takes them. Errors are the whole message for the user.
pub fn load_with(
    name: &str,
    path: &str,
    text: &str,
    sets: &[Override],
) -> Result<(Scenario, String), String> {
    // A bare identifier is tried as written first (`always` is an enum's variant), then as
    // a string (`--set c.node=redis`) if the loader refused it as written.
    let mut quoted: Vec<bool> = sets.iter().map(|s| !reads_as_written(&s.value)).collect();
    loop {
        let (patched, spans) = splice_all(path, text, sets, &quoted)?;
        let e = match load_str(name, path, &patched) {
            Ok(sc) => return Ok((sc, patched)),
            Err(e) => e,
        };
        // The parser may point at the blanks before a value it could not read.
        let off = offset_of(&patched, e.line, e.col);
        let off = crate::scenario::marks::skip_ws(patched.as_bytes(), off);
        let Some(i) = spans.iter().rposition(|&(a, b)| off >= a && off <= b) else {
            let all: Vec<&str> = sets.iter().map(|s| s.arg.as_str()).collect();
            return Err(format!("{e} (with --set {})", all.join(" --set ")));
        };
        if !quoted[i] && identifier(&sets[i].value) && !sets[i].value.contains('(') {
            quoted[i] = true;
            continue;
        }
        return Err(format!(
            "{path}: --set {}: {}{}",
            sets[i].arg,
            e.message,
            field_hint(&sets[i].field, &e.message)
        ));
    }
}

/// For the loader's "Unexpected field named `x` ..., expected one of `a`, `b` ...": the
/// nearest of the names it lists.
fn field_hint(field: &str, message: &str) -> String {
    let Some(rest) = message.strip_prefix("Unexpected field named") else {
        return String::new();
    };
    let Some((_, expected)) = rest.split_once("expected") else {
        return String::new();
    };
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    closest_name(field, names.into_iter())
        .map_or(String::new(), |n| format!(" (did you mean {n:?}?)"))
}

/// Where `--set` i's value (and the field name it added) ended up in the patched text.
type Span = (usize, usize);

fn splice_all(
    path: &str,
    text: &str,
    sets: &[Override],
    quoted: &[bool],
) -> Result<(String, Vec<Span>), String> {
    let mut t = text.to_string();
    let mut spans: Vec<Span> = Vec::new();
    for (s, &q) in sets.iter().zip(quoted) {
        let value = if q { quote(&s.value) } else { s.value.clone() };
        // One value, balanced: else the splice would swallow the fields after it.
        let vb = value.as_bytes();
        match value_end(vb, 0) {
            Ok(end) if end == vb.len() => {}
            Ok(_) => {
                return Err(format!(
                    "--set {}: {:?} is not one RON value (a string needs no quotes; a \
                     range is (\"1s\", \"3s\"))",
                    s.arg, s.value
                ));
            }
            Err((_, m)) => return Err(format!("--set {}: {m} in {:?}", s.arg, s.value)),
        }
        let (start, end, insert, value_at) = edit(path, &t, s, &value)?;
        // Spans after the edit move with it; a span the edit lies inside grows with it
        // (the same field set again: the later --set is the one blamed, `rposition`).
        let (removed, added) = (end - start, insert.len());
        for (a, b) in spans.iter_mut() {
            if *a >= end {
                *a = *a - removed + added;
            }
            if *b >= end {
                *b = *b - removed + added;
            }
        }
        t.replace_range(start..end, &insert);
        spans.push((start + value_at, start + insert.len()));
    }
    Ok((t, spans))
}

/// The edit that sets `s`'s field to `value` in `text`: `(start, end, insert, where the
/// reported span starts inside insert)` — an added field's span takes in its name.
fn edit(
    path: &str,
    text: &str,
    s: &Override,
    value: &str,
) -> Result<(usize, usize, String, usize), String> {
    let located = |(off, m): (usize, String)| {
        let (l, c) = crate::scenario::variants::line_col(text, off);
        format!("{path}:{l}:{c}: {m}")
    };
    let b = text.as_bytes();
    let open = crate::scenario::marks::skip_ws(b, 0);
    if b.get(open) != Some(&b'(') {
        return Err(format!("{path}: a model is a RON struct: ( ... )"));
    }
    let (top, top_close) = fields(b, open).map_err(located)?;
    let set_in = |open: usize, fs: &[_], close: usize| {
        let (start, end, prefix, suffix) = field_slot(b, fs, close, open, &s.field);
        // An added field's span begins at its name (the prefix is ", name: " or " name: ").
        let at = if prefix.is_empty() {
            0
        } else {
            prefix.len() - prefix.trim_start_matches([',', ' ']).len()
        };
        (start, end, format!("{prefix}{value}{suffix}"), at)
    };
    let Some(name) = &s.name else {
        return Ok(set_in(open, &top, top_close));
    };
    // Client groups and nodes by name, then the blocks.
    let mut known: Vec<(String, &str)> = Vec::new();
    let mut found = Vec::new();
    for (list, what) in [("clients", "client group"), ("nodes", "node")] {
        let Some(f) = top.iter().find(|f| f.name == list) else {
            continue;
        };
        if b.get(f.value_at) != Some(&b'[') {
            continue; // the loader says what is wrong with it
        }
        for (is, _) in items(b, f.value_at).map_err(located)? {
            if b.get(is) != Some(&b'(') {
                continue;
            }
            let (fs, close) = fields(b, is).map_err(located)?;
            let Some(n) = fs
                .iter()
                .find(|g| g.name == "name")
                .and_then(|g| string_value(text, g))
            else {
                continue;
            };
            if n == *name {
                found.push((is, fs, close, what));
            }
            known.push((n, what));
        }
    }
    if found.len() > 1 {
        return Err(format!(
            "--set {}: {name:?} names both a client group and a node",
            s.arg
        ));
    }
    if let Some((is, fs, close, _)) = found.pop() {
        return Ok(set_in(is, &fs, close));
    }
    if BLOCKS.contains(&name.as_str()) {
        return match top.iter().find(|f| f.name == *name) {
            Some(f) if b.get(f.value_at) == Some(&b'(') => {
                let (fs, close) = fields(b, f.value_at).map_err(located)?;
                Ok(set_in(f.value_at, &fs, close))
            }
            Some(f) => Err(located((
                f.value_at,
                format!("--set {}: {name} is not written as ( ... ) here", s.arg),
            ))),
            // The block added with this one field: the loader says what else it needs.
            None => {
                let field = format!("{}: {value}", s.field);
                let (start, end, prefix, suffix) = field_slot(b, &top, top_close, open, name);
                let at = prefix.len() - prefix.trim_start_matches([',', ' ']).len();
                Ok((start, end, format!("{prefix}({field}){suffix}"), at))
            }
        };
    }
    let mut names: Vec<String> = known.iter().map(|(n, w)| format!("{n} ({w})")).collect();
    names.extend(BLOCKS.iter().map(|b| format!("{b} (block)")));
    let hint = closest_name(
        name,
        known
            .iter()
            .map(|(n, _)| n.as_str())
            .chain(BLOCKS.iter().copied()),
    )
    .map_or(String::new(), |n| format!(" (did you mean {n:?}?)"));
    Err(format!(
        "{path}: --set {}: no client group, node or block named {name:?}{hint}; the names \
         are {}, or none for a field of the model (--set duration=120s)",
        s.arg,
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = r#"// m
(
    description: "d",
    duration: "60s",
    nodes: [(name: "redis")],
    clients: [(
        name: "c", count: 3, algorithm: "set-px-del", node: "redis",
        ttl: "10s", hold: ("1s", "3s"), retry: ("5ms", "10ms"),
    )],
    check: ["mutual_exclusion"],
)
"#;

    fn set(args: &[&str]) -> Result<String, String> {
        let sets: Vec<Override> = args.iter().map(|a| a.parse().unwrap()).collect();
        load_with("m", "m.ron", MODEL, &sets).map(|(_, t)| t)
    }

    #[test]
    fn a_set_replaces_a_field_or_adds_it_and_strings_need_no_quotes() {
        let t = set(&[
            "c.ttl=25s",
            "c.think=(\"0ms\",\"5ms\")",
            "duration=120s",
            "redis.priority=3",
            "network.latency=(\"1ms\",\"2ms\")",
        ])
        .unwrap();
        assert!(t.contains(r#"ttl: "25s""#), "{t}");
        assert!(t.contains(r#"think: ("0ms","5ms")"#), "{t}");
        assert!(t.contains(r#"duration: "120s""#), "{t}");
        assert!(t.contains(r#"(name: "redis", priority: 3)"#), "{t}");
        assert!(t.contains(r#"network: (latency: ("1ms","2ms"))"#), "{t}");
    }

    #[test]
    fn a_later_set_of_the_same_field_wins_and_a_bare_word_may_be_a_string() {
        let t = set(&["c.ttl=1s", "c.node=redis", "c.ttl=2s"]).unwrap();
        assert!(
            t.contains(r#"ttl: "2s""#) && t.contains(r#"node: "redis""#),
            "{t}"
        );
    }

    #[test]
    fn errors_name_the_set_and_suggest_a_name() {
        let e = set(&["c.tll=1s"]).unwrap_err();
        assert!(
            e.contains("--set c.tll=1s") && e.contains("did you mean \"ttl\""),
            "{e}"
        );
        let e = set(&["rediss.priority=1"]).unwrap_err();
        assert!(
            e.contains("did you mean \"redis\"") && e.contains("c (client group)"),
            "{e}"
        );
        let e = set(&["c.ttl=1parsec"]).unwrap_err();
        assert!(
            e.contains("--set c.ttl=1parsec") && e.contains("unknown unit"),
            "{e}"
        );
        let e = set(&["c.hold=(\"1s\""]).unwrap_err();
        assert!(e.contains("unclosed"), "{e}");
    }
}
