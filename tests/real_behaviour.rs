//! Opt-in: real `redis-server` and `redis-sentinel` 7.0.15 on loopback beside the model's
//! failover probe, both over a few trials, printed side by side (docs/fidelity.md).
//!
//! `DISTLOCK_REAL_BEHAVIOUR=1 cargo test --release --test real_behaviour -- --nocapture`
//! starts a master, a replica and three sentinels (quorum 2, down-after 5 s, failover-timeout
//! 180 s) per trial, `kill -9`s or SIGSTOPs the master, and stamps every sentinel's events
//! (`PSUBSCRIBE *`) on arrival; then it runs the same topology as a model over seeds, with
//! the crash's host up (what `kill -9` is) and down (silent, what SIGSTOP looks like to a
//! sentinel). `DISTLOCK_REAL_TRIALS=N` sets the trials (default 3 of each). Timing on a
//! loaded machine is noisy, which is why this is opt-in; the rules themselves are covered by
//! deterministic tests in every run (tests/refusal.rs, the sentinel and expiry unit tests).
//! Without the variable the test prints a skip line and passes.

// Real servers run in real time: this test reads the host clock and spawns threads, where
// the simulation may not.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use distlock_sim::explore::run_world;
use distlock_sim::history::Observation;
use distlock_sim::scenario;
use distlock_sim::sim::TraceMode;

fn say(line: &str) {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A child process killed (and reaped) when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let pid = self.0.id().to_string();
        // A stopped process dies of SIGKILL too; SIGCONT first keeps the log complete.
        let _ = Command::new("kill").args(["-CONT", &pid]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(bin: &Path, args: &[String], log: &Path) -> Proc {
    let log = std::fs::File::create(log).unwrap();
    Proc(
        Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", bin.display())),
    )
}

fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "port {port} never opened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One RESP value as text: arrays flattened into space-separated items.
fn read_resp(r: &mut BufReader<TcpStream>) -> Option<String> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let line = line.trim_end();
    let (kind, rest) = line.split_at(1);
    match kind {
        "*" => {
            let n: i64 = rest.parse().ok()?;
            let mut items = Vec::new();
            for _ in 0..n.max(0) {
                items.push(read_resp(r)?);
            }
            Some(items.join(" "))
        }
        "$" => {
            let n: i64 = rest.parse().ok()?;
            if n < 0 {
                return Some(String::new());
            }
            let mut buf = vec![0; n as usize + 2];
            r.read_exact(&mut buf).ok()?;
            buf.truncate(n as usize);
            Some(String::from_utf8_lossy(&buf).into_owned())
        }
        _ => Some(rest.to_string()),
    }
}

/// Subscribes to every event of a sentinel; events arrive as (instant, sentinel, text).
fn subscribe(port: u16, who: usize, tx: mpsc::Sender<(Instant, usize, String)>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to a sentinel");
    s.write_all(b"*2\r\n$10\r\nPSUBSCRIBE\r\n$1\r\n*\r\n")
        .unwrap();
    let mut r = BufReader::new(s);
    std::thread::spawn(move || {
        while let Some(v) = read_resp(&mut r) {
            // "pmessage * +sdown master m 127.0.0.1 7701"
            if let Some(rest) = v.strip_prefix("pmessage * ") {
                let mut parts = rest.splitn(2, ' ');
                let (channel, payload) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                if tx
                    .send((Instant::now(), who, format!("{channel} {payload}")))
                    .is_err()
                {
                    return;
                }
            }
        }
    });
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    Kill,
    Stop,
}

const MILESTONES: [(&str, &str); 6] = [
    ("first +sdown", "+sdown master"),
    ("first +odown", "+odown master"),
    ("+elected-leader", "+elected-leader"),
    ("+promoted-slave", "+promoted-slave"),
    ("first +switch-master", "+switch-master"),
    ("last +switch-master", "+switch-master"),
];

/// Seconds after the failure of each milestone (None: not seen).
fn milestones(events: &[(f64, usize, String)]) -> Vec<Option<f64>> {
    MILESTONES
        .iter()
        .enumerate()
        .map(|(k, (_, prefix))| {
            let ts = events
                .iter()
                .filter(|(_, _, e)| e.starts_with(prefix))
                .map(|(t, _, _)| *t);
            if k == 5 {
                ts.fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))))
            } else {
                ts.fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.min(t))))
            }
        })
        .collect()
}

fn real_trial(server: &Path, sentinel: &Path, failure: Failure, trial: usize) -> Vec<Option<f64>> {
    let dir = std::env::temp_dir().join(format!(
        "distlock-real-{}-{trial}-{failure:?}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (pm, pr) = (free_port(), free_port());
    let common = |port: u16| -> Vec<String> {
        [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let mut master_args = common(pm);
    master_args.extend(["--dir".into(), dir.display().to_string()]);
    let master = spawn(server, &master_args, &dir.join("m.log"));
    let mut replica_args = common(pr);
    replica_args.extend([
        "--replicaof".into(),
        "127.0.0.1".into(),
        pm.to_string(),
        "--dir".into(),
        dir.display().to_string(),
    ]);
    let _replica = spawn(server, &replica_args, &dir.join("r.log"));
    wait_for_port(pm);
    wait_for_port(pr);
    let mut sentinels = Vec::new();
    let mut ports = Vec::new();
    for k in 0..3 {
        let port = free_port();
        let conf = dir.join(format!("s{k}.conf"));
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor m 127.0.0.1 {pm} 2\n\
                 sentinel down-after-milliseconds m 5000\nsentinel failover-timeout m 180000\n",
                dir.display()
            ),
        )
        .unwrap();
        sentinels.push(spawn(
            sentinel,
            &[conf.display().to_string()],
            &dir.join(format!("s{k}.log")),
        ));
        ports.push(port);
    }
    for &p in &ports {
        wait_for_port(p);
    }
    // Sentinels find each other by hello every 2 s, the replica through INFO every 10 s.
    std::thread::sleep(Duration::from_secs(12));
    let (tx, rx) = mpsc::channel();
    for (k, &p) in ports.iter().enumerate() {
        subscribe(p, k, tx.clone());
    }
    std::thread::sleep(Duration::from_millis(300));
    while rx.try_recv().is_ok() {}
    let t0 = Instant::now();
    let pid = master.0.id().to_string();
    let signal = match failure {
        Failure::Kill => "-KILL",
        Failure::Stop => "-STOP",
    };
    Command::new("kill").args([signal, &pid]).status().unwrap();
    let mut events = Vec::new();
    let deadline = t0 + Duration::from_secs(15);
    let mut switched = 0;
    while switched < 3 {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break;
        };
        match rx.recv_timeout(left) {
            Ok((at, who, e)) => {
                if e.starts_with("+switch-master") {
                    switched += 1;
                }
                events.push((at.duration_since(t0).as_secs_f64(), who, e));
            }
            Err(_) => break,
        }
    }
    drop(sentinels);
    drop(master);
    let _ = std::fs::remove_dir_all(&dir);
    milestones(&events)
}

fn model_text(host: &str) -> String {
    format!(
        r#"(
    description: "failover probe: the master fails at 20 s; down-after 5 s",
    duration: "30s",
    nodes: [(name: "m1"), (name: "r1", replica_of: "m1")],
    sentinels: (count: 3, quorum: 2, monitor: "m1", down_after: "5s", failover_timeout: "180s"),
    clients: [(name: "b", count: 2, algorithm: "set-px-cad", node: "m1", via_sentinels: true,
        ttl: "30s", hold: "10ms", think: "100ms", retry: "1ms", request_timeout: "100ms")],
    faults: [crash(target: "m1", at: "20s", host: {host})],
    check: ["mutual_exclusion"],
)"#
    )
}

fn model_runs(host: &str, seeds: u64) -> Vec<Vec<Option<f64>>> {
    let sc = scenario::load_str("probe", "probe.ron", &model_text(host)).unwrap();
    (0..seeds)
        .map(|seed| {
            let (_, w) = run_world(&sc, seed, TraceMode::Off);
            let names = w.names();
            let events: Vec<(f64, usize, String)> = w
                .history
                .records
                .iter()
                .filter_map(|r| match &r.obs {
                    Observation::Sentinel { what } if r.at.0 >= 20_000_000_000 => Some((
                        (r.at.0 - 20_000_000_000) as f64 / 1e9,
                        r.proc.index(),
                        what.clone(),
                    )),
                    _ => None,
                })
                .collect();
            let _ = names;
            milestones(&events)
        })
        .collect()
}

fn spread(runs: &[Vec<Option<f64>>], k: usize) -> String {
    let mut v: Vec<f64> = runs.iter().filter_map(|r| r[k]).collect();
    if v.is_empty() {
        return "–".into();
    }
    v.sort_by(f64::total_cmp);
    format!(
        "{:.3} / {:.3} / {:.3} (n={})",
        v[0],
        v[v.len() / 2],
        v[v.len() - 1],
        v.len()
    )
}

#[test]
fn real_sentinel_failover_milestones_beside_the_models() {
    if std::env::var("DISTLOCK_REAL_BEHAVIOUR").as_deref() != Ok("1") {
        say(
            "real_behaviour: SKIPPED — set DISTLOCK_REAL_BEHAVIOUR=1 to time real redis-server/redis-sentinel beside the model",
        );
        return;
    }
    let (Some(server), Some(sentinel)) = (which("redis-server"), which("redis-sentinel")) else {
        panic!("DISTLOCK_REAL_BEHAVIOUR=1 but redis-server or redis-sentinel is not on PATH");
    };
    let trials: usize = std::env::var("DISTLOCK_REAL_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut kill = Vec::new();
    let mut stop = Vec::new();
    for t in 0..trials {
        kill.push(real_trial(&server, &sentinel, Failure::Kill, t));
        stop.push(real_trial(&server, &sentinel, Failure::Stop, t));
    }
    let up = model_runs("up", 30);
    let down = model_runs("down", 30);
    say("seconds after the failure, min / median / max");
    say(
        "| milestone | real kill -9 | model crash, host up | real SIGSTOP | model crash, host down |",
    );
    say("|---|---|---|---|---|");
    for (k, (name, _)) in MILESTONES.iter().enumerate() {
        say(&format!(
            "| {name} | {} | {} | {} | {} |",
            spread(&kill, k),
            spread(&up, k),
            spread(&stop, k),
            spread(&down, k)
        ));
    }
    // Every real trial failed over (a failed trial says the harness, not the model, broke).
    for (what, runs) in [("kill -9", &kill), ("SIGSTOP", &stop)] {
        for (t, r) in runs.iter().enumerate() {
            assert!(
                r[4].is_some(),
                "{what} trial {t}: no +switch-master within 15 s"
            );
        }
    }
}
