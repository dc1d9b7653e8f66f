//! `check-log` on recorded logs: the redis-py harness's real log is found violated, a log
//! whose overlap lies within the clocks' bounds is only possible (exit 3), a clean one holds,
//! and bad lines are located errors (exit 2).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn check_log(args: &[&str]) -> (i32, String, String) {
    let o: Output = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check-log")
        .args(args)
        .output()
        .expect("binary runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-log-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

#[test]
fn the_redis_py_harness_log_of_a_paused_worker_is_violated_for_certain() {
    let (code, out, err) = check_log(&["tests/check-log/redis-py-pause.jsonl"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(r#"mutual_exclusion  VIOLATED   w1 (line 2) and w2 (line 3) both believed they held "resource-lock""#),
        "{out}"
    );
    assert!(
        out.contains(r#"resource_safety   VIOLATED   "resource" applied w1's write with token 1 (line 6, ok) after w2's with token 2 (line 4, ok)"#),
        "{out}"
    );
    // The timeline marks the witnesses and shows both believed holdings.
    assert!(out.contains("believed holdings:"), "{out}");
    assert!(
        out.lines().filter(|l| l.starts_with('!')).count() >= 4,
        "{out}"
    );
}

#[test]
fn the_json_findings_name_the_verdicts_and_witness_lines() {
    let (code, out, _) = check_log(&["tests/check-log/redis-py-pause.jsonl", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["properties"][0]["property"], "mutual_exclusion");
    assert_eq!(v["properties"][0]["verdict"], "violated");
    assert_eq!(v["properties"][0]["lines"], serde_json::json!([2, 3]));
    assert_eq!(v["properties"][2]["verdict"], "unobserved");
}

#[test]
fn an_overlap_smaller_than_the_clock_bounds_is_only_possible_and_exits_3() {
    let (code, out, err) = check_log(&["tests/check-log/two-hosts-possible.jsonl"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("mutual_exclusion  possible"), "{out}");
    assert!(out.contains("inconclusive"), "{out}");
}

#[test]
fn a_log_whose_stale_write_was_refused_holds_and_exits_0() {
    let (code, out, err) = check_log(&["tests/check-log/two-hosts-held.jsonl"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("mutual_exclusion  held"), "{out}");
    assert!(out.contains("resource_safety   held"), "{out}");
    assert!(out.contains("foreign_unlock    held"), "{out}");
}

#[test]
fn a_bad_line_is_an_error_naming_file_line_and_field_with_exit_2() {
    let good = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check-log/two-hosts-held.jsonl"),
    )
    .unwrap();
    let cases = [
        (
            r#""complete_ms": 1004"#,
            r#""complete_ms": 900"#,
            ":2:1: field `complete_ms`",
        ),
        (
            r#""host": "app2", "client": "c2", "lock": "orders", "invoke_ms": 1300"#,
            r#""host": "app9", "client": "c2", "lock": "orders", "invoke_ms": 1300"#,
            ":5:1: field `host`",
        ),
        (r#""result": "fail""#, r#""result": "maybe""#, ":7:"),
        (
            r#""token": 8"#,
            r#""token": "eight""#,
            ":6:1: field `token`",
        ),
        ("distlock-log/1", "distlock-log/2", ":1:1: field `schema`"),
    ];
    for (from, to, want) in cases {
        assert!(good.contains(from), "{from}");
        let p = scratch("bad.jsonl", &good.replacen(from, to, 1));
        let (code, _, err) = check_log(&[p.to_str().unwrap()]);
        assert_eq!(code, 2, "{to}: {err}");
        assert!(err.contains(&format!("bad.jsonl{want}")), "{to}: {err}");
    }
    let (code, _, err) = check_log(&["tests/check-log/no-such-file.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no-such-file.jsonl: cannot read log"), "{err}");
}

#[test]
fn a_log_with_a_line_longer_than_the_cap_is_refused_not_read_whole() {
    let head = r#"{"schema": "distlock-log/1", "hosts": {"h": {"clock_uncertainty_ms": 1}}}"#;
    let p = scratch("long.jsonl", &format!("{head}\n{}\n", " ".repeat(1 << 20)));
    let (code, _, err) = check_log(&[p.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("long.jsonl:2:") && err.contains("longer than"),
        "{err}"
    );
}
