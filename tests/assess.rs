//! `distlock-sim assess`: a user's own configuration files and library options, judged by the
//! catalogue's pitfalls (docs/assess.md).
//!
//! - The three worked examples of docs/assess.md give the findings the page shows, each
//!   resting on the catalogue model it names, and their replay lines run as printed: exit 1
//!   where the finding is violated, 0 where it held.
//! - Every key read is listed with what it maps to; keys not understood are named with
//!   their file and line, never dropped.
//! - Bad input is a located error with exit 2; what is not modelled (Redis Cluster) is
//!   said so with exit 3, not assessed.
//! - The setup's model (`--out`) is a normal model: `check` takes it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("distlock-assess-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn assess(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .arg("assess")
        .args(args)
        .arg("--out")
        .arg(out.join("assess.ron"))
        .args(["--jobs", "2"])
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

fn finding<'a>(j: &'a serde_json::Value, pitfall: &str) -> &'a serde_json::Value {
    j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["pitfall"] == pitfall)
        .unwrap_or_else(|| panic!("no finding {pitfall} in {j:#}"))
}

fn verdicts(j: &serde_json::Value) -> Vec<(String, String)> {
    j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["pitfall"].as_str().unwrap().to_string(),
                f["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn sh(cmd: &str) -> i32 {
    Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} > /dev/null"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap()
        .code()
        .unwrap()
}

/// Each finding's replay line, pasted into a shell, exits as its verdict says.
fn replays_run_as_printed(j: &serde_json::Value) {
    for f in j["findings"].as_array().unwrap() {
        let want = if f["verdict"] == "violated" { 1 } else { 0 };
        let cmd = f["replay"].as_str().unwrap();
        assert_eq!(sh(cmd), want, "{cmd} ({})", f["pitfall"]);
    }
}

fn rests_on_catalogue_models(j: &serde_json::Value) {
    for f in j["findings"].as_array().unwrap() {
        let models = f["rests_on"].as_array().unwrap();
        assert!(!models.is_empty(), "{f}");
        for m in models {
            let p = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("models")
                .join(format!("{}.ron", m.as_str().unwrap()));
            assert!(
                p.is_file(),
                "{} rests on a model that is not in the catalogue: {m}",
                f["pitfall"]
            );
        }
    }
}

#[test]
fn redis_py_on_one_aof_node_breaks_under_pauses_and_power_loss_and_comes_back_after_a_crash() {
    let d = dir("redis-py");
    let o = assess(
        &[
            "examples/assess/redis-aof.conf",
            "--lib",
            "redis-py:timeout=10,blocking_timeout=5",
            "--json",
        ],
        &d,
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j = json(&o);
    assert_eq!(j["setup"]["topology"]["kind"], "single");
    assert_eq!(j["setup"]["persistence"], "AOF, appendfsync everysec");
    assert_eq!(
        verdicts(&j),
        [
            ("pause-past-ttl", "violated"),
            ("foreign-unlock", "held"),
            ("holder-crash", "held"),
            ("restart-lost-lock", "violated"),
            ("clock-step", "held"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    // Held findings met their hazard: they are not held for want of trying.
    for p in ["foreign-unlock", "holder-crash", "clock-step"] {
        assert!(
            finding(&j, p)["hazard"]["seeds"].as_u64().unwrap() > 0,
            "{p}"
        );
    }
    let pause = finding(&j, "pause-past-ttl");
    let ci = pause["rates"]["mutual_exclusion"]["ci95"]
        .as_array()
        .unwrap();
    assert!(ci[0].as_f64().unwrap() > 0.5, "{pause}");
    assert!(
        pause["threshold"].as_str().unwrap().contains("holds"),
        "{pause}"
    );
    assert!(pause["fix"].as_str().unwrap().contains("fencing token"));
    // The allkeys-lru policy is read and said to be beyond the model, with its line.
    let keys = j["keys"].as_array().unwrap();
    let lru = keys
        .iter()
        .find(|k| k["key"] == "maxmemory-policy")
        .unwrap();
    assert_eq!(
        (lru["status"].as_str(), lru["line"].as_u64()),
        (Some("not_modelled"), Some(6))
    );
    rests_on_catalogue_models(&j);
    replays_run_as_printed(&j);
    // With appendfsync always the restart finding holds, and its hazard is still reached.
    let always = d.join("always.conf");
    std::fs::write(&always, "appendonly yes\nappendfsync always\n").unwrap();
    let o = assess(
        &[
            always.to_str().unwrap(),
            "--lib",
            "redis-py:timeout=10",
            "--json",
            "--faults",
            "crash",
        ],
        &d,
    );
    let j = json(&o);
    let r = finding(&j, "restart-lost-lock");
    assert_eq!(r["verdict"], "held", "{r}");
    assert!(r["hazard"]["seeds"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn redis_py_without_a_timeout_never_gets_its_lock_back_after_a_crash() {
    let d = dir("redis-py-none");
    let o = assess(&["--lib", "redis-py", "--json", "--faults", "crash"], &d);
    let j = json(&o);
    assert_eq!(finding(&j, "holder-crash")["verdict"], "violated");
    assert_eq!(
        finding(&j, "redis-py-retried-acquire")["verdict"],
        "violated"
    );
    assert!(
        finding(&j, "holder-crash")["fix"]
            .as_str()
            .unwrap()
            .contains("timeout=")
    );
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn redisson_on_a_sentinel_master_keeps_its_lock_through_a_failover_by_waiting_for_the_replica() {
    let d = dir("redisson");
    let o = assess(
        &[
            "examples/assess/redisson-sentinel.yaml",
            "examples/assess/sentinel.conf",
            "examples/assess/redis-master.conf",
            "--lib",
            "redisson:version=3.52.0",
            "--hold",
            "8s..12s",
            "--json",
        ],
        &d,
    );
    let j = json(&o);
    let t = &j["setup"]["topology"];
    assert_eq!(
        (t["kind"].as_str(), t["replicas"].as_u64()),
        (Some("sentinel"), Some(1))
    );
    assert_eq!(t["sentinels"]["count"], 3);
    assert_eq!(t["sentinels"]["quorum"], 2);
    assert_eq!(t["sentinels"]["down_after_ms"], 5000);
    let f = finding(&j, "failover-lost-lock");
    assert_eq!(f["verdict"], "held", "{f}");
    assert!(f["stand_in"].as_str().unwrap().contains("WAIT"));
    // A 30 s watchdog lease outlasts every pause of at most 15 s: held, and said to be out
    // of reach rather than survived.
    let p = finding(&j, "pause-past-ttl");
    assert_eq!(
        (p["verdict"].as_str(), p["hazard"]["seeds"].as_u64()),
        (Some("held"), Some(0))
    );
    // Redisson's unlock latch ("1" for every client) is no foreign unlock.
    assert_eq!(finding(&j, "foreign-unlock")["verdict"], "held");
    assert_eq!(finding(&j, "restart-lost-lock")["verdict"], "violated");
    let keys = j["keys"].as_array().unwrap();
    let retry = keys.iter().find(|k| k["key"] == "retryAttempts").unwrap();
    assert_eq!(retry["status"], "not_modelled");
    assert_eq!(retry["line"], 9);
    rests_on_catalogue_models(&j);
    replays_run_as_printed(&j);
    assert_eq!(o.status.code(), Some(1));

    // Without the sync check, the same failover loses an acknowledged lock.
    let off = d.join("nosync.yaml");
    let yaml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/assess/redisson-sentinel.yaml"),
    )
    .unwrap();
    std::fs::write(&off, format!("{yaml}checkLockSyncedSlaves: false\n")).unwrap();
    let o = assess(
        &[
            off.to_str().unwrap(),
            "examples/assess/sentinel.conf",
            "--json",
            "--faults",
            "failover",
            "--hold",
            "8s..12s",
        ],
        &d,
    );
    let j = json(&o);
    let f = finding(&j, "failover-lost-lock");
    assert_eq!(f["verdict"], "violated", "{f}");
    assert!(f["hazard"]["seeds"].as_u64().unwrap() > 0);

    // Redisson before 3.44.0 stops its watchdog after one failed renewal (redisson#775),
    // where critical sections outlast a renewal period.
    let o = assess(
        &[
            "examples/assess/redisson-sentinel.yaml",
            "examples/assess/sentinel.conf",
            "--lib",
            "redisson:version=3.40.0",
            "--json",
            "--faults",
            "none",
            "--hold",
            "40s..60s",
            "--seeds",
            "0..20",
        ],
        &d,
    );
    let j = json(&o);
    let f = finding(&j, "redisson-watchdog-stops");
    assert_eq!(f["verdict"], "violated", "{f}");
    assert!(f["fix"].as_str().unwrap().contains("3.44.0"));
}

#[test]
fn node_redlock_on_five_masters_works_on_a_lock_won_too_late_where_redsync_refuses_it() {
    let d = dir("redlock");
    let o = assess(
        &[
            "examples/assess/redlock-masters.conf",
            "--lib",
            "node-redlock:masters=5,duration=10000,retryCount=10,driftFactor=0.01",
            "--json",
            // The same setup's sweep over the default 0..200 is docs/assess.md's third worked
            // example (`the_worked_examples_are_the_programs_output`); the JSON's claims
            // need no more than a third of it.
            "--seeds",
            "0..60",
        ],
        &d,
    );
    let j = json(&o);
    assert_eq!(j["setup"]["topology"]["masters"], 5);
    assert_eq!(finding(&j, "slow-replies")["verdict"], "violated");
    assert_eq!(finding(&j, "restart-lost-lock")["verdict"], "violated");
    assert_eq!(finding(&j, "pause-past-ttl")["verdict"], "violated");
    rests_on_catalogue_models(&j);
    replays_run_as_printed(&j);
    let o = assess(
        &[
            "--lib",
            "redsync:expiry=10s,masters=5",
            "--json",
            "--faults",
            "latency:<=15s",
            "--seeds",
            "0..60",
        ],
        &d,
    );
    let j = json(&o);
    let f = finding(&j, "slow-replies");
    assert_eq!(f["verdict"], "held", "{f}");
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn every_key_is_listed_and_one_not_understood_is_named_with_its_line() {
    let d = dir("keys");
    let y = d.join("r.yaml");
    std::fs::write(
        &y,
        "singleServerConfig:\n  address: \"redis://h:6379\"\n  timeout: 2000\n  frobnicate: 3\nlockWatchdogTimeout: 20000\nmysteryKey: 1\n",
    )
    .unwrap();
    let o = assess(
        &[
            y.to_str().unwrap(),
            "--faults",
            "none",
            "--lib",
            "redisson:colour=blue",
        ],
        &d,
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let yp = y.display().to_string();
    assert!(
        text.contains(&format!("not understood: {yp}:4: frobnicate 3")),
        "{text}"
    );
    assert!(
        text.contains(&format!("not understood: {yp}:6: mysteryKey 1")),
        "{text}"
    );
    assert!(
        text.contains("not understood: --lib redisson: colour blue"),
        "{text}"
    );
    assert!(text.contains("keys: 7 read"), "{text}");
    // Nothing applies without faults: no verdict.
    assert_eq!(o.status.code(), Some(3), "{text}");
    // The setup's model is a normal model.
    let m = d.join("assess.ron");
    let model = std::fs::read_to_string(&m).unwrap();
    assert!(model.contains("ttl: \"20000ms\""), "{model}");
    assert!(model.contains("request_timeout: \"2000ms\""), "{model}");
    let c = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .arg("check")
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(
        c.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&c.stderr)
    );
}

#[test]
fn bad_inputs_are_located_errors_and_what_is_not_modelled_says_so() {
    let d = dir("bad");
    let w = |name: &str, text: &[u8]| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let cases: Vec<(Vec<String>, i32, String)> = vec![
        (
            vec![w("a.yaml", b"singleServerConfig:\n  timeout: [1\n")],
            2,
            "a.yaml:".into(),
        ),
        (
            vec![w("b.yaml", b"singleServerConfig:\n  timeout: soon\n")],
            2,
            "b.yaml:2: timeout".into(),
        ),
        (
            vec![w("c.yaml", b"x: &a 1\ny: *a\nsingleServerConfig: {}\n")],
            2,
            "c.yaml:2: aliases".into(),
        ),
        (
            vec![
                w(
                    "s.conf",
                    b"sentinel monitor m h 6379 2\nsentinel down-after-milliseconds other 5\n",
                ),
                "--lib".into(),
                "redis-py".into(),
            ],
            2,
            "s.conf:2:".into(),
        ),
        (
            vec![
                w("r.conf", b"appendfsync sometimes\n"),
                "--lib".into(),
                "redis-py".into(),
            ],
            2,
            "r.conf:1: appendfsync".into(),
        ),
        (
            vec![
                w("q.conf", b"save \"60 1\n"),
                "--lib".into(),
                "redis-py".into(),
            ],
            2,
            "q.conf:1: unbalanced".into(),
        ),
        (
            vec![w("bin.conf", &[0xff, 0xfe, 0, 1])],
            2,
            "not UTF-8".into(),
        ),
        (
            vec![w(
                "wd.yaml",
                b"singleServerConfig: {}\nlockWatchdogTimeout: 2\n",
            )],
            2,
            "wd.yaml:2: lockWatchdogTimeout: 2 ms is outside 3..=600000 ms".into(),
        ),
        (
            vec![
                w(
                    "da.conf",
                    b"sentinel monitor m h 6379 2\nsentinel down-after-milliseconds m 0\n",
                ),
                "--lib".into(),
                "redis-py".into(),
            ],
            2,
            "da.conf:2: sentinel down-after-milliseconds: 0 ms".into(),
        ),
        (
            vec!["--lib".into(), "redis-py:timeout=3601".into()],
            2,
            "the lock's TTL of 3601000 ms".into(),
        ),
        (
            vec!["--lib".into(), "node-redlock:masters=99".into()],
            2,
            "masters=99".into(),
        ),
        (
            vec![
                "--lib".into(),
                "redis-py".into(),
                "--clients".into(),
                "1".into(),
            ],
            2,
            "1 is not in 2..=16".into(),
        ),
        (
            vec!["--lib".into(), "redis-pie".into()],
            2,
            "did you mean \"redis-py\"".into(),
        ),
        (
            vec!["--lib".into(), "redis-py:timeout=soon".into()],
            2,
            "timeout=soon".into(),
        ),
        (
            vec![
                "--lib".into(),
                "redis-py".into(),
                "--faults".into(),
                "pause:<=forever".into(),
            ],
            2,
            "--faults pause".into(),
        ),
        (
            vec![
                "--lib".into(),
                "redis-py".into(),
                "--faults".into(),
                "paus".into(),
            ],
            2,
            "did you mean \"pause\"".into(),
        ),
        (
            vec![w("none.conf", b"port 6379\n")],
            2,
            "which library".into(),
        ),
        (
            vec![w(
                "cl.yaml",
                b"clusterServersConfig:\n  nodeAddresses: [\"redis://a:1\"]\n",
            )],
            3,
            "cl.yaml:1: clusterServersConfig: Redis Cluster is not modelled yet".into(),
        ),
        (
            vec!["--lib".into(), "pottery:auto_release_time=10000".into()],
            2,
            "pottery reads seconds since 3.0.0".into(),
        ),
    ];
    for (args, code, msg) in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = assess(&a, &d);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(&msg), "{args:?}: {err:?} lacks {msg:?}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The worked examples' blocks in docs/assess.md: (name, command line, output as written).
fn doc_examples(doc: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut lines = doc.lines().peekable();
    while let Some(l) = lines.next() {
        let Some(name) = l
            .strip_prefix("<!-- assess-example: ")
            .and_then(|r| r.strip_suffix(" -->"))
        else {
            continue;
        };
        assert_eq!(lines.next(), Some("```console"), "{name}");
        let cmd = lines
            .next()
            .unwrap()
            .strip_prefix("$ ")
            .unwrap()
            .to_string();
        let mut body = String::new();
        for l in lines.by_ref() {
            if l == "```" {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        out.push((name.to_string(), cmd, body));
    }
    out
}

/// Runs a documented command: the program for `distlock-sim`, a temporary directory for
/// `/tmp/assess`; the output with both put back.
fn run_doc_command(cmd: &str, tmp: &Path) -> (String, i32) {
    let words: Vec<String> = cmd
        .split_whitespace()
        .map(|w| w.replace("/tmp/assess", tmp.to_str().unwrap()))
        .collect();
    assert_eq!(words[0], "distlock-sim");
    let bin = env!("CARGO_BIN_EXE_distlock-sim");
    let o = Command::new(bin)
        .args(&words[1..])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout)
        .replace(bin, "distlock-sim")
        .replace(tmp.to_str().unwrap(), "/tmp/assess");
    (text, o.status.code().unwrap())
}

#[test]
fn the_worked_examples_are_the_programs_output() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/assess.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let examples = doc_examples(&doc);
    assert_eq!(examples.len(), 3, "three worked examples");
    let tmp = dir("docs");
    let mut updated = doc.clone();
    for (name, cmd, written) in &examples {
        let (text, code) = run_doc_command(cmd, &tmp);
        assert_eq!(
            code, 1,
            "{name}: every worked example finds something: {text}"
        );
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let old = format!("$ {cmd}\n{written}```");
            let new = format!("$ {cmd}\n{text}```");
            updated = updated.replacen(&old, &new, 1);
        } else {
            assert_eq!(
                written, &text,
                "{name}: docs/assess.md's output differs from the program's (UPDATE_DOCS=1 rewrites it)"
            );
        }
    }
    if updated != doc {
        std::fs::write(&path, updated).unwrap();
    }
}

#[test]
fn every_key_in_the_tables_is_read_as_the_table_says() {
    use distlock_sim::assess::config;
    use distlock_sim::assess::setup::{self, Input, LibArg};
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/assess.md"))
        .unwrap();
    let section = |title: &str| -> Vec<Vec<String>> {
        let start = doc.find(title).unwrap_or_else(|| panic!("{title}"));
        doc[start..]
            .lines()
            .skip(1)
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .map(|l| {
                l.split(" | ")
                    .map(|c| c.trim_matches(|c| c == '|' || c == ' ').to_string())
                    .collect()
            })
            .collect()
    };
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let redis_py = [LibArg {
        name: "redis-py".into(),
        options: vec![],
    }];
    let mut checked = 0;
    for (title, format) in [
        ("### Redisson", "redisson"),
        ("### redis.conf", "redis"),
        ("### sentinel.conf", "sentinel"),
    ] {
        for row in section(title) {
            let (keys, example, status) = (&row[0], ticked(&row[1]).concat(), row[2].as_str());
            for key in ticked(keys) {
                if key.contains('*') {
                    continue;
                }
                let (text, lookup, libs): (String, String, &[LibArg]) = match format {
                    "redisson" if key.ends_with("Config") => {
                        (format!("{key}: {example}\n"), key.clone(), &[])
                    }
                    "redisson" if keys.starts_with("*server section*") => (
                        format!("singleServerConfig:\n  {key}: {example}\n"),
                        key.clone(),
                        &[],
                    ),
                    "redisson" => (
                        format!(
                            "{key}: {example}\nsingleServerConfig: {{address: \"redis://h:6379\"}}\n"
                        ),
                        key.clone(),
                        &[],
                    ),
                    "redis" => (format!("{key} {example}\n"), key.clone(), &redis_py),
                    _ => {
                        let full = if key.starts_with("sentinel ")
                            || ["port", "dir", "daemonize", "logfile"].contains(&key.as_str())
                        {
                            key.clone()
                        } else {
                            format!("sentinel {key}")
                        };
                        (
                            format!(
                                "sentinel monitor mymaster 10.0.0.1 6379 2\n{full} {example}\n"
                            ),
                            full,
                            &redis_py,
                        )
                    }
                };
                let input = Input {
                    path: "t".into(),
                    text: text.clone(),
                };
                match config::read(&[input], libs) {
                    Err(e) => {
                        assert!(
                            status == "not modelled" && e.0.contains("not modelled yet"),
                            "{title} {key}: {e} ({text:?})"
                        );
                    }
                    Ok(s) => {
                        let k =
                            s.keys.iter().find(|k| k.key == lookup).unwrap_or_else(|| {
                                panic!("{title} {lookup}: not listed ({text:?})")
                            });
                        let got = match &k.status {
                            setup::Status::Mapped(_) => "mapped",
                            setup::Status::NoBearing => "no bearing",
                            setup::Status::NotModelled(_) => "not modelled",
                            setup::Status::NotUnderstood => "not understood",
                        };
                        assert_eq!(got, status, "{title} {lookup} ({text:?})");
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 60, "only {checked} keys checked");
}

#[test]
fn an_edges_two_replay_lines_run_as_pasted_and_differ_only_in_the_size() {
    let d = dir("edge");
    let o = assess(
        &[
            "--lib",
            "redis-py:timeout=10",
            "--json",
            "--faults",
            "pause:<=15s,clock_step:<=2s",
            "--seeds",
            "0..40",
        ],
        &d,
    );
    let j = json(&o);
    let mut seen = 0;
    for f in j["findings"].as_array().unwrap() {
        let Some(e) = f["edge"].as_object() else {
            continue;
        };
        let (h, v) = (
            e["replay_holds"].as_str().unwrap(),
            e["replay_violates"].as_str().unwrap(),
        );
        assert_eq!(sh(h), 0, "{h}");
        assert_eq!(sh(v), 1, "{v}");
        let (wh, wv): (Vec<&str>, Vec<&str>) = (h.split(' ').collect(), v.split(' ').collect());
        assert_eq!(wh.len(), wv.len());
        assert_eq!(
            wh.iter().zip(&wv).filter(|(a, b)| a != b).count(),
            1,
            "{h}\n{v}"
        );
        let (hn, bn) = (
            e["holds_ns"].as_u64().unwrap(),
            e["breaks_ns"].as_u64().unwrap(),
        );
        assert!(bn > hn && bn - hn <= 1_000_000, "{e:?}");
        seen += 1;
    }
    // The pause and the clock step each have one.
    assert_eq!(seen, 2, "{j:#}");
    let pause = finding(&j, "pause-past-ttl");
    // On a 10 s TTL, a pause right after acquiring breaks it below the TTL (the hold adds to it).
    let b = pause["edge"]["breaks_ns"].as_u64().unwrap();
    assert!(b < 10_000_000_000, "{pause}");
    assert_eq!(pause["edge"]["within_assumptions"], true);
    let step = finding(&j, "clock-step");
    assert_eq!(step["edge"]["within_assumptions"], false, "{step}");
}

#[test]
fn pottery_on_three_masters_is_assessed_as_its_preset_and_a_crashed_holders_lock_comes_back() {
    let d = dir("pottery");
    let o = assess(
        &[
            "--lib",
            "pottery:auto_release_time=10,masters=3",
            "--json",
            "--seeds",
            "0..60",
        ],
        &d,
    );
    let j = json(&o);
    assert_eq!(j["setup"]["topology"]["masters"], 3);
    let model = std::fs::read_to_string(d.join("assess.ron")).unwrap();
    assert!(model.contains("preset: \"pottery\""), "{model}");
    let crash = finding(&j, "holder-crash");
    assert_eq!(crash["verdict"], "held", "{crash}");
    assert!(
        crash["rests_on"]
            .as_array()
            .unwrap()
            .contains(&"pottery-auto-release-time-units".into())
    );
    assert_eq!(finding(&j, "pause-past-ttl")["verdict"], "violated");
    rests_on_catalogue_models(&j);
}
