//! Redlock: one lock over N independent Redis masters, the algorithm of the Redis docs
//! ("Distributed Locks with Redis"; the `redis-docs` preset fills in the constants the page
//! leaves open), as the common client libraries run it.
//!
//! A client is a work loop like `LockClient`'s: acquire on a majority → critical section
//! (read the resource, hold, write it; extend meanwhile if configured) → release on all
//! nodes → think → repeat. One acquisition attempt:
//!
//! 1. read the chosen clock (t0); send `SET key token NX PX ttl` to all N nodes at once;
//! 2. a node's reply counts only if it arrives within `per_node_timeout_ms` of t0 on the
//!    client's monotonic clock (one timer for the deadline, not one per node);
//! 3. once all replied or the deadline passed: `elapsed` = chosen clock now − t0,
//!    `drift = ttl·factor (+ 2 ms)`, `validity = ttl − elapsed − drift` (signed);
//! 4. success iff at least N/2+1 nodes said OK and `validity > 0` (unless the library skips
//!    that check); on failure the unlock script goes to every node, unanswered, and the
//!    client retries after a delay, up to `retry_count` attempts, then gives up for the round.
//!
//! What the libraries differ in, and what each difference costs, is in `RedlockOptions`
//! and its presets. Deliberately kept, because people run them: elapsed time measured on a
//! wall clock that steps, no validity re-check before the write, extends that resurrect an
//! expired key, fixed retry delays (each has its model in `models/`, e.g.
//! `redlock-wall-clock-step-client`, `redlock-pause-after-acquire`,
//! `redlock-extend-resurrects`, `redlock-fixed-retry-livelock`).
//!
//! Simplifications: all nodes are asked in parallel (redlock-py and redlock-rb ask one after
//! the other, which only lengthens `elapsed`); an attempt is decided when every node replied
//! or the deadline passed (node-redlock decides as soon as a quorum is reached either way);
//! elapsed time and drift are kept in ns where libraries round to ms; scripts are sent as
//! EVAL with their source (no EVALSHA/NOSCRIPT round trip).

use std::sync::Arc;

use crate::client::redis_py::SharedToken;
use crate::client::section::{Section, SectionHost, Stage};
use crate::client::single::advance_token;
use crate::client::timer::NsRange;
use crate::client::timer::Timer;
use crate::history::{Fact, Observation};
use crate::process::{Cx, Process};
use crate::proto::command::{SetCond, SetExpiry};
use crate::proto::scripts::{EXTEND_SRC, UNLOCK_SRC};
use crate::proto::{Bytes, Command, Msg, Reply, Script, ScriptRef};
use crate::rng::Prng;
use crate::time::{NS_PER_MS, ProcId};

/// What a client measures the elapsed time of an attempt with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElapsedClock {
    /// The host's monotonic clock: never goes back, immune to NTP steps.
    Monotonic,
    /// The host's wall clock (`Time.now`, `time.time()`, `Date.now()`): a step during the
    /// attempt distorts `elapsed`, and with it the validity the client believes in.
    Wall,
}

/// redsync v4.17.0's `touchWithSetNXScript` (scripts.go:16-24, SHA1
/// b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79, pinned in its scripts_test.go), the exact text
/// it sends: one atomic script per node, so a node answers the extend and repairs a missing
/// key in the same call. Under `WithFailFast` the caller stops waiting once a quorum has
/// answered (mutex.go:304-314), but every node's goroutine has already sent its EVAL
/// (mutex.go:276-283), so the late nodes are repaired all the same.
pub const TOUCH_WITH_SET_NX_SRC: &str = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telseif redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2], \"NX\") then\n\t\treturn 1\n\telse\n\t\treturn 0\n\tend\n";

/// redlock-rb 0.1.8's `EXTEND_LIFE_SCRIPT` (leandromoreira/redlock-rb tag 0.1.8,
/// lib/redlock/client.rb:94-101, a `<<-eos` heredoc: its lines keep their indentation), the
/// exact text `lock(res, ttl, extend: info, extend_life: true)` sends (:119-124): it compares
/// the token, then `EXPIRE`s the key by the TTL in milliseconds — seconds to Redis, so a
/// 10 s lock extended lives 10,000 s (redlock-rb#44) — and answers 0 on success, 1 otherwise.
/// Gone in 0.2.0 (e364314 folded extending into the lock script).
pub const EXTEND_LIFE_0_1_8_SRC: &str = "        if redis.call(\"get\", KEYS[1]) == ARGV[1] then\n          redis.call(\"expire\", KEYS[1], ARGV[2])\n          return 0\n        else\n          return 1\n        end\n";

/// How a holder extends its lock on every node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtendMode {
    /// The compare-and-pexpire script: extends only where the key still holds our token.
    Script,
    /// `SET key token PX ttl` (no NX): resurrects an expired key and overwrites a key
    /// another client took meanwhile.
    ReSet,
    /// redsync's `WithSetNXOnExtend`: one script that extends the key where it holds our
    /// token and `SET NX PX`es it where it is missing (`TOUCH_WITH_SET_NX_SRC`): resurrects
    /// an expired key.
    SetIfMissing,
    /// redlock-rb 0.1.8's `extend_life`: `EXTEND_LIFE_0_1_8_SRC`, which gives the key a TTL
    /// of `ttl_ms` *seconds*; 0 is its success.
    ExpireMsAsSeconds,
}

/// The knobs in which Redlock implementations differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedlockOptions {
    pub ttl_ms: u64,
    /// Clock drift allowance as parts per million of the TTL (10_000 = 1 %).
    pub drift_factor_ppm: u64,
    /// Add 2 ms to the drift, as antirez's reference redlock-rb (redlock.rb:63-66),
    /// redlock-py 1.0.8 (__init__.py:92-95) and node-redlock do (1 ms of Redis expiry
    /// precision and 1 ms for small TTLs); the Redis docs state no number ("a few
    /// milliseconds", distributed-locks.md:127); redsync omits it.
    pub drift_plus_2ms: bool,
    pub clock: ElapsedClock,
    /// A node's reply counts only if it arrives within this long of the attempt's start.
    pub per_node_timeout_ms: u64,
    /// Attempts per acquisition round before `GaveUp` (then think and start a new round).
    pub retry_count: u32,
    pub retry_delay_ms: u64,
    /// The retry delay is drawn uniformly in `[delay − jitter, delay + jitter]` (clamped at
    /// 0); 0 gives a fixed delay, which livelocks contending clients in lock step.
    pub retry_jitter_ms: u64,
    /// redlock-rb ≤ 0.1.8 and antirez's redlock.rb (:80) style: the delay is drawn in
    /// `[0, retry_delay_ms]` (jitter ignored; 0.2.x onwards waits retry_delay + rand(50)).
    pub random_delay: bool,
    /// The jitter is only added: the delay is drawn in `[delay, delay + jitter)` instead of
    /// `[delay − jitter, delay + jitter]` — redlock-rb ≥ 0.2's `retry_delay + rand(retry_jitter)`
    /// (2.0.6 lib/redlock/client.rb:297). Off in every other preset, so they draw as before.
    pub jitter_added_only: bool,
    /// node-redlock v5: success on a majority alone, whatever the elapsed time.
    pub skip_validity_check: bool,
    /// The careful caller: when the validity it computed runs out (on its monotonic clock)
    /// while it is still in its critical section — acquired with little validity left, or
    /// an extend that has not succeeded in time — it stops believing, gives the section up
    /// (a write already sent cannot be taken back) and unlocks. No library stops the caller's
    /// work (redsync offers `Valid()`/`Until()`, node-redlock's `using()` an AbortSignal the
    /// routine must check), so every preset leaves it off; a paused client cannot do it
    /// either.
    pub stop_at_validity: bool,
    /// Extend every this many ms after acquiring while holding, and how; None: never.
    pub extend: Option<(u64, ExtendMode)>,
    /// node-redlock 5.0.0-beta.2 (the published v5): `acquire()` reads `start = Date.now()`
    /// once, before `_execute`'s retry loop (src/index.ts:305, 309-314), and the lock's
    /// expiration is `start + duration - drift` (:328); `extend()` likewise (:378, 407). So
    /// after retries the validity is measured from the round's first attempt and can be
    /// negative: a lock that comes back already expired (node-redlock#296, #299). Fixed on
    /// master by #274 and #276 (5dd9e28, 5138813: the winning attempt's `start`), unreleased.
    /// Off: validity from the deciding attempt's own start, as every other preset.
    pub start_before_retries: bool,
    /// node-redlock's `using()` (v5.0.0-beta.2 src/index.ts:654-762): extend when the believed
    /// expiration is `threshold_ms` away, and abort the routine's signal when extending fails
    /// once the lock has expired. None: no automatic extension.
    pub auto_extend: Option<AutoExtend>,
    /// redsync's `WithFailFast(true)` (v4.17.0 redsync.go:141-149; mutex.go:304-314): an
    /// attempt is decided as soon as a quorum said yes, or a quorum said the key is taken,
    /// without waiting for the rest.
    pub fail_fast: bool,
    /// redlock-py 1.0.8 (redlock/__init__.py:110-112): an attempt that reached a quorum in
    /// time but where some node failed (an error, or no answer in time: a refused connection
    /// for redis-py) raises `MultipleRedlockException` — without unlocking, so the keys set
    /// stay until their TTL, and without retrying. Here: `GaveUp`, no unlock, think.
    pub raise_on_node_error: bool,
    /// node-redlock v5's `_execute` (5.0.0-beta.2 src/index.ts:438-467): every attempt of an
    /// acquisition round sends the same token and nothing is released between attempts; the
    /// round's keys are released once, when it gives up (:330-339), and the give-up waits for
    /// that release. With an acquire that refuses an existing key (SET NX, node-redlock's
    /// ACQUIRE_SCRIPT) the client's own keys vote against its later attempts
    /// (node-redlock#369). Off: a failed attempt unlocks every node and the next one has a
    /// fresh token, as every other library does.
    pub retry_keeps_keys: bool,
    /// node-redlock v5's `release()` (5.0.0-beta.2 src/index.ts:350-364): the release script
    /// goes through `_execute` with the instance's settings, so an unlock that a quorum did
    /// not count as done (`result !== keys.length`, :590-595: 0 where the key expired or is
    /// another's, or an error) is retried `retry_count` attempts in all, `retry_delay` ±
    /// jitter apart (:433-467), and the caller's call returns only then: for ever with
    /// `retryCount: -1` (node-redlock#313). Simplification: each attempt waits for every
    /// answer (or the per-node deadline), where v5 decides at a quorum (:509-523). Off: the
    /// unlock is sent once and any answer ends the wait for that node (v4.2.0 redlock.js:
    /// 231-288 tries once, and every other library).
    pub release_retries: bool,
    /// Whose script texts the client sends: the library's own (node-redlock's, redsync's),
    /// or the generic ones (`SET NX PX`, `proto/scripts.rs`) for the rest.
    pub scripts: ScriptTexts,
    /// redsync: the group's members are goroutines sharing one `*redsync.Mutex`, so one
    /// `m.value` (mutex.go:30): a success stores its value there (:117) and `Unlock`/`Extend`
    /// send whatever it holds (:143-145, :160-162), the last winner's (redsync#30). Set at
    /// lowering, one slot per group and world; None: a Mutex per member.
    pub shared_value: Option<SharedToken>,
}

/// The script texts a Redlock client sends: a library's own (`node_redlock::scripts`,
/// `redsync::SCRIPTS`) or the generic ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptTexts {
    /// The acquire script, or None for `SET NX PX`.
    pub acquire: Option<&'static str>,
    pub release: &'static str,
    /// The compare-and-extend.
    pub extend: &'static str,
}

impl ScriptTexts {
    /// `SET NX PX`, and `UNLOCK_SRC` / `EXTEND_SRC` (the Redis docs' scripts).
    pub const GENERIC: ScriptTexts = ScriptTexts {
        acquire: None,
        release: UNLOCK_SRC,
        extend: EXTEND_SRC,
    };
}

/// node-redlock `using()`'s automatic extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoExtend {
    /// `automaticExtensionThreshold` (500 ms by default, src/index.ts:110): the extension is
    /// queued at `lock.expiration - Date.now() - threshold` (:709-714).
    pub threshold_ms: u64,
    /// Whether the routine stops when its AbortSignal fires (`if (signal.aborted) throw
    /// signal.error;` before each step, the README's pattern, index.ts:642-644): then it
    /// reports `Lost` and gives the section up. A routine that never looks at the signal
    /// works on, believing it holds a lock nobody extends.
    pub routine_checks_signal: bool,
}

impl RedlockOptions {
    /// Why these options cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if self.ttl_ms == 0 {
            return Err("redlock: ttl_ms must be > 0".into());
        }
        if self.per_node_timeout_ms == 0 {
            return Err("redlock: per_node_timeout_ms must be > 0 (no reply could count)".into());
        }
        if self.retry_count == 0 {
            return Err("redlock: retry_count must be >= 1 (it counts attempts)".into());
        }
        if self.extend.is_some_and(|(every_ms, _)| every_ms == 0) {
            return Err("redlock: extend interval must be > 0 ms".into());
        }
        if let Some(a) = self.auto_extend {
            // src/index.ts:693-697.
            if a.threshold_ms.saturating_add(100) > self.ttl_ms {
                return Err("redlock: a lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` (node-redlock using(), index.ts:693-697)".into());
            }
            if self.extend.is_some() {
                return Err(
                    "redlock: `extend` and using()'s automatic extension exclude each other".into(),
                );
            }
        }
        Ok(())
    }

    /// `ttl·factor (+ 2 ms)`, in ns. `ttl_ms · ppm` is already ns: ms·10⁶ ns/ms · ppm/10⁶.
    pub fn drift_ns(&self) -> u64 {
        let plus = if self.drift_plus_2ms {
            2 * NS_PER_MS
        } else {
            0
        };
        self.ttl_ms
            .saturating_mul(self.drift_factor_ppm)
            .saturating_add(plus)
    }

    /// `ttl − elapsed − drift`, in ns; negative when the attempt took too long (or a wall
    /// clock stepped forward), larger than `ttl − drift` when a wall clock stepped back.
    pub fn validity_ns(&self, elapsed_ns: i64) -> i64 {
        let ttl_ns = i64::try_from(self.ttl_ms.saturating_mul(NS_PER_MS)).unwrap_or(i64::MAX);
        let drift_ns = i64::try_from(self.drift_ns()).unwrap_or(i64::MAX);
        ttl_ns.saturating_sub(elapsed_ns).saturating_sub(drift_ns)
    }

    /// Delay before the next attempt, in ns. A fixed delay draws nothing from the stream.
    pub fn retry_delay_ns(&self, rng: &mut Prng) -> u64 {
        let ms = |v: u64| v.saturating_mul(NS_PER_MS);
        if self.random_delay {
            rng.range_inclusive(0, ms(self.retry_delay_ms))
        } else if self.retry_jitter_ms == 0 {
            ms(self.retry_delay_ms)
        } else if self.jitter_added_only {
            // Ruby's `rand(n)` is in [0, n): the top of the range is excluded.
            let lo = ms(self.retry_delay_ms);
            let hi = ms(self.retry_delay_ms.saturating_add(self.retry_jitter_ms));
            rng.range_inclusive(lo, hi - 1)
        } else {
            let lo = self.retry_delay_ms.saturating_sub(self.retry_jitter_ms);
            let hi = self.retry_delay_ms.saturating_add(self.retry_jitter_ms);
            rng.range_inclusive(ms(lo), ms(hi))
        }
    }
}

#[derive(Clone, Debug)]
pub struct RedlockConfig {
    /// Index of the lock in the model's lock table (history names locks by index).
    pub lock: u32,
    pub key: Bytes,
    /// The independent masters; a majority is `nodes.len() / 2 + 1`.
    pub nodes: Vec<ProcId>,
    pub resource: Option<ProcId>,
    /// Time spent in the critical section between reading and writing the resource.
    pub hold: NsRange,
    /// Time between a release (or giving up) and the next round.
    pub think: NsRange,
    /// Stop after this many completed critical sections (None = run until the end).
    pub rounds: Option<u64>,
    /// Prefix of this client's tokens (unique per client); the attempt number follows.
    pub token_prefix: String,
    pub options: RedlockOptions,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// SET NX PX sent to every node; waiting for replies or the deadline.
    Acquiring,
    /// In the critical section; `Section::stage` says where.
    Section,
    /// Unlock script sent to every node; waiting for replies or the deadline.
    Releasing,
    /// Retry or think timer armed.
    Waiting,
    Done,
}

/// Which request every node got in the fan-out in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FanOutKind {
    Acquire,
    Extend,
    Release,
}

/// A request to every node, answered by a deadline.
#[derive(Clone, Copy, Debug)]
struct FanOut {
    kind: FanOutKind,
    /// The request id of node 0's request; node `i`'s is `first_id + i`.
    first_id: u64,
    /// Both clocks at the start; `options.clock` says which one `elapsed` is measured on.
    start_mono_ns: u64,
    start_wall_ms: i64,
    /// Replies handled after this (monotonic) instant do not count.
    deadline_mono_ns: u64,
}

/// One node's answer in the current fan-out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Vote {
    /// Request `id` in flight.
    Pending {
        id: u64,
    },
    For,
    /// The node answered no (the key is someone else's: redsync's "taken").
    Against,
    /// The node answered an error (counts as no; redlock-py's `redis_errors`).
    Failed,
}

/// The current fan-out's votes counted by kind, kept as they change: deciding reads four
/// counts instead of going over the votes once for each question after every reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    pending: usize,
    yes: usize,
    no: usize,
    failed: usize,
}

impl Tally {
    fn count_of(&mut self, v: Vote) -> &mut usize {
        match v {
            Vote::Pending { .. } => &mut self.pending,
            Vote::For => &mut self.yes,
            Vote::Against => &mut self.no,
            Vote::Failed => &mut self.failed,
        }
    }

    /// Counted afresh (the invariant's check).
    fn of(votes: &[Vote]) -> Tally {
        let mut t = Tally::default();
        for &v in votes {
            *t.count_of(v) += 1;
        }
        t
    }
}

// The request-timeout timer is the clients' shared `Timer::Request`; state, extend and
// validity timers are `Timer::Step`s sharing one generation counter, told apart by the
// generation each role last got (the pinned tag values leave no room for a role field). Redlock tracks the timer's due time itself
// (its fan-out and resource waits run at once), rather than `RequestTimeout`.

/// One Redlock client.
#[derive(Clone, Debug)]
pub struct RedlockClient {
    pub config: RedlockConfig,
    phase: Phase,
    /// Last timer tag handed out (state and extend timers share the counter).
    last_tag: u64,
    // Invariant: a state timer (hold, retry, think) whose tag differs from `state_tag` is
    // stale and ignored.
    state_tag: u64,
    // Invariant: an extend timer whose tag differs from `extend_tag` is stale; 0 = none.
    extend_tag: u64,
    // Invariant: a validity timer (`stop_at_validity`) whose tag differs from `validity_tag`
    // is stale; 0 = none.
    validity_tag: u64,
    next_id: u64,
    attempt: u64,
    attempts_this_round: u32,
    section: Section,
    token: Bytes,
    // Invariant: `token` spells `token_prefix-token_attempt` (0: no token made yet).
    token_attempt: u64,
    fanout: Option<FanOut>,
    // Invariant: while `fanout` is Some, `votes[i]` is node `config.nodes[i]`'s answer.
    // Kept between fan-outs so that its allocation is reused.
    votes: Vec<Vote>,
    // Invariant: counts `votes` by kind (every write to `votes` goes through `clear_votes`,
    // `push_vote` and `set_vote`).
    tally: Tally,
    /// The resource request awaited: (id, monotonic deadline).
    resource_wait: Option<(u64, u64)>,
    // Invariant: while Some, the pending timeout timer fires at this monotonic instant, which
    // is no later than any active deadline (fan-out or resource). Every deadline is set as
    // "now + per-node timeout", so a new one is never earlier than a pending timer: one timer
    // serves them all, re-arming itself for the remainder when it fires early.
    timeout_due_mono_ns: Option<u64>,
    unlock: Script,
    extend_script: Script,
    /// The library's acquire script (node-redlock's), sent as EVAL; None: `SET NX PX`.
    acquire_script: Option<Script>,
    /// The scripts' KEYS (`[config.key]`), made once: every unlock and extend shares them
    /// (see `script_keys()`).
    script_keys: Arc<[Bytes]>,
    /// The unlock script's ARGV (`[token]` of the last unlock sent; see
    /// `send_unlock_to_every_node()`).
    unlock_args: Arc<[Bytes]>,
    /// Both clocks at the first attempt of the current acquisition round
    /// (`start_before_retries`).
    round_start: (u64, i64),
    /// using(): both clocks when the current `extend()` call started (None: no call in
    /// progress), and the attempts it has made.
    extend_call: Option<(u64, i64)>,
    extend_attempts: u32,
    /// using(): the believed expiration, on the monotonic clock (ns; may be in the past).
    believed_until_mono_ns: i64,
    /// using(): the signal aborted; the routine (which ignores it) works on, unextended.
    aborted: bool,
    /// Attempts of the section's unlock call in progress (`release_retries`).
    release_attempts: u32,
}

impl RedlockClient {
    pub fn new(config: RedlockConfig) -> RedlockClient {
        assert!(!config.nodes.is_empty(), "redlock needs at least one node");
        if let Err(e) = config.options.validate() {
            panic!("{e}");
        }
        let n = config.nodes.len();
        let script_keys = Arc::new([config.key.clone()]);
        let ScriptTexts {
            acquire,
            release,
            extend,
        } = config.options.scripts;
        let extend_script = Script::new(match config.options.extend {
            Some((_, ExtendMode::SetIfMissing)) => TOUCH_WITH_SET_NX_SRC.as_bytes(),
            Some((_, ExtendMode::ExpireMsAsSeconds)) => EXTEND_LIFE_0_1_8_SRC.as_bytes(),
            _ => extend.as_bytes(),
        });
        let unlock = Script::new(release.as_bytes());
        let acquire_script = acquire.map(|a| Script::new(a.as_bytes()));
        let section = Section::new(
            config.lock,
            config.resource,
            config.hold,
            config.think,
            config.rounds,
        );
        RedlockClient {
            config,
            phase: Phase::Idle,
            last_tag: 0,
            state_tag: 0,
            extend_tag: 0,
            validity_tag: 0,
            next_id: 1,
            attempt: 0,
            attempts_this_round: 0,
            section,
            token: Bytes::new(),
            token_attempt: 0,
            fanout: None,
            votes: Vec::with_capacity(n),
            tally: Tally::default(),
            resource_wait: None,
            timeout_due_mono_ns: None,
            unlock,
            extend_script,
            acquire_script,
            script_keys,
            unlock_args: Arc::new([Bytes::new()]),
            round_start: (0, 0),
            extend_call: None,
            extend_attempts: 0,
            believed_until_mono_ns: 0,
            aborted: false,
            release_attempts: 0,
        }
    }

    /// `[config.key]`, shared; made afresh only if the (public) config's key was changed.
    /// Makes `script_keys` `[config.key]` again if the (public) config's key was changed:
    /// the fan-out then counts the kept one once more a node, without a count of its own.
    #[inline]
    fn refresh_script_keys(&mut self) {
        if self.script_keys[0] != self.config.key {
            self.script_keys = Arc::new([self.config.key.clone()]);
        }
    }

    fn script_keys(&self) -> Arc<[Bytes]> {
        if self.script_keys[0] == self.config.key {
            self.script_keys.clone()
        } else {
            Arc::new([self.config.key.clone()])
        }
    }

    fn quorum(&self) -> usize {
        self.config.nodes.len() / 2 + 1
    }

    fn per_node_timeout_ns(&self) -> u64 {
        self.config.options.per_node_timeout_ms * NS_PER_MS
    }

    fn new_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    #[inline]
    fn clear_votes(&mut self) {
        self.votes.clear();
        self.tally = Tally::default();
    }

    #[inline]
    fn push_vote(&mut self, v: Vote) {
        *self.tally.count_of(v) += 1;
        self.votes.push(v);
    }

    #[inline]
    fn set_vote(&mut self, i: usize, v: Vote) {
        *self.tally.count_of(self.votes[i]) -= 1;
        *self.tally.count_of(v) += 1;
        self.votes[i] = v;
    }

    fn new_tag(&mut self) -> u64 {
        self.last_tag += 1;
        self.last_tag
    }

    /// Arms the state timer; any earlier state timer becomes stale.
    fn arm_state(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.state_tag = self.new_tag();
        Timer::Step(self.state_tag).set(cx, after_ns);
    }

    fn arm_extend(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.extend_tag = self.new_tag();
        Timer::Step(self.extend_tag).set(cx, after_ns);
    }

    /// With `stop_at_validity`, arms the timer at which this validity runs out; an earlier
    /// one becomes stale.
    fn arm_validity(&mut self, cx: &mut Cx<'_>, validity_ns: i64) {
        if self.config.options.stop_at_validity {
            self.validity_tag = self.new_tag();
            Timer::Step(self.validity_tag).set(cx, validity_ns.max(0) as u64);
        }
    }

    /// Makes sure the timeout timer will fire by the earliest active deadline.
    fn ensure_timeout(&mut self, cx: &mut Cx<'_>) {
        let earliest = [
            self.fanout.map(|f| f.deadline_mono_ns),
            self.resource_wait.map(|(_, d)| d),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(d) = earliest else { return };
        match self.timeout_due_mono_ns {
            Some(due) => debug_assert!(due <= d, "a deadline earlier than the pending timer"),
            None => {
                self.timeout_due_mono_ns = Some(d);
                Timer::Request.set(cx, d.saturating_sub(cx.mono_ns));
            }
        }
    }

    /// `set_command` when the key and the token are both inline (`Bytes::clone_inline`).
    #[inline]
    fn set_command_inline(&self, nx: bool) -> Command {
        Command::Set {
            key: self.config.key.clone_inline(),
            value: self.token.clone_inline(),
            cond: nx.then_some(SetCond::Nx),
            get: false,
            expiry: Some(SetExpiry::Px(self.config.options.ttl_ms as i64)),
        }
    }

    #[inline]
    fn set_command(&self, nx: bool) -> Command {
        Command::Set {
            key: self.config.key.clone(),
            value: self.token.clone(),
            cond: nx.then_some(SetCond::Nx),
            get: false,
            expiry: Some(SetExpiry::Px(self.config.options.ttl_ms as i64)),
        }
    }

    /// Sends the unlock script with `[token]` to every node, in node order, with one
    /// request id each (a pending vote each if `votes`). Each node's EVAL is built in its
    /// message from shared parts — the script, `[key]` and `unlock_args` counted once more
    /// each — not built once and copied. The arguments are the client's own `unlock_args`,
    /// shared with the messages that carry them: written afresh in place once no message
    /// holds them any more (the nodes have dropped the last fan-out's), allocated again only
    /// while some still do — one allocation and one free less per failed attempt on W2.
    fn send_unlock_to_every_node(&mut self, cx: &mut Cx<'_>, votes: bool) {
        if self.shares_mutex() {
            self.unlock_args = Arc::new([self.mutex_value(cx)]);
        } else {
            self.set_unlock_args_to_token();
        }
        self.refresh_script_keys();
        for i in 0..self.config.nodes.len() {
            let id = self.new_id();
            cx.send(
                self.config.nodes[i],
                Msg::Request {
                    id,
                    cmd: Command::Eval {
                        script: ScriptRef::Source(self.unlock.clone()),
                        keys: Arc::clone(&self.script_keys),
                        args: Arc::clone(&self.unlock_args),
                        read_only: false,
                    },
                },
            );
            if votes {
                self.push_vote(Vote::Pending { id });
            }
        }
    }

    /// A section's `Unlock` or `Extend` on a Mutex shared by goroutines (`shared_value`); a
    /// failed attempt's unlock sends its own value (`release(ctx, pool, value)`, redsync
    /// mutex.go:121-127), as does every client with a Mutex of its own.
    fn shares_mutex(&self) -> bool {
        self.config.options.shared_value.is_some() && self.attempts_this_round == 0
    }

    /// `m.value`: whatever the shared Mutex holds, the last winner's (redsync mutex.go:117,
    /// :143-145, :160-162; redsync#30). When that is not this goroutine's own token the trace
    /// says so.
    fn mutex_value(&self, cx: &mut Cx<'_>) -> Bytes {
        let slot = self
            .config
            .options
            .shared_value
            .as_ref()
            .expect("a shared Mutex");
        let value = slot.get().unwrap_or_else(|| self.token.clone());
        if value != self.token {
            cx.observe(Observation::Note(format!(
                "m.value is {}, the shared Mutex's last winner's, not its own {}",
                String::from_utf8_lossy(&value),
                String::from_utf8_lossy(&self.token)
            )));
        }
        value
    }

    /// `unlock_args` = `[token]`, in place when no message holds them.
    fn set_unlock_args_to_token(&mut self) {
        // Written without first asking whether it already holds this token: it nearly never
        // does (each attempt has its own), and the comparison cost more than the copy.
        match Arc::get_mut(&mut self.unlock_args) {
            // Inline, the token is copied straight in (`Bytes::clone_inline`).
            Some(args) if self.token.is_inline() => args[0] = self.token.clone_inline(),
            Some(args) => args[0] = self.token.clone(),
            None => self.unlock_args = Arc::new([self.token.clone()]),
        }
    }

    fn script_command(&self, script: &Script, with_ttl: bool) -> Command {
        let token = self.token.clone();
        let args: Arc<[Bytes]> = if with_ttl {
            let ttl = Bytes::from(self.config.options.ttl_ms.to_string().as_str());
            Arc::new([token, ttl])
        } else {
            Arc::new([token])
        };
        Command::Eval {
            script: ScriptRef::Source(script.clone()),
            keys: self.script_keys(),
            args,
            read_only: false,
        }
    }

    /// The `SET`'s `NX` if `kind`'s fan-out sends a SET (an acquire, a re-SET extend), None if
    /// it sends a script.
    fn fanout_set_nx(&self, kind: FanOutKind) -> Option<bool> {
        match kind {
            FanOutKind::Acquire if self.acquire_script.is_some() => None,
            FanOutKind::Acquire => Some(true),
            FanOutKind::Extend => match self.config.options.extend.map(|(_, m)| m) {
                Some(ExtendMode::ReSet) => Some(false),
                _ => None,
            },
            FanOutKind::Release => None,
        }
    }

    /// Sends `kind`'s request to every node and starts the per-node deadline.
    fn start_fanout(&mut self, cx: &mut Cx<'_>, kind: FanOutKind) {
        self.clear_votes();
        let first_id = self.next_id;
        match self.fanout_set_nx(kind) {
            // A SET is cheaper built again from the key and token than cloned (the derived
            // `Clone` of the whole `Command` enum, ~50 instructions a clone on W2), and
            // cheaper built in the message itself than first and moved in (~13 a node).
            Some(nx) => {
                let inline = self.config.key.is_inline() && self.token.is_inline();
                for i in 0..self.config.nodes.len() {
                    let id = self.new_id();
                    let node = self.config.nodes[i];
                    // Each message built where it is sent: a command chosen first would be
                    // put together once more to be moved in.
                    if inline {
                        let cmd = self.set_command_inline(nx);
                        cx.send(node, Msg::Request { id, cmd });
                    } else {
                        cx.send(
                            node,
                            Msg::Request {
                                id,
                                cmd: self.set_command(nx),
                            },
                        );
                    }
                    self.push_vote(Vote::Pending { id });
                }
            }
            None if kind == FanOutKind::Release => self.send_unlock_to_every_node(cx, true),
            None if kind == FanOutKind::Acquire => {
                let script = self.acquire_script.as_ref().expect("an acquire script");
                let cmd = self.script_command(script, true);
                self.send_to_every_node(cx, cmd, true);
            }
            None => {
                let mut cmd = self.script_command(&self.extend_script, true);
                if self.shares_mutex() {
                    let value = self.mutex_value(cx);
                    if let Command::Eval { args, .. } = &mut cmd {
                        *args = Arc::new([value, args[1].clone()]);
                    }
                }
                self.send_to_every_node(cx, cmd, true);
            }
        }
        self.fanout = Some(FanOut {
            kind,
            first_id,
            start_mono_ns: cx.mono_ns,
            start_wall_ms: cx.wall_ms,
            deadline_mono_ns: cx.mono_ns + self.per_node_timeout_ns(),
        });
        self.ensure_timeout(cx);
    }

    /// Sends a script to every node, in node order, with one request id each (a pending
    /// vote each if `votes`). An EVAL shares its script and arguments, so another node's copy
    /// is reference counts, while building one allocates; the last node takes the command
    /// itself.
    fn send_to_every_node(&mut self, cx: &mut Cx<'_>, cmd: Command, votes: bool) {
        let n = self.config.nodes.len();
        let mut last = Some(cmd);
        for i in 0..n {
            let cmd = if i + 1 == n {
                last.take().expect("the last request")
            } else {
                copy_for_node(last.as_ref().expect("the command until the last request"))
            };
            let id = self.new_id();
            cx.send(self.config.nodes[i], Msg::Request { id, cmd });
            if votes {
                self.push_vote(Vote::Pending { id });
            }
        }
    }

    /// Elapsed time since `f` started, on the chosen clock; negative if a wall clock
    /// stepped back meanwhile (`redlock-wall-clock-step-client`, kept on purpose).
    fn elapsed_ns(&self, cx: &Cx<'_>, f: &FanOut) -> i64 {
        match self.config.options.clock {
            ElapsedClock::Monotonic => {
                i64::try_from(cx.mono_ns.saturating_sub(f.start_mono_ns)).unwrap_or(i64::MAX)
            }
            ElapsedClock::Wall => cx
                .wall_ms
                .saturating_sub(f.start_wall_ms)
                .saturating_mul(NS_PER_MS as i64),
        }
    }

    fn start_attempt(&mut self, cx: &mut Cx<'_>) {
        if self.section.finished() {
            self.phase = Phase::Done;
            return;
        }
        self.attempt += 1;
        self.attempts_this_round += 1;
        // A fresh token per attempt: a late SET of a failed attempt can never be taken for
        // this one's. node-redlock v5 keeps the round's first (one `value` per `acquire()`
        // call, src/index.ts:306).
        if self.attempts_this_round == 1 || !self.config.options.retry_keeps_keys {
            advance_token(
                &mut self.token,
                &mut self.token_attempt,
                &self.config.token_prefix,
                self.attempt,
            );
        }
        if self.attempts_this_round == 1 {
            self.round_start = (cx.mono_ns, cx.wall_ms);
            // One observation per round, as `LockClient`: retries are in the trace.
            cx.observe(Observation::Attempt {
                lock: self.config.lock,
                token: self.token.clone(),
            });
        }
        self.phase = Phase::Acquiring;
        self.start_fanout(cx, FanOutKind::Acquire);
    }

    /// The node of fan-out `f` whose request `id` is still pending, if `from` is that node.
    /// Request `first_id + i` went to node `i`, so that is the one place to look.
    #[inline]
    fn pending_node(&self, f: &FanOut, from: ProcId, id: u64) -> Option<usize> {
        let matches = |i: usize| {
            self.config.nodes.get(i) == Some(&from)
                && matches!(self.votes.get(i), Some(Vote::Pending { id: p, .. }) if *p == id)
        };
        let i = id.wrapping_sub(f.first_id);
        (i < self.votes.len() as u64 && matches(i as usize)).then_some(i as usize)
    }

    /// Handles node `i`'s reply to request `id` of fan-out `f` (the current one); returns
    /// whether the fan-out is decided now (the caller concludes it, by a jump).
    #[inline]
    fn on_node_reply(&mut self, f: &FanOut, i: usize, reply: &Reply) -> bool {
        let Vote::Pending { .. } = self.votes[i] else {
            return false;
        };
        let mode = self.config.options.extend.map(|(_, m)| m);
        let answer = match (f.kind, mode) {
            (FanOutKind::Acquire, ..) if matches!(reply, Reply::Error(_)) => Vote::Failed,
            // node-redlock: `result !== keys.length` is a ResourceLockedError (v5 :591-595).
            (FanOutKind::Acquire, ..) if self.acquire_script.is_some() => {
                vote(matches!(reply, Reply::Int(1)))
            }
            (FanOutKind::Acquire, ..) => vote(matches!(reply, Reply::Ok)),
            // node-redlock v5's `release()`: done on a node iff the script answered
            // `keys.length` (:590-595); a round's give-up release (`attempts_this_round`) is
            // sent once and its answers only end the wait.
            (FanOutKind::Release, ..)
                if self.config.options.release_retries && self.attempts_this_round == 0 =>
            {
                vote(matches!(reply, Reply::Int(1)))
            }
            // The unlock is best effort: any answer ends the wait for that node.
            (FanOutKind::Release, ..) => Vote::For,
            (FanOutKind::Extend, Some(ExtendMode::ReSet)) => vote(matches!(reply, Reply::Ok)),
            // touchWithSetNXScript: 1 where it extended our key or set a missing one (what
            // resurrects an expired lock, `redlock-extend-resurrects`), 0 where another
            // client's token is there; redsync counts `status != 0` (mutex.go:262-266).
            (FanOutKind::Extend, Some(ExtendMode::SetIfMissing)) => {
                vote(matches!(reply, Reply::Int(n) if *n != 0))
            }
            // redlock-rb 0.1.8: `rc == 0` is success (client.rb:121-122).
            (FanOutKind::Extend, Some(ExtendMode::ExpireMsAsSeconds)) => {
                vote(matches!(reply, Reply::Int(0)))
            }
            (FanOutKind::Extend, _) => vote(matches!(reply, Reply::Int(1))),
        };
        self.set_vote(i, answer);
        if self.tally.pending == 0 {
            true
        } else if self.config.options.fail_fast && f.kind != FanOutKind::Release {
            // redsync mutex.go:304-314: decided once a quorum said yes, or said taken.
            let q = self.quorum();
            self.tally.yes >= q || self.tally.no >= q
        } else {
            false
        }
    }

    /// A reply while a fan-out waits. The caller drops the reply (read where it lies).
    #[inline(never)]
    fn on_fanout_reply(&mut self, cx: &mut Cx<'_>, from: ProcId, id: u64, reply: &Reply) {
        let Some(f) = self.fanout else { return };
        if cx.mono_ns > f.deadline_mono_ns {
            // Handled too late (the client was paused, or the timer is behind this
            // message): the reply does not count, and the deadline has passed.
            return self.conclude_fanout(cx);
        }
        // Anything else is stale: a previous attempt's, or an unanswered unlock's.
        let Some(i) = self.pending_node(&f, from, id) else {
            return;
        };
        if self.on_node_reply(&f, i, reply) {
            self.conclude_fanout(cx);
        }
    }

    /// Every timer but `on_timer`'s own two cases.
    #[inline(never)]
    fn on_other_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        let g = match Timer::from_tag(tag) {
            Timer::Request => {
                self.timeout_due_mono_ns = None;
                self.on_timeout(cx);
                return;
            }
            Timer::Step(g) => g,
            // Redlock arms none.
            Timer::Background(_) => return,
        };
        if g == self.state_tag {
            match self.phase {
                Phase::Section => self.on_hold_timer(cx),
                Phase::Waiting => self.start_attempt(cx),
                // `release_retries`: the unlock's next attempt.
                Phase::Releasing if self.fanout.is_none() && self.release_attempts > 0 => {
                    self.start_fanout(cx, FanOutKind::Release)
                }
                _ => {}
            }
        } else if g == self.validity_tag {
            self.validity_tag = 0;
            if self.in_critical_section() && !self.section.lost() {
                self.lose(cx, "validity ran out");
            }
        } else if g == self.extend_tag {
            self.extend_tag = 0;
            // A round still in flight (only when `every` is shorter than a round) is left to
            // finish; the next one is armed when it ends.
            if self.in_critical_section() && !self.section.lost() && self.fanout.is_none() {
                if self.config.options.auto_extend.is_some() {
                    if !self.aborted {
                        self.auto_extend_due(cx);
                    }
                } else {
                    self.start_fanout(cx, FanOutKind::Extend);
                }
            }
        }
    }

    /// Every message but a reply (`on_message`'s own case).
    #[inline(never)]
    fn on_other_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: &Msg) {
        match *msg {
            // A crashed node's host refused the connection: that node failed at once (every
            // library counts a connection error as a failed node and waits for the others).
            // In an acquire it is a node error like an error reply: redlock-py 1.0.8 collects
            // the ConnectionError with the other RedisErrors and raises (__init__.py:99-112).
            Msg::Refused { id } => {
                let Some(f) = self.fanout else { return };
                if cx.mono_ns > f.deadline_mono_ns {
                    self.conclude_fanout(cx);
                    return;
                }
                // `id` 0: the node was killed with its host up and the kernel reset the
                // connection, failing whatever was in flight on it — that node's request.
                let node = if id == 0 {
                    self.config
                        .nodes
                        .iter()
                        .position(|&n| n == from)
                        .filter(|&i| matches!(self.votes.get(i), Some(Vote::Pending { .. })))
                } else {
                    self.pending_node(&f, from, id)
                };
                let Some(i) = node else {
                    return;
                };
                let answer = match f.kind {
                    FanOutKind::Acquire => Vote::Failed,
                    _ => Vote::Against,
                };
                self.set_vote(i, answer);
                if self.tally.pending == 0 {
                    self.conclude_fanout(cx);
                }
            }
            Msg::ResourceAck { id, version, .. }
                if self.resource_wait.is_some_and(|(w, _)| w == id) =>
            {
                self.resource_wait = None;
                if self.phase == Phase::Section {
                    self.on_resource_ack(cx, version);
                }
            }
            _ => {}
        }
    }

    /// All nodes answered or the deadline passed: decide.
    fn conclude_fanout(&mut self, cx: &mut Cx<'_>) {
        let Some(f) = self.fanout.take() else { return };
        debug_assert_eq!(self.tally, Tally::of(&self.votes));
        let ok = self.tally.yes;
        // node-redlock beta.2: measured from before the retries (`start_before_retries`).
        let mut measured = f;
        if self.config.options.start_before_retries {
            let start = match f.kind {
                FanOutKind::Acquire => Some(self.round_start),
                FanOutKind::Extend => self.extend_call,
                FanOutKind::Release => None,
            };
            if let Some((mono, wall)) = start {
                measured.start_mono_ns = mono;
                measured.start_wall_ms = wall;
            }
        }
        // The validity is read only where a quorum said yes (`success` and the arms it
        // guards): measured only then, as most conclusions are failed attempts. Without a
        // quorum it stays 0, which nothing reads.
        let quorum = ok >= self.quorum();
        let validity_ns = if quorum {
            self.config
                .options
                .validity_ns(self.elapsed_ns(cx, &measured))
        } else {
            0
        };
        let success = quorum && (self.config.options.skip_validity_check || validity_ns > 0);
        let node_failed = self.tally.failed + self.tally.pending > 0;
        match f.kind {
            FanOutKind::Acquire
                if success && node_failed && self.config.options.raise_on_node_error =>
            {
                // redlock-py __init__.py:111-112: `raise MultipleRedlockException(redis_errors)`
                // before the unlock loop of :115-119 — the keys stay until their TTL.
                self.give_up(cx);
            }
            FanOutKind::Acquire if success => self.acquired(cx, validity_ns),
            FanOutKind::Acquire => self.acquire_failed(cx),
            FanOutKind::Extend if self.config.options.auto_extend.is_some() => {
                self.auto_extend_concluded(cx, success, validity_ns)
            }
            FanOutKind::Extend if success => {
                cx.observe(Observation::Extended {
                    lock: self.config.lock,
                    token: self.token.clone(),
                    validity_ns: Some(validity_ns.max(0) as u64),
                    believed_until: None,
                });
                self.arm_validity(cx, validity_ns);
                // Periodic from the start of each round, as a timer loop in a library runs.
                if let Some((every_ms, _)) = self.config.options.extend {
                    let since = cx.mono_ns.saturating_sub(f.start_mono_ns);
                    self.arm_extend(cx, (every_ms * NS_PER_MS).saturating_sub(since));
                }
            }
            FanOutKind::Extend => self.lose(cx, "extend failed"),
            // A round still counting attempts released its keys on giving up
            // (`retry_keeps_keys`); a section's release reset the count when it acquired.
            FanOutKind::Release if self.attempts_this_round > 0 => self.give_up(cx),
            FanOutKind::Release => self.release_concluded(cx, quorum),
        }
    }

    /// A section's unlock attempt is decided (`released`: a quorum counted it done). With
    /// `release_retries` a failed one is tried again after the retry delay while attempts
    /// are left (node-redlock v5's `_execute`, src/index.ts:438-467); otherwise the unlock
    /// call returns (resolved or thrown) and the client thinks.
    fn release_concluded(&mut self, cx: &mut Cx<'_>, released: bool) {
        if self.config.options.release_retries
            && !released
            && self.release_attempts < self.config.options.retry_count
        {
            self.release_attempts += 1;
            let d = self.config.options.retry_delay_ns(cx.rng);
            if d == 0 {
                self.start_fanout(cx, FanOutKind::Release);
            } else {
                // Still `Releasing`: the state timer sends the next attempt.
                self.arm_state(cx, d);
            }
            return;
        }
        self.release_attempts = 0;
        cx.observe(Observation::Fact(Fact::UnlockReturned {
            lock: self.config.lock,
        }));
        self.think(cx);
    }

    fn acquire_failed(&mut self, cx: &mut Cx<'_>) {
        let keep = self.config.options.retry_keeps_keys;
        if !keep {
            // Give back the minority (or the late majority) we may hold; nobody waits for it.
            self.send_unlock_to_every_node(cx, false);
        }
        if self.attempts_this_round >= self.config.options.retry_count {
            if keep {
                // node-redlock v5's `acquire()` catch (src/index.ts:330-339): release the
                // round's keys with `retryCount: 0` and wait for it, then throw.
                self.phase = Phase::Releasing;
                return self.start_fanout(cx, FanOutKind::Release);
            }
            self.give_up(cx);
        } else {
            let d = self.config.options.retry_delay_ns(cx.rng);
            if d == 0 {
                self.start_attempt(cx);
            } else {
                self.phase = Phase::Waiting;
                self.arm_state(cx, d);
            }
        }
    }

    /// The round ends without the lock: `GaveUp`, then think.
    fn give_up(&mut self, cx: &mut Cx<'_>) {
        cx.observe(Observation::GaveUp {
            lock: self.config.lock,
        });
        self.attempts_this_round = 0;
        self.think(cx);
    }

    fn acquired(&mut self, cx: &mut Cx<'_>, validity_ns: i64) {
        self.attempts_this_round = 0;
        // redsync mutex.go:117: `m.value = value` on the Mutex, shared or not.
        if let Some(slot) = &self.config.options.shared_value {
            slot.store(self.token.clone());
        }
        cx.observe(Observation::Acquired {
            lock: self.config.lock,
            token: self.token.clone(),
            fence: None,
            validity_ns: Some(validity_ns.max(0) as u64),
            believed_until: None,
        });
        if let Some((every_ms, _)) = self.config.options.extend {
            self.arm_extend(cx, every_ms * NS_PER_MS);
        }
        if self.config.options.auto_extend.is_some() {
            self.aborted = false;
            self.extend_call = None;
            self.extend_attempts = 0;
            self.queue_auto_extend(cx, validity_ns);
        }
        self.arm_validity(cx, validity_ns);
        // No re-check of validity before acting, here or before the write: no library does
        // it for the caller (`redlock-pause-after-acquire`).
        self.enter_section(cx, None);
    }

    /// using()'s `queue()` (src/index.ts:709-714): the extension fires `expiration - now -
    /// threshold` from now; a delay at or below 0 fires at once (Node makes it 1 ms).
    fn queue_auto_extend(&mut self, cx: &mut Cx<'_>, validity_ns: i64) {
        let a = self.config.options.auto_extend.expect("auto_extend");
        self.believed_until_mono_ns = (cx.mono_ns as i64).saturating_add(validity_ns);
        let threshold_ns = (a.threshold_ms * NS_PER_MS) as i64;
        let after = validity_ns
            .saturating_sub(threshold_ns)
            .max(NS_PER_MS as i64) as u64;
        self.arm_extend(cx, after);
    }

    /// using()'s extension timer fired, or an extend attempt is to be retried.
    fn auto_extend_due(&mut self, cx: &mut Cx<'_>) {
        if self.extend_call.is_none() {
            // A new `extend()` call: "Cannot extend an already-expired lock." when
            // `existing.expiration < Date.now()` (:380-383), before sending anything.
            if (cx.mono_ns as i64) > self.believed_until_mono_ns {
                self.auto_extend_abort(cx);
                return;
            }
            self.extend_call = Some((cx.mono_ns, cx.wall_ms));
            self.extend_attempts = 0;
        }
        self.extend_attempts += 1;
        self.start_fanout(cx, FanOutKind::Extend);
    }

    fn auto_extend_concluded(&mut self, cx: &mut Cx<'_>, success: bool, validity_ns: i64) {
        if success {
            self.extend_call = None;
            cx.observe(Observation::Extended {
                lock: self.config.lock,
                token: self.token.clone(),
                validity_ns: Some(validity_ns.max(0) as u64),
                believed_until: None,
            });
            self.arm_validity(cx, validity_ns);
            self.queue_auto_extend(cx, validity_ns);
        } else if self.extend_attempts < self.config.options.retry_count {
            // `_execute`'s retry loop (:448-460).
            let d = self.config.options.retry_delay_ns(cx.rng).max(1);
            self.arm_extend(cx, d);
        } else if (cx.mono_ns as i64) < self.believed_until_mono_ns {
            // The call threw, but the lock has not expired: extend again at once (:727-728).
            self.extend_call = None;
            self.auto_extend_due(cx);
        } else {
            self.extend_call = None;
            self.auto_extend_abort(cx);
        }
    }

    /// `signal.error = error; controller.abort()` (:731-732).
    fn auto_extend_abort(&mut self, cx: &mut Cx<'_>) {
        self.extend_tag = 0;
        if self
            .config
            .options
            .auto_extend
            .is_some_and(|a| a.routine_checks_signal)
        {
            self.lose(cx, "extend failed");
        } else {
            // The routine never looks at the signal: it works on and releases at its end,
            // on a lock nobody extends any more. Nothing it does says so.
            self.aborted = true;
        }
    }

    /// An extend failed, or the validity ran out: the client stops believing it holds the
    /// lock and cuts the critical section short (a write already sent cannot be taken back).
    fn lose(&mut self, cx: &mut Cx<'_>, reason: &'static str) {
        self.extend_tag = 0;
        self.validity_tag = 0;
        self.report_lost(cx, reason);
        match self.section.stage() {
            Stage::Reading => {
                self.resource_wait = None;
                self.release(cx);
            }
            Stage::Holding => {
                // The hold timer is now stale.
                self.state_tag = self.new_tag();
                self.release(cx);
            }
            // The write is in flight; its answer (or timeout) leads to the release.
            Stage::Writing | Stage::Outside => {}
        }
    }

    fn in_critical_section(&self) -> bool {
        self.phase == Phase::Section
    }

    fn on_timeout(&mut self, cx: &mut Cx<'_>) {
        if self
            .fanout
            .is_some_and(|f| f.deadline_mono_ns <= cx.mono_ns)
        {
            self.conclude_fanout(cx);
        }
        if let Some((_, d)) = self.resource_wait
            && d <= cx.mono_ns
        {
            self.resource_wait = None;
            if self.phase == Phase::Section {
                self.on_resource_timeout(cx);
            }
        }
        self.ensure_timeout(cx);
    }
}

impl SectionHost for RedlockClient {
    fn section(&mut self) -> &mut Section {
        &mut self.section
    }

    fn token(&self) -> Bytes {
        self.token.clone()
    }

    fn resource_request_id(&mut self) -> u64 {
        self.new_id()
    }

    fn await_resource(&mut self, cx: &mut Cx<'_>, id: u64) {
        self.resource_wait = Some((id, cx.mono_ns + self.per_node_timeout_ns()));
        self.ensure_timeout(cx);
    }

    fn arm_step(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
        self.arm_state(cx, after_ns);
    }

    fn enter_phase_section(&mut self) {
        self.phase = Phase::Section;
    }

    fn enter_phase_waiting(&mut self) {
        self.phase = Phase::Waiting;
    }

    fn release_lock(&mut self, cx: &mut Cx<'_>) {
        self.extend_tag = 0;
        self.validity_tag = 0;
        self.resource_wait = None;
        self.phase = Phase::Releasing;
        cx.observe(Observation::Fact(Fact::UnlockCalled {
            lock: self.config.lock,
        }));
        self.release_attempts = 1;
        // Replaces an extend round in flight, if any: its replies no longer match.
        self.start_fanout(cx, FanOutKind::Release);
    }

    fn next_attempt(&mut self, cx: &mut Cx<'_>) {
        self.start_attempt(cx);
    }
}

/// Another node's copy of a fan-out's command: an EVAL's shared script, keys and
/// arguments counted once more each, without the derived `Clone` of the whole `Command`
/// enum (~50 instructions a copy on W2).
#[inline]
fn copy_for_node(cmd: &Command) -> Command {
    match cmd {
        Command::Eval {
            script,
            keys,
            args,
            read_only,
        } => Command::Eval {
            script: script.clone(),
            keys: Arc::clone(keys),
            args: Arc::clone(args),
            read_only: *read_only,
        },
        other => other.clone(),
    }
}

fn vote(ok: bool) -> Vote {
    if ok { Vote::For } else { Vote::Against }
}

impl Process for RedlockClient {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        self.start_attempt(cx);
    }

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        // Replies are told apart here, in a small function: with no fan-out waiting (a late
        // answer to an unanswered unlock, most replies on W2, or a stale one) there is
        // nothing to do but let it go. The message is read where it lies, not moved out to
        // this frame (a copy, and a frame large enough for it). Tried: letting such a reply
        // go before anything else is looked at (W2 +0.8 M).
        match &msg {
            Msg::Reply { id, reply } => {
                if self.fanout.is_some() {
                    self.on_fanout_reply(cx, from, *id, reply);
                }
            }
            other => self.on_other_message(cx, from, other),
        }
        match msg {
            Msg::Reply { reply, .. } => reply.release(),
            other => drop(other),
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        // The two commonest timers, decided here in a function with no frame: the retry or
        // think timer (the next attempt is a jump), and a timeout that finds nothing left
        // waiting (the fan-out it was armed for has been decided). A state tag is a step
        // timer's (below the background bit), so these are `on_other_timer`'s own answers.
        if tag == self.state_tag && self.phase == Phase::Waiting {
            return self.start_attempt(cx);
        }
        if tag == Timer::Request.tag() && self.fanout.is_none() && self.resource_wait.is_none() {
            self.timeout_due_mono_ns = None;
            return;
        }
        self.on_other_timer(cx, tag);
    }

    fn on_restart(&mut self, _keep_data: bool) {
        // `attempt` and `next_id` survive: tokens stay unique and replies addressed to the
        // previous incarnation stay stale. The loop voids the old incarnation's timers.
        self.phase = Phase::Idle;
        self.state_tag = 0;
        self.extend_tag = 0;
        self.validity_tag = 0;
        self.attempts_this_round = 0;
        self.fanout = None;
        self.clear_votes();
        self.resource_wait = None;
        self.section.abandon();
        self.timeout_due_mono_ns = None;
        self.extend_call = None;
        self.extend_attempts = 0;
        self.aborted = false;
        self.release_attempts = 0;
    }
}

#[cfg(test)]
mod tests;
