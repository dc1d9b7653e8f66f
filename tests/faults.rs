//! Overlapping faults compose as they do in life (docs/model-format.md, "How faults combine"):
//! a process runs while no pause covers it and is up while no crash does; a link carries
//! while no cut covers it; spikes add up, loss windows drop independently, drift windows add.

use distlock_sim::explore::run_world;
use distlock_sim::history::Observation;
use distlock_sim::scenario;
use distlock_sim::sim::{TraceMode, World};
use distlock_sim::time::{NS_PER_MS, SimTime};

/// A small world: one node, one client, one idle peer; `faults` is the model's fault list.
fn world(faults: &str) -> World {
    let text = format!(
        r#"(
        description: "faults",
        duration: "30s",
        nodes: [(name: "redis")],
        clients: [
            (name: "c", algorithm: "set-px-cad", node: "redis", ttl: "2s",
             hold: ("10ms", "20ms"), think: ("10ms", "20ms"), retry: ("5ms", "10ms")),
        ],
        faults: [{faults}],
        check: ["mutual_exclusion"],
    )"#
    );
    let sc = scenario::load_str("faults", "faults.ron", &text).unwrap_or_else(|e| panic!("{e}"));
    run_world(&sc, 0, TraceMode::Full).1
}

/// True times (ms) of the records of `name` that `pick` selects.
fn times(w: &World, name: &str, pick: fn(&Observation) -> bool) -> Vec<u64> {
    let p = w.names().iter().position(|n| n == name).unwrap();
    w.history
        .records
        .iter()
        .filter(|r| r.proc.index() == p && pick(&r.obs))
        .map(|r| r.at.0 / NS_PER_MS)
        .collect()
}

#[test]
fn a_pause_inside_a_longer_pause_does_not_end_it() {
    // The issue's example: paused for 10 s at 0.5 s and for 1 s at 1 s wakes at 10.5 s, not 2 s.
    let w = world(
        r#"pause(target: "c", at: "500ms", duration: "10s"),
           pause(target: "c", at: "1s", duration: "1s")"#,
    );
    assert_eq!(times(&w, "c", |o| matches!(o, Observation::Paused)), [500]);
    assert_eq!(
        times(&w, "c", |o| matches!(o, Observation::Resumed)),
        [10_500]
    );
}

#[test]
fn overlapping_pauses_end_when_the_last_one_does() {
    let w = world(
        r#"pause(target: "c", at: "1s", duration: "2s"),
           pause(target: "c", at: "2s", duration: "3s")"#,
    );
    assert_eq!(
        times(&w, "c", |o| matches!(o, Observation::Resumed)),
        [5_000]
    );
}

#[test]
fn a_crash_ends_every_pause_and_the_restarted_process_runs() {
    let w = world(
        r#"pause(target: "c", at: "1s", duration: "10s"),
           crash(target: "c", at: "2s", restart_after: "1s")"#,
    );
    assert_eq!(
        times(&w, "c", |o| matches!(o, Observation::Restarted { .. })),
        [3_000]
    );
    // The old pause's end finds nothing to resume: the new incarnation was never paused.
    assert!(times(&w, "c", |o| matches!(o, Observation::Resumed)).is_empty());
    assert!(
        times(&w, "c", |o| matches!(o, Observation::Attempt { .. }))
            .iter()
            .any(|t| (3_000..11_000).contains(t)),
        "the restarted client works while the old pause window is still open"
    );
}

#[test]
fn a_crash_inside_a_longer_crash_does_not_restart_the_process_early() {
    let w = world(
        r#"crash(target: "redis", at: "1s", restart_after: "10s"),
           crash(target: "redis", at: "2s", restart_after: "1s", keep_data: true)"#,
    );
    let restarts: Vec<_> = w
        .history
        .records
        .iter()
        .filter_map(|r| match r.obs {
            Observation::Restarted { with_data } => Some((r.at.0 / NS_PER_MS, with_data)),
            _ => None,
        })
        .collect();
    // Data survives only if every crash that covered the outage kept it.
    assert_eq!(restarts, [(11_000, false)]);
}

#[test]
fn a_partition_inside_a_longer_partition_does_not_heal_the_link_when_it_ends() {
    let w = world(
        r#"partition(from: ["c"], to: ["redis"], at: "1s", duration: "10s"),
           partition(from: ["c"], to: ["redis"], at: "2s", duration: "1s")"#,
    );
    // No message crosses between c and redis from 1 s to 11 s, either way.
    let crossed = w.trace.entries.iter().any(|e| {
        matches!(e.kind, distlock_sim::sim::trace::TraceKind::Recv { .. })
            && e.at > SimTime::from_ms(1_001)
            && e.at < SimTime::from_ms(11_000)
    });
    assert!(
        !crossed,
        "a message crossed the cut while the longer partition was open"
    );
}

#[test]
fn an_isolation_and_a_partition_of_the_same_link_compose() {
    let w = world(
        r#"isolate(target: "c", at: "1s", duration: "2s"),
           partition(from: ["c"], to: ["redis"], at: "2s", duration: "5s", one_way: true)"#,
    );
    // c -> redis stays cut until 7 s; redis -> c heals at 3 s.
    let recv_at_redis = w.trace.entries.iter().any(|e| {
        matches!(e.kind, distlock_sim::sim::trace::TraceKind::Recv { .. })
            && e.proc.index() == 0
            && e.at > SimTime::from_ms(1_001)
            && e.at < SimTime::from_ms(7_000)
    });
    assert!(!recv_at_redis);
}

#[test]
fn drift_windows_add_to_the_rate_and_end_separately() {
    let w = world(
        r#"drift(target: "redis", at: "1s", ppm: 100000, duration: "4s"),
           drift(target: "redis", at: "2s", ppm: 50000, duration: "1s")"#,
    );
    let clock = w.clock(distlock_sim::time::ProcId(0));
    assert_eq!(clock.drift_ppm(SimTime::from_ms(1_500)), 100_000);
    assert_eq!(clock.drift_ppm(SimTime::from_ms(2_500)), 150_000);
    assert_eq!(clock.drift_ppm(SimTime::from_ms(4_000)), 100_000);
    assert_eq!(clock.drift_ppm(SimTime::from_ms(6_000)), 0);
}
