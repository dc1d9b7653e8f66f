//! The library test helper as users would use it: a model sweep inside `cargo test`.
//! `DISTLOCK_SEEDS=N` widens the sweep; a failure prints `DISTLOCK_SEED=S cargo test NAME`.

#[test]
fn fencing_keeps_the_resource_safe_under_pauses() {
    distlock_sim::testing::assert_model_holds(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/single-px-cad-fencing.ron"
    ));
}

#[test]
fn a_violating_model_fails_with_the_seed_and_the_replay_lines() {
    let err = std::panic::catch_unwind(|| {
        distlock_sim::testing::assert_model_holds(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/models/single-px-del-pause.ron"
        ));
    })
    .expect_err("this model violates");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("violated mutual_exclusion at seed 0"), "{msg}");
    assert!(msg.contains("reproduce: DISTLOCK_SEED=0 cargo test a_violating_model_fails_with_the_seed_and_the_replay_lines"), "{msg}");
    assert!(msg.contains("distlock-sim replay "), "{msg}");
}
