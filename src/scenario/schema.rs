//! The RON model format (docs/model-format.md) as serde reads it: the model's sections and
//! the limits on their sizes. Client groups are `clients.rs`'s, fault entries `faults.rs`'s;
//! what the sections must agree on is `validate.rs`'s.

use serde::Deserialize;

use crate::check::Property;
use crate::check::witness::Hazard;
pub use crate::scenario::clients::{
    AlgName, AlgorithmSpec, ClientGroup, ClientKind, ElapsedClockSpec, ExtendModeSpec, ExtendSpec,
    RedlockSpec, Retrying, WaitSpec, WatchdogSpec,
};
use crate::scenario::faults::{self, FaultEntry};
use crate::scenario::marks::{Mark, Pos};
use crate::scenario::units::{Bounded, ClockSpec, Dur, DurRange, Name};

/// Limits on model sizes: a model beyond them is refused, not run out of memory.
pub const MAX_CLIENTS: usize = 256;
pub const MAX_NODES: usize = 64;
pub const MAX_FAULTS: usize = 10_000;
pub const MAX_EVENTS_LIMIT: u64 = 1_000_000_000;
pub const MAX_RANDOM_FAULTS_PER_TARGET: u64 = 100_000;
/// Faults one run may schedule up front (scripted plus the most its random entries can draw):
/// the schedule and the event queue it fills stay bounded before the run.
pub const MAX_SCHEDULED_FAULTS: u64 = 1_000_000;
/// Firings all triggers of a model may make in one run, together.
pub const MAX_TRIGGER_FIRINGS: i64 = 1_000_000;
pub const DEFAULT_MAX_EVENTS: u64 = 50_000_000;
pub const DEFAULT_EPOCH_UNIX_MS: i64 = 1_700_000_000_000;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// One line for `distlock-sim list`.
    pub description: String,
    /// Simulated time of one run.
    pub duration: Pos<Dur>,
    #[serde(default)]
    pub max_events: Option<Bounded<1, 1_000_000_000>>,
    /// Unix time (ms) at true time 0.
    #[serde(default)]
    pub epoch_unix_ms: Option<Bounded<0, 4_102_444_800_000>>,
    /// Redis nodes (may be empty when every client uses the consensus service).
    #[serde(default)]
    pub nodes: Pos<Vec<NodeSpec>>,
    #[serde(default)]
    pub resource: Option<ResourceSpec>,
    pub clients: Pos<Vec<ClientGroup>>,
    #[serde(default)]
    pub sentinels: Option<SentinelSpec>,
    #[serde(default)]
    pub consensus: Option<ConsensusSpec>,
    #[serde(default)]
    pub network: NetworkSpec,
    /// Faults at an instant (`scenario::faults`: one entry shape for every list).
    #[serde(default, deserialize_with = "faults::scripted")]
    pub faults: Vec<FaultEntry>,
    /// Faults drawn per seed.
    #[serde(default, deserialize_with = "faults::random")]
    pub random_faults: Vec<FaultEntry>,
    /// Faults fired by protocol events (triggered adversaries).
    #[serde(default, deserialize_with = "faults::triggered")]
    pub triggers: Vec<FaultEntry>,
    #[serde(default)]
    pub swarm: Option<SwarmSpec>,
    /// Properties to check.
    pub check: Pos<Vec<PropName>>,
    /// `liveness`: how long the lock may stay unobtainable while wanted (default 3 × TTL).
    #[serde(default)]
    pub liveness_bound: Option<Pos<Dur>>,
    /// `release_returns`: how long a client's unlock call may take before it counts as stuck
    /// (default 10 s).
    #[serde(default)]
    pub release_within: Option<Pos<Dur>>,
    #[serde(default)]
    pub expect: Option<Expect>,
    /// Hazards the model must reach (`check::witness`): a sweep in which none of its seeds
    /// reached one of them, and nothing was violated, is vacuous rather than holding.
    #[serde(default)]
    pub witness: Vec<HazardName>,
    /// The same model with a few fields changed (the fix, say), shown beside it on the same
    /// seed: read from the text by `scenario::variants` (here only accepted).
    #[serde(default)]
    pub variants: Vec<serde::de::IgnoredAny>,
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
    pub persistence: Option<Pos<PersistenceSpec>>,
    /// `min-replicas-to-write` (0: off).
    #[serde(default)]
    pub min_replicas_to_write: Option<Bounded<0, 64>>,
    /// `min-replicas-max-lag` (whole seconds; default 10s).
    #[serde(default)]
    pub min_replicas_max_lag: Option<Pos<Dur>>,
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
    pub count: Pos<Bounded<1, 16>>,
    pub quorum: Pos<Bounded<1, 16>>,
    /// The master they monitor.
    pub monitor: Name,
    /// `down-after-milliseconds` (default 30s).
    #[serde(default)]
    pub down_after: Option<Pos<Dur>>,
    /// `failover-timeout` (default 180s).
    #[serde(default)]
    pub failover_timeout: Option<Pos<Dur>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    pub name: Name,
    #[serde(default)]
    pub fencing: bool,
}

/// A property name, checked where it is read. The mark is not part of its identity.
#[derive(Clone, Copy, Debug)]
pub struct PropName(pub Property, pub Mark);

impl PartialEq for PropName {
    fn eq(&self, other: &PropName) -> bool {
        self.0 == other.0
    }
}
impl Eq for PropName {}
impl PartialOrd for PropName {
    fn partial_cmp(&self, other: &PropName) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for PropName {
    fn cmp(&self, other: &PropName) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl<'de> Deserialize<'de> for PropName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mark = Mark::take()?;
        let s = String::deserialize(d)?;
        Property::from_name(&s)
            .map(|p| PropName(p, mark))
            .ok_or_else(|| {
                let names: Vec<_> = Property::ALL.iter().map(|p| p.name()).collect();
                let hint = crate::scenario::units::closest_name(&s, names.iter().copied())
                    .map_or(String::new(), |n| format!(" (did you mean {n:?}?)"));
                serde::de::Error::custom(format!(
                    "unknown property {s:?}{hint}; known: {}",
                    names.join(", ")
                ))
            })
    }
}

/// A hazard name (`witness: [...]`), checked where it is read. The mark is not part of its
/// identity.
#[derive(Clone, Copy, Debug)]
pub struct HazardName(pub Hazard, pub Mark);

impl PartialEq for HazardName {
    fn eq(&self, other: &HazardName) -> bool {
        self.0 == other.0
    }
}
impl Eq for HazardName {}

impl<'de> Deserialize<'de> for HazardName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mark = Mark::take()?;
        let s = String::deserialize(d)?;
        Hazard::from_name(&s)
            .map(|h| HazardName(h, mark))
            .ok_or_else(|| {
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
    crate::scenario::units::closest_name(s, Hazard::ALL.iter().map(|h| h.name()))
}

/// The consensus lock service (one logical, linearizable process).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsensusSpec {
    pub name: Name,
    /// How often it checks for expired sessions (ZooKeeper's tickTime; default 2 s, zoo_sample.cfg's value — ZooKeeper's code default is 3 s, `ZooKeeperServer.DEFAULT_TICK_TIME`).
    #[serde(default)]
    pub tick: Option<Dur>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// One-way delay per message, drawn uniformly.
    pub latency: Pos<DurRange>,
    #[serde(default)]
    pub loss_ppm: Option<Bounded<0, 1_000_000>>,
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec {
            latency: Pos::new(DurRange {
                min: Dur(100_000),
                max: Dur(1_000_000),
            }),
            loss_ppm: None,
        }
    }
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
    #[serde(deserialize_with = "faults::random")]
    pub faults: Vec<FaultEntry>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Holds,
    Violates(Vec<PropName>),
}
