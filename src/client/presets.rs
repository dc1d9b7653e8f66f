//! The Redlock presets: each library's defaults as `RedlockOptions`, by name. The table
//! lives above the protocol (redlock.rs) and the libraries' own files (node_redlock.rs,
//! redsync.rs), which supply their scripts and options; none of them looks a preset up.

use crate::client::node_redlock;
use crate::client::redlock::{ElapsedClock, RedlockOptions, ScriptTexts};
use crate::client::redsync;

/// The names `redlock` accepts.
pub const REDLOCK: [&str; 11] = [
    "redis-docs",
    "redlock-rb",
    "redlock-rb-2",
    "redlock-py",
    "redlock-py-1.0.8",
    "node-redlock-4",
    "node-redlock",
    "node-redlock-using",
    "node-redlock-using-head",
    "redsync",
    "pottery",
];

/// Library defaults for a lock of `ttl_ms`. Presets model `acquire()` and leave extending
/// to the caller, but for `node-redlock-using*`: node-redlock's `using()` auto-extends at
/// expiration − 500 ms (v5.0.0-beta.2 src/index.ts:709-714) and aborts its signal when
/// that fails (:731-732); Redisson's watchdog is the `watchdog` algorithm. Libraries that set no per-node timeout of their own
/// (redlock-py: redis-py ≤ 7.4 has `socket_timeout=None`, from 8.0.0 the default is 5 s
/// with 10 retries, redis/_defaults.py, 733f80ec; node-redlock: ioredis has no
/// `commandTimeout`) get the docs' 50 ms: a real client learns of a dead node from a
/// refused connection, at once or (redis-py ≥ 7.2.0, which retries a refused connect with
/// its backoff, 4a6c2c0f) after some 4 s with 8.x's defaults; a node that never answers
/// can only stand in for it (docs/libraries.md, "What the models leave out").
pub fn redlock(name: &str, ttl_ms: u64) -> Option<RedlockOptions> {
    let base = RedlockOptions {
        ttl_ms,
        drift_factor_ppm: 10_000,
        drift_plus_2ms: true,
        clock: ElapsedClock::Monotonic,
        per_node_timeout_ms: 50,
        retry_count: 3,
        retry_delay_ms: 200,
        retry_jitter_ms: 0,
        random_delay: false,
        jitter_added_only: false,
        skip_validity_check: false,
        stop_at_validity: false,
        extend: None,
        start_before_retries: false,
        auto_extend: None,
        fail_fast: false,
        raise_on_node_error: false,
        retry_keeps_keys: false,
        release_retries: false,
        scripts: ScriptTexts::GENERIC,
        shared_value: None,
    };
    let o = match name {
        // An idealised reference, not the docs' numbers: the docs page states "the
        // current time in milliseconds", "a few milliseconds" of drift and "a random
        // delay" (distributed-locks.md:117, 127, 133); 1 % + 2 ms, 3 tries and up to
        // 200 ms are antirez's redlock.rb (:4-6, 66, 80); monotonic time is antirez's 2016
        // advice (his code uses `Time.now`); the per-node timeout is the top of the docs'
        // 5–50 ms (:118).
        "redis-docs" => RedlockOptions {
            random_delay: true,
            ..base
        },
        // redlock-rb before 1.0, precisely 0.1.x (0.1.8 lib/redlock/client.rb: `Time.now`
        // :201-202, `sleep(rand(200))` :169, 3 tries :8/:162, `DEFAULT_REDIS_TIMEOUT =
        // 0.1` :7), and antirez's redlock.rb. Current redlock-rb (≥ 1.0.0, 2018-12-11)
        // measures on CLOCK_MONOTONIC (2.0.6 client.rb:28-35) and makes 4 attempts
        // 200 + rand(50) ms apart: the preset "redlock-rb-2". This name keeps its meaning
        // because model files name it.
        "redlock-rb" => RedlockOptions {
            clock: ElapsedClock::Wall,
            per_node_timeout_ms: 100,
            random_delay: true,
            ..base
        },
        // redlock-rb ≥ 1.0, as of 2.0.6 (leandromoreira/redlock-rb@f176e57, tag 2.0.6,
        // lib/redlock/client.rb):
        // - clock: `Process.clock_gettime(CLOCK_MONOTONIC)` by default (:30-35), read
        //   around the attempt (`timed`, :368-371);
        // - drift: `(ttl * CLOCK_DRIFT_FACTOR).to_i + 2` with `CLOCK_DRIFT_FACTOR = 0.01`
        //   (:25, :365), validity `ttl - time_elapsed - drift(ttl)` (:314);
        // - attempts: `retry_count + 1` (:268) with `DEFAULT_RETRY_COUNT = 3` (:22) = 4;
        // - delay: `retry_delay + rand(retry_jitter)` ms (:297) with `DEFAULT_RETRY_DELAY =
        //   200` (:23) and `DEFAULT_RETRY_JITTER = 50` (:24): [200, 250) ms;
        // - per-node timeout: `DEFAULT_REDIS_TIMEOUT = 0.1` s (:21, :49-52).
        // Simplifications: the library asks the servers one after another (:306) and
        // accepts `validity >= 0` (:316) on whole ms (`.to_i`, :32); the model asks in
        // parallel and needs validity > 0 in ns. Its extend, `lock(res, ttl, extend:
        // info)`, makes one attempt (:268) and sends `allow_new_lock = 'yes'` unless
        // `extend_only_if_locked` (:302), and LOCK_SCRIPT then SETs a missing key
        // (lib/redlock/scripts.rb:17-18): an `extend` in a model using this preset
        // should be `set_if_missing`. Like every preset, it does not extend by itself.
        "redlock-rb-2" => RedlockOptions {
            per_node_timeout_ms: 100,
            retry_count: 4,
            retry_delay_ms: 200,
            retry_jitter_ms: 50,
            jitter_added_only: true,
            ..base
        },
        // redlock-py 1.0.8 (SPSCommerce/redlock-py@42ef491, redlock/__init__.py):
        // `time.time()` around each attempt (:100, :108), `int(ttl * 0.01) + 2` (:42, :95),
        // `validity > 0 and n >= quorum` (:109-110), 3 tries (:40, :98) with a fixed
        // `time.sleep(0.2)` (:41, :121). Without its partial-error path: that is
        // "redlock-py-1.0.8". This name keeps its meaning because model files name it.
        "redlock-py" => RedlockOptions {
            clock: ElapsedClock::Wall,
            ..base
        },
        // redlock-py 1.0.8 as shipped: as "redlock-py", and an attempt that won a quorum
        // while some server raised a RedisError raises `MultipleRedlockException` without
        // unlocking (:111-112) — the keys it set on the others stay until their TTL.
        // Simplification: the library asks the servers one after another (:102-107),
        // the model in parallel.
        "redlock-py-1.0.8" => RedlockOptions {
            clock: ElapsedClock::Wall,
            raise_on_node_error: true,
            ..base
        },
        "redsync" => redsync::preset(ttl_ms, base),
        // pottery's `Redlock` (brainix/pottery@e2f4042, v3.0.1 and later; the units are
        // seconds since v3.0.0, 021c5a9 #627), pottery/redlock.py:
        // - SET NX PX `auto_release_time` on every master at once (:278-285, 325-329), and
        //   success as soon as a majority said yes with validity `auto_release_time -
        //   drift - elapsed > 0` left (:330-348), drift `auto_release_time * 0.01 + .002`
        //   (:230, 315-316): the success path of `fail_fast`; a failed attempt waits for
        //   every reply before releasing (:350-352), where `fail_fast` decides at a
        //   quorum of refusals (the next attempt comes that much earlier here);
        // - elapsed on `timeit.default_timer`, the monotonic `perf_counter` (timer.py);
        // - `acquire()` blocks with no limit by default (`timeout=-1`, :416-424),
        //   `random.uniform(0, 0.2)` s apart (:231, 423): every attempt a round can make;
        // - no per-node timeout of its own (redis-py's socket timeout): the docs' 50 ms,
        //   as for the other libraries that set none.
        "pottery" => RedlockOptions {
            retry_count: u32::MAX,
            random_delay: true,
            fail_fast: true,
            ..base
        },
        // node-redlock-4, node-redlock, node-redlock-using, node-redlock-using-head.
        _ => return node_redlock::preset(name, base),
    };
    Some(o)
}
