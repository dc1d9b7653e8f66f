//! What a user's files and library options say: the topology, persistence, the library and
//! its options, and every key read with what it maps to (or that it was not understood).
//! The reading itself is `assess::config`'s.

use std::fmt::Write as _;

/// What became of one key of an input.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Read into the model: what it set.
    Mapped(String),
    /// Understood, and without bearing on the lock's safety (a pool size, a log file).
    NoBearing,
    /// Understood, but the model does not represent it: the reason (the finding it could
    /// change is then not the user's exactly; the report says so).
    NotModelled(String),
    /// Not a key this reader knows.
    NotUnderstood,
}

/// One key of one input, where it was and what became of it.
#[derive(Clone, Debug)]
pub struct KeyRead {
    /// The file, or `--lib NAME` for a library option.
    pub source: String,
    /// 1-based; 0 for a library option.
    pub line: usize,
    pub key: String,
    pub value: String,
    pub status: Status,
}

/// A located error in an input: exit 2.
#[derive(Debug)]
pub struct InputError(pub String);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Topology {
    /// One Redis node.
    Single,
    /// A master with `replicas`, failed over by Sentinel when `sentinels` is some.
    Replicated {
        replicas: u32,
        sentinels: Option<Sentinels>,
    },
    /// Independent masters (Redlock).
    Masters(u32),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Sentinels {
    pub count: u32,
    pub quorum: u32,
    pub down_after_ms: u64,
    pub failover_timeout_ms: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Persistence {
    None,
    Rdb { every_s: u64 },
    Aof { fsync: String },
}

impl Persistence {
    pub fn ron(&self) -> String {
        match self {
            Persistence::None => "none".into(),
            Persistence::Rdb { every_s } => format!("rdb(every: \"{every_s}s\")"),
            Persistence::Aof { fsync } => format!("aof(fsync: {fsync})"),
        }
    }
    pub fn words(&self) -> String {
        match self {
            Persistence::None => "no persistence".into(),
            Persistence::Rdb { every_s } => format!("RDB snapshots every {every_s} s"),
            Persistence::Aof { fsync } => format!("AOF, appendfsync {fsync}"),
        }
    }
}

/// The library and the options the model runs it with.
#[derive(Clone, Debug, PartialEq)]
pub enum Library {
    /// redis-py's `Lock` (src/client/redis_py.rs copies v8.1.0).
    RedisPy {
        version: String,
        timeout_ms: Option<u64>,
        sleep_ms: u64,
        blocking_timeout_ms: Option<u64>,
        thread_local: bool,
    },
    /// Redisson's `RLock` (src/client/redisson.rs: 3.43.0, 3.44.0, 3.45.1, 3.52.0).
    Redisson {
        version: String,
        /// The release the model copies for `version`.
        modelled: &'static str,
        lease_ms: Option<u64>,
        watchdog_ms: u64,
        timeout_ms: u64,
        sync_check: bool,
        sync_timeout_ms: u64,
        fenced: bool,
    },
    /// A Redlock library, as a preset of the redlock client with the user's options.
    Redlock {
        name: &'static str,
        preset: &'static str,
        ttl_ms: u64,
        /// Attempts in all (node-redlock's `retryCount + 1`, redsync's `tries`).
        attempts: u32,
        retry_delay_ms: u64,
        retry_jitter_ms: u64,
        drift_ppm: u64,
        per_node_timeout_ms: Option<u64>,
    },
}

impl Library {
    pub fn name(&self) -> &'static str {
        match self {
            Library::RedisPy { .. } => "redis-py",
            Library::Redisson { .. } => "redisson",
            Library::Redlock { name, .. } => name,
        }
    }
    /// The lock's TTL the model uses (for redis-py with `timeout=None`, the key has none:
    /// this is the model's unused `ttl`).
    pub fn ttl_ms(&self) -> u64 {
        match self {
            Library::RedisPy { timeout_ms, .. } => timeout_ms.unwrap_or(10_000),
            Library::Redisson {
                lease_ms,
                watchdog_ms,
                ..
            } => lease_ms.unwrap_or(*watchdog_ms),
            Library::Redlock { ttl_ms, .. } => *ttl_ms,
        }
    }
    pub fn is_redlock(&self) -> bool {
        matches!(self, Library::Redlock { .. })
    }
}

/// Everything read, and the setup it describes.
#[derive(Clone, Debug)]
pub struct Setup {
    pub topology: Topology,
    pub persistence: Persistence,
    /// `min-replicas-to-write` and `min-replicas-max-lag` (s).
    pub min_replicas: Option<(u32, u64)>,
    pub library: Library,
    pub keys: Vec<KeyRead>,
    /// Sentences on what was assumed where the inputs said nothing.
    pub defaults: Vec<String>,
}

/// One input file: its name as given and its text.
pub struct Input {
    pub path: String,
    pub text: String,
}

/// The largest input read: configuration files are a few kilobytes.
pub const MAX_INPUT_BYTES: u64 = 1 << 20;

/// The most replicas (and sentinels) a setup may have.
pub const MAX_REPLICAS: u32 = 15;

/// The most a TTL, a timeout or Sentinel's down-after may be (ten minutes): a finding runs
/// a few of them per seed, and a seed of an hour-long TTL would take minutes.
pub const MAX_PERIOD_MS: u64 = 600_000;

/// `--lib NAME[:K=V,...]`, split.
#[derive(Clone, Debug)]
pub struct LibArg {
    pub name: String,
    pub options: Vec<(String, String)>,
}

impl std::str::FromStr for LibArg {
    type Err = String;
    fn from_str(s: &str) -> Result<LibArg, String> {
        let (name, rest) = s.split_once(':').unwrap_or((s, ""));
        let mut options = Vec::new();
        for kv in rest.split(',').filter(|kv| !kv.trim().is_empty()) {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(format!("--lib {s}: option {kv:?} is not K=V"));
            };
            options.push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(LibArg {
            name: name.trim().to_string(),
            options,
        })
    }
}

/// The libraries `--lib` knows, and the one it knows of but does not model.
pub const LIBRARIES: &[&str] = &["redis-py", "redisson", "redsync", "node-redlock", "pottery"];

/// `version` (`3.52.0`) is at least `(major, minor)`.
pub fn version_at_least(version: &str, at: (u64, u64)) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= at
}

impl Setup {
    /// The setup in a few lines, as the report heads its findings.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let topo = match &self.topology {
            Topology::Single => "one Redis node".to_string(),
            Topology::Replicated {
                replicas,
                sentinels: Some(se),
            } => format!(
                "a master and {replicas} replica(s), {} sentinel(s) (quorum {}, down-after {} ms, failover-timeout {} ms)",
                se.count, se.quorum, se.down_after_ms, se.failover_timeout_ms
            ),
            Topology::Replicated { replicas, .. } => {
                format!("a master and {replicas} replica(s), no Sentinel (no failover)")
            }
            Topology::Masters(n) => format!("{n} independent master(s)"),
        };
        let _ = writeln!(s, "setup: {topo}; {}", self.persistence.words());
        if let Some((n, lag)) = self.min_replicas {
            let _ = writeln!(
                s,
                "       min-replicas-to-write {n}, min-replicas-max-lag {lag} s"
            );
        }
        let _ = writeln!(s, "library: {}", self.library_words());
        s
    }

    pub fn library_words(&self) -> String {
        match &self.library {
            Library::RedisPy {
                version,
                timeout_ms,
                sleep_ms,
                blocking_timeout_ms,
                thread_local,
            } => format!(
                "redis-py {version} Lock(timeout={}, sleep={}, blocking_timeout={}, thread_local={})",
                timeout_ms.map_or("None".into(), |t| format!("{}", t as f64 / 1000.0)),
                *sleep_ms as f64 / 1000.0,
                blocking_timeout_ms.map_or("None".into(), |t| format!("{}", t as f64 / 1000.0)),
                if *thread_local { "True" } else { "False" }
            ),
            Library::Redisson {
                version,
                modelled,
                lease_ms,
                watchdog_ms,
                timeout_ms,
                ..
            } => format!(
                "Redisson {version} (as the modelled {modelled}) {}, timeout {timeout_ms} ms",
                match lease_ms {
                    Some(l) => format!("lock(leaseTime={l} ms)"),
                    None =>
                        format!("lock() with the watchdog (lockWatchdogTimeout {watchdog_ms} ms)"),
                }
            ),
            Library::Redlock {
                name: "pottery",
                ttl_ms,
                attempts,
                drift_ppm,
                ..
            } => format!(
                "pottery Redlock: auto_release_time {ttl_ms} ms, {}, drift factor {}",
                if *attempts == u32::MAX {
                    "tries until acquired, uniform(0, 200 ms) apart".to_string()
                } else {
                    format!("{attempts} attempt(s) per round")
                },
                *drift_ppm as f64 / 1e6
            ),
            Library::Redlock {
                name,
                ttl_ms,
                attempts,
                retry_delay_ms,
                retry_jitter_ms,
                drift_ppm,
                ..
            } => format!(
                "{name}: TTL {ttl_ms} ms, {attempts} attempts {retry_delay_ms} ± {retry_jitter_ms} ms apart, drift factor {}",
                *drift_ppm as f64 / 1e6
            ),
        }
    }
}
