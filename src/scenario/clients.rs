//! Client groups: one variant per algorithm, with the fields every algorithm reads shared,
//! and each algorithm's lowering into processes next to its type.
//!
//! The file format is the flat record of docs/model-format.md (`algorithm: "watchdog"`
//! selects the variant, wherever it stands in the record). A field the chosen algorithm does
//! not read is an error at that field: a model that says `max_attempts: 3` for a watchdog
//! would otherwise be believed to give up after three tries, and it never does.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

use crate::client::consensus::{ConsensusClient, ConsensusClientConfig};
use crate::client::python_redis_lock::{self as prl, PythonRedisLockClient, PythonRedisLockConfig};
use crate::client::redis_py::{self, SharedToken};
use crate::client::redisson::{RedissonClient, RedissonConfig, RedissonVersion};
use crate::client::redlock::{RedlockClient, RedlockConfig};
use crate::client::watchdog::{WatchdogClient, WatchdogConfig};
use crate::client::{Algorithm, ClientConfig, LockClient, NsRange};
use crate::proto::Bytes;
use crate::rng::Seed;
use crate::scenario::errors::{Invalid, invalid, quoted};
use crate::scenario::marks::{Mark, Pos, located};
use crate::scenario::units::{Bounded, ClockSpec, Dur, DurRange, Name};
use crate::sim::{Actor, ProcSpec};
use crate::time::{NS_PER_MS, NS_PER_S, ProcId, SimTime};

/// Which kind of lock client a group runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientKind {
    /// A single-instance algorithm on one node (`node`).
    Single(Algorithm),
    /// Redlock over independent masters (`nodes`, `redlock` options).
    Redlock,
    /// Redisson-style lock renewed by a watchdog (`node`; `ttl` is the lease).
    Watchdog,
    /// Redisson's `RLock` as shipped (`node`, `redisson` options; `ttl` is
    /// `lockWatchdogTimeout`).
    Redisson,
    /// ZooKeeper-style lock on the model's `consensus` service (`ttl` is the session timeout).
    Consensus,
    /// redis-py's `Lock` on one node (`node`, `redis_py` options; `ttl` is its `timeout`
    /// when `redis_py.timeout` is `ttl`).
    RedisPy,
    /// python-redis-lock's `redis_lock.Lock` on one node (`node`, `python_redis_lock`
    /// options; `ttl` is its `expire` when `python_redis_lock.expire` is `ttl`).
    PythonRedisLock,
    /// An algorithm a user crate registered (`scenario::custom`): reads the single-instance
    /// fields.
    Custom(u16),
}

impl ClientKind {
    pub fn name(self) -> &'static str {
        match self {
            ClientKind::Single(a) => a.name(),
            ClientKind::Custom(i) => crate::scenario::custom::name(i),
            ClientKind::Redlock => "redlock",
            ClientKind::Watchdog => "watchdog",
            ClientKind::Redisson => "redisson",
            ClientKind::Consensus => "consensus",
            ClientKind::RedisPy => "redis-py",
            ClientKind::PythonRedisLock => "python-redis-lock",
        }
    }

    pub fn from_name(s: &str) -> Option<ClientKind> {
        match s {
            "redlock" => Some(ClientKind::Redlock),
            "watchdog" => Some(ClientKind::Watchdog),
            "redisson" => Some(ClientKind::Redisson),
            "consensus" => Some(ClientKind::Consensus),
            "redis-py" => Some(ClientKind::RedisPy),
            "python-redis-lock" => Some(ClientKind::PythonRedisLock),
            _ => Algorithm::from_name(s)
                .map(ClientKind::Single)
                .or_else(|| crate::scenario::custom::lookup(s).map(ClientKind::Custom)),
        }
    }

    /// Every algorithm, single-instance ones first.
    pub fn all() -> Vec<ClientKind> {
        let mut v: Vec<ClientKind> = Algorithm::ALL.into_iter().map(ClientKind::Single).collect();
        v.extend([
            ClientKind::Redlock,
            ClientKind::Watchdog,
            ClientKind::Redisson,
            ClientKind::Consensus,
            ClientKind::RedisPy,
            ClientKind::PythonRedisLock,
        ]);
        v.extend(crate::scenario::custom::indices().map(ClientKind::Custom));
        v
    }

    /// Whether a client of this kind deletes lock keys in Redis (`foreign_unlock` can fail).
    pub fn deletes_keys(self) -> bool {
        self != ClientKind::Consensus
    }
}

/// An algorithm name, checked where it is read.
#[derive(Clone, Copy, Debug)]
pub struct AlgName(pub ClientKind);

impl<'de> Deserialize<'de> for AlgName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ClientKind::from_name(&s).map(AlgName).ok_or_else(|| {
            let names: Vec<_> = ClientKind::all().iter().map(|k| k.name()).collect();
            let hint = crate::scenario::units::closest_name(&s, names.iter().copied())
                .map_or(String::new(), |n| format!(" (did you mean {n:?}?)"));
            de::Error::custom(format!(
                "unknown algorithm {s:?}{hint}; known: {}",
                names.join(", ")
            ))
        })
    }
}

mod options;
pub use options::*;

/// What one algorithm reads beyond the common fields.
#[derive(Clone, Debug)]
pub enum AlgorithmSpec {
    /// A single-instance algorithm on `node`.
    Single {
        algorithm: Algorithm,
        node: Name,
        retrying: Retrying,
        max_attempts: Option<Bounded<1, 1_000_000>>,
        /// Find the master through the model's sentinels (at start, and after an error or a
        /// timeout) instead of always using `node`; the mark of a `true`.
        via_sentinels: Option<Mark>,
        /// `set-px-wait-cad` only (and required there): `WAIT replicas timeout`.
        wait: Option<WaitSpec>,
        /// A registered algorithm (`scenario::custom`) makes the clients; `algorithm` is
        /// then `set-px-cad`, what the checks and triggers treat it as.
        custom: Option<u16>,
        /// The registered algorithm's own fields (`options: (...)`), checked against its
        /// type as the group was read.
        options: Option<ron::Value>,
    },
    /// Redlock over independent masters.
    Redlock {
        nodes: Vec<Name>,
        redlock: Pos<RedlockSpec>,
    },
    /// A lease on `node` renewed by a watchdog.
    Watchdog {
        node: Name,
        retrying: Retrying,
        watchdog: WatchdogSpec,
    },
    /// redis-py's `Lock` on `node`.
    RedisPy {
        node: Name,
        request_timeout: Option<Pos<Dur>>,
        redis_py: Pos<RedisPySpec>,
    },
    /// python-redis-lock's Lock on `node`.
    PythonRedisLock {
        node: Name,
        python_redis_lock: Pos<PythonRedisLockSpec>,
    },
    /// Redisson's RLock on `node`.
    Redisson {
        node: Name,
        retrying: Retrying,
        redisson: RedissonSpec,
    },
    /// A lock on the model's consensus service.
    Consensus {
        retrying: Retrying,
        /// Present the node's zxid to the resource as a fencing token (default true).
        present_token: bool,
    },
}

/// A group of identical clients.
#[derive(Clone, Debug)]
pub struct ClientGroup {
    /// The client's name, or with `count > 1` the prefix of `name1`, `name2`, ...
    pub name: Name,
    pub count: Option<Pos<Bounded<1, 256>>>,
    /// Where `algorithm` was read: what an algorithm needs is reported there.
    pub algorithm_mark: Mark,
    /// The lock key (default "lock").
    pub key: Option<Pos<String>>,
    pub ttl: Pos<Dur>,
    /// Critical section length (between the resource read and write).
    pub hold: Pos<DurRange>,
    /// Pause between a release and the next acquisition.
    pub think: Option<DurRange>,
    pub rounds: Option<Bounded<1, 1_000_000_000>>,
    pub clock: ClockSpec,
    /// When each member starts (default: at 0), drawn per member.
    pub start: Option<DurRange>,
    pub spec: AlgorithmSpec,
}

/// The fields of a client group, in the file's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Name,
    Count,
    Algorithm,
    Node,
    Nodes,
    Redlock,
    Watchdog,
    Redisson,
    PresentToken,
    Key,
    Ttl,
    Hold,
    Think,
    Retry,
    RequestTimeout,
    MaxAttempts,
    Rounds,
    Clock,
    ViaSentinels,
    Wait,
    Start,
    RedisPy,
    PythonRedisLock,
    Options,
}

const FIELDS: [(Field, &str); 24] = [
    (Field::Name, "name"),
    (Field::Count, "count"),
    (Field::Algorithm, "algorithm"),
    (Field::Node, "node"),
    (Field::Nodes, "nodes"),
    (Field::Redlock, "redlock"),
    (Field::Watchdog, "watchdog"),
    (Field::Redisson, "redisson"),
    (Field::PresentToken, "present_token"),
    (Field::Key, "key"),
    (Field::Ttl, "ttl"),
    (Field::Hold, "hold"),
    (Field::Think, "think"),
    (Field::Retry, "retry"),
    (Field::RequestTimeout, "request_timeout"),
    (Field::MaxAttempts, "max_attempts"),
    (Field::Rounds, "rounds"),
    (Field::Clock, "clock"),
    (Field::ViaSentinels, "via_sentinels"),
    (Field::Wait, "wait"),
    (Field::Start, "start"),
    (Field::RedisPy, "redis_py"),
    (Field::PythonRedisLock, "python_redis_lock"),
    (Field::Options, "options"),
];

const FIELD_NAMES: &[&str] = &[
    "name",
    "count",
    "algorithm",
    "node",
    "nodes",
    "redlock",
    "watchdog",
    "redisson",
    "present_token",
    "key",
    "ttl",
    "hold",
    "think",
    "retry",
    "request_timeout",
    "max_attempts",
    "rounds",
    "clock",
    "via_sentinels",
    "wait",
    "start",
    "redis_py",
    "python_redis_lock",
    "options",
];

impl Field {
    fn name(self) -> &'static str {
        FIELDS
            .iter()
            .find(|(f, _)| *f == self)
            .expect("every field")
            .1
    }

    /// Whether the lowering of `kind` reads this field (docs/model-format.md has the table).
    fn read_by(self, kind: ClientKind) -> bool {
        use ClientKind as K;
        match self {
            Field::Name
            | Field::Count
            | Field::Algorithm
            | Field::Key
            | Field::Ttl
            | Field::Hold
            | Field::Think
            | Field::Rounds
            | Field::Clock
            | Field::Start => true,
            Field::Node => matches!(
                kind,
                K::Single(_)
                    | K::Watchdog
                    | K::RedisPy
                    | K::PythonRedisLock
                    | K::Redisson
                    | K::Custom(_)
            ),
            Field::Nodes | Field::Redlock => kind == K::Redlock,
            Field::Watchdog => kind == K::Watchdog,
            Field::Redisson => kind == K::Redisson,
            Field::PresentToken => kind == K::Consensus,
            // redis-py retries after its `sleep` (redis_py.sleep), not `retry`;
            // python-redis-lock waits in BLPOP.
            Field::Retry => !matches!(kind, K::Redlock | K::RedisPy | K::PythonRedisLock),
            // python-redis-lock runs on redis-py's `socket_timeout=None` (the default up to
            // 7.4; client/python_redis_lock.rs says why 8.0's 5 s is not modelled).
            Field::RequestTimeout => !matches!(kind, K::Redlock | K::PythonRedisLock),
            Field::RedisPy => kind == K::RedisPy,
            Field::PythonRedisLock => kind == K::PythonRedisLock,
            Field::MaxAttempts | Field::ViaSentinels => matches!(kind, K::Single(_) | K::Custom(_)),
            Field::Wait => kind == K::Single(Algorithm::SetPxWaitCad),
            // A registered algorithm's own fields: the built-in ones have theirs by name.
            Field::Options => matches!(kind, K::Custom(_)),
        }
    }

    /// The algorithms that read this field, in words.
    fn readers(self) -> String {
        if self == Field::Options {
            return "an algorithm a user crate registered with options \
                    (`cli::Registry::algorithm_with_options`)"
                .into();
        }
        let all = ClientKind::all();
        let singles = all
            .iter()
            .filter(|k| matches!(k, ClientKind::Single(_)))
            .all(|&k| self.read_by(k));
        let mut names: Vec<&str> = Vec::new();
        if singles {
            names.push("the single-instance algorithms");
        }
        for k in all {
            if self.read_by(k) && !(singles && matches!(k, ClientKind::Single(_))) {
                names.push(k.name());
            }
        }
        names.join(", ")
    }
}

/// Reads a field name, marked where it stands.
struct FieldSeed;

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = (Field, Mark);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(Field, Mark), D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a client group field")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
                FIELDS
                    .iter()
                    .find(|(_, n)| *n == v)
                    .map(|(f, _)| *f)
                    .ok_or_else(|| E::unknown_field(v, FIELD_NAMES))
            }
        }
        let mark = Mark::take()?;
        Ok((d.deserialize_identifier(V)?, mark))
    }
}

/// Every field as written, before the algorithm decides which it takes.
#[derive(Default)]
struct Raw {
    name: Option<Name>,
    count: Option<Pos<Bounded<1, 256>>>,
    algorithm: Option<Pos<AlgName>>,
    node: Option<Name>,
    nodes: Option<Vec<Name>>,
    redlock: Option<Pos<RedlockSpec>>,
    watchdog: Option<WatchdogSpec>,
    redisson: Option<RedissonSpec>,
    present_token: Option<bool>,
    key: Option<Pos<String>>,
    ttl: Option<Pos<Dur>>,
    hold: Option<Pos<DurRange>>,
    think: Option<DurRange>,
    retry: Option<Pos<DurRange>>,
    request_timeout: Option<Pos<Dur>>,
    max_attempts: Option<Bounded<1, 1_000_000>>,
    rounds: Option<Bounded<1, 1_000_000_000>>,
    clock: Option<ClockSpec>,
    via_sentinels: Option<Pos<bool>>,
    wait: Option<WaitSpec>,
    start: Option<DurRange>,
    redis_py: Option<Pos<RedisPySpec>>,
    python_redis_lock: Option<Pos<PythonRedisLockSpec>>,
    options: Option<Pos<ron::Value>>,
}

impl<'de> Deserialize<'de> for ClientGroup {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ClientGroup;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a client group (name: ..., algorithm: ..., ...)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClientGroup, A::Error> {
                let mut raw = Raw::default();
                // Fields given (a `None` gives nothing), with the marks of their names.
                let mut given: Vec<(Field, Mark)> = Vec::new();
                while let Some((field, mark)) = map.next_key_seed(FieldSeed)? {
                    if given.iter().any(|(f, _)| *f == field) {
                        return Err(de::Error::duplicate_field(field.name()));
                    }
                    // Optional fields accept `Some(x)` and `None` as well as `x`, as derived
                    // fields did.
                    let some = match field {
                        Field::Name => set(&mut raw.name, map.next_value()?),
                        Field::Count => set(&mut raw.count, map.next_value()?),
                        Field::Algorithm => set(&mut raw.algorithm, map.next_value()?),
                        Field::Node => set(&mut raw.node, map.next_value()?),
                        Field::Nodes => set(&mut raw.nodes, Some(map.next_value()?)),
                        Field::Redlock => set(&mut raw.redlock, map.next_value()?),
                        Field::Watchdog => set(&mut raw.watchdog, map.next_value()?),
                        Field::Redisson => set(&mut raw.redisson, map.next_value()?),
                        Field::PresentToken => set(&mut raw.present_token, map.next_value()?),
                        Field::Key => set(&mut raw.key, map.next_value()?),
                        Field::Ttl => set(&mut raw.ttl, map.next_value()?),
                        Field::Hold => set(&mut raw.hold, map.next_value()?),
                        Field::Think => set(&mut raw.think, map.next_value()?),
                        Field::Retry => set(&mut raw.retry, map.next_value()?),
                        Field::RequestTimeout => set(&mut raw.request_timeout, map.next_value()?),
                        Field::MaxAttempts => set(&mut raw.max_attempts, map.next_value()?),
                        Field::Rounds => set(&mut raw.rounds, map.next_value()?),
                        Field::Clock => set(&mut raw.clock, Some(map.next_value()?)),
                        Field::ViaSentinels => set(&mut raw.via_sentinels, map.next_value()?),
                        Field::Wait => set(&mut raw.wait, map.next_value()?),
                        Field::Start => set(&mut raw.start, map.next_value()?),
                        Field::RedisPy => set(&mut raw.redis_py, map.next_value()?),
                        Field::PythonRedisLock => {
                            set(&mut raw.python_redis_lock, map.next_value()?)
                        }
                        Field::Options => set(&mut raw.options, Some(map.next_value()?)),
                    };
                    if some {
                        given.push((field, mark));
                    }
                }
                raw.into_group(&given)
            }
        }
        d.deserialize_struct("ClientGroup", FIELD_NAMES, V)
    }
}

fn set<T>(slot: &mut Option<T>, v: Option<T>) -> bool {
    let some = v.is_some();
    *slot = v;
    some
}

impl Raw {
    /// The typed group, or an error at the field the algorithm does not take (or at the
    /// algorithm, for a field it needs).
    fn into_group<E: de::Error>(self, given: &[(Field, Mark)]) -> Result<ClientGroup, E> {
        let name = self.name.ok_or_else(|| E::missing_field("name"))?;
        let alg = self
            .algorithm
            .ok_or_else(|| E::missing_field("algorithm"))?;
        let (kind, am) = (alg.value.0, alg.mark);
        for &(f, mark) in given {
            if !f.read_by(kind) {
                return Err(located(
                    mark,
                    format!(
                        "`{}` is not read by algorithm {:?} (client group {:?}); it is read by {}",
                        f.name(),
                        kind.name(),
                        name.0,
                        f.readers()
                    ),
                ));
            }
        }
        let needs = |what: &str| {
            located::<E>(
                am,
                format!(
                    "algorithm {:?} needs `{what}` (client group {:?})",
                    kind.name(),
                    name.0
                ),
            )
        };
        let retrying = |retry: Option<Pos<DurRange>>| -> Result<Retrying, E> {
            Ok(Retrying {
                retry: retry.ok_or_else(|| needs("retry: the delay before retrying"))?,
                request_timeout: self.request_timeout,
            })
        };
        let (kind, custom) = match kind {
            ClientKind::Custom(i) => (ClientKind::Single(Algorithm::SetPxCad), Some(i)),
            k => (k, None),
        };
        if let Some(i) = custom {
            let options = self.options.as_ref().map(|o| &o.value);
            crate::scenario::custom::check_options(i, options).map_err(|e| {
                located::<E>(
                    self.options.as_ref().map_or(am, |o| o.mark),
                    format!(
                        "options of algorithm {:?} (client group {:?}): {e}",
                        crate::scenario::custom::name(i),
                        name.0
                    ),
                )
            })?;
        }
        let spec = match kind {
            ClientKind::Custom(_) => unreachable!("mapped to Single above"),
            ClientKind::Single(algorithm) => AlgorithmSpec::Single {
                custom,
                options: self.options.map(|o| o.value),
                algorithm,
                node: self
                    .node
                    .ok_or_else(|| needs("node: the Redis node it locks on"))?,
                retrying: retrying(self.retry)?,
                max_attempts: self.max_attempts,
                via_sentinels: self.via_sentinels.filter(|v| v.value).map(|v| v.mark),
                wait: match (algorithm, self.wait) {
                    (Algorithm::SetPxWaitCad, None) => {
                        return Err(needs("wait: (replicas: N, timeout: \"100ms\")"));
                    }
                    (_, w) => w,
                },
            },
            ClientKind::Redlock => AlgorithmSpec::Redlock {
                nodes: match self.nodes {
                    Some(n) if !n.is_empty() => n,
                    _ => return Err(needs("nodes: its independent masters")),
                },
                redlock: self.redlock.unwrap_or_default(),
            },
            ClientKind::Watchdog => AlgorithmSpec::Watchdog {
                node: self
                    .node
                    .ok_or_else(|| needs("node: the Redis node it locks on"))?,
                retrying: retrying(self.retry)?,
                watchdog: self.watchdog.unwrap_or_default(),
            },
            ClientKind::RedisPy => AlgorithmSpec::RedisPy {
                node: self
                    .node
                    .ok_or_else(|| needs("node: the Redis node it locks on"))?,
                request_timeout: self.request_timeout,
                redis_py: self.redis_py.ok_or_else(|| {
                    needs(
                        "redis_py: (timeout: none) or (timeout: ttl) — redis-py's default is timeout=None, a key that never expires",
                    )
                })?,
            },
            ClientKind::PythonRedisLock => AlgorithmSpec::PythonRedisLock {
                node: self
                    .node
                    .ok_or_else(|| needs("node: the Redis node it locks on"))?,
                python_redis_lock: self.python_redis_lock.ok_or_else(|| {
                    needs(
                        "python_redis_lock: (expire: none) or (expire: ttl) — python-redis-lock's default is expire=None, a key that never expires",
                    )
                })?,
            },
            ClientKind::Redisson => AlgorithmSpec::Redisson {
                node: self
                    .node
                    .ok_or_else(|| needs("node: the Redis node it locks on"))?,
                retrying: retrying(self.retry)?,
                redisson: self
                    .redisson
                    .ok_or_else(|| needs("redisson: (version: \"3.52.0\")"))?,
            },
            ClientKind::Consensus => AlgorithmSpec::Consensus {
                retrying: retrying(self.retry)?,
                present_token: self.present_token.unwrap_or(true),
            },
        };
        Ok(ClientGroup {
            name,
            count: self.count,
            algorithm_mark: am,
            key: self.key,
            ttl: self.ttl.ok_or_else(|| E::missing_field("ttl"))?,
            hold: self.hold.ok_or_else(|| E::missing_field("hold"))?,
            think: self.think,
            rounds: self.rounds,
            clock: self.clock.unwrap_or_default(),
            start: self.start,
            spec,
        })
    }
}

impl ClientGroup {
    pub fn kind(&self) -> ClientKind {
        match &self.spec {
            AlgorithmSpec::Single {
                custom: Some(i), ..
            } => ClientKind::Custom(*i),
            AlgorithmSpec::Single { algorithm, .. } => ClientKind::Single(*algorithm),
            AlgorithmSpec::Redlock { .. } => ClientKind::Redlock,
            AlgorithmSpec::Watchdog { .. } => ClientKind::Watchdog,
            AlgorithmSpec::Redisson { .. } => ClientKind::Redisson,
            AlgorithmSpec::Consensus { .. } => ClientKind::Consensus,
            AlgorithmSpec::RedisPy { .. } => ClientKind::RedisPy,
            AlgorithmSpec::PythonRedisLock { .. } => ClientKind::PythonRedisLock,
        }
    }

    pub fn count(&self) -> i64 {
        self.count.map_or(1, |c| c.0)
    }

    /// The members' names: the group's name, or `name1`, `name2`, ... (marked at the group's
    /// name, where a collision of a generated name is reported).
    pub fn members(&self) -> Vec<Name> {
        let n = self.count();
        if n == 1 {
            return vec![self.name.clone()];
        }
        (1..=n)
            .map(|i| Name(format!("{}{i}", self.name.0), self.name.1))
            .collect()
    }

    pub fn key_bytes(&self) -> Bytes {
        Bytes::from_slice(self.key.as_ref().map_or("lock", |k| k.as_str()).as_bytes())
    }

    /// Whether its clients present fencing tokens to the resource.
    pub fn presents_tokens(&self) -> bool {
        match &self.spec {
            AlgorithmSpec::Single { algorithm, .. } => *algorithm == Algorithm::SetPxCadFencing,
            AlgorithmSpec::Consensus { present_token, .. } => *present_token,
            AlgorithmSpec::Redisson { redisson, .. } => redisson.fenced,
            AlgorithmSpec::PythonRedisLock {
                python_redis_lock, ..
            } => python_redis_lock.fenced,
            AlgorithmSpec::Redlock { .. }
            | AlgorithmSpec::Watchdog { .. }
            | AlgorithmSpec::RedisPy { .. } => false,
        }
    }

    /// Checks what needs the rest of the model (nodes, services) and the values' ranges.
    pub(crate) fn validate(&self, model: &Neighbours<'_>) -> Result<(), Invalid> {
        let g = &self.name.0;
        let known = |n: &Name| -> Result<(), Invalid> {
            if model.nodes.contains(n) {
                Ok(())
            } else {
                Err(invalid(
                    format!("client group \"{g}\" locks on unknown node \"{}\"", n.0),
                    quoted(n),
                ))
            }
        };
        let retrying = match &self.spec {
            AlgorithmSpec::Single {
                algorithm,
                node,
                retrying,
                via_sentinels,
                ..
            } => {
                known(node)?;
                if *algorithm == Algorithm::SetPxCadFencing && !model.fencing_resource {
                    return Err(invalid(
                        "algorithm \"set-px-cad-fencing\" needs a `resource` with `fencing: true` to present its tokens to",
                        self.algorithm_mark,
                    ));
                }
                if let Some(m) = via_sentinels
                    && !model.sentinels
                {
                    return Err(invalid(
                        "via_sentinels: true needs a `sentinels` section",
                        *m,
                    ));
                }
                Some(retrying)
            }
            AlgorithmSpec::Watchdog { node, retrying, .. } => {
                known(node)?;
                Some(retrying)
            }
            AlgorithmSpec::RedisPy {
                node,
                request_timeout,
                redis_py,
            } => {
                known(node)?;
                if let Err(e) = redis_py.options(self.ttl.ns() / NS_PER_MS) {
                    return Err(invalid(e, redis_py.mark));
                }
                if redis_py.sleep_ns() == 0 {
                    return Err(invalid(
                        "redis_py.sleep 0ms would spin without time passing",
                        redis_py.mark,
                    ));
                }
                if let Some(t) = request_timeout
                    && t.ns() == 0
                {
                    return Err(invalid("request_timeout must be above 0", t.mark));
                }
                None
            }
            AlgorithmSpec::PythonRedisLock {
                node,
                python_redis_lock: p,
            } => {
                known(node)?;
                if let Err(e) = p.options(self.ttl.ns() / NS_PER_MS) {
                    return Err(invalid(e, p.mark));
                }
                if p.fenced && !model.fencing_resource {
                    return Err(invalid(
                        "python_redis_lock `fenced: true` needs a `resource` with `fencing: true` to present its tokens to",
                        p.mark,
                    ));
                }
                if prl::signal_key(&self.key_bytes()).is_none() {
                    return Err(invalid(
                        format!(
                            "python-redis-lock keys its lock `lock:<name>` (Lock(conn, name), __init__.py:166): give `key: \"lock:<name>\"`, not {:?}",
                            String::from_utf8_lossy(&self.key_bytes())
                        ),
                        self.key.as_ref().map_or(self.algorithm_mark, |k| k.mark),
                    ));
                }
                None
            }
            AlgorithmSpec::Redisson {
                node,
                retrying,
                redisson,
            } => {
                known(node)?;
                if redisson.version().is_none() {
                    let names: Vec<&str> = RedissonVersion::ALL.iter().map(|v| v.name()).collect();
                    return Err(invalid(
                        format!(
                            "unknown Redisson version {:?}; modelled: {}",
                            redisson.version.value,
                            names.join(", ")
                        ),
                        redisson.version.mark,
                    ));
                }
                if redisson.fenced && !model.fencing_resource {
                    return Err(invalid(
                        "redisson `fenced: true` (RFencedLock) needs a `resource` with `fencing: true` to present its tokens to",
                        redisson.version.mark,
                    ));
                }
                if redisson.racing_unlock_at.is_some() && redisson.lease.is_some() {
                    return Err(invalid(
                        "redisson `racing_unlock_at` races the watchdog's renewal pass: a lock with a `lease` has no watchdog",
                        redisson.version.mark,
                    ));
                }
                if self.ttl.ns() < 3 * NS_PER_MS {
                    return Err(invalid(
                        "ttl (lockWatchdogTimeout) must be at least 3ms: it is renewed every third",
                        self.ttl.mark,
                    ));
                }
                if let Some(l) = redisson.lease
                    && (l.ns() < NS_PER_MS || !l.ns().is_multiple_of(NS_PER_MS))
                {
                    return Err(invalid(
                        format!("lease {l} must be a whole number of ms, at least 1ms"),
                        redisson.version.mark,
                    ));
                }
                Some(retrying)
            }
            AlgorithmSpec::Consensus { retrying, .. } => {
                if !model.consensus {
                    return Err(invalid(
                        "algorithm \"consensus\" needs a `consensus: (name: ...)` service",
                        self.algorithm_mark,
                    ));
                }
                Some(retrying)
            }
            AlgorithmSpec::Redlock { nodes, redlock } => {
                for (i, n) in nodes.iter().enumerate() {
                    known(n)?;
                    if nodes[..i].contains(n) {
                        return Err(invalid(format!("node \"{}\" listed twice", n.0), quoted(n)));
                    }
                }
                if let Err(e) = redlock.options(self.ttl.ns() / NS_PER_MS) {
                    // Options made from the ttl alone are the ttl's fault.
                    return Err(invalid(e, redlock.mark.or(self.ttl.mark)));
                }
                None
            }
        };
        if self.ttl.ns() < NS_PER_MS {
            return Err(invalid(
                format!("ttl {} is below 1ms: Redis refuses PX 0", self.ttl),
                self.ttl.mark,
            ));
        }
        if !self.ttl.ns().is_multiple_of(NS_PER_MS) {
            return Err(invalid(
                format!("ttl {} is not a whole number of ms (PX takes ms)", self.ttl),
                self.ttl.mark,
            ));
        }
        if let Some(r) = retrying {
            if let Some(t) = r.request_timeout
                && t.ns() == 0
            {
                return Err(invalid("request_timeout must be above 0", t.mark));
            }
            let max_attempts = match &self.spec {
                AlgorithmSpec::Single { max_attempts, .. } => *max_attempts,
                _ => None,
            };
            if r.retry.max.ns() == 0 && max_attempts.is_none() {
                return Err(invalid(
                    "retry (\"0ms\", \"0ms\") with unbounded attempts would spin without time passing; give retry a positive delay",
                    r.retry.mark,
                ));
            }
        }
        if let Some(k) = &self.key
            && (k.is_empty() || k.len() > 512)
        {
            return Err(invalid("key must be 1-512 bytes", k.mark));
        }
        let think_zero = self.think.is_none_or(|t| t.max.ns() == 0);
        if think_zero && self.hold.max.ns() == 0 {
            return Err(invalid(
                "hold and think both zero: a client would loop without time passing",
                self.hold.mark,
            ));
        }
        Ok(())
    }

    /// The processes of this group, appended to `specs`: `lock` is the index of its key in the
    /// model's lock table.
    pub(crate) fn lower(&self, cx: &Lowering<'_>, lock: u32, specs: &mut Vec<ProcSpec>) {
        let key = self.key_bytes();
        let hold = NsRange::new(self.hold.min.ns(), self.hold.max.ns());
        let think = self
            .think
            .map_or(NsRange::fixed(0), |t| NsRange::new(t.min.ns(), t.max.ns()));
        let rounds = self.rounds.map(|b| b.0 as u64);
        // redis-py, thread_local=False: the members are threads sharing one Lock object;
        // redsync's `shared_mutex`: goroutines sharing one Mutex.
        let group_token = SharedToken::new();
        for member in self.members() {
            let name = member.0;
            let id = (cx.proc_id)(&name);
            let actor = match &self.spec {
                AlgorithmSpec::Single {
                    algorithm,
                    custom,
                    options,
                    node,
                    retrying,
                    max_attempts,
                    via_sentinels,
                    wait,
                } => {
                    let cfg = ClientConfig {
                        algorithm: *algorithm,
                        lock,
                        key: key.clone(),
                        redis: (cx.proc_id)(&node.0),
                        resource: cx.resource,
                        ttl_ms: self.ttl.ns() / NS_PER_MS,
                        hold,
                        think,
                        retry: range(retrying.retry.value),
                        request_timeout_ns: retrying.request_timeout.map_or(NS_PER_S, |d| d.ns()),
                        max_attempts: max_attempts.map(|b| b.0 as u32),
                        rounds,
                        fence_key: Bytes::from_slice(b"fence"),
                        token_prefix: name.clone(),
                        sentinels: if via_sentinels.is_some() {
                            cx.sentinels.to_vec()
                        } else {
                            Vec::new()
                        },
                        wait_replicas: wait.map_or(0, |w| w.replicas.0 as u32),
                        wait_timeout_ms: wait.map_or(0, |w| w.timeout.ns() / NS_PER_MS),
                        redis_py: None,
                        options: options.clone(),
                    };
                    match (custom, cx.custom) {
                        (Some(i), _) => Actor::Custom(crate::scenario::custom::make(*i, &cfg)),
                        (None, Some(make)) => Actor::Custom(make(&cfg)),
                        (None, None) => Actor::Client(Box::new(LockClient::new(cfg))),
                    }
                }
                AlgorithmSpec::RedisPy {
                    node,
                    request_timeout,
                    redis_py,
                } => {
                    let mut options = redis_py
                        .options(self.ttl.ns() / NS_PER_MS)
                        .expect("validated");
                    if redis_py.shares_token() {
                        options.shared_token = Some(group_token.clone());
                    }
                    let sleep = redis_py.sleep_ns();
                    let cfg = ClientConfig {
                        // Its release is a compare-and-delete script, as set-px-cad's.
                        algorithm: Algorithm::SetPxCad,
                        lock,
                        key: key.clone(),
                        redis: (cx.proc_id)(&node.0),
                        resource: cx.resource,
                        ttl_ms: self.ttl.ns() / NS_PER_MS,
                        hold,
                        think,
                        retry: NsRange::fixed(sleep),
                        // redis-py ≥ 8.0's socket timeout (redis/_defaults.py:7).
                        request_timeout_ns: request_timeout
                            .map_or(redis_py::DEFAULT_SOCKET_TIMEOUT_MS * NS_PER_MS, |d| d.ns()),
                        max_attempts: None,
                        rounds,
                        fence_key: Bytes::from_slice(b"fence"),
                        token_prefix: name.clone(),
                        sentinels: Vec::new(),
                        wait_replicas: 0,
                        wait_timeout_ms: 0,
                        redis_py: Some(options),
                        options: None,
                    };
                    match cx.custom {
                        Some(make) => Actor::Custom(make(&cfg)),
                        None => Actor::Client(Box::new(LockClient::new(cfg))),
                    }
                }
                AlgorithmSpec::PythonRedisLock {
                    node,
                    python_redis_lock,
                } => {
                    let mut config =
                        PythonRedisLockConfig::new(lock, key.clone(), (cx.proc_id)(&node.0), &name);
                    config.options = python_redis_lock
                        .options(self.ttl.ns() / NS_PER_MS)
                        .expect("validated");
                    config.resource = cx.resource;
                    config.hold = hold;
                    config.think = think;
                    config.rounds = rounds;
                    Actor::PythonRedisLock(Box::new(PythonRedisLockClient::new(config)))
                }
                AlgorithmSpec::Redlock { nodes, redlock } => {
                    let mut options = redlock
                        .options(self.ttl.ns() / NS_PER_MS)
                        .expect("validated");
                    if redlock.shared_mutex == Some(true) {
                        options.shared_value = Some(group_token.clone());
                    }
                    Actor::Redlock(Box::new(RedlockClient::new(RedlockConfig {
                        lock,
                        key: key.clone(),
                        nodes: nodes.iter().map(|n| (cx.proc_id)(&n.0)).collect(),
                        resource: cx.resource,
                        hold,
                        think,
                        rounds,
                        token_prefix: name.clone(),
                        options,
                    })))
                }
                AlgorithmSpec::Watchdog {
                    node,
                    retrying,
                    watchdog,
                } => {
                    let mut config =
                        WatchdogConfig::new(lock, key.clone(), (cx.proc_id)(&node.0), &name);
                    config.resource = cx.resource;
                    config.lease_ms = self.ttl.ns() / NS_PER_MS;
                    config.renew_every_ms = watchdog
                        .renew_every
                        .map_or(config.lease_ms / 3, |d| d.ns() / NS_PER_MS)
                        .max(1);
                    config.report_renewal_failure = watchdog.report_renewal_failure;
                    config.hold = hold;
                    config.think = think;
                    config.retry = range(retrying.retry.value);
                    if let Some(t) = retrying.request_timeout {
                        config.request_timeout_ns = t.ns();
                    }
                    config.rounds = rounds;
                    Actor::Watchdog(Box::new(WatchdogClient::new(config)))
                }
                AlgorithmSpec::Redisson {
                    node,
                    retrying,
                    redisson,
                } => {
                    let version = redisson.version().expect("validated");
                    let mut config = RedissonConfig::new(
                        lock,
                        key.clone(),
                        (cx.proc_id)(&node.0),
                        version,
                        &name,
                    );
                    config.resource = cx.resource;
                    config.watchdog_timeout_ms = self.ttl.ns() / NS_PER_MS;
                    config.lease_ms = redisson.lease.map(|d| d.ns() / NS_PER_MS);
                    config.sync_replicas = redisson.replicas.map_or(0, |b| b.0 as u32);
                    if let Some(t) = redisson.slaves_sync_timeout {
                        config.slaves_sync_timeout_ms = t.ns() / NS_PER_MS;
                    }
                    config.interrupt_after_ns = redisson.interrupt_after.map(|d| d.ns());
                    config.late_acquire_unlocks = redisson.late_acquire_unlocks;
                    config.fenced = redisson.fenced;
                    if redisson.thread_id == Some(ThreadIdSpec::Shared) {
                        config.lock_owner = Some(self.name.0.clone());
                    }
                    if let Some(r) = redisson.renewal_delay {
                        config.renewal_delay = range(r);
                    }
                    config.racing_unlock_at_ns = redisson.racing_unlock_at.map(|d| d.ns());
                    config.hold = hold;
                    config.think = think;
                    config.retry = range(retrying.retry.value);
                    if let Some(t) = retrying.request_timeout {
                        config.timeout_ns = t.ns();
                    }
                    config.rounds = rounds;
                    Actor::Redisson(Box::new(RedissonClient::new(config)))
                }
                AlgorithmSpec::Consensus {
                    retrying,
                    present_token,
                } => {
                    let service = cx.consensus.expect("validated");
                    let mut config = ConsensusClientConfig::new(lock, service, &name);
                    config.resource = cx.resource;
                    config.session_timeout_ms = self.ttl.ns() / NS_PER_MS;
                    config.hold = hold;
                    config.think = think;
                    config.retry = range(retrying.retry.value);
                    if let Some(t) = retrying.request_timeout {
                        config.request_timeout_ns = t.ns();
                    }
                    config.present_token = *present_token;
                    config.rounds = rounds;
                    Actor::ConsensusClient(Box::new(ConsensusClient::new(config)))
                }
            };
            // Drawn from a stream of its own per client, so that a start offset changes no
            // other draw (and a model without one draws nothing).
            let start_at = self.start.map_or(SimTime::ZERO, |s| {
                let ns = if s.min == s.max {
                    s.min.ns()
                } else {
                    cx.seed
                        .stream("client-start", u64::from(id.0))
                        .range_inclusive(s.min.ns(), s.max.ns())
                };
                SimTime(ns)
            });
            specs.push(ProcSpec {
                name,
                actor,
                clock: self.clock.clock(cx.epoch_unix_ms),
                start_at,
            });
        }
    }
}

fn range(r: DurRange) -> NsRange {
    NsRange::new(r.min.ns(), r.max.ns())
}

/// What a client group's checks need of the rest of the model.
pub(crate) struct Neighbours<'a> {
    /// The Redis nodes' names.
    pub nodes: &'a [Name],
    /// The model has a resource that checks fencing tokens.
    pub fencing_resource: bool,
    /// The model has sentinels.
    pub sentinels: bool,
    /// The model has the consensus lock service.
    pub consensus: bool,
}

/// Makes a user's client process from the configuration a model gives a client.
pub type ClientFactory = dyn Fn(&ClientConfig) -> Box<dyn crate::process::Process>;

/// What lowering a client group needs from the rest of the world.
pub(crate) struct Lowering<'a> {
    /// The process a name stands for.
    pub proc_id: &'a dyn Fn(&str) -> ProcId,
    /// The Unix time (ms) at true time 0.
    pub epoch_unix_ms: i64,
    pub seed: Seed,
    pub resource: Option<ProcId>,
    pub sentinels: &'a [ProcId],
    pub consensus: Option<ProcId>,
    pub custom: Option<&'a ClientFactory>,
}
