//! `distlock-sim map`: a grid of sweeps, drawn.
//!
//! - On `single-px-cad-pause` over TTL × hold, every cell past the textbook edge
//!   (ttl > hold + the longest pause) holds, and cells well inside it violate.
//! - The shards' cells together are the whole map's, number for number.
//! - The SVG is XML with one rect per cell; the HTML holds it and a row per cell.
//! - Bad axes are refused with exit 2 before anything runs.

use std::process::{Command, Output};

fn map(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .arg("map")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn secs(v: &serde_json::Value) -> f64 {
    let t = v.as_str().unwrap();
    if let Some(ms) = t.strip_suffix("ms") {
        ms.parse::<f64>().unwrap() / 1e3
    } else {
        t.strip_suffix('s').unwrap().parse().unwrap()
    }
}

const TTL_HOLD: [&str; 7] = [
    "models/single-px-cad-pause.ron",
    "--x",
    "c.ttl=4s..26s:12",
    "--y",
    "c.hold=500ms..6s:6",
    "--seeds",
    "0..20",
];

#[test]
fn past_the_textbook_edge_every_cell_holds_and_well_inside_it_cells_violate() {
    let o = map(&[&TTL_HOLD[..], &["--json"]].concat());
    assert_eq!(o.status.code(), Some(1), "some cell violates");
    let v = json(&o);
    assert!(
        v["map"]["textbook"]
            .as_str()
            .unwrap()
            .contains("ttl ≤ hold + longest pause (15s)")
    );
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 12 * 6);
    let mut inside = 0;
    for c in cells {
        let (ttl, hold) = (secs(&c["x"]), secs(&c["y"]));
        let violating = c["violating"].as_u64().unwrap();
        assert_eq!(c["seeds"].as_u64(), Some(20));
        if ttl > hold + 15.0 {
            assert_eq!(violating, 0, "ttl {ttl} s, hold {hold} s: past the edge");
            // Held: its interval starts at 0 and its upper bound is the exact one.
            assert_eq!(c["ci95"][0].as_f64(), Some(0.0));
            assert!(c["ci95"][1].as_f64().unwrap() > 0.1);
        }
        // A pause of 11 s or more outlasts any key of TTL under 10 s.
        if ttl < 10.0 {
            inside += 1;
            assert!(violating > 0, "ttl {ttl} s, hold {hold} s: inside the edge");
        }
        // A violating cell's replay line runs as pasted and violates.
        if violating > 0 && (ttl, hold) == (4.0, 0.5) {
            let cmd = c["replay"].as_str().unwrap();
            assert!(cmd.contains("--set c.ttl=4s --set c.hold=500ms"), "{cmd}");
            let (_, rest) = cmd.split_once(' ').unwrap();
            let o = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "'{}' {rest} >/dev/null",
                    env!("CARGO_BIN_EXE_distlock-sim")
                ))
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(1), "{cmd}");
        }
    }
    assert!(inside > 0);
}

#[test]
fn the_shards_cells_together_are_the_whole_maps() {
    let small = [
        "models/single-px-del-pause.ron",
        "--x",
        "c.ttl=5s..20s:4",
        "--y",
        "c.hold=1s..3s:3",
        "--seeds",
        "0..8",
        "--json",
    ];
    let whole = json(&map(&small));
    let mut parts: Vec<serde_json::Value> = Vec::new();
    for s in ["0/3", "1/3", "2/3"] {
        let v = json(&map(&[&small[..], &["--shard", s]].concat()));
        parts.extend(v["cells"].as_array().unwrap().iter().cloned());
    }
    let key = |c: &serde_json::Value| (c["x"].to_string(), c["y"].to_string());
    parts.sort_by_key(key);
    let mut all = whole["cells"].as_array().unwrap().clone();
    all.sort_by_key(key);
    assert_eq!(all.len(), 12);
    assert_eq!(parts, all);
}

#[test]
fn the_svg_has_a_rect_per_cell_and_the_html_a_row_per_cell() {
    let dir = std::env::temp_dir().join(format!("distlock-map-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("m.svg");
    let html = dir.join("m.html");
    let args = |out: &std::path::Path| {
        vec![
            "models/single-px-cad-pause.ron".to_string(),
            "--x".into(),
            "c.ttl=6s..24s:4".into(),
            "--y".into(),
            "c.hold=1s..3s:2".into(),
            "--seeds".into(),
            "0..5".into(),
            "--out".into(),
            out.display().to_string(),
        ]
    };
    for p in [&svg, &html] {
        let a = args(p);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = map(&a);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{o:?}");
    }
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let titled = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.children().any(|c| c.has_tag_name("title")))
        .count();
    assert_eq!(titled, 8);
    assert!(
        text.contains("stroke-dasharray"),
        "the textbook edge is drawn"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg"));
    assert_eq!(page.matches("<tr><td>").count(), 8);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_axis_is_refused_with_exit_2_before_anything_runs() {
    for (args, says) in [
        (vec!["--x", "c.tll=4s..26s:3"], "did you mean \"ttl\""),
        (vec!["--x", "c.ttl=4s..x:3"], "unknown unit"),
        (vec!["--x", "c.ttl=4s..6s:0"], "N is 0"),
        (vec!["--x", "c.ttl=4s..6s:65"], "N is 65"),
        (vec!["--x", "c.ttl=4s"], "FIELD=A..B:N"),
        (vec!["--x", "c.ttl=-4s..2s:3"], "negative"),
        (
            vec!["--x", "c.ttl=4s..6s:3", "--out", "m.png"],
            "must end in .svg or .html",
        ),
    ] {
        let o = map(&[&["models/single-px-cad-pause.ron"][..], &args].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: nothing ran");
    }
}
