//! What each algorithm's own section of a client group reads (`redlock: (...)`,
//! `redis_py: (...)`, ...): the file's types, checked field by field as serde reads them;
//! the lowering into each client's configuration is `ClientGroup`'s, in the parent.

use serde::Deserialize;

use crate::client::presets;
use crate::client::python_redis_lock::{self as prl, PythonRedisLockOptions};
use crate::client::redis_py::{self, RedisPyOptions, Refresh, ReleaseError};
use crate::client::redisson::RedissonVersion;
use crate::client::redlock::{AutoExtend, ElapsedClock, ExtendMode, RedlockOptions};
use crate::scenario::marks::Pos;
use crate::scenario::units::{Bounded, Dur, DurRange};
use crate::time::{NS_PER_MS, NS_PER_S};

/// Redlock as a library runs it: `preset` names the library defaults (redis-docs,
/// redlock-rb (< 1.0), redlock-rb-2 (≥ 1.0, as of 2.0.6), redlock-py, redlock-py-1.0.8,
/// node-redlock, node-redlock-using (5.0.0-beta.2), node-redlock-using-head, redsync;
/// docs/libraries.md has each one's sources); every other field overrides one default.
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
    /// Draw the retry delay in `[retry_delay, retry_delay + retry_jitter)` (redlock-rb ≥ 0.2).
    #[serde(default)]
    pub jitter_added_only: Option<bool>,
    #[serde(default)]
    pub skip_validity_check: Option<bool>,
    /// The careful caller: give the critical section up when the believed validity runs out.
    #[serde(default)]
    pub stop_at_validity: Option<bool>,
    #[serde(default)]
    pub extend: Option<ExtendSpec>,
    /// node-redlock 5.0.0-beta.2: validity measured from before the retries.
    #[serde(default)]
    pub start_before_retries: Option<bool>,
    /// node-redlock `using()`: extend `threshold` before the believed expiration.
    #[serde(default)]
    pub auto_extend: Option<AutoExtendSpec>,
    /// redsync `WithFailFast(true)`: decide at a quorum either way.
    #[serde(default)]
    pub fail_fast: Option<bool>,
    /// redlock-py 1.0.8: a won attempt with a node error raises, without unlocking.
    #[serde(default)]
    pub raise_on_node_error: Option<bool>,
    /// redsync: the group's members are goroutines sharing one `*redsync.Mutex`, and so one
    /// `m.value` (redsync#30). Default false: a Mutex per member.
    #[serde(default)]
    pub shared_mutex: Option<bool>,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoExtendSpec {
    /// `automaticExtensionThreshold` (node-redlock's default 500ms).
    #[serde(default)]
    pub threshold: Option<Dur>,
    /// Whether the routine stops when its AbortSignal fires (default false).
    #[serde(default)]
    pub routine_checks_signal: bool,
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
    ExpireMsAsSeconds,
}

impl RedlockSpec {
    /// The options this spec gives for `ttl_ms`, or why not.
    pub fn options(&self, ttl_ms: u64) -> Result<RedlockOptions, String> {
        let preset = self.preset.as_deref().unwrap_or("redis-docs");
        let mut o = presets::redlock(preset, ttl_ms).ok_or_else(|| {
            format!(
                "unknown redlock preset {preset:?}; known: {}",
                presets::REDLOCK.join(", ")
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
        if let Some(v) = self.jitter_added_only {
            o.jitter_added_only = v;
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
                ExtendModeSpec::ExpireMsAsSeconds => ExtendMode::ExpireMsAsSeconds,
            };
            o.extend = Some((e.every.ns() / NS_PER_MS, mode));
        }
        if let Some(v) = self.start_before_retries {
            o.start_before_retries = v;
        }
        if let Some(a) = self.auto_extend {
            o.auto_extend = Some(AutoExtend {
                threshold_ms: a.threshold.map_or(500, |d| d.ns() / NS_PER_MS),
                routine_checks_signal: a.routine_checks_signal,
            });
        }
        if let Some(v) = self.fail_fast {
            o.fail_fast = v;
        }
        if let Some(v) = self.raise_on_node_error {
            o.raise_on_node_error = v;
        }
        if self.shared_mutex == Some(true) && preset != "redsync" {
            // node-redlock, redlock-py and redlock-rb hand each acquire its own lock object.
            return Err(format!(
                "redlock.shared_mutex: only redsync keeps the value in the Mutex its goroutines share (preset \"redsync\"), not {preset:?}"
            ));
        }
        o.validate()?;
        Ok(o)
    }
}

/// redis-py's `Lock(...)` arguments (client/redis_py.rs has each default with its line).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisPySpec {
    /// `timeout`: `none` (the library's default: the key never expires) or `ttl` (the
    /// group's `ttl`). Required, so that a model says which it means.
    pub timeout: RedisPyTimeout,
    /// `sleep` between tries (default 100ms, lock.py:84).
    #[serde(default)]
    pub sleep: Option<Dur>,
    /// `blocking_timeout` (default: none, keep trying).
    #[serde(default)]
    pub blocking_timeout: Option<Dur>,
    /// `thread_local` (default true). False: the group's members are threads sharing one
    /// `Lock` object (`lock_object`), and so one token (redis/redis-py#416).
    #[serde(default)]
    pub thread_local: Option<bool>,
    /// The caller's `extend()`/`reacquire()` loop while holding.
    #[serde(default)]
    pub refresh: Option<RefreshSpec>,
    /// Retries of a timed-out command (default 10, redis-py ≥ 8.0's `DEFAULT_RETRY_COUNT`).
    #[serde(default)]
    pub retries: Option<Bounded<0, 100>>,
    /// What a release that failed on the network leaves: `clears_token` (v8.1.0's sync
    /// `Lock`, redis-py#3847; the default without `asyncio`) or `keeps_token` (asyncio ≥ 7.2.0,
    /// #3900, the default with it; sync with #4258), the caller then releasing again.
    #[serde(default)]
    pub release_error: Option<ReleaseErrorSpec>,
    /// `redis.asyncio.lock.Lock` (default false): the group's members are asyncio tasks of one
    /// event loop, so one thread, and `threading.local()` (asyncio/lock.py:155 at v8.1.0) gives
    /// them one token slot whatever `thread_local` says.
    #[serde(default)]
    pub asyncio: Option<bool>,
    /// Whether the group's members share one `Lock` object (`shared`, the default) or each
    /// make their own (`per_member`: `r.lock(name)` inside each thread or task).
    #[serde(default)]
    pub lock_object: Option<LockObjectSpec>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadIdSpec {
    PerMember,
    Shared,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockObjectSpec {
    Shared,
    PerMember,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseErrorSpec {
    ClearsToken,
    KeepsToken,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedisPyTimeout {
    None,
    Ttl,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefreshSpec {
    pub every: Dur,
    /// `extend(additional_time)`: adds this to the remaining TTL...
    #[serde(default)]
    pub extend: Option<Dur>,
    /// ...or replaces the TTL with it (`replace_ttl=True`).
    #[serde(default)]
    pub replace_ttl: bool,
    /// `reacquire()`: the TTL back to `timeout`.
    #[serde(default)]
    pub reacquire: bool,
}

impl RedisPySpec {
    /// The options for a group whose `ttl` is `ttl_ms` and whose members are named `group`.
    pub fn options(&self, ttl_ms: u64) -> Result<RedisPyOptions, String> {
        let refresh = match self.refresh {
            None => None,
            Some(r) => {
                let how = match (r.extend, r.reacquire) {
                    (Some(d), false) => Refresh::Extend {
                        additional_ms: d.ns() / NS_PER_MS,
                        replace_ttl: r.replace_ttl,
                    },
                    (None, true) if !r.replace_ttl => Refresh::Reacquire,
                    _ => {
                        return Err(
                            "redis_py.refresh: give either `extend: \"5s\"` (with `replace_ttl` if wanted) or `reacquire: true`".into(),
                        );
                    }
                };
                Some((r.every.ns() / NS_PER_MS, how))
            }
        };
        let o = RedisPyOptions {
            timeout_ms: match self.timeout {
                RedisPyTimeout::None => None,
                RedisPyTimeout::Ttl => Some(ttl_ms),
            },
            blocking_timeout_ms: self.blocking_timeout.map(|d| d.ns() / NS_PER_MS),
            // Set at lowering, one slot per group and world (`shares_token`).
            shared_token: None,
            refresh,
            command_retries: self
                .retries
                .map_or(redis_py::DEFAULT_RETRY_COUNT, |b| b.0 as u32),
            release_error: match (self.release_error, self.asyncio) {
                (Some(ReleaseErrorSpec::KeepsToken), _) | (None, Some(true)) => {
                    ReleaseError::KeepsToken
                }
                _ => ReleaseError::ClearsToken,
            },
        };
        o.validate()?;
        Ok(o)
    }

    /// One `Lock` object for the group, with one slot for all: threads with
    /// `thread_local=False` (redis-py#416), or asyncio tasks, which share their thread.
    pub(super) fn shares_token(&self) -> bool {
        self.lock_object != Some(LockObjectSpec::PerMember)
            && (self.thread_local == Some(false) || self.asyncio == Some(true))
    }

    pub(super) fn sleep_ns(&self) -> u64 {
        self.sleep
            .map_or(redis_py::DEFAULT_SLEEP_MS * NS_PER_MS, |d| d.ns())
    }
}

/// python-redis-lock's `Lock(...)` and `acquire(...)` arguments
/// (client/python_redis_lock.rs has each with its line).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonRedisLockSpec {
    /// `expire`: `none` (the library's default: no expiry) or `ttl` (the group's `ttl`, whole
    /// seconds). Required, so that a model says which it means.
    pub expire: RedisPyTimeout,
    /// `auto_renewal` (default false): a thread extends the key every `expire * 2/3`.
    #[serde(default)]
    pub auto_renewal: bool,
    /// `acquire(timeout=...)`, whole seconds (default: none).
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// `signal_expire` (default 1000ms).
    #[serde(default)]
    pub signal_expire: Option<Dur>,
    /// Not the library's: the caller INCRs a fencing counter after `acquire` and presents
    /// the token to the resource (needs `resource: (fencing: true)`).
    #[serde(default)]
    pub fenced: bool,
}

impl PythonRedisLockSpec {
    /// The options for a group whose `ttl` is `ttl_ms`.
    pub fn options(&self, ttl_ms: u64) -> Result<PythonRedisLockOptions, String> {
        let signal_expire_ms = match self.signal_expire {
            None => prl::DEFAULT_SIGNAL_EXPIRE_MS,
            Some(d) if d.ns().is_multiple_of(NS_PER_MS) => d.ns() / NS_PER_MS,
            Some(d) => {
                return Err(format!(
                    "python_redis_lock.signal_expire {d} is not a whole number of ms (PEXPIRE takes ms)"
                ));
            }
        };
        let o = PythonRedisLockOptions {
            expire_ms: match self.expire {
                RedisPyTimeout::None => None,
                RedisPyTimeout::Ttl => Some(ttl_ms),
            },
            auto_renewal: self.auto_renewal,
            timeout_ms: self.timeout.map(|d| d.ns() / NS_PER_MS),
            signal_expire_ms,
            fenced: self.fenced,
        };
        if let Some(d) = self.timeout
            && !d.ns().is_multiple_of(NS_PER_S)
        {
            return Err(format!(
                "python-redis-lock: timeout is whole seconds (`int(timeout)`, __init__.py:220-221): {d} is not"
            ));
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

/// Redisson's `RLock` options (client/redisson.rs has the sources).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedissonSpec {
    /// The release copied: "3.43.0", "3.44.0", "3.45.1" or "3.52.0".
    pub version: Pos<String>,
    /// `lock(leaseTime)`: this TTL and no watchdog (default: the watchdog, `ttl`).
    #[serde(default)]
    pub lease: Option<Dur>,
    /// Replicas Redisson counts (`connected_slaves`): evals are followed by `WAIT`. Redisson
    /// checks only in a config other than `useSingleServer()`: a single-server one is 0.
    #[serde(default)]
    pub replicas: Option<Bounded<0, 64>>,
    /// `slavesSyncTimeout` (default 1s).
    #[serde(default)]
    pub slaves_sync_timeout: Option<Dur>,
    /// Interrupt the caller's thread when its lock script is unanswered this long; the
    /// thread ends.
    #[serde(default)]
    pub interrupt_after: Option<Dur>,
    /// A lock reply after the interrupt unlocks (PR #7277) instead of arming the watchdog.
    #[serde(default)]
    pub late_acquire_unlocks: bool,
    /// Extra delay drawn for each renewal (a starved timer thread).
    #[serde(default)]
    pub renewal_delay: Option<DurRange>,
    /// The first renewal pass at or after this time meets another thread of the same
    /// RedissonClient unlocking another watchdog lock, whose entry vanishes under the pass
    /// (redisson#6472: fatal to the renewal task in 3.44.0-3.45.0).
    #[serde(default)]
    pub racing_unlock_at: Option<Dur>,
    /// `thread_id: shared`: the group's members call `lock()` from one thread of one client
    /// (reactive pipelines), so they share one `uuid:threadId` (redisson#4467). Default
    /// `per_member`: each its own (a thread each, or `lock(threadId)` with its own id).
    #[serde(default)]
    pub thread_id: Option<ThreadIdSpec>,
    /// `RFencedLock`: a token INCRed on the same Redis goes with the resource operations
    /// (needs `resource: (fencing: true)`).
    #[serde(default)]
    pub fenced: bool,
}

impl RedissonSpec {
    pub fn version(&self) -> Option<RedissonVersion> {
        RedissonVersion::from_name(&self.version)
    }
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitSpec {
    pub replicas: Bounded<1, 64>,
    pub timeout: Dur,
}

/// How a client that retries by itself (not Redlock, whose options say) waits: the delay
/// before retrying a failed attempt and how long a request may take.
#[derive(Clone, Copy, Debug)]
pub struct Retrying {
    pub retry: Pos<DurRange>,
    pub request_timeout: Option<Pos<Dur>>,
}
