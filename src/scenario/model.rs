//! The RON model format (docs/model-format.md) and its lowering into a `World`.

use serde::Deserialize;

use crate::check::monitor::{Judgement, Monitor};
use crate::check::witness::Hazard;
use crate::check::{Checks, Property, Violation};
use crate::client::consensus::{ConsensusService, ConsensusServiceConfig};
use crate::client::{ClientConfig, Resource};
use crate::clock::NodeClock;
use crate::net::LinkSpec;
use crate::proto::Bytes;
use crate::redis::node::{Fsync, Persistence};
use crate::redis::sentinel::{Sentinel, SentinelConfig};
use crate::redis::{RedisConfig, RedisProcess};
use crate::rng::{Ratio, Seed};
pub use crate::scenario::clients::{
    AlgName, AlgorithmSpec, ClientGroup, ClientKind, ElapsedClockSpec, ExtendModeSpec, ExtendSpec,
    RedlockSpec, Retrying, WaitSpec, WatchdogSpec,
};
use crate::scenario::faults::{self, FaultEntry, KindSpec, Span, Target, When};
use crate::scenario::marks::{Mark, Pos};
use crate::scenario::units::{Bounded, Dur, DurRange, Name, SignedDur};
use crate::sim::adversary::Trigger;
use crate::sim::{Actor, Fault, Limits, ProcSpec, TraceMode, World};
use crate::time::{NS_PER_MS, NS_PER_S, ProcId, SimTime};

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
    /// The command that runs this tool, as printed replay lines begin: `distlock-sim` unless
    /// the command line says how it was invoked (`cli::program_for_replay`). Generated docs
    /// keep the default, so that they do not name one machine's paths.
    pub replay_program: String,
    /// Each random fault and each trigger firing applies with this chance (`--sparser K`:
    /// 1/K); the rest of the schedule is drawn as if all applied.
    pub fault_keep: Ratio,
    /// The model's variants, each checked to load (`scenario::variants`); empty for a model
    /// built from a typed model rather than read from its text.
    pub variants: Vec<crate::scenario::variants::Variant>,
}

/// A validation error before positions are attached: the message, and where it is.
#[derive(Clone, Debug)]
pub struct Invalid {
    pub message: String,
    pub at: Locator,
}

/// Where an error is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Locator {
    /// At the value (or field name) read with this mark: found from the parser's span.
    Mark(Mark),
    /// Near the first occurrence of this text outside comments: the old way, for sites not
    /// yet given a mark. It can land inside a description string; prefer `Mark`.
    Text(String),
    /// At the start of the file (a value made by code, or a model without the field).
    Nowhere,
}

impl From<Mark> for Locator {
    fn from(m: Mark) -> Locator {
        if m.is_none() {
            Locator::Nowhere
        } else {
            Locator::Mark(m)
        }
    }
}

/// The first name a list repeats.
fn first_repeat(names: &[Name]) -> Option<&Name> {
    names
        .iter()
        .enumerate()
        .find_map(|(i, n)| names[..i].contains(n).then_some(n))
}

impl From<Option<String>> for Locator {
    fn from(near: Option<String>) -> Locator {
        near.map_or(Locator::Nowhere, Locator::Text)
    }
}

pub(crate) fn invalid(message: impl Into<String>, at: impl Into<Locator>) -> Invalid {
    Invalid {
        message: message.into(),
        at: at.into(),
    }
}

/// Where a name was read (or, for a name made by code, its text quoted as in the file).
pub(crate) fn quoted(n: &Name) -> Locator {
    if n.1.is_none() {
        Locator::Text(format!("\"{}\"", n.0))
    } else {
        Locator::Mark(n.1)
    }
}

/// Why `p` cannot be violated in `model` whatever the faults do, if it cannot: a check that
/// cannot fail reads as a guarantee the model never tested.
fn vacuous(model: &Model, p: Property, liveness_bound_ns: u64) -> Option<String> {
    // Clients per lock key: a lock needs two clients to be contended.
    let mut per_key: Vec<(Bytes, i64, i64)> = Vec::new();
    for g in model.clients.iter() {
        let k = g.key_bytes();
        let deleters = if g.kind().deletes_keys() {
            g.count()
        } else {
            0
        };
        match per_key.iter_mut().find(|(x, _, _)| *x == k) {
            Some(e) => {
                e.1 += g.count();
                e.2 += deleters;
            }
            None => per_key.push((k, g.count(), deleters)),
        }
    }
    let clients: i64 = per_key.iter().map(|e| e.1).sum();
    match p {
        Property::MutualExclusion => per_key
            .iter()
            .all(|e| e.1 < 2)
            .then(|| "no lock key is used by two clients, so no two can hold one lock".into()),
        Property::ForeignUnlock => per_key.iter().all(|e| e.2 < 2).then(|| {
            "no lock key is used by two clients that delete Redis keys (consensus clients never do)"
                .into()
        }),
        Property::ResourceSafety => match &model.resource {
            None => Some("there is no `resource`".into()),
            Some(_) if clients < 2 => Some("one client cannot interleave with another".into()),
            Some(_) => None,
        },
        Property::FencingMonotonic => match &model.resource {
            None => Some("there is no `resource`".into()),
            // The resource admits a token only if none higher was accepted before, and keeps
            // that across restarts: exactly what the property looks for, refused.
            Some(r) if r.fencing => Some(
                "the resource checks fencing (`fencing: true`) and so refuses every lower token itself; check `resource_safety`".into(),
            ),
            Some(_) if !model.clients.iter().any(|g| g.presents_tokens()) => {
                Some("no client presents fencing tokens".into())
            }
            Some(_) => None,
        },
        Property::Liveness => (liveness_bound_ns >= model.duration.ns()).then(|| {
            format!(
                "liveness_bound {} is not shorter than the run ({})",
                crate::time::fmt_duration_ns(liveness_bound_ns),
                model.duration
            )
        }),
    }
}

/// What printed replay lines call the tool when nothing says how it was invoked.
pub const DEFAULT_REPLAY_PROGRAM: &str = "distlock-sim";

/// `word` as one shell word: as is when it has only characters no shell treats specially,
/// else in single quotes (a printed command must run as pasted, whatever the path holds).
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

impl Scenario {
    /// The shell command that re-runs `seed` of this scenario as it was run here (path,
    /// adversary and sparsity flags): what every replay line, page and JSON record prints.
    pub fn replay_command(&self, seed: u64) -> String {
        format!(
            "{} replay {} --seed {seed}{}",
            shell_word(&self.replay_program),
            shell_word(&self.path),
            self.replay_flags
        )
    }

    /// This scenario's properties judged over a run of its world, as every command reports
    /// them: processes by name, locks by their key ("lock `lock`"). The world's history must
    /// be kept (`run_world`); a streamed run is judged by its monitor (`violations`).
    pub fn check(&self, w: &World) -> Vec<Violation> {
        let mut checks = Checks::new(&self.properties, self.liveness_bound_ns);
        checks.observe_all(&w.history);
        self.worded(&checks, w)
    }

    /// A monitor of this scenario's properties, to feed a run's records to.
    pub fn monitor(&self) -> Monitor {
        Monitor::new(&self.properties, self.liveness_bound_ns)
    }

    /// The violations a monitor found over a run of `w`, worded as `check` words them.
    pub fn violations(&self, judged: &Judgement, w: &World) -> Vec<Violation> {
        self.worded(&judged.checks, w)
    }

    fn worded(&self, checks: &Checks, w: &World) -> Vec<Violation> {
        let names = w.names();
        let keys = self.lock_keys();
        let lock_name = |l: u32| match keys.get(l as usize) {
            Some(k) => format!("lock `{}`", String::from_utf8_lossy(k)),
            None => format!("lock {l}"),
        };
        checks.violations(w.now(), &|p| names[p.index()].clone(), &lock_name)
    }

    /// The lock keys of the model's client groups, each once (timelines and reports show
    /// their life on every node).
    pub fn lock_keys(&self) -> Vec<Bytes> {
        let mut keys: Vec<Bytes> = Vec::new();
        for g in self.model.clients.iter() {
            let k = g.key_bytes();
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys
    }

    /// Checks cross-references and sizes, and computes the process table.
    pub fn new(name: String, path: String, model: Model) -> Result<Scenario, Invalid> {
        // Each process with the kind it is and a description for collision messages.
        let mut procs: Vec<(String, ProcKind)> = Vec::new();
        let mut what: Vec<String> = Vec::new();
        let mut add = |n: &Name,
                       kind: ProcKind,
                       described: String,
                       procs: &mut Vec<(String, ProcKind)>|
         -> Result<(), Invalid> {
            if let Some(i) = procs.iter().position(|(p, _)| *p == n.0) {
                return Err(invalid(
                    format!(
                        "duplicate process name \"{}\": {described} has the name of {}",
                        n.0, what[i]
                    ),
                    quoted(n),
                ));
            }
            procs.push((n.0.clone(), kind));
            what.push(described);
            Ok(())
        };
        if model.network.latency.max.ns() > crate::net::LATENCY_NS_LIMIT {
            return Err(invalid(
                format!(
                    "network latency {} is above the limit of 1h",
                    model.network.latency.max
                ),
                model.network.latency.mark,
            ));
        }
        if let Some(g) = model
            .clients
            .iter()
            .find(|g| g.kind() != ClientKind::Consensus)
            && model.nodes.is_empty()
        {
            return Err(invalid(
                format!(
                    "algorithm \"{}\" needs a Redis node: `nodes` names none",
                    g.kind().name()
                ),
                model.nodes.mark.or(g.algorithm_mark),
            ));
        }
        if model.nodes.len() > MAX_NODES {
            return Err(invalid(
                format!("{} nodes: at most {MAX_NODES} allowed", model.nodes.len()),
                model.nodes.mark,
            ));
        }
        for n in model.nodes.iter() {
            add(
                &n.name,
                ProcKind::Redis,
                format!("node \"{}\"", n.name.0),
                &mut procs,
            )?;
        }
        if let Some(r) = &model.resource {
            add(
                &r.name,
                ProcKind::Resource,
                format!("the resource \"{}\"", r.name.0),
                &mut procs,
            )?;
        }
        if model.clients.is_empty() {
            return Err(invalid(
                "a model needs at least one client group in `clients`",
                model.clients.mark,
            ));
        }
        let mut total: i64 = 0;
        for g in model.clients.iter() {
            total += g.count();
            if total as usize > MAX_CLIENTS {
                return Err(invalid(
                    format!("{total} clients: at most {MAX_CLIENTS} allowed"),
                    g.count.map_or(g.name.1, |c| c.mark),
                ));
            }
        }
        for g in model.clients.iter() {
            for (i, n) in g.members().iter().enumerate() {
                let described = if g.count() == 1 {
                    format!("client \"{}\"", n.0)
                } else {
                    format!(
                        "client {} of group \"{}\" (count {})",
                        i + 1,
                        g.name.0,
                        g.count()
                    )
                };
                add(n, ProcKind::Client, described, &mut procs)?;
            }
            g.validate(&model)?;
        }
        for n in model.nodes.iter() {
            if let Some(m) = &n.replica_of {
                if *m == n.name {
                    return Err(invalid(
                        format!("node \"{}\" cannot replicate itself", m.0),
                        quoted(m),
                    ));
                }
                let Some(master) = model.nodes.iter().find(|x| x.name == *m) else {
                    return Err(invalid(
                        format!("replica_of names unknown node \"{}\"", m.0),
                        quoted(m),
                    ));
                };
                if let Some(grand) = &master.replica_of {
                    // Follow the chain: back to this node is a cycle, which no node would
                    // ever master; otherwise a chain, which the simulated replica does not
                    // serve (it does not forward the stream it applies).
                    let mut chain = vec![n.name.0.clone(), m.0.clone()];
                    let mut at = master;
                    let cycle = loop {
                        let Some(next) = &at.replica_of else {
                            break false;
                        };
                        chain.push(next.0.clone());
                        if *next == n.name {
                            break true;
                        }
                        match model.nodes.iter().find(|x| x.name == *next) {
                            Some(x) if chain.len() <= model.nodes.len() + 1 => at = x,
                            _ => break false,
                        }
                    };
                    return Err(invalid(
                        if cycle {
                            format!(
                                "replica_of makes a cycle ({}): every node in it is a replica and none is the master",
                                chain.join(" -> ")
                            )
                        } else {
                            format!(
                                "node \"{}\" is a replica of \"{}\", itself a replica of \"{}\": chained replication is not modelled (a replica does not forward its stream); name the master",
                                n.name.0, m.0, grand.0
                            )
                        },
                        quoted(m),
                    ));
                }
            }
            if let Some(lag) = n.min_replicas_max_lag
                && (lag.ns() == 0 || lag.ns() % NS_PER_S != 0)
            {
                return Err(invalid(
                    "min_replicas_max_lag is in whole seconds (redis.conf takes seconds), at least 1s",
                    lag.mark,
                ));
            }
            if let Some(p) = n.persistence
                && let PersistenceSpec::Rdb { every } = p.value
                && every.ns() < NS_PER_S
            {
                return Err(invalid("rdb snapshots `every` must be at least 1s", p.mark));
            }
        }
        if let Some(sp) = &model.sentinels {
            if sp.quorum.0 > sp.count.0 {
                return Err(invalid(
                    format!(
                        "quorum {} is larger than the {} sentinels",
                        sp.quorum.0, sp.count.0
                    ),
                    sp.quorum.mark,
                ));
            }
            for d in [sp.down_after, sp.failover_timeout].into_iter().flatten() {
                if d.ns() == 0 {
                    return Err(invalid(
                        "sentinel timeouts must be above 0 (0 would fail over at every ping)",
                        d.mark,
                    ));
                }
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
            // Generated names are reported at the name they are made from, or at `count`.
            let base = sp
                .name
                .clone()
                .unwrap_or_else(|| Name("s".into(), sp.count.mark));
            for i in 1..=sp.count.0 {
                add(
                    &Name(format!("{}{i}", base.0), base.1),
                    ProcKind::Sentinel,
                    format!("sentinel {i} (named from \"{}\")", base.0),
                    &mut procs,
                )?;
            }
        }
        if let Some(c) = &model.consensus {
            add(
                &c.name,
                ProcKind::Consensus,
                format!("the consensus service \"{}\"", c.name.0),
                &mut procs,
            )?;
        }
        let lookup = |n: &Name| -> Result<(), Invalid> {
            if procs.iter().any(|(p, _)| *p == n.0) {
                Ok(())
            } else {
                Err(invalid(format!("unknown process \"{}\"", n.0), quoted(n)))
            }
        };
        let n_faults = model.faults.len() + model.random_faults.len();
        // The marks of every entry in order (scripted, random, swarm, triggers): a count past
        // the limit is located at the first entry beyond it.
        let swarm_entries = model.swarm.as_ref().map_or(&[][..], |s| &s.faults[..]);
        let entry_marks: Vec<Mark> = model
            .faults
            .iter()
            .chain(&model.random_faults)
            .chain(swarm_entries)
            .chain(&model.triggers)
            .map(FaultEntry::mark)
            .collect();
        let beyond =
            |limit: usize| Locator::Mark(entry_marks.get(limit).copied().unwrap_or(Mark::NONE));
        if n_faults > MAX_FAULTS {
            return Err(invalid(
                format!("{n_faults} faults: at most {MAX_FAULTS} allowed"),
                beyond(MAX_FAULTS),
            ));
        }
        for f in &model.faults {
            for n in f.names() {
                lookup(n)?;
            }
            if let Span::One(Target::Master(m)) = &f.span
                && model.nodes.is_empty()
            {
                return Err(invalid(
                    "a fault aims at \"@master\" but the model has no Redis node",
                    Locator::Mark(*m),
                ));
            }
        }
        for t in &model.triggers {
            for n in t.names() {
                lookup(n)?;
            }
        }
        let swarm_faults = model.swarm.as_ref().map_or(&[][..], |s| &s.faults[..]);
        let n_entries = n_faults + swarm_faults.len() + model.triggers.len();
        if n_entries > MAX_FAULTS {
            return Err(invalid(
                format!(
                    "{n_entries} fault entries (faults, random faults, swarm and triggers): at most {MAX_FAULTS} allowed"
                ),
                beyond(MAX_FAULTS),
            ));
        }
        // An upper bound on the faults a seed can draw, so that the schedule (and the event
        // queue it fills) is bounded before the run, whatever the model says.
        let mut drawable: u64 = model.faults.len() as u64;
        for f in model.random_faults.iter().chain(swarm_faults) {
            let kind = f.name();
            for n in f.names() {
                lookup(n)?;
            }
            if let Some(dup) = first_repeat(f.targets()) {
                return Err(invalid(
                    format!("random {kind} names target \"{}\" twice", dup.0),
                    quoted(dup),
                ));
            }
            if let Span::Links { to, .. } = &f.span
                && let Some(dup) = first_repeat(to)
            {
                return Err(invalid(
                    format!("random {kind} names \"{}\" twice in `to`", dup.0),
                    quoted(dup),
                ));
            }
            if f.targets().is_empty() {
                return Err(invalid(
                    format!("random {kind} has no targets"),
                    Some(kind.into()),
                ));
            }
            if let Some(k) = f.at_once()
                && k.value.0 as usize > f.targets().len()
            {
                return Err(invalid(
                    format!(
                        "random {kind}: at_once {} is more than its {} targets",
                        k.value.0,
                        f.targets().len()
                    ),
                    Locator::Mark(k.mark),
                ));
            }
            let every = f.every().expect("a random entry has `every`");
            let every_at = Locator::Mark(every.mark);
            if every.min.ns() < NS_PER_MS {
                return Err(invalid(
                    "`every` must be at least 1ms (faults need time between them)",
                    every_at,
                ));
            }
            let per_stream = model.duration.ns() / every.min.ns();
            if per_stream > MAX_RANDOM_FAULTS_PER_TARGET {
                return Err(invalid(
                    format!(
                        "`every` minimum {} over a {} run could draw more than {MAX_RANDOM_FAULTS_PER_TARGET} faults per target",
                        every.min, model.duration
                    ),
                    every_at,
                ));
            }
            let per_draw = f.at_once().map_or(1, |k| k.value.0 as u64);
            drawable += (per_stream + 1) * per_draw * f.streams() as u64;
            // Located at the entry that takes the schedule over the limit.
            if drawable > MAX_SCHEDULED_FAULTS {
                return Err(invalid(
                    format!(
                        "the random faults could draw up to {drawable} faults in one run by this entry: at most {MAX_SCHEDULED_FAULTS} allowed (raise `every`, or fewer targets)"
                    ),
                    every_at,
                ));
            }
        }
        for f in model.random_faults.iter().chain(swarm_faults) {
            if let KindSpec::Drift { ppm, .. } = &f.kind
                && ppm.0.0 > ppm.1.0
            {
                return Err(invalid(
                    "drift `ppm` range has its minimum above its maximum",
                    Locator::Mark(ppm.mark),
                ));
            }
            if let KindSpec::Loss { loss_ppm, .. } = &f.kind
                && loss_ppm.0.0 > loss_ppm.1.0
            {
                return Err(invalid(
                    "`loss_ppm` range has its minimum above its maximum",
                    Locator::Mark(loss_ppm.mark),
                ));
            }
        }
        let mut firings: i64 = 0;
        for t in &model.triggers {
            let max = match &t.when {
                When::On(on) => on.max,
                When::At(_) | When::Every { .. } => None,
            };
            firings += max.map_or(1, |m| m.0);
            // Located at the trigger that takes the total over the limit.
            if firings > MAX_TRIGGER_FIRINGS {
                return Err(invalid(
                    format!(
                        "the triggers may fire {firings} times in one run: at most {MAX_TRIGGER_FIRINGS} allowed in all"
                    ),
                    Locator::Mark(t.mark()),
                ));
            }
        }
        if model.check.is_empty() {
            return Err(invalid("`check` names no property", model.check.mark));
        }
        if model.duration.ns() == 0 {
            return Err(invalid("duration must be above 0", model.duration.mark));
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
                        p.1,
                    ));
                }
            }
        }
        for (i, h) in model.witness.iter().enumerate() {
            if model.witness[..i].contains(h) {
                return Err(invalid(
                    format!("witness names {} twice", h.0),
                    Locator::Mark(h.1),
                ));
            }
        }
        let max_ttl = model.clients.iter().map(|g| g.ttl.ns()).max().unwrap_or(0);
        let liveness_bound_ns = model
            .liveness_bound
            .map_or(3 * max_ttl.max(NS_PER_S), |d| d.ns());
        if let Some(b) = model.liveness_bound {
            if b.ns() == 0 {
                return Err(invalid(
                    "liveness_bound must be above 0: every instant the lock is free would violate it",
                    b.mark,
                ));
            }
            if !properties.contains(&Property::Liveness) {
                return Err(invalid(
                    "liveness_bound is read only by `liveness`, which `check` does not name",
                    b.mark,
                ));
            }
        }
        for p in model.check.iter() {
            if let Some(why) = vacuous(&model, p.0, liveness_bound_ns) {
                return Err(invalid(
                    format!("`{}` cannot be violated in this model: {why}", p.0),
                    p.1,
                ));
            }
        }
        let limits = Limits {
            max_time: SimTime(model.duration.ns()),
            max_events: model.max_events.map_or(DEFAULT_MAX_EVENTS, |b| b.0 as u64),
        };
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
            replay_program: DEFAULT_REPLAY_PROGRAM.to_string(),
            fault_keep: Ratio::ALWAYS,
            variants: Vec::new(),
        })
    }

    /// This model with exactly these scripted faults and no other source of faults (random,
    /// swarm, triggers) and no expectation: what minimisation runs, on the typed model.
    pub fn with_scripted_faults(&self, faults: Vec<FaultEntry>) -> Result<Scenario, Invalid> {
        let mut m = self.model.clone();
        m.faults = faults;
        m.random_faults.clear();
        m.swarm = None;
        m.triggers.clear();
        m.expect = None;
        Scenario::new(self.name.clone(), self.path.clone(), m)
    }

    pub fn proc_id(&self, name: &str) -> ProcId {
        ProcId(
            self.procs
                .iter()
                .position(|(n, _)| n == name)
                .expect("validated name") as u32,
        )
    }

    pub(crate) fn clock(&self, spec: &ClockSpec) -> NodeClock {
        let offset_ms = spec.offset.map_or(0, |o| o.ms());
        NodeClock::new(
            self.epoch_unix_ms,
            offset_ms,
            spec.drift_ppm.map_or(0, |d| d.0),
        )
    }

    /// Builds the world for `seed`: processes, network, scripted faults and the random
    /// faults this seed draws (returned as the realised schedule).
    pub fn build(&self, seed: u64, trace: TraceMode) -> (World, Vec<Fault>) {
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
    ) -> (World, Vec<Fault>) {
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
        for (node_index, n) in m.nodes.iter().enumerate() {
            let config = RedisConfig {
                observe_keys: true,
                name: crate::proto::Bytes::from(n.name.0.as_str()),
                peers: peers.clone(),
                replica_of: n.replica_of.as_ref().map(|r| self.proc_id(&r.0)),
                min_replicas_to_write: n.min_replicas_to_write.map_or(0, |b| b.0 as u32),
                min_replicas_max_lag_s: n.min_replicas_max_lag.map_or(10, |d| d.ns() / NS_PER_S),
                relative_ttl_propagation: n.relative_ttl_propagation,
                persistence: match n.persistence.map(|p| p.value) {
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
                actor: Actor::Redis(Box::new(
                    RedisProcess::new(config)
                        .with_cron_phase(Seed(seed).stream("cron-phase", node_index as u64)),
                )),
                clock: self.clock(&n.clock),
                start_at: crate::time::SimTime::ZERO,
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
                start_at: crate::time::SimTime::ZERO,
            });
            ProcId((specs.len() - 1) as u32)
        });
        let lowering = crate::scenario::clients::Lowering {
            scenario: self,
            seed: Seed(seed),
            resource: resource_id,
            sentinels: &sentinel_ids,
            consensus: m.consensus.as_ref().map(|c| self.proc_id(&c.name.0)),
            custom,
        };
        let keys = self.lock_keys();
        for g in m.clients.iter() {
            let key = g.key_bytes();
            let lock = keys
                .iter()
                .position(|k| *k == key)
                .expect("every key listed") as u32;
            g.lower(&lowering, lock, &mut specs);
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
                    start_at: crate::time::SimTime::ZERO,
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
                start_at: crate::time::SimTime::ZERO,
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
        world.schedule_all(schedule.clone());
        for (i, t) in self.model.triggers.iter().enumerate() {
            world.add_trigger(self.trigger(t, Seed(seed), i as u64));
        }
        (world, schedule)
    }

    fn trigger(&self, t: &FaultEntry, seed: Seed, index: u64) -> Trigger {
        let When::On(on) = &t.when else {
            unreachable!("`triggers` reads only triggered entries")
        };
        let (chance, max) = (on.chance_ppm, on.max);
        let kind = t.trigger_kind(&|n: &Name| self.proc_id(&n.0));
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
    pub fn swarm_draw(&self, seed: Seed) -> Vec<Option<FaultEntry>> {
        let Some(sw) = &self.model.swarm else {
            return Vec::new();
        };
        let enable =
            Ratio::per_million(sw.enable_ppm.map_or(500_000, |b| b.0 as u32)).expect("bounded");
        let mut rng = seed.stream("swarm", 0);
        sw.faults
            .iter()
            .map(|f| {
                // Draw every entry's values whether on or off, so that one entry's switch
                // does not shift what the others draw.
                let on = rng.chance(enable);
                let drawn = f.narrowed(&mut rng);
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
                let kind = f.name();
                let Some(d) = d else {
                    return format!("{kind}: off");
                };
                let every = d.every().expect("a swarm entry is random").value;
                format!(
                    "{kind}: every {}..{}, {}",
                    every.min,
                    every.max,
                    d.describe_magnitude()
                )
            })
            .collect()
    }

    /// Faults one random entry draws over the run: one stream per (entry, target), so removing
    /// an entry or a target does not change what the others draw (one stream per entry for
    /// `at_once` and link faults, whose draws hit several targets together).
    fn random_faults(
        &self,
        f: &FaultEntry,
        prefix: &str,
        i: u64,
        seed: Seed,
        out: &mut Vec<Fault>,
    ) {
        let end = self.limits.max_time;
        // Stream names as they were when each kind had its own spelling: unchanged draws.
        let kind = match f.name() {
            "clock_step" => "clock-step",
            "latency_spike" => "latency-spike",
            other => other,
        };
        let stream = format!("{prefix}-{kind}");
        let thin_stream = format!("{prefix}-{kind}-thin");
        let targets = self.ids(f.targets());
        let every = f.every().expect("a random entry has `every`").value;
        let links = match &f.span {
            Span::Links { to, .. } => Some(self.ids(to)),
            Span::One(_) | Span::Each(_) => None,
        };
        let links = links.as_deref();
        for j in 0..f.streams() {
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
                // Who this draw hits: the stream's own target, `at_once` of the list, or
                // (a link fault) the links from all of them at once.
                let hit: Vec<ProcId> = match (f.at_once(), links) {
                    (_, Some(_)) => vec![targets[0]],
                    (None, None) => vec![targets[j]],
                    (Some(k), None) => {
                        let mut pool = targets.clone();
                        (0..k.value.0)
                            .map(|_| pool.swap_remove(rng.below(pool.len() as u64) as usize))
                            .collect()
                    }
                };
                let first = out.len();
                let mut window = 0;
                for p in hit {
                    let (kind, open) = f.draw(p, &targets, links, &mut rng);
                    window = open.unwrap_or(0);
                    out.push(Fault::new(t, open, kind));
                }
                // The next fault of this stream comes after this one's window (the longest of
                // the draw's): a target's own faults never overlap each other.
                t = t.plus_ns(window);
                if !keep {
                    out.truncate(first);
                }
            }
        }
    }

    fn ids(&self, names: &[Name]) -> Vec<ProcId> {
        names.iter().map(|n| self.proc_id(&n.0)).collect()
    }

    /// Scripted faults plus the random ones this seed draws, in time order (faults due at
    /// the same instant in declaration order).
    pub fn fault_schedule(&self, seed: u64) -> Vec<Fault> {
        let mut out: Vec<Fault> = Vec::new();
        for f in &self.model.faults {
            out.push(self.scripted(f));
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
        out.sort_by_key(|f| f.at);
        out
    }

    /// A scripted fault as the loop runs it.
    pub fn scripted(&self, f: &FaultEntry) -> Fault {
        f.scripted_fault(&|n: &Name| self.proc_id(&n.0))
    }
}
