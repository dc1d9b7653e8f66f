//! A streamed run (`run_seed`: the history judged as it is produced, tokens retired) judges
//! every seed as the kept history of the same seed does (`run_world`), and keeps memory
//! flat in the length of the run.

use super::*;
use crate::check::monitor::{HOUSEKEEPING_EVERY, RETIRE_FROM_ENTRIES};
use crate::scenario::load_str;

/// Every model of the catalogue, in name order.
fn catalogue() -> Vec<Scenario> {
    let mut paths: Vec<_> = std::fs::read_dir("models")
        .expect("models/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| crate::scenario::load(p).unwrap_or_else(|e| panic!("{}: {e:?}", p.display())))
        .collect()
}

/// An outcome in full (every field; `RunOutcome` has no `PartialEq`).
fn full(o: &RunOutcome) -> String {
    format!("{o:?}")
}

/// `kept` with every judgement redone by the whole-history functions (each checker,
/// detector and measure over `world`'s kept history on its own, not through a monitor).
fn whole_history_outcome(sc: &Scenario, world: &World, kept: &RunOutcome) -> String {
    let h = &world.history;
    let mut tally = crate::check::margin::MarginTally::default();
    for m in crate::check::margin::safety_margins(h) {
        let lost_at = m.removals.iter().map(|r| r.1).min().expect("a lost key");
        tally.add(m.margin_ns, lost_at);
    }
    let (longest, total) = crate::check::overlaps_ns(h);
    full(&RunOutcome {
        violations: sc.check(world),
        acquisitions: h
            .records
            .iter()
            .filter(|r| matches!(r.obs, crate::history::Observation::Acquired { .. }))
            .count() as u64,
        longest_overlap_ns: longest,
        total_overlap_ns: total,
        min_margin_ns: tally.min_ns,
        min_margin_at: tally.min_at,
        closest_handover: crate::check::closest_handover(h),
        margin_histogram: tally.histogram,
        witnesses: crate::check::witness::reached(h),
        ..kept.clone()
    })
}

#[test]
fn a_streamed_run_judges_every_catalogue_model_and_seed_as_its_kept_history_does() {
    let (mut runs, mut retired, mut doubted) = (0, 0, 0);
    for sc in catalogue() {
        for seed in 0..3 {
            let (kept, world) = run_world(&sc, seed, TraceMode::Off);
            assert_eq!(
                full(&kept),
                whole_history_outcome(&sc, &world, &kept),
                "{} seed {seed}",
                sc.name
            );
            let kept = full(&kept);
            assert_eq!(full(&run_seed(&sc, seed)), kept, "{} seed {seed}", sc.name);
            // Retiring as often as possible: every retirement is either exact or noticed.
            for retire_from in [1, 64] {
                runs += 1;
                let (streamed, (rounds, _)) = stream_seed(&sc, seed, retire_from);
                retired += u32::from(rounds > 0);
                match streamed {
                    Some(o) => assert_eq!(
                        full(&o),
                        kept,
                        "{} seed {seed}, retiring from {retire_from}",
                        sc.name
                    ),
                    None => doubted += 1,
                }
            }
        }
    }
    // The comparison is not vacuous: most runs retired tokens and were still judged
    // streamed (a doubt falls back to the kept history, which is then trivially equal).
    assert!(
        retired * 2 > runs,
        "{retired} of {runs} runs retired tokens"
    );
    assert!(
        doubted * 4 < runs,
        "{doubted} of {runs} runs fell into doubt"
    );
}

/// bench-w1 for `duration`.
fn w1(duration: &str) -> Scenario {
    let text = std::fs::read_to_string("models/bench-w1.ron").expect("bench-w1");
    let text = text.replace("duration: \"10s\"", &format!("duration: \"{duration}\""));
    load_str("bench-w1", "models/bench-w1.ron", &text).expect("bench-w1 loads")
}

#[test]
fn a_sweep_over_a_long_run_keeps_memory_flat() {
    // Ten times the run: ten times the tokens a checker could be asked about (and kept
    // without retiring), and yet no more kept at once than the retirement threshold.
    let (short, (_, short_peak)) = stream_seed(&w1("10s"), 0, RETIRE_FROM_ENTRIES);
    let (long, (rounds, long_peak)) = stream_seed(&w1("100s"), 0, RETIRE_FROM_ENTRIES);
    let (_, (_, unretired_peak)) = stream_seed(&w1("100s"), 0, usize::MAX);
    let (short, long) = (short.expect("judged"), long.expect("judged, not in doubt"));
    assert!(long.acquisitions > 9 * short.acquisitions);
    assert!(rounds > 0, "the long run retired tokens");
    // Between two housekeepings a record adds at most a few entries past the threshold.
    let slack = 3 * HOUSEKEEPING_EVERY as usize;
    assert!(
        long_peak <= RETIRE_FROM_ENTRIES + slack,
        "{long_peak} entries kept at once"
    );
    assert!(short_peak <= RETIRE_FROM_ENTRIES);
    assert!(
        unretired_peak > 8 * short_peak,
        "without retiring the long run keeps {unretired_peak} entries, the short {short_peak}"
    );
}

#[test]
fn a_streamed_run_keeps_no_records() {
    let sc = w1("5s");
    let (mut world, _) = sc.build_with(0, TraceMode::Off, None);
    world
        .history
        .stream_into(sc.monitor().retiring(RETIRE_FROM_ENTRIES).into_sink());
    world.run();
    assert!(world.history.streamed());
    assert!(world.history.records.is_empty());
    // What the budget counts is what the monitor keeps, far below the records' bytes.
    let (kept, kept_world) = run_world(&sc, 0, TraceMode::Off);
    assert!(kept.acquisitions > 100);
    assert!(world.history.bytes() > 0);
    assert!(world.history.bytes() * 2 < kept_world.history.bytes());
}
