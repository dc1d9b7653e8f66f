//! Models as RON files: schema (serde types at the edge), validation with located errors,
//! and lowering into worlds.

pub mod adversary;
pub mod expectation;
pub mod model;
pub mod units;

use std::fmt;
use std::path::Path;

pub use model::{Expect, Model, ProcKind, Scenario};

/// Largest model file accepted.
pub const MAX_MODEL_BYTES: u64 = 1024 * 1024;

/// A bad model: `FILE:LINE:COL: message`. Exit code 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    pub path: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path, self.line, self.col, self.message
        )
    }
}

impl std::error::Error for ModelError {}

/// Line and column (1-based) of the first occurrence of `needle` outside `//` comments.
fn locate(text: &str, needle: &str) -> (usize, usize) {
    for (i, line) in text.lines().enumerate() {
        let code = match line.find("//") {
            Some(c) => &line[..c],
            None => line,
        };
        if let Some(col) = code.find(needle) {
            return (i + 1, line[..col].chars().count() + 1);
        }
    }
    (1, 1)
}

/// Reads and validates a model file.
pub fn load(path: &Path) -> Result<Scenario, ModelError> {
    let p = path.display().to_string();
    let err = |message: String| ModelError {
        path: p.clone(),
        line: 1,
        col: 1,
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read model: {e}")))?;
    if !meta.is_file() {
        return Err(err("not a file".into()));
    }
    if meta.len() > MAX_MODEL_BYTES {
        return Err(err(format!(
            "model file is {} bytes; the limit is {MAX_MODEL_BYTES}",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| err(format!("cannot read model: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + upto.iter().filter(|&&b| b == b'\n').count();
        ModelError {
            path: p.clone(),
            line,
            col: 1,
            message: "model file is not valid UTF-8".into(),
        }
    })?;
    let name = path
        .file_stem()
        .map_or_else(|| p.clone(), |s| s.to_string_lossy().into_owned());
    load_str(&name, &p, &text)
}

/// Parses and validates model text; `path` is used in messages and replay commands.
pub fn load_str(name: &str, path: &str, text: &str) -> Result<Scenario, ModelError> {
    let model: Model = ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
        .from_str(text)
        .map_err(|e| ModelError {
            path: path.to_string(),
            line: e.span.start.line,
            col: e.span.start.col,
            message: explain_ron(&e.code),
        })?;
    Scenario::new(name.to_string(), path.to_string(), model).map_err(|inv| {
        let (line, col) = inv.near.as_deref().map_or((1, 1), |n| locate(text, n));
        ModelError {
            path: path.to_string(),
            line,
            col,
            message: inv.message,
        }
    })
}

fn explain_ron(e: &ron::Error) -> String {
    let s = e.to_string();
    // RON names the serde type of a missing field's struct; say which field in plain words.
    s.replace("Unexpected missing field", "missing field")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"(
        description: "t",
        duration: "10s",
        nodes: [(name: "redis")],
        clients: [(name: "c", count: 2, algorithm: "set-px-del", node: "redis", ttl: "1s",
                   hold: ("10ms", "20ms"), retry: ("5ms", "10ms"))],
        check: ["mutual_exclusion"],
    )"#;

    #[test]
    fn a_good_model_loads() {
        let s = load_str("t", "t.ron", GOOD).unwrap();
        assert_eq!(s.procs.len(), 3);
    }

    fn err(text: &str) -> ModelError {
        load_str("t", "t.ron", text).unwrap_err()
    }

    #[test]
    fn a_bad_duration_is_located_at_its_value() {
        let e = err(&GOOD.replace("\"1s\"", "\"1 parsec\""));
        assert_eq!(
            (e.line, e.message.contains("unknown unit")),
            (5, true),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_node_is_located() {
        let e = err(&GOOD.replace("node: \"redis\"", "node: \"redis9\""));
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("unknown node"), "{e}");
    }

    #[test]
    fn absurd_sizes_are_refused() {
        assert!(
            err(&GOOD.replace("count: 2", "count: 1000000000"))
                .message
                .contains("out of range")
        );
        assert!(
            err(&GOOD.replace("ttl: \"1s\"", "ttl: \"0ms\""))
                .message
                .contains("below 1ms")
        );
        assert!(
            err(&GOOD.replace("\"10s\"", "\"-10s\""))
                .message
                .contains("negative")
        );
    }

    #[test]
    fn unknown_fields_and_algorithms_are_named() {
        assert!(err(&GOOD.replace("ttl:", "tll:")).message.contains("tll"));
        assert!(
            err(&GOOD.replace("set-px-del", "set-px-dell"))
                .message
                .contains("unknown algorithm")
        );
    }
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn a_latency_beyond_the_network_limit_is_refused_not_a_panic() {
        let text = r#"(description: "t", duration: "10s", nodes: [(name: "redis")],
            clients: [(name: "c", algorithm: "set-px-del", node: "redis", ttl: "1s", hold: "10ms", retry: "5ms")],
            network: (latency: ("1ms", "2h")), check: ["mutual_exclusion"])"#;
        let e = load_str("t", "t.ron", text).unwrap_err();
        assert!(e.message.contains("latency"), "{e}");
    }
}
