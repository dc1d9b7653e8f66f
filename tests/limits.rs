//! Bounded everywhere: command-line values refused on every path, conformance files that are
//! not regular files, and the memory budgets of a run (history, trace).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use distlock_sim::history::History;
use distlock_sim::scenario;
use distlock_sim::sim::{RunEnd, TraceMode};

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

fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("limits-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const MODEL: &str = "models/single-px-del-pause.ron";

#[test]
fn jobs_of_zero_or_a_million_are_refused_naming_the_option_on_every_subcommand() {
    let paths: [&[&str]; 4] = [
        &["sweep", MODEL, "--seeds", "0..2"],
        &["sweep", MODEL, "--seeds", "0..2", "--check-determinism"],
        &["hunt", MODEL, "--repeats", "1", "--max-seeds", "1"],
        &["pitfalls"],
    ];
    for args in paths {
        for jobs in ["0", "1000000", "257", "many"] {
            let mut a = args.to_vec();
            a.extend(["--jobs", jobs]);
            let o = run(&a);
            assert_eq!(o.status.code(), Some(2), "{a:?}: {}", stderr(&o));
            assert!(stderr(&o).contains("--jobs"), "{a:?}: {}", stderr(&o));
        }
    }
    // The largest accepted value is accepted.
    let o = run(&["sweep", MODEL, "--seeds", "0..1", "--jobs", "256"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn hunt_repeats_and_max_seeds_out_of_range_are_refused_naming_the_option() {
    for (flag, value) in [
        ("--repeats", "0"),
        ("--repeats", "10001"),
        ("--max-seeds", "0"),
        ("--max-seeds", "18446744073709551615"),
    ] {
        let o = run(&["hunt", MODEL, flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{}", stderr(&o));
    }
}

#[test]
fn run_check_determinism_at_the_largest_seed_checks_that_one_seed() {
    let o = run(&[
        "run",
        MODEL,
        "--seed",
        "18446744073709551615",
        "--check-determinism",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1 seeds run twice, 0 divergences"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_sparse_shard_of_a_billion_seeds_is_checked_without_walking_the_range() {
    // One seed of 0..1e9 falls in this shard: the check runs it at once instead of going
    // through (or collecting) a billion seeds first.
    let o = run(&[
        "sweep",
        MODEL,
        "--seeds",
        "0..1000000000",
        "--shard",
        "999999999/1000000000",
        "--check-determinism",
        "--jobs",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1 seeds run twice, 0 divergences"),
        "{}",
        stdout(&o)
    );
    let o = run(&[
        "sweep",
        MODEL,
        "--seeds",
        "0..1000000000",
        "--shard",
        "999999999/1000000000",
        "--json",
        "--jobs",
        "1",
    ]);
    assert!(stdout(&o).contains("\"seeds_run\":1"), "{}", stdout(&o));
}

#[test]
fn conformance_refuses_a_fifo_named_txt_at_once_instead_of_hanging() {
    let dir = scratch_dir("fifo");
    let fifo = dir.join("a.txt");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo unavailable: skipped");
        return;
    }
    // A hang would be the bug: give the command a deadline.
    let mut child = bin()
        .args(["conformance", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited_ms = 0;
    while child.try_wait().unwrap().is_none() {
        if waited_ms > 20_000 {
            let _ = child.kill();
            panic!("conformance blocked on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        waited_ms += 20;
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("a.txt:1:"), "{err}");
    assert!(err.contains("FIFO is not a regular file"), "{err}");
}

#[test]
fn conformance_refuses_a_symlink_to_dev_zero_without_reading_it() {
    let dir = scratch_dir("zero");
    let link = dir.join("a.txt");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    for arg in [&dir, &link] {
        let o = run(&["conformance", arg.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("a.txt:1:"), "{err}");
        assert!(
            err.contains("character device is not a regular file"),
            "{err}"
        );
    }
}

#[test]
fn conformance_refuses_a_file_over_the_size_cap() {
    let dir = scratch_dir("big");
    let f = std::fs::File::create(dir.join("a.txt")).unwrap();
    // Sparse: costs no disk.
    f.set_len(distlock_sim::conformance::runner::MAX_FILE_BYTES + 1)
        .unwrap();
    let o = run(&["conformance", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a.txt:1: file larger than"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn conformance_replies_not_enough_memory_to_a_script_past_the_lua_cap() {
    let dir = scratch_dir("lua");
    let script = "return #string.rep('x', 3^31)";
    let sha = "0166352251260eec63d0282c14fcd526f4a4795c";
    std::fs::write(
        dir.join("a.txt"),
        format!(
            "# case: huge-rep\n# topology: single\n@0 EVAL \"{script}\" 0 -> (error) ERR Error running script {sha}, not enough memory\n@0 EVAL \"return 1\" 0 -> (integer) 1\n"
        ),
    )
    .unwrap();
    let o = run(&["conformance", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("1 passed, 0 failed"), "{}", stdout(&o));
}

fn load(name: &str) -> scenario::Scenario {
    scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

#[test]
fn a_history_past_its_budget_ends_the_run_as_a_budget_stop_between_events() {
    let sc = load("models/bench-w1.ron");
    let (mut world, _) = sc.build_with(0, TraceMode::Off, None);
    let budget = 64 * 1024;
    world.history = History::with_budget(budget);
    let end = world.run();
    assert_eq!(end, RunEnd::HistoryLimit);
    assert!(end.is_budget_stop());
    assert!(world.history.over_budget());
    // Stopped at the first event boundary past the budget: one event's records over it.
    let last = world.history.records.len() - 1;
    let mut before = History::with_budget(budget);
    for r in &world.history.records[..last] {
        before.push(r.at, r.proc, r.obs.clone());
    }
    assert!(before.bytes() < budget + 4096, "{}", before.bytes());
    assert!(world.now().0 < sc.limits.max_time.0);
    // The same model within the default budget runs to its duration.
    let (mut world, _) = sc.build_with(0, TraceMode::Off, None);
    assert_eq!(world.run(), RunEnd::TimeLimit);
    assert!(!RunEnd::TimeLimit.is_budget_stop() && !RunEnd::Quiescent.is_budget_stop());
    assert!(RunEnd::EventLimit.is_budget_stop());
}

#[test]
fn a_trace_past_its_cap_is_noted_and_the_verdict_still_covers_the_whole_run() {
    use distlock_sim::sim::trace::MAX_TRACE_ENTRIES;
    let dir = scratch_dir("trace");
    let model = dir.join("busy.ron");
    // ~5,000 events per simulated second: past the cap in about 200 s.
    std::fs::write(
        &model,
        r#"(
    description: "3 clients contend without pause",
    duration: "240s",
    nodes: [(name: "redis")],
    clients: [(
        name: "c", count: 3, algorithm: "set-px-cad", node: "redis",
        ttl: "30ms", hold: "1ms", think: "0ms", retry: ("0ms", "1ms"), request_timeout: "1s",
    )],
    network: (latency: ("100us", "1ms")),
    check: ["mutual_exclusion", "foreign_unlock"],
)"#,
    )
    .unwrap();
    let sc = scenario::load(&model).unwrap();
    let (o, world) = distlock_sim::explore::run_world(&sc, 0, TraceMode::Full);
    assert_eq!(o.end, RunEnd::TimeLimit);
    assert_eq!(world.trace.entries.len(), MAX_TRACE_ENTRIES);
    let cap = world.trace.cap().expect("capped");
    assert!(cap.dropped > 0);
    // The history, which the verdict reads, went on to the end of the run.
    assert!(world.history.records.last().unwrap().at > cap.at);
    let (text, _) =
        distlock_sim::cli::run_report(&sc, 0, distlock_sim::view::timeline::Messages::None);
    assert!(
        text.contains("trace capped at 1000000 entries (~190 MB) at t="),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(text.contains("the verdict covers the whole run"));
    assert!(text.contains("held     mutual_exclusion"));
}

#[test]
fn a_corpus_file_that_grows_a_value_without_end_is_a_located_error_within_the_memory_cap() {
    let dir = scratch_dir("memory-cap");
    let file = dir.join("grow.txt");
    // 124 bytes: a script that pushes a 16 MiB string 200 times (3.2 GiB without a cap).
    let text = "# case: grow\n# topology: single\n@0 EVAL \"local s=string.rep('x',2^24) for i=1,200 do redis.call('RPUSH','l',s) end\" 0 -> OK\n";
    std::fs::write(&file, text).unwrap();
    let o = run(&["conformance", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("grow.txt:3: EVAL"), "{err}");
    assert!(err.contains("memory cap of 256 MiB"), "{err}");
}
