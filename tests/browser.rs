//! The HTML report in a real browser: headless Chromium renders the page of a catalogue
//! model; the screenshot must not be blank, the console must stay silent (the page logs
//! nothing, so any line is an error) and the page's script must have run to its end.
//!
//! `.ci/run` installs Debian's chromium when it is missing and sets
//! `DISTLOCK_BROWSER_TEST=require`, so CI fails without a browser; elsewhere the test says it
//! skipped. `DISTLOCK_CHROMIUM` names another binary.

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("DISTLOCK_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// Flags for a sandbox with a closed network (no background fetches, no first-run UI).
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
];

fn browser(bin: &Path, profile: &Path, args: &[String]) -> std::process::Output {
    Command::new("timeout")
        .arg("120")
        .arg(bin)
        .args(FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("run chromium")
}

#[test]
fn html_reports_render_in_headless_chromium_without_console_errors() {
    let Some(bin) = chromium() else {
        if std::env::var("DISTLOCK_BROWSER_TEST").as_deref() == Ok("require") {
            panic!("no chromium found, and DISTLOCK_BROWSER_TEST=require");
        }
        eprintln!("skipped: no chromium (apt-get install chromium, or run .ci/run)");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    for (model, seed) in [
        ("single-px-del-pause", 0),
        ("redlock-clock-jump", 0),
        ("failover-lost-lock", 5),
    ] {
        let page = dir.join(format!("{model}.html"));
        let shot = dir.join(format!("{model}.png"));
        let _ = std::fs::remove_file(&shot);
        let st = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["replay", &format!("models/{model}.ron")])
            .args(["--seed", &seed.to_string(), "--format", "html", "--out"])
            .arg(&page)
            .status()
            .unwrap();
        assert_eq!(st.code(), Some(1), "{model} seed {seed} violates");
        let url = format!("file://{}", page.display());
        let profile = dir.join(format!("profile-{model}"));

        let out = browser(
            &bin,
            &profile,
            &[
                "--enable-logging=stderr".into(),
                "--v=0".into(),
                "--window-size=1280,1000".into(),
                format!("--screenshot={}", shot.display()),
                url.clone(),
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{model}: chromium failed: {stderr}");
        let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE")).collect();
        assert!(console.is_empty(), "{model}: console output: {console:#?}");

        // Not blank: plenty of non-white pixels in many colours.
        let decoder = png::Decoder::new(std::io::BufReader::new(
            std::fs::File::open(&shot).expect("screenshot written"),
        ));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let bpp = info.color_type.samples();
        let px = &buf[..info.buffer_size()];
        let mut colours = std::collections::BTreeSet::new();
        let mut ink = 0usize;
        for p in px.chunks(bpp) {
            if p[..3].iter().any(|&c| c < 240) {
                ink += 1;
            }
            colours.insert((p[0] >> 4, p[1] >> 4, p[2] >> 4));
        }
        let total = px.len() / bpp;
        assert!(
            ink * 20 > total && colours.len() > 20,
            "{model}: the screenshot looks blank ({ink} of {total} pixels inked, {} colours)",
            colours.len()
        );

        // The script ran to its end (it marks the body with the number of timed elements).
        let dom = browser(&bin, &profile, &["--dump-dom".into(), url]);
        let dom = String::from_utf8_lossy(&dom.stdout);
        let rendered = dom
            .split("data-rendered=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .and_then(|n| n.parse::<usize>().ok());
        assert!(
            rendered.is_some_and(|n| n > 0),
            "{model}: the page's script did not finish"
        );
        eprintln!("{model}: screenshot {}", shot.display());
    }

    // A window given in the address is the window the page lays out (shared zoomed views).
    let page = dir.join("single-px-del-pause.html");
    let profile = dir.join("profile-single-px-del-pause");
    let dom = browser(
        &bin,
        &profile,
        &[
            "--dump-dom".into(),
            format!("file://{}#w=40.5,44.25", page.display()),
        ],
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("showing 40.500000s … 44.250000s"),
        "the page did not open on the window in its address"
    );
    assert!(dom.contains(">42.0s<"), "ticks are redrawn for the window");

    // The page drives itself as a reader would: the wheel zooms, hovering a lock bar shows
    // its details, "whole run" shows the whole run.
    let dom = browser(
        &bin,
        &profile,
        &[
            "--dump-dom".into(),
            format!("file://{}#selftest", page.display()),
        ],
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains(r#"data-selftest="zoom:ok tip:ok fit:ok""#),
        "self-test: {:?}",
        dom.split("data-selftest=")
            .nth(1)
            .map(|s| &s[..s.len().min(40)])
    );
}
