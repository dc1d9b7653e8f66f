//! redis-py's `Lock` (redis/lock.py) as shipped, as of v8.1.0 (redis/redis-py@e013126, tag
//! v8.1.0; lock.py is unchanged from there to 34817ce2). The protocol runs in `LockClient`
//! (single.rs); this file holds what is redis-py's own: its options with their defaults and
//! the script texts, byte for byte.
//!
//! What the library does, with the lines it does it on (lock.py at v8.1.0):
//! - `timeout=None` by default (:83): `do_acquire` sends `SET name token NX` with `px=None`
//!   — no expiry — unless `timeout` is set and non-zero (`if self.timeout:`, :238-243);
//! - `sleep=0.1` (:84): a blocked `acquire` sleeps that long between tries (:232-235);
//! - `blocking=True`, `blocking_timeout=None` (:85-86): try forever, or stop when the next
//!   try would start after `monotonic() + blocking_timeout` (:224-225, :232-234);
//! - a fresh `uuid1` token per `acquire()` call (:215), stored in `self.local`: a
//!   `threading.local()` when `thread_local=True`, the default (:87, :153), else one
//!   `SimpleNamespace` every thread of the process shares — the token a thread releases with
//!   is then whichever thread acquired last (the timeline in the docstring, :119-130;
//!   redis/redis-py#416);
//! - `release()` clears the token and runs LUA_RELEASE_SCRIPT (:30-37, :265-285), raising
//!   `LockNotOwnedError` when it returns 0 (the key expired, or is someone else's); the token
//!   is cleared first, so a release that fails on the network cannot be made again and the key
//!   stays (redis-py#3847; `ReleaseError`);
//! - `extend(additional_time, replace_ttl=False)` adds to the remaining PTTL by default
//!   (LUA_EXTEND_SCRIPT :45-64, :287-319) and refuses a lock without a timeout (:302-303);
//!   `reacquire()` resets the TTL to `timeout` (LUA_REACQUIRE_SCRIPT :70-77, :321-345);
//! - the scripts are `register_script` objects (:157-165): redis-py's `Script.__call__`
//!   sends EVALSHA and, on NOSCRIPT, `SCRIPT LOAD` then EVALSHA again
//!   (redis/commands/core.py:10936-10942 at v8.1.0);
//! - from v8.0.0 (733f80ec, #4082) a connection has `socket_timeout =
//!   DEFAULT_SOCKET_TIMEOUT = 5` s (redis/_defaults.py:7, connection.py:811 at v8.1.0) and
//!   `Retry(ExponentialWithJitterBackoff(base 10 ms, cap 1 s), retries=10)` on connection and
//!   timeout errors (_defaults.py:37-39, client.py:285-290 at v8.1.0); up to 7.4.x
//!   `socket_timeout=None` and `Retry(ExponentialWithJitterBackoff(base=1, cap=10), 3)`
//!   (v7.4.1 client.py:222, 232-234).
//!
//! A timed-out acquire or release is sent again up to 10 times, as the default `Retry` of
//! v8.0.0 on does: a `SET NX` retried after its first try did land answers nil, so the thread
//! then waits for its own key (for ever with `timeout=None`).
//!
//! Simplifications: the token is fresh per attempt rather than per `acquire()` call (a
//! retried SET NX with the same token is no different while another holds the key);
//! `extend` and `reacquire` run on a timer the model sets (`refresh: (every: ...)`), as a
//! caller's own loop would, and are not retried.

use std::sync::{Arc, Mutex};

use crate::proto::Bytes;

/// redis/lock.py:30-37 at v8.1.0, whitespace included (its SHA1 is what EVALSHA names).
pub const RELEASE_SRC: &str = "
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('del', KEYS[1])
        return 1
    ";

/// redis/lock.py:45-64 at v8.1.0.
pub const EXTEND_SRC: &str = "
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        local expiration = redis.call('pttl', KEYS[1])
        if not expiration then
            expiration = 0
        end
        if expiration < 0 then
            return 0
        end

        local newttl = ARGV[2]
        if ARGV[3] == \"0\" then
            newttl = ARGV[2] + expiration
        end
        redis.call('pexpire', KEYS[1], newttl)
        return 1
    ";

/// redis/lock.py:70-77 at v8.1.0.
pub const REACQUIRE_SRC: &str = "
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('pexpire', KEYS[1], ARGV[2])
        return 1
    ";

/// `Lock.__init__`'s sleep default, lock.py:84.
pub const DEFAULT_SLEEP_MS: u64 = 100;
/// `DEFAULT_SOCKET_TIMEOUT`, redis/_defaults.py:7 (v8.1.0 onwards).
pub const DEFAULT_SOCKET_TIMEOUT_MS: u64 = 5_000;
/// `DEFAULT_RETRY_COUNT`, `DEFAULT_RETRY_BASE`, `DEFAULT_RETRY_CAP` (_defaults.py:37-39): the
/// `Retry(ExponentialWithJitterBackoff(base, cap), retries)` of every v8.1.0 client
/// (client.py:285-290), on `ConnectionError` and `TimeoutError` (retry.py:83-87).
pub const DEFAULT_RETRY_COUNT: u32 = 10;
pub const RETRY_BASE_MS: u64 = 10;
pub const RETRY_CAP_MS: u64 = 1_000;

/// What a holder does to its lock's TTL while it holds, on a timer the model sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refresh {
    /// `extend(additional_ms)`: adds to the remaining PTTL (replace_ttl=False, the default)
    /// or replaces it (replace_ttl=True).
    Extend {
        additional_ms: u64,
        replace_ttl: bool,
    },
    /// `reacquire()`: the TTL back to `timeout`.
    Reacquire,
}

/// What a failed `release()` leaves behind: the script sent, and every try of it failed on a
/// connection error or a timeout (after the client's own retries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseError {
    /// The sync `Lock` up to v8.1.0 (lock.py:269-276: `self.local.token = None` before
    /// `do_release`), and `redis.asyncio`'s before 7.2.0: the token is gone, a second
    /// `release()` raises `LockError` and sends nothing, and the key stays until its TTL —
    /// with `timeout=None`, for good (redis/redis-py#3847, reported on the asyncio `Lock`).
    ClearsToken,
    /// `redis.asyncio.lock.Lock` from 7.2.0 (334cb3b4, #3900: asyncio/lock.py:273-286 at
    /// v8.1.0) and the sync `Lock` with PR #4258 (merged after v8.1.0): the token is cleared
    /// once the script answered. Here the caller calls `release()` again, `sleep` later,
    /// until it answers.
    KeepsToken,
}

/// The `Lock(...)` arguments a model sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisPyOptions {
    /// `timeout` in ms; None is the library's default: the key never expires.
    pub timeout_ms: Option<u64>,
    /// `blocking_timeout` in ms; None: keep trying forever (the default).
    pub blocking_timeout_ms: Option<u64>,
    /// `thread_local=False`: every member of the group is a thread sharing one `Lock`
    /// object, and so its one token slot (`self.local`, a `SimpleNamespace`, lock.py:153).
    pub shared_token: Option<SharedToken>,
    /// Refresh the TTL every this many ms while holding, and how; None: never.
    pub refresh: Option<(u64, Refresh)>,
    /// Times a timed-out acquire or release command is sent again (`DEFAULT_RETRY_COUNT`).
    /// The refresh scripts are not retried (their timeout is not modelled).
    pub command_retries: u32,
    /// What a `release()` that failed on the network leaves (`ClearsToken`, v8.1.0's sync
    /// `Lock`, by default).
    pub release_error: ReleaseError,
}

/// The token slot of one lock object shared by the threads of a process (a redis-py `Lock`
/// with `thread_local=False`; a `*redsync.Mutex` shared by goroutines, `m.value`): the group's
/// members, in one run. Made per world (lowering runs per seed), so runs share nothing; the
/// mutex is never contended, as a run is single-threaded.
#[derive(Clone, Debug, Default)]
pub struct SharedToken(Arc<Mutex<Option<Bytes>>>);

impl PartialEq for SharedToken {
    fn eq(&self, other: &SharedToken) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for SharedToken {}

impl SharedToken {
    pub fn new() -> SharedToken {
        SharedToken::default()
    }
    /// `self.local.token = token` after a successful acquire (lock.py:228).
    pub fn store(&self, token: Bytes) {
        *self.0.lock().expect("one thread per run") = Some(token);
    }
    /// `self.local.token`, as extend reads it (lock.py:300, 311).
    pub fn get(&self) -> Option<Bytes> {
        self.0.lock().expect("one thread per run").clone()
    }
    /// `expected_token = self.local.token; self.local.token = None` (lock.py:269-275).
    pub fn take(&self) -> Option<Bytes> {
        self.0.lock().expect("one thread per run").take()
    }
}

impl RedisPyOptions {
    /// The library's defaults: no timeout, block forever, thread-local tokens.
    pub fn defaults() -> RedisPyOptions {
        RedisPyOptions {
            timeout_ms: None,
            blocking_timeout_ms: None,
            shared_token: None,
            refresh: None,
            command_retries: DEFAULT_RETRY_COUNT,
            release_error: ReleaseError::ClearsToken,
        }
    }

    /// Why these options cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if self.refresh.is_some() && self.timeout_ms.is_none() {
            // lock.py:302-303 / :327-331.
            return Err(
                "redis-py: extend/reacquire need a timeout (\"Cannot extend a lock with no timeout\", lock.py:302-303)"
                    .into(),
            );
        }
        if self.refresh.is_some_and(|(every, _)| every == 0) {
            return Err("redis-py: extend interval must be > 0 ms".into());
        }
        if self.timeout_ms == Some(0) {
            return Err(
                "redis-py: timeout 0 means no expiry in redis-py (`if self.timeout:`, lock.py:238); say `timeout: none`"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::command::{hex, sha1_of};

    #[test]
    fn redis_py_lock_defaults_are_no_timeout_100ms_sleep_block_forever_thread_local() {
        let d = RedisPyOptions::defaults();
        assert_eq!(d.timeout_ms, None);
        assert_eq!(d.blocking_timeout_ms, None);
        assert_eq!(d.shared_token, None);
        assert_eq!(d.refresh, None);
        assert_eq!(DEFAULT_SLEEP_MS, 100);
        assert_eq!(DEFAULT_SOCKET_TIMEOUT_MS, 5_000);
    }

    #[test]
    fn the_release_script_is_byte_for_byte_redis_py_s() {
        // The SHA1 of lock.py:30-37's string: what redis-py's EVALSHA names.
        assert_eq!(
            hex(&sha1_of(RELEASE_SRC.as_bytes())),
            hex(&sha1_of(
                b"\n        local token = redis.call('get', KEYS[1])\n        if not token or token ~= ARGV[1] then\n            return 0\n        end\n        redis.call('del', KEYS[1])\n        return 1\n    "
            ))
        );
        assert!(RELEASE_SRC.starts_with('\n') && RELEASE_SRC.ends_with("\n    "));
    }

    #[test]
    fn threads_sharing_a_lock_object_release_with_the_last_token_stored() {
        // The docstring's timeline (lock.py:119-130): thread-1 stores "abc", thread-2 later
        // stores "xyz"; thread-1's release then takes "xyz".
        let shared = SharedToken::new();
        let (t1, t2) = (shared.clone(), shared.clone());
        t1.store(Bytes::from("abc"));
        t2.store(Bytes::from("xyz"));
        assert_eq!(t1.take(), Some(Bytes::from("xyz")));
        // thread-2's own release then finds no token: "Cannot release a lock that's not
        // owned" (lock.py:270-274), and sends nothing.
        assert_eq!(t2.take(), None);
        assert_ne!(
            SharedToken::new(),
            shared,
            "each Lock object has its own slot"
        );
    }

    #[test]
    fn extending_a_lock_without_timeout_is_refused_as_redis_py_refuses_it() {
        let o = RedisPyOptions {
            refresh: Some((1_000, Refresh::Reacquire)),
            ..RedisPyOptions::defaults()
        };
        assert!(o.validate().unwrap_err().contains("no timeout"));
        let o = RedisPyOptions {
            timeout_ms: Some(10_000),
            ..o
        };
        assert_eq!(o.validate(), Ok(()));
    }
}
