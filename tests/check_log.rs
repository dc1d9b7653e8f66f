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

// ---- Issue 25.7: a real lost update (tests/check-log/redlock-lost-update.py recorded
// these: pottery 3.0.1 and redlock-py 1.0.8, three redis-server 7.0.15 masters) ----

#[test]
fn a_real_redlock_run_that_lost_an_update_is_violated_for_certain() {
    let (code, out, err) = check_log(&["tests/check-log/redlock-lost-update.jsonl"]);
    assert_eq!(code, 1, "{out}{err}");
    // With honest validities the holdings never overlap: what breaks is the write.
    assert!(out.contains("mutual_exclusion  held"), "{out}");
    assert!(
        out.contains(r#"stale_write       VIOLATED   A-pottery's write to "counter" (line 13) began 746.1ms after its holding of "redlock:counter-lock" (line 2) ran out by its own clock"#),
        "{out}"
    );
    assert!(
        out.contains(
            r#"and it landed inside B-redlock-py's holding of "redlock:counter-lock" (line 11)"#
        ),
        "{out}"
    );
    assert!(
        out.contains(r#"lost_update       VIOLATED   A-pottery (line 13, ok) and B-redlock-py (line 15, ok) both made v1 of "counter""#),
        "{out}"
    );
}

#[test]
fn the_same_run_logged_with_the_old_fields_only_is_violated_by_its_stale_write() {
    let (code, out, err) = check_log(&["tests/check-log/redlock-lost-update-v1-fields.jsonl"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("stale_write       VIOLATED"), "{out}");
    assert!(out.contains("lost_update       unobserved"), "{out}");
}

#[test]
fn a_real_redlock_run_without_the_pause_holds() {
    let (code, out, err) = check_log(&["tests/check-log/redlock-no-pause.jsonl"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("stale_write       held"), "{out}");
    assert!(out.contains("lost_update       held"), "{out}");
}

// ---- Issue 26.6: hostile logs ----

#[test]
fn times_at_the_accepted_limit_are_judged_not_wrapped() {
    let head = r#"{"schema": "distlock-log/1", "hosts": {"a": {"clock_uncertainty_ms": 1}}}"#;
    let acq = |c: &str, t: f64, tok: &str| {
        format!(
            r#"{{"op":"acquire","host":"a","client":"{c}","invoke_ms":{t},"complete_ms":{},"result":"ok","token":"{tok}","validity_ms":1e15}}"#,
            t + 1.0
        )
    };
    let p = scratch(
        "far.jsonl",
        &format!(
            "{head}\n{}\n{}\n",
            acq("c1", 8.9e15, "x"),
            acq("c2", 8.9e15 + 10.0, "y")
        ),
    );
    let (code, out, err) = check_log(&[p.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("for 999999999999.988s"), "{out}");
}

#[test]
fn a_host_declared_twice_is_refused_with_exit_2() {
    let p = scratch(
        "twice.jsonl",
        "{\"schema\": \"distlock-log/1\", \"hosts\": {\"a\": {\"clock_uncertainty_ms\": 50}, \"a\": {\"clock_uncertainty_ms\": 0}}}\n",
    );
    let (code, _, err) = check_log(&[p.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(r#"twice.jsonl:1:1: field `hosts`: host "a" declared twice"#),
        "{err}"
    );
}

#[test]
fn an_unmatched_release_is_a_located_warning_and_disorder_is_an_error() {
    let head = r#"{"schema": "distlock-log/1", "hosts": {"a": {"clock_uncertainty_ms": 1}}}"#;
    let rel = r#"{"op":"release","host":"a","client":"c1","invoke_ms":100,"complete_ms":101,"result":"ok","token":"x"}"#;
    let acq = |t: u32| {
        format!(
            r#"{{"op":"acquire","host":"a","client":"c1","invoke_ms":{t},"complete_ms":{},"result":"ok","token":"x"}}"#,
            t + 1
        )
    };
    let p = scratch("unmatched.jsonl", &format!("{head}\n{rel}\n{}\n", acq(200)));
    let (code, out, err) = check_log(&[p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("warning: ") && err.contains("unmatched.jsonl:2:1: c1's release"),
        "{err}"
    );
    let (_, json, _) = check_log(&[p.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["warnings_total"], 1);
    assert_eq!(v["warnings"][0]["line"], 2);
    let p = scratch("disorder.jsonl", &format!("{head}\n{rel}\n{}\n", acq(0)));
    let (code, _, err) = check_log(&[p.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("disorder.jsonl:3:1: field `invoke_ms`"),
        "{err}"
    );
}

#[test]
fn an_unknown_field_is_named_without_serdes_position_suffix() {
    let good = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check-log/two-hosts-held.jsonl"),
    )
    .unwrap();
    let p = scratch(
        "misspelt.jsonl",
        &good.replacen("\"validity_ms\"", "\"valdity_ms\"", 1),
    );
    let (code, _, err) = check_log(&[p.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("misspelt.jsonl:2:1: field `valdity_ms`: unknown in an event"),
        "{err}"
    );
    assert!(!err.contains("column"), "{err}");
}

/// The page of a log (`--format html --out F`): written, same exit code as the text, and it
/// is the replay's page — its stepper, its lanes per client and resource, the holdings, each
/// host's clock bound and check-log's own violations by their check-log names.
#[test]
fn the_html_page_draws_the_real_log_with_the_replays_lanes_and_stepper() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-log-tests");
    std::fs::create_dir_all(&out).unwrap();
    let page = out.join("redis-py-pause.html");
    let _ = std::fs::remove_file(&page);
    let (code, stdout, err) = check_log(&[
        "tests/check-log/redis-py-pause.jsonl",
        "--format",
        "html",
        "--out",
        page.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(stdout, "", "the page goes to the file only");
    assert!(
        err.contains(
            "redis-py-pause.html (tests/check-log/redis-py-pause.jsonl: VIOLATED, exit code 1)"
        ),
        "{err}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // The violations, by check-log's names, on the chart and in the header.
    assert!(
        html.contains("VIOLATED: mutual_exclusion, resource_safety, stale_write"),
        "verdict line"
    );
    assert!(html.contains(r#"class="vlabel""#) && html.contains("(1) mutual_exclusion"));
    assert!(html.contains("w1 (line 2) and w2 (line 3) both believed they held"));
    // The lanes: both workers and the resource, each client with its host's bound.
    for (lane, role) in [("w1", "client"), ("w2", "client"), ("resource", "resource")] {
        assert!(
            html.contains(&format!(">{lane}</text><text class=\"role\" x=\"8\" y=")),
            "lane {lane}"
        );
        assert!(html.contains(&format!(">{role}</text>")), "role {role}");
    }
    assert!(
        html.contains("clock: h1 ±1ms"),
        "the clock bound on the lane"
    );
    assert!(
        html.contains("host clocks →"),
        "the axis says whose time it is"
    );
    // Holdings (the hold bars), their overlap, the calls' widened intervals.
    assert!(html.contains(r#"<rect class="hold""#));
    assert!(html.contains(r#"<rect class="overlap""#));
    assert!(html.contains(r#"<rect class="bound""#));
    // The same stepper as a replay's page: its controls and its steps.
    assert!(html.contains(r#"<div id="stepper">"#));
    assert!(html.contains(r#"<script type="application/json" class="steps""#));
    assert!(html.contains("w1 acquires lock `resource-lock`"));
    assert!(html.contains("VIOLATION of mutual_exclusion"));
    // The log records no versions: its writes are told without any.
    assert!(html.contains("resource accepts w2's write with token 2."));
    assert!(!html.contains("v0 becomes v1"));
    // A holding ends where check-log ends the belief; the log does not say the client knew.
    assert!(!html.contains("learns it no longer holds"));
    // Nothing to replay: the command that judged it instead, and no counterfactuals.
    assert!(html.contains("judged by: <code>"));
    assert!(!html.contains("replay: <code>"));
}

#[test]
fn a_page_of_a_log_that_held_says_so_and_exits_0() {
    let page = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-log-tests/no-pause.html");
    std::fs::create_dir_all(page.parent().unwrap()).unwrap();
    let (code, _, err) = check_log(&[
        "tests/check-log/redlock-no-pause.jsonl",
        "--format",
        "html",
        "--out",
        page.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("as logged: no violation"));
    // A log whose overlap is only possible: exit 3, and the page names no certain violation.
    let (code, _, err) = check_log(&[
        "tests/check-log/two-hosts-possible.jsonl",
        "--format",
        "html",
        "--out",
        page.to_str().unwrap(),
    ]);
    assert_eq!(code, 3, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("no violation"));
    assert!(html.contains(
        r#"<p id="verdict" class="bad">as logged: possibly violated within the clock bounds: mutual_exclusion</p>"#
    ));
    assert!(html.contains(r#"<span class="bad">possibly violated</span>"#));
    assert!(
        !html.contains(r#"class="vlabel""#),
        "no certain violation is marked"
    );
    assert!(html.contains("mutual_exclusion  possible"));
}

#[test]
fn html_without_out_and_out_without_html_are_usage_errors_with_exit_2() {
    let (code, out, err) = check_log(&["tests/check-log/redis-py-pause.jsonl", "--format", "html"]);
    assert_eq!(code, 2);
    assert_eq!(out, "");
    assert!(
        err.contains("--format html writes a page: give the file to write with --out FILE"),
        "{err}"
    );
    let (code, _, err) = check_log(&["tests/check-log/redis-py-pause.jsonl", "--out", "x.html"]);
    assert_eq!(code, 2);
    assert!(err.contains("--out is for --format html"), "{err}");
    let (code, _, err) = check_log(&[
        "tests/check-log/redis-py-pause.jsonl",
        "--json",
        "--format",
        "html",
        "--out",
        "x.html",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(!Path::new("x.html").exists());
}

/// `--format text` and `--format json` are the old outputs, byte for byte.
#[test]
fn the_format_flag_keeps_the_text_and_json_outputs_byte_identical() {
    let f = "tests/check-log/redlock-lost-update.jsonl";
    assert_eq!(check_log(&[f]), check_log(&[f, "--format", "text"]));
    assert_eq!(
        check_log(&[f, "--json"]),
        check_log(&[f, "--format", "json"])
    );
}

/// The Redlock run that lost an update, drawn: A's holding ends where its believed validity
/// ran out (told as its belief ending, not as something it learnt), its later write is the
/// stale write, and the versions the log records are told.
#[test]
fn the_redlock_page_ends_a_belief_at_its_validity_and_tells_the_logged_versions() {
    let page = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-log-tests/redlock.html");
    std::fs::create_dir_all(page.parent().unwrap()).unwrap();
    let (code, _, err) = check_log(&[
        "tests/check-log/redlock-lost-update.jsonl",
        "--format",
        "html",
        "--out",
        page.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("VIOLATED: lost_update, stale_write"));
    assert!(html.contains(
        "A-pottery's belief that it holds lock `redlock:counter-lock` ends: its believed validity ran out."
    ));
    assert!(html.contains("counter accepts A-pottery's write"));
    assert!(
        html.contains("v0 becomes v1"),
        "the logged versions are told"
    );
    assert!(
        html.contains(r#"<line class="belief""#),
        "the believed validity is drawn"
    );
}
