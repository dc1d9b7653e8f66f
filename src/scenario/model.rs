//! The RON model format (docs/model-format.md) and its lowering into a `World`.

use serde::Deserialize;

use crate::check::Property;
use crate::check::witness::Hazard;
use crate::client::consensus::{
    ConsensusClient, ConsensusClientConfig, ConsensusService, ConsensusServiceConfig,
};
use crate::client::redlock::{
    ElapsedClock, ExtendMode, RedlockClient, RedlockConfig, RedlockOptions,
};
use crate::client::watchdog::{WatchdogClient, WatchdogConfig};
use crate::client::{Algorithm, ClientConfig, LockClient, NsRange, Resource};
use crate::clock::NodeClock;
use crate::net::LinkSpec;
use crate::proto::Bytes;
use crate::redis::node::{Fsync, Persistence};
use crate::redis::sentinel::{Sentinel, SentinelConfig};
use crate::redis::{RedisConfig, RedisProcess};
use crate::rng::{Ratio, Seed};
use crate::scenario::units::{Bounded, Dur, DurRange, Name, SignedDur, SignedDurRange};
use crate::sim::adversary::{SendKind, Trigger, TriggerKind};
use crate::sim::{Actor, FaultAction, Limits, ProcSpec, TraceMode, World};
use crate::time::{NS_PER_MS, NS_PER_S, ProcId, SimTime};

/// Limits on model sizes: a model beyond them is refused, not run out of memory.
pub const MAX_CLIENTS: usize = 256;
pub const MAX_NODES: usize = 64;
pub const MAX_FAULTS: usize = 10_000;
pub const MAX_EVENTS_LIMIT: u64 = 1_000_000_000;
pub const MAX_RANDOM_FAULTS_PER_TARGET: u64 = 100_000;
pub const DEFAULT_MAX_EVENTS: u64 = 50_000_000;
pub const DEFAULT_EPOCH_UNIX_MS: i64 = 1_700_000_000_000;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// One line for `distlock-sim list`.
    pub description: String,
    /// Simulated time of one run.
    pub duration: Dur,
    #[serde(default)]
    pub max_events: Option<Bounded<1, 1_000_000_000>>,
    /// Unix time (ms) at true time 0.
    #[serde(default)]
    pub epoch_unix_ms: Option<Bounded<0, 4_102_444_800_000>>,
    /// Redis nodes (may be empty when every client uses the consensus service).
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub resource: Option<ResourceSpec>,
    pub clients: Vec<ClientGroup>,
    #[serde(default)]
    pub sentinels: Option<SentinelSpec>,
    #[serde(default)]
    pub consensus: Option<ConsensusSpec>,
    #[serde(default)]
    pub network: NetworkSpec,
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    #[serde(default)]
    pub random_faults: Vec<RandomFaultSpec>,
    /// Faults fired by protocol events (triggered adversaries).
    #[serde(default)]
    pub triggers: Vec<TriggerSpec>,
    #[serde(default)]
    pub swarm: Option<SwarmSpec>,
    /// Properties to check.
    pub check: Vec<PropName>,
    /// `liveness`: how long the lock may stay unobtainable while wanted (default 3 × TTL).
    #[serde(default)]
    pub liveness_bound: Option<Dur>,
    #[serde(default)]
    pub expect: Option<Expect>,
    /// Hazards the model must reach (`check::witness`): a sweep in which none of its seeds
    /// reached one of them, and nothing was violated, is vacuous rather than holding.
    #[serde(default)]
    pub witness: Vec<HazardName>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    #[serde(default)]
    pub offset: Option<SignedDur>,
    #[serde(default)]
    pub drift_ppm: Option<Bounded<-500_000, 500_000>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: Name,
    #[serde(default)]
    pub clock: ClockSpec,
    /// Start as a replica of this node.
    #[serde(default)]
    pub replica_of: Option<Name>,
    /// `replica-priority` (lower is preferred by Sentinel; 0 = never promoted). Default 100.
    #[serde(default)]
    pub priority: Option<Bounded<0, 1_000_000>>,
    #[serde(default)]
    pub persistence: Option<PersistenceSpec>,
    /// `min-replicas-to-write` (0: off).
    #[serde(default)]
    pub min_replicas_to_write: Option<Bounded<0, 64>>,
    /// `min-replicas-max-lag` (whole seconds; default 10s).
    #[serde(default)]
    pub min_replicas_max_lag: Option<Dur>,
    /// Propagate TTLs the pre-7.0 way (relative), instead of absolute times.
    #[serde(default)]
    pub relative_ttl_propagation: bool,
}

/// What survives a crash.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PersistenceSpec {
    None,
    Rdb { every: Dur },
    Aof { fsync: FsyncSpec },
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsyncSpec {
    Always,
    Everysec,
    No,
}

/// Sentinels monitoring the first node that is not a replica.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SentinelSpec {
    /// Sentinels are named `<name>1`, `<name>2`, ... (default "s").
    #[serde(default)]
    pub name: Option<Name>,
    pub count: Bounded<1, 16>,
    pub quorum: Bounded<1, 16>,
    /// The master they monitor.
    pub monitor: Name,
    /// `down-after-milliseconds` (default 30s).
    #[serde(default)]
    pub down_after: Option<Dur>,
    /// `failover-timeout` (default 180s).
    #[serde(default)]
    pub failover_timeout: Option<Dur>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    pub name: Name,
    #[serde(default)]
    pub fencing: bool,
}

/// Which kind of lock client a group runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientKind {
    /// A single-instance algorithm on one node (`node`).
    Single(Algorithm),
    /// Redlock over independent masters (`nodes`, `redlock` options).
    Redlock,
    /// Redisson-style lock renewed by a watchdog (`node`; `ttl` is the lease).
    Watchdog,
    /// ZooKeeper-style lock on the model's `consensus` service (`ttl` is the session timeout).
    Consensus,
}

/// An algorithm name, checked where it is read.
#[derive(Clone, Copy, Debug)]
pub struct AlgName(pub ClientKind);

impl<'de> Deserialize<'de> for AlgName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let kind = match s.as_str() {
            "redlock" => Some(ClientKind::Redlock),
            "watchdog" => Some(ClientKind::Watchdog),
            "consensus" => Some(ClientKind::Consensus),
            _ => Algorithm::from_name(&s).map(ClientKind::Single),
        };
        kind.map(AlgName).ok_or_else(|| {
            let mut names: Vec<_> = Algorithm::ALL.iter().map(|a| a.name()).collect();
            names.extend(["redlock", "watchdog", "consensus"]);
            serde::de::Error::custom(format!(
                "unknown algorithm {s:?}; known: {}",
                names.join(", ")
            ))
        })
    }
}

/// A property name, checked where it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PropName(pub Property);

impl<'de> Deserialize<'de> for PropName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Property::from_name(&s).map(PropName).ok_or_else(|| {
            let names: Vec<_> = Property::ALL.iter().map(|p| p.name()).collect();
            serde::de::Error::custom(format!(
                "unknown property {s:?}; known: {}",
                names.join(", ")
            ))
        })
    }
}

/// A hazard name (`witness: [...]`), checked where it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct HazardName(pub Hazard);

impl<'de> Deserialize<'de> for HazardName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Hazard::from_name(&s).map(HazardName).ok_or_else(|| {
            let names: Vec<_> = Hazard::ALL.iter().map(|h| h.name()).collect();
            let hint =
                closest_hazard(&s).map_or(String::new(), |h| format!(" (did you mean {h:?}?)"));
            serde::de::Error::custom(format!(
                "unknown hazard {s:?}{hint}; known: {}",
                names.join(", ")
            ))
        })
    }
}

/// The known hazard nearest to a misspelt one, when it is near enough to be a typo.
fn closest_hazard(s: &str) -> Option<&'static str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    }
    // Names are short; a long input is no typo of one (and is not worth the work).
    if s.len() > 64 {
        return None;
    }
    Hazard::ALL
        .iter()
        .map(|h| (distance(s, h.name()), h.name()))
        .min()
        .filter(|(d, name)| *d <= name.len() / 3)
        .map(|(_, name)| name)
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientGroup {
    /// The client's name, or with `count > 1` the prefix of `name1`, `name2`, ...
    pub name: Name,
    #[serde(default)]
    pub count: Option<Bounded<1, 256>>,
    pub algorithm: AlgName,
    /// The Redis node it locks on (single-instance algorithms).
    #[serde(default)]
    pub node: Option<Name>,
    /// The independent masters it locks on (redlock).
    #[serde(default)]
    pub nodes: Vec<Name>,
    /// Redlock options: a library preset and overrides.
    #[serde(default)]
    pub redlock: Option<RedlockSpec>,
    /// Watchdog options (defaults: renew every ttl/3, failures not reported).
    #[serde(default)]
    pub watchdog: Option<WatchdogSpec>,
    /// Consensus lock: present the node's zxid to the resource as a fencing token (default true).
    #[serde(default)]
    pub present_token: Option<bool>,
    /// The lock key.
    #[serde(default)]
    pub key: Option<String>,
    pub ttl: Dur,
    /// Critical section length (between the resource read and write).
    pub hold: DurRange,
    /// Pause between a release and the next acquisition.
    #[serde(default)]
    pub think: Option<DurRange>,
    /// Delay before retrying a failed attempt (single-instance algorithms; redlock retries
    /// as its options say).
    #[serde(default)]
    pub retry: Option<DurRange>,
    #[serde(default)]
    pub request_timeout: Option<Dur>,
    #[serde(default)]
    pub max_attempts: Option<Bounded<1, 1_000_000>>,
    #[serde(default)]
    pub rounds: Option<Bounded<1, 1_000_000_000>>,
    #[serde(default)]
    pub clock: ClockSpec,
    /// Find the master through the model's sentinels (at start, and after an error or a
    /// timeout) instead of always using `node`.
    #[serde(default)]
    pub via_sentinels: bool,
    /// `set-px-wait-cad`: `WAIT replicas timeout` after acquiring.
    #[serde(default)]
    pub wait: Option<WaitSpec>,
}

/// Redlock as a library runs it: `preset` names the library defaults (redis-docs,
/// redlock-rb, redlock-py, node-redlock, redsync); every other field overrides one default.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedlockSpec {
    #[serde(default)]
    pub preset: Option<String>,
    /// What elapsed time is measured with.
    #[serde(default)]
    pub clock: Option<ElapsedClockSpec>,
    #[serde(default)]
    pub drift_factor_ppm: Option<Bounded<0, 1_000_000>>,
    #[serde(default)]
    pub drift_plus_2ms: Option<bool>,
    #[serde(default)]
    pub per_node_timeout: Option<Dur>,
    #[serde(default)]
    pub retry_count: Option<Bounded<1, 100_000>>,
    #[serde(default)]
    pub retry_delay: Option<Dur>,
    #[serde(default)]
    pub retry_jitter: Option<Dur>,
    #[serde(default)]
    pub random_delay: Option<bool>,
    #[serde(default)]
    pub skip_validity_check: Option<bool>,
    /// The careful caller: give the critical section up when the believed validity runs out.
    #[serde(default)]
    pub stop_at_validity: Option<bool>,
    #[serde(default)]
    pub extend: Option<ExtendSpec>,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElapsedClockSpec {
    Monotonic,
    Wall,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtendSpec {
    /// Extend this long after acquiring (and after each extend).
    pub every: Dur,
    pub mode: ExtendModeSpec,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtendModeSpec {
    Script,
    ReSet,
    SetIfMissing,
}

impl RedlockSpec {
    /// The options this spec gives for `ttl_ms`, or why not.
    pub fn options(&self, ttl_ms: u64) -> Result<RedlockOptions, String> {
        let preset = self.preset.as_deref().unwrap_or("redis-docs");
        let mut o = RedlockOptions::preset(preset, ttl_ms).ok_or_else(|| {
            format!(
                "unknown redlock preset {preset:?}; known: {}",
                RedlockOptions::PRESETS.join(", ")
            )
        })?;
        if let Some(c) = self.clock {
            o.clock = match c {
                ElapsedClockSpec::Monotonic => ElapsedClock::Monotonic,
                ElapsedClockSpec::Wall => ElapsedClock::Wall,
            };
        }
        if let Some(v) = self.drift_factor_ppm {
            o.drift_factor_ppm = v.0 as u64;
        }
        if let Some(v) = self.drift_plus_2ms {
            o.drift_plus_2ms = v;
        }
        if let Some(v) = self.per_node_timeout {
            o.per_node_timeout_ms = v.ns() / NS_PER_MS;
        }
        if let Some(v) = self.retry_count {
            o.retry_count = v.0 as u32;
        }
        if let Some(v) = self.retry_delay {
            o.retry_delay_ms = v.ns() / NS_PER_MS;
        }
        if let Some(v) = self.retry_jitter {
            o.retry_jitter_ms = v.ns() / NS_PER_MS;
        }
        if let Some(v) = self.random_delay {
            o.random_delay = v;
        }
        if let Some(v) = self.skip_validity_check {
            o.skip_validity_check = v;
        }
        if let Some(v) = self.stop_at_validity {
            o.stop_at_validity = v;
        }
        if let Some(e) = self.extend {
            let mode = match e.mode {
                ExtendModeSpec::Script => ExtendMode::Script,
                ExtendModeSpec::ReSet => ExtendMode::ReSet,
                ExtendModeSpec::SetIfMissing => ExtendMode::SetIfMissing,
            };
            o.extend = Some((e.every.ns() / NS_PER_MS, mode));
        }
        o.validate()?;
        Ok(o)
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchdogSpec {
    #[serde(default)]
    pub renew_every: Option<Dur>,
    #[serde(default)]
    pub report_renewal_failure: bool,
}

/// The consensus lock service (one logical, linearizable process).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsensusSpec {
    pub name: Name,
    /// How often it checks for expired sessions (ZooKeeper's tick; default 2s).
    #[serde(default)]
    pub tick: Option<Dur>,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitSpec {
    pub replicas: Bounded<1, 64>,
    pub timeout: Dur,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// One-way delay per message, drawn uniformly.
    pub latency: DurRange,
    #[serde(default)]
    pub loss_ppm: Option<Bounded<0, 1_000_000>>,
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec {
            latency: DurRange {
                min: Dur(100_000),
                max: Dur(1_000_000),
            },
            loss_ppm: None,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultSpec {
    Pause {
        target: Name,
        at: Dur,
        duration: Dur,
    },
    Crash {
        target: Name,
        at: Dur,
        #[serde(default)]
        restart_after: Option<Dur>,
        #[serde(default)]
        keep_data: bool,
    },
    ClockStep {
        target: Name,
        at: Dur,
        delta: SignedDur,
    },
    Drift {
        target: Name,
        at: Dur,
        ppm: Bounded<-500_000, 500_000>,
    },
    Partition {
        from: Vec<Name>,
        to: Vec<Name>,
        at: Dur,
        #[serde(default)]
        duration: Option<Dur>,
        #[serde(default)]
        one_way: bool,
    },
    LatencySpike {
        from: Vec<Name>,
        to: Vec<Name>,
        at: Dur,
        duration: Dur,
        extra: Dur,
    },
    Loss {
        from: Vec<Name>,
        to: Vec<Name>,
        at: Dur,
        duration: Dur,
        loss_ppm: Bounded<0, 1_000_000>,
    },
}

/// Faults drawn per seed: each target independently suffers the fault at intervals drawn
/// from `every`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RandomFaultSpec {
    Pause {
        targets: Vec<Name>,
        every: DurRange,
        duration: DurRange,
    },
    Crash {
        targets: Vec<Name>,
        every: DurRange,
        down: DurRange,
        #[serde(default)]
        keep_data: bool,
    },
    ClockStep {
        targets: Vec<Name>,
        every: DurRange,
        delta: SignedDurRange,
    },
    /// Cut a target off from every other process (both ways) for `duration`.
    Partition {
        targets: Vec<Name>,
        every: DurRange,
        duration: DurRange,
    },
}

/// Swarm testing: each seed draws which of these fault kinds are on (each with
/// `enable_ppm`, default 50 %) and how hard (a busier `every` and a larger magnitude, drawn
/// within the given ranges), as FoundationDB and TigerBeetle do. The drawn configuration is
/// printed with every violation.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwarmSpec {
    #[serde(default)]
    pub enable_ppm: Option<Bounded<0, 1_000_000>>,
    pub faults: Vec<RandomFaultSpec>,
}

/// A triggered adversary. `chance_ppm` (default 1,000,000: always) is the chance that a
/// matching event fires it; `max` (default 1) bounds its firings per run.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TriggerSpec {
    /// Pause a client right before it sends `message`; the message leaves when it resumes —
    /// the stop-the-world pause between deciding and acting (after its GET said the lock is
    /// its own and before its DEL; after its lease check and before its write).
    PauseBeforeSend {
        targets: Vec<Name>,
        message: MessageSpec,
        duration: DurRange,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// Pause a client right after it reports it acquired the lock.
    PauseAfterAcquire {
        targets: Vec<Name>,
        duration: DurRange,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// Pause a client right after the resource serves it a read: between the read and the
    /// write of its critical section, the moment a lost update needs.
    PauseAfterRead {
        targets: Vec<Name>,
        duration: DurRange,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// Cut a client off from every other process (both ways) for `duration` right after it
    /// reports it acquired — for Redlock, right after its quorum is reached: it can neither
    /// renew, extend nor unlock, while it believes it holds.
    PartitionAfterAcquire {
        targets: Vec<Name>,
        duration: DurRange,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// When a client in `targets` starts an attempt, delay the replies of the nodes in
    /// `from` to it by `delay` (for `window`, default 100 ms, long enough to cover its
    /// requests): a reply held until just before the TTL, so the client acquires a lock
    /// that is about to expire.
    DelayRepliesAfterAttempt {
        targets: Vec<Name>,
        from: Vec<Name>,
        delay: DurRange,
        #[serde(default)]
        window: Option<Dur>,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// Step a node's wall clock right after it grants a lock (stores a client's write).
    ClockStepAfterGrant {
        targets: Vec<Name>,
        delta: SignedDurRange,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
    /// Crash a node right after it grants, before its write reaches `isolate_from` (its
    /// replicas): the master that replied OK and died before replicating. `after` delays the
    /// crash (and the cut) so that the client's next commands — its `WAIT`, its fencing
    /// `INCR` — run first.
    CrashAfterGrant {
        targets: Vec<Name>,
        isolate_from: Vec<Name>,
        #[serde(default)]
        after: Option<DurRange>,
        #[serde(default)]
        restart_after: Option<Dur>,
        #[serde(default)]
        keep_data: bool,
        #[serde(default)]
        chance_ppm: Option<Bounded<0, 1_000_000>>,
        #[serde(default)]
        max: Option<Bounded<1, 1_000_000>>,
    },
}

impl TriggerSpec {
    /// At most this many firings per run (default 1).
    pub fn max_mut(&mut self) -> &mut Option<Bounded<1, 1_000_000>> {
        match self {
            TriggerSpec::PauseBeforeSend { max, .. }
            | TriggerSpec::PauseAfterAcquire { max, .. }
            | TriggerSpec::PauseAfterRead { max, .. }
            | TriggerSpec::PartitionAfterAcquire { max, .. }
            | TriggerSpec::DelayRepliesAfterAttempt { max, .. }
            | TriggerSpec::ClockStepAfterGrant { max, .. }
            | TriggerSpec::CrashAfterGrant { max, .. } => max,
        }
    }
}

/// A message a `pause_before_send` trigger waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageSpec {
    /// The write of a critical section, to the protected resource.
    ResourceWrite,
    /// A `DEL` to a Redis node.
    Del,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Holds,
    Violates(Vec<PropName>),
}

/// Makes a user's client process from the configuration a model gives a client.
pub type ClientFactory = dyn Fn(&ClientConfig) -> Box<dyn crate::process::Process>;

/// What kind of process a name stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcKind {
    Redis,
    Resource,
    Client,
    Sentinel,
    Consensus,
}

/// A validated model, ready to be built into a world for any seed.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// File stem, e.g. `single-px-del-pause`.
    pub name: String,
    /// Path as given (for replay commands).
    pub path: String,
    pub model: Model,
    pub procs: Vec<(String, ProcKind)>,
    pub properties: Vec<Property>,
    pub liveness_bound_ns: u64,
    pub limits: Limits,
    pub epoch_unix_ms: i64,
    /// Flags a replay command needs besides the path and seed to rebuild this scenario
    /// (` --adversary triggered` for a re-timed model); empty for a model as written.
    pub replay_flags: String,
    /// Each random fault and each trigger firing applies with this chance (`--sparser K`:
    /// 1/K); the rest of the schedule is drawn as if all applied.
    pub fault_keep: Ratio,
}

/// A validation error before positions are attached: the message, and a snippet of the
/// source to locate it by (the offending value, quoted as in the file).
#[derive(Clone, Debug)]
pub struct Invalid {
    pub message: String,
    pub near: Option<String>,
}

fn invalid(message: impl Into<String>, near: Option<String>) -> Invalid {
    Invalid {
        message: message.into(),
        near,
    }
}

fn quoted(n: &Name) -> Option<String> {
    Some(format!("\"{}\"", n.0))
}

impl Scenario {
    /// The lock keys of the model's client groups, each once (timelines and reports show
    /// their life on every node).
    pub fn lock_keys(&self) -> Vec<Bytes> {
        let mut keys: Vec<Bytes> = Vec::new();
        for g in &self.model.clients {
            let k = Bytes::from_slice(g.key.as_deref().unwrap_or("lock").as_bytes());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys
    }

    /// Checks cross-references and sizes, and computes the process table.
    pub fn new(name: String, path: String, model: Model) -> Result<Scenario, Invalid> {
        let mut procs: Vec<(String, ProcKind)> = Vec::new();
        let add = |n: &Name,
                   kind: ProcKind,
                   procs: &mut Vec<(String, ProcKind)>|
         -> Result<(), Invalid> {
            if procs.iter().any(|(p, _)| *p == n.0) {
                return Err(invalid(
                    format!("duplicate process name \"{}\"", n.0),
                    quoted(n),
                ));
            }
            procs.push((n.0.clone(), kind));
            Ok(())
        };
        if model.network.latency.max.ns() > crate::net::LATENCY_NS_LIMIT {
            return Err(invalid(
                format!(
                    "network latency {} is above the limit of 1h",
                    model.network.latency.max
                ),
                Some("latency".into()),
            ));
        }
        let needs_redis = model
            .clients
            .iter()
            .any(|g| g.algorithm.0 != ClientKind::Consensus);
        if model.nodes.is_empty() && needs_redis {
            return Err(invalid(
                "a model needs at least one Redis node in `nodes`",
                Some("nodes".into()),
            ));
        }
        if model.nodes.len() > MAX_NODES {
            return Err(invalid(
                format!("{} nodes: at most {MAX_NODES} allowed", model.nodes.len()),
                Some("nodes".into()),
            ));
        }
        for n in &model.nodes {
            add(&n.name, ProcKind::Redis, &mut procs)?;
        }
        if let Some(r) = &model.resource {
            add(&r.name, ProcKind::Resource, &mut procs)?;
        }
        if model.clients.is_empty() {
            return Err(invalid(
                "a model needs at least one client group in `clients`",
                Some("clients".into()),
            ));
        }
        let total: i64 = model
            .clients
            .iter()
            .map(|g| g.count.map_or(1, |c| c.0))
            .sum();
        if total as usize > MAX_CLIENTS {
            return Err(invalid(
                format!("{total} clients: at most {MAX_CLIENTS} allowed"),
                Some("count".into()),
            ));
        }
        for g in &model.clients {
            let count = g.count.map_or(1, |c| c.0);
            for i in 1..=count {
                let n = if count == 1 {
                    g.name.clone()
                } else {
                    Name(format!("{}{i}", g.name.0))
                };
                add(&n, ProcKind::Client, &mut procs)?;
            }
            let known = |n: &Name| model.nodes.iter().any(|x| x.name == *n);
            match g.algorithm.0 {
                ClientKind::Consensus => {
                    if model.consensus.is_none() {
                        return Err(invalid(
                            "algorithm \"consensus\" needs a `consensus: (name: ...)` service",
                            Some("consensus".into()),
                        ));
                    }
                    if g.retry.is_none() {
                        return Err(invalid(
                            format!(
                                "client group \"{}\" needs `retry`: the delay before retrying",
                                g.name.0
                            ),
                            quoted(&g.name),
                        ));
                    }
                }
                ClientKind::Single(_) | ClientKind::Watchdog => {
                    let Some(node) = &g.node else {
                        return Err(invalid(
                            format!(
                                "client group \"{}\" needs `node`: the Redis node it locks on",
                                g.name.0
                            ),
                            quoted(&g.name),
                        ));
                    };
                    if !known(node) {
                        return Err(invalid(
                            format!(
                                "client group \"{}\" locks on unknown node \"{}\"",
                                g.name.0, node.0
                            ),
                            quoted(node),
                        ));
                    }
                    if g.retry.is_none() {
                        return Err(invalid(
                            format!(
                                "client group \"{}\" needs `retry`: the delay before retrying",
                                g.name.0
                            ),
                            quoted(&g.name),
                        ));
                    }
                }
                ClientKind::Redlock => {
                    if g.nodes.is_empty() {
                        return Err(invalid(
                            format!(
                                "redlock group \"{}\" needs `nodes`: its independent masters",
                                g.name.0
                            ),
                            quoted(&g.name),
                        ));
                    }
                    for (i, n) in g.nodes.iter().enumerate() {
                        if !known(n) {
                            return Err(invalid(
                                format!("redlock locks on unknown node \"{}\"", n.0),
                                quoted(n),
                            ));
                        }
                        if g.nodes[..i].contains(n) {
                            return Err(invalid(
                                format!("node \"{}\" listed twice", n.0),
                                quoted(n),
                            ));
                        }
                    }
                    if let Err(e) = g
                        .redlock
                        .clone()
                        .unwrap_or_default()
                        .options(g.ttl.ns() / NS_PER_MS)
                    {
                        return Err(invalid(e, Some("redlock".into())));
                    }
                }
            }
            if g.ttl.ns() < NS_PER_MS {
                return Err(invalid(
                    format!("ttl {} is below 1ms: Redis refuses PX 0", g.ttl),
                    Some("ttl".into()),
                ));
            }
            if g.ttl.ns() % NS_PER_MS != 0 {
                return Err(invalid(
                    format!("ttl {} is not a whole number of ms (PX takes ms)", g.ttl),
                    Some("ttl".into()),
                ));
            }
            if g.request_timeout.is_some_and(|t| t.ns() == 0) {
                return Err(invalid(
                    "request_timeout must be above 0",
                    Some("request_timeout".into()),
                ));
            }
            if g.retry.is_some_and(|r| r.max.ns() == 0) && g.max_attempts.is_none() {
                return Err(invalid(
                    "retry (\"0ms\", \"0ms\") with unbounded attempts would spin without time passing; give retry a positive delay",
                    Some("retry".into()),
                ));
            }
            if let Some(k) = &g.key
                && (k.is_empty() || k.len() > 512)
            {
                return Err(invalid("key must be 1-512 bytes", Some("key".into())));
            }
            let think_zero = g.think.is_none_or(|t| t.max.ns() == 0);
            if think_zero && g.hold.max.ns() == 0 {
                return Err(invalid(
                    "hold and think both zero: a client would loop without time passing",
                    Some("hold".into()),
                ));
            }
            if g.algorithm.0 == ClientKind::Single(Algorithm::SetPxCadFencing)
                && model.resource.as_ref().is_none_or(|r| !r.fencing)
            {
                return Err(invalid(
                    "algorithm \"set-px-cad-fencing\" needs a `resource` with `fencing: true` to present its tokens to",
                    Some("set-px-cad-fencing".into()),
                ));
            }
            if g.algorithm.0 == ClientKind::Single(Algorithm::SetPxWaitCad) && g.wait.is_none() {
                return Err(invalid(
                    "algorithm \"set-px-wait-cad\" needs `wait: (replicas: N, timeout: \"100ms\")`",
                    Some("set-px-wait-cad".into()),
                ));
            }
            if g.via_sentinels && model.sentinels.is_none() {
                return Err(invalid(
                    "via_sentinels: true needs a `sentinels` section",
                    Some("via_sentinels".into()),
                ));
            }
        }
        for n in &model.nodes {
            if let Some(m) = &n.replica_of {
                if *m == n.name {
                    return Err(invalid(
                        format!("node \"{}\" cannot replicate itself", m.0),
                        quoted(m),
                    ));
                }
                if !model.nodes.iter().any(|x| x.name == *m) {
                    return Err(invalid(
                        format!("replica_of names unknown node \"{}\"", m.0),
                        quoted(m),
                    ));
                }
            }
            if let Some(lag) = n.min_replicas_max_lag
                && (lag.ns() == 0 || lag.ns() % NS_PER_S != 0)
            {
                return Err(invalid(
                    "min_replicas_max_lag is in whole seconds (redis.conf takes seconds), at least 1s",
                    Some("min_replicas_max_lag".into()),
                ));
            }
            if let Some(PersistenceSpec::Rdb { every }) = n.persistence
                && every.ns() < NS_PER_S
            {
                return Err(invalid(
                    "rdb snapshots `every` must be at least 1s",
                    Some("every".into()),
                ));
            }
        }
        if let Some(sp) = &model.sentinels {
            if sp.quorum.0 > sp.count.0 {
                return Err(invalid(
                    format!(
                        "quorum {} is larger than the {} sentinels",
                        sp.quorum.0, sp.count.0
                    ),
                    Some("quorum".into()),
                ));
            }
            match model.nodes.iter().find(|n| n.name == sp.monitor) {
                None => {
                    return Err(invalid(
                        format!("sentinels monitor unknown node \"{}\"", sp.monitor.0),
                        quoted(&sp.monitor),
                    ));
                }
                Some(n) if n.replica_of.is_some() => {
                    return Err(invalid(
                        "sentinels must monitor the master, not a replica",
                        quoted(&sp.monitor),
                    ));
                }
                Some(_) => {}
            }
            let base = sp.name.clone().unwrap_or_else(|| Name("s".into()));
            for i in 1..=sp.count.0 {
                add(
                    &Name(format!("{}{i}", base.0)),
                    ProcKind::Sentinel,
                    &mut procs,
                )?;
            }
        }
        if let Some(c) = &model.consensus {
            add(&c.name, ProcKind::Consensus, &mut procs)?;
        }
        let lookup = |n: &Name| -> Result<(), Invalid> {
            if procs.iter().any(|(p, _)| *p == n.0) {
                Ok(())
            } else {
                Err(invalid(format!("unknown process \"{}\"", n.0), quoted(n)))
            }
        };
        let n_faults = model.faults.len() + model.random_faults.len();
        if n_faults > MAX_FAULTS {
            return Err(invalid(
                format!("{n_faults} faults: at most {MAX_FAULTS} allowed"),
                Some("faults".into()),
            ));
        }
        for f in &model.faults {
            match f {
                FaultSpec::Pause { target, .. }
                | FaultSpec::Crash { target, .. }
                | FaultSpec::ClockStep { target, .. }
                | FaultSpec::Drift { target, .. } => lookup(target)?,
                FaultSpec::Partition { from, to, .. }
                | FaultSpec::LatencySpike { from, to, .. }
                | FaultSpec::Loss { from, to, .. } => {
                    for n in from.iter().chain(to) {
                        lookup(n)?;
                    }
                }
            }
        }
        for t in &model.triggers {
            match t {
                TriggerSpec::PauseBeforeSend { targets, .. }
                | TriggerSpec::PauseAfterAcquire { targets, .. }
                | TriggerSpec::PauseAfterRead { targets, .. }
                | TriggerSpec::PartitionAfterAcquire { targets, .. }
                | TriggerSpec::ClockStepAfterGrant { targets, .. } => {
                    for n in targets {
                        lookup(n)?;
                    }
                }
                TriggerSpec::CrashAfterGrant {
                    targets,
                    isolate_from,
                    ..
                } => {
                    for n in targets.iter().chain(isolate_from) {
                        lookup(n)?;
                    }
                }
                TriggerSpec::DelayRepliesAfterAttempt { targets, from, .. } => {
                    for n in targets.iter().chain(from) {
                        lookup(n)?;
                    }
                }
            }
        }
        let swarm_faults = model.swarm.as_ref().map_or(&[][..], |s| &s.faults[..]);
        for f in model.random_faults.iter().chain(swarm_faults) {
            let (RandomFaultSpec::Pause { targets, every, .. }
            | RandomFaultSpec::Crash { targets, every, .. }
            | RandomFaultSpec::ClockStep { targets, every, .. }
            | RandomFaultSpec::Partition { targets, every, .. }) = f;
            for n in targets {
                lookup(n)?;
            }
            if every.min.ns() < NS_PER_MS {
                return Err(invalid(
                    "`every` must be at least 1ms (faults need time between them)",
                    Some("every".into()),
                ));
            }
            if model.duration.ns() / every.min.ns() > MAX_RANDOM_FAULTS_PER_TARGET {
                return Err(invalid(
                    format!(
                        "`every` minimum {} over a {} run could draw more than {MAX_RANDOM_FAULTS_PER_TARGET} faults per target",
                        every.min, model.duration
                    ),
                    Some("every".into()),
                ));
            }
        }
        if model.check.is_empty() {
            return Err(invalid("`check` names no property", Some("check".into())));
        }
        let mut properties: Vec<Property> = model.check.iter().map(|p| p.0).collect();
        properties.sort();
        properties.dedup();
        if let Some(Expect::Violates(v)) = &model.expect {
            if v.is_empty() {
                return Err(invalid(
                    "expect: violates([]) names no property; write `expect: holds`",
                    Some("violates".into()),
                ));
            }
            for p in v {
                if !properties.contains(&p.0) {
                    return Err(invalid(
                        format!("expect names {} but `check` does not", p.0),
                        Some(format!("\"{}\"", p.0)),
                    ));
                }
            }
        }
        for (i, h) in model.witness.iter().enumerate() {
            if model.witness[..i].contains(h) {
                return Err(invalid(
                    format!("witness names {} twice", h.0),
                    Some("witness".into()),
                ));
            }
        }
        let max_ttl = model.clients.iter().map(|g| g.ttl.ns()).max().unwrap_or(0);
        let liveness_bound_ns = model
            .liveness_bound
            .map_or(3 * max_ttl.max(NS_PER_S), |d| d.ns());
        let limits = Limits {
            max_time: SimTime(model.duration.ns()),
            max_events: model.max_events.map_or(DEFAULT_MAX_EVENTS, |b| b.0 as u64),
        };
        if model.duration.ns() == 0 {
            return Err(invalid("duration must be above 0", Some("duration".into())));
        }
        let epoch_unix_ms = model.epoch_unix_ms.map_or(DEFAULT_EPOCH_UNIX_MS, |b| b.0);
        Ok(Scenario {
            name,
            path,
            model,
            procs,
            properties,
            liveness_bound_ns,
            limits,
            epoch_unix_ms,
            replay_flags: String::new(),
            fault_keep: Ratio::ALWAYS,
        })
    }

    pub fn proc_id(&self, name: &str) -> ProcId {
        ProcId(
            self.procs
                .iter()
                .position(|(n, _)| n == name)
                .expect("validated name") as u32,
        )
    }

    fn clock(&self, spec: &ClockSpec) -> NodeClock {
        let offset_ms = spec.offset.map_or(0, |o| o.ms());
        NodeClock::new(
            self.epoch_unix_ms,
            offset_ms,
            spec.drift_ppm.map_or(0, |d| d.0),
        )
    }

    /// Builds the world for `seed`: processes, network, scripted faults and the random
    /// faults this seed draws (returned as the realised schedule).
    pub fn build(&self, seed: u64, trace: TraceMode) -> (World, Vec<(SimTime, FaultAction)>) {
        self.build_with(seed, trace, None)
    }

    /// Like `build`, but every client is made by `custom` from the configuration the model
    /// gives it: run your own lock algorithm in the model's world (nodes, resource, network,
    /// faults) on the same engine. See docs/custom-algorithm.md.
    pub fn build_with(
        &self,
        seed: u64,
        trace: TraceMode,
        custom: Option<&ClientFactory>,
    ) -> (World, Vec<(SimTime, FaultAction)>) {
        let m = &self.model;
        let mut specs = Vec::with_capacity(self.procs.len());
        let peers: Vec<(crate::proto::Bytes, ProcId)> = m
            .nodes
            .iter()
            .map(|n| {
                (
                    crate::proto::Bytes::from(n.name.0.as_str()),
                    self.proc_id(&n.name.0),
                )
            })
            .collect();
        for n in &m.nodes {
            let config = RedisConfig {
                observe_keys: true,
                name: crate::proto::Bytes::from(n.name.0.as_str()),
                peers: peers.clone(),
                replica_of: n.replica_of.as_ref().map(|r| self.proc_id(&r.0)),
                min_replicas_to_write: n.min_replicas_to_write.map_or(0, |b| b.0 as u32),
                min_replicas_max_lag_s: n.min_replicas_max_lag.map_or(10, |d| d.ns() / NS_PER_S),
                relative_ttl_propagation: n.relative_ttl_propagation,
                persistence: match n.persistence {
                    None | Some(PersistenceSpec::None) => Persistence::None,
                    Some(PersistenceSpec::Rdb { every }) => Persistence::Rdb {
                        every_ns: every.ns(),
                    },
                    Some(PersistenceSpec::Aof { fsync }) => Persistence::Aof(match fsync {
                        FsyncSpec::Always => Fsync::Always,
                        FsyncSpec::Everysec => Fsync::EverySec,
                        FsyncSpec::No => Fsync::No,
                    }),
                },
            };
            specs.push(ProcSpec {
                name: n.name.0.clone(),
                actor: Actor::Redis(Box::new(RedisProcess::new(config))),
                clock: self.clock(&n.clock),
            });
        }
        let sentinel_ids: Vec<ProcId> = self
            .procs
            .iter()
            .enumerate()
            .filter(|(_, (_, k))| *k == ProcKind::Sentinel)
            .map(|(i, _)| ProcId(i as u32))
            .collect();
        let resource_id = m.resource.as_ref().map(|r| {
            specs.push(ProcSpec {
                name: r.name.0.clone(),
                actor: Actor::Resource(Resource::new(r.fencing)),
                clock: NodeClock::perfect(self.epoch_unix_ms),
            });
            ProcId((specs.len() - 1) as u32)
        });
        let mut keys: Vec<crate::proto::Bytes> = Vec::new();
        for g in &m.clients {
            let count = g.count.map_or(1, |c| c.0);
            let key =
                crate::proto::Bytes::from_slice(g.key.as_deref().unwrap_or("lock").as_bytes());
            let lock = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    keys.push(key.clone());
                    keys.len() - 1
                }
            } as u32;
            for i in 1..=count {
                let name = if count == 1 {
                    g.name.0.clone()
                } else {
                    format!("{}{i}", g.name.0)
                };
                let algorithm = match g.algorithm.0 {
                    ClientKind::Single(a) => a,
                    ClientKind::Watchdog => {
                        let w = g.watchdog.unwrap_or_default();
                        let retry = g.retry.expect("validated");
                        let mut config = WatchdogConfig::new(
                            lock,
                            key.clone(),
                            self.proc_id(&g.node.as_ref().expect("validated").0),
                            &name,
                        );
                        config.resource = resource_id;
                        config.lease_ms = g.ttl.ns() / NS_PER_MS;
                        config.renew_every_ms = w
                            .renew_every
                            .map_or(config.lease_ms / 3, |d| d.ns() / NS_PER_MS)
                            .max(1);
                        config.report_renewal_failure = w.report_renewal_failure;
                        config.hold = NsRange::new(g.hold.min.ns(), g.hold.max.ns());
                        config.think = g
                            .think
                            .map_or(NsRange::fixed(0), |t| NsRange::new(t.min.ns(), t.max.ns()));
                        config.retry = NsRange::new(retry.min.ns(), retry.max.ns());
                        if let Some(t) = g.request_timeout {
                            config.request_timeout_ns = t.ns();
                        }
                        config.rounds = g.rounds.map(|b| b.0 as u64);
                        specs.push(ProcSpec {
                            name,
                            actor: Actor::Watchdog(Box::new(WatchdogClient::new(config))),
                            clock: self.clock(&g.clock),
                        });
                        continue;
                    }
                    ClientKind::Consensus => {
                        let service =
                            self.proc_id(&m.consensus.as_ref().expect("validated").name.0);
                        let retry = g.retry.expect("validated");
                        let mut config = ConsensusClientConfig::new(lock, service, &name);
                        config.resource = resource_id;
                        config.session_timeout_ms = g.ttl.ns() / NS_PER_MS;
                        config.hold = NsRange::new(g.hold.min.ns(), g.hold.max.ns());
                        config.think = g
                            .think
                            .map_or(NsRange::fixed(0), |t| NsRange::new(t.min.ns(), t.max.ns()));
                        config.retry = NsRange::new(retry.min.ns(), retry.max.ns());
                        if let Some(t) = g.request_timeout {
                            config.request_timeout_ns = t.ns();
                        }
                        config.present_token = g.present_token.unwrap_or(true);
                        config.rounds = g.rounds.map(|b| b.0 as u64);
                        specs.push(ProcSpec {
                            name,
                            actor: Actor::ConsensusClient(Box::new(ConsensusClient::new(config))),
                            clock: self.clock(&g.clock),
                        });
                        continue;
                    }
                    ClientKind::Redlock => {
                        let options = g
                            .redlock
                            .clone()
                            .unwrap_or_default()
                            .options(g.ttl.ns() / NS_PER_MS)
                            .expect("validated");
                        let config = RedlockConfig {
                            lock,
                            key: key.clone(),
                            nodes: g.nodes.iter().map(|n| self.proc_id(&n.0)).collect(),
                            resource: resource_id,
                            hold: NsRange::new(g.hold.min.ns(), g.hold.max.ns()),
                            think: g.think.map_or(NsRange::fixed(0), |t| {
                                NsRange::new(t.min.ns(), t.max.ns())
                            }),
                            rounds: g.rounds.map(|b| b.0 as u64),
                            token_prefix: name.clone(),
                            options,
                        };
                        specs.push(ProcSpec {
                            name,
                            actor: Actor::Redlock(Box::new(RedlockClient::new(config))),
                            clock: self.clock(&g.clock),
                        });
                        continue;
                    }
                };
                let retry = g.retry.expect("validated");
                let cfg = ClientConfig {
                    algorithm,
                    lock,
                    key: key.clone(),
                    redis: self.proc_id(&g.node.as_ref().expect("validated").0),
                    resource: resource_id,
                    ttl_ms: g.ttl.ns() / NS_PER_MS,
                    hold: NsRange::new(g.hold.min.ns(), g.hold.max.ns()),
                    think: g
                        .think
                        .map_or(NsRange::fixed(0), |t| NsRange::new(t.min.ns(), t.max.ns())),
                    retry: NsRange::new(retry.min.ns(), retry.max.ns()),
                    request_timeout_ns: g.request_timeout.map_or(NS_PER_S, |d| d.ns()),
                    max_attempts: g.max_attempts.map(|b| b.0 as u32),
                    rounds: g.rounds.map(|b| b.0 as u64),
                    fence_key: crate::proto::Bytes::from_slice(b"fence"),
                    token_prefix: name.clone(),
                    sentinels: if g.via_sentinels {
                        sentinel_ids.clone()
                    } else {
                        Vec::new()
                    },
                    wait_replicas: g.wait.map_or(0, |w| w.replicas.0 as u32),
                    wait_timeout_ms: g.wait.map_or(0, |w| w.timeout.ns() / NS_PER_MS),
                };
                let actor = match custom {
                    Some(make) => Actor::Custom(make(&cfg)),
                    None => Actor::Client(Box::new(LockClient::new(cfg))),
                };
                specs.push(ProcSpec {
                    name,
                    actor,
                    clock: self.clock(&g.clock),
                });
            }
        }
        if let Some(sp) = &m.sentinels {
            let nodes: Vec<(ProcId, String, u32)> = m
                .nodes
                .iter()
                .map(|n| {
                    (
                        self.proc_id(&n.name.0),
                        n.name.0.clone(),
                        n.priority.map_or(100, |p| p.0 as u32),
                    )
                })
                .collect();
            for &id in &sentinel_ids {
                let config = SentinelConfig {
                    sentinels: sentinel_ids.clone(),
                    nodes: nodes.clone(),
                    initial_master: self.proc_id(&sp.monitor.0),
                    quorum: sp.quorum.0 as usize,
                    down_after_ns: sp.down_after.map_or(30 * NS_PER_S, |d| d.ns()),
                    failover_timeout_ns: sp.failover_timeout.map_or(180 * NS_PER_S, |d| d.ns()),
                    ping_period_ns: NS_PER_S,
                };
                debug_assert_eq!(id.index(), specs.len());
                specs.push(ProcSpec {
                    name: self.procs[id.index()].0.clone(),
                    actor: Actor::Sentinel(Box::new(Sentinel::new(config))),
                    clock: NodeClock::perfect(self.epoch_unix_ms),
                });
            }
        }
        if let Some(c) = &m.consensus {
            let mut config = ConsensusServiceConfig::default();
            if let Some(t) = c.tick {
                config.tick_ms = (t.ns() / NS_PER_MS).max(1);
            }
            specs.push(ProcSpec {
                name: c.name.0.clone(),
                actor: Actor::ConsensusService(Box::new(ConsensusService::new(config))),
                clock: NodeClock::perfect(self.epoch_unix_ms),
            });
        }
        assert_eq!(
            specs.len(),
            self.procs.len(),
            "every named process is built"
        );
        let link = LinkSpec::new(
            m.network.latency.min.ns(),
            m.network.latency.max.ns(),
            Ratio::per_million(m.network.loss_ppm.map_or(0, |b| b.0 as u32)).expect("bounded"),
        );
        let mut world = World::new(Seed(seed), self.limits, link, specs, trace);
        let schedule = self.fault_schedule(seed);
        for (at, f) in &schedule {
            world.schedule_fault(*at, f.clone());
        }
        for (i, t) in self.model.triggers.iter().enumerate() {
            world.add_trigger(self.trigger(t, Seed(seed), i as u64));
        }
        (world, schedule)
    }

    fn trigger(&self, t: &TriggerSpec, seed: Seed, index: u64) -> Trigger {
        let (chance, max) = match t {
            TriggerSpec::PauseBeforeSend {
                chance_ppm, max, ..
            }
            | TriggerSpec::PauseAfterAcquire {
                chance_ppm, max, ..
            }
            | TriggerSpec::PauseAfterRead {
                chance_ppm, max, ..
            }
            | TriggerSpec::PartitionAfterAcquire {
                chance_ppm, max, ..
            }
            | TriggerSpec::DelayRepliesAfterAttempt {
                chance_ppm, max, ..
            }
            | TriggerSpec::ClockStepAfterGrant {
                chance_ppm, max, ..
            }
            | TriggerSpec::CrashAfterGrant {
                chance_ppm, max, ..
            } => (chance_ppm, max),
        };
        let kind = match t {
            TriggerSpec::PauseBeforeSend {
                targets,
                message,
                duration,
                ..
            } => TriggerKind::PauseBeforeSend {
                targets: self.ids(targets),
                message: match message {
                    MessageSpec::ResourceWrite => SendKind::ResourceWrite,
                    MessageSpec::Del => SendKind::Del,
                },
                pause_ns: (duration.min.ns(), duration.max.ns()),
            },
            TriggerSpec::PauseAfterAcquire {
                targets, duration, ..
            } => TriggerKind::PauseAfterAcquire {
                targets: self.ids(targets),
                pause_ns: (duration.min.ns(), duration.max.ns()),
            },
            TriggerSpec::PauseAfterRead {
                targets, duration, ..
            } => TriggerKind::PauseAfterRead {
                targets: self.ids(targets),
                pause_ns: (duration.min.ns(), duration.max.ns()),
            },
            TriggerSpec::PartitionAfterAcquire {
                targets, duration, ..
            } => TriggerKind::PartitionAfterAcquire {
                targets: self.ids(targets),
                cut_ns: (duration.min.ns(), duration.max.ns()),
                n_procs: self.procs.len() as u32,
            },
            TriggerSpec::DelayRepliesAfterAttempt {
                targets,
                from,
                delay,
                window,
                ..
            } => TriggerKind::DelayRepliesAfterAttempt {
                targets: self.ids(targets),
                from: self.ids(from),
                delay_ns: (delay.min.ns(), delay.max.ns()),
                window_ns: window.map_or(100 * NS_PER_MS, |w| w.ns()),
            },
            TriggerSpec::ClockStepAfterGrant { targets, delta, .. } => {
                TriggerKind::ClockStepAfterGrant {
                    targets: self.ids(targets),
                    delta_ms: (delta.min.ms(), delta.max.ms()),
                }
            }

            TriggerSpec::CrashAfterGrant {
                targets,
                isolate_from,
                after,
                restart_after,
                keep_data,
                ..
            } => TriggerKind::CrashAfterGrant {
                targets: self.ids(targets),
                isolate_from: self.ids(isolate_from),
                after_ns: after.map(|a| (a.min.ns(), a.max.ns())),
                restart_after_ns: restart_after.map(|d| d.ns()),
                keep_data: *keep_data,
            },
        };
        Trigger {
            kind,
            chance: Ratio::per_million(chance.map_or(1_000_000, |c| c.0 as u32)).expect("bounded"),
            max_firings: max.map_or(1, |m| m.0 as u32),
            fired: 0,
            keep: self.fault_keep,
            // Its own stream: adding a trigger changes nothing else a seed draws.
            rng: seed.stream("trigger", index),
        }
    }

    /// This seed's swarm: for each swarm entry, `None` (off) or the entry narrowed to the
    /// intensity drawn (a shorter `every` and a larger magnitude within the given ranges).
    pub fn swarm_draw(&self, seed: Seed) -> Vec<Option<RandomFaultSpec>> {
        let Some(sw) = &self.model.swarm else {
            return Vec::new();
        };
        let enable =
            Ratio::per_million(sw.enable_ppm.map_or(500_000, |b| b.0 as u32)).expect("bounded");
        let mut rng = seed.stream("swarm", 0);
        let narrow = |rng: &mut crate::rng::Prng, r: DurRange| -> DurRange {
            DurRange {
                min: r.min,
                max: Dur(rng.range_inclusive(r.min.ns(), r.max.ns())),
            }
        };
        sw.faults
            .iter()
            .map(|f| {
                // Draw every entry's values whether on or off, so that one entry's switch
                // does not shift what the others draw.
                let on = rng.chance(enable);
                let every = |rng: &mut crate::rng::Prng, e: DurRange| {
                    // Busier = a shorter upper bound of the gap between faults.
                    DurRange {
                        min: e.min,
                        max: Dur(rng.range_inclusive(e.min.ns(), e.max.ns())),
                    }
                };
                let drawn = match f {
                    RandomFaultSpec::Pause {
                        targets,
                        every: e,
                        duration,
                    } => RandomFaultSpec::Pause {
                        targets: targets.clone(),
                        every: every(&mut rng, *e),
                        duration: narrow(&mut rng, *duration),
                    },
                    RandomFaultSpec::Crash {
                        targets,
                        every: e,
                        down,
                        keep_data,
                    } => RandomFaultSpec::Crash {
                        targets: targets.clone(),
                        every: every(&mut rng, *e),
                        down: narrow(&mut rng, *down),
                        keep_data: *keep_data,
                    },
                    RandomFaultSpec::ClockStep {
                        targets,
                        every: e,
                        delta,
                    } => {
                        let e = every(&mut rng, *e);
                        let hi = rng.range_i64(delta.min.0.max(0).min(delta.max.0), delta.max.0);
                        let lo = rng.range_i64(delta.min.0, delta.max.0.min(0).max(delta.min.0));
                        RandomFaultSpec::ClockStep {
                            targets: targets.clone(),
                            every: e,
                            delta: SignedDurRange {
                                min: SignedDur(lo.min(hi)),
                                max: SignedDur(hi.max(lo)),
                            },
                        }
                    }
                    RandomFaultSpec::Partition {
                        targets,
                        every: e,
                        duration,
                    } => RandomFaultSpec::Partition {
                        targets: targets.clone(),
                        every: every(&mut rng, *e),
                        duration: narrow(&mut rng, *duration),
                    },
                };
                on.then_some(drawn)
            })
            .collect()
    }

    /// The swarm configuration a seed drew, in words (empty without a swarm).
    pub fn swarm_text(&self, seed: u64) -> Vec<String> {
        self.swarm_draw(Seed(seed))
            .iter()
            .zip(self.model.swarm.iter().flat_map(|s| s.faults.iter()))
            .map(|(d, f)| {
                let kind = match f {
                    RandomFaultSpec::Pause { .. } => "pause",
                    RandomFaultSpec::Crash { .. } => "crash",
                    RandomFaultSpec::ClockStep { .. } => "clock_step",
                    RandomFaultSpec::Partition { .. } => "partition",
                };
                match d {
                    None => format!("{kind}: off"),
                    Some(RandomFaultSpec::Pause {
                        every, duration, ..
                    }) => {
                        format!(
                            "{kind}: every {}..{}, {}..{}",
                            every.min, every.max, duration.min, duration.max
                        )
                    }
                    Some(RandomFaultSpec::Crash { every, down, .. }) => {
                        format!(
                            "{kind}: every {}..{}, down {}..{}",
                            every.min, every.max, down.min, down.max
                        )
                    }
                    Some(RandomFaultSpec::ClockStep { every, delta, .. }) => format!(
                        "{kind}: every {}..{}, delta {}..{}",
                        every.min,
                        every.max,
                        crate::cli::fmt_signed_ns(delta.min.0),
                        crate::cli::fmt_signed_ns(delta.max.0)
                    ),
                    Some(RandomFaultSpec::Partition {
                        every, duration, ..
                    }) => {
                        format!(
                            "{kind}: every {}..{}, {}..{}",
                            every.min, every.max, duration.min, duration.max
                        )
                    }
                }
            })
            .collect()
    }

    /// Faults one random entry draws over the run: one stream per (entry, target), so removing
    /// an entry or a target does not change what the others draw.
    fn random_faults(
        &self,
        f: &RandomFaultSpec,
        prefix: &str,
        i: u64,
        seed: Seed,
        out: &mut Vec<(SimTime, FaultAction)>,
    ) {
        let end = self.limits.max_time;
        let (kind, targets, every) = match f {
            RandomFaultSpec::Pause { targets, every, .. } => ("pause", targets, every),
            RandomFaultSpec::Crash { targets, every, .. } => ("crash", targets, every),
            RandomFaultSpec::ClockStep { targets, every, .. } => ("clock-step", targets, every),
            RandomFaultSpec::Partition { targets, every, .. } => ("partition", targets, every),
        };
        let stream = format!("{prefix}-{kind}");
        let thin_stream = format!("{prefix}-{kind}-thin");
        for (j, target) in targets.iter().enumerate() {
            let p = self.proc_id(&target.0);
            let mut rng = seed.stream(&stream, (i << 32) | j as u64);
            // Thinning draws from its own stream: a thinned schedule is a subset of the full
            // one, fault for fault, and an unthinned one draws nothing more.
            let mut thin = (self.fault_keep != Ratio::ALWAYS)
                .then(|| seed.stream(&thin_stream, (i << 32) | j as u64));
            let mut t = SimTime::ZERO;
            loop {
                t = t.plus_ns(rng.range_inclusive(every.min.ns(), every.max.ns()));
                if t >= end {
                    break;
                }
                let keep = thin.as_mut().is_none_or(|r| r.chance(self.fault_keep));
                let first = out.len();
                match f {
                    RandomFaultSpec::Pause { duration, .. } => {
                        let d = rng.range_inclusive(duration.min.ns(), duration.max.ns());
                        out.push((t, FaultAction::Pause(p)));
                        t = t.plus_ns(d);
                        out.push((t, FaultAction::Resume(p)));
                    }
                    RandomFaultSpec::Crash {
                        down, keep_data, ..
                    } => {
                        let d = rng.range_inclusive(down.min.ns(), down.max.ns());
                        out.push((t, FaultAction::Crash(p)));
                        t = t.plus_ns(d);
                        out.push((
                            t,
                            FaultAction::Restart {
                                proc: p,
                                keep_data: *keep_data,
                            },
                        ));
                    }
                    RandomFaultSpec::ClockStep { delta, .. } => {
                        let d = rng.range_i64(delta.min.0, delta.max.0) / NS_PER_MS as i64;
                        out.push((
                            t,
                            FaultAction::ClockStep {
                                proc: p,
                                delta_ms: d,
                            },
                        ));
                    }
                    RandomFaultSpec::Partition { duration, .. } => {
                        let d = rng.range_inclusive(duration.min.ns(), duration.max.ns());
                        let n = self.procs.len() as u32;
                        out.extend(FaultAction::isolation(p, n, t, t.plus_ns(d)));
                        t = t.plus_ns(d);
                    }
                }
                if !keep {
                    out.truncate(first);
                }
            }
        }
    }

    fn ids(&self, names: &[Name]) -> Vec<ProcId> {
        names.iter().map(|n| self.proc_id(&n.0)).collect()
    }

    /// Scripted faults plus the random ones this seed draws, in time order.
    pub fn fault_schedule(&self, seed: u64) -> Vec<(SimTime, FaultAction)> {
        let mut out: Vec<(SimTime, FaultAction)> = Vec::new();
        for f in &self.model.faults {
            match f {
                FaultSpec::Pause {
                    target,
                    at,
                    duration,
                } => {
                    let p = self.proc_id(&target.0);
                    out.push((SimTime(at.ns()), FaultAction::Pause(p)));
                    out.push((
                        SimTime(at.ns()).plus_ns(duration.ns()),
                        FaultAction::Resume(p),
                    ));
                }
                FaultSpec::Crash {
                    target,
                    at,
                    restart_after,
                    keep_data,
                } => {
                    let p = self.proc_id(&target.0);
                    out.push((SimTime(at.ns()), FaultAction::Crash(p)));
                    if let Some(d) = restart_after {
                        out.push((
                            SimTime(at.ns()).plus_ns(d.ns()),
                            FaultAction::Restart {
                                proc: p,
                                keep_data: *keep_data,
                            },
                        ));
                    }
                }
                FaultSpec::ClockStep { target, at, delta } => {
                    out.push((
                        SimTime(at.ns()),
                        FaultAction::ClockStep {
                            proc: self.proc_id(&target.0),
                            delta_ms: delta.ms(),
                        },
                    ));
                }
                FaultSpec::Drift { target, at, ppm } => {
                    out.push((
                        SimTime(at.ns()),
                        FaultAction::Drift {
                            proc: self.proc_id(&target.0),
                            drift_ppm: ppm.0,
                        },
                    ));
                }
                FaultSpec::Partition {
                    from,
                    to,
                    at,
                    duration,
                    one_way,
                } => {
                    let (a, b) = (self.ids(from), self.ids(to));
                    let t = SimTime(at.ns());
                    out.push((
                        t,
                        FaultAction::Partition {
                            from: a.clone(),
                            to: b.clone(),
                            blocked: true,
                        },
                    ));
                    if !one_way {
                        out.push((
                            t,
                            FaultAction::Partition {
                                from: b.clone(),
                                to: a.clone(),
                                blocked: true,
                            },
                        ));
                    }
                    if let Some(d) = duration {
                        let h = t.plus_ns(d.ns());
                        out.push((
                            h,
                            FaultAction::Partition {
                                from: a.clone(),
                                to: b.clone(),
                                blocked: false,
                            },
                        ));
                        if !one_way {
                            out.push((
                                h,
                                FaultAction::Partition {
                                    from: b,
                                    to: a,
                                    blocked: false,
                                },
                            ));
                        }
                    }
                }
                FaultSpec::LatencySpike {
                    from,
                    to,
                    at,
                    duration,
                    extra,
                } => {
                    let (a, b) = (self.ids(from), self.ids(to));
                    let t = SimTime(at.ns());
                    out.push((
                        t,
                        FaultAction::LatencySpike {
                            from: a.clone(),
                            to: b.clone(),
                            extra_ns: extra.ns(),
                        },
                    ));
                    out.push((
                        t.plus_ns(duration.ns()),
                        FaultAction::LatencySpike {
                            from: a,
                            to: b,
                            extra_ns: 0,
                        },
                    ));
                }
                FaultSpec::Loss {
                    from,
                    to,
                    at,
                    duration,
                    loss_ppm,
                } => {
                    let (a, b) = (self.ids(from), self.ids(to));
                    let t = SimTime(at.ns());
                    let loss = Ratio::per_million(loss_ppm.0 as u32).expect("bounded");
                    out.push((
                        t,
                        FaultAction::Loss {
                            from: a.clone(),
                            to: b.clone(),
                            loss,
                        },
                    ));
                    let base =
                        Ratio::per_million(self.model.network.loss_ppm.map_or(0, |b| b.0 as u32))
                            .expect("bounded");
                    out.push((
                        t.plus_ns(duration.ns()),
                        FaultAction::Loss {
                            from: a,
                            to: b,
                            loss: base,
                        },
                    ));
                }
            }
        }
        let seed = Seed(seed);
        for (i, f) in self.model.random_faults.iter().enumerate() {
            self.random_faults(f, "fault", i as u64, seed, &mut out);
        }
        for (i, f) in self.swarm_draw(seed).into_iter().enumerate() {
            if let Some(f) = f {
                self.random_faults(&f, "swarm", i as u64, seed, &mut out);
            }
        }
        // Stable sort: faults at the same instant keep their declaration order.
        out.sort_by_key(|(t, _)| *t);
        out
    }
}
