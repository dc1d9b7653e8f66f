//! A helper for `#[test]`s: sweep a model (or a world built in Rust) over many seeds and fail
//! with the property, the seed and the exact lines that replay it.
//!
//! Seeds: `DISTLOCK_SEEDS=N` sweeps seeds `0..N` (default 300); `DISTLOCK_SEED=S` runs that one
//! seed only — the line a failure prints.
//!
//! ```no_run
//! #[test]
//! fn fencing_keeps_the_resource_safe() {
//!     distlock_sim::testing::assert_model_holds("models/single-px-cad-fencing.ron");
//! }
//! ```
//!
//! Beyond seeds: [`assert_explored_holds`] places up to K faults at every decision point of
//! one run (`distlock-sim explore`, docs/explore.md) and fails with the shortest schedule
//! that breaks the model, as a scripted model to replay.

use std::path::Path;

use crate::check::{CheckConfig, Property, Violation, check_all};
use crate::explore::run_seed;
use crate::scenario;
use crate::sim::World;

/// Default number of seeds when `DISTLOCK_SEEDS` is not set.
pub const DEFAULT_SEEDS: u64 = 300;

/// The seeds the environment asks for.
pub fn seeds_from_env() -> Vec<u64> {
    if let Some(s) = std::env::var("DISTLOCK_SEED")
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        return vec![s];
    }
    let n = std::env::var("DISTLOCK_SEEDS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_SEEDS);
    (0..n).collect()
}

fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("TEST_NAME")
        .to_string()
}

fn failure(what: &str, seed: u64, v: &Violation, replay: Option<String>) -> String {
    let mut msg = format!(
        "{what} violated {} at seed {seed} ({}): {}\n  reproduce: DISTLOCK_SEED={seed} cargo test {}",
        v.property,
        v.at,
        v.message,
        test_name()
    );
    if let Some(r) = replay {
        msg.push_str(&format!("\n  timeline:  {r}"));
        msg.push_str(&format!(
            "\n  picture:   {r} --format html --out seed{seed}.html"
        ));
    }
    msg
}

/// Sweeps the model at `path` and panics at the first seed that violates a property it checks,
/// or, after a sweep of many seeds, when no seed reached a hazard the model requires
/// (`witness`): a vacuous sweep is not a pass.
pub fn assert_model_holds(path: impl AsRef<Path>) {
    let path = path.as_ref();
    let sc = scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
    let seeds = seeds_from_env();
    // One seed (`DISTLOCK_SEED`) reproduces a failure; it need not reach every hazard.
    let judge_witnesses = std::env::var("DISTLOCK_SEED").is_err();
    let mut unreached: Vec<crate::check::witness::Hazard> =
        sc.model.witness.iter().map(|h| h.0).collect();
    for &seed in &seeds {
        let o = run_seed(&sc, seed);
        unreached.retain(|h| !o.witnesses.contains(*h));
        if let Some(v) = o.violations.first() {
            let replay = format!("distlock-sim replay {} --seed {seed}", path.display());
            panic!(
                "{}",
                failure(&format!("model {}", sc.name), seed, v, Some(replay))
            );
        }
    }
    if judge_witnesses && !unreached.is_empty() {
        let names: Vec<&str> = unreached.iter().map(|h| h.name()).collect();
        panic!(
            "model {} is vacuous: none of its {} seeds reached {} (required by `witness`); \
             widen the sweep with DISTLOCK_SEEDS=N or make its faults reach the hazard",
            sc.name,
            seeds.len(),
            names.join(", ")
        );
    }
}

/// Sweeps the model at `path` (seeds `0..DISTLOCK_SEEDS`, default 300, on the machine's
/// cores) and panics unless the 95 % upper bound of `property`'s per-seed rate is below
/// `max_rate` (docs/rates.md): for a setup that may break, but must break rarely, a claim
/// that holds with confidence rather than a count that happened to be small. The panic names
/// the rate with its interval and the first violating seed's replay line. Returns the
/// per-seed count.
///
/// ```no_run
/// // WAIT narrows the failover window; fewer than one seed in four may still lose the lock.
/// distlock_sim::testing::assert_rate_below(
///     "models/failover-wait-false-confidence.ron",
///     "mutual_exclusion",
///     0.25,
/// );
/// ```
pub fn assert_rate_below(
    path: impl AsRef<Path>,
    property: &str,
    max_rate: f64,
) -> crate::explore::rate::Proportion {
    use crate::explore::rate::percent;
    let path = path.as_ref();
    let sc = scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
    let p = crate::check::Property::from_name(property)
        .filter(|p| sc.properties.contains(p))
        .unwrap_or_else(|| panic!("model {} does not check {property:?}", sc.name));
    let n = std::env::var("DISTLOCK_SEEDS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(DEFAULT_SEEDS);
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let summary = crate::explore::sweep(&sc, 0..n, crate::explore::Shard::WHOLE, jobs, &|| {});
    let rate = summary.per_seed(p);
    let (lo, hi) = rate.ci95();
    if hi >= max_rate {
        let first = summary
            .first_seed_per_property
            .get(&p)
            .map(|seed| {
                format!(
                    "\n  first violating seed {seed}: distlock-sim replay {} --seed {seed}",
                    path.display()
                )
            })
            .unwrap_or_default();
        panic!(
            "model {}: {property} broke in {} of {} seeds, {} [{}, {}] at 95 %: the upper bound \
             is not below {} (DISTLOCK_SEEDS=N runs more seeds to narrow it){first}",
            sc.name,
            rate.k,
            rate.n,
            percent(rate.estimate()),
            percent(lo),
            percent(hi),
            percent(max_rate)
        );
    }
    rate
}

/// Searches the model at `path` for a violation with `distlock-sim search` (its drawn faults
/// moved toward the runs that came closest to breaking; src/explore/search.rs) within
/// `budget_runs` runs, and panics with the violating schedule as a scripted model and its
/// replay seed — or when a run stopped on a budget before the model's duration (it proves
/// nothing past where it stopped). Returns the report (runs, closest approach).
pub fn assert_searched_holds(
    path: impl AsRef<Path>,
    budget_runs: u64,
) -> crate::explore::search::SearchReport {
    use crate::explore::search;
    let path = path.as_ref();
    let sc = scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cfg = search::SearchConfig {
        budget_runs,
        ..search::SearchConfig::default()
    };
    let r = search::search(&sc, &text, &cfg).unwrap_or_else(|e| panic!("{e}"));
    // A run cut short by a budget proves nothing past where it stopped.
    if r.found.is_some() || r.inconclusive_runs > 0 {
        panic!("{}", search::report_text(&r, None, "distlock-sim"));
    }
    r
}

/// Sweeps the model at `path` and panics unless the set of properties violated over the seeds
/// is exactly the set its `expect` declares (as sets: an extra violated property fails as a
/// missing one does), or if a seed stopped on a budget (inconclusive). A model without
/// `expect` must hold.
pub fn assert_model_shows_declared_verdict(path: impl AsRef<Path>) {
    let path = path.as_ref();
    let sc = scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
    let expect = sc.model.expect.clone().unwrap_or(scenario::Expect::Holds);
    let mut observed = std::collections::BTreeSet::new();
    let mut first_seed = std::collections::BTreeMap::new();
    for seed in seeds_from_env() {
        let o = run_seed(&sc, seed);
        assert!(
            !o.inconclusive(),
            "model {}: seed {seed} stopped on a budget at {} ({:?}): inconclusive\n  reproduce: DISTLOCK_SEED={seed} cargo test {}",
            sc.name,
            o.ended_at,
            o.end,
            test_name()
        );
        for v in &o.violations {
            observed.insert(v.property);
            first_seed.entry(v.property).or_insert(seed);
        }
    }
    let c = expect.compare(observed);
    assert!(
        c.matches(),
        "model {}: NOT as declared: {} (first violating seed per property: {:?})\n  reproduce: DISTLOCK_SEED=<seed> cargo test {}",
        sc.name,
        c.differences(""),
        first_seed,
        test_name()
    );
}

/// Sweeps a world built in Rust by `build(seed)`, checking `props` over its history.
pub fn assert_world_holds(
    what: &str,
    props: &[Property],
    liveness_bound_ns: u64,
    build: impl Fn(u64) -> World,
) {
    for seed in seeds_from_env() {
        let mut w = build(seed);
        w.run();
        let names = w.names();
        let cfg = CheckConfig {
            liveness_bound_ns,
            release_within_ns: crate::check::DEFAULT_RELEASE_WITHIN_NS,
            end: w.now(),
        };
        let violations = check_all(&w.history, props, &cfg, &|p| names[p.index()].clone());
        if let Some(v) = violations.first() {
            panic!("{}", failure(what, seed, v, None));
        }
    }
}

/// Explores the model at `path` with up to `faults` faults at the decision points of seed 0's
/// run (`distlock-sim explore`; docs/explore.md) and panics with the shortest violating
/// schedule, as a scripted model and its replay command — or when the search stopped on its
/// budget (`DISTLOCK_EXPLORE_BUDGET` runs, default `DEFAULT_BUDGET_RUNS`): a search cut short
/// proves nothing, so it fails rather than passes. Returns the report (schedules, states).
///
/// ```
/// // Fencing tokens keep the resource safe whatever pauses fall at its decision points.
/// let r = distlock_sim::testing::assert_explored_holds("models/single-px-cad-fencing.ron", 1);
/// assert!(r.schedules > 1);
/// ```
pub fn assert_explored_holds(
    path: impl AsRef<Path>,
    faults: usize,
) -> crate::explore::systematic::ExploreReport {
    assert_explored_holds_with(path, faults, None)
}

/// [`assert_explored_holds`] with the model's clients made by `custom`: your algorithm, in
/// the model's world (see `Scenario::build_with`). Implement `Process::clone_box` on it so
/// that schedules resume from snapshots (without it they are re-simulated from time 0).
pub fn assert_explored_holds_with(
    path: impl AsRef<Path>,
    faults: usize,
    custom: Option<&crate::scenario::clients::ClientFactory>,
) -> crate::explore::systematic::ExploreReport {
    use crate::explore::systematic as sys;
    let path = path.as_ref();
    let sc = scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let budget_runs = std::env::var("DISTLOCK_EXPLORE_BUDGET")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(sys::DEFAULT_BUDGET_RUNS);
    let cfg = sys::ExploreConfig {
        faults,
        budget_runs,
        ..sys::ExploreConfig::default()
    };
    let r = sys::explore_with(&sc, &text, &cfg, custom).unwrap_or_else(|e| panic!("{e}"));
    if let Some(f) = &r.found {
        panic!(
            "model {} violated with {} fault(s) at its decision points ({}):\n{}\n  save the model above and run: distlock-sim replay MODEL.ron --seed 0",
            sc.name,
            f.placed.len(),
            test_name(),
            crate::view::exploration::report_text(&r, None, "distlock-sim")
        );
    }
    assert!(
        !r.inconclusive(),
        "model {}: the exploration is inconclusive (raise DISTLOCK_EXPLORE_BUDGET):\n{}",
        sc.name,
        crate::view::exploration::report_text(&r, None, "distlock-sim")
    );
    assert!(
        !r.vacuous(),
        "model {}: vacuous exploration: no decision point takes a fault the model declares",
        sc.name
    );
    r
}
