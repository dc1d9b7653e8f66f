//! `distlock-sim serve`: the page of `replay --format html`, served on loopback, where a
//! click on a lane at a time offers a fault there ("what if c1 paused here for 5 s?"); the
//! model re-runs from the same seed with that fault added to its scripted faults, and the
//! new future shows under the old one, aligned. The address carries the model, the seed and
//! the added faults (`/model/NAME?seed=S&fault=pause:c1:43.2:5`), so it can be shared and
//! replayed (`replay --fault ...` takes the same words).
//!
//! Hostile clients and pages are expected (issue 26): at most [`MAX_CONNECTIONS`] served at
//! once (more get 503), a timeout on every read and write, the request head bounded while it
//! is read (414, 431; `explore::http`), 503 rather than an exit when file handles run out,
//! only loopback Host names (421: DNS rebinding) and no model run for a page of another
//! origin (403), and no run for a client that left, nor past [`REQUEST_BUDGET`]. A bad
//! request gets a 4xx and a line saying why, never a crash. One request per connection.

use std::fmt::Write as _;
use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::view::http;

use crate::explore::run_world_while;
use crate::scenario::faults::{FaultEntry, KindSpec, Span, Target, When};
use crate::scenario::units::{Dur, DurRange, Name, SignedDur, SignedDurRange};
use crate::sim::TraceMode;
use crate::time::NS_PER_MS;
use crate::view::report::{PageRun, html_runs_on};

/// Faults one what-if may add.
pub const MAX_ADDED_FAULTS: usize = 16;
/// Largest time or duration in a fault word, in seconds (a day).
const MAX_SECONDS: f64 = 86_400.0;

/// A fault as the address writes it: `KIND:TARGET:AT[:ARG]` (seconds), read into the model's
/// one fault entry and written as RON for its `faults` list. Kinds: `pause` (ARG: how long), `clock` (ARG: the step, signed),
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
    let ms = |v: i64| DurRange::fixed(Dur(v as u64 * NS_PER_MS));
    let kind = match parts[0] {
        "pause" => KindSpec::Pause {
            duration: ms(secs(need("the pause's length")?, false)?),
        },
        "clock" => {
            let d = SignedDur(secs(need("the clock step")?, true)? * NS_PER_MS as i64);
            KindSpec::ClockStep {
                delta: SignedDurRange { min: d, max: d },
            }
        }
        "crash" => KindSpec::Crash {
            down: arg.map(|a| secs(a, false)).transpose()?.map(ms),
            keep_data: None,
            host: None,
        },
        "isolate" => KindSpec::Isolate {
            duration: Some(ms(secs(need("how long")?, false)?)),
        },
        k => {
            return Err(format!(
                "fault {word:?}: unknown kind {k:?} (pause, clock, crash, isolate)"
            ));
        }
    };
    let entry = FaultEntry {
        when: When::At(Dur(at as u64 * NS_PER_MS)),
        span: Span::One(Target::Proc(Name::new(target))),
        kind,
    };
    Ok(entry.ron().expect("a scripted entry"))
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

/// The model files served: the catalogue, and the user's own directory beside it (`serve
/// --models DIR`), whose model of a catalogue model's name is the one served.
#[derive(Clone, Debug)]
pub struct Shelf {
    pub catalogue: PathBuf,
    pub own: Option<PathBuf>,
}

impl Shelf {
    /// The catalogue alone.
    pub fn catalogue(dir: &Path) -> Shelf {
        Shelf {
            catalogue: dir.to_path_buf(),
            own: None,
        }
    }

    /// The file of model `name`: the user's first, then the catalogue's.
    fn find(&self, name: &str) -> Option<PathBuf> {
        self.own
            .iter()
            .chain(std::iter::once(&self.catalogue))
            .map(|d| d.join(format!("{name}.ron")))
            .find(|f| f.is_file())
    }
}

/// The model names (file stems) of the `.ron` files in `dir`, sorted.
fn model_names(dir: &Path) -> Vec<String> {
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
    names
}

/// Answers one GET of `url` (path and query) for the models in `dir`, running to the end.
pub fn respond(dir: &Path, method: &str, url: &str) -> Reply {
    respond_while(dir, method, url, &mut || true)
}

/// [`respond`], asking `go_on` every few thousand events of a run whether to go on (the
/// client is still there, the request has budget left); a 503 when it said no.
pub fn respond_while(
    dir: &Path,
    method: &str,
    url: &str,
    go_on: &mut dyn FnMut() -> bool,
) -> Reply {
    respond_shelf(&Shelf::catalogue(dir), method, url, go_on)
}

/// The index: the user's models (when `serve --models DIR`) and the catalogue's, each a link
/// to its page at seed 0.
fn index_page(shelf: &Shelf) -> Reply {
    let mut s = String::from(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>distlock-sim serve</title></head><body><h1>distlock-sim: what if?</h1><p>Open a model, click a lane at a time to add a fault there, and see the new future under the old one.</p>",
    );
    let own = shelf.own.as_deref().map(model_names).unwrap_or_default();
    if let Some(d) = &shelf.own {
        let _ = write!(
            s,
            "<h2 id=\"own\">Your models ({})</h2><ul>",
            esc(&d.display().to_string())
        );
        for n in &own {
            let _ = write!(s, "<li><a href=\"/model/{0}?seed=0\">{0}</a></li>", esc(n));
        }
        if own.is_empty() {
            s.push_str("<li>no .ron files there</li>");
        }
        s.push_str("</ul><h2>The catalogue</h2>");
    }
    s.push_str("<ul id=\"catalogue\">");
    for n in model_names(&shelf.catalogue) {
        if own.contains(&n) {
            let _ = write!(s, "<li>{} (yours is served under this name)</li>", esc(&n));
        } else {
            let _ = write!(s, "<li><a href=\"/model/{0}?seed=0\">{0}</a></li>", esc(&n));
        }
    }
    s.push_str("</ul></body></html>\n");
    Reply {
        status: 200,
        html: true,
        body: s,
    }
}

/// [`respond_while`] for the models on `shelf` (the catalogue and the user's own).
pub fn respond_shelf(
    shelf: &Shelf,
    method: &str,
    url: &str,
    go_on: &mut dyn FnMut() -> bool,
) -> Reply {
    if method != "GET" {
        return bad(405, format!("{method}: only GET is served"));
    }
    if url.len() > 4096 {
        return bad(414, "the address is too long".into());
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    if path == "/" {
        return index_page(shelf);
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
    let Some(file) = shelf.find(name) else {
        return bad(404, format!("{name}: no such model"));
    };
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
    let stopped = || {
        bad(
            503,
            format!(
                "the run was stopped: it went past the budget of {} s per request, or its client left",
                REQUEST_BUDGET.as_secs()
            ),
        )
    };
    let Some((o, world)) = run_world_while(&sc, seed, TraceMode::Full, go_on) else {
        return stopped();
    };
    let mut runs = vec![PageRun {
        name: "as written".into(),
        note: None,
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
    let ran = match &what {
        Some(w) => match run_world_while(w, seed, TraceMode::Full, go_on) {
            Some(r) => Some(r),
            None => return stopped(),
        },
        None => None,
    };
    if let (Some(w), Some((o2, world2))) = (&what, &ran) {
        runs.push(PageRun {
            name: format!("what if: {}", words.join(", ")),
            note: None,
            sc: w,
            world: world2,
            violations: &o2.violations,
        });
    }
    // The what-if's page is the new run's: its header, its verdict, opened at its violation.
    let mut page = html_runs_on(seed, &runs, None, runs.len() - 1);
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

/// Connections served at once; one more is answered 503 at once and closed. Each is a
/// thread: the bound keeps threads and file handles few whatever clients do.
pub const MAX_CONNECTIONS: usize = 8;
/// How long a client has to send its request head, and to take each write of the reply.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the whole reply may take to write (a client that reads a byte every few seconds
/// holds its connection no longer).
pub const WRITE_TOTAL: Duration = Duration::from_secs(60);
/// How long the runs of one request may take (the largest bundled page, bench-w1 with a
/// what-if, takes about 0.5 s).
pub const REQUEST_BUDGET: Duration = Duration::from_secs(20);
/// A reply is written in pieces of this size, each with its own timeout.
const WRITE_CHUNK_BYTES: usize = 64 * 1024;
/// How long the accept loop waits after a failed accept before it tries again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves on 127.0.0.1:`port` (0: any free port) until killed; prints the address.
pub fn serve(shelf: &Shelf, port: u16) -> Result<(), String> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_or_else(|_| format!("127.0.0.1:{port}"), |a| a.to_string());
    // Checked: a script reads the address from this line (a failed write is exit 2).
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "serving on http://{addr}/")
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("standard output: {e}"))?;
    drop(stdout);
    let active = Arc::new(AtomicUsize::new(0));
    // A file handle kept spare: when accept fails for want of handles, it is let go so that
    // the waiting client can be accepted and told 503, rather than left hanging (and the
    // loop spinning on the same error).
    let mut reserve = std::fs::File::open("/dev/null").ok();
    let mut told_out_of_handles = false;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                if reserve.is_none() {
                    reserve = std::fs::File::open("/dev/null").ok();
                }
                if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                    refuse_now(
                        stream,
                        503,
                        &format!("busy: {MAX_CONNECTIONS} connections are being served; try again"),
                    );
                    continue;
                }
                let slot = Slot::take(&active);
                let shelf = shelf.clone();
                #[allow(
                    clippy::disallowed_methods,
                    reason = "serve's connections, not a run: each run stays on one thread"
                )]
                let spawned = std::thread::Builder::new()
                    .name("serve-connection".into())
                    .spawn(move || {
                        let _slot = slot;
                        handle(stream, &shelf);
                    });
                if let Err(e) = spawned {
                    // The stream went with the closure and was closed.
                    eprintln!("serve: cannot start a thread for a connection: {e}");
                    std::thread::sleep(ACCEPT_BACKOFF);
                }
            }
            Err(e) if out_of_handles(&e) => {
                if !told_out_of_handles {
                    eprintln!(
                        "serve: out of file handles ({e}): answering 503 until some are free"
                    );
                    told_out_of_handles = true;
                }
                // With the spare handle let go, one waiting client is told; without one
                // (or with none waiting) the loop waits a moment for handles to come back.
                let told = reserve.take().is_some()
                    && match listener.accept() {
                        Ok((stream, _)) => {
                            refuse_now(stream, 503, "out of file handles; try again");
                            true
                        }
                        Err(_) => false,
                    };
                reserve = std::fs::File::open("/dev/null").ok();
                if !told {
                    std::thread::sleep(ACCEPT_BACKOFF);
                }
            }
            // A connection reset before it was accepted, an interrupted call: the next one.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionAborted
                        | ErrorKind::ConnectionReset
                        | ErrorKind::Interrupted
                        | ErrorKind::WouldBlock
                ) => {}
            Err(e) => {
                eprintln!("serve: accept failed: {e}");
                std::thread::sleep(ACCEPT_BACKOFF);
            }
        }
    }
}

fn out_of_handles(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// A place among the [`MAX_CONNECTIONS`]; given back when dropped, however the connection
/// ends (a panic in a handler included).
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(active: &Arc<AtomicUsize>) -> Slot {
        active.fetch_add(1, Ordering::SeqCst);
        Slot(Arc::clone(active))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answers `status` on the accepting thread without waiting for anything: the reply is small
/// enough for the socket's buffer, and what the client sent is read first so that closing
/// does not reset the connection before the client reads the reply.
fn refuse_now(mut stream: TcpStream, status: u16, why: &str) {
    if stream.set_nonblocking(true).is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    for _ in 0..4 {
        match stream.read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
    let _ = stream.write_all(&reply_bytes(&bad(status, why.to_string())));
    let _ = stream.shutdown(Shutdown::Write);
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        414 => "URI Too Long",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

fn reply_bytes(reply: &Reply) -> Vec<u8> {
    let ctype = if reply.html {
        "text/html; charset=utf-8"
    } else {
        "text/plain; charset=utf-8"
    };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\n\r\n",
        reply.status,
        reason(reply.status),
        reply.body.len()
    )
    .into_bytes();
    out.extend_from_slice(reply.body.as_bytes());
    out
}

/// Whether the client has closed its side (a read would give end of file). A client that
/// only shut down its writing half looks the same: `serve` reads no body, so a request is
/// all it sends, and such a client is rare; it is treated as gone.
fn client_gone(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return true;
    }
    let mut one = [0u8; 1];
    let gone = match stream.peek(&mut one) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    };
    let _ = stream.set_nonblocking(false);
    gone
}

#[allow(
    clippy::disallowed_methods,
    reason = "serve's timeouts and budgets are host time at the edge; no run reads it"
)]
fn now() -> Instant {
    Instant::now()
}

/// One connection: read the head within [`IO_TIMEOUT`] (never more than
/// [`http::MAX_HEAD_BYTES`] and one read), admit it, answer it within the budget, write the
/// reply within [`WRITE_TOTAL`], close.
fn handle(mut stream: TcpStream, shelf: &Shelf) {
    let started = now();
    let head_by = started + IO_TIMEOUT;
    let mut buf: Vec<u8> = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    let head = loop {
        match http::parse_head(&buf) {
            Ok(Some(h)) => break h,
            Err(r) => return write_reply(&mut stream, &bad(r.status, r.why)),
            Ok(None) => {}
        }
        let left = head_by.saturating_duration_since(now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return write_reply(&mut stream, &bad(408, "the request took too long".into()));
        }
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return write_reply(&mut stream, &bad(408, "the request took too long".into()));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    };
    drop(buf);
    let computes = head.target.starts_with("/model/");
    if let Err(r) = http::admit(&head, computes) {
        return write_reply(&mut stream, &bad(r.status, r.why));
    }
    // Nobody to answer: no run for them.
    if client_gone(&stream) {
        return;
    }
    let budget_by = now() + REQUEST_BUDGET;
    let mut go_on = || now() < budget_by && !client_gone(&stream);
    let reply = respond_shelf(shelf, &head.method, &head.target, &mut go_on);
    write_reply(&mut stream, &reply);
}

/// Writes the reply in pieces, each within [`IO_TIMEOUT`] and all within [`WRITE_TOTAL`];
/// gives up quietly when the client does not take it.
fn write_reply(stream: &mut TcpStream, reply: &Reply) {
    let bytes = reply_bytes(reply);
    let by = now() + WRITE_TOTAL;
    for piece in bytes.chunks(WRITE_CHUNK_BYTES) {
        let left = by.saturating_duration_since(now()).min(IO_TIMEOUT);
        if left.is_zero() || stream.set_write_timeout(Some(left)).is_err() {
            return;
        }
        if stream.write_all(piece).is_err() {
            return;
        }
    }
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
    // Drain what the client still sends (briefly), so that the close does not reset the
    // connection under a reply it has not read yet.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        match stream.read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
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
            r#"pause(target: "c1", at: "43.2s", duration: "5s")"#
        );
        assert_eq!(
            fault_ron("clock:r1:10:-2.5").unwrap(),
            r#"clock_step(target: "r1", at: "10s", delta: "-2500ms")"#
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
    fn a_run_told_to_stop_gives_503_and_no_page() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
        let r = respond_while(&dir, "GET", "/model/bench-w1?seed=0", &mut || false);
        assert_eq!(r.status, 503, "{}", r.body);
        assert!(r.body.contains("stopped"), "{}", r.body);
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
