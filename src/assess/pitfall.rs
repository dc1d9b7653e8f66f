//! The catalogue's pitfalls as they apply to one setup: for each, the model of the user's
//! setup with that pitfall's faults, what it checks, the hazard it must reach to mean
//! anything, the fix, and the catalogue models (or library reports) it rests on.

use std::fmt::Write as _;

use super::assumptions::Assumptions;
use super::edge::{Probe, Unit};
use super::setup::{Library, Setup, Topology, version_at_least};

/// One pitfall, made concrete for a setup: its model text and how to read its sweep.
#[derive(Clone, Debug)]
pub struct Pitfall {
    /// Short id: the finding's name and its model file's suffix.
    pub id: &'static str,
    pub title: String,
    pub model: String,
    /// The hazard whose reaching makes a "held" mean something (`None`: no detector names
    /// it; the finding says so).
    pub hazard: Option<&'static str>,
    pub fix: String,
    /// What to say when it held.
    pub held_note: String,
    /// Catalogue models (and library reports) the finding rests on.
    pub rests_on: Vec<&'static str>,
    /// Where the model's clients differ from the library as shipped, why.
    pub stand_in: Option<String>,
    /// Why the hazard can go unreached here, when the setup itself prevents it (WAIT).
    pub unreached_note: Option<String>,
    /// The one fault whose size the finding's edge is measured for.
    pub probe: Option<Probe>,
}

/// Names of the model's processes.
struct Names {
    master: &'static str,
    nodes: Vec<String>,
    replicas: Vec<String>,
    clients: Vec<String>,
}

fn names(s: &Setup, a: &Assumptions) -> Names {
    let (master, nodes, replicas) = match &s.topology {
        Topology::Single => ("redis", vec!["redis".to_string()], vec![]),
        Topology::Replicated { replicas, .. } => {
            let r: Vec<String> = (1..=*replicas).map(|i| format!("r{i}")).collect();
            let mut n = vec!["m1".to_string()];
            n.extend(r.iter().cloned());
            ("m1", n, r)
        }
        Topology::Masters(n) => ("m1", (1..=*n).map(|i| format!("m{i}")).collect(), vec![]),
    };
    let clients = if a.clients == 1 {
        vec!["c".to_string()]
    } else {
        (1..=a.clients).map(|i| format!("c{i}")).collect()
    };
    Names {
        master,
        nodes,
        replicas,
        clients,
    }
}

fn list(v: &[String]) -> String {
    let q: Vec<String> = v.iter().map(|n| format!("{n:?}")).collect();
    format!("[{}]", q.join(", "))
}

fn ms(v: u64) -> String {
    format!("\"{v}ms\"")
}

/// The client as shipped, or a stand-in that follows a failover (`via_sentinels`).
#[derive(Clone, Copy, PartialEq)]
enum Clients {
    AsShipped,
    FollowsFailover,
}

/// A client group of a finding's model: its name and size, and what the finding adds to it —
/// `options` inside the library's own block (`redisson: (...)`, `redlock: (...)`,
/// `redis_py: (...)`), `fields` to the group itself (`start`, `rounds`).
#[derive(Clone, Copy)]
struct Group<'a> {
    name: &'a str,
    count: u32,
    options: &'a str,
    fields: &'a str,
}

impl Group<'_> {
    /// Every client, as the setup has them (`c1`, `c2`, ...).
    fn all(a: &Assumptions) -> Group<'static> {
        Group {
            name: "c",
            count: a.clients,
            options: "",
            fields: "",
        }
    }
}

/// The model's `clients` entry for the setup's library.
fn client_group(s: &Setup, a: &Assumptions, n: &Names, how: Clients, g: Group<'_>) -> String {
    let hold = format!("({}, {})", ms(a.hold_ms.0), ms(a.hold_ms.1));
    let head = format!("name: \"{}\", count: {}", g.name, g.count);
    let (options, fields) = (g.options, g.fields);
    match (&s.library, how) {
        (
            Library::RedisPy {
                timeout_ms,
                sleep_ms,
                blocking_timeout_ms,
                thread_local,
                ..
            },
            Clients::AsShipped,
        ) => {
            let mut o = format!(
                "timeout: {}, sleep: {}",
                if timeout_ms.is_some() { "ttl" } else { "none" },
                ms(*sleep_ms)
            );
            if let Some(b) = blocking_timeout_ms {
                let _ = write!(o, ", blocking_timeout: {}", ms(*b));
            }
            if !thread_local {
                o.push_str(", thread_local: false");
            }
            format!(
                "({head}, algorithm: \"redis-py\", node: \"{}\",\n     ttl: {}, hold: {hold}, think: (\"0ms\", \"500ms\"),\n     redis_py: ({o}{options}){fields})",
                n.master,
                ms(s.library.ttl_ms())
            )
        }
        (
            Library::Redisson {
                modelled,
                lease_ms,
                watchdog_ms,
                timeout_ms,
                sync_check,
                sync_timeout_ms,
                fenced,
                ..
            },
            Clients::AsShipped,
        ) => {
            let mut o = format!("version: \"{modelled}\"");
            if let Some(l) = lease_ms {
                let _ = write!(o, ", lease: {}", ms(*l));
            }
            let replicas = match &s.topology {
                Topology::Replicated { replicas, .. } if *sync_check => *replicas,
                _ => 0,
            };
            if replicas > 0 {
                let _ = write!(
                    o,
                    ", replicas: {replicas}, slaves_sync_timeout: {}",
                    ms(*sync_timeout_ms)
                );
            }
            if *fenced {
                o.push_str(", fenced: true");
            }
            format!(
                "({head}, algorithm: \"redisson\", node: \"{}\",\n     ttl: {}, hold: {hold}, think: (\"0ms\", \"500ms\"), retry: (\"100ms\", \"300ms\"),\n     request_timeout: {},\n     redisson: ({o}{options}){fields})",
                n.master,
                ms(*watchdog_ms),
                ms(*timeout_ms)
            )
        }
        (
            Library::Redlock {
                preset,
                ttl_ms,
                attempts,
                retry_delay_ms,
                retry_jitter_ms,
                drift_ppm,
                per_node_timeout_ms,
                ..
            },
            _,
        ) => {
            // A preset that retries until it acquires (pottery) keeps its own count and delays.
            let mut o = if *attempts == u32::MAX {
                format!("preset: \"{preset}\"")
            } else {
                format!(
                    "preset: \"{preset}\", retry_count: {attempts}, retry_delay: {}, retry_jitter: {}, drift_factor_ppm: {drift_ppm}",
                    ms(*retry_delay_ms),
                    ms(*retry_jitter_ms)
                )
            };
            if let Some(t) = per_node_timeout_ms {
                let _ = write!(o, ", per_node_timeout: {}", ms(*t));
            }
            format!(
                "({head}, algorithm: \"redlock\", nodes: {},\n     ttl: {}, hold: {hold}, think: (\"0ms\", \"500ms\"),\n     redlock: ({o}{options}){fields})",
                list(&n.nodes),
                ms(*ttl_ms)
            )
        }
        (lib, Clients::FollowsFailover) => {
            // The commands the library's lock sends, by a client that asks the sentinels for
            // the master: SET NX PX and the compare-and-delete script, with WAIT where
            // Redisson's sync check sends one.
            let (algorithm, timeout_ms, wait) = match lib {
                Library::Redisson {
                    timeout_ms,
                    sync_check,
                    sync_timeout_ms,
                    ..
                } => {
                    let replicas = match &s.topology {
                        Topology::Replicated { replicas, .. } if *sync_check => *replicas,
                        _ => 0,
                    };
                    if replicas > 0 {
                        (
                            "set-px-wait-cad",
                            *timeout_ms,
                            format!(
                                ", wait: (replicas: {replicas}, timeout: {})",
                                ms(*sync_timeout_ms)
                            ),
                        )
                    } else {
                        ("set-px-cad", *timeout_ms, String::new())
                    }
                }
                Library::RedisPy {
                    timeout_ms: None, ..
                } => ("setnx-no-ttl", 5_000, String::new()),
                _ => ("set-px-cad", 5_000, String::new()),
            };
            format!(
                "({head}, algorithm: \"{algorithm}\", node: \"{}\", via_sentinels: true,\n     ttl: {}, hold: {hold}, think: (\"0ms\", \"500ms\"), retry: (\"100ms\", \"300ms\"),\n     request_timeout: {}{wait}{options}{fields})",
                n.master,
                ms(s.library.ttl_ms()),
                ms(timeout_ms)
            )
        }
    }
}

/// The pieces of one model, written out by `render`.
struct Model<'a> {
    header: Vec<String>,
    description: String,
    duration_ms: u64,
    clients: Vec<String>,
    faults: Vec<String>,
    random_faults: Vec<String>,
    triggers: Vec<String>,
    check: Vec<&'a str>,
    liveness_bound_ms: Option<u64>,
}

fn render(s: &Setup, n: &Names, m: &Model<'_>) -> String {
    let mut t = String::new();
    for h in &m.header {
        let _ = writeln!(t, "// {h}");
    }
    let _ = writeln!(t, "(");
    let _ = writeln!(t, "    description: {:?},", m.description);
    let _ = writeln!(t, "    duration: {},", ms(m.duration_ms));
    let p = s.persistence.ron();
    let mut nodes = Vec::new();
    for name in &n.nodes {
        let mut e = format!("(name: \"{name}\"");
        if p != "none" {
            let _ = write!(e, ", persistence: {p}");
        }
        if n.replicas.contains(name) {
            let _ = write!(e, ", replica_of: \"{}\"", n.master);
        } else if let Some((k, lag)) = s.min_replicas
            && !n.replicas.is_empty()
        {
            let _ = write!(
                e,
                ", min_replicas_to_write: {k}, min_replicas_max_lag: \"{lag}s\""
            );
        }
        e.push(')');
        nodes.push(e);
    }
    let _ = writeln!(
        t,
        "    nodes: [\n        {},\n    ],",
        nodes.join(",\n        ")
    );
    if let Topology::Replicated {
        sentinels: Some(se),
        ..
    } = &s.topology
    {
        let _ = writeln!(
            t,
            "    sentinels: (count: {}, quorum: {}, monitor: \"{}\", down_after: {}, failover_timeout: {}),",
            se.count,
            se.quorum,
            n.master,
            ms(se.down_after_ms),
            ms(se.failover_timeout_ms)
        );
    }
    let fenced = matches!(s.library, Library::Redisson { fenced: true, .. });
    let _ = writeln!(
        t,
        "    resource: (name: \"db\"{}),",
        if fenced { ", fencing: true" } else { "" }
    );
    let _ = writeln!(
        t,
        "    clients: [\n    {},\n    ],",
        m.clients.join(",\n    ")
    );
    for (field, v) in [
        ("faults", &m.faults),
        ("random_faults", &m.random_faults),
        ("triggers", &m.triggers),
    ] {
        if !v.is_empty() {
            let _ = writeln!(
                t,
                "    {field}: [\n        {},\n    ],",
                v.join(",\n        ")
            );
        }
    }
    let checks: Vec<String> = m.check.iter().map(|c| format!("{c:?}")).collect();
    let _ = writeln!(t, "    check: [{}],", checks.join(", "));
    if let Some(b) = m.liveness_bound_ms {
        let _ = writeln!(t, "    liveness_bound: {},", ms(b));
    }
    let _ = writeln!(t, "    expect: holds,");
    let _ = writeln!(t, ")");
    t
}

/// The header every written model starts with: what it is and what it was read from.
fn header(s: &Setup, a: &Assumptions, title: &str, lines: &[&str]) -> Vec<String> {
    let mut h = vec![
        format!("assess: {title}"),
        String::new(),
        format!(
            "Written by `distlock-sim assess` from: {}.",
            a.inputs.join(", ")
        ),
    ];
    for l in s.describe().lines() {
        h.push(l.trim_end().to_string());
    }
    h.push(format!(
        "Assumed: {} client(s), critical sections of {}-{} ms; faults: {}.",
        a.clients,
        a.hold_ms.0,
        a.hold_ms.1,
        a.faults_text()
    ));
    for l in lines {
        h.push((*l).to_string());
    }
    h
}

/// The setup as a model with no faults: what `--out` writes.
pub fn setup_model(s: &Setup, a: &Assumptions) -> String {
    let n = names(s, a);
    let checks = base_checks();
    render(
        s,
        &n,
        &Model {
            header: header(
                s,
                a,
                "the setup as read, without faults",
                &[
                    "Each finding's model is this one with the faults of its pitfall (the files beside it).",
                ],
            ),
            description: format!("assessed setup: {}", s.library_words()),
            duration_ms: 120_000,
            clients: vec![client_group(s, a, &n, Clients::AsShipped, Group::all(a))],
            faults: vec![],
            random_faults: vec![],
            triggers: vec![],
            check: checks,
            liveness_bound_ms: None,
        },
    )
}

/// What the setup's own model checks (assess runs at least two clients: `--clients 2..=16`).
fn base_checks() -> Vec<&'static str> {
    vec!["mutual_exclusion", "resource_safety"]
}

/// A finding's run: two TTLs and a minute past the start at least (a lock taken, lost and
/// taken again), and whatever the pitfall needs (`at_least_ms`).
fn duration_for(ttl_ms: u64, at_least_ms: u64) -> u64 {
    (ttl_ms * 2 + 60_000)
        .max(at_least_ms)
        .clamp(120_000, 86_400_000)
}

/// Every pitfall that applies to the setup under the assumptions.
pub fn pitfalls(s: &Setup, a: &Assumptions) -> Vec<Pitfall> {
    let n = names(s, a);
    let ttl = s.library.ttl_ms();
    let mut out = Vec::new();
    let as_shipped = client_group(s, a, &n, Clients::AsShipped, Group::all(a));
    let watchdog = matches!(s.library, Library::Redisson { lease_ms: None, .. });
    let checks = base_checks();
    let mk = |id: &'static str,
              title: &str,
              lines: &[&str],
              clients: Vec<String>,
              faults: Vec<String>,
              random_faults: Vec<String>,
              triggers: Vec<String>,
              check: Vec<&str>,
              liveness_bound_ms: Option<u64>,
              duration_ms: u64| {
        render(
            s,
            &n,
            &Model {
                header: header(s, a, title, lines),
                description: format!("assess {id}: {title}"),
                duration_ms,
                clients,
                faults,
                random_faults,
                triggers,
                check,
                liveness_bound_ms,
            },
        )
    };
    let rests_pause: Vec<&'static str> = match &s.library {
        Library::Redisson { lease_ms: None, .. } => {
            vec!["watchdog-pause", "classic-fencing-tokens-33-34"]
        }
        Library::Redlock { .. } => vec![
            "redlock-pause-after-acquire",
            "classic-kleppmann-redlock-gc-pause",
        ],
        _ => vec!["single-px-cad-pause", "classic-fencing-tokens-33-34"],
    };

    if let Some(pmax) = a.pause_max_ms {
        let pause = format!(
            "pause(targets: {}, every: (\"5s\", \"30s\"), duration: (\"100ms\", {}))",
            list(&n.clients),
            ms(pmax)
        );
        if a.clients > 1 {
            out.push(Pitfall {
                id: "pause-past-ttl",
                title: format!("a client paused (GC, VM stall) for up to {pmax} ms while holding"),
                model: mk(
                    "pause-past-ttl",
                    "a holder paused past its lock's TTL",
                    &["A stop-the-world pause freezes the client (and its renewal thread) while the key's TTL runs on."],
                    vec![as_shipped.clone()],
                    vec![],
                    vec![pause.clone()],
                    vec![],
                    checks.clone(),
                    None,
                    duration_for(ttl, 120_000),
                ),
                hazard: Some("pause_outlived_key"),
                fix: if matches!(s.library, Library::Redisson { fenced: true, .. }) {
                    "the fencing token already refuses the stale write; mutual exclusion itself cannot be kept through a pause longer than the lease".into()
                } else {
                    "add a fencing token that the resource checks (Redisson: RFencedLock; otherwise an INCR'd or consensus-issued token); a longer TTL only moves the edge".into()
                },
                held_note: format!("no pause of up to {pmax} ms outlived a held key"),
                rests_on: rests_pause.clone(),
                stand_in: None,
                unreached_note: None,
            probe: None,
            });
            out.push(Pitfall {
                id: "foreign-unlock",
                title: "a late unlock deleting the next holder's key".into(),
                model: mk(
                    "foreign-unlock",
                    "a paused holder's unlock after its key expired",
                    &["The paused holder wakes after its key expired and another client took it, then unlocks."],
                    vec![as_shipped.clone()],
                    vec![],
                    vec![pause.clone()],
                    vec![],
                    vec!["foreign_unlock"],
                    None,
                    duration_for(ttl, 120_000),
                ),
                hazard: Some("pause_outlived_key"),
                fix: match &s.library {
                    Library::RedisPy { thread_local: false, .. } => "keep thread_local=True (the default): with one Lock object shared by threads, the token of the next acquire is the one a late release compares (redis-py#416)".into(),
                    _ => "compare the token before deleting (a compare-and-delete script)".into(),
                },
                held_note: "the unlock compares the token, so a late one deletes nothing".into(),
                rests_on: match &s.library {
                    Library::RedisPy { thread_local: false, .. } => vec!["redis-py-shared-lock-object", "redis-py-thread-local-lock"],
                    Library::RedisPy { .. } => vec!["redis-py-thread-local-lock", "single-px-del-pause"],
                    _ => vec!["single-px-del-pause"],
                },
                stand_in: None,
                unreached_note: None,
            probe: None,
            });
        }
    }

    if a.crash {
        let (bound, note) = match &s.library {
            Library::RedisPy {
                timeout_ms: None, ..
            } => (Some(30_000), "liveness bound 30 s"),
            _ => (None, "liveness bound 3 × the TTL (the default)"),
        };
        out.push(Pitfall {
            id: "holder-crash",
            title: "a client crashing while it holds the lock".into(),
            model: mk(
                "holder-crash",
                "a holder crashes; does the lock come back?",
                &[note],
                vec![as_shipped.clone()],
                vec![],
                vec![format!(
                    "crash(targets: {}, every: (\"10s\", \"60s\"), down: (\"2s\", \"5s\"))",
                    list(&n.clients)
                )],
                vec![],
                vec!["liveness"],
                bound,
                duration_for(ttl, ttl * 4),
            ),
            hazard: Some("holder_crashed"),
            fix: match &s.library {
                Library::RedisPy { timeout_ms: None, .. } => "pass timeout= to Lock (seconds): without it the key has no expiry and a crashed holder's lock never comes back".into(),
                _ => "give the lock a TTL".into(),
            },
            held_note: "a crashed holder's key expires and the lock comes back".into(),
            rests_on: match &s.library {
                Library::Redlock { name: "pottery", .. } => {
                    vec!["pottery-auto-release-time-units", "redis-py-lock-timeout"]
                }
                _ => vec!["redis-py-lock-no-timeout", "redis-py-lock-timeout"],
            },
            stand_in: None,
            unreached_note: None,
            probe: None,
        });

        // A power loss of the master, back before any failover.
        let targets: Vec<String> = match &s.topology {
            Topology::Masters(_) => n.nodes.clone(),
            _ => vec![n.master.to_string()],
        };
        let down_max = match &s.topology {
            Topology::Replicated {
                sentinels: Some(se),
                ..
            } => (se.down_after_ms / 2).clamp(1, 1_000),
            _ => 1_000,
        };
        let down_min = (down_max / 10).max(1);
        if a.clients > 1 {
            out.push(Pitfall {
                id: "restart-lost-lock",
                title: format!(
                    "a Redis master losing power and restarting with {}",
                    s.persistence.words()
                ),
                model: mk(
                    "restart-lost-lock",
                    "a master restarts from what it persisted",
                    &["Power loss: only what was fsynced (or snapshotted) survives; back before Sentinel would fail over."],
                    vec![as_shipped.clone()],
                    vec![],
                    vec![format!(
                        "crash(targets: {}, every: (\"3s\", \"15s\"), down: ({}, {}), keep_data: false)",
                        list(&targets),
                        ms(down_min),
                        ms(down_max)
                    )],
                    vec![],
                    vec!["mutual_exclusion"],
                    None,
                    duration_for(ttl, 60_000),
                ),
                hazard: Some("node_crashed_with_lock"),
                fix: match &s.persistence {
                    super::setup::Persistence::Aof { fsync } if fsync == "always" => {
                        "keep appendfsync always".into()
                    }
                    _ => "set `appendonly yes` and `appendfsync always` (a granted lock is on disk before the reply), or keep a restarted node out for one TTL (Redlock's delayed restart)".into(),
                },
                held_note: "what the lock wrote survived the restarts".into(),
                rests_on: match &s.topology {
                    Topology::Masters(_) => vec!["redlock-restart-no-fsync", "redlock-restart-fsync-always", "redlock-restart-delayed"],
                    _ => vec!["classic-redis-docs-failover-race", "redlock-restart-no-fsync", "redlock-restart-fsync-always"],
                },
                stand_in: None,
                unreached_note: None,
            probe: None,
            });
        }
    }

    if a.failover
        && a.clients > 1
        && let Topology::Replicated {
            sentinels: Some(se),
            ..
        } = &s.topology
    {
        let follows = client_group(s, a, &n, Clients::FollowsFailover, Group::all(a));
        let waits = follows.contains("set-px-wait-cad");
        let restart = se.down_after_ms * 2 + 10_000;
        let stand_in = match &s.library {
            Library::Redlock { .. } => None,
            Library::Redisson { .. } => Some("the model's Redisson client does not follow a failover, so this finding runs the commands Redisson's lock depends on here (SET NX PX, then WAIT for the replicas as its sync check does; CommandAsyncService.java:1183-1190 at 3.52.0) by a client that asks the sentinels for the master".to_string()),
            Library::RedisPy { .. } => Some("the model's redis-py client does not follow a failover, so this finding runs the same commands (SET NX PX and a compare-and-delete script; SET NX for timeout=None) by a client that asks the sentinels for the master, as redis-py's Sentinel client does".to_string()),
        };
        out.push(Pitfall {
            id: "failover-lost-lock",
            title: "the master dying before it replicates an acknowledged lock".into(),
            model: mk(
                "failover-lost-lock",
                "failover loses an acknowledged lock",
                &["The master replies OK and loses power before the write reaches a replica; Sentinel promotes one."],
                vec![follows],
                vec![],
                vec![],
                vec![format!(
                    "crash_after_grant(targets: [\"{}\"], isolate_from: {}, restart_after: {}, keep_data: false)",
                    n.master,
                    list(&n.replicas),
                    ms(restart)
                )],
                vec!["mutual_exclusion"],
                None,
                duration_for(ttl, (se.down_after_ms + ttl) * 4),
            ),
            hazard: Some("promoted_replica_lacked_lock"),
            fix: "nothing on the Redis side closes this window (min-replicas-to-write only bounds the lag; WAIT narrows it: failover-wait-false-confidence); fence the resource with a token from a consensus store".into(),
            held_note: "every promoted replica had the lock".into(),
            rests_on: vec!["classic-redis-docs-failover-race", "failover-lost-lock", "failover-wait-false-confidence"],
            stand_in: stand_in.clone(),
            probe: None,
            unreached_note: waits.then(|| "the sync check's WAIT found no replica with the lock and refused it: no lock a client believed in was lost".to_string()),
        });

        // A split: the master and one client on one side, the replicas, the sentinels and
        // the other clients on the other, for long enough to fail over.
        let sentinels: Vec<String> = (1..=se.count).map(|i| format!("s{i}")).collect();
        let mut master_side = vec![n.master.to_string(), n.clients[0].clone()];
        master_side.dedup();
        let mut other_side: Vec<String> = n.replicas.clone();
        other_side.extend(sentinels);
        other_side.extend(n.clients[1..].iter().cloned());
        let split_ms = se.down_after_ms * 2 + 20_000;
        let max_lag_words = match s.min_replicas {
            Some((k, lag)) => format!(
                " (min-replicas-to-write {k}, max-lag {lag} s: the isolated master refuses writes once no replica acked for {lag} s)"
            ),
            None => String::new(),
        };
        out.push(Pitfall {
            id: "split-brain",
            title: format!("a network split leaving the old master granting beside the promoted one{max_lag_words}"),
            model: mk(
                "split-brain",
                "split brain: the old master and the promoted replica both grant",
                &["The master and one client are cut off from the replicas, the sentinels and the other clients at 10 s."],
                vec![client_group(s, a, &n, Clients::FollowsFailover, Group::all(a))],
                vec![format!(
                    "partition(from: {}, to: {}, at: \"10s\", duration: {})",
                    list(&master_side),
                    list(&other_side),
                    ms(split_ms)
                )],
                vec![],
                vec![],
                vec!["mutual_exclusion"],
                None,
                duration_for(ttl, 10_000 + split_ms + ttl * 2),
            ),
            hazard: Some("holder_partitioned"),
            fix: match s.min_replicas {
                Some((_, lag)) if lag * 1000 < se.down_after_ms => "keep min-replicas-max-lag plus the longest hold below down-after-milliseconds, or fence the resource: min-replicas-to-write only bounds how long the old master grants".into(),
                _ => format!("set `min-replicas-to-write 1` and `min-replicas-max-lag` well below down-after-milliseconds ({} ms) on the master: the isolated master then stops granting before a replica is promoted (failover-split-brain-min-replicas); only fencing closes it", se.down_after_ms),
            },
            held_note: if waits {
                "the sync check's WAIT got no replica's ack behind the split, so the isolated master's grants were refused".into()
            } else {
                "the isolated master stopped granting before a replica was promoted".into()
            },
            rests_on: vec!["failover-split-brain", "failover-split-brain-min-replicas"],
            stand_in,
            unreached_note: None,
            probe: None,
        });
    }

    if let Some(step) = a.clock_step_max_ms
        && a.clients > 1
    {
        let targets: Vec<String> = match &s.topology {
            Topology::Replicated { .. } => vec![n.master.to_string()],
            _ => n.nodes.clone(),
        };
        out.push(Pitfall {
            id: "clock-step",
            title: format!("a Redis host's wall clock stepping by up to {step} ms"),
            model: mk(
                "clock-step",
                "a Redis host's clock steps (NTP, an operator)",
                &["Redis keeps expiries as wall-clock times: a forward step ends every TTL early."],
                vec![as_shipped.clone()],
                vec![],
                vec![format!(
                    "clock_step(targets: {}, every: (\"5s\", \"20s\"), delta: (\"-{step}ms\", \"+{step}ms\"))",
                    list(&targets)
                )],
                vec![],
                vec!["mutual_exclusion"],
                None,
                duration_for(ttl, 60_000),
            ),
            hazard: Some("clock_moved_expiry"),
            fix: "keep Redis hosts' clocks from stepping (chrony or ntpd slewing only), and the TTL above the hold plus the largest step".into(),
            held_note: format!("steps of up to {step} ms moved expiries but never ended a held lock"),
            rests_on: vec!["single-clock-step-expires-locks", "redlock-clock-jump"],
            stand_in: None,
            unreached_note: None,
            probe: None,
        });
    }

    if watchdog
        && a.clients > 1
        && let Some(d) = a.renewal_delay_max_ms
    {
        out.push(Pitfall {
            id: "watchdog-starved",
            title: format!("the watchdog's renewals starved by up to {d} ms"),
            model: mk(
                "watchdog-starved",
                "renewals starved while the work goes on",
                &["Each renewal fires late by a delay drawn up to the assumption (a busy timer thread, redisson#5698)."],
                vec![client_group(
                    s,
                    a,
                    &n,
                    Clients::AsShipped,
                    Group {
                        options: &format!(", renewal_delay: (\"0ms\", {})", ms(d)),
                        ..Group::all(a)
                    },
                )],
                vec![],
                vec![],
                vec![],
                checks.clone(),
                None,
                duration_for(ttl, 120_000),
            ),
            hazard: Some("held_beyond_lease"),
            fix: "fence the resource (RFencedLock: redisson-fenced-renewal-starved), and keep the renewal thread unstarved".into(),
            held_note: "renewals arrived in time".into(),
            rests_on: vec!["redisson-renewal-starved", "redisson-fenced-renewal-starved"],
            stand_in: None,
            unreached_note: None,
            probe: None,
        });
    }

    // The libraries' reported bugs, at the version given.
    if let Library::Redisson {
        version,
        lease_ms: None,
        ..
    } = &s.library
        && a.clients > 1
        && a.interrupt
        && version_at_least(version, (3, 51))
    {
        let one = client_group(
            s,
            a,
            &n,
            Clients::AsShipped,
            Group {
                name: "one",
                count: 1,
                options: ", interrupt_after: \"3ms\"",
                fields: ", rounds: 1",
            },
        );
        let rest = client_group(
            s,
            a,
            &n,
            Clients::AsShipped,
            Group {
                count: a.clients - 1,
                fields: ", start: (\"1s\", \"2s\")",
                ..Group::all(a)
            },
        );
        let mut model = mk(
            "redisson-interrupt-orphan",
            "a thread interrupted in lock() while its script is in flight",
            &[
                "Client `one` is interrupted 3 ms into its lock() (replies take 1-4 ms): the late reply still arms the watchdog, for nobody (redisson#7272).",
            ],
            vec![one, rest],
            vec![],
            vec![],
            vec![],
            vec!["mutual_exclusion", "liveness"],
            Some(60_000),
            120_000,
        );
        model = model.replacen(
            "    clients: [",
            "    network: (latency: (\"1ms\", \"4ms\")),\n    clients: [",
            1,
        );
        out.push(Pitfall {
            id: "redisson-interrupt-orphan",
            title: "Redisson >= 3.51.0: a lock() interrupted while its script is in flight leaves a lock renewed for nobody (redisson#7272; applies if your code interrupts threads blocked in lock())".into(),
            model,
            hazard: Some("granted_after_gave_up"),
            fix: "do not interrupt a thread blocked in lock(); PR #7277 (open at 3.52.0) unlocks a lock whose reply comes after the interrupt (redisson-late-acquire-unlocks)".into(),
            held_note: "every interrupted lock() was answered in time or unlocked".into(),
            rests_on: vec!["redisson-orphan-renewal-after-interrupt", "redisson-late-acquire-unlocks"],
            stand_in: None,
            unreached_note: None,
            probe: None,
        });
    }
    if let Library::Redisson {
        modelled: "3.43.0",
        lease_ms: None,
        ..
    } = &s.library
        && a.clients > 1
        && let Topology::Replicated { replicas, .. } = &s.topology
        && *replicas > 0
        && matches!(
            s.library,
            Library::Redisson {
                sync_check: true,
                ..
            }
        )
    {
        out.push(Pitfall {
            id: "redisson-watchdog-stops",
            title: "Redisson < 3.44.0: one failed renewal stops the watchdog for good (redisson#775)".into(),
            model: mk(
                "redisson-watchdog-stops",
                "a renewal fails its replica sync check once",
                &["The master is cut from its replicas for 6 s: a renewal's WAIT answers 0 and, before 3.44.0, the watchdog stops."],
                vec![as_shipped.clone()],
                vec![format!(
                    "partition(from: [\"{}\"], to: {}, at: \"8s\", duration: \"6s\")",
                    n.master,
                    list(&n.replicas)
                )],
                vec![],
                vec![],
                checks.clone(),
                None,
                duration_for(ttl, 150_000),
            ),
            hazard: Some("held_beyond_lease"),
            fix: "upgrade Redisson to 3.44.0 or later (597d604a3: the watchdog goes on after an error)".into(),
            held_note: "no renewal failed while a lock was held past its first lease".into(),
            rests_on: vec!["redisson-watchdog-stops-after-sync-error", "redisson-watchdog-renews-after-error"],
            stand_in: None,
            unreached_note: None,
            probe: None,
        });
    }
    if let Library::RedisPy {
        timeout_ms: None, ..
    } = &s.library
        && a.clients > 1
    {
        let first = client_group(
            s,
            a,
            &n,
            Clients::AsShipped,
            Group {
                name: "a",
                count: 1,
                fields: ", start: (\"1ms\", \"100ms\")",
                ..Group::all(a)
            },
        );
        let rest = client_group(
            s,
            a,
            &n,
            Clients::AsShipped,
            Group {
                count: a.clients - 1,
                fields: ", start: (\"2s\", \"3s\")",
                ..Group::all(a)
            },
        );
        out.push(Pitfall {
            id: "redis-py-retried-acquire",
            title: "redis-py >= 8.0 resending a SET NX whose OK was lost, with timeout=None".into(),
            model: mk(
                "redis-py-retried-acquire",
                "a lost OK, a resent SET NX, and a key nobody owns",
                &["The first client's replies are lost for 8 s: its SET landed, the resend answers nil, and with no TTL its own key blocks everyone."],
                vec![first, rest],
                vec![format!(
                    "partition(from: [\"{}\"], to: [\"a\"], at: \"0ms\", duration: \"8s\", one_way: true)",
                    n.master
                )],
                vec![],
                vec![],
                vec!["liveness"],
                Some(30_000),
                120_000,
            ),
            hazard: None,
            fix: "pass timeout= to Lock: the key the resend found then expires".into(),
            held_note: "the lock came back".into(),
            rests_on: vec!["redis-py-retried-acquire-blocks-itself"],
            stand_in: None,
            unreached_note: None,
            probe: None,
        });
    }
    if let (Library::Redlock { ttl_ms, .. }, Some(extra)) = (&s.library, a.latency_max_ms)
        && a.clients > 1
    {
        let slow = format!(
            "latency_spike(from: {}, to: [\"{}\"], at: \"5s\", duration: \"40s\", extra: {})",
            list(&n.nodes),
            n.clients[0],
            ms(extra)
        );
        out.push(Pitfall {
            id: "slow-replies",
            title: format!("replies to one client delayed by up to {extra} ms while it acquires"),
            model: mk(
                "slow-replies",
                "replies arrive late: is the validity checked?",
                &["One client's replies come late for 40 s; a lock won late has little or no validity left."],
                vec![match &s.library {
                    // ioredis sets no command timeout: a late reply still counts.
                    Library::Redlock { name: "node-redlock", .. } => client_group(
                        s,
                        a,
                        &n,
                        Clients::AsShipped,
                        Group {
                            options: &format!(", per_node_timeout: {}", ms(extra + 5_000)),
                            ..Group::all(a)
                        },
                    ),
                    _ => as_shipped.clone(),
                }],
                vec![slow],
                vec![],
                vec![],
                vec!["mutual_exclusion"],
                None,
                duration_for(*ttl_ms, 60_000),
            ),
            hazard: Some("grant_expired_in_flight"),
            fix: match &s.library {
                Library::Redlock { name: "node-redlock", .. } => "check the lock's expiration before working (node-redlock 5's acquire() returns a lock without checking it: `lock.expiration > Date.now()`)".into(),
                _ => "check the validity left after acquiring before working".into(),
            },
            held_note: "a lock won late was refused (its validity checked)".into(),
            rests_on: vec!["redlock-no-validity-check", "classic-kleppmann-redlock-gc-pause"],
            stand_in: None,
            unreached_note: None,
            probe: None,
        });
    }
    // The fault each edge is measured for, placed where it hurts most.
    let first = &n.clients[0];
    for p in &mut out {
        p.probe = match p.id {
            "pause-past-ttl" | "foreign-unlock" => a.pause_max_ms.map(|pmax| Probe {
                what: format!("a pause of {first} the moment it acquires"),
                trigger: format!("pause_after_acquire(targets: [\"{first}\"], duration: {{}})"),
                unit: Unit::Us,
                hi: pmax.max(ttl * 3) * 1_000,
                assumed: pmax * 1_000,
            }),
            "clock-step" => a.clock_step_max_ms.map(|step| Probe {
                what: format!("a forward step of {}'s clock the moment it grants", n.master),
                trigger: format!(
                    "clock_step_after_grant(targets: [\"{}\"], delta: {{}})",
                    n.master
                ),
                unit: Unit::Ms,
                hi: step.max(ttl * 3),
                assumed: step,
            }),
            "slow-replies" => a.latency_max_ms.map(|extra| Probe {
                what: format!("replies to {first} delayed the moment it attempts"),
                trigger: format!(
                    "delay_replies_after_attempt(targets: [\"{first}\"], from: {}, delay: {{}}, window: \"100ms\")",
                    list(&n.nodes)
                ),
                unit: Unit::Us,
                // Not past the assumption: a reply later than the client waits for it
                // does not count, so larger delays hold again.
                hi: extra * 1_000,
                assumed: extra * 1_000,
            }),
            _ => None,
        };
    }
    out
}
