//! Every checker is shown to fail on a hand-written history that violates it, and to pass on
//! one that does not: a checker that cannot fail is a defect.

use super::*;

fn p(i: u32) -> ProcId {
    ProcId(i)
}
fn ms(m: u64) -> SimTime {
    SimTime::from_ms(m)
}
fn tok(s: &str) -> Bytes {
    Bytes::from_slice(s.as_bytes())
}
fn name(p: ProcId) -> String {
    format!("c{}", p.0)
}
fn hist(records: Vec<(u64, u32, Observation)>) -> History {
    let mut h = History::default();
    for (t, who, obs) in records {
        h.push(ms(t), p(who), obs);
    }
    h
}
fn acquired(lock: u32, t: &str) -> Observation {
    Observation::Acquired {
        lock,
        token: tok(t),
        fence: None,
        validity_ns: None,
        believed_until: None,
    }
}
fn released(lock: u32, t: &str) -> Observation {
    Observation::Released {
        lock,
        token: tok(t),
    }
}
fn attempt(lock: u32, t: &str) -> Observation {
    Observation::Attempt {
        lock,
        token: tok(t),
    }
}

#[test]
fn mutual_exclusion_fails_on_overlapping_holds() {
    let h = hist(vec![
        (0, 1, acquired(0, "a")),
        (5, 2, acquired(0, "b")),
        (6, 1, released(0, "a")),
    ]);
    let v = mutual_exclusion(&h, &name).expect("overlap must be caught");
    assert_eq!((v.at, v.actors.clone()), (ms(5), vec![p(1), p(2)]));
}

#[test]
fn mutual_exclusion_passes_on_handover_and_after_a_crash() {
    let h = hist(vec![
        (0, 1, acquired(0, "a")),
        (5, 1, released(0, "a")),
        (5, 2, acquired(0, "b")),
        (7, 2, Observation::Crashed),
        (8, 1, acquired(0, "c")),
        (9, 3, acquired(1, "d")),
    ]);
    assert_eq!(mutual_exclusion(&h, &name), None);
}

fn write(
    client: u32,
    base: u64,
    after: u64,
    accepted: bool,
    token: Option<u64>,
) -> (u64, u32, Observation) {
    (
        0,
        9,
        Observation::ResourceWrite {
            client: p(client),
            token,
            base_version: base,
            accepted,
            version_after: after,
        },
    )
}

#[test]
fn resource_safety_fails_on_a_lost_update() {
    let h = hist(vec![write(1, 0, 1, true, None), write(2, 0, 2, true, None)]);
    let v = resource_safety(&h, &name).expect("lost update must be caught");
    assert_eq!(v.actors, vec![p(2), p(1)]);
}

#[test]
fn resource_safety_passes_on_serial_writes_and_ignores_rejected_ones() {
    let h = hist(vec![
        write(1, 0, 1, true, Some(1)),
        write(2, 1, 2, true, Some(2)),
        write(1, 0, 2, false, Some(1)),
    ]);
    assert_eq!(resource_safety(&h, &name), None);
}

fn del(node: u32, value: &str, by: u32) -> (u64, u32, Observation) {
    (
        3,
        node,
        Observation::KeyRemoved {
            key: tok("lock"),
            value: tok(value),
            how: Removal::Del,
            by: Some(p(by)),
        },
    )
}

#[test]
fn foreign_unlock_fails_when_a_client_deletes_anothers_token() {
    let h = hist(vec![
        (0, 1, attempt(0, "c1-1")),
        (1, 2, attempt(0, "c2-1")),
        del(0, "c2-1", 1),
    ]);
    let v = foreign_unlock(&h, &name).expect("foreign DEL must be caught");
    assert_eq!(v.actors, vec![p(1), p(2)]);
}

#[test]
fn foreign_unlock_passes_on_own_deletes_and_expiry() {
    let h = hist(vec![
        (0, 1, attempt(0, "c1-1")),
        del(0, "c1-1", 1),
        (
            4,
            0,
            Observation::KeyRemoved {
                key: tok("lock"),
                value: tok("c1-1"),
                how: Removal::Expired,
                by: None,
            },
        ),
    ]);
    assert_eq!(foreign_unlock(&h, &name), None);
}

fn read(client: u32, token: u64, accepted: bool) -> (u64, u32, Observation) {
    (
        0,
        9,
        Observation::ResourceRead {
            client: p(client),
            token: Some(token),
            version: 0,
            accepted,
        },
    )
}

#[test]
fn fencing_monotonic_fails_when_a_lower_token_is_accepted() {
    let h = hist(vec![read(1, 34, true), read(2, 33, true)]);
    assert!(fencing_monotonic(&h, &name).is_some());
}

#[test]
fn fencing_monotonic_passes_when_lower_tokens_are_rejected() {
    let h = hist(vec![
        read(1, 33, true),
        read(2, 34, true),
        read(1, 33, false),
        write(2, 0, 1, true, Some(34)),
    ]);
    assert_eq!(fencing_monotonic(&h, &name), None);
}

fn live_cfg(end_ms: u64) -> CheckConfig {
    CheckConfig {
        liveness_bound_ns: 10 * crate::time::NS_PER_S,
        release_within_ns: 10 * crate::time::NS_PER_S,
        end: ms(end_ms),
    }
}

#[test]
fn liveness_fails_when_a_crashed_holder_keeps_the_lock_forever() {
    let mut recs = vec![
        (0, 1, attempt(0, "a")),
        (1, 1, acquired(0, "a")),
        (2, 1, Observation::Crashed),
    ];
    for i in 0..30 {
        recs.push((3 + i * 1000, 2, attempt(0, &format!("b{i}"))));
    }
    let v = liveness(&hist(recs), &live_cfg(40_000), &name).expect("deadlock must be caught");
    assert_eq!(v.property, Property::Liveness);
    assert_eq!(v.at, ms(10_003), "waiting since 3 ms + the 10 s bound");
}

#[test]
fn liveness_passes_when_waiters_get_the_lock_in_time() {
    let recs = vec![
        (0, 1, attempt(0, "a")),
        (1, 1, acquired(0, "a")),
        (2, 2, attempt(0, "b")),
        (5_000, 1, released(0, "a")),
        (5_001, 2, acquired(0, "b")),
        (6_000, 2, released(0, "b")),
    ];
    assert_eq!(liveness(&hist(recs), &live_cfg(40_000), &name), None);
}

#[test]
fn longest_overlap_measures_the_widest_two_holder_window() {
    let h = hist(vec![
        (0, 1, acquired(0, "a")),
        (5, 2, acquired(0, "b")),
        (9, 1, released(0, "a")),
        (20, 3, acquired(0, "c")),
        (21, 2, released(0, "b")),
    ]);
    assert_eq!(longest_overlap_ns(&h), SimTime::from_ms(4).0);
    assert_eq!(
        longest_overlap_ns(&hist(vec![
            (0, 1, acquired(0, "a")),
            (5, 1, released(0, "a"))
        ])),
        0
    );
}

fn gave_up(lock: u32) -> Observation {
    Observation::GaveUp { lock }
}

/// A lock taken by a client that crashed, with no TTL (the key stays), and one waiter that
/// crashes every 4 s of trying and is back 1 s later.
fn stuck_lock_with_a_crashing_waiter() -> Vec<(u64, u32, Observation)> {
    let mut recs = vec![
        (0, 1, attempt(0, "a")),
        (1, 1, acquired(0, "a")),
        (2, 1, Observation::Crashed),
    ];
    for i in 0..10u64 {
        let t = 3 + i * 5_000;
        recs.push((t, 2, attempt(0, &format!("b{i}"))));
        recs.push((t + 4_000, 2, Observation::Crashed));
        recs.push((t + 5_000 - 1, 2, Observation::Restarted { with_data: true }));
    }
    recs
}

#[test]
fn liveness_fails_on_a_stuck_lock_whose_waiters_crash_and_restart() {
    let recs = stuck_lock_with_a_crashing_waiter();
    let v = liveness(&hist(recs), &live_cfg(60_000), &name)
        .expect("a lock nobody could take for 40 s of trying must be caught");
    // Tries of 4 s from 3 ms, 5.003 s, 10.003 s: 8 s are summed by 10.003 s, the bound is
    // passed 2 s into the third try.
    assert_eq!(v.at, ms(12_003));
    assert_eq!(v.actors, vec![p(2)]);
    assert!(v.message.contains("in 3 stretches"), "{}", v.message);
}

#[test]
fn liveness_fails_when_two_waiters_take_turns_crashing() {
    // "By anyone": c2 and c3 alternate, each crashing after 3 s; nobody ever gets the lock.
    let mut recs = vec![(0, 1, acquired(0, "a")), (1, 1, Observation::Crashed)];
    for i in 0..8u64 {
        let who = 2 + (i % 2) as u32;
        let t = 2 + i * 3_000;
        recs.push((t, who, attempt(0, &format!("t{i}"))));
        recs.push((t + 3_000, who, Observation::Crashed));
    }
    let v = liveness(&hist(recs), &live_cfg(30_000), &name).expect("must be caught");
    assert_eq!(v.at, ms(10_002), "one continuous stretch from 2 ms");
    assert!(!v.message.contains("stretches"), "{}", v.message);
}

#[test]
fn liveness_fails_on_a_livelock_of_give_ups() {
    // Two clients split the votes, give up, think 500 ms, try again: 1.5 s of trying per
    // 2 s; 10 s of trying are summed after 6 rounds and 1 s of a seventh.
    let mut recs = vec![];
    for i in 0..10u64 {
        let t = i * 2_000;
        recs.push((t, 1, attempt(0, &format!("a{i}"))));
        recs.push((t, 2, attempt(0, &format!("b{i}"))));
        recs.push((t + 1_500, 1, gave_up(0)));
        recs.push((t + 1_500, 2, gave_up(0)));
    }
    let v = liveness(&hist(recs), &live_cfg(20_000), &name).expect("livelock must be caught");
    assert_eq!(v.at, ms(13_000));
}

#[test]
fn liveness_passes_when_a_crashing_waiter_gets_the_lock_in_time() {
    // The same crash loop, but the lock is taken in between: each acquisition resets the
    // clock, so no stretch of trying without an acquisition reaches 10 s.
    let mut recs = vec![];
    for i in 0..10u64 {
        let t = i * 5_000;
        recs.push((t, 2, attempt(0, &format!("b{i}"))));
        recs.push((t + 4_000, 2, Observation::Crashed));
        recs.push((t + 4_500, 3, acquired(0, &format!("c{i}"))));
        recs.push((t + 4_600, 3, released(0, &format!("c{i}"))));
    }
    assert_eq!(liveness(&hist(recs), &live_cfg(60_000), &name), None);
}

#[test]
fn liveness_does_not_count_time_when_nobody_wants_the_lock() {
    // 8 s of failed trying, a minute when nobody wants the lock (c2 gave up and thinks), 1.5 s
    // more, then success: 9.5 s of wanting, under the 10 s bound, though the first attempt
    // was 70 s before the acquisition.
    let recs = vec![
        (0, 1, acquired(0, "a")),
        (1, 1, Observation::Crashed),
        (2, 2, attempt(0, "b1")),
        (8_002, 2, gave_up(0)),
        (70_000, 2, attempt(0, "b3")),
        (71_500, 2, acquired(0, "b3")),
        (72_000, 2, released(0, "b3")),
    ];
    assert_eq!(liveness(&hist(recs), &live_cfg(80_000), &name), None);
}

#[test]
fn liveness_passes_when_nobody_tries_after_the_holder_is_gone() {
    // The key may be stuck, but nobody wants it: no unavailability to report.
    let recs = vec![
        (0, 1, attempt(0, "a")),
        (1, 1, acquired(0, "a")),
        (2, 1, Observation::Crashed),
        (3, 2, attempt(0, "b")),
        (5_000, 2, gave_up(0)),
    ];
    assert_eq!(liveness(&hist(recs), &live_cfg(600_000), &name), None);
}

#[test]
fn liveness_counts_a_waiter_whose_round_spans_another_clients_acquisition() {
    // c2 starts one long round (retries are not reported again) while c1 holds; c3 takes the
    // lock in between and lets go at 2 s; c2 keeps trying and nobody gets the lock after.
    let recs = vec![
        (0, 1, acquired(0, "a")),
        (1, 2, attempt(0, "b")),
        (1_000, 1, released(0, "a")),
        (1_000, 3, acquired(0, "c")),
        (2_000, 3, released(0, "c")),
        (15_000, 2, gave_up(0)),
    ];
    let v = liveness(&hist(recs), &live_cfg(20_000), &name)
        .expect("c2 was trying all along: its round did not end at c3's acquisition");
    assert_eq!(v.at, ms(12_000), "free and wanted from c3's release at 2 s");
    assert_eq!(v.actors, vec![p(2)]);
}

#[test]
fn a_lock_map_gives_its_locks_in_lock_order_as_the_tree_it_replaced() {
    let mut m: ByLock<Vec<u32>> = ByLock::default();
    let mut want: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (i, lock) in [5u32, 1, 9, 1, 0, 5, 7, 9, 2].into_iter().enumerate() {
        m.entry(lock).push(i as u32);
        want.entry(lock).or_default().push(i as u32);
    }
    let got: Vec<(u32, Vec<u32>)> = m.iter().map(|(l, v)| (l, v.clone())).collect();
    let wanted: Vec<(u32, Vec<u32>)> = want.into_iter().collect();
    assert_eq!(got, wanted);
    assert_eq!(m.len(), 6);
}

#[test]
fn removing_a_holder_keeps_the_others_in_order() {
    let mut v = vec![1, 2, 3, 4];
    remove_at(&mut v, 1);
    assert_eq!(v, vec![1, 3, 4]);
    remove_at(&mut v, 2);
    assert_eq!(v, vec![1, 3]);
    remove_at(&mut v, 0);
    assert_eq!(v, vec![3]);
    remove_at(&mut v, 0);
    assert!(v.is_empty());
}

#[test]
fn foreign_unlock_ignores_a_value_two_clients_wrote() {
    // Redisson's unlock latch: every client writes "1" to a key of its own and deletes it.
    let written = |by: u32| Observation::KeyWritten {
        key: tok("latch"),
        value: tok("1"),
        expire_at_ms: None,
        by: Some(p(by)),
    };
    let h = hist(vec![
        (0, 0, written(1)),
        (1, 0, written(2)),
        del(0, "1", 2),
        del(0, "1", 1),
    ]);
    assert_eq!(foreign_unlock(&h, &name), None);
    // A token only one client wrote stays that client's.
    let h = hist(vec![(0, 0, written(1)), del(0, "1", 2)]);
    assert!(foreign_unlock(&h, &name).is_some());
}

fn unlock_called(lock: u32) -> Observation {
    Observation::Fact(Fact::UnlockCalled { lock })
}
fn unlock_returned(lock: u32) -> Observation {
    Observation::Fact(Fact::UnlockReturned { lock })
}
fn release_returns(h: &History, end_ms: u64) -> Option<Violation> {
    check_all(h, &[Property::ReleaseReturns], &live_cfg(end_ms), &name)
        .into_iter()
        .next()
}

#[test]
fn release_returns_fails_on_an_unlock_call_that_never_returns() {
    let h = hist(vec![
        (0, 1, acquired(0, "a")),
        (100, 1, released(0, "a")),
        (100, 1, unlock_called(0)),
        (200, 2, acquired(0, "b")),
    ]);
    let v = release_returns(&h, 60_000).expect("a stuck unlock must be caught");
    assert_eq!(v.property, Property::ReleaseReturns);
    assert_eq!((v.at, v.actors.clone()), (ms(10_100), vec![p(1)]));
    assert!(v.message.contains("still unreturned"), "{}", v.message);
    // Before the bound has passed nothing is decided.
    assert_eq!(release_returns(&h, 10_000), None);
}

#[test]
fn release_returns_fails_on_a_late_return_and_names_the_earliest() {
    let h = hist(vec![
        (0, 2, unlock_called(0)),
        (1_000, 1, unlock_called(0)),
        (30_000, 2, unlock_returned(0)),
    ]);
    let v = release_returns(&h, 60_000).expect("a late return must be caught");
    assert_eq!((v.at, v.actors.clone()), (ms(10_000), vec![p(2)]));
    assert!(v.message.contains("it returned at"), "{}", v.message);
}

#[test]
fn release_returns_passes_on_prompt_returns_and_after_a_crash() {
    let h = hist(vec![
        (0, 1, unlock_called(0)),
        (3, 1, unlock_returned(0)),
        (50, 2, unlock_called(0)),
        (60, 2, Observation::Crashed),
        (20_000, 1, unlock_called(0)),
        (29_000, 1, unlock_returned(0)),
    ]);
    assert_eq!(release_returns(&h, 60_000), None);
}
