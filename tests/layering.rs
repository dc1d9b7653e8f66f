//! The layering docs/ARCHITECTURE.md draws is the one the code has: every `crate::` path in
//! a module's non-test code names a module of a lower layer, with no exception; and inside a
//! module no files import each other but the cycles listed in `KNOWN_CYCLES`. Files are read
//! whole, less comments, literals and `#[cfg(test)]` items (matched by their braces).

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
    ("client", 5),
    ("sim", 7),
    ("conformance", 8),
    ("scenario", 9),
    ("explore", 10),
    ("view", 11),
    ("assess", 12),
    ("testing", 12),
    ("cli", 13),
];

fn rank(m: &str) -> Option<u32> {
    LAYERS.iter().find(|(n, _)| *n == m).map(|(_, r)| *r)
}

/// Every `.rs` file under src/, by its path relative to src/ (`redis/node/cron.rs`), with
/// its text.
fn sources() -> BTreeMap<String, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p
                    .strip_prefix(&src)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `text` without comments and the contents of string and char literals (each becomes a
/// space or an empty literal), so that a brace or a path inside one is not read as code.
fn without_comments_and_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut k = 0;
    while k < c.len() {
        let at = |s: &str| s.chars().enumerate().all(|(i, x)| c.get(k + i) == Some(&x));
        let after_ident = k > 0 && is_ident(c[k - 1]);
        if at("//") {
            while k < c.len() && c[k] != '\n' {
                k += 1;
            }
            out.push(' ');
        } else if at("/*") {
            // Block comments nest in Rust.
            let mut depth = 0;
            while k < c.len() {
                if c[k] == '/' && c.get(k + 1) == Some(&'*') {
                    depth += 1;
                    k += 2;
                } else if c[k] == '*' && c.get(k + 1) == Some(&'/') {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            out.push(' ');
        } else if !after_ident && (at("r\"") || at("r#") || at("br\"") || at("br#")) {
            // A raw string: `r#*"` … `"#*`, no escapes.
            k += if c[k] == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while c.get(k) == Some(&'#') {
                hashes += 1;
                k += 1;
            }
            if c.get(k) != Some(&'"') {
                out.push('r');
                continue; // `r#ident`, a raw identifier
            }
            k += 1;
            while k < c.len() && !(c[k] == '"' && (1..=hashes).all(|h| c.get(k + h) == Some(&'#')))
            {
                k += 1;
            }
            k += 1 + hashes;
            out.push_str("\"\"");
        } else if c[k] == '"' {
            k += 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            k += 1;
            out.push_str("\"\"");
        } else if c[k] == '\'' && (c.get(k + 1) == Some(&'\\') || c.get(k + 2) == Some(&'\'')) {
            // A char literal ('x', '\n', '\u{..}'); any other quote starts a lifetime.
            k += 2;
            while k < c.len() && c[k] != '\'' {
                k += 1;
            }
            k += 1;
            out.push_str("' '");
        } else {
            out.push(c[k]);
            k += 1;
        }
    }
    out
}

/// What a file's non-test code says: `text` without comments and literals, and without the
/// item after every `#[cfg(test)]` (a `mod … { … }` block matched brace by brace, a function,
/// a `use`), so that code after a test module is read. Also the names of the test modules
/// declared out of line (`#[cfg(test)] mod tests;`), whose files are test code.
fn non_test_code(text: &str) -> (String, Vec<String>) {
    let code = without_comments_and_literals(text);
    let mut out = String::with_capacity(code.len());
    let mut test_mods = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let item = &rest[i + "#[cfg(test)]".len()..];
        let mut depth = 0;
        let mut end = item.len();
        for (j, ch) in item.char_indices() {
            match ch {
                ';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let words: Vec<&str> = item[..end]
            .trim_end_matches(';')
            .split_whitespace()
            .filter(|w| !w.starts_with("pub"))
            .collect();
        if let ["mod", name] = words[..] {
            test_mods.push(name.to_string());
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_mods)
}

/// A file's module path: `redis/node/cron.rs` and `redis/node/cron/mod.rs` are
/// `[redis, node, cron]`.
fn module_path(rel: &str) -> Vec<String> {
    let mut p: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if p.last().is_some_and(|l| l == "mod") {
        p.pop();
    }
    p
}

/// Reads one path of a `use` tree or an expression at `c[k..]`, below `base`, into `out`
/// (a group `{a::b, c, self}` gives one path each; a glob ends in `*`). Returns where it
/// stopped.
fn use_tree(c: &[char], mut k: usize, base: &[String], out: &mut Vec<Vec<String>>) -> usize {
    while c.get(k).is_some_and(|x| x.is_whitespace()) {
        k += 1;
    }
    if c.get(k) == Some(&'{') {
        k += 1;
        loop {
            while c.get(k).is_some_and(|x| x.is_whitespace() || *x == ',') {
                k += 1;
            }
            if k >= c.len() || c[k] == '}' {
                return k + 1;
            }
            let before = k;
            k = use_tree(c, k, base, out);
            // Skip what a path does not use (`as name`) up to the next item of the group.
            while k < c.len() && c[k] != ',' && c[k] != '}' {
                k += 1;
            }
            if k == before {
                k += 1;
            }
        }
    }
    let mut segs = base.to_vec();
    loop {
        let start = k;
        while c.get(k).is_some_and(|x| is_ident(*x)) {
            k += 1;
        }
        if k == start {
            if c.get(k) == Some(&'*') {
                segs.push("*".into());
                k += 1;
            }
            out.push(segs);
            return k;
        }
        let seg: String = c[start..k].iter().collect();
        if seg != "self" {
            segs.push(seg);
        }
        if c.get(k) == Some(&':') && c.get(k + 1) == Some(&':') {
            k += 2;
            if c.get(k) == Some(&'{') {
                return use_tree(c, k, &segs, out);
            }
        } else {
            out.push(segs);
            return k;
        }
    }
}

/// The crate's files as a module tree: each module path's file, the names each file defines,
/// and what its `pub use`s re-export, so that a path is charged to the file that defines the
/// item it names (`crate::proto::Reply` to `proto/reply.rs`, not to the `proto/mod.rs` that
/// re-exports it).
struct Tree {
    /// module path → file (relative to src/). lib.rs and main.rs are not in it.
    files: BTreeMap<Vec<String>, String>,
    /// file → its non-test code.
    code: BTreeMap<String, String>,
    /// file → the names its items define.
    defines: BTreeMap<String, BTreeSet<String>>,
    /// (file, name) → the full path the name is re-exported from.
    reexports: BTreeMap<(String, String), Vec<String>>,
    /// file → the modules it re-exports whole (`pub use args::*`).
    globs: BTreeMap<String, Vec<Vec<String>>>,
}

impl Tree {
    fn new(sources: &BTreeMap<String, String>) -> Tree {
        let mut code = BTreeMap::new();
        let mut test_only = BTreeSet::new();
        for (rel, text) in sources {
            let (c, test_mods) = non_test_code(text);
            for m in test_mods {
                let mut p = module_path(rel);
                p.push(m);
                test_only.insert(p);
            }
            code.insert(rel.clone(), c);
        }
        let mut tree = Tree {
            files: BTreeMap::new(),
            code: BTreeMap::new(),
            defines: BTreeMap::new(),
            reexports: BTreeMap::new(),
            globs: BTreeMap::new(),
        };
        for (rel, c) in code {
            let p = module_path(&rel);
            // Unit tests may reach anywhere: a test module's own file is test code.
            if rel == "lib.rs"
                || rel == "main.rs"
                || (1..=p.len()).any(|l| test_only.contains(&p[..l]))
            {
                continue;
            }
            tree.files.insert(p, rel.clone());
            tree.code.insert(rel, c);
        }
        for (rel, c) in &tree.code {
            let words: Vec<&str> = c
                .split(|x: char| !is_ident(x) && x != '!')
                .filter(|w| !w.is_empty())
                .collect();
            let defined = words
                .windows(2)
                .filter(|w| {
                    matches!(
                        w[0],
                        "fn" | "struct"
                            | "enum"
                            | "union"
                            | "const"
                            | "static"
                            | "type"
                            | "trait"
                            | "mod"
                            | "macro_rules!"
                    )
                })
                .map(|w| w[1].to_string())
                .collect();
            tree.defines.insert(rel.clone(), defined);
            let chars: Vec<char> = c.chars().collect();
            let me = module_path(rel);
            for (i, _) in c.match_indices("use ") {
                // `pub use` or `pub(crate) use`: what the file re-exports.
                let mut before = c[..i].trim_end();
                if before.ends_with(')')
                    && let Some(open) = before.rfind('(')
                {
                    before = before[..open].trim_end();
                }
                if !before.ends_with("pub") {
                    continue;
                }
                let k = c[..i + 4].chars().count();
                let mut out = Vec::new();
                use_tree(&chars, k, &[], &mut out);
                for path in out {
                    let Some(full) = tree.absolute(&me, &path) else {
                        continue;
                    };
                    if full.last().is_some_and(|l| l == "*") {
                        tree.globs
                            .entry(rel.clone())
                            .or_default()
                            .push(full[..full.len() - 1].to_vec());
                    } else if let Some(name) = full.last() {
                        tree.reexports
                            .insert((rel.clone(), name.clone()), full.clone());
                    }
                }
            }
        }
        tree
    }

    /// `path` as written in the module `me` (`crate::…`, `super::…`, `self::…`, or a child
    /// module's name), from the crate root; None for a path that leaves the crate.
    fn absolute(&self, me: &[String], path: &[String]) -> Option<Vec<String>> {
        let head = path.first()?;
        let mut base: Vec<String> = match head.as_str() {
            "crate" => vec![],
            "super" => me[..me.len().saturating_sub(1)].to_vec(),
            _ => {
                let mut child = me.to_vec();
                child.push(head.clone());
                if !self.files.contains_key(&child) {
                    return None;
                }
                child
            }
        };
        let mut rest = &path[1..];
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file that defines what the absolute `path` names: the deepest module file on it,
    /// followed through re-exports.
    fn resolve(&self, path: &[String], depth: u32) -> Option<&String> {
        let l = (1..=path.len())
            .rev()
            .find(|l| self.files.contains_key(&path[..*l]))?;
        let file = &self.files[&path[..l]];
        if let (Some(name), true) = (path.get(l), depth < 8) {
            if let Some(to) = self.reexports.get(&(file.clone(), name.clone())) {
                let mut p = to.clone();
                p.extend(path[l + 1..].iter().cloned());
                return self.resolve(&p, depth + 1);
            }
            if !self.defines[file].contains(name) {
                for g in self.globs.get(file).into_iter().flatten() {
                    if self
                        .resolve(g, depth + 1)
                        .is_some_and(|f| self.defines[f].contains(name))
                    {
                        let mut p = g.clone();
                        p.extend(path[l..].iter().cloned());
                        return self.resolve(&p, depth + 1);
                    }
                }
            }
        }
        Some(file)
    }

    /// Every path the non-test code of file `rel` names inside the crate, from the root.
    fn paths(&self, rel: &str) -> Vec<Vec<String>> {
        let c = &self.code[rel];
        let chars: Vec<char> = c.chars().collect();
        let me = module_path(rel);
        let mut out = Vec::new();
        let mut k = 0;
        while k < chars.len() {
            let starts = is_ident(chars[k])
                && !chars[k].is_ascii_digit()
                && (k == 0 || !is_ident(chars[k - 1]) && chars[k - 1] != ':');
            if !starts {
                k += 1;
                continue;
            }
            let mut one = Vec::new();
            let end = use_tree(&chars, k, &[], &mut one);
            for p in one {
                if p.len() >= 2
                    && let Some(full) = self.absolute(&me, &p)
                {
                    out.push(full);
                }
            }
            k = end.max(k + 1);
        }
        out
    }
}

/// (from, to) for every `crate::to` in the non-test code of module `from`.
fn edges() -> BTreeSet<(String, String)> {
    let tree = Tree::new(&sources());
    let mut out = BTreeSet::new();
    for rel in tree.code.keys() {
        let from = &module_path(rel)[0];
        for p in tree.paths(rel) {
            if let Some(to) = p.first()
                && to != from
                && to != "*"
            {
                out.insert((from.clone(), to.clone()));
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

#[test]
fn the_layer_list_in_architecture_md_is_the_layers_table() {
    // ARCHITECTURE.md writes the table as "(its `LAYERS` table: a; b, c; …)": `;` between
    // ranks, `,` within one.
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md"))
            .expect("docs/ARCHITECTURE.md");
    let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = flat
        .find("(its `LAYERS` table: ")
        .expect("ARCHITECTURE.md names the LAYERS table")
        + "(its `LAYERS` table: ".len();
    let end = start + flat[start..].find(')').expect("the list closes");
    let written: Vec<Vec<&str>> = flat[start..end]
        .split(';')
        .map(|rank| rank.split(',').map(str::trim).collect())
        .collect();
    let mut table: Vec<Vec<&str>> = Vec::new();
    let mut last = None;
    for (name, r) in LAYERS {
        if last == Some(*r) {
            table.last_mut().expect("a rank").push(name);
        } else {
            table.push(vec![name]);
            last = Some(*r);
        }
    }
    assert_eq!(
        written, table,
        "docs/ARCHITECTURE.md's layer list and LAYERS differ"
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

/// File cycles inside one module that remain: each a set of files that reach each other
/// (through imports, a parent's use of its child and a child's of its parent included), with
/// what turning it around needs. The list is exact (a ratchet): a cycle that shrinks, splits
/// or goes must be written here as it is now, a new one fails.
const KNOWN_CYCLES: &[(&[&str], &str)] = &[
    (
        &[
            "cli/cmd/assess.rs",
            "cli/cmd/check.rs",
            "cli/cmd/check_log.rs",
            "cli/cmd/conformance.rs",
            "cli/cmd/explore.rs",
            "cli/cmd/hunt.rs",
            "cli/cmd/list.rs",
            "cli/cmd/map.rs",
            "cli/cmd/merge.rs",
            "cli/cmd/minimize.rs",
            "cli/cmd/mod.rs",
            "cli/cmd/pitfalls.rs",
            "cli/cmd/replay.rs",
            "cli/cmd/run.rs",
            "cli/cmd/search.rs",
            "cli/cmd/serve.rs",
            "cli/cmd/site.rs",
            "cli/cmd/sweep.rs",
            "cli/mod.rs",
        ],
        "cli/mod.rs calls cmd::main, which dispatches to every subcommand, and every \
         subcommand uses Ctx, out and the exit helpers defined in cli/mod.rs: those move to \
         a file below cmd/",
    ),
    (
        &[
            "redis/node.rs",
            "redis/node/connection.rs",
            "redis/node/cron.rs",
            "redis/node/pubsub.rs",
        ],
        "node.rs holds Conn, PubSub and CronGrid from its children, which use RedisNode, \
         RedisProcess, Caller and the error texts and cron constants of node.rs: the \
         children extend RedisNode and need the node's state below them to stop",
    ),
];

/// Within one top-level module, the files (`m/f.rs`, `m/f/g.rs`, `m/mod.rs`, each its own)
/// that each file's non-test code names, through `crate::m::…`, `super::…`, `self::…` or a
/// child module's name, charged to the file that defines the item (through re-exports).
fn file_edges(sources: &BTreeMap<String, String>) -> BTreeSet<(String, String)> {
    let tree = Tree::new(sources);
    let mut out = BTreeSet::new();
    for rel in tree.code.keys() {
        let top = &module_path(rel)[0];
        for p in tree.paths(rel) {
            if p.first() != Some(top) {
                continue;
            }
            if let Some(to) = tree.resolve(&p, 0)
                && to != rel
            {
                out.insert((rel.clone(), to.clone()));
            }
        }
    }
    out
}

/// The sets of two or more files that all reach each other through `edges` (strongly
/// connected components, each sorted).
fn cycles(edges: &BTreeSet<(String, String)>) -> BTreeSet<Vec<String>> {
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
        let mut component: Vec<String> = targets
            .iter()
            .filter(|b| reach.get(*b).is_some_and(|t| t.contains(a)))
            .cloned()
            .collect();
        if !component.is_empty() {
            if !component.contains(a) {
                component.push(a.clone());
            }
            component.sort();
            out.insert(component);
        }
    }
    out
}

fn tree_of(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

#[test]
fn the_cycle_check_sees_files_that_reach_each_other_as_one_cycle() {
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    let found = cycles(
        &[
            e("m/a", "m/b"),
            e("m/b", "m/c"),
            e("m/c", "m/a"),
            e("m/d", "m/a"),
            e("m/e", "m/f"),
            e("m/f", "m/e"),
        ]
        .into(),
    );
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        found,
        [set(&["m/a", "m/b", "m/c"]), set(&["m/e", "m/f"])].into()
    );
}

#[test]
fn a_parent_and_a_child_that_import_each_other_are_a_cycle() {
    let src = tree_of(&[
        (
            "m/mod.rs",
            "pub mod a;\npub struct S;\nfn f() { a::g(); }\n",
        ),
        ("m/a.rs", "use super::S;\npub fn g() {}\n"),
        (
            "n/node.rs",
            "mod cron;\nstruct Node { grid: cron::Grid }\npub const P: u64 = 1;\n",
        ),
        (
            "n/node/cron.rs",
            "use crate::n::node::P;\npub struct Grid;\n",
        ),
    ]);
    let edges = file_edges(&src);
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert!(edges.contains(&e("m/mod.rs", "m/a.rs")), "{edges:?}");
    assert!(edges.contains(&e("m/a.rs", "m/mod.rs")), "{edges:?}");
    assert!(
        edges.contains(&e("n/node.rs", "n/node/cron.rs")),
        "{edges:?}"
    );
    assert!(
        edges.contains(&e("n/node/cron.rs", "n/node.rs")),
        "{edges:?}"
    );
    assert_eq!(cycles(&edges).len(), 2);
}

#[test]
fn a_path_through_a_reexport_is_charged_to_the_file_that_defines_it() {
    let src = tree_of(&[
        (
            "m/mod.rs",
            "mod a;\nmod b;\npub use a::T;\nmod c;\npub use c::*;\n",
        ),
        ("m/a.rs", "pub struct T;\n"),
        ("m/c.rs", "pub fn out() {}\n"),
        ("m/b.rs", "use crate::m::{T, out};\n"),
    ]);
    let edges = file_edges(&src);
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert!(edges.contains(&e("m/b.rs", "m/a.rs")), "{edges:?}");
    assert!(edges.contains(&e("m/b.rs", "m/c.rs")), "{edges:?}");
    assert!(!edges.contains(&e("m/b.rs", "m/mod.rs")), "{edges:?}");
}

#[test]
fn code_after_a_test_module_is_read_and_the_test_module_is_not() {
    let text = "use crate::a::X;\n\
        #[cfg(test)]\nmod tests {\n    use crate::b::Y;\n    fn f() { let s = \"}\"; let c = '}'; }\n    // }\n}\n\
        #[cfg(test)]\nuse crate::c::Z;\n\
        #[cfg(test)]\nmod more;\n\
        /// `crate::d::W` in a comment is no import.\n\
        fn g() -> &'static str { crate::e::V }\n";
    let (code, test_mods) = non_test_code(text);
    assert!(
        code.contains("crate::a::X") && code.contains("crate::e::V"),
        "{code}"
    );
    for gone in ["crate::b", "crate::c", "crate::d", "mod more"] {
        assert!(!code.contains(gone), "{gone} in {code}");
    }
    assert_eq!(test_mods, ["more"]);
}

#[test]
fn no_two_files_of_a_module_import_each_other() {
    let edges = file_edges(&sources());
    // The check reads real imports: these are known to be there (a sibling's, a child's
    // use of its parent, a parent's use of its child).
    for (a, b) in [
        ("redis/node.rs", "redis/replication.rs"),
        ("conformance/runner.rs", "conformance/replicated.rs"),
        ("explore/mod.rs", "explore/stopping.rs"),
        ("redis/node/cron.rs", "redis/node.rs"),
    ] {
        assert!(
            edges.contains(&(a.into(), b.into())),
            "{a} -> {b} not in {edges:?}"
        );
    }
    let found = cycles(&edges);
    let known: BTreeSet<Vec<String>> = KNOWN_CYCLES
        .iter()
        .map(|(files, _)| files.iter().map(|f| f.to_string()).collect())
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    assert!(
        new.is_empty(),
        "files that import each other, directly or not (a cycle that changed is listed \
         here as it is now): {new:?}"
    );
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        gone.is_empty(),
        "listed cycles that no longer exist as listed: write them in KNOWN_CYCLES as they \
         are now: {gone:?}"
    );
}
