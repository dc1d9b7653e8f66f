//! The lock commands' short paths (SET replacing in place, the native scripts and their
//! cache bit) give what the general paths gave: keyspace order, replies, the records.

use std::sync::Arc;

use crate::history::{Observation, Removal};
use crate::proto::command::{ScriptRef, SetCond, SetExpiry};
use crate::proto::{Bytes, Command, Reply, Script};
use crate::redis::node::Caller;
use crate::redis::scripts::UNLOCK_SRC;
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
    let noscript = Reply::err(crate::redis::node::NOSCRIPT);
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
