//! The lock commands' short paths (SET replacing in place, the native scripts and their
//! cache bit) give what the general paths gave: keyspace order, replies, the records.

use std::sync::Arc;

use crate::history::{Observation, Removal};
use crate::proto::command::{ScriptRef, SetCond, SetExpiry};
use crate::proto::scripts::UNLOCK_SRC;
use crate::proto::{Bytes, Command, Reply, Script};
use crate::redis::node::Caller;
use crate::redis::{RedisConfig, RedisNode};
use crate::time::ProcId;

const CLIENT: Caller = Caller {
    proc: Some(ProcId(7)),
};

fn set(key: &str, value: &str, nx: bool, px: Option<i64>) -> Command {
    Command::Set {
        key: Bytes::from(key),
        value: Bytes::from(value),
        cond: nx.then_some(SetCond::Nx),
        get: false,
        expiry: px.map(SetExpiry::Px),
    }
}

fn unlock(script: ScriptRef, key: &str, token: &str) -> Command {
    Command::Eval {
        script,
        keys: Arc::new([Bytes::from(key)]),
        args: Arc::new([Bytes::from(token)]),
        read_only: false,
    }
}

fn keys(n: &mut RedisNode, now_ms: i64) -> Reply {
    n.execute(now_ms, &Command::Keys(Bytes::from("*")), CLIENT)
}

fn bulks(names: &[&str]) -> Reply {
    Reply::Array(
        names
            .iter()
            .map(|s| Reply::Bulk(s.as_bytes().to_vec()))
            .collect(),
    )
}

#[test]
fn a_set_over_a_live_key_keeps_its_place_and_a_set_over_an_expired_one_goes_last() {
    let mut n = RedisNode::new(RedisConfig::default());
    for k in ["a", "b", "c"] {
        assert_eq!(
            n.execute(0, &set(k, "1", false, Some(100)), CLIENT),
            Reply::Ok
        );
    }
    assert_eq!(
        n.execute(10, &set("a", "2", false, None), CLIENT),
        Reply::Ok
    );
    assert_eq!(
        n.execute(10, &set("b", "2", true, None), CLIENT),
        Reply::Nil
    );
    assert_eq!(keys(&mut n, 10), bulks(&["a", "b", "c"]));
    // `b` and `c` expired at 100: the lookup deletes `b` (swap-removal moves `c` into its
    // place) and the SET appends it.
    assert_eq!(
        n.execute(101, &set("b", "3", true, None), CLIENT),
        Reply::Ok
    );
    assert_eq!(keys(&mut n, 101), bulks(&["a", "b"]));
    assert_eq!(
        n.execute(101, &Command::Get(Bytes::from("a")), CLIENT),
        Reply::Bulk(b"2".to_vec())
    );
}

#[test]
fn set_and_the_native_unlock_record_what_they_wrote_and_removed() {
    let mut n = RedisNode::new(RedisConfig::default());
    let by = CLIENT.proc;
    assert_eq!(
        n.execute(5, &set("lock", "t1", true, Some(30)), CLIENT),
        Reply::Ok
    );
    assert_eq!(
        n.execute(6, &set("lock", "t1", false, Some(40)), CLIENT),
        Reply::Ok
    );
    let script = || ScriptRef::Source(Script::new(UNLOCK_SRC.as_bytes()));
    assert_eq!(
        n.execute(7, &unlock(script(), "lock", "t2"), CLIENT),
        Reply::Int(0)
    );
    assert_eq!(
        n.execute(7, &unlock(script(), "lock", "t1"), CLIENT),
        Reply::Int(1)
    );
    let got: Vec<Observation> = n.drain_observations().collect();
    let written = |at| Observation::KeyWritten {
        key: Bytes::from("lock"),
        value: Bytes::from("t1"),
        expire_at_ms: Some(at),
        by,
    };
    assert_eq!(
        got,
        vec![
            written(35),
            // The same value rewritten with a new deadline: no removal record.
            written(46),
            Observation::KeyRemoved {
                key: Bytes::from("lock"),
                value: Bytes::from("t1"),
                how: Removal::Del,
                by,
            },
        ]
    );
}

#[test]
fn evalsha_of_the_unlock_script_is_noscript_until_cached_again_after_a_flush() {
    let mut n = RedisNode::new(RedisConfig::default());
    let s = Script::new(UNLOCK_SRC.as_bytes());
    let by_sha = || unlock(ScriptRef::Sha(Some(s.sha)), "lock", "t");
    let noscript = Reply::err(crate::proto::reply::NOSCRIPT);
    assert_eq!(n.execute(0, &by_sha(), CLIENT), noscript);
    assert_eq!(
        n.execute(
            0,
            &unlock(ScriptRef::Source(s.clone()), "lock", "t"),
            CLIENT
        ),
        Reply::Int(0)
    );
    assert_eq!(n.execute(0, &by_sha(), CLIENT), Reply::Int(0));
    assert_eq!(n.execute(0, &Command::ScriptFlush, CLIENT), Reply::Ok);
    assert_eq!(n.execute(0, &by_sha(), CLIENT), noscript);
    let load = Command::ScriptLoad(Bytes::from(UNLOCK_SRC));
    assert_eq!(
        n.execute(0, &load, CLIENT),
        Reply::Bulk(s.sha_hex().into_bytes())
    );
    assert_eq!(n.execute(0, &by_sha(), CLIENT), Reply::Int(0));
}

#[test]
fn a_refused_set_nx_is_nil_over_any_type_after_the_ttl_check_and_wrongtype_only_with_get() {
    let mut n = RedisNode::new(RedisConfig::default());
    assert_eq!(
        n.execute(
            0,
            &Command::RPush(Bytes::from("l"), vec![Bytes::from("x")]),
            CLIENT
        ),
        Reply::Int(1)
    );
    assert_eq!(
        n.execute(0, &set("s", "1", false, Some(100)), CLIENT),
        Reply::Ok
    );
    // The short path: a live key of any type, NX, no GET.
    assert_eq!(
        n.execute(1, &set("l", "2", true, Some(50)), CLIENT),
        Reply::Nil
    );
    assert_eq!(
        n.execute(1, &set("s", "2", true, Some(50)), CLIENT),
        Reply::Nil
    );
    // The TTL is checked before the key is even looked at.
    assert_eq!(
        n.execute(1, &set("s", "2", true, Some(0)), CLIENT),
        Reply::err("ERR invalid expire time in 'set' command")
    );
    // With GET the type check comes before NX.
    let get = |key: &str| Command::Set {
        key: Bytes::from(key),
        value: Bytes::from("2"),
        cond: Some(SetCond::Nx),
        get: true,
        expiry: None,
    };
    assert_eq!(
        n.execute(1, &get("l"), CLIENT),
        Reply::err(crate::redis::node::WRONGTYPE)
    );
    assert_eq!(n.execute(1, &get("s"), CLIENT), Reply::Bulk(b"1".to_vec()));
    // Nothing was written: the value and deadline are the first SET's, and an expired key
    // is no obstacle.
    assert_eq!(
        n.execute(1, &Command::Get(Bytes::from("s")), CLIENT),
        Reply::Bulk(b"1".to_vec())
    );
    assert_eq!(
        n.execute(101, &set("s", "3", true, None), CLIENT),
        Reply::Ok
    );
}

/// The memory cap's kept weight (`RedisNode::used_memory`) is what a recount gives after
/// every command that grows, shrinks or replaces a value in place, in any order, with
/// scripts, expiries and SELECTed databases among them.
#[test]
fn the_kept_memory_weight_is_what_a_recount_gives_after_any_commands() {
    let mut rng = crate::rng::Seed(11).stream("memory-weight-test", 0);
    let mut n = RedisNode::new(RedisConfig::default());
    for step in 0..5_000 {
        let k = format!("k{}", rng.below(6));
        let v = "v".repeat(rng.below(30) as usize);
        let f = format!("f{}", rng.below(3));
        let argv: Vec<String> = match rng.below(12) {
            0 => vec!["SET".into(), k, v],
            1 => vec!["SET".into(), k, v, "PX".into(), "5".into()],
            2 => vec!["DEL".into(), k],
            3 => vec!["RPUSH".into(), k, v.clone(), v],
            4 => vec!["HSET".into(), k, f, v],
            5 => vec!["HINCRBY".into(), k, f, format!("{}", rng.below(100_000))],
            6 => vec!["HDEL".into(), k, f],
            7 => vec!["INCRBY".into(), k, "7".into()],
            8 => vec!["GETDEL".into(), k],
            9 => vec![
                "EVAL".into(),
                "redis.call('HSET', KEYS[1], 'a', ARGV[1]) return redis.call('HDEL', KEYS[1], 'b')"
                    .into(),
                "1".into(),
                k,
                v,
            ],
            10 => vec!["EXPIRE".into(), k, "0".into()],
            _ => vec!["FLUSHDB".into()],
        };
        let now = 1_000 + step as i64;
        if let Ok(cmd) = Command::parse(&argv) {
            n.execute(now, &cmd, CLIENT);
        }
        let weighed: u64 = n.keyspace.weigh() + n.other_dbs.iter().map(|d| d.weigh()).sum::<u64>();
        assert_eq!(n.used_memory(), weighed, "step {step}: {argv:?}");
    }
}
