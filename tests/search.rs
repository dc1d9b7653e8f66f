//! `search`: a margin-steered search finds a violation that random seeds rarely meet, confirms
//! it by replaying the scripted model from time 0, and reports the closest approach when the
//! budget runs out on a safe model.

use std::path::Path;
use std::process::Command;

use distlock_sim::explore::search::{self, SearchConfig};
use distlock_sim::scenario;

fn model(rel: &str) -> (scenario::Scenario, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    let sc = scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    (sc, std::fs::read_to_string(&path).unwrap())
}

#[test]
fn search_finds_in_2000_runs_a_break_a_random_sweep_meets_once_in_10000_seeds() {
    // A random sweep: 10 violating seeds of 0..100000 (first at 355; hunt's median 5,191).
    let (sc, text) = model("tests/models/pause-in-the-last-10ms-of-a-hold.ron");
    let r = search::search(&sc, &text, &SearchConfig::default()).unwrap();
    let f = r
        .found
        .as_ref()
        .unwrap_or_else(|| panic!("{}", search::report_text(&r, None, "distlock-sim")));
    assert!(f.candidate.run <= 2000, "{}", f.candidate.run);
    assert!(
        f.candidate.moved,
        "found by moving faults, not by a seed of its own"
    );
    assert!(f.replay_confirms);
    assert_eq!(f.property, "mutual_exclusion");
    // The scripted model reads back and violates on the same seed.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("search");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("found.ron");
    std::fs::write(&p, &f.model_text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .args([
            "run",
            p.to_str().unwrap(),
            "--seed",
            &f.candidate.seed.to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn the_same_model_and_search_seed_give_the_same_search() {
    let (sc, text) = model("tests/models/pause-late-in-hold.ron");
    let cfg = SearchConfig {
        budget_runs: 300,
        ..SearchConfig::default()
    };
    let a = search::report_json(&search::search(&sc, &text, &cfg).unwrap());
    let b = search::report_json(&search::search(&sc, &text, &cfg).unwrap());
    assert_eq!(a, b);
}

#[test]
fn on_a_safe_model_the_budget_ends_with_the_closest_approach_and_exit_0() {
    let o = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["search", "single-px-cad-fencing", "--budget", "120"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("no violation in 120 runs; closest approach: "),
        "{text}"
    );
}

#[test]
fn assert_searched_holds_passes_a_fenced_model_and_fails_an_unfenced_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let r = distlock_sim::testing::assert_searched_holds(
        root.join("models/single-px-cad-fencing.ron"),
        100,
    );
    assert_eq!(r.runs, 100);
    let broke = std::panic::catch_unwind(|| {
        distlock_sim::testing::assert_searched_holds(
            root.join("models/single-px-cad-pause.ron"),
            100,
        )
    });
    assert!(broke.is_err());
}

#[test]
fn runs_cut_short_by_the_event_budget_make_the_search_inconclusive() {
    // The fenced model with an event budget far below its duration: every run stops early,
    // and a search over them is inconclusive (exit 3), not "no violation".
    let o = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "search",
            "single-px-cad-fencing",
            "--budget",
            "40",
            "--set",
            "max_events=2000",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("of the runs stopped on a budget"), "{text}");
}
