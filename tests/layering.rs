//! The layering docs/ARCHITECTURE.md draws is the one the code has: every `crate::` path in
//! a module's non-test code names a module of a lower layer, with no exception.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level modules, lowest layer first; a module may use only modules of a lower rank.
const LAYERS: &[(&str, u32)] = &[
    ("time", 0),
    ("rng", 1),
    ("clock", 1),
    ("net", 2),
    ("proto", 2),
    ("history", 3),
    ("process", 4),
    ("check", 4),
    ("redis", 5),
    ("client", 6),
    ("sim", 7),
    ("conformance", 8),
    ("scenario", 9),
    ("explore", 10),
    ("testing", 11),
    ("cli", 12),
];

fn rank(m: &str) -> Option<u32> {
    LAYERS.iter().find(|(n, _)| *n == m).map(|(_, r)| *r)
}

/// (from, to) for every `crate::to` in the non-test code of module `from`.
fn edges() -> BTreeSet<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeSet::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(&src).unwrap();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            let from = first.trim_end_matches(".rs").to_string();
            if from == "lib" || from == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            // Unit tests may reach anywhere: only the code above them counts.
            let code = text.split("#[cfg(test)]").next().unwrap();
            for (i, _) in code.match_indices("crate::") {
                let to: String = code[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !to.is_empty() && to != from {
                    out.insert((from.clone(), to));
                }
            }
        }
    }
    out
}

#[test]
fn every_module_is_in_a_layer() {
    let unknown: BTreeSet<_> = edges()
        .into_iter()
        .flat_map(|(a, b)| [a, b])
        .filter(|m| rank(m).is_none())
        .collect();
    assert!(
        unknown.is_empty(),
        "modules missing from LAYERS (and from docs/ARCHITECTURE.md): {unknown:?}"
    );
}

/// The edges of `edges` that do not point to a lower layer.
fn upward(edges: BTreeSet<(String, String)>) -> BTreeMap<(String, String), ()> {
    let mut up = BTreeMap::new();
    for (a, b) in edges {
        if let (Some(ra), Some(rb)) = (rank(&a), rank(&b))
            && rb >= ra
        {
            up.insert((a, b), ());
        }
    }
    up
}

#[test]
fn the_check_sees_an_edge_that_points_up() {
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    let up = upward([e("redis", "sim"), e("sim", "redis"), e("check", "process")].into());
    assert_eq!(
        up.keys().cloned().collect::<Vec<_>>(),
        [e("check", "process"), e("redis", "sim")]
    );
}

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let up: Vec<_> = upward(edges()).into_keys().collect();
    assert!(
        up.is_empty(),
        "dependencies that point up or sideways (a module may use only lower layers): {up:?}"
    );
}

/// File cycles inside one module that remain, each with what turning it around needs. The
/// list is exact (a ratchet): a cycle gone must be deleted here, a new one fails.
const KNOWN_CYCLES: &[(&str, &str, &str)] = &[(
    "scenario/clients",
    "scenario/model",
    "model lowers client groups through clients::Lowering; clients uses model's Invalid, \
     quoted, ClockSpec, ClientFactory and Scenario: those move to a file below both",
)];

/// Within one top-level module, the files (`m/f.rs`, with `m/f/*.rs` counted as part of
/// `f`) that each file's non-test code names, through `crate::m::f`, `crate::m::{f::..}` or
/// `super::f` (from a sibling).
fn file_edges() -> BTreeSet<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeSet::new();
    let mut stack = vec![src.clone()];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    for p in files {
        let rel: Vec<String> = p
            .strip_prefix(&src)
            .unwrap()
            .components()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .collect();
        // Only files inside a module directory, other than its mod.rs, are units.
        if rel.len() < 2 || (rel.len() == 2 && rel[1] == "mod") {
            continue;
        }
        let (m, unit) = (&rel[0], &rel[1]);
        let is_unit = |f: &str| f != unit && src.join(m).join(format!("{f}.rs")).is_file();
        let text = std::fs::read_to_string(&p).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        };
        let mut named = Vec::new();
        let prefix = format!("crate::{m}::");
        for (i, _) in code.match_indices(&prefix) {
            let rest = &code[i + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let item = item.trim();
                    if item.contains("::") {
                        named.push(ident(item));
                    }
                }
            } else {
                named.push(ident(rest));
            }
        }
        if rel.len() == 2 {
            for (i, _) in code.match_indices("super::") {
                named.push(ident(&code[i + 7..]));
            }
        }
        for f in named {
            if is_unit(&f) {
                out.insert((format!("{m}/{unit}"), format!("{m}/{f}")));
            }
        }
    }
    out
}

/// The pairs of files that reach each other through `edges` (each pair once, sorted).
fn cycles(edges: &BTreeSet<(String, String)>) -> BTreeSet<(String, String)> {
    let mut reach: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in edges {
        reach.entry(a.clone()).or_default().insert(b.clone());
    }
    // Transitive closure: the graphs are a few dozen files.
    loop {
        let mut grew = false;
        let snapshot = reach.clone();
        for targets in reach.values_mut() {
            let more: BTreeSet<String> = targets
                .iter()
                .flat_map(|t| snapshot.get(t).cloned().unwrap_or_default())
                .collect();
            for t in more {
                grew |= targets.insert(t);
            }
        }
        if !grew {
            break;
        }
    }
    let mut out = BTreeSet::new();
    for (a, targets) in &reach {
        for b in targets {
            if a < b && reach.get(b).is_some_and(|t| t.contains(a)) {
                out.insert((a.clone(), b.clone()));
            }
        }
    }
    out
}

#[test]
fn the_cycle_check_sees_two_files_that_import_each_other() {
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    let found = cycles(
        &[
            e("m/a", "m/b"),
            e("m/b", "m/c"),
            e("m/c", "m/a"),
            e("m/d", "m/a"),
        ]
        .into(),
    );
    assert_eq!(
        found,
        [e("m/a", "m/b"), e("m/a", "m/c"), e("m/b", "m/c")].into()
    );
}

#[test]
fn no_two_files_of_a_module_import_each_other() {
    let edges = file_edges();
    // The check reads real imports: these two are known to be there.
    assert!(
        edges.contains(&("redis/node".into(), "redis/replication".into())),
        "{edges:?}"
    );
    assert!(edges.contains(&("conformance/runner".into(), "conformance/replicated".into())));
    let found = cycles(&edges);
    let known: BTreeSet<(String, String)> = KNOWN_CYCLES
        .iter()
        .map(|(a, b, _)| (a.to_string(), b.to_string()))
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    assert!(
        new.is_empty(),
        "files that import each other, directly or not: {new:?}"
    );
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        gone.is_empty(),
        "listed cycles that no longer exist: delete them from KNOWN_CYCLES: {gone:?}"
    );
}
