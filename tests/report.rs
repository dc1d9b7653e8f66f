//! The pictures of a run (src/view/report.rs): every catalogue model's SVG parses as XML
//! and has a lane per actor; the HTML page is self-contained; a violation is drawn where it
//! happened, with the two holders' bars overlapping in red.

use std::path::{Path, PathBuf};

use distlock_sim::explore::run_world;
use distlock_sim::sim::TraceMode;
use distlock_sim::view::report::{html, svg};

fn models() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    v.sort();
    v
}

fn model(name: &str) -> distlock_sim::scenario::Scenario {
    distlock_sim::scenario::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("models/{name}.ron")),
    )
    .unwrap()
}

#[test]
fn every_models_svg_is_well_formed_with_a_lane_per_actor() {
    for p in models() {
        let sc = distlock_sim::scenario::load(&p).unwrap();
        let (o, world) = run_world(&sc, 1, TraceMode::Full);
        let text = svg(&sc, 1, &world, &o.violations, None);
        let doc = roxmltree::Document::parse(&text)
            .unwrap_or_else(|e| panic!("{}: SVG is not well-formed XML: {e}", sc.name));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg", "{}", sc.name);
        assert_eq!(
            root.tag_name().namespace(),
            Some("http://www.w3.org/2000/svg"),
            "{}",
            sc.name
        );
        let lane_names: Vec<&str> = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("lane"))
            .filter_map(|n| n.text())
            .collect();
        for n in world.names() {
            assert!(
                lane_names.contains(&n.as_str()),
                "{}: no lane for {n}",
                sc.name
            );
        }
        // Every element placed in time carries its true time for the page's script.
        let timed = doc
            .descendants()
            .filter(|n| n.attribute("data-t0").is_some())
            .count();
        assert!(timed > 0, "{}: nothing drawn in time", sc.name);
    }
}

#[test]
fn a_pause_past_the_ttl_is_drawn_as_overlapping_holds_at_the_violation() {
    let sc = model("single-px-del-pause");
    let (o, world) = run_world(&sc, 0, TraceMode::Full);
    assert!(!o.violations.is_empty());
    let text = svg(&sc, 0, &world, &o.violations, None);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let with_class = |c: &str| {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(c))
            .count()
    };
    assert!(
        with_class("overlap") >= 2,
        "both holders' lanes show the overlap"
    );
    assert!(with_class("violation") >= 1);
    assert!(with_class("paused") >= 1, "the pause is drawn");
    assert!(with_class("hold") >= 2);
    assert!(text.contains("mutual_exclusion at 43.328477s"));
    // The first window starts before the paused holder acquired and ends after the violation.
    let w0: u64 = doc
        .root_element()
        .attribute("data-w0")
        .unwrap()
        .parse()
        .unwrap();
    let w1: u64 = doc
        .root_element()
        .attribute("data-w1")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        w0 < 33_216_676_000 && w1 > 46_979_685_000,
        "window {w0}..{w1}"
    );
}

#[test]
fn a_clock_step_shows_on_the_nodes_clock_curve() {
    let sc = model("redlock-clock-jump");
    let (o, world) = run_world(&sc, 0, TraceMode::Full);
    let text = svg(&sc, 0, &world, &o.violations, None);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let curves = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("clock"))
        .count();
    assert!(
        curves >= 3,
        "stepped nodes draw their clock offset ({curves})"
    );
    assert!(
        text.contains("wall +"),
        "wall-clock readings along the lanes"
    );
}

#[test]
fn the_html_page_is_self_contained() {
    let sc = model("failover-lost-lock");
    let (o, world) = run_world(&sc, 5, TraceMode::Full);
    assert!(!o.violations.is_empty(), "seed 5 violates");
    let page = html(&sc, 5, &world, &o.violations, None);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("<svg") && page.contains("<script>") && page.contains("<style>"));
    for bad in [
        "<link",
        "src=",
        "@import",
        "url(http",
        "fetch(",
        "XMLHttpRequest",
    ] {
        assert!(
            !page.contains(bad),
            "the page must not load anything: found {bad:?}"
        );
    }
    let urls: Vec<&str> = page
        .match_indices("http")
        .map(|(i, _)| &page[i..(i + 40).min(page.len())])
        .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
        .collect();
    assert!(urls.is_empty(), "external addresses in the page: {urls:?}");
    assert!(page.contains("data-goto"), "violations link to their place");
}

#[test]
fn replay_writes_html_and_svg_files() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-cli");
    std::fs::create_dir_all(&dir).unwrap();
    for (format, file) in [("html", "r.html"), ("svg", "r.svg")] {
        let out = dir.join(file);
        let st = std::process::Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["replay", "models/single-px-del-pause.ron", "--seed", "0"])
            .args(["--format", format, "--out"])
            .arg(&out)
            .status()
            .unwrap();
        assert_eq!(st.code(), Some(1), "a violating replay exits 1");
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.len() > 10_000, "{format}: {} bytes", text.len());
    }
}

#[test]
fn replay_window_picks_the_span_shown_and_a_bad_one_exits_2() {
    let run = |window: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["replay", "models/single-px-del-pause.ron", "--seed", "0"])
            .args(["--format", "svg", &format!("--window={window}")])
            .output()
            .unwrap()
    };
    let ok = run("40s..48.5s");
    assert_eq!(ok.status.code(), Some(1), "the run violates");
    let text = String::from_utf8(ok.stdout).unwrap();
    assert!(text.contains(r#"data-w0="40000000000" data-w1="48500000000""#));
    for bad in ["48s..40s", "4x..5s", "40s", "-1s..5s"] {
        let out = run(bad);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("window"),
            "{bad}: the error names the option"
        );
    }
}

#[test]
fn arrows_start_at_the_real_send_even_for_messages_parked_during_a_pause() {
    use distlock_sim::sim::trace::TraceKind;
    // Clients pause for 2-3 s every 50 ms-1 s, often with a reply on its way.
    let sc = model("single-px-get-del-race");
    let (_, world) = run_world(&sc, 0, TraceMode::Full);
    let mut longest = 0u64;
    for e in &world.trace.entries {
        if let TraceKind::Recv { sent_at, .. } | TraceKind::Dropped { sent_at, .. } = &e.kind {
            assert!(*sent_at <= e.at, "sent after it arrived: {e:?}");
            longest = longest.max(e.at.0 - sent_at.0);
        }
    }
    // What reached a paused client is read at its resume, and its arrow still starts where
    // it was sent. Links take at most 1 ms otherwise.
    assert!(longest > 1_000_000_000, "longest flight {longest} ns");
}

#[test]
fn the_stepper_says_at_the_expiry_that_the_paused_holder_still_believes_it_holds_the_lock() {
    let sc = model("single-px-del-pause");
    let (o, world) = run_world(&sc, 0, TraceMode::Full);
    let steps = distlock_sim::view::stepper::steps(&sc, &world, &o.violations);
    let expiry = steps
        .iter()
        .find(|s| s.notable == Some(distlock_sim::view::stepper::Notable::Expiry))
        .expect("the key expires");
    assert!(
        expiry
            .sentence
            .contains("c1 is paused and still believes it holds it"),
        "{}",
        expiry.sentence
    );
    // Every violation is a step of its own, after the records of its instant.
    let vs: Vec<_> = steps
        .iter()
        .filter(|s| s.notable == Some(distlock_sim::view::stepper::Notable::Violation))
        .collect();
    assert_eq!(vs.len(), o.violations.len());
    assert!(vs[0].sentence.contains("lock `lock`"), "{}", vs[0].sentence);
}

#[test]
fn the_page_embeds_the_steps_of_the_model_and_of_its_fix_on_the_same_seed() {
    let sc = model("single-px-cad-pause");
    assert_eq!(sc.variants.len(), 1, "the catalogue declares the fix");
    let (o, world) = run_world(&sc, 0, TraceMode::Full);
    let page = html(&sc, 0, &world, &o.violations, None);
    assert!(page.contains(r#"id="state""#));
    assert!(page.contains(
        r#"class="steps" data-variant="as written" data-verdict="VIOLATED: resource_safety""#
    ));
    assert!(
        page.contains(r#"class="steps" data-variant="fencing tokens" data-verdict="no violation""#)
    );
    assert!(
        page.contains(r#"id="timeline-1""#),
        "the variant has its own chart"
    );
}

#[test]
fn a_variant_with_a_bad_value_is_refused_at_that_value_with_exit_2() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("variants");
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/single-px-cad-pause.ron"),
    )
    .unwrap()
    .replace(
        r#"algorithm: "set-px-cad-fencing""#,
        r#"algorithm: "set-px-cad-fenc""#,
    );
    let (line, col) = text
        .lines()
        .enumerate()
        // The loader points at a string's first character, inside the quotes.
        .find_map(|(i, l)| l.find("set-px-cad-fenc\"").map(|c| (i + 1, c + 1)))
        .unwrap();
    let path = dir.join("bad-variant.ron");
    std::fs::write(&path, &text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .args(["replay", path.to_str().unwrap(), "--seed", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "bad-variant.ron:{line}:{col}: in variant \"fencing tokens\": unknown algorithm"
        )),
        "{err}"
    );
}
