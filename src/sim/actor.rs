//! The built-in kinds of process, as one enum so that the loop dispatches them with a match
//! (cheap, exhaustive), plus `Custom` for algorithms users plug in from Rust.

use crate::client::consensus::{ConsensusClient, ConsensusService};
use crate::client::python_redis_lock::PythonRedisLockClient;
use crate::client::redisson::RedissonClient;
use crate::client::redlock::RedlockClient;
use crate::client::watchdog::WatchdogClient;
use crate::client::{LockClient, Resource};
use crate::process::{Cx, Process, SkippedTicks, TickDue};
use crate::proto::Msg;
use crate::redis::RedisProcess;
use crate::redis::sentinel::Sentinel;
use crate::time::ProcId;

pub enum Actor {
    Redis(Box<RedisProcess>),
    Client(Box<LockClient>),
    Redlock(Box<RedlockClient>),
    Watchdog(Box<WatchdogClient>),
    Redisson(Box<RedissonClient>),
    PythonRedisLock(Box<PythonRedisLockClient>),
    ConsensusService(Box<ConsensusService>),
    ConsensusClient(Box<ConsensusClient>),
    Resource(Resource),
    Sentinel(Box<Sentinel>),
    Custom(Box<dyn Process>),
}

impl Clone for Actor {
    /// Panics on a custom process that cannot be copied: check `can_clone` first (the world
    /// does, see `World::snapshot`).
    fn clone(&self) -> Actor {
        match self {
            Actor::Redis(p) => Actor::Redis(p.clone()),
            Actor::Client(p) => Actor::Client(p.clone()),
            Actor::Redlock(p) => Actor::Redlock(p.clone()),
            Actor::Watchdog(p) => Actor::Watchdog(p.clone()),
            Actor::Redisson(p) => Actor::Redisson(p.clone()),
            Actor::PythonRedisLock(p) => Actor::PythonRedisLock(p.clone()),
            Actor::ConsensusService(p) => Actor::ConsensusService(p.clone()),
            Actor::ConsensusClient(p) => Actor::ConsensusClient(p.clone()),
            Actor::Resource(p) => Actor::Resource(p.clone()),
            Actor::Sentinel(p) => Actor::Sentinel(p.clone()),
            Actor::Custom(p) => Actor::Custom(
                (**p)
                    .clone_box()
                    .expect("a custom process without clone_box is never cloned"),
            ),
        }
    }
}

impl std::fmt::Debug for Actor {
    /// A custom process shows as `Custom` (its state is its own).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Actor::Redis(p) => p.fmt(f),
            Actor::Client(p) => p.fmt(f),
            Actor::Redlock(p) => p.fmt(f),
            Actor::Watchdog(p) => p.fmt(f),
            Actor::Redisson(p) => p.fmt(f),
            Actor::PythonRedisLock(p) => p.fmt(f),
            Actor::ConsensusService(p) => p.fmt(f),
            Actor::ConsensusClient(p) => p.fmt(f),
            Actor::Resource(p) => p.fmt(f),
            Actor::Sentinel(p) => p.fmt(f),
            Actor::Custom(_) => f.write_str("Custom"),
        }
    }
}

impl Actor {
    /// Whether `clone` can copy this actor (every built-in one can; a custom process only
    /// if it implements `Process::clone_box`).
    pub fn can_clone(&self) -> bool {
        match self {
            Actor::Custom(p) => (**p).clone_box().is_some(),
            // Members of a redis-py group with `thread_local: false` share one token slot
            // (an `Arc`): a copy would still write the original's slot, so such a world is
            // re-simulated instead of copied.
            Actor::Client(c) => !c.shares_token(),
            _ => true,
        }
    }

    pub fn as_redis(&self) -> Option<&RedisProcess> {
        match self {
            Actor::Redis(r) => Some(r),
            _ => None,
        }
    }

    pub fn as_redis_mut(&mut self) -> Option<&mut RedisProcess> {
        match self {
            Actor::Redis(r) => Some(r),
            _ => None,
        }
    }
}

macro_rules! each_actor {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            Actor::Redis($p) => $e,
            Actor::Client($p) => $e,
            Actor::Redlock($p) => $e,
            Actor::Watchdog($p) => $e,
            Actor::Redisson($p) => $e,
            Actor::PythonRedisLock($p) => $e,
            Actor::ConsensusService($p) => $e,
            Actor::ConsensusClient($p) => $e,
            Actor::Resource($p) => $e,
            Actor::Sentinel($p) => $e,
            Actor::Custom($p) => $e,
        }
    };
}

impl Process for Actor {
    #[inline]
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        each_actor!(self, p => p.on_start(cx))
    }
    #[inline]
    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        each_actor!(self, p => p.on_message(cx, from, msg))
    }
    #[inline]
    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        each_actor!(self, p => p.on_timer(cx, tag))
    }
    fn on_restart(&mut self, keep_data: bool) {
        each_actor!(self, p => p.on_restart(keep_data))
    }
    fn on_skipped_ticks(&mut self, ticks: &SkippedTicks<'_>) -> bool {
        each_actor!(self, p => p.on_skipped_ticks(ticks))
    }
    fn tick_due(&mut self) -> TickDue {
        each_actor!(self, p => p.tick_due())
    }
}

/// What the engine knows of a process without asking it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProcKind {
    Redis,
    Sentinel,
    /// The consensus lock service: a server clients connect to, as to a Redis node.
    ConsensusService,
    /// A lock client (built in or a user's): it holds connections to servers.
    Client,
    /// The resource.
    Other,
}

impl ProcKind {
    pub(crate) fn of(actor: &Actor) -> ProcKind {
        match actor {
            Actor::Redis(_) => ProcKind::Redis,
            Actor::Sentinel(_) => ProcKind::Sentinel,
            Actor::ConsensusService(_) => ProcKind::ConsensusService,
            Actor::Client(_)
            | Actor::Redlock(_)
            | Actor::Watchdog(_)
            | Actor::Redisson(_)
            | Actor::PythonRedisLock(_)
            | Actor::ConsensusClient(_)
            | Actor::Custom(_) => ProcKind::Client,
            Actor::Resource(_) => ProcKind::Other,
        }
    }
}
