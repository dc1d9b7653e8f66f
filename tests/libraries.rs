//! Lock libraries as their source has them, on models whose verdict follows from the source
//! and from timing arithmetic (tests/models/; each says which lines it follows and what the
//! model got wrong before issue 25).

use distlock_sim::testing::assert_model_holds;

fn model(name: &str) -> String {
    format!("{}/tests/models/{name}.ron", env!("CARGO_MANIFEST_DIR"))
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
