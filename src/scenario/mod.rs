//! Models as RON files: schema (serde types at the edge), validation with located errors,
//! and lowering into worlds.

pub mod adversary;
pub mod clients;
pub mod custom;
pub mod errors;
pub mod expectation;
pub mod faults;
pub mod lower;
pub mod marks;
pub mod model;
pub mod names;
pub mod overrides;
pub mod schema;
pub mod units;
pub mod validate;
pub mod variants;

use std::fmt;
use std::path::Path;

pub use errors::Locator;
pub use model::{ProcKind, Scenario};
pub use schema::{Expect, Model};

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
    let error = |(line, col): (usize, usize), message: String| ModelError {
        path: path.to_string(),
        line,
        col,
        message,
    };
    let model = match parse(text, None).map_err(|b| *b) {
        Ok(m) => m,
        // An error about a value read earlier (a client group's field its algorithm does not
        // take): at that value.
        Err((_, Some((mark, message)))) => {
            return Err(error(position(text, mark, &message), message));
        }
        Err((e, None)) => {
            return Err(error(
                (e.span.start.line, e.span.start.col),
                explain_ron(&e.code),
            ));
        }
    };
    let mut sc = Scenario::new(name.to_string(), path.to_string(), model).map_err(|inv| {
        let at = match &inv.at {
            Locator::Mark(m) => position(text, *m, &inv.message),
            Locator::Text(t) => locate(text, t),
            Locator::Nowhere => (1, 1),
        };
        error(at, inv.message)
    })?;
    // Each variant must load as the model it stands for; its errors are located back in
    // this file (inside the value the variant wrote, or at its name).
    let vs =
        variants::parse(text).map_err(|(off, msg)| error(variants::line_col(text, off), msg))?;
    for v in &vs {
        if let Err(e) = load_str(name, path, &v.text) {
            let off = variants::offset_of(&v.text, e.line, e.col);
            let at = variants::line_col(text, v.source_offset(off));
            return Err(error(at, format!("in variant {:?}: {}", v.name, e.message)));
        }
    }
    sc.variants = vs;
    Ok(sc)
}

type ParseError = Box<(ron::error::SpannedError, Option<(marks::Mark, String)>)>;

/// One parse of `text`, with marks from 1; `fail_at` to relocate a mark.
fn parse(text: &str, fail_at: Option<(marks::Mark, String)>) -> Result<Model, ParseError> {
    marks::begin(fail_at);
    let r = ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
        .from_str::<Model>(text);
    let pending = marks::end();
    r.map_err(|e| Box::new((e, pending)))
}

/// Line and column of the value marked `mark`: parse again failing right before it, then
/// step over the blanks and comments between the span and the value.
fn position(text: &str, mark: marks::Mark, message: &str) -> (usize, usize) {
    if mark.is_none() {
        return (1, 1);
    }
    match parse(text, Some((mark, message.to_string()))).map_err(|b| *b) {
        Err((e, _)) if e.code == ron::Error::Message(message.to_string()) => {
            marks::skip_blanks(text, e.span.start.line, e.span.start.col)
        }
        // Not reached: the same text parses the same way. Say where we do not know.
        _ => (1, 1),
    }
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

/// Refused models, each located at its value: a `@` in the text marks where the error must
/// point (and is removed before loading).
#[cfg(test)]
mod strict_tests {
    use super::*;

    /// The error for `marked` (with its `@` removed), and the line:col of the `@`.
    fn refused(marked: &str) -> (ModelError, (usize, usize)) {
        let i = marked.find('@').expect("a @ marks the expected position");
        let before = &marked[..i];
        let want = (
            1 + before.matches('\n').count(),
            1 + before.chars().rev().take_while(|&c| c != '\n').count(),
        );
        let text = marked.replacen('@', "", 1);
        let e = load_str("t", "t.ron", &text).expect_err("refused");
        (e, want)
    }

    fn assert_at(marked: &str, words: &[&str]) {
        let (e, want) = refused(marked);
        assert_eq!((e.line, e.col), want, "{e}");
        for w in words {
            assert!(e.message.contains(w), "{w:?} not in: {e}");
        }
    }

    /// A one-node model with `clients` and the rest of the model in `rest`.
    fn model(clients: &str, rest: &str) -> String {
        format!(
            "(\n    description: \"t\",\n    duration: \"60s\",\n    nodes: [(name: \"redis\")],\n    clients: [\n{clients}\n    ],\n{rest}\n)"
        )
    }

    const WD: &str = r#"        (name: "c", count: 2, algorithm: "watchdog", node: "redis", ttl: "10s",
         hold: ("1s", "2s"), retry: ("10ms", "20ms")"#;

    fn watchdog_with(field: &str) -> String {
        model(
            &format!("{WD},\n         @{field}),"),
            "    check: [\"mutual_exclusion\"],",
        )
    }

    #[test]
    fn a_field_the_watchdog_does_not_read_is_refused_at_the_field() {
        assert_at(
            &watchdog_with("via_sentinels: true"),
            &["`via_sentinels`", "\"watchdog\"", "single-instance"],
        );
        assert_at(&watchdog_with("max_attempts: 3"), &["`max_attempts`"]);
        assert_at(
            &watchdog_with("redlock: (preset: \"redis-docs\")"),
            &["`redlock`", "redlock"],
        );
        assert_at(&watchdog_with("nodes: [\"redis\"]"), &["`nodes`"]);
        assert_at(
            &watchdog_with("present_token: true"),
            &["`present_token`", "consensus"],
        );
        assert_at(
            &watchdog_with("wait: (replicas: 1, timeout: \"1s\")"),
            &["set-px-wait-cad"],
        );
    }

    const RL: &str = r#"        (name: "c", count: 2, algorithm: "redisson", node: "redis", ttl: "30s",
         hold: ("1s", "2s"), retry: ("10ms", "20ms")"#;

    #[test]
    fn redisson_options_are_checked_where_they_are_written() {
        let check = "    check: [\"mutual_exclusion\"],";
        assert_at(
            &model(&format!("{RL}, redisson: (version: @\"3.9.9\")),"), check),
            &[
                "unknown Redisson version \"3.9.9\"",
                "3.43.0, 3.44.0, 3.45.1, 3.52.0",
            ],
        );
        assert_at(
            &model(
                &format!("{RL}, redisson: (version: @\"3.52.0\", fenced: true)),"),
                check,
            ),
            &["RFencedLock", "fencing: true"],
        );
        assert_at(
            &model(
                &format!(
                    "{RL}, redisson: (version: \"3.52.0\"), @watchdog: (renew_every: \"1s\")),"
                ),
                check,
            ),
            &["`watchdog`", "\"redisson\""],
        );
        assert_at(
            &model(
                r#"        (name: "c", count: 2, algorithm: @"redisson", node: "redis", ttl: "30s",
         hold: ("1s", "2s"), retry: ("10ms", "20ms")),"#,
                check,
            ),
            &["needs `redisson"],
        );
        // A field of the options that does not exist is refused by name.
        let e = load_str(
            "t",
            "t.ron",
            &model(
                &format!("{RL}, redisson: (version: \"3.52.0\", lease_time: \"1s\")),"),
                check,
            ),
        )
        .expect_err("refused");
        assert!(e.message.contains("lease_time"), "{e}");
    }

    #[test]
    fn an_ignored_field_before_the_algorithm_is_refused_at_the_field() {
        let text = model(
            r#"        (name: "c", count: 2, @max_attempts: 3, algorithm: "watchdog", node: "redis",
         ttl: "10s", hold: ("1s", "2s"), retry: ("10ms", "20ms")),"#,
            "    check: [\"mutual_exclusion\"],",
        );
        assert_at(&text, &["`max_attempts`", "\"watchdog\""]);
    }

    #[test]
    fn wait_on_set_px_cad_and_watchdog_on_redlock_are_refused_at_the_field() {
        let text = model(
            r#"        (name: "c", count: 2, algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: ("1s", "2s"), retry: ("10ms", "20ms"), @wait: (replicas: 1, timeout: "1s")),"#,
            "    check: [\"mutual_exclusion\"],",
        );
        assert_at(&text, &["`wait`", "\"set-px-cad\"", "set-px-wait-cad"]);
        let text = model(
            r#"        (name: "c", count: 2, algorithm: "redlock", nodes: ["redis"], ttl: "10s",
         hold: ("1s", "2s"), @watchdog: (renew_every: "1s")),"#,
            "    check: [\"mutual_exclusion\"],",
        );
        assert_at(&text, &["`watchdog`", "\"redlock\""]);
        // Redlock retries as its options say: `retry` would be believed and never used.
        let text = model(
            r#"        (name: "c", count: 2, algorithm: "redlock", nodes: ["redis"], ttl: "10s",
         hold: ("1s", "2s"), @retry: ("10ms", "20ms")),"#,
            "    check: [\"mutual_exclusion\"],",
        );
        assert_at(&text, &["`retry`", "\"redlock\""]);
    }

    #[test]
    fn a_field_an_algorithm_needs_is_asked_for_at_the_algorithm() {
        let text = model(
            r#"        (name: "c", count: 2, algorithm: @"redlock", ttl: "10s", hold: ("1s", "2s")),"#,
            "    check: [\"mutual_exclusion\"],",
        );
        assert_at(&text, &["needs `nodes"]);
        let text = model(
            r#"        (name: "c", count: 2, algorithm: @"watchdog", node: "redis", ttl: "10s", hold: "1s"),"#,
            "    check: [\"mutual_exclusion\"],",
        );
        assert_at(&text, &["needs `retry"]);
    }

    #[test]
    fn a_description_naming_a_field_does_not_attract_the_error() {
        let text = r#"(
    description: "ttl: 0ms; latency nodes \"redis\" check liveness_bound",
    duration: "60s",
    nodes: [(name: "redis")],
    clients: [(name: "c", count: 2, algorithm: "set-px-cad", node: "redis",
               ttl: @"0ms", hold: "1s", retry: "10ms")],
    check: ["mutual_exclusion"],
)"#;
        assert_at(text, &["below 1ms"]);
    }

    fn nodes_model(nodes: &str) -> String {
        format!(
            r#"(
    description: "replica_of",
    duration: "60s",
    nodes: [{nodes}],
    clients: [(name: "c", count: 2, algorithm: "set-px-cad", node: "a", ttl: "10s",
               hold: "1s", retry: "10ms")],
    check: ["mutual_exclusion"],
)"#
        )
    }

    #[test]
    fn a_replica_of_cycle_is_refused_at_its_closing_reference() {
        assert_at(
            &nodes_model(r#"(name: "a", replica_of: @"b"), (name: "b", replica_of: "a")"#),
            &["cycle", "a -> b -> a"],
        );
        assert_at(
            &nodes_model(
                r#"(name: "a", replica_of: @"b"), (name: "b", replica_of: "c"),
               (name: "c", replica_of: "a")"#,
            ),
            &["cycle", "a -> b -> c -> a"],
        );
    }

    #[test]
    fn a_replica_of_a_replica_is_refused_as_a_chain() {
        assert_at(
            &nodes_model(
                r#"(name: "a"), (name: "b", replica_of: "a"), (name: "c", replica_of: @"b")"#,
            ),
            &["chained replication"],
        );
    }

    #[test]
    fn a_zero_liveness_bound_is_refused_at_its_value() {
        let text = model(
            r#"        (name: "c", count: 2, algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: "1s", retry: "10ms"),"#,
            "    check: [\"liveness\"],\n    liveness_bound: @\"0ms\",",
        );
        assert_at(&text, &["liveness_bound must be above 0"]);
    }

    #[test]
    fn a_liveness_bound_without_liveness_is_refused() {
        let text = model(
            r#"        (name: "c", count: 2, algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: "1s", retry: "10ms"),"#,
            "    check: [\"mutual_exclusion\"],\n    liveness_bound: @\"10s\",",
        );
        assert_at(&text, &["only by `liveness`"]);
    }

    const PX: &str = r#"        (name: "c", count: 3, algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: "1s", retry: "10ms"),"#;

    #[test]
    fn a_sentinel_named_like_a_client_is_refused_at_the_sentinel_name() {
        let text = model(
            r#"        (name: "s1", algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: "1s", retry: "10ms"),
        (name: "c", count: 2, algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: "1s", retry: "10ms"),"#,
            "    sentinels: (name: @\"s\", count: 3, quorum: 2, monitor: \"redis\"),\n    check: [\"mutual_exclusion\"],",
        );
        assert_at(&text, &["sentinel 1", "client \"s1\""]);
        // Default sentinel names (s1, s2, ...) are made from `count`.
        let text = model(
            r#"        (name: "s", count: 2, algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: "1s", retry: "10ms"),"#,
            "    sentinels: (count: @3, quorum: 2, monitor: \"redis\"),\n    check: [\"mutual_exclusion\"],",
        );
        assert_at(&text, &["sentinel 1", "client 1 of group \"s\""]);
    }

    #[test]
    fn a_generated_client_name_colliding_with_a_node_is_refused_at_the_group_name() {
        let text = r#"(
    description: "t",
    duration: "60s",
    nodes: [(name: "redis"), (name: "c2")],
    clients: [(name: @"c", count: 3, algorithm: "set-px-cad", node: "redis", ttl: "10s",
               hold: "1s", retry: "10ms")],
    check: ["mutual_exclusion"],
)"#;
        assert_at(text, &["client 2 of group \"c\"", "node \"c2\""]);
    }

    #[test]
    fn a_resource_or_consensus_service_named_like_a_node_or_client_is_refused_at_its_name() {
        assert_at(
            &model(
                PX,
                "    resource: (name: @\"redis\"),\n    check: [\"mutual_exclusion\"],",
            ),
            &["the resource", "node \"redis\""],
        );
        assert_at(
            &model(
                PX,
                "    consensus: (name: @\"c3\"),\n    check: [\"mutual_exclusion\"],",
            ),
            &["the consensus service", "client 3 of group"],
        );
    }

    #[test]
    fn properties_that_cannot_be_violated_are_refused_at_their_name() {
        assert_at(
            &model(
                PX,
                "    check: [\"mutual_exclusion\", @\"resource_safety\"],",
            ),
            &["cannot be violated", "no `resource`"],
        );
        assert_at(
            &model(
                PX,
                "    resource: (name: \"db\"),\n    check: [@\"fencing_monotonic\"],",
            ),
            &["no client presents fencing tokens"],
        );
        assert_at(
            &model(
                r#"        (name: "c", count: 3, algorithm: "set-px-cad-fencing", node: "redis",
         ttl: "10s", hold: "1s", retry: "10ms"),"#,
                "    resource: (name: \"db\", fencing: true),\n    check: [\"resource_safety\", @\"fencing_monotonic\"],",
            ),
            &["refuses every lower token itself"],
        );
        let one = r#"        (name: "c", algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: "1s", retry: "10ms"),"#;
        assert_at(
            &model(one, "    check: [@\"mutual_exclusion\"],"),
            &["no lock key is used by two clients"],
        );
        assert_at(
            &model(
                PX,
                "    check: [@\"liveness\"],\n    liveness_bound: \"60s\",",
            ),
            &["not shorter than the run"],
        );
        let zk = r#"(
    description: "t",
    duration: "60s",
    consensus: (name: "zk"),
    clients: [(name: "z", count: 2, algorithm: "consensus", ttl: "10s", hold: "1s",
               retry: "10ms")],
    check: ["mutual_exclusion", @"foreign_unlock"],
)"#;
        assert_at(zk, &["delete Redis keys"]);
    }

    #[test]
    fn fencing_monotonic_stays_checkable_where_tokens_reach_an_unfenced_resource() {
        let zk = r#"(
    description: "t",
    duration: "60s",
    consensus: (name: "zk"),
    resource: (name: "db"),
    clients: [(name: "z", count: 2, algorithm: "consensus", ttl: "10s", hold: "1s",
               retry: "10ms", present_token: true)],
    check: ["fencing_monotonic", "resource_safety"],
)"#;
        load_str("t", "t.ron", zk).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_single_value_is_accepted_wherever_a_range_is() {
        let text = model(
            r#"        (name: "c", count: 2, algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: "1s", think: "5ms", retry: "10ms", start: "2s"),"#,
            r#"    random_faults: [clock_step(targets: ["redis"], every: "10s", delta: "+5s")],
    triggers: [clock_step_after_grant(targets: ["redis"], delta: "-1s")],
    check: ["mutual_exclusion"],"#,
        );
        load_str("t", "t.ron", &text).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_value_that_is_neither_a_range_nor_a_single_value_says_which_is_expected() {
        let text = model(
            r#"        (name: "c", count: 2, algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: 5, retry: "10ms"),"#,
            "    check: [\"mutual_exclusion\"],",
        );
        let e = load_str("t", "t.ron", &text).unwrap_err();
        assert!(e.message.contains(units::RANGE_EXPECTED), "{e}");
        assert_eq!(e.line, 7, "{e}");
        let text = model(
            r#"        (name: "c", count: 2, algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: "5 parsecs", retry: "10ms"),"#,
            "    check: [\"mutual_exclusion\"],",
        );
        let e = load_str("t", "t.ron", &text).unwrap_err();
        assert!(
            e.message.contains("unknown unit") && e.message.contains(units::RANGE_EXPECTED),
            "{e}"
        );
    }

    #[test]
    fn a_client_with_a_start_offset_makes_no_request_before_it() {
        let text = model(
            r#"        (name: "c", count: 2, algorithm: "set-px-cad", node: "redis", ttl: "10s",
         hold: "100ms", retry: "10ms", start: ("1s", "2s")),"#,
            "    check: [\"mutual_exclusion\"],",
        );
        let sc = load_str("t", "t.ron", &text).unwrap();
        for seed in 0..5 {
            let (mut w, _) = sc.build(seed, crate::sim::TraceMode::Off);
            w.start();
            w.run();
            let first = w
                .history
                .records
                .iter()
                .find(|r| matches!(r.obs, crate::history::Observation::Attempt { .. }))
                .expect("an attempt");
            assert!(
                first.at.0 >= 1_000_000_000,
                "first attempt at {:?}",
                first.at
            );
        }
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
