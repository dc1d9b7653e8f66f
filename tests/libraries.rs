//! Lock libraries as their source has them, on models whose verdict follows from the source
//! and from timing arithmetic (tests/models/; each says which lines it follows and what the
//! model got wrong before issue 25).

use distlock_sim::explore::{Shard, sweep};
use distlock_sim::scenario;
use distlock_sim::testing::assert_model_holds;

fn model(name: &str) -> String {
    format!("{}/tests/models/{name}.ron", env!("CARGO_MANIFEST_DIR"))
}

/// Seeds a catalogue model of a reported bug and its fix are judged over here. The
/// catalogue test judges both over 200 (`tests/catalogue.rs`); this names the library
/// versions the claim is about, on a sweep a quarter of that size.
const BUG_SEEDS: u64 = 50;

/// A catalogue model of a reported bug shows exactly its declared violation, and its fix
/// variant `variant` holds and reaches the hazards it requires (seeds `0..BUG_SEEDS`).
fn assert_bug_and_fix(name: &str, variant: &str) {
    let path = format!("{}/models/{name}.ron", env!("CARGO_MANIFEST_DIR"));
    let sc = scenario::load(std::path::Path::new(&path)).unwrap_or_else(|e| panic!("{e}"));
    let v = sc
        .variants
        .iter()
        .find(|v| v.name == variant)
        .unwrap_or_else(|| panic!("{name} has no variant {variant:?}"));
    let fixed = scenario::load_str(&sc.name, &sc.path, &v.text).unwrap_or_else(|e| panic!("{e}"));
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (what, sc, is_fix) in [
        (name.to_string(), &sc, false),
        (format!("{name} / {variant}"), &fixed, true),
    ] {
        let s = sweep(sc, 0..BUG_SEEDS, Shard::WHOLE, jobs, &|| {});
        // The fix holds, whatever its variant declares (as `assert_model_holds` asked before).
        assert!(
            !is_fix || s.violated_properties().is_empty(),
            "{what}: the fix does not hold (first violating seed {:?})",
            s.first_violating_seed
        );
        assert_eq!(s.inconclusive_seeds, 0, "{what}: stopped on a budget");
        let c = sc
            .model
            .expect
            .clone()
            .unwrap_or(scenario::Expect::Holds)
            .compare(s.violated_properties());
        assert!(
            c.matches(),
            "{what}: {} over seeds 0..{BUG_SEEDS} (first violating seed {:?})",
            c.differences(""),
            s.first_violating_seed
        );
        assert!(
            !s.vacuous(sc),
            "{what}: never reached {:?}",
            s.missing_witnesses(sc)
        );
    }
}

/// node-redlock#369: 5.0.0-beta.2's `_execute` retries with the same value and releases
/// nothing in between (src/index.ts:438-467), so with `retryCount: -1` a split vote is kept by
/// its losers and the free lock stays untakeable; 4.2.0 unlocked before each retry
/// (redlock.js:423-428).
#[test]
fn node_redlock_5_keeps_a_split_vote_for_as_long_as_it_retries_and_4_2_0_heals_it() {
    assert_bug_and_fix("redlock-node-retry-keeps-keys", "node-redlock 4.2.0");
}

/// node-redlock#313: 5.0.0-beta.2's `release()` goes through `_execute` (src/index.ts:350-364,
/// 438-467) and RELEASE_SCRIPT answers 0 for an expired key (:46-58, :590-595), so with
/// `retryCount: -1` the release of an expired lock never returns; 4.2.0's `unlock` tries once
/// (redlock.js:231-288).
#[test]
fn node_redlock_5_retries_the_release_of_an_expired_lock_for_ever_and_4_2_0_unlocks_once() {
    assert_bug_and_fix("node-redlock-release-retries-forever", "node-redlock 4.2.0");
}

/// redis-py#3847: v8.1.0's sync `release()` clears the token before its script
/// (lock.py:265-276); a release refused while the node is down cannot be made again, and a
/// key without TTL stays. With the token kept (#3900, #4258) the caller releases it later.
#[test]
fn a_redis_py_release_that_fails_while_the_node_is_down_leaves_the_key_unless_the_token_is_kept() {
    assert_bug_and_fix(
        "redis-py-failed-release-loses-token",
        "token kept, release called again",
    );
}

/// redsync v4.17.0: `WithSetNXOnExtend` is one script per node (scripts.go:16-24), and every
/// node's goroutine has sent it before `WithFailFast` returns at a quorum (mutex.go:276-283,
/// 304-314): the nodes that answer late are repaired too. Before issue 25: violated in
/// 1000/1000 seeds (the late nodes' `SET NX` half was never sent).
#[test]
fn under_fail_fast_a_set_if_missing_extend_still_repairs_the_nodes_that_answer_after_the_quorum() {
    assert_model_holds(model("redsync-fail-fast-set-if-missing-repairs"));
}

/// Redisson 3.43.0 under `kill -9` (host up): a refused renewal is resent `retryInterval`
/// (1.5 s) after each attempt's start and fails at once at the last retry (RedisExecutor
/// :170, :269-353, :366-412), at ~14.5 s; 3.43.0 then stops renewing and the key expires under
/// its holder. Before issue 25: held in 1000/1000 (each send waited out the 3 s timeout).
#[test]
fn redisson_3_43_loses_its_lock_when_a_kill_outlasts_its_refused_renewal() {
    distlock_sim::testing::assert_model_shows_declared_verdict(model(
        "redisson-3-43-refused-renewal-stops-the-watchdog",
    ));
}

/// Redisson 3.44.0 under a 17 s `kill -9`: the refused renewal fails at ~14.5 s, the next
/// one 10 s later is refused twice and then renews at ~27.5 s, before the key's 30 s TTL.
/// Before issue 25: violated in 1000/1000.
#[test]
fn redisson_3_44_keeps_its_lock_through_a_17_s_kill_by_renewing_again_after_the_refusals() {
    assert_model_holds(model("redisson-3-44-refused-renewals-outlast-a-17s-kill"));
}

/// redsync#30: v4.17.0's Mutex keeps the last winner's value (mutex.go:117) and `Unlock` sends
/// it (:143-145), so goroutines sharing one Mutex delete each other's keys after an overrun;
/// a Mutex per goroutine deletes nothing of another's.
#[test]
fn goroutines_sharing_one_redsync_mutex_delete_the_next_winners_keys_and_a_mutex_each_does_not() {
    assert_bug_and_fix("redsync-shared-mutex", "a Mutex per goroutine");
}

/// `redis.asyncio`'s Lock keeps its token in a `threading.local()` (asyncio/lock.py:155 at
/// v8.1.0): tasks of one event loop share their thread, so a Lock object they share has one
/// slot even with `thread_local=True`, and a late release deletes the next holder's key; a
/// Lock per task does not.
#[test]
fn asyncio_tasks_sharing_one_redis_py_lock_share_its_token_and_a_lock_per_task_does_not() {
    assert_bug_and_fix("redis-py-asyncio-tasks-share-token", "a Lock per task");
}

/// Redisson 3.52.0's `lockAsync()` names its hash field `id + ":" + Thread.currentThread()
/// .getId()` (RedissonBaseLock.java:241-249, :68-70): reactive pipelines on one thread share
/// it, and the lock script (RedissonLock.java:214-224) lets the second in as a re-entry
/// (redisson#4467); a thread id per pipeline waits for the first.
#[test]
fn reactive_pipelines_sharing_one_redisson_thread_id_both_hold_and_a_thread_id_each_does_not() {
    assert_bug_and_fix(
        "redisson-shared-thread-id-reenters",
        "a thread id per pipeline",
    );
}

/// redisson#6472: 3.44.0's `LockTask.renew` reads an entry another thread's unlock removed
/// (renewal/LockTask.java:53-54), the NPE leaves `RenewalTask.run` before it reschedules
/// (RenewalTask.java:165-179), and the holder's lock expires under it; 3.45.1 skips the entry
/// (5f9589346) and keeps renewing.
#[test]
fn redisson_3_44_s_renewal_task_dies_on_a_racing_unlock_and_3_45_1_renews_through_it() {
    assert_bug_and_fix(
        "redisson-renewal-task-dies-on-racing-unlock",
        "Redisson 3.45.1",
    );
}

/// python-redis-lock v4.0.1: the renewal thread's `extend` raises `NotAcquired` once a pause
/// let the key expire (src/redis_lock/__init__.py:264-266, :278-285), the thread ends and the
/// holder writes on; a fencing token the caller takes and the resource checks stops the lost
/// update.
#[test]
fn python_redis_lock_s_renewal_thread_dies_silently_after_a_pause_and_a_fencing_token_saves_the_write()
 {
    assert_bug_and_fix(
        "python-redis-lock-renewal-dies-after-pause",
        "caller's fencing token",
    );
}

/// python-redis-lock v4.0.1's waiters block in `BLPOP lock-signal:<name> expire` (:229, :237)
/// and UNLOCK_SCRIPT pushes one element there (:20-30): a release wakes a waiter at once, not
/// after the BLPOP's 10 s. Two workers holding 1 s each, no faults: over 20 s the lock changes
/// hands about 19 times; a waiter woken only by its BLPOP timeout would manage 2 or 3.
#[test]
fn a_python_redis_lock_release_wakes_a_blpop_waiter_at_once() {
    let text = r#"(
        description: "two python-redis-lock workers, 1 s sections",
        duration: "20s",
        nodes: [(name: "redis")],
        clients: [(
            name: "w", count: 2, algorithm: "python-redis-lock", node: "redis", key: "lock:job",
            python_redis_lock: (expire: ttl),
            ttl: "10s", hold: ("1s", "1s"),
        )],
        check: ["mutual_exclusion", "liveness"],
        liveness_bound: "3s",
    )"#;
    let sc = scenario::load_str("prl", "prl.ron", text).unwrap_or_else(|e| panic!("{e}"));
    for seed in 0..5 {
        let o = distlock_sim::explore::run_seed(&sc, seed);
        assert!(o.violations.is_empty(), "seed {seed}: {:?}", o.violations);
        assert!(
            (17..=20).contains(&o.acquisitions),
            "seed {seed}: {} acquisitions",
            o.acquisitions
        );
    }
}

/// What the library raises or silently changes is refused where the model says it.
#[test]
fn python_redis_lock_options_the_library_refuses_are_refused_at_their_field() {
    let group = |fields: &str| {
        format!(
            r#"(
        description: "x",
        duration: "20s",
        nodes: [(name: "redis")],
        clients: [(
            name: "w", algorithm: "python-redis-lock", node: "redis", {fields}
            ttl: "10s", hold: ("1s", "1s"),
        )],
        check: ["mutual_exclusion"],
    )"#
        )
    };
    for (fields, says) in [
        (
            r#"key: "lock:job", python_redis_lock: (expire: none, auto_renewal: true),"#,
            "Expire may not be None when auto_renewal is set",
        ),
        (
            r#"key: "lock:job", python_redis_lock: (expire: ttl, timeout: "20s"),"#,
            "TimeoutTooLarge",
        ),
        (
            r#"key: "lock:job", python_redis_lock: (expire: ttl, timeout: "1500ms"),"#,
            "whole seconds",
        ),
        (
            r#"key: "job", python_redis_lock: (expire: ttl),"#,
            "lock:<name>",
        ),
        (
            r#"key: "lock:job", python_redis_lock: (expire: ttl), request_timeout: "5s","#,
            "not read by algorithm \"python-redis-lock\"",
        ),
        (r#"key: "lock:job","#, "needs `python_redis_lock"),
    ] {
        let err = scenario::load_str("bad", "bad.ron", &group(fields))
            .err()
            .unwrap_or_else(|| panic!("{fields}: accepted"))
            .to_string();
        assert!(err.contains(says), "{fields}: {err}");
        assert!(err.contains("bad.ron:"), "{fields}: no location in {err}");
    }
}

/// redisson#4822 (#4706): a lock script that ran but whose `WAIT` got no replica throws "None
/// of slaves were synced"; the caller's next `lock()` re-enters (`hincrby`, RedissonLock.java
/// :218-227 at 3.43.0) and one `unlock()` leaves the count, so the node keeps the lock. 3.43.0's
/// `handleNoSync` (CommandAsyncService.java:956-986) matches a message 3.25.0 lengthened (:1063)
/// and undoes nothing; 3.47.0's matches the exception's type (f2b6ad849) and unlocks.
#[test]
fn a_redisson_lock_retried_after_a_failed_sync_check_keeps_a_count_until_3_47_undoes_it() {
    assert_bug_and_fix("redisson-retried-lock-leaves-count", "Redisson 3.52.0");
}

/// The mechanism of python-redis-lock-renewal-dies-after-pause, by the clock: `expire=10`,
/// so the renewal would come at 6.67 s (:168); w1 takes the key at 0 and is paused from 2 s to
/// 14 s, so its key expires at 10 s. w2's BLPOP, sent at 0 with timeout 10 (:229, :237),
/// answers nil once its 10 s have passed at a cron tick of the node (10 a second) and its SET
/// wins. When w1 resumes, its thread's extend answers 1 and the
/// thread ends (:264-266, :278-285), and w1 still writes at 20 s, its section's end.
#[test]
fn a_paused_python_redis_lock_holder_s_renewal_thread_dies_at_resume_and_it_writes_anyway() {
    use distlock_sim::history::Observation;
    let text = r#"(
        description: "w1 paused 12 s while holding a 10 s python-redis-lock key",
        duration: "30s",
        nodes: [(name: "redis")],
        resource: (name: "db"),
        clients: [
            (name: "w1", algorithm: "python-redis-lock", node: "redis", key: "lock:job",
             python_redis_lock: (expire: ttl, auto_renewal: true),
             ttl: "10s", hold: ("20s", "20s"), rounds: 1),
            (name: "w2", algorithm: "python-redis-lock", node: "redis", key: "lock:job",
             python_redis_lock: (expire: ttl, auto_renewal: true),
             ttl: "10s", hold: ("1s", "1s"), rounds: 1, start: "100ms"),
        ],
        faults: [pause(target: "w1", at: "2s", duration: "12s")],
        check: ["mutual_exclusion", "resource_safety"],
    )"#;
    let sc = scenario::load_str("prl", "prl.ron", text).unwrap_or_else(|e| panic!("{e}"));
    let (w1, w2) = (sc.proc_id("w1"), sc.proc_id("w2"));
    let (_, world) = distlock_sim::explore::run_world(&sc, 0, distlock_sim::sim::TraceMode::Off);
    let records = &world.history.records;
    let s = |ns: u64| ns as f64 / 1e9;
    let w2_acquired = records
        .iter()
        .find(|r| r.proc == w2 && matches!(r.obs, Observation::Acquired { .. }))
        .map(|r| s(r.at.0))
        .expect("w2 acquires");
    assert!(
        (10.0..10.5).contains(&w2_acquired),
        "w2 acquired at {w2_acquired}"
    );
    let died = records
        .iter()
        .find(|r| {
            r.proc == w1
                && matches!(&r.obs, Observation::Note(n) if n.contains("renewal thread") && n.contains("NotAcquired"))
        })
        .map(|r| s(r.at.0))
        .expect("w1's renewal thread dies");
    assert!((14.0..14.1).contains(&died), "died at {died}");
    let w1_write = records
        .iter()
        .find(|r| matches!(r.obs, Observation::ResourceWrite { client, .. } if client == w1))
        .map(|r| s(r.at.0))
        .expect("w1 writes");
    assert!(w1_write > 20.0 && w1_write < 20.1, "w1 wrote at {w1_write}");
    assert!(
        !records.iter().any(|r| r.proc == w1
            && matches!(r.obs, Observation::Extended { .. })
            && s(r.at.0) > 2.0),
        "no renewal after the pause"
    );
}
