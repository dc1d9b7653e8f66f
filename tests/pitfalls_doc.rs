//! docs/pitfalls.md is generated from the models and their replays; this fails when the
//! committed copy is stale (regenerate with `distlock-sim pitfalls --out docs/pitfalls.md`).

use std::path::Path;

#[test]
fn the_pitfall_guide_is_up_to_date_with_the_models_and_their_replays() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let guide =
        distlock_sim::view::pitfalls::render(&root.join("models"), jobs).expect("catalogue loads");
    let fresh = guide.markdown;
    let pictures = root
        .join("docs")
        .join(distlock_sim::view::pitfalls::PICTURE_DIR);
    for (file, svg) in &guide.pictures {
        let committed = std::fs::read_to_string(pictures.join(file)).unwrap_or_default();
        assert!(
            *svg == committed,
            "docs/pitfalls/{file} is stale; run `cargo run --release -- pitfalls --out docs/pitfalls.md`"
        );
    }
    let on_disk = std::fs::read_dir(&pictures).map_or(0, |d| d.count());
    assert_eq!(
        on_disk,
        guide.pictures.len(),
        "docs/pitfalls/ holds pictures of models that are no longer in the guide"
    );
    let committed = std::fs::read_to_string(root.join("docs/pitfalls.md")).unwrap_or_default();
    if fresh != committed {
        let first = fresh
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b);
        panic!(
            "docs/pitfalls.md is stale (first differing line: {:?}); run `cargo run --release -- pitfalls --out docs/pitfalls.md`",
            first.map(|i| i + 1)
        );
    }
}

#[test]
fn every_catalogue_model_but_the_benchmarks_has_a_section_a_picture_and_a_readme_row() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("docs/pitfalls.md")).unwrap_or_default();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap_or_default();
    for e in std::fs::read_dir(root.join("models")).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if name.starts_with("bench-") {
            continue;
        }
        assert!(
            guide.contains(&format!("\n## {name}\n")),
            "docs/pitfalls.md has no section for models/{name}.ron (add it to ENTRIES in src/view/pitfalls.rs)"
        );
        assert!(
            root.join(format!("docs/pitfalls/{name}.svg")).exists(),
            "no picture for {name}"
        );
        assert!(
            readme.contains(&format!("`{name}`")),
            "README.md's catalogue does not name {name}"
        );
    }
}
