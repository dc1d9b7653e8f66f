//! `serve` under hostile clients and pages (issue 26 §1-4): each test starts the binary on a
//! free port and attacks it over TCP the way the reproducers did.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Server {
        Server::start_with(
            Command::new(env!("CARGO_BIN_EXE_distlock-sim")).args(["serve", "--port", "0"]),
        )
    }

    fn start_with(cmd: &mut Command) -> Server {
        let mut child = cmd
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("serve said {line:?}"));
        Server { child, port }
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s
    }

    /// Sends `head` as is and returns the status code and the whole reply.
    fn send(&self, head: &str) -> (u16, String) {
        let mut s = self.connect();
        s.write_all(head.as_bytes()).unwrap();
        read_reply(&mut s)
    }

    fn get(&self, target: &str) -> (u16, String) {
        self.send(&format!(
            "GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.port
        ))
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_reply(s: &mut TcpStream) -> (u16, String) {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {:?}", &text[..text.len().min(200)]));
    (status, text)
}

#[allow(
    clippy::disallowed_methods,
    reason = "a test of serve's timing, not a run"
)]
fn elapsed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = std::time::Instant::now();
    let r = f();
    (r, t.elapsed())
}

#[test]
fn a_client_that_never_reads_a_large_page_does_not_hold_up_the_next_one() {
    let srv = Server::start();
    let mut stuck = srv.connect();
    write!(
        stuck,
        "GET /model/bench-w1?seed=0 HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        srv.port
    )
    .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let ((status, _), took) = elapsed(|| srv.get("/model/single-px-cad-pause?seed=0"));
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(5), "the next page took {took:?}");
    drop(stuck);
}

#[test]
fn an_endless_request_line_gets_414_after_a_few_kilobytes_are_read() {
    let srv = Server::start();
    let mut s = srv.connect();
    s.write_all(b"GET /").unwrap();
    let mib = vec![b'a'; 1 << 20];
    // The server stops reading at its limit: the writes fail (reset) well before 64 MiB.
    let sent = (0..64).take_while(|_| s.write_all(&mib).is_ok()).count();
    assert!(sent < 64, "the server read 64 MiB of one request line");
    let (status, _) = read_reply(&mut s);
    assert_eq!(status, 414);
}

#[test]
fn a_flood_of_header_lines_gets_431() {
    let srv = Server::start();
    let many = "X-h: b\r\n".repeat(100);
    let (status, body) = srv.send(&format!("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n{many}\r\n"));
    assert_eq!(status, 431, "{body}");
    let mut s = srv.connect();
    s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-big: ")
        .unwrap();
    let _ = s.write_all(&vec![b'b'; 1 << 20]);
    assert_eq!(read_reply(&mut s).0, 431);
}

#[test]
fn connections_beyond_the_bound_get_503_and_serving_goes_on_once_they_close() {
    let mut srv = Server::start();
    let idle: Vec<TcpStream> = (0..20).map(|_| srv.connect()).collect();
    std::thread::sleep(Duration::from_millis(500));
    let (status, body) = srv.get("/");
    assert_eq!(status, 503, "{body}");
    drop(idle);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(srv.get("/").0, 200);
    assert!(srv.alive());
}

#[cfg(target_os = "linux")]
#[test]
fn out_of_file_handles_serve_answers_503_and_keeps_serving() {
    let bin = env!("CARGO_BIN_EXE_distlock-sim");
    // 9 handles: stdin, stdout, stderr, the listener, the spare one, and four connections.
    let mut srv = Server::start_with(
        Command::new("sh").args(["-c", &format!("ulimit -n 9 && exec '{bin}' serve --port 0")]),
    );
    let idle: Vec<TcpStream> = (0..40).map(|_| srv.connect()).collect();
    std::thread::sleep(Duration::from_millis(500));
    assert!(srv.alive(), "serve exited when its file handles ran out");
    let (status, body) = srv.get("/");
    assert_eq!(status, 503, "{body}");
    drop(idle);
    let mut status = 0;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        status = srv.get("/").0;
        if status == 200 {
            break;
        }
    }
    assert_eq!(
        status, 200,
        "serve did not come back once handles were free"
    );
}

#[test]
fn a_foreign_host_gets_421_and_a_page_of_another_origin_gets_403_before_any_run() {
    let srv = Server::start();
    let p = srv.port;
    let page = "/model/single-px-cad-pause?seed=0";
    for host in ["evil.example", &format!("evil.example:{p}")] {
        let (status, body) = srv.send(&format!("GET {page} HTTP/1.1\r\nHost: {host}\r\n\r\n"));
        assert_eq!(status, 421, "{host}: {body}");
    }
    for (h, extra) in [
        ("Origin", "http://evil.example"),
        ("Sec-Fetch-Site", "cross-site"),
    ] {
        let (status, body) = srv.send(&format!(
            "GET {page} HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\n{h}: {extra}\r\n\r\n"
        ));
        assert_eq!(status, 403, "{h}: {extra}: {body}");
    }
    let (status, _) = srv.send(&format!(
        "GET {page} HTTP/1.1\r\nHost: localhost:{p}\r\nOrigin: http://localhost:{p}\r\nSec-Fetch-Site: same-origin\r\n\r\n"
    ));
    assert_eq!(status, 200);
}

#[test]
fn abandoned_what_ifs_do_not_delay_the_next_page() {
    let srv = Server::start();
    for i in 0..20 {
        let mut s = srv.connect();
        // The server may already have closed it (at its connection cap, or under the other
        // tests' load): a refused what-if is abandoned too, so a failed write is no failure.
        let _ = write!(
            s,
            "GET /model/bench-w1?seed={i}&fault=pause:c1:1:5 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        );
        let _ = s.shutdown(Shutdown::Both);
    }
    std::thread::sleep(Duration::from_millis(200));
    let ((status, _), took) = elapsed(|| srv.get("/model/single-px-cad-pause?seed=0"));
    assert_eq!(status, 200);
    // One-at-a-time serving ran all twenty (about 9 s).
    assert!(took < Duration::from_secs(4), "the next page took {took:?}");
}

#[test]
fn serve_models_dir_serves_your_own_models_and_a_what_if_page_is_the_new_runs() {
    // Your own model file, in a directory of your own: redlock-quiet under another name.
    let own = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serve-own-models");
    let _ = std::fs::remove_dir_all(&own);
    std::fs::create_dir_all(&own).unwrap();
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/redlock-quiet.ron"),
    )
    .unwrap();
    std::fs::write(own.join("my-own-lock.ron"), text).unwrap();
    let server = Server::start_with(
        Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
            .args(["serve", "--port", "0", "--models"])
            .arg(&own),
    );
    // The index: yours first, the catalogue beside it.
    let (status, index) = server.get("/");
    assert_eq!(status, 200, "{index}");
    let (yours, catalogue) = (
        index.find("Your models").expect("a section of your models"),
        index.find("id=\"catalogue\"").expect("the catalogue"),
    );
    let mine = index
        .find("href=\"/model/my-own-lock?seed=0\"")
        .expect("your model is listed");
    assert!(yours < mine && mine < catalogue, "{index}");
    assert!(index.contains("href=\"/model/redlock-quiet?seed=0\""));
    // Your model's page, as written: no violation.
    let (status, page) = server.get("/model/my-own-lock?seed=0");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<span class=\"ok\">no violation</span>"));
    assert!(!page.contains("data-open="));
    // A pause added on c2 10 ms into its first hold: the page is the new run's — its header
    // and verdict say the violation, and it opens on that run.
    let (status, page) = server.get("/model/my-own-lock?seed=0&fault=pause:c2:0.092:15");
    assert_eq!(status, 200, "{page}");
    let h1 = &page[page.find("<h1>").unwrap()..page.find("</h1>").unwrap()];
    assert!(
        h1.contains("class=\"bad\"") && h1.contains("violation(s)"),
        "the header is not the new run's: {h1}"
    );
    assert!(
        page.contains("<p id=\"verdict\" class=\"bad\">what if: pause:c2:0.092:15: VIOLATED"),
        "the verdict is not the new run's"
    );
    assert!(page.contains("<main id=\"stage\" data-open=\"1\">"));
    eprintln!("{h1}");
    // A catalogue model is still served, and a name on neither shelf is not.
    assert_eq!(server.get("/model/redlock-quiet?seed=0").0, 200);
    assert_eq!(server.get("/model/nobody-has-this?seed=0").0, 404);
    // --models of a directory that is not there: exit 2, said.
    let out = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .args(["serve", "--port", "0", "--models"])
        .arg(own.join("nope"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
}
