//! node-redlock (mike-marcacci/node-redlock) as shipped: its presets and its scripts, byte for
//! byte. The protocol runs in `RedlockClient` (redlock.rs); this file holds what differs
//! between node-redlock's two lines:
//!
//! - **v4** (v4.2.0, `redlock.js`): each attempt makes `SET`-like script calls with one value
//!   for the whole `lock()` call (:366-367), waits for every server (:408-411), succeeds iff
//!   `votes >= quorum && lock.expiration > Date.now()` (:418-420), and otherwise **unlocks
//!   every server before it retries** (:423-428): a failed attempt gives its keys back.
//! - **v5** (5.0.0-beta.2, `src/index.ts`, the npm release; master is the same here):
//!   `acquire()` makes one value (:306) and hands the script to `_execute` (:309-314), which
//!   **retries the same script with the same value and releases nothing in between**
//!   (:438-467); only when the last attempt failed does `acquire()` release, once, with
//!   `retryCount: 0` (:330-337). ACQUIRE_SCRIPT returns 0 when the key *exists* (:14-18),
//!   whoever set it, so a key this call set in an earlier attempt votes against it in every
//!   later one: split votes stay split until the call gives up, and a client can be kept out
//!   of a lock nobody else holds by its own keys (node-redlock#369). Each attempt is decided
//!   as soon as a quorum voted either way (`_attemptOperation`, :509-523), and a majority
//!   alone is success: the elapsed time is never checked (:323-329). `release()` hands
//!   RELEASE_SCRIPT to the same `_execute` (:350-364), and a node that deleted nothing (the
//!   lock expired) votes against (:590-595): the release of an expired lock is retried like
//!   an acquire, for ever with `retryCount: -1` (node-redlock#313). v4's `unlock` tries once
//!   (redlock.js:231-288).

use crate::client::redlock::{AutoExtend, ElapsedClock, RedlockOptions, ScriptTexts};

/// node-redlock 5.0.0-beta.2's `ACQUIRE_SCRIPT` (src/index.ts:12-27, a template literal),
/// SHA1 96da70f7716f27d278a5218544df37fd8b0a5e4c: 0 if any key exists, else `SET key
/// value PX duration` on each and the number of keys.
pub const ACQUIRE_5_SRC: &str = "\n  -- Return 0 if an entry already exists.\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"exists\", key) == 1 then\n      return 0\n    end\n  end\n\n  -- Create an entry for each provided key.\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n  end\n\n  -- Return the number of entries added.\n  return #KEYS\n";

/// 5.0.0-beta.2's `EXTEND_SCRIPT` (src/index.ts:29-44), SHA1
/// aed6f382e410db8ba7926d4e5e9aab410bf2a78a: 0 unless every key holds the value, else a
/// fresh `SET ... PX` on each.
pub const EXTEND_5_SRC: &str = "\n  -- Return 0 if an entry exists with a *different* lock value.\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"get\", key) ~= ARGV[1] then\n      return 0\n    end\n  end\n\n  -- Update the entry for each provided key.\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n  end\n\n  -- Return the number of entries updated.\n  return #KEYS\n";

/// 5.0.0-beta.2's `RELEASE_SCRIPT` (src/index.ts:46-58), SHA1
/// e4612211c9f8f51c257e26e056b0a654b3187242: deletes the keys holding the value, returns
/// how many.
pub const RELEASE_5_SRC: &str = "\n  local count = 0\n  for i, key in ipairs(KEYS) do\n    -- Only remove entries for *this* lock value.\n    if redis.call(\"get\", key) == ARGV[1] then\n      redis.pcall(\"del\", key)\n      count = count + 1\n    end\n  end\n\n  -- Return the number of entries removed.\n  return count\n";

/// v4.2.0's `lockScript` (redlock.js:9-24): ACQUIRE_5_SRC's statements, tab-indented, SHA1
/// e5a322e2634ef59a516e8ea150cb085afafee684.
pub const LOCK_4_SRC: &str = "\n\t-- Return 0 if an entry already exists.\n\tfor i, key in ipairs(KEYS) do\n\t\tif redis.call(\"exists\", key) == 1 then\n\t\t\treturn 0\n\t\tend\n\tend\n\n\t-- Create an entry for each provided key.\n\tfor i, key in ipairs(KEYS) do\n\t\tredis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n\tend\n\n\t-- Return the number of entries added.\n\treturn #KEYS\n";

/// v4.2.0's `unlockScript` (redlock.js:26-38), SHA1
/// 0f0f23b9048b36752b5be114f357ba083449f908.
pub const UNLOCK_4_SRC: &str = "\n\tlocal count = 0\n\tfor i, key in ipairs(KEYS) do\n\t\t-- Only remove entries for *this* lock value.\n\t\tif redis.call(\"get\", key) == ARGV[1] then\n\t\t\tredis.pcall(\"del\", key)\n\t\t\tcount = count + 1\n\t\tend\n\tend\n\n\t-- Return the number of entries removed.\n\treturn count\n";

/// v4.2.0's `extendScript` (redlock.js:40-55), SHA1
/// ce46f80993d5dac20dd066eb301a4e37994bdbed.
pub const EXTEND_4_SRC: &str = "\n\t-- Return 0 if an entry exists with a *different* lock value.\n\tfor i, key in ipairs(KEYS) do\n\t\tif redis.call(\"get\", key) ~= ARGV[1] then\n\t\t\treturn 0\n\t\tend\n\tend\n\n\t-- Update the entry for each provided key.\n\tfor i, key in ipairs(KEYS) do\n\t\tredis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n\tend\n\n\t-- Return the number of entries updated.\n\treturn #KEYS\n";

/// The texts a node-redlock line sends. Each takes `KEYS = [key]` and `ARGV = [value,
/// duration]` (`[value]` for the release), and answers the number of keys it acted on, which
/// the library compares with `keys.length` (v4 :410, v5 :591).
pub fn scripts(line: NodeRedlockLine) -> ScriptTexts {
    let (acquire, release, extend) = match line {
        NodeRedlockLine::V4 => (LOCK_4_SRC, UNLOCK_4_SRC, EXTEND_4_SRC),
        NodeRedlockLine::V5 => (ACQUIRE_5_SRC, RELEASE_5_SRC, EXTEND_5_SRC),
    };
    ScriptTexts {
        acquire: Some(acquire),
        release,
        extend,
    }
}

/// The node-redlock presets, on `base` (the `redis-docs` defaults), or None for another name.
/// Common to all: `Date.now()`, drift `Math.round(0.01 * ttl) + 2` (v4 :415, v5 :318-321),
/// `retryCount` 10 retries, so 11 attempts (v4 :427 `attempts <= retryCount`, v5 :434
/// `retryCount + 1`), 200 ± 100 ms apart (`retryDelay + Math.floor((Math.random() * 2 - 1) *
/// retryJitter)`, v4 :428, v5 :455-456), no per-node timeout of its own (ioredis has no
/// `commandTimeout` by default: the docs' 50 ms stands in, as for every preset).
pub fn preset(name: &str, base: RedlockOptions) -> Option<RedlockOptions> {
    let common = RedlockOptions {
        clock: ElapsedClock::Wall,
        retry_count: 11,
        retry_jitter_ms: 100,
        ..base
    };
    // v5's `_execute`: retries keep the keys, the acquire call releases once when it gives
    // up, an attempt is decided at a quorum either way, a majority alone is success; and
    // `release()` runs RELEASE_SCRIPT through `_execute` too (:350-364): an unlock a quorum
    // did not count as done is retried, for ever with `retryCount: -1` (node-redlock#313).
    let v5 = RedlockOptions {
        skip_validity_check: true,
        retry_keeps_keys: true,
        release_retries: true,
        fail_fast: true,
        scripts: scripts(NodeRedlockLine::V5),
        ..common.clone()
    };
    let using = AutoExtend {
        threshold_ms: 500,
        routine_checks_signal: false,
    };
    Some(match name {
        // v4.2.0 `lock()` (mike-marcacci/node-redlock tag v4.2.0, 870778c): one value per
        // call (redlock.js:366-367), every server's answer awaited (:408-411), success iff a
        // quorum and `start + ttl - drift > Date.now()` (:397, :415-420), else `unlock` on
        // every server and retry (:423-428). Simplification: v4 waits for the unlock's replies
        // before it arms the retry delay; the model arms it at once (a round trip earlier).
        "node-redlock-4" => RedlockOptions {
            scripts: scripts(NodeRedlockLine::V4),
            ..common
        },
        // 5.0.0-beta.2 `acquire()`, not `using()` (54de94c, src/index.ts:296-341, 418-543).
        "node-redlock" => v5,
        // 5.0.0-beta.2 `using()` as shipped: as "node-redlock", plus
        // - `start` read once before the retries, for acquire (:305, 328) and extend
        //   (:378, 407): after retries the lock can come back already expired;
        // - automatic extension `automaticExtensionThreshold` = 500 ms before the
        //   expiration (:110, :709-714), by EXTEND_SCRIPT with `_execute`'s retries
        //   (:385-390, :433-466); an extend of an expired lock throws at once
        //   ("Cannot extend an already-expired lock.", :380-383); a failed extension is
        //   retried while the lock has not expired (:727-728), else the signal aborts
        //   (:731-732). The routine is one that does not check the signal.
        "node-redlock-using" => RedlockOptions {
            start_before_retries: true,
            auto_extend: Some(using),
            ..v5
        },
        // node-redlock at master (afe5cf9, unreleased): as "node-redlock-using", with
        // `start` taken by the winning attempt (#274 5dd9e28 for acquire, #276 5138813
        // for extend; src/index.ts:309, 328, 383, 405, 481). `_execute` still retries
        // without releasing (:436-470).
        "node-redlock-using-head" => RedlockOptions {
            auto_extend: Some(using),
            ..v5
        },
        _ => return None,
    })
}

/// Which node-redlock line's scripts a client sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeRedlockLine {
    /// v4.2.0 (`redlock.js`, tab-indented scripts).
    V4,
    /// 5.0.0-beta.2 and master (`src/index.ts`).
    V5,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::presets;
    use crate::client::redlock::{RedlockClient, RedlockConfig};
    use crate::client::timer::NsRange;
    use crate::history::Observation;
    use crate::process::{Cx, Output, Process};
    use crate::proto::command::{hex, sha1_of};
    use crate::proto::{Bytes, Command, Msg, Reply, ScriptRef};
    use crate::rng::{Prng, Seed};
    use crate::time::ProcId;

    /// A client of `preset` on three masters, and its clocks (the wall follows the
    /// monotonic one).
    struct Run {
        client: RedlockClient,
        rng: Prng,
        now_ns: u64,
    }

    impl Run {
        fn new(preset: &str) -> Run {
            let options = presets::redlock(preset, 10_000).unwrap();
            let client = RedlockClient::new(RedlockConfig {
                lock: 0,
                key: Bytes::from("lock"),
                nodes: (1..=3).map(ProcId).collect(),
                resource: None,
                hold: NsRange::fixed(1_000_000_000),
                think: NsRange::fixed(500_000_000),
                rounds: None,
                token_prefix: "c1".into(),
                options,
            });
            Run {
                client,
                rng: Seed(1).stream("t", 0),
                now_ns: 1_000_000_000,
            }
        }
        fn step(&mut self, f: impl FnOnce(&mut RedlockClient, &mut Cx<'_>)) -> Vec<Output> {
            let mut out = Vec::new();
            let wall_ms = (self.now_ns / 1_000_000) as i64;
            let mut cx = Cx::new(ProcId(100), wall_ms, self.now_ns, &mut self.rng, &mut out);
            f(&mut self.client, &mut cx);
            out
        }
        /// Answers every request of `out` with `reply`, 1 ms later.
        fn answer(&mut self, out: &[Output], reply: Reply) -> Vec<Output> {
            self.now_ns += 1_000_000;
            let mut all = Vec::new();
            for (to, id) in requests(out).into_iter().map(|(to, id, _)| (to, id)) {
                let r = reply.clone();
                all.extend(self.step(|c, cx| c.on_message(cx, to, Msg::Reply { id, reply: r })));
            }
            all
        }
        /// Fires the first non-timeout timer of `out`.
        fn fire(&mut self, out: &[Output]) -> Vec<Output> {
            let (after, tag) = out
                .iter()
                .find_map(|o| match o {
                    Output::Timer { after_ns, tag }
                        if *tag != crate::client::timer::Timer::Request.tag() =>
                    {
                        Some((*after_ns, *tag))
                    }
                    _ => None,
                })
                .expect("a retry timer");
            self.now_ns += after;
            self.step(|c, cx| c.on_timer(cx, tag))
        }
    }

    fn requests(out: &[Output]) -> Vec<(ProcId, u64, Command)> {
        out.iter()
            .filter_map(|o| match o {
                Output::Send {
                    to,
                    msg: Msg::Request { id, cmd },
                } => Some((*to, *id, cmd.clone())),
                _ => None,
            })
            .collect()
    }

    /// The script source and ARGV[1] of an EVAL.
    fn eval(cmd: &Command) -> (Vec<u8>, Vec<u8>) {
        match cmd {
            Command::Eval {
                script: ScriptRef::Source(s),
                args,
                ..
            } => (s.source.to_vec(), args[0].to_vec()),
            other => panic!("not an EVAL: {other:?}"),
        }
    }

    fn gave_up(out: &[Output]) -> bool {
        out.iter()
            .any(|o| matches!(o, Output::Observe(Observation::GaveUp { .. })))
    }

    #[test]
    fn node_redlock_5_retries_its_script_with_one_value_and_releases_only_when_it_gives_up() {
        let mut run = Run::new("node-redlock");
        let mut out = run.step(|c, cx| c.on_start(cx));
        for attempt in 1..=11 {
            let sent = requests(&out);
            assert_eq!(sent.len(), 3, "attempt {attempt}");
            for (_, _, cmd) in &sent {
                // src/index.ts:306: one value for the whole acquire() call.
                assert_eq!(
                    eval(cmd),
                    (ACQUIRE_5_SRC.as_bytes().to_vec(), b"c1-1".to_vec())
                );
            }
            // Every master says its key exists (another client's, or this call's own).
            let replies = run.answer(&out, Reply::Int(0));
            if attempt < 11 {
                assert!(
                    requests(&replies).is_empty(),
                    "nothing released between attempts"
                );
                assert!(!gave_up(&replies));
                out = run.fire(&replies);
            } else {
                out = replies;
            }
        }
        // The catch of :330-339: RELEASE_SCRIPT with the same value, awaited, then the throw.
        let release = requests(&out);
        assert_eq!(release.len(), 3);
        for (_, _, cmd) in &release {
            assert_eq!(
                eval(cmd),
                (RELEASE_5_SRC.as_bytes().to_vec(), b"c1-1".to_vec())
            );
        }
        assert!(!gave_up(&out));
        assert!(gave_up(&run.answer(&out, Reply::Int(0))));
    }

    #[test]
    fn node_redlock_4_unlocks_every_master_after_a_failed_attempt_and_checks_validity() {
        let mut run = Run::new("node-redlock-4");
        let out = run.step(|c, cx| c.on_start(cx));
        for (_, _, cmd) in requests(&out) {
            assert_eq!(eval(&cmd).0, LOCK_4_SRC.as_bytes());
        }
        let replies = run.answer(&out, Reply::Int(0));
        let unlocks = requests(&replies);
        assert_eq!(unlocks.len(), 3, "redlock.js:423-424");
        for (_, _, cmd) in &unlocks {
            assert_eq!(eval(cmd).0, UNLOCK_4_SRC.as_bytes());
        }
        assert!(!gave_up(&replies));
    }

    #[test]
    fn node_redlock_s_scripts_are_byte_for_byte_the_shipped_ones_by_their_sha1() {
        let sha = |s: &str| hex(&sha1_of(s.as_bytes()));
        assert_eq!(
            sha(ACQUIRE_5_SRC),
            "96da70f7716f27d278a5218544df37fd8b0a5e4c"
        );
        assert_eq!(
            sha(EXTEND_5_SRC),
            "aed6f382e410db8ba7926d4e5e9aab410bf2a78a"
        );
        assert_eq!(
            sha(RELEASE_5_SRC),
            "e4612211c9f8f51c257e26e056b0a654b3187242"
        );
        assert_eq!(sha(LOCK_4_SRC), "e5a322e2634ef59a516e8ea150cb085afafee684");
        assert_eq!(
            sha(UNLOCK_4_SRC),
            "0f0f23b9048b36752b5be114f357ba083449f908"
        );
        assert_eq!(
            sha(EXTEND_4_SRC),
            "ce46f80993d5dac20dd066eb301a4e37994bdbed"
        );
    }

    #[test]
    fn v5_keeps_its_keys_between_attempts_and_v4_checks_validity_and_releases() {
        let base = presets::redlock("redis-docs", 10_000).unwrap();
        let v5 = preset("node-redlock", base.clone()).unwrap();
        assert!(v5.retry_keeps_keys && v5.skip_validity_check && v5.fail_fast);
        let v4 = preset("node-redlock-4", base).unwrap();
        assert!(!v4.retry_keeps_keys && !v4.skip_validity_check && !v4.fail_fast);
        for o in [&v4, &v5] {
            assert_eq!(
                (o.retry_count, o.retry_delay_ms, o.retry_jitter_ms),
                (11, 200, 100)
            );
            assert_eq!(o.clock, ElapsedClock::Wall);
            // Math.round(0.01 · 10000) + 2.
            assert_eq!(o.drift_ns(), 102_000_000);
        }
    }
}
