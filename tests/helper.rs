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

#[test]
fn the_declared_verdict_helper_passes_a_model_that_violates_exactly_what_it_declares() {
    distlock_sim::testing::assert_model_shows_declared_verdict(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/single-px-del-pause.ron"
    ));
}

#[test]
fn the_declared_verdict_helper_fails_on_a_violated_property_not_declared() {
    // single-px-del-pause violates mutual_exclusion and foreign_unlock; declare only one.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/single-px-del-pause.ron"
    ))
    .unwrap()
    .replace(
        r#"expect: violates(["mutual_exclusion", "foreign_unlock"])"#,
        r#"expect: violates(["foreign_unlock"])"#,
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("helper-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("declares-a-subset.ron");
    std::fs::write(&path, text).unwrap();
    let err = std::panic::catch_unwind(|| {
        distlock_sim::testing::assert_model_shows_declared_verdict(&path);
    })
    .expect_err("a subset of the violated properties is not the declared verdict");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("NOT as declared: observed also mutual_exclusion, not declared"),
        "{msg}"
    );
}
