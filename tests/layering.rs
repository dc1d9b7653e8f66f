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
