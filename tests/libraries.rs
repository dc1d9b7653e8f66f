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
