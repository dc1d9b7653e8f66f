//! The command line as users meet it: exit codes, located errors for bad input, replay lines,
//! and sweeps whose results do not depend on threads or sharding.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_distlock-sim"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

const GOOD: &str = r#"// t
(
    description: "t",
    duration: "5s",
    nodes: [(name: "redis")],
    clients: [(name: "c", count: 2, algorithm: "set-px-cad", node: "redis", ttl: "1s",
               hold: ("10ms", "20ms"), retry: ("5ms", "10ms"))],
    check: ["mutual_exclusion"],
)
"#;

/// Runs `check` on a model with `from` replaced by `to`; returns (exit code, stderr).
fn bad_model(name: &str, from: &str, to: &str) -> (i32, String) {
    assert!(GOOD.contains(from));
    let p = scratch(name, &GOOD.replace(from, to));
    let o = run(&["check", p.to_str().unwrap()]);
    (o.status.code().unwrap(), text(&o).1)
}

#[test]
fn malformed_models_exit_2_with_file_line_and_column() {
    let cases = [
        // The column points into the offending value.
        (
            "bad-duration.ron",
            "ttl: \"1s\"",
            "ttl: \"1 sec\"",
            ":6:83: ",
            "unknown unit",
        ),
        (
            "unknown-node.ron",
            "node: \"redis\"",
            "node: \"redis2\"",
            ":6:68: ",
            "unknown node \"redis2\"",
        ),
        (
            "huge.ron",
            "count: 2",
            "count: 1000000000",
            ":6:34: ",
            "out of range",
        ),
        (
            "zero-ttl.ron",
            "ttl: \"1s\"",
            "ttl: \"0ms\"",
            ":6:",
            "below 1ms",
        ),
        (
            "syntax.ron",
            "check: [",
            "check: [[",
            ":8:13: ",
            "Expected string",
        ),
    ];
    for (file, from, to, at, what) in cases {
        let (code, err) = bad_model(file, from, to);
        assert_eq!(code, 2, "{file}: {err}");
        assert!(
            err.contains(&format!("{file}{at}")),
            "{file}: location missing in {err:?}"
        );
        assert!(
            err.contains(what),
            "{file}: {err:?} should mention {what:?}"
        );
        assert!(!err.contains("panicked"), "{file}: {err}");
    }
}

#[test]
fn a_missing_model_file_is_bad_input_not_a_panic() {
    let o = run(&["run", "no/such/model.ron"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("no/such/model.ron"));
}

#[test]
fn a_malformed_corpus_line_names_file_and_line() {
    let p = scratch(
        "bad-corpus.txt",
        "# case: x\n# topology: single\n@0 SET k v -> OK\n@5 GET \"k -> \"v\"\n",
    );
    let o = run(&["conformance", p.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad-corpus.txt:4:"), "{err}");
}

#[test]
fn a_wrong_reply_makes_conformance_fail_with_expected_and_got() {
    let p = scratch(
        "wrong.txt",
        "# case: x\n# topology: single\n@0 SET k v -> OK\n@0 GET k -> \"w\"\n",
    );
    let o = run(&["conformance", p.to_str().unwrap()]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        out.contains("expected: \"w\"") && out.contains("got:      \"v\""),
        "{out}"
    );
    assert!(out.ends_with("0 passed, 1 failed, 0 skipped\n"), "{out}");
}

/// Runs a printed command line as a user pasting it would: through a shell, from the
/// repository's root.
fn sh(line: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("sh runs")
}

#[test]
fn a_violation_exits_1_and_prints_a_replay_command_that_runs_as_pasted() {
    let o = run(&[
        "sweep",
        "models/single-px-del-pause.ron",
        "--seeds",
        "0..50",
    ]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("replay: "))
        .expect("replay line");
    let cmd = line.split("replay: ").nth(1).unwrap();
    // Not on PATH here: the line calls the binary by the path it was invoked by.
    let me = env!("CARGO_BIN_EXE_distlock-sim");
    assert!(
        cmd.starts_with(&format!(
            "{me} replay models/single-px-del-pause.ron --seed "
        )),
        "{cmd}"
    );
    // The printed command, pasted into a shell, reproduces the violation.
    let o = sh(cmd);
    let (replay, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(replay.contains("VIOLATED mutual_exclusion"), "{replay}");
    assert!(
        replay.contains("!!! VIOLATION"),
        "the timeline marks the violation"
    );
}

#[test]
fn the_printed_picture_command_runs_as_pasted_and_writes_the_page() {
    let o = run(&["sweep", "single-px-del-pause", "--seeds", "0..5"]);
    let (out, _) = text(&o);
    let line = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("picture: "))
        .expect("picture line");
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("single-px-del-pause-seed0.html");
    let _ = std::fs::remove_file(&page);
    let o = sh(line);
    let (_, err) = text(&o);
    // The verdict of the seed, as without --out; the file is written all the same.
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("wrote single-px-del-pause-seed0.html (seed 0: violated, exit code 1)"),
        "{err}"
    );
    let html = std::fs::read_to_string(&page).expect("page written");
    std::fs::remove_file(&page).unwrap();
    assert!(html.contains("<html"), "not a page");
}

#[test]
fn printed_commands_quote_paths_the_shell_would_split() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli tests with space");
    std::fs::create_dir_all(&dir).unwrap();
    let m = dir.join("it's.ron");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/single-px-del-pause.ron"),
        &m,
    )
    .unwrap();
    let o = run(&["run", m.to_str().unwrap()]);
    let (out, _) = text(&o);
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("replay: "))
        .expect("replay line");
    let o = sh(line);
    assert_eq!(o.status.code(), Some(1), "{line}: {}", text(&o).1);
}

#[test]
fn a_model_that_holds_exits_0() {
    let o = run(&["sweep", "single-px-cad-fencing", "--seeds", "0..20"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).0);
}

/// The JSON lines of a sweep without the fields that measure the machine.
fn sweep_json(args: &[&str]) -> Vec<String> {
    let o = run(args);
    let (out, err) = text(&o);
    assert!(
        o.status.code() == Some(1) || o.status.code() == Some(0),
        "{err}"
    );
    out.lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("each line is JSON");
            if let Some(s) = v.get_mut("summary").and_then(|s| s.as_object_mut()) {
                for k in [
                    "wall_s",
                    "seeds_per_s",
                    "jobs",
                    "shard",
                    "seeds_run",
                    "violating_seeds",
                    "first_violating_seed",
                    "violations_per_property",
                ] {
                    s.remove(k);
                }
            }
            v.to_string()
        })
        .collect()
}

#[test]
fn sweep_results_do_not_depend_on_jobs_and_shards_union_to_the_whole() {
    let m = "models/single-px-get-del-race.ron";
    let one = sweep_json(&["sweep", m, "--seeds", "0..300", "--jobs", "1", "--json"]);
    let two = sweep_json(&["sweep", m, "--seeds", "0..300", "--jobs", "2", "--json"]);
    assert_eq!(one, two);
    assert!(one.len() > 1, "the model should violate in some seeds");
    let mut union: Vec<String> = Vec::new();
    for i in 0..3 {
        let shard = format!("{i}/3");
        let lines = sweep_json(&["sweep", m, "--seeds", "0..300", "--shard", &shard, "--json"]);
        union.extend(lines[..lines.len() - 1].iter().cloned());
    }
    let seed_of = |l: &String| {
        serde_json::from_str::<serde_json::Value>(l).unwrap()["seed"]
            .as_u64()
            .unwrap()
    };
    union.sort_by_key(seed_of);
    assert_eq!(union, one[..one.len() - 1].to_vec());
}

#[test]
fn list_shows_every_bundled_model_with_its_description() {
    let o = run(&["list"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0));
    for m in [
        "single-setnx-no-ttl",
        "single-px-del-pause",
        "single-px-get-del-race",
        "single-px-cad-pause",
        "single-px-cad-fencing",
        "bench-w1",
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(m) && !l.contains("INVALID")),
            "{m} missing in:\n{out}"
        );
    }
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["sweep", "bench-w1", "--seeds", "5..5"][..],
        &["sweep", "bench-w1", "--shard", "3/3"],
        &["frobnicate"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn damaged_model_files_are_refused_without_a_panic() {
    // Every bundled model, cut at many points and with bytes flipped: loading must return a
    // located error or a valid model, never panic.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let bytes = text.as_bytes();
        for i in (0..bytes.len()).step_by(37) {
            let cut = String::from_utf8_lossy(&bytes[..i]).into_owned();
            let mut flipped = bytes.to_vec();
            flipped[i] = match flipped[i] {
                b'"' => b'x',
                b'(' => b'[',
                b'0'..=b'9' => b'-',
                _ => b'"',
            };
            let flipped = String::from_utf8_lossy(&flipped).into_owned();
            for t in [cut, flipped] {
                let r = std::panic::catch_unwind(|| {
                    distlock_sim::scenario::load_str("m", "m.ron", &t).map(|_| ())
                });
                assert!(
                    r.is_ok(),
                    "{}: loading a damaged copy (offset {i}) panicked",
                    p.display()
                );
                n += 1;
            }
        }
    }
    assert!(n > 500);
}

#[test]
fn sweep_report_writes_the_page_of_the_first_violating_seed() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sweep-report");
    let _ = std::fs::remove_dir_all(&dir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "sweep",
            "models/single-px-del-pause.ron",
            "--seeds",
            "0..20",
            "--report",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let page = std::fs::read_to_string(dir.join("single-px-del-pause-seed0.html")).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("mutual_exclusion"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("report: "));
    // A directory that cannot be made is bad input, said before sweeping.
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "sweep",
            "models/single-px-del-pause.ron",
            "--seeds",
            "0..20",
        ])
        .args(["--report", "/proc/no-such-dir/x"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(bad.stdout.is_empty(), "nothing swept");
}

/// `single-px-del-pause`, declaring only one of the two properties it violates.
fn declares_a_subset() -> PathBuf {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/single-px-del-pause.ron"
    ))
    .unwrap()
    .replace(
        r#"expect: violates(["mutual_exclusion", "foreign_unlock"])"#,
        r#"expect: violates(["foreign_unlock"])"#,
    );
    scratch("declares-a-subset.ron", &text)
}

#[test]
fn a_sweep_violating_more_than_declared_is_not_as_declared_and_says_what_differs() {
    let p = declares_a_subset();
    let o = run(&["sweep", p.to_str().unwrap(), "--seeds", "0..20"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(!out.contains("(as declared)"), "{out}");
    assert!(
        out.contains(
            "expected: violates(foreign_unlock) — observed: violates(mutual_exclusion, foreign_unlock) (NOT as declared: observed also mutual_exclusion, not declared)"
        ),
        "{out}"
    );
    let o = run(&["sweep", "single-px-del-pause", "--seeds", "0..20"]);
    assert!(text(&o).0.contains("(as declared)"), "{}", text(&o).0);
}

#[test]
fn a_run_prints_the_declared_verdict_against_its_seed() {
    let p = declares_a_subset();
    let o = run(&["run", p.to_str().unwrap(), "--seed", "0"]);
    let (out, _) = text(&o);
    // The exit code says what happened in the run, not whether it matched the declaration.
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("expected: violates(foreign_unlock) — observed in this seed: violates(mutual_exclusion, foreign_unlock) (NOT as declared: observed also mutual_exclusion, not declared)"),
        "{out}"
    );
    let o = run(&["run", "single-px-del-pause", "--seed", "0"]);
    let (out, _) = text(&o);
    assert!(
        out.contains(
            "observed in this seed: violates(mutual_exclusion, foreign_unlock) (as declared)"
        ),
        "{out}"
    );
    // Seed 1 reaches both hazards the model requires (seed 0 never meets a stale token: it
    // exits 4, vacuous).
    let o = run(&["run", "single-px-cad-fencing", "--seed", "1"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("expected: holds — observed in this seed: holds (as declared)"),
        "{out}"
    );
    let o = run(&["run", "single-px-cad-fencing", "--seed", "0"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o).0);
}

#[test]
fn a_run_stopped_at_its_event_budget_exits_3_and_says_inconclusive() {
    let p = scratch(
        "tiny-budget.ron",
        &GOOD.replace("duration: \"5s\",", "duration: \"5s\", max_events: 50,"),
    );
    let o = run(&["run", p.to_str().unwrap(), "--seed", "0"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(
        out.contains("inconclusive: event budget of 50 events reached at t=")
            && out.contains("before the model's duration (5s)"),
        "{out}"
    );
    assert!(
        out.contains("held     mutual_exclusion (as far as the run went: inconclusive)"),
        "{out}"
    );

    let o = run(&["sweep", p.to_str().unwrap(), "--seeds", "0..4"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(
        out.contains("mutual_exclusion   not decided: no seed ran to its end (4 inconclusive"),
        "{out}"
    );
    assert!(
        out.contains("inconclusive: 4 of 4 seeds stopped before the model's duration (first: seed 0, event budget of 50 events reached at t="),
        "{out}"
    );
    let json = run(&["sweep", p.to_str().unwrap(), "--seeds", "0..4", "--json"]);
    assert_eq!(json.status.code(), Some(3));
    let summary = text(&json).0;
    assert!(summary.contains("\"inconclusive_seeds\":4"), "{summary}");
    assert!(
        summary.contains("\"outcome\":\"inconclusive\""),
        "{summary}"
    );
}

#[test]
fn a_violation_wins_over_an_inconclusive_run() {
    // Enough budget to reach the first violation of single-px-del-pause's seed 0 (43.3 s),
    // not its end (2,393 events since the node's cron ticks only where a key is due).
    let text_ = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/single-px-del-pause.ron"
    ))
    .unwrap()
    .replace("duration: \"60s\",", "duration: \"60s\", max_events: 2000,");
    let p = scratch("violates-then-stops.ron", &text_);
    let o = run(&["run", p.to_str().unwrap(), "--seed", "0"]);
    let (out, _) = text(&o);
    assert!(out.contains("VIOLATED mutual_exclusion"), "{out}");
    assert!(
        out.contains("inconclusive: event budget of 2000 events"),
        "{out}"
    );
    assert_eq!(o.status.code(), Some(1), "{out}");
}

/// A fencing model whose pauses are too short to outlive the key: it holds, but it never
/// went through the danger it claims to survive.
const VACUOUS: &str = r#"// v
(
    description: "fencing, but the pauses are shorter than the TTL",
    duration: "20s",
    nodes: [(name: "redis")],
    resource: (name: "db", fencing: true),
    clients: [(name: "c", count: 2, algorithm: "set-px-cad-fencing", node: "redis",
               ttl: "10s", hold: ("100ms", "300ms"), retry: ("50ms", "100ms"))],
    random_faults: [pause(targets: ["c1", "c2"], every: ("2s", "4s"), duration: ("10ms", "50ms"))],
    check: ["resource_safety"],
    expect: holds,
    witness: ["pause_outlived_key", "stale_token_rejected"],
)
"#;

#[test]
fn a_safe_sweep_that_never_reaches_its_required_hazard_is_vacuous_and_exits_4() {
    let p = scratch("vacuous.ron", VACUOUS);
    let o = run(&["sweep", p.to_str().unwrap(), "--seeds", "0..30"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(4), "{out}{err}");
    assert!(
        out.contains("required witnesses: pause_outlived_key (NOT reached), stale_token_rejected (NOT reached)"),
        "{out}"
    );
    assert!(
        out.contains("VACUOUS: no seed reached pause_outlived_key, stale_token_rejected"),
        "{out}"
    );
    let o = run(&["sweep", p.to_str().unwrap(), "--seeds", "0..30", "--json"]);
    let last = text(&o).0.lines().last().unwrap().to_string();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(v["summary"]["vacuous"], serde_json::json!(true));
    assert_eq!(
        v["summary"]["witness_missing"],
        serde_json::json!(["pause_outlived_key", "stale_token_rejected"])
    );
    // `run` judges its one seed the same way.
    let o = run(&["run", p.to_str().unwrap(), "--seed", "3"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(4), "{out}");
    assert!(out.contains("VACUOUS: this seed never reached"), "{out}");
}

#[test]
fn the_same_model_with_pauses_past_the_ttl_reaches_its_hazards_and_exits_0() {
    let p = scratch(
        "not-vacuous.ron",
        &VACUOUS.replace(
            r#"every: ("2s", "4s"), duration: ("10ms", "50ms")"#,
            r#"every: ("2s", "4s"), duration: ("11s", "12s")"#,
        ),
    );
    let o = run(&["sweep", p.to_str().unwrap(), "--seeds", "0..30", "--json"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let w = &v["summary"]["witnesses"];
    assert!(
        w["pause_outlived_key"]["seeds"].as_u64().unwrap() > 0,
        "{w}"
    );
    assert!(
        w["stale_token_rejected"]["seeds"].as_u64().unwrap() > 0,
        "{w}"
    );
    assert_eq!(v["summary"]["vacuous"], serde_json::json!(false));
}

#[test]
fn a_violating_sweep_exits_1_even_when_a_required_hazard_was_not_reached() {
    let p = scratch(
        "violating-unwitnessed.ron",
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/models/single-px-del-pause.ron"
        ))
        .unwrap()
        .replace(
            "    expect:",
            "    witness: [\"restart_lost_keys\"],\n    expect:",
        ),
    );
    let o = run(&["sweep", p.to_str().unwrap(), "--seeds", "0..20"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(!out.contains("VACUOUS"), "{out}");
}

#[test]
fn an_unknown_hazard_is_named_with_a_suggestion_and_exits_2() {
    let (code, err) = bad_model(
        "bad-witness.ron",
        "check: [\"mutual_exclusion\"],",
        "check: [\"mutual_exclusion\"], witness: [\"pause_outlived_keys\"],",
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("unknown hazard \"pause_outlived_keys\""),
        "{err}"
    );
    assert!(
        err.contains("did you mean \"pause_outlived_key\"?"),
        "{err}"
    );
    assert!(err.contains("known: pause_outlived_key, "), "{err}");
    let (code, err) = bad_model(
        "twice-witness.ron",
        "check: [\"mutual_exclusion\"],",
        "check: [\"mutual_exclusion\"], witness: [\"holder_crashed\", \"holder_crashed\"],",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("witness names holder_crashed twice"), "{err}");
}

#[test]
fn an_unknown_model_name_says_what_was_searched_and_suggests_the_nearest_bundled_one() {
    let o = run(&["run", "single-px-del-paws"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("did you mean \"single-px-del-pause\"?"),
        "{err}"
    );
    assert!(err.contains("bundled models in models/"), "{err}");
    // The file was never opened: no made-up position.
    assert!(!err.contains(":1:1"), "{err}");
    // A path that names no file gets the nearest bundled file.
    let o = run(&["sweep", "models/single-px-del-paws.ron"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no such model file (did you mean models/single-px-del-pause.ron?)"),
        "{err}"
    );
    // Nothing near: no suggestion, but still what was searched.
    let (_, err) = text(&run(&["check", "zzzzzzzz"]));
    assert!(
        !err.contains("did you mean") && err.contains("bundled models"),
        "{err}"
    );
}

#[test]
fn a_misspelt_property_or_algorithm_is_named_with_the_nearest_known_one() {
    let (code, err) = bad_model("prop.ron", "\"mutual_exclusion\"", "\"mutual_exclution\"");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did you mean \"mutual_exclusion\"?"), "{err}");
    let (code, err) = bad_model("alg.ron", "\"set-px-cad\"", "\"set-px-cda\"");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did you mean \"set-px-cad\"?"), "{err}");
    assert!(err.contains("prop.ron") || err.contains("alg.ron"), "{err}");
}

#[test]
fn every_subcommand_with_jobs_refuses_zero_and_too_many_the_same_way() {
    for cmd in [
        &["sweep", "single-px-del-pause"][..],
        &["hunt", "single-px-del-pause"],
        &["pitfalls"],
    ] {
        for bad in ["0", "257", "x"] {
            let mut args = cmd.to_vec();
            args.extend(["--jobs", bad]);
            let o = run(&args);
            let (_, err) = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("'--jobs <JOBS>'"), "{args:?}: {err}");
        }
    }
}

#[test]
fn a_window_with_a_format_that_shows_the_whole_run_is_refused_not_ignored() {
    for format in ["text", "json", "chrome"] {
        let o = run(&[
            "replay",
            "single-px-del-pause",
            "--seed",
            "0",
            "--format",
            format,
            "--window",
            "30s..45s",
        ]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{format}: {err}");
        assert!(
            err.contains("--window applies to --format svg and html"),
            "{err}"
        );
        assert!(out.is_empty(), "nothing printed: {out}");
    }
    let o = run(&[
        "replay",
        "single-px-del-pause",
        "--seed",
        "0",
        "--format",
        "svg",
        "--window",
        "30s..45s",
    ]);
    assert_eq!(o.status.code(), Some(1), "svg takes it: {}", text(&o).1);
}

#[test]
fn every_model_argument_and_seed_option_has_help_text() {
    for cmd in ["run", "sweep", "replay", "hunt", "minimize", "check"] {
        let o = run(&[cmd, "--help"]);
        let (help, _) = text(&o);
        assert_eq!(o.status.code(), Some(0));
        assert!(
            help.contains("Model file, or the name of a bundled model"),
            "{cmd}: {help}"
        );
        // The option's own line, or the next one in clap's long layout, says what it is.
        let lines: Vec<&str> = help.lines().collect();
        if let Some(i) = lines
            .iter()
            .position(|l| l.trim_start().starts_with("--seed <"))
        {
            let said = format!("{} {}", lines[i], lines.get(i + 1).unwrap_or(&""));
            assert!(
                said.contains("seed to")
                    || said.contains("seed draws")
                    || said.contains("The seed"),
                "{cmd}: {said}"
            );
        } else {
            assert!(
                !["run", "replay", "minimize"].contains(&cmd),
                "{cmd} has --seed"
            );
        }
    }
}

#[test]
fn list_puts_every_description_in_one_column_however_long_the_name() {
    let (out, _) = text(&run(&["list"]));
    let columns: BTreeSet<usize> = out
        .lines()
        .map(|l| {
            let name_end = l.find(' ').unwrap_or(0);
            name_end + l[name_end..].len() - l[name_end..].trim_start().len()
        })
        .collect();
    assert_eq!(
        columns.len(),
        1,
        "descriptions start at columns {columns:?}:\n{out}"
    );
    // The longest name is followed by the two spaces of the gutter, like every other.
    let longest = out
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split(' ').next().unwrap_or(""))
        .max_by_key(|n| n.len())
        .expect("list names models");
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("{longest}  "))
                && !l.starts_with(&format!("{longest}   "))),
        "{longest}:\n{out}"
    );
}

#[test]
fn pitfalls_out_creates_a_missing_folder_and_reports_progress() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pitfalls-out/new/folder");
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    let file = dir.join("guide.md");
    let o = run(&["pitfalls", "--out", file.to_str().unwrap(), "--jobs", "2"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("pitfalls: [1/"), "progress: {err}");
    assert!(
        err.contains(&format!("pitfalls: wrote {}", file.display())),
        "{err}"
    );
    let guide = std::fs::read_to_string(&file).unwrap();
    assert!(guide.starts_with("# The pitfall catalogue"));
    assert!(dir.join("pitfalls/single-px-del-pause.svg").is_file());
    // A folder that cannot be made is bad input at once, not after the sweeps.
    let blocker = scratch("not-a-dir", "x");
    let o = run(&[
        "pitfalls",
        "--out",
        &format!("{}/sub/x.md", blocker.display()),
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        !err.contains("pitfalls: [1/"),
        "refused before any work: {err}"
    );
}

#[test]
fn docs_models_and_sources_name_nothing_a_fresh_clone_lacks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = vec![root.join("README.md")];
    let mut stack = vec![
        root.join("docs"),
        root.join("models"),
        root.join("src"),
        root.join("benches"),
    ];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .extension()
                .is_some_and(|x| x == "md" || x == "ron" || x == "rs")
            {
                files.push(p);
            }
        }
    }
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let numbered_pitfall = line.match_indices("pitfall").any(|(i, _)| {
                let rest = &line[i + "pitfall".len()..];
                let rest = rest.strip_prefix('s').unwrap_or(rest);
                rest.strip_prefix(' ')
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            });
            if numbered_pitfall
                || [
                    "../shared",
                    "/work/shared",
                    "redis-semantics",
                    "§7",
                    "design.md",
                ]
                .iter()
                .any(|s| line.contains(s))
            {
                found.push(format!("{}:{}: {line}", f.display(), n + 1));
            }
        }
    }
    // This file's own list of what to look for is the one exception.
    found.retain(|l| !l.contains("tests/cli.rs"));
    assert!(
        found.is_empty(),
        "references to files outside the repository:\n{}",
        found.join("\n")
    );
}

/// A JSON line without the fields that measure the machine (wall time, rate, workers).
fn without_wall_time(line: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
    if let Some(s) = v.get_mut("summary").and_then(|s| s.as_object_mut()) {
        for k in ["wall_s", "seeds_per_s", "jobs"] {
            assert!(s.remove(k).is_some(), "summary has {k}");
        }
    }
    v
}

#[test]
fn four_shards_merged_give_exactly_the_summary_of_the_unsharded_sweep() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("merge-4");
    std::fs::create_dir_all(&dir).unwrap();
    for m in ["single-px-del-pause", "redlock-clock-jump"] {
        let whole = run(&["sweep", m, "--seeds", "0..120", "--json"]);
        let mut files = Vec::new();
        for i in 0..4 {
            let o = run(&[
                "sweep",
                m,
                "--seeds",
                "0..120",
                "--shard",
                &format!("{i}/4"),
                "--json",
            ]);
            assert!(o.status.code() == Some(0) || o.status.code() == Some(1));
            let f = dir.join(format!("{m}-{i}.jsonl"));
            std::fs::write(&f, &o.stdout).unwrap();
            files.push(f.display().to_string());
        }
        // Any order of the files.
        files.reverse();
        let mut args = vec!["merge", "--json"];
        args.extend(files.iter().map(String::as_str));
        let merged = run(&args);
        assert_eq!(
            merged.status.code(),
            whole.status.code(),
            "{}",
            text(&merged).1
        );
        let lines = |o: &Output| -> Vec<serde_json::Value> {
            text(o).0.lines().map(without_wall_time).collect()
        };
        let (w, g) = (lines(&whole), lines(&merged));
        assert!(w.len() > 1, "{m} should violate in some seeds");
        assert_eq!(w, g, "{m}: merged JSON differs from the whole sweep");
        // The text summary too, but for the wall-time figures of its first line.
        let mut args = vec!["merge"];
        args.extend(files.iter().map(String::as_str));
        let merged = run(&args);
        let whole = run(&["sweep", m, "--seeds", "0..120"]);
        let body = |o: &Output| text(o).0.lines().skip(1).collect::<Vec<_>>().join("\n");
        assert_eq!(body(&whole), body(&merged), "{m}");
        assert!(
            text(&merged)
                .0
                .starts_with(&format!("model {m}: 120 seeds (0..120) in "))
        );
    }
}

#[test]
fn merge_refuses_a_missing_shard_a_duplicate_and_an_unsharded_output() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("merge-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, args: &[&str]| -> String {
        let f = dir.join(name);
        std::fs::write(&f, run(args).stdout).unwrap();
        f.display().to_string()
    };
    let m = "single-px-del-pause";
    let s0 = write(
        "s0",
        &["sweep", m, "--seeds", "0..20", "--shard", "0/2", "--json"],
    );
    let whole = write("whole", &["sweep", m, "--seeds", "0..20", "--json"]);
    for (args, says) in [
        (vec![s0.as_str()], "1 of 2 shards given; missing 1/2"),
        (vec![s0.as_str(), s0.as_str()], "shard 0/2 given twice"),
        (vec![whole.as_str()], "run the sweep with --shard I/N"),
    ] {
        let mut a = vec!["merge"];
        a.extend(args);
        let o = run(&a);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
    let junk = scratch("junk.jsonl", "{\"seed\": 1}\nnot json\n");
    let o = run(&["merge", junk.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("junk.jsonl:2: not a line of `sweep --json` output"),
        "{err}"
    );
}

#[test]
fn merge_refuses_a_shard_count_its_files_cannot_hold_tampered_totals_and_another_model() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("merge-hostile");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("m.ron");
    let original = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/single-px-del-pause.ron"),
    )
    .unwrap();
    std::fs::write(&model, &original).unwrap();
    let m = model.to_str().unwrap();
    let shard = |i: &str| -> String {
        let o = run(&["sweep", m, "--seeds", "0..40", "--shard", i, "--json"]);
        String::from_utf8(o.stdout).unwrap()
    };
    let (s0, s1) = (shard("0/2"), shard("1/2"));
    let summary_of = |text: &str| -> serde_json::Value {
        let line = text.lines().find(|l| l.contains("\"summary\"")).unwrap();
        serde_json::from_str(line).unwrap()
    };
    let put = |name: &str, v: &serde_json::Value| -> String {
        let f = dir.join(name);
        std::fs::write(&f, format!("{v}\n")).unwrap();
        f.display().to_string()
    };
    let edited = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = summary_of(&s0);
        f(&mut v["summary"]);
        v
    };
    let one = put("s1", &summary_of(&s1));
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (
            edited(&|s| s["shard"] = serde_json::json!([0, 100_000_000])),
            "missing 1/100000000, 2/100000000, 3/100000000, 4/100000000, 5/100000000 and 99999994 more",
        ),
        (
            edited(&|s| s["partial"]["violating_seeds"] = serde_json::json!(5246)),
            "violating seeds 5246 > seeds run 20",
        ),
        (
            edited(&|s| s["partial"]["seeds_run"] = serde_json::json!(19)),
            "19 seeds run, but its share of seeds 0..40 is 20",
        ),
        (
            edited(&|s| s["partial"]["events"] = serde_json::json!(u64::MAX)),
            "events add up past 2^64",
        ),
        (
            edited(&|s| s["partial"]["model_sha1"] = serde_json::json!("0000")),
            "is not the first file's",
        ),
    ];
    for (v, says) in cases {
        let f = put("s0", &v);
        // The shard claiming 10^8 shards alone (with shard 1/2 beside it the counts differ).
        let o = if says.contains("missing") {
            run(&["merge", &f])
        } else {
            run(&["merge", &f, &one])
        };
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{says}: {err}");
        assert!(err.contains(says), "{says}: {err}");
        assert!(err.len() < 600, "a short message: {err}");
    }
    // The same path, the text edited since the shards ran: refused, naming both hashes.
    let zero = put("s0", &summary_of(&s0));
    std::fs::write(
        &model,
        original.replace("duration: \"60s\"", "duration: \"30s\""),
    )
    .unwrap();
    let o = run(&["merge", &zero, &one]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not the model the shards ran"), "{err}");
    std::fs::write(&model, &original).unwrap();
    assert_eq!(run(&["merge", &zero, &one]).status.code(), Some(1));
    // A shard from before the hash: merged, the name checked instead.
    let mut old = summary_of(&s0);
    old["summary"]["partial"]
        .as_object_mut()
        .unwrap()
        .remove("model_sha1");
    let mut old1 = summary_of(&s1);
    old1["summary"]["partial"]
        .as_object_mut()
        .unwrap()
        .remove("model_sha1");
    let (a, b) = (put("old0", &old), put("old1", &old1));
    assert_eq!(run(&["merge", &a, &b]).status.code(), Some(1));
    let o = run(&["merge", &a, &b, "--model", "single-px-cad-pause"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("but the shards ran model m"), "{err}");
}

/// The lines of docs/scale-out.md from the one that starts with `first` to the closing fence.
fn doc_block(first: &str) -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scale-out.md"))
            .unwrap();
    let start = doc
        .find(first)
        .unwrap_or_else(|| panic!("{first} in docs/scale-out.md"));
    let end = doc[start..].find("\n```").unwrap();
    doc[start..start + end].to_string()
}

#[test]
fn the_slurm_and_kubernetes_recipes_run_as_written_and_merge_to_the_whole_sweep() {
    let me = Path::new(env!("CARGO_BIN_EXE_distlock-sim"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scale-out");
    std::fs::create_dir_all(&dir).unwrap();
    // Fewer seeds than the recipes run; the scripts are as written otherwise. The binary is
    // where the recipes expect it: target/release (Slurm) and on PATH (the image).
    let sbatch = doc_block("#!/bin/bash")
        .replace("0..1000000", "0..60")
        .replace("./target/release/distlock-sim", me.to_str().unwrap());
    let k8s = doc_block("              distlock-sim sweep").replace("0..1000000", "0..60");
    let path = format!(
        "{}:{}",
        me.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    for (name, script, var) in [
        ("slurm", sbatch, "SLURM_ARRAY_TASK_ID"),
        ("k8s", k8s, "JOB_COMPLETION_INDEX"),
    ] {
        let mut files = Vec::new();
        for i in 0..4 {
            let o = Command::new("bash")
                .arg("-c")
                .arg(&script)
                .env(var, i.to_string())
                .env("SLURM_CPUS_PER_TASK", "1")
                .env("PATH", &path)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(0), "{name} {i}: {}", text(&o).1);
            let f = dir.join(format!("{name}-{i}.jsonl"));
            std::fs::write(&f, &o.stdout).unwrap();
            files.push(f.display().to_string());
        }
        let mut args = vec!["merge", "--json"];
        args.extend(files.iter().map(String::as_str));
        let merged = run(&args);
        // The whole sweep run the way the shards were (the replay lines name the program as
        // invoked: a path for Slurm, `distlock-sim` from PATH in the image).
        let program = if name == "k8s" {
            "distlock-sim".to_string()
        } else {
            me.display().to_string()
        };
        let whole = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "{program} sweep models/single-px-del-pause.ron --seeds 0..60 --json"
            ))
            .env("PATH", &path)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let lines = |o: &Output| -> Vec<serde_json::Value> {
            text(o).0.lines().map(without_wall_time).collect()
        };
        assert!(
            lines(&merged) == lines(&whole),
            "{name}: merged output differs from the whole sweep"
        );
        assert_eq!(
            merged.status.code(),
            Some(1),
            "the verdict is merge's exit code"
        );
    }
}

/// The example binary `examples/check_then_write.rs`: a user crate's `main` that registers its
/// own algorithm with `cli::main_with`. `cargo test` builds examples; a run of this test file
/// alone builds it here.
fn example_bin() -> PathBuf {
    let me = Path::new(env!("CARGO_BIN_EXE_distlock-sim"));
    let profile_dir = me.parent().unwrap();
    let exe = profile_dir
        .join("examples")
        .join(format!("check_then_write{}", std::env::consts::EXE_SUFFIX));
    if !exe.is_file() {
        let mut c = Command::new(env!("CARGO"));
        c.args(["build", "--quiet", "--example", "check_then_write"])
            .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap())
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            c.arg("--release");
        }
        assert!(c.status().unwrap().success(), "building the example");
    }
    exe
}

#[test]
fn a_registered_algorithm_gets_the_whole_cli_sweep_replay_as_html_and_minimize() {
    let exe = example_bin();
    let run_ex = |args: &[&str]| -> Output {
        Command::new(&exe)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    let m = "examples/check-then-write.ron";
    // The stock binary does not know the name, and says where it is written.
    let o = run(&["check", m]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("check-then-write.ron:")
            && err.contains("unknown algorithm \"check-then-write\""),
        "{err}"
    );
    // Its own binary runs it: a sweep finds the narrow window the check leaves.
    let o = run_ex(&["sweep", m, "--seeds", "3640..3650"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("resource_safety    VIOLATED in 1 of 10 seeds (first: seed 3646)"),
        "{out}"
    );
    // The printed picture line runs as pasted: the example's own binary, as invoked.
    let picture = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("picture: "))
        .expect("picture line");
    assert!(picture.starts_with(exe.to_str().unwrap()), "{picture}");
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("check-then-write-seed3646.html");
    let o = sh(picture);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o).1);
    let html = std::fs::read_to_string(&page).unwrap();
    std::fs::remove_file(&page).unwrap();
    assert!(html.contains("check-then-write") && html.contains("resource_safety"));
    // Minimised to a model that still names the algorithm and still fails.
    let min = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-then-write-min.ron");
    let o = run_ex(&[
        "minimize",
        m,
        "--seed",
        "3646",
        "--out",
        min.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        out.starts_with("resource_safety at seed 3646: 9 faults before"),
        "{out}"
    );
    let o = run_ex(&["run", min.to_str().unwrap(), "--seed", "3646"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o).0);
    // A name that is a built-in's is refused.
    let o = run_ex(&["list"]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn a_registered_algorithm_reads_its_own_options_and_refuses_bad_ones_where_they_are_written() {
    let exe = example_bin();
    let model = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/check-then-write.ron"),
    )
    .unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let with = |name: &str, options: &str| -> PathBuf {
        let text = model.replace(
            "request_timeout: \"300ms\",",
            &format!("request_timeout: \"300ms\",\n        {options}"),
        );
        assert_ne!(text, model, "the option spliced in");
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let sweep = |m: &Path| -> Output {
        Command::new(&exe)
            .args(["sweep", m.to_str().unwrap(), "--seeds", "0..40"])
            .output()
            .unwrap()
    };
    let violated = |o: &Output| -> String {
        text(o)
            .0
            .lines()
            .find(|l| l.trim_start().starts_with("resource_safety"))
            .unwrap_or_default()
            .to_string()
    };
    // The default is the option's own default (check: true): what the model says without it.
    let stock = sweep(Path::new(&format!(
        "{}/examples/check-then-write.ron",
        env!("CARGO_MANIFEST_DIR")
    )));
    let checked = sweep(&with("ctw-check.ron", "options: (check: true),"));
    assert_eq!(violated(&stock), violated(&checked));
    // Without the check, the pauses past the TTL break the resource in many more seeds.
    let unchecked = sweep(&with("ctw-nocheck.ron", "options: (check: false),"));
    assert_eq!(unchecked.status.code(), Some(1), "{}", text(&unchecked).1);
    assert_ne!(violated(&stock), violated(&unchecked));
    // A field the algorithm's type does not take: exit 2 at the file and line of `options`.
    let bad = with("ctw-bad.ron", "options: (chek: false),");
    let o = sweep(&bad);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ctw-bad.ron:21:")
            && err.contains("options of algorithm \"check-then-write\"")
            && err.contains("chek"),
        "{err}"
    );
    // A built-in algorithm has no `options`: refused where it is written.
    let builtin = dir.join("builtin-options.ron");
    std::fs::write(
        &builtin,
        "(duration: \"1s\", nodes: [(name: \"r\")], clients: [(name: \"c\", \
         algorithm: \"set-px-cad\", node: \"r\", ttl: \"1s\", hold: \"10ms\", \
         retry: \"10ms\",\n options: (check: false))])",
    )
    .unwrap();
    let o = run(&["check", builtin.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("builtin-options.ron:2:") && err.contains("`options` is not read by"),
        "{err}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_to_stdout_is_exit_2_with_the_os_error_and_a_closed_pipe_ends_quietly() {
    for args in [
        vec!["list"],
        vec![
            "sweep",
            "single-px-del-pause",
            "--seeds",
            "0..20",
            "--shard",
            "0/2",
            "--json",
        ],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = bin().args(&args).stdout(full).output().unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("standard output: No space left on device"),
            "{args:?}: {err}"
        );
    }
    // A reader that leaves (`| head -1`): no message, the shell's status for SIGPIPE.
    let mut child = bin()
        .args([
            "sweep",
            "single-px-del-pause",
            "--seeds",
            "0..2000",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(141), "{err}");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn explore_refuses_runs_without_depth_and_faults_with_depth_as_conflicting_flags() {
    for (args, says) in [
        (vec!["--runs", "5"], "--depth"),
        (vec!["--faults", "1", "--depth", "1"], "cannot be used with"),
    ] {
        let mut a = vec!["explore", "single-px-del-pause"];
        a.extend(args);
        let o = run(&a);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn an_output_directory_in_the_way_of_a_file_is_named_as_a_file_not_a_directory() {
    let f = scratch("in-the-way", "");
    let f = f.to_str().unwrap();
    for (args, says) in [
        (
            vec!["site", "--out", f],
            "in-the-way: a file, not a directory",
        ),
        (
            vec!["site", "--out", &format!("{f}/sub")],
            "in-the-way is a file, not a directory",
        ),
        (
            vec![
                "sweep",
                "single-px-del-pause",
                "--seeds",
                "0..5",
                "--report",
                f,
            ],
            "a file, not a directory",
        ),
    ] {
        let o = run(&args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("File exists"), "{args:?}: {err}");
    }
}

#[test]
fn a_multibyte_char_literal_in_a_variant_is_left_to_the_model_parser_to_locate() {
    let model = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/classic-fencing-tokens-33-34.ron"),
    )
    .unwrap()
    .replace(
        "            name: \"fencing tokens\",\n",
        "            name: \"fencing tokens\",\n            check: ['é'],\n",
    );
    let line = 1 + model.lines().position(|l| l.contains("['é']")).unwrap();
    let p = scratch("char-literal.ron", &model);
    let o = run(&["check", p.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("char-literal.ron:{line}:")), "{err}");
    assert!(err.contains("in variant \"fencing tokens\""), "{err}");
    assert!(
        !err.contains("unbalanced") && !err.contains("unclosed"),
        "{err}"
    );
}

/// README.md's sample output is the program's own: the main command it gives, run again, prints
/// what the README shows but for the two figures the host clock measures (wall time and seeds
/// per second) and the worker count, which the README's run had as 2.
#[test]
fn the_readmes_sample_sweep_is_the_programs_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme
        .find("## What the sweep prints\n\n```\n")
        .expect("the sample's heading")
        + "## What the sweep prints\n\n```\n".len();
    let len = readme[start..].find("\n```").unwrap();
    let sample = &readme[start..start + len + 1];
    let o = bin()
        .args([
            "sweep",
            "models/single-px-cad-pause.ron",
            "--seeds",
            "0..1000",
            "--jobs",
            "2",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout)
        .replace(env!("CARGO_BIN_EXE_distlock-sim"), "distlock-sim");
    let mask = |s: &str| -> String {
        s.lines()
            .map(|l| match l.split_once(" in ") {
                Some((head, rest)) if l.starts_with("model ") && rest.contains(" wall, ") => {
                    let jobs = rest.rsplit_once(", jobs ").map_or("", |(_, j)| j);
                    format!("{head} in <wall>, jobs {jobs}\n")
                }
                _ => format!("{l}\n"),
            })
            .collect()
    };
    assert_eq!(
        mask(sample),
        mask(&out),
        "README.md's sample differs from the program's output"
    );
    // The README's example seeds show what it says they show: the sample's replay line (a
    // violation, at the time the sample gives) and the picture's seed of single-px-del-pause.
    let replay = sample
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: distlock-sim "))
        .expect("the sample's replay line");
    let args: Vec<&str> = replay.split_whitespace().collect();
    let o = bin().args(&args).current_dir(root).output().unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{replay}: {said}");
    assert!(
        said.contains("resource_safety at 46.979342s"),
        "{replay} does not show the sample's violation"
    );
    assert!(readme.contains("`replay models/single-px-del-pause.ron\n--seed 0 --format svg`"));
    let o = bin()
        .args(["run", "models/single-px-del-pause.ron", "--seed", "0"])
        .current_dir(root)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "the README's picture seed of single-px-del-pause shows no violation"
    );
}

#[test]
fn a_variant_runs_by_name_its_replay_line_carries_it_and_an_unknown_one_exits_2_naming_them() {
    // single-px-del-pause's unlock script: the foreign unlock is gone, the pause's two
    // holders are not.
    let o = run(&[
        "sweep",
        "single-px-del-pause",
        "--variant",
        "compare-and-delete unlock",
        "--seeds",
        "0..50",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("foreign_unlock     held in all 50 seeds"),
        "{out}"
    );
    let cmd = out
        .lines()
        .find_map(|l| l.split("replay: ").nth(1))
        .expect("replay line");
    assert!(
        cmd.ends_with(" --variant 'compare-and-delete unlock'"),
        "{cmd}"
    );
    let o = sh(cmd);
    let (replay, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(replay.contains("\nheld     foreign_unlock\n"), "{replay}");
    assert!(
        replay.contains("expected: violates(mutual_exclusion) —"),
        "the variant's own expectation: {replay}"
    );
    // A name the model does not declare: bad input, naming the ones it does.
    let o = run(&["run", "single-px-del-pause", "--variant", "nope"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            r#"no variant "nope" (it declares "compare-and-delete unlock", "fencing tokens")"#
        ),
        "{err}"
    );
}
