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

/// The seed a lesson shows: the first of 0..20 that violates, else 0 (as `site` picks it).
fn lesson_seed(sc: &distlock_sim::scenario::Scenario) -> u64 {
    (0..20)
        .find(|s| run_world(sc, *s, TraceMode::Off).0.violated())
        .unwrap_or(0)
}

/// Every hover of a page (the SVG's `<title>`s) and every step's sentence, unescaped.
fn words_of_page(page: &str) -> Vec<String> {
    let unescape = |s: &str| {
        s.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    };
    let mut out: Vec<String> = page
        .split("<title>")
        .skip(1)
        .filter_map(|s| s.split("</title>").next())
        .map(unescape)
        .collect();
    for script in page
        .split(r#"<script type="application/json" class="steps""#)
        .skip(1)
    {
        let json = script
            .split_once('>')
            .and_then(|(_, rest)| rest.split("</script>").next())
            .expect("a steps script");
        let v: serde_json::Value = serde_json::from_str(&json.replace("<\\/", "</")).unwrap();
        for s in v["steps"].as_array().unwrap() {
            out.push(s["s"].as_str().unwrap().to_string());
        }
    }
    out
}

/// What a run had that a sentence may blame: per process, whether its clock ever drifted,
/// stepped, and whether it was paused; whether any latency spike opened.
struct Causes {
    names: Vec<String>,
    drifted: Vec<bool>,
    stepped: Vec<bool>,
    paused: Vec<bool>,
    spike: bool,
}

fn causes(world: &distlock_sim::sim::World) -> Causes {
    use distlock_sim::sim::fault::FaultKind;
    use distlock_sim::time::{ProcId, SimTime};
    let names = world.names();
    let n = names.len();
    let mut drifted: Vec<bool> = (0..n)
        .map(|p| world.clock(ProcId(p as u32)).drift_ppm(SimTime::ZERO) != 0)
        .collect();
    let (mut stepped, mut paused) = (vec![false; n], vec![false; n]);
    let mut spike = false;
    for f in &world.applied_faults {
        match &f.kind {
            FaultKind::Drift { proc, .. } => drifted[proc.index()] = true,
            FaultKind::ClockStep { proc, .. } => stepped[proc.index()] = true,
            FaultKind::Pause(p) => paused[p.index()] = true,
            FaultKind::LatencySpike { .. } => spike = true,
            _ => {}
        }
    }
    Causes {
        names,
        drifted,
        stepped,
        paused,
        spike,
    }
}

/// Where `phrase` occurs in `sentence` as words (not inside a longer name: "one is paused"
/// does not say "e is paused").
fn word_at(sentence: &str, phrase: &str) -> Vec<usize> {
    sentence
        .match_indices(phrase)
        .map(|(i, _)| i)
        .filter(|&i| {
            !sentence[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
        })
        .collect()
}

/// The causes `sentence` names that the run did not have.
fn absent_causes(sentence: &str, c: &Causes) -> Vec<String> {
    let mut wrong = Vec::new();
    let any_drift = c.drifted.iter().any(|d| *d);
    for word in ["ran slow", "ran fast", "drifted", "drift "] {
        if sentence.contains(word) && !any_drift {
            wrong.push(format!("{word:?} in a run where no clock drifted"));
        }
    }
    for (i, name) in c.names.iter().enumerate() {
        let clock = format!("{name}'s clock ");
        for at in word_at(sentence, &clock) {
            let rest = &sentence[at + clock.len()..];
            let drift = ["ran slow", "ran fast", "drifted"]
                .iter()
                .any(|w| rest.starts_with(w));
            if drift && !c.drifted[i] {
                wrong.push(format!("{name}'s clock drifting, but it never did"));
            }
            if rest.starts_with("stepped") && !c.stepped[i] {
                wrong.push(format!("{name}'s clock stepping, but it never did"));
            }
        }
        for pause in [
            format!("{name} was paused"),
            format!("{name} is paused"),
            format!("for {name} to resume from a pause"),
        ] {
            if !word_at(sentence, &pause).is_empty() && !c.paused[i] {
                wrong.push(format!("{pause:?}, but {name} was never paused"));
            }
        }
    }
    if sentence.contains("latency spike") && !c.spike {
        wrong.push("a latency spike in a run that had none".into());
    }
    wrong
}

#[test]
fn no_hover_or_step_of_any_catalogue_page_names_a_cause_its_run_did_not_have() {
    // A false lesson is the worst bug a teaching tool can have: this page once blamed drift
    // ("its clock ran slow, or the node's ran fast") for the gap a reply's trip made.
    let mut checked = 0;
    for p in models() {
        let sc = distlock_sim::scenario::load(&p).unwrap();
        let seed = lesson_seed(&sc);
        let (o, world) = run_world(&sc, seed, TraceMode::Full);
        let page = html(&sc, seed, &world, &o.violations, None);
        // The variants' runs are on the page too: a sentence may be about any of them.
        let mut runs = vec![causes(&world)];
        for v in distlock_sim::explore::variants::run_variants(&sc, seed) {
            runs.push(causes(&v.world));
        }
        for w in words_of_page(&page) {
            // True of some run on the page (the model's or a variant's).
            let wrong: Vec<Vec<String>> = runs.iter().map(|c| absent_causes(&w, c)).collect();
            if wrong.iter().all(|x| !x.is_empty()) {
                panic!("{} seed {seed}: {:?}\n  in: {w}", sc.name, wrong[0]);
            }
            checked += 1;
        }
    }
    assert!(checked > 10_000, "only {checked} sentences checked");
}

#[test]
fn the_page_names_the_same_safety_margin_as_the_text_timeline_at_every_expiry() {
    // One margin, defined once (check::margin::removal_margin_ns): the page's hover and the
    // timeline's `[margin …]` line at the same removal say the same figure.
    for (name, seed) in [
        ("single-px-del-pause", 0),
        ("redlock-drift-beyond-factor", 0),
        ("single-clock-step-expires-locks", 0),
        ("failover-replica-clock-ahead", 0),
    ] {
        let sc = model(name);
        let (o, world) = run_world(&sc, seed, TraceMode::Full);
        let page = html(&sc, seed, &world, &o.violations, None);
        let timeline = distlock_sim::view::timeline::render(
            &world,
            &o.violations,
            &sc.lock_keys(),
            sc.epoch_unix_ms,
            distlock_sim::view::timeline::TimelineOptions {
                messages: distlock_sim::view::timeline::Messages::None,
            },
        );
        // The model's own chart only (the variants' charts follow it, as timeline-1, ...).
        let own = page.split(r#"id="timeline-1""#).next().unwrap();
        let own = own
            .split(r#"<script type="application/json""#)
            .next()
            .unwrap();
        let mut compared = 0;
        for w in words_of_page(own) {
            let Some((_, rest)) = w.split_once("Safety margin ") else {
                continue;
            };
            let margin = rest.split(' ').next().unwrap();
            let removed = rest
                .split_once(" at ")
                .and_then(|(_, r)| r.split(' ').next())
                .unwrap();
            let line = timeline
                .lines()
                .find(|l| l.trim_start().starts_with(removed) && l.contains("[margin "))
                .unwrap_or_else(|| panic!("{name}: no timeline line at {removed} for {w}"));
            assert!(
                line.contains(&format!("[margin {margin} ")),
                "{name}: the page says {margin} at {removed}, the timeline: {line}"
            );
            compared += 1;
        }
        assert!(compared > 0, "{name}: no margin on the page");
    }
}
