//! A user's files and `--lib` options read into a `Setup` (`read`): Redisson's YAML or JSON
//! config, redis.conf, sentinel.conf, each recognised by its content, and each library's
//! options in its own names, every key with what became of it.

use super::conf;
use super::no_bearing::{REDIS_NO_BEARING, REDISSON_NO_BEARING, SERVER_NO_BEARING};
use super::setup::{
    Input, InputError, KeyRead, LIBRARIES, LibArg, Library, MAX_PERIOD_MS, MAX_REPLICAS,
    Persistence, Sentinels, Setup, Status, Topology, version_at_least,
};
use super::yaml::{self, Node};

#[derive(Default)]
struct Gathered {
    keys: Vec<KeyRead>,
    defaults: Vec<String>,
    redisson_topology: Option<(Topology, String)>,
    redisson: RedissonRead,
    persistence_aof: Option<bool>,
    appendfsync: Option<String>,
    save: Option<Option<u64>>,
    min_replicas_to_write: Option<u32>,
    min_replicas_max_lag_s: Option<u64>,
    replicaof: u32,
    monitor: Option<(String, u32)>,
    down_after_ms: Option<u64>,
    failover_timeout_ms: Option<u64>,
    known_replicas: u32,
    known_sentinels: u32,
    sentinel_files: u32,
}

#[derive(Default)]
struct RedissonRead {
    watchdog_ms: Option<u64>,
    timeout_ms: Option<u64>,
    sync_check: Option<bool>,
    sync_timeout_ms: Option<u64>,
}

impl Gathered {
    fn key(&mut self, source: &str, line: usize, key: &str, value: &str, status: Status) {
        self.keys.push(KeyRead {
            source: source.into(),
            line,
            key: key.into(),
            value: value.into(),
            status,
        });
    }
}

fn located(path: &str, line: usize, msg: &str) -> InputError {
    InputError(format!("{path}:{line}: {msg}"))
}

fn int(path: &str, line: usize, key: &str, v: &str) -> Result<u64, InputError> {
    v.trim()
        .parse::<u64>()
        .map_err(|_| located(path, line, &format!("{key}: {v:?} is not a whole number")))
}

/// A millisecond value of a file, within what a finding can run: each finding runs a few
/// TTLs (and failovers) inside the simulator's one-day limit.
fn bounded_ms(
    path: &str,
    line: usize,
    key: &str,
    ms: u64,
    lo: u64,
    hi: u64,
) -> Result<u64, InputError> {
    if ms < lo || ms > hi {
        return Err(located(
            path,
            line,
            &format!("{key}: {ms} ms is outside {lo}..={hi} ms, the range assess runs"),
        ));
    }
    Ok(ms)
}

/// One more replica or sentinel named by a line (`replicaof`, `known-replica`, ...), at
/// most `MAX_REPLICAS`.
fn count_one(path: &str, line: usize, key: &str, n: &mut u32) -> Result<(), InputError> {
    *n += 1;
    if *n > MAX_REPLICAS {
        return Err(located(
            path,
            line,
            &format!(
                "{key}: more than {MAX_REPLICAS} of these: assess models at most {MAX_REPLICAS} replicas and {MAX_REPLICAS} sentinels"
            ),
        ));
    }
    Ok(())
}

fn yes_no(path: &str, line: usize, key: &str, v: &str) -> Result<bool, InputError> {
    match v.to_ascii_lowercase().as_str() {
        "yes" | "true" => Ok(true),
        "no" | "false" => Ok(false),
        _ => Err(located(
            path,
            line,
            &format!("{key}: {v:?} is not yes or no"),
        )),
    }
}

/// What an input is, from its content.
fn kind_of(text: &str) -> &'static str {
    let t = text.trim_start();
    if t.starts_with('{') {
        return "redisson";
    }
    for l in text.lines() {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') || l == "---" {
            continue;
        }
        let first = l.split_whitespace().next().unwrap_or("");
        if first.ends_with(':') || l.contains(": ") && !l.starts_with("sentinel ") {
            return "redisson";
        }
        if first.eq_ignore_ascii_case("sentinel") {
            return "sentinel";
        }
    }
    if text
        .lines()
        .any(|l| l.trim_start().to_ascii_lowercase().starts_with("sentinel "))
    {
        "sentinel"
    } else {
        "redis"
    }
}

fn read_redisson(g: &mut Gathered, path: &str, text: &str) -> Result<(), InputError> {
    let root = yaml::parse(text).map_err(|(l, m)| located(path, l, &m))?;
    let Some(top) = root.as_map() else {
        return Err(located(
            path,
            root.line(),
            "a Redisson configuration is a map of keys (singleServerConfig: ...)",
        ));
    };
    for (k, line, v) in top {
        let (k, line) = (k.as_str(), *line);
        let scalar = |v: &Node| -> Result<String, InputError> {
            v.scalar()
                .map(str::to_string)
                .ok_or_else(|| located(path, v.line(), &format!("{k}: a single value is expected")))
        };
        match k {
            "singleServerConfig"
            | "sentinelServersConfig"
            | "masterSlaveServersConfig"
            | "clusterServersConfig"
            | "replicatedServersConfig" => {
                if let Some((_, first)) = &g.redisson_topology {
                    return Err(located(
                        path,
                        line,
                        &format!("{k}: a second server configuration (the first: {first})"),
                    ));
                }
                read_server(g, path, k, line, v)?;
            }
            "lockWatchdogTimeout" => {
                let ms = int(path, line, k, &scalar(v)?)?;
                // Renewed every third: below 3 ms there is no period.
                let ms = bounded_ms(path, line, k, ms, 3, MAX_PERIOD_MS)?;
                g.redisson.watchdog_ms = Some(ms);
                g.key(
                    path,
                    line,
                    k,
                    &ms.to_string(),
                    Status::Mapped(format!(
                        "the watchdog's lease: the key's TTL, renewed every {} ms",
                        ms / 3
                    )),
                );
            }
            "checkLockSyncedSlaves" => {
                let b = yes_no(path, line, k, &scalar(v)?)?;
                g.redisson.sync_check = Some(b);
                g.key(
                    path,
                    line,
                    k,
                    &b.to_string(),
                    Status::Mapped(if b {
                        "each lock command is followed by WAIT replicas slavesSyncTimeout".into()
                    } else {
                        "no WAIT after the lock commands (redisson.replicas: 0)".into()
                    }),
                );
            }
            "slavesSyncTimeout" => {
                let ms = int(path, line, k, &scalar(v)?)?;
                let ms = bounded_ms(path, line, k, ms, 1, MAX_PERIOD_MS)?;
                g.redisson.sync_timeout_ms = Some(ms);
                g.key(
                    path,
                    line,
                    k,
                    &ms.to_string(),
                    Status::Mapped("redisson.slaves_sync_timeout (WAIT's timeout)".into()),
                );
            }
            _ if REDISSON_NO_BEARING.contains(&k) => {
                g.key(path, line, k, &v.show(), Status::NoBearing);
            }
            _ => g.key(path, line, k, &v.show(), Status::NotUnderstood),
        }
    }
    if g.redisson_topology.is_none() {
        return Err(located(
            path,
            1,
            "no server configuration: Redisson needs one of singleServerConfig, sentinelServersConfig, masterSlaveServersConfig, clusterServersConfig",
        ));
    }
    Ok(())
}

/// How many addresses the list `key` of a server section holds (at most `MAX_REPLICAS`).
fn address_count(
    path: &str,
    m: &[(String, usize, Node)],
    key: &str,
) -> Result<Option<u32>, InputError> {
    let Some((_, line, v)) = m.iter().find(|(k, _, _)| k == key) else {
        return Ok(None);
    };
    match v {
        Node::Seq(s, _) if s.len() as u64 > u64::from(MAX_REPLICAS) => Err(located(
            path,
            *line,
            &format!(
                "{key}: {} addresses: assess models at most {MAX_REPLICAS}",
                s.len()
            ),
        )),
        Node::Seq(s, _) => Ok(Some(s.len() as u32)),
        _ => Err(located(
            path,
            *line,
            &format!("{key}: a list of addresses is expected"),
        )),
    }
}

fn read_server(
    g: &mut Gathered,
    path: &str,
    section: &str,
    line: usize,
    v: &Node,
) -> Result<(), InputError> {
    let Some(m) = v.as_map() else {
        return Err(located(
            path,
            line,
            &format!("{section}: a map of keys is expected"),
        ));
    };
    let topology = match section {
        "singleServerConfig" => Topology::Single,
        "sentinelServersConfig" => {
            let n = address_count(path, m, "sentinelAddresses")?;
            Topology::Replicated {
                replicas: 0,
                sentinels: Some(Sentinels {
                    count: n.unwrap_or(0),
                    quorum: 0,
                    down_after_ms: 0,
                    failover_timeout_ms: 0,
                }),
            }
        }
        "masterSlaveServersConfig" => {
            let n = address_count(path, m, "slaveAddresses")?;
            Topology::Replicated {
                replicas: n.unwrap_or(0),
                sentinels: None,
            }
        }
        _ => Topology::Single, // cluster / replicated: refused below
    };
    g.key(
        path,
        line,
        section,
        &v.show(),
        match section {
            "clusterServersConfig" | "replicatedServersConfig" => Status::NotModelled(
                "Redis Cluster (and Redisson's replicated mode) is not modelled yet".into(),
            ),
            _ => Status::Mapped(match &topology {
                Topology::Single => "one Redis node".into(),
                Topology::Replicated {
                    sentinels: Some(_), ..
                } => "a master with replicas, failed over by Sentinel".into(),
                _ => "a master with replicas, no failover".into(),
            }),
        },
    );
    g.redisson_topology = Some((topology, format!("{section} at line {line}")));
    for (k, kl, v) in m {
        let (k, kl) = (k.as_str(), *kl);
        let text = v.show();
        match k {
            "timeout" => {
                let s = v.scalar().unwrap_or("");
                let ms = int(path, kl, k, s)?;
                let ms = bounded_ms(path, kl, k, ms, 1, MAX_PERIOD_MS)?;
                g.redisson.timeout_ms = Some(ms);
                g.key(
                    path,
                    kl,
                    k,
                    &text,
                    Status::Mapped(
                        "the response timeout of every command (request_timeout)".into(),
                    ),
                );
            }
            "retryAttempts" | "retryInterval" | "retryDelay" | "reconnectionDelay" => {
                g.key(path, kl, k, &text, Status::NotModelled(
                    "the model resends as the Redisson version's defaults do (3 × 1.5 s up to 3.47.0; 4 × EqualJitterDelay(1 s, 2 s) from 3.48.0)".into(),
                ));
            }
            "sentinelAddresses" => g.key(
                path,
                kl,
                k,
                &text,
                Status::Mapped("the number of sentinels".into()),
            ),
            "slaveAddresses" => g.key(
                path,
                kl,
                k,
                &text,
                Status::Mapped("the number of replicas".into()),
            ),
            "nodeAddresses" if section == "clusterServersConfig" => {
                g.key(path, kl, k, &text, Status::NoBearing)
            }
            _ if SERVER_NO_BEARING.contains(&k) => g.key(path, kl, k, &text, Status::NoBearing),
            _ => g.key(path, kl, k, &text, Status::NotUnderstood),
        }
    }
    Ok(())
}

/// redis.conf's `save` (or `save ""`): the shortest of its periods, the one that snapshots
/// a lock key (it changes at every grant).
fn read_save(
    g: &mut Gathered,
    path: &str,
    line: usize,
    key: &str,
    value: &str,
    args: &[String],
) -> Result<(), InputError> {
    if args.iter().all(|a| a.is_empty()) {
        g.save = Some(None);
        g.key(
            path,
            line,
            key,
            "\"\"",
            Status::Mapped("no RDB snapshots".into()),
        );
        return Ok(());
    }
    if !args.len().is_multiple_of(2) {
        return Err(located(
            path,
            line,
            "save: pairs of <seconds> <changes> are expected",
        ));
    }
    // Every pair is a save point; a lock key changes at every grant, so the
    // shortest period is the one that snapshots it.
    let mut s = u64::MAX;
    for pair in args.chunks(2) {
        let secs = int(path, line, "save", &pair[0])?;
        int(path, line, "save", &pair[1])?;
        if !(1..=86_400).contains(&secs) {
            return Err(located(
                path,
                line,
                "save: the seconds of a save point must be from 1 to 86400",
            ));
        }
        s = s.min(secs);
    }
    let every = match g.save {
        Some(Some(e)) => e.min(s),
        _ => s,
    };
    g.save = Some(Some(every));
    g.key(path, line, key, value, Status::Mapped(format!(
        "rdb(every: \"{every}s\") when AOF is off (a busy lock key changes often: the shortest period is taken)"
    )));
    Ok(())
}

fn read_redis_conf(g: &mut Gathered, path: &str, text: &str) -> Result<(), InputError> {
    let d = conf::directives(text).map_err(|(l, m)| located(path, l, &m))?;
    for (line, words) in d {
        let key = words[0].to_ascii_lowercase();
        let args = &words[1..];
        let value = args.join(" ");
        let one = || -> Result<&str, InputError> {
            match args {
                [a] => Ok(a.as_str()),
                _ => Err(located(
                    path,
                    line,
                    &format!("{key}: one value is expected"),
                )),
            }
        };
        match key.as_str() {
            "appendonly" => {
                let b = yes_no(path, line, &key, one()?)?;
                g.persistence_aof = Some(b);
                g.key(
                    path,
                    line,
                    &key,
                    &value,
                    Status::Mapped(format!("persistence: {}", if b { "aof" } else { "no AOF" })),
                );
            }
            "appendfsync" => {
                let v = one()?.to_ascii_lowercase();
                if !["always", "everysec", "no"].contains(&v.as_str()) {
                    return Err(located(
                        path,
                        line,
                        &format!("appendfsync: {v:?} is not always, everysec or no"),
                    ));
                }
                g.key(
                    path,
                    line,
                    &key,
                    &value,
                    Status::Mapped(format!("persistence: aof(fsync: {v}) when appendonly yes")),
                );
                g.appendfsync = Some(v);
            }
            "save" => read_save(g, path, line, &key, &value, args)?,
            "min-replicas-to-write" | "min-slaves-to-write" => {
                let n = int(path, line, &key, one()?)?;
                g.min_replicas_to_write = Some(n.min(64) as u32);
                g.key(
                    path,
                    line,
                    &key,
                    &value,
                    Status::Mapped("min_replicas_to_write".into()),
                );
            }
            "min-replicas-max-lag" | "min-slaves-max-lag" => {
                let n = int(path, line, &key, one()?)?;
                if n > 86_400 {
                    return Err(located(
                        path,
                        line,
                        &format!("{key}: at most 86400 seconds"),
                    ));
                }
                g.min_replicas_max_lag_s = Some(n);
                g.key(
                    path,
                    line,
                    &key,
                    &value,
                    Status::Mapped("min_replicas_max_lag".into()),
                );
            }
            "replicaof" | "slaveof" => {
                count_one(path, line, &key, &mut g.replicaof)?;
                g.key(
                    path,
                    line,
                    &key,
                    &value,
                    Status::Mapped("this file is a replica's: one more replica".into()),
                );
            }
            "maxmemory-policy" => {
                let v = one()?.to_ascii_lowercase();
                let status = if v == "noeviction" {
                    Status::Mapped("no eviction (the model's behaviour at its memory cap)".into())
                } else {
                    Status::NotModelled(format!(
                        "{v} may evict a held lock key under memory pressure; eviction is not modelled"
                    ))
                };
                g.key(path, line, &key, &value, status);
            }
            "maxmemory" => g.key(
                path,
                line,
                &key,
                &value,
                Status::NotModelled(
                    "memory pressure is not modelled (the model's cap is 256 MiB of keys)".into(),
                ),
            ),
            "replica-priority" | "slave-priority" => g.key(
                path,
                line,
                &key,
                &value,
                Status::NotModelled(
                    "which replica is promoted: the model gives every replica the default".into(),
                ),
            ),
            k if REDIS_NO_BEARING.contains(&k) => {
                g.key(path, line, &key, &value, Status::NoBearing)
            }
            _ => g.key(path, line, &key, &value, Status::NotUnderstood),
        }
    }
    Ok(())
}

/// sentinel.conf's `sentinel monitor <name> <ip> <port> <quorum>`: the one master assessed
/// and its quorum.
fn read_monitor(
    g: &mut Gathered,
    path: &str,
    line: usize,
    key: &str,
    value: &str,
    args: &[String],
) -> Result<(), InputError> {
    let [name, _host, _port, q] = args else {
        return Err(located(
            path,
            line,
            "sentinel monitor: <master-name> <ip> <port> <quorum> expected",
        ));
    };
    let q = int(path, line, key, q)?;
    if q == 0 {
        return Err(located(
            path,
            line,
            "sentinel monitor: the quorum must be at least 1",
        ));
    }
    if let Some((m, _)) = &g.monitor
        && m != name
    {
        return Err(located(
            path,
            line,
            &format!("sentinel monitor: a second master {name:?} (only one, {m:?}, is assessed)"),
        ));
    }
    g.monitor = Some((name.clone(), q.min(64) as u32));
    g.key(
        path,
        line,
        key,
        value,
        Status::Mapped(format!("sentinels.quorum: {q}")),
    );
    Ok(())
}

fn read_sentinel_conf(g: &mut Gathered, path: &str, text: &str) -> Result<(), InputError> {
    g.sentinel_files += 1;
    let d = conf::directives(text).map_err(|(l, m)| located(path, l, &m))?;
    for (line, words) in d {
        let key0 = words[0].to_ascii_lowercase();
        if key0 != "sentinel" {
            let status = if [
                "port",
                "dir",
                "daemonize",
                "logfile",
                "pidfile",
                "bind",
                "protected-mode",
            ]
            .contains(&key0.as_str())
            {
                Status::NoBearing
            } else {
                Status::NotUnderstood
            };
            g.key(path, line, &key0, &words[1..].join(" "), status);
            continue;
        }
        let Some(sub) = words.get(1).map(|s| s.to_ascii_lowercase()) else {
            return Err(located(
                path,
                line,
                "sentinel: a directive name is expected",
            ));
        };
        let key = format!("sentinel {sub}");
        let args = &words[2..];
        let value = args.join(" ");
        let ms_for = |g: &Gathered| -> Result<u64, InputError> {
            let [name, v] = args else {
                return Err(located(
                    path,
                    line,
                    &format!("{key}: <master-name> <milliseconds> expected"),
                ));
            };
            if let Some((m, _)) = &g.monitor
                && m != name
            {
                return Err(located(
                    path,
                    line,
                    &format!("{key}: master {name:?} is not the one monitored ({m:?})"),
                ));
            }
            int(path, line, &key, v)
        };
        match sub.as_str() {
            "monitor" => read_monitor(g, path, line, &key, &value, args)?,
            "down-after-milliseconds" => {
                let ms = bounded_ms(path, line, &key, ms_for(g)?, 1, MAX_PERIOD_MS)?;
                g.down_after_ms = Some(ms);
                g.key(
                    path,
                    line,
                    &key,
                    &value,
                    Status::Mapped("sentinels.down_after".into()),
                );
            }
            "failover-timeout" => {
                let ms = bounded_ms(path, line, &key, ms_for(g)?, 1, 144 * MAX_PERIOD_MS)?;
                g.failover_timeout_ms = Some(ms);
                g.key(
                    path,
                    line,
                    &key,
                    &value,
                    Status::Mapped("sentinels.failover_timeout".into()),
                );
            }
            "parallel-syncs" => g.key(
                path,
                line,
                &key,
                &value,
                Status::NotModelled(
                    "every replica resyncs with the new master at once in the model".into(),
                ),
            ),
            "known-replica" | "known-slave" => {
                count_one(path, line, &key, &mut g.known_replicas)?;
                g.key(
                    path,
                    line,
                    &key,
                    &value,
                    Status::Mapped("one more replica".into()),
                );
            }
            "known-sentinel" => {
                count_one(path, line, &key, &mut g.known_sentinels)?;
                g.key(
                    path,
                    line,
                    &key,
                    &value,
                    Status::Mapped("one more sentinel".into()),
                );
            }
            "auth-pass"
            | "auth-user"
            | "myid"
            | "config-epoch"
            | "leader-epoch"
            | "current-epoch"
            | "deny-scripts-reconfig"
            | "resolve-hostnames"
            | "announce-hostnames"
            | "announce-ip"
            | "announce-port"
            | "notification-script"
            | "client-reconfig-script"
            | "sentinel-user"
            | "sentinel-pass" => g.key(path, line, &key, &value, Status::NoBearing),
            _ => g.key(path, line, &key, &value, Status::NotUnderstood),
        }
    }
    Ok(())
}

/// A duration as the library writes it: `unit_ms` per bare number (1000 for Python's
/// seconds, 1 for Java's and JavaScript's milliseconds), or a number with a unit.
fn lib_ms(src: &str, key: &str, v: &str, unit_ms: f64) -> Result<u64, InputError> {
    let bad = || {
        InputError(format!(
            "{src}: {key}={v}: not a duration (a number, or one with a unit: 8s, 200ms)"
        ))
    };
    if let Ok(x) = v.parse::<f64>() {
        if !x.is_finite() || x < 0.0 || x * unit_ms > 86_400_000.0 {
            return Err(bad());
        }
        return Ok((x * unit_ms).round() as u64);
    }
    let ns = crate::scenario::units::parse_duration_ns(v).map_err(|_| bad())?;
    if !(0..=86_400_000_000_000).contains(&ns) {
        return Err(bad());
    }
    Ok((ns / 1_000_000) as u64)
}

fn none_or(v: &str) -> bool {
    v.eq_ignore_ascii_case("none") || v.eq_ignore_ascii_case("null")
}

fn py_bool(src: &str, k: &str, v: &str) -> Result<bool, InputError> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(InputError(format!(
            "{src}: {k}={v}: True or False expected"
        ))),
    }
}

/// The modelled Redisson release whose behaviour `version` has: the renewal rule changed in
/// 3.44.0 (597d604a3), the resend delays in 3.48.0 (e1154e3ec).
fn redisson_modelled(v: &str) -> Option<&'static str> {
    let parts: Vec<u64> = v
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let key = (parts.first().copied()?, parts.get(1).copied().unwrap_or(0));
    Some(if key < (3, 44) {
        "3.43.0"
    } else if key < (3, 48) {
        "3.44.0"
    } else {
        "3.52.0"
    })
}

fn read_library(
    g: &mut Gathered,
    arg: &LibArg,
    masters: &mut Option<u32>,
) -> Result<Library, InputError> {
    let src = format!("--lib {}", arg.name);
    let mut opts: Vec<(String, String)> = arg.options.clone();
    let mut take = |k: &str| -> Option<String> {
        let i = opts.iter().position(|(o, _)| o == k)?;
        Some(opts.remove(i).1)
    };
    let mut mapped: Vec<(String, String, String)> = Vec::new();
    let lib = match arg.name.as_str() {
        "redis-py" => {
            let given = take("version");
            let version = given.clone().unwrap_or_else(|| {
                g.defaults.push(
                    "redis-py 8.1.0 (no version= given: the release the model copies)".into(),
                );
                "8.1.0".into()
            });
            let timeout_ms = match take("timeout") {
                None => None,
                Some(v) if none_or(&v) => None,
                Some(v) => {
                    let ms = lib_ms(&src, "timeout", &v, 1000.0)?;
                    if ms == 0 {
                        return Err(InputError(format!("{src}: timeout={v}: at least 1 ms")));
                    }
                    mapped.push(("timeout".into(), v, format!("the key's TTL: PX {ms}")));
                    Some(ms)
                }
            };
            if timeout_ms.is_none() {
                mapped.push((
                    "timeout".into(),
                    "None".into(),
                    "SET NX with no expiry (the library's default)".into(),
                ));
            }
            let sleep_ms = match take("sleep") {
                None => 100,
                Some(v) => {
                    let ms = lib_ms(&src, "sleep", &v, 1000.0)?.max(1);
                    mapped.push(("sleep".into(), v, "redis_py.sleep".into()));
                    ms
                }
            };
            let mut blocking_timeout_ms = match take("blocking_timeout") {
                None => None,
                Some(v) if none_or(&v) => None,
                Some(v) => {
                    let ms = lib_ms(&src, "blocking_timeout", &v, 1000.0)?;
                    mapped.push((
                        "blocking_timeout".into(),
                        v,
                        "redis_py.blocking_timeout".into(),
                    ));
                    Some(ms)
                }
            };
            if let Some(v) = take("blocking") {
                if !py_bool(&src, "blocking", &v)? {
                    blocking_timeout_ms = Some(0);
                    mapped.push((
                        "blocking".into(),
                        v,
                        "one try per round (blocking_timeout 0)".into(),
                    ));
                } else {
                    mapped.push(("blocking".into(), v, "keep trying (the default)".into()));
                }
            }
            let thread_local = match take("thread_local") {
                None => true,
                Some(v) => {
                    let b = py_bool(&src, "thread_local", &v)?;
                    mapped.push((
                        "thread_local".into(),
                        v,
                        format!("redis_py.thread_local: {b}"),
                    ));
                    b
                }
            };
            let major: u64 = version
                .split('.')
                .next()
                .and_then(|m| m.parse().ok())
                .unwrap_or(0);
            if major < 8 {
                return Err(InputError(format!(
                    "{src}: version={version}: redis-py before 8.0 (no socket timeout, 3 retries) is not modelled; the model copies 8.0.0-8.1.0 (docs/libraries.md)"
                )));
            }
            if given.is_some() {
                mapped.push((
                    "version".into(),
                    version.clone(),
                    "redis-py 8.1.0's Lock (8.0.0's defaults: 5 s socket timeout, 10 retries)"
                        .into(),
                ));
            }
            Library::RedisPy {
                version,
                timeout_ms,
                sleep_ms,
                blocking_timeout_ms,
                thread_local,
            }
        }
        "redisson" => {
            let given = take("version");
            let version = given.clone().unwrap_or_else(|| {
                g.defaults.push(
                    "Redisson 3.52.0 (no --lib redisson:version= given: the newest release modelled)"
                        .into(),
                );
                "3.52.0".into()
            });
            if version
                .split('.')
                .next()
                .and_then(|m| m.parse::<u64>().ok())
                >= Some(4)
            {
                g.defaults.push(format!(
                    "Redisson {version} is assessed as the modelled 3.52.0: its lock code was not read"
                ));
            }
            let Some(modelled) = redisson_modelled(&version) else {
                return Err(InputError(format!(
                    "{src}: version={version}: not a version (3.52.0)"
                )));
            };
            if given.is_some() {
                mapped.push((
                    "version".into(),
                    version.clone(),
                    format!("behaves as the modelled {modelled}"),
                ));
            }
            let lease_ms = match take("leaseTime") {
                None => None,
                Some(v) if v == "-1" => None,
                Some(v) => {
                    let ms = lib_ms(&src, "leaseTime", &v, 1.0)?;
                    if ms == 0 {
                        return Err(InputError(format!(
                            "{src}: leaseTime={v}: at least 1 ms (or -1: the watchdog)"
                        )));
                    }
                    mapped.push((
                        "leaseTime".into(),
                        v,
                        format!("lock({ms} ms): this TTL, no watchdog"),
                    ));
                    Some(ms)
                }
            };
            if let Some(v) = take("lockWatchdogTimeout") {
                let ms = lib_ms(&src, "lockWatchdogTimeout", &v, 1.0)?.max(1);
                g.redisson.watchdog_ms = Some(ms);
                mapped.push((
                    "lockWatchdogTimeout".into(),
                    v,
                    "the watchdog's lease".into(),
                ));
            }
            let fenced = match take("fenced") {
                None => false,
                Some(v) => {
                    let b = py_bool(&src, "fenced", &v)?;
                    mapped.push((
                        "fenced".into(),
                        v,
                        "RFencedLock: a token checked by the resource".into(),
                    ));
                    b
                }
            };
            let r = &g.redisson;
            Library::Redisson {
                version,
                modelled,
                lease_ms,
                watchdog_ms: r.watchdog_ms.unwrap_or(30_000),
                timeout_ms: r.timeout_ms.unwrap_or(3_000),
                sync_check: r.sync_check.unwrap_or(true),
                sync_timeout_ms: r.sync_timeout_ms.unwrap_or(1_000),
                fenced,
            }
        }
        "redsync" | "node-redlock" => {
            let node = arg.name == "node-redlock";
            let name: &'static str = if node { "node-redlock" } else { "redsync" };
            if let Some(v) = take("masters") {
                let n = v
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=15).contains(n))
                    .ok_or_else(|| {
                        InputError(format!(
                            "{src}: masters={v}: a number of masters from 1 to 15"
                        ))
                    })?;
                mapped.push(("masters".into(), v, format!("{n} independent masters")));
                *masters = Some(n);
            }
            let (ttl_key, unit, ttl_default) = if node {
                ("duration", 1.0, 10_000)
            } else {
                ("expiry", 1000.0, 8_000)
            };
            let ttl_ms = match take(ttl_key) {
                None => ttl_default,
                Some(v) => {
                    let ms = lib_ms(&src, ttl_key, &v, unit)?;
                    if ms == 0 {
                        return Err(InputError(format!("{src}: {ttl_key}={v}: at least 1 ms")));
                    }
                    mapped.push((ttl_key.into(), v, format!("the lock's TTL: {ms} ms")));
                    ms
                }
            };
            let mut attempts = if node { 11 } else { 32 };
            let (count_key, plus) = if node {
                ("retryCount", 1)
            } else {
                ("tries", 0)
            };
            if let Some(v) = take(count_key) {
                let n = v
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n + plus >= 1 && *n <= 10_000)
                    .ok_or_else(|| {
                        InputError(format!("{src}: {count_key}={v}: a whole number of tries"))
                    })?;
                attempts = n + plus;
                mapped.push((count_key.into(), v, format!("{attempts} attempts in all")));
            }
            let (mut delay, mut jitter) = if node { (200, 100) } else { (150, 100) };
            if let Some(v) = take("retryDelay") {
                let ms = lib_ms(&src, "retryDelay", &v, 1.0)?;
                if node {
                    delay = ms;
                } else {
                    // WithRetryDelay(d) is a fixed delay: no jitter.
                    delay = ms;
                    jitter = 0;
                }
                mapped.push(("retryDelay".into(), v, format!("retry_delay {delay} ms")));
            }
            if node && let Some(v) = take("retryJitter") {
                jitter = lib_ms(&src, "retryJitter", &v, 1.0)?;
                mapped.push((
                    "retryJitter".into(),
                    v,
                    format!("retry_jitter ±{jitter} ms"),
                ));
            }
            let mut drift_ppm = 10_000;
            if let Some(v) = take("driftFactor") {
                let f = v
                    .parse::<f64>()
                    .ok()
                    .filter(|f| (0.0..=0.5).contains(f))
                    .ok_or_else(|| {
                        InputError(format!("{src}: driftFactor={v}: a fraction from 0 to 0.5"))
                    })?;
                drift_ppm = (f * 1e6).round() as u64;
                mapped.push((
                    "driftFactor".into(),
                    v,
                    format!("drift_factor_ppm {drift_ppm}"),
                ));
            }
            let mut per_node_timeout_ms = None;
            if !node && let Some(v) = take("timeoutFactor") {
                let f = v
                    .parse::<f64>()
                    .ok()
                    .filter(|f| *f > 0.0 && *f <= 1.0)
                    .ok_or_else(|| {
                        InputError(format!(
                            "{src}: timeoutFactor={v}: a fraction above 0, at most 1"
                        ))
                    })?;
                let ms = ((ttl_ms as f64) * f).round().max(1.0) as u64;
                per_node_timeout_ms = Some(ms);
                mapped.push((
                    "timeoutFactor".into(),
                    v,
                    format!("per_node_timeout {ms} ms"),
                ));
            }
            Library::Redlock {
                name,
                preset: if node { "node-redlock" } else { "redsync" },
                ttl_ms,
                attempts,
                retry_delay_ms: delay,
                retry_jitter_ms: jitter,
                drift_ppm,
                per_node_timeout_ms,
            }
        }
        "pottery" => {
            // pottery's Redlock (brainix/pottery@e2f4042, pottery/redlock.py): seconds since
            // v3.0.0 (021c5a9, #627), milliseconds before.
            let given = take("version");
            let version = given.clone().unwrap_or_else(|| "3.0.1".into());
            let seconds = version_at_least(&version, (3, 0));
            if !seconds {
                g.defaults.push(format!(
                    "pottery {version} is assessed with 3.x's Redlock (e2f4042) in 2.x's units (ms): only the units were compared"
                ));
            }
            if let Some(v) = &given {
                mapped.push((
                    "version".into(),
                    v.clone(),
                    format!(
                        "auto_release_time in {}",
                        if seconds {
                            "seconds (since 3.0.0)"
                        } else {
                            "milliseconds (before 3.0.0)"
                        }
                    ),
                ));
            } else {
                g.defaults
                    .push("pottery 3.0.1 (no version= given): auto_release_time in seconds".into());
            }
            if let Some(v) = take("masters") {
                let n = v
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=15).contains(n))
                    .ok_or_else(|| {
                        InputError(format!(
                            "{src}: masters={v}: a number of masters from 1 to 15"
                        ))
                    })?;
                mapped.push(("masters".into(), v, format!("{n} independent masters")));
                *masters = Some(n);
            } else {
                g.defaults.push("masters: 1 (`masters={redis}`, as pottery's examples; masters=N says otherwise)".into());
                *masters = Some(1);
            }
            let ttl_ms = match take("auto_release_time") {
                None => 10_000,
                Some(v) => {
                    let ms = lib_ms(
                        &src,
                        "auto_release_time",
                        &v,
                        if seconds { 1000.0 } else { 1.0 },
                    )?;
                    if seconds && ms > MAX_PERIOD_MS {
                        return Err(InputError(format!(
                            "{src}: auto_release_time={v} is {} s: pottery reads seconds since 3.0.0 (021c5a9, #627), and a lock that long is more than assess runs; a 2.x value in milliseconds is {} in seconds (models/pottery-auto-release-time-units.ron)",
                            ms / 1000,
                            ms as f64 / 1e6
                        )));
                    }
                    if ms == 0 {
                        return Err(InputError(format!(
                            "{src}: auto_release_time={v}: at least 1 ms"
                        )));
                    }
                    mapped.push((
                        "auto_release_time".into(),
                        v,
                        format!("the lock's TTL: {ms} ms"),
                    ));
                    ms
                }
            };
            let mut attempts = u32::MAX;
            if let Some(v) = take("context_manager_blocking") {
                if !py_bool(&src, "context_manager_blocking", &v)? {
                    attempts = 1;
                    mapped.push((
                        "context_manager_blocking".into(),
                        v,
                        "one attempt per round".into(),
                    ));
                } else {
                    mapped.push((
                        "context_manager_blocking".into(),
                        v,
                        "try until acquired (the default)".into(),
                    ));
                }
            }
            for k in ["context_manager_timeout", "timeout"] {
                if let Some(v) = take(k) {
                    g.key(&src, 0, k, &v, Status::NotModelled("the model's rounds count attempts, not time: it tries until it acquires".into()));
                }
            }
            if let Some(v) = take("num_extensions") {
                g.key(&src, 0, "num_extensions", &v, Status::NoBearing);
            }
            Library::Redlock {
                name: "pottery",
                preset: "pottery",
                ttl_ms,
                attempts,
                retry_delay_ms: 200,
                retry_jitter_ms: 0,
                drift_ppm: 10_000,
                per_node_timeout_ms: None,
            }
        }
        other => {
            let near = crate::scenario::units::closest_name(other, LIBRARIES.iter().copied())
                .map_or(String::new(), |n| format!(" (did you mean {n:?}?)"));
            return Err(InputError(format!(
                "--lib {other}: not a library assess knows (redis-py, redisson, redsync, node-redlock, pottery){near}"
            )));
        }
    };
    for (k, v, to) in mapped {
        g.key(&src, 0, &k, &v, Status::Mapped(to));
    }
    for (k, v) in opts {
        g.key(&src, 0, &k, &v, Status::NotUnderstood);
    }
    Ok(lib)
}

/// Reads every input and library option into one setup.
pub fn read(inputs: &[Input], libs: &[LibArg]) -> Result<Setup, InputError> {
    let mut g = Gathered::default();
    for i in inputs {
        match kind_of(&i.text) {
            "redisson" => read_redisson(&mut g, &i.path, &i.text)?,
            "sentinel" => read_sentinel_conf(&mut g, &i.path, &i.text)?,
            _ => read_redis_conf(&mut g, &i.path, &i.text)?,
        }
    }
    if let Some((Topology::Single, _)) = &g.redisson_topology
        && let Some(k) = g
            .keys
            .iter()
            .find(|k| matches!(&k.status, Status::NotModelled(r) if r.starts_with("Redis Cluster")))
    {
        return Err(InputError(format!(
            "{}:{}: {}: Redis Cluster is not modelled yet; nothing was assessed",
            k.source, k.line, k.key
        )));
    }
    if libs.len() > 1 {
        return Err(InputError("--lib: one library per assessment".into()));
    }
    let mut masters = None;
    let lib_arg = match (libs.first(), &g.redisson_topology) {
        (Some(l), _) => l.clone(),
        (None, Some(_)) => LibArg {
            name: "redisson".into(),
            options: Vec::new(),
        },
        (None, None) => {
            return Err(InputError(
                "which library takes the lock? name it with --lib redis-py|redisson|redsync|node-redlock (a Redisson configuration implies redisson)".into(),
            ));
        }
    };
    if g.redisson_topology.is_some() && lib_arg.name != "redisson" {
        return Err(InputError(format!(
            "--lib {}: the inputs include a Redisson configuration",
            lib_arg.name
        )));
    }
    let library = read_library(&mut g, &lib_arg, &mut masters)?;
    let ttl = library.ttl_ms();
    let least = if matches!(library, Library::Redisson { lease_ms: None, .. }) {
        3
    } else {
        1
    };
    if !(least..=MAX_PERIOD_MS).contains(&ttl) {
        return Err(InputError(format!(
            "--lib {}: the lock's TTL of {ttl} ms is outside {least}..={MAX_PERIOD_MS} ms, the range assess runs (each finding runs several TTLs a seed)",
            lib_arg.name
        )));
    }

    let mut defaults = std::mem::take(&mut g.defaults);
    // The topology: Redisson's section, else the Sentinel or replica files, else one node.
    let sentinel_seen = g.monitor.is_some() || g.sentinel_files > 0;
    let topology = if library.is_redlock() {
        if g.redisson_topology.is_some() || sentinel_seen {
            return Err(InputError(
                "Redlock takes independent masters: a Sentinel or replicated configuration is not one".into(),
            ));
        }
        let n = masters.unwrap_or_else(|| {
            defaults.push(
                "masters: 5 (Redlock's usual count; --lib ...:masters=N says otherwise)".into(),
            );
            5
        });
        Topology::Masters(n)
    } else {
        let base = g.redisson_topology.as_ref().map(|(t, _)| t.clone());
        let replicas_read = g.known_replicas.max(g.replicaof);
        match base {
            Some(Topology::Single) if sentinel_seen => {
                return Err(InputError(
                    "a sentinel.conf with a Redisson singleServerConfig: Redisson would not follow a failover".into(),
                ));
            }
            Some(Topology::Replicated {
                replicas,
                sentinels: None,
            }) => Topology::Replicated {
                replicas: replicas.max(replicas_read).max(1),
                sentinels: None,
            },
            Some(Topology::Replicated {
                sentinels: Some(s), ..
            }) => sentinel_topology(
                &g,
                (s.count > 0).then_some(s.count),
                replicas_read,
                &mut defaults,
            ),
            Some(_) => Topology::Single,
            None if sentinel_seen => sentinel_topology(&g, None, replicas_read, &mut defaults),
            None if replicas_read > 0 => Topology::Replicated {
                replicas: replicas_read,
                sentinels: None,
            },
            None => Topology::Single,
        }
    };
    let persistence = match (g.persistence_aof, &g.appendfsync, g.save) {
        (Some(true), f, _) => Persistence::Aof {
            fsync: f.clone().unwrap_or_else(|| {
                defaults.push("appendfsync everysec (Redis's default with appendonly yes)".into());
                "everysec".into()
            }),
        },
        (_, _, Some(Some(every_s))) => Persistence::Rdb { every_s },
        (Some(false), _, None) | (_, _, Some(None)) => Persistence::None,
        (None, Some(_), None) => {
            defaults.push("appendonly no (Redis's default: appendfsync is read only with appendonly yes); RDB off".into());
            Persistence::None
        }
        (None, None, None) => {
            defaults.push("persistence: none (no redis.conf says otherwise; Redis's own default is RDB snapshots, `save 3600 1 300 100 60 10000`: give the redis.conf to assess it)".into());
            Persistence::None
        }
    };
    let min_replicas = match g.min_replicas_to_write {
        // "Setting one or the other to 0 disables the feature" (redis.conf).
        Some(n) if n > 0 && g.min_replicas_max_lag_s != Some(0) => {
            Some((n, g.min_replicas_max_lag_s.unwrap_or(10)))
        }
        _ => None,
    };
    Ok(Setup {
        topology,
        persistence,
        min_replicas,
        library,
        keys: g.keys,
        defaults,
    })
}

fn sentinel_topology(
    g: &Gathered,
    from_redisson: Option<u32>,
    replicas_read: u32,
    defaults: &mut Vec<String>,
) -> Topology {
    let quorum = g.monitor.as_ref().map(|(_, q)| *q);
    let count = from_redisson
        .or((g.known_sentinels > 0).then_some(g.known_sentinels + 1))
        .unwrap_or_else(|| {
            let n = quorum.map_or(3, |q| (2 * q).saturating_sub(1).max(3));
            defaults.push(format!(
                "sentinels: {n} (neither sentinelAddresses nor known-sentinel lines say how many)"
            ));
            n
        });
    let quorum = quorum.unwrap_or_else(|| {
        let q = count / 2 + 1;
        defaults.push(format!(
            "quorum: {q} (a majority of {count}; no `sentinel monitor` line read)"
        ));
        q
    });
    let down_after_ms = g.down_after_ms.unwrap_or_else(|| {
        defaults.push("down-after-milliseconds: 30000 (Sentinel's default)".into());
        30_000
    });
    let failover_timeout_ms = g.failover_timeout_ms.unwrap_or_else(|| {
        defaults.push("failover-timeout: 180000 (Sentinel's default)".into());
        180_000
    });
    let replicas = if replicas_read > 0 {
        replicas_read
    } else {
        defaults.push("replicas: 1 (no known-replica lines or replica redis.conf read)".into());
        1
    };
    Topology::Replicated {
        replicas,
        sentinels: Some(Sentinels {
            count: count.clamp(1, 15),
            quorum: quorum.min(count.clamp(1, 15)),
            down_after_ms,
            failover_timeout_ms,
        }),
    }
}
