//! Active expiry as Redis 7.0.15 runs it (expire.c `activeExpireCycle`): the strict rule,
//! the 1 % fill stop and the table resizing that ends it, and the per-node cron phase.

use crate::process::{Cx, Output, Process};
use crate::proto::command::SetExpiry;
use crate::proto::{Bytes, Command};
use crate::redis::node::{CRON_PERIOD_NS, Caller};
use crate::redis::{RedisConfig, RedisNode, RedisProcess};
use crate::rng::Seed;

fn set(node: &mut RedisNode, now_ms: i64, key: &str, deadline_ms: Option<i64>) {
    let cmd = Command::Set {
        key: Bytes::from(key),
        value: Bytes::from("v"),
        cond: None,
        get: false,
        expiry: deadline_ms.map(SetExpiry::PxAt),
    };
    node.execute(now_ms, &cmd, Caller { proc: None });
}

fn node() -> RedisNode {
    RedisNode::new(RedisConfig {
        observe_keys: false,
        ..RedisConfig::default()
    })
}

#[test]
fn a_key_due_on_the_crons_own_millisecond_stays_until_the_next_cycle() {
    let mut n = node();
    set(&mut n, 900, "k", Some(1000));
    n.active_expire_cycle(1000);
    assert!(
        n.keyspace.raw(b"k").is_some(),
        "now == t: not yet (now > t)"
    );
    n.active_expire_cycle(1001);
    assert!(n.keyspace.raw(b"k").is_none());
}

/// 1,010 keys with a deadline, 1,005 of them due: 50 rounds of 20 remove 1,000, and with
/// 10 keys left in 1,024 slots (under 1 %) the cycle stops with 5 due keys still there.
fn straggler_node(plain_keys: usize) -> RedisNode {
    let mut n = node();
    for i in 0..1005 {
        set(&mut n, 0, &format!("due{i}"), Some(100));
    }
    for i in 0..5 {
        set(&mut n, 0, &format!("later{i}"), Some(60_000));
    }
    for i in 0..plain_keys {
        set(&mut n, 0, &format!("plain{i}"), None);
    }
    // A cron sees the tables at their full size.
    n.active_expire_cycle(50);
    n
}

fn due_left(n: &RedisNode) -> usize {
    n.keyspace
        .iter()
        .filter(|(k, _)| k.starts_with(b"due"))
        .count()
}

#[test]
fn a_cycle_stops_when_the_expires_table_is_under_one_percent_full() {
    let mut n = straggler_node(0);
    n.active_expire_cycle(101);
    assert_eq!(due_left(&n), 5, "stopped at 10 keys in 1,024 slots");
    // Both tables shrink at that cron; the keys table is rehashed first, so the expires
    // table is still rehashing (1,024 + 16 slots) during the next cycle: it stops again.
    n.active_expire_cycle(201);
    assert_eq!(due_left(&n), 5);
    // Rehashed at that cron: 10 keys in 16 slots, the stragglers go 200 ms late.
    n.active_expire_cycle(301);
    assert_eq!(due_left(&n), 0);
    assert_eq!(n.keyspace.len(), 5, "the keys not yet due stay");
}

#[test]
fn stragglers_wait_one_cycle_when_only_the_expires_table_shrinks() {
    // 2,000 keys without a deadline keep the keys table from shrinking, so the expires
    // table's rehash gets the cron's millisecond at once.
    let mut n = straggler_node(2000);
    n.active_expire_cycle(101);
    assert_eq!(due_left(&n), 5);
    n.active_expire_cycle(201);
    assert_eq!(due_left(&n), 0);
}

#[test]
fn a_batch_that_stays_above_one_percent_goes_in_one_cycle() {
    let mut n = node();
    for i in 0..1000 {
        set(&mut n, 0, &format!("due{i}"), Some(100));
    }
    n.active_expire_cycle(50);
    n.active_expire_cycle(101);
    assert_eq!(n.keyspace.len(), 0, "20 keys in 1,024 slots is still 1 %");
}

fn first_cron_after_start(p: &mut RedisProcess, seed: u64) -> (u64, u64) {
    let mut rng = Seed(seed).stream("proc", 0);
    let mut out = Vec::new();
    let mut cx = Cx::new(crate::time::ProcId(0), 0, 0, &mut rng, &mut out);
    p.on_start(&mut cx);
    let after = out
        .iter()
        .find_map(|o| match o {
            Output::Timer { after_ns, .. } => Some(*after_ns),
            _ => None,
        })
        .expect("the cron is armed");
    // What the process's own stream draws next: untouched by the phase.
    (after, rng.next_u64())
}

#[test]
fn each_node_draws_its_cron_phase_from_a_stream_of_its_own() {
    let mut phases = Vec::new();
    for seed in 0..50 {
        let mut p = RedisProcess::new(RedisConfig::default())
            .with_cron_phase(Seed(seed).stream("cron-phase", 0));
        let (after, next) = first_cron_after_start(&mut p, seed);
        assert_eq!(
            after,
            1 + Seed(seed).stream("cron-phase", 0).below(CRON_PERIOD_NS)
        );
        assert!((1..=CRON_PERIOD_NS).contains(&after));
        assert_eq!(next, Seed(seed).stream("proc", 0).next_u64(), "seed {seed}");
        phases.push(after);
        // A restart draws a new phase from the same stream.
        let (again, _) = first_cron_after_start(&mut p, seed);
        let mut s = Seed(seed).stream("cron-phase", 0);
        s.below(CRON_PERIOD_NS);
        assert_eq!(again, 1 + s.below(CRON_PERIOD_NS));
    }
    // Spread over the period, not fixed: some phases in each quarter.
    for q in 0..4 {
        let (lo, hi) = (q * CRON_PERIOD_NS / 4, (q + 1) * CRON_PERIOD_NS / 4);
        assert!(phases.iter().any(|p| (lo..=hi).contains(p)), "quarter {q}");
    }
    // Without a stream (tests, the corpus runner) the cron comes one period after start.
    let mut p = RedisProcess::new(RedisConfig::default());
    assert_eq!(first_cron_after_start(&mut p, 0).0, CRON_PERIOD_NS);
}
