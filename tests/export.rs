//! Machine-readable replays: every catalogue model's first seeds export as a Chrome trace that
//! meets the Trace Event format, and as JSON lines in time order (docs/trace-format.md).

use std::path::Path;

use distlock_sim::explore::run_world;
use distlock_sim::sim::TraceMode;
use distlock_sim::view::export::{chrome_trace, json_lines, validate_chrome_trace};

fn models() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.retain(|p| p.extension().is_some_and(|x| x == "ron"));
    v.sort();
    v
}

#[test]
fn every_model_exports_a_valid_chrome_trace_and_ordered_json_lines() {
    for p in models() {
        let sc = distlock_sim::scenario::load(&p).unwrap();
        let (o, world) = run_world(&sc, 1, TraceMode::Full);
        let chrome = chrome_trace(&sc, 1, &world, &o.violations);
        let n = validate_chrome_trace(&chrome).unwrap_or_else(|e| panic!("{}: {e}", sc.name));
        assert!(n > world.names().len() * 3, "{}: only metadata", sc.name);
        let text = json_lines(&sc, 1, &world, &o.violations);
        let mut last = 0u64;
        for (i, line) in text.lines().enumerate() {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{}: line {i}: {e}", sc.name));
            let kind = v["kind"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: line {i} has no kind", sc.name));
            if i == 0 {
                assert_eq!(kind, "run");
                continue;
            }
            let t = v["t_ns"]
                .as_u64()
                .unwrap_or_else(|| panic!("{}: line {i} has no t_ns", sc.name));
            assert!(t >= last, "{}: line {i} goes back in time", sc.name);
            last = t;
        }
        let violations = text
            .lines()
            .filter(|l| l.contains("\"kind\":\"violation\""))
            .count();
        assert_eq!(violations, o.violations.len(), "{}", sc.name);
    }
}

#[test]
fn a_broken_chrome_trace_is_caught_by_the_validator() {
    assert!(validate_chrome_trace("{}").is_err());
    assert!(
        validate_chrome_trace(r#"{"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":0,"ts":1}]}"#)
            .is_err()
    );
    assert!(
        validate_chrome_trace(
            r#"{"traceEvents":[{"ph":"i","name":"a","pid":0,"tid":0,"ts":1,"s":"q"}]}"#
        )
        .is_err()
    );
    assert_eq!(
        validate_chrome_trace(
            r#"{"traceEvents":[{"ph":"i","name":"a","pid":0,"tid":0,"ts":1,"s":"g"}]}"#
        ),
        Ok(1)
    );
}
