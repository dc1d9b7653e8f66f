//! redsync (go-redsync/redsync) as shipped, v4.17.0: its preset and its scripts, byte for
//! byte. The protocol runs in `RedlockClient` (redlock.rs).

use crate::client::redlock::{RedlockOptions, ScriptTexts};

/// redsync v4.17.0's `deleteScript` (scripts.go:5-14, a Go raw string; SHA1
/// e950836ed1e694540c503ef9972b8de518044d3b, pinned there): `DEL` where the key holds the
/// value, -1 where it is gone (`ErrLockAlreadyExpired`), 0 where it is another's.
pub const DELETE_SRC: &str = "\n\tlocal val = redis.call(\"GET\", KEYS[1])\n\tif val == ARGV[1] then\n\t\treturn redis.call(\"DEL\", KEYS[1])\n\telseif val == false then\n\t\treturn -1\n\telse\n\t\treturn 0\n\tend\n";

/// redsync v4.17.0's `touchScript` (scripts.go:26-32; SHA1
/// d75bb8b5bd13532ddedd17762e772346e39b321e): `PEXPIRE` where the key holds the value, else 0.
/// `WithSetNXOnExtend` sends `touchWithSetNXScript` instead (`redlock::TOUCH_WITH_SET_NX_SRC`).
pub const TOUCH_SRC: &str = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telse\n\t\treturn 0\n\tend\n";

/// What redsync sends: `SET NX PX` (`SetNX`), `deleteScript` and `touchScript`.
pub const SCRIPTS: ScriptTexts = ScriptTexts {
    acquire: None,
    release: DELETE_SRC,
    extend: TOUCH_SRC,
};

/// The `redsync` preset for a Mutex of `ttl_ms` (`WithExpiry`), on `base` (the `redis-docs`
/// defaults).
///
/// redsync v4.17.0 (go-redsync/redsync@79f6ba2; HEAD 5560bd2 has the same code):
/// `NewMutex` defaults (redsync.go:29-42): expiry 8 s, tries 32, delay
/// `rand.Intn(250-50)+50` ms (:12-13, :34-36), driftFactor 0.01, timeoutFactor 0.05.
/// Each attempt (mutex.go:104-119): `start := time.Now()` (Go's monotonic reading),
/// one context deadline of `expiry · timeoutFactor` for the whole fan-out (:107),
/// `until = now + expiry - (now - start) - expiry·driftFactor` (no +2 ms, :115),
/// success iff `n >= quorum && now.Before(until)` (:116); `Until()` returns that
/// `until` (:50-52), and ExtendContext recomputes it (:158-173). The acquire is `SetNX`
/// (:227, `SET NX PX`), the release `deleteScript` (:240) and the extend `touchScript`
/// (:257-262): `DELETE_SRC`, `TOUCH_SRC`. Options:
/// `WithFailFast` is `fail_fast` (mutex.go:304-314); `WithSetNXOnExtend` is extend
/// mode `set_if_missing` (redsync.go:93-101, scripts.go:16-24 touchWithSetNXScript,
/// sent as it is: `TOUCH_WITH_SET_NX_SRC`; added by PR #149, c541100, released in
/// v4.12.0, whose `touch` also released the lock on every node when the script
/// errored on one, a cleanup v4.12.1 removed, 879d3ae). Extend has no deadline of
/// its own (`Extend()` passes `context.Background()`, :153-155); the model's
/// fan-outs all have `per_node_timeout`. The delay is drawn in [50, 250] ms (Go's
/// is [50, 250)). A Mutex shared by goroutines is `shared_value`.
pub fn preset(ttl_ms: u64, base: RedlockOptions) -> RedlockOptions {
    RedlockOptions {
        drift_plus_2ms: false,
        per_node_timeout_ms: (ttl_ms / 20).max(1),
        retry_count: 32,
        retry_delay_ms: 150,
        retry_jitter_ms: 100,
        scripts: SCRIPTS,
        ..base
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::command::{hex, sha1_of};

    #[test]
    fn redsync_s_scripts_are_byte_for_byte_the_shipped_ones_by_the_sha1_it_pins() {
        // scripts.go:14, :32: the hashes redsync passes to `redis.NewScript`.
        assert_eq!(
            hex(&sha1_of(DELETE_SRC.as_bytes())),
            "e950836ed1e694540c503ef9972b8de518044d3b"
        );
        assert_eq!(
            hex(&sha1_of(TOUCH_SRC.as_bytes())),
            "d75bb8b5bd13532ddedd17762e772346e39b321e"
        );
    }
}
