//! `distlock-sim serve`: the page of `replay --format html`, served on loopback, where a
//! click on a lane at a time offers a fault there ("what if c1 paused here for 5 s?"); the
//! model re-runs from the same seed with that fault added to its scripted faults, and the
//! new future shows under the old one, aligned. The address carries the model, the seed and
//! the added faults (`/model/NAME?seed=S&fault=pause:c1:43.2:5`), so it can be shared and
//! replayed (`replay --fault ...` takes the same words).
//!
//! One request at a time (a run takes milliseconds); a bad request gets a 4xx and a line
//! saying why, never a crash.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::explore::report::{PageRun, html_runs};
use crate::explore::run_world;
use crate::sim::TraceMode;

/// Faults one what-if may add.
pub const MAX_ADDED_FAULTS: usize = 16;
/// Largest time or duration in a fault word, in seconds (a day).
const MAX_SECONDS: f64 = 86_400.0;

/// A fault as the address writes it: `KIND:TARGET:AT[:ARG]` (seconds), as RON for the
/// model's `faults` list. Kinds: `pause` (ARG: how long), `clock` (ARG: the step, signed),
/// `crash` (ARG: restart after, optional), `isolate` (ARG: how long).
pub fn fault_ron(word: &str) -> Result<String, String> {
    let parts: Vec<&str> = word.split(':').collect();
    if parts.len() < 3 || parts.len() > 4 {
        return Err(format!(
            "fault {word:?}: KIND:TARGET:AT[:ARG] was expected (e.g. pause:c1:43.2:5)"
        ));
    }
    let target = parts[1];
    if target.is_empty()
        || target.len() > 64
        || !target
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!("fault {word:?}: {target:?} is not a process name"));
    }
    let secs = |s: &str, signed: bool| -> Result<i64, String> {
        let v: f64 = s
            .parse()
            .map_err(|_| format!("fault {word:?}: {s:?} is not a number of seconds"))?;
        if !v.is_finite() || v.abs() > MAX_SECONDS || (!signed && v < 0.0) {
            return Err(format!(
                "fault {word:?}: {s:?} is out of range (0..{MAX_SECONDS} s)"
            ));
        }
        Ok((v * 1000.0).round() as i64)
    };
    let at = secs(parts[2], false)?;
    let arg = parts.get(3).copied();
    let need = |what: &str| arg.ok_or_else(|| format!("fault {word:?}: {what} is missing"));
    Ok(match parts[0] {
        "pause" => format!(
            r#"pause(target: "{target}", at: "{at}ms", duration: "{}ms")"#,
            secs(need("the pause's length")?, false)?
        ),
        "clock" => {
            let d = secs(need("the clock step")?, true)?;
            format!(r#"clock_step(target: "{target}", at: "{at}ms", delta: "{d:+}ms")"#)
        }
        "crash" => match arg {
            Some(a) => format!(
                r#"crash(target: "{target}", at: "{at}ms", restart_after: "{}ms")"#,
                secs(a, false)?
            ),
            None => format!(r#"crash(target: "{target}", at: "{at}ms")"#),
        },
        "isolate" => format!(
            r#"isolate(target: "{target}", at: "{at}ms", duration: "{}ms")"#,
            secs(need("how long")?, false)?
        ),
        k => {
            return Err(format!(
                "fault {word:?}: unknown kind {k:?} (pause, clock, crash, isolate)"
            ));
        }
    })
}

/// The model at `path` with the fault words added (and its variants left out).
pub fn what_if(path: &Path, words: &[String]) -> Result<crate::scenario::Scenario, String> {
    if words.len() > MAX_ADDED_FAULTS {
        return Err(format!("at most {MAX_ADDED_FAULTS} added faults"));
    }
    let sc = crate::scenario::load(path).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    what_if_text(&sc, &text, words)
}

/// The model `sc` read from `text` (its file's, or with `--set` overrides applied) with the
/// fault words added (and its variants left out); its replay flags (`--set`) are kept.
pub fn what_if_text(
    sc: &crate::scenario::Scenario,
    text: &str,
    words: &[String],
) -> Result<crate::scenario::Scenario, String> {
    if words.len() > MAX_ADDED_FAULTS {
        return Err(format!("at most {MAX_ADDED_FAULTS} added faults"));
    }
    let ron: Vec<String> = words
        .iter()
        .map(|w| fault_ron(w))
        .collect::<Result<_, _>>()?;
    let patched = crate::scenario::variants::with_added_faults(text, &ron)
        .map_err(|(_, m)| format!("{}: {m}", sc.path))?;
    let mut w = crate::scenario::load_str(&sc.name, &sc.path, &patched)
        .map_err(|e| format!("with the added faults: {}", e.message))?;
    w.replay_flags = sc.replay_flags.clone();
    Ok(w)
}

/// One response: status, content type, body.
pub struct Reply {
    pub status: u16,
    pub html: bool,
    pub body: String,
}

fn bad(status: u16, why: String) -> Reply {
    Reply {
        status,
        html: false,
        body: why + "\n",
    }
}

fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Answers one GET of `url` (path and query) for the models in `dir`.
pub fn respond(dir: &Path, method: &str, url: &str) -> Reply {
    if method != "GET" {
        return bad(405, format!("{method}: only GET is served"));
    }
    if url.len() > 4096 {
        return bad(414, "the address is too long".into());
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    if path == "/" {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .filter_map(|e| {
                        let p = e.path();
                        (p.extension().is_some_and(|x| x == "ron"))
                            .then(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                            .flatten()
                    })
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        let mut s = String::from(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>distlock-sim serve</title></head><body><h1>distlock-sim: what if?</h1><p>Open a model, click a lane at a time to add a fault there, and see the new future under the old one.</p><ul>",
        );
        for n in &names {
            let _ = write!(s, "<li><a href=\"/model/{0}?seed=0\">{0}</a></li>", esc(n));
        }
        s.push_str("</ul></body></html>\n");
        return Reply {
            status: 200,
            html: true,
            body: s,
        };
    }
    let Some(name) = path.strip_prefix("/model/") else {
        return bad(404, format!("{path}: not found (try /)"));
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return bad(404, format!("{name:?}: no such model"));
    }
    let file: PathBuf = dir.join(format!("{name}.ron"));
    if !file.is_file() {
        return bad(404, format!("{name}: no such model"));
    }
    let mut seed = 0u64;
    let mut words = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(v) = decode(v) else {
            return bad(400, format!("{k}: bad percent-encoding"));
        };
        match k {
            "seed" => match v.parse() {
                Ok(s) => seed = s,
                Err(_) => return bad(400, format!("seed {v:?} is not a number")),
            },
            "fault" => words.push(v),
            _ => return bad(400, format!("unknown parameter {k:?} (seed, fault)")),
        }
    }
    let sc = match crate::scenario::load(&file) {
        Ok(sc) => sc,
        Err(e) => return bad(400, e.to_string()),
    };
    let (o, world) = run_world(&sc, seed, TraceMode::Full);
    let mut runs = vec![PageRun {
        name: "as written".into(),
        sc: &sc,
        world: &world,
        violations: &o.violations,
    }];
    let what = if words.is_empty() {
        None
    } else {
        match what_if(&file, &words) {
            Ok(w) => Some(w),
            Err(e) => return bad(400, e),
        }
    };
    let ran = what.as_ref().map(|w| {
        let (o, world) = run_world(w, seed, TraceMode::Full);
        (o, world)
    });
    if let (Some(w), Some((o2, world2))) = (&what, &ran) {
        runs.push(PageRun {
            name: format!("what if: {}", words.join(", ")),
            sc: w,
            world: world2,
            violations: &o2.violations,
        });
    }
    let mut page = html_runs(seed, &runs, None);
    let replay = format!(
        "distlock-sim replay {} --seed {seed}{}",
        sc.path,
        words
            .iter()
            .map(|w| format!(" --fault {w}"))
            .collect::<String>()
    );
    if !words.is_empty() {
        page = page.replacen(
            "<p class=\"replay\">",
            &format!(
                "<p class=\"replay\">what if, replayed: <code>{}</code></p>\n<p class=\"replay\">",
                esc(&replay)
            ),
            1,
        );
    }
    let attrs = format!(
        r#"<body data-serve="1" data-model="{}" data-seed="{seed}" data-faults="{}">"#,
        esc(name),
        esc(&words.join(" "))
    );
    page = page.replacen("<body>", &attrs, 1);
    page = page.replacen(
        "</body>",
        &format!("<script>{SERVE_JS}</script>\n</body>"),
        1,
    );
    Reply {
        status: 200,
        html: true,
        body: page,
    }
}

/// Serves on 127.0.0.1:`port` (0: any free port) until killed; prints the address.
pub fn serve(dir: &Path, port: u16) -> Result<(), String> {
    let server = tiny_http::Server::http(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let addr = server
        .server_addr()
        .to_ip()
        .map_or_else(|| format!("127.0.0.1:{port}"), |a| a.to_string());
    println!("serving on http://{addr}/");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    for req in server.incoming_requests() {
        let reply = respond(dir, req.method().as_str(), req.url());
        let ctype = if reply.html {
            "text/html; charset=utf-8"
        } else {
            "text/plain; charset=utf-8"
        };
        let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], ctype.as_bytes())
            .expect("a valid header");
        let resp = tiny_http::Response::from_string(reply.body)
            .with_status_code(reply.status)
            .with_header(header);
        let _ = req.respond(resp);
    }
    Ok(())
}

/// The what-if menu: a click (not a drag) on a lane of the model's chart offers the faults
/// that lane can suffer at that instant; choosing one loads the address with it added.
const SERVE_JS: &str = r#"
(function () {
  'use strict';
  const svg = document.getElementById('timeline');
  const X0 = +svg.dataset.x0, X1 = +svg.dataset.x1, TOP = +svg.dataset.top;
  const lanes = Array.from(svg.querySelectorAll('text.lane')).map(t => [t.textContent, t.nextElementSibling ? t.nextElementSibling.textContent : '']);
  const menu = document.createElement('div');
  menu.id = 'whatif';
  menu.style.cssText = 'position:fixed;background:#fff;border:1px solid #888;padding:6px 8px;font-size:12px;z-index:20;box-shadow:0 2px 6px #0003';
  menu.hidden = true;
  document.body.appendChild(menu);
  let down = null;
  svg.addEventListener('mousedown', ev => { down = [ev.clientX, ev.clientY]; });
  svg.addEventListener('click', ev => {
    if (!down || Math.abs(ev.clientX - down[0]) + Math.abs(ev.clientY - down[1]) > 4) return;
    const r = svg.getBoundingClientRect(), k = svg.viewBox.baseVal.width / r.width;
    const px = (ev.clientX - r.left) * k, py = (ev.clientY - r.top) * k;
    const lane = Math.floor((py - TOP) / 50);
    if (px < X0 || px > X1 || lane < 0 || lane >= lanes.length) return;
    const m = /showing (-?[0-9.]+)s … (-?[0-9.]+)s/.exec(document.getElementById('range').textContent);
    const w0 = +m[1], w1 = +m[2];
    const t = Math.max(0, w0 + (px - X0) / (X1 - X0) * (w1 - w0));
    const [name, role] = lanes[lane];
    const opts = role === 'client'
      ? [['pause', 'pause ' + name + ' for', 5], ['isolate', 'cut ' + name + ' off for', 5], ['clock', 'step ' + name + "'s clock by", 5]]
      : role === 'redis'
        ? [['crash', 'crash ' + name + ', restart after', 5], ['clock', 'step ' + name + "'s clock by", 5], ['isolate', 'cut ' + name + ' off for', 5]]
        : [['isolate', 'cut ' + name + ' off for', 5]];
    menu.innerHTML = '<b>what if, at ' + t.toFixed(3) + ' s:</b><br>' + opts.map((o, i) =>
      '<button class="whatif" data-kind="' + o[0] + '">' + o[1] + '</button> <input size="4" value="' + o[2] + '" id="whatif-arg-' + i + '"> s<br>').join('');
    menu.style.left = Math.min(ev.clientX + 8, window.innerWidth - 300) + 'px';
    menu.style.top = ev.clientY + 8 + 'px';
    menu.hidden = false;
    Array.from(menu.querySelectorAll('button.whatif')).forEach((b, i) => b.addEventListener('click', () => {
      const arg = document.getElementById('whatif-arg-' + i).value;
      const word = b.dataset.kind + ':' + name + ':' + t.toFixed(3) + ':' + arg;
      const q = new URLSearchParams(location.search);
      q.append('fault', word);
      location.href = location.pathname + '?' + q.toString();
    }));
  });
  document.addEventListener('keydown', ev => { if (ev.key === 'Escape') menu.hidden = true; });
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_words_become_the_models_fault_entries_and_bad_ones_are_refused() {
        assert_eq!(
            fault_ron("pause:c1:43.2:5").unwrap(),
            r#"pause(target: "c1", at: "43200ms", duration: "5000ms")"#
        );
        assert_eq!(
            fault_ron("clock:r1:10:-2.5").unwrap(),
            r#"clock_step(target: "r1", at: "10000ms", delta: "-2500ms")"#
        );
        for bad in [
            "pause:c1",
            "pause:c1:x:5",
            "boom:c1:1:1",
            "pause:c\"1:1:1",
            "pause:c1:-1:1",
            "pause:c1:1e300:1",
        ] {
            assert!(fault_ron(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_requests_get_4xx_and_a_reason() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
        assert_eq!(respond(&dir, "POST", "/").status, 405);
        assert_eq!(respond(&dir, "GET", "/nothing").status, 404);
        assert_eq!(respond(&dir, "GET", "/model/../Cargo").status, 404);
        assert_eq!(respond(&dir, "GET", "/model/nope").status, 404);
        assert_eq!(
            respond(&dir, "GET", "/model/single-px-cad-fencing?seed=x").status,
            400
        );
        assert_eq!(
            respond(
                &dir,
                "GET",
                "/model/single-px-cad-fencing?fault=pause:zz:1:1"
            )
            .status,
            400
        );
        assert_eq!(
            respond(&dir, "GET", "/model/single-px-cad-fencing?what=1").status,
            400
        );
        assert_eq!(
            respond(&dir, "GET", "/model/single-px-cad-fencing?fault=%zz").status,
            400
        );
        let ok = respond(
            &dir,
            "GET",
            "/model/single-px-cad-fencing?seed=0&fault=pause:c1:2:15",
        );
        assert_eq!(ok.status, 200, "{}", ok.body);
        assert!(ok.body.contains("what if: pause:c1:2:15"));
    }
}
