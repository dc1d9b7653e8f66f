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
