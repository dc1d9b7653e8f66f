//! In-process, deterministic fuzzing of the entry points that take untrusted text:
//! the model loader (`scenario::load_str`), the conformance corpus parser
//! (`conformance::corpus::parse`), load-then-run (what loads runs one seed, clamped to
//! a short run by tests/fuzz/bounds.rs), check-log's reader (`check::recorded::judge`, and
//! the page it draws of an accepted log) and
//! serve's request-head parser (`explore::http`, checks in tests/fuzz/http_head.rs).
//! Seeds: every models/*.ron, every tests/conformance/redis7/*.txt, every
//! tests/check-log/*.jsonl and hand-made nasty inputs; a structure-aware mutator
//! (tests/fuzz/mutate.rs) driven by ChaCha, so a run is the same on every machine.
//!
//! Each input must give `Ok` or `Err` (a panic fails the test), within 10 s (1 s is reported
//! as slow), allocating at most 256 MiB above what was live before it (a per-thread counting
//! allocator; 1 GiB aborts the process, leaving the input in target/fuzz-findings/). Every
//! finding is saved under target/fuzz-findings/ and named in the failure message.
//!
//! `cargo test --release --test fuzz` runs the CI default (a few seconds per target);
//! `DISTLOCK_FUZZ_ITERS=N` sets the inputs per target, `DISTLOCK_FUZZ_SEED=S` the campaign
//! seed. The figures (inputs, accepted, rejected, time) are written straight to the
//! process's stdout, which libtest does not capture, and to
//! target/fuzz-findings/<target>-figures.txt.
//!
//! Files under tests/fuzz-corpus/ are inputs that once failed; every one is replayed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use distlock_sim::check::recorded;
use distlock_sim::conformance::corpus::{self, StepKind};
use distlock_sim::scenario;
use distlock_sim::sim::RunEnd;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

#[path = "fuzz/bounds.rs"]
mod bounds;
#[path = "fuzz/http_head.rs"]
mod http_head;
#[path = "fuzz/mutate.rs"]
mod mutate;

use mutate::{Style, below, pick};

// ---------------------------------------------------------------------------------------
// Memory: a counting allocator, per thread (libtest runs the targets on parallel threads).

/// Bytes one input may allocate above what was live before it before it is a finding.
const INPUT_ALLOC_LIMIT: isize = 256 << 20;
/// Beyond this the allocation fails and the process aborts (the input is on disk already).
const INPUT_ALLOC_ABORT: isize = 1 << 30;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// `isize::MAX` when no input is being tried on this thread.
    static CAP: Cell<isize> = const { Cell::new(isize::MAX) };
}

struct Counting;

/// Counts `n` more bytes live on this thread; false when the thread's cap forbids them.
fn charge(n: usize) -> bool {
    LIVE.try_with(|live| {
        let v = live.get().saturating_add(n as isize);
        if v > CAP.with(Cell::get) {
            return false;
        }
        live.set(v);
        PEAK.with(|p| p.set(p.get().max(v)));
        true
    })
    .unwrap_or(true)
}

fn uncharge(n: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get() - n as isize));
}

// SAFETY: every call is forwarded to `System` unchanged; the counters are thread-locals
// without destructors, so touching them never allocates or re-enters the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !charge(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract is passed through.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !charge(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        uncharge(layout.size());
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() && !charge(new_size - layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            if new_size > layout.size() {
                uncharge(new_size - layout.size());
            }
        } else if new_size < layout.size() {
            uncharge(layout.size() - new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

// ---------------------------------------------------------------------------------------
// Panics: recorded with their location while an input runs, printed as usual otherwise.

thread_local! {
    static TRYING: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if TRYING.with(Cell::get) {
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(non-string panic)".into());
                let at = info.location().map_or_else(String::new, |l| {
                    format!("{}:{}:{}", l.file(), l.line(), l.column())
                });
                let bt = std::backtrace::Backtrace::force_capture();
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg} at {at}\n{bt}")));
            } else {
                default(info);
            }
        }));
    });
}

// ---------------------------------------------------------------------------------------
// Inputs.

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn findings_dir() -> PathBuf {
    let d = root().join("target").join("fuzz-findings");
    std::fs::create_dir_all(&d).expect("create target/fuzz-findings");
    d
}

/// The files with extension `ext` in `dir`, sorted by name (the seed corpus order is fixed).
fn files(dir: &Path, ext: &str) -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
            (p, text)
        })
        .collect();
    out.sort();
    out
}

const GOOD_MODEL: &str = r#"(
    description: "t",
    duration: "10s",
    nodes: [(name: "redis")],
    clients: [(name: "c", count: 2, algorithm: "set-px-del", node: "redis", ttl: "1s",
               hold: ("10ms", "20ms"), retry: ("5ms", "10ms"))],
    check: ["mutual_exclusion"],
)"#;

/// Hand-made inputs for the loader: nesting, huge numbers, duplicates, repeated targets,
/// empty lists, unicode, truncation, and the defects of issue 12 that the loader accepts.
fn nasty_models() -> Vec<String> {
    let g = GOOD_MODEL;
    let mut v = vec![
        String::new(),
        "(".into(),
        ")".into(),
        "()".into(),
        "(".repeat(100_000),
        "[".repeat(100_000),
        format!("{}1{}", "Some(".repeat(10_000), ")".repeat(10_000)),
        format!("\u{feff}{g}"),
        g.replace('\n', "\r\n"),
        g.replace('\n', "\r"),
        g.replace("\"c\"", "\"名前🦀\u{202e}\""),
        g.replace("\"c\"", "\"\""),
        g.replace("\"redis\"", "\"\u{0}\""),
        g.replace("count: 2", "count: 18446744073709551615"),
        g.replace("count: 2", "count: -9223372036854775808"),
        g.replace("count: 2", "count: 256"),
        g.replace("count: 2", "count: 0"),
        g.replace("\"10s\"", "\"18446744073709551615ms\""),
        g.replace("\"10s\"", "\"24h\""),
        g.replace("\"10s\"", "\"0ms\""),
        g.replace("\"1s\"", "\"86400s\""),
        g.replace("\"10ms\", \"20ms\"", "\"20ms\", \"10ms\""),
        g.replace("nodes: [(name: \"redis\")]", "nodes: []"),
        g.replace("nodes: [(name: \"redis\")]", "nodes: [(name: \"redis\"), (name: \"redis\")]"),
        g.replace("nodes: [(name: \"redis\")]", "nodes: [(name: \"c1\")]"),
        g.replace("check: [\"mutual_exclusion\"]", "check: []"),
        g.replace(
            "check: [\"mutual_exclusion\"]",
            "check: [\"mutual_exclusion\", \"mutual_exclusion\"], expect: violates([])",
        ),
        g.replace("clients: [", "clients: [], x: ["),
        g.replace(")\"", ")\" description: \"again\","),
        g.replace("description: \"t\",", "description: \"t\", description: \"u\","),
        // Issue 12.13: a replica_of cycle and a zero liveness bound (known; accepted today).
        g.replace(
            "nodes: [(name: \"redis\")]",
            "nodes: [(name: \"redis\", replica_of: \"r2\"), (name: \"r2\", replica_of: \"redis\")]",
        ),
        g.replace("check: [", "liveness_bound: \"0ms\", check: [\"liveness\", "),
        // Issue 12.8/12.9: repeated targets and many processes (known; bounded by the clamp
        // and the allow-list of tests/fuzz/bounds.rs).
        g.replace(
            "check:",
            &format!(
                "random_faults: [partition(targets: [{}], every: (\"1ms\", \"2ms\"), duration: (\"1ms\", \"1ms\"))], check:",
                "\"c1\", ".repeat(2000)
            ),
        ),
        g.replace("count: 2", "count: 256").replace(
            "check:",
            "random_faults: [partition(targets: [\"redis\", \"c1\", \"c2\"], every: (\"1ms\", \"1ms\"), duration: (\"1ms\", \"1ms\"))], check:",
        ),
        g.replace(
            "check:",
            &format!(
                "faults: [{}], check:",
                "pause(target: \"c1\", at: \"1ms\", duration: \"24h\"), ".repeat(10_001)
            ),
        ),
        g.replace(
            "check:",
            "swarm: (faults: [pause(targets: [\"c1\", \"c1\", \"c1\"], every: (\"1ms\", \"1ms\"), duration: (\"0ms\", \"1ms\"))]), check:",
        ),
        g.replace("check:", "max_events: 1, check:"),
        g.replace("check:", "max_events: 0, check:"),
        g.replace("check:", "epoch_unix_ms: 4102444800000, check:"),
        g.replace("check:", "network: (latency: (\"0ms\", \"0ms\"), loss_ppm: 1000000), check:"),
    ];
    // Truncations of a good model at every byte.
    v.extend(
        (0..g.len())
            .filter(|&k| g.is_char_boundary(k))
            .map(|k| g[..k].to_string()),
    );
    v
}

/// Hand-made inputs for the corpus parser.
fn nasty_corpora() -> Vec<String> {
    let case = "# case: a\n# topology: single\n@0 SET k v PX 100 -> OK\n@10 GET k -> \"v\"\n";
    let mut v = vec![
        String::new(),
        "\u{feff}".into(),
        "#".into(),
        "# case:".into(),
        "# case: x\n".into(),
        "# case: x\n@0 GET k -> (nil)\n".into(),
        "@0 GET k -> (nil)\n".into(),
        "# case: x\n# topology: single\n@0 GET k\n".into(),
        "# case: x\n# topology: single\n@0 -> OK\n".into(),
        "# case: x\n# topology: single\n@ GET k -> OK\n".into(),
        "# case: x\n# topology: single\n@18446744073709551616 GET k -> OK\n".into(),
        "# case: x\n# topology: single\n@86400001 GET k -> OK\n".into(),
        "# case: x\n# topology: single\n@10 GET k -> OK\n@5 GET k -> OK\n".into(),
        "# case: x\n# topology: single\n@0 SET k {unix_ms+9223372036854775807} -> OK\n".into(),
        "# case: x\n# topology: single\n@0 SET k {unix_s-9223372036854775808} -> OK\n".into(),
        "# case: x\n# topology: single\n@0 PTTL k -> ~-9223372036854775808\n".into(),
        "# case: x\n# topology: single\n@0 PTTL k -> ~{unix_ms+9223372036854775807}\n".into(),
        "# case: x\n# topology: single\n@0 PTTL k -> (integer) 99999999999999999999\n".into(),
        "# case: x\n# topology: single\n@0 GET \"unterminated -> OK\n".into(),
        "# case: x\n# topology: single\n@0 GET \"\\xZZ\" -> OK\n".into(),
        "# case: x\n# topology: single\n@0 GET k -> \"\\x\"\n".into(),
        "# case: x\n# topology: single\n@0 GET k -> (error)\n".into(),
        "# case: x\n# topology: single\n@0 GET k -> \n".into(),
        "# case: x\n# topology: single\n@0 GET k -> -> ->\n".into(),
        "# case: x\n# topology: single\n@0 link replica master\n".into(),
        "# case: x\n# topology: master-replica\n@0 GET k -> OK\n".into(),
        "# case: x\n# topology: master-replica\n@0 wait-sync\n@0 link replica master\n".into(),
        "# case: x\n# topology: master-replica\n@0 nobody: GET k -> OK\n".into(),
        "# case: x\n# topology: ring\n".into(),
        "# case: x\n# topology: single\n# topology: single\n".into(),
        "# case: x\n# case: x\n".into(),
        format!(
            "# case: x\n# topology: single\n@0 LRANGE k 0 -1 -> {}\n",
            "[".repeat(100_000)
        ),
        format!(
            "# case: x\n# topology: single\n@0 LRANGE k 0 -1 -> {}1{}\n",
            "[".repeat(40),
            "]".repeat(40)
        ),
        format!(
            "# case: x\n# topology: single\n@0 GET {} -> OK\n",
            "k".repeat(64 * 1024)
        ),
        format!("# case: {}\n", "x".repeat(64 * 1024 + 1)),
        case.replace('\n', "\r\n"),
        case.replace('\n', "\r"),
        case.replace('k', "名前🦀\u{0}"),
        case.repeat(3),
        (0..10_001)
            .map(|i| format!("# case: c{i}\n# topology: single\n"))
            .collect(),
        format!(
            "# case: x\n# topology: single\n{}",
            "@0 GET k -> (nil)\n".repeat(100_001)
        ),
    ];
    v.extend((0..case.len()).map(|k| case[..k].to_string()));
    v
}

/// Hand-made recorded logs for check-log: the reproducers of issue 26.6 (times at the limit,
/// a host declared twice, a release before its acquire, a misspelt field), nesting, numbers
/// past every range, duplicates, and truncations of a good log.
fn nasty_logs() -> Vec<String> {
    let head = r#"{"schema":"distlock-log/1","hosts":{"a":{"clock_uncertainty_ms":1},"b":{"clock_uncertainty_ms":20}}}"#;
    let acq = |c: &str, t: &str, v: &str| {
        format!(
            r#"{{"op":"acquire","host":"a","client":"{c}","invoke_ms":{t},"complete_ms":{t},"result":"ok","token":"{c}","validity_ms":{v}}}"#
        )
    };
    let g = format!(
        "{head}\n{}\n{}\n{}\n{}\n",
        acq("c1", "1000", "500"),
        r#"{"op":"write","host":"a","client":"c1","resource":"db","invoke_ms":1100,"complete_ms":1101,"result":"ok","token":7,"read_version":0,"wrote_version":1}"#,
        r#"{"op":"release","host":"a","client":"c1","invoke_ms":1200,"complete_ms":1201,"result":"ok","token":"c1","removed_token":"c1"}"#,
        r#"{"op":"read","host":"b","client":"c2","resource":"db","invoke_ms":1300,"complete_ms":1301,"result":"ok","token":null,"read_version":1}"#,
    );
    let mut v = vec![
        String::new(),
        "\n\n".into(),
        head.to_string(),
        format!("{head}\n{}", "[".repeat(100_000)),
        format!("{head}\n{}", "{\"op\":".repeat(10_000)),
        format!(
            "{head}\n{}\n{}",
            acq("c1", "8.9e15", "1e15"),
            acq("c2", "8.9e15", "1e15")
        ),
        format!(
            "{head}\n{}\n{}",
            acq("c1", "-9e15", "9e15"),
            acq("c2", "9e15", "9e15")
        ),
        format!("{head}\n{}", acq("c1", "1e400", "1")),
        format!("{head}\n{}", acq("c1", "18446744073709551616", "-0.0")),
        g.replace(
            r#""a":{"clock_uncertainty_ms":1}"#,
            r#""a":{"clock_uncertainty_ms":9e15}"#,
        ),
        g.replace(r#","b":{"#, r#","a":{"#),
        g.replace(r#""invoke_ms":1100"#, r#""invoke_ms":1100,"invoke_ms":1"#),
        g.replace(r#""validity_ms":500"#, r#""valdity_ms":500"#),
        g.replace(r#""validity_ms":500"#, r#""validity_left_ms":500"#),
        g.replace(
            r#""wrote_version":1"#,
            r#""wrote_version":18446744073709551615"#,
        ),
        g.replace(
            r#""read_version":0"#,
            r#""read_version":18446744073709551615"#,
        ),
        g.replace("1200", "900"),
        g.replace('\n', "\r\n"),
        g.replace("c1", "名前🦀\u{202e}"),
        g.replace("\"c1\"", &format!("\"{}\"", "t".repeat(60_000))),
        format!("{head}\n{}", "\n".repeat(100_000)),
        format!("{head}\n{}", " ".repeat(70_000)),
    ];
    v.extend(
        (0..g.len())
            .filter(|&k| g.is_char_boundary(k))
            .map(|k| g[..k].to_string()),
    );
    v
}

// ---------------------------------------------------------------------------------------
// Campaigns.

/// What one input did.
enum Outcome {
    Accepted,
    Rejected,
    /// Accepted and run: how the run ended, and its events.
    Ran(RunEnd, u64),
}

#[derive(Default)]
struct Figures {
    tried: u64,
    accepted: u64,
    rejected: u64,
    ran_time_limit: u64,
    ran_event_limit: u64,
    ran_quiescent: u64,
    events: u64,
    slowest: Duration,
    peak_alloc: isize,
    panics: u64,
    slow: u64,
    blowups: u64,
}

struct Campaign {
    target: &'static str,
    ext: &'static str,
    figures: Figures,
    /// Failures: what, and where the input was saved.
    findings: Vec<String>,
    /// Panic locations seen (at most a few inputs are saved for each).
    panic_sites: std::collections::BTreeMap<String, u32>,
    in_flight: PathBuf,
    started: Instant,
    /// Milliseconds since `started` at which the current input began; 0 between inputs.
    busy_since_ms: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    /// `in_flight`, open: each input is written there before it is tried.
    in_flight_file: std::fs::File,
}

/// Longer than this is a finding; over HANG_LIMIT the test fails.
const SLOW_INPUT: Duration = Duration::from_secs(1);
const HANG_LIMIT: Duration = Duration::from_secs(10);
/// The watchdog ends the process when one input has run this long (a hang).
const WATCHDOG_LIMIT: Duration = Duration::from_secs(60);

/// The host's clock, for timing inputs: test scaffolding outside any run (a run reads
/// only virtual time).
#[allow(clippy::disallowed_methods)]
fn host_now() -> Instant {
    Instant::now()
}

fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

impl Campaign {
    fn new(target: &'static str, ext: &'static str) -> Campaign {
        install_panic_hook();
        let in_flight = findings_dir().join(format!("{target}-in-flight.{ext}"));
        let busy_since_ms = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let started = host_now();
        {
            let (busy, done, path) = (busy_since_ms.clone(), done.clone(), in_flight.clone());
            // The watchdog is test scaffolding outside any run (a run stays single-threaded).
            #[allow(clippy::disallowed_methods)]
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(500));
                    let since = busy.load(Ordering::Relaxed);
                    let now = started.elapsed().as_millis() as u64;
                    if since != 0 && now.saturating_sub(since) > WATCHDOG_LIMIT.as_millis() as u64 {
                        let _ = writeln!(
                            std::io::stderr(),
                            "fuzz {target}: one input has run for over {WATCHDOG_LIMIT:?} (a hang); it is {}",
                            path.display()
                        );
                        std::process::exit(1);
                    }
                }
            });
        }
        Campaign {
            target,
            ext,
            figures: Figures::default(),
            findings: Vec::new(),
            panic_sites: Default::default(),
            started,
            busy_since_ms,
            done,
            in_flight_file: std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(&in_flight)
                .expect("open the in-flight file"),
            in_flight,
        }
    }

    fn save(&self, kind: &str, input: &str) -> PathBuf {
        let p = findings_dir().join(format!(
            "{}-{kind}-{:016x}.{}",
            self.target,
            hash(input),
            self.ext
        ));
        std::fs::write(&p, input).expect("save finding");
        p
    }

    /// Tries one input under the panic, time and memory guards.
    fn try_input(&mut self, input: &str, f: impl FnOnce(&str) -> Outcome) -> Option<Outcome> {
        // On disk first: an abort (memory) or a hang leaves it there. Overwritten in place:
        // truncating and rewriting a file costs ext4 a flush (1.6 ms here), this 2 us.
        self.in_flight_file
            .write_all_at(input.as_bytes(), 0)
            .and_then(|()| self.in_flight_file.set_len(input.len() as u64))
            .expect("write the in-flight input");
        self.busy_since_ms.store(
            self.started.elapsed().as_millis() as u64 + 1,
            Ordering::Relaxed,
        );
        let base = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(base));
        CAP.with(|c| c.set(base.saturating_add(INPUT_ALLOC_ABORT)));
        TRYING.with(|t| t.set(true));
        let t0 = host_now();
        let result = catch_unwind(AssertUnwindSafe(|| f(input)));
        let took = t0.elapsed();
        TRYING.with(|t| t.set(false));
        CAP.with(|c| c.set(isize::MAX));
        let peak = PEAK.with(Cell::get) - base;
        self.busy_since_ms.store(0, Ordering::Relaxed);

        let fig = &mut self.figures;
        fig.tried += 1;
        fig.slowest = fig.slowest.max(took);
        fig.peak_alloc = fig.peak_alloc.max(peak);
        if took > SLOW_INPUT {
            fig.slow += 1;
            let p = self.save("slow", input);
            let what = format!("input took {took:?}: {}", p.display());
            if took > HANG_LIMIT {
                self.findings.push(what);
            } else {
                let _ = writeln!(std::io::stdout(), "fuzz {}: slow: {what}", self.target);
            }
        }
        if peak > INPUT_ALLOC_LIMIT {
            self.figures.blowups += 1;
            let p = self.save("alloc", input);
            self.findings.push(format!(
                "input allocated {} MiB: {}",
                peak >> 20,
                p.display()
            ));
        }
        match result {
            Ok(o) => {
                let fig = &mut self.figures;
                match &o {
                    Outcome::Rejected => fig.rejected += 1,
                    Outcome::Accepted => fig.accepted += 1,
                    Outcome::Ran(end, events) => {
                        fig.accepted += 1;
                        fig.events += events;
                        match end {
                            RunEnd::TimeLimit => fig.ran_time_limit += 1,
                            RunEnd::EventLimit | RunEnd::HistoryLimit => fig.ran_event_limit += 1,
                            RunEnd::Quiescent => fig.ran_quiescent += 1,
                        }
                    }
                }
                Some(o)
            }
            Err(_) => {
                self.figures.panics += 1;
                let msg = LAST_PANIC
                    .with(|p| p.borrow_mut().take())
                    .unwrap_or_else(|| "(no message)".into());
                let site = msg.lines().next().unwrap_or("").to_string();
                let seen = self.panic_sites.entry(site.clone()).or_default();
                *seen += 1;
                if *seen <= 3 {
                    let p = self.save("panic", input);
                    std::fs::write(p.with_extension("panic.txt"), &msg)
                        .expect("save panic message");
                    self.findings
                        .push(format!("panic: {site}: {}", p.display()));
                }
                None
            }
        }
    }

    /// The figures line, printed past libtest's capture and kept in a file.
    fn report(&self) -> String {
        let f = &self.figures;
        let mut line = format!(
            "fuzz {}: {} inputs in {:.1?}: {} accepted, {} rejected",
            self.target,
            f.tried,
            self.started.elapsed(),
            f.accepted,
            f.rejected
        );
        if f.ran_time_limit + f.ran_event_limit + f.ran_quiescent > 0 {
            line += &format!(
                "; runs: {} to the time limit, {} to the event budget, {} quiescent ({} events)",
                f.ran_time_limit, f.ran_event_limit, f.ran_quiescent, f.events
            );
        }
        line += &format!(
            "; slowest input {:.1?}, largest input allocation {} KiB, {} MiB live; {} panics, {} slow, {} blow-ups",
            f.slowest,
            f.peak_alloc.max(0) >> 10,
            LIVE.with(Cell::get).max(0) >> 20,
            f.panics,
            f.slow,
            f.blowups
        );
        let _ = writeln!(std::io::stdout(), "{line}");
        let _ = std::fs::write(
            findings_dir().join(format!("{}-figures.txt", self.target)),
            &line,
        );
        line
    }

    fn finish(self) {
        self.done.store(true, Ordering::Relaxed);
        let line = self.report();
        let _ = std::fs::remove_file(&self.in_flight);
        assert!(
            self.findings.is_empty(),
            "{line}\n{} findings (inputs saved):\n{}",
            self.findings.len(),
            self.findings.join("\n")
        );
    }
}

fn iterations(ci_default: u64) -> u64 {
    std::env::var("DISTLOCK_FUZZ_ITERS")
        .ok()
        .map(|s| s.parse().expect("DISTLOCK_FUZZ_ITERS must be a number"))
        .unwrap_or(ci_default)
}

fn campaign_rng(target: u64) -> ChaCha8Rng {
    let seed = std::env::var("DISTLOCK_FUZZ_SEED").ok().map_or(0, |s| {
        s.parse().expect("DISTLOCK_FUZZ_SEED must be a number")
    });
    ChaCha8Rng::seed_from_u64(seed ^ (target << 56))
}

/// The loader's answer to a model text.
fn load(text: &str) -> Outcome {
    match scenario::load_str("fuzz", "fuzz.ron", text) {
        Ok(_) => Outcome::Accepted,
        Err(e) => {
            // A located error: 1-based positions.
            assert!(e.line >= 1 && e.col >= 1, "error at 0: {e}");
            Outcome::Rejected
        }
    }
}

/// Load, clamp, and run one seed of what loads.
fn load_then_run(text: &str, seed: u64) -> Outcome {
    let Ok(mut sc) = scenario::load_str("fuzz", "fuzz.ron", text) else {
        return Outcome::Rejected;
    };
    bounds::clamp(&mut sc);
    let out = distlock_sim::explore::run_seed(&sc, seed);
    assert!(
        out.events <= sc.limits.max_events,
        "{} events beyond the budget of {}",
        out.events,
        sc.limits.max_events
    );
    Outcome::Ran(out.end, out.events)
}

/// The parser's answer to a corpus text; what it accepts must resolve and render.
fn parse_corpus(text: &str) -> Outcome {
    match corpus::parse(text) {
        Ok(c) => {
            for case in &c.cases {
                for step in &case.steps {
                    if let StepKind::Command { argv, expect, .. } = &step.kind {
                        assert!(!argv.is_empty(), "a command step without a command");
                        for a in argv {
                            let _ = corpus::resolve_arg(a, 1_700_000_000_000);
                        }
                        let _ = expect.render();
                    }
                }
            }
            Outcome::Accepted
        }
        Err(e) => {
            assert!(e.line >= 1, "error at line 0: {e}");
            Outcome::Rejected
        }
    }
}

/// check-log's answer to a log: a located error without serde's position suffix, or a
/// report with one finding per property whose witness lines are lines of the log, an exit
/// code of 0, 1 or 3 that is the worst verdict's, and the same answer a second time.
fn judge_log(text: &str) -> Outcome {
    match recorded::judge(text.as_bytes()) {
        Ok(r) => {
            let lines = text.split('\n').count();
            assert_eq!(r.findings.len(), 5, "one finding per property");
            for f in &r.findings {
                assert!(
                    f.lines.iter().all(|&l| l >= 1 && l <= lines),
                    "{}: witness lines {:?} outside the log's {lines}",
                    f.property,
                    f.lines
                );
            }
            assert!(matches!(r.exit_code(), 0 | 1 | 3));
            assert!(r.warnings.len() <= r.warnings_total);
            let shown = r.timeline();
            let again = recorded::judge(text.as_bytes()).expect("accepted once, accepted twice");
            assert_eq!(shown, again.timeline(), "the same log judged twice differs");
            // Its page (`check-log --format html`): the same verdict, drawn without a panic.
            let drawn = recorded::judge_drawn(text.as_bytes()).expect("accepted when drawn");
            assert_eq!(drawn.timeline(), shown, "judged alike when drawn");
            let page =
                distlock_sim::view::recorded::html("fuzz.jsonl", "check-log fuzz.jsonl", &drawn);
            assert!(page.ends_with("</html>\n"), "a whole page");
            Outcome::Accepted
        }
        Err(e) => {
            assert!(e.line >= 1 && e.column >= 1, "error at 0: {e:?}");
            assert!(
                !serde_suffix(&e.message),
                "serde's position in an error: {e:?}"
            );
            Outcome::Rejected
        }
    }
}

/// Whether `m` ends as serde_json's errors do, "... at line N column M" (the log's own text
/// quoted in a message may say "at line" anywhere).
fn serde_suffix(m: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    m.rfind(" at line ").is_some_and(|i| {
        m[i + " at line ".len()..]
            .split_once(" column ")
            .is_some_and(|(l, c)| digits(l) && digits(c))
    })
}

fn logs() -> Vec<String> {
    files(&root().join("tests/check-log"), "jsonl")
        .into_iter()
        .map(|(_, t)| t)
        .collect()
}

/// The inputs an accepted mutant joins (so mutations compound), at most this many.
const POOL_MAX: usize = 512;

fn models() -> Vec<String> {
    files(&root().join("models"), "ron")
        .into_iter()
        .map(|(_, t)| t)
        .collect()
}

fn corpora() -> Vec<String> {
    files(&root().join("tests/conformance/redis7"), "txt")
        .into_iter()
        .map(|(_, t)| t)
        .collect()
}

/// Seeds first, then `iters` mutants of the pool; accepted mutants join the pool.
fn fuzz(
    c: &mut Campaign,
    rng: &mut ChaCha8Rng,
    seeds: Vec<String>,
    iters: u64,
    style: Style,
    max_len: usize,
    mut f: impl FnMut(&str, u64) -> Outcome,
) {
    let donors = seeds.clone();
    let mut pool: Vec<String> = Vec::new();
    for (i, s) in seeds.iter().enumerate() {
        if let Some(Outcome::Accepted | Outcome::Ran(..)) = c.try_input(s, |t| f(t, i as u64)) {
            pool.push(s.clone());
        }
    }
    if pool.is_empty() {
        pool = seeds;
    }
    for i in 0..iters {
        // Long campaigns say how far they are (to stdout, past the capture).
        if iters >= 100_000 && i % (iters / 10) == 0 && i > 0 {
            let _ = writeln!(
                std::io::stdout(),
                "fuzz {}: {i} of {iters} mutants",
                c.target
            );
        }
        let base = pick(rng, &pool).clone();
        let input = mutate::mutate(rng, &base, &donors, style, max_len);
        let accepted = matches!(
            c.try_input(&input, |t| f(t, i)),
            Some(Outcome::Accepted | Outcome::Ran(..))
        );
        if accepted && input != base {
            if pool.len() < POOL_MAX {
                pool.push(input);
            } else {
                let k = below(rng, pool.len());
                pool[k] = input;
            }
        }
    }
}

#[test]
fn the_model_loader_gives_ok_or_a_located_error_on_mutated_models() {
    let mut c = Campaign::new("model_loader", "ron");
    let mut rng = campaign_rng(1);
    let mut seeds = models();
    seeds.extend(nasty_models());
    fuzz(
        &mut c,
        &mut rng,
        seeds,
        iterations(20_000),
        Style::Any,
        256 << 10,
        |t, _| load(t),
    );
    c.finish();
}

#[test]
fn the_corpus_parser_gives_ok_or_a_line_error_on_mutated_corpora() {
    let mut c = Campaign::new("corpus_parser", "txt");
    let mut rng = campaign_rng(2);
    let mut seeds = corpora();
    seeds.extend(nasty_corpora());
    fuzz(
        &mut c,
        &mut rng,
        seeds,
        iterations(5_000),
        Style::Any,
        512 << 10,
        |t, _| parse_corpus(t),
    );
    c.finish();
}

#[test]
fn a_mutated_model_that_loads_runs_one_seed_within_bounds() {
    let mut c = Campaign::new("load_then_run", "ron");
    let mut rng = campaign_rng(3);
    let mut seeds = models();
    seeds.extend(nasty_models().into_iter().filter(|s| s.len() < 4096));
    fuzz(
        &mut c,
        &mut rng,
        seeds,
        iterations(3_000),
        Style::Structural,
        256 << 10,
        load_then_run,
    );
    c.finish();
}

#[test]
fn check_log_gives_a_report_or_a_located_error_on_mutated_logs() {
    let mut c = Campaign::new("check_log", "jsonl");
    let mut rng = campaign_rng(4);
    let mut seeds = logs();
    seeds.extend(nasty_logs());
    fuzz(
        &mut c,
        &mut rng,
        seeds,
        iterations(5_000),
        Style::Any,
        256 << 10,
        |t, _| judge_log(t),
    );
    c.finish();
}

/// `assess`'s readers on one configuration file (a Redisson config, a redis.conf or a
/// sentinel.conf): a setup or a located error; and every setup read gives models the loader
/// takes (the setup's own and every finding's), so no input reaches an "internal" error.
fn assess_read(text: &str) -> Outcome {
    use distlock_sim::assess::{self, config, pitfall, setup};
    let input = |t: &str| setup::Input {
        path: "fuzz.conf".into(),
        text: t.to_string(),
    };
    let redis_py = [setup::LibArg {
        name: "redis-py".into(),
        options: vec![],
    }];
    let read = match config::read(&[input(text)], &[]) {
        Err(e) if e.0.starts_with("which library") => config::read(&[input(text)], &redis_py),
        r => r,
    };
    let s = match read {
        Ok(s) => s,
        Err(e) => {
            assert!(
                e.0.starts_with("fuzz.conf:")
                    || e.0.starts_with("--lib")
                    || e.0.contains("Redlock")
                    || e.0.contains("Redisson"),
                "an error that names no place: {e}"
            );
            return Outcome::Rejected;
        }
    };
    let a = assess::Assumptions::parse_faults(assess::DEFAULT_FAULTS, &s.library).unwrap();
    let base = pitfall::setup_model(&s, &a);
    if let Err(e) = scenario::load_str("assess", "assess.ron", &base) {
        panic!("the setup's model does not load: {e}\n{base}");
    }
    for p in pitfall::pitfalls(&s, &a) {
        if let Err(e) = scenario::load_str(p.id, "p.ron", &p.model) {
            panic!("pitfall {} does not load: {e}\n{}", p.id, p.model);
        }
    }
    Outcome::Accepted
}

fn nasty_configs() -> Vec<String> {
    let mut v = vec![
        "sentinelServersConfig:\n  sentinelAddresses: []\n".to_string(),
        "masterSlaveServersConfig:\n  slaveAddresses: [\"a\", \"b\", \"c\"]\ncheckLockSyncedSlaves: true\nslavesSyncTimeout: 0\n".into(),
        "singleServerConfig: !!map {}\nlockWatchdogTimeout: 18446744073709551616\n".into(),
        "{\"singleServerConfig\": {\"timeout\": 3000}, \"lockWatchdogTimeout\": 3}".into(),
        "a: &x [1]\nb: *x\n".into(),
        "sentinel monitor m h 6379 64\nsentinel known-sentinel m a 1 x\nsentinel known-replica m b 2\n".into(),
        "sentinel monitor m h 6379 1\nsentinel down-after-milliseconds m 1\nsentinel failover-timeout m 1\n".into(),
        "save 1 1 2 2\nappendonly yes\nappendfsync no\nmin-replicas-to-write 100\nmin-replicas-max-lag 0\nreplicaof a 1\n".into(),
        "appendfsync \"always\nsave ''\n".into(),
        "---\nsingleServerConfig: {}\n---\nsingleServerConfig: {}\n".into(),
        "\u{feff}singleServerConfig:\n  timeout: 1\n".into(),
    ];
    v.push(format!(
        "singleServerConfig: {}1{}\n",
        "[".repeat(100),
        "]".repeat(100)
    ));
    v.push(format!("{}\n", "k: v\n".repeat(20_000)));
    v
}

fn configs() -> Vec<String> {
    let mut v = Vec::new();
    for ext in ["yaml", "conf"] {
        v.extend(
            files(&root().join("examples/assess"), ext)
                .into_iter()
                .map(|(_, t)| t),
        );
    }
    v
}

#[test]
fn assess_reads_a_setup_or_a_located_error_on_mutated_configs_and_its_models_load() {
    let mut c = Campaign::new("assess_read", "conf");
    let mut rng = campaign_rng(6);
    let mut seeds = configs();
    assert!(seeds.len() >= 5);
    seeds.extend(nasty_configs());
    fuzz(
        &mut c,
        &mut rng,
        seeds,
        iterations(5_000),
        Style::Any,
        256 << 10,
        |t, _| assess_read(t),
    );
    c.finish();
}

/// Issue 26.6: check-log's memory grew with the bytes of the log (every token kept). A log
/// of 2,000 holdings under unique 60 KB tokens (120 MB, made as it is read) must be judged
/// allocating a few MiB: tokens are digested and dropped when their holding closes.
/// Request heads for serve's parser: well formed ones (what browsers and curl send) and the
/// shapes of issue 26's attacks, cut short.
fn nasty_heads() -> Vec<String> {
    let mut v = vec![
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:8417\r\n\r\n".to_string(),
        "GET /model/single-px-cad-pause?seed=3&fault=pause:c1:43.2:5 HTTP/1.1\r\nHost: localhost:8417\r\nUser-Agent: Mozilla/5.0\r\nAccept: text/html\r\nSec-Fetch-Site: same-origin\r\nOrigin: http://localhost:8417\r\nConnection: keep-alive\r\n\r\n".to_string(),
        "GET / HTTP/1.0\n\n".to_string(),
        "\r\n\r\nPOST /x HTTP/1.1\r\nHost: [::1]:1\r\nContent-Length: 5\r\n\r\nhello".to_string(),
        "GET / HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1\r\n\r\n".to_string(),
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n folded\r\n\r\n".to_string(),
        "GET / HTTP/2.0\r\n\r\n".to_string(),
    ];
    v.push(format!("GET /{} HTTP/1.1\r\n", "a".repeat(9000)));
    v.push(format!(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n{}\r\n",
        "X-h: b\r\n".repeat(70)
    ));
    v.push(format!(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-big: {}\r\n\r\n",
        "b".repeat(17_000)
    ));
    v
}

#[test]
fn the_request_parser_gives_a_head_more_input_or_a_refusal_on_mutated_requests() {
    let mut c = Campaign::new("serve_request", "http");
    let mut rng = campaign_rng(5);
    fuzz(
        &mut c,
        &mut rng,
        nasty_heads(),
        iterations(20_000),
        Style::Any,
        64 << 10,
        |t, _| {
            if http_head::check(t.as_bytes()) {
                Outcome::Accepted
            } else {
                Outcome::Rejected
            }
        },
    );
    c.finish();
}

#[test]
fn a_log_of_unique_60_kb_tokens_is_judged_in_memory_that_does_not_grow_with_it() {
    struct Tokens {
        i: u32,
        pending: Vec<u8>,
        at: usize,
    }
    impl std::io::Read for Tokens {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.at == self.pending.len() {
                self.pending.clear();
                self.at = 0;
                if self.i == 0 {
                    self.pending.extend_from_slice(
                        br#"{"schema":"distlock-log/1","hosts":{"a":{"clock_uncertainty_ms":1}}}"#,
                    );
                    self.pending.push(b'\n');
                } else if self.i <= 2000 {
                    let t = u64::from(self.i) * 10;
                    let tok = format!("{:08}{}", self.i, "x".repeat(60_000));
                    for (op, at) in [("acquire", t), ("release", t + 5)] {
                        self.pending.extend_from_slice(format!(
                            r#"{{"op":"{op}","host":"a","client":"c","invoke_ms":{at},"complete_ms":{},"result":"ok","token":"{tok}"}}"#,
                            at + 1
                        ).as_bytes());
                        self.pending.push(b'\n');
                    }
                } else {
                    return Ok(0);
                }
                self.i += 1;
            }
            let n = buf.len().min(self.pending.len() - self.at);
            buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let input = std::io::BufReader::new(Tokens {
        i: 0,
        pending: Vec::new(),
        at: 0,
    });
    let r = recorded::judge(input).expect("a well-formed log");
    let peak = PEAK.with(Cell::get) - base;
    assert_eq!((r.events, r.holdings), (4000, 2000));
    // The line buffer (64 KiB), the parsed line, 2,000 fixed-size holdings, 200 cut ones.
    assert!(
        peak < 4 << 20,
        "judging 120 MB of tokens allocated {} KiB at its peak",
        peak >> 10
    );
}

/// Every input that once failed (tests/fuzz-corpus/): a model loads or is refused, and what
/// loads runs a clamped seed; a corpus file parses or is refused; a recorded log is judged
/// or refused; none panics.
#[test]
fn every_saved_fuzz_finding_is_refused_or_runs_without_a_panic() {
    let dir = root().join("tests/fuzz-corpus");
    let mut c = Campaign::new("regressions", "ron");
    let mut n = 0;
    for (p, text) in files(&dir, "ron") {
        n += 1;
        if c.try_input(&text, |t| load_then_run(t, 1)).is_none() {
            c.findings
                .push(format!("regression {} panics again", p.display()));
        }
    }
    for (p, text) in files(&dir, "txt") {
        n += 1;
        if c.try_input(&text, parse_corpus).is_none() {
            c.findings
                .push(format!("regression {} panics again", p.display()));
        }
    }
    for (p, text) in files(&dir, "jsonl") {
        n += 1;
        if c.try_input(&text, judge_log).is_none() {
            c.findings
                .push(format!("regression {} panics again", p.display()));
        }
    }
    assert!(n > 0, "tests/fuzz-corpus/ holds no regression input");
    c.finish();
}

// ---------------------------------------------------------------------------------------
// The guards themselves: a fuzz test whose guards cannot fire would pass on anything.

#[test]
fn a_panicking_input_is_a_finding_with_its_input_saved() {
    let mut c = Campaign::new("selftest_panic", "txt");
    let input = "the input that panics";
    let out = c.try_input(input, |_| panic!("boom"));
    assert!(out.is_none());
    assert_eq!(c.figures.panics, 1);
    assert_eq!(c.findings.len(), 1, "{:?}", c.findings);
    assert!(c.findings[0].contains("boom"), "{:?}", c.findings);
    let saved = c.findings[0].rsplit(": ").next().unwrap().to_string();
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), input);
    c.done.store(true, Ordering::Relaxed);
    let _ = std::fs::remove_file(&c.in_flight);
}

#[test]
fn an_input_allocating_past_its_limit_is_a_finding() {
    let mut c = Campaign::new("selftest_alloc", "txt");
    let out = c.try_input("big", |_| {
        // Reserved, not touched: the counter sees it, the machine does not pay for it.
        let v: Vec<u8> = Vec::with_capacity(INPUT_ALLOC_LIMIT as usize + (1 << 20));
        std::hint::black_box(&v);
        Outcome::Accepted
    });
    assert!(out.is_some());
    assert_eq!(c.figures.blowups, 1);
    assert!(
        c.findings[0].contains("allocated 257 MiB"),
        "{:?}",
        c.findings
    );
    c.done.store(true, Ordering::Relaxed);
    let _ = std::fs::remove_file(&c.in_flight);
}

#[test]
fn the_mutator_gives_the_same_mutants_for_the_same_seed() {
    let donors = models();
    let run = || {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        (0..200)
            .map(|_| mutate::mutate(&mut rng, GOOD_MODEL, &donors, Style::Any, 1 << 20))
            .collect::<Vec<_>>()
    };
    let a = run();
    assert_eq!(a, run());
    // And it mutates: most mutants differ from the seed.
    assert!(a.iter().filter(|m| m.as_str() != GOOD_MODEL).count() > 150);
}
