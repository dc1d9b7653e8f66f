//! SELECT and MULTI/EXEC/WATCH on nodes driven by hand, where the corpus (one connection per
//! case) cannot reach: two clients, the replication stream, restarts, and the bounds.
//! Every reply and stream shape here was checked against Redis 7.0.15 (redis-cli, and
//! `redis-cli --replica` for the streams).

use distlock_sim::proto::sentinel::ReplMsg;
use distlock_sim::proto::{Bytes, Command, Msg, Reply};
use distlock_sim::redis::node::Persistence;
use distlock_sim::redis::node::connection::{MULTI_QUEUE_CAP, WATCHED_KEYS_CAP};
use distlock_sim::redis::{RedisConfig, RedisNode};
use distlock_sim::time::ProcId;

mod support;
use support::{M, R, pump};

const A: ProcId = ProcId(7);
const B: ProcId = ProcId(8);
const T0: i64 = 1_700_000_000_000;

fn node(name: &str, persistence: Persistence) -> RedisNode {
    RedisNode::new(RedisConfig {
        name: Bytes::from(name),
        peers: vec![(Bytes::from("m"), M), (Bytes::from("r"), R)],
        persistence,
        ..RedisConfig::default()
    })
}

fn run(n: &mut RedisNode, now: i64, client: ProcId, argv: &[&str]) -> Reply {
    match Command::parse(argv) {
        Ok(cmd) => n
            .handle(now, 0, client, 1, &cmd)
            .expect("not a blocking command"),
        Err(e) => n.reject(distlock_sim::redis::node::Caller { proc: Some(client) }, &e),
    }
}

fn ok(n: &mut RedisNode, now: i64, client: ProcId, argv: &[&str]) {
    let r = run(n, now, client, argv);
    assert!(
        matches!(&r, Reply::Ok) || matches!(&r, Reply::Status(s) if s == "QUEUED"),
        "{argv:?}: {r}"
    );
}

fn linked() -> (RedisNode, RedisNode) {
    let (mut m, mut r) = (node("m", Persistence::None), node("r", Persistence::None));
    ok(&mut r, T0, A, &["REPLICAOF", "m", "6379"]);
    pump(&mut m, &mut r, T0);
    (m, r)
}

/// The stream the master queued since the last call, one string per command; delivered.
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

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec())
}

#[test]
fn another_clients_write_to_a_watched_key_makes_exec_answer_nil() {
    let mut n = node("m", Persistence::None);
    ok(&mut n, T0, A, &["SET", "k", "v"]);
    ok(&mut n, T0, A, &["WATCH", "k"]);
    ok(&mut n, T0, B, &["SET", "k", "v"]);
    ok(&mut n, T0, A, &["MULTI"]);
    ok(&mut n, T0, A, &["SET", "k", "mine"]);
    assert_eq!(run(&mut n, T0, A, &["EXEC"]), Reply::Nil);
    assert_eq!(run(&mut n, T0, B, &["GET", "k"]), bulk("v"));
    // A write in another db, or a failed SET NX, is not a touch.
    ok(&mut n, T0, A, &["WATCH", "k"]);
    ok(&mut n, T0, B, &["SELECT", "1"]);
    ok(&mut n, T0, B, &["SET", "k", "other"]);
    ok(&mut n, T0, B, &["SELECT", "0"]);
    assert_eq!(run(&mut n, T0, B, &["SET", "k", "x", "NX"]), Reply::Nil);
    ok(&mut n, T0, A, &["MULTI"]);
    ok(&mut n, T0, A, &["SET", "k", "mine"]);
    assert_eq!(run(&mut n, T0, A, &["EXEC"]), Reply::Array(vec![Reply::Ok]));
}

#[test]
fn each_connection_has_its_own_db_and_transaction() {
    let mut n = node("m", Persistence::None);
    ok(&mut n, T0, A, &["SELECT", "3"]);
    ok(&mut n, T0, A, &["SET", "k", "three"]);
    ok(&mut n, T0, B, &["MULTI"]);
    // A's commands run at once while B queues.
    assert_eq!(run(&mut n, T0, A, &["GET", "k"]), bulk("three"));
    ok(&mut n, T0, B, &["GET", "k"]);
    assert_eq!(
        run(&mut n, T0, B, &["EXEC"]),
        Reply::Array(vec![Reply::Nil])
    );
    // Between commands the node's `keyspace` is db 0 (what checkers read).
    assert!(n.keyspace.raw(b"k").is_none());
    assert_eq!(n.selected_db(Some(A)), 3);
    assert_eq!(n.selected_db(Some(B)), 0);
}

#[test]
fn a_transaction_replicates_as_one_unit_and_selects_follow_the_db() {
    let (mut m, mut r) = linked();
    ok(&mut m, T0, A, &["MULTI"]);
    ok(&mut m, T0, A, &["SELECT", "2"]);
    ok(&mut m, T0, A, &["SET", "x", "1"]);
    ok(&mut m, T0, A, &["SELECT", "0"]);
    ok(&mut m, T0, A, &["SET", "y", "1"]);
    ok(&mut m, T0, A, &["GET", "y"]);
    assert_eq!(
        run(&mut m, T0, A, &["EXEC"]),
        Reply::Array(vec![Reply::Ok, Reply::Ok, Reply::Ok, Reply::Ok, bulk("1")])
    );
    // As redis-cli --replica showed it: the first effect's SELECT before MULTI.
    assert_eq!(
        stream_of(&mut m, &mut r, T0),
        [
            "SELECT 2", "MULTI", "SET x 1", "SELECT 0", "SET y 1", "EXEC"
        ]
    );
    // One write: no wrapper. A read-only transaction: nothing.
    ok(&mut m, T0, A, &["MULTI"]);
    ok(&mut m, T0, A, &["SET", "a", "1"]);
    ok(&mut m, T0, A, &["GET", "a"]);
    run(&mut m, T0, A, &["EXEC"]);
    assert_eq!(stream_of(&mut m, &mut r, T0), ["SET a 1"]);
    ok(&mut m, T0, A, &["MULTI"]);
    ok(&mut m, T0, A, &["GET", "a"]);
    run(&mut m, T0, A, &["EXEC"]);
    assert!(stream_of(&mut m, &mut r, T0).is_empty());
    // A script runs in the caller's db; its SELECT is its own; the stream says so.
    ok(&mut m, T0, A, &["SELECT", "5"]);
    let script =
        "redis.call('set', 's', '5') redis.call('select', 6) redis.call('set', 's', '6') return 1";
    assert_eq!(run(&mut m, T0, A, &["EVAL", script, "0"]), Reply::Int(1));
    assert_eq!(
        stream_of(&mut m, &mut r, T0),
        [
            "SELECT 5", "MULTI", "SET s 5", "SELECT 6", "SET s 6", "EXEC"
        ]
    );
    ok(&mut m, T0, A, &["SET", "t", "5"]);
    assert_eq!(stream_of(&mut m, &mut r, T0), ["SELECT 5", "SET t 5"]);
    // The replica holds each key in its db.
    ok(&mut r, T0, B, &["SELECT", "2"]);
    assert_eq!(run(&mut r, T0, B, &["GET", "x"]), bulk("1"));
    ok(&mut r, T0, B, &["SELECT", "6"]);
    assert_eq!(run(&mut r, T0, B, &["GET", "s"]), bulk("6"));
    ok(&mut r, T0, B, &["SELECT", "5"]);
    assert_eq!(run(&mut r, T0, B, &["GET", "s"]), bulk("5"));
    assert_eq!(run(&mut r, T0, B, &["GET", "t"]), bulk("5"));
}

#[test]
fn a_full_sync_carries_every_db_and_the_streams_db() {
    let mut m = node("m", Persistence::None);
    let mut r = node("r", Persistence::None);
    ok(&mut m, T0, A, &["SELECT", "7"]);
    ok(&mut m, T0, A, &["SET", "k", "seven", "PX", "5000"]);
    ok(&mut r, T0, B, &["REPLICAOF", "m", "6379"]);
    pump(&mut m, &mut r, T0);
    ok(&mut r, T0, B, &["SELECT", "7"]);
    assert_eq!(run(&mut r, T0, B, &["GET", "k"]), bulk("seven"));
    assert_eq!(
        run(&mut r, T0, B, &["PEXPIRETIME", "k"]),
        Reply::Int(T0 + 5000)
    );
    // The stream continues in db 7 for a replica that synced after it selected 7.
    ok(&mut m, T0, A, &["SET", "j", "1"]);
    pump(&mut m, &mut r, T0);
    assert_eq!(run(&mut r, T0, B, &["GET", "j"]), bulk("1"));
}

#[test]
fn keys_in_other_dbs_expire_and_survive_a_restart_as_db_0_does() {
    let mut n = node(
        "m",
        Persistence::Aof(distlock_sim::redis::node::Fsync::Always),
    );
    ok(&mut n, T0, A, &["SELECT", "4"]);
    ok(&mut n, T0, A, &["SET", "short", "v", "PX", "100"]);
    ok(&mut n, T0, A, &["SET", "long", "v"]);
    let _ = n.cron(T0 + 200, 200_000_000);
    // Active expiry deleted the key (a lookup would hide it anyway: DBSIZE counts).
    assert_eq!(run(&mut n, T0 + 200, A, &["DBSIZE"]), Reply::Int(1));
    n.restart(false);
    n.finish_start(T0 + 300, 300_000_000);
    ok(&mut n, T0 + 300, A, &["SELECT", "4"]);
    assert_eq!(run(&mut n, T0 + 300, A, &["GET", "long"]), bulk("v"));
}

#[test]
fn a_restart_ends_every_connections_db_and_transaction() {
    let mut n = node("m", Persistence::None);
    ok(&mut n, T0, A, &["SELECT", "2"]);
    ok(&mut n, T0, B, &["MULTI"]);
    n.restart(false);
    n.finish_start(T0, 0);
    assert_eq!(n.selected_db(Some(A)), 0);
    assert_eq!(
        run(&mut n, T0, B, &["EXEC"]),
        Reply::err("ERR EXEC without MULTI")
    );
}

#[test]
fn wait_inside_multi_is_queued_and_answers_at_once() {
    let (mut m, mut r) = linked();
    ok(&mut m, T0, A, &["MULTI"]);
    ok(&mut m, T0, A, &["SET", "a", "1"]);
    ok(&mut m, T0, A, &["WAIT", "1", "0"]);
    // WAIT with a timeout of 0 would block forever outside MULTI; inside it answers at
    // once, counting acks of the client's write offset from before this EXEC (whose
    // effects are streamed when it ends): the replica acked that (0) long ago.
    assert_eq!(
        run(&mut m, T0, A, &["EXEC"]),
        Reply::Array(vec![Reply::Ok, Reply::Int(1)])
    );
    // The next one counts the first transaction's offset, not acked yet (Redis 7.0.15
    // answers the same pair, 1 then 0).
    ok(&mut m, T0, A, &["MULTI"]);
    ok(&mut m, T0, A, &["SET", "a", "2"]);
    ok(&mut m, T0, A, &["WAIT", "1", "0"]);
    assert_eq!(
        run(&mut m, T0, A, &["EXEC"]),
        Reply::Array(vec![Reply::Ok, Reply::Int(0)])
    );
    pump(&mut m, &mut r, T0);
}

#[test]
fn a_multi_queue_and_the_watched_keys_are_bounded() {
    let mut n = node("m", Persistence::None);
    ok(&mut n, T0, A, &["MULTI"]);
    for _ in 0..MULTI_QUEUE_CAP {
        ok(&mut n, T0, A, &["INCR", "c"]);
    }
    let full = run(&mut n, T0, A, &["INCR", "c"]);
    assert!(
        matches!(&full, Reply::Error(e) if e.contains("at most")),
        "{full}"
    );
    // The refused command spoils the transaction, as a queue-time error does.
    assert_eq!(
        run(&mut n, T0, A, &["EXEC"]),
        Reply::err("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(run(&mut n, T0, A, &["GET", "c"]), Reply::Nil);
    let keys: Vec<String> = (0..WATCHED_KEYS_CAP).map(|i| format!("k{i}")).collect();
    let mut argv = vec!["WATCH"];
    argv.extend(keys.iter().map(String::as_str));
    ok(&mut n, T0, A, &argv);
    let over = run(&mut n, T0, A, &["WATCH", "one-more"]);
    assert!(
        matches!(&over, Reply::Error(e) if e.contains("at most")),
        "{over}"
    );
}

#[test]
fn an_already_expired_watched_key_deleted_by_expiry_does_not_abort() {
    let mut n = node("m", Persistence::None);
    ok(&mut n, T0, A, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    ok(&mut n, T0, A, &["SET", "k", "v", "PX", "100"]);
    ok(&mut n, T0 + 200, A, &["WATCH", "k"]);
    // Another client's read deletes it lazily: no change, logically.
    assert_eq!(run(&mut n, T0 + 200, B, &["GET", "k"]), Reply::Nil);
    ok(&mut n, T0 + 200, A, &["MULTI"]);
    assert_eq!(run(&mut n, T0 + 200, A, &["EXEC"]), Reply::Array(vec![]));
    // Watched while live, then expired: EXEC answers nil even though nothing deleted it.
    ok(&mut n, T0 + 200, A, &["SET", "k", "v", "PX", "100"]);
    ok(&mut n, T0 + 200, A, &["WATCH", "k"]);
    ok(&mut n, T0 + 400, A, &["MULTI"]);
    assert_eq!(run(&mut n, T0 + 400, A, &["EXEC"]), Reply::Nil);
}

#[test]
fn a_transaction_with_writes_is_refused_whole_by_a_node_demoted_since_multi() {
    let mut m = node("m", Persistence::None);
    let mut r = node("r", Persistence::None);
    ok(&mut r, T0, A, &["MULTI"]);
    ok(&mut r, T0, A, &["SET", "k", "v"]);
    ok(&mut r, T0, B, &["REPLICAOF", "m", "6379"]);
    pump(&mut m, &mut r, T0);
    assert_eq!(
        run(&mut r, T0, A, &["EXEC"]),
        Reply::err(
            "EXECABORT Transaction discarded because of: READONLY You can't write against a read only replica."
        )
    );
    // Reads only: it runs.
    ok(&mut r, T0, A, &["MULTI"]);
    ok(&mut r, T0, A, &["GET", "k"]);
    assert_eq!(
        run(&mut r, T0, A, &["EXEC"]),
        Reply::Array(vec![Reply::Nil])
    );
}
