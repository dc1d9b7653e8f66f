//! `--set NAME.FIELD=VALUE` on run, replay, sweep, explore and search: an override changes
//! the model as the same edit to the file would, its replay lines carry it, and bad ones are
//! refused (exit 2) naming the `--set` and the nearest valid name.

use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_distlock-sim"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const MODEL: &str = "single-px-cad-pause";
const HOLD: &str = r#"c.hold=("2s","4s")"#;

/// The first line starting with `prefix`.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{text}"))
}

#[test]
fn a_ttl_longer_than_every_pause_turns_the_violating_model_into_a_holding_one() {
    let as_written = run(&["sweep", MODEL, "--seeds", "0..200"]);
    assert_eq!(as_written.status.code(), Some(1), "{}", stdout(&as_written));
    // Pauses are 11-15 s; a 60 s TTL outlives each of them.
    let longer = run(&["sweep", MODEL, "--seeds", "0..200", "--set", "c.ttl=60s"]);
    let out = stdout(&longer);
    assert_eq!(longer.status.code(), Some(0), "{out}{}", stderr(&longer));
    assert!(
        out.contains("resource_safety    held in all 200 seeds"),
        "{out}"
    );
}

#[test]
fn explore_and_search_explore_the_overridden_model() {
    let e = run(&["explore", MODEL, "--faults", "1"]);
    assert_eq!(e.status.code(), Some(1), "{}", stdout(&e));
    let e = run(&["explore", MODEL, "--faults", "1", "--set", "c.ttl=60s"]);
    assert_eq!(e.status.code(), Some(0), "{}{}", stdout(&e), stderr(&e));
    assert!(stdout(&e).contains("no violation with ≤ 1 faults"));
    let s = run(&["search", MODEL, "--budget", "300"]);
    assert_eq!(s.status.code(), Some(1), "{}", stdout(&s));
    let s = run(&["search", MODEL, "--budget", "300", "--set", "c.ttl=60s"]);
    assert_eq!(s.status.code(), Some(0), "{}{}", stdout(&s), stderr(&s));
    // explore's scripted model is the overridden text: its TTL is the one set.
    let e = run(&["explore", MODEL, "--faults", "1", "--set", "c.ttl=9s"]);
    assert!(stdout(&e).contains(r#"ttl: "9s""#), "{}", stdout(&e));
}

#[test]
fn the_replay_line_of_an_overridden_sweep_carries_its_set_flags_and_reproduces_the_seed() {
    let sweep = run(&[
        "sweep",
        MODEL,
        "--seeds",
        "0..200",
        "--set",
        HOLD,
        "--set",
        "duration=30s",
    ]);
    let out = stdout(&sweep);
    assert_eq!(sweep.status.code(), Some(1), "{out}");
    let replay = line(&out, "replay: ")
        .trim_start_matches("replay: ")
        .to_string();
    assert!(
        replay.ends_with(r#" --set 'c.hold=("2s","4s")' --set duration=30s"#),
        "{replay}"
    );
    let seed: &str = replay
        .split(" --seed ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .expect("a seed");
    // As pasted into a shell.
    let pasted = Command::new("sh")
        .arg("-c")
        .arg(format!("{replay} --messages none"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("sh runs");
    assert_eq!(pasted.status.code(), Some(1), "{}", stderr(&pasted));
    let direct = run(&[
        "run",
        MODEL,
        "--seed",
        seed,
        "--set",
        HOLD,
        "--set",
        "duration=30s",
    ]);
    let verdict = line(&stdout(&direct), "VIOLATED").to_string();
    assert_eq!(line(&stdout(&pasted), "VIOLATED"), verdict);
    // And the flags matter: the model as written violates this seed at another time.
    let plain = run(&["run", MODEL, "--seed", seed]);
    assert_ne!(line(&stdout(&plain), "VIOLATED"), verdict);
}

#[test]
fn set_duration_changes_the_simulated_time_of_a_run() {
    let o = run(&["run", MODEL, "--seed", "9", "--set", "duration=5s"]);
    let out = stdout(&o);
    assert!(out.contains("5.000000s simulated"), "{out}");
    assert_eq!(o.status.code(), Some(0), "{out}");
}

#[test]
fn a_set_on_a_node_or_a_block_absent_from_the_file_is_added_there() {
    let o = run(&[
        "run",
        MODEL,
        "--seed",
        "9",
        "--set",
        "redis.priority=3",
        "--set",
        r#"network.latency=("1ms","3ms")"#,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let o = run(&["run", MODEL, "--set", "network.loss_ppm=-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("--set network.loss_ppm=-1: "),
        "{}",
        stderr(&o)
    );
}

/// Exit 2, and what stderr says.
fn refused(args: &[&str]) -> String {
    let o = run(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    stderr(&o)
}

#[test]
fn an_unknown_field_exits_2_naming_the_set_the_valid_fields_and_the_nearest() {
    let e = refused(&["sweep", MODEL, "--set", "c.tll=60s"]);
    assert!(
        e.starts_with("error: models/single-px-cad-pause.ron: --set c.tll=60s: Unexpected field named `tll` in `ClientGroup`, expected one of `name`, `count`,"),
        "{e}"
    );
    assert!(e.trim_end().ends_with("(did you mean \"ttl\"?)"), "{e}");
    let e = refused(&["run", MODEL, "--set", "durration=5s"]);
    assert!(
        e.contains("--set durration=5s") && e.contains("did you mean \"duration\""),
        "{e}"
    );
}

#[test]
fn an_unknown_name_exits_2_listing_the_names_and_the_nearest() {
    let e = refused(&["replay", MODEL, "--seed", "1", "--set", "rediss.priority=0"]);
    assert!(
        e.contains("--set rediss.priority=0: no client group, node or block named \"rediss\" (did you mean \"redis\"?); the names are c (client group), redis (node), sentinels (block)"),
        "{e}"
    );
}

#[test]
fn a_bad_value_exits_2_with_the_loaders_own_message_at_the_set() {
    let e = refused(&["run", MODEL, "--set", "c.ttl=1parsec"]);
    assert!(
        e.contains("--set c.ttl=1parsec: duration \"1parsec\" has an unknown unit \"parsec\""),
        "{e}"
    );
    let e = refused(&["run", MODEL, "--set", "c.count=abc"]);
    assert!(e.contains("--set c.count=abc: Expected integer"), "{e}");
    let e = refused(&["run", MODEL, "--set", "c.node=redis9"]);
    assert!(
        e.contains("--set c.node=redis9: client group \"c\" locks on unknown node \"redis9\""),
        "{e}"
    );
    let e = refused(&["run", MODEL, "--set", r#"c.hold=("1s""#]);
    assert!(e.contains("unclosed '('"), "{e}");
    let e = refused(&["run", MODEL, "--set", "ttl"]);
    assert!(e.contains("is not NAME.FIELD=VALUE"), "{e}");
}

#[test]
fn sentinels_that_wait_longer_than_the_outage_never_fail_over_and_the_lock_holds() {
    let m = "failover-lost-lock";
    let o = run(&["sweep", m, "--seeds", "0..100"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let o = run(&[
        "sweep",
        m,
        "--seeds",
        "0..100",
        "--set",
        "sentinels.down_after=30s",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // A check across fields (quorum against count) names the --set too.
    let e = refused(&["sweep", m, "--set", "sentinels.quorum=9"]);
    assert!(
        e.contains("--set sentinels.quorum=9: quorum 9 is larger than the 3 sentinels"),
        "{e}"
    );
    // And a sweep's JSON replay carries the flags of a node override.
    let o = run(&[
        "sweep",
        m,
        "--seeds",
        "0..100",
        "--json",
        "--set",
        "m1.priority=50",
    ]);
    let first = stdout(&o).lines().next().unwrap_or_default().to_string();
    assert!(first.contains(" --set m1.priority=50\""), "{first}");
}

#[test]
fn hunt_and_minimize_take_the_overrides_and_the_minimal_model_carries_them() {
    // A TTL past every pause: no hunt finds a violation.
    let o = run(&[
        "hunt",
        "single-px-cad-pause",
        "--set",
        "c.ttl=60s",
        "--max-seeds",
        "200",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // The minimal model is written from the text that ran, override included.
    let o = run(&[
        "minimize",
        "single-px-cad-pause",
        "--seed",
        "0",
        "--set",
        "c.hold=(\"2s\", \"4s\")",
    ]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    assert!(text.contains("hold: (\"2s\", \"4s\")"), "{text}");
    let o = run(&["hunt", "single-px-cad-pause", "--set", "c.tll=1s"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("did you mean \"ttl\""));
}
