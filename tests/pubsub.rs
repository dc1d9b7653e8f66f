//! PUBLISH/SUBSCRIBE on nodes driven by hand: delivery to subscribers of the node and of its
//! replicas, the receiver count, loss of subscriptions in a crash, and the RESP2
//! subscribed-mode restriction of a single connection (as redis-server 7.0.15 answers).

use distlock_sim::proto::{Bytes, Command, Msg, Reply};
use distlock_sim::redis::node::Caller;
use distlock_sim::redis::{RedisConfig, RedisNode};
use distlock_sim::time::ProcId;

mod support;
use support::{M, R, pump};

const A: ProcId = ProcId(5);
const B: ProcId = ProcId(6);
const T0: i64 = 1_700_000_000_000;

fn node(name: &str) -> RedisNode {
    RedisNode::new(RedisConfig {
        name: Bytes::from(name),
        peers: vec![(Bytes::from("m"), M), (Bytes::from("r"), R)],
        ..RedisConfig::default()
    })
}

fn cmd(argv: &[&str]) -> Command {
    Command::parse(argv).expect("parses")
}

fn run(n: &mut RedisNode, from: ProcId, argv: &[&str]) -> Reply {
    n.handle(T0, 0, from, 1, &cmd(argv)).expect("not blocked")
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec())
}

/// Pushes in the outbox (replication traffic set aside).
fn pushes(n: &mut RedisNode) -> Vec<(ProcId, Reply)> {
    n.drain_outbox()
        .filter_map(|(to, m)| match m {
            Msg::Push { reply } => Some((to, reply)),
            _ => None,
        })
        .collect()
}

fn message(ch: &str, m: &str) -> Reply {
    Reply::Array(vec![bulk("message"), bulk(ch), bulk(m)])
}

#[test]
fn publish_counts_receivers_and_pushes_the_message_to_each() {
    let mut m = node("m");
    assert_eq!(run(&mut m, A, &["PUBLISH", "ch", "x"]), Reply::Int(0));
    assert_eq!(
        run(&mut m, A, &["SUBSCRIBE", "ch"]),
        Reply::Array(vec![bulk("subscribe"), bulk("ch"), Reply::Int(1)])
    );
    assert_eq!(
        run(&mut m, B, &["PSUBSCRIBE", "c*"]),
        Reply::Array(vec![bulk("psubscribe"), bulk("c*"), Reply::Int(1)])
    );
    // A client's other commands go on its command connection: not refused.
    assert_eq!(run(&mut m, A, &["GET", "k"]), Reply::Nil);
    assert_eq!(run(&mut m, B, &["PUBLISH", "ch", "hello"]), Reply::Int(2));
    assert_eq!(
        pushes(&mut m),
        vec![
            (A, message("ch", "hello")),
            (
                B,
                Reply::Array(vec![
                    bulk("pmessage"),
                    bulk("c*"),
                    bulk("ch"),
                    bulk("hello")
                ])
            ),
        ]
    );
    // A PUBLISH from a script (Redisson's unlock) delivers the same way.
    assert_eq!(
        run(
            &mut m,
            B,
            &[
                "EVAL",
                "return redis.call('publish', KEYS[1], '0')",
                "1",
                "ch"
            ]
        ),
        Reply::Int(2)
    );
    assert_eq!(pushes(&mut m).len(), 2);
    assert_eq!(
        run(&mut m, A, &["UNSUBSCRIBE"]),
        Reply::Array(vec![bulk("unsubscribe"), bulk("ch"), Reply::Int(0)])
    );
    assert_eq!(run(&mut m, B, &["PUBLISH", "ch", "y"]), Reply::Int(1));
}

#[test]
fn a_multi_channel_subscribe_replies_with_the_first_confirmation_and_pushes_the_rest() {
    let mut m = node("m");
    assert_eq!(
        run(&mut m, A, &["SUBSCRIBE", "a", "b"]),
        Reply::Array(vec![bulk("subscribe"), bulk("a"), Reply::Int(1)])
    );
    assert_eq!(
        pushes(&mut m),
        vec![(
            A,
            Reply::Array(vec![bulk("subscribe"), bulk("b"), Reply::Int(2)])
        )]
    );
}

#[test]
fn a_crashed_node_forgets_its_subscribers() {
    let mut m = node("m");
    run(&mut m, A, &["SUBSCRIBE", "ch"]);
    m.restart(false);
    m.finish_start(T0, 0);
    assert_eq!(run(&mut m, B, &["PUBLISH", "ch", "x"]), Reply::Int(0));
    assert!(pushes(&mut m).is_empty());
    run(&mut m, A, &["SUBSCRIBE", "ch"]);
    assert_eq!(run(&mut m, B, &["PUBLISH", "ch", "x"]), Reply::Int(1));
}

#[test]
fn a_publish_on_the_master_reaches_the_replicas_subscribers_through_the_stream() {
    let (mut m, mut r) = (node("m"), node("r"));
    run(&mut r, B, &["REPLICAOF", "m", "6379"]);
    pump(&mut m, &mut r, T0);
    run(&mut r, A, &["SUBSCRIBE", "redisson_lock__channel:{l}"]);
    // The master has no subscriber of its own: its PUBLISH answers 0, as redis-server does,
    // and the replica delivers the replicated PUBLISH to A.
    assert_eq!(
        run(&mut m, B, &["PUBLISH", "redisson_lock__channel:{l}", "0"]),
        Reply::Int(0)
    );
    assert_eq!(
        pump(&mut m, &mut r, T0),
        vec![(R, A, message("redisson_lock__channel:{l}", "0"))]
    );
    // PUBLISH is allowed on a replica and counts its local subscribers.
    assert_eq!(
        run(
            &mut r,
            B,
            &["PUBLISH", "redisson_lock__channel:{l}", "local"]
        ),
        Reply::Int(1)
    );
}

#[test]
fn a_single_connection_in_subscribed_mode_may_only_subscribe_unsubscribe_and_ping() {
    let mut n = node("m");
    let at = |n: &mut RedisNode, argv: &[&str]| n.execute(T0, &cmd(argv), Caller { proc: None });
    assert_eq!(
        at(&mut n, &["SUBSCRIBE", "ch"]),
        Reply::Array(vec![bulk("subscribe"), bulk("ch"), Reply::Int(1)])
    );
    assert_eq!(
        at(&mut n, &["GET", "k"]),
        Reply::Error(
            "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context".into()
        )
    );
    assert_eq!(
        at(&mut n, &["PING"]),
        Reply::Array(vec![bulk("pong"), bulk("")])
    );
    at(&mut n, &["UNSUBSCRIBE"]);
    assert_eq!(at(&mut n, &["GET", "k"]), Reply::Nil);
    assert_eq!(
        at(&mut n, &["EVAL", "return redis.call('subscribe','x')", "0"]),
        Reply::Error("ERR This Redis command is not allowed from script script: 2f334966be3d5602175118691c9d198b0a695e53, on @user_script:1.".into())
    );
}
