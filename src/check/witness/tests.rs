//! Every hazard detector is shown to fire on a hand-written history that reaches its hazard,
//! and to stay silent on a near miss: a detector that cannot fail (or cannot fire) would make
//! every witness count a lie.

use super::*;

const C1: u32 = 1;
const C2: u32 = 2;
const N1: u32 = 10;
const N2: u32 = 11;
const N3: u32 = 12;

fn p(i: u32) -> ProcId {
    ProcId(i)
}
fn ms(m: u64) -> SimTime {
    SimTime::from_ms(m)
}
fn tok(s: &str) -> Bytes {
    Bytes::from_slice(s.as_bytes())
}
fn hist(records: Vec<(u64, u32, Observation)>) -> History {
    let mut h = History::default();
    for (t, who, obs) in records {
        h.push(ms(t), p(who), obs);
    }
    h
}
fn acquired(t: &str, until_ms: Option<u64>) -> Observation {
    Observation::Acquired {
        lock: 0,
        token: tok(t),
        fence: None,
        validity_ns: until_ms.map(|_| 1),
        believed_until: until_ms.map(ms),
    }
}
fn released(t: &str) -> Observation {
    Observation::Released {
        lock: 0,
        token: tok(t),
    }
}
fn lost(t: &str, reason: &'static str) -> Observation {
    Observation::Lost {
        lock: 0,
        token: tok(t),
        reason,
    }
}
fn extended(t: &str, until_ms: u64) -> Observation {
    Observation::Extended {
        lock: 0,
        token: tok(t),
        validity_ns: Some(1),
        believed_until: Some(ms(until_ms)),
    }
}
/// A client's own write of its token (a grant).
fn granted(t: &str, by: u32) -> Observation {
    Observation::KeyWritten {
        key: tok("lock"),
        value: tok(t),
        expire_at_ms: Some(10_000),
        by: Some(p(by)),
    }
}
/// The same write applied from the master's stream.
fn replicated(t: &str) -> Observation {
    Observation::KeyWritten {
        key: tok("lock"),
        value: tok(t),
        expire_at_ms: Some(10_000),
        by: None,
    }
}
fn removed(t: &str, how: Removal, by: Option<u32>) -> Observation {
    Observation::KeyRemoved {
        key: tok("lock"),
        value: tok(t),
        how,
        by: by.map(p),
    }
}
fn fact(f: Fact) -> Observation {
    Observation::Fact(f)
}
fn reached_by(records: Vec<(u64, u32, Observation)>) -> Hazards {
    reached(&hist(records))
}

#[test]
fn every_hazard_has_a_distinct_name_that_reads_back() {
    for h in Hazard::ALL {
        assert_eq!(Hazard::from_name(h.name()), Some(h));
    }
    let mut names: Vec<&str> = Hazard::ALL.iter().map(|h| h.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Hazard::ALL.len());
}

#[test]
fn a_pause_past_the_expiry_of_the_held_key_is_pause_outlived_key() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", Some(9_000))),
        (2, C1, Observation::Paused),
        (10_001, N1, removed("a", Removal::Expired, None)),
        (15_000, C1, Observation::Resumed),
    ]);
    assert!(r.contains(Hazard::PauseOutlivedKey), "{r:?}");
}

#[test]
fn a_pause_that_ends_before_the_key_expires_is_not_pause_outlived_key() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", Some(9_000))),
        (2, C1, Observation::Paused),
        (5_000, C1, Observation::Resumed),
        (6_000, C1, released("a")),
        (6_001, N1, removed("a", Removal::Del, Some(C1))),
    ]);
    assert!(!r.contains(Hazard::PauseOutlivedKey), "{r:?}");
    // A pause of a client that holds nothing is not it either.
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", Some(9_000))),
        (2, C2, Observation::Paused),
        (10_001, N1, removed("a", Removal::Expired, None)),
    ]);
    assert!(!r.contains(Hazard::PauseOutlivedKey), "{r:?}");
}

#[test]
fn a_key_that_expires_under_its_holder_is_key_expired_while_held() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", None)),
        (10_001, N1, removed("a", Removal::Expired, None)),
        (12_000, C1, released("a")),
    ]);
    assert!(r.contains(Hazard::KeyExpiredWhileHeld), "{r:?}");
}

#[test]
fn a_key_that_expires_after_its_release_is_not_key_expired_while_held() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", None)),
        (5_000, C1, released("a")),
        (10_001, N1, removed("a", Removal::Expired, None)),
    ]);
    assert!(!r.contains(Hazard::KeyExpiredWhileHeld), "{r:?}");
}

fn resource(accepted: bool) -> Observation {
    Observation::ResourceWrite {
        client: p(C1),
        token: Some(3),
        base_version: 0,
        accepted,
        version_after: if accepted { 1 } else { 0 },
    }
}

#[test]
fn a_rejected_resource_write_is_stale_token_rejected() {
    assert!(reached_by(vec![(0, 9, resource(false))]).contains(Hazard::StaleTokenRejected));
    let read = Observation::ResourceRead {
        client: p(C1),
        token: Some(1),
        version: 0,
        accepted: false,
    };
    assert!(reached_by(vec![(0, 9, read)]).contains(Hazard::StaleTokenRejected));
}

#[test]
fn an_accepted_resource_write_is_not_stale_token_rejected() {
    assert!(!reached_by(vec![(0, 9, resource(true))]).contains(Hazard::StaleTokenRejected));
}

/// Master N1 grants `a` to C1, replica N2 gets it, replica N3 does not; then `promoted` is.
fn failover(promoted: u32) -> Hazards {
    reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, N2, replicated("a")),
        (2, C1, acquired("a", None)),
        (3, N1, Observation::Crashed),
        (5_000, promoted, fact(Fact::Promoted)),
    ])
}

#[test]
fn promoting_the_replica_without_the_held_lock_is_promoted_replica_lacked_lock() {
    let r = failover(N3);
    assert!(r.contains(Hazard::PromotedReplicaLackedLock), "{r:?}");
    // N2 had it and was passed over.
    assert!(r.contains(Hazard::LockReplicaNotPromoted), "{r:?}");
}

#[test]
fn promoting_the_replica_with_the_held_lock_loses_nothing() {
    let r = failover(N2);
    assert!(!r.contains(Hazard::PromotedReplicaLackedLock), "{r:?}");
    assert!(!r.contains(Hazard::LockReplicaNotPromoted), "{r:?}");
}

#[test]
fn a_promotion_that_loses_a_lock_no_replica_had_is_not_lock_replica_not_promoted() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (2, C1, acquired("a", None)),
        (3, N1, Observation::Crashed),
        (5_000, N3, fact(Fact::Promoted)),
    ]);
    assert!(r.contains(Hazard::PromotedReplicaLackedLock), "{r:?}");
    assert!(!r.contains(Hazard::LockReplicaNotPromoted), "{r:?}");
}

#[test]
fn a_promotion_after_the_holder_released_loses_nothing() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (2, C1, acquired("a", None)),
        (4, C1, released("a")),
        (5_000, N3, fact(Fact::Promoted)),
    ]);
    assert!(!r.contains(Hazard::PromotedReplicaLackedLock), "{r:?}");
}

#[test]
fn a_clock_step_on_a_node_keeping_a_held_key_is_clock_moved_expiry() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", None)),
        (2, N1, fact(Fact::ClockStepped { delta_ms: 5_000 })),
    ]);
    assert!(r.contains(Hazard::ClockMovedExpiry), "{r:?}");
    assert!(!r.contains(Hazard::HolderClockMoved), "{r:?}");
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", None)),
        (2, N1, fact(Fact::DriftChanged { drift_ppm: 200_000 })),
    ]);
    assert!(r.contains(Hazard::ClockMovedExpiry), "{r:?}");
}

#[test]
fn a_clock_step_on_a_node_without_a_held_key_moves_no_expiry() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", None)),
        (2, N2, fact(Fact::ClockStepped { delta_ms: 5_000 })),
        (3, C1, released("a")),
        (4, N1, removed("a", Removal::Del, Some(C1))),
        (5, N1, fact(Fact::ClockStepped { delta_ms: 5_000 })),
    ]);
    assert!(!r.contains(Hazard::ClockMovedExpiry), "{r:?}");
    // A key without an expiry has no expiry to move.
    let r = reached_by(vec![
        (
            0,
            N1,
            Observation::KeyWritten {
                key: tok("lock"),
                value: tok("a"),
                expire_at_ms: None,
                by: Some(p(C1)),
            },
        ),
        (1, C1, acquired("a", None)),
        (2, N1, fact(Fact::ClockStepped { delta_ms: 5_000 })),
    ]);
    assert!(!r.contains(Hazard::ClockMovedExpiry), "{r:?}");
}

#[test]
fn a_step_of_the_holders_own_clock_is_holder_clock_moved() {
    let r = reached_by(vec![
        (1, C1, acquired("a", Some(9_000))),
        (2, C1, fact(Fact::ClockStepped { delta_ms: -3_000 })),
    ]);
    assert!(r.contains(Hazard::HolderClockMoved), "{r:?}");
}

#[test]
fn a_step_of_a_clients_clock_between_holds_is_not_holder_clock_moved() {
    let r = reached_by(vec![
        (1, C1, acquired("a", Some(9_000))),
        (2, C1, released("a")),
        (3, C1, fact(Fact::ClockStepped { delta_ms: -3_000 })),
        (4, C2, acquired("b", Some(9_000))),
    ]);
    assert!(!r.contains(Hazard::HolderClockMoved), "{r:?}");
}

#[test]
fn a_failed_renewal_or_extend_while_holding_is_renewal_failed() {
    for reason in ["renewal failed", "extend failed"] {
        let r = reached_by(vec![
            (1, C1, acquired("a", None)),
            (2, C1, lost("a", reason)),
        ]);
        assert!(r.contains(Hazard::RenewalFailed), "{reason}: {r:?}");
    }
}

#[test]
fn a_loss_for_another_reason_is_not_renewal_failed() {
    let r = reached_by(vec![
        (1, C1, acquired("a", Some(9_000))),
        (2, C1, lost("a", "session expired")),
        // A loss of a token not held (late news) is not a hold's renewal failing.
        (3, C1, lost("b", "renewal failed")),
    ]);
    assert!(!r.contains(Hazard::RenewalFailed), "{r:?}");
}

#[test]
fn a_hold_given_up_or_kept_past_its_validity_is_validity_ran_out() {
    let r = reached_by(vec![
        (1, C1, acquired("a", Some(300))),
        (300, C1, lost("a", "validity ran out")),
    ]);
    assert!(r.contains(Hazard::ValidityRanOut), "{r:?}");
    let r = reached_by(vec![
        (1, C1, acquired("a", Some(300))),
        (2_000, C1, released("a")),
    ]);
    assert!(r.contains(Hazard::ValidityRanOut), "{r:?}");
}

#[test]
fn a_hold_released_within_its_validity_is_not_validity_ran_out() {
    let r = reached_by(vec![
        (1, C1, acquired("a", Some(9_000))),
        (2_000, C1, released("a")),
        (3_000, C2, acquired("b", Some(4_000))),
        (3_500, C2, extended("b", 9_000)),
        (6_000, C2, released("b")),
        // Validity that is never measured cannot run out.
        (7_000, C1, acquired("c", None)),
        (90_000, C1, released("c")),
    ]);
    assert!(!r.contains(Hazard::ValidityRanOut), "{r:?}");
}

#[test]
fn a_hold_renewed_past_its_first_lease_is_held_beyond_lease() {
    let r = reached_by(vec![
        (0, C1, acquired("a", Some(30_000))),
        (10_000, C1, extended("a", 40_000)),
        (20_000, C1, extended("a", 50_000)),
        (45_000, C1, released("a")),
    ]);
    assert!(r.contains(Hazard::HeldBeyondLease), "{r:?}");
    assert!(!r.contains(Hazard::ValidityRanOut), "{r:?}");
}

#[test]
fn a_renewed_hold_released_within_its_first_lease_is_not_held_beyond_lease() {
    let r = reached_by(vec![
        (0, C1, acquired("a", Some(30_000))),
        (10_000, C1, extended("a", 40_000)),
        (20_000, C1, released("a")),
        // Past the lease without a renewal is running out of validity, not renewal.
        (21_000, C2, acquired("b", Some(30_000))),
        (60_000, C2, released("b")),
    ]);
    assert!(!r.contains(Hazard::HeldBeyondLease), "{r:?}");
}

fn restart_then(obs: Observation) -> Hazards {
    reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, N1, Observation::Crashed),
        (500, N1, Observation::Restarted { with_data: false }),
        (500, N1, obs),
    ])
}

#[test]
fn a_key_flushed_by_a_restart_is_restart_lost_keys() {
    let r = restart_then(removed("a", Removal::Flushed, None));
    assert!(r.contains(Hazard::RestartLostKeys), "{r:?}");
}

#[test]
fn a_restart_that_only_drops_expired_keys_lost_nothing() {
    let r = restart_then(removed("a", Removal::Expired, None));
    assert!(!r.contains(Hazard::RestartLostKeys), "{r:?}");
    // A full resync's flush later on is not the restart's loss.
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, N1, Observation::Crashed),
        (500, N1, Observation::Restarted { with_data: true }),
        (900, N1, removed("a", Removal::Flushed, None)),
    ]);
    assert!(!r.contains(Hazard::RestartLostKeys), "{r:?}");
}

#[test]
fn a_node_crash_under_a_held_lock_is_node_crashed_with_lock() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", None)),
        (2, N1, Observation::Crashed),
    ]);
    assert!(r.contains(Hazard::NodeCrashedWithLock), "{r:?}");
}

#[test]
fn a_node_crash_after_the_release_is_not_node_crashed_with_lock() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", None)),
        (2, C1, released("a")),
        (3, N1, removed("a", Removal::Del, Some(C1))),
        (4, N1, Observation::Crashed),
        (5, N2, granted("b", C2)),
        (6, C2, acquired("b", None)),
        (7, N1, Observation::Crashed),
    ]);
    assert!(!r.contains(Hazard::NodeCrashedWithLock), "{r:?}");
}

#[test]
fn a_client_crash_while_holding_is_holder_crashed() {
    let r = reached_by(vec![
        (1, C1, acquired("a", None)),
        (2, C1, Observation::Crashed),
    ]);
    assert!(r.contains(Hazard::HolderCrashed), "{r:?}");
}

#[test]
fn a_client_crash_after_its_release_is_not_holder_crashed() {
    let r = reached_by(vec![
        (1, C1, acquired("a", None)),
        (2, C1, released("a")),
        (3, C1, Observation::Crashed),
    ]);
    assert!(!r.contains(Hazard::HolderCrashed), "{r:?}");
}

fn cut(from: &[u32], to: &[u32]) -> Observation {
    fact(Fact::Links {
        from: from.iter().copied().map(p).collect(),
        to: to.iter().copied().map(p).collect(),
        blocked: true,
    })
}

#[test]
fn a_cut_between_a_holder_and_its_node_is_holder_partitioned() {
    for c in [cut(&[C1], &[N1, N2]), cut(&[N1], &[C1])] {
        let r = reached_by(vec![
            (0, N1, granted("a", C1)),
            (1, C1, acquired("a", None)),
            (2, C1, c),
        ]);
        assert!(r.contains(Hazard::HolderPartitioned), "{r:?}");
    }
}

#[test]
fn a_cut_away_from_the_holders_node_or_a_heal_is_not_holder_partitioned() {
    let r = reached_by(vec![
        (0, N1, granted("a", C1)),
        (1, C1, acquired("a", None)),
        (2, C1, cut(&[C1], &[N2])),
        (3, C2, cut(&[C2], &[N1])),
        (
            4,
            C1,
            fact(Fact::Links {
                from: vec![p(C1)],
                to: vec![p(N1)],
                blocked: false,
            }),
        ),
        (5, C1, released("a")),
        (6, N1, removed("a", Removal::Del, Some(C1))),
        (7, C1, cut(&[C1], &[N1])),
    ]);
    assert!(!r.contains(Hazard::HolderPartitioned), "{r:?}");
}

#[test]
fn witnesses_give_the_first_occurrence_once_in_time_order() {
    let w = witnesses(&hist(vec![
        (1, C1, acquired("a", None)),
        (2, 9, resource(false)),
        (3, 9, resource(false)),
        (4, C1, Observation::Crashed),
    ]));
    let got: Vec<(Hazard, SimTime)> = w.iter().map(|w| (w.hazard, w.at)).collect();
    assert_eq!(
        got,
        vec![
            (Hazard::StaleTokenRejected, ms(2)),
            (Hazard::HolderCrashed, ms(4))
        ]
    );
}

fn attempt(t: &str) -> Observation {
    Observation::Attempt {
        lock: 0,
        token: tok(t),
    }
}
fn gave_up() -> Observation {
    Observation::GaveUp { lock: 0 }
}

#[test]
fn a_grant_landing_after_its_attempt_was_given_up_is_granted_after_gave_up() {
    let r = reached_by(vec![
        (0, C1, attempt("a")),
        (3, C1, gave_up()),
        (4, N1, granted("a", C1)),
    ]);
    assert!(r.contains(Hazard::GrantedAfterGaveUp), "{r:?}");
}

#[test]
fn a_grant_before_the_give_up_or_of_a_new_attempt_is_not_granted_after_gave_up() {
    // Granted while the client still waited, then given up (a Redlock minority): the
    // client knows of it and unlocks it.
    let r = reached_by(vec![
        (0, C1, attempt("a")),
        (1, N1, granted("a", C1)),
        (3, C1, gave_up()),
    ]);
    assert!(!r.contains(Hazard::GrantedAfterGaveUp), "{r:?}");
    // Given up, then a new attempt whose own grant lands: an ordinary grant.
    let r = reached_by(vec![
        (0, C1, attempt("a")),
        (3, C1, gave_up()),
        (5, C1, attempt("b")),
        (6, N1, granted("b", C1)),
    ]);
    assert!(!r.contains(Hazard::GrantedAfterGaveUp), "{r:?}");
    // Another client's token written after c1 gave up is not c1's late grant.
    let r = reached_by(vec![
        (0, C1, attempt("a")),
        (3, C1, gave_up()),
        (4, N1, granted("b", C2)),
    ]);
    assert!(!r.contains(Hazard::GrantedAfterGaveUp), "{r:?}");
}

#[test]
fn a_grant_expiring_before_its_attempt_settles_is_grant_expired_in_flight() {
    let r = reached_by(vec![
        (0, C1, attempt("a")),
        (1, N1, granted("a", C1)),
        (2, C1, Observation::Paused),
        (10_001, N1, removed("a", Removal::Expired, None)),
        (15_000, C1, Observation::Resumed),
    ]);
    assert!(r.contains(Hazard::GrantExpiredInFlight), "{r:?}");
}

#[test]
fn a_grant_that_expires_after_the_acquisition_or_leaves_otherwise_is_not_grant_expired_in_flight() {
    // Acquired first: the expiry is a held key's (`key_expired_while_held`), not this.
    let r = reached_by(vec![
        (0, C1, attempt("a")),
        (1, N1, granted("a", C1)),
        (2, C1, acquired("a", Some(9_000))),
        (10_001, N1, removed("a", Removal::Expired, None)),
    ]);
    assert!(!r.contains(Hazard::GrantExpiredInFlight), "{r:?}");
    assert!(r.contains(Hazard::KeyExpiredWhileHeld), "{r:?}");
    // Deleted by the client's own unlock of a failed attempt, not expired.
    let r = reached_by(vec![
        (0, C1, attempt("a")),
        (1, N1, granted("a", C1)),
        (2, N1, removed("a", Removal::Del, Some(C1))),
    ]);
    assert!(!r.contains(Hazard::GrantExpiredInFlight), "{r:?}");
    // Overwritten by another client's grant before it could expire.
    let r = reached_by(vec![
        (0, C1, attempt("a")),
        (1, N1, granted("a", C1)),
        (
            2,
            N1,
            Observation::KeyWritten {
                key: tok("lock"),
                value: tok("b"),
                expire_at_ms: Some(10_000),
                by: Some(p(C2)),
            },
        ),
        (10_001, N1, removed("b", Removal::Expired, None)),
    ]);
    assert!(!r.contains(Hazard::GrantExpiredInFlight), "{r:?}");
    // The attempt's client crashed: its grant is nobody's attempt any more.
    let r = reached_by(vec![
        (0, C1, attempt("a")),
        (1, N1, granted("a", C1)),
        (2, C1, Observation::Crashed),
        (10_001, N1, removed("a", Removal::Expired, None)),
    ]);
    assert!(!r.contains(Hazard::GrantExpiredInFlight), "{r:?}");
}

#[test]
fn a_nodes_keys_keep_the_order_an_index_map_gives_them_below_and_past_the_scan_limit() {
    // The detectors that look over a node's keys report the first they find: the order
    // must be what the index map they replaced gave (appended, swap-removed).
    let mut ks = Keyspace::default();
    let mut want: IndexMap<Bytes, u32, FxBuildHasher> = IndexMap::default();
    let kept = |v: u32| Kept {
        value: crate::check::token::TokenId::from_index(v as usize),
        has_expiry: false,
        replicated: false,
        in_flight: None,
    };
    let mut x: u64 = 7;
    for step in 0..4_000u32 {
        // A fixed pseudo-random walk over 3 * KEYSPACE_SCAN keys, writing more than
        // removing at first (to pass the limit) and then as often.
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let key = Bytes::from(format!("k{}", (x >> 33) % (3 * KEYSPACE_SCAN as u64)).as_str());
        let write = step < 200 || (x >> 20).is_multiple_of(2);
        if write {
            ks.write(&key, kept(step));
            want.insert(key, step);
        } else {
            let got = ks.remove(&key).map(|k| k.value.index() as u32);
            assert_eq!(got, want.swap_remove(&key));
        }
        let order: Vec<u32> = ks.values().map(|k| k.value.index() as u32).collect();
        let wanted: Vec<u32> = want.values().copied().collect();
        assert_eq!(order, wanted, "at step {step}");
    }
    assert!(ks.index.is_some(), "the walk passed the scan limit");
}

#[test]
fn a_keyspace_that_keeps_removed_keys_slots_orders_its_keys_as_an_index_map() {
    // Writes and removals of 6 keys, then of 12 (past `KEYSPACE_SCAN`, so the map takes
    // over), in a fixed pseudo-random order: after each step the keys kept, and what each
    // keeps, are an index map's (appended when new, swap-removed), whatever slots were
    // reused.
    let mut ks = Keyspace::default();
    let mut want: IndexMap<Bytes, u32, FxBuildHasher> = IndexMap::default();
    let mut x: u64 = 7;
    for step in 0..4_000u32 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let keys = if step < 2_000 { 6 } else { 12 };
        let key = tok(&format!("lock-{}", (x >> 33) % keys));
        let write = (x >> 20).is_multiple_of(2);
        if write {
            let kept = Kept {
                value: TokenId::from_index(step as usize),
                has_expiry: false,
                replicated: false,
                in_flight: None,
            };
            ks.write(&key, kept);
            want.insert(key.clone(), step);
        } else {
            let got = ks.remove(&key).map(|k| k.value.index() as u32);
            assert_eq!(got, want.swap_remove(&key), "step {step}");
        }
        let kept: Vec<(Bytes, u32)> = ks.entries[..ks.live]
            .iter()
            .map(|(k, v)| (k.clone(), v.value.index() as u32))
            .collect();
        let wanted: Vec<(Bytes, u32)> = want.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(kept, wanted, "step {step}");
        assert_eq!(ks.len(), want.len());
        if step < 2_000 {
            assert!(ks.index.is_none(), "6 keys are found one by one");
        }
    }
    assert!(ks.index.is_some(), "the map took over");
}
