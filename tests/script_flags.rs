//! Script shebang flags as Redis 7.0.15 applies them (each reply below was checked against a
//! real server; the recorded cases are in tests/conformance/recorded/shebang.txt).

use distlock_sim::proto::{Bytes, Command, Reply};
use distlock_sim::redis::{RedisConfig, RedisNode};
use distlock_sim::time::ProcId;

mod support;
use support::{M, R, pump};

const CLIENT: ProcId = ProcId(9);
const T0: i64 = 1_700_000_000_000;
const READONLY: &str = "READONLY You can't write against a read only replica.";
const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
const RO_SCRIPT: &str = "ERR Write commands are not allowed from read-only scripts.";
const RO_COMMAND: &str = "ERR Can not execute a script with write flag using *_ro command.";

fn cmd(argv: &[&str]) -> Command {
    Command::parse(argv).expect("a valid command")
}

fn run(node: &mut RedisNode, argv: &[&str]) -> Reply {
    node.handle(T0, 0, CLIENT, 1, &cmd(argv))
        .expect("answered at once")
}

/// An error reply's text up to the " script: <sha>, on @user_script:N." suffix.
fn error_head(reply: &Reply) -> String {
    match reply {
        Reply::Error(e) => e.split(" script: ").next().unwrap_or_default().to_string(),
        other => panic!("expected an error, got {other:?}"),
    }
}

fn master() -> RedisNode {
    RedisNode::new(RedisConfig::default())
}

/// A master and its read-only replica, fully synced (as tests/replication.rs links them).
fn linked() -> (RedisNode, RedisNode) {
    let node = |name: &str| {
        RedisNode::new(RedisConfig {
            name: Bytes::from(name),
            peers: vec![(Bytes::from("m"), M), (Bytes::from("r"), R)],
            ..RedisConfig::default()
        })
    };
    let (mut m, mut r) = (node("m"), node("r"));
    let link = Command::ReplicaOf(Some((Bytes::from("m"), Bytes::from("6379"))));
    assert_eq!(r.handle(T0, 0, CLIENT, 1, &link), Some(Reply::Ok));
    pump(&mut m, &mut r, T0);
    assert!(r.is_replica());
    (m, r)
}

#[test]
fn a_no_writes_script_reads_but_every_write_and_publish_inside_it_is_refused() {
    let mut m = master();
    assert_eq!(run(&mut m, &["SET", "k", "v"]), Reply::Ok);
    let read = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])";
    assert_eq!(
        run(&mut m, &["EVAL", read, "1", "k"]),
        Reply::Bulk(b"v".to_vec())
    );
    for body in [
        "redis.call('set', KEYS[1], 'w')",
        "redis.call('del', KEYS[1])",
        "redis.call('pexpire', KEYS[1], 100)",
        "redis.call('publish', 'c', 'm')",
    ] {
        let script = format!("#!lua flags=no-writes\nreturn {body}");
        let reply = run(&mut m, &["EVAL", &script, "1", "k"]);
        assert_eq!(error_head(&reply), RO_SCRIPT, "{body}");
        assert!(
            matches!(&reply, Reply::Error(e) if e.ends_with("on @user_script:2.")),
            "{reply:?}"
        );
    }
    assert_eq!(run(&mut m, &["GET", "k"]), Reply::Bulk(b"v".to_vec()));
}

#[test]
fn a_flagged_script_without_no_writes_is_refused_on_a_replica_even_if_it_only_reads() {
    let (mut m, mut r) = linked();
    assert_eq!(run(&mut m, &["SET", "k", "v"]), Reply::Ok);
    pump(&mut m, &mut r, T0);
    for script in ["#!lua\nreturn 1", "#!lua flags=allow-stale\nreturn 1"] {
        assert_eq!(run(&mut r, &["EVAL", script, "0"]), Reply::err(READONLY));
        assert_eq!(run(&mut r, &["EVAL_RO", script, "0"]), Reply::err(READONLY));
    }
    // No shebang: eval compat mode, refused only at the write itself.
    let old_read = "return redis.call('get', KEYS[1])";
    assert_eq!(
        run(&mut r, &["EVAL", old_read, "1", "k"]),
        Reply::Bulk(b"v".to_vec())
    );
    let old_write = "return redis.call('set', KEYS[1], 'w')";
    assert_eq!(
        error_head(&run(&mut r, &["EVAL", old_write, "1", "k"])),
        READONLY
    );
    // PUBLISH is no write for a replica, only for a read-only script.
    let publish = "return redis.call('publish', 'c', 'm')";
    assert_eq!(run(&mut r, &["EVAL", publish, "0"]), Reply::Int(0));
    let no_writes = "#!lua flags=no-writes\nreturn 7";
    assert_eq!(run(&mut r, &["EVAL", no_writes, "0"]), Reply::Int(7));
    assert_eq!(run(&mut r, &["EVAL_RO", no_writes, "0"]), Reply::Int(7));
    // A bad shebang is no write flag: the replica reports the shebang error.
    assert_eq!(
        run(&mut r, &["EVAL", "#!lua flags=bogus\nreturn 1", "0"]),
        Reply::err("ERR Unexpected flag in script shebang: bogus")
    );
}

#[test]
fn a_flagged_script_without_no_writes_is_refused_without_enough_good_replicas() {
    let mut lonely = RedisNode::new(RedisConfig {
        min_replicas_to_write: 2,
        ..RedisConfig::default()
    });
    let flagged = "#!lua\nreturn 1";
    assert_eq!(
        run(&mut lonely, &["EVAL", flagged, "0"]),
        Reply::err(NOREPLICAS)
    );
    assert_eq!(
        run(&mut lonely, &["EVAL_RO", flagged, "0"]),
        Reply::err(NOREPLICAS)
    );
    let no_writes = "#!lua flags=no-writes\nreturn 1";
    assert_eq!(run(&mut lonely, &["EVAL", no_writes, "0"]), Reply::Int(1));
    assert_eq!(run(&mut lonely, &["EVAL", "return 1", "0"]), Reply::Int(1));
}

#[test]
fn eval_ro_refuses_a_script_flagged_without_no_writes_after_compiling_it() {
    let mut m = master();
    assert_eq!(
        run(&mut m, &["EVAL_RO", "#!lua\nreturn 1", "0"]),
        Reply::err(RO_COMMAND)
    );
    assert_eq!(
        run(
            &mut m,
            &["EVAL_RO", "#!lua flags=allow-stale\nreturn 1", "0"]
        ),
        Reply::err(RO_COMMAND)
    );
    // A compile error wins over the flag check.
    assert!(matches!(
        run(&mut m, &["EVAL_RO", "#!lua\nreturn (", "0"]),
        Reply::Error(e) if e.starts_with("ERR Error compiling script")
    ));
    // EVALSHA_RO reads the flags of the cached script.
    let Reply::Bulk(sha) = run(&mut m, &["SCRIPT", "LOAD", "#!lua\nreturn 1"]) else {
        panic!("SCRIPT LOAD answers the sha")
    };
    let sha = String::from_utf8(sha).unwrap();
    assert_eq!(
        run(&mut m, &["EVALSHA_RO", &sha, "0"]),
        Reply::err(RO_COMMAND)
    );
    assert_eq!(run(&mut m, &["EVALSHA", &sha, "0"]), Reply::Int(1));
    // Flagless scripts keep today's EVAL_RO: refused only at a write.
    assert_eq!(run(&mut m, &["EVAL_RO", "return 1", "0"]), Reply::Int(1));
    assert_eq!(
        error_head(&run(
            &mut m,
            &["EVAL_RO", "return redis.call('incr', 'n')", "0"]
        )),
        RO_SCRIPT
    );
}
