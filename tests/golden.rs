//! Golden outputs: every catalogue model's full replay of seed 0 (every message), its sweep of
//! seeds 0..60 as JSON lines, and its triggered-adversary replay of seed 0, compared byte for
//! byte with what `tests/golden/MODEL.txt` recorded. A change to the engine, a client, Redis or a
//! renderer that moves any of these bytes fails here, so a refactor or a speed-up shows that it
//! changed nothing by this test rather than by a script outside the repository.
//!
//! The outputs themselves are large (45 MB for the catalogue), so a golden file keeps, per
//! output, its exit code, size, line count and SHA-1, and the SHA-1 of every block of
//! `BLOCK_LINES` lines: a mismatch names the first block that differs and prints its new lines.
//!
//! - `UPDATE_GOLDEN=1 cargo test --release --test golden` rewrites the golden files (commit them
//!   with the reason the outputs changed);
//! - `GOLDEN_DUMP=DIR` also writes every output in full into DIR, so that two builds can be
//!   compared with `diff -r` (dump once on the old commit, once on the new).
//!
//! The only bytes masked are the two a sweep measures from the host clock (`wall_s`,
//! `seeds_per_s`); printed commands begin with `distlock-sim`, the program name this test gives
//! as `argv[0]`.

use std::fmt::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha1::{Digest, Sha1};

/// Lines per block digest: small enough to point at a difference, large enough that a golden
/// file stays a few kilobytes.
const BLOCK_LINES: usize = 2000;

/// The outputs recorded per model: a name (the golden file's section) and the arguments after
/// the model path.
const OUTPUTS: &[(&str, &[&str])] = &[
    ("replay", &["replay", "--seed", "0", "--messages", "all"]),
    (
        "sweep",
        &["sweep", "--seeds", "0..60", "--json", "--jobs", "2"],
    ),
    (
        "triggered",
        &[
            "replay",
            "--seed",
            "0",
            "--adversary",
            "triggered",
            "--messages",
            "all",
        ],
    ),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn catalogue() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("models"))
        .expect("models/ is readable")
        .filter_map(|e| {
            let p = e.ok()?.path();
            if p.extension()? != "ron" {
                return None;
            }
            Some(p.file_stem()?.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

/// Runs one output of one model: (exit code, stdout with the host-clock fields masked).
fn produce(model: &str, args: &[&str]) -> (i32, Vec<u8>) {
    let (verb, rest) = args.split_first().expect("a subcommand");
    let out = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .arg0("distlock-sim")
        .current_dir(root())
        .arg(verb)
        .arg(format!("models/{model}.ron"))
        .args(rest)
        .output()
        .expect("the binary runs");
    let code = out.status.code().expect("exited, not killed by a signal");
    assert!(
        code != 2,
        "{model} {args:?}: exit 2 (bad input): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = if *verb == "sweep" {
        mask_host_clock(&out.stdout)
    } else {
        out.stdout
    };
    (code, stdout)
}

/// A sweep's JSON summary carries its wall time and rate: the two values no run decides.
fn mask_host_clock(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(bytes.to_vec()).expect("sweep --json is UTF-8");
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut line = line.to_string();
        for field in ["\"wall_s\":", "\"seeds_per_s\":"] {
            if let Some(at) = line.find(field) {
                let from = at + field.len();
                let len = line[from..]
                    .find([',', '}'])
                    .expect("a JSON number ends at , or }");
                line.replace_range(from..from + len, "0");
            }
        }
        out.push_str(&line);
    }
    out.into_bytes()
}

fn sha1_hex(bytes: &[u8]) -> String {
    let digest = Sha1::digest(bytes);
    digest.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The lines of `bytes` (each with its newline), grouped in blocks.
fn blocks(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut lines = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            lines += 1;
            if lines == BLOCK_LINES {
                out.push(&bytes[start..=i]);
                start = i + 1;
                lines = 0;
            }
        }
    }
    if start < bytes.len() {
        out.push(&bytes[start..]);
    }
    out
}

/// One output's record, as the golden file keeps it.
fn record(name: &str, args: &[&str], code: i32, bytes: &[u8]) -> String {
    let lines = bytes.iter().filter(|b| **b == b'\n').count();
    let mut s = format!(
        "[{name}] {}\nexit {code}, {} bytes, {lines} lines, sha1 {}\n",
        args.join(" "),
        bytes.len(),
        sha1_hex(bytes)
    );
    for (i, block) in blocks(bytes).iter().enumerate() {
        let _ = writeln!(
            s,
            "  lines {}..: {}",
            i * BLOCK_LINES + 1,
            &sha1_hex(block)[..16]
        );
    }
    s
}

/// Each output of a model: its exit code and its (masked) standard output.
type Outputs = Vec<(i32, Vec<u8>)>;

/// The golden text of one model and its outputs (kept to explain a mismatch).
fn golden_of(model: &str) -> (String, Outputs) {
    let mut text = format!("# golden outputs of models/{model}.ron (tests/golden.rs)\n");
    let mut outputs = Vec::new();
    for (name, args) in OUTPUTS {
        let (code, bytes) = produce(model, args);
        text.push_str(&record(name, args, code, &bytes));
        outputs.push((code, bytes));
    }
    (text, outputs)
}

/// Where two golden texts part, and the new lines of that block, for the failure message.
fn explain(model: &str, want: &str, got: &str, outputs: &[(i32, Vec<u8>)]) -> String {
    let mut section = 0usize;
    let mut block = None;
    for (w, g) in want.lines().zip(got.lines()) {
        if g.starts_with('[') {
            section = OUTPUTS
                .iter()
                .position(|(n, _)| g[1..].starts_with(n))
                .unwrap_or(0);
        }
        if w != g {
            if let Some(rest) = g.trim_start().strip_prefix("lines ") {
                block = rest
                    .split("..")
                    .next()
                    .and_then(|n| n.parse::<usize>().ok());
            }
            let mut msg = format!(
                "models/{model}.ron, output `{}`: golden `{w}`, now `{g}`",
                OUTPUTS[section].0
            );
            let (_, bytes) = &outputs[section];
            if let Some(first) = block {
                let idx = (first - 1) / BLOCK_LINES;
                if let Some(b) = blocks(bytes).get(idx) {
                    let text = String::from_utf8_lossy(b);
                    let shown: Vec<&str> = text.lines().take(40).collect();
                    let _ = write!(
                        msg,
                        "\nthe block's new text (first 40 lines):\n{}",
                        shown.join("\n")
                    );
                }
            }
            return msg;
        }
    }
    format!(
        "models/{model}.ron: golden and new records differ in length\n--- golden\n{want}--- now\n{got}"
    )
}

fn golden_dir() -> PathBuf {
    root().join("tests").join("golden")
}

fn dump(dir: &Path, model: &str, outputs: &[(i32, Vec<u8>)]) {
    std::fs::create_dir_all(dir).expect("GOLDEN_DUMP is a writable directory");
    for ((name, _), (code, bytes)) in OUTPUTS.iter().zip(outputs) {
        let p = dir.join(format!("{model}.{name}.exit{code}"));
        std::fs::write(&p, bytes).expect("dump written");
    }
}

#[test]
fn every_catalogue_output_is_byte_identical_to_its_golden_record() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let dump_dir = std::env::var_os("GOLDEN_DUMP").map(PathBuf::from);
    let models = catalogue();
    assert!(models.len() >= 50, "the catalogue is in models/");
    // Two workers: the machine CI runs on has two cores, and the runs are independent.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(String, String, Outputs)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(m) = models.get(i) else { break };
                        let (text, outputs) = golden_of(m);
                        mine.push((m.clone(), text, outputs));
                    }
                    mine
                })
            })
            .collect();
        let mut all: Vec<_> = workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    });

    let dir = golden_dir();
    let mut failures = Vec::new();
    for (model, text, outputs) in &results {
        if let Some(d) = &dump_dir {
            dump(d, model, outputs);
        }
        let path = dir.join(format!("{model}.txt"));
        if update {
            std::fs::create_dir_all(&dir).expect("tests/golden is writable");
            std::fs::write(&path, text).expect("golden file written");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if want == *text => {}
            Ok(want) => failures.push(explain(model, &want, text, outputs)),
            Err(_) => failures.push(format!(
                "models/{model}.ron has no golden record ({}): run UPDATE_GOLDEN=1 cargo test \
                 --release --test golden",
                path.display()
            )),
        }
    }
    if !update {
        // A golden file whose model is gone is stale, not silently kept.
        for e in std::fs::read_dir(&dir).expect("tests/golden exists") {
            let p = e.expect("entry").path();
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            if let Some(stem) = stem
                && !models.contains(&stem)
            {
                failures.push(format!("{} has no model in models/", p.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden output(s) differ (UPDATE_GOLDEN=1 rewrites them; GOLDEN_DUMP=DIR writes the \
         outputs in full to diff two builds):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn masking_touches_only_the_host_clock_fields() {
    let line = br#"{"summary":{"jobs":2,"seeds_per_s":2901.1,"wall_s":0.021,"x":1}}
{"seed":3,"wall":"kept"}
"#;
    let masked = String::from_utf8(mask_host_clock(line)).unwrap();
    assert_eq!(
        masked,
        "{\"summary\":{\"jobs\":2,\"seeds_per_s\":0,\"wall_s\":0,\"x\":1}}\n{\"seed\":3,\"wall\":\"kept\"}\n"
    );
}

#[test]
fn a_changed_line_is_found_in_its_block() {
    let a: String = (0..5000).map(|i| format!("line {i}\n")).collect();
    let b = a.replace("line 4321\n", "line 4321 changed\n");
    let ra = record("replay", &["replay"], 0, a.as_bytes());
    let rb = record("replay", &["replay"], 0, b.as_bytes());
    let differing: Vec<(&str, &str)> = ra.lines().zip(rb.lines()).filter(|(x, y)| x != y).collect();
    // The whole-output line and the third block (lines 4001..) differ; the first two do not.
    assert_eq!(differing.len(), 2, "{differing:?}");
    assert!(differing[1].1.trim_start().starts_with("lines 4001..:"));
}
