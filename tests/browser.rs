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

/// A Chrome DevTools Protocol session over `--remote-debugging-pipe` (file descriptors 3
/// and 4, given through two FIFOs): no WebSocket, no extra crate. One page, attached with a
/// flat session; JavaScript exceptions and console lines are collected as they arrive.
struct Cdp {
    child: std::process::Child,
    tx: std::fs::File,
    rx: std::io::BufReader<std::fs::File>,
    next_id: u64,
    session: String,
    /// Exceptions and console lines the page produced.
    complaints: Vec<String>,
}

impl Cdp {
    fn start(bin: &Path, dir: &Path, name: &str) -> Cdp {
        let fifo_in = dir.join(format!("{name}.cdp-in"));
        let fifo_out = dir.join(format!("{name}.cdp-out"));
        for f in [&fifo_in, &fifo_out] {
            let _ = std::fs::remove_file(f);
            let st = Command::new("mkfifo").arg(f).status().expect("mkfifo");
            assert!(st.success(), "mkfifo {}", f.display());
        }
        let profile = dir.join(format!("profile-cdp-{name}"));
        let child = Command::new("bash")
            .arg("-c")
            .arg(r#"exec timeout 300 "$0" "$@" 3<"$CDP_IN" 4>"$CDP_OUT""#)
            .arg(bin)
            .args(FLAGS)
            .arg("--remote-debugging-pipe")
            .arg(format!("--user-data-dir={}", profile.display()))
            .env("CDP_IN", &fifo_in)
            .env("CDP_OUT", &fifo_out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start chromium");
        // The browser opens its end for reading, then the other for writing: the same order.
        let tx = std::fs::OpenOptions::new()
            .write(true)
            .open(&fifo_in)
            .unwrap();
        let rx = std::io::BufReader::new(std::fs::File::open(&fifo_out).unwrap());
        let mut cdp = Cdp {
            child,
            tx,
            rx,
            next_id: 0,
            session: String::new(),
            complaints: Vec::new(),
        };
        let target = cdp.call(
            "Target.createTarget",
            serde_json::json!({"url": "about:blank"}),
        );
        let target_id = target["targetId"].as_str().unwrap().to_string();
        let attached = cdp.call(
            "Target.attachToTarget",
            serde_json::json!({"targetId": target_id, "flatten": true}),
        );
        cdp.session = attached["sessionId"].as_str().unwrap().to_string();
        cdp.call("Page.enable", serde_json::json!({}));
        cdp.call("Runtime.enable", serde_json::json!({}));
        cdp
    }

    fn read(&mut self) -> serde_json::Value {
        use std::io::BufRead;
        let mut buf = Vec::new();
        let n = self.rx.read_until(0, &mut buf).expect("read from chromium");
        assert!(n > 0, "chromium closed its pipe");
        buf.pop();
        let v: serde_json::Value = serde_json::from_slice(&buf).expect("CDP JSON");
        match v["method"].as_str() {
            Some("Runtime.exceptionThrown") => self
                .complaints
                .push(format!("exception: {}", v["params"]["exceptionDetails"])),
            Some("Runtime.consoleAPICalled") => self
                .complaints
                .push(format!("console: {}", v["params"]["args"])),
            _ => {}
        }
        v
    }

    fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        use std::io::Write;
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = serde_json::json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() && !method.starts_with("Target.") {
            msg["sessionId"] = serde_json::json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.tx.write_all(&bytes).unwrap();
        loop {
            let v = self.read();
            if v["id"].as_u64() == Some(id) {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
        }
    }

    /// Opens `url` in a `width` x `height` viewport and waits for its load event.
    fn open(&mut self, url: &str, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            serde_json::json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        // From a blank page, so that a change of fragment alone is a new load too.
        self.call("Page.navigate", serde_json::json!({"url": "about:blank"}));
        self.call("Page.navigate", serde_json::json!({"url": url}));
        loop {
            let v = self.read();
            if v["method"].as_str() == Some("Page.loadEventFired") {
                break;
            }
        }
    }

    /// Waits for the next load event (a navigation the page started).
    fn wait_load(&mut self) {
        loop {
            let v = self.read();
            if v["method"].as_str() == Some("Page.loadEventFired") {
                break;
            }
        }
    }

    fn eval(&mut self, expr: &str) -> serde_json::Value {
        let r = self.call(
            "Runtime.evaluate",
            serde_json::json!({"expression": expr, "returnByValue": true}),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{expr}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// A key press as the keyboard sends it (`modifiers`: 8 = Shift).
    fn key(&mut self, key: &str, code: u32, modifiers: u32) {
        for kind in ["rawKeyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                serde_json::json!({"type": kind, "key": key, "code": key,
                    "windowsVirtualKeyCode": code, "modifiers": modifiers}),
            );
        }
    }

    /// A mouse click at the centre of the element `selector` finds.
    fn click(&mut self, selector: &str) {
        let r = self.eval(&format!(
            "(() => {{ const e = document.querySelector({selector:?}); e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
        ));
        let (x, y) = (r[0].as_f64().unwrap(), r[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                serde_json::json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// A PNG of the viewport (or the whole page) written to `path`.
    fn screenshot(&mut self, path: &Path, whole_page: bool) {
        let r = self.call(
            "Page.captureScreenshot",
            serde_json::json!({"format": "png", "captureBeyondViewport": whole_page}),
        );
        let png = base64_decode(r["data"].as_str().unwrap());
        std::fs::write(path, png).unwrap();
    }

    fn close(mut self) {
        let _ = self.call("Browser.close", serde_json::json!({}));
        let _ = self.child.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let b: Vec<u8> = s
        .bytes()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(b.len() * 3 / 4);
    for chunk in b.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | (u32::from(val(c)) << (18 - 6 * i)));
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    out
}

fn page(dir: &Path, model: &str, seed: u64) -> PathBuf {
    let page = dir.join(format!("{model}-seed{seed}.html"));
    let st = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["replay", &format!("models/{model}.ron")])
        .args(["--seed", &seed.to_string(), "--format", "html", "--out"])
        .arg(&page)
        .status()
        .unwrap();
    assert!(
        st.code().is_some_and(|c| c <= 1),
        "{model} seed {seed} replays"
    );
    page
}

#[test]
// The page's open and step times are measured on the host clock: the browser is outside the
// simulation.
#[allow(clippy::disallowed_methods)]
fn a_reader_steps_to_the_expiry_reads_the_state_and_flips_to_the_fix() {
    let Some(bin) = chromium() else {
        if std::env::var("DISTLOCK_BROWSER_TEST").as_deref() == Ok("require") {
            panic!("no chromium found, and DISTLOCK_BROWSER_TEST=require");
        }
        eprintln!("skipped: no chromium (apt-get install chromium, or run .ci/run)");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    let mut cdp = Cdp::start(&bin, &dir, "stepper");

    // single-px-del-pause: → until the first expiry; the state panel says who believes what.
    let del = page(&dir, "single-px-del-pause", 0);
    let url = format!("file://{}", del.display());
    cdp.open(&url, 1280, 1000);
    let mut presses = 0;
    while cdp.eval("document.getElementById('sentence').className") != "expiry" {
        cdp.key("ArrowRight", 39, 0);
        presses += 1;
        assert!(presses < 1000, "no expiry reached by pressing →");
    }
    let step = cdp.eval("+document.getElementById('state').dataset.step");
    let sentence = cdp.eval("document.getElementById('sentence').textContent");
    let state = cdp.eval("document.getElementById('state').innerText");
    eprintln!("expiry after {presses} presses of →, step {step}: {sentence}\n{state}");
    let (sentence, state) = (sentence.as_str().unwrap(), state.as_str().unwrap());
    assert!(sentence.contains("expires"), "{sentence}");
    assert!(
        sentence.contains("c1 is paused and still believes it holds it"),
        "{sentence}"
    );
    assert!(state.contains("PAUSED"), "{state}");
    assert!(state.contains("its key is gone"), "{state}");
    assert!(state.contains("its believed validity ran out"), "{state}");
    assert!(state.contains("redis\tmaster"), "{state}");
    cdp.screenshot(&dir.join("single-px-del-pause-expiry-1280.png"), false);
    // Shift+→ stops at the next notable event only.
    cdp.key("ArrowRight", 39, 8);
    let k = cdp.eval("document.getElementById('sentence').className");
    assert!(
        ["acquire", "expiry", "fault", "violation"].contains(&k.as_str().unwrap()),
        "{k}"
    );
    // At 800 px, opened on the same step: the cursor is where the reader sees it.
    cdp.open(
        &format!("{url}#s={}", step.as_u64().unwrap() + 1),
        800,
        1000,
    );
    let seen = cdp.eval(
        "(() => { const c = document.querySelector('#chart line.cursor').getBoundingClientRect(); const ch = document.getElementById('chart').getBoundingClientRect(); return c.left > ch.left && c.right < ch.right; })()",
    );
    assert_eq!(seen, true, "at 800 px the cursor is off-screen");
    cdp.screenshot(&dir.join("single-px-del-pause-expiry-800.png"), false);

    // single-px-cad-pause: the fix on the same seed flips the verdict; the cursor moves both.
    let cad = page(&dir, "single-px-cad-pause", 0);
    let url = format!("file://{}", cad.display());
    cdp.open(&url, 1280, 1400);
    assert_eq!(
        cdp.eval("document.getElementById('verdict').className"),
        "bad"
    );
    cdp.key("PageDown", 34, 0);
    cdp.key("PageDown", 34, 0);
    cdp.click(r#"input[name=variant][value="fencing tokens"]"#);
    let verdict = cdp.eval("document.getElementById('verdict').textContent");
    assert_eq!(
        cdp.eval("document.getElementById('verdict').className"),
        "ok",
        "{verdict}"
    );
    assert!(
        verdict.as_str().unwrap().contains("no violation"),
        "{verdict}"
    );
    let cursors = cdp.eval(
        "Array.from(document.querySelectorAll('line.cursor')).map(l => l.getAttribute('x1'))",
    );
    let xs = cursors.as_array().unwrap();
    assert!(
        xs.len() == 2 && xs[0] == xs[1] && !xs[0].is_null(),
        "cursors: {cursors}"
    );
    cdp.eval("window.scrollTo(0, 0)");
    cdp.screenshot(&dir.join("single-px-cad-pause-fix-variant.png"), true);
    // Opened directly at a step of the variant.
    cdp.open(&format!("{url}#s=5&variant=fencing%20tokens"), 1280, 1400);
    assert_eq!(
        cdp.eval("document.getElementById('state').dataset.step"),
        "4"
    );
    assert_eq!(
        cdp.eval("document.getElementById('state').dataset.variant"),
        "fencing tokens"
    );
    assert_eq!(
        cdp.eval("document.getElementById('verdict').className"),
        "ok"
    );

    // redlock-clock-jump: a busy run opens with its message arrows hidden; m shows them.
    let jump = page(&dir, "redlock-clock-jump", 0);
    cdp.open(&format!("file://{}", jump.display()), 1280, 1000);
    assert_eq!(
        cdp.eval("document.getElementById('msgs-toggle').checked"),
        false
    );
    let hidden = "getComputedStyle(document.querySelector('#timeline #msgs')).display";
    assert_eq!(cdp.eval(hidden), "none");
    cdp.screenshot(&dir.join("redlock-clock-jump-messages-hidden.png"), false);
    cdp.key("m", 77, 0);
    assert_eq!(cdp.eval(hidden), "inline");

    // failover-lost-lock: the page opens where the story starts (step 1, the set-up folded);
    // stepping to the promotion, "r1 is now master" reads in the window the chart shows.
    let fo = page(&dir, "failover-lost-lock", 5);
    cdp.open(&format!("file://{}", fo.display()), 1280, 1000);
    let opened = cdp.eval("document.getElementById('stepno').textContent");
    assert!(
        opened.as_str().unwrap().starts_with("step 1 of "),
        "{opened}"
    );
    let mut presses = 0;
    while cdp.eval("document.getElementById('sentence').textContent") != "r1 is now master." {
        cdp.key("ArrowRight", 39, 0);
        presses += 1;
        assert!(presses < 200, "no promotion reached by pressing →");
    }
    let promo = cdp.eval(
        "(() => { const e = document.querySelector('#timeline .mlabel.promoted'); if (!e) return null; const r = e.getBoundingClientRect(), c = document.getElementById('chart').getBoundingClientRect(); return [e.textContent, r.left >= c.left && r.left < c.right]; })()",
    );
    assert_eq!(
        promo,
        serde_json::json!(["r1 is now master", true]),
        "{promo}"
    );
    cdp.screenshot(&dir.join("failover-lost-lock-promotion.png"), false);

    // The busiest catalogue model: how long its page takes to open and to take one step.
    let bench = page(&dir, "bench-w1", 0);
    let bytes = std::fs::metadata(&bench).unwrap().len();
    let t0 = std::time::Instant::now();
    cdp.open(&format!("file://{}", bench.display()), 1280, 1000);
    let open_ms = t0.elapsed().as_millis();
    let load = cdp.eval(
        "(() => { const n = performance.getEntriesByType('navigation')[0]; return Math.round(n.loadEventEnd); })()",
    );
    let t1 = std::time::Instant::now();
    cdp.key("End", 35, 0);
    let last = cdp.eval("document.getElementById('state').dataset.step");
    let step_ms = t1.elapsed().as_millis();
    eprintln!(
        "bench-w1 seed 0: page {bytes} bytes; opened in {open_ms} ms (load event at {load} ms); End (step {last}) in {step_ms} ms"
    );
    assert!(
        open_ms < 30_000,
        "bench-w1's page took {open_ms} ms to open"
    );
    assert!(step_ms < 5_000, "a step took {step_ms} ms");

    assert!(
        cdp.complaints.is_empty(),
        "the pages complained: {:#?}",
        cdp.complaints
    );
    cdp.close();
    eprintln!("screenshots in {}", dir.display());
}

#[test]
fn serve_adds_a_pause_where_the_reader_clicks_and_shows_the_new_violation_beside_the_old_run() {
    let Some(bin) = chromium() else {
        if std::env::var("DISTLOCK_BROWSER_TEST").as_deref() == Ok("require") {
            panic!("no chromium found, and DISTLOCK_BROWSER_TEST=require");
        }
        eprintln!("skipped: no chromium (apt-get install chromium, or run .ci/run)");
        return;
    };
    use std::io::BufRead;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["serve", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start serve");
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("serving on ")
        .unwrap_or_else(|| panic!("serve said {line:?}"))
        .trim_end_matches('/')
        .to_string();
    assert!(
        base.starts_with("http://127.0.0.1:"),
        "loopback only: {base}"
    );

    let mut cdp = Cdp::start(&bin, &dir, "serve");
    // redlock-quiet holds; zoomed on its first second, where c2 takes the lock first.
    cdp.open(
        &format!("{base}/model/redlock-quiet?seed=0#w=0,1"),
        1280,
        1100,
    );
    assert_eq!(
        cdp.eval("document.querySelector('script.steps').dataset.verdict"),
        "no violation"
    );
    // Click c2's lane 10 ms after its first acquisition: the menu offers a pause there.
    let at = cdp.eval(
        "(() => { const s = JSON.parse(document.querySelector('script.steps').textContent); const c2 = s.names.indexOf('c2'); return s.steps.find(x => x.k === 'acquire' && x.p === c2).t / 1e9 + 0.01; })()",
    );
    let xy = cdp.eval(&format!(
        "(() => {{ const svg = document.getElementById('timeline'), r = svg.getBoundingClientRect(), k = r.width / svg.viewBox.baseVal.width; const lanes = Array.from(svg.querySelectorAll('text.lane')).map(t => t.textContent); const X0 = +svg.dataset.x0, X1 = +svg.dataset.x1; const x = X0 + ({at} - 0) / 1 * (X1 - X0); return [r.left + x * k, r.top + (+svg.dataset.top + lanes.indexOf('c2') * 50 + 25) * k]; }})()"
    ));
    let (x, y) = (xy[0].as_f64().unwrap(), xy[1].as_f64().unwrap());
    for kind in ["mousePressed", "mouseReleased"] {
        cdp.call(
            "Input.dispatchMouseEvent",
            serde_json::json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
        );
    }
    assert_eq!(
        cdp.eval("document.getElementById('whatif').hidden"),
        false,
        "no menu"
    );
    cdp.eval("document.getElementById('whatif-arg-0').value = '15'");
    cdp.click("#whatif button.whatif[data-kind=pause]");
    cdp.wait_load();
    let verdicts = cdp.eval(
        "Array.from(document.querySelectorAll('script.steps')).map(s => s.dataset.variant + ': ' + s.dataset.verdict)",
    );
    eprintln!("what if: {verdicts} at {}", cdp.eval("location.href"));
    let v = verdicts.as_array().unwrap();
    assert_eq!(v.len(), 2, "{verdicts}");
    assert_eq!(v[0], "as written: no violation");
    assert!(
        v[1].as_str().unwrap().starts_with("what if: pause:c2:")
            && v[1]
                .as_str()
                .unwrap()
                .ends_with("VIOLATED: mutual_exclusion"),
        "{verdicts}"
    );
    // The page is the new run's: its verdict, opened on it at its first violation.
    assert_eq!(
        cdp.eval("document.getElementById('state').dataset.variant"),
        v[1].as_str().unwrap().split(": VIOLATED").next().unwrap()
    );
    assert_eq!(
        cdp.eval("document.getElementById('sentence').className"),
        "violation"
    );
    assert_eq!(
        cdp.eval("document.getElementById('verdict').className"),
        "bad"
    );
    cdp.eval("window.scrollTo(0, 0)");
    cdp.screenshot(&dir.join("serve-what-if-pause.png"), true);
    assert!(
        cdp.complaints.is_empty(),
        "the pages complained: {:#?}",
        cdp.complaints
    );
    cdp.close();
    let _ = server.kill();
    let _ = server.wait();
}

/// The boxes of the step's sentence, the active run's chart and the state panel, and the
/// cursor's, in the viewport's pixels: [left, top, right, bottom] each.
const BOXES: &str = "(() => { const b = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom].map(Math.round); }; const run = document.querySelector('.run.active'); return { sentence: b(document.getElementById('sentence')), chart: b(run.querySelector('.chart')), panel: b(document.getElementById('state')), cursor: b(run.querySelector('line.cursor')), step: document.getElementById('stepno').textContent }; })()";

fn inside(b: &serde_json::Value, w: f64, h: f64) -> bool {
    let v: Vec<f64> = b
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    v[0] >= 0.0 && v[1] >= 0.0 && v[2] <= w && v[3] <= h && v[2] > v[0] && v[3] > v[1]
}

#[test]
fn one_screen_per_step_the_sentence_the_chart_and_the_panel_at_1280_by_900_and_800_wide() {
    let Some(bin) = chromium() else {
        if std::env::var("DISTLOCK_BROWSER_TEST").as_deref() == Ok("require") {
            panic!("no chromium found, and DISTLOCK_BROWSER_TEST=require");
        }
        eprintln!("skipped: no chromium (apt-get install chromium, or run .ci/run)");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    // The lesson site: each lesson's page as a teacher publishes it (its text folded).
    let site = dir.join("site");
    let st = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["site", "--out"])
        .arg(&site)
        .status()
        .unwrap();
    assert!(st.success(), "site");
    let mut cdp = Cdp::start(&bin, &dir, "one-screen");
    let lessons = [
        "classic-fencing-tokens-33-34",
        "single-px-del-pause",
        "failover-lost-lock",
        "redlock-clock-jump",
    ];
    for model in lessons {
        let url = format!("file://{}", site.join(format!("{model}.html")).display());
        // 1280 x 900: the page opens at step 1 (the set-up, folded), the lesson folded away.
        cdp.open(&url, 1280, 900);
        assert_eq!(
            cdp.eval("document.getElementById('lesson').open"),
            false,
            "{model}: the lesson text is open"
        );
        let first = cdp.eval(BOXES);
        let stepno = first["step"].as_str().unwrap();
        assert!(stepno.starts_with("step 1 of "), "{model}: {stepno}");
        cdp.screenshot(
            &dir.join(format!("one-screen-{model}-1280x900-step1.png")),
            false,
        );
        // Two notable steps on, and at the first violation (or the last notable step).
        for stop in ["notable", "violation"] {
            if stop == "notable" {
                cdp.key("PageDown", 34, 0);
                cdp.key("PageDown", 34, 0);
            } else {
                let mut presses = 0;
                while cdp.eval("document.getElementById('sentence').className") != "violation"
                    && presses < 200
                {
                    cdp.key("PageDown", 34, 0);
                    presses += 1;
                }
            }
            let b = cdp.eval(BOXES);
            eprintln!("{model} at 1280x900, {stop}: {b}");
            for part in ["sentence", "chart", "panel"] {
                assert!(
                    inside(&b[part], 1280.0, 900.0),
                    "{model} at 1280x900 ({stop}): the {part} at {} is not on screen: {b}",
                    b[part]
                );
            }
            // The panel beside the chart, the cursor on the chart.
            assert!(
                b["panel"][0].as_f64() >= b["chart"][2].as_f64(),
                "{model}: the panel is not beside the chart: {b}"
            );
            assert!(
                b["cursor"][0].as_f64() >= b["chart"][0].as_f64()
                    && b["cursor"][2].as_f64() <= b["chart"][2].as_f64(),
                "{model}: the cursor is off the chart: {b}"
            );
            cdp.screenshot(
                &dir.join(format!("one-screen-{model}-1280x900-{stop}.png")),
                false,
            );
        }
        // 800 wide: the chart fits the width and follows the cursor; the panel under it.
        let s = cdp
            .eval("+document.getElementById('state').dataset.step")
            .as_u64()
            .unwrap();
        cdp.open(&format!("{url}#s={}", s + 1), 800, 900);
        let b = cdp.eval(BOXES);
        eprintln!("{model} at 800x900: {b}");
        assert!(inside(&b["sentence"], 800.0, 900.0), "{model} at 800: {b}");
        let (chart, cursor, panel) = (&b["chart"], &b["cursor"], &b["panel"]);
        assert!(
            chart[0].as_f64() >= Some(0.0) && chart[2].as_f64() <= Some(800.0),
            "{model} at 800: the chart is cut off: {b}"
        );
        assert!(
            chart[1].as_f64() < Some(900.0),
            "{model} at 800: the chart starts below the screen: {b}"
        );
        assert!(
            cursor[0].as_f64() > chart[0].as_f64() && cursor[2].as_f64() < chart[2].as_f64(),
            "{model} at 800: the cursor is off the chart: {b}"
        );
        assert!(
            panel[1].as_f64() >= chart[3].as_f64(),
            "{model} at 800: the panel is not under the chart: {b}"
        );
        cdp.screenshot(&dir.join(format!("one-screen-{model}-800.png")), false);
        cdp.screenshot(&dir.join(format!("one-screen-{model}-800-page.png")), true);
    }
    assert!(
        cdp.complaints.is_empty(),
        "the pages complained: {:#?}",
        cdp.complaints
    );
    cdp.close();
    eprintln!("screenshots in {}", dir.display());
}

/// `check-log --format html`: the redis-py harness's real log drawn as a page runs in the
/// browser as a replay's does — no console output, the script finishes, the stepper opened
/// at a step shows its sentence and the clients' beliefs (and no Redis nodes: a log has
/// none).
#[test]
fn a_real_logs_page_steps_in_headless_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var("DISTLOCK_BROWSER_TEST").as_deref() == Ok("require") {
            panic!("no chromium found, and DISTLOCK_BROWSER_TEST=require");
        }
        eprintln!("skipped: no chromium (apt-get install chromium, or run .ci/run)");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("check-log-redis-py-pause.html");
    let st = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check-log", "tests/check-log/redis-py-pause.jsonl"])
        .args(["--format", "html", "--out"])
        .arg(&page)
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(1), "the log is violated");
    let profile = dir.join("profile-check-log");
    let shot = dir.join("check-log-redis-py-pause.png");
    let out = browser(
        &bin,
        &profile,
        &[
            "--enable-logging=stderr".into(),
            "--v=0".into(),
            "--window-size=1280,900".into(),
            format!("--screenshot={}", shot.display()),
            format!("file://{}", page.display()),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {stderr}");
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console output: {console:#?}");
    // Step 4 of the log: w2 has acquired while w1 still believes it holds.
    let dom = browser(
        &bin,
        &profile,
        &[
            "--dump-dom".into(),
            format!("file://{}#s=4", page.display()),
        ],
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.split("data-rendered=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|n| n > 0),
        "the page's script did not finish"
    );
    let panel = dom
        .split("<aside id=\"state\"")
        .nth(1)
        .and_then(|s| s.split("</aside>").next())
        .unwrap_or_default();
    assert!(panel.contains("Clients: what each believes"), "{panel}");
    assert!(
        !panel.contains("Redis nodes"),
        "a log has no Redis nodes: {panel}"
    );
    assert!(
        panel.contains("holds lock `resource-lock`"),
        "someone holds the lock at step 4: {panel}"
    );
    let sentence = dom
        .split("<p id=\"sentence\"")
        .nth(1)
        .and_then(|s| s.split("</p>").next())
        .unwrap_or_default();
    assert!(sentence.len() > 20, "the step's sentence: {sentence}");
    eprintln!("check-log page: screenshot {}", shot.display());
}
