//! The model against a real Redis: seeded random command sequences go to a `redis-server`
//! this test starts on a loopback port of its own and to the single-node model that replays
//! the conformance corpus (`conformance::NodeReplay`, fed the same commands at the same
//! virtual times); the first reply that differs fails the test with the seed, the sequence so
//! far and both replies.
//!
//! Every sequence is also recorded as a corpus case (`target/differential/recorded.txt`), its
//! replies taken from the real server, so that new cases can be copied into
//! `tests/conformance/recorded/` and a fresh clone replays them offline.
//!
//! `.ci/run` installs Debian's `redis-server` when it is missing and sets
//! `DISTLOCK_REDIS_TEST=require`, so CI fails without a server; elsewhere the test says (past
//! libtest's capture) that it skipped. `DISTLOCK_REDIS_SERVER` names another binary;
//! `DISTLOCK_DIFF_SEEDS=N` adds N seeds to the fixed list.
//!
//! Time: the model's clock and the server's are not the same clock, so
//! - the model runs each command at the ms the test measured just before sending it (`@T`
//!   since the case start, floored to a whole second as the corpus's cases are);
//! - no key is touched while its deadline is less than [`DANGER_MS`] ahead: the test waits
//!   until it has passed by [`PAST_MARGIN_MS`] instead (that is how short TTLs get observed
//!   expiring);
//! - GT/LT never compare two deadlines closer than [`DEADLINE_GAP_MS`];
//! - TTL/EXPIRETIME (rounded to whole seconds) near a rounding edge are sent as PTTL /
//!   PEXPIRETIME instead;
//! - ms-valued replies (PTTL, PEXPIRETIME, a script's pttl) compare as the corpus's `~N`;
//! - a BLPOP that may block goes on a second connection (`[b]`, [`BLOCKER`]): at most one
//!   is parked at a time, its reply is read when the model has answered it (a push, a
//!   RENAME, a COPY, a script or transaction of the main connection) and looked for
//!   otherwise; no command is sent from [`DANGER_MS`] before its deadline until a cron
//!   tick and [`PAST_MARGIN_MS`] after it (both sides time it out on their own tick).
//!
//! The sequence a seed produces depends on those time probes, so the recorded case, not the
//! seed, is what reproduces a run exactly.

// A real server runs in real time: this test reads the host clock (to stamp each command's
// `@T`, to bound waits) where the simulation may not.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use distlock_sim::conformance::corpus::{Arg, Expect, IntPattern, resolve_arg};
use distlock_sim::conformance::runner::CASE_START_UNIX_MS;
use distlock_sim::conformance::{NodeReplay, Sent, run_text};
use distlock_sim::proto::Reply;
use distlock_sim::rng::Prng;
use sha1::{Digest, Sha1};

/// Seeds every run compares (CI's list).
const CI_SEEDS: [u64; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
const COMMANDS_PER_SEED: usize = 400;
/// A key whose deadline is less than this far ahead is not touched: the test waits first.
const DANGER_MS: i64 = 400;
/// ... until the deadline is this far behind.
const PAST_MARGIN_MS: i64 = 120;
/// GT/LT options never compare deadlines closer than this.
const DEADLINE_GAP_MS: i64 = 200;
/// TTL/EXPIRETIME are not sent within this many ms of their rounding edge (x500 ms).
const ROUNDING_EDGE_MS: i64 = 100;

const KEYS: [&str; 4] = ["lock", "lock2", "n", "s"];
const TOKENS: [&str; 3] = ["a", "b", "c"];
const VALUES: [&str; 9] = [
    "a",
    "b",
    "10",
    "-7",
    "0",
    "9223372036854775806",
    "x1",
    "3.5",
    "",
];

// ----- the libraries' scripts, exactly as they ship them (whitespace included) -----

/// redis-py `Lock` (redis/lock.py at 34817ce2, 2026-08-07): triple-quoted strings.
const REDIS_PY_RELEASE: &str = "
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('del', KEYS[1])
        return 1
    ";
const REDIS_PY_EXTEND: &str = "
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
const REDIS_PY_REACQUIRE: &str = "
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('pexpire', KEYS[1], ARGV[2])
        return 1
    ";
/// redsync v4 (scripts.go at 5560bd2d, 2026-07-23): Go raw strings, tab-indented; the
/// SHA-1 each ships with is checked below.
const REDSYNC_DELETE: &str = "\n\tlocal val = redis.call(\"GET\", KEYS[1])\n\tif val == ARGV[1] then\n\t\treturn redis.call(\"DEL\", KEYS[1])\n\telseif val == false then\n\t\treturn -1\n\telse\n\t\treturn 0\n\tend\n";
const REDSYNC_TOUCH_NX: &str = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telseif redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2], \"NX\") then\n\t\treturn 1\n\telse\n\t\treturn 0\n\tend\n";
const REDSYNC_TOUCH: &str = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telse\n\t\treturn 0\n\tend\n";
/// node-redlock v5.0.0-beta.2 (src/index.ts at afe5cf92, 2025-08-20): template literals.
const REDLOCK_JS_ACQUIRE: &str = "
  -- Return 0 if an entry already exists.
  for i, key in ipairs(KEYS) do
    if redis.call(\"exists\", key) == 1 then
      return 0
    end
  end

  -- Create an entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])
  end

  -- Return the number of entries added.
  return #KEYS
";
const REDLOCK_JS_EXTEND: &str = "
  -- Return 0 if an entry exists with a *different* lock value.
  for i, key in ipairs(KEYS) do
    if redis.call(\"get\", key) ~= ARGV[1] then
      return 0
    end
  end

  -- Update the entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])
  end

  -- Return the number of entries updated.
  return #KEYS
";
const REDLOCK_JS_RELEASE: &str = "
  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call(\"get\", key) == ARGV[1] then
      redis.pcall(\"del\", key)
      count = count + 1
    end
  end

  -- Return the number of entries removed.
  return count
";
/// redlock-rb 2.0.6 (lib/redlock/scripts.rb at f176e574, 2023-10-30): `<<-eos` heredocs,
/// which keep their indentation.
const REDLOCK_RB_UNLOCK: &str = "      if redis.call(\"get\",KEYS[1]) == ARGV[1] then
        return redis.call(\"del\",KEYS[1])
      else
        return 0
      end
";
const REDLOCK_RB_LOCK: &str = "      if (redis.call(\"exists\", KEYS[1]) == 0 and ARGV[3] == \"yes\") or redis.call(\"get\", KEYS[1]) == ARGV[1] then
        return redis.call(\"set\", KEYS[1], ARGV[1], \"PX\", ARGV[2])
      end
";
const REDLOCK_RB_PTTL: &str =
    "      return { redis.call(\"get\", KEYS[1]), redis.call(\"pttl\", KEYS[1]) }
";

/// Redisson 4.7.1-SNAPSHOT (at 66863978, 2026-08-21): Java string concatenations, joined.
/// RLock's lock (RedissonLock.java `tryLockInnerAsync`), unlock (`unlockInnerAsync`: it
/// PUBLISHes to waiters and sets an unlock latch) and the watchdog's renewal
/// (renewal/LockTask.java). They need hashes (and PUBLISH), which the model is being given
/// in another change: until `Command::parse` knows every command in `needs`, these stay out
/// of the mix (the summary names what was left out), and come in by themselves after.
const REDISSON_LOCK: &str = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
const REDISSON_UNLOCK: &str = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ";
const REDISSON_RENEW: &str = "local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;";

/// Commands the mix sends only once the model parses them.
const GATED_COMMANDS: [&str; 11] = [
    "getdel", "getex", "hset", "hget", "hexists", "hincrby", "hdel", "hgetall", "hlen", "hmget",
    "publish",
];

/// Issue 27's commands (strings, keys, hashes, lists, connection and server commands): sent
/// by `more_op` (BLPOP by `blpop_op`), each only once the model parses it, like
/// `GATED_COMMANDS`.
const MORE_COMMANDS: [&str; 29] = [
    "strlen",
    "append",
    "setrange",
    "rename",
    "renamenx",
    "copy",
    "object",
    "echo",
    "hkeys",
    "hvals",
    "hsetnx",
    "hstrlen",
    "hmset",
    "lpush",
    "lpop",
    "llen",
    "readonly",
    "readwrite",
    "auth",
    "randomkey",
    "blpop",
    "hincrbyfloat",
    "move",
    "swapdb",
    "hello",
    "client",
    "info",
    "function",
    "fcall",
];

/// Function libraries as a lock library might ship them (Redis 7.0 functions), one function
/// each: FUNCTION LIST lists a library's functions, and libraries, in an order that
/// depends on the server's random hash seed, so the mix lists one library at a time.
const FUNCTION_LIBS: [(&str, &str); 4] = [
    (
        "dl_lock",
        "#!lua name=dl_lock\nredis.register_function('dl_lock', function(keys, args) return redis.call('set', keys[1], args[1], 'NX', 'PX', args[2]) end)",
    ),
    (
        "dl_unlock",
        "#!lua name=dl_unlock\nredis.register_function{function_name='dl_unlock', callback=function(keys, args) if redis.call('get', keys[1]) == args[1] then return redis.call('del', keys[1]) end return 0 end, description='compare and delete'}",
    ),
    (
        "dl_owner",
        "#!lua name=dl_owner\nredis.register_function{function_name='dl_owner', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}",
    ),
    // A second version of dl_owner (FUNCTION LOAD REPLACE), and an error in the code.
    (
        "dl_owner",
        "#!lua name=dl_owner\nredis.register_function{function_name='dl_owner', callback=function(keys) return {redis.call('exists', keys[1]), redis.call('type', keys[1])} end, flags={'no-writes', 'allow-stale'}}",
    ),
];

/// The db COPY's `DB n` copies into: no SELECT of the mix goes there, and only values
/// without a deadline are copied there, so no key of it is ever near its expiry.
const COPY_DB: &str = "3";

/// The connection a BLPOP that may block is sent on.
const BLOCKER: &str = "b";
/// The key every BLPOP of the mix names: no other command names it, so it is a list or
/// missing, and a push to it ends a BLPOP without a timeout at the end of a seed.
const QUEUE_KEY: &str = "q";
/// BLPOP's timeouts: the text and the model's ms (`None`: none, `-0.0005` included: its
/// ceiling is zero).
const BLPOP_TIMEOUTS: [(&str, Option<u64>); 6] = [
    ("0", None),
    ("0.3", Some(300)),
    ("0.5", Some(500)),
    ("1", Some(1000)),
    ("1.5", Some(1500)),
    ("-0.0005", None),
];
/// The cron period: a timeout passes at the first tick after its deadline.
const CRON_MS: u64 = 100;

/// A db no other command of the mix writes: RANDOMKEY's 0- and 1-key cases are sent there
/// when the selected db holds more keys.
const RANDOMKEY_DB: &str = "4";

/// RANDOMKEY where the db holds more than one key: does it find one?
const RANDOMKEY_FOUND: &str = "return redis.call('randomkey') ~= false";

/// Does the model know `name` (is it past "unknown command")?
fn model_knows(name: &str) -> bool {
    !matches!(
        distlock_sim::proto::Command::parse(&[name.as_bytes()]),
        Err(distlock_sim::proto::command::ParseError::Unknown { .. })
    )
}

#[derive(Clone, Copy, Debug)]
enum ScriptArgs {
    /// ARGV = token
    Token,
    /// ARGV = token, ttl_ms
    TokenTtl,
    /// ARGV = token, ttl_ms, "0" (add to the TTL left) | "1" (replace it)
    TokenTtlAdditive,
    /// ARGV = token, ttl_ms, "yes" | "no" (may a missing key be set)
    TokenTtlAllowNew,
    /// No ARGV.
    Nothing,
    /// Redisson lock: ARGV = lease_ms, lock name (`<uuid>:<thread id>`).
    RedissonLock,
    /// Redisson unlock: KEYS = name, channel, latch; ARGV = message, lease_ms, lock name,
    /// "publish", latch ttl_ms.
    RedissonUnlock,
    /// Redisson renewal: ARGV = lease_ms, then one lock name per key.
    RedissonRenew,
}

struct LibScript {
    name: &'static str,
    src: &'static str,
    /// Most keys the library passes (node-redlock passes one per resource).
    max_keys: usize,
    args: ScriptArgs,
    /// Does the reply hold a PTTL (compared as `~N`)?
    returns_pttl: bool,
    /// Commands it calls that the model may not have yet (lower-case).
    needs: &'static [&'static str],
}

const SCRIPTS: &[LibScript] = &[
    LibScript {
        name: "redis-py-release",
        src: REDIS_PY_RELEASE,
        max_keys: 1,
        args: ScriptArgs::Token,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "redis-py-extend",
        src: REDIS_PY_EXTEND,
        max_keys: 1,
        args: ScriptArgs::TokenTtlAdditive,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "redis-py-reacquire",
        src: REDIS_PY_REACQUIRE,
        max_keys: 1,
        args: ScriptArgs::TokenTtl,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "redsync-delete",
        src: REDSYNC_DELETE,
        max_keys: 1,
        args: ScriptArgs::Token,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "redsync-touch",
        src: REDSYNC_TOUCH,
        max_keys: 1,
        args: ScriptArgs::TokenTtl,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "redsync-touch-setnx",
        src: REDSYNC_TOUCH_NX,
        max_keys: 1,
        args: ScriptArgs::TokenTtl,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "node-redlock-acquire",
        src: REDLOCK_JS_ACQUIRE,
        max_keys: 2,
        args: ScriptArgs::TokenTtl,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "node-redlock-extend",
        src: REDLOCK_JS_EXTEND,
        max_keys: 2,
        args: ScriptArgs::TokenTtl,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "node-redlock-release",
        src: REDLOCK_JS_RELEASE,
        max_keys: 2,
        args: ScriptArgs::Token,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "redlock-rb-lock",
        src: REDLOCK_RB_LOCK,
        max_keys: 1,
        args: ScriptArgs::TokenTtlAllowNew,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "redlock-rb-unlock",
        src: REDLOCK_RB_UNLOCK,
        max_keys: 1,
        args: ScriptArgs::Token,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "redlock-rb-pttl",
        src: REDLOCK_RB_PTTL,
        max_keys: 1,
        args: ScriptArgs::Nothing,
        returns_pttl: true,
        needs: &[],
    },
    LibScript {
        name: "redisson-lock",
        src: REDISSON_LOCK,
        max_keys: 1,
        args: ScriptArgs::RedissonLock,
        returns_pttl: true,
        needs: &["hexists", "hincrby"],
    },
    LibScript {
        name: "redisson-unlock",
        src: REDISSON_UNLOCK,
        max_keys: 1,
        args: ScriptArgs::RedissonUnlock,
        returns_pttl: false,
        needs: &["hexists", "hincrby", "publish"],
    },
    LibScript {
        name: "redisson-renew",
        src: REDISSON_RENEW,
        max_keys: 2,
        args: ScriptArgs::RedissonRenew,
        returns_pttl: false,
        needs: &["hexists"],
    },
];

// ----- scripts as users write them, with the libraries Redis ships (cjson, cmsgpack, bit) -----

const USER_CJSON_STORE: &str = "local doc = {owner = ARGV[1], ttl = tonumber(ARGV[2]), tags = {ARGV[1], 'lock'}, ok = true, none = cjson.null}
redis.call('set', KEYS[1], cjson.encode(doc))
return redis.call('get', KEYS[1])";
const USER_CJSON_READ: &str = "local v = redis.call('get', KEYS[1])
if not v then return false end
local ok, doc = pcall(cjson.decode, v)
if not ok then return {'bad', doc} end
if type(doc) ~= 'table' then return {'scalar', tostring(doc), cjson.encode(doc)} end
return {'doc', tostring(doc.owner), tostring(doc.ttl), cjson.encode(doc.tags or {}), tostring(doc.none == cjson.null)}";
const USER_BIT_FLAGS: &str = "local v = tonumber(redis.call('get', KEYS[1])) or 0
local f = bit.bor(bit.band(v, 0xff00), bit.lshift(tonumber(ARGV[2]) % 256, 16), bit.tobit(v))
redis.call('set', KEYS[1], f)
return {f, bit.tohex(f), bit.tohex(f, -4), bit.bxor(f, 0x5a5a5a5a), bit.rol(f, 7), bit.ror(f, 3), bit.arshift(f, 4), bit.rshift(f, 4), bit.bnot(f), bit.bswap(f)}";
const USER_MSGPACK: &str = "local p = cmsgpack.pack({ARGV[1], tonumber(ARGV[2]), -tonumber(ARGV[2]), 1.5, {k = ARGV[1]}, true})
redis.call('set', KEYS[1], p)
local t = cmsgpack.unpack(redis.call('get', KEYS[1]))
return {#p, t[1], t[2], t[3], tostring(t[4]), t[5].k, tostring(t[6])}";

/// Users' scripts with issue 27's commands: a string built with APPEND/SETRANGE and its
/// encoding, a queue pushed and popped back (LPUSH/LPOP/LLEN, net nothing when the key was
/// free), a hand-off by RENAMENX or COPY REPLACE, ROLE refused (by pcall) beside ECHO.
const USER_STRINGS: &str = "local n = redis.call('append', KEYS[1], ARGV[1])
redis.call('setrange', KEYS[1], 0, ARGV[1])
return {n, redis.call('strlen', KEYS[1]), redis.call('get', KEYS[1]), redis.call('object', 'encoding', KEYS[1])}";
const USER_QUEUE: &str = "redis.call('lpush', KEYS[1], ARGV[1], ARGV[1])
return {redis.call('llen', KEYS[1]), redis.call('lpop', KEYS[1], 1), redis.call('lpop', KEYS[1]), redis.call('llen', KEYS[1])}";
const USER_HANDOFF: &str = "if #KEYS < 2 then return redis.call('object', 'encoding', KEYS[1]) end
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('renamenx', KEYS[1], KEYS[2]) end
return redis.call('copy', KEYS[1], KEYS[2], 'replace')";
const USER_ROLE: &str = "local r = redis.pcall('role')
return {r['err'], redis.call('echo', ARGV[1])}";
/// BLPOP refused in a script (NOSCRIPT), beside a non-blocking pop of the queue.
const USER_BLPOP: &str = "local r = redis.pcall('blpop', KEYS[1], 0)
return {r['err'], redis.call('lpop', 'q')}";

/// A script on RESP3 (`redis.setresp(3)`): a null is nil, HGETALL a `{map=...}` (returned
/// whole too: a RESP2 caller reads it as a flat array in the table's order).
const USER_RESP3: &str = "redis.setresp(3)
local v = redis.pcall('get', KEYS[1])
local h = redis.pcall('hgetall', 'h')
local n = 0
if h.map then for _ in pairs(h.map) do n = n + 1 end end
return {type(v), type(v) == 'table' and (v.err or 'table') or tostring(v), n, h.map and h.map['f1'] or false, h, redis.call('exists', KEYS[1])}";

/// A record packed with Lua's `struct` (a length-prefixed token and a double, aligned),
/// stored, read back and unpacked.
const USER_STRUCT: &str = "local p = struct.pack('>I2c0!4d', #ARGV[1], ARGV[1], tonumber(ARGV[2]))
redis.call('set', KEYS[1], p)
local s, d, nxt = struct.unpack('>I2c0!4d', redis.call('get', KEYS[1]))
return {p, s, tostring(d), nxt, struct.size('>I2!4d'), struct.unpack('<h', p)}";

/// Users' scripts: cjson (encode with nested tables and `cjson.null`, decode of whatever the
/// key holds, its errors caught by pcall), bit operations on a stored number, a cmsgpack
/// round trip through a key.
const USER_SCRIPTS: &[LibScript] = &[
    LibScript {
        name: "user-cjson-store",
        src: USER_CJSON_STORE,
        max_keys: 1,
        args: ScriptArgs::TokenTtl,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "user-cjson-read",
        src: USER_CJSON_READ,
        max_keys: 1,
        args: ScriptArgs::Token,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "user-bit-flags",
        src: USER_BIT_FLAGS,
        max_keys: 1,
        args: ScriptArgs::TokenTtl,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "user-msgpack",
        src: USER_MSGPACK,
        max_keys: 1,
        args: ScriptArgs::TokenTtl,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "user-struct",
        src: USER_STRUCT,
        max_keys: 1,
        args: ScriptArgs::TokenTtl,
        returns_pttl: false,
        needs: &[],
    },
    LibScript {
        name: "user-resp3",
        src: USER_RESP3,
        max_keys: 1,
        args: ScriptArgs::Nothing,
        returns_pttl: false,
        needs: &["hgetall"],
    },
    LibScript {
        name: "user-strings",
        src: USER_STRINGS,
        max_keys: 1,
        args: ScriptArgs::Token,
        returns_pttl: false,
        needs: &["append", "setrange", "strlen", "object"],
    },
    LibScript {
        name: "user-queue",
        src: USER_QUEUE,
        max_keys: 1,
        args: ScriptArgs::Token,
        returns_pttl: false,
        needs: &["lpush", "lpop", "llen"],
    },
    LibScript {
        name: "user-handoff",
        src: USER_HANDOFF,
        max_keys: 2,
        args: ScriptArgs::Token,
        returns_pttl: false,
        needs: &["renamenx", "copy", "object"],
    },
    LibScript {
        name: "user-role",
        src: USER_ROLE,
        max_keys: 1,
        args: ScriptArgs::Token,
        returns_pttl: false,
        needs: &["echo"],
    },
    LibScript {
        name: "user-blpop",
        src: USER_BLPOP,
        max_keys: 1,
        args: ScriptArgs::Token,
        returns_pttl: false,
        needs: &["blpop", "lpop"],
    },
];

fn sha1_hex(src: &str) -> String {
    Sha1::digest(src.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ----- output past libtest's capture -----

/// libtest captures `println!` in tests, not writes to the process's stdout handle.
fn say(line: &str) {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

// ----- the server -----

fn redis_server() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("DISTLOCK_REDIS_SERVER") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("redis-server"))
        .find(|p| p.is_file())
}

/// A `redis-server` of the test's own; killed when dropped, panics included.
struct Server {
    child: Child,
    port: u16,
    /// Its `--dir`, removed with it.
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Server {
    fn start(bin: &Path, dir: &Path) -> Server {
        // A free port: bind port 0, read it, let it go (another process could take it in
        // between; the start then fails visibly below).
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("bind a loopback port")
            .port();
        std::fs::create_dir_all(dir).unwrap();
        let log = std::fs::File::create(dir.join("redis.log")).unwrap();
        let child = Command::new(bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", bin.display()));
        Server {
            child,
            port,
            dir: dir.to_path_buf(),
        }
    }

    /// Connects once the server answers PING (at most 10 s).
    fn connect(&mut self) -> Resp {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("redis-server exited at start ({status}); see its redis.log");
            }
            if let Ok(s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let mut c = Resp::new(s);
                if c.call(&[b"PING".to_vec()]) == Reply::Status("PONG".into()) {
                    return c;
                }
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on port {} did not answer PING within 10 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

// ----- a tiny RESP2 client -----

struct Resp {
    out: TcpStream,
    input: BufReader<TcpStream>,
}

impl Resp {
    fn new(s: TcpStream) -> Resp {
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Resp {
            out: s.try_clone().unwrap(),
            input: BufReader::new(s),
        }
    }

    /// Sends an array of bulk strings, reads one reply.
    fn call(&mut self, argv: &[Vec<u8>]) -> Reply {
        self.send(argv);
        self.reply()
    }

    /// Sends an array of bulk strings without reading (a command that may block).
    fn send(&mut self, argv: &[Vec<u8>]) {
        let mut req = format!("*{}\r\n", argv.len()).into_bytes();
        for a in argv {
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        self.out.write_all(&req).expect("send to redis-server");
    }

    /// Has a reply come, or does one within `wait`?
    fn ready(&mut self, wait: Duration) -> bool {
        if !self.input.buffer().is_empty() {
            return true;
        }
        let stream = self.input.get_ref();
        stream
            .set_read_timeout(Some(wait.max(Duration::from_micros(1))))
            .unwrap();
        let got = match self.input.fill_buf() {
            Ok(b) => !b.is_empty(),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                false
            }
            Err(e) => panic!("read from redis-server: {e}"),
        };
        self.input
            .get_ref()
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        got
    }

    fn line(&mut self) -> String {
        let mut l = Vec::new();
        self.input
            .read_until(b'\n', &mut l)
            .expect("read from redis-server");
        assert!(l.ends_with(b"\r\n"), "a RESP line ends in CRLF: {l:?}");
        l.truncate(l.len() - 2);
        String::from_utf8(l).expect("RESP header lines are UTF-8")
    }

    fn reply(&mut self) -> Reply {
        let l = self.line();
        let (kind, rest) = l.split_at(1);
        match kind {
            "+" if rest == "OK" => Reply::Ok,
            "+" => Reply::Status(rest.to_string()),
            "-" => Reply::Error(rest.to_string()),
            ":" => Reply::Int(rest.parse().expect("RESP integer")),
            "$" => {
                let n: i64 = rest.parse().expect("RESP bulk length");
                if n < 0 {
                    return Reply::Nil;
                }
                let mut b = vec![0; n as usize + 2];
                self.input.read_exact(&mut b).expect("read a bulk string");
                b.truncate(n as usize);
                Reply::Bulk(b)
            }
            "*" => {
                let n: i64 = rest.parse().expect("RESP array length");
                if n < 0 {
                    return Reply::Nil;
                }
                Reply::Array((0..n).map(|_| self.reply()).collect())
            }
            _ => panic!("not a RESP2 reply: {l:?}"),
        }
    }
}

// ----- the command mix -----

/// How a reply compares between the server and the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Timing {
    #[default]
    Exact,
    /// Integers >= 100 in ms left (PTTL): within the corpus's tolerance.
    Ms,
    /// An absolute unix ms (PEXPIRETIME): within the tolerance, relative to the case start.
    AbsMs,
    /// An absolute unix second (EXPIRETIME): exact, relative to the case start.
    AbsS,
    /// A connection's id (CLIENT ID, the `id` of HELLO's reply): any integer, the server
    /// numbers every connection it ever had.
    ConnId,
    /// INFO's text: compared field by field (`conformance::info`).
    Info,
}

#[derive(Default)]
struct Op {
    /// `Some(BLOCKER)`: a BLPOP sent on the blocking connection.
    conn: Option<&'static str>,
    argv: Vec<Arg>,
    /// Keys it reads or writes (each must be away from its expiry edge). For the head of a
    /// transaction block: every key of the block.
    keys: Vec<&'static str>,
    timing: Timing,
    /// What the summary counts it as.
    label: String,
    /// The rest of a transaction block (WATCH ... MULTI ... EXEC), sent right after this
    /// one without probing the model in between (a probe would be queued in its MULTI).
    rest: Vec<Op>,
}

fn b(s: &str) -> Arg {
    Arg::Bytes(s.as_bytes().to_vec())
}

/// The model's answer to a read-only probe at `at_ms` (not recorded: it changes nothing a
/// later reply shows, since DBSIZE/KEYS are not in the mix).
fn probe_int(model: &mut NodeReplay, at_ms: u64, cmd: &str, key: &str) -> i64 {
    match model.execute(at_ms, &[b(cmd), b(key)]) {
        Reply::Int(n) => n,
        other => panic!("probe {cmd} {key}: {other}"),
    }
}

/// The model's DBSIZE at `at_ms` (a probe, as `probe_int`).
fn probe_dbsize(model: &mut NodeReplay, at_ms: u64) -> i64 {
    match model.execute(at_ms, &[b("DBSIZE")]) {
        Reply::Int(n) => n,
        other => panic!("probe DBSIZE: {other}"),
    }
}

struct Gen {
    rng: Prng,
    /// The scripts whose commands the model knows.
    scripts: Vec<&'static LibScript>,
    /// The `GATED_COMMANDS` the model knows.
    gated: Vec<&'static str>,
    /// The `MORE_COMMANDS` the model knows.
    more: Vec<&'static str>,
    /// A BLPOP is parked on the blocking connection: no other is sent there.
    blocker_busy: bool,
}

impl Gen {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, per_hundred: u64) -> bool {
        self.rng.below(100) < per_hundred
    }
    /// A key for a list command: "s" (the mix's key that may be a list) mostly, the queue
    /// key a parked BLPOP waits on now and then, another key rarely.
    fn list_key(&mut self) -> &'static str {
        match self.rng.below(10) {
            0..=5 => "s",
            6..=8 => QUEUE_KEY,
            _ => self.key(),
        }
    }

    fn key(&mut self) -> &'static str {
        // "n" holds integers most of the time, "s" is the one that may become a list.
        self.pick(&KEYS)
    }

    /// A relative TTL in ms: long (well past the sequence), now and then short (observed
    /// expiring after a wait), rarely zero or negative (deletes at once).
    fn ttl_ms(&mut self) -> i64 {
        match self.rng.below(40) {
            0 => 150 + self.rng.range_i64(0, 150),
            1 => self.pick(&[0, -1, -5000]),
            _ => self.pick(&[5000, 8000, 12000, 20000, 30000]) + self.rng.range_i64(0, 999),
        }
    }

    fn ttl_s(&mut self) -> i64 {
        match self.rng.below(40) {
            0 => self.pick(&[0, -1]),
            _ => self.pick(&[5, 8, 12, 20, 30]),
        }
    }

    /// A Redisson lock name: `<client uuid>:<thread id>`.
    fn redisson_name(&mut self) -> String {
        self.pick(&["uuid:1", "uuid:2"]).to_string()
    }

    /// Moves a GT/LT deadline away from the key's current one (compared at ms resolution,
    /// the server's clock and the model's could order two close deadlines differently).
    fn clear_of(current: i64, new: i64, step: i64) -> i64 {
        if current >= 0 && (new - current).abs() < DEADLINE_GAP_MS {
            step
        } else {
            0
        }
    }

    fn op(&mut self, model: &mut NodeReplay, at_ms: u64) -> Op {
        let t = at_ms as i64;
        match self.rng.below(100) {
            0..=2 => return self.select_op(),
            3..=8 => return self.transaction(t),
            9..=13 if self.more.contains(&"blpop") => return self.blpop_op(Some(model), at_ms),
            14..=15 if self.more.contains(&"fcall") => {
                let mut op = Op::default();
                op.argv = self.fcall_argv(&mut op);
                return op;
            }
            _ => {}
        }
        let mut op = Op::default();
        let k = self.key();
        match self.rng.below(100) {
            0..=15 => {
                op.keys.push(k);
                op.argv = vec![b("SET"), b(k), b(self.pick(&VALUES))];
                match self.rng.below(10) {
                    0..=2 => op.argv.push(b("NX")),
                    3..=4 => op.argv.push(b("XX")),
                    5 if self.chance(30) => op.argv.extend([b("NX"), b("XX")]),
                    _ => {}
                }
                let expiry = |g: &mut Gen, op: &mut Op| match g.rng.below(8) {
                    0 => op.argv.extend([b("EX"), b(&g.ttl_s().max(1).to_string())]),
                    1..=2 => op.argv.extend([b("PX"), b(&g.ttl_ms().max(1).to_string())]),
                    3 => op
                        .argv
                        .extend([b("EXAT"), Arg::UnixS(t / 1000 + g.ttl_s().max(1))]),
                    4 => op
                        .argv
                        .extend([b("PXAT"), Arg::UnixMs(t + g.ttl_ms().max(1))]),
                    5 => op.argv.push(b("KEEPTTL")),
                    _ => {}
                };
                expiry(self, &mut op);
                if self.chance(5) {
                    // A second expiry: an error unless both are EX/PX (the last one wins).
                    expiry(self, &mut op);
                }
                if self.chance(4) {
                    op.argv.extend([
                        // Not PXAT: PXAT i64::MAX is a valid deadline whose PTTL depends
                        // on the absolute clock.
                        b(self.pick(&["EX", "PX", "EXAT"])),
                        b(self.pick(&[
                            "0",
                            "-3",
                            "abc",
                            "9223372036854775807",
                            "-9223372036854775808",
                        ])),
                    ]);
                }
                if self.chance(20) {
                    op.argv.push(b("GET"));
                }
            }
            16..=19 => {
                op.keys.push(k);
                op.argv = match self.rng.below(3) {
                    0 => vec![b("SETNX"), b(k), b(self.pick(&VALUES))],
                    1 => vec![
                        b("SETEX"),
                        b(k),
                        b(&self.pick(&[5i64, 8, 0, -2]).to_string()),
                        b(self.pick(&VALUES)),
                    ],
                    _ => vec![
                        b("PSETEX"),
                        b(k),
                        b(&self.ttl_ms().to_string()),
                        b(self.pick(&VALUES)),
                    ],
                };
            }
            20..=27 => {
                op.keys.push(k);
                op.argv = vec![b("GET"), b(k)];
            }
            28..=31 => {
                let k2 = self.key();
                op.keys.extend([k, k2]);
                op.argv = vec![b(self.pick(&["DEL", "UNLINK"])), b(k), b(k2)];
            }
            32..=34 => {
                let k2 = self.key();
                op.keys.extend([k, k2]);
                op.argv = vec![b("EXISTS"), b(k), b(k2), b(k)];
            }
            35..=43 => {
                // Mostly on "n", which holds integers; elsewhere mostly not.
                let k = if self.chance(70) { "n" } else { k };
                op.keys.push(k);
                op.argv = match self.rng.below(4) {
                    0 => vec![b("INCR"), b(k)],
                    1 => vec![b("DECR"), b(k)],
                    c => vec![
                        b(if c == 2 { "INCRBY" } else { "DECRBY" }),
                        b(k),
                        b(self.pick(&[
                            "5",
                            "-12",
                            "0",
                            "9223372036854775807",
                            "-9223372036854775808",
                            "1.5",
                            "x",
                        ])),
                    ],
                };
            }
            44..=56 => {
                op.keys.push(k);
                let current = probe_int(model, at_ms, "PEXPIRETIME", k) - CASE_START_UNIX_MS;
                let current = if current < -2 { -1 } else { current };
                let cmd = self.pick(&["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"]);
                let value = match cmd {
                    "EXPIRE" => {
                        let s = self.ttl_s();
                        let s = s + Gen::clear_of(current, t + s * 1000, 1);
                        b(&s.to_string())
                    }
                    "PEXPIRE" => {
                        let ms = self.ttl_ms();
                        let ms = ms + Gen::clear_of(current, t + ms, 1000);
                        b(&ms.to_string())
                    }
                    "EXPIREAT" => {
                        let s = t / 1000 + self.ttl_s();
                        let s = s + Gen::clear_of(current, s * 1000, 1);
                        Arg::UnixS(s)
                    }
                    _ => {
                        let ms = t + self.ttl_ms();
                        let ms = ms + Gen::clear_of(current, ms, 1000);
                        Arg::UnixMs(ms)
                    }
                };
                // i64::MAX overflows every form but PEXPIREAT, where it is a valid deadline
                // whose PTTL depends on the absolute clock (the model's is not the host's).
                let bad: &[&str] = if cmd == "PEXPIREAT" {
                    &["abc", "1.5"]
                } else {
                    &["abc", "9223372036854775807", "1.5"]
                };
                let value = if self.chance(3) {
                    b(self.pick(bad))
                } else {
                    value
                };
                op.argv = vec![b(cmd), b(k), value];
                match self.rng.below(10) {
                    0..=3 => {}
                    4 => op.argv.push(b("NX")),
                    5 => op.argv.push(b("XX")),
                    6..=7 => op.argv.push(b("GT")),
                    8 => op.argv.push(b("LT")),
                    _ => {
                        let o = self.pick(&["NX", "XX", "GT", "LT", "BAD"]);
                        let o2 = self.pick(&["NX", "GT", "LT"]);
                        op.argv.extend([b(o), b(o2)]);
                    }
                }
            }
            57..=66 => {
                op.keys.push(k);
                let cmd = self.pick(&["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"]);
                // Whole seconds round at x500 ms: close to that the two clocks could round
                // differently, so ask in ms there.
                let cmd = match cmd {
                    "TTL" => {
                        let r = probe_int(model, at_ms, "PTTL", k);
                        if r >= 0 && (r % 1000 - 500).abs() < ROUNDING_EDGE_MS {
                            "PTTL"
                        } else {
                            "TTL"
                        }
                    }
                    "EXPIRETIME" => {
                        let d = probe_int(model, at_ms, "PEXPIRETIME", k);
                        let off = d - CASE_START_UNIX_MS;
                        if d >= 0 && (off.rem_euclid(1000) - 500).abs() < ROUNDING_EDGE_MS {
                            "PEXPIRETIME"
                        } else {
                            "EXPIRETIME"
                        }
                    }
                    c => c,
                };
                op.timing = match cmd {
                    "PTTL" => Timing::Ms,
                    "PEXPIRETIME" => Timing::AbsMs,
                    "EXPIRETIME" => Timing::AbsS,
                    _ => Timing::Exact,
                };
                op.argv = vec![b(cmd), b(k)];
            }
            67..=69 => {
                op.keys.push(k);
                op.argv = vec![b("PERSIST"), b(k)];
            }
            70..=71 => {
                op.keys.push(k);
                op.argv = vec![b("TYPE"), b(k)];
            }
            72 => {
                // The one way to a wrong type today: a list.
                let k = if self.chance(80) { "s" } else { k };
                op.keys.push(k);
                op.argv = vec![b("RPUSH"), b(k), b(self.pick(&TOKENS))];
            }
            73 => {
                op.argv = match self.rng.below(12) {
                    0 => vec![b("PING")],
                    1 => vec![b("PING"), b("hello")],
                    2 => vec![b("GET")],
                    3 => vec![b("SET"), b(k)],
                    4 => vec![b("EXPIRE"), b(k)],
                    5 => vec![b("EVAL")],
                    6 => vec![b("INCRBY"), b(k)],
                    // Rare resets: everything after starts from an empty keyspace or cache.
                    7 => vec![b(self.pick(&["FLUSHDB", "FLUSHALL"]))],
                    8 => vec![b("SCRIPT"), b("FLUSH")],
                    9 => vec![b("SELECT"), b("0")],
                    10 => vec![b("TYPE")],
                    _ => vec![b("PERSIST"), b(k), b(k)],
                };
                if op.argv.len() > 1 && op.argv[0] == b("SCRIPT") {
                    op.label = "SCRIPT FLUSH".into();
                }
                op.keys.push(k);
            }
            74..=77 if !self.gated.is_empty() => self.gated_op(&mut op, t),
            78..=84 if !self.more.is_empty() => self.more_op(&mut op, Some(model), at_ms),
            _ => self.script_op(&mut op),
        }
        if op.label.is_empty() {
            op.label = label_of(&op.argv);
        }
        op
    }

    /// SELECT: dbs 0-2 (so keys meet again), now and then an index error; or a
    /// transaction command out of place.
    fn select_op(&mut self) -> Op {
        let argv = match self.rng.below(20) {
            0 => vec![b("SELECT"), b(self.pick(&["16", "-1", "abc", "01"]))],
            1 => vec![b(self.pick(&["EXEC", "DISCARD", "UNWATCH"]))],
            _ => vec![b("SELECT"), b(self.pick(&["0", "0", "1", "2"]))],
        };
        Op {
            argv,
            ..Op::default()
        }
    }

    /// A command that needs no probe of the model while it is generated (so it can be
    /// generated ahead, for a MULTI block).
    fn simple_op(&mut self, t: i64) -> Op {
        let k = self.key();
        let mut op = Op {
            keys: vec![k],
            ..Op::default()
        };
        op.argv = match self.rng.below(10) {
            0..=1 => {
                let mut v = vec![b("SET"), b(k), b(self.pick(&VALUES))];
                if self.chance(40) {
                    v.extend([b("PX"), b(&self.ttl_ms().max(1).to_string())]);
                }
                v
            }
            2..=3 => vec![b("GET"), b(k)],
            4 => vec![b("INCR"), b(k)],
            5 => vec![b("DEL"), b(k)],
            6 => vec![b("EXISTS"), b(k)],
            7 => vec![b("PEXPIRE"), b(k), b(&self.ttl_ms().to_string())],
            8 => {
                op.timing = Timing::Ms;
                vec![b("PTTL"), b(k)]
            }
            _ => vec![b("GETEX"), b(k), b("PXAT"), Arg::UnixMs(t + 20_000)],
        };
        op
    }

    /// WATCH (now and then, and now and then touching a watched key itself), MULTI, one to
    /// four queued commands (strings, hashes, scripts; now and then a queue-time error or a
    /// misplaced MULTI/WATCH), then EXEC, DISCARD, or `EXEC x` (which discards).
    fn transaction(&mut self, t: i64) -> Op {
        let mut ops: Vec<Op> = Vec::new();
        if self.chance(50) {
            let mut keys = vec![self.key()];
            if self.chance(30) {
                keys.push("h");
            }
            let mut argv = vec![b("WATCH")];
            argv.extend(keys.iter().map(|k| b(k)));
            ops.push(Op {
                argv,
                keys: keys.clone(),
                ..Op::default()
            });
            if self.chance(25) {
                let k = keys[0];
                ops.push(Op {
                    argv: vec![b("SET"), b(k), b(self.pick(&VALUES))],
                    keys: vec![k],
                    ..Op::default()
                });
            }
        }
        ops.push(Op {
            argv: vec![b("MULTI")],
            ..Op::default()
        });
        let mut ms = false;
        for _ in 0..1 + self.rng.below(4) {
            let mut op = match self.rng.below(10) {
                0..=4 => self.simple_op(t),
                5 if !self.gated.is_empty() => {
                    let mut op = Op::default();
                    self.gated_op(&mut op, t);
                    op
                }
                6 if !self.more.is_empty() => {
                    let mut op = Op::default();
                    self.more_op(&mut op, None, 0);
                    op
                }
                7 if self.more.contains(&"blpop") => self.blpop_op(None, 0),
                _ => {
                    let mut op = Op::default();
                    self.script_op(&mut op);
                    op
                }
            };
            ms |= op.timing == Timing::Ms;
            if op.label.is_empty() {
                op.label = label_of(&op.argv);
            }
            op.label = format!("{} (queued)", op.label);
            ops.push(op);
            if self.chance(6) {
                let argv = match self.rng.below(4) {
                    0 => vec![b("MULTI")],
                    1 => vec![b("WATCH"), b("lock")],
                    2 => vec![b("NOSUCHCMD"), b("x")],
                    _ => vec![b("GET")],
                };
                ops.push(Op {
                    label: format!("{} (in MULTI)", label_of(&argv)),
                    argv,
                    ..Op::default()
                });
            }
        }
        let end = match self.rng.below(25) {
            0..=2 => vec![b("DISCARD")],
            3 => vec![b("EXEC"), b("x")],
            _ => vec![b("EXEC")],
        };
        ops.push(Op {
            argv: end,
            timing: if ms { Timing::Ms } else { Timing::Exact },
            ..Op::default()
        });
        let mut keys: Vec<&'static str> = Vec::new();
        for op in &ops {
            for k in &op.keys {
                if !keys.contains(k) {
                    keys.push(k);
                }
            }
        }
        let mut head = ops.remove(0);
        head.keys = keys;
        head.rest = ops;
        head
    }

    /// GETDEL, GETEX, hashes, PUBLISH: only those the model parses (see `GATED_COMMANDS`).
    fn gated_op(&mut self, op: &mut Op, t: i64) {
        let cmd = self.pick(&self.gated.clone());
        // The hash key mostly; now and then a string (or list) key, for WRONGTYPE.
        let h = if self.chance(75) { "h" } else { self.key() };
        let field = |g: &mut Gen| g.pick(&["f1", "f2", "uuid:1"]);
        op.argv = match cmd {
            "getdel" => {
                let k = self.key();
                op.keys.push(k);
                vec![b("GETDEL"), b(k)]
            }
            "getex" => {
                let k = self.key();
                op.keys.push(k);
                let mut v = vec![b("GETEX"), b(k)];
                match self.rng.below(7) {
                    0 => v.extend([b("EX"), b(&self.ttl_s().to_string())]),
                    1 => v.extend([b("PX"), b(&self.ttl_ms().to_string())]),
                    2 => v.extend([b("EXAT"), Arg::UnixS(t / 1000 + self.ttl_s().max(1))]),
                    3 => v.extend([b("PXAT"), Arg::UnixMs(t + self.ttl_ms().max(1))]),
                    4 => v.push(b("PERSIST")),
                    5 => v.extend([b("PERSIST"), b("EX"), b("5")]),
                    _ => {}
                }
                v
            }
            "hset" => {
                op.keys.push(h);
                let mut v = vec![b("HSET"), b(h), b(field(self)), b(self.pick(&VALUES))];
                if self.chance(30) {
                    v.extend([b(field(self)), b(self.pick(&VALUES))]);
                }
                if self.chance(5) {
                    v.push(b("dangling"));
                }
                v
            }
            "hincrby" => {
                op.keys.push(h);
                let by = self.pick(&["1", "-1", "5", "x", "9223372036854775807"]);
                vec![b("HINCRBY"), b(h), b(field(self)), b(by)]
            }
            "hdel" => {
                op.keys.push(h);
                vec![b("HDEL"), b(h), b(field(self)), b(field(self))]
            }
            "hmget" => {
                op.keys.push(h);
                vec![b("HMGET"), b(h), b(field(self)), b(field(self))]
            }
            "hget" | "hexists" => {
                op.keys.push(h);
                vec![b(&cmd.to_ascii_uppercase()), b(h), b(field(self))]
            }
            "hgetall" | "hlen" => {
                op.keys.push(h);
                vec![b(&cmd.to_ascii_uppercase()), b(h)]
            }
            _ => vec![b("PUBLISH"), b("redisson_lock__channel:{lock}"), b("0")],
        };
    }

    /// Issue 27's commands (`MORE_COMMANDS`, those the model parses). Keys are the mix's
    /// own (and the hash "h"), so RENAME/COPY move values and deadlines between the keys
    /// the other commands use; RANDOMKEY only while the db holds one key or none (Redis's
    /// choice among more is random).
    /// `model`: `None` inside a MULTI block (generated ahead, no probes), where COPY never
    /// names a db and RANDOMKEY is not sent.
    fn more_op(&mut self, op: &mut Op, mut model: Option<&mut NodeReplay>, at_ms: u64) {
        let cmd = self.pick(&self.more.clone());
        let any_key = |g: &mut Gen| if g.chance(20) { "h" } else { g.key() };
        let h = if self.chance(80) { "h" } else { self.key() };
        let field = |g: &mut Gen| g.pick(&["f1", "f2", "uuid:1"]);
        op.argv = match cmd {
            "function" => self.function_argv(),
            "fcall" => self.fcall_argv(op),
            "strlen" => {
                let k = any_key(self);
                op.keys.push(k);
                vec![b("STRLEN"), b(k)]
            }
            "append" => {
                let k = self.key();
                op.keys.push(k);
                vec![b("APPEND"), b(k), b(self.pick(&VALUES))]
            }
            "setrange" => {
                let k = self.key();
                op.keys.push(k);
                let off = self.pick(&["0", "0", "1", "3", "-1", "x", "12"]);
                vec![b("SETRANGE"), b(k), b(off), b(self.pick(&VALUES))]
            }
            "rename" | "renamenx" => {
                let (k1, k2) = (any_key(self), any_key(self));
                op.keys.extend([k1, k2]);
                vec![b(&cmd.to_ascii_uppercase()), b(k1), b(k2)]
            }
            "copy" => {
                let (k1, k2) = (any_key(self), any_key(self));
                op.keys.extend([k1, k2]);
                let mut v = vec![b("COPY"), b(k1), b(k2)];
                // Into another db only a value without a deadline (see COPY_DB); now and then
                // a bad DB.
                let persistent = model
                    .as_deref_mut()
                    .is_some_and(|m| probe_int(m, at_ms, "PTTL", k1) < 0);
                match self.rng.below(8) {
                    0 | 1 if persistent => v.extend([b("DB"), b(COPY_DB)]),
                    2 => v.extend([b("DB"), b(self.pick(&["16", "-1", "x", "2147483648"]))]),
                    3 => v.push(b("BOGUS")),
                    _ => {}
                }
                if self.chance(40) {
                    v.push(b("REPLACE"));
                }
                v
            }
            "object" => {
                let k = any_key(self);
                op.keys.push(k);
                if self.chance(5) {
                    vec![b("OBJECT"), b(self.pick(&["BOGUS", "ENCODING"]))]
                } else {
                    vec![b("OBJECT"), b("ENCODING"), b(k)]
                }
            }
            "echo" => vec![b("ECHO"), b(self.pick(&VALUES))],
            "hkeys" | "hvals" => {
                op.keys.push(h);
                vec![b(&cmd.to_ascii_uppercase()), b(h)]
            }
            "hstrlen" => {
                op.keys.push(h);
                vec![b("HSTRLEN"), b(h), b(field(self))]
            }
            "hincrbyfloat" => {
                // Fields hold the mix's values: integers, `3.5`, text that is no float.
                op.keys.push(h);
                let by = self.pick(&["1", "0.1", "-2.5", "10.5", "1e3", "0x10", "abc", "inf"]);
                vec![b("HINCRBYFLOAT"), b(h), b(field(self)), b(by)]
            }
            "hsetnx" => {
                op.keys.push(h);
                vec![b("HSETNX"), b(h), b(field(self)), b(self.pick(&VALUES))]
            }
            "hmset" => {
                op.keys.push(h);
                let mut v = vec![b("HMSET"), b(h), b(field(self)), b(self.pick(&VALUES))];
                if self.chance(30) {
                    v.extend([b(field(self)), b(self.pick(&VALUES))]);
                }
                if self.chance(5) {
                    v.push(b("dangling"));
                }
                v
            }
            "lpush" => {
                // "s" mostly: the key that may be a list; the queue key a parked BLPOP waits
                // on, now and then.
                let k = self.list_key();
                op.keys.push(k);
                let mut v = vec![b("LPUSH"), b(k), b(self.pick(&TOKENS))];
                if self.chance(30) {
                    v.push(b(self.pick(&TOKENS)));
                }
                v
            }
            "lpop" => {
                let k = self.list_key();
                op.keys.push(k);
                let mut v = vec![b("LPOP"), b(k)];
                if self.chance(50) {
                    v.push(b(self.pick(&["0", "1", "2", "5", "-1", "x"])));
                }
                v
            }
            "llen" => {
                let k = self.list_key();
                op.keys.push(k);
                vec![b("LLEN"), b(k)]
            }
            "move" => {
                // Into COPY_DB only a value without a deadline (that db's keys never expire);
                // the selected db (refused), bad dbs; inside MULTI only the bad ones.
                let k = self.key();
                op.keys.push(k);
                let mut return_set = None;
                let persistent = model
                    .as_deref_mut()
                    .is_some_and(|m| probe_int(m, at_ms, "PTTL", k) < 0);
                let db = match (self.rng.below(8), model.as_deref()) {
                    (0..=4, Some(_)) if persistent => COPY_DB.to_string(),
                    (5, Some(m)) => m.selected_db().to_string(),
                    _ => self.pick(&["16", "-1", "x", "2147483648"]).to_string(),
                };
                // Now and then a key of its own (no other command names it, and it never
                // has a deadline) goes there and back, with its encoding, and is deleted.
                if let Some(m) = model.as_deref()
                    && self.chance(40)
                {
                    let back = m.selected_db().to_string();
                    let value = self.pick(&VALUES);
                    op.rest = [
                        vec![b("MOVE"), b("mk"), b(COPY_DB)],
                        vec![b("SELECT"), b(COPY_DB)],
                        vec![b("OBJECT"), b("ENCODING"), b("mk")],
                        vec![b("MOVE"), b("mk"), b(&back)],
                        vec![b("SELECT"), b(&back)],
                        vec![b("GET"), b("mk")],
                        vec![b("DEL"), b("mk")],
                    ]
                    .into_iter()
                    .map(|argv| Op {
                        label: label_of(&argv),
                        argv,
                        ..Op::default()
                    })
                    .collect();
                    op.label = "SET".into();
                    return_set = Some(vec![b("SET"), b("mk"), b(value)]);
                }
                return_set.unwrap_or_else(|| vec![b("MOVE"), b(k), b(&db)])
            }
            "swapdb" => {
                // The mix's own dbs trade keys (none is COPY_DB or RANDOMKEY_DB, whose keys
                // the mix keeps apart); now and then one db, or a bad index.
                op.keys.extend(KEYS);
                op.keys.extend(["h", "latch"]);
                let (x, y) = match self.rng.below(6) {
                    0 => ("1", "1"),
                    1 => self.pick(&[("0", "16"), ("x", "0"), ("0", "x"), ("-1", "2")]),
                    _ => self.pick(&[("0", "1"), ("1", "2"), ("2", "0")]),
                };
                vec![b("SWAPDB"), b(x), b(y)]
            }
            "hello" => {
                // RESP2 only (HELLO 3 switches the connection: the model refuses it), and
                // inside MULTI only what fails (EXEC's array would hold the id).
                let ok = model.is_some() && self.chance(50);
                op.timing = Timing::ConnId;
                let name = self.pick(&["app", "lock-client", "", "a b"]);
                match (ok, self.rng.below(4)) {
                    (true, 0) => vec![b("HELLO")],
                    (true, 1) => vec![b("HELLO"), b("2")],
                    (true, 2) => vec![b("HELLO"), b("2"), b("SETNAME"), b(name)],
                    (true, _) => vec![b("HELLO"), b("2"), b("AUTH"), b("default"), b("pw")],
                    (false, 0) => vec![b("HELLO"), b(self.pick(&["1", "4", "x", "02"]))],
                    (false, 1) => vec![b("HELLO"), b("2"), b("AUTH"), b("bob"), b("pw")],
                    (false, 2) => vec![b("HELLO"), b("3"), b("bogus")],
                    (false, _) => vec![b("HELLO"), b("2"), b("SETNAME"), b(name), b("x")],
                }
            }
            "client" => {
                let name = self.pick(&["app", "lock-client", "", "a b"]);
                match self.rng.below(6) {
                    0 if model.is_some() => {
                        op.timing = Timing::ConnId;
                        vec![b("CLIENT"), b("ID")]
                    }
                    0 | 1 => vec![b("CLIENT"), b("GETNAME")],
                    2 | 3 => vec![b("CLIENT"), b("SETNAME"), b(name)],
                    4 => vec![b("CLIENT"), b("SETINFO"), b("LIB-NAME"), b("redis-py")],
                    _ => vec![
                        b("CLIENT"),
                        b(self.pick(&["BOGUS", "SETNAME", "GETNAME"])),
                        b("x"),
                        b("y"),
                    ],
                }
            }
            "info" => {
                // Not the keyspace section: its key counts include expired keys Redis has
                // not yet sampled (the mix sends no DBSIZE for the same reason).
                // Inside MULTI (EXEC's array compares exactly) only a section nobody has.
                op.timing = Timing::Info;
                let sections: &[&str] = if model.is_none() {
                    &["bogus"]
                } else {
                    self.pick(&[
                        &["server"][..],
                        &["replication"],
                        &["server", "replication"],
                        &["bogus"],
                        &["clients"],
                    ])
                };
                std::iter::once(b("INFO"))
                    .chain(sections.iter().map(|s| b(s)))
                    .collect()
            }
            "readonly" | "readwrite" => vec![b(&cmd.to_ascii_uppercase())],
            "auth" => match self.rng.below(4) {
                0 => vec![b("AUTH"), b("pw")],
                1 => vec![b("AUTH"), b("default"), b("pw")],
                2 => vec![b("AUTH"), b("bob"), b("pw")],
                _ => vec![b("AUTH"), b("a"), b("b"), b("c")],
            },
            _ => {
                // RANDOMKEY: with one key or none Redis's choice is the model's; with more,
                // a script asks only whether it found one (the expired keys it meets go in
                // both; which ones, only DBSIZE/KEYS would show, and the mix sends neither).
                op.keys.extend(KEYS);
                op.keys.extend(["h", "latch"]);
                let Some(m) = model else {
                    op.argv = vec![b("ECHO"), b("randomkey")];
                    return;
                };
                if probe_dbsize(m, at_ms) <= 1 {
                    vec![b("RANDOMKEY")]
                } else if self.chance(50) {
                    op.label = "EVAL randomkey-found".into();
                    vec![b("EVAL"), b(RANDOMKEY_FOUND), b("0")]
                } else {
                    // The 0- and 1-key cases in a db of their own, and back.
                    let back = m.selected_db().to_string();
                    let value = self.pick(&VALUES);
                    op.rest = [
                        vec![b("RANDOMKEY")],
                        vec![b("SET"), b("rk"), b(value)],
                        vec![b("RANDOMKEY")],
                        vec![b("OBJECT"), b("ENCODING"), b("rk")],
                        vec![b("DEL"), b("rk")],
                        vec![b("SELECT"), b(&back)],
                    ]
                    .into_iter()
                    .map(|argv| Op {
                        label: label_of(&argv),
                        argv,
                        ..Op::default()
                    })
                    .collect();
                    vec![b("SELECT"), b(RANDOMKEY_DB)]
                }
            }
        };
        if cmd == "object" && op.argv.len() == 3 {
            op.label = "OBJECT ENCODING".into();
        }
        if cmd == "function" && op.argv.len() >= 2 {
            op.label = format!("FUNCTION {}", label_of(&op.argv[1..]).to_ascii_uppercase());
        }
        if matches!(cmd, "client" | "info") && op.argv.len() >= 2 {
            op.label = format!("{} {}", label_of(&op.argv), op.argv[1]).to_ascii_uppercase();
        }
    }

    /// FUNCTION LOAD [REPLACE] / DELETE / LIST LIBRARYNAME / FLUSH over `FUNCTION_LIBS`,
    /// now and then one of their errors.
    fn function_argv(&mut self) -> Vec<Arg> {
        let (name, code) = self.pick(&FUNCTION_LIBS);
        match self.rng.below(20) {
            0..=6 => vec![b("FUNCTION"), b("LOAD"), b(code)],
            7..=9 => vec![b("FUNCTION"), b("LOAD"), b("REPLACE"), b(code)],
            10..=12 => vec![b("FUNCTION"), b("DELETE"), b(name)],
            13..=15 => {
                let mut v = vec![b("FUNCTION"), b("LIST"), b("LIBRARYNAME"), b(name)];
                if self.chance(40) {
                    v.push(b("WITHCODE"));
                }
                v
            }
            16 => vec![b("FUNCTION"), b("FLUSH")],
            17 => vec![b("FUNCTION"), b("LOAD"), b("#!lua name=dl_bad\nreturn (")],
            18 => vec![b("FUNCTION"), b("LOAD"), b("#!lua name=dl_none\nreturn 1")],
            _ => vec![
                b("FUNCTION"),
                b(self.pick(&["LIST", "DELETE", "FLUSH"])),
                b("x"),
                b("y"),
            ],
        }
    }

    /// FCALL / FCALL_RO of `FUNCTION_LIBS`' functions on the lock keys (now and then
    /// another key of the mix, an unknown function or a bad key count).
    fn fcall_argv(&mut self, op: &mut Op) -> Vec<Arg> {
        let function = self.pick(&["dl_lock", "dl_unlock", "dl_owner", "dl_owner", "DL_LOCK"]);
        let ro = if self.chance(25) { "FCALL_RO" } else { "FCALL" };
        op.label = format!("{ro} {}", function.to_ascii_lowercase());
        let k = if self.chance(80) {
            self.pick(&["lock", "lock2"])
        } else {
            self.key()
        };
        op.keys.push(k);
        match self.rng.below(20) {
            0 => {
                op.label = format!("{ro} (unknown function)");
                return vec![b(ro), b("dl_nope"), b("0")];
            }
            1 => {
                op.label = format!("{ro} (bad numkeys)");
                return vec![b(ro), b(function), b(self.pick(&["x", "-1", "2"])), b(k)];
            }
            _ => {}
        }
        let ttl = self.ttl_ms().max(1).to_string();
        vec![
            b(ro),
            b(function),
            b("1"),
            b(k),
            b(self.pick(&TOKENS)),
            b(&ttl),
        ]
    }

    /// BLPOP on the queue key and another of the mix's keys. On the blocking connection
    /// when it is free (`model`: `Some`, not in a MULTI block), where it may block; on the
    /// main one only when it cannot (a key exists, or the timeout is refused) or inside a
    /// MULTI block (`model`: `None`), where it never blocks.
    fn blpop_op(&mut self, model: Option<&mut NodeReplay>, at_ms: u64) -> Op {
        let keys: Vec<&'static str> = match self.rng.below(4) {
            0 => vec![QUEUE_KEY],
            1 => vec!["s", QUEUE_KEY],
            2 => vec![QUEUE_KEY, "s"],
            _ => vec![self.key(), QUEUE_KEY],
        };
        let mut timeout = self.pick(&BLPOP_TIMEOUTS).0;
        if self.chance(5) {
            timeout = self.pick(&["abc", "-1", "nan", "1e300"]);
        }
        let mut op = Op {
            keys: keys.clone(),
            label: "BLPOP".into(),
            ..Op::default()
        };
        op.argv = std::iter::once(b("BLPOP"))
            .chain(keys.iter().map(|k| b(k)))
            .chain([b(timeout)])
            .collect();
        let Some(model) = model else {
            return op;
        };
        if !self.blocker_busy && self.chance(70) {
            op.conn = Some(BLOCKER);
            op.label = "[b] BLPOP".into();
        } else if self.blocker_busy && self.chance(50) {
            // A push by another client, which serves the parked one (on db 0).
            let cmd = self.pick(&["LPUSH", "RPUSH"]);
            op.argv = vec![b(cmd), b(QUEUE_KEY), b(self.pick(&TOKENS))];
            if self.chance(30) {
                op.argv.push(b(self.pick(&TOKENS)));
            }
            op.label = cmd.into();
        } else if keys
            .iter()
            .all(|k| probe_int(model, at_ms, "EXISTS", k) == 0)
            && BLPOP_TIMEOUTS.iter().any(|(t, _)| *t == timeout)
        {
            // It would block the main connection: a refused timeout instead.
            let last = op.argv.len() - 1;
            op.argv[last] = b("abc");
        }
        op
    }

    fn script_op(&mut self, op: &mut Op) {
        let i = self.rng.below(self.scripts.len() as u64) as usize;
        let s = self.scripts[i];
        let sha = sha1_hex(s.src);
        match self.rng.below(20) {
            0..=1 => {
                op.argv = vec![b("SCRIPT"), b("LOAD"), b(s.src)];
                op.label = format!("SCRIPT LOAD {}", s.name);
                return;
            }
            2 => {
                let other = self.rng.below(self.scripts.len() as u64) as usize;
                let other = sha1_hex(self.scripts[other].src);
                op.argv = vec![b("SCRIPT"), b("EXISTS"), b(&sha), b(&other)];
                op.label = "SCRIPT EXISTS".into();
                return;
            }
            3 => {
                // Bad key counts.
                let n = self.pick(&["-1", "3", "x"]);
                op.argv = vec![b("EVAL"), b(s.src), b(n), b("lock")];
                op.label = "EVAL (bad numkeys)".into();
                return;
            }
            _ => {}
        }
        let by_sha = self.chance(40);
        let nkeys = 1 + self.rng.below(s.max_keys as u64) as usize;
        let mut keys = Vec::new();
        for _ in 0..nkeys {
            // Lock keys mostly; now and then the integer or the maybe-list key.
            let k = if self.chance(80) {
                self.pick(&["lock", "lock2"])
            } else {
                self.key()
            };
            keys.push(k);
        }
        let token = self.pick(&TOKENS);
        let ttl = self.ttl_ms().max(1).to_string();
        let argv_tail: Vec<String> = match s.args {
            ScriptArgs::Token => vec![token.into()],
            ScriptArgs::TokenTtl => vec![token.into(), ttl],
            ScriptArgs::TokenTtlAdditive => {
                vec![token.into(), ttl, self.pick(&["0", "1"]).to_string()]
            }
            ScriptArgs::TokenTtlAllowNew => {
                vec![token.into(), ttl, self.pick(&["yes", "no"]).to_string()]
            }
            ScriptArgs::Nothing => vec![],
            ScriptArgs::RedissonLock => vec![ttl, self.redisson_name()],
            ScriptArgs::RedissonRenew => {
                let mut v = vec![ttl];
                v.extend(keys.iter().map(|_| self.redisson_name()));
                v
            }
            ScriptArgs::RedissonUnlock => {
                keys.push("redisson_lock__channel:{lock}");
                keys.push("latch");
                let latch_ttl = self.ttl_ms().max(1).to_string();
                vec![
                    "0".into(),
                    ttl,
                    self.redisson_name(),
                    "publish".into(),
                    latch_ttl,
                ]
            }
        };
        let nkeys = keys.len();
        // Now and then the read-only variants: a writing script must be refused.
        let ro = if self.chance(10) { "_RO" } else { "" };
        op.argv = if by_sha {
            vec![b(&format!("EVALSHA{ro}")), b(&sha)]
        } else {
            vec![b(&format!("EVAL{ro}")), b(s.src)]
        };
        op.argv.push(b(&nkeys.to_string()));
        op.argv.extend(keys.iter().map(|k| b(k)));
        op.argv.extend(argv_tail.iter().map(|a| b(a)));
        op.keys = keys;
        if s.returns_pttl {
            op.timing = Timing::Ms;
        }
        op.label = format!("{}{ro} {}", if by_sha { "EVALSHA" } else { "EVAL" }, s.name);
    }
}

fn label_of(argv: &[Arg]) -> String {
    match &argv[0] {
        Arg::Bytes(name) => String::from_utf8_lossy(name).into_owned(),
        _ => unreachable!("a command name is bytes"),
    }
}

/// The corpus pattern for the server's reply: exact, except time-valued integers.
fn expect_of(reply: &Reply, timing: Timing, start_unix_ms: i64) -> Expect {
    match reply {
        Reply::Ok => Expect::Status("OK".into()),
        Reply::Status(s) => Expect::Status(s.clone()),
        Reply::Error(e) => Expect::Error(e.clone()),
        Reply::Nil => Expect::Nil,
        Reply::Bulk(v) if timing == Timing::Info => Expect::Info(v.clone()),
        Reply::Bulk(v) => Expect::Bulk(v.clone()),
        // HELLO's map as an array: only the integer after "id" is the server's own.
        Reply::Array(items) if timing == Timing::ConnId => Expect::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, r)| match (i.checked_sub(1).map(|j| &items[j]), r) {
                    (Some(Reply::Bulk(name)), Reply::Int(_)) if name == b"id" => {
                        Expect::Int(IntPattern::Any)
                    }
                    _ => expect_of(r, Timing::Exact, start_unix_ms),
                })
                .collect(),
        ),
        Reply::Array(items) => Expect::Array(
            items
                .iter()
                .map(|r| expect_of(r, timing, start_unix_ms))
                .collect(),
        ),
        // -1 / -2 (no TTL / no key) stay exact; so does any small integer.
        Reply::Int(n) => Expect::Int(match timing {
            Timing::Ms if *n >= 100 => IntPattern::Approx(*n),
            Timing::AbsMs if *n >= 0 => IntPattern::ApproxUnixMs(*n - start_unix_ms),
            Timing::AbsS if *n >= 0 => IntPattern::ExactUnixS(*n - start_unix_ms / 1000),
            Timing::ConnId => IntPattern::Any,
            _ => IntPattern::Exact(*n),
        }),
    }
}

fn unix_ms_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn render_args(argv: &[Arg]) -> String {
    argv.iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Default)]
struct Totals {
    commands: usize,
    /// Replies of parked BLPOPs compared (`<-` lines).
    awaited: usize,
    waits: usize,
    wait_ms: i64,
    covered: BTreeMap<String, usize>,
}

/// Runs one seed against both; returns the recorded case text.
fn run_seed(seed: u64, server: &mut Resp, blocker: &mut Resp, totals: &mut Totals) -> String {
    assert_eq!(server.call(&[b"FLUSHALL".to_vec()]), Reply::Ok);
    assert_eq!(
        server.call(&[b"SCRIPT".to_vec(), b"FLUSH".to_vec()]),
        Reply::Ok
    );
    assert_eq!(
        server.call(&[b"FUNCTION".to_vec(), b"FLUSH".to_vec()]),
        Reply::Ok
    );
    // The connection outlives a seed: back to db 0 with nothing watched.
    assert_eq!(server.call(&[b"SELECT".to_vec(), b"0".to_vec()]), Reply::Ok);
    assert_eq!(server.call(&[b"UNWATCH".to_vec()]), Reply::Ok);
    // ... and without a name (the model's connection starts without one).
    assert_eq!(
        server.call(&[b"CLIENT".to_vec(), b"SETNAME".to_vec(), Vec::new()]),
        Reply::Ok
    );
    let mut g = Gen {
        rng: Prng::new(seed, 0xd1ff),
        scripts: SCRIPTS
            .iter()
            .chain(USER_SCRIPTS)
            .filter(|s| s.needs.iter().all(|c| model_knows(c)))
            .collect(),
        gated: GATED_COMMANDS
            .into_iter()
            .filter(|c| model_knows(c))
            .collect(),
        more: MORE_COMMANDS
            .into_iter()
            .filter(|c| model_knows(c))
            .collect(),
        blocker_busy: false,
    };
    // The case starts on the whole second before now, as every corpus case does.
    let start = unix_ms_now() / 1000 * 1000;
    let mut run = SeedRun {
        seed,
        start,
        model: NodeReplay::new(),
        case: format!("# case: differential-seed-{seed}\n# topology: single\n"),
        sent: 0,
        last_ms: 0,
        server,
        blocker,
        parked: None,
        totals,
    };
    // The lock libraries' functions, loaded first (as a client library would at start):
    // the mix's FCALLs find them until a FUNCTION DELETE or FLUSH of the mix.
    if g.more.contains(&"fcall") {
        for (_, code) in &FUNCTION_LIBS[..3] {
            let at_ms = run.now_ms();
            let argv = vec![b("FUNCTION"), b("LOAD"), b(code)];
            let label = "FUNCTION LOAD".to_string();
            run.send_main(
                at_ms,
                Op {
                    argv,
                    label,
                    ..Op::default()
                },
            );
        }
    }
    while run.sent < COMMANDS_PER_SEED {
        let (at_ms, mut op) = loop {
            run.await_timeout_if_near();
            let at_ms = run.now_ms();
            g.blocker_busy = run.parked.is_some();
            let op = g.op(&mut run.model, at_ms);
            // A key about to expire is not touched: wait until it is well past.
            let wait = op
                .keys
                .iter()
                .map(|k| probe_int(&mut run.model, at_ms, "PTTL", k))
                .filter(|r| (0..DANGER_MS).contains(r))
                .max();
            match wait {
                None => break (at_ms, op),
                Some(r) => {
                    run.totals.waits += 1;
                    run.totals.wait_ms += r + PAST_MARGIN_MS;
                    std::thread::sleep(Duration::from_millis((r + PAST_MARGIN_MS) as u64));
                }
            }
        };
        let rest = std::mem::take(&mut op.rest);
        let mut at_ms = at_ms;
        for (i, op) in std::iter::once(op).chain(rest).enumerate() {
            if i > 0 {
                at_ms = run.now_ms().max(at_ms);
            }
            if op.conn == Some(BLOCKER) {
                run.send_blocker(at_ms, op);
            } else {
                run.send_main(at_ms, op);
                run.check_blocker(at_ms);
            }
        }
    }
    run.finish_blocker();
    run.case
}

/// A BLPOP parked on the blocking connection.
struct Parked {
    /// The model's deadline, ms since the case start (`None`: it has none).
    deadline_ms: Option<u64>,
}

/// One seed as it runs: the model, the server's two connections, the recording so far.
struct SeedRun<'a> {
    seed: u64,
    /// The case start, unix ms (a whole second).
    start: i64,
    model: NodeReplay,
    case: String,
    /// Commands sent so far (a transaction block may end a seed a few past the count).
    sent: usize,
    // Invariant: the @T of the last line recorded (virtual time never goes back).
    last_ms: u64,
    server: &'a mut Resp,
    blocker: &'a mut Resp,
    parked: Option<Parked>,
    totals: &'a mut Totals,
}

impl SeedRun<'_> {
    /// Ms since the case start, never before the last line's.
    fn now_ms(&self) -> u64 {
        ((unix_ms_now() - self.start).max(0) as u64).max(self.last_ms)
    }

    fn real_argv(&self, op: &Op) -> Vec<Vec<u8>> {
        op.argv.iter().map(|a| resolve_arg(a, self.start)).collect()
    }

    /// Fails the test with the seed, the sequence so far and both replies.
    fn differ(&self, what: &str, real: &str, got: &str, line: &str) -> ! {
        panic!(
            "seed {}: the model and redis-server differ\n\
             command: {what}\n\
             redis-server: {real}\n\
             model:        {got}\n\
             sequence so far (corpus syntax, the last line as the server answered):\n{}{line}",
            self.seed, self.case
        );
    }

    fn record(&mut self, at_ms: u64, line: String, label: String) {
        self.last_ms = at_ms;
        self.case.push_str(&line);
        *self.totals.covered.entry(label).or_default() += 1;
    }

    fn count_command(&mut self) {
        self.sent += 1;
        self.totals.commands += 1;
    }

    fn send_main(&mut self, at_ms: u64, op: Op) {
        let real = self.server.call(&self.real_argv(&op));
        let got = self.model.execute(at_ms, &op.argv);
        let expect = expect_of(&real, op.timing, self.start);
        let line = format!("@{at_ms} {} -> {expect}\n", render_args(&op.argv));
        if !expect.matches(&got, CASE_START_UNIX_MS) {
            self.differ(
                &render_args(&op.argv),
                &real.to_string(),
                &got.to_string(),
                &line,
            );
        }
        self.count_command();
        let label = if op.label.is_empty() {
            label_of(&op.argv)
        } else {
            op.label
        };
        self.record(at_ms, line, label);
    }

    /// A BLPOP on the blocking connection: answered at once by both, or parked by both.
    fn send_blocker(&mut self, at_ms: u64, op: Op) {
        let real_argv = self.real_argv(&op);
        self.blocker.send(&real_argv);
        let text = format!("[{BLOCKER}] {}", render_args(&op.argv));
        self.count_command();
        match self.model.send(Some(BLOCKER), at_ms, &op.argv) {
            Sent::Reply(got) => {
                let real = self.blocker.reply();
                let expect = expect_of(&real, Timing::Exact, self.start);
                let line = format!("@{at_ms} {text} -> {expect}\n");
                if !expect.matches(&got, CASE_START_UNIX_MS) {
                    self.differ(&text, &real.to_string(), &got.to_string(), &line);
                }
                self.record(at_ms, line, op.label);
            }
            Sent::Blocked => {
                let line = format!("@{at_ms} {text} -> (blocked)\n");
                if self.blocker.ready(Duration::from_millis(20)) {
                    let real = self.blocker.reply();
                    self.differ(&text, &real.to_string(), "(blocked)", &line);
                }
                let timeout_ms = BLPOP_TIMEOUTS
                    .iter()
                    .find(|(t, _)| Some(&b(t)) == op.argv.last())
                    .and_then(|(_, ms)| *ms);
                self.parked = Some(Parked {
                    deadline_ms: timeout_ms.map(|ms| at_ms + ms),
                });
                self.record(at_ms, line, format!("{} (blocked)", op.label));
            }
        }
    }

    /// After a command of the main connection: the parked BLPOP is answered by both (the
    /// server's reply read) or by neither.
    fn check_blocker(&mut self, at_ms: u64) {
        if self.parked.is_none() {
            return;
        }
        if self.model.has_reply(Some(BLOCKER)) {
            self.take_blocker_reply(at_ms);
        } else if self.blocker.ready(Duration::from_millis(2)) {
            let real = self.blocker.reply();
            let line = format!("@{at_ms} [{BLOCKER}] <- {real}\n");
            self.differ(
                &format!("[{BLOCKER}] <-"),
                &real.to_string(),
                "(blocked)",
                &line,
            );
        }
    }

    /// The parked BLPOP's reply from both; the model's must have come.
    fn take_blocker_reply(&mut self, at_ms: u64) {
        let got = self.model.take_reply(Some(BLOCKER));
        let real = self.blocker.reply();
        let expect = expect_of(&real, Timing::Exact, self.start);
        let line = format!("@{at_ms} [{BLOCKER}] <- {expect}\n");
        let got = got.map_or("(blocked)".to_string(), |g| {
            if expect.matches(&g, CASE_START_UNIX_MS) {
                String::new()
            } else {
                g.to_string()
            }
        });
        if !got.is_empty() {
            self.differ(&format!("[{BLOCKER}] <-"), &real.to_string(), &got, &line);
        }
        self.parked = None;
        self.totals.awaited += 1;
        self.record(at_ms, line, format!("[{BLOCKER}] <-"));
    }

    /// Near a parked BLPOP's deadline: nothing is sent until both sides' cron ticks have
    /// timed it out, then its replies are compared.
    fn await_timeout_if_near(&mut self) {
        let Some(deadline) = self.parked.as_ref().and_then(|p| p.deadline_ms) else {
            return;
        };
        if self.now_ms() + (DANGER_MS as u64) < deadline {
            return;
        }
        let past = deadline + CRON_MS + PAST_MARGIN_MS as u64;
        let now = self.now_ms();
        if past > now {
            std::thread::sleep(Duration::from_millis(past - now));
        }
        let at_ms = self.now_ms();
        self.model.advance(at_ms);
        self.take_blocker_reply(at_ms);
    }

    /// At the end of a seed nothing stays parked: a timeout is waited for, a BLPOP
    /// without one is served by a push to the queue key.
    fn finish_blocker(&mut self) {
        let Some(p) = &self.parked else {
            return;
        };
        if let Some(deadline) = p.deadline_ms {
            let now = self.now_ms();
            let near = deadline.saturating_sub(DANGER_MS as u64);
            if near > now {
                std::thread::sleep(Duration::from_millis(near - now));
            }
            self.await_timeout_if_near();
            return;
        }
        // The mix selects other dbs on the main connection: the push goes to db 0's queue.
        let back = self.model.selected_db().to_string();
        for argv in [
            vec![b("SELECT"), b("0")],
            vec![b("LPUSH"), b(QUEUE_KEY), b("end")],
            vec![b("SELECT"), b(&back)],
        ] {
            let at_ms = self.now_ms();
            self.send_main(
                at_ms,
                Op {
                    argv,
                    ..Op::default()
                },
            );
            self.check_blocker(at_ms);
        }
        assert!(
            self.parked.is_none(),
            "the push to the queue key served the BLPOP"
        );
    }
}

fn extra_seeds() -> u64 {
    match std::env::var("DISTLOCK_DIFF_SEEDS") {
        Err(_) => 0,
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("DISTLOCK_DIFF_SEEDS={v:?}: expected a count of seeds")),
    }
}

#[test]
fn seeded_command_sequences_get_the_same_replies_from_the_model_as_from_redis_server() {
    let Some(bin) = redis_server() else {
        if std::env::var("DISTLOCK_REDIS_TEST").as_deref() == Ok("require") {
            panic!("no redis-server found, and DISTLOCK_REDIS_TEST=require");
        }
        say(
            "differential: skipped: install redis-server (Debian package redis-server) \
             to run the differential test",
        );
        return;
    };
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target dir")
        .to_path_buf();
    let dir = target.join("differential");
    let data = dir.join(format!("server-{}", std::process::id()));
    let mut server = Server::start(&bin, &data);
    let mut conn = server.connect();
    let mut blocker = server.connect();
    let version = match conn.call(&[b"INFO".to_vec(), b"server".to_vec()]) {
        Reply::Bulk(info) => String::from_utf8_lossy(&info)
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:").map(str::to_string))
            .expect("INFO server names redis_version"),
        other => panic!("INFO server: {other}"),
    };

    let seeds: Vec<u64> = CI_SEEDS
        .iter()
        .copied()
        .chain((0..extra_seeds()).map(|i| 1000 + i))
        .collect();
    let mut totals = Totals::default();
    let mut recorded = format!(
        "# Recorded by tests/differential.rs from redis-server {version} (started with\n\
         # --save '' --appendonly no), seeds {seeds:?}, {COMMANDS_PER_SEED} commands each.\n\
         # Every reply is the server's; the model gave the same at the same @T.\n\n"
    );
    let started = Instant::now();
    for &seed in &seeds {
        let case = run_seed(seed, &mut conn, &mut blocker, &mut totals);
        recorded.push_str(&case);
        recorded.push('\n');
    }
    let elapsed = started.elapsed();
    drop(conn);
    drop(blocker);
    drop(server);

    let out = dir.join("recorded.txt");
    std::fs::write(&out, &recorded).unwrap();
    // The recording replays offline, through the corpus parser and runner, as it compared.
    let report = run_text(&out, &recorded).expect("the recording parses as a corpus file");
    assert_eq!(
        report.passed(),
        seeds.len(),
        "the recorded cases replay against the model: {:?}",
        report.cases
    );

    let covered: Vec<String> = totals
        .covered
        .iter()
        .map(|(name, n)| format!("{name} x{n}"))
        .collect();
    let mut left_out: Vec<&str> = GATED_COMMANDS
        .into_iter()
        .chain(MORE_COMMANDS)
        .filter(|c| !model_knows(c))
        .collect();
    left_out.extend(
        SCRIPTS
            .iter()
            .filter(|s| !s.needs.iter().all(|c| model_knows(c)))
            .map(|s| s.name),
    );
    let left_out = if left_out.is_empty() {
        String::new()
    } else {
        format!("; left out (the model lacks them): {}", left_out.join(", "))
    };
    // A label's command name: its first word, past a connection's `[b]`.
    let names: std::collections::BTreeSet<&str> = totals
        .covered
        .keys()
        .filter_map(|l| l.split(' ').find(|w| !w.starts_with('[')))
        .collect();
    say(&format!(
        "differential: {} commands and {} replies of parked BLPOPs over {} seeds against \
         redis-server {version}: 0 differences; {} command names, {} labels; \
         {} waits for expiry ({} ms), {:.1} s; recorded in {}; covered: {}{left_out}",
        totals.commands,
        totals.awaited,
        seeds.len(),
        names.len(),
        totals.covered.len(),
        totals.waits,
        totals.wait_ms,
        elapsed.as_secs_f64(),
        out.display(),
        covered.join(", ")
    ));
}

#[test]
fn the_script_texts_are_the_libraries_own() {
    // redsync ships each script with its SHA-1: the copies here hash to the same.
    assert_eq!(
        sha1_hex(REDSYNC_DELETE),
        "e950836ed1e694540c503ef9972b8de518044d3b"
    );
    assert_eq!(
        sha1_hex(REDSYNC_TOUCH_NX),
        "b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79"
    );
    assert_eq!(
        sha1_hex(REDSYNC_TOUCH),
        "d75bb8b5bd13532ddedd17762e772346e39b321e"
    );
}

#[test]
fn a_reply_off_by_more_than_the_tolerance_or_of_another_kind_is_a_difference() {
    let start = 1_800_000_000_000;
    let pttl = expect_of(&Reply::Int(5015), Timing::Ms, start);
    assert!(pttl.matches(&Reply::Int(5045), CASE_START_UNIX_MS));
    assert!(!pttl.matches(&Reply::Int(5046), CASE_START_UNIX_MS));
    assert!(!pttl.matches(&Reply::Nil, CASE_START_UNIX_MS));
    // The sentinels stay exact: no key (-2) is not no TTL (-1).
    let gone = expect_of(&Reply::Int(-2), Timing::Ms, start);
    assert!(!gone.matches(&Reply::Int(-1), CASE_START_UNIX_MS));
    // Absolute times compare relative to each side's case start.
    let at = expect_of(&Reply::Int(start + 8_000), Timing::AbsMs, start);
    assert!(at.matches(&Reply::Int(CASE_START_UNIX_MS + 8_010), CASE_START_UNIX_MS));
    assert!(!at.matches(&Reply::Int(start + 8_000), CASE_START_UNIX_MS));
    let at_s = expect_of(&Reply::Int(start / 1000 + 8), Timing::AbsS, start);
    assert!(at_s.matches(
        &Reply::Int(CASE_START_UNIX_MS / 1000 + 8),
        CASE_START_UNIX_MS
    ));
    assert!(!at_s.matches(
        &Reply::Int(CASE_START_UNIX_MS / 1000 + 9),
        CASE_START_UNIX_MS
    ));
    // Everything else is exact, integers included.
    let n = expect_of(&Reply::Int(5015), Timing::Exact, start);
    assert!(!n.matches(&Reply::Int(5016), CASE_START_UNIX_MS));
    let e = expect_of(&Reply::err("ERR syntax error"), Timing::Exact, start);
    assert!(!e.matches(&Reply::err("ERR syntax error "), CASE_START_UNIX_MS));
}

/// The Redisson client's lock, unlock and (≥ 3.44) renewal scripts are the texts this test
/// compares against redis-server, so what the client runs in the simulation is checked here
/// (the fenced lock and the 3.43 renewal are in tests/conformance/recorded/redisson-client.txt).
#[test]
fn the_redisson_client_sends_the_scripts_compared_here() {
    use distlock_sim::client::redisson::{LOCK_SRC, RENEW_SRC_3_44, UNLOCK_SRC};
    assert_eq!(LOCK_SRC, REDISSON_LOCK);
    assert_eq!(UNLOCK_SRC, REDISSON_UNLOCK);
    assert_eq!(RENEW_SRC_3_44, REDISSON_RENEW);
}

/// redis-py's release, extend and reacquire scripts as the client sends them are the texts
/// this test compares against redis-server (read from lock.py separately), as for Redisson.
#[test]
fn the_redis_py_client_sends_the_scripts_compared_here() {
    use distlock_sim::client::redis_py::{EXTEND_SRC, REACQUIRE_SRC, RELEASE_SRC};
    assert_eq!(RELEASE_SRC, REDIS_PY_RELEASE);
    assert_eq!(EXTEND_SRC, REDIS_PY_EXTEND);
    assert_eq!(REACQUIRE_SRC, REDIS_PY_REACQUIRE);
}
