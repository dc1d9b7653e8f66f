//! Replication and persistence as Redis 7.0 does them, shown on nodes driven by hand: the
//! mechanisms behind the failover pitfalls.

use distlock_sim::proto::command::{SetCond, SetExpiry};
use distlock_sim::proto::sentinel::ReplMsg;
use distlock_sim::proto::{Bytes, Command, Msg, Reply};
use distlock_sim::redis::node::{Fsync, Persistence};
use distlock_sim::redis::{RedisConfig, RedisNode};
use distlock_sim::time::{NS_PER_MS, ProcId};

mod support;
use support::{M, R, pump};

const CLIENT: ProcId = ProcId(9);
const T0: i64 = 1_700_000_000_000;

fn node(name: &str, persistence: Persistence) -> RedisNode {
    RedisNode::new(RedisConfig {
        name: Bytes::from(name),
        peers: vec![(Bytes::from("m"), M), (Bytes::from("r"), R)],
        persistence,
        ..RedisConfig::default()
    })
}

fn set_nx_px(token: &str, ttl_ms: i64) -> Command {
    Command::Set {
        key: Bytes::from("lock"),
        value: Bytes::from(token),
        cond: Some(SetCond::Nx),
        get: false,
        expiry: Some(SetExpiry::Px(ttl_ms)),
    }
}

fn linked() -> (RedisNode, RedisNode) {
    let (mut m, mut r) = (node("m", Persistence::None), node("r", Persistence::None));
    let reply = r.handle(
        T0,
        0,
        CLIENT,
        1,
        &Command::ReplicaOf(Some((Bytes::from("m"), Bytes::from("6379")))),
    );
    assert_eq!(reply, Some(Reply::Ok));
    pump(&mut m, &mut r, T0);
    (m, r)
}

#[test]
fn an_acknowledged_lock_is_lost_when_the_master_dies_before_replicating() {
    let (mut m, mut r) = linked();
    // The master grants the lock and replies before streaming it.
    assert_eq!(
        m.handle(T0, 0, CLIENT, 2, &set_nx_px("a", 10_000)),
        Some(Reply::Ok)
    );
    let stream: Vec<_> = m.drain_outbox().collect();
    assert!(
        matches!(&stream[..], [(R, Msg::Repl(ReplMsg::Stream { .. }))]),
        "{stream:?}"
    );
    // ... and dies with the stream unsent. The replica is promoted and grants it again.
    drop(stream);
    assert_eq!(
        r.handle(T0 + 5, 0, CLIENT, 3, &Command::ReplicaOf(None)),
        Some(Reply::Ok)
    );
    assert_eq!(
        r.handle(T0 + 5, 0, ProcId(8), 4, &set_nx_px("b", 10_000)),
        Some(Reply::Ok)
    );
}

#[test]
fn ttls_reach_the_replica_as_absolute_deadlines_of_the_masters_clock() {
    let (mut m, mut r) = linked();
    m.handle(T0, 0, CLIENT, 2, &set_nx_px("a", 1_000));
    let out: Vec<_> = m.drain_outbox().collect();
    let [(R, Msg::Repl(ReplMsg::Stream { cmds, .. }))] = &out[..] else {
        panic!("{out:?}")
    };
    assert_eq!(
        cmds[0],
        Command::Set {
            key: Bytes::from("lock"),
            value: Bytes::from("a"),
            cond: None,
            get: false,
            expiry: Some(SetExpiry::PxAt(T0 + 1_000))
        }
    );
    for (_, msg) in out {
        if let Msg::Repl(x) = msg {
            r.on_repl(T0, 0, M, x);
        }
    }
    // A replica whose clock is 400 ms ahead sees 600 ms left: skew moves every lock's end.
    let pttl = r.handle(
        T0 + 400,
        0,
        CLIENT,
        5,
        &Command::Ttl {
            key: Bytes::from("lock"),
            ms: true,
        },
    );
    assert_eq!(pttl, Some(Reply::Int(600)));
    // Past the deadline by its own clock the replica answers nil, but still stores the key.
    let get = r.handle(T0 + 1_001, 0, CLIENT, 6, &Command::Get(Bytes::from("lock")));
    assert_eq!(get, Some(Reply::Nil));
    assert_eq!(
        r.handle(T0 + 1_001, 0, CLIENT, 7, &Command::DbSize),
        Some(Reply::Int(1))
    );
}

#[test]
fn writes_to_a_replica_are_refused_and_min_replicas_refuses_writes_without_good_replicas() {
    let (_m, mut r) = linked();
    let e = r.handle(T0, 0, CLIENT, 2, &set_nx_px("a", 1_000)).unwrap();
    assert_eq!(
        e,
        Reply::err("READONLY You can't write against a read only replica.")
    );
    let mut lonely = RedisNode::new(RedisConfig {
        min_replicas_to_write: 1,
        ..RedisConfig::default()
    });
    let e = lonely
        .handle(T0, 0, CLIENT, 3, &set_nx_px("a", 1_000))
        .unwrap();
    assert_eq!(
        e,
        Reply::err("NOREPLICAS Not enough good replicas to write.")
    );
}

/// `keep_data`: the process crashed but the machine did not (false: a power loss).
fn restart_after(persistence: Persistence, keep_data: bool, write_at_ms: u64) -> Reply {
    let mut n = node("m", persistence);
    n.finish_start(T0, 0);
    n.handle(
        T0,
        0,
        CLIENT,
        1,
        &Command::Set {
            key: Bytes::from("old"),
            value: Bytes::from("1"),
            cond: None,
            get: false,
            expiry: None,
        },
    );
    // Crons run every 100 ms for 2.5 s (snapshots, fsyncs); one more write at `write_at_ms`.
    for t in (100..=2_500u64).step_by(100) {
        if t == write_at_ms {
            n.handle(
                T0 + t as i64,
                t * NS_PER_MS,
                CLIENT,
                2,
                &set_nx_px("a", 60_000),
            );
        }
        n.cron(T0 + t as i64, t * NS_PER_MS);
    }
    n.restart(keep_data);
    n.finish_start(T0 + 3_000, 3_000 * NS_PER_MS);
    let lock = n
        .handle(
            T0 + 3_000,
            3_000 * NS_PER_MS,
            CLIENT,
            3,
            &Command::Get(Bytes::from("lock")),
        )
        .unwrap();
    let old = n
        .handle(
            T0 + 3_000,
            3_000 * NS_PER_MS,
            CLIENT,
            4,
            &Command::Get(Bytes::from("old")),
        )
        .unwrap();
    Reply::Array(vec![old, lock])
}

#[test]
fn what_a_restart_finds_depends_on_persistence() {
    let both = Reply::Array(vec![Reply::Bulk(b"1".to_vec()), Reply::Bulk(b"a".to_vec())]);
    let only_old = Reply::Array(vec![Reply::Bulk(b"1".to_vec()), Reply::Nil]);
    let nothing = Reply::Array(vec![Reply::Nil, Reply::Nil]);
    assert_eq!(restart_after(Persistence::None, false, 2_400), nothing);
    assert_eq!(
        restart_after(Persistence::None, true, 2_400),
        nothing,
        "no persistence: empty even if the OS survived"
    );
    assert_eq!(
        restart_after(Persistence::Aof(Fsync::Always), true, 2_400),
        both
    );
    assert_eq!(
        restart_after(Persistence::Aof(Fsync::Always), false, 2_400),
        both,
        "fsync always: nothing acknowledged is lost"
    );
    assert_eq!(
        restart_after(Persistence::Aof(Fsync::EverySec), true, 2_400),
        both,
        "a process crash loses nothing written"
    );
    assert_eq!(
        restart_after(Persistence::Aof(Fsync::EverySec), false, 2_400),
        only_old,
        "power loss: the last second is gone"
    );
    assert_eq!(
        restart_after(Persistence::Aof(Fsync::No), false, 1_500),
        nothing,
        "appendfsync no: the OS had flushed nothing yet"
    );
    assert_eq!(
        restart_after(
            Persistence::Rdb {
                every_ns: 1_000 * NS_PER_MS
            },
            false,
            2_100
        ),
        only_old
    );
    assert_eq!(
        restart_after(
            Persistence::Rdb {
                every_ns: 1_000 * NS_PER_MS
            },
            false,
            1_500
        ),
        both
    );
}

/// Runs `argv` on a node (as a client would send it) and returns the reply.
fn run(n: &mut RedisNode, now: i64, argv: &[&str]) -> Reply {
    let cmd = Command::parse(argv).unwrap_or_else(|e| panic!("{argv:?}: {e:?}"));
    n.handle(now, 0, CLIENT, 1, &cmd)
        .expect("not a blocking command")
}

/// The replication stream the master queued, as argument vectors (`name arg...`).
fn stream_of(m: &mut RedisNode, r: &mut RedisNode, now: i64) -> Vec<String> {
    let out: Vec<_> = m.drain_outbox().collect();
    let mut seen = Vec::new();
    for (to, msg) in out {
        if let (R, Msg::Repl(x)) = (to, msg) {
            if let ReplMsg::Stream { cmds, .. } = &x {
                for c in cmds {
                    let words: Vec<String> = c
                        .to_argv()
                        .iter()
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect();
                    seen.push(words.join(" "));
                }
            }
            r.on_repl(now, 0, M, x);
        }
    }
    pump(m, r, now);
    seen
}

const REDISSON_LOCK: &str = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
const REDISSON_UNLOCK: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;";

#[test]
fn redissons_lock_and_unlock_scripts_replicate_by_their_effects() {
    let (mut m, mut r) = linked();
    let lock = ["EVAL", REDISSON_LOCK, "1", "lock", "30000", "uuid:1"];
    assert_eq!(run(&mut m, T0, &lock), Reply::Nil);
    assert_eq!(
        stream_of(&mut m, &mut r, T0),
        // Redis 7.0 wraps a script's several effects in MULTI/EXEC (seen with
        // `redis-cli --replica`): the replica applies them together.
        [
            "MULTI".to_string(),
            "HINCRBY lock uuid:1 1".to_string(),
            format!("PEXPIREAT lock {}", T0 + 30_000),
            "EXEC".to_string()
        ]
    );
    // The replica holds the same hash and the master's absolute deadline.
    assert_eq!(
        run(&mut r, T0, &["HGETALL", "lock"]),
        Reply::Array(vec![
            Reply::Bulk(b"uuid:1".to_vec()),
            Reply::Bulk(b"1".to_vec())
        ])
    );
    assert_eq!(
        run(&mut r, T0, &["PEXPIRETIME", "lock"]),
        Reply::Int(T0 + 30_000)
    );
    // Another holder is told the time left; nothing is replicated.
    let other = ["EVAL", REDISSON_LOCK, "1", "lock", "30000", "uuid:2"];
    assert_eq!(run(&mut m, T0 + 100, &other), Reply::Int(29_900));
    assert!(stream_of(&mut m, &mut r, T0 + 100).is_empty());
    let unlock = [
        "EVAL",
        REDISSON_UNLOCK,
        "2",
        "lock",
        "redisson_lock__channel:{lock}",
        "0",
        "30000",
        "uuid:1",
    ];
    assert_eq!(run(&mut m, T0 + 200, &unlock), Reply::Int(1));
    assert_eq!(
        stream_of(&mut m, &mut r, T0 + 200),
        [
            "MULTI",
            "HINCRBY lock uuid:1 -1",
            "DEL lock",
            "PUBLISH redisson_lock__channel:{lock} 0",
            "EXEC"
        ]
    );
    assert_eq!(run(&mut r, T0 + 200, &["EXISTS", "lock"]), Reply::Int(0));
}

#[test]
fn getdel_getex_and_hdel_replicate_as_redis_rewrites_them() {
    let (mut m, mut r) = linked();
    run(&mut m, T0, &["SET", "g", "v"]);
    run(&mut m, T0, &["HSET", "h", "a", "1", "b", "2"]);
    stream_of(&mut m, &mut r, T0);
    assert_eq!(
        run(&mut m, T0, &["GETEX", "g", "PX", "5000"]),
        Reply::Bulk(b"v".to_vec())
    );
    assert_eq!(
        run(&mut m, T0, &["GETEX", "g", "PERSIST"]),
        Reply::Bulk(b"v".to_vec())
    );
    // No TTL left: a second PERSIST changes nothing and sends nothing.
    assert_eq!(
        run(&mut m, T0, &["GETEX", "g", "PERSIST"]),
        Reply::Bulk(b"v".to_vec())
    );
    assert_eq!(run(&mut m, T0, &["GETEX", "g"]), Reply::Bulk(b"v".to_vec()));
    assert_eq!(
        run(&mut m, T0, &["GETDEL", "g"]),
        Reply::Bulk(b"v".to_vec())
    );
    // An HDEL that removes nothing is not propagated; the one that empties the hash is, alone.
    assert_eq!(run(&mut m, T0, &["HDEL", "h", "zz"]), Reply::Int(0));
    assert_eq!(run(&mut m, T0, &["HDEL", "h", "a", "b"]), Reply::Int(2));
    assert_eq!(
        stream_of(&mut m, &mut r, T0),
        [
            format!("PEXPIREAT g {}", T0 + 5_000),
            "PERSIST g".to_string(),
            "DEL g".to_string(),
            "HDEL h a b".to_string(),
        ]
    );
    assert_eq!(
        run(&mut r, T0, &["DBSIZE"]),
        Reply::Int(0),
        "the replica dropped the emptied hash on the HDEL itself"
    );
}

#[test]
fn a_full_sync_copies_hashes_with_their_deadlines() {
    let (mut m, mut r) = (node("m", Persistence::None), node("r", Persistence::None));
    run(&mut m, T0, &["HSET", "lock", "uuid:1", "2", "x", "y"]);
    run(&mut m, T0, &["PEXPIRE", "lock", "30000"]);
    assert_eq!(run(&mut r, T0, &["REPLICAOF", "m", "6379"]), Reply::Ok);
    pump(&mut m, &mut r, T0);
    assert_eq!(
        run(&mut r, T0, &["HGETALL", "lock"]),
        run(&mut m, T0, &["HGETALL", "lock"])
    );
    assert_eq!(
        run(&mut r, T0, &["PEXPIRETIME", "lock"]),
        Reply::Int(T0 + 30_000)
    );
}

#[test]
fn time_is_the_nodes_wall_clock_in_and_out_of_scripts() {
    let mut n = node("m", Persistence::None);
    let want = Reply::Array(vec![
        Reply::Bulk(b"1700000001".to_vec()),
        Reply::Bulk(b"234000".to_vec()),
    ]);
    assert_eq!(run(&mut n, T0 + 1_234, &["TIME"]), want);
    assert_eq!(
        run(
            &mut n,
            T0 + 1_234,
            &["EVAL", "return redis.call('time')", "0"]
        ),
        want
    );
}

#[test]
fn a_hash_removed_by_its_last_hdel_is_recorded_under_its_holders_field() {
    use distlock_sim::history::{Observation, Removal};
    let mut n = node("m", Persistence::None);
    run(&mut n, T0, &["HSET", "lock", "uuid:1", "1"]);
    let written: Vec<Observation> = n.drain_observations().collect();
    assert!(
        matches!(&written[..], [Observation::KeyWritten { value, .. }] if value.as_ref() == b"uuid:1"),
        "{written:?}"
    );
    run(&mut n, T0, &["HDEL", "lock", "uuid:1"]);
    let removed: Vec<Observation> = n.drain_observations().collect();
    assert!(
        matches!(
            &removed[..],
            [Observation::KeyRemoved { value, how: Removal::Del, by: Some(CLIENT), .. }]
                if value.as_ref() == b"uuid:1"
        ),
        "{removed:?}"
    );
}

/// Redis 7.0.15 counts a replica for WAIT and for min-replicas-to-write only once it is
/// online (replication.c:3444-3457 `replicationCountAcksByOffset` and :3381-3398
/// `refreshGoodSlavesCount` skip `replstate != SLAVE_STATE_ONLINE`): after its first full
/// sync, which the master learns from the replica's first ack (:1203-1204, :2240-2241).
#[test]
fn a_replica_still_in_its_first_full_sync_is_counted_by_neither_wait_nor_min_replicas() {
    let mut m = RedisNode::new(RedisConfig {
        min_replicas_to_write: 1,
        ..node("m", Persistence::None).config.clone()
    });
    let mut r = node("r", Persistence::None);
    let wait0 = Command::Wait {
        replicas: 0,
        timeout_ms: 0,
    };
    // r asks for its sync; m attaches it and sends the payload, which is still on its way.
    let reply = r.handle(
        T0,
        0,
        CLIENT,
        1,
        &Command::ReplicaOf(Some((Bytes::from("m"), Bytes::from("6379")))),
    );
    assert_eq!(reply, Some(Reply::Ok));
    for (to, msg) in r.drain_outbox().collect::<Vec<_>>() {
        if let (M, Msg::Repl(x)) = (to, msg) {
            m.on_repl(T0, 0, R, x);
        }
    }
    let payload: Vec<_> = m.drain_outbox().collect();
    assert!(
        matches!(&payload[..], [(R, Msg::Repl(ReplMsg::FullSync { .. }))]),
        "{payload:?}"
    );
    // `WAIT 0 0` answers the replicas that acked the client's offset (0: it never wrote):
    // none is online yet. A write needs one good replica: refused.
    assert_eq!(m.handle(T0, 0, CLIENT, 2, &wait0), Some(Reply::Int(0)));
    assert_eq!(
        m.handle(T0, 0, CLIENT, 3, &set_nx_px("a", 10_000)),
        Some(Reply::err("NOREPLICAS Not enough good replicas to write."))
    );
    // The payload lands, r acks, and from then on it counts for both.
    for (_, msg) in payload {
        if let Msg::Repl(x) = msg {
            r.on_repl(T0 + 10, 0, M, x);
        }
    }
    pump(&mut m, &mut r, T0 + 10);
    assert_eq!(m.handle(T0 + 10, 0, CLIENT, 4, &wait0), Some(Reply::Int(1)));
    assert_eq!(
        m.handle(T0 + 10, 0, CLIENT, 5, &set_nx_px("a", 10_000)),
        Some(Reply::Ok)
    );
}

/// The model of tests/models/wait-replica-still-syncing.ron: a WAIT issued while the only
/// replica has not had its full sync times out with 0, so the writer never holds a lock the
/// promoted replica lacks (before issue 25 it did, on every seed of 0..1000).
#[test]
fn a_wait_issued_while_the_replica_is_still_syncing_counts_no_replica_and_the_lock_survives_failover()
 {
    distlock_sim::testing::assert_model_holds(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/models/wait-replica-still-syncing.ron"
    ));
}

#[test]
fn replicaof_the_master_already_followed_says_so_and_unblocks_nobody() {
    let (_m, mut r) = linked();
    let again = Command::ReplicaOf(Some((Bytes::from("m"), Bytes::from("6379"))));
    assert_eq!(
        r.handle(T0 + 1, 0, CLIENT, 5, &again),
        Some(Reply::Status(
            "OK Already connected to specified master".into()
        ))
    );
}

#[test]
fn a_master_turned_replica_answers_its_blocked_clients_unblocked_and_forgets_them() {
    let (mut m, _r) = linked();
    let blpop = Command::BLPop {
        keys: vec![Bytes::from("q")],
        timeout: Bytes::from("0"),
    };
    assert_eq!(m.handle(T0, 0, ProcId(7), 11, &blpop), None);
    let _ = m.drain_outbox().count();
    let demote = Command::ReplicaOf(Some((Bytes::from("r"), Bytes::from("6379"))));
    assert_eq!(m.handle(T0 + 1, 0, CLIENT, 12, &demote), Some(Reply::Ok));
    let replies: Vec<_> = m
        .drain_outbox()
        .filter(|(to, _)| *to == ProcId(7))
        .collect();
    assert_eq!(
        replies,
        vec![(
            ProcId(7),
            Msg::Reply {
                id: 11,
                reply: Reply::err(
                    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
                ),
            }
        )]
    );
    // Nothing is left to serve: a push on the new replica's stream answers nobody.
    m.before_sleep(T0 + 60_000);
    assert_eq!(
        m.drain_outbox().filter(|(to, _)| *to == ProcId(7)).count(),
        0
    );
}
