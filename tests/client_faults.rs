//! Clients under faults do what real clients do:
//! - a client whose resource read goes unanswered within its request timeout does not know
//!   the resource's state: it gives the lock back without writing, not write on the previous
//!   round's base (a lost update no real client makes, which `resource_safety` would then
//!   report against a fenced, safe model);
//! - a `set-px-wait-cad` client giving back a lock with too few WAIT acks falls back from
//!   EVALSHA to EVAL on NOSCRIPT, as its release does, so the key does not linger to its TTL.

use distlock_sim::check::Property;
use distlock_sim::explore::run_world;
use distlock_sim::history::{Observation, Removal};
use distlock_sim::scenario;
use distlock_sim::sim::TraceMode;

/// One client (`c`), one round a second: the first round reads and writes normally; from
/// 1.5 s, every answer of the resource to the client is 5 s late (past the request
/// timeout: 1 s, 3 s for the watchdog), or the resource is paused for 6 s, so later rounds' reads time out.
fn world(client: &str, fault: &str) -> String {
    format!(
        r#"(
    description: "a read answered after the request timeout",
    duration: "20s",
    {client}
    faults: [{fault}],
    check: ["liveness"],
    liveness_bound: "19s",
)"#
    )
}

const SINGLE: &str = r#"nodes: [(name: "redis")],
    resource: (name: "db", fencing: true),
    clients: [(name: "c", count: 1, algorithm: "set-px-cad-fencing", node: "redis",
        ttl: "10s", hold: "1s", think: "1s", retry: "50ms")],"#;
const REDLOCK: &str = r#"nodes: [(name: "r1"), (name: "r2"), (name: "r3")],
    resource: (name: "db"),
    clients: [(name: "c", count: 1, algorithm: "redlock", nodes: ["r1", "r2", "r3"],
        redlock: (preset: "redis-docs"), ttl: "10s", hold: "1s", think: "1s")],"#;
const WATCHDOG: &str = r#"nodes: [(name: "redis")],
    resource: (name: "db"),
    clients: [(name: "c", count: 1, algorithm: "watchdog", node: "redis",
        ttl: "30s", hold: "1s", think: "1s", retry: "100ms")],"#;
const CONSENSUS: &str = r#"resource: (name: "db", fencing: true),
    consensus: (name: "zk"),
    clients: [(name: "c", count: 1, algorithm: "consensus", present_token: true,
        ttl: "10s", hold: "1s", think: "1s", retry: "100ms")],"#;

const SPIKE: &str =
    r#"latency_spike(from: ["db"], to: ["c"], at: "1.5s", duration: "8s", extra: "5s")"#;
const PAUSE: &str = r#"pause(target: "db", at: "1.5s", duration: "6s")"#;

/// Runs the world; asserts no lost update is reported and that the hazard happened: a read
/// was sent and the client gave the lock back without writing. With one client the model may
/// not *check* `resource_safety` (a correct lone client cannot interleave with anyone, so the
/// loader refuses the property as vacuous); the defect made exactly that impossible happen,
/// so the checker is run on the history directly.
fn assert_no_false_lost_update(what: &str, client: &str, fault: &str) {
    let text = world(client, fault);
    let sc = scenario::load_str(what, "read-timeout.ron", &text).unwrap_or_else(|e| panic!("{e}"));
    for seed in 0..5 {
        let (o, w) = run_world(&sc, seed, TraceMode::Off);
        let names = w.names();
        let lost = distlock_sim::check::resource_safety(&w.history, &|p| names[p.index()].clone());
        assert!(lost.is_none(), "{what}, seed {seed}: {lost:?}");
        assert!(
            !o.violations
                .iter()
                .any(|v| v.property == Property::ResourceSafety)
        );
        // Acquired, then Released with no write accepted or sent in between: a critical
        // section given back unwritten (the read timed out).
        let mut writes_since_acquire = None;
        let mut unwritten = 0;
        for r in &w.history.records {
            match &r.obs {
                Observation::Acquired { .. } => writes_since_acquire = Some(0),
                Observation::ResourceWrite { .. } => {
                    if let Some(n) = &mut writes_since_acquire {
                        *n += 1;
                    }
                }
                Observation::Released { .. } => {
                    if writes_since_acquire == Some(0) {
                        unwritten += 1;
                    }
                    writes_since_acquire = None;
                }
                _ => {}
            }
        }
        assert!(
            unwritten > 0,
            "{what}, seed {seed}: no read timed out; the world does not test the claim"
        );
        assert!(
            o.acquisitions >= 3,
            "{what}, seed {seed}: the client went on"
        );
    }
}

#[test]
fn a_single_instance_client_whose_read_times_out_gives_the_lock_back_unwritten() {
    assert_no_false_lost_update("single, spike", SINGLE, SPIKE);
    assert_no_false_lost_update("single, paused resource", SINGLE, PAUSE);
}

#[test]
fn a_redlock_client_whose_read_times_out_gives_the_lock_back_unwritten() {
    assert_no_false_lost_update("redlock, spike", REDLOCK, SPIKE);
    assert_no_false_lost_update("redlock, paused resource", REDLOCK, PAUSE);
}

#[test]
fn a_watchdog_client_whose_read_times_out_gives_the_lock_back_unwritten() {
    assert_no_false_lost_update("watchdog, spike", WATCHDOG, SPIKE);
    assert_no_false_lost_update("watchdog, paused resource", WATCHDOG, PAUSE);
}

#[test]
fn a_consensus_client_whose_read_times_out_gives_the_lock_back_unwritten() {
    assert_no_false_lost_update("consensus, spike", CONSENSUS, SPIKE);
    assert_no_false_lost_update("consensus, paused resource", CONSENSUS, PAUSE);
}

#[test]
fn a_lock_given_back_for_too_few_wait_acks_is_deleted_promptly_after_a_node_restart() {
    // No replica, so every WAIT falls short and every lock is given back. c1's first give-back
    // meets an empty script cache (NOSCRIPT) and loads the script with EVAL; c2 then finds it
    // cached and keeps using EVALSHA, until the node restarts and forgets its scripts.
    let text = r#"(
    description: "every WAIT falls short: each lock is given back",
    duration: "20s",
    nodes: [(name: "redis")],
    clients: [(name: "c", count: 2, algorithm: "set-px-wait-cad", node: "redis",
        ttl: "10s", hold: "100ms", think: ("500ms", "1s"), retry: ("200ms", "400ms"),
        wait: (replicas: 1, timeout: "50ms"))],
    faults: [crash(target: "redis", at: "5.5s", restart_after: "1s", keep_data: true)],
    check: ["mutual_exclusion"],
)"#;
    let sc = scenario::load_str("wait", "wait.ron", text).unwrap_or_else(|e| panic!("{e}"));
    for seed in 0..5 {
        let (_, w) = run_world(&sc, seed, TraceMode::Off);
        let mut written = std::collections::BTreeMap::new();
        let mut after_restart = 0;
        for r in &w.history.records {
            match &r.obs {
                Observation::KeyWritten { value, .. } => {
                    written.insert(value.clone(), r.at);
                }
                // Without persistence the node restarts empty: what it held is gone (the
                // history says so, key by key).
                Observation::KeyRemoved {
                    value,
                    how: Removal::Flushed,
                    ..
                } => {
                    written.remove(value).expect("a flushed key was written");
                }
                Observation::KeyRemoved { value, how, .. } => {
                    let at = written.remove(value).expect("a removed key was written");
                    assert!(
                        *how == Removal::Del && r.at.0 - at.0 < 1_000_000_000,
                        "seed {seed}: key {} written at {at} left at {} by {how:?}, not given back",
                        String::from_utf8_lossy(value),
                        r.at
                    );
                    if at.0 > 6_500_000_000 {
                        after_restart += 1;
                    }
                }
                _ => {}
            }
        }
        assert!(
            after_restart > 2,
            "seed {seed}: the clients went on after the restart"
        );
        // Keys still stored at the end were written in its last second.
        for (v, at) in &written {
            assert!(
                w.now().0 - at.0 < 1_000_000_000,
                "seed {seed}: key {} written at {at} never given back",
                String::from_utf8_lossy(v)
            );
        }
    }
}
